//! The relay's end of SproutTunnel, sans-IO: many clients on one UDP socket, each with its own
//! secure session, Sprout connection, per-flow queue and tunnel addresses.
//!
//! The server is never an open relay: nothing reaches a session before the security layer has
//! authenticated it (allowed keys only, unless configured to accept any key), and a packet out
//! of a session is forwarded only if its source is the address that session was given. A
//! packet read from the TUN device goes to the session that owns its destination; a packet
//! from one client to another is forwarded directly (unless turned off); everything else from
//! a client is handed to the TUN device, i.e. to the server's kernel and its network.
//!
//! Addresses: a client gets the addresses pinned to its key, else the lowest free host
//! address of each configured network (never the network's first or last address, never the
//! server's own, never one pinned to another key). A new session from a key that already has
//! one replaces it (the client restarted): the old session is closed and reported
//! ([`ServerTunnelEvent::ClientDown`]), so the client gets its addresses back. The assignment
//! goes to the client at once and again every [`ASSIGN_RESEND`] until it answers; a client
//! that has not answered [`UNCONFIRMED_TIMEOUT`] after its handshake (its device set-up failed,
//! it gave up) is closed and its addresses freed, and until it answers it is shown as
//! unconfirmed, not counted among the clients.
//!
//! **The relay host itself.** A packet from a client to one of the relay host's own addresses
//! goes to the TUN device like any other, and the host's kernel delivers it locally: a client
//! reaches every service listening on the relay host (on its tunnel address, and on its
//! other addresses when the client routes them into the tunnel), as with WireGuard. With
//! [`ServerSettings::isolate`] such packets are dropped (counted in `to_relay_host`), except
//! ICMP to the server's tunnel addresses (ping, path MTU errors); the runtime tells the server
//! the host's addresses ([`TunnelServer::set_host_addresses`]) and refreshes them.

use std::collections::{HashMap, HashSet, VecDeque};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use ipnet::{IpNet, Ipv4Net, Ipv6Net};
use sprout_core::time::{Duration, Instant};
use sprout_core::Config;
use sprout_secure::{
    PublicKey, SealError, Server, ServerConfig, ServerEvent, ServerReceived, SessionId,
};

use crate::control::{
    self, Assignment, Control, ControlError, Greeting, PayloadKind, V4Assignment, V6Assignment,
    MIN_TUN_MTU_V4, MIN_TUN_MTU_V6,
};
use crate::flow_queue::FlowQueueConfig;
use crate::packet;
use crate::session::SessionPath;
use crate::settings_error::{check_v4, check_v6, SettingsError};
use crate::status::{bump, secure_drops, SessionStatus, TunnelDrops, TunnelStatus};
use crate::{MAX_TUN_BACKLOG, MIN_DATAGRAM_BYTES};

/// The server sends its assignment again after this long without the client's answer.
pub const ASSIGN_RESEND: Duration = Duration::from_secs(1);

/// A session whose client has not confirmed its assignment this long after the handshake is
/// closed and its addresses freed ([`ServerTunnelEvent::ClientDown`]): the client gave up or
/// could not make its device (a client waits as long for its assignment before giving up).
pub const UNCONFIRMED_TIMEOUT: Duration = Duration::from_secs(15);

/// Idle flows are forgotten at most this often.
const EXPIRE_EVERY: Duration = Duration::from_secs(1);

/// Most events waiting for [`TunnelServer::poll_event`]; beyond, the oldest is dropped.
pub const MAX_QUEUED_EVENTS: usize = 4096;

/// Addresses pinned to a client key (from the configuration file).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PinnedAddresses {
    /// The client's IPv4 tunnel address.
    pub v4: Option<Ipv4Addr>,
    /// The client's IPv6 tunnel address.
    pub v6: Option<Ipv6Addr>,
}

