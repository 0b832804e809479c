//! Fuzz target: `sprout_core::Connection::handle_datagram` with decoded-but-hostile headers.
//!
//! Two connections, A (a bulk sender) and B, are run into the middle of a transfer over a
//! fixed-delay path once, in [`ConnectionTarget::new`]. Each input is then read (with
//! `arbitrary::Unstructured`) as a short script of steps applied to that live pair: a hostile
//! datagram to A or to B, either raw bytes or a genuine header with some fields replaced by
//! boundary integers (so that it decodes), or time moving on, which delivers the genuine
//! datagrams in flight and lets both send. After every input the invariants are checked:
//! genuine datagrams are never refused, the window and the bursts stay bounded, the tracked
//! state stays bounded. The pair is restored from the prepared snapshot every
//! [`RESET_EVERY`] inputs, so that each input costs microseconds and the state never drifts
//! far from a running transfer.

use std::collections::VecDeque;

use arbitrary::Unstructured;
use sprout_core::receiver::MAX_TRACKED;
use sprout_core::wire::{self, Feedback, Header, MAX_FORECAST_TICKS};
use sprout_core::{Config, Connection, Duration, Instant};

use crate::Target;

/// One-way delay of the path, in microseconds.
const DELAY_US: u64 = 20_000;
/// Inputs between two restorations of the prepared pair.
pub const RESET_EVERY: u64 = 1000;
/// Most steps one input runs.
const MAX_STEPS: usize = 8;
/// A window above this many link bytes is a runaway (the largest a capped forecast allows at
/// the defaults is 234 packets, 351 kB).
const MAX_WINDOW_BYTES: u64 = 1 << 20;
/// More datagrams than this from one endpoint at one instant is a runaway window.
const MAX_BURST: usize = 400;

/// Boundary integers where arithmetic breaks.
const EDGES: [u64; 10] = [
    0,
    1,
    0x7fff_ffff,
    0x8000_0000,
    0xffff_ffff,
    1 << 32,
    1 << 63,
    u64::MAX - 1,
    u64::MAX,
    u64::MAX / 2,
];

/// Two endpoints, the datagrams in flight between them, and the time.
#[derive(Clone)]
struct Pair {
    a: Connection,
    b: Connection,
    /// (arrival time, to B?, datagram), in arrival order.
    in_flight: VecDeque<(Instant, bool, Vec<u8>)>,
    now: Instant,
    /// The last genuine datagram each way (A to B, B to A).
    last: [Option<Vec<u8>>; 2],
    /// Whether a hostile datagram was accepted since the pair was prepared. An accepted one
    /// was within the bounds of a conforming peer, but it may still make a genuine datagram
    /// look impossible later (e.g. a plausible sequence number ahead raises received-or-lost);
    /// until then every genuine datagram must be accepted.
    tainted: bool,
}

impl Pair {
    fn new() -> Pair {
        let mut a =
            Connection::new(Config::default(), Instant::ZERO).expect("default config is valid");
        let mut b =
            Connection::new(Config::default(), Instant::ZERO).expect("default config is valid");
        a.set_bulk(true);
        a.set_keep_incoming(false);
        b.set_keep_incoming(false);
        Pair {
            a,
            b,
            in_flight: VecDeque::new(),
            now: Instant::ZERO,
            last: [None, None],
            tainted: false,
        }
    }

    /// Moves time on by `us`, 1 ms at a time: genuine datagrams arrive, timers run, both send.
    fn advance(&mut self, us: u64) {
        let end = self.now + Duration::from_micros(us);
        let mut buf = Vec::new();
        while self.now < end {
            self.now = (self.now + Duration::from_millis(1)).min(end);
            let now = self.now;
            while self.in_flight.front().is_some_and(|(t, _, _)| *t <= now) {
                let (_, to_b, d) = self.in_flight.pop_front().expect("front exists");
                let c = if to_b { &mut self.b } else { &mut self.a };
                if let Err(e) = c.handle_datagram(now, &d) {
                    assert!(self.tainted, "a genuine datagram was dropped: {e}");
                }
                self.last[usize::from(!to_b)] = Some(d);
            }
            self.a.handle_timeout(now);
            self.b.handle_timeout(now);
            for to_b in [true, false] {
                let c = if to_b { &mut self.a } else { &mut self.b };
                let mut burst = 0;
                while c.poll_transmit(now, &mut buf).is_some() {
                    burst += 1;
                    assert!(burst <= MAX_BURST, "{burst} datagrams at one instant");
                    self.in_flight.push_back((
                        now + Duration::from_micros(DELAY_US),
                        to_b,
                        buf.clone(),
                    ));
                }
            }
        }
    }

