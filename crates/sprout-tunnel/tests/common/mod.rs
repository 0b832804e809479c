//! An in-memory tunnel network for the tests: one [`TunnelServer`], clients with their own
//! keys (tunnel clients, or raw clients that put any payload in a valid session), datagrams
//! delivered after a fixed one-way delay, time stepped from event to event; and builders of
//! IPv4/IPv6 UDP, TCP and ICMP packets.

#![allow(dead_code)]

use sprout_core::time::Instant;
use std::collections::{HashSet, VecDeque};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use sprout_core::{Config, Connection};
use sprout_secure::{
    AllowedClients, Client, ClientConfig, ClientReceived, Limits, PrivateKey, PublicKey,
    ServerConfig,
};
use sprout_tunnel::control::Greeting;
use sprout_tunnel::{
    ClientSettings, ClientTunnelEvent, FlowQueueConfig, ServerSettings, ServerTunnelEvent,
    TunnelClient, TunnelServer,
};

/// One-way delay of every datagram (µs).
pub(crate) const DELAY_US: u64 = 20_000;
/// The server's UDP address.
pub(crate) const SERVER_UDP: &str = "203.0.113.1:7700";
/// The server's tunnel addresses.
pub(crate) const SERVER_V4: Ipv4Addr = Ipv4Addr::new(10, 77, 0, 1);
/// The server's IPv6 tunnel address.
pub(crate) const SERVER_V6: Ipv6Addr = Ipv6Addr::new(0xfd77, 0, 0, 0, 0, 0, 0, 1);
/// A host on the server's network side (beyond its TUN device).
pub(crate) const INTERNET_V4: Ipv4Addr = Ipv4Addr::new(198, 51, 100, 7);
/// An IPv6 host on the server's network side.
pub(crate) const INTERNET_V6: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 7);

/// The tunnel address `10.77.0.<n>`.
pub(crate) fn v4(n: u8) -> Ipv4Addr {
    Ipv4Addr::new(10, 77, 0, n)
}

/// The tunnel address `fd77::<n>`.
pub(crate) fn v6(n: u16) -> Ipv6Addr {
    Ipv6Addr::new(0xfd77, 0, 0, 0, 0, 0, 0, n)
}

/// Server settings: 10.77.0.1/24 and fd77::1/64, the default core, only `allowed` keys
/// (or any key when `None`), a 1400-byte TUN MTU, forwarding between clients on.
pub(crate) fn server_settings(key: PrivateKey, allowed: Option<&[PublicKey]>) -> ServerSettings {
    let allowed = match allowed {
        Some(keys) => AllowedClients::Keys(keys.iter().copied().collect::<HashSet<_>>()),
        None => AllowedClients::Any,
    };
    ServerSettings {
        secure: ServerConfig::new(key, allowed),
        core: Config::default(),
        v4: Some("10.77.0.1/24".parse().unwrap()),
        v6: Some("fd77::1/64".parse().unwrap()),
        pinned: Default::default(),
        queue: FlowQueueConfig::default(),
        tun_mtu: 1400,
        client_to_client: true,
        probe: false,
        isolate: false,
    }
}

/// A client that speaks the tunnel's greeting but puts whatever payload the test gives into
/// its valid session (a hostile client, or one with another greeting).
pub(crate) struct RawClient {
    /// The security layer.
    pub secure: Client,
    /// The core connection, once established.
    pub conn: Option<Connection>,
    /// The core configuration.
    pub config: Config,
    /// Payloads received out of the session.
    pub received: Vec<Vec<u8>>,
    /// Payloads waiting for the session to be up.
    pending: Vec<Vec<u8>>,
}

