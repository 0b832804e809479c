//! Properties of the per-flow queue over random sequences of push, pop, set_cap and expire:
//! the total stays within the cap after every push and set_cap, packets are conserved
//! (pushed = popped + dropped over the cap + queued), each flow's packets leave in the order
//! they came, the stats agree with `flows()`, and every output (packets, drops, counters,
//! flows) is the one a plain, slow reference model of the same rules gives: deficit round
//! robin taken turn by turn, head drop from the longest queue found by sorting, idle flows
//! forgotten by a scan.

use sprout_core::time::{Duration, Instant};
use std::collections::{BTreeMap, VecDeque};
use std::net::{IpAddr, Ipv4Addr};

use proptest::prelude::*;
use sprout_tunnel::flow_queue::{FlowQueue, FlowQueueConfig, FlowSnapshot, QueueStats};
use sprout_tunnel::FlowKey;

fn key(n: u8) -> FlowKey {
    FlowKey {
        proto: 6,
        src: IpAddr::V4(Ipv4Addr::new(10, 9, 0, n)),
        dst: IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1)),
        src_port: 40_000 + u16::from(n),
        dst_port: 443,
    }
}

/// Packet `seq` of flow `n`, `len` (at least 5) bytes.
fn packet(n: u8, seq: u32, len: usize) -> Vec<u8> {
    let mut p = vec![0x45; len];
    p[0] = n;
    p[1..5].copy_from_slice(&seq.to_be_bytes());
    p
}

fn read(p: &[u8]) -> (u8, u32) {
    (p[0], u32::from_be_bytes([p[1], p[2], p[3], p[4]]))
}

#[derive(Clone, Debug)]
enum Op {
    Push {
        flow: u8,
        len: usize,
        dt: u64,
    },
    Pop {
        dt: u64,
    },
    SetCap {
        cap: usize,
    },
    /// A forecast of `bytes` over `horizon_us` (µs; 0 is allowed).
    SetForecast {
        bytes: u64,
        horizon_us: u64,
    },
    Expire {
        dt: u64,
    },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        5 => (0u8..10, 5usize..3000, 0u64..200_000)
            .prop_map(|(flow, len, dt)| Op::Push { flow, len, dt }),
        4 => (0u64..200_000).prop_map(|dt| Op::Pop { dt }),
        1 => (0usize..25_000).prop_map(|cap| Op::SetCap { cap }),
        1 => (0u64..40_000, 0u64..400_000)
            .prop_map(|(bytes, horizon_us)| Op::SetForecast { bytes, horizon_us }),
        1 => (0u64..2_000_000).prop_map(|dt| Op::Expire { dt }),
    ]
}

fn config() -> impl Strategy<Value = FlowQueueConfig> {
    (
        100usize..2000,
        0usize..6000,
        0usize..30_000,
        1u64..1_000_000,
        1usize..12,
        1u64..500_000,
    )
        .prop_map(
            |(quantum_bytes, min_cap_bytes, extra, idle_flow_us, max_flows, cap_time_us)| {
                FlowQueueConfig {
                    quantum_bytes,
                    max_flows,
                    cap_time: Duration::from_micros(cap_time_us),
                    min_cap_bytes,
                    max_cap_bytes: min_cap_bytes + extra,
                    idle_flow: Duration::from_micros(idle_flow_us),
                }
            },
        )
}

/// One flow of the reference model.
#[derive(Clone, Debug, Default)]
struct MFlow {
    queue: VecDeque<Vec<u8>>,
    deficit: usize,
    active_seq: u64,
    idle_since: u64,
    idle_order: u64,
    sent: u64,
    dropped: u64,
}

impl MFlow {
    fn bytes(&self) -> usize {
        self.queue.iter().map(Vec::len).sum()
    }
}