/// Configuration of a [`TunnelServer`].
#[derive(Clone, Debug)]
pub struct ServerSettings {
    /// The security layer (keys, allowed clients, session limits, idle timeout).
    pub secure: ServerConfig,
    /// The Sprout configuration of every session (its `max_datagram_bytes` is replaced by the
    /// client's, from its greeting, within [`crate::MIN_DATAGRAM_BYTES`] and this value).
    pub core: Config,
    /// The IPv4 tunnel network and the server's address in it (e.g. 10.77.0.1/24); clients
    /// get the other host addresses in order.
    pub v4: Option<Ipv4Net>,
    /// The IPv6 tunnel network and the server's address in it (e.g. fd77::1/64).
    pub v6: Option<Ipv6Net>,
    /// Addresses pinned to particular client keys.
    pub pinned: HashMap<PublicKey, PinnedAddresses>,
    /// The per-flow queues.
    pub queue: FlowQueueConfig,
    /// MTU of the server's TUN device (bytes); a client is assigned the smaller of this and
    /// its session's largest payload.
    pub tun_mtu: u16,
    /// Forward packets between clients directly (default true).
    pub client_to_client: bool,
    /// Pad each active session's window toward its client, so that the client measures the
    /// downlink even when it carries light traffic (see [`crate::session`]; default off).
    pub probe: bool,
    /// Drop client packets addressed to the relay host itself (see the module docs; default
    /// off: clients reach the host's services, as with WireGuard).
    pub isolate: bool,
}

/// Something that happened to a client.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ServerTunnelEvent {
    /// A client's session is up and was given addresses.
    ClientUp {
        /// The session.
        id: SessionId,
        /// The client's key.
        peer: PublicKey,
        /// Where it is.
        addr: SocketAddr,
        /// Its addresses.
        assignment: Assignment,
    },
    /// A client was refused after its handshake (not a tunnel client, a greeting of another
    /// version, no address left).
    ClientRefused {
        /// The session.
        id: SessionId,
        /// The client's key.
        peer: PublicKey,
        /// Why.
        reason: String,
    },
    /// A client's session ended (the client closed it, idle, keys expired, its assignment
    /// never confirmed) and its
    /// addresses are free again.
    ClientDown {
        /// The session.
        id: SessionId,
        /// The client's key.
        peer: PublicKey,
    },
}

/// One client's session.
struct ClientSession {
    peer: PublicKey,
    addr: SocketAddr,
    assignment: Assignment,
    path: SessionPath,
    /// The client confirmed the assignment (or sent a valid packet from its address).
    acked: bool,
    /// When the assignment is sent again while not acknowledged.
    next_assign: Instant,
    /// When the session is closed if the client has not confirmed its assignment by then.
    confirm_by: Instant,
}

/// The relay's end of the tunnel.
pub struct TunnelServer {
    secure: Server,
    core: Config,
    v4: Option<Ipv4Net>,
    v6: Option<Ipv6Net>,
    pinned: HashMap<PublicKey, PinnedAddresses>,
    pinned_v4: HashSet<Ipv4Addr>,
    pinned_v6: HashSet<Ipv6Addr>,
    queue: FlowQueueConfig,
    probe: bool,
    tun_mtu: u16,
    client_to_client: bool,
    isolate: bool,
    /// The relay host's own addresses (with `isolate`), the tunnel addresses included.
    host_addresses: HashSet<IpAddr>,
    sessions: HashMap<SessionId, ClientSession>,
    /// Session ids in the order they are served by [`TunnelServer::poll_udp`].
    order: Vec<SessionId>,
    /// Index in `order` of the session served first on the next call.
    next_turn: usize,
    by_v4: HashMap<Ipv4Addr, SessionId>,
    by_v6: HashMap<Ipv6Addr, SessionId>,
    by_key: HashMap<PublicKey, SessionId>,
    tun_out: VecDeque<Vec<u8>>,
    events: VecDeque<ServerTunnelEvent>,
    drops: TunnelDrops,
    tun_read_packets: u64,
    tun_write_packets: u64,
    next_expire: Instant,
    plaintext: Vec<u8>,
    tx: Vec<u8>,
    payloads: Vec<Vec<u8>>,
}

fn pinned_outside(addr: IpAddr, key: &PublicKey, net: IpNet) -> SettingsError {
    SettingsError::PinnedOutside {
        addr,
        key: *key,
        net,
    }
}

fn pinned_without_family(addr: IpAddr, key: &PublicKey, family: &'static str) -> SettingsError {
    SettingsError::PinnedWithoutFamily {
        addr,
        key: *key,
        family,
    }
}

/// Whether `addr` is a host address of `net` a client may have (not the first or last, not
/// the server's).
fn v4_client_ok(net: &Ipv4Net, addr: Ipv4Addr) -> bool {
    net.contains(&addr) && addr != net.network() && addr != net.broadcast() && addr != net.addr()
}

