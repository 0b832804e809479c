//! The mobile host's end of SproutTunnel, sans-IO: one secure session to the relay, the
//! per-flow queue toward it, and the addresses the relay assigns.
//!
//! **Dead relays.** A relay that restarted, forgot the session, or is out of reach sends
//! nothing authenticated. When [`Reconnect::dead_after`] (15 s, WireGuard's keepalive plus
//! rekey timeouts) passes after the client sent without an authenticated answer, the client
//! drops its session and starts a fresh handshake with the same keys and greeting (which
//! re-announces its datagram size); an unanswered one is retried after a wait of
//! [`Reconnect::backoff_min`] doubling up to [`Reconnect::backoff_max`], for as long as the
//! client runs. The relay gives a returning key its addresses again (the same ones when they
//! are still free: a new session from a key replaces its old one). Only a session that was up
//! once is redialled: a first handshake nobody answers (wrong key, relay not running) fails.
//! The schedule is sprout-secure's [`Redial`], the one sprout-net's `Endpoint` runs too.
//!
//! **Endings.** A client that quits says so: [`TunnelClient::close`] has the session's
//! authenticated close sent ([`sprout_secure::wire::CLOSE_COPIES`] copies, best-effort), so
//! that the relay frees the session and its addresses at once rather than after its idle
//! timeout. A close from the relay (authenticated by the session's keys) ends the tunnel with
//! "the server closed the session": it is not redialled.

use std::collections::VecDeque;
use std::net::IpAddr;

use sprout_core::time::{Duration, Instant};
use sprout_core::Config;
use sprout_secure::{Client, ClientConfig, ClientReceived, Redial, RedialAction, RedialReason};

use crate::control::{self, Assignment, Control, Greeting, PayloadKind};
use crate::flow_queue::FlowQueueConfig;
use crate::packet;
use crate::server::is_client_address;
use crate::session::SessionPath;
use crate::settings_error::SettingsError;
pub use crate::status::ClientState;
use crate::status::{bump, secure_drops, SessionStatus, TunnelDrops, TunnelStatus};
use crate::{MAX_TUN_BACKLOG, MIN_DATAGRAM_BYTES};

/// Most events waiting for [`TunnelClient::poll_event`]; beyond, the oldest is dropped.
pub const MAX_QUEUED_EVENTS: usize = 64;

/// The client gives up when the server sends no assignment this long after the secure session
/// is up: the server refused it (no address left, not a tunnel server) and can not say so on
/// the wire.
pub const ASSIGN_TIMEOUT: Duration = Duration::from_secs(10);

/// The defaults of [`Reconnect`]: a relay silent for 15 s after a send is dead; unanswered
/// redials wait 5 s, doubling up to 10 s (shared with sprout-net's client, in sprout-secure).
pub use sprout_secure::{DEAD_PEER_TIMEOUT, REDIAL_BACKOFF_MAX, REDIAL_BACKOFF_MIN};

/// When a [`TunnelClient`] considers its relay dead, and how it redials: sprout-secure's
/// [`sprout_secure::RedialPolicy`] (silence after a send that makes the relay dead, default
/// [`DEAD_PEER_TIMEOUT`]; the first and longest waits between unanswered redials, default
/// [`REDIAL_BACKOFF_MIN`] and [`REDIAL_BACKOFF_MAX`]; with `enabled` off, a dead relay fails
/// the tunnel instead).
pub use sprout_secure::RedialPolicy as Reconnect;

/// Configuration of a [`TunnelClient`].
#[derive(Clone, Debug)]
pub struct ClientSettings {
    /// Keys.
    pub secure: ClientConfig,
    /// The Sprout configuration (its `max_datagram_bytes` follows from the path MTU).
    pub core: Config,
    /// The per-flow queue.
    pub queue: FlowQueueConfig,
    /// Pad the window while the session is active, so that the server measures the uplink
    /// even when it carries light traffic (see [`crate::session`]'s module docs; default off).
    pub probe: bool,
}

