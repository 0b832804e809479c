"""sprout.transport (issue 37): Sprout as an asyncio transport. A Python client and server both
ways, 100 concurrent connections to one server, the example both ways with `sprout server`
(conftest's `cli`), refusals and errors, and, as root, the example's two processes through the
emulator (`sprout link`)."""

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sprout import transport

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "transport_echo.py"
PY = sys.executable


def run(coro, timeout=60):
    """Runs `coro` in a fresh event loop, failing after `timeout` seconds."""
    return asyncio.run(asyncio.wait_for(coro, timeout))


def test_client_and_server_carry_messages_both_ways_with_their_send_times():
    async def main():
        server = await transport.serve("127.0.0.1:0")
        client_key = transport.generate_key()
        client = await transport.connect(server.address, server_key=server.public_key,
                                         key=client_key, greeting=b"hi there")
        conn = await server.accept()
        assert conn.greeting == b"hi there"
        assert conn.peer_key == transport.public_key(client_key)
        assert conn.peer_address[0] == "127.0.0.1" and client.peer_address == server.address
        assert (client.state, conn.state) == ("established", "established")
        before = transport._realtime_us()
        for i in range(50):
            client.send(b"up %d" % i)
            conn.send(b"down %d" % i, sent_us=1_000 + i)
        for i in range(50):
            up = await conn.recv()
            assert (up.data, up.seq, up.is_data) == (b"up %d" % i, i, True)
            assert before <= up.sent_us <= up.received_us
            assert 0 <= up.delay_ms < 5_000
            down = await client.recv()
            assert (down.data, down.seq, down.sent_us) == (b"down %d" % i, i, 1_000 + i)
        assert client.recv_nowait() is None
        s = client.stats()
        assert s["messages_sent"] == 50 and s["messages_received"] == 50
        assert s["datagrams_dropped"] == 0 and s["window_bytes"] > 0
        assert s["max_message"] > 1000
        assert client.forecast() and conn.forecast()
        with pytest.raises(ValueError, match="longer than"):
            client.send(bytes(s["max_message"] + 1))
        # The client closes: the server reads what came before, then ConnectionClosed.
        client.send(b"last")
        await client.drain(timeout=5)
        await asyncio.sleep(0.05)
        client.close()
        assert (await conn.recv()).data == b"last"
        with pytest.raises(transport.ConnectionClosed, match="the client closed"):
            await conn.recv()
        with pytest.raises(transport.ConnectionClosed):
            client.send(b"after")
        stats = server.stats()
        assert stats["sessions_accepted"] == 1 and stats["datagrams_dropped"] == 0
        server.close()
        with pytest.raises(transport.ConnectionClosed):
            await server.accept()

    run(main())


def test_a_server_closing_a_session_ends_its_client():
    async def main():
        async with await transport.serve("127.0.0.1:0") as server:
            client = await transport.connect(server.address, server_key=server.public_key)
            conn = await server.accept()
            conn.close()
            assert conn.state == "closed"
            with pytest.raises(transport.ConnectionClosed):
                await asyncio.wait_for(client.recv(), 5)
            assert client.state == "closed"

    run(main())


def test_20_concurrent_connections_in_one_loop_with_their_server_each_deliver_every_message():
    count, clients = 20, 20

    async def echo(conn):
        async for m in conn:
            conn.send(m.data, sent_us=m.sent_us)

    async def one(server, i):
        c = await transport.connect(server.address, server_key=server.public_key,
                                    greeting=b"client %d" % i, timeout=20)
        for k in range(count):
            c.send(b"%d:%d" % (i, k))
            await asyncio.sleep(0.005)
        got = [(await c.recv()).data for _ in range(count)]
        c.close()
        return got

    async def main():
        server = await transport.serve("127.0.0.1:0", max_sessions_per_source=clients,
                                       accept_backlog=clients)
        echoes = []

        async def acceptor():
            while True:
                echoes.append(asyncio.create_task(echo(await server.accept())))

        accepting = asyncio.create_task(acceptor())
        started = time.monotonic()
        results = await asyncio.gather(*(one(server, i) for i in range(clients)))
        took = time.monotonic() - started
        for i, got in enumerate(results):
            assert got == [b"%d:%d" % (i, k) for k in range(count)], f"client {i}"
        stats = server.stats()
        assert stats["sessions_accepted"] == clients, stats
        assert stats["sessions_refused"] == 0, stats
        print(f"{clients} connections x {count} messages each way in {took:.1f} s; {stats}")
        accepting.cancel()
        server.close()

    run(main(), timeout=120)


