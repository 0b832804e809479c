//! Real receiver states, recorded: two Sprout endpoints over a pair of trace-driven links,
//! the downlink loaded (a bulk sender at the server) and the uplink idle (the mobile sends
//! only feedback and heartbeats), with a clone of each endpoint's [`Receiver`] taken just
//! before its ticks. The clones are what a tick's cost depends on (the estimator's belief):
//! a bench can time one tick of each ([`Receiver::on_timeout`] then [`Receiver::feedback`])
//! on states that real links produce, not on a belief it made up.
//!
//! The loop is this module's own, a smaller copy of [`crate::sim`]'s (same order of steps:
//! the links deliver, the receivers take in their datagrams, then the endpoints run their
//! timers and send), so that recording adds nothing to the simulator's hot path. Each
//! endpoint wakes up to [`RecordOptions::host_jitter`] late for its timers, as the simulator's
//! do by default ([`crate::sim::DEFAULT_HOST_JITTER`]). Ticks are run at their own
//! boundary times ([`Receiver::next_tick`]), one at a time, which is what the receiver does
//! itself when it runs the ticks due by a later time.
//!
//! ```
//! use std::sync::Arc;
//! use sprout_core::time::Duration;
//! use sprout_link::constant_rate_trace;
//! use sprout_sim::recorded::{record, Direction, RecordOptions};
//!
//! let trace = Arc::new(constant_rate_trace("c12", 12.0, 2.0).unwrap());
//! let options = RecordOptions {
//!     duration: Duration::from_secs(1),
//!     ..RecordOptions::default()
//! };
//! let rec = record(trace.clone(), trace, &options).unwrap();
//! let mut state = rec.of(Direction::Idle).next().unwrap().clone();
//! state.receiver.on_timeout(state.at);
//! assert!(state.receiver.feedback().is_some());
//! ```

use std::sync::Arc;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use sprout_core::receiver::Receiver;
use sprout_core::time::{Duration, Instant};
use sprout_core::{Config, ConfigError, Connection, DatagramError};
use sprout_link::{Link, LinkConfig, LinkConfigError, LinkEvent, LinkStats, Trace};

/// Which direction a receiver takes in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// The downlink, carrying the server's bulk data: the mobile's receiver.
    Loaded,
    /// The uplink, carrying only the mobile's feedback and heartbeats: the server's receiver
    /// (the one whose belief spreads over every rate, issue 34).
    Idle,
}

impl Direction {
    /// Both, loaded first.
    pub const ALL: [Direction; 2] = [Direction::Loaded, Direction::Idle];

    /// `"loaded"` or `"idle"`.
    pub fn name(self) -> &'static str {
        match self {
            Direction::Loaded => "loaded",
            Direction::Idle => "idle",
        }
    }
}

/// A receiver's state just before one of its ticks.
#[derive(Clone, Debug)]
pub struct Snapshot {
    /// The direction the receiver takes in.
    pub direction: Direction,
    /// The end of the tick about to run (its boundary time, on the simulated clock from the
    /// start of the run): `receiver.on_timeout(at)` runs exactly that tick.
    pub at: Instant,
    /// The receiver as it was just before the tick.
    pub receiver: Receiver,
}

/// What to record, and how often.
#[derive(Clone, Debug)]
pub struct RecordOptions {
    /// Both endpoints' configuration. Default [`Config::wide`].
    pub config: Config,
    /// Both links' model (delay, queue, loss); the uplink's loss seed is this one's plus 1.
    /// Default [`LinkConfig::default`] (20 ms each way, unlimited drop-tail queue).
    pub link: LinkConfig,
    /// How long to run, on the simulated clock. Default 20 s. The traces loop if shorter
    /// (as [`LinkConfig::looping`] says).
    pub duration: Duration,
    /// No snapshot of a tick that ends before this (the start-up). Default 0.
    pub record_from: Duration,
    /// One tick in `every` is recorded (per direction, counting the ticks from
    /// `record_from`); 0 counts as 1. Default 1 (every tick).
    pub every: u32,
    /// The most snapshots kept per direction; later ticks are not recorded. Default 5,000.
    pub max_per_direction: usize,
    /// The most an endpoint wakes late for its timers (drawn uniformly, seeded by `seed`).
    /// Default 1 ms, the simulator's.
    pub host_jitter: Duration,
    /// Seed of the wake-up latencies.
    pub seed: u64,
}