fn v6_client_ok(net: &Ipv6Net, addr: Ipv6Addr) -> bool {
    net.contains(&addr) && addr != net.network() && addr != net.broadcast() && addr != net.addr()
}

/// Whether `src` is the tunnel address of its family in `a`.
pub(crate) fn is_client_address(a: &Assignment, src: IpAddr) -> bool {
    match src {
        IpAddr::V4(s) => a.v4.is_some_and(|v| v.client == s),
        IpAddr::V6(s) => a.v6.is_some_and(|v| v.client == s),
    }
}

impl ServerSettings {
    /// The one check of a server's settings (the tunnel's own, and the command line's through
    /// [`crate::config`]): a valid core configuration whose datagrams carry at least
    /// [`MIN_DATAGRAM_BYTES`], an IPv4 or an IPv6 network (each with room for clients and a
    /// host address for the server), a TUN MTU (bytes) the families carried allow, and pinned
    /// addresses that are client addresses of their network, each pinned once.
    pub fn validate(&self) -> Result<(), SettingsError> {
        let settings = self;
        settings.core.validate()?;
        if settings.core.max_datagram_bytes < usize::from(MIN_DATAGRAM_BYTES) {
            return Err(SettingsError::DatagramSizeBelowMinimum {
                max: settings.core.max_datagram_bytes,
            });
        }
        if settings.v4.is_none() && settings.v6.is_none() {
            return Err(SettingsError::NoNetwork);
        }
        if let Some(n) = &settings.v4 {
            check_v4(n)?;
        }
        if let Some(n) = &settings.v6 {
            check_v6(n)?;
        }
        let min_mtu = if settings.v6.is_some() {
            MIN_TUN_MTU_V6
        } else {
            MIN_TUN_MTU_V4
        };
        if settings.tun_mtu < min_mtu {
            return Err(SettingsError::MtuTooSmall {
                mtu: settings.tun_mtu,
                min: min_mtu,
                v6: settings.v6.is_some(),
            });
        }
        let mut pinned_v4 = HashSet::new();
        let mut pinned_v6 = HashSet::new();
        for (key, p) in &settings.pinned {
            if let Some(a) = p.v4 {
                match &settings.v4 {
                    Some(n) if v4_client_ok(n, a) => {}
                    Some(n) => return Err(pinned_outside(a.into(), key, (*n).into())),
                    None => return Err(pinned_without_family(a.into(), key, "IPv4")),
                }
                if !pinned_v4.insert(a) {
                    return Err(SettingsError::PinnedTwice(a.into()));
                }
            }
            if let Some(a) = p.v6 {
                match &settings.v6 {
                    Some(n) if v6_client_ok(n, a) => {}
                    Some(n) => return Err(pinned_outside(a.into(), key, (*n).into())),
                    None => return Err(pinned_without_family(a.into(), key, "IPv6")),
                }
                if !pinned_v6.insert(a) {
                    return Err(SettingsError::PinnedTwice(a.into()));
                }
            }
        }
        Ok(())
    }
}

impl TunnelServer {
    /// A server; fails on an inconsistent configuration (no address family, a network too
    /// small, a pinned address outside the network, an invalid core configuration).
    pub fn new(settings: ServerSettings) -> Result<TunnelServer, SettingsError> {
        settings.validate()?;
        let pinned_v4 = settings.pinned.values().filter_map(|p| p.v4).collect();
        let pinned_v6 = settings.pinned.values().filter_map(|p| p.v6).collect();
        Ok(TunnelServer {
            secure: Server::new(settings.secure),
            core: settings.core,
            v4: settings.v4,
            v6: settings.v6,
            pinned: settings.pinned,
            pinned_v4,
            pinned_v6,
            queue: settings.queue,
            tun_mtu: settings.tun_mtu,
            client_to_client: settings.client_to_client,
            isolate: settings.isolate,
            host_addresses: HashSet::new(),
            probe: settings.probe,
            sessions: HashMap::new(),
            order: Vec::new(),
            next_turn: 0,
            by_v4: HashMap::new(),
            by_v6: HashMap::new(),
            by_key: HashMap::new(),
            tun_out: VecDeque::new(),
            events: VecDeque::new(),
            drops: TunnelDrops::default(),
            tun_read_packets: 0,
            tun_write_packets: 0,
            next_expire: Instant::ZERO,
            plaintext: Vec::with_capacity(2048),
            tx: Vec::with_capacity(2048),
            payloads: Vec::new(),
        })
    }