impl ClientSettings {
    /// The one check of a client's settings (the tunnel's own, and the command line's through
    /// [`crate::config`]): a valid core configuration whose `max_datagram_bytes` is
    /// [`MIN_DATAGRAM_BYTES`]`..=65535` bytes; returns that size.
    pub fn validate(&self) -> Result<u16, SettingsError> {
        self.core.validate()?;
        let max = self.core.max_datagram_bytes;
        u16::try_from(max)
            .ok()
            .filter(|&m| m >= MIN_DATAGRAM_BYTES)
            .ok_or(SettingsError::DatagramSize { max })
    }
}

/// Something that happened to the client.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClientTunnelEvent {
    /// The secure session is up (the assignment has not necessarily arrived); again after a
    /// reconnection.
    Established,
    /// The relay fell silent (restarted, closed the session, out of reach): the client
    /// redials it (the reason says how long it was silent); packets from the TUN device are
    /// dropped (`no_route`) until the session is up again.
    Reconnecting(String),
    /// The server's assignment arrived (first time, or changed).
    Assigned(Assignment),
    /// The first session failed (handshake timeout, keys refused, no assignment within
    /// [`ASSIGN_TIMEOUT`]); the tunnel is down. A session that was up once is redialled
    /// instead ([`ClientTunnelEvent::Reconnecting`]).
    Failed(String),
}

/// The mobile host's end of the tunnel.
pub struct TunnelClient {
    secure: Client,
    /// Dead-peer detection and the redial schedule; it holds the keys and greeting of every
    /// handshake.
    redial: Redial,
    core: Config,
    queue: FlowQueueConfig,
    probe: bool,
    /// The data path, once the secure session is up.
    path: Option<SessionPath>,
    assignment: Option<Assignment>,
    tun_out: VecDeque<Vec<u8>>,
    events: VecDeque<ClientTunnelEvent>,
    drops: TunnelDrops,
    tun_read_packets: u64,
    tun_write_packets: u64,
    /// The failure was reported.
    failed: bool,
    /// When the secure session came up.
    established: Option<Instant>,
    /// The client quit ([`TunnelClient::close`]): nothing more is taken or sent but the
    /// close's copies.
    quit: bool,
    /// The session's close, and the copies of it [`TunnelClient::poll_udp`] has still to
    /// hand out.
    close: (Vec<u8>, usize),
    plaintext: Vec<u8>,
    tx: Vec<u8>,
    payloads: Vec<Vec<u8>>,
}

/// Whether `dst` is our tunnel address of its family.
fn is_ours(a: &Option<Assignment>, dst: IpAddr) -> bool {
    a.as_ref().is_some_and(|a| is_client_address(a, dst))
}

impl TunnelClient {
    /// A client whose handshake starts at `now`.
    pub fn new(settings: ClientSettings, now: Instant) -> Result<TunnelClient, SettingsError> {
        let max_datagram_bytes = settings.validate()?;
        let greeting = Greeting { max_datagram_bytes }.encode();
        let redial = Redial::new(settings.secure, &greeting, Reconnect::default());
        let secure = redial.client(now)?;
        Ok(TunnelClient {
            secure,
            redial,
            core: settings.core,
            queue: settings.queue,
            probe: settings.probe,
            path: None,
            assignment: None,
            tun_out: VecDeque::new(),
            events: VecDeque::new(),
            drops: TunnelDrops::default(),
            tun_read_packets: 0,
            tun_write_packets: 0,
            failed: false,
            established: None,
            quit: false,
            close: (Vec::new(), 0),
            plaintext: Vec::with_capacity(2048),
            tx: Vec::with_capacity(2048),
            payloads: Vec::new(),
        })
    }