/// The rules, written as plainly as possible.
struct Model {
    cfg: FlowQueueConfig,
    cap: usize,
    flows: BTreeMap<u8, MFlow>,
    /// Flows with packets, the one whose turn it is first.
    round: Vec<u8>,
    credited: bool,
    now: u64,
    next_active: u64,
    next_idle: u64,
    stats: QueueStats,
}

impl Model {
    fn new(cfg: FlowQueueConfig) -> Model {
        Model {
            cap: cfg.max_cap_bytes,
            cfg,
            flows: BTreeMap::new(),
            round: Vec::new(),
            credited: false,
            now: 0,
            next_active: 0,
            next_idle: 0,
            stats: QueueStats::default(),
        }
    }

    fn go_idle(&mut self, n: u8) {
        let f = self.flows.get_mut(&n).unwrap();
        f.deficit = 0;
        f.idle_since = self.now;
        f.idle_order = self.next_idle;
        self.next_idle += 1;
    }

    fn expire(&mut self) {
        let (now, idle) = (self.now, self.cfg.idle_flow.as_micros());
        self.flows
            .retain(|_, f| !f.queue.is_empty() || now - f.idle_since < idle);
    }

    fn enforce(&mut self) -> usize {
        let mut dropped = 0;
        while self.flows.values().map(MFlow::bytes).sum::<usize>() > self.cap {
            let mut cands: Vec<(usize, u64, u8)> = self
                .round
                .iter()
                .map(|n| (self.flows[n].bytes(), self.flows[n].active_seq, *n))
                .collect();
            cands.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
            let n = cands[0].2;
            let f = self.flows.get_mut(&n).unwrap();
            f.queue.pop_front();
            f.dropped += 1;
            dropped += 1;
            self.stats.drops.over_cap += 1;
            if f.queue.is_empty() {
                let pos = self.round.iter().position(|&m| m == n).unwrap();
                self.round.remove(pos);
                if pos == 0 {
                    self.credited = false;
                }
                self.go_idle(n);
            }
        }
        dropped
    }

    fn push(&mut self, now: u64, n: u8, p: Vec<u8>) -> usize {
        self.now = self.now.max(now);
        if !self.flows.contains_key(&n) {
            self.expire();
            if self.flows.len() >= self.cfg.max_flows {
                let oldest = self
                    .flows
                    .iter()
                    .filter(|(_, f)| f.queue.is_empty())
                    .min_by_key(|(_, f)| f.idle_order)
                    .map(|(m, _)| *m);
                match oldest {
                    Some(m) => {
                        self.flows.remove(&m);
                    }
                    None => {
                        self.stats.drops.too_many_flows += 1;
                        return 1;
                    }
                }
            }
            self.flows.insert(n, MFlow::default());
        }
        let f = self.flows.get_mut(&n).unwrap();
        if f.queue.is_empty() {
            f.deficit = 0;
            f.active_seq = self.next_active;
            self.next_active += 1;
            self.round.push(n);
        }
        f.queue.push_back(p);
        self.stats.pushed_packets += 1;
        self.enforce()
    }

    fn pop(&mut self, now: u64) -> Option<Vec<u8>> {
        self.now = self.now.max(now);
        loop {
            let n = *self.round.first()?;
            let q = self.cfg.quantum_bytes;
            let f = self.flows.get_mut(&n).unwrap();
            if !self.credited {
                f.deficit += q;
                self.credited = true;
            }
            let head = f.queue[0].len();
            if head <= f.deficit {
                f.deficit -= head;
                f.sent += head as u64;
                let p = f.queue.pop_front().unwrap();
                self.stats.popped_packets += 1;
                self.stats.popped_bytes += head as u64;
                if f.queue.is_empty() {
                    self.round.remove(0);
                    self.credited = false;
                    self.go_idle(n);
                }
                return Some(p);
            }
            self.round.rotate_left(1);
            self.credited = false;
        }
    }

