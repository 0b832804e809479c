//! Shared harness: a bulk (or finite) sender endpoint and a receiver endpoint over two
//! `sprout_link::Link`s — the forward link a constant-rate trace with a byte-limited drop-tail
//! queue, the reverse link fast (120 Mbit/s, unlimited queue) — driven the way the simulator
//! drives them: arrivals, then `handle_timeout`, then drain `poll_transmit`, then sleep until the
//! earliest link event or `poll_timeout`. Records cwnd and queue on a 1 ms grid, every RTT
//! sample, every drop and every fast-retransmit / timeout event.

#![allow(dead_code)]

use std::sync::Arc;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use sprout_core::time::{Duration, Instant};
use sprout_link::{
    constant_rate_trace, Link, LinkConfig, LinkEvent, LinkStats, QueueConfig, Trace,
};
use sprout_tcp::{CcKind, Segment, TcpConfig, TcpEndpoint, TcpStats};

/// Payload bytes per full segment.
pub(crate) const MSS: u64 = 1448;
/// Wire bytes per full segment.
pub(crate) const PACKET: u64 = 1500;

/// A controller-specific probe: up to four numbers recorded with each sample.
pub(crate) type Probe = fn(&TcpEndpoint) -> [f64; 4];

/// What to run.
#[derive(Clone)]
pub(crate) struct Spec {
    pub cc: CcKind,
    pub tcp: TcpConfig,
    /// Forward (data) bottleneck rate (Mbit/s; 12 = 1000 packets of 1500 bytes per second).
    pub rate_mbps: f64,
    /// One-way propagation delay of each direction (µs).
    pub one_way_delay_us: u64,
    /// Forward drop-tail queue limit (bytes).
    pub queue_limit_bytes: Option<u64>,
    /// Simulated time (µs).
    pub duration_us: u64,
    /// `Some(n)`: a finite transfer of n bytes instead of bulk; the run stops once all is acked.
    pub transfer_bytes: Option<u64>,
    /// Sampling grid (µs).
    pub sample_every_us: u64,
    pub probe: Option<Probe>,
    /// Probability that a data segment leaving the forward queue is lost anyway.
    pub data_loss: f64,
    /// Probability that an ACK crossing the reverse link is lost.
    pub ack_loss: f64,
    /// Seed of those losses.
    pub loss_seed: u64,
    /// Forward opportunities (ms) replacing the constant-rate trace (`rate_mbps` is then only
    /// used for reporting).
    pub trace_ms: Option<Vec<u64>>,
    /// Deterministic losses: the first data segment leaving the forward link at or after each
    /// of these times is lost (µs, ascending).
    pub drop_data_at_us: Vec<u64>,
}

impl Spec {
    /// 12 Mbit/s, 20 ms each way, 200-packet queue, 30 s, bulk.
    pub(crate) fn new(cc: CcKind) -> Self {
        Spec {
            cc,
            tcp: TcpConfig::default(),
            rate_mbps: 12.0,
            one_way_delay_us: 20_000,
            queue_limit_bytes: Some(200 * PACKET),
            duration_us: 30_000_000,
            transfer_bytes: None,
            sample_every_us: 1_000,
            probe: None,
            data_loss: 0.0,
            ack_loss: 0.0,
            loss_seed: 7,
            trace_ms: None,
            drop_data_at_us: Vec::new(),
        }
    }

    /// Payload capacity of the forward link (bytes/s).
    pub(crate) fn payload_rate_bytes_per_s(&self) -> f64 {
        self.rate_mbps * 1e6 / 8.0 / PACKET as f64 * MSS as f64
    }

    /// Packets per second of the forward link.
    pub(crate) fn packets_per_s(&self) -> f64 {
        self.rate_mbps * 1e6 / 8.0 / PACKET as f64
    }
}

/// One grid sample.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Sample {
    pub t_us: u64,
    pub cwnd: u64,
    pub window: u64,
    pub ssthresh: u64,
    pub in_flight: u64,
    pub in_recovery: bool,
    /// Forward queue occupancy (bytes, whole packets).
    pub queue_bytes: u64,
    /// Forward queue occupancy (packets, including the one being served).
    pub queue_packets: usize,
    pub pacing: Option<u64>,
    pub extra: [f64; 4],
}