    fn push_event(&mut self, e: ServerTunnelEvent) {
        if self.events.len() >= MAX_QUEUED_EVENTS {
            self.events.pop_front();
        }
        self.events.push_back(e);
    }

    /// The lowest free IPv4 client address for `key` (its pinned one if any).
    fn free_v4(&self, key: &PublicKey) -> Option<Ipv4Addr> {
        let net = self.v4.as_ref()?;
        if let Some(a) = self.pinned.get(key).and_then(|p| p.v4) {
            return (!self.by_v4.contains_key(&a)).then_some(a);
        }
        // At most (addresses in use + pinned + 2) candidates are skipped before a free one.
        let first = u32::from(net.network()).saturating_add(1);
        let last = u32::from(net.broadcast());
        (first..last).map(Ipv4Addr::from).find(|a| {
            *a != net.addr() && !self.by_v4.contains_key(a) && !self.pinned_v4.contains(a)
        })
    }

    /// The lowest free IPv6 client address for `key` (its pinned one if any).
    fn free_v6(&self, key: &PublicKey) -> Option<Ipv6Addr> {
        let net = self.v6.as_ref()?;
        if let Some(a) = self.pinned.get(key).and_then(|p| p.v6) {
            return (!self.by_v6.contains_key(&a)).then_some(a);
        }
        let first = u128::from(net.network()).saturating_add(1);
        let last = u128::from(net.broadcast());
        let mut a = first;
        while a < last {
            let ip = Ipv6Addr::from(a);
            if ip != net.addr() && !self.by_v6.contains_key(&ip) && !self.pinned_v6.contains(&ip) {
                return Some(ip);
            }
            a += 1;
        }
        None
    }

    /// Refuses session `id` after its handshake.
    fn refuse(&mut self, id: SessionId, peer: PublicKey, reason: String) {
        self.secure.close(id);
        self.push_event(ServerTunnelEvent::ClientRefused { id, peer, reason });
    }

    /// Removes session `id` and frees its addresses; reports it if `report`.
    fn remove(&mut self, id: SessionId, report: bool) {
        let Some(s) = self.sessions.remove(&id) else {
            return;
        };
        if let Some(v4) = s.assignment.v4 {
            if self.by_v4.get(&v4.client) == Some(&id) {
                self.by_v4.remove(&v4.client);
            }
        }
        if let Some(v6) = s.assignment.v6 {
            if self.by_v6.get(&v6.client) == Some(&id) {
                self.by_v6.remove(&v6.client);
            }
        }
        if self.by_key.get(&s.peer) == Some(&id) {
            self.by_key.remove(&s.peer);
        }
        if let Some(i) = self.order.iter().position(|&x| x == id) {
            self.order.remove(i);
            if self.next_turn > i {
                self.next_turn -= 1;
            }
        }
        if self.next_turn >= self.order.len() {
            self.next_turn = 0;
        }
        if report {
            self.push_event(ServerTunnelEvent::ClientDown { id, peer: s.peer });
        }
    }

