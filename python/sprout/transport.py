"""Sprout as an asyncio transport: secure Sprout connections between Python programs, and with
``sprout server``.

.. code-block:: python

    import asyncio
    from sprout import transport

    async def main():
        server = await transport.serve("127.0.0.1:9200")          # an ephemeral key
        client = await transport.connect(server.address, server_key=server.public_key)
        conn = await server.accept()
        client.send(b"hello")
        m = await conn.recv()              # Message(data=b'hello', sent_us=..., ...)
        print(m.data, m.delay_ms)          # the application-level delay, ms
        conn.send(b"world")
        print((await client.recv()).data, client.stats()["window_bytes"], client.forecast())
        client.close(); server.close()

    asyncio.run(main())

Every datagram is encrypted and authenticated (Noise IK, ChaCha20-Poly1305: the same wire as
``sprout client``/``sprout server``); the protocol is Sprout's (the paper's forecast and
window). Underneath, a sans-IO Rust object (libsprout's connection, or its listener of many
sessions on one socket) is driven by an ``asyncio.DatagramProtocol`` and ``loop.call_at``
timers: no thread, nothing blocks the event loop. Use a connection from the loop that made it.

Messages are the DATA messages of ``sprout client``'s protocol: each carries a sequence number
and a send time (``sent_us``, microseconds since the Unix epoch by default), so the receiver
measures each message's delay (``Message.delay_ms``, meaningful when both clocks agree: one
host, or clocks kept in sync). To talk to ``sprout server``, give ``greeting=hello(...)``: the
server then runs the transfer the HELLO asks for (its DATA, then a few BYE messages, which
:func:`decode` reads).

Keys are 32 bytes or 44 characters of base64 (what ``sprout keygen`` and ``sprout server``
print); :func:`generate_key` and :func:`public_key` make them.
"""

import asyncio
import base64
import collections
import os
import socket
import time
import weakref
from typing import Any, Deque, Dict, Iterable, List, NamedTuple, Optional, Tuple, Union

from . import _sprout

__all__ = [
    "Connection",
    "ConnectionClosed",
    "Message",
    "Server",
    "connect",
    "decode",
    "generate_key",
    "hello",
    "key_to_base64",
    "public_key",
    "serve",
]

KeyLike = Union[bytes, str]
Address = Union[str, Tuple[str, int]]


class ConnectionClosed(ConnectionError):
    """The connection is over (closed by either end, or its peer fell silent); the message
    says why."""


class Message(NamedTuple):
    """One received message."""

    data: bytes
    """The message's bytes (a DATA message's payload; a message of another type whole)."""
    sent_us: int
    """The send time the sender gave (µs; ``time.time_ns() // 1000`` at ``send`` by default,
    as ``sprout`` stamps its DATA); 0 for a message that is not DATA."""
    received_us: int
    """When it was handed to this side: ``time.time_ns() // 1000``."""
    seq: int
    """The sender's sequence number (0, 1, 2, ...); 0 for a message that is not DATA."""
    is_data: bool
    """A DATA message (``sprout server`` also sends ACCEPT and BYE: see :func:`decode`)."""

    @property
    def delay_ms(self) -> float:
        """``received_us - sent_us`` in milliseconds: the application-level one-way delay when
        both ends' clocks agree."""
        return (self.received_us - self.sent_us) / 1000.0


def _realtime_us() -> int:
    return time.time_ns() // 1000


def _key(k: KeyLike, what: str) -> bytes:
    if isinstance(k, str):
        try:
            raw = base64.b64decode(k.strip(), validate=True)
        except ValueError:
            raise ValueError(f"{what} is not base64: {k[:60]!r}") from None
    elif isinstance(k, (bytes, bytearray, memoryview)):
        raw = bytes(k)
    else:
        raise TypeError(f"{what} must be bytes or a base64 str, not {type(k).__name__}")
    if len(raw) != 32:
        raise ValueError(f"{what} must be 32 bytes (or 44 characters of base64), got {len(raw)} bytes")
    return raw


def generate_key() -> bytes:
    """A fresh private key: 32 random bytes from the operating system."""
    return _sprout._transport_generate_key()


def public_key(key: KeyLike) -> bytes:
    """The public key (32 bytes) of a private key."""
    return _sprout._transport_public_key(_key(key, "key"))


def key_to_base64(key: KeyLike) -> str:
    """A key as the 44 characters of base64 that ``sprout`` prints and reads."""
    return base64.b64encode(_key(key, "key")).decode()


