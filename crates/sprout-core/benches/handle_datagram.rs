//! Per-datagram cost of `Connection::handle_datagram`: a receiver taking a 1000-packet/s stream
//! of genuine datagrams, and the same stream with 20,000 crafted datagrams mixed in (issue 12:
//! each cost 32 us in the old received-or-lost scan). The crafted ones lie ahead of the
//! stream within the sequence bound, so they are accepted and tracked: the worst case for the
//! bookkeeping. Each iteration feeds the whole stream to a fresh receiver; the
//! reported time divided by the stream's length is the cost per datagram.
// criterion_main! generates a `main` that cannot carry a doc comment.
#![allow(missing_docs)]

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

criterion_group!(benches, bench);
criterion_main!(benches);