impl Default for RecordOptions {
    fn default() -> Self {
        RecordOptions {
            config: Config::wide(),
            link: LinkConfig::default(),
            duration: Duration::from_secs(20),
            record_from: Duration::ZERO,
            every: 1,
            max_per_direction: 5_000,
            host_jitter: crate::sim::DEFAULT_HOST_JITTER,
            seed: 1,
        }
    }
}

/// What [`record`] returns: the snapshots, in time order within each direction, and what the
/// run did.
#[derive(Clone, Debug)]
pub struct Recording {
    /// Every snapshot kept, both directions interleaved in the order they were taken.
    pub snapshots: Vec<Snapshot>,
    /// Ticks run per direction ([`Direction::Loaded`] first), recorded or not.
    pub ticks: [u64; 2],
    /// The downlink's counters (the loaded direction).
    pub downlink: LinkStats,
    /// The uplink's counters (the idle direction).
    pub uplink: LinkStats,
    /// How long the run was.
    pub duration: Duration,
}

impl Recording {
    /// The snapshots of one direction, in time order.
    pub fn of(&self, direction: Direction) -> impl Iterator<Item = &Snapshot> + '_ {
        self.snapshots
            .iter()
            .filter(move |s| s.direction == direction)
    }

    /// The loaded direction's throughput over the run, Mbit/s (link bytes delivered).
    pub fn loaded_mbit_per_s(&self) -> f64 {
        self.downlink.bytes_delivered as f64 * 8.0 / self.duration.as_micros().max(1) as f64
    }
}

