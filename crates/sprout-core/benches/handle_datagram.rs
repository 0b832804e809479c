//! Per-datagram cost of `Connection::handle_datagram`: a receiver taking a 1000-packet/s stream
//! of genuine datagrams, and the same stream with 20,000 crafted datagrams mixed in (issue 12:
//! each cost 32 us in the old received-or-lost scan). The crafted ones lie ahead of the
//! stream within the sequence bound, so they are accepted and tracked: the worst case for the
//! bookkeeping. Each iteration feeds the whole stream to a fresh receiver; the
//! reported time divided by the stream's length is the cost per datagram.
//!
//! The group "wide model at 1 Gbit/s" runs a bulk transfer between two connections with
//! `Config::wide()` over a simulated 1 Gbit/s link (one 1,500-byte datagram each 12 us, 10 ms
//! each way) and times each step of the core separately, per call: the sender's
//! `poll_transmit` (its window plus the encoding of a full-size datagram), the sender's
//! window alone (`window_bytes`), the receiver's `handle_datagram` of a full-size datagram,
//! and the receiver's tick with the forecast it sends (`handle_timeout` at a tick boundary, about
//! 1,667 datagrams a tick, then `poll_transmit`, which makes the forecast; timed on copies of
//! the receiver just before a tick). The average cost of the ticks and of the
//! sender taking a forecast (`handle_datagram` of the receiver's feedback) over the whole
//! transfer is printed too.
// criterion_main! generates a `main` that cannot carry a doc comment.
#![allow(missing_docs)]

use std::collections::VecDeque;
use std::time::Duration as StdDuration;