/// A fast-retransmit event as seen around the ACK that triggered it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct LossEvent {
    pub t_us: u64,
    pub cwnd_before: u64,
    pub flight_before: u64,
    pub cwnd_after: u64,
    pub ssthresh_after: u64,
}

/// Everything recorded.
#[derive(Clone, Debug)]
pub(crate) struct Run {
    pub end_us: u64,
    pub samples: Vec<Sample>,
    /// (time, RTT) per ACK that acknowledged new data and echoed a timestamp (µs).
    pub rtts: Vec<(u64, u64)>,
    /// (delivery time, time spent in the forward queue) per delivered data packet (µs).
    pub queue_delays: Vec<(u64, u64)>,
    /// Forward-queue drop times (µs).
    pub drops: Vec<u64>,
    /// Segments removed by the random data / ACK loss.
    pub random_losses: u64,
    pub loss_events: Vec<LossEvent>,
    /// Times at which the sender's timeout counter went up (µs).
    pub timeouts: Vec<u64>,
    /// Data segment departures: (time, seq, len, retransmission).
    pub departures: Vec<(u64, u64, u32, bool)>,
    /// Largest number of data segments sent at one instant after 5 s.
    pub max_burst_after_5s: usize,
    pub sender: TcpStats,
    pub receiver: TcpStats,
    pub fwd: LinkStats,
}

/// The forward link (the spec's trace or constant rate, its drop-tail queue) and the reverse
/// link (120 Mbit/s, unlimited queue).
fn links(spec: &Spec) -> (Link<Segment>, Link<Segment>) {
    let fwd_trace = Arc::new(match &spec.trace_ms {
        None => constant_rate_trace("fwd", spec.rate_mbps, 1.0).expect("trace"),
        Some(ms) => Trace::from_opportunities_ms("fwd", ms.clone()).expect("trace"),
    });
    let rev_trace = Arc::new(constant_rate_trace("rev", 120.0, 1.0).expect("trace"));
    let fwd: Link<Segment> = Link::new(
        fwd_trace,
        LinkConfig {
            propagation_delay_us: Duration::from_micros(spec.one_way_delay_us),
            queue: QueueConfig::DropTail {
                limit_bytes: spec.queue_limit_bytes,
            },
            looping: true,
            opportunity_bytes: 1500,
            ..LinkConfig::default()
        },
    );
    let rev: Link<Segment> = Link::new(
        rev_trace,
        LinkConfig {
            propagation_delay_us: Duration::from_micros(spec.one_way_delay_us),
            queue: QueueConfig::DropTail { limit_bytes: None },
            looping: true,
            opportunity_bytes: 1500,
            ..LinkConfig::default()
        },
    );
    (fwd, rev)
}

/// Nothing recorded yet.
fn empty_run() -> Run {
    Run {
        end_us: 0,
        samples: Vec::new(),
        rtts: Vec::new(),
        queue_delays: Vec::new(),
        drops: Vec::new(),
        random_losses: 0,
        loss_events: Vec::new(),
        timeouts: Vec::new(),
        departures: Vec::new(),
        max_burst_after_5s: 0,
        sender: TcpStats::default(),
        receiver: TcpStats::default(),
        fwd: LinkStats::default(),
    }
}

/// The sender takes in an ACK at `now`: its RTT sample (if it acknowledged new data and
/// echoed a timestamp) and any fast retransmit it triggered are recorded in `out`.
fn take_ack(sender: &mut TcpEndpoint, ack: &Segment, now: u64, out: &mut Run) {
    let before = sender.stats();
    sender.handle_segment(Instant::from_micros(now), ack);
    let after = sender.stats();
    if after.acked_bytes > before.acked_bytes {
        if let Some(e) = ack.echo {
            out.rtts.push((now, now - e.as_micros()));
        }
    }
    if after.fast_retransmits > before.fast_retransmits {
        out.loss_events.push(LossEvent {
            t_us: now,
            cwnd_before: before.cwnd_bytes,
            flight_before: before.in_flight_bytes,
            cwnd_after: after.cwnd_bytes,
            ssthresh_after: after.ssthresh_bytes,
        });
    }
}