def hello(direction: str = "both", rate_kbps: int = 0, duration_s: float = 10.0,
          payload_bytes: int = 0, session: Optional[int] = None) -> bytes:
    """A HELLO of ``sprout client``'s protocol, the greeting that makes ``sprout server`` run a
    transfer: ``direction`` "up" (client to server), "down" or "both"; ``rate_kbps`` the paced
    rate of application data (0: bulk, saturating); ``duration_s`` how long the senders send;
    ``payload_bytes`` each DATA message's size (0: 1000 bytes paced, as large as fits in
    bulk). It asks for the paper's Sprout with confidence 0.95, the model this transport runs."""
    if not 0 < duration_s * 1000 < 2**32:
        raise ValueError(f"duration_s must be positive and under 49 days, got {duration_s}")
    if not 0 <= rate_kbps < 2**32 or not 0 <= payload_bytes < 2**16:
        raise ValueError("rate_kbps or payload_bytes out of range")
    if session is None:
        session = int.from_bytes(os.urandom(8), "big")
    return _sprout._transport_hello(direction, rate_kbps, round(duration_s * 1000),
                                    payload_bytes, session)


def decode(message: Union[bytes, Message]) -> Optional[Dict[str, Any]]:
    """What a message of ``sprout client``'s protocol says: a dict with its ``type``
    ("hello", "accept", "data", "bye", "filler") and fields (a BYE's ``data_sent``, a DATA's
    ``seq`` and ``sent_us``, ...); None if it is none of them. A :class:`Message` that is not
    DATA is decoded from its bytes."""
    if isinstance(message, Message):
        if message.is_data:
            return {"type": "data", "seq": message.seq, "sent_us": message.sent_us}
        message = message.data
    return _sprout._transport_decode(bytes(message))


SOCKET_BUFFER_BYTES = 4 << 20
"""The socket buffers asked of the kernel (it caps them at net.core.rmem_max and wmem_max), as
``sprout server``'s: one socket carries every session, and a busy event loop must not let it
overflow (Sprout does not retransmit)."""


def _enlarge_buffers(transport: Any) -> None:
    sock = transport.get_extra_info("socket")
    for opt in (socket.SO_RCVBUF, socket.SO_SNDBUF):
        try:
            sock.setsockopt(socket.SOL_SOCKET, opt, SOCKET_BUFFER_BYTES)
        except OSError:
            pass


def _split_address(addr: Address) -> Tuple[str, int]:
    if isinstance(addr, tuple):
        return str(addr[0]), int(addr[1])
    host, sep, port = str(addr).rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"address must be HOST:PORT or (host, port), got {addr!r}")
    return host.strip("[]"), int(port)


class _Endpoint(asyncio.DatagramProtocol):
    """One UDP socket and the sans-IO core behind it: feeds it datagrams and the event loop's
    time, sends what it hands back, keeps one timer at its deadline."""

    def __init__(self, core: Any):
        self._loop = asyncio.get_running_loop()
        self._core = core
        self._transport: Optional[asyncio.DatagramTransport] = None
        self._timer: Optional[asyncio.TimerHandle] = None
        self._timer_at: Optional[int] = None
        self._socket_errors = 0
        self._closing = False

    def _now(self) -> int:
        return int(self._loop.time() * 1e6)

    def connection_made(self, transport: Any) -> None:
        self._transport = transport

    def error_received(self, exc: Exception) -> None:
        # An ICMP error (port unreachable, ...): the protocol's own timers decide.
        self._socket_errors += 1

    def connection_lost(self, exc: Optional[Exception]) -> None:
        self._closing = True
        self._cancel_timer()

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer = self._timer_at = None

    def _on_timer(self) -> None:
        self._timer = self._timer_at = None
        self._core.on_timeout(self._now())
        self._pump()

    def _pump(self) -> None:
        """Sends what is due, hands news to the waiting coroutines, re-arms the timer."""
        self._flush()
        self._dispatch()
        deadline = self._core.deadline()
        if deadline is None or self._closing or self._transport is None \
                or self._transport.is_closing():
            self._cancel_timer()
        elif deadline != self._timer_at:
            self._cancel_timer()
            self._timer = self._loop.call_at(deadline / 1e6, self._on_timer)
            self._timer_at = deadline

    def _flush(self) -> None:
        raise NotImplementedError

    def _dispatch(self) -> None:
        raise NotImplementedError