    fn push_event(&mut self, e: ClientTunnelEvent) {
        if self.events.len() >= MAX_QUEUED_EVENTS {
            self.events.pop_front();
        }
        self.events.push_back(e);
    }

    /// Sets when the relay counts as dead and how it is redialled (default
    /// [`Reconnect::default`]).
    pub fn set_reconnect(&mut self, reconnect: Reconnect) {
        self.redial.set_policy(reconnect);
    }

    /// Whether the relay fell silent and the client redials it.
    pub fn is_reconnecting(&self) -> bool {
        self.redial.is_reconnecting()
    }

    /// Sessions re-established after the relay fell silent.
    pub fn reconnections(&self) -> u64 {
        self.redial.reconnections()
    }

    /// Reports the security layer's failure once when it ends the tunnel (the first
    /// session's, or any with redialling off: a later one is redialled).
    fn check_failed(&mut self) {
        if self.failed || self.quit || !self.redial.gives_up(&self.secure) {
            return;
        }
        if let Some(e) = self.secure.error() {
            let msg = e.to_string();
            self.failed = true;
            self.push_event(ClientTunnelEvent::Failed(msg));
        }
    }

    /// Takes a UDP datagram from the server that arrived at `now`. Never panics.
    pub fn handle_udp(&mut self, now: Instant, datagram: &[u8]) {
        if self.quit {
            return;
        }
        let received = self.secure.handle(now, datagram, &mut self.plaintext);
        self.redial.on_received(received);
        match received {
            ClientReceived::Established => {
                match SessionPath::new(self.core.clone(), self.queue.clone(), now) {
                    Ok(mut p) => {
                        p.set_probe(self.probe);
                        self.path = Some(p);
                        self.established = Some(now);
                        self.push_event(ClientTunnelEvent::Established);
                    }
                    Err(e) => {
                        self.failed = true;
                        self.push_event(ClientTunnelEvent::Failed(format!(
                            "core configuration: {e}"
                        )));
                    }
                }
            }
            ClientReceived::Data => self.deliver(now),
            // The relay ended the session: `check_failed` ends the tunnel with that reason
            // (no redial).
            ClientReceived::Closed | ClientReceived::Control | ClientReceived::Dropped(_) => {}
        }
        self.check_failed();
    }

    /// Takes the core datagram in `self.plaintext`.
    fn deliver(&mut self, now: Instant) {
        let Some(path) = self.path.as_mut() else {
            return;
        };
        // Malformed and rejected datagrams are counted by the core.
        let _ = path.conn.handle_datagram(now, &self.plaintext);
        let mut payloads = std::mem::take(&mut self.payloads);
        while let Some(p) = path.recv() {
            payloads.push(p);
        }
        for p in payloads.drain(..) {
            self.on_payload(p);
        }
        self.payloads = payloads;
    }

    /// One payload out of the session.
    fn on_payload(&mut self, mut payload: Vec<u8>) {
        match control::kind(&payload) {
            None => bump(&mut self.drops.malformed_payload),
            Some(PayloadKind::Control) => match Control::decode(&payload) {
                Ok(Control::Assign(a)) => {
                    if self.assignment != Some(a) {
                        self.assignment = Some(a);
                        self.push_event(ClientTunnelEvent::Assigned(a));
                    }
                    if let Some(path) = self.path.as_mut() {
                        path.send_control(Control::AssignAck.encode());
                    }
                }
                Ok(Control::Padding) => {}
                _ => bump(&mut self.drops.bad_control),
            },
            Some(PayloadKind::Packet) => {
                let Ok(info) = packet::parse(&payload) else {
                    bump(&mut self.drops.malformed_payload);
                    return;
                };
                if !is_ours(&self.assignment, info.dst()) {
                    bump(&mut self.drops.spoofed_source);
                    return;
                }
                payload.truncate(info.len);
                if self.tun_out.len() >= MAX_TUN_BACKLOG {
                    bump(&mut self.drops.tun_backlog);
                } else {
                    self.tun_write_packets = self.tun_write_packets.saturating_add(1);
                    self.tun_out.push_back(payload);
                }
            }
        }
    }