    /// A new session from the security layer: checks the greeting, gives addresses, sends
    /// the assignment. Returns whether the session was accepted.
    fn accept(&mut self, now: Instant, id: SessionId, peer: PublicKey, addr: SocketAddr) -> bool {
        let greeting = self.secure.take_greeting(id);
        let max = u16::try_from(self.core.max_datagram_bytes).unwrap_or(u16::MAX);
        let greeting = match Greeting::decode(&greeting, (MIN_DATAGRAM_BYTES, max)) {
            Ok(g) => g,
            Err(e) => {
                let reason = match e {
                    ControlError::NotTunnel => "not a SproutTunnel client".to_string(),
                    e => e.to_string(),
                };
                self.refuse(id, peer, reason);
                return false;
            }
        };
        // The same key again: the client restarted; the new session replaces the old.
        if let Some(old) = self.by_key.get(&peer).copied() {
            self.secure.close(old);
            self.remove(old, true);
        }
        let mut config = self.core.clone();
        config.max_datagram_bytes = usize::from(greeting.max_datagram_bytes);
        let session_mtu =
            crate::mtu::tun_mtu(config.max_datagram_bytes, config.model.forecast_ticks);
        let mtu = u16::try_from(session_mtu)
            .unwrap_or(u16::MAX)
            .min(self.tun_mtu);
        if self.v6.is_some() && mtu < MIN_TUN_MTU_V6 {
            let reason = format!(
                "its path carries packets of at most {mtu} bytes, IPv6 needs {MIN_TUN_MTU_V6}"
            );
            self.refuse(id, peer, reason);
            return false;
        }
        let v4 = match &self.v4 {
            None => None,
            Some(net) => match self.free_v4(&peer) {
                Some(client) => Some(V4Assignment {
                    client,
                    prefix: net.prefix_len(),
                    server: net.addr(),
                }),
                None => {
                    let reason = format!("no IPv4 address left in {}", net.trunc());
                    self.refuse(id, peer, reason);
                    return false;
                }
            },
        };
        let v6 = match &self.v6 {
            None => None,
            Some(net) => match self.free_v6(&peer) {
                Some(client) => Some(V6Assignment {
                    client,
                    prefix: net.prefix_len(),
                    server: net.addr(),
                }),
                None => {
                    let reason = format!("no IPv6 address left in {}", net.trunc());
                    self.refuse(id, peer, reason);
                    return false;
                }
            },
        };
        let mut path = match SessionPath::new(config, self.queue.clone(), now) {
            Ok(p) => p,
            Err(e) => {
                self.refuse(id, peer, format!("core configuration: {e}"));
                return false;
            }
        };
        path.set_probe(self.probe);
        let assignment = Assignment { v4, v6, mtu };
        path.send_control(Control::Assign(assignment).encode());
        if let Some(a) = v4 {
            self.by_v4.insert(a.client, id);
        }
        if let Some(a) = v6 {
            self.by_v6.insert(a.client, id);
        }
        self.by_key.insert(peer, id);
        self.order.push(id);
        self.sessions.insert(
            id,
            ClientSession {
                peer,
                addr,
                assignment,
                path,
                acked: false,
                next_assign: now + ASSIGN_RESEND,
                confirm_by: now + UNCONFIRMED_TIMEOUT,
            },
        );
        self.push_event(ServerTunnelEvent::ClientUp {
            id,
            peer,
            addr,
            assignment,
        });
        true
    }

    /// Takes the core datagram in `self.plaintext` for session `id`.
    fn deliver(&mut self, now: Instant, id: SessionId) {
        let Some(s) = self.sessions.get_mut(&id) else {
            return;
        };
        // Malformed and rejected datagrams are counted by the core.
        let _ = s.path.conn.handle_datagram(now, &self.plaintext);
        let mut payloads = std::mem::take(&mut self.payloads);
        while let Some(p) = s.path.recv() {
            payloads.push(p);
        }
        for p in payloads.drain(..) {
            self.on_payload(now, id, p);
        }
        self.payloads = payloads;
    }

    /// The session owning tunnel address `dst`, if any.
    fn owner(&self, dst: IpAddr) -> Option<SessionId> {
        match dst {
            IpAddr::V4(a) => self.by_v4.get(&a).copied(),
            IpAddr::V6(a) => self.by_v6.get(&a).copied(),
        }
    }

    fn push_tun(&mut self, packet: Vec<u8>) {
        if self.tun_out.len() >= MAX_TUN_BACKLOG {
            bump(&mut self.drops.tun_backlog);
        } else {
            self.tun_write_packets = self.tun_write_packets.saturating_add(1);
            self.tun_out.push_back(packet);
        }
    }

