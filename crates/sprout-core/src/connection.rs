//! A Sprout connection endpoint, sans-IO: each endpoint is both a sender and a receiver, and
//! piggybacks its forecast for the incoming direction on its outgoing datagrams.
//!
//! The driver (a simulator or a socket loop) feeds it datagrams and the time, asks it for
//! datagrams to send, and sleeps until [`Connection::poll_timeout`]:
//!
//! ```
//! use sprout_core::{Config, Connection, Instant};
//! let mut a = Connection::new(Config::default(), Instant::ZERO).unwrap();
//! let mut b = Connection::new(Config::default(), Instant::ZERO).unwrap();
//! a.send(b"hello".to_vec());
//! let mut buf = Vec::new();
//! // Until the peer's first forecast, the sender works from the prior's forecast.
//! let t = a.poll_transmit(Instant::ZERO, &mut buf).unwrap();
//! assert_eq!(t.app_bytes, 5);
//! b.handle_datagram(Instant::from_millis(20), &buf).unwrap();
//! assert_eq!(b.recv().unwrap(), b"hello");
//! assert!(a.poll_timeout().is_some());
//! ```
//!
//! # What the peer can have sent: the checks on every datagram
//!
//! A datagram that decodes is still checked against what a conforming peer can actually send
//! before it changes anything; one that breaks a rule is dropped, counted by [`Reject`] reason
//! in [`ConnectionStats::rejected`], and returned as [`DatagramError::Rejected`], and the
//! connection is exactly as if it never arrived (no tick runs, no other counter moves). Both
//! ends are assumed to run the same [`Config`] (the runtime sends the scheme in its greeting
//! and both build the configuration from it): the bounds on the peer are computed from ours.
//! Each bound keeps generous slack, since dropping a genuine datagram is a bug.
//!
//! - **Forecast length and counts** ([`Reject::ForecastLength`], [`Reject::ForecastCount`]):
//!   the peer's receiver forecasts `model.forecast_ticks` ticks, and its count at horizon `h`
//!   is at most what the shared model can forecast over `h` ticks
//!   ([`crate::Estimator::max_forecast`]: the forecast tables' largest count plus the 2 the
//!   cautious forecast may add for Sprout, the clamped rate for Sprout-EWMA).
//! - **Forecast id** ([`Reject::ForecastIdAhead`]): the peer's receiver makes at most one new
//!   forecast id per tick, so an id may be ahead of the forecast in use by at most the ticks
//!   elapsed since that one arrived, plus one, plus [`DELAY_SLACK`] worth of ticks for the
//!   difference between the two datagrams' delays (wrap-around handled; older ids are ignored
//!   as before). Without this, one id 2^31 - 1 ahead made every genuine forecast look stale.
//! - **Received-or-lost** ([`Reject::ReceivedOrLostAhead`]): the peer can not have received
//!   more of our link bytes than we sent; slack of one largest datagram (the runtime's greeting
//!   shares sequence number 0 with the first datagram).
//! - **Sequence and throwaway numbers** ([`Reject::ThrowawayAhead`], [`Reject::SeqAhead`]):
//!   the end of the datagram (`seq` + its link bytes) and the throwaway number (never above
//!   `seq`) may be at most [`Connection::seq_bound`] ahead of what we have accounted
//!   ([`crate::receiver::Receiver::accounted`]: received-or-lost, or the end of the highest
//!   datagram seen). Derivation: the peer sends data only within its window. Each forecast it
//!   takes from us resets its queue estimate to its bytes sent minus the received-or-lost we
//!   reported (at most ours now), the window is at most the forecast's largest count, and
//!   until the next forecast the estimate drains by at most the sum of the forecast's
//!   (capped) cumulative counts. So the peer's bytes sent minus our received-or-lost are at
//!   most `(max_forecast(H) + sum_h max_forecast(h)) * mtu` (about 1.9 MB at the defaults)
//!   plus what it sends outside the window: heartbeats, at most one per heartbeat interval and
//!   one per tick (feedback), each at most a largest header, over the time since our last
//!   accepted datagram plus [`DELAY_SLACK`]. The bound is twice the window term, plus
//!   [`SEQ_SLACK_BYTES`], plus the heartbeat term. Without it a number near `u64::MAX`
//!   overflowed and a throwaway far ahead wrote off every later datagram as lost.
//! - **Time-to-next** ([`Reject::TimeToNext`]): a conforming sender announces 0 or its
//!   heartbeat interval, at most [`crate::params::MAX_HEARTBEAT_INTERVAL_US`]; more would hide
//!   an outage from the receiver's model.
//!
//! Within these bounds a peer holding the session's keys can still mislead the model, but no
//! more than it can by forecasting and sending as it likes; nothing it sends can overflow,
//! grow state without bound, or stall the connection for longer than the slack.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::params::{Config, ConfigError, MAX_HEARTBEAT_INTERVAL_US};
use crate::receiver::{Receiver, ReceiverStats};
use crate::sender::Sender;
use crate::time::{Duration, Instant};
use crate::wire::{self, Header, WireError, MAX_FORECAST_TICKS};

/// Slack for the variation of the one-way delay between two of the peer's datagrams (30 s):
/// used for the forecast-id and heartbeat bounds.
pub const DELAY_SLACK: Duration = Duration::from_secs(30);

/// Slack of the sequence-number bound, in link bytes (1 MiB).
pub const SEQ_SLACK_BYTES: u64 = 1 << 20;

/// A peer that has sent no application data for this long (1 s) is idle: an application
/// stream's data datagrams carry it a forecast only once per heartbeat interval, without the
/// expected counts (see `Connection::feedback_rides_data`).
pub const PEER_IDLE_AFTER: Duration = Duration::from_micros(1_000_000);

/// An application stream whose data waits, and whose peer, still heard, has reported nothing
/// more received or lost for this long (250 ms: beyond a round trip plus a heartbeat interval
/// on the links measured here), is in a stall of its own direction: while its last heartbeat
/// is unreported it sends the next only [`QUIET_HEARTBEAT_INTERVAL`] after it, or once the
/// peer falls silent (see `Connection::quiet_until`).
pub const HEARTBEAT_QUIET_AFTER: Duration = Duration::from_micros(250_000);

