"""Recovery of aiortc's video receiver from losses that retransmission does not repair.

aiortc's video jitter buffer (aiortc.jitterbuffer.JitterBuffer, 512 packets in
RTCRtpReceiver) releases frames in sequence order only, waits behind a missing packet until
512 newer packets have come, then drops just enough to fit the newest and releases at most one
frame per packet received. Its sender keeps the last 128 packets for retransmission
(aiortc.rtp.RTP_HISTORY_SIZE), so a hole more than 128 packets back is never repaired. Measured
in the tunnel experiment (issue 25): after a 3 s outage whose packets were dropped, decoding
stopped for 18 s and every later frame came about 15 s late until the call ended, because at
about one packet per frame the backlog of frames never drains.

libwebrtc, which the paper's calls used, does not wait for a packet that cannot come: it
decodes only frames whose references are complete, drops the frames before a decodable key
frame once one arrives, and asks the sender for a key frame (RTCP PLI) when its packet buffer
overflows or a loss is beyond repair (webrtc/modules/video_coding/packet_buffer.cc: "Clear
PacketBuffer and request key frame."; nack_requester.cc: a NACK list over kMaxNackPackets is
cleared and a key frame requested; video_receive_stream2.cc: key frames are re-requested every
max_wait_for_keyframe, 200 ms, while waiting for one; frame_buffer: frames older than a decoded
key frame are dropped). RecoveringJitterBuffer does the same for VP8 in aiortc's receiver:

- its capacity is RTP_HISTORY_SIZE packets: a hole that far behind the newest packet is beyond
  the sender's history, so no retransmission will fill it. Then it empties itself, asks for a
  key frame and keeps nothing until the first packet of a key frame comes (every delta frame
  after the hole refers to the lost picture: decoding it would only show a corrupt picture);
- when the first packet of a key frame arrives with a hole before it in the buffer, it drops
  everything before the key frame (nothing older is needed to decode what follows);
- while it waits for a key frame, it asks again at most every KEYFRAME_RETRY_S (1 s, where
  libwebrtc waits 200 ms: over a queue of seconds, as on the direct path beside a download, a
  request every 200 ms would fill the queue with key frames before the first one arrives).

The sender's retransmission history is not enlarged: holding more packets in the receiver
would only lengthen the freeze before the key frame request.

`install()` replaces the jitter buffer aiortc's RTCRtpReceiver creates for video, in this
process only; audio keeps aiortc's own.
"""

from __future__ import annotations

import time
from typing import Any, Callable, Optional

KEYFRAME_RETRY_S = 1.0
"""Least time between two key frame requests while waiting for one (s); libwebrtc's
max_wait_for_keyframe is 200 ms (see the module docstring)."""


def is_keyframe_start(payload: bytes) -> bool:
    """Whether an RTP payload (VP8 payload descriptor and data, RFC 7741) is the first packet of
    a VP8 key frame: S=1 and partition 0 in the descriptor, and the P bit of the frame's first
    byte 0 (RFC 6386 section 9.1)."""
    from aiortc.codecs.vpx import VpxPayloadDescriptor

    try:
        descriptor, data = VpxPayloadDescriptor.parse(payload)
    except ValueError:
        return False
    start = descriptor.partition_start == 1 and descriptor.partition_id == 0
    return start and len(data) > 0 and data[0] & 1 == 0


def _jitter_buffer_class() -> type:
    """RecoveringJitterBuffer, built on aiortc's JitterBuffer (imported only when needed)."""
    from aiortc.jitterbuffer import MAX_MISORDER, JitterBuffer
    from aiortc.utils import uint16_add

    class RecoveringJitterBuffer(JitterBuffer):
        """aiortc's video jitter buffer, recovering from unrepaired losses as libwebrtc does
        (see the module docstring). `add` returns (request a key frame, frame or None), as
        aiortc's does."""

        def __init__(
            self,
            capacity: int,
            prefetch: int = 0,
            is_video: bool = True,
            clock: Callable[[], float] = time.monotonic,
        ) -> None:
            super().__init__(capacity, prefetch, is_video)
            self.clock = clock
            self.waiting_for_keyframe = False
            self.keyframe_requests = 0
            """Key frame requests this buffer made (its own, not aiortc's)."""
            self._last_request: Optional[float] = None

        def _request(self, force: bool = False) -> bool:
            """Whether to send a PLI now (at most every KEYFRAME_RETRY_S unless forced)."""
            now = self.clock()
            if force or self._last_request is None or now - self._last_request >= KEYFRAME_RETRY_S:
                self._last_request = now
                self.keyframe_requests += 1
                COUNTS["keyframe_requests"] += 1
                return True
            return False

        def _hole_before(self, delta: int) -> bool:
            """Whether a packet is missing among the `delta` after the head."""
            slots = (self._packets[(self._origin + k) % self.capacity] for k in range(delta))
            return any(p is None for p in slots)

        def add(self, packet: Any) -> tuple[bool, Any]:
            """Adds a packet; returns (request a key frame, a complete frame or None)."""
            keyframe = is_keyframe_start(packet.payload)
            if self.waiting_for_keyframe:
                if not keyframe:
                    return self._request(), None
                self.waiting_for_keyframe = False
                self.remove(self.capacity)
                self._origin = packet.sequence_number
                return super().add(packet)
            if self._origin is None:
                return super().add(packet)
            delta = uint16_add(packet.sequence_number, -self._origin)
            misorder = uint16_add(self._origin, -packet.sequence_number)
            if misorder < delta:  # older than the head: aiortc's handling
                return super().add(packet)
            if keyframe and 0 < delta < self.capacity and self._hole_before(delta):
                # A key frame behind a hole: what is before it is no longer needed.
                COUNTS["keyframe_jumps"] += 1
                self.remove(delta)
                return super().add(packet)
            if delta >= self.capacity:
                # The hole is beyond the sender's history: start again from a key frame.
                COUNTS["holes_given_up"] += 1
                self.remove(self.capacity)
                self._origin = packet.sequence_number
                if not keyframe:
                    self.waiting_for_keyframe = True
                    return self._request(force=True), None
                return super().add(packet)
            return super().add(packet)

    assert MAX_MISORDER < 128  # aiortc's misorder window stays inside our capacity
    return RecoveringJitterBuffer


COUNTS = {"holes_given_up": 0, "keyframe_jumps": 0, "keyframe_requests": 0}
"""What the recovering buffers of this process did: holes beyond the sender's history given up,
jumps to a key frame over a hole, key frame requests (for the call's stderr)."""

_CLASS: Optional[type] = None


def recovering_jitter_buffer() -> type:
    """The RecoveringJitterBuffer class (needs aiortc)."""
    global _CLASS
    if _CLASS is None:
        _CLASS = _jitter_buffer_class()
    return _CLASS


def install() -> None:
    """Makes aiortc's receivers use RecoveringJitterBuffer for video, with a capacity of the
    sender's retransmission history (RTP_HISTORY_SIZE packets), in this process only."""
    import aiortc.rtcrtpreceiver as receiver
    from aiortc.jitterbuffer import JitterBuffer
    from aiortc.rtp import RTP_HISTORY_SIZE

    recovering = recovering_jitter_buffer()

    def jitter_buffer(capacity: int, prefetch: int = 0, is_video: bool = False) -> Any:
        if is_video:
            return recovering(RTP_HISTORY_SIZE, prefetch, True)
        return JitterBuffer(capacity, prefetch, is_video)

    receiver.JitterBuffer = jitter_buffer  # type: ignore[attr-defined]
