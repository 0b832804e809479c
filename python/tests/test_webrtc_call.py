"""The WebRTC call program (`python -m sprout.webrtc_call`, issue 25): its barcode, a call over
loopback, its errors, and the call CI runs through the emulator on a constant 300 kbit/s link.

The calls need aiortc (the package's `webrtc` extra): without it they skip, saying so, unless
SPROUT_REQUIRE_WEBRTC=1 (CI, which installs the extra), where they fail. The emulated call
also needs root and the `sprout` command (conftest's `cli`).
"""

import importlib.util
import json
import os
import shlex
import signal
import socket
import stat
import struct
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from sprout import _webrtc_barcode as barcode

PY = sys.executable
CONTRACT_FIELDS = {
    "role", "duration_s", "frames_sent", "frames_received", "frames_unreadable",
    "received_kbps", "sent_kbps", "frame_delay_ms", "frames_within_ms", "target_bitrate_kbps",
}
INSTALL_HINT = (
    "error: the WebRTC call needs aiortc: pip install './python[webrtc]' (from the repository) "
    "or pip install 'sprout[webrtc]'"
)
LINK_KBPS = 300
"""The emulated link's constant rate each way (kbit/s): 25 opportunities of 1500 bytes per s."""


def require_aiortc():
    """Skips (visibly) when aiortc or av is not installed, or fails with SPROUT_REQUIRE_WEBRTC=1."""
    missing = [m for m in ("aiortc", "av") if importlib.util.find_spec(m) is None]
    if missing:
        reason = f"{' and '.join(missing)} not installed (pip install './python[webrtc]')"
        if os.environ.get("SPROUT_REQUIRE_WEBRTC") == "1":
            pytest.fail(reason + ", but SPROUT_REQUIRE_WEBRTC=1")
        pytest.skip(reason)


def call_cmd(role, sock, bind, seconds, *extra):
    """The command line of one end of a call."""
    return [PY, "-m", "sprout.webrtc_call", "--role", role, "--signal", str(sock), "--bind", bind,
            "--duration", str(seconds), "--connect-timeout", "10", *map(str, extra)]


def finish(proc, timeout):
    """(returncode, stdout, stderr) of a process, killing it if it outlives `timeout` s."""
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        pytest.fail(f"{proc.args[:6]} ran over {timeout} s:\n{err[-2000:]}")
    return proc.returncode, out, err


def summary_of(out, err):
    """The one JSON line a call printed."""
    lines = out.strip().splitlines()
    assert len(lines) == 1, f"stdout: {out!r}\nstderr: {err[-2000:]}"
    summary = json.loads(lines[0])
    assert set(summary) == CONTRACT_FIELDS, summary
    return summary


# --- the barcode (numpy only) ---


def test_barcode_round_trips_and_refuses_a_flipped_cell():
    luma = np.full((240, 320), 128, dtype=np.uint8)
    stamp = barcode.Stamp(frame=123_456, capture_us=987_654_321_012)
    barcode.draw(luma, stamp)
    assert barcode.read(luma) == stamp
    cols, _ = barcode.layout(320, 240)
    # Flip the cell of one bit (row 1, column 3): the checksum no longer matches.
    y, x = 1 * barcode.CELL, 3 * barcode.CELL
    cell = luma[y : y + barcode.CELL, x : x + barcode.CELL]
    cell[:] = np.where(cell > 128, barcode.BLACK, barcode.WHITE)
    assert cols * 1 + 3 < barcode.BITS
    assert barcode.read(luma) is None


def test_barcode_survives_noise_and_refuses_a_blank_frame():
    rng = np.random.default_rng(3)
    luma = np.zeros((480, 640), dtype=np.uint8)
    stamp = barcode.Stamp(frame=(1 << 24) - 1, capture_us=(1 << 48) - 1)
    barcode.draw(luma, stamp)
    noisy = np.clip(luma.astype(int) + rng.integers(-60, 61, size=luma.shape), 0, 255)
    assert barcode.read(noisy.astype(np.uint8)) == stamp
    assert barcode.read(np.full((480, 640), 128, dtype=np.uint8)) is None
    assert barcode.read(np.zeros((64, 64), dtype=np.uint8)) is None
    with pytest.raises(ValueError):
        barcode.layout(160, 480)