/// The heartbeat interval of a waiting sender in a stall (1 s).
pub const QUIET_HEARTBEAT_INTERVAL: Duration = Duration::from_micros(1_000_000);

/// Why a datagram that decoded was dropped: a value no conforming peer can send.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Reject {
    /// A forecast longer than the model forecasts.
    ForecastLength,
    /// A forecast count above what the model can forecast over that many ticks.
    ForecastCount,
    /// A forecast id further ahead of the current one than the peer can have made.
    ForecastIdAhead,
    /// A received-or-lost count above the link bytes we have sent.
    ReceivedOrLostAhead,
    /// A throwaway number further ahead than the peer can have sent.
    ThrowawayAhead,
    /// A sequence number (plus the datagram) further ahead than the peer can have sent.
    SeqAhead,
    /// A time-to-next above the protocol's maximum.
    TimeToNext,
}

impl Reject {
    /// Every reason, in a fixed order.
    pub const ALL: [Reject; 7] = [
        Reject::ForecastLength,
        Reject::ForecastCount,
        Reject::ForecastIdAhead,
        Reject::ReceivedOrLostAhead,
        Reject::ThrowawayAhead,
        Reject::SeqAhead,
        Reject::TimeToNext,
    ];

    /// A short name for statistics and logs (snake case).
    pub fn name(self) -> &'static str {
        match self {
            Reject::ForecastLength => "forecast_length",
            Reject::ForecastCount => "forecast_count",
            Reject::ForecastIdAhead => "forecast_id_ahead",
            Reject::ReceivedOrLostAhead => "received_or_lost_ahead",
            Reject::ThrowawayAhead => "throwaway_ahead",
            Reject::SeqAhead => "seq_ahead",
            Reject::TimeToNext => "time_to_next",
        }
    }

    fn describe(self) -> &'static str {
        match self {
            Reject::ForecastLength => "forecast longer than the model forecasts",
            Reject::ForecastCount => "forecast count beyond what the model can forecast",
            Reject::ForecastIdAhead => "forecast id too far ahead of the current one",
            Reject::ReceivedOrLostAhead => "received-or-lost count beyond the bytes sent",
            Reject::ThrowawayAhead => "throwaway number beyond what the peer can have sent",
            Reject::SeqAhead => "sequence number beyond what the peer can have sent",
            Reject::TimeToNext => "time-to-next above the protocol maximum",
        }
    }
}

impl std::fmt::Display for Reject {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.describe(), self.name())
    }
}

/// Datagrams dropped because a value was impossible for the peer, by reason.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rejections {
    /// [`Reject::ForecastLength`].
    pub forecast_length: u64,
    /// [`Reject::ForecastCount`].
    pub forecast_count: u64,
    /// [`Reject::ForecastIdAhead`].
    pub forecast_id_ahead: u64,
    /// [`Reject::ReceivedOrLostAhead`].
    pub received_or_lost_ahead: u64,
    /// [`Reject::ThrowawayAhead`].
    pub throwaway_ahead: u64,
    /// [`Reject::SeqAhead`].
    pub seq_ahead: u64,
    /// [`Reject::TimeToNext`].
    pub time_to_next: u64,
}

impl Rejections {
    fn slot(&mut self, r: Reject) -> &mut u64 {
        match r {
            Reject::ForecastLength => &mut self.forecast_length,
            Reject::ForecastCount => &mut self.forecast_count,
            Reject::ForecastIdAhead => &mut self.forecast_id_ahead,
            Reject::ReceivedOrLostAhead => &mut self.received_or_lost_ahead,
            Reject::ThrowawayAhead => &mut self.throwaway_ahead,
            Reject::SeqAhead => &mut self.seq_ahead,
            Reject::TimeToNext => &mut self.time_to_next,
        }
    }

    /// Datagrams dropped for reason `r`.
    pub fn get(&self, r: Reject) -> u64 {
        match r {
            Reject::ForecastLength => self.forecast_length,
            Reject::ForecastCount => self.forecast_count,
            Reject::ForecastIdAhead => self.forecast_id_ahead,
            Reject::ReceivedOrLostAhead => self.received_or_lost_ahead,
            Reject::ThrowawayAhead => self.throwaway_ahead,
            Reject::SeqAhead => self.seq_ahead,
            Reject::TimeToNext => self.time_to_next,
        }
    }

    /// Datagrams dropped for any reason.
    pub fn total(&self) -> u64 {
        Reject::ALL.iter().map(|&r| self.get(r)).sum()
    }

    fn count(&mut self, r: Reject) {
        let slot = self.slot(r);
        *slot = slot.saturating_add(1);
    }
}

/// Why [`Connection::handle_datagram`] dropped a datagram.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum DatagramError {
    /// It did not parse (counted in [`ConnectionStats::malformed`]).
    #[error(transparent)]
    Wire(#[from] WireError),
    /// It parsed but holds a value the peer can not have sent (counted in
    /// [`ConnectionStats::rejected`]).
    #[error("datagram rejected: {0}")]
    Rejected(Reject),
}

/// What [`Connection::poll_transmit`] put in the buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Transmit {
    /// Datagram length, in bytes.
    pub len: usize,
    /// Application payload bytes it carries.
    pub app_bytes: usize,
    /// A heartbeat (no application data).
    pub heartbeat: bool,
}

/// Counters and live figures of an endpoint.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ConnectionStats {
    /// Datagrams sent (data and heartbeats).
    pub datagrams_sent: u64,
    /// Heartbeats sent.
    pub heartbeats_sent: u64,
    /// Link bytes sent (datagrams plus link overhead).
    pub link_bytes_sent: u64,
    /// Application bytes sent.
    pub app_bytes_sent: u64,
    /// Application bytes received.
    pub app_bytes_received: u64,
    /// Datagrams that failed to parse (dropped, never fatal).
    pub malformed: u64,
    /// Datagrams that parsed but held values the peer can not have sent, by reason (dropped,
    /// never fatal; the connection is as if they never arrived).
    pub rejected: Rejections,
    /// Received application datagrams dropped unread because the incoming queue reached
    /// [`Config::max_incoming_bytes`] (the application did not call `recv` fast enough): the
    /// oldest go first.
    pub incoming_dropped: u64,
    /// Application bytes of those datagrams.
    pub incoming_dropped_bytes: u64,
    /// The receiver's counters.
    pub receiver: ReceiverStats,
}

