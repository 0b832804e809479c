//! The runtime's I/O: the UDP socket (with sticky source addresses on a server bound to an
//! unspecified address), the TUN device, the poller, and the [`End`] trait through which the
//! loop drives either engine.

use std::collections::HashMap;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use mio::net::UdpSocket;
use mio::unix::SourceFd;
use mio::{Events, Interest, Poll, Token, Waker};
use socket2::{Domain, Protocol, Socket, Type};
use sprout_core::time::Instant;
use sprout_os::tun::VNET_HDR_LEN;
use sprout_os::udp_gso::{self, GsoError};

use super::batch::{Batch, Gather, MAX_SEGMENTS};
use super::offload;
use crate::device::{Device, SetupError};
use crate::server::TunnelServer;
use crate::status::TunnelStatus;

/// Packets or datagrams taken from one source before the others get a turn.
pub const BATCH: usize = 64;
/// Socket buffer sizes asked of the kernel (bytes).
pub const SOCKET_BUFFER_BYTES: usize = 4 << 20;
/// Socket buffer sizes set past the system's limit (`SO_RCVBUFFORCE`, `SO_SNDBUFFORCE`) when
/// the process may (`CAP_NET_ADMIN`, which the tunnel has), bytes: 16 MiB, 130 ms of 1 Gbit/s,
/// so that a burst of the peer's segmented sends or of the TUN device's packets is not lost
/// in the socket. Where forcing fails the [`SOCKET_BUFFER_BYTES`] asked stand.
pub const FORCED_SOCKET_BUFFER_BYTES: usize = 16 << 20;

pub(super) const UDP: Token = Token(0);
pub(super) const TUN: Token = Token(1);
pub(super) const WAKE: Token = Token(2);

/// A UDP socket: non-blocking, 16 MiB buffers (else 4 MiB or the system's limit), bound to
/// `local` (dual-stack when `[::]`).
pub(super) fn udp_socket(local: SocketAddr) -> io::Result<(std::net::UdpSocket, (usize, usize))> {
    let sock = Socket::new(Domain::for_address(local), Type::DGRAM, Some(Protocol::UDP))?;
    if local.is_ipv6() {
        let _ = sock.set_only_v6(false);
    }
    let _ = sock.set_recv_buffer_size(SOCKET_BUFFER_BYTES);
    let _ = sock.set_send_buffer_size(SOCKET_BUFFER_BYTES);
    let _ = sprout_os::socket_buffers::force_receive_buffer(&sock, FORCED_SOCKET_BUFFER_BYTES);
    let _ = sprout_os::socket_buffers::force_send_buffer(&sock, FORCED_SOCKET_BUFFER_BYTES);
    let granted = (
        sock.recv_buffer_size().unwrap_or(0),
        sock.send_buffer_size().unwrap_or(0),
    );
    sock.set_nonblocking(true)?;
    sock.bind(&local.into())?;
    Ok((sock.into(), granted))
}

pub(super) fn bind_error(what: &str, addr: SocketAddr, e: io::Error) -> SetupError {
    let hint = match e.kind() {
        io::ErrorKind::AddrInUse => {
            " (address in use: another server on that port? choose another --listen)"
        }
        io::ErrorKind::AddrNotAvailable => " (no interface of this host has that address)",
        _ => "",
    };
    SetupError(format!("cannot {what} {addr}: {e}{hint}"))
}

/// Counters of the runtime itself.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct IoCounters {
    pub(super) udp_sent: u64,
    pub(super) udp_received: u64,
    pub(super) udp_send_errors: u64,
    pub(super) udp_recv_errors: u64,
    pub(super) tun_read: u64,
    pub(super) tun_written: u64,
    pub(super) tun_write_errors: u64,
    /// Packets for the TUN device before it existed (client).
    pub(super) tun_no_device: u64,
}