    /// A template header: the last genuine one sent toward A (`to_b` false) or B.
    fn template(&self, to_b: bool) -> Header {
        self.last[usize::from(!to_b)]
            .as_deref()
            .and_then(|d| wire::decode(d).ok())
            .map(|d| d.header)
            .unwrap_or(Header {
                seq: 0,
                throwaway: 0,
                time_to_next_us: 0,
                sent_us: 0,
                heartbeat: false,
                app_limited: false,
                feedback: None,
            })
    }

    fn check_invariants(&mut self) {
        let now = self.now;
        for c in [&mut self.a, &mut self.b] {
            let w = c.window_bytes(now);
            assert!(w <= MAX_WINDOW_BYTES, "window of {w} bytes");
            assert!(c.queue_estimate(now) < 1 << 40);
            assert!(c.tracked_datagrams() <= MAX_TRACKED);
            assert!(c.incoming_bytes() <= c.config().max_incoming_bytes);
            assert!(c.incoming_rate_pps().is_finite());
            if let Some(f) = c.peer_forecast() {
                assert!(f.len() <= MAX_FORECAST_TICKS);
            }
            assert!(c.poll_timeout().is_some());
        }
    }
}

/// A u64 for a hostile field: a boundary, near the genuine value, or anything.
fn hostile_u64(u: &mut Unstructured<'_>, genuine: u64) -> arbitrary::Result<u64> {
    Ok(match u.int_in_range(0u8..=3)? {
        0 => EDGES[u.choose_index(EDGES.len())?],
        1 => genuine.wrapping_add(u.int_in_range(0u64..=1 << 24)?),
        2 => genuine.wrapping_sub(u.int_in_range(0u64..=1 << 24)?),
        _ => u.arbitrary()?,
    })
}

fn hostile_u32(u: &mut Unstructured<'_>, genuine: u32) -> arbitrary::Result<u32> {
    Ok(hostile_u64(u, genuine as u64)? as u32)
}

/// A decodable header from `t` with some fields made hostile.
fn hostile_header(u: &mut Unstructured<'_>, t: Header) -> arbitrary::Result<Header> {
    let mut h = t;
    let fields: u8 = u.arbitrary()?;
    if fields & 1 != 0 {
        h.seq = hostile_u64(u, t.seq)?;
    }
    if fields & 2 != 0 {
        h.throwaway = hostile_u64(u, t.throwaway)?;
    }
    if fields & 4 != 0 {
        h.time_to_next_us = hostile_u32(u, t.time_to_next_us)?;
    }
    if fields & 8 != 0 {
        h.sent_us = u.arbitrary()?;
    }
    if fields & 16 != 0 {
        h.heartbeat = !h.heartbeat;
    }
    if fields & 0xe0 != 0 {
        let base = t.feedback.unwrap_or(Feedback::new(0, 0, &[0]));
        let id = if fields & 0x20 != 0 {
            hostile_u32(u, base.forecast_id)?
        } else {
            base.forecast_id
        };
        let rol = if fields & 0x40 != 0 {
            hostile_u64(u, base.received_or_lost)?
        } else {
            base.received_or_lost
        };
        let mut counts = base.forecast().to_vec();
        if fields & 0x80 != 0 {
            let n = u.int_in_range(1..=MAX_FORECAST_TICKS)?;
            counts.resize(n, counts.last().copied().unwrap_or(0));
            for c in counts.iter_mut() {
                if u.ratio(1u8, 3)? {
                    *c = hostile_u32(u, *c)?;
                }
            }
            // Keep it cumulative so that it decodes.
            for i in 1..n {
                counts[i] = counts[i].max(counts[i - 1]);
            }
        }
        h.feedback = Some(Feedback::new(id, rol, &counts));
    }
    // Keep it decodable: throwaway at most seq.
    h.throwaway = h.throwaway.min(h.seq);
    Ok(h)
}

/// A connection in the middle of a transfer, fed hostile datagrams.
pub struct ConnectionTarget {
    prepared: Pair,
    live: Pair,
    inputs: u64,
    buf: Vec<u8>,
    /// Hostile datagrams accepted (plausible values) and dropped so far.
    pub accepted: u64,
    /// Hostile datagrams dropped so far (malformed or rejected).
    pub dropped: u64,
}

