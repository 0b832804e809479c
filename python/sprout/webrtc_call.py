"""A real WebRTC video call between two processes, for the emulated evaluation (issue 25).

    python -m sprout.webrtc_call --role answer --signal /tmp/call.sock --bind IP --duration 30
    python -m sprout.webrtc_call --role offer  --signal /tmp/call.sock --bind IP --duration 30

Each end is an aiortc peer (VP8 through libvpx, RTP/RTCP, NACK, and receiver-side bandwidth
estimation after Google's congestion control, fed back as REMB to the sender's encoder). Both
send a synthetic moving picture (deterministic from --seed, 320x240 at 30 frames/s by default:
see _webrtc_media for why not 640x480) and receive the other's. Every frame carries its
frame number and capture time (CLOCK_MONOTONIC microseconds, shared by both ends on one machine)
in a barcode of 16 x 16-pixel cells with a checksum (_webrtc_barcode), which the receiver reads
after decoding: capture-to-decode delay per frame, with unreadable frames counted, never guessed.

Signalling is one length-prefixed JSON SDP message each way over a Unix-domain socket at
--signal (the answer end listens, mode 0600, and removes it at exit; the offer end connects,
retrying up to --connect-timeout). No STUN or TURN: the only ICE candidate of an end is a host
candidate on --bind, so with `sprout link` the media crosses the emulated link only.

At the end (after --duration seconds of media from the moment the connection is up, or at
SIGTERM/SIGINT) it prints one JSON line on stdout: role, duration_s, frames_sent,
frames_received (decoded frames), frames_unreadable (those of them whose barcode did not check),
received_kbps (RTP payload bytes received / media time), sent_kbps, frame_delay_ms (p50, p95,
p99, mean; null without readable frames), frames_within_ms (shares of readable frames within
100, 150 and 300 ms) and target_bitrate_kbps (first, last and min of the VP8 encoder's target,
which REMB sets; null if it could not be read). --frames-csv PATH also writes a row per received
frame whose barcode checked: frame,capture_us,decode_us,delay_ms. Exit status 0 when a frame
was received, 1 with one `error: ...` line otherwise (usage errors too), 2 when aiortc or av
cannot be imported. An end whose peer closes the call ends too; one whose peer is killed goes
on to --duration.

In this process only, it changes four things of aiortc and aioice (see
restrict_host_candidates, loosen_aiortc_bounds and _webrtc_repair): ICE's host candidates, the
VP8 encoder's 250 kbit/s floor (libwebrtc's 30 kbit/s instead), the expiry of ICE consent, and
the video jitter buffer, which recovers from a loss that retransmission cannot repair by asking
for a key frame and dropping what cannot be decoded, as libwebrtc does, instead of holding
every later frame behind the hole.
"""

from __future__ import annotations

import argparse
import asyncio
import ipaddress
import json
import os
import signal
import socket
import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Optional, Sequence

if TYPE_CHECKING:  # pragma: no cover
    from aiortc import MediaStreamTrack, RTCPeerConnection, RTCRtpSender

INSTALL_HINT = (
    "error: the WebRTC call needs aiortc: pip install './python[webrtc]' (from the repository) "
    "or pip install 'sprout[webrtc]'"
)
CLOSE_TIMEOUT_S = 5.0
"""Longest wait for the peer connection to close (s)."""
TARGET_POLL_S = 0.1
"""Interval between readings of the encoder's target bitrate (s)."""
WITHIN_MS = (100, 150, 300)
"""Delay thresholds of frames_within_ms (ms)."""
STAMP_WRAP = 1 << 48
"""The barcode's capture time wraps at 2**48 µs."""
ENCODER_MIN_BPS = 30_000
"""Floor of the VP8 encoder's target (bit/s): libwebrtc's default minimum video bitrate, in
place of aiortc's 250 kbit/s (see loosen_aiortc_bounds)."""
CONSENT_FAILURES = 1_000_000
"""Consent checks that may go unanswered in a row before aioice closes the call (its own: 6)."""


