"""Sprout as an asyncio transport (``sprout.transport``): an echo server, its client, and a
client of ``sprout server``. Each prints JSON lines on stdout.

    # An echo server (any client; prints its address and public key), and a client of it:
    python examples/transport_echo.py server --listen 127.0.0.1:9200
    python examples/transport_echo.py client --connect 127.0.0.1:9200 --server-key KEY \\
        --count 100 --rate 50 [--connections 100]

    # Both ways with `sprout server`: a paced stream each way (HELLO, DATA, BYE):
    sprout server --listen 127.0.0.1:9100 --allow-any-client &
    python examples/transport_echo.py stream --connect 127.0.0.1:9100 --server-key KEY \\
        --duration 3 --rate 200

The client exits 0 when every message of every connection came back, ``stream`` when every DATA message the server
said it sent (its BYE) arrived; 1 otherwise. Through the emulator (as root), the server outside
and the client in the mobile namespace:

    python examples/transport_echo.py server --listen 0.0.0.0:9200 &
    sudo sprout link --uplink UP --downlink DOWN -- sh -c \\
        'python examples/transport_echo.py client --connect "$SPROUT_LINK_OUTSIDE:9200" --server-key KEY'
"""

import argparse
import asyncio
import json
import sys
import time

from sprout import transport

DATA_HEADER_BYTES = 24
"""A DATA message's header (type, sequence number, send time): ``send`` adds it."""


def percentiles(values):
    """p50, p95 and max of `values` (ms, rounded), or None when empty."""
    if not values:
        return None
    v = sorted(values)
    pick = lambda q: round(v[min(len(v) - 1, int(q * len(v)))], 3)  # noqa: E731
    return {"p50": pick(0.5), "p95": pick(0.95), "max": round(v[-1], 3)}


def emit(obj):
    print(json.dumps(obj), flush=True)


async def echo(conn, sessions):
    """Sends every message of `conn` back with its send time (so the client measures the
    round trip), until the client closes."""
    n = 0
    async for m in conn:
        conn.send(m.data, sent_us=m.sent_us)
        n += 1
    emit({"session_end": list(conn.peer_address), "echoed": n, "why": conn.end_reason})
    sessions.release()


async def serve(args):
    server = await transport.serve(args.listen, key=args.key,
                                   max_sessions_per_source=args.max_sessions_per_source)
    host, port = server.address
    emit({"listening": f"{host}:{port}", "public_key": transport.key_to_base64(server.public_key)})
    ended = asyncio.Semaphore(0)
    tasks = set()
    accepted = 0
    async with server:
        while args.sessions == 0 or accepted < args.sessions:
            conn = await server.accept()
            accepted += 1
            task = asyncio.create_task(echo(conn, ended))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
        for _ in range(args.sessions):
            await ended.acquire()
    return 0


async def one_client(args, i, connected, all_connected, handshakes, rtts):
    """One connection: connect (at most a few handshakes at once), wait until every
    connection is up, send `args.count` numbered messages, wait for their echoes. Returns the
    numbers echoed."""
    async with handshakes:
        conn = await transport.connect(args.connect, server_key=args.server_key,
                                       greeting=b"transport_echo %d" % i, timeout=args.timeout)
    connected.append(conn)
    if len(connected) == args.connections:
        all_connected.set()
    await all_connected.wait()
    seen = set()

    async def receive():
        async for m in conn:
            seen.add(int.from_bytes(m.data[:8], "big"))
            rtts.append(m.delay_ms)
            if len(seen) == args.count:
                return

    receiver = asyncio.create_task(receive())
    # Each message's number in its first 8 bytes (the echo comes with the server's own numbers).
    padding = bytes(args.size - DATA_HEADER_BYTES - 8)
    start = time.monotonic()
    for k in range(args.count):
        await asyncio.sleep(max(0.0, start + k / args.rate - time.monotonic()))
        conn.send(k.to_bytes(8, "big") + padding)
    try:
        await asyncio.wait_for(receiver, args.timeout)
    except asyncio.TimeoutError:
        pass
    await conn.drain(timeout=args.timeout)
    conn.close()
    return seen