/// The grid sample at `now`.
fn sample(spec: &Spec, now: u64, sender: &TcpEndpoint, fwd: &Link<Segment>) -> Sample {
    let st = sender.stats();
    Sample {
        t_us: now,
        cwnd: st.cwnd_bytes,
        window: st.window_bytes,
        ssthresh: st.ssthresh_bytes,
        in_flight: st.in_flight_bytes,
        in_recovery: st.in_recovery,
        queue_bytes: fwd.queue_bytes(),
        queue_packets: fwd.queue_packets(),
        pacing: st.pacing_rate_bytes_per_s,
        extra: spec.probe.map_or([0.0; 4], |p| p(sender)),
    }
}

/// Runs `spec` to the end (or until a finite transfer is fully acknowledged).
pub(crate) fn run(spec: &Spec) -> Run {
    let (mut fwd, mut rev) = links(spec);
    let mut sender = TcpEndpoint::new(spec.tcp.clone(), spec.cc, Instant::ZERO);
    let mut receiver = TcpEndpoint::new(spec.tcp.clone(), spec.cc, Instant::ZERO);
    match spec.transfer_bytes {
        None => sender.set_bulk(true),
        Some(n) => sender.write(n),
    }

    let mut out = empty_run();
    let mut now = 0u64;
    let mut next_sample = 0u64;
    let mut last_delivered = 0u64;
    let mut max_sent_end = 0u64;
    let mut rng = ChaCha8Rng::seed_from_u64(spec.loss_seed);
    let mut fwd_arrivals = Vec::new();
    let mut rev_arrivals = Vec::new();
    let mut drops_left = spec.drop_data_at_us.iter().peekable();
    loop {
        // 1. Link arrivals.
        fwd.advance(Instant::from_micros(now), &mut |e| match e {
            LinkEvent::Delivered(d) => fwd_arrivals.push(d),
            LinkEvent::Dropped { at, .. } => out.drops.push(at.as_micros()),
            _ => {}
        });
        rev.advance(Instant::from_micros(now), &mut |e| {
            if let LinkEvent::Delivered(d) = e {
                rev_arrivals.push(d)
            }
        });
        for d in fwd_arrivals.drain(..) {
            if d.payload.is_data() {
                out.queue_delays.push((
                    d.delivered.as_micros(),
                    (d.delivered - d.enqueued).as_micros(),
                ));
            }
            if spec.data_loss > 0.0 && rng.gen_bool(spec.data_loss) {
                out.random_losses += 1;
                continue;
            }
            if d.payload.is_data() && drops_left.next_if(|&&t| t <= now).is_some() {
                out.random_losses += 1;
                continue;
            }
            receiver.handle_segment(Instant::from_micros(now), &d.payload);
        }
        for d in rev_arrivals.drain(..) {
            if spec.ack_loss > 0.0 && rng.gen_bool(spec.ack_loss) {
                out.random_losses += 1;
                continue;
            }
            take_ack(&mut sender, &d.payload, now, &mut out);
        }
        // 2. Timers.
        let before = sender.stats().timeouts;
        sender.handle_timeout(Instant::from_micros(now));
        receiver.handle_timeout(Instant::from_micros(now));
        if sender.stats().timeouts > before {
            out.timeouts.push(now);
        }
        // 3. Transmissions.
        let mut burst = 0;
        while let Some(s) = sender.poll_transmit(Instant::from_micros(now)) {
            if s.is_data() {
                burst += 1;
                out.departures.push((now, s.seq, s.len, s.retransmission));
                max_sent_end = max_sent_end.max(s.end());
            }
            fwd.send(Instant::from_micros(now), s.wire_bytes(), s);
        }
        if now > 5_000_000 {
            out.max_burst_after_5s = out.max_burst_after_5s.max(burst);
        }
        while let Some(s) = receiver.poll_transmit(Instant::from_micros(now)) {
            rev.send(Instant::from_micros(now), s.wire_bytes(), s);
        }
        // Invariants: in-order delivery never runs ahead of what was sent, never goes back.
        let delivered = receiver.stats().delivered_app_bytes;
        assert!(delivered >= last_delivered, "delivered count went back");
        assert!(
            delivered <= max_sent_end,
            "receiver delivered more than was sent"
        );
        last_delivered = delivered;

        if now >= next_sample {
            out.samples.push(sample(spec, now, &sender, &fwd));
            next_sample += spec.sample_every_us;
        }
        let finished = spec
            .transfer_bytes
            .is_some_and(|n| sender.stats().acked_bytes >= n && fwd.next_event().is_none());
        if now >= spec.duration_us || finished {
            break;
        }
        // 4. Sleep until the next event.
        let mut next = spec.duration_us.min(next_sample);
        for t in [
            fwd.next_event().map(Instant::as_micros),
            rev.next_event().map(Instant::as_micros),
            sender.poll_timeout().map(Instant::as_micros),
            receiver.poll_timeout().map(Instant::as_micros),
        ]
        .into_iter()
        .flatten()
        {
            next = next.min(t);
        }
        assert!(
            next > now,
            "no progress at {now} µs: a deadline at {next} µs is not in the future"
        );
        now = next;
    }
    out.end_us = now;
    out.sender = sender.stats();
    out.receiver = receiver.stats();
    out.fwd = fwd.stats();
    out
}

