//! The deterministic discrete-event simulator: two endpoints (Sprout, or one of the TCP peers)
//! joined by an uplink and a downlink, each replaying its own trace through the shared link
//! model, running exactly the protocol code a real socket runtime runs. Same inputs and seed give
//! byte-identical outputs.

use std::collections::VecDeque;
use std::io::Write;
use std::sync::Arc;

use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};
use sprout_core::direction::Load;
use sprout_core::time::Duration;
use sprout_core::{Config, Connection, Instant};
use sprout_link::{
    DirectionShape, Ecn, Link, LinkConfig, LinkEvent, LinkStats, MmLogWriter, QueueConfig, Trace,
};
use sprout_tcp::{CcKind, Segment, TcpConfig, TcpEndpoint};

use crate::app::{App, Source};
use crate::app_metrics::{self, AppMetrics, Ledger};
use crate::cross::{CrossEnd, CROSS_FLOW};
use crate::error::{SimError, UnknownName};
use crate::gcc_flow::{GccHost, GccPacket, GCC_MAX_PAYLOAD};
use crate::metrics::{self, Arrival, DirectionMetrics, Window};
use crate::run_limits::check_run;
use crate::sim_loop::{Endpoints, Simulation};

/// Parses `sprout sim --load` (and the Python package's and the sweeps' `load`): `both`, `up`
/// or `down`, the directions that carry application data (the other carries only feedback and
/// heartbeats).
pub fn parse_load(s: &str) -> Result<Load, UnknownName> {
    s.parse().map_err(|_| UnknownName {
        what: "load",
        name: s.to_string(),
        choices: "expected both, up or down".into(),
    })
}

/// The TCP peers' receive window in the simulator, bytes: Linux's default largest receive
/// buffer (`net.ipv4.tcp_rmem` max, 6 MiB). Over an unlimited queue, which never drops, this is
/// what bounds a loss-based sender's flight, and so its delay (kernel Cubic through mahimahi
/// keeps 5-6 MB queued on Verizon-LTE-short).
pub const LINUX_RECEIVE_WINDOW_BYTES: u64 = 6_291_456;

/// The TCP peers' send buffer in the simulator, bytes: Linux's default largest send buffer
/// (`net.ipv4.tcp_wmem` max, 4 MiB). A bulk sender's unacknowledged data never exceeds it, so
/// it bounds the flight below the receive window.
pub const LINUX_SEND_BUFFER_BYTES: u64 = 4_194_304;

/// Default host wake-up latency: real event loops sleep in whole milliseconds (ours in
/// `epoll_wait`, through mio, rounds each timeout up to the next millisecond; the authors'
/// `select` loop kept time in milliseconds), so a timer fires up to 1 ms late. With timers
/// exactly on time, a 50 ms heartbeat and 20 ms ticks keep one phase for a whole run, and a
/// one-direction transfer's throughput then depends on that phase (the start times) far more
/// than any real run does.
pub const DEFAULT_HOST_JITTER: Duration = Duration::from_millis(1);

/// Which transport both endpoints run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Transport {
    /// Sprout (or Sprout-EWMA), configured by [`SimConfig::protocol`].
    Sprout,
    /// A TCP peer with this congestion controller, configured by [`SimConfig::tcp`]. The mobile
    /// opens the connection (as `sprout tcp client` does in the emulated evaluation) and the
    /// server listens: no data flows before the three-way handshake.
    Tcp(CcKind),
    /// No congestion control: the sender puts each application datagram straight onto the
    /// link when the application hands it over (with a [`DIRECT_HEADER_BYTES`] UDP/IP header),
    /// and the receiving side sends nothing. Only with a constant or video [`App`].
    Direct,
    /// Google Congestion Control ([`crate::gcc_flow`], the model of `sprout_gcc`): media paced
    /// at the controller's target rate, transport-wide feedback every 50 ms. Only with an
    /// application of its own (adaptive video sizes each frame by the target rate).
    Gcc,
}

/// The header a `direct` datagram carries on the link on top of its payload, bytes (IPv4 and
/// UDP, 28).
pub const DIRECT_HEADER_BYTES: u32 = sprout_core::params::IP_UDP_HEADER_BYTES as u32;

/// The largest application payload per datagram of the transports that do not say
/// (`direct`; TCP, whose stream has no datagrams, takes messages whole), bytes.
pub const DIRECT_MAX_PAYLOAD: usize = 1400;

/// The most application bytes a sender may hold unsent, bytes (64 MiB): a message handed over
/// beyond it is dropped at the sender, as a full socket buffer drops it, and counts as never
/// delivered. It bounds the memory of a run whose application outpaces its link.
pub const MAX_SENDER_BACKLOG_BYTES: u64 = 64 << 20;

/// The most datagrams an application may create in one direction of one run (estimated
/// before the run), so that a run fits in memory.
pub const MAX_APP_DATAGRAMS: f64 = 20e6;

/// What to simulate.
#[derive(Clone, Debug)]
pub struct SimConfig {
    /// Which transport the endpoints run.
    pub transport: Transport,
    /// The Sprout configuration of both endpoints (used when the transport is Sprout).
    pub protocol: Config,
    /// The TCP configuration of both endpoints (used when the transport is TCP).
    pub tcp: TcpConfig,
    /// The link model of both directions.
    pub link: LinkConfig,
    /// Queue and loss of the uplink alone, overriding `link`'s.
    pub uplink: DirectionOverride,
    /// Queue and loss of the downlink alone, overriding `link`'s.
    pub downlink: DirectionOverride,
    /// Simulated time; `None` = the shorter trace's length: the run ends when either trace
    /// does, as the paper's Cellsim, which did not loop its traces, ended.
    pub duration: Option<Duration>,
    /// Start of the measured window (paper: 60 s).
    pub skip: Duration,
    /// Which directions carry data.
    pub load: Load,
    /// Seed for anything random: the links' loss generators (direction-specific streams of
    /// it) and, when not 0, the endpoints' start times (each starts 0-100 ms late, drawn from
    /// the seed), so that seeds give independent runs of the same experiment. Until it starts,
    /// an endpoint drops what reaches it (a TCP mobile's SYN to a server not yet listening is
    /// lost and retransmitted after 1 s).
    pub seed: u64,
    /// Host wake-up latency: each Sprout endpoint's timers fire late by a uniform random
    /// 0..=this, in whole microseconds (drawn from the seed); a datagram's arrival still wakes
    /// it at once. TCP endpoints, which stand for kernel stacks, are always on time.
    /// Default [`DEFAULT_HOST_JITTER`]; 0 = exactly on time.
    pub host_jitter: Duration,
    /// What the application offers in every direction that [`SimConfig::load`] says carries
    /// data. Default [`App::Bulk`], the saturating sender.
    pub app: App,
    /// Cross traffic: a bulk TCP transfer with this congestion controller beside the scheme's
    /// flow, in every direction that carries data, sharing the links' queues (a flow of its own
    /// in an FQ-CoDel queue); its packets count in no metric but the links' counters and
    /// [`DirectionRun::cross_bytes`]. Default `None`.
    pub cross: Option<CcKind>,
}