    /// What pop would return, from a copy.
    fn peek_len(&self) -> Option<usize> {
        let mut copy = Model {
            cfg: self.cfg.clone(),
            cap: self.cap,
            flows: self.flows.clone(),
            round: self.round.clone(),
            credited: self.credited,
            now: self.now,
            next_active: self.next_active,
            next_idle: self.next_idle,
            stats: self.stats,
        };
        copy.pop(self.now).map(|p| p.len())
    }

    fn stats(&self) -> QueueStats {
        QueueStats {
            queued_bytes: self.flows.values().map(MFlow::bytes).sum(),
            queued_packets: self.flows.values().map(|f| f.queue.len()).sum(),
            active_flows: self.round.len(),
            tracked_flows: self.flows.len(),
            cap_bytes: self.cap,
            ..self.stats
        }
    }

    fn flows(&self) -> Vec<FlowSnapshot> {
        let mut out: Vec<FlowSnapshot> = self
            .flows
            .iter()
            .map(|(n, f)| FlowSnapshot {
                flow: key(*n),
                queued_bytes: f.bytes(),
                queued_packets: f.queue.len(),
                sent_bytes: f.sent,
                dropped_packets: f.dropped,
            })
            .collect();
        out.sort_by(|a, b| {
            (b.queued_bytes, b.sent_bytes, a.flow).cmp(&(a.queued_bytes, a.sent_bytes, b.flow))
        });
        out
    }
}

/// The invariants every state must satisfy, from the queue alone.
fn check_invariants(q: &FlowQueue) -> Result<(), TestCaseError> {
    let s = q.stats();
    let flows = q.flows();
    prop_assert_eq!(s.queued_bytes, q.bytes());
    prop_assert_eq!(s.queued_packets, q.packets());
    prop_assert_eq!(
        s.queued_bytes,
        flows.iter().map(|f| f.queued_bytes).sum::<usize>()
    );
    prop_assert_eq!(
        s.queued_packets,
        flows.iter().map(|f| f.queued_packets).sum::<usize>()
    );
    prop_assert_eq!(
        s.active_flows,
        flows.iter().filter(|f| f.queued_packets > 0).count()
    );
    prop_assert_eq!(s.tracked_flows, flows.len());
    prop_assert!(s.tracked_flows <= q.config().max_flows);
    prop_assert!(flows
        .iter()
        .all(|f| (f.queued_bytes == 0) == (f.queued_packets == 0)));
    let sorted = flows
        .windows(2)
        .all(|w| (w[0].queued_bytes, w[0].sent_bytes) >= (w[1].queued_bytes, w[1].sent_bytes));
    prop_assert!(sorted, "flows() is sorted by queued bytes, then sent bytes");
    // Conservation: every accepted packet is popped, dropped over the cap or still queued.
    prop_assert_eq!(
        s.pushed_packets,
        s.popped_packets + s.drops.over_cap + s.queued_packets as u64
    );
    prop_assert_eq!(q.is_empty(), q.packets() == 0);
    prop_assert_eq!(q.peek_len().is_some(), !q.is_empty());
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn flow_queue_follows_its_rules(cfg in config(), ops in prop::collection::vec(op(), 1..300)) {
        let mut q = FlowQueue::new(cfg.clone());
        let mut model = Model::new(cfg.clone());
        let mut now = 0u64;
        let mut next_seq = [0u32; 10];
        // The last sequence number popped per flow: FIFO within a flow.
        let mut last_popped: [Option<u32>; 10] = [None; 10];
        let mut pushed_bytes = 0u64;
        for op in ops {
            match op {
                Op::Push { flow, len, dt } => {
                    now += dt;
                    let p = packet(flow, next_seq[usize::from(flow)], len);
                    next_seq[usize::from(flow)] += 1;
                    let dropped = q.push(Instant::from_micros(now), key(flow), p.clone());
                    prop_assert_eq!(dropped, model.push(now, flow, p));
                    prop_assert!(q.bytes() <= q.cap(), "within the cap after push");
                    pushed_bytes += len as u64;
                }
                Op::Pop { dt } => {
                    now += dt;
                    let peek = q.peek_len();
                    prop_assert_eq!(peek, model.peek_len());
                    let got = q.pop(Instant::from_micros(now));
                    prop_assert_eq!(got.as_ref().map(Vec::len), peek);
                    let want = model.pop(now);
                    prop_assert_eq!(&got, &want);
                    if let Some(p) = got {
                        let (flow, seq) = read(&p);
                        let last = &mut last_popped[usize::from(flow)];
                        prop_assert!(last.is_none_or(|l| seq > l), "FIFO within a flow");
                        *last = Some(seq);
                    }
                }
                Op::SetCap { cap } => {
                    let dropped = q.set_cap(cap);
                    prop_assert_eq!(dropped, model.enforce_after_set(cap));
                    prop_assert!(q.cap() >= cfg.min_cap_bytes.min(cfg.max_cap_bytes));
                    prop_assert!(q.cap() <= cfg.max_cap_bytes);
                    prop_assert!(q.bytes() <= q.cap(), "within the cap after set_cap");
                }
                Op::SetForecast { bytes, horizon_us } => {
                    let dropped = q.set_forecast(bytes, Duration::from_micros(horizon_us));
                    let cap = model.cap_for_forecast(bytes, horizon_us);
                    prop_assert_eq!(dropped, model.enforce_after_set(cap));
                    prop_assert_eq!(q.cap(), model.cap);
                    prop_assert!(q.bytes() <= q.cap(), "within the cap after set_forecast");
                }
                Op::Expire { dt } => {
                    now += dt;
                    q.expire(Instant::from_micros(now));
                    model.now = model.now.max(now);
                    model.expire();
                }
            }
            check_invariants(&q)?;
            prop_assert_eq!(q.stats(), model.stats());
            prop_assert_eq!(q.flows(), model.flows());
            prop_assert!(q.stats().popped_bytes + q.bytes() as u64 <= pushed_bytes);
        }
        // Everything left comes out, in the model's order.
        while let Some(p) = q.pop(Instant::from_micros(now)) {
            prop_assert_eq!(Some(p), model.pop(now));
        }
        prop_assert!(model.pop(now).is_none());
        check_invariants(&q)?;
    }
}