impl RawClient {
    /// A raw client with `greeting` (the tunnel's own by default).
    pub(crate) fn new(
        key: PrivateKey,
        server: PublicKey,
        greeting: Option<Vec<u8>>,
        now: u64,
    ) -> RawClient {
        let config = Config::default();
        let greeting = greeting.unwrap_or_else(|| {
            Greeting {
                max_datagram_bytes: config.max_datagram_bytes as u16,
            }
            .encode()
        });
        let secure = Client::new(
            ClientConfig {
                private_key: key,
                server_key: server,
                limits: Limits::default(),
            },
            Instant::from_micros(now),
            &greeting,
        )
        .unwrap();
        RawClient {
            secure,
            conn: None,
            config,
            received: Vec::new(),
            pending: Vec::new(),
        }
    }

    /// Queues a payload (sent once the session is up).
    pub(crate) fn send(&mut self, payload: Vec<u8>) {
        match self.conn.as_mut() {
            Some(c) => c.send(payload),
            None => self.pending.push(payload),
        }
    }

    fn handle_udp(&mut self, now: u64, d: &[u8]) {
        let mut plain = Vec::new();
        match self.secure.handle(Instant::from_micros(now), d, &mut plain) {
            ClientReceived::Established => {
                let mut c =
                    Connection::new(self.config.clone(), Instant::from_micros(now)).unwrap();
                for p in self.pending.drain(..) {
                    c.send(p);
                }
                self.conn = Some(c);
            }
            ClientReceived::Data => {
                if let Some(c) = self.conn.as_mut() {
                    let _ = c.handle_datagram(Instant::from_micros(now), &plain);
                    while let Some(p) = c.recv() {
                        self.received.push(p);
                    }
                }
            }
            _ => {}
        }
    }

    fn poll_udp(&mut self, now: u64, buf: &mut Vec<u8>) -> bool {
        if self.secure.poll_transmit(Instant::from_micros(now), buf) {
            return true;
        }
        let mut core = Vec::new();
        if let Some(c) = self.conn.as_mut() {
            if c.poll_transmit(Instant::from_micros(now), &mut core)
                .is_some()
            {
                return self
                    .secure
                    .seal(Instant::from_micros(now), &core, buf)
                    .is_ok();
            }
        }
        false
    }

    fn handle_timeout(&mut self, now: u64) {
        self.secure.handle_timeout(Instant::from_micros(now));
        if let Some(c) = self.conn.as_mut() {
            c.handle_timeout(Instant::from_micros(now));
        }
    }

    fn poll_timeout(&mut self) -> Option<u64> {
        let a = self.secure.poll_timeout();
        let b = self.conn.as_mut().and_then(|c| c.poll_timeout());
        match (a, b) {
            (Some(a), Some(b)) => Some(a.min(b).as_micros()),
            (a, b) => a.or(b).map(Instant::as_micros),
        }
    }
}

/// A client of the test network. (A handful live per test, so the size difference between
/// the variants is no concern.)
#[allow(clippy::large_enum_variant)]
pub(crate) enum Host {
    /// A real tunnel client.
    Tunnel(Box<TunnelClient>),
    /// A raw (possibly hostile) client.
    Raw(RawClient),
}

/// A client and what reached it.
pub(crate) struct Peer {
    /// The client.
    pub host: Host,
    /// Its UDP address.
    pub addr: SocketAddr,
    /// Its key.
    pub key: PublicKey,
    /// Packets its TUN device received.
    pub tun: Vec<Vec<u8>>,
    /// Its events.
    pub events: Vec<ClientTunnelEvent>,
    /// Datagrams that reached it.
    pub datagrams_in: u64,
    /// A muted client is not driven, and datagrams to it are lost (it went away).
    pub muted: bool,
}

/// The test network.
pub(crate) struct Net {
    /// Now (µs).
    pub now: u64,
    /// The server.
    pub server: TunnelServer,
    /// The server's UDP address.
    pub server_addr: SocketAddr,
    /// The clients.
    pub peers: Vec<Peer>,
    /// Packets the server's TUN device received.
    pub server_tun: Vec<Vec<u8>>,
    /// The server's events.
    pub server_events: Vec<ServerTunnelEvent>,
    /// Datagrams the server sent to addresses no client has.
    pub datagrams_to_nobody: u64,
    /// The link is cut: every datagram sent (either way) is lost.
    pub cut: bool,
    /// Datagrams lost to the cut.
    pub datagrams_cut: u64,
    /// Datagrams in flight: (arrival time, destination peer or `None` for the server,
    /// sender's address, bytes).
    wire: VecDeque<(u64, Option<usize>, SocketAddr, Vec<u8>)>,
    buf: Vec<u8>,
}