/// What one direction of the link does differently from [`SimConfig::link`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DirectionOverride {
    /// This direction's queue discipline, if not `link`'s.
    pub queue: Option<QueueConfig>,
    /// This direction's Bernoulli loss probability (0..1), if not `link`'s.
    pub loss: Option<f64>,
    /// This direction's buffer, CoDel parameters, bursty loss, delay trace and jitter, set
    /// on `link` after the queue and the loss.
    pub shape: DirectionShape,
}

/// One direction of the simulated link (the one direction type).
pub use sprout_core::direction::Direction;

impl SimConfig {
    /// The link configuration of one direction: `link` with that direction's overrides, and
    /// its own stream of the seed for losses.
    pub fn link_for(&self, direction: Direction) -> LinkConfig {
        let (over, stream) = match direction {
            Direction::Down => (&self.downlink, 0),
            Direction::Up => (&self.uplink, 1),
        };
        let mut link = self.link.clone();
        if let Some(q) = over.queue {
            link.queue = q;
        }
        if let Some(l) = over.loss {
            link.loss = l;
        }
        over.shape.apply(&mut link);
        link.seed = self.seed.wrapping_mul(2).wrapping_add(stream);
        link
    }

    /// The length of a run of this configuration over these traces, in microseconds, once
    /// [`check_run`] has found it worth making (a measured window of at least 5 s, a size that
    /// fits in memory).
    pub fn checked_duration_us(&self, uplink: &Trace, downlink: &Trace) -> Result<u64, SimError> {
        check_run(
            uplink,
            downlink,
            self.duration,
            self.skip,
            self.link.looping,
        )
    }

    /// Checks the application against the transport: its values ([`App::validate`]) and that
    /// `direct` has an application of its own rate (constant or video).
    pub fn validate_app(&self) -> Result<(), SimError> {
        self.app.validate()?;
        if self.transport == Transport::Gcc && self.app.is_bulk() {
            return Err(SimError::InvalidOption(
                "gcc with app bulk has nothing to pace: it carries media; give an adaptive, \
                 video or constant app"
                    .into(),
            ));
        }
        if self.transport == Transport::Direct {
            let why = match self.app {
                App::Bulk => Some(
                    "would flood the link: it has no congestion control to hold a bulk sender back",
                ),
                App::Adaptive { .. } => {
                    Some("has no rate to adapt to: it has no congestion control")
                }
                _ => None,
            };
            if let Some(why) = why {
                return Err(SimError::InvalidOption(format!(
                    "direct with app {} {why}; give a constant or video app",
                    self.app
                )));
            }
        }
        Ok(())
    }

    /// [`SimConfig::validate_app`], and that a run of `duration` creates at most
    /// [`MAX_APP_DATAGRAMS`] datagrams per direction, so that it fits in memory.
    pub fn check_app_run(&self, duration: Duration) -> Result<(), SimError> {
        self.validate_app()?;
        let datagrams = self.app.datagrams_per_s(DIRECT_MAX_PAYLOAD) * duration.as_secs_f64();
        if datagrams > MAX_APP_DATAGRAMS {
            return Err(SimError::InvalidOption(format!(
                "app {} would create about {datagrams:.0} datagrams in {:.0} s, more than the \
                 {MAX_APP_DATAGRAMS:.0} one run may hold; give a lower rate, larger packets or a \
                 shorter --duration",
                self.app,
                duration.as_secs_f64()
            )));
        }
        Ok(())
    }

    /// Checks both directions' link configurations ([`SimError::DirectionLink`]).
    pub fn validate_links(&self) -> Result<(), SimError> {
        for (direction, d) in [("uplink", Direction::Up), ("downlink", Direction::Down)] {
            self.link_for(d)
                .validate()
                .map_err(|source| SimError::DirectionLink { direction, source })?;
        }
        Ok(())
    }
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            transport: Transport::Sprout,
            protocol: Config::default(),
            tcp: TcpConfig {
                receive_window_bytes: LINUX_RECEIVE_WINDOW_BYTES,
                send_buffer_bytes: LINUX_SEND_BUFFER_BYTES,
                ..TcpConfig::default()
            },
            link: LinkConfig::default(),
            uplink: DirectionOverride::default(),
            downlink: DirectionOverride::default(),
            duration: None,
            skip: metrics::DEFAULT_SKIP,
            load: Load::Both,
            seed: 0,
            host_jitter: DEFAULT_HOST_JITTER,
            app: App::Bulk,
            cross: None,
        }
    }
}

/// What happened in one direction of a run.
#[derive(Clone, Debug)]
pub struct DirectionRun {
    /// The trace replayed.
    pub trace: Arc<Trace>,
    /// Every packet that left the link queue, in arrival order.
    pub arrivals: Vec<Arrival>,
    /// Every delivery opportunity up to the end of the run, in microseconds.
    pub opportunities_us: Vec<u64>,
    /// The measured window.
    pub window: Window,
    /// The paper's metrics over the window.
    pub metrics: DirectionMetrics,
    /// Datagrams sent in this direction, heartbeats included.
    pub datagrams_sent: u64,
    /// Heartbeats sent in this direction.
    pub heartbeats_sent: u64,
    /// Application-level figures over the window ([`crate::app_metrics`]): `Some` for a
    /// non-bulk [`App`] in a direction that carries data.
    pub app: Option<AppMetrics>,
    /// The link's counters over the whole run (drops by reason among them).
    pub link: LinkStats,
    /// Bytes of the cross traffic's packets ([`SimConfig::cross`]) the link delivered over the
    /// whole run; 0 without it.
    pub cross_bytes: u64,
}