impl Model {
    /// The cap of a forecast of `bytes` over `horizon_us`: what the link drains in the cap
    /// time at that rate, in floating point here (exact for these magnitudes), clamped; a
    /// zero horizon is an unbounded rate.
    fn cap_for_forecast(&self, bytes: u64, horizon_us: u64) -> usize {
        let min = self.cfg.min_cap_bytes.min(self.cfg.max_cap_bytes);
        if horizon_us == 0 {
            return self.cfg.max_cap_bytes;
        }
        let t = self.cfg.cap_time.as_micros() as f64;
        let raw = (bytes as f64 * t / horizon_us as f64).floor() as usize;
        raw.clamp(min, self.cfg.max_cap_bytes)
    }

    fn enforce_after_set(&mut self, cap: usize) -> usize {
        let min = self.cfg.min_cap_bytes.min(self.cfg.max_cap_bytes);
        self.cap = cap.clamp(min, self.cfg.max_cap_bytes);
        self.enforce()
    }
}

/// Many flows: 1000 flows with a packet each at the default configuration (a floor of two
/// full packets), then a cap that keeps two packets: state stays bounded and the survivors are
/// the two latest active.
#[test]
fn a_thousand_flows_and_an_outage() {
    let mut q = FlowQueue::new(FlowQueueConfig {
        min_cap_bytes: 3000,
        ..FlowQueueConfig::default()
    });
    for i in 0..1000u32 {
        let k = FlowKey {
            src_port: i as u16,
            ..key(0)
        };
        assert_eq!(
            q.push(Instant::from_micros(u64::from(i)), k, packet(0, i, 1400)),
            0
        );
    }
    assert_eq!(q.stats().active_flows, 1000);
    assert_eq!(q.set_cap(0), 998);
    let left: Vec<u32> = std::iter::from_fn(|| q.pop(Instant::from_micros(2000)))
        .map(|p| read(&p).1)
        .collect();
    assert_eq!(left, [998, 999]);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    /// The cap is a time at the forecast rate: it never falls as the rate rises, stays within
    /// its bounds, and between them is the cap time's worth of the rate (to the byte, rounded
    /// down); a forecast over a horizon gives the cap of its rate.
    #[test]
    fn the_cap_is_a_time_at_the_rate(
        cfg in config(),
        rates in prop::collection::vec(0u64..2_000_000_000, 2..20),
        horizon_ms in 1u64..1000,
    ) {
        let mut rates = rates;
        rates.sort_unstable();
        let caps: Vec<usize> = rates.iter().map(|&r| cfg.cap_for_rate(r)).collect();
        let min = cfg.min_cap_bytes.min(cfg.max_cap_bytes);
        for (w, (&r, &c)) in caps.windows(2).zip(rates.iter().zip(&caps)) {
            prop_assert!(w[0] <= w[1], "monotone in the rate");
            prop_assert!(c >= min && c <= cfg.max_cap_bytes);
            let exact = r as f64 * cfg.cap_time.as_micros() as f64 / 1e6;
            if exact >= min as f64 + 1.0 && exact < cfg.max_cap_bytes as f64 {
                prop_assert!((c as f64 - exact).abs() < 1.0, "{c} vs {exact}");
            }
            // A forecast of r bytes/s over `horizon_ms` is the same rate.
            let bytes = r * horizon_ms / 1000;
            let via = cfg.cap_for_forecast(bytes, Duration::from_millis(horizon_ms));
            let direct = cfg.cap_for_rate(bytes * 1000 / horizon_ms);
            prop_assert!(via.abs_diff(direct) <= 1 + (cfg.cap_time.as_micros() / 1000) as usize);
        }
    }
}