impl Run {
    /// Samples with `t0 <= t < t1`.
    pub(crate) fn samples_between(&self, t0: u64, t1: u64) -> impl Iterator<Item = &Sample> {
        self.samples
            .iter()
            .filter(move |s| s.t_us >= t0 && s.t_us < t1)
    }

    /// Mean forward-queue occupancy in packets over `[t0, t1)` (1 ms grid).
    pub(crate) fn mean_queue_packets(&self, t0: u64, t1: u64) -> f64 {
        mean(self.samples_between(t0, t1).map(|s| s.queue_packets as f64))
    }

    /// Mean forward-queue occupancy in bytes over `[t0, t1)`.
    pub(crate) fn mean_queue_bytes(&self, t0: u64, t1: u64) -> f64 {
        mean(self.samples_between(t0, t1).map(|s| s.queue_bytes as f64))
    }

    /// Mean time data packets delivered in `[t0, t1)` spent in the forward queue (µs).
    pub(crate) fn mean_queue_delay_us(&self, t0: u64, t1: u64) -> f64 {
        mean(
            self.queue_delays
                .iter()
                .filter(|&&(t, _)| t >= t0 && t < t1)
                .map(|&(_, d)| d as f64),
        )
    }

    /// Mean RTT sample in `[t0, t1)` (µs).
    pub(crate) fn mean_rtt_us(&self, t0: u64, t1: u64) -> f64 {
        mean(
            self.rtts
                .iter()
                .filter(|&&(t, _)| t >= t0 && t < t1)
                .map(|&(_, r)| r as f64),
        )
    }

    /// Round trips elapsed in `[t0, t1)`: the integral of 1/RTT over time, RTT taken from the
    /// latest sample.
    pub(crate) fn rounds_between(&self, t0: u64, t1: u64) -> f64 {
        let mut rounds = 0.0;
        let mut prev: Option<(u64, u64)> = self.rtts.iter().rev().find(|&&(t, _)| t <= t0).copied();
        for &(t, r) in self.rtts.iter().filter(|&&(t, _)| t > t0 && t < t1) {
            if let Some((pt, pr)) = prev {
                rounds += (t - pt.max(t0)) as f64 / pr as f64;
            }
            prev = Some((t, r));
        }
        if let Some((pt, pr)) = prev {
            rounds += (t1 - pt.max(t0)) as f64 / pr as f64;
        }
        rounds
    }

    /// The last grid sample at or before `t`.
    pub(crate) fn sample_at(&self, t: u64) -> &Sample {
        let i = self.samples.partition_point(|s| s.t_us <= t);
        &self.samples[i.saturating_sub(1)]
    }

    /// Goodput: payload bytes delivered in order to the receiver per second of run.
    pub(crate) fn goodput_bytes_per_s(&self) -> f64 {
        self.receiver.delivered_app_bytes as f64 / (self.end_us as f64 * 1e-6)
    }
}

pub(crate) fn mean(it: impl Iterator<Item = f64>) -> f64 {
    let (mut sum, mut n) = (0.0, 0usize);
    for x in it {
        sum += x;
        n += 1;
    }
    assert!(n > 0, "mean of nothing");
    sum / n as f64
}