/// Why [`record`] failed.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// The endpoints' configuration is invalid.
    #[error("endpoint configuration: {0}")]
    Config(#[from] ConfigError),
    /// The link model is invalid.
    #[error("link: {0}")]
    Link(#[from] LinkConfigError),
    /// An endpoint refused a datagram of its peer (a bug: our own datagrams always pass).
    #[error("an endpoint refused its peer's datagram: {0}")]
    Datagram(#[from] DatagramError),
}

/// One endpoint: the connection, the link it sends on, and its own bookkeeping.
struct Endpoint {
    conn: Connection,
    /// The link this endpoint sends on.
    link: Link<Vec<u8>>,
    /// The direction this endpoint's receiver takes in.
    direction: Direction,
    /// When it next wakes for its timers (its deadline plus its wake-up latency).
    wake: Instant,
    /// A datagram reached it in this step.
    woken: bool,
    /// Ticks from `record_from` on, recorded or not.
    counted: u64,
    /// Snapshots kept.
    kept: usize,
    ticks: u64,
}

impl Endpoint {
    fn new(
        config: &Config,
        link: Link<Vec<u8>>,
        direction: Direction,
        bulk: bool,
    ) -> Result<Endpoint, RecordError> {
        let mut conn = Connection::new(config.clone(), Instant::ZERO)?;
        conn.set_bulk(bulk);
        conn.set_keep_incoming(false);
        Ok(Endpoint {
            conn,
            link,
            direction,
            wake: Instant::ZERO,
            woken: true,
            counted: 0,
            kept: 0,
            ticks: 0,
        })
    }

    /// Runs, one at a time, every tick of the receiver due by `now`, first cloning the
    /// receiver for the ones `options` asks for.
    fn run_ticks(&mut self, now: Instant, options: &RecordOptions, out: &mut Vec<Snapshot>) {
        while let Some(at) = self.conn.receiver().next_tick().filter(|&t| t <= now) {
            self.ticks += 1;
            if at >= Instant::ZERO + options.record_from {
                let every = u64::from(options.every.max(1));
                if self.counted.is_multiple_of(every) && self.kept < options.max_per_direction {
                    out.push(Snapshot {
                        direction: self.direction,
                        at,
                        receiver: self.conn.receiver().clone(),
                    });
                    self.kept += 1;
                }
                self.counted += 1;
            }
            self.conn.handle_timeout(at);
        }
    }

    /// When woken (a datagram came) or due: runs the timers, sends what the connection lets
    /// out, and schedules its next wake-up.
    fn act(&mut self, now: Instant, jitter: &mut ChaCha8Rng, options: &RecordOptions) {
        if !std::mem::take(&mut self.woken) && now < self.wake {
            return;
        }
        self.conn.handle_timeout(now);
        let overhead = options.config.link_overhead_bytes;
        loop {
            let mut buf = Vec::new();
            let Some(t) = self.conn.poll_transmit(now, &mut buf) else {
                break;
            };
            self.link.send(now, t.len as u32 + overhead, buf);
        }
        let late = options.host_jitter.as_micros();
        self.wake = match self.conn.poll_timeout() {
            Some(t) if late > 0 => t.max(now) + Duration::from_micros(jitter.gen_range(0..=late)),
            Some(t) => t,
            None => Instant::MAX,
        };
    }

    /// The earliest time this endpoint or its link can do something.
    fn next_event(&self) -> Instant {
        self.link
            .next_event()
            .map_or(self.wake, |t| t.min(self.wake))
    }
}

/// Hands `to` the datagrams `from`'s link delivers by `now` (its ticks due by then first).
fn deliver(
    from: &mut Endpoint,
    to: &mut Endpoint,
    now: Instant,
    options: &RecordOptions,
    out: &mut Vec<Snapshot>,
) -> Result<(), RecordError> {
    let mut arrived = Vec::new();
    from.link.advance(now, &mut |e| {
        if let LinkEvent::Delivered(d) = e {
            arrived.push(d);
        }
    });
    for d in arrived {
        to.run_ticks(d.delivered, options, out);
        to.conn.handle_datagram(d.delivered, &d.payload)?;
        to.woken = true;
    }
    Ok(())
}

/// Runs the server (bulk, sending on `downlink`) and the mobile (no data, sending its
/// feedback and heartbeats on `uplink`) for `options.duration`, both starting at time 0, and
/// returns the receivers' snapshots ([`Direction::Loaded`]: the mobile's, of the downlink;
/// [`Direction::Idle`]: the server's, of the uplink).
pub fn record(
    downlink: Arc<Trace>,
    uplink: Arc<Trace>,
    options: &RecordOptions,
) -> Result<Recording, RecordError> {
    options.link.validate()?;
    let up_link = LinkConfig {
        seed: options.link.seed.wrapping_add(1),
        ..options.link.clone()
    };
    let down = Link::new(downlink, options.link.clone());
    let up = Link::new(uplink, up_link);
    let mut server = Endpoint::new(&options.config, down, Direction::Idle, true)?;
    let mut mobile = Endpoint::new(&options.config, up, Direction::Loaded, false)?;
    let mut jitter = ChaCha8Rng::seed_from_u64(options.seed ^ 0x7265_636f_7264);
    let end = Instant::ZERO + options.duration;
    let mut out = Vec::new();
    let mut now = Instant::ZERO;
    while now <= end {
        deliver(&mut server, &mut mobile, now, options, &mut out)?;
        deliver(&mut mobile, &mut server, now, options, &mut out)?;
        for e in [&mut server, &mut mobile] {
            e.run_ticks(now, options, &mut out);
            e.act(now, &mut jitter, options);
        }
        let next = server.next_event().min(mobile.next_event());
        now = next.max(now + Duration::from_micros(1));
    }
    Ok(Recording {
        snapshots: out,
        ticks: [mobile.ticks, server.ticks],
        downlink: server.link.stats(),
        uplink: mobile.link.stats(),
        duration: options.duration,
    })
}