/// What the loop drives: the two engines behind one interface.
pub(super) trait End {
    fn handle_udp(&mut self, now: Instant, from: SocketAddr, d: &[u8]);
    fn handle_tun(&mut self, now: Instant, p: &[u8]);
    fn poll_udp(&mut self, now: Instant, buf: &mut Vec<u8>) -> Option<SocketAddr>;
    fn poll_tun(&mut self) -> Option<Vec<u8>>;
    fn handle_timeout(&mut self, now: Instant);
    fn poll_timeout(&mut self) -> Option<Instant>;
    fn status(&mut self, now: Instant) -> TunnelStatus;
}

impl End for TunnelServer {
    fn handle_udp(&mut self, now: Instant, from: SocketAddr, d: &[u8]) {
        TunnelServer::handle_udp(self, now, from, d)
    }
    fn handle_tun(&mut self, now: Instant, p: &[u8]) {
        TunnelServer::handle_tun(self, now, p)
    }
    fn poll_udp(&mut self, now: Instant, buf: &mut Vec<u8>) -> Option<SocketAddr> {
        TunnelServer::poll_udp(self, now, buf)
    }
    fn poll_tun(&mut self) -> Option<Vec<u8>> {
        TunnelServer::poll_tun(self)
    }
    fn handle_timeout(&mut self, now: Instant) {
        TunnelServer::handle_timeout(self, now)
    }
    fn poll_timeout(&mut self) -> Option<Instant> {
        TunnelServer::poll_timeout(self)
    }
    fn status(&mut self, now: Instant) -> TunnelStatus {
        TunnelServer::status(self, now)
    }
}

/// Sockets, device, poller.
pub(super) struct Io {
    pub(super) poll: Poll,
    pub(super) udp: UdpSocket,
    /// The client's socket is connected to the server (`send`, `recv`).
    pub(super) connected: bool,
    /// The connected socket's peer, asked of the kernel once (not once a datagram).
    pub(super) peer: Option<SocketAddr>,
    /// A server socket bound to an unspecified address: the local address each peer's last
    /// datagram arrived at, so that replies leave from it (see [`sticky`]).
    pub(super) sticky: Option<HashMap<SocketAddr, IpAddr>>,
    pub(super) device: Option<Device>,
    pub(super) udp_readable: bool,
    pub(super) tun_readable: bool,
    pub(super) udp_blocked: bool,
    /// Datagrams the socket refused with "would block", sent before anything else.
    pub(super) pending: Option<Batch>,
    /// Datagrams gathered for one segmented send.
    pub(super) gather: Gather,
    pub(super) read_buf: Vec<u8>,
    /// Packets joined for one TUN write with offloads.
    pub(super) coalesce: offload::Coalesce,
    /// Each packet cut from a TUN read with offloads ([`offload::split`]).
    pub(super) split_buf: Vec<u8>,
    pub(super) send_buf: Vec<u8>,
    pub(super) counters: IoCounters,
}

impl Io {
    pub(super) fn new(
        udp: std::net::UdpSocket,
        connected: bool,
    ) -> Result<(Io, Arc<Waker>), SetupError> {
        let poll = Poll::new().map_err(|e| SetupError(format!("cannot create a poller: {e}")))?;
        let segmenting = sprout_os::udp_gso::supported(&udp);
        let peer = if connected {
            udp.peer_addr().ok()
        } else {
            None
        };
        let mut udp = UdpSocket::from_std(udp);
        poll.registry()
            .register(&mut udp, UDP, Interest::READABLE | Interest::WRITABLE)
            .map_err(|e| SetupError(format!("cannot poll the socket: {e}")))?;
        let waker = Arc::new(
            Waker::new(poll.registry(), WAKE)
                .map_err(|e| SetupError(format!("cannot create a waker: {e}")))?,
        );
        Ok((
            Io {
                poll,
                udp,
                connected,
                peer,
                sticky: None,
                device: None,
                udp_readable: true,
                tun_readable: false,
                udp_blocked: false,
                pending: None,
                gather: Gather::new(if segmenting { MAX_SEGMENTS } else { 1 }),
                // A datagram, or a TUN read: a 64 KB super-packet after its virtio_net_hdr.
                read_buf: vec![0; 65_536 + 1024],
                split_buf: Vec::with_capacity(65_536),
                coalesce: offload::Coalesce::default(),
                send_buf: Vec::with_capacity(65_536),
                counters: IoCounters::default(),
            },
            waker,
        ))
    }