async def client(args):
    """`args.connections` connections at once, each echoing `args.count` messages."""
    connected, rtts = [], []
    all_connected, handshakes = asyncio.Event(), asyncio.Semaphore(16)
    results = await asyncio.gather(*(one_client(args, i, connected, all_connected, handshakes,
                                                rtts) for i in range(args.connections)))
    complete = sum(len(seen) == args.count for seen in results)
    missing = sorted(set(range(args.count)) - results[0])[:10]
    emit({"connections": args.connections, "complete": complete,
          "sent": args.count * args.connections, "echoed": sum(map(len, results)),
          "rtt_ms": percentiles(rtts), "missing_first": missing})
    return 0 if complete == args.connections else 1


async def stream(args):
    """Both ways with `sprout server`: its HELLO asks for a paced stream each way."""
    greeting = transport.hello("both", rate_kbps=args.rate, duration_s=args.duration,
                               payload_bytes=args.size)
    conn = await transport.connect(args.connect, server_key=args.server_key, greeting=greeting,
                                   timeout=args.timeout)
    delays, accepted, bye = [], False, None
    received = set()

    async def receive():
        nonlocal accepted, bye
        async for m in conn:
            if m.is_data:
                received.add(m.seq)
                delays.append(m.delay_ms)
                continue
            kind = transport.decode(m) or {}
            if kind.get("type") == "accept":
                accepted = True
            elif kind.get("type") == "bye" and bye is None:
                bye = kind
                return

    receiver = asyncio.create_task(receive())
    payload = bytes(args.size - DATA_HEADER_BYTES)
    interval = args.size * 8 / (args.rate * 1000)
    start = time.monotonic()
    sent = 0
    while time.monotonic() - start < args.duration:
        conn.send(payload)
        sent += 1
        await asyncio.sleep(max(0.0, start + sent * interval - time.monotonic()))
    try:
        await asyncio.wait_for(receiver, args.timeout)
    except asyncio.TimeoutError:
        pass
    conn.send_bye()
    await conn.drain(timeout=args.timeout)
    # Sprout does not retransmit: the last datagrams reach the server before the close does.
    await asyncio.sleep(0.2)
    conn.close()
    expected = bye["data_sent"] if bye else None
    emit({"accepted": accepted, "sent": sent, "received": len(received),
          "server_data_sent": expected, "delay_ms": percentiles(delays)})
    return 0 if accepted and expected is not None and len(received) == expected else 1


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("server", help="an echo server")
    s.add_argument("--listen", default="127.0.0.1:9200")
    s.add_argument("--key", help="the server's private key, base64 (default: a fresh one)")
    s.add_argument("--sessions", type=int, default=0,
                   help="exit after this many sessions ended (default: serve until killed)")
    s.add_argument("--max-sessions-per-source", type=int, default=16)
    for name in ("client", "stream"):
        c = sub.add_parser(name, help="an echo client" if name == "client"
                           else "a paced stream each way with `sprout server`")
        c.add_argument("--connect", required=True, help="the server's HOST:PORT")
        c.add_argument("--server-key", required=True, help="the server's public key, base64")
        c.add_argument("--timeout", type=float, default=10.0,
                       help="seconds to wait for the handshake, and for the last messages")
        c.add_argument("--size", type=int, default=200 if name == "client" else 500,
                       help="bytes per message, its 24-byte DATA header included")
        if name == "client":
            c.add_argument("--count", type=int, default=100, help="messages per connection")
            c.add_argument("--rate", type=float, default=50.0,
                           help="messages per second per connection")
            c.add_argument("--connections", type=int, default=1,
                           help="connections at once (each its own socket and session)")
        else:
            c.add_argument("--duration", type=float, default=3.0, help="seconds each way")
            c.add_argument("--rate", type=int, default=200, help="kbit/s each way")
    args = p.parse_args()
    if args.cmd != "server" and not DATA_HEADER_BYTES + 8 <= args.size <= 1300:
        p.error("--size must be between 32 and 1300 bytes")
    run = {"server": serve, "client": client, "stream": stream}[args.cmd]
    try:
        return asyncio.run(run(args))
    except (ConnectionError, asyncio.TimeoutError, ValueError) as e:
        print(f"error: {e or type(e).__name__}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