/// Result of a simulation: both directions.
#[derive(Clone, Debug)]
pub struct SimOutput {
    /// Mobile to server.
    pub uplink: DirectionRun,
    /// Server to mobile.
    pub downlink: DirectionRun,
    /// Simulated time.
    pub duration: Duration,
}

/// What crosses the simulated wire: a real Sprout datagram, a TCP segment, or a `direct`
/// datagram (whose bytes nobody reads).
enum Body {
    Sprout(Vec<u8>),
    Tcp(Segment),
    Direct,
    Gcc(GccPacket),
}

impl WirePacket {
    /// The ECN codepoint it is sent with: ECT(0) for a TCP segment its sender made
    /// ECN-capable (ECN negotiated, new data), else Not-ECT. Sprout's datagrams and the
    /// others are Not-ECT: their senders do not read marks.
    #[inline]
    fn ecn(&self) -> Ecn {
        match &self.body {
            Body::Tcp(seg) if seg.ecn.ect() => Ecn::Ect0,
            _ => Ecn::NotEct,
        }
    }

    /// The link marked it CE: a TCP segment's receiver sees the mark.
    #[cold]
    fn mark_ce(&mut self) {
        if let Body::Tcp(seg) = &mut self.body {
            seg.ecn.set_ce(true);
        }
    }
}

/// [`WirePacket::message`] of a packet that carries no message of a non-bulk application.
const NO_MESSAGE: u32 = u32::MAX;

/// A packet on the simulated wire plus what the metrics need.
struct WirePacket {
    body: Body,
    app_bytes: u32,
    is_data: bool,
    /// The application message (index in the sender's [`Ledger`]) this datagram carries part
    /// of, or [`NO_MESSAGE`].
    message: u32,
    /// Whether it is the cross traffic's ([`SimConfig::cross`]).
    cross: bool,
}

/// A `direct` endpoint: the datagrams the application handed over and not yet put on the
/// link, (message, payload bytes) each.
#[derive(Default)]
struct DirectHost {
    queue: VecDeque<(u32, u32)>,
    queued_bytes: u64,
    sent: u64,
}

/// One endpoint of the simulated connection.
enum Host {
    Sprout(Box<Connection>),
    Tcp(Box<TcpEndpoint>),
    Direct(DirectHost),
    Gcc(Box<GccHost>),
}

impl Host {
    /// A host that starts at `now`; `opens` says whether it opens the TCP connection (the
    /// mobile) or listens (the server).
    fn new(cfg: &SimConfig, bulk: bool, opens: bool, now: Instant) -> Result<Host, SimError> {
        Ok(match cfg.transport {
            Transport::Sprout => {
                let mut c = Connection::new(cfg.protocol.clone(), now)?;
                c.set_bulk(bulk);
                c.set_keep_incoming(false);
                Host::Sprout(Box::new(c))
            }
            Transport::Tcp(cc) => {
                let mut t = if opens {
                    TcpEndpoint::connect(cfg.tcp.clone(), cc, now)
                } else {
                    TcpEndpoint::listen(cfg.tcp.clone(), cc, now)
                };
                t.set_bulk(bulk);
                Host::Tcp(Box::new(t))
            }
            Transport::Direct => Host::Direct(DirectHost::default()),
            Transport::Gcc => {
                let fps = match cfg.app {
                    App::Adaptive { fps, .. } | App::Video { fps, .. } => fps,
                    _ => crate::app::DEFAULT_FPS,
                };
                Host::Gcc(Box::new(GccHost::new(now, fps)))
            }
        })
    }

    fn receive(&mut self, now: Instant, body: &Body) -> Result<(), SimError> {
        match (self, body) {
            // Our own datagrams always parse; a failure here would be a bug worth seeing.
            (Host::Sprout(c), Body::Sprout(d)) => {
                c.handle_datagram(now, d).map_err(SimError::Datagram)
            }
            (Host::Tcp(t), Body::Tcp(seg)) => {
                t.handle_segment(now, seg);
                Ok(())
            }
            (Host::Direct(_), Body::Direct) => Ok(()),
            (Host::Gcc(g), Body::Gcc(p)) => {
                g.receive(now, p);
                Ok(())
            }
            _ => Err(SimError::WrongTransport),
        }
    }

    fn timeout(&mut self, now: Instant) {
        match self {
            Host::Sprout(c) => c.handle_timeout(now),
            Host::Tcp(t) => t.handle_timeout(now),
            Host::Direct(_) | Host::Gcc(_) => {}
        }
    }

    /// The next packet to send now, with its size on the link (bytes), and whether it took
    /// a datagram the application queued with [`Connection::send`] (Sprout).
    fn transmit(
        &mut self,
        now: Instant,
        overhead: u32,
        spare: &mut Vec<Vec<u8>>,
    ) -> Option<(WirePacket, u32, bool)> {
        match self {
            Host::Sprout(c) => {
                let queued = c.queued_bytes();
                let mut buf = spare.pop().unwrap_or_default();
                let Some(t) = c.poll_transmit(now, &mut buf) else {
                    spare.push(buf);
                    return None;
                };
                let packet = WirePacket {
                    body: Body::Sprout(buf),
                    app_bytes: t.app_bytes as u32,
                    is_data: !t.heartbeat && t.app_bytes > 0,
                    message: NO_MESSAGE,
                    cross: false,
                };
                Some((packet, t.len as u32 + overhead, c.queued_bytes() < queued))
            }
            Host::Tcp(t) => {
                let seg = t.poll_transmit(now)?;
                let bytes = seg.wire_bytes();
                let packet = WirePacket {
                    app_bytes: seg.len,
                    is_data: seg.is_data(),
                    body: Body::Tcp(seg),
                    message: NO_MESSAGE,
                    cross: false,
                };
                Some((packet, bytes, false))
            }
            Host::Direct(d) => {
                let (message, len) = d.queue.pop_front()?;
                d.queued_bytes -= u64::from(len);
                d.sent += 1;
                let packet = WirePacket {
                    body: Body::Direct,
                    app_bytes: len,
                    is_data: true,
                    message,
                    cross: false,
                };
                Some((packet, len + DIRECT_HEADER_BYTES, false))
            }
            Host::Gcc(g) => {
                let out = g.transmit(now)?;
                let packet = WirePacket {
                    body: Body::Gcc(out.packet),
                    app_bytes: out.app_bytes,
                    is_data: out.message.is_some(),
                    message: out.message.unwrap_or(NO_MESSAGE),
                    cross: false,
                };
                Some((packet, out.wire_bytes, false))
            }
        }
    }

