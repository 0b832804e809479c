//! The Saturator over the link model (the emulator's, driven by a virtual clock): both
//! directions recorded at once, the feedback over a separate path of fixed delay.

use sprout_core::direction::Direction;
use std::collections::VecDeque;
use std::sync::Arc;

use sprout_core::Instant;
use sprout_link::{Link, LinkConfig, LinkEvent, Trace};
use sprout_saturator::{AckInfo, DataHeader, Recorder, RecorderConfig, Sender, SenderConfig};

use super::options::CheckOptions;
use super::recording::{EmuFacts, Recorded};

/// A simulated recording's parameters.
#[derive(Clone, Debug)]
pub struct SimulateOptions {
    /// Length of the recording (µs of link time from 0).
    pub duration_us: u64,
    /// When both ends start (µs of link time); the recordings' time 0 is the link's time 0.
    pub start_us: u64,
    /// Both senders' parameters.
    pub sender: SenderConfig,
    /// Both recorders' parameters.
    pub recorder: RecorderConfig,
    /// Both links' parameters (delay, queue, loss, looping).
    pub link: LinkConfig,
    /// One-way delay of the separate feedback path, µs (no capacity limit, no loss).
    pub feedback_delay_us: u64,
}

impl Default for SimulateOptions {
    /// 60 s from 0, default sender and recorder, default link, 10 ms feedback path.
    fn default() -> Self {
        SimulateOptions {
            duration_us: 60_000_000,
            start_us: 0,
            sender: SenderConfig::default(),
            recorder: RecorderConfig::default(),
            link: LinkConfig::default(),
            feedback_delay_us: 10_000,
        }
    }
}

/// The two recordings of a simulated run, and the senders' counters.
#[derive(Clone, Debug)]
pub struct SimulatedRecording {
    /// The uplink's recording (at the server).
    pub up: Recorder,
    /// The downlink's recording (at the client).
    pub down: Recorder,
    /// The uplink's sender (at the client).
    pub up_sender: Sender,
    /// The downlink's sender (at the server).
    pub down_sender: Sender,
}

/// Runs the Saturator in both directions at once over the link model (the emulator's, driven by
/// a virtual clock): data over the links, feedback over a separate path of fixed delay.
/// Deterministic.
pub fn simulate_recording(
    up: Arc<Trace>,
    down: Arc<Trace>,
    o: &SimulateOptions,
) -> SimulatedRecording {
    const SESSION: u64 = 1;
    let bytes = o.recorder.payload_bytes as usize;
    let wire = o.recorder.line_bytes;
    let mut links = [
        Link::<DataHeader>::new(
            up,
            LinkConfig {
                seed: o.link.seed.wrapping_mul(2).wrapping_add(1),
                ..o.link.clone()
            },
        ),
        Link::<DataHeader>::new(
            down,
            LinkConfig {
                seed: o.link.seed.wrapping_mul(2),
                ..o.link.clone()
            },
        ),
    ];
    let mut senders = [
        Sender::new(
            o.sender,
            SESSION,
            Direction::Up,
            Instant::from_micros(o.start_us),
        ),
        Sender::new(
            o.sender,
            SESSION,
            Direction::Down,
            Instant::from_micros(o.start_us),
        ),
    ];
    let mut recorders = [
        Recorder::new(o.recorder, SESSION, Direction::Up, Instant::ZERO),
        Recorder::new(o.recorder, SESSION, Direction::Down, Instant::ZERO),
    ];
    // Feedback in flight: (arrival time, index of the sender it is for, info), FIFO per path.
    let mut feedback: [VecDeque<(u64, AckInfo)>; 2] = Default::default();
    let mut now = o.start_us;
    loop {
        // Deliveries up to now.
        for i in 0..2 {
            let rec = &mut recorders[i];
            links[i].advance(Instant::from_micros(now), &mut |e| {
                if let LinkEvent::Delivered(d) = e {
                    rec.on_data(d.delivered, &d.payload, bytes);
                }
            });
        }
        // Feedback due.
        for i in 0..2 {
            while let Some(&(t, a)) = feedback[i].front() {
                if t > now {
                    break;
                }
                feedback[i].pop_front();
                senders[i].on_ack(Instant::from_micros(now), &a);
            }
        }
        if now >= o.duration_us {
            break;
        }
        for i in 0..2 {
            if let Some(a) = recorders[i].poll_ack(Instant::from_micros(now)) {
                feedback[i].push_back((now + o.feedback_delay_us, a));
            }
            while let Some(out) = senders[i].poll_transmit(Instant::from_micros(now)) {
                let h = senders[i].data_header(&out, None);
                links[i].send(Instant::from_micros(now), wire, h);
            }
        }
        let mut next = o.duration_us;
        for i in 0..2 {
            for t in [
                links[i].next_event().map(Instant::as_micros),
                feedback[i].front().map(|f| f.0),
                senders[i].next_timeout().map(Instant::as_micros),
                recorders[i].next_ack().map(Instant::as_micros),
            ]
            .into_iter()
            .flatten()
            {
                next = next.min(t);
            }
        }
        now = next.max(now + 1);
    }
    let [mut up_rec, mut down_rec] = recorders;
    up_rec.finish(Instant::from_micros(o.duration_us));
    down_rec.finish(Instant::from_micros(o.duration_us));
    let [up_sender, down_sender] = senders;
    SimulatedRecording {
        up: up_rec,
        down: down_rec,
        up_sender,
        down_sender,
    }
}

/// Both directions recorded over the link model on a virtual clock: (up, down) and no
/// utilization.
pub(super) fn recordings(
    o: &CheckOptions,
    up: &Arc<Trace>,
    down: &Arc<Trace>,
) -> ([Option<Recorded>; 2], Option<[EmuFacts; 2]>) {
    let mut so = SimulateOptions {
        duration_us: o.record_s() * 1_000_000,
        start_us: 300_000,
        ..SimulateOptions::default()
    };
    so.link.loss = o.loss;
    so.link.seed = o.seed;
    let r = simulate_recording(up.clone(), down.clone(), &so);
    let end = so.duration_us;
    let rec = |x: &Recorder| {
        Some(Recorded {
            summary: x.summary(Instant::from_micros(end)),
            arrivals_ms: x.sorted_arrivals_ms(),
            offset_us: 0,
        })
    };
    ([rec(&r.up), rec(&r.down)], None)
}