class CallError(Exception):
    """A failure of the call, reported as one `error: ...` line with exit status 1."""


class _Parser(argparse.ArgumentParser):
    """argparse with usage errors as one `error: ...` line and exit status 1 (2 means aiortc
    is missing)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        """Prints the usage error and exits 1."""
        print(f"error: {message}", file=sys.stderr)
        sys.exit(1)


def parse_args(argv: Optional[Sequence[str]]) -> argparse.Namespace:
    """The command line (see the module docstring)."""
    p = _Parser(prog="python -m sprout.webrtc_call", description=__doc__.split("\n\n")[0])
    p.add_argument("--role", choices=("answer", "offer"))
    p.add_argument("--signal", metavar="PATH", help="Unix-domain socket of the signalling")
    p.add_argument("--bind", metavar="IP", help="the only address ICE may use here")
    p.add_argument("--duration", type=float, default=30.0, metavar="S", help="seconds of media")
    p.add_argument("--seed", type=int, default=1, help="seed of the synthetic video")
    p.add_argument("--width", type=int, default=320)
    p.add_argument("--height", type=int, default=240)
    p.add_argument("--fps", type=float, default=30.0)
    p.add_argument("--frames-csv", metavar="PATH", help="one row per readable received frame")
    p.add_argument("--connect-timeout", type=float, default=15.0, metavar="S")
    p.add_argument("--check", action="store_true", help="only check that aiortc and av import")
    args = p.parse_args(argv)
    if not args.check:
        _check_args(p, args)
    return args


def _check_args(p: _Parser, args: argparse.Namespace) -> None:
    """Usage errors of a call's arguments."""
    for name in ("role", "signal", "bind"):
        if getattr(args, name) is None:
            p.error(f"--{name} is required (unless --check)")
    try:
        ipaddress.ip_address(args.bind)
    except ValueError:
        p.error(f"--bind {args.bind!r} is not an IP address")
    if not 0 < args.duration <= 24 * 3600 or not 0 < args.connect_timeout <= 3600:
        p.error("--duration and --connect-timeout must be positive (at most a day, an hour)")
    if not 1 <= args.fps <= 60:
        p.error("--fps must be between 1 and 60")
    in_range = 192 <= args.width <= 1920 and 96 <= args.height <= 1088
    if args.width % 16 or args.height % 16 or not in_range:
        p.error("--width and --height must be multiples of 16, from 192x96 to 1920x1088")