impl Net {
    /// A network around a server with `settings`.
    pub(crate) fn new(settings: ServerSettings) -> Net {
        Net {
            now: 0,
            server: TunnelServer::new(settings).unwrap(),
            server_addr: SERVER_UDP.parse().unwrap(),
            peers: Vec::new(),
            server_tun: Vec::new(),
            server_events: Vec::new(),
            datagrams_to_nobody: 0,
            cut: false,
            datagrams_cut: 0,
            wire: VecDeque::new(),
            buf: Vec::new(),
        }
    }

    fn next_addr(&self) -> SocketAddr {
        SocketAddr::new(
            IpAddr::V4(Ipv4Addr::new(192, 0, 2, 10 + self.peers.len() as u8)),
            40_000,
        )
    }

    /// Adds a tunnel client with `key` (the default core and queue); returns its index.
    pub(crate) fn add_client(&mut self, key: PrivateKey) -> usize {
        let settings = ClientSettings {
            secure: ClientConfig {
                private_key: key.clone(),
                server_key: self.server.public_key(),
                limits: Limits::default(),
            },
            core: Config::default(),
            queue: FlowQueueConfig::default(),
            probe: false,
        };
        let c = TunnelClient::new(settings, Instant::from_micros(self.now)).unwrap();
        self.add_host(Host::Tunnel(Box::new(c)), key.public_key())
    }

    /// Adds a raw client (see [`RawClient`]); returns its index.
    pub(crate) fn add_raw(&mut self, key: PrivateKey, greeting: Option<Vec<u8>>) -> usize {
        let c = RawClient::new(key.clone(), self.server.public_key(), greeting, self.now);
        self.add_host(Host::Raw(c), key.public_key())
    }

    fn add_host(&mut self, host: Host, key: PublicKey) -> usize {
        let addr = self.next_addr();
        self.peers.push(Peer {
            host,
            addr,
            key,
            tun: Vec::new(),
            events: Vec::new(),
            datagrams_in: 0,
            muted: false,
        });
        self.peers.len() - 1
    }

    /// Tunnel client `i`.
    pub(crate) fn client(&mut self, i: usize) -> &mut TunnelClient {
        match &mut self.peers[i].host {
            Host::Tunnel(c) => c,
            Host::Raw(_) => panic!("peer {i} is a raw client"),
        }
    }

    /// Raw client `i`.
    pub(crate) fn raw(&mut self, i: usize) -> &mut RawClient {
        match &mut self.peers[i].host {
            Host::Raw(c) => c,
            Host::Tunnel(_) => panic!("peer {i} is a tunnel client"),
        }
    }

    /// A datagram to the server from `from`, arriving after the delay.
    pub(crate) fn inject_to_server(&mut self, from: SocketAddr, d: Vec<u8>) {
        self.wire.push_back((self.now + DELAY_US, None, from, d));
    }