    pub(super) fn attach(&mut self, device: Device) -> Result<(), SetupError> {
        self.detach();
        let fd = device.raw_fd();
        self.poll
            .registry()
            .register(&mut SourceFd(&fd), TUN, Interest::READABLE)
            .map_err(|e| SetupError(format!("cannot poll the TUN device: {e}")))?;
        self.device = Some(device);
        self.tun_readable = true;
        Ok(())
    }

    /// Removes the device (the kernel deletes it with its addresses and routes).
    pub(super) fn detach(&mut self) {
        if let Some(d) = self.device.take() {
            let fd = d.raw_fd();
            let _ = self.poll.registry().deregister(&mut SourceFd(&fd));
        }
        self.tun_readable = false;
    }

    /// Waits for readiness at most `timeout`.
    pub(super) fn wait(
        &mut self,
        events: &mut Events,
        timeout: sprout_core::Duration,
    ) -> Result<(), SetupError> {
        let timeout = Duration::from(timeout);
        match self.poll.poll(events, Some(timeout)) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => return Ok(()),
            Err(e) => return Err(SetupError(format!("poll: {e}"))),
        }
        for ev in events.iter() {
            match ev.token() {
                UDP => {
                    if ev.is_readable() || ev.is_error() {
                        self.udp_readable = true;
                    }
                    if ev.is_writable() || ev.is_error() {
                        self.udp_blocked = false;
                    }
                }
                TUN => self.tun_readable = true,
                _ => {}
            }
        }
        Ok(())
    }

    pub(super) fn read_tun<E: End>(&mut self, end: &mut E, now: Instant) -> Result<(), SetupError> {
        let Some(dev) = &self.device else {
            self.tun_readable = false;
            return Ok(());
        };
        for _ in 0..BATCH {
            match dev.read(&mut self.read_buf) {
                Ok(n) if dev.offloads() => {
                    let frame = &self.read_buf[..n];
                    let counters = &mut self.counters;
                    let r = offload::split(frame, &mut self.split_buf, |p| {
                        counters.tun_read += 1;
                        end.handle_tun(now, p);
                    });
                    if r.is_err() {
                        // The engine counts what it cannot take (truncated, malformed).
                        self.counters.tun_read += 1;
                        end.handle_tun(now, frame.get(VNET_HDR_LEN..).unwrap_or_default());
                    }
                }
                Ok(n) => {
                    self.counters.tun_read += 1;
                    end.handle_tun(now, &self.read_buf[..n]);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.tun_readable = false;
                    return Ok(());
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    return Err(SetupError(format!(
                        "reading the TUN device {}: {e}",
                        dev.name()
                    )))
                }
            }
        }
        Ok(())
    }

    pub(super) fn read_udp<E: End>(&mut self, end: &mut E, now: Instant) {
        for _ in 0..BATCH {
            let r = if self.connected {
                let peer = self.peer;
                self.udp.recv(&mut self.read_buf).and_then(|n| match peer {
                    Some(p) => Ok((n, p)),
                    None => Ok((n, self.udp.peer_addr()?)),
                })
            } else if let Some(map) = self.sticky.as_mut() {
                sticky::recv(&self.udp, &mut self.read_buf).map(|(n, from, local)| {
                    if let Some(local) = local {
                        if map.len() >= sticky::MAX_PEERS && !map.contains_key(&from) {
                            map.clear();
                        }
                        map.insert(from, local);
                    }
                    (n, from)
                })
            } else {
                self.udp.recv_from(&mut self.read_buf)
            };
            match r {
                Ok((n, from)) => {
                    self.counters.udp_received += 1;
                    end.handle_udp(now, from, &self.read_buf[..n]);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.udp_readable = false;
                    return;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                // ICMP errors reported on the socket (port unreachable, ...): counted.
                Err(_) => self.counters.udp_recv_errors += 1,
            }
        }
    }

    pub(super) fn send(&mut self, d: &[u8], to: SocketAddr) -> io::Result<()> {
        if self.connected {
            return self.udp.send(d).map(|_| ());
        }
        if let Some(local) = self.sticky.as_ref().and_then(|m| m.get(&to).copied()) {
            match sticky::send(&self.udp, d, to, local) {
                Ok(_) => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Err(e),
                // The address is gone (or the kernel refuses it): let routing choose.
                Err(_) => {
                    if let Some(m) = self.sticky.as_mut() {
                        m.remove(&to);
                    }
                }
            }
        }
        self.udp.send_to(d, to).map(|_| ())
    }

    /// Sends what is pending, then what the engine has (gathered into segmented sends),
    /// until it has nothing or the socket would block.
    pub(super) fn drain_udp<E: End>(&mut self, end: &mut E, now: Instant) {
        if !self.flush() {
            return;
        }
        loop {
            let mut d = std::mem::take(&mut self.send_buf);
            d.clear();
            let Some(to) = end.poll_udp(now, &mut d) else {
                self.send_buf = d;
                break;
            };
            if !self.gather.fits(d.len(), to) && !self.flush() {
                // Blocked: this datagram waits in the gather, sent after the pending ones.
                self.gather.push(&d, to);
                self.send_buf = d;
                return;
            }
            self.gather.push(&d, to);
            self.send_buf = d;
        }
        self.flush();
    }

    /// Sends the pending batch, then the gathered one; false if the socket would block (what
    /// is left of them waits in `pending` and the gather).
    fn flush(&mut self) -> bool {
        loop {
            if self.udp_blocked {
                return false;
            }
            let Some(mut b) = self.pending.take().or_else(|| self.gather.take()) else {
                return true;
            };
            match self.send_batch(&b) {
                Ok(()) => self.gather.recycle(b.buf),
                Err(sent) => {
                    b.skip(sent);
                    self.pending = Some(b);
                    self.udp_blocked = true;
                    return false;
                }
            }
        }
    }

    /// Sends batch `b`: in one segmented send when it holds several datagrams and the kernel
    /// takes them (a refusal turns segmented sends off), else one by one. `Err(k)` if the
    /// socket would block after the first `k` datagrams; lost datagrams are counted.
    fn send_batch(&mut self, b: &Batch) -> Result<(), usize> {
        let Some(to) = b.to else {
            return Ok(());
        };
        // A batch of several datagrams is at most MAX_BYTES long: its segment fits a u16.
        let seg = u16::try_from(b.segment).ok().filter(|_| b.count > 1);
        if let (Some(seg), true) = (seg, self.gather.segmenting()) {
            match self.send_segmented(b, seg, to) {
                Ok(()) => {
                    self.counters.udp_sent += b.count as u64;
                    return Ok(());
                }
                Err(GsoError::WouldBlock) => return Err(0),
                // Longer than the path's MTU: this batch one by one (each fragmented).
                Err(e) if e.is_too_big() => self.gather.too_big(b.segment),
                Err(GsoError::Unsupported(_)) => self.gather.one_by_one(),
                Err(_) => {
                    self.counters.udp_send_errors += b.count as u64;
                    return Ok(());
                }
            }
        }
        for (k, d) in b.datagrams().enumerate() {
            match self.send(d, to) {
                Ok(()) => self.counters.udp_sent += 1,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Err(k),
                Err(_) => self.counters.udp_send_errors += 1,
            }
        }
        Ok(())
    }

    /// One segmented send of `b` to `to`, from the peer's sticky local address if it has one
    /// (forgotten if the kernel refuses it, as in [`Io::send`]).
    fn send_segmented(&mut self, b: &Batch, seg: u16, to: SocketAddr) -> Result<(), GsoError> {
        let mut from = if self.connected {
            None
        } else {
            self.sticky.as_ref().and_then(|m| m.get(&to).copied())
        };
        loop {
            match udp_gso::send_from(&self.udp, &b.buf, seg, to, from) {
                Ok(_) => return Ok(()),
                Err(GsoError::Interrupted) => {}
                Err(GsoError::Io(_)) if from.is_some() => {
                    if let Some(m) = self.sticky.as_mut() {
                        m.remove(&to);
                    }
                    from = None;
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// The end's last datagrams (a quitting client's close), sent at once and best-effort:
    /// datagrams still waiting for a blocked socket are dropped first, and a send that fails
    /// is counted, not retried.
    pub(super) fn send_final<E: End>(&mut self, end: &mut E, now: Instant) {
        self.pending = None;
        self.gather.clear();
        let mut buf = Vec::new();
        while let Some(to) = end.poll_udp(now, &mut buf) {
            match self.send(&buf, to) {
                Ok(()) => self.counters.udp_sent += 1,
                Err(_) => self.counters.udp_send_errors += 1,
            }
        }
    }

    /// Writes what the engine has for the TUN device: consecutive TCP segments of one flow
    /// joined into one write where the device has offloads ([`offload::Coalesce`]), else one
    /// write a packet.
    pub(super) fn drain_tun<E: End>(&mut self, end: &mut E) {
        let Some(dev) = &self.device else {
            while end.poll_tun().is_some() {
                self.counters.tun_no_device += 1;
            }
            return;
        };
        if !dev.offloads() {
            while let Some(p) = end.poll_tun() {
                match dev.write(&p) {
                    Ok(_) => self.counters.tun_written += 1,
                    Err(_) => self.counters.tun_write_errors += 1,
                }
            }
            return;
        }
        let mut joined = 0;
        while let Some(p) = end.poll_tun() {
            if !self.coalesce.push(&p) {
                write_frame(dev, &mut self.coalesce, joined, &mut self.counters);
                self.coalesce.push(&p);
                joined = 0;
            }
            joined += 1;
        }
        write_frame(dev, &mut self.coalesce, joined, &mut self.counters);
    }
}

/// Writes the frame `c` holds (`packets` packets joined), counting them.
fn write_frame(dev: &Device, c: &mut offload::Coalesce, packets: u64, counters: &mut IoCounters) {
    if let Some(frame) = c.take() {
        match dev.write_frame(frame) {
            Ok(_) => counters.tun_written += packets,
            Err(_) => counters.tun_write_errors += packets,
        }
    }
}

/// Replies from the address the peer wrote to (WireGuard's "sticky sockets").
///
/// A server socket bound to `0.0.0.0` (or `[::]`) on a host with several addresses would
/// otherwise send its replies from whichever address the route back prefers; a client
/// (whose socket is connected, and whose NAT maps one address pair) drops those, and the
/// tunnel never comes up. So the server asks the kernel for each datagram's destination
/// address (`IP_PKTINFO`, `IPV6_RECVPKTINFO`), remembers it per peer, and sends to that peer
/// with it as the source (`sendmsg` with `IP_PKTINFO` / `IPV6_PKTINFO`): see
/// [`sprout_os::udp_pktinfo`].
pub(super) mod sticky {
    pub(crate) use sprout_os::udp_pktinfo::{enable, recv, send};

    /// Peers remembered at most (the map is cleared when full).
    pub(crate) const MAX_PEERS: usize = 65_536;
}