/// What a datagram carries after its header.
enum Payload {
    /// This many zero bytes (a bulk sender's filler; 0 for a heartbeat).
    Filler(usize),
    /// An application datagram.
    Bytes(Vec<u8>),
}

/// The bounds a datagram from the peer is checked against (module docs), computed once.
#[derive(Clone, Debug)]
struct Limits {
    /// Ticks the peer's forecasts hold.
    forecast_ticks: usize,
    /// Largest count at horizon `h` is `max_counts[h - 1]`.
    max_counts: [u32; MAX_FORECAST_TICKS],
    /// Forecast ids a forecast may be ahead beyond the ticks elapsed.
    forecast_id_slack_ticks: u64,
    /// Received-or-lost may exceed our bytes sent by this much (link bytes).
    received_or_lost_slack: u64,
    /// The window term plus slack of the sequence bound (link bytes).
    seq_base: u64,
    /// Link bytes of the largest heartbeat.
    heartbeat_link_bytes: u64,
    /// Shortest gap between two of the peer's datagrams sent outside its window.
    heartbeat_gap: Duration,
}

impl Limits {
    fn new(config: &Config, receiver: &Receiver) -> Limits {
        let h_max = config.model.forecast_ticks.min(MAX_FORECAST_TICKS);
        let mut max_counts = [0u32; MAX_FORECAST_TICKS];
        for (h, slot) in (1..).zip(max_counts.iter_mut().take(h_max)) {
            *slot = receiver.max_forecast(h);
        }
        let mtu = config.model.mtu_bytes as u64;
        let window = max_counts[h_max - 1] as u64;
        let drain: u64 = max_counts[..h_max].iter().map(|&c| c as u64).sum();
        let overhead = config.link_overhead_bytes as u64;
        let tick = config.model.tick_us.max(Duration::from_micros(1));
        Limits {
            forecast_ticks: h_max,
            max_counts,
            forecast_id_slack_ticks: DELAY_SLACK / tick + 1,
            received_or_lost_slack: config.max_datagram_bytes as u64 + overhead,
            seq_base: window
                .saturating_add(drain)
                .saturating_mul(mtu)
                .saturating_add(config.max_datagram_bytes as u64 + overhead)
                .saturating_mul(2)
                .saturating_add(SEQ_SLACK_BYTES),
            heartbeat_link_bytes: wire::MAX_HEADER_BYTES as u64 + overhead,
            heartbeat_gap: config
                .heartbeat_interval_us
                .min(tick)
                .max(Duration::from_micros(1)),
        }
    }
}

/// One endpoint of a Sprout connection.
#[derive(Clone, Debug)]
pub struct Connection {
    config: Config,
    sender: Sender,
    receiver: Receiver,
    outgoing: VecDeque<Vec<u8>>,
    outgoing_bytes: usize,
    bulk: bool,
    incoming: VecDeque<Vec<u8>>,
    incoming_bytes: usize,
    keep_incoming: bool,
    created: Instant,
    last_feedback_sent: Option<u32>,
    /// When a forecast last went out.
    last_feedback_at: Option<Instant>,
    /// When the peer's application data last arrived.
    peer_data_at: Option<Instant>,
    /// When the last heartbeat went, and the end of it in our byte stream (link bytes).
    last_heartbeat: Option<(Instant, u64)>,
    /// When the last datagram that passed the checks arrived.
    last_accepted: Option<Instant>,
    limits: Limits,
    stats: ConnectionStats,
}

