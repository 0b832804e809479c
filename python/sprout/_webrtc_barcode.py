"""The capture-time barcode of `sprout.webrtc_call`'s frames (numpy only, no aiortc).

Each frame carries its sequence number (24 bits), its capture time (CLOCK_MONOTONIC
microseconds, low 48 bits) and a 24-bit checksum (the low bits of the CRC-32 of the other
72) as 96 cells of 16 x 16 pixels, black (luma 16) or white (luma 235), row by row in a band
at the top of the luma plane. The cells sit on VP8's 16 x 16 macroblock grid, so each is coded
on its own and survives even VP8's coarsest quantizer; the reader averages the middle 8 x 8
pixels of each cell and thresholds at mid-grey. A frame whose checksum does not match is
unreadable: its time is never guessed.
"""

from __future__ import annotations

import zlib
from typing import NamedTuple, Optional

import numpy as np

CELL = 16
"""Side of a barcode cell (pixels): one VP8 macroblock."""

BITS = 96
"""Cells of a barcode: 24 (frame) + 48 (capture µs) + 24 (checksum)."""

BLACK, WHITE = 16, 235
"""Luma of a 0 and a 1 cell (video range)."""


class Stamp(NamedTuple):
    """What a frame's barcode carries."""

    frame: int
    """Sender's frame number (wraps at 2**24)."""
    capture_us: int
    """Capture time, CLOCK_MONOTONIC microseconds (wraps at 2**48)."""


def layout(width: int, height: int) -> tuple[int, int]:
    """(columns, rows) of cells for a frame of `width` x `height` pixels; ValueError when the
    frame is too small for the barcode to take at most half its height."""
    cols = width // CELL
    rows = -(-BITS // cols) if cols else 0
    if cols < 12 or rows * CELL > height // 2:
        raise ValueError(f"a {width}x{height} frame is too small for the barcode (at least 192x96)")
    return cols, rows


def band_height(width: int, height: int) -> int:
    """Height (pixels) of the band the barcode takes at the top of the frame."""
    return layout(width, height)[1] * CELL


def _checksum(payload: bytes) -> int:
    return zlib.crc32(payload) & 0xFFFFFF


def _bits(stamp: Stamp) -> np.ndarray:
    payload = (stamp.frame & 0xFFFFFF).to_bytes(3, "big") + (
        stamp.capture_us & 0xFFFF_FFFF_FFFF
    ).to_bytes(6, "big")
    word = payload + _checksum(payload).to_bytes(3, "big")
    return np.unpackbits(np.frombuffer(word, dtype=np.uint8))


def draw(luma: np.ndarray, stamp: Stamp) -> None:
    """Draws `stamp` into the top band of a luma plane (h x w uint8, changed in place)."""
    height, width = luma.shape
    cols, rows = layout(width, height)
    cells = np.zeros(cols * rows, dtype=np.uint8)
    cells[:BITS] = _bits(stamp)
    grid = np.where(cells.reshape(rows, cols) == 1, WHITE, BLACK).astype(np.uint8)
    block = np.repeat(np.repeat(grid, CELL, axis=0), CELL, axis=1)
    luma[: rows * CELL, : cols * CELL] = block


def read(luma: np.ndarray) -> Optional[Stamp]:
    """The stamp in a decoded luma plane (h x w), or None when its checksum does not match
    (or the frame is too small to hold one)."""
    height, width = luma.shape
    try:
        cols, rows = layout(width, height)
    except ValueError:
        return None
    band = luma[: rows * CELL, : cols * CELL].astype(np.float32)
    cells = band.reshape(rows, CELL, cols, CELL)[:, 4:12, :, 4:12].mean(axis=(1, 3))
    bits = (cells.reshape(-1)[:BITS] > (BLACK + WHITE) / 2).astype(np.uint8)
    word = np.packbits(bits).tobytes()
    payload, check = word[:9], int.from_bytes(word[9:], "big")
    if _checksum(payload) != check:
        return None
    return Stamp(int.from_bytes(payload[:3], "big"), int.from_bytes(payload[3:], "big"))