class Connection:
    """One secure Sprout connection (from :func:`connect`, or :meth:`Server.accept`)."""

    def __init__(self, endpoint: _Endpoint, core: Any, peer_key: Optional[bytes] = None,
                 greeting: bytes = b"", peer_address: Optional[Tuple[str, int]] = None):
        self._endpoint = endpoint
        self._core = core
        self._waiter: Optional[asyncio.Future] = None
        self._pending: Deque[Message] = collections.deque()
        self.peer_key = peer_key
        """The client's public key (server side), or None."""
        self.greeting = greeting
        """The client's greeting (server side; a HELLO from ``sprout client``), or b""."""
        self.peer_address = peer_address
        """Where the peer's datagrams came from (server side) or go to (client side)."""

    def send(self, data: bytes, sent_us: Optional[int] = None) -> None:
        """Queues ``data`` as one message (at most ``stats()["max_message"]`` bytes, about
        1.4 kB) stamped with ``sent_us`` (default: now, µs since the Unix epoch); it leaves as
        Sprout's window allows. Raises ConnectionClosed once the connection is over, ValueError
        for a message too long."""
        reason = self._core.end_reason()
        if reason is not None:
            raise ConnectionClosed(reason)
        self._core.send(_realtime_us() if sent_us is None else int(sent_us), bytes(data))
        self._endpoint._pump()

    def send_bye(self) -> None:
        """Client side: queues a BYE of ``sprout client``'s protocol (a few copies), the end of
        this side's data, with the DATA messages sent; ``sprout server`` ends the session on
        it."""
        if not hasattr(self._core, "send_bye"):
            raise TypeError("send_bye is the client side's (a server side closes)")
        reason = self._core.end_reason()
        if reason is not None:
            raise ConnectionClosed(reason)
        self._core.send_bye()
        self._endpoint._pump()

    async def drain(self, timeout: Optional[float] = None) -> None:
        """Waits until every message sent has left (``stats()["queued_bytes"]`` is 0), or the
        connection is over; TimeoutError after ``timeout`` seconds. Close after it, or what is
        still queued is dropped."""

        async def wait() -> None:
            while self._core.end_reason() is None and self._core.stats(
                    self._endpoint._now())["queued_bytes"] > 0:
                await asyncio.sleep(0.005)

        await asyncio.wait_for(wait(), timeout)

    def _take(self) -> Optional[Message]:
        if self._pending:
            return self._pending.popleft()
        m = self._core.recv()
        if m is None:
            return None
        data, seq, sent_us, is_data = m
        return Message(data, sent_us, _realtime_us(), seq, is_data)

    def recv_nowait(self) -> Optional[Message]:
        """The next received message, or None if none has arrived."""
        return self._take()

    async def recv(self) -> Message:
        """The next received message; raises ConnectionClosed when the connection is over and
        every message it received has been read."""
        while True:
            m = self._take()
            if m is not None:
                return m
            reason = self._core.end_reason()
            if reason is not None:
                raise ConnectionClosed(reason)
            self._waiter = self._endpoint._loop.create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None

    def _wake(self) -> None:
        w = self._waiter
        if w is not None and not w.done():
            w.set_result(None)

    def __aiter__(self) -> "Connection":
        return self

    async def __anext__(self) -> Message:
        try:
            return await self.recv()
        except ConnectionClosed:
            raise StopAsyncIteration from None

    @property
    def state(self) -> str:
        """"connecting", "established", "reconnecting" (the client redials a silent server;
        messages wait) or "closed"."""
        return self._core.state()

    @property
    def end_reason(self) -> Optional[str]:
        """Why the connection ended, or None while it lasts."""
        return self._core.end_reason()

    def stats(self) -> Dict[str, Any]:
        """Counters and figures: state, datagrams and bytes sent and received, datagrams
        dropped (unauthenticated, replayed, malformed), messages sent and received,
        reconnections, ``window_bytes`` (what Sprout's forecast lets leave now, link bytes),
        ``queue_estimate_bytes``, ``queued_bytes`` (waiting to leave), ``incoming_rate_pps``
        (the receiver's estimate), ``max_message``, ``end_reason``."""
        return self._core.stats(self._endpoint._now())

    def forecast(self) -> List[int]:
        """The peer's latest forecast: cumulative packets it expects to receive by each 20 ms
        tick ahead (empty before the first)."""
        return self._core.forecast()

    def close(self) -> None:
        """Closes the connection: the peer is told (a few authenticated close datagrams).
        Messages still queued to leave (:meth:`drain` waits for them) and messages received and
        not read are dropped."""
        self._core.close(self._endpoint._now())
        self._endpoint._pump()
        self._endpoint._closed(self)
        self._wake()

    async def __aenter__(self) -> "Connection":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        self.close()