    /// Everything due now: arrivals, timers, transmissions, outputs.
    pub(crate) fn step(&mut self) {
        let now = self.now;
        while self.wire.front().is_some_and(|w| w.0 <= now) {
            let (_, to, from, d) = self.wire.pop_front().unwrap();
            match to {
                None => self.server.handle_udp(Instant::from_micros(now), from, &d),
                Some(i) => {
                    let p = &mut self.peers[i];
                    if p.muted {
                        continue;
                    }
                    p.datagrams_in += 1;
                    match &mut p.host {
                        Host::Tunnel(c) => c.handle_udp(Instant::from_micros(now), &d),
                        Host::Raw(c) => c.handle_udp(now, &d),
                    }
                }
            }
        }
        self.server.handle_timeout(Instant::from_micros(now));
        for p in self.peers.iter_mut().filter(|p| !p.muted) {
            match &mut p.host {
                Host::Tunnel(c) => c.handle_timeout(Instant::from_micros(now)),
                Host::Raw(c) => c.handle_timeout(now),
            }
        }
        let mut buf = std::mem::take(&mut self.buf);
        while let Some(to) = self.server.poll_udp(Instant::from_micros(now), &mut buf) {
            if self.cut {
                self.datagrams_cut += 1;
                continue;
            }
            match self.peers.iter().position(|p| p.addr == to) {
                Some(i) => {
                    self.wire
                        .push_back((now + DELAY_US, Some(i), self.server_addr, buf.clone()))
                }
                None => self.datagrams_to_nobody += 1,
            }
        }
        for p in self.peers.iter_mut().filter(|p| !p.muted) {
            loop {
                let more = match &mut p.host {
                    Host::Tunnel(c) => c.poll_udp(Instant::from_micros(now), &mut buf),
                    Host::Raw(c) => c.poll_udp(now, &mut buf),
                };
                if !more {
                    break;
                }
                if self.cut {
                    self.datagrams_cut += 1;
                    continue;
                }
                self.wire
                    .push_back((now + DELAY_US, None, p.addr, buf.clone()));
            }
            if let Host::Tunnel(c) = &mut p.host {
                while let Some(pkt) = c.poll_tun() {
                    p.tun.push(pkt);
                }
                while let Some(e) = c.poll_event() {
                    p.events.push(e);
                }
            }
        }
        self.buf = buf;
        while let Some(pkt) = self.server.poll_tun() {
            self.server_tun.push(pkt);
        }
        while let Some(e) = self.server.poll_event() {
            self.server_events.push(e);
        }
    }

    /// When something next happens.
    fn next_event(&mut self) -> u64 {
        let mut next = u64::MAX;
        if let Some(w) = self.wire.front() {
            next = next.min(w.0);
        }
        if let Some(t) = self.server.poll_timeout() {
            next = next.min(t.as_micros());
        }
        for p in self.peers.iter_mut().filter(|p| !p.muted) {
            let t = match &mut p.host {
                Host::Tunnel(c) => c.poll_timeout().map(Instant::as_micros),
                Host::Raw(c) => c.poll_timeout(),
            };
            if let Some(t) = t {
                next = next.min(t);
            }
        }
        next
    }

    /// Runs until `end` (µs), stepping from event to event.
    pub(crate) fn run_until(&mut self, end: u64) {
        loop {
            self.step();
            if self.now >= end {
                break;
            }
            self.now = self.next_event().max(self.now + 1).min(end);
        }
    }

    /// Runs for `us` microseconds.
    pub(crate) fn run_for(&mut self, us: u64) {
        self.run_until(self.now + us);
    }

    /// Runs until every tunnel client has its assignment (at most 5 s); panics otherwise.
    pub(crate) fn connect_all(&mut self) {
        let end = self.now + 5_000_000;
        while self.now < end {
            self.run_for(10_000);
            let done = self.peers.iter().all(|p| match &p.host {
                Host::Tunnel(c) => p.muted || c.assignment().is_some(),
                Host::Raw(_) => true,
            });
            if done {
                return;
            }
        }
        panic!("clients not assigned within 5 s");
    }
}

/// Internet checksum of `b`.
fn checksum(b: &[u8]) -> u16 {
    let mut sum = 0u32;
    for c in b.chunks(2) {
        let w = u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]);
        sum += u32::from(w);
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// An IPv4 packet of protocol `proto` with `transport` as its payload.
pub(crate) fn ipv4(proto: u8, src: Ipv4Addr, dst: Ipv4Addr, transport: &[u8]) -> Vec<u8> {
    let total = 20 + transport.len();
    let mut p = vec![
        0x45,
        0,
        (total >> 8) as u8,
        total as u8,
        0,
        0,
        0x40,
        0,
        64,
        proto,
        0,
        0,
    ];
    p.extend_from_slice(&src.octets());
    p.extend_from_slice(&dst.octets());
    let c = checksum(&p);
    p[10..12].copy_from_slice(&c.to_be_bytes());
    p.extend_from_slice(transport);
    p
}