impl Connection {
    /// A new endpoint created at `now`. Fails on an invalid configuration.
    pub fn new(config: Config, now: Instant) -> Result<Self, ConfigError> {
        config.validate()?;
        let mut sender = Sender::new(&config);
        // Until the peer's first forecast arrives, work from what the prior alone forecasts
        // (the authors' "something reasonable"): a few packets, enough to start observing.
        let mut prior = vec![0u32; config.model.forecast_ticks.min(wire::MAX_FORECAST_TICKS)];
        crate::estimator::build(&config).forecast(&mut prior);
        sender.on_feedback(now, &wire::Feedback::new(0, 0, &prior));
        let receiver = Receiver::new(&config);
        let limits = Limits::new(&config, &receiver);
        Ok(Connection {
            sender,
            receiver,
            config,
            outgoing: VecDeque::new(),
            outgoing_bytes: 0,
            bulk: false,
            incoming: VecDeque::new(),
            incoming_bytes: 0,
            keep_incoming: true,
            created: now,
            last_feedback_sent: None,
            last_feedback_at: None,
            peer_data_at: None,
            last_heartbeat: None,
            last_accepted: None,
            limits,
            stats: ConnectionStats::default(),
        })
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Queues an application datagram; it leaves when the window allows. Datagrams longer than
    /// [`Connection::max_payload`] are cut to that length.
    pub fn send(&mut self, mut datagram: Vec<u8>) {
        datagram.truncate(self.max_payload());
        self.outgoing_bytes += datagram.len();
        self.outgoing.push_back(datagram);
    }

    /// Bulk mode: the application always has more to send (the paper's saturating sender);
    /// each datagram is filled as far as the window and the datagram size allow. Datagrams
    /// queued with [`Connection::send`] still go first, each as it is; filler fills the
    /// window only while none is queued (a tunnel uses this to keep probing the link).
    pub fn set_bulk(&mut self, bulk: bool) {
        self.bulk = bulk;
    }

    /// Whether received payloads are kept for [`Connection::recv`] (default) or only counted.
    pub fn set_keep_incoming(&mut self, keep: bool) {
        self.keep_incoming = keep;
    }

    /// Largest application payload per datagram, in bytes.
    pub fn max_payload(&self) -> usize {
        self.config.max_datagram_bytes - wire::header_bytes(self.config.model.forecast_ticks)
    }

    /// Application bytes waiting to be sent.
    pub fn queued_bytes(&self) -> usize {
        self.outgoing_bytes
    }

    /// The next received application datagram, if any.
    pub fn recv(&mut self) -> Option<Vec<u8>> {
        let d = self.incoming.pop_front()?;
        self.incoming_bytes -= d.len();
        Some(d)
    }

    /// Application bytes received and waiting for [`Connection::recv`].
    pub fn incoming_bytes(&self) -> usize {
        self.incoming_bytes
    }

    /// Takes in a datagram that arrived at `now`. A malformed datagram, or one holding a
    /// value the peer can not have sent (see the module docs), is counted and returned as an
    /// error; the connection is otherwise exactly as if it never arrived.
    pub fn handle_datagram(&mut self, now: Instant, datagram: &[u8]) -> Result<(), DatagramError> {
        let d = match wire::decode(datagram) {
            Ok(d) => d,
            Err(e) => {
                self.stats.malformed = self.stats.malformed.saturating_add(1);
                return Err(e.into());
            }
        };
        let link_bytes = (datagram.len() as u64).saturating_add(self.overhead());
        // Everything is checked before anything changes.
        if let Err(r) = self.check(now, &d.header, link_bytes) {
            self.stats.rejected.count(r);
            return Err(DatagramError::Rejected(r));
        }
        self.last_accepted = Some(self.last_accepted.map_or(now, |t| t.max(now)));
        self.receiver.on_datagram(now, &d.header, link_bytes);
        if let Some(fb) = &d.header.feedback {
            self.sender.on_feedback(now, fb);
        }
        if !d.header.heartbeat && !d.payload.is_empty() {
            self.peer_data_at = Some(now);
            let n = d.payload.len();
            self.stats.app_bytes_received = self.stats.app_bytes_received.saturating_add(n as u64);
            if self.keep_incoming {
                self.enqueue_incoming(d.payload);
            }
        }
        Ok(())
    }

    /// Queues a received payload for [`Connection::recv`] within
    /// [`Config::max_incoming_bytes`]: when the queue is full the oldest payloads go first
    /// (drop-head), so that what a reader that fell behind finds is the freshest data and the
    /// peer's last messages (its goodbye among them); a payload larger than the whole bound is
    /// dropped itself. Every payload dropped is counted.
    fn enqueue_incoming(&mut self, payload: &[u8]) {
        let n = payload.len();
        let max = self.config.max_incoming_bytes;
        if n > max {
            self.count_incoming_dropped(n);
            return;
        }
        while self.incoming_bytes.saturating_add(n) > max {
            let Some(old) = self.incoming.pop_front() else {
                break;
            };
            self.incoming_bytes -= old.len();
            self.count_incoming_dropped(old.len());
        }
        self.incoming_bytes += n;
        self.incoming.push_back(payload.to_vec());
    }

    /// Counts one received payload of `n` bytes dropped unread.
    fn count_incoming_dropped(&mut self, n: usize) {
        self.stats.incoming_dropped = self.stats.incoming_dropped.saturating_add(1);
        self.stats.incoming_dropped_bytes =
            self.stats.incoming_dropped_bytes.saturating_add(n as u64);
    }

    /// How far ahead of what the receiver has accounted the end of a datagram arriving at
    /// `now` may be, in link bytes (module docs): the window term, twice, plus
    /// [`SEQ_SLACK_BYTES`], plus the heartbeats the peer can have sent since our last accepted
    /// datagram (or our creation) and [`DELAY_SLACK`].
    pub fn seq_bound(&self, now: Instant) -> u64 {
        let l = &self.limits;
        let since = self.last_accepted.unwrap_or(self.created);
        let span = (now - since) + DELAY_SLACK;
        let heartbeats = (span / l.heartbeat_gap).saturating_add(2);
        l.seq_base
            .saturating_add(heartbeats.saturating_mul(l.heartbeat_link_bytes))
    }

    /// Checks a decoded header against what the peer can have sent (module docs); changes
    /// nothing.
    fn check(&self, now: Instant, h: &Header, link_bytes: u64) -> Result<(), Reject> {
        let l = &self.limits;
        if h.time_to_next_us as u64 > MAX_HEARTBEAT_INTERVAL_US {
            return Err(Reject::TimeToNext);
        }
        if let Some(fb) = &h.feedback {
            let counts = fb.forecast();
            if counts.len() > l.forecast_ticks {
                return Err(Reject::ForecastLength);
            }
            let beyond = |series: &[u32]| series.iter().zip(&l.max_counts).any(|(c, m)| c > m);
            if beyond(counts) || fb.expected().is_some_and(beyond) {
                return Err(Reject::ForecastCount);
            }
            let ahead = self.sender.forecast_id_ahead(fb.forecast_id) as u64;
            if ahead > 0 {
                let arrived = self.sender.forecast_arrived().unwrap_or(self.created);
                let elapsed_ticks = (now - arrived) / self.config.model.tick_us;
                let allowed = elapsed_ticks
                    .saturating_add(1)
                    .saturating_add(l.forecast_id_slack_ticks);
                if ahead > allowed {
                    return Err(Reject::ForecastIdAhead);
                }
            }
            let sent = self.sender.bytes_sent();
            if fb.received_or_lost > sent.saturating_add(l.received_or_lost_slack) {
                return Err(Reject::ReceivedOrLostAhead);
            }
        }
        let limit = self
            .receiver
            .accounted()
            .saturating_add(self.seq_bound(now));
        if h.throwaway > limit {
            return Err(Reject::ThrowawayAhead);
        }
        match h.seq.checked_add(link_bytes) {
            Some(end) if end <= limit => Ok(()),
            _ => Err(Reject::SeqAhead),
        }
    }

    /// Runs the timers due by `now` (the receiver's ticks).
    pub fn handle_timeout(&mut self, now: Instant) {
        self.receiver.on_timeout(now);
    }

    /// The next time the connection needs [`Connection::handle_timeout`] or may have something
    /// to send.
    pub fn poll_timeout(&mut self) -> Option<Instant> {
        self.note_backlog();
        let mut next = self.heartbeat_due();
        if let Some(t) = self.receiver.next_tick() {
            next = next.min(t);
        }
        if self.has_data() {
            let last = self.sender.last_send().unwrap_or(self.created);
            if let Some(t) = self
                .sender
                .next_window_open(last, self.min_data_link_bytes(last))
            {
                next = next.min(t);
            }
        }
        Some(next)
    }

    fn heartbeat_due(&self) -> Instant {
        let due = match self.sender.last_send() {
            Some(t) => t + self.config.heartbeat_interval_us,
            None => self.created,
        };
        self.quiet_until(due).unwrap_or(due)
    }

    /// When the heartbeat due at `due` may go instead, if a stall holds it back: an
    /// application stream whose data waits, whose last heartbeat the peer has not reported,
    /// and whose peer, heard within two heartbeat intervals, has reported nothing for
    /// [`HEARTBEAT_QUIET_AFTER`] by `due`. Its datagrams are then sitting in the link's
    /// queue, and more heartbeats would only join them: they reach the receiver together
    /// with the data ahead of them when the link returns and say no more than the last one
    /// (the pause, and the forecast for an idle peer), while their bytes delay the data
    /// behind them (on Verizon-EVDO down at 250 kbit/s, 4% of what the stream put on the
    /// link, nearly all of it waiting over 100 ms). One goes every
    /// [`QUIET_HEARTBEAT_INTERVAL`]; a peer that falls silent (our reverse path may be the
    /// one that is out, and the heartbeats may get through) gets them every interval again.
    fn quiet_until(&self, due: Instant) -> Option<Instant> {
        if self.bulk || self.outgoing.is_empty() {
            return None;
        }
        let (sent_at, end) = self.last_heartbeat?;
        let (reported, progress) = self.sender.progress();
        let heard = self.last_accepted?;
        let stalled_from = progress.unwrap_or(self.created) + HEARTBEAT_QUIET_AFTER;
        let hb = self.config.heartbeat_interval_us;
        let quiet_end = (sent_at + QUIET_HEARTBEAT_INTERVAL).min(heard + hb + hb);
        (reported < end && due > stalled_from && due < quiet_end).then_some(quiet_end)
    }

    fn has_data(&self) -> bool {
        self.bulk || !self.outgoing.is_empty()
    }

    fn overhead(&self) -> u64 {
        self.config.link_overhead_bytes as u64
    }

    /// Link bytes of the smallest data datagram the application could send next (its header
    /// carries a forecast only if one is waiting to go out).
    fn min_data_link_bytes(&self, now: Instant) -> u64 {
        let header = if self.receiver.has_unsent_feedback(self.last_feedback_sent)
            && self.feedback_rides_data(now)
        {
            wire::header_bytes(self.config.model.forecast_ticks)
        } else {
            wire::FIXED_HEADER_BYTES
        } as u64;
        // Queued datagrams go first, also in bulk mode.
        let payload = self.outgoing.front().map_or(1, |d| d.len() as u64);
        header + payload + self.overhead()
    }

    /// Writes the next datagram to send at `now` into `buf` (cleared first), or returns
    /// `None` if nothing should be sent now. Call repeatedly until `None`.
    pub fn poll_transmit(&mut self, now: Instant, buf: &mut Vec<u8>) -> Option<Transmit> {
        self.receiver.on_timeout(now);
        self.note_backlog();
        // A forecast goes out once: on the first datagram after it was made (and on every
        // heartbeat, which costs nothing extra in datagrams); on an application stream's
        // data to an idle peer, at most once per heartbeat interval (`feedback_rides_data`).
        let feedback = self
            .receiver
            .feedback()
            .filter(|f| Some(f.forecast_id) != self.last_feedback_sent)
            .map(|f| self.trim_feedback(now, f));
        let data_feedback = feedback.filter(|_| self.feedback_rides_data(now));
        let mut header = Header {
            seq: 0,
            throwaway: 0,
            time_to_next_us: 0,
            sent_us: now.as_micros(),
            heartbeat: false,
            app_limited: false,
            feedback: data_feedback,
        };
        let header_len = header.encoded_len() as u64;
        let overhead = self.overhead();

        if self.has_data() {
            let window = self.sender.window_bytes(now);
            let room = window.saturating_sub(header_len + overhead);
            // A queued datagram goes first (waiting for the window if it does not fit yet);
            // bulk filler only when nothing is queued.
            let filler = self.outgoing.is_empty();
            let payload_len = if filler {
                Some(room.min(self.config.max_datagram_bytes as u64 - header_len))
                    .filter(|&n| n > 0)
            } else {
                // An application's datagram can not be cut to the window as filler is: it
                // goes once the window has room for its header, overshooting by less than one
                // datagram (as TCP sends a whole segment into a partly open window). Held
                // until the whole of it fits, a stream of 1,200-byte datagrams stalled
                // whenever the window stayed below that. Bulk keeps the paper's rule.
                self.outgoing.front().map(|d| d.len() as u64).filter(|&n| {
                    header_len + n + overhead <= window
                        || (!self.bulk && window > header_len + overhead)
                })
            };
            if let Some(payload_len) = payload_len {
                let payload = if filler {
                    Payload::Filler(payload_len as usize)
                } else {
                    let d = self.outgoing.pop_front().unwrap_or_default();
                    self.outgoing_bytes -= d.len();
                    Payload::Bytes(d)
                };
                return Some(self.emit(now, header, payload, buf));
            }
        }

        let feedback_due = match (self.config.feedback_interval_us, &feedback) {
            (Some(f), Some(_)) if !self.has_data() => {
                self.sender.last_send().is_none_or(|t| now >= t + f)
            }
            _ => false,
        };
        if now >= self.heartbeat_due() || feedback_due {
            header.heartbeat = true;
            header.feedback = feedback.or_else(|| {
                let f = self.receiver.feedback()?;
                Some(self.trim_feedback(now, f))
            });
            return Some(self.emit(now, header, Payload::Filler(0), buf));
        }
        None
    }

    /// Stamps `header` with the sender's numbers and time-to-next, counts the datagram, and
    /// writes it into `buf`.
    fn emit(
        &mut self,
        now: Instant,
        mut header: Header,
        payload: Payload,
        buf: &mut Vec<u8>,
    ) -> Transmit {
        let app_bytes = match &payload {
            Payload::Filler(n) => *n,
            Payload::Bytes(d) => d.len(),
        };
        let link_bytes = (header.encoded_len() + app_bytes) as u64 + self.overhead();
        let (seq, throwaway) = self.sender.numbers(now);
        self.sender.on_sent(now, link_bytes);
        header.seq = seq;
        header.throwaway = throwaway;
        header.time_to_next_us = self.time_to_next(now);
        header.app_limited = self.app_limited();
        self.note_feedback(now, &header);
        buf.clear();
        header.encode(buf);
        match payload {
            Payload::Filler(n) => buf.resize(buf.len() + n, 0),
            Payload::Bytes(d) => buf.extend_from_slice(&d),
        }
        self.stats.datagrams_sent += 1;
        self.stats.link_bytes_sent = self.stats.link_bytes_sent.saturating_add(link_bytes);
        self.stats.app_bytes_sent = self.stats.app_bytes_sent.saturating_add(app_bytes as u64);
        if header.heartbeat {
            self.stats.heartbeats_sent += 1;
            self.last_heartbeat = Some((now, seq.saturating_add(link_bytes)));
        }
        Transmit {
            len: buf.len(),
            app_bytes,
            heartbeat: header.heartbeat,
        }
    }

    /// Tells the sender whether application data waits for the window (never in bulk mode,
    /// whose filler always waits): its windows then come from the expected counts.
    fn note_backlog(&mut self) {
        self.sender
            .set_backlogged(!self.bulk && !self.outgoing.is_empty());
    }

    /// Whether datagrams leave marked application-limited: whenever the connection is not a
    /// saturating bulk sender. Such a sender sends what its application hands it, often less
    /// than the link could carry, held back by its window at times; the receiver scores its
    /// ticks that met no queue as a lower bound on the link's rate (see
    /// [`crate::receiver::Receiver`]). A bulk sender's ticks are scored as the paper's.
    fn app_limited(&self) -> bool {
        !self.bulk
    }

    fn note_feedback(&mut self, now: Instant, header: &Header) {
        if let Some(f) = &header.feedback {
            self.last_feedback_sent = Some(f.forecast_id);
            self.last_feedback_at = Some(now);
        }
    }

    /// Whether the peer's application has sent data within [`PEER_IDLE_AFTER`].
    fn peer_sending(&self, now: Instant) -> bool {
        self.peer_data_at
            .is_some_and(|t| now.saturating_duration_since(t) < PEER_IDLE_AFTER)
    }

    /// Whether a new forecast rides the next data datagram. A bulk sender's always does (the
    /// paper's, every tick), and so does an application stream's while the peer sends data.
    /// To an idle peer an application stream sends one once per heartbeat interval, as often
    /// as an endpoint with nothing to send would: the peer's sender has nothing to pace, and
    /// a forecast every tick (45 bytes, and 32 of expected counts, on a 1,200-byte datagram
    /// every 38 ms at 250 kbit/s) added 6% to what the stream put on the link, and after a
    /// stall a slow link drained its queue markedly more slowly than without them.
    fn feedback_rides_data(&self, now: Instant) -> bool {
        self.bulk
            || self.peer_sending(now)
            || self
                .last_feedback_at
                .is_none_or(|t| now >= t + self.config.heartbeat_interval_us)
    }

    /// `fb` without its expected counts when the peer is idle (an application stream's
    /// connection only): the peer's sender uses them only while its data waits, and data
    /// that waits soon arrives, after which they come back.
    fn trim_feedback(&self, now: Instant, mut fb: wire::Feedback) -> wire::Feedback {
        if !self.bulk && !self.peer_sending(now) {
            fb.expected = None;
        }
        fb
    }

    /// Time-to-next for a datagram being sent now (after its bytes were counted): 0 if another
    /// data datagram fits in the window right away (the flight goes on), else the heartbeat
    /// interval, the longest the sender will stay silent (as in the authors' sender).
    fn time_to_next(&mut self, now: Instant) -> u32 {
        self.note_backlog();
        if self.has_data() && self.sender.window_bytes(now) >= self.min_data_link_bytes(now) {
            return 0;
        }
        self.config
            .heartbeat_interval_us
            .as_micros()
            .min(u32::MAX as u64) as u32
    }

    /// The receiver's bookkeeping of the peer's datagrams: datagrams tracked as received and
    /// not yet written off (at most [`crate::receiver::MAX_TRACKED`]).
    pub fn tracked_datagrams(&self) -> usize {
        self.receiver.tracked()
    }

    /// The current window, in link bytes: what the forecast lets the application send
    /// within the delay target, the rate to size adaptive data by. (Data already waiting may
    /// leave faster, see [`Sender::set_backlogged`](crate::sender::Sender::set_backlogged).)
    pub fn window_bytes(&mut self, now: Instant) -> u64 {
        self.sender.cautious_window_bytes(now)
    }

    /// The sender's current queue estimate toward the peer, in link bytes.
    pub fn queue_estimate(&mut self, now: Instant) -> u64 {
        self.sender.queue_estimate(now)
    }

    /// The forecast the sender is working from (cumulative packets per tick), if any.
    pub fn peer_forecast(&self) -> Option<&[u32]> {
        self.sender.forecast()
    }

    /// The receiving half, read-only: its estimator's belief, tick clock and counters (a
    /// clone can be ticked and asked for feedback apart from the connection, as the
    /// recorded-belief bench of sprout-sim does).
    pub fn receiver(&self) -> &Receiver {
        &self.receiver
    }

    /// The receiver's current estimate of the incoming link rate, in packets/s.
    pub fn incoming_rate_pps(&self) -> f64 {
        self.receiver.rate_pps()
    }

    /// Counters.
    pub fn stats(&self) -> ConnectionStats {
        let mut s = self.stats.clone();
        s.receiver = self.receiver.stats();
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(us: u64) -> Instant {
        Instant::from_micros(us)
    }

    /// In bulk mode a queued datagram goes out before any filler, unchanged, and filler
    /// resumes once the queue is empty.
    #[test]
    fn bulk_sends_queued_datagrams_first() {
        let mut a = Connection::new(Config::default(), Instant::ZERO).unwrap();
        let mut b = Connection::new(Config::default(), Instant::ZERO).unwrap();
        a.set_bulk(true);
        a.send(b"real".to_vec());
        let mut buf = Vec::new();
        let first = a.poll_transmit(t(0), &mut buf).unwrap();
        assert_eq!(first.app_bytes, 4);
        b.handle_datagram(t(20_000), &buf).unwrap();
        assert_eq!(b.recv().unwrap(), b"real");
        let second = a.poll_transmit(t(0), &mut buf).unwrap();
        assert!(second.app_bytes > 4, "filler after the queue emptied");
        assert_eq!(a.queued_bytes(), 0);
    }

    /// Datagrams of a bulk sender are never marked application-limited (its ticks are the
    /// paper's); every datagram of an application stream is, heartbeats included.
    #[test]
    fn only_an_application_stream_is_marked_application_limited() {
        let mut buf = Vec::new();
        let marks = |c: &mut Connection, buf: &mut Vec<u8>, now: u64| {
            let mut m = Vec::new();
            while c.poll_transmit(t(now), buf).is_some() {
                m.push(wire::decode(buf).unwrap().header.app_limited);
            }
            m
        };
        let mut bulk = Connection::new(Config::default(), Instant::ZERO).unwrap();
        bulk.set_bulk(true);
        bulk.send(b"queued first".to_vec());
        let m = marks(&mut bulk, &mut buf, 0);
        assert!(m.len() >= 2 && m.iter().all(|&x| !x), "{m:?}");
        let mut app = Connection::new(Config::default(), Instant::ZERO).unwrap();
        app.send(vec![7; 1000]);
        let m = marks(&mut app, &mut buf, 0);
        assert_eq!(m, [true]);
        // Nothing to send: the heartbeat 50 ms on is marked too.
        assert_eq!(marks(&mut app, &mut buf, 50_000), [true]);
    }

    /// Two endpoints over a perfect fixed-delay path; returns A's app bytes delivered to B.
    fn run_ideal(config: Config, ms: u64) -> (u64, ConnectionStats) {
        let mut a = Connection::new(config.clone(), Instant::ZERO).unwrap();
        let mut b = Connection::new(config, Instant::ZERO).unwrap();
        a.set_bulk(true);
        a.set_keep_incoming(false);
        b.set_keep_incoming(false);
        let mut in_flight: VecDeque<(u64, bool, Vec<u8>)> = VecDeque::new();
        let mut buf = Vec::new();
        for now in (0..ms * 1000).step_by(1000) {
            while let Some((at, _, _)) = in_flight.front() {
                if *at > now {
                    break;
                }
                let (_, to_b, d) = in_flight.pop_front().unwrap();
                if to_b {
                    b.handle_datagram(t(now), &d).unwrap();
                } else {
                    a.handle_datagram(t(now), &d).unwrap();
                }
            }
            a.handle_timeout(t(now));
            b.handle_timeout(t(now));
            while a.poll_transmit(t(now), &mut buf).is_some() {
                in_flight.push_back((now + 20_000, true, buf.clone()));
            }
            while b.poll_transmit(t(now), &mut buf).is_some() {
                in_flight.push_back((now + 20_000, false, buf.clone()));
            }
        }
        (b.stats().app_bytes_received, a.stats())
    }

    #[test]
    fn keeps_sending_on_a_fixed_delay_path() {
        // With no queue, the receiver only sees what the sender sends, so the cautious forecast
        // settles low; the point here is that data keeps flowing and never deadlocks.
        let (delivered, stats) = run_ideal(Config::default(), 2000);
        assert!(stats.datagrams_sent > stats.heartbeats_sent);
        assert!(delivered > 20_000, "only {delivered} bytes in 2 s");
    }

    #[test]
    fn malformed_input_is_counted_not_fatal() {
        let mut a = Connection::new(Config::default(), Instant::ZERO).unwrap();
        assert!(a.handle_datagram(t(0), b"garbage").is_err());
        assert!(a.handle_datagram(t(0), &[]).is_err());
        assert_eq!(a.stats().malformed, 2);
        let mut buf = Vec::new();
        assert!(a.poll_transmit(t(0), &mut buf).is_some());
    }

    #[test]
    fn invalid_config_is_rejected() {
        let c = Config {
            confidence: 1.5,
            ..Config::default()
        };
        assert!(Connection::new(c, Instant::ZERO).is_err());
    }

    #[test]
    fn heartbeat_interval_is_bounded_by_the_protocol_maximum() {
        let c = Config {
            heartbeat_interval_us: Duration::from_micros(MAX_HEARTBEAT_INTERVAL_US),
            ..Config::default()
        };
        assert!(Connection::new(c, Instant::ZERO).is_ok());
        let c = Config {
            heartbeat_interval_us: Duration::from_micros(MAX_HEARTBEAT_INTERVAL_US + 1),
            ..Config::default()
        };
        assert!(Connection::new(c, Instant::ZERO).is_err());
    }

    fn datagram(h: &Header, payload: &[u8]) -> Vec<u8> {
        let mut buf = Vec::new();
        wire::encode(h, payload, &mut buf);
        buf
    }

    fn plain(seq: u64) -> Header {
        Header {
            seq,
            throwaway: 0,
            time_to_next_us: 0,
            sent_us: 0,
            heartbeat: false,
            app_limited: false,
            feedback: None,
        }
    }

    fn with_forecast(id: u32, rol: u64, counts: &[u32]) -> Header {
        Header {
            feedback: Some(wire::Feedback::new(id, rol, counts)),
            ..plain(0)
        }
    }

    #[track_caller]
    fn rejects(c: &mut Connection, now: u64, h: &Header, r: Reject) {
        let before = c.stats().rejected.get(r);
        let err = c.handle_datagram(t(now), &datagram(h, b"x")).unwrap_err();
        assert_eq!(err, DatagramError::Rejected(r), "{h:?}");
        assert!(err.to_string().contains(r.name()));
        assert_eq!(c.stats().rejected.get(r), before + 1);
    }

    #[test]
    fn each_rule_rejects_with_its_reason() {
        let mut c = Connection::new(Config::default(), Instant::ZERO).unwrap();
        let now = 1_000_000;
        // Time-to-next: up to the protocol maximum.
        let mut h = plain(0);
        h.time_to_next_us = MAX_HEARTBEAT_INTERVAL_US as u32 + 1;
        rejects(&mut c, now, &h, Reject::TimeToNext);
        h.time_to_next_us = MAX_HEARTBEAT_INTERVAL_US as u32;
        assert!(c.handle_datagram(t(now), &datagram(&h, b"x")).is_ok());
        // Forecast length and counts: the model's 8 ticks, at most 29 h + 2 packets by tick h.
        rejects(
            &mut c,
            now,
            &with_forecast(1, 0, &[1; 9]),
            Reject::ForecastLength,
        );
        let mut counts: Vec<u32> = (1..=8).map(|h| 29 * h + 2).collect();
        assert!(c
            .handle_datagram(t(now), &datagram(&with_forecast(1, 0, &counts), b""))
            .is_ok());
        counts[7] += 1;
        rejects(
            &mut c,
            now,
            &with_forecast(2, 0, &counts),
            Reject::ForecastCount,
        );
        // Received-or-lost: nothing sent yet, so at most one largest datagram of slack.
        let slack = 1440 + 60;
        assert!(c
            .handle_datagram(t(now), &datagram(&with_forecast(2, slack, &[1; 8]), b""))
            .is_ok());
        let h = with_forecast(3, slack + 1, &[1; 8]);
        rejects(&mut c, now, &h, Reject::ReceivedOrLostAhead);
        // Forecast ids: the current one (2) arrived at 1 s; 2 s later, 100 ticks, plus one,
        // plus the slack (30 s = 1500 ticks, plus one) are allowed: 1602.
        let later = 3_000_000;
        let h = with_forecast(2 + 1603, 0, &[1; 8]);
        rejects(&mut c, later, &h, Reject::ForecastIdAhead);
        let h = with_forecast(2 + 1602, 0, &[1; 8]);
        assert!(c.handle_datagram(t(later), &datagram(&h, b"")).is_ok());
        // Wrapped around: an id "behind" is stale and ignored, not rejected.
        let h = with_forecast(1604u32.wrapping_sub(0x8000_0000), 0, &[2; 8]);
        assert!(c.handle_datagram(t(later), &datagram(&h, b"")).is_ok());
        assert_eq!(c.peer_forecast(), Some(&[1u32; 8][..]));
        // Sequence and throwaway numbers: bounded ahead of what was accounted.
        let bound = c.seq_bound(t(later));
        let accounted = c.receiver.accounted();
        let len = (FIXED + 1 + 60) as u64;
        assert!(c
            .handle_datagram(t(later), &datagram(&plain(accounted + bound - len), b"x"))
            .is_ok());
        let accounted = c.receiver.accounted();
        rejects(
            &mut c,
            later,
            &plain(accounted + bound - len + 1),
            Reject::SeqAhead,
        );
        let mut h = plain(u64::MAX - 1);
        rejects(&mut c, later, &h, Reject::SeqAhead);
        h.throwaway = u64::MAX - 1;
        rejects(&mut c, later, &h, Reject::ThrowawayAhead);
        assert_eq!(c.stats().rejected.total(), 8);
        assert_eq!(c.stats().malformed, 0);
    }

    const FIXED: usize = wire::FIXED_HEADER_BYTES;

    #[test]
    fn the_sequence_bound_grows_with_silence() {
        let c = Connection::new(Config::default(), Instant::ZERO).unwrap();
        // At the defaults: (234 + sum of 29 h + 2 over 8 ticks = 1060) packets of 1500 bytes,
        // plus a largest datagram, twice, plus 1 MiB, plus heartbeats over 30 s + silence.
        let base = ((234 + 1060) * 1500 + 1500) * 2 + (1 << 20);
        let hb = (wire::MAX_HEADER_BYTES + 60) as u64;
        assert_eq!(c.seq_bound(t(0)), base + (1500 + 2) * hb);
        assert_eq!(c.seq_bound(t(60_000_000)), base + (4500 + 2) * hb);
    }

    #[test]
    fn the_incoming_queue_is_bounded_in_bytes() {
        let config = Config {
            max_incoming_bytes: 2500,
            ..Config::default()
        };
        let mut b = Connection::new(config, Instant::ZERO).unwrap();
        let len = (FIXED + 1000 + 60) as u64;
        for i in 0..4 {
            b.handle_datagram(t(i), &datagram(&plain(i * len), &[i as u8; 1000]))
                .unwrap();
        }
        let s = b.stats();
        assert_eq!(s.app_bytes_received, 4000);
        assert_eq!((s.incoming_dropped, s.incoming_dropped_bytes), (2, 2000));
        assert_eq!(b.incoming_bytes(), 2000);
        // The oldest went first: a reader that fell behind finds the peer's latest payloads.
        assert_eq!(b.recv().unwrap(), vec![2; 1000]);
        assert_eq!(b.incoming_bytes(), 1000);
        b.handle_datagram(t(5), &datagram(&plain(4 * len), &[7; 1000]))
            .unwrap();
        assert_eq!(b.incoming_bytes(), 2000);
        assert_eq!(b.stats().incoming_dropped, 2);
    }

    #[test]
    fn ewma_forecasts_are_capped_by_its_clamp() {
        let mut c = Connection::new(Config::ewma(), Instant::ZERO).unwrap();
        // 83,334 packets/s (the wide model's top rate) x 20 ms = 1,666.68 packets a tick: the
        // largest forecast the peer's EWMA can send is accepted, one packet more is not.
        let ok: Vec<u32> = (1..=8).map(|h| (1666.68 * h as f64) as u32).collect();
        assert_eq!(ok[7], 13_333);
        let mut sender = crate::EwmaEstimator::new(&Config::ewma().model, 0.25);
        crate::Estimator::observe(&mut sender, 1e9);
        let mut sent = [0u32; 8];
        crate::Estimator::forecast(&sender, &mut sent);
        assert_eq!(sent.as_slice(), ok.as_slice());
        assert!(c
            .handle_datagram(t(0), &datagram(&with_forecast(1, 0, &ok), b""))
            .is_ok());
        let mut too_many = ok.clone();
        too_many[0] = 1667;
        rejects(
            &mut c,
            0,
            &with_forecast(2, 0, &too_many),
            Reject::ForecastCount,
        );
    }
}