class _ClientEndpoint(_Endpoint):
    def __init__(self, core: Any):
        super().__init__(core)
        self.conn: Optional[Connection] = None
        self.connected: asyncio.Future = self._loop.create_future()

    def datagram_received(self, data: bytes, addr: Any) -> None:
        self._core.feed(self._now(), data)
        self._pump()

    def _flush(self) -> None:
        if self._transport is None or self._transport.is_closing():
            return
        for d in self._core.transmit(self._now()):
            self._transport.sendto(d)

    def _dispatch(self) -> None:
        for e in self._core.events():
            if e == "connected" and not self.connected.done():
                self.connected.set_result(None)
            elif e == "closed" and not self.connected.done():
                self.connected.set_exception(ConnectionClosed(self._core.end_reason()))
        if self.conn is not None:
            self.conn._wake()

    def _closed(self, conn: Connection) -> None:
        if self._transport is not None:
            self._transport.close()
        if not self.connected.done():
            self.connected.set_exception(ConnectionClosed("closed by this application"))


async def connect(addr: Address, server_key: KeyLike, key: Optional[KeyLike] = None,
                  greeting: bytes = b"", timeout: Optional[float] = 10.0) -> Connection:
    """Connects to a Sprout server at ``addr`` ("host:port" or (host, port)): a
    :func:`serve` server, or ``sprout server`` (with ``greeting=hello(...)``).
    ``server_key`` is its public key; ``key`` this client's private key (default: a fresh
    one); ``greeting`` goes to the server inside the handshake (at most about 1 kB).
    Returns once the handshake is done; raises TimeoutError after ``timeout`` seconds without
    an answer (a wrong ``server_key`` gets none), ConnectionClosed if the server refused."""
    loop = asyncio.get_running_loop()
    own = _key(key, "key") if key is not None else generate_key()
    now = int(loop.time() * 1e6)
    core = _sprout._TransportClient(own, _key(server_key, "server_key"), bytes(greeting), now)
    host, port = _split_address(addr)
    transport, endpoint = await loop.create_datagram_endpoint(
        lambda: _ClientEndpoint(core), remote_addr=(host, port))
    _enlarge_buffers(transport)
    conn = Connection(endpoint, core, peer_address=transport.get_extra_info("peername")[:2])
    endpoint.conn = conn
    endpoint._pump()
    try:
        await asyncio.wait_for(asyncio.shield(endpoint.connected), timeout)
    except BaseException:
        core.close(endpoint._now())
        endpoint._cancel_timer()
        transport.close()
        if not endpoint.connected.done():
            endpoint.connected.cancel()
        raise
    return conn


class _SessionCore:
    """One session of a listener, with the methods of a client core; once closed here the
    listener forgets it, and this answers for it."""

    __slots__ = ("_l", "_id", "_gone")

    CLOSED = "closed by this application"

    def __init__(self, listener: Any, sid: int):
        self._l, self._id, self._gone = listener, sid, False

    def send(self, sent_us: int, data: bytes) -> None:
        self._l.send(self._id, sent_us, data)

    def recv(self) -> Any:
        return None if self._gone else self._l.recv(self._id)

    def state(self) -> str:
        return "closed" if self._gone else self._l.state(self._id)

    def end_reason(self) -> Optional[str]:
        return self.CLOSED if self._gone else self._l.end_reason(self._id)

    def stats(self, now: int) -> Dict[str, Any]:
        if self._gone:
            raise ConnectionClosed(self.CLOSED)
        return self._l.stats(self._id, now)

    def forecast(self) -> List[int]:
        return [] if self._gone else self._l.forecast(self._id)

    def close(self, now: int) -> None:
        if not self._gone:
            self._gone = True
            self._l.release(self._id, now)