# --- the program's errors ---


def test_missing_aiortc_exits_2_with_the_install_hint(tmp_path):
    # An `aiortc` module that fails to import, first on the path, stands for a missing one.
    (tmp_path / "aiortc.py").write_text("raise ImportError('simulated: aiortc is not installed')\n")
    env = dict(os.environ, PYTHONPATH=f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    call = ["--role", "answer", "--signal", str(tmp_path / "s"), "--bind", "127.0.0.1"]
    for args in (["--check"], call):
        p = subprocess.run([PY, "-m", "sprout.webrtc_call", *args], capture_output=True, text=True,
                           env=env, timeout=60)
        assert p.returncode == 2, p.stderr
        assert p.stderr.strip() == INSTALL_HINT
        assert p.stdout == ""
    assert not (tmp_path / "s").exists()


def test_check_prints_the_versions():
    require_aiortc()
    p = subprocess.run([PY, "-m", "sprout.webrtc_call", "--check"], capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 0, p.stderr
    versions = json.loads(p.stdout)
    import aiortc
    import av

    assert versions == {"aiortc": aiortc.__version__, "av": av.__version__}


def test_usage_errors_are_one_line_and_exit_1(tmp_path):
    require_aiortc()
    for args in (["--role", "offer", "--signal", "s"],
                 ["--role", "offer", "--signal", "s", "--bind", "not-an-ip"],
                 ["--role", "offer", "--signal", "s", "--bind", "127.0.0.1", "--width", "100"]):
        p = subprocess.run([PY, "-m", "sprout.webrtc_call", *args], capture_output=True, text=True,
                           cwd=tmp_path, timeout=60)
        assert p.returncode == 1, (args, p.stderr)
        assert p.stderr.startswith("error: ") and len(p.stderr.strip().splitlines()) == 1, p.stderr


def send_when_listening(path, data, timeout=20.0):
    """Connects to the Unix socket at `path` once it exists and sends `data`."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                s.connect(str(path))
                s.sendall(data)
                time.sleep(0.5)
                return
        except (FileNotFoundError, ConnectionRefusedError):
            if time.monotonic() > deadline:
                pytest.fail(f"nothing listened at {path} within {timeout} s")
            time.sleep(0.05)


def framed(body):
    """A signalling message: 4-byte big-endian length, then `body`."""
    return struct.pack(">I", len(body)) + body


@pytest.mark.parametrize("garbage", [
    b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",                       # announces a 1.2 GB message
    framed(b"not json!!!"),
    framed(json.dumps({"type": "answer", "sdp": "v=0"}).encode()),  # the wrong type
    framed(json.dumps({"type": "offer", "sdp": "v=0 junk"}).encode()),  # an SDP aiortc refuses
    struct.pack(">I", 100) + b'{"type": "offer", "sdp": ',      # closed mid-message
    b"\x00\x00",                                                 # closed mid-header
])
def test_garbage_on_the_signalling_socket_is_a_short_error(tmp_path, garbage):
    require_aiortc()
    sock = tmp_path / "call.sock"
    answer = subprocess.Popen(call_cmd("answer", sock, "127.0.0.1", 5), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    send_when_listening(sock, garbage)
    code, out, err = finish(answer, 30)
    assert code == 1, err
    assert out == ""
    assert "Traceback" not in err
    last = err.strip().splitlines()[-1]
    assert last.startswith("error: ") and len(last) < 200, err
    assert not sock.exists(), "the answer end left its socket file"


# --- calls ---


def start_answer(sock, seconds, *extra):
    """Starts the answer end and waits until it listens, checking that only we may connect."""
    answer = subprocess.Popen(call_cmd("answer", sock, "127.0.0.1", seconds, *extra),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 20
    while not sock.exists():
        if answer.poll() is not None or time.monotonic() > deadline:
            code, _, err = finish(answer, 5)
            pytest.fail(f"the answer end did not listen (status {code}): {err[-2000:]}")
        time.sleep(0.05)
    assert stat.S_ISSOCK(os.lstat(sock).st_mode)
    assert stat.S_IMODE(os.lstat(sock).st_mode) == 0o600
    return answer


# --- recovery from unrepaired losses (_webrtc_repair) ---


def vp8_packet(seq, frame, keyframe=False, start=True):
    """An RTP packet of one VP8 frame (frame number `frame`, 90 kHz at 30 frames/s): the
    payload descriptor (S bit when it starts the frame) then the frame's data, whose first byte
    has the P bit clear for a key frame."""
    from aiortc.codecs import depayload
    from aiortc.rtcrtpparameters import RTCRtpCodecParameters
    from aiortc.rtp import RtpPacket

    descriptor = bytes([0x10 if start else 0x00])
    data = bytes([0x00 if keyframe else 0x01]) + frame.to_bytes(4, "big")
    packet = RtpPacket(payload_type=96, sequence_number=seq % 65536, timestamp=frame * 3000)
    packet.payload = descriptor + data
    vp8 = RTCRtpCodecParameters(mimeType="video/VP8", clockRate=90000, payloadType=96)
    packet._data = depayload(vp8, packet.payload)
    return packet


def feed(buffer, packets):
    """(key frame requests, frame numbers released) of adding `packets` to `buffer`."""
    requests, released = 0, []
    for p in packets:
        pli, frame = buffer.add(p)
        requests += pli
        if frame is not None:
            released.append(int.from_bytes(frame.data[1:5], "big"))
    return requests, released


def outage(seq0=65500):
    """One packet per frame (a call at a low rate): a key frame and 39 delta frames, then 20
    packets lost and never retransmitted (an outage beyond the sender's history), then 200
    delta frames; sequence numbers wrap past 65535."""
    before = [vp8_packet(seq0 + k, k, keyframe=k == 0) for k in range(40)]
    after = [vp8_packet(seq0 + k, k) for k in range(60, 260)]
    return before, after


def test_aiortc_jitter_buffer_alone_stalls_behind_a_hole():
    # What _webrtc_repair is for: aiortc's own buffer releases nothing after the hole until
    # 512 packets have come, asking for a key frame that would not end the stall either.
    require_aiortc()
    from aiortc.jitterbuffer import JitterBuffer

    before, after = outage()
    buf = JitterBuffer(512, is_video=True)
    _, released = feed(buf, before)
    assert released == list(range(39))
    assert feed(buf, after) == (0, [])


def test_the_recovering_buffer_asks_for_a_key_frame_and_resumes():
    require_aiortc()
    from aiortc.rtp import RTP_HISTORY_SIZE

    from sprout import _webrtc_repair as repair

    now = [0.0]
    buf = repair.recovering_jitter_buffer()(RTP_HISTORY_SIZE, clock=lambda: now[0])
    before, after = outage()
    assert feed(buf, before) == (0, list(range(39)))
    # Frames 60.. depend on the lost ones: nothing is released, and once the hole is
    # RTP_HISTORY_SIZE (128) packets behind the newest, a key frame is asked for, once.
    assert feed(buf, after[:RTP_HISTORY_SIZE - 21]) == (0, [])
    assert feed(buf, after[RTP_HISTORY_SIZE - 21:RTP_HISTORY_SIZE - 19]) == (1, [])
    assert buf.waiting_for_keyframe
    # While it waits, delta frames are dropped; the request is repeated after KEYFRAME_RETRY_S.
    assert feed(buf, after[RTP_HISTORY_SIZE - 19:150]) == (0, [])
    now[0] += repair.KEYFRAME_RETRY_S
    assert feed(buf, after[150:]) == (1, [])
    # The key frame (in two packets) and the frames after it come out, one per frame.
    seq = 65500 + 260
    key = [vp8_packet(seq, 260, keyframe=True), vp8_packet(seq + 1, 260, start=False)]
    rest = [vp8_packet(seq + 1 + k, 260 + k) for k in range(1, 30)]
    requests, released = feed(buf, key + rest)
    assert requests == 0 and not buf.waiting_for_keyframe
    assert released == list(range(260, 289))  # all but the last, which no packet follows
    assert buf.keyframe_requests == 2
    assert repair.COUNTS["holes_given_up"] >= 1


def test_a_key_frame_behind_a_hole_is_released_at_once():
    require_aiortc()
    from sprout import _webrtc_repair as repair

    buf = repair.recovering_jitter_buffer()(128)
    before, after = outage(seq0=100)
    feed(buf, before)
    assert feed(buf, after[:10]) == (0, [])
    # A key frame (the answer to the sender's own request, say) ends the wait: the delta
    # frames before it are dropped, not decoded.
    key = vp8_packet(100 + 70, 70, keyframe=True)
    follow = [vp8_packet(100 + 70 + k, 70 + k) for k in range(1, 5)]
    assert feed(buf, [key, *follow]) == (0, [70, 71, 72, 73])
    assert buf.keyframe_requests == 0


def test_install_gives_aiortc_receivers_the_recovering_buffer_for_video(monkeypatch):
    require_aiortc()
    import aiortc.rtcrtpreceiver as receiver
    from aiortc.jitterbuffer import JitterBuffer

    from sprout import _webrtc_repair as repair

    monkeypatch.setattr(receiver, "JitterBuffer", receiver.JitterBuffer)
    repair.install()
    video = receiver.JitterBuffer(capacity=512, is_video=True)
    audio = receiver.JitterBuffer(capacity=16, prefetch=4)
    assert isinstance(video, repair.recovering_jitter_buffer()) and video.capacity == 128
    assert type(audio) is JitterBuffer and audio.capacity == 16


def test_call_over_loopback_both_ways(tmp_path):
    require_aiortc()
    sock, csv = tmp_path / "call.sock", tmp_path / "offer.csv"
    answer = start_answer(sock, 8)
    offer_cmd = call_cmd("offer", sock, "127.0.0.1", 8, "--frames-csv", csv, "--seed", 2)
    offer = subprocess.Popen(offer_cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    results = {}
    for name, proc in (("offer", offer), ("answer", answer)):
        code, out, err = finish(proc, 60)
        assert code == 0, err
        assert "Traceback" not in err
        results[name] = summary_of(out, err)
    for name, s in results.items():
        print(f"loopback {name}: {json.dumps(s)}")
        assert s["role"] == name
        assert 7.5 <= s["duration_s"] <= 9.0
        assert s["frames_received"] >= 120, s          # of about 240 in 8 s at 30 frames/s
        assert s["frames_unreadable"] <= s["frames_received"] // 20, s
        delay = s["frame_delay_ms"]
        assert 0 < delay["p50"] <= delay["p95"] <= delay["p99"], s
        assert delay["p95"] < 500, s
        assert s["received_kbps"] > 50 and s["sent_kbps"] > 50, s
        assert s["target_bitrate_kbps"]["first"] == 500, s  # aiortc's VP8 starts there
        assert 0 <= s["frames_within_ms"]["100"] <= s["frames_within_ms"]["300"] <= 1
    rows = csv.read_text().splitlines()
    assert rows[0] == "frame,capture_us,decode_us,delay_ms"
    frames = [int(r.split(",")[0]) for r in rows[1:]]
    readable = results["offer"]["frames_received"] - results["offer"]["frames_unreadable"]
    assert len(frames) == readable
    assert frames == sorted(frames) and len(set(frames)) == len(frames)
    assert not sock.exists()


def constant_trace(path, kbps):
    """A mahimahi trace of `kbps` kbit/s: one 1500-byte opportunity every 12000/kbps ms, with
    a loop period of 1 s (the last timestamp)."""
    per_s = kbps * 1000 // (1500 * 8)
    assert per_s * 1500 * 8 == kbps * 1000
    path.write_text("".join(f"{(i + 1) * 1000 // per_s}\n" for i in range(per_s)))


def arrival_kbps(log, last_s):
    """Rate of the packets arriving at an emulated link's queue (what the call sent), over the
    last `last_s` seconds before its last arrival (kbit/s), from a mahimahi log."""
    arrivals = []
    for line in Path(log).read_text().splitlines():
        f = line.split()
        if len(f) == 3 and f[1] == "+":
            arrivals.append((int(f[0]), int(f[2])))
    assert arrivals, f"{log}: no arrivals"
    end = arrivals[-1][0]
    window = [b for t, b in arrivals if t > end - last_s * 1000]
    return sum(window) * 8 / last_s / 1000


def require_emulator(cli):
    """Skips (visibly) unless this process may run the emulator."""
    if os.geteuid() != 0:
        pytest.skip("the emulated call needs root (sprout link makes network namespaces)")
    if not Path("/dev/net/tun").exists():
        pytest.skip("the emulated call needs /dev/net/tun")


def test_call_through_the_emulator_falls_below_400_kbps(cli, tmp_path):
    """Issue 25's CI call: 36 s of media each way over a constant 300 kbit/s link (at most
    60 s in all); frames arrive both ways and each direction's sending rate over the last 15 s,
    from the emulator's logs, is below 400 kbit/s (the call starts at 500)."""
    require_emulator(cli)
    require_aiortc()
    os.chmod(tmp_path, 0o755)
    trace, addr, sock = tmp_path / "c300", tmp_path / "outside", tmp_path / "call.sock"
    up_log, down_log = tmp_path / "up.log", tmp_path / "down.log"
    constant_trace(trace, LINK_KBPS)
    media_s = 36
    # Inside: note the emulator's outside address for the answer end, then become the offer end.
    offer = shlex.join(call_cmd("offer", sock, "BIND", media_s))
    offer = offer.replace("BIND", '"$SPROUT_LINK_MOBILE"')
    tmp, final = shlex.quote(f"{addr}.tmp"), shlex.quote(str(addr))
    inner = f'echo "$SPROUT_LINK_OUTSIDE" > {tmp} && mv {tmp} {final} && exec {offer}'
    started = time.monotonic()
    link = subprocess.Popen([cli.exe, "link", "--uplink", trace, "--downlink", trace,
                             "--uplink-log", up_log, "--downlink-log", down_log,
                             "--duration", "55", "--", "sh", "-c", inner],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    while not addr.exists():
        if link.poll() is not None or time.monotonic() - started > 10:
            code, _, err = finish(link, 5)
            pytest.fail(f"sprout link did not start the offer end (status {code}): {err[-2000:]}")
        time.sleep(0.05)
    outside = addr.read_text().strip()
    answer = subprocess.Popen(call_cmd("answer", sock, outside, media_s), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    a_code, a_out, a_err = finish(answer, 58 - (time.monotonic() - started))
    l_code, l_out, l_err = finish(link, max(1.0, 59 - (time.monotonic() - started)))
    elapsed = time.monotonic() - started
    assert a_code == 0, a_err
    assert l_code == 0, l_err
    results = {"offer (mobile)": summary_of(l_out, l_err),
               "answer (outside)": summary_of(a_out, a_err)}
    rates = {"uplink": arrival_kbps(up_log, 15), "downlink": arrival_kbps(down_log, 15)}
    for name, s in results.items():
        print(f"emulated {name}: {json.dumps(s)}")
    print(f"sending rate over the last 15 s (emulator logs): uplink {rates['uplink']:.1f} kbit/s, "
          f"downlink {rates['downlink']:.1f} kbit/s; {elapsed:.1f} s in all")
    assert elapsed <= 60
    for name, s in results.items():
        assert s["frames_received"] >= s["duration_s"] * 30 / 4, (name, s)
        assert s["frame_delay_ms"]["p50"] > 0, (name, s)
        # The receiver's REMB brought the sender's encoder down from its 500 kbit/s start.
        assert s["target_bitrate_kbps"]["min"] < 400, (name, s)
    for direction, kbps in rates.items():
        assert kbps < 400, f"the call sent {kbps:.1f} kbit/s {direction} over the last 15 s"


def test_sigterm_and_sigint_end_the_call_with_its_summary(tmp_path):
    require_aiortc()
    sock = tmp_path / "call.sock"
    answer = start_answer(sock, 60)
    offer = subprocess.Popen(call_cmd("offer", sock, "127.0.0.1", 60), stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    # Its first line on stderr says it is connected (or it ends within its 10 s connect timeout).
    line = offer.stderr.readline()
    assert "connected" in line, line + finish(offer, 20)[2]
    time.sleep(2)
    offer.send_signal(signal.SIGTERM)
    answer.send_signal(signal.SIGINT)
    for name, proc in (("offer", offer), ("answer", answer)):
        code, out, err = finish(proc, 20)
        assert code == 0, err
        assert "Traceback" not in err
        s = summary_of(out, err)
        print(f"interrupted {name}: {json.dumps(s)}")
        assert 0 < s["duration_s"] < 10 and s["frames_received"] > 0, s
    assert not sock.exists()