    /// One payload out of session `id`.
    fn on_payload(&mut self, now: Instant, id: SessionId, mut payload: Vec<u8>) {
        let Some(s) = self.sessions.get_mut(&id) else {
            return;
        };
        match control::kind(&payload) {
            None => bump(&mut self.drops.malformed_payload),
            Some(PayloadKind::Control) => match Control::decode(&payload) {
                Ok(Control::AssignAck) => s.acked = true,
                Ok(Control::Padding) => {}
                _ => bump(&mut self.drops.bad_control),
            },
            Some(PayloadKind::Packet) => {
                let Ok(info) = packet::parse(&payload) else {
                    bump(&mut self.drops.malformed_payload);
                    return;
                };
                if !is_client_address(&s.assignment, info.src()) {
                    bump(&mut self.drops.spoofed_source);
                    return;
                }
                s.acked = true;
                payload.truncate(info.len);
                match self.owner(info.dst()) {
                    Some(to) if to != id => {
                        if !self.client_to_client {
                            bump(&mut self.drops.client_to_client);
                            return;
                        }
                        let Some(t) = self.sessions.get_mut(&to) else {
                            return;
                        };
                        if info.len > t.path.max_packet() {
                            bump(&mut self.drops.too_big);
                        } else {
                            t.path.enqueue(now, info.flow, payload);
                        }
                    }
                    _ if self.isolate && self.to_relay_host(&info) => {
                        bump(&mut self.drops.to_relay_host);
                    }
                    _ => self.push_tun(payload),
                }
            }
        }
    }

    /// Sets the relay host's own addresses (what [`ServerSettings::isolate`] keeps clients
    /// from); the server's tunnel addresses are always among them.
    pub fn set_host_addresses(&mut self, addresses: impl IntoIterator<Item = IpAddr>) {
        self.host_addresses = addresses.into_iter().collect();
        if let Some(n) = self.v4 {
            self.host_addresses.insert(n.addr().into());
        }
        if let Some(n) = self.v6 {
            self.host_addresses.insert(n.addr().into());
        }
    }

    /// Whether a client's packet is addressed to the relay host itself (its addresses,
    /// loopback, broadcast, multicast), ICMP to the server's tunnel addresses excepted.
    fn to_relay_host(&self, info: &packet::PacketInfo) -> bool {
        let dst = info.dst();
        let tunnel_address = self.v4.is_some_and(|n| IpAddr::from(n.addr()) == dst)
            || self.v6.is_some_and(|n| IpAddr::from(n.addr()) == dst);
        let icmp = matches!(info.flow.proto, 1 | 58);
        if tunnel_address && icmp {
            return false;
        }
        let special = match dst {
            IpAddr::V4(a) => {
                a.is_loopback()
                    || a.is_unspecified()
                    || a.is_multicast()
                    || a.is_broadcast()
                    || self.v4.is_some_and(|n| n.broadcast() == a)
            }
            IpAddr::V6(a) => a.is_loopback() || a.is_unspecified() || a.is_multicast(),
        };
        special || tunnel_address || self.host_addresses.contains(&dst)
    }

    /// Reports the sessions the security layer closed.
    fn drain_secure_events(&mut self) {
        while let Some(ServerEvent::Closed { id }) = self.secure.poll_event() {
            self.remove(id, true);
        }
    }

    /// Takes a UDP datagram from `from` that arrived at `now`. Never panics.
    pub fn handle_udp(&mut self, now: Instant, from: SocketAddr, datagram: &[u8]) {
        match self.secure.handle(now, from, datagram, &mut self.plaintext) {
            ServerReceived::NewSession {
                id,
                peer,
                addr,
                data,
            } => {
                if self.accept(now, id, peer, addr) && data {
                    self.deliver(now, id);
                }
            }
            ServerReceived::Data { id } => self.deliver(now, id),
            // The client quit: its session and addresses are freed at once.
            ServerReceived::Closed { id } => self.remove(id, true),
            ServerReceived::Control | ServerReceived::Dropped(_) => {}
        }
    }

    /// Takes an IP packet read from the TUN device at `now`. Never panics.
    pub fn handle_tun(&mut self, now: Instant, packet: &[u8]) {
        self.tun_read_packets = self.tun_read_packets.saturating_add(1);
        let info = match packet::parse(packet) {
            Ok(i) => i,
            Err(e) => {
                self.drops.count_tun_error(&e);
                return;
            }
        };
        let Some(s) = self
            .owner(info.dst())
            .and_then(|id| self.sessions.get_mut(&id))
        else {
            bump(&mut self.drops.no_route);
            return;
        };
        if info.len > s.path.max_packet() {
            bump(&mut self.drops.too_big);
            return;
        }
        s.path.enqueue(now, info.flow, packet[..info.len].to_vec());
    }