def webrtc_versions() -> dict[str, str]:
    """Versions of aiortc and av; ImportError when either cannot be imported."""
    import aiortc
    import av

    return {"aiortc": aiortc.__version__, "av": av.__version__}


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Runs the program; returns its exit status."""
    args = parse_args(argv)
    try:
        versions = webrtc_versions()
    except ImportError:
        print(INSTALL_HINT, file=sys.stderr)
        return 2
    if args.check:
        print(json.dumps(versions))
        return 0
    try:
        summary = asyncio.run(_call(args))
    except CallError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("error: interrupted before the call began", file=sys.stderr)
        return 1
    except Exception as e:  # a failure inside aiortc: one line, not a traceback
        print(f"error: the call failed: {type(e).__name__}: {str(e)[:120]}", file=sys.stderr)
        return 1
    finally:
        if args.role == "answer":
            _unlink_quietly(args.signal)
    print(json.dumps(summary), flush=True)
    if not summary["frames_received"]:
        seconds = summary["duration_s"]
        print(f"error: the {args.role} end received no frames in {seconds} s", file=sys.stderr)
        return 1
    return 0


def _unlink_quietly(path: str) -> None:
    """Removes a file (the answer end's socket, a temporary file) if it is still there."""
    try:
        os.unlink(path)
    except OSError:
        pass


def restrict_host_candidates(bind: str) -> None:
    """Makes `bind` the only host candidate ICE offers, in this process only.

    aioice gathers host candidates from every address of every interface (its module-level
    get_host_addresses, through ifaddr) and has no option to choose them. Outside the emulator
    that would offer the machine's other addresses too, and ICE would pair whichever answers
    first, so the media could bypass the emulated link; it also leaves out 127.0.0.1, which
    the loopback call needs. So this replaces that one function of aioice.ice for the process.
    """
    try:
        family = socket.AF_INET6 if ":" in bind else socket.AF_INET
        with socket.socket(family, socket.SOCK_DGRAM) as probe:
            probe.bind((bind, 0))
    except OSError as e:
        raise CallError(f"cannot use --bind {bind}: {e.strerror or e}") from None
    import aioice.ice

    aioice.ice.get_host_addresses = lambda use_ipv4=True, use_ipv6=True: [bind]


def loosen_aiortc_bounds() -> None:
    """Two of aiortc's bounds, changed in this process only, so that congestion control can
    do its job on a slow or deeply queued link (what the evaluation emulates):

    - its VP8 encoder never targets less than 250 kbit/s (aiortc.codecs.vpx.MIN_BITRATE,
      applied to every REMB). Over 300 kbit/s that floor plus the packets' headers fills the
      link, and the queue built while the call started at 500 kbit/s never drains (measured:
      1.6 s of frame delay at the end of a 30 s call). libwebrtc's floor, 30 kbit/s, applies
      instead; the encoder's own floor for our picture is about 145 kbit/s.
    - aioice sends an ICE consent check every 5 s and waits only 0.5 s for each answer
      (retransmissions=0), closing the connection after 6 unanswered in a row: a queue of
      over 0.5 s, which cellular links and this evaluation produce by design, ended calls
      after 30 s. RFC 7675 expires consent after 30 s without any answer; the call here has
      its own duration and closes itself, so consent never expires.
    """
    import aioice.ice
    import aiortc.codecs.vpx

    aiortc.codecs.vpx.MIN_BITRATE = ENCODER_MIN_BPS
    aioice.ice.CONSENT_FAILURES = CONSENT_FAILURES


@dataclass
class Received:
    """What one end received."""

    rtp_payload_bytes: int = 0
    frames: int = 0
    unreadable: int = 0
    rows: list[tuple[int, int, int, float]] = field(default_factory=list)
    """(frame, capture_us, decode_us, delay_ms) of each readable frame."""


@dataclass
class Call:
    """The state of one end's call."""

    args: argparse.Namespace
    pc: "RTCPeerConnection"
    track: "MediaStreamTrack"
    stop: asyncio.Event
    connected: asyncio.Event = field(default_factory=asyncio.Event)
    ended: asyncio.Event = field(default_factory=asyncio.Event)
    in_media: bool = False
    received: Received = field(default_factory=Received)
    targets_bps: list[int] = field(default_factory=list)
    tasks: list[asyncio.Task] = field(default_factory=list)


async def _call(args: argparse.Namespace) -> dict[str, Any]:
    """Holds one end's call; returns its summary."""
    from aiortc import RTCConfiguration, RTCPeerConnection

    from ._webrtc_media import SyntheticPicture, SyntheticTrack

    from . import _webrtc_repair

    restrict_host_candidates(args.bind)
    loosen_aiortc_bounds()
    _webrtc_repair.install()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    track = SyntheticTrack(SyntheticPicture(args.seed, args.width, args.height), args.fps)
    call = Call(args, RTCPeerConnection(RTCConfiguration(iceServers=[])), track, stop)
    try:
        _watch(call)
        sender = await _signal(call)
        await _until(call, call.connected.wait(), args.connect_timeout, "the connection")
        return await _media(call, sender)
    finally:
        for task in call.tasks:
            task.cancel()
        await _close(call.pc)
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(sig)


def _watch(call: Call) -> None:
    """Follows the connection state and takes the remote track when it comes."""
    pc = call.pc

    @pc.on("connectionstatechange")
    def _state() -> None:
        if pc.connectionState == "connected":
            call.connected.set()
        elif pc.connectionState in ("failed", "closed"):
            call.ended.set()

    @pc.on("track")
    def _track(track: "MediaStreamTrack") -> None:
        for transceiver in pc.getTransceivers():
            if transceiver.receiver.track is track:
                _count_payload(transceiver.receiver, call)
        call.tasks.append(asyncio.ensure_future(_receive(call, track)))


def _count_payload(receiver: Any, call: Call) -> None:
    """Counts the RTP payload bytes `receiver` gets during the media time, by wrapping its
    packet handler (aiortc's inbound stats have no byte count)."""
    original = receiver._handle_rtp_packet

    async def counting(packet: Any, arrival_time_ms: int) -> None:
        if call.in_media:
            call.received.rtp_payload_bytes += len(packet.payload)
        await original(packet, arrival_time_ms=arrival_time_ms)

    receiver._handle_rtp_packet = counting


async def _until(call: Call, awaitable: Any, timeout_s: float, what: str) -> Any:
    """The result of `awaitable`; CallError on timeout, SIGTERM/SIGINT or a failed connection."""
    task = asyncio.ensure_future(awaitable)
    stop = asyncio.ensure_future(call.stop.wait())
    ended = asyncio.ensure_future(call.ended.wait())
    try:
        await asyncio.wait(
            {task, stop, ended}, timeout=timeout_s, return_when=asyncio.FIRST_COMPLETED
        )
    finally:
        for t in (stop, ended):
            t.cancel()
    if task.done():
        return task.result()
    task.cancel()
    if call.stop.is_set():
        raise CallError(f"interrupted while waiting for {what}")
    if call.ended.is_set():
        raise CallError(f"the connection failed while waiting for {what}")
    raise CallError(f"timed out after {timeout_s:g} s waiting for {what}")


async def _signal(call: Call) -> "RTCRtpSender":
    """Exchanges the SDP messages; returns our video sender."""
    from ._webrtc_signal import SignalError

    try:
        if call.args.role == "offer":
            return await _signal_offer(call)
        return await _signal_answer(call)
    except SignalError as e:
        raise CallError(f"signalling: {e}") from None


async def _signal_offer(call: Call) -> "RTCRtpSender":
    """The offer end: connects, sends the offer, applies the answer."""
    from . import _webrtc_signal as sig

    args, pc = call.args, call.pc
    wait_s = args.connect_timeout
    connecting = sig.connect(args.signal, wait_s)
    reader, writer = await _until(call, connecting, wait_s + 1, "the answer end")
    sender = _add_video(pc, call.track)
    await pc.setLocalDescription(await pc.createOffer())
    await sig.send(writer, "offer", pc.localDescription.sdp)
    answer = await _until(call, sig.receive(reader, "answer"), wait_s, "the answer")
    writer.close()
    await _remote(pc, "answer", answer)
    return sender


async def _signal_answer(call: Call) -> "RTCRtpSender":
    """The answer end: listens, applies the offer, sends the answer."""
    from . import _webrtc_signal as sig

    args, pc = call.args, call.pc
    wait_s = args.connect_timeout
    with sig.listen(args.signal) as listener:
        accepting = sig.accept(listener)
        reader, writer = await _until(call, accepting, wait_s, "the offer end to connect")
    offer = await _until(call, sig.receive(reader, "offer"), wait_s, "the offer")
    await _remote(pc, "offer", offer)
    sender = _add_video(pc, call.track)
    await pc.setLocalDescription(await pc.createAnswer())
    await sig.send(writer, "answer", pc.localDescription.sdp)
    writer.close()
    return sender


def _add_video(pc: "RTCPeerConnection", track: "MediaStreamTrack") -> "RTCRtpSender":
    """Adds our track, sending and receiving, with VP8 (and its retransmissions) only."""
    from aiortc import RTCRtpSender

    sender = pc.addTrack(track)
    codecs = [
        c
        for c in RTCRtpSender.getCapabilities("video").codecs
        if c.mimeType in ("video/VP8", "video/rtx")
    ]
    for transceiver in pc.getTransceivers():
        if transceiver.sender is sender:
            transceiver.setCodecPreferences(codecs)
    return sender


async def _remote(pc: "RTCPeerConnection", kind: str, sdp: str) -> None:
    """Applies the peer's SDP; CallError when aiortc refuses it."""
    from aiortc import RTCSessionDescription

    try:
        await pc.setRemoteDescription(RTCSessionDescription(sdp=sdp, type=kind))
    except Exception as e:  # aiortc raises ValueError, InvalidStateError, ... on a bad SDP
        why = str(e)[:100] or type(e).__name__
        raise CallError(f"the peer's {kind} was refused: {why}") from None


async def _media(call: Call, sender: "RTCRtpSender") -> dict[str, Any]:
    """Runs the media for --duration seconds (or until a signal or the connection ends)."""
    args, loop = call.args, asyncio.get_running_loop()
    print(
        f"webrtc_call {args.role}: connected; {args.duration:g} s of "
        f"{args.width}x{args.height} video at {args.fps:g} frames/s",
        file=sys.stderr,
    )
    sent_before = await _bytes_sent(call.pc)
    frames_before = call.track.frames_sent
    call.tasks.append(asyncio.ensure_future(_poll_target(call, sender)))
    call.in_media = True
    start = loop.time()
    waits = [asyncio.ensure_future(e.wait()) for e in (call.stop, call.ended)]
    await asyncio.wait(waits, timeout=args.duration, return_when=asyncio.FIRST_COMPLETED)
    for w in waits:
        w.cancel()
    call.in_media = False
    seconds = loop.time() - start
    if call.stop.is_set():
        print(f"webrtc_call {args.role}: interrupted after {seconds:.1f} s", file=sys.stderr)
    elif call.ended.is_set():
        note = f"the peer closed the call after {seconds:.1f} s"
        print(f"webrtc_call {args.role}: {note}", file=sys.stderr)
    sent = await _bytes_sent(call.pc) - sent_before
    _report_recovery(args.role)
    if args.frames_csv:
        _write_csv(args.frames_csv, call.received.rows)
    return summary(call, seconds, sent, call.track.frames_sent - frames_before)


def _report_recovery(role: str) -> None:
    """Says on stderr what the video jitter buffer did to recover from unrepaired losses."""
    from ._webrtc_repair import COUNTS

    print(
        f"webrtc_call {role}: jitter buffer: {COUNTS['holes_given_up']} holes beyond the "
        f"sender's history, {COUNTS['keyframe_jumps']} jumps to a key frame, "
        f"{COUNTS['keyframe_requests']} key frame requests",
        file=sys.stderr,
    )


async def _bytes_sent(pc: "RTCPeerConnection") -> int:
    """RTP payload bytes sent so far (aiortc's outbound-rtp bytesSent)."""
    report = await pc.getStats()
    return sum(s.bytesSent for s in report.values() if s.type == "outbound-rtp")


async def _poll_target(call: Call, sender: "RTCRtpSender") -> None:
    """Records the VP8 encoder's target bitrate (bit/s) every TARGET_POLL_S. aiortc keeps the
    encoder private (RTCRtpSender.__encoder) and sets its target_bitrate on each REMB."""
    while True:
        encoder = getattr(sender, "_RTCRtpSender__encoder", None)
        target = getattr(encoder, "target_bitrate", None)
        if isinstance(target, int):
            call.targets_bps.append(target)
        await asyncio.sleep(TARGET_POLL_S)


async def _receive(call: Call, track: "MediaStreamTrack") -> None:
    """Decodes the peer's frames and reads their barcodes until the track ends."""
    from aiortc.mediastreams import MediaStreamError

    from ._webrtc_barcode import read
    from ._webrtc_media import monotonic_us

    while True:
        try:
            frame = await track.recv()
        except MediaStreamError:
            return
        decode_us = monotonic_us()
        if not call.in_media:
            continue
        call.received.frames += 1
        stamp = read(frame.to_ndarray(format="yuv420p")[: frame.height])
        if stamp is None:
            call.received.unreadable += 1
            continue
        capture_us = decode_us - (decode_us - stamp.capture_us) % STAMP_WRAP
        delay_ms = (decode_us - capture_us) / 1000
        call.received.rows.append((stamp.frame, capture_us, decode_us, delay_ms))


def summary(call: Call, seconds: float, sent_bytes: int, frames_sent: int) -> dict[str, Any]:
    """The JSON summary of the call (see the module docstring)."""
    rec = call.received
    return {
        "role": call.args.role,
        "duration_s": round(seconds, 3),
        "frames_sent": frames_sent,
        "frames_received": rec.frames,
        "frames_unreadable": rec.unreadable,
        "received_kbps": round(rec.rtp_payload_bytes * 8 / seconds / 1000, 1),
        "sent_kbps": round(sent_bytes * 8 / seconds / 1000, 1),
        "frame_delay_ms": delay_stats([r[3] for r in rec.rows]),
        "frames_within_ms": within_shares([r[3] for r in rec.rows]),
        "target_bitrate_kbps": target_stats(call.targets_bps),
    }


def delay_stats(delays_ms: Sequence[float]) -> Optional[dict[str, float]]:
    """p50, p95, p99 and mean of the frame delays (ms); None without frames."""
    if not delays_ms:
        return None
    import numpy as np

    p50, p95, p99 = np.percentile(np.asarray(delays_ms), [50, 95, 99])
    figures = {"p50": p50, "p95": p95, "p99": p99, "mean": np.mean(delays_ms)}
    return {k: round(float(v), 1) for k, v in figures.items()}


def within_shares(delays_ms: Sequence[float]) -> Optional[dict[str, float]]:
    """Share of the frames whose delay is at most 100, 150 and 300 ms; None without frames."""
    if not delays_ms:
        return None
    return {str(t): round(sum(d <= t for d in delays_ms) / len(delays_ms), 4) for t in WITHIN_MS}


def target_stats(targets_bps: Sequence[int]) -> Optional[dict[str, float]]:
    """First, last and least encoder target over the call (kbit/s); None if never read."""
    if not targets_bps:
        return None
    first, last, least = targets_bps[0], targets_bps[-1], min(targets_bps)
    return {"first": first / 1000, "last": last / 1000, "min": least / 1000}


def _write_csv(path: str, rows: Sequence[tuple[int, int, int, float]]) -> None:
    """Writes the readable frames as CSV (frame,capture_us,decode_us,delay_ms), atomically."""
    tmp = f"{path}.tmp{os.getpid()}"
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write("frame,capture_us,decode_us,delay_ms\n")
            f.writelines(f"{a},{b},{c},{d:.3f}\n" for a, b, c, d in rows)
        os.replace(tmp, path)
    except OSError as e:
        _unlink_quietly(tmp)
        raise CallError(f"cannot write {path}: {e.strerror or e}") from None


async def _close(pc: "RTCPeerConnection") -> None:
    """Closes the peer connection, waiting at most CLOSE_TIMEOUT_S."""
    try:
        await asyncio.wait_for(pc.close(), CLOSE_TIMEOUT_S)
    except Exception as e:  # a close that fails or hangs must not hide the summary
        print(f"webrtc_call: closing the peer connection: {type(e).__name__}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