    /// Application bytes handed over and not yet sent.
    fn backlog(&self) -> u64 {
        match self {
            Host::Sprout(c) => c.queued_bytes() as u64,
            Host::Tcp(t) => t.unsent_bytes(),
            Host::Direct(d) => d.queued_bytes,
            Host::Gcc(g) => g.backlog(),
        }
    }

    /// What the transport allows the application to hand over now, bytes: Sprout's window
    /// less what is queued; TCP's congestion window less its flight and unsent data.
    fn allowance(&mut self, now: Instant) -> u64 {
        match self {
            Host::Sprout(c) => c.window_bytes(now).saturating_sub(c.queued_bytes() as u64),
            Host::Tcp(t) => t
                .cwnd_bytes()
                .saturating_sub(t.stats().in_flight_bytes)
                .saturating_sub(t.unsent_bytes()),
            Host::Direct(_) => 0,
            Host::Gcc(g) => g.allowance(),
        }
    }

    /// The largest application payload per datagram, bytes (a TCP stream takes messages
    /// whole: `u64::MAX`).
    fn max_payload(&self) -> u64 {
        match self {
            Host::Sprout(c) => c.max_payload() as u64,
            Host::Tcp(_) => u64::MAX,
            Host::Direct(_) => DIRECT_MAX_PAYLOAD as u64,
            Host::Gcc(_) => GCC_MAX_PAYLOAD as u64,
        }
    }

    /// Bytes of the peer's stream delivered in order so far (TCP only).
    fn stream_delivered(&self) -> Option<u64> {
        match self {
            Host::Tcp(t) => Some(t.stats().delivered_app_bytes),
            _ => None,
        }
    }

    /// Whether the host's timers fire with [`SimConfig::host_jitter`] of latency: a Sprout
    /// endpoint is a user-space event loop woken by `epoll_wait` (whole milliseconds); a TCP
    /// endpoint stands for a kernel stack, whose pacing timers are high-resolution.
    fn wakes_late(&self) -> bool {
        matches!(self, Host::Sprout(_))
    }

    fn next_timeout(&mut self) -> Option<Instant> {
        match self {
            Host::Sprout(c) => c.poll_timeout(),
            Host::Tcp(t) => t.poll_timeout(),
            Host::Direct(_) => None,
            Host::Gcc(g) => Some(g.next_timeout()),
        }
    }

    /// (datagrams sent, heartbeats sent).
    fn counters(&self) -> (u64, u64) {
        match self {
            Host::Sprout(c) => {
                let s = c.stats();
                (s.datagrams_sent, s.heartbeats_sent)
            }
            Host::Tcp(t) => {
                let s = t.stats();
                (
                    s.data_segments_sent + s.ack_segments_sent + s.handshake_segments_sent,
                    0,
                )
            }
            Host::Direct(d) => (d.sent, 0),
            Host::Gcc(g) => (g.sent(), 0),
        }
    }
}

/// A non-bulk application at one sending end: its source, the messages it created, and what
/// ties the transport's packets to them.
struct AppSide {
    source: Source,
    ledger: Ledger,
    /// The message of each datagram queued in a Sprout sender, in order: a transmit that takes
    /// a queued datagram takes the front one.
    queued: VecDeque<u32>,
    /// (message, stream offset of its end) of messages written to a TCP sender and not yet
    /// delivered, in order.
    stream_ends: VecDeque<(u32, u64)>,
    /// Bytes written to the TCP stream so far.
    written: u64,
}

impl AppSide {
    fn new(app: App, start: Instant) -> Option<Box<AppSide>> {
        Source::new(app, start).map(|source| {
            Box::new(AppSide {
                source,
                ledger: Ledger::default(),
                queued: VecDeque::new(),
                stream_ends: VecDeque::new(),
                written: 0,
            })
        })
    }

    /// Hands every message due by `now` to `host` (a message beyond
    /// [`MAX_SENDER_BACKLOG_BYTES`] is dropped at the sender: never delivered).
    fn hand_over(&mut self, host: &mut Host, now: Instant) {
        while self.source.next_at() <= now {
            let created = self.source.next_at();
            let allowance = || (host.backlog() == 0).then(|| host.allowance(now));
            let Some(bytes) = self.source.emit(allowance) else {
                continue;
            };
            if host.backlog().saturating_add(bytes) > MAX_SENDER_BACKLOG_BYTES {
                self.ledger.open(created, bytes, 1);
                continue;
            }
            let max = host.max_payload();
            let datagrams = bytes.div_ceil(max).max(1);
            let index = self.ledger.open(created, bytes, datagrams as u32);
            let chunks = (0..datagrams).map(|k| (bytes - k * max).min(max));
            match host {
                Host::Sprout(c) => {
                    for len in chunks {
                        c.send(vec![0u8; len as usize]);
                        self.queued.push_back(index);
                    }
                }
                Host::Tcp(t) => {
                    t.write(bytes);
                    self.written += bytes;
                    self.stream_ends.push_back((index, self.written));
                }
                Host::Direct(d) => {
                    for len in chunks {
                        d.queue.push_back((index, len as u32));
                        d.queued_bytes += len;
                    }
                }
                Host::Gcc(g) => {
                    for len in chunks {
                        g.enqueue(index, len as u32);
                    }
                }
            }
        }
    }