/// An IPv6 packet with next header `proto` and `transport` as its payload.
pub(crate) fn ipv6(proto: u8, src: Ipv6Addr, dst: Ipv6Addr, transport: &[u8]) -> Vec<u8> {
    let len = transport.len();
    let mut p = vec![0x60, 0, 0, 0, (len >> 8) as u8, len as u8, proto, 64];
    p.extend_from_slice(&src.octets());
    p.extend_from_slice(&dst.octets());
    p.extend_from_slice(transport);
    p
}

/// A UDP header and `payload` (checksum 0).
pub(crate) fn udp_segment(sport: u16, dport: u16, payload: &[u8]) -> Vec<u8> {
    let len = 8 + payload.len();
    let mut s = Vec::with_capacity(len);
    s.extend_from_slice(&sport.to_be_bytes());
    s.extend_from_slice(&dport.to_be_bytes());
    s.extend_from_slice(&(len as u16).to_be_bytes());
    s.extend_from_slice(&[0, 0]);
    s.extend_from_slice(payload);
    s
}

/// A TCP header (ACK, no options) and `payload`.
pub(crate) fn tcp_segment(sport: u16, dport: u16, payload: &[u8]) -> Vec<u8> {
    let mut s = Vec::with_capacity(20 + payload.len());
    s.extend_from_slice(&sport.to_be_bytes());
    s.extend_from_slice(&dport.to_be_bytes());
    s.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 1, 0x50, 0x10, 0xff, 0xff, 0, 0, 0, 0]);
    s.extend_from_slice(payload);
    s
}

/// An IPv4 UDP packet.
pub(crate) fn udp4(
    src: Ipv4Addr,
    sport: u16,
    dst: Ipv4Addr,
    dport: u16,
    payload: &[u8],
) -> Vec<u8> {
    ipv4(17, src, dst, &udp_segment(sport, dport, payload))
}

/// An IPv4 TCP packet.
pub(crate) fn tcp4(
    src: Ipv4Addr,
    sport: u16,
    dst: Ipv4Addr,
    dport: u16,
    payload: &[u8],
) -> Vec<u8> {
    ipv4(6, src, dst, &tcp_segment(sport, dport, payload))
}

/// An IPv4 ICMP echo request.
pub(crate) fn icmp4(src: Ipv4Addr, dst: Ipv4Addr, seq: u16) -> Vec<u8> {
    let mut m = vec![8, 0, 0, 0, 0x12, 0x34];
    m.extend_from_slice(&seq.to_be_bytes());
    m.extend_from_slice(b"ping-payload");
    let c = checksum(&m);
    m[2..4].copy_from_slice(&c.to_be_bytes());
    ipv4(1, src, dst, &m)
}

/// An IPv6 UDP packet.
pub(crate) fn udp6(
    src: Ipv6Addr,
    sport: u16,
    dst: Ipv6Addr,
    dport: u16,
    payload: &[u8],
) -> Vec<u8> {
    ipv6(17, src, dst, &udp_segment(sport, dport, payload))
}

/// An IPv6 TCP packet.
pub(crate) fn tcp6(
    src: Ipv6Addr,
    sport: u16,
    dst: Ipv6Addr,
    dport: u16,
    payload: &[u8],
) -> Vec<u8> {
    ipv6(6, src, dst, &tcp_segment(sport, dport, payload))
}

/// An ICMPv6 echo request (checksum not computed).
pub(crate) fn icmp6(src: Ipv6Addr, dst: Ipv6Addr, seq: u16) -> Vec<u8> {
    let mut m = vec![128, 0, 0, 0, 0x12, 0x34];
    m.extend_from_slice(&seq.to_be_bytes());
    m.extend_from_slice(b"ping6-payload");
    ipv6(58, src, dst, &m)
}

/// A fresh private key.
pub(crate) fn key() -> PrivateKey {
    PrivateKey::generate()
}