def test_100_concurrent_connections_to_one_server_each_deliver_every_message():
    """The example's server in one process, its client in another with 100 connections at
    once (each its own socket and session; all up before any sends): every message of every
    connection comes back, and the server echoed each session's 20."""
    server = subprocess.Popen(example("server", "--listen", "127.0.0.1:0", "--sessions", 100,
                                      "--max-sessions-per-source", 100),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    hello = json.loads(server.stdout.readline() or "{}")
    assert "listening" in hello, finish(server, 5)
    client = subprocess.run(example("client", "--connect", hello["listening"], "--server-key",
                                    hello["public_key"], "--connections", 100, "--count", 20,
                                    "--rate", 50, "--timeout", 20),
                            capture_output=True, text=True, timeout=120)
    code, out, err = finish(server, 30)
    assert client.returncode == 0, client.stdout + client.stderr
    assert code == 0, err
    result = json.loads(client.stdout)
    print(f"100 connections: {result}")
    assert result["complete"] == result["connections"] == 100
    assert result["echoed"] == result["sent"] == 2000
    ends = [json.loads(l) for l in out.splitlines() if "session_end" in l]
    assert [e["echoed"] for e in ends] == [20] * 100


def test_a_wrong_server_key_times_out_and_a_key_not_allowed_is_refused():
    async def main():
        allowed = transport.generate_key()
        server = await transport.serve("127.0.0.1:0", allowed=[transport.public_key(allowed)])
        with pytest.raises(asyncio.TimeoutError):
            await transport.connect(server.address, server_key=transport.generate_key()[::-1],
                                    timeout=0.5)
        with pytest.raises(asyncio.TimeoutError):
            await transport.connect(server.address, server_key=server.public_key, timeout=0.5)
        ok = await transport.connect(server.address, server_key=server.public_key, key=allowed,
                                     timeout=5)
        assert ok.state == "established"
        drops = server.stats()["drops"]
        assert drops.get("bad_mac", 0) > 0 and drops.get("not_allowed", 0) > 0, drops
        ok.close()
        server.close()

    run(main())


def test_bad_arguments_are_short_errors():
    async def main():
        with pytest.raises(ValueError, match="32 bytes"):
            await transport.connect("127.0.0.1:9", server_key=b"short")
        with pytest.raises(ValueError, match="base64"):
            await transport.connect("127.0.0.1:9", server_key="not base64!")
        with pytest.raises(ValueError, match="HOST:PORT"):
            await transport.serve("no-port")
        with pytest.raises(ValueError, match="idle_timeout"):
            await transport.serve("127.0.0.1:0", idle_timeout=0)

    run(main())
    with pytest.raises(ValueError, match="direction"):
        transport.hello("sideways")


def test_hello_and_the_other_messages_decode():
    h = transport.decode(transport.hello("down", rate_kbps=300, duration_s=2.5,
                                         payload_bytes=700, session=42))
    assert h == {"type": "hello", "session": 42, "direction": "down", "scheme": "sprout",
                 "confidence": 0.95, "rate_kbps": 300, "duration_ms": 2500,
                 "payload_bytes": 700}
    assert transport.decode(b"\x09junk") is None
    assert transport.decode(b"") is None
    key = transport.generate_key()
    text = transport.key_to_base64(key)
    assert len(text) == 44 and transport.public_key(text) == transport.public_key(key)


def example(*args):
    return [PY, str(EXAMPLE), *map(str, args)]


def finish(proc, timeout):
    """(returncode, stdout, stderr) of a process, killing it if it outlives `timeout` s."""
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        pytest.fail(f"{proc.args[:4]} ran over {timeout} s:\n{err[-2000:]}")
    return proc.returncode, out, err


def start_sprout_server(cli):
    """`sprout server --once --json` on a free loopback port: (process, address, key)."""
    proc = subprocess.Popen([cli.exe, "server", "--listen", "127.0.0.1:0", "--allow-any-client",
                             "--once", "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    line = proc.stderr.readline()
    if "listening on" not in line:
        code, _, err = finish(proc, 5)
        pytest.fail(f"sprout server did not start (status {code}): {line}{err}")
    words = line.split()
    return proc, words[words.index("on") + 1], words[words.index("key") + 1]


def test_the_example_streams_both_ways_with_sprout_server(cli):
    server, addr, key = start_sprout_server(cli)
    client = subprocess.run(example("stream", "--connect", addr, "--server-key", key,
                                    "--duration", 2, "--rate", 200),
                            capture_output=True, text=True, timeout=60)
    code, out, err = finish(server, 30)
    assert client.returncode == 0, client.stdout + client.stderr
    assert code == 0, err
    mine = json.loads(client.stdout)
    summary = next(json.loads(l) for l in out.splitlines() if '"summary"' in l)
    print(f"example: {mine}\nsprout server: {summary}")
    # Every DATA message went each way: the server's BYE counted what the example received,
    # the server's summary what the example sent.
    assert mine["accepted"] and mine["received"] == mine["server_data_sent"] >= 90
    assert summary["data_received"] == mine["sent"] >= 90
    # The example ended its data with BYE, which the server read (its count included).
    assert summary["end"] == "bye" and summary["peer_data_sent"] == mine["sent"]
    assert summary["app_delay_p95_ms"] < 100 and mine["delay_ms"]["p95"] < 100


def test_the_example_echoes_between_two_processes_over_loopback():
    server = subprocess.Popen(example("server", "--listen", "127.0.0.1:0", "--sessions", 1),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    hello = json.loads(server.stdout.readline() or "{}")
    assert "listening" in hello, finish(server, 5)
    client = subprocess.run(example("client", "--connect", hello["listening"], "--server-key",
                                    hello["public_key"], "--count", 50, "--rate", 100),
                            capture_output=True, text=True, timeout=60)
    code, out, err = finish(server, 20)
    assert client.returncode == 0, client.stdout + client.stderr
    assert code == 0, err
    result = json.loads(client.stdout)
    assert result["echoed"] == result["sent"] == 50
    assert json.loads(out.splitlines()[-1])["echoed"] == 50


def constant_trace(path, per_s):
    """A mahimahi trace of `per_s` 1500-byte opportunities per second, evenly spaced (loop
    period 1 s)."""
    path.write_text("".join(f"{(i + 1) * 1000 // per_s}\n" for i in range(per_s)))


def test_the_example_echoes_through_the_emulator(cli, tmp_path):
    """The echo server outside, its client in the emulator's mobile namespace behind a
    constant 2.4 Mbit/s link with 20 ms each way: every message comes back, each round trip
    at least the link's 40 ms."""
    if os.geteuid() != 0:
        pytest.skip("the emulated run needs root (sprout link makes network namespaces)")
    if not Path("/dev/net/tun").exists():
        pytest.skip("the emulated run needs /dev/net/tun")
    os.chmod(tmp_path, 0o755)
    trace = tmp_path / "c200"
    constant_trace(trace, 200)
    server = subprocess.Popen(example("server", "--listen", "0.0.0.0:0", "--sessions", 1),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    hello = json.loads(server.stdout.readline() or "{}")
    assert "listening" in hello, finish(server, 5)
    port = hello["listening"].rsplit(":", 1)[1]
    inner = (f'exec {PY} {EXAMPLE} client --connect "$SPROUT_LINK_OUTSIDE:{port}" '
             f'--server-key {hello["public_key"]} --count 100 --rate 50')
    link = subprocess.Popen([cli.exe, "link", "--uplink", trace, "--downlink", trace,
                             "--delay", "20", "--duration", "30", "--", "sh", "-c", inner],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
    try:
        l_code, l_out, l_err = finish(link, 40)
    finally:
        if server.poll() is None and link.returncode != 0:
            server.kill()
    s_code, s_out, s_err = finish(server, 10)
    assert l_code == 0, l_out + l_err
    assert s_code == 0, s_err
    result = json.loads(l_out.strip().splitlines()[-1])
    print(f"through the emulator: {result}")
    assert result["echoed"] == result["sent"] == 100
    assert result["rtt_ms"]["p50"] >= 40, result