/// The default cap across rates (forecasts over the paper's 160 ms horizon): 160 ms of the
/// forecast rate. At the paper's rates it is the forecast itself in bytes (as before the cap
/// was a time), and at 100 Mbit/s it holds a TCP download's window: 2 MB, four times the
/// 500 KB of its 40 ms path, where a cap made for 12 Mbit/s held 240 KB. The ceiling is
/// 160 ms of 1 Gbit/s.
#[test]
fn the_default_cap_scales_from_the_papers_rates_to_a_gigabit() {
    let cfg = FlowQueueConfig::default();
    let horizon = Duration::from_millis(160);
    for packets in [44u64, 100, 240] {
        assert_eq!(
            cfg.cap_for_forecast(packets * 1500, horizon),
            (packets * 1500) as usize
        );
    }
    assert_eq!(cfg.cap_for_forecast(0, horizon), 64 << 10);
    let mbit = |m: u64| m * 1_000_000 / 8;
    assert_eq!(cfg.cap_for_rate(mbit(12)), 240_000);
    assert_eq!(cfg.cap_for_rate(mbit(100)), 2_000_000);
    assert_eq!(cfg.cap_for_rate(mbit(1000)), 20_000_000);
    assert_eq!(cfg.cap_for_rate(mbit(10_000)), 20_000_000);
    assert_eq!(cfg.max_cap_bytes, 20_000_000);
    // A 100 Mbit/s download's window beyond its 40 ms path fits under the cap at once.
    let mut q = FlowQueue::new(cfg);
    assert_eq!(q.set_forecast(mbit(100) * 160 / 1000, horizon), 0);
    for i in 0..(500_000 / 1500) {
        assert_eq!(q.push(Instant::ZERO, key(1), packet(1, i, 1500)), 0);
    }
}