    /// The receiving TCP endpoint has delivered `delivered` bytes of the stream by `now`.
    fn stream_delivered(&mut self, delivered: u64, now: Instant) {
        while let Some(&(index, end)) = self.stream_ends.front() {
            if end > delivered {
                break;
            }
            self.ledger.delivered(index, now);
            self.stream_ends.pop_front();
        }
    }
}

/// Optional mahimahi-format logs, one per direction.
pub struct Logs<'a> {
    /// Uplink log.
    pub uplink: &'a mut dyn Write,
    /// Downlink log.
    pub downlink: &'a mut dyn Write,
}

struct Side {
    host: Option<Host>,
    /// When this endpoint starts.
    start: Instant,
    /// When the host next wakes for its timers (its next deadline plus its wake-up latency).
    wake: Instant,
    /// Draws the host's wake-up latencies.
    jitter: rand_chacha::ChaCha8Rng,
    /// A datagram reached the host (or it started) in this step, which wakes it.
    woken: bool,
    bulk: bool,
    /// The application at this end, when it sends data and is not bulk (from the host's
    /// start).
    app: Option<Box<AppSide>>,
    /// Link this endpoint sends on (the packets themselves are in `on_link`).
    link: Link<()>,
    on_link: OnLink,
    arrivals: Vec<Arrival>,
    /// This side's end of the cross traffic, with [`SimConfig::cross`] (from the host's start).
    cross: Option<CrossEnd>,
    /// Bytes of cross traffic this side's link delivered.
    cross_bytes: u64,
}

/// The packets of one direction inside its link, which moves only their times and sizes: the
/// link's events say which packet moved ([`OnLink::follow`]): packets reach the queue in the
/// order they were sent and leave it in the order they reached it, but for jitter with
/// reordering and drops from inside the queue, whose events give the packet's place, and
/// FQ-CoDel, which keeps that order only within a flow key (the scheme's, the cross
/// traffic's), given by its events.
#[derive(Default)]
struct OnLink {
    /// Sent, not yet at the queue, in the order sent.
    propagating: VecDeque<WirePacket>,
    /// In the queue, in the order they joined it (FIFO disciplines); with FQ-CoDel, the
    /// scheme's packets (flow key 0).
    queued: VecDeque<WirePacket>,
    /// With FQ-CoDel, the cross traffic's packets in the queue (flow key [`CROSS_FLOW`]), in the
    /// order they joined it.
    cross_queued: Option<VecDeque<WirePacket>>,
}

impl OnLink {
    /// Packets for a link running `queue`.
    fn new(queue: &QueueConfig) -> OnLink {
        OnLink {
            cross_queued: matches!(queue, QueueConfig::FqCodel { .. }).then(VecDeque::new),
            ..OnLink::default()
        }
    }

    /// Packets in the queue.
    fn queued_len(&self) -> usize {
        self.queued.len() + self.cross_queued.as_ref().map_or(0, VecDeque::len)
    }

    /// The queue of flow key `flow`: with FQ-CoDel, the scheme's (0) or the cross traffic's;
    /// else the one queue.
    #[cold]
    #[inline(never)]
    fn queue_of(&mut self, flow: u32) -> &mut VecDeque<WirePacket> {
        match &mut self.cross_queued {
            Some(q) if flow == CROSS_FLOW => q,
            _ => &mut self.queued,
        }
    }

    /// Moves the packets as `event` says; returns the packet a delivery delivers. The scheme's
    /// packets (flow key 0) are always in `queued`.
    #[inline]
    fn follow(&mut self, event: &LinkEvent<()>) -> Option<WirePacket> {
        match event {
            LinkEvent::Enqueued { index, .. } => {
                if let Some(p) = take(&mut self.propagating, *index) {
                    if p.cross {
                        self.queue_of(CROSS_FLOW).push_back(p);
                    } else {
                        self.queued.push_back(p);
                    }
                }
                None
            }
            LinkEvent::Dropped { index, .. } => {
                take(&mut self.propagating, *index);
                None
            }
            LinkEvent::HeadDropped { index, flow, .. } => {
                take(self.queue_of(*flow), *index);
                None
            }
            LinkEvent::Delivered(d) if d.flow == 0 => self.queued.pop_front(),
            LinkEvent::Delivered(d) => self.queue_of(d.flow).pop_front(),
            LinkEvent::Opportunity { .. } => None,
        }
    }
}

/// Removes the packet at `index` of `packets` (at the front, nearly always).
#[inline]
fn take(packets: &mut VecDeque<WirePacket>, index: usize) -> Option<WirePacket> {
    if index == 0 {
        packets.pop_front()
    } else {
        take_from_inside(packets, index)
    }
}

/// [`take`] from behind the front: reordering and drop-head buffers only.
#[cold]
#[inline(never)]
fn take_from_inside(packets: &mut VecDeque<WirePacket>, index: usize) -> Option<WirePacket> {
    packets.remove(index)
}

impl Side {
    /// Side `index` (0: the server, sending on the downlink; 1: the mobile, on the uplink),
    /// starting at `start`.
    fn new(cfg: &SimConfig, index: u64, start: Instant, bulk: bool, link: Link<()>) -> Side {
        Side {
            host: None,
            start,
            wake: Instant::ZERO,
            jitter: rand_chacha::ChaCha8Rng::seed_from_u64(
                cfg.seed ^ (0x4a49_5454_4552_0000 + index),
            ),
            woken: false,
            bulk,
            app: None,
            on_link: OnLink::new(&link.config().queue),
            link,
            arrivals: Vec::new(),
            cross: None,
            cross_bytes: 0,
        }
    }