impl ConnectionTarget {
    /// A new target: runs the prepared pair 1.5 s into a transfer (about 100 ms of work).
    pub fn new() -> Self {
        let mut prepared = Pair::new();
        prepared.advance(1_500_000);
        ConnectionTarget {
            live: prepared.clone(),
            prepared,
            inputs: 0,
            buf: Vec::new(),
            accepted: 0,
            dropped: 0,
        }
    }

    fn script(&mut self, u: &mut Unstructured<'_>) -> arbitrary::Result<()> {
        for _ in 0..MAX_STEPS {
            if u.is_empty() {
                break;
            }
            match u.int_in_range(0u8..=3)? {
                // Raw bytes, most of them starting like a Sprout datagram.
                0 => {
                    let to_b: bool = u.arbitrary()?;
                    let n = u.int_in_range(0usize..=200)?;
                    let mut d = u.bytes(n.min(u.len()))?.to_vec();
                    if d.len() >= 2 && u.arbitrary::<bool>()? {
                        d[0] = wire::MAGIC;
                        d[1] = wire::VERSION;
                    }
                    self.deliver_hostile(to_b, &d, false);
                }
                // A decodable header with hostile fields.
                1 | 2 => {
                    let to_b: bool = u.arbitrary()?;
                    let h = hostile_header(u, self.live.template(to_b))?;
                    let payload = if h.heartbeat {
                        0
                    } else {
                        u.int_in_range(0usize..=1400)?
                    };
                    let mut d = Vec::new();
                    self.buf.resize(payload, 0x5a);
                    wire::encode(&h, &self.buf, &mut d);
                    self.deliver_hostile(to_b, &d, true);
                }
                // Time moves on: genuine datagrams arrive, both endpoints send.
                _ => {
                    let ms = u.int_in_range(0u64..=30)?;
                    self.live.advance(ms * 1000);
                }
            }
        }
        Ok(())
    }

    fn deliver_hostile(&mut self, to_b: bool, d: &[u8], decodes: bool) {
        let now = self.live.now;
        let c = if to_b {
            &mut self.live.b
        } else {
            &mut self.live.a
        };
        let before = c.stats();
        let result = c.handle_datagram(now, d);
        if decodes {
            assert!(wire::decode(d).is_ok(), "the hostile header decodes");
        }
        if result.is_ok() {
            self.live.tainted = true;
            self.accepted += 1;
        } else {
            self.dropped += 1;
        }
        if let Err(e) = result {
            // Dropped: counted once, nothing else moved.
            assert!(!e.to_string().is_empty());
            let after = c.stats();
            let counted = (after.malformed - before.malformed)
                + (after.rejected.total() - before.rejected.total());
            assert_eq!(counted, 1, "a dropped datagram is counted once");
            assert_eq!(after.receiver, before.receiver);
            assert_eq!(after.app_bytes_received, before.app_bytes_received);
        }
    }
}

impl Default for ConnectionTarget {
    fn default() -> Self {
        Self::new()
    }
}

impl Target for ConnectionTarget {
    fn name(&self) -> &'static str {
        "connection"
    }

    /// Scripts that exercise each kind of step.
    fn seeds(&mut self) -> Vec<Vec<u8>> {
        vec![
            // Hostile header to B with every field replaced, then 10 ms.
            vec![1, 1, 0xff, 0, 0, 0, 0, 0, 3, 10],
            // Hostile header to A with a forecast change, then 30 ms.
            vec![2, 0, 0xe0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3, 30],
            // Raw bytes, then time.
            vec![0, 1, 40, 1, 0x53, 2, 0, 0, 0, 0, 0, 0, 0, 0, 3, 5],
            // Only time.
            vec![3, 20, 3, 20, 3, 20],
        ]
    }

    fn run(&mut self, input: &[u8]) {
        self.inputs += 1;
        if self.inputs.is_multiple_of(RESET_EVERY) {
            self.live = self.prepared.clone();
        }
        let mut u = Unstructured::new(input);
        // Running out of input ends the script early; that is not an error.
        let _ = self.script(&mut u);
        self.live.check_invariants();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostile_datagrams_are_both_accepted_and_dropped() {
        let mut t = ConnectionTarget::new();
        let r = crate::run(&mut t, 20_000, 3, &mut |_| {});
        assert!(r.panic.is_none(), "{:?}", r.panic);
        assert!(t.accepted > 500, "{} accepted", t.accepted);
        assert!(t.dropped > 500, "{} dropped", t.dropped);
    }
}
