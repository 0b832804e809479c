"""The synthetic camera of `sprout.webrtc_call`: a deterministic moving picture (from a seed)
with each frame's capture time in a barcode, as an aiortc video track.

Imported only after aiortc and av imported (webrtc_call checks that first).
"""

from __future__ import annotations

import asyncio
import fractions
import time

import av
import numpy as np
from aiortc import MediaStreamTrack

from . import _webrtc_barcode as barcode

VIDEO_CLOCK_HZ = 90_000
"""RTP clock of video (Hz): a frame's pts is in 1/90000 s."""

BLOCKS = 4
"""Blocks moving over the background (a talking head's worth of motion)."""

BLOCK_SIZE = (32, 96)
"""Range of the blocks' sides (pixels)."""

BLOCK_SPEED = (1.0, 4.0)
"""Range of the blocks' speeds (pixels per frame, each axis)."""


def monotonic_us() -> int:
    """CLOCK_MONOTONIC now (µs), the clock both ends of a call on one machine share."""
    return time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000


def _bounce(start: np.ndarray, speed: np.ndarray, span: np.ndarray, t: int) -> np.ndarray:
    """Position at frame `t` of points moving at `speed` px/frame, reflected in [0, span]."""
    span = np.maximum(span, 1)
    x = (start + speed * t) % (2 * span)
    return np.where(x > span, 2 * span - x, x).astype(np.int64)


class SyntheticPicture:
    """Frames of a moving picture, a pure function of (seed, frame number): flat blocks
    bouncing at 1 to 4 pixels per frame over a background of random 8 x 8-pixel tiles, which
    they cover and uncover, so VP8 has real motion and detail to code.

    Measured with aiortc 1.16's VP8 encoder at 320x240 (frames 30 to 150): it codes the
    picture at its target from 500 kbit/s up to about 1 Mbit/s, and at no less than about
    145 kbit/s however low the target (its coarsest quantizer). Richer pictures raise that
    floor: blocks like these over a scrolling background need about 180 kbit/s, and 640x480
    with a scrolling noisy background about 650 kbit/s, above the 300 kbit/s of CI's link.
    """

    def __init__(self, seed: int, width: int, height: int) -> None:
        """A picture of `width` x `height` pixels (multiples of 16) from `seed`."""
        rng = np.random.default_rng(seed)
        self.width, self.height = width, height
        self.band = barcode.band_height(width, height)
        coarse = rng.integers(40, 216, size=(height // 8 + 1, width // 8 + 1), dtype=np.uint8)
        self.texture = np.repeat(np.repeat(coarse, 8, axis=0), 8, axis=1)[:height, :width]
        self.block_size = rng.integers(*BLOCK_SIZE, size=(BLOCKS, 2))
        self.block_start = rng.uniform(0, 1, size=(BLOCKS, 2)) * (width, height)
        self.block_speed = rng.uniform(*BLOCK_SPEED, size=(BLOCKS, 2))
        self.block_luma = rng.integers(0, 256, size=BLOCKS)
        ramp = np.linspace(64, 192, width // 2, dtype=np.float32)
        self.chroma = np.tile(ramp, (height // 2, 1)).astype(np.uint8)

    def luma(self, index: int) -> np.ndarray:
        """The luma plane (h x w uint8) of frame `index`, without its barcode."""
        y = self.texture.copy()
        span = np.array([self.width, self.height]) - self.block_size
        pos = _bounce(self.block_start, self.block_speed, span, index)
        for (x, yy), (w, h), v in zip(pos, self.block_size, self.block_luma):
            y[yy : yy + h, x : x + w] = v
        return y

    def frame(self, index: int, stamp: barcode.Stamp) -> av.VideoFrame:
        """Frame `index` as a yuv420p VideoFrame with `stamp` drawn in its barcode band."""
        h, w = self.height, self.width
        yuv = np.empty((h * 3 // 2, w), dtype=np.uint8)
        luma = yuv[:h]
        luma[:] = self.luma(index)
        barcode.draw(luma, stamp)
        u = np.roll(self.chroma, index, axis=1)
        u[: self.band // 2] = 128
        v = np.ascontiguousarray(u[:, ::-1])
        v[: self.band // 2] = 128
        yuv[h : h + h // 4] = u.reshape(h // 4, w)
        yuv[h + h // 4 :] = v.reshape(h // 4, w)
        return av.VideoFrame.from_ndarray(yuv, format="yuv420p")


class SyntheticTrack(MediaStreamTrack):
    """An aiortc video track of a SyntheticPicture at `fps` frames/s, paced on the monotonic
    clock from its first frame; each frame carries its frame number and capture time."""

    kind = "video"

    def __init__(self, picture: SyntheticPicture, fps: float) -> None:
        """A track of `picture` at `fps` frames per second."""
        super().__init__()
        self.picture = picture
        self.fps = fps
        self.frames_sent = 0
        self._start: float | None = None

    async def recv(self) -> av.VideoFrame:
        """The next frame, at its time: frame i at start + i / fps."""
        loop = asyncio.get_running_loop()
        if self._start is None:
            self._start = loop.time()
        index = self.frames_sent
        wait = self._start + index / self.fps - loop.time()
        if wait > 0:
            await asyncio.sleep(wait)
        frame = self.picture.frame(index, barcode.Stamp(index, monotonic_us()))
        frame.pts = round(index * VIDEO_CLOCK_HZ / self.fps)
        frame.time_base = fractions.Fraction(1, VIDEO_CLOCK_HZ)
        self.frames_sent += 1
        return frame