    /// Step 3 for this side at `now`: the endpoint starts when due (`opens`: it opens the TCP
    /// connection), and, when a datagram woke it or its timers are due, runs its timers, sends
    /// what it has and schedules its next wake-up.
    fn act(
        &mut self,
        cfg: &SimConfig,
        opens: bool,
        now: Instant,
        spare: &mut Vec<Vec<u8>>,
    ) -> Result<(), SimError> {
        if self.host.is_none() && now >= self.start {
            let bulk = self.bulk && cfg.app.is_bulk();
            self.host = Some(Host::new(cfg, bulk, opens, now)?);
            if self.bulk {
                self.app = AppSide::new(cfg.app, now);
            }
            if let Some(cc) = cfg.cross {
                self.cross = Some(CrossEnd::new(&cfg.tcp, cc, opens, self.bulk, now));
            }
            self.woken = true;
        }
        if self.cross.is_some() {
            self.act_cross(now);
        }
        let Some(host) = self.host.as_mut() else {
            return Ok(());
        };
        let app_due = self.app.as_ref().is_some_and(|a| a.source.next_at() <= now);
        // A host acts when a datagram arrives, when it wakes for its timers, or when its
        // application hands it a message.
        if !std::mem::take(&mut self.woken) && now < self.wake && !app_due {
            return Ok(());
        }
        host.timeout(now);
        if app_due {
            if let Some(app) = self.app.as_mut() {
                app.hand_over(host, now);
            }
        }
        let overhead = cfg.protocol.link_overhead_bytes;
        while let Some((mut packet, bytes, took_queued)) = host.transmit(now, overhead, spare) {
            if took_queued {
                if let Some(app) = self.app.as_mut() {
                    packet.message = app.queued.pop_front().unwrap_or(NO_MESSAGE);
                }
            }
            self.link.send_ecn(now, bytes, 0, packet.ecn(), ());
            self.on_link.propagating.push_back(packet);
        }
        self.wake = match host.next_timeout() {
            Some(t) if !cfg.host_jitter.is_zero() && host.wakes_late() => {
                let late = self.jitter.gen_range(0..=cfg.host_jitter.as_micros());
                t.max(now) + Duration::from_micros(late)
            }
            Some(t) => t,
            None => Instant::MAX,
        };
        Ok(())
    }

    /// The cross traffic's end acts at `now` (see [`CrossEnd::act`]), its segments onto the
    /// link as a flow of their own.
    #[inline(never)]
    fn act_cross(&mut self, now: Instant) {
        let Some(c) = self.cross.as_mut() else {
            return;
        };
        let (link, on_link) = (&mut self.link, &mut self.on_link);
        c.act(now, |seg| {
            let ecn = if seg.ecn.ect() {
                Ecn::Ect0
            } else {
                Ecn::NotEct
            };
            link.send_ecn(now, seg.wire_bytes(), CROSS_FLOW, ecn, ());
            on_link.propagating.push_back(WirePacket {
                app_bytes: seg.len,
                is_data: seg.is_data(),
                body: Body::Tcp(seg),
                message: NO_MESSAGE,
                cross: true,
            });
        });
    }

    /// The earliest time this side can do something: its link's next event, its wake-up or
    /// its start.
    fn next_event(&self) -> Instant {
        let own = match (&self.host, &self.app) {
            (Some(_), Some(app)) => self.wake.min(app.source.next_at()),
            (Some(_), None) => self.wake,
            (None, _) => self.start,
        };
        let own = self.cross.as_ref().map_or(own, |c| own.min(c.wake()));
        self.link.next_event().map_or(own, |t| t.min(own))
    }

    /// This side's direction of the run, measured over `trace`.
    fn finish(self, trace: Arc<Trace>, cfg: &SimConfig, duration: u64) -> DirectionRun {
        let (datagrams_sent, heartbeats_sent) = self.host.as_ref().map_or((0, 0), |h| h.counters());
        let (window, opportunities_us, metrics) =
            measure(&trace, &self.arrivals, cfg, Duration::from_micros(duration));
        let app = self.app.map(|a| {
            app_metrics::compute(a.ledger.messages(), app_metrics::counted_window(window))
        });
        DirectionRun {
            app,
            link: self.link.stats(),
            trace,
            arrivals: self.arrivals,
            opportunities_us,
            window,
            metrics,
            datagrams_sent,
            heartbeats_sent,
            cross_bytes: self.cross_bytes,
        }
    }
}

/// When the two endpoints start: both at 0 with seed 0, else each 0-100 ms late, drawn from
/// the seed.
fn start_times(seed: u64) -> [Instant; 2] {
    if seed == 0 {
        return [Instant::ZERO; 2];
    }
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed ^ 0x5354_4152_5453);
    let mut late = || Instant::from_micros(rng.gen_range(0..100_000));
    [late(), late()]
}

/// Steps 1 and 2 at `now`: the links deliver what is due (logging every event to `writers`,
/// the first write error kept in `log_error`), and the receivers take in their datagrams
/// (downlink packets, side 0's, reach the mobile, side 1).
fn deliver<W: Write>(
    sides: &mut [Side; 2],
    now: Instant,
    writers: Option<&mut [MmLogWriter<W>; 2]>,
    log_error: &mut Option<std::io::Error>,
    delivered: &mut Vec<(usize, sprout_link::Delivery<()>, WirePacket)>,
    spare: &mut Vec<Vec<u8>>,
) -> Result<(), SimError> {
    let mut writers = writers;
    for (i, side) in sides.iter_mut().enumerate() {
        let on_link = &mut side.on_link;
        side.link.advance(now, &mut |ev: LinkEvent<()>| {
            if let Some(w) = writers.as_mut() {
                if let Err(e) = w[i].event(&ev) {
                    log_error.get_or_insert(e);
                }
            }
            let packet = on_link.follow(&ev);
            if let (LinkEvent::Delivered(d), Some(p)) = (ev, packet) {
                delivered.push((i, d, p));
            }
        });
        debug_assert_eq!(side.on_link.queued_len(), side.link.queue_packets());
        debug_assert_eq!(
            side.on_link.propagating.len(),
            side.link.in_flight_packets()
        );
    }
    for (i, d, mut p) in delivered.drain(..) {
        if d.ecn == Ecn::Ce {
            p.mark_ce();
        }
        take_in(sides, i, &d, &p)?;
        // The datagram's buffer serves a later one.
        if let Body::Sprout(buf) = p.body {
            spare.push(buf);
        }
    }
    Ok(())
}