    /// The next UDP datagram to send at `now`, written into `buf`, with its destination.
    /// Call until `None`.
    pub fn poll_udp(&mut self, now: Instant, buf: &mut Vec<u8>) -> Option<SocketAddr> {
        if let Some(to) = self.secure.poll_transmit(buf) {
            return Some(to);
        }
        let n = self.order.len();
        for k in 0..n {
            let i = (self.next_turn + k) % n;
            let id = self.order[i];
            let Some(s) = self.sessions.get_mut(&id) else {
                continue;
            };
            while s.path.poll_transmit(now, &mut self.tx) {
                match self.secure.seal(now, id, &self.tx, buf) {
                    Ok(to) => {
                        s.addr = to;
                        self.next_turn = (i + 1) % n;
                        return Some(to);
                    }
                    Err(SealError::UnknownSession(_)) => {
                        bump(&mut self.drops.seal_failed);
                        break;
                    }
                    Err(_) => bump(&mut self.drops.seal_failed),
                }
            }
        }
        buf.clear();
        None
    }

    /// The next IP packet to write to the TUN device.
    pub fn poll_tun(&mut self) -> Option<Vec<u8>> {
        self.tun_out.pop_front()
    }

    /// Runs the timers due by `now`.
    pub fn handle_timeout(&mut self, now: Instant) {
        self.secure.handle_timeout(now);
        self.drain_secure_events();
        let expire = now >= self.next_expire;
        if expire {
            self.next_expire = now + EXPIRE_EVERY;
        }
        for s in self.sessions.values_mut() {
            s.path.conn.handle_timeout(now);
            if expire {
                s.path.queue.expire(now);
            }
            if !s.acked && now >= s.next_assign {
                s.path.send_control(Control::Assign(s.assignment).encode());
                s.next_assign = now + ASSIGN_RESEND;
            }
        }
        let unconfirmed: Vec<SessionId> = self
            .sessions
            .iter()
            .filter(|(_, s)| !s.acked && now >= s.confirm_by)
            .map(|(&id, _)| id)
            .collect();
        for id in unconfirmed {
            self.secure.close(id);
            self.remove(id, true);
        }
    }

    /// When [`TunnelServer::handle_timeout`] or [`TunnelServer::poll_udp`] is next needed.
    pub fn poll_timeout(&mut self) -> Option<Instant> {
        let mut next = self.secure.poll_timeout();
        let mut at = |t: Instant| next = Some(next.map_or(t, |n| n.min(t)));
        if !self.sessions.is_empty() {
            at(self.next_expire);
        }
        for s in self.sessions.values_mut() {
            if let Some(t) = s.path.poll_timeout() {
                at(t);
            }
            if !s.acked {
                at(s.next_assign.min(s.confirm_by));
            }
        }
        next
    }

    /// The next client event.
    pub fn poll_event(&mut self) -> Option<ServerTunnelEvent> {
        self.drain_secure_events();
        self.events.pop_front()
    }

    /// The server's public key.
    pub fn public_key(&self) -> PublicKey {
        self.secure.public_key()
    }

    /// Clients connected now.
    pub fn client_count(&self) -> usize {
        self.sessions.len()
    }

    /// The assignment of session `id`, if it is connected.
    pub fn assignment(&self, id: SessionId) -> Option<Assignment> {
        self.sessions.get(&id).map(|s| s.assignment)
    }

    /// The security layer's counters.
    pub fn secure_stats(&self) -> sprout_secure::SecureStats {
        self.secure.stats()
    }

    /// The tunnel's own drop counters.
    pub fn drops(&self) -> TunnelDrops {
        self.drops
    }

    /// Everything, for the status line and `--json`.
    pub fn status(&mut self, now: Instant) -> TunnelStatus {
        let mut ids: Vec<SessionId> = self.sessions.keys().copied().collect();
        ids.sort_unstable();
        let mut sessions = Vec::with_capacity(ids.len());
        for id in ids {
            if let Some(s) = self.sessions.get_mut(&id) {
                let mut status = SessionStatus::of(
                    id,
                    s.peer.to_base64(),
                    Some(s.addr),
                    Some(s.assignment),
                    &mut s.path,
                    now,
                );
                status.confirmed = s.acked;
                sessions.push(status);
            }
        }
        TunnelStatus {
            now_us: now,
            sessions,
            drops: self.drops,
            secure_drops: secure_drops(&self.secure.stats()),
            tun_read_packets: self.tun_read_packets,
            tun_write_packets: self.tun_write_packets,
            reconnecting: false,
            reconnections: 0,
            state: None,
        }
    }
}