use criterion::{black_box, criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use sprout_core::wire::{self, Header};
use sprout_core::{Config, Connection, Instant};

/// Genuine datagrams in a stream.
const GENUINE: u64 = 20_000;
/// Crafted datagrams mixed into the attacked stream.
const CRAFTED: u64 = 20_000;

/// (arrival time in us, datagram) for `GENUINE` datagrams of 1400 payload bytes, 1 ms apart,
/// numbered as a sender numbers them (throwaway 10 datagrams back).
fn genuine(overhead: u64) -> Vec<(u64, Vec<u8>)> {
    let payload = [0x5a; 1400];
    let len = (wire::FIXED_HEADER_BYTES + payload.len()) as u64 + overhead;
    (0..GENUINE)
        .map(|i| {
            let h = Header {
                seq: i * len,
                throwaway: i.saturating_sub(10) * len,
                time_to_next_us: 0,
                sent_us: i * 1000,
                heartbeat: false,
                app_limited: false,
                feedback: None,
            };
            let mut d = Vec::new();
            wire::encode(&h, &payload, &mut d);
            (1000 + i * 1000, d)
        })
        .collect()
}

/// The genuine stream with `CRAFTED` small datagrams interleaved, their sequence numbers 100
/// bytes apart starting 100 kB ahead of the stream (all within the sequence bound).
fn attacked(stream: &[(u64, Vec<u8>)]) -> Vec<(u64, Vec<u8>)> {
    let mut out = Vec::new();
    for (i, (t, d)) in stream.iter().enumerate() {
        let g = wire::decode(d).unwrap().header;
        out.push((*t, d.clone()));
        if (i as u64) < CRAFTED {
            let h = Header {
                seq: g.seq + 100_000 + 100 * i as u64,
                ..g
            };
            let mut c = Vec::new();
            wire::encode(&h, &[], &mut c);
            out.push((*t, c));
        }
    }
    out
}

fn bench(c: &mut Criterion) {
    let config = Config::default();
    let normal = genuine(config.link_overhead_bytes as u64);
    let attack = attacked(&normal);
    let mut g = c.benchmark_group("handle_datagram");
    g.sample_size(10);
    for (name, stream) in [("normal", &normal), ("20000 crafted", &attack)] {
        g.throughput(Throughput::Elements(stream.len() as u64));
        g.bench_function(name, |b| {
            b.iter_batched(
                || Connection::new(config.clone(), Instant::ZERO).unwrap(),
                |mut r| {
                    for (t, d) in stream.iter() {
                        let _ = black_box(r.handle_datagram(Instant::from_micros(*t), d));
                    }
                    r
                },
                BatchSize::LargeInput,
            )
        });
    }
    g.finish();
}

/// Time between datagrams of 1,500 bytes at 1 Gbit/s (83,333 datagrams/s), us.
const GIGABIT_STEP_US: u64 = 12;
/// One-way propagation delay of the simulated link, us.
const ONE_WAY_US: u64 = 10_000;
/// The bottleneck's queue limit, datagrams (100 ms at 1 Gbit/s): beyond it, tail drop.
const QUEUE_LIMIT: usize = 8_333;

/// What one phase of the core cost over the calls counted: total time and calls.
#[derive(Default, Clone, Copy)]
struct Phase {
    time: StdDuration,
    calls: u64,
}

impl Phase {
    /// Runs `f`, adding its time and a call.
    fn time<T>(&mut self, f: impl FnOnce() -> T) -> T {
        self.time_if(f, |_| true)
    }

    /// Runs `f`, adding its time and a call if `counts` says its result is one to count.
    fn time_if<T>(&mut self, f: impl FnOnce() -> T, counts: impl FnOnce(&T) -> bool) -> T {
        let start = std::time::Instant::now();
        let r = f();
        let elapsed = start.elapsed();
        if counts(&r) {
            self.time += elapsed;
            self.calls += 1;
        }
        r
    }
}

/// The phases timed in [`Gigabit`].
#[derive(Default, Clone, Copy)]
struct Phases {
    poll_transmit: Phase,
    window: Phase,
    receive: Phase,
    tick: Phase,
    feedback: Phase,
}

/// A bulk transfer from `a` to `b` over a 1 Gbit/s bottleneck with a 10 ms delay each way,
/// both with the wide model; `b` sends only its feedback (heartbeats).
struct Gigabit {
    a: Connection,
    b: Connection,
    now_us: u64,
    /// Datagrams waiting at the bottleneck.
    queue: VecDeque<Vec<u8>>,
    /// (arrival time in us, datagram) on the way to `b`, and to `a`.
    to_b: VecDeque<(u64, Vec<u8>)>,
    to_a: VecDeque<(u64, Vec<u8>)>,
    buf: Vec<u8>,
    phases: Phases,
    /// Set: the next time `b` is due, a copy of it and the time are kept in `due`.
    keep_due: bool,
    due: Option<(Connection, Instant)>,
}

impl Gigabit {
    fn new() -> Gigabit {
        let config = Config::wide();
        let mut a = Connection::new(config.clone(), Instant::ZERO).unwrap();
        a.set_bulk(true);
        let mut b = Connection::new(config, Instant::ZERO).unwrap();
        b.set_keep_incoming(false);
        Gigabit {
            a,
            b,
            now_us: 0,
            queue: VecDeque::new(),
            to_b: VecDeque::new(),
            to_a: VecDeque::new(),
            buf: Vec::with_capacity(1500),
            phases: Phases::default(),
            keep_due: false,
            due: None,
        }
    }

    /// One bottleneck slot (12 us): `a` sends what its window allows, one datagram leaves
    /// the queue, `b` ticks and answers if due, arrivals are handled.
    fn step(&mut self) {
        self.now_us += GIGABIT_STEP_US;
        let now = Instant::from_micros(self.now_us);
        let p = &mut self.phases;
        p.window.time(|| black_box(self.a.window_bytes(now)));
        for _ in 0..64 {
            let (a, buf) = (&mut self.a, &mut self.buf);
            let sent = p
                .poll_transmit
                .time_if(|| a.poll_transmit(now, buf), Option::is_some);
            if sent.is_none() {
                break;
            }
            if self.queue.len() < QUEUE_LIMIT {
                self.queue.push_back(self.buf.clone());
            }
        }
        if let Some(d) = self.queue.pop_front() {
            self.to_b.push_back((self.now_us + ONE_WAY_US, d));
        }
        if self.b.poll_timeout().is_some_and(|t| t <= now) {
            if self.keep_due {
                self.due = Some((self.b.clone(), now));
            }
            let ticks = self.b.stats().receiver.ticks;
            let (b, buf, to_a, now_us) = (&mut self.b, &mut self.buf, &mut self.to_a, self.now_us);
            // The tick and the forecast it sends (made when the feedback leaves); counted only
            // when a tick ran (the deadline may be a heartbeat's).
            p.tick.time_if(
                || {
                    b.handle_timeout(now);
                    while b.poll_transmit(now, buf).is_some() {
                        to_a.push_back((now_us + ONE_WAY_US, buf.clone()));
                    }
                    b.stats().receiver.ticks > ticks
                },
                |ticked| *ticked,
            );
        }
        // Arrivals after the timers: a datagram arriving past a tick's end would run the
        // tick inside `handle_datagram`.
        while self.to_b.front().is_some_and(|(t, _)| *t <= self.now_us) {
            let (_, d) = self.to_b.pop_front().unwrap();
            let b = &mut self.b;
            let _ = black_box(p.receive.time(|| b.handle_datagram(now, &d)));
        }
        while self.to_a.front().is_some_and(|(t, _)| *t <= self.now_us) {
            let (_, d) = self.to_a.pop_front().unwrap();
            let a = &mut self.a;
            let _ = black_box(p.feedback.time(|| a.handle_datagram(now, &d)));
        }
    }

    /// A copy of the receiver just before one of its ticks, and the time of that tick.
    fn before_tick(&mut self) -> (Connection, Instant) {
        self.keep_due = true;
        loop {
            self.step();
            if let Some((b, now)) = self.due.take() {
                let mut copy = b.clone();
                let ticks = copy.stats().receiver.ticks;
                copy.handle_timeout(now);
                if copy.stats().receiver.ticks > ticks {
                    self.keep_due = false;
                    return (b, now);
                }
            }
        }
    }

    /// Runs until `phase` of the phases has been called `calls` more times; the time those
    /// calls took.
    fn measure(&mut self, calls: u64, phase: fn(&Phases) -> Phase) -> StdDuration {
        let before = phase(&self.phases);
        while phase(&self.phases).calls < before.calls + calls {
            self.step();
        }
        phase(&self.phases).time - before.time
    }
}

fn gigabit(c: &mut Criterion) {
    let mut t = Gigabit::new();
    // Three simulated seconds: the sender's window opens up to the link's rate.
    while t.now_us < 3_000_000 {
        t.step();
    }
    let rate = t.b.incoming_rate_pps();
    let received = t.b.stats().app_bytes_received;
    eprintln!(
        "wide model at 1 Gbit/s: the receiver's rate estimate {rate:.0} datagrams/s, {:.0} Mbit/s of payload over 3 s",
        received as f64 * 8.0 / 3e6
    );
    assert!(
        rate > 40_000.0,
        "the transfer runs near 1 Gbit/s ({rate:.0}/s)"
    );
    assert!(
        t.b.config().max_datagram_bytes + 32 == 1472,
        "full-size datagrams"
    );
    let mut g = c.benchmark_group("wide model at 1 Gbit/s");
    g.sample_size(20);
    // A forecast comes once a tick or less: its cost is the transfer's average (below).
    let phases: [(&str, fn(&Phases) -> Phase); 3] = [
        ("sender poll_transmit (window + encode)", |p| {
            p.poll_transmit
        }),
        ("sender window_bytes", |p| p.window),
        ("receiver handle_datagram (full size)", |p| p.receive),
    ];
    for (name, phase) in phases {
        g.bench_function(name, |b| b.iter_custom(|iters| t.measure(iters, phase)));
    }
    // Each tick is timed on a copy of the receiver as it was just before one (a tick comes
    // once in 1,667 datagrams: timing it in the running transfer would take too long).
    let (receiver, at) = t.before_tick();
    g.bench_function(
        "receiver tick and forecast (handle_timeout, poll_transmit)",
        |b| {
            b.iter_batched(
                || (receiver.clone(), Vec::with_capacity(1500)),
                |(mut r, mut buf)| {
                    r.handle_timeout(at);
                    while r.poll_transmit(at, &mut buf).is_some() {}
                    (r, buf)
                },
                BatchSize::SmallInput,
            )
        },
    );
    g.finish();
    for (name, p) in [
        ("receiver ticks", t.phases.tick),
        ("forecasts taken by the sender", t.phases.feedback),
    ] {
        eprintln!(
            "{name} in the transfer: {} taking {:.2} us each on average",
            p.calls,
            p.time.as_secs_f64() * 1e6 / p.calls.max(1) as f64
        );
    }
}

criterion_group!(benches, bench, gigabit);
criterion_main!(benches);