/// Step 2 for one packet that side `i`'s link delivered: its arrival is recorded, and the
/// other side's host (if started) and the applications take it in.
fn take_in(
    sides: &mut [Side; 2],
    i: usize,
    d: &sprout_link::Delivery<()>,
    p: &WirePacket,
) -> Result<(), SimError> {
    let receiver = 1 - i;
    if p.cross {
        sides[i].cross_bytes += u64::from(d.bytes);
        if let (Some(c), Body::Tcp(seg)) = (sides[receiver].cross.as_mut(), &p.body) {
            c.receive(d.delivered, seg);
        }
        return Ok(());
    }
    sides[i].arrivals.push(Arrival {
        sent: d.sent,
        arrived: d.delivered,
        bytes: d.bytes,
        app_bytes: p.app_bytes,
        is_data: p.is_data,
    });
    // An endpoint that has not started yet (seeded start times) drops what reaches it.
    let at = d.delivered;
    let has_app = sides[i].app.is_some();
    let mut stream = None;
    let Some(h) = sides[receiver].host.as_mut() else {
        return Ok(());
    };
    h.receive(at, &p.body)?;
    sides[receiver].woken = true;
    if has_app && p.message == NO_MESSAGE {
        stream = h.stream_delivered();
    }
    // The receiving application has the datagram (or the stream up to here).
    if let Some(app) = sides[i].app.as_mut() {
        if p.message != NO_MESSAGE {
            app.ledger.datagram_arrived(p.message, at);
        } else if let Some(n) = stream {
            app.stream_delivered(n, at);
        }
    }
    Ok(())
}

/// The two sides of a run as the simulation loop drives them.
struct SimEndpoints<'c, W: Write> {
    cfg: &'c SimConfig,
    sides: [Side; 2],
    /// Each link's mm-link log, if asked for.
    writers: Option<[MmLogWriter<W>; 2]>,
    /// The first error writing a log.
    log_error: Option<std::io::Error>,
    /// Scratch: the packets delivered in one iteration.
    delivered: Vec<(usize, sprout_link::Delivery<()>, WirePacket)>,
    /// Datagram buffers that have crossed the link, for the next datagrams.
    spare: Vec<Vec<u8>>,
}

impl<W: Write> Endpoints for SimEndpoints<'_, W> {
    fn deliver(&mut self, now: Instant) -> Result<(), SimError> {
        deliver(
            &mut self.sides,
            now,
            self.writers.as_mut(),
            &mut self.log_error,
            &mut self.delivered,
            &mut self.spare,
        )
    }

    /// The mobile (side 1) opens a TCP connection, the server listens.
    fn act(&mut self, now: Instant) -> Result<(), SimError> {
        for (i, side) in self.sides.iter_mut().enumerate() {
            side.act(self.cfg, i == 1, now, &mut self.spare)?;
        }
        Ok(())
    }

    fn next_event(&self) -> Instant {
        self.sides
            .iter()
            .map(Side::next_event)
            .fold(Instant::MAX, Instant::min)
    }
}

/// Runs the simulation. `logs`, if given, receive each link's mm-link log.
pub fn run(
    uplink: Arc<Trace>,
    downlink: Arc<Trace>,
    cfg: &SimConfig,
    logs: Option<Logs<'_>>,
) -> Result<SimOutput, SimError> {
    run_with_progress(uplink, downlink, cfg, logs, &mut |_, _| {})
}

/// [`run`], calling `progress(simulated_us, duration_us)` each time the simulated clock
/// passes a whole second (for a progress bar), after checking that the run is one worth
/// making ([`SimConfig::checked_duration_us`]).
pub fn run_with_progress(
    uplink: Arc<Trace>,
    downlink: Arc<Trace>,
    cfg: &SimConfig,
    logs: Option<Logs<'_>>,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<SimOutput, SimError> {
    let duration = cfg.checked_duration_us(&uplink, &downlink)?;
    cfg.check_app_run(Duration::from_micros(duration))?;
    let (down_link, up_link) = (cfg.link_for(Direction::Down), cfg.link_for(Direction::Up));
    let starts = start_times(cfg.seed);
    // The server sends on the downlink, the mobile on the uplink.
    let sides = [
        Side::new(
            cfg,
            0,
            starts[0],
            cfg.load.carries(Direction::Down),
            Link::new(downlink.clone(), down_link.clone()),
        ),
        Side::new(
            cfg,
            1,
            starts[1],
            cfg.load.carries(Direction::Up),
            Link::new(uplink.clone(), up_link.clone()),
        ),
    ];
    let writers = match logs {
        Some(l) => Some([
            MmLogWriter::new(l.downlink, "downlink", downlink.name(), &down_link)?,
            MmLogWriter::new(l.uplink, "uplink", uplink.name(), &up_link)?,
        ]),
        None => None,
    };

    let mut endpoints = SimEndpoints {
        cfg,
        sides,
        writers,
        log_error: None,
        delivered: Vec::new(),
        spare: Vec::new(),
    };
    let end = Instant::from_micros(duration);
    Simulation::new(Instant::ZERO).run_until(&mut endpoints, end, &mut |now| {
        progress(now.as_micros(), duration)
    })?;
    let SimEndpoints {
        sides,
        writers,
        log_error,
        ..
    } = endpoints;
    if let Some(ws) = writers {
        for w in ws {
            w.finish()?;
        }
    }
    if let Some(e) = log_error {
        return Err(e.into());
    }

    let [down_side, up_side] = sides;
    Ok(SimOutput {
        downlink: down_side.finish(downlink, cfg, duration),
        uplink: up_side.finish(uplink, cfg, duration),
        duration: Duration::from_micros(duration),
    })
}

/// A run's length when none is given: the shorter trace's, so that no direction is scored
/// over a replay of the other direction's trace (AT&T's uplink, 1012 s, would otherwise be
/// measured against 226 s of looped downlink feedback, through its 78 s gap at 787 s).
pub fn default_duration_us(uplink: &Trace, downlink: &Trace) -> u64 {
    uplink.duration().min(downlink.duration()).as_micros()
}

