"""Signalling of `sprout.webrtc_call`: one SDP message each way over a Unix-domain socket
(a filesystem path, so it works across network namespaces), no outside server.

A message is a 4-byte big-endian length and that many bytes of UTF-8 JSON,
`{"type": "offer" | "answer", "sdp": "..."}`, at most MAX_MESSAGE_BYTES. Anything else is a
SignalError with a short message, never a traceback.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import stat
import struct
from typing import Tuple

MAX_MESSAGE_BYTES = 64 * 1024
"""Largest signalling message accepted (bytes); an SDP with host candidates only is ~2 KB."""

Streams = Tuple[asyncio.StreamReader, asyncio.StreamWriter]
"""A connection's reader and writer."""

RETRY_S = 0.1
"""Pause between the offer end's attempts to connect (s)."""


class SignalError(Exception):
    """A signalling failure, reported as one `error: ...` line."""


def _excerpt(data: bytes) -> str:
    """At most 40 characters of `data`, printable, for an error message."""
    text = data[:40].decode("utf-8", "replace")
    return "".join(c if c.isprintable() else "?" for c in text)


def listen(path: str) -> socket.socket:
    """A non-blocking listening socket at `path`, mode 0600. A stale socket file there is
    replaced; any other file is an error (never removed)."""
    try:
        if stat.S_ISSOCK(os.lstat(path).st_mode):
            os.unlink(path)
        else:
            raise SignalError(f"{path} exists and is not a socket")
    except FileNotFoundError:
        pass
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)
    try:
        sock.bind(path)
    except OSError as e:
        sock.close()
        raise SignalError(f"cannot listen at {path}: {e.strerror}") from None
    finally:
        os.umask(old)
    sock.listen(1)
    sock.setblocking(False)
    return sock


async def accept(sock: socket.socket) -> Streams:
    """Streams of the first connection to a listening socket (no timeout: the caller's)."""
    conn, _ = await asyncio.get_running_loop().sock_accept(sock)
    return await asyncio.open_connection(sock=conn)


async def connect(path: str, timeout_s: float) -> Streams:
    """Streams of a connection to the socket at `path`, retrying while it does not exist or
    refuses, for up to `timeout_s` seconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while True:
        try:
            return await asyncio.open_unix_connection(path)
        except (FileNotFoundError, ConnectionRefusedError) as e:
            if loop.time() + RETRY_S > deadline:
                why = f"no answer end at {path} within {timeout_s:g} s ({e.strerror})"
                raise SignalError(why) from None
        except OSError as e:
            raise SignalError(f"cannot connect to {path}: {e.strerror or e}") from None
        await asyncio.sleep(RETRY_S)


async def send(writer: asyncio.StreamWriter, kind: str, sdp: str) -> None:
    """Sends one message of type `kind` ("offer" or "answer")."""
    body = json.dumps({"type": kind, "sdp": sdp}).encode("utf-8")
    if len(body) > MAX_MESSAGE_BYTES:
        raise SignalError(f"our {kind} is {len(body)} bytes, over {MAX_MESSAGE_BYTES}")
    writer.write(struct.pack(">I", len(body)) + body)
    try:
        await writer.drain()
    except OSError as e:
        raise SignalError(f"the peer went away before our {kind} was sent ({e})") from None


async def receive(reader: asyncio.StreamReader, kind: str) -> str:
    """The SDP of the next message, which must be of type `kind`."""
    try:
        header = await reader.readexactly(4)
        (length,) = struct.unpack(">I", header)
        if not 0 < length <= MAX_MESSAGE_BYTES:
            raise SignalError(
                f"the peer announced a {length}-byte message (at most {MAX_MESSAGE_BYTES}); "
                f"it began {_excerpt(header)!r}"
            )
        body = await reader.readexactly(length)
    except asyncio.IncompleteReadError as e:
        got = len(e.partial)
        raise SignalError(f"the peer closed the socket mid-{kind} (after {got} bytes)") from None
    except OSError as e:
        raise SignalError(f"reading the peer's {kind}: {e}") from None
    return _parse(body, kind)


def _parse(body: bytes, kind: str) -> str:
    """The SDP of a message body, checked to be of type `kind`."""
    try:
        message = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise SignalError(f"the peer's {kind} is not JSON: {_excerpt(body)!r}") from None
    if (
        not isinstance(message, dict)
        or message.get("type") != kind
        or not isinstance(message.get("sdp"), str)
    ):
        raise SignalError(f'the peer sent no {{"type": "{kind}", "sdp": ...}}: {_excerpt(body)!r}')
    return message["sdp"]