class Server(_Endpoint):
    """Many secure Sprout sessions on one UDP socket (from :func:`serve`)."""

    def __init__(self, core: Any):
        super().__init__(core)
        self._conns: "weakref.WeakValueDictionary[int, Connection]" = weakref.WeakValueDictionary()
        self._accept_waiter: Optional[asyncio.Future] = None

    @property
    def public_key(self) -> bytes:
        """The server's public key (32 bytes; :func:`key_to_base64` for text)."""
        return self._core.public_key()

    @property
    def address(self) -> Tuple[str, int]:
        """The (host, port) the socket is bound to."""
        assert self._transport is not None
        return tuple(self._transport.get_extra_info("sockname")[:2])  # type: ignore[return-value]

    def datagram_received(self, data: bytes, addr: Any) -> None:
        self._core.feed(self._now(), addr[0], addr[1], data)
        self._pump()

    def _flush(self) -> None:
        if self._transport is None or self._transport.is_closing():
            return
        for d, host, port in self._core.transmit(self._now()):
            self._transport.sendto(d, (host, port))

    def _dispatch(self) -> None:
        for sid in self._core.ready():
            conn = self._conns.get(sid)
            if conn is not None:
                conn._wake()
        w = self._accept_waiter
        if w is not None and not w.done():
            w.set_result(None)

    def _closed(self, conn: Connection) -> None:
        pass

    def _release(self, sid: int) -> None:
        # A connection object was collected without close(): its session goes.
        if self._closing or self._loop.is_closed():
            return
        self._core.release(sid, self._now())
        self._pump()

    async def accept(self) -> Connection:
        """The next client's connection, once its handshake is done. Raises ConnectionClosed
        once the server is closed."""
        while True:
            if self._closing:
                raise ConnectionClosed("the server is closed")
            got = self._core.accept()
            if got is not None:
                sid, peer_key, greeting, host, port = got
                conn = Connection(self, _SessionCore(self._core, sid), peer_key, greeting,
                                  (host, port))
                self._conns[sid] = conn
                weakref.finalize(conn, self._release, sid)
                return conn
            self._accept_waiter = self._loop.create_future()
            try:
                await self._accept_waiter
            finally:
                self._accept_waiter = None

    def __aiter__(self) -> "Server":
        return self

    async def __anext__(self) -> Connection:
        try:
            return await self.accept()
        except ConnectionClosed:
            raise StopAsyncIteration from None

    def stats(self) -> Dict[str, Any]:
        """The server's counters: sessions held, accepted, refused (backlog full); datagrams
        received, sent, dropped; the security layer's drops by reason."""
        return self._core.server_stats()

    def close(self) -> None:
        """Closes every session (their clients are told) and the socket."""
        if self._closing:
            return
        self._closing = True
        for conn in list(self._conns.values()):
            conn.close()
        now = self._now()
        while True:
            waiting = self._core.accept()
            if waiting is None:
                break
            self._core.release(waiting[0], now)
        self._flush()
        self._cancel_timer()
        if self._transport is not None:
            self._transport.close()
        w = self._accept_waiter
        if w is not None and not w.done():
            w.set_result(None)

    async def __aenter__(self) -> "Server":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        self.close()


async def serve(addr: Address, key: Optional[KeyLike] = None,
                allowed: Optional[Iterable[KeyLike]] = None, *, max_sessions: int = 1024,
                max_sessions_per_source: int = 16, max_sessions_per_key: int = 8,
                idle_timeout: float = 30.0, accept_backlog: int = 128) -> Server:
    """A Sprout server on ``addr`` ("host:port" or (host, port); port 0 picks one:
    ``Server.address``). ``key`` is its private key (default: a fresh one,
    ``Server.public_key`` says its public key); ``allowed`` the client public keys let in
    (default: any client; every session is still encrypted and authenticated). As ``sprout
    server``: at most ``max_sessions`` at once, ``max_sessions_per_source`` from one IP address
    (raise it for many clients on one host), ``max_sessions_per_key`` per client key; a
    session silent for ``idle_timeout`` seconds ends; at most ``accept_backlog`` sessions wait
    for :meth:`Server.accept` (beyond, new ones are closed at once)."""
    loop = asyncio.get_running_loop()
    own = _key(key, "key") if key is not None else generate_key()
    keys = None if allowed is None else [_key(k, "an allowed key") for k in allowed]
    core = _sprout._TransportListener(own, keys, int(loop.time() * 1e6), max_sessions,
                                      max_sessions_per_source, max_sessions_per_key,
                                      float(idle_timeout), accept_backlog)
    host, port = _split_address(addr)
    transport, server = await loop.create_datagram_endpoint(lambda: Server(core),
                                                            local_addr=(host, port))
    _enlarge_buffers(transport)
    return server