/// The paper's metrics of one direction of a run that lasted `duration`: over the
/// direction's own trace once (its end, if the trace loops and is shorter), from `cfg.skip` on.
/// Returns the measured window, every opportunity time up to the end of the run, and the
/// metrics. With no arrivals it still gives the capacity and the omniscient sender's delay.
pub fn measure(
    trace: &Arc<Trace>,
    arrivals: &[Arrival],
    cfg: &SimConfig,
    duration: Duration,
) -> (Window, Vec<u64>, DirectionMetrics) {
    let end = if cfg.link.looping {
        duration.min(trace.duration().max(Duration::from_micros(1)))
    } else {
        duration
    };
    let window = Window::new(Instant::ZERO + cfg.skip.min(end), Instant::ZERO + end);
    let opportunities_us = opportunities_until(trace, Instant::ZERO + duration, cfg.link.looping);
    let key = OmniscientKey {
        trace: Arc::downgrade(trace),
        duration,
        looping: cfg.link.looping,
        propagation_delay: cfg.link.propagation_delay_us,
        window,
    };
    let omniscient = key.p95_ms(&opportunities_us);
    let m = metrics::compute_given_omniscient(
        arrivals,
        &opportunities_us,
        cfg.link.opportunity_bytes,
        window,
        metrics::DEFAULT_STEP,
        omniscient,
    );
    (window, opportunities_us, m)
}

/// What the omniscient sender's figure of a direction depends on: the trace and how it is
/// replayed and measured. Every scheme's run over one link has the same, so [`measure`]
/// computes it once per process for each ([`OmniscientKey::p95_ms`]).
struct OmniscientKey {
    /// Held weakly: an entry keeps none of the trace's memory, and while it exists no later
    /// trace can take the same address.
    trace: std::sync::Weak<Trace>,
    duration: Duration,
    looping: bool,
    propagation_delay: Duration,
    window: Window,
}

/// How many omniscient figures [`OmniscientKey::p95_ms`] keeps (the oldest goes first).
const OMNISCIENT_CACHE: usize = 64;

impl OmniscientKey {
    fn same(&self, other: &OmniscientKey) -> bool {
        std::sync::Weak::ptr_eq(&self.trace, &other.trace)
            && (
                self.duration,
                self.looping,
                self.propagation_delay,
                self.window,
            ) == (
                other.duration,
                other.looping,
                other.propagation_delay,
                other.window,
            )
    }

    /// [`metrics::omniscient_p95_ms`] of `opportunities_us` (the trace's, as this key
    /// replays it) at [`metrics::DEFAULT_STEP`], from the cache when it has it.
    fn p95_ms(self, opportunities_us: &[u64]) -> f64 {
        type Cache = std::sync::Mutex<VecDeque<(OmniscientKey, f64)>>;
        static CACHE: std::sync::OnceLock<Cache> = std::sync::OnceLock::new();
        let cache = CACHE.get_or_init(Default::default);
        let lock = || cache.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, v)) = lock().iter().find(|(k, _)| k.same(&self)) {
            return *v;
        }
        let v = metrics::omniscient_p95_ms(
            opportunities_us,
            self.propagation_delay,
            self.window,
            metrics::DEFAULT_STEP,
        );
        let mut entries = lock();
        entries.retain(|(k, _)| k.trace.strong_count() > 0);
        if !entries.iter().any(|(k, _)| k.same(&self)) {
            if entries.len() >= OMNISCIENT_CACHE {
                entries.pop_front();
            }
            entries.push_back((self, v));
        }
        v
    }
}

/// Every opportunity time of a trace up to `end`, in microseconds, looping or not, exactly
/// as the link replays them.
pub fn opportunities_until(trace: &Arc<Trace>, end: Instant, looping: bool) -> Vec<u64> {
    trace
        .cursor(looping)
        .take_while(|&t| t <= end)
        .map(Instant::as_micros)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 20 s trace with an opportunity every `every` (whole milliseconds).
    fn trace(every: Duration) -> Arc<Trace> {
        let every_ms = every.as_millis();
        let opps = (1..=20_000 / every_ms).map(|k| k * every_ms).collect();
        Arc::new(Trace::from_opportunities_ms(format!("every-{every_ms}"), opps).unwrap())
    }

    /// [`measure`]'s metrics, and the same computed afresh (without its cache) over the
    /// window and opportunities it reports.
    fn both(trace: &Arc<Trace>, arrivals: &[Arrival], cfg: &SimConfig) -> (String, String) {
        let (window, opps, m) = measure(trace, arrivals, cfg, Duration::from_secs(20));
        let fresh = metrics::compute(
            arrivals,
            &opps,
            cfg.link.opportunity_bytes,
            cfg.link.propagation_delay_us,
            window,
            metrics::DEFAULT_STEP,
        );
        (format!("{m:?}"), format!("{fresh:?}"))
    }

    #[test]
    fn measure_keeps_each_traces_own_omniscient_figure() {
        let cfg = SimConfig {
            skip: Duration::from_secs(1),
            ..SimConfig::default()
        };
        let arrivals: Vec<Arrival> = (1..2_000)
            .map(|k| Arrival {
                sent: Instant::from_micros(k * 9_000),
                arrived: Instant::from_micros(k * 9_000 + 30_000 + (k % 7) * 11_000),
                bytes: 1500,
                app_bytes: 1400,
                is_data: k % 5 != 0,
            })
            .collect();
        let (sparse, dense) = (
            trace(Duration::from_millis(40)),
            trace(Duration::from_millis(3)),
        );
        let mut figures = Vec::new();
        // Alternately, and again once cached, and a trace that is a copy of one measured.
        for t in [
            &sparse,
            &dense,
            &sparse,
            &dense,
            &trace(Duration::from_millis(40)),
        ] {
            let (cached, fresh) = both(t, &arrivals, &cfg);
            assert_eq!(cached, fresh);
            let (_, _, m) = measure(t, &arrivals, &cfg, Duration::from_secs(20));
            figures.push(m.omniscient_p95_ms);
        }
        assert!(figures[0] > figures[1], "{figures:?}");
        // A different propagation delay is a different figure, not the cached one.
        let mut slow = cfg.clone();
        slow.link.propagation_delay_us = sprout_core::time::Duration::from_millis(50);
        let (cached, fresh) = both(&sparse, &arrivals, &slow);
        assert_eq!(cached, fresh);
        let (_, _, m) = measure(&sparse, &arrivals, &slow, Duration::from_secs(20));
        assert!(m.omniscient_p95_ms > figures[0]);
    }
}