    /// Takes an IP packet read from the TUN device at `now`. Never panics.
    pub fn handle_tun(&mut self, now: Instant, packet: &[u8]) {
        if self.quit {
            return;
        }
        self.tun_read_packets = self.tun_read_packets.saturating_add(1);
        let info = match packet::parse(packet) {
            Ok(i) => i,
            Err(e) => {
                self.drops.count_tun_error(&e);
                return;
            }
        };
        let (Some(a), Some(path)) = (self.assignment.as_ref(), self.path.as_mut()) else {
            bump(&mut self.drops.no_route);
            return;
        };
        if !is_client_address(a, info.src()) {
            bump(&mut self.drops.wrong_source);
            return;
        }
        if info.len > path.max_packet() {
            bump(&mut self.drops.too_big);
            return;
        }
        path.enqueue(now, info.flow, packet[..info.len].to_vec());
    }

    /// The next UDP datagram to send to the server at `now`, written into `buf`; `false`
    /// when none. Call until `false`.
    pub fn poll_udp(&mut self, now: Instant, buf: &mut Vec<u8>) -> bool {
        if self.quit {
            buf.clear();
            if self.close.1 == 0 {
                return false;
            }
            self.close.1 -= 1;
            buf.extend_from_slice(&self.close.0);
            return true;
        }
        if self.secure.poll_transmit(now, buf) {
            return true;
        }
        if self.failed || self.secure.error().is_some() {
            self.check_failed();
            buf.clear();
            return false;
        }
        if let Some(path) = self.path.as_mut() {
            while path.poll_transmit(now, &mut self.tx) {
                match self.secure.seal(now, &self.tx, buf) {
                    Ok(()) => {
                        self.redial.on_sealed(now);
                        return true;
                    }
                    Err(_) => bump(&mut self.drops.seal_failed),
                }
            }
        }
        buf.clear();
        false
    }

    /// The next IP packet to write to the TUN device.
    pub fn poll_tun(&mut self) -> Option<Vec<u8>> {
        self.tun_out.pop_front()
    }

    /// When the client gives up waiting for its assignment, while it waits.
    fn assign_deadline(&self) -> Option<Instant> {
        match (self.assignment, self.established) {
            (None, Some(t)) => Some(t + ASSIGN_TIMEOUT),
            _ => None,
        }
    }

    /// The relay is dead, or a redial went unanswered: what [`Redial`] says to do at `now`.
    fn run_redial(&mut self, now: Instant) {
        if self.failed {
            return;
        }
        let Some(action) = self.redial.poll(now, &self.secure) else {
            return;
        };
        // Each action drops the session (a give-up ends the tunnel).
        self.path = None;
        match action {
            // The failure is reported by `check_failed`.
            RedialAction::GiveUp => {}
            RedialAction::GiveUpDead { silent } => {
                self.failed = true;
                self.push_event(ClientTunnelEvent::Failed(format!(
                    "{}: redialling is off",
                    RedialReason::Silent { silent }
                )));
            }
            RedialAction::RedialNow { reason } => {
                if let RedialReason::Silent { .. } = reason {
                    self.push_event(ClientTunnelEvent::Reconnecting(format!(
                        "{reason}: redialling"
                    )));
                }
                match self.redial.client(now) {
                    Ok(c) => self.secure = c,
                    Err(e) => {
                        self.failed = true;
                        self.push_event(ClientTunnelEvent::Failed(format!("redialling: {e}")));
                    }
                }
            }
            RedialAction::Wait { reason, .. } => {
                // A session whose keys expired; an unanswered redial was announced already.
                if reason == RedialReason::SessionFailed {
                    self.push_event(ClientTunnelEvent::Reconnecting(format!(
                        "{reason}: redialling"
                    )));
                }
            }
        }
    }

    /// The client quits at `now`: if a session is up, its authenticated close is what
    /// [`TunnelClient::poll_udp`] hands out next ([`sprout_secure::wire::CLOSE_COPIES`]
    /// copies, then nothing), and the relay frees the session at once. From then on the client
    /// takes nothing, redials nothing, reports no failure, and is [`ClientState::Ended`].
    /// Idempotent.
    pub fn close(&mut self, now: Instant) {
        if self.quit {
            return;
        }
        self.quit = true;
        // The data path stays, inert, for the last status line's counters.
        self.tun_out.clear();
        let mut d = Vec::new();
        if self.secure.close(now, &mut d) {
            self.close = (d, sprout_secure::wire::CLOSE_COPIES);
        }
    }

    /// Where the client stands: connecting (the first handshake, or waiting for the
    /// relay's assignment), established, reconnecting, or ended (it quit, or the tunnel
    /// failed, the relay's close included).
    pub fn state(&self) -> ClientState {
        if self.quit
            || self.failed
            || (self.secure.error().is_some() && self.redial.gives_up(&self.secure))
        {
            ClientState::Ended
        } else if self.redial.is_reconnecting() {
            ClientState::Reconnecting
        } else if self.path.is_some() && self.secure.error().is_none() {
            ClientState::Established
        } else {
            ClientState::Connecting
        }
    }

    /// Runs the timers due by `now`.
    pub fn handle_timeout(&mut self, now: Instant) {
        if self.quit {
            return;
        }
        self.secure.handle_timeout(now);
        if let Some(path) = self.path.as_mut() {
            path.conn.handle_timeout(now);
            path.queue.expire(now);
        }
        self.run_redial(now);
        self.check_failed();
        if !self.failed && self.assign_deadline().is_some_and(|t| now >= t) {
            self.failed = true;
            self.push_event(ClientTunnelEvent::Failed(format!(
                "the server gave this client no tunnel address within {} s of the handshake (no address left, or not a SproutTunnel server; its log says which)",
                ASSIGN_TIMEOUT.as_micros() / 1_000_000
            )));
        }
    }

    /// When [`TunnelClient::handle_timeout`] or [`TunnelClient::poll_udp`] is next needed.
    pub fn poll_timeout(&mut self) -> Option<Instant> {
        if self.failed || self.quit {
            return None;
        }
        let mut next = self.secure.poll_timeout();
        let deadline = self.assign_deadline();
        let path = self.path.as_mut().and_then(|p| p.poll_timeout());
        let redial = self.redial.poll_timeout();
        for t in [deadline, path, redial].into_iter().flatten() {
            next = Some(next.map_or(t, |n| n.min(t)));
        }
        next
    }

    /// The next event.
    pub fn poll_event(&mut self) -> Option<ClientTunnelEvent> {
        self.check_failed();
        self.events.pop_front()
    }

    /// The assignment, once it arrived.
    pub fn assignment(&self) -> Option<Assignment> {
        self.assignment
    }

    /// Whether the secure session is up (and has not failed).
    pub fn is_established(&self) -> bool {
        self.path.is_some() && !self.failed && !self.quit && self.secure.error().is_none()
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
        let peer = self.secure.server_key().to_base64();
        let assignment = self.assignment;
        let sessions = match self.path.as_mut() {
            Some(path) => vec![SessionStatus::of(0, peer, None, assignment, path, now)],
            None => Vec::new(),
        };
        TunnelStatus {
            now_us: now,
            sessions,
            drops: self.drops,
            secure_drops: secure_drops(&self.secure.stats()),
            tun_read_packets: self.tun_read_packets,
            tun_write_packets: self.tun_write_packets,
            reconnecting: self.redial.is_reconnecting(),
            reconnections: self.redial.reconnections(),
            state: Some(self.state()),
        }
    }
}
