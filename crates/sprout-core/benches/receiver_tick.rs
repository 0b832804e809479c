//! One receiver tick (evolve + observe + forecast) and model start-up, at the paper's parameters,
//! and the wide model's tick from a trickle to 1 Gbit/s.
// criterion_main! generates a `main` that cannot carry a doc comment.
#![allow(missing_docs)]

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use sprout_core::estimator_trait::Estimator;
use sprout_core::forecast::ForecastTables;
use sprout_core::{ModelParams, RateModel, WideEstimator, WideParams};

/// One receiver tick: evolve, observe `count` packets, forecast into `out`; counts ticks in `i`.
fn one_tick(
    model: &mut RateModel,
    tables: &ForecastTables,
    count: f64,
    out: &mut [u32; 8],
    i: &mut usize,
) {
    model.evolve();
    model.observe(count);
    tables.cautious(model.probabilities(), 0.95, out);
    *i += 1;
    black_box(&out);
}

fn tick(c: &mut Criterion) {
    let params = ModelParams::default();
    let tables = ForecastTables::shared(&params);
    let mut model = RateModel::new(&params);
    // Packet counts per tick drawn from a link that varies like the traces (0..25 per tick).
    let counts: Vec<f64> = (0..1000u64)
        .map(|i| ((i * 7919 % 26) as f64) * if i % 97 < 5 { 0.0 } else { 1.0 })
        .collect();
    let mut out = [0u32; 8];
    let mut i = 0;
    c.bench_function("receiver tick (evolve + observe + forecast)", |b| {
        b.iter(|| {
            one_tick(
                &mut model,
                &tables,
                counts[i % counts.len()],
                &mut out,
                &mut i,
            )
        })
    });
}

/// One tick on a steady link: counts around `per_tick` packets (a fixed pseudo-random
/// sequence within +-30%), the belief settled there, so each forecast moves little.
fn steady(c: &mut Criterion) {
    let params = ModelParams::default();
    let tables = ForecastTables::shared(&params);
    let mut g = c.benchmark_group("receiver tick on a steady link");
    for per_tick in [2u64, 10, 25] {
        let mut model = RateModel::new(&params);
        let counts: Vec<f64> = (0..1000u64)
            .map(|i| {
                let jitter = (i * 7919 % 61) as f64 / 60.0 * 0.6 - 0.3;
                (per_tick as f64 * (1.0 + jitter)).round()
            })
            .collect();
        let mut out = [0u32; 8];
        let mut i = 0;
        g.bench_function(format!("{} packets/s", per_tick * 50), |b| {
            b.iter(|| {
                one_tick(
                    &mut model,
                    &tables,
                    counts[i % counts.len()],
                    &mut out,
                    &mut i,
                )
            })
        });
    }
    g.finish();
}

/// The wide model's tick on steady links from 100 packets/s to 1 Gbit/s (83,333 packets/s of
/// 1,500 bytes): counts within +-30% of the rate's (a fixed pseudo-random sequence).
fn wide(c: &mut Criterion) {
    let params = ModelParams::default();
    let mut g = c.benchmark_group("wide model receiver tick on a steady link");
    for (name, pps) in [
        ("low, 100 packets/s", 100.0),
        ("12 Mbit/s", 1_000.0),
        ("100 Mbit/s", 8_333.0),
        ("1 Gbit/s", 83_333.0),
    ] {
        let mut e = WideEstimator::new(&params, &WideParams::default(), 0.95);
        let per_tick = pps * params.tau();
        let counts: Vec<f64> = (0..1000u64)
            .map(|i| {
                let jitter = (i * 7919 % 61) as f64 / 60.0 * 0.6 - 0.3;
                (per_tick * (1.0 + jitter)).round()
            })
            .collect();
        let mut out = [0u32; 8];
        let mut i = 0;
        g.bench_function(name, |b| {
            b.iter(|| {
                e.evolve();
                e.observe(counts[i % counts.len()]);
                e.forecast(&mut out);
                i += 1;
                black_box(&out);
            })
        });
    }
    g.bench_function("start-up (grid, kernel, forecast moments)", |b| {
        b.iter(|| {
            black_box(sprout_core::wide_model::WideShared::new(
                &params,
                &WideParams::default(),
            ))
        })
    });
    g.finish();
}

fn startup(c: &mut Criterion) {
    let params = ModelParams::default();
    let mut g = c.benchmark_group("start-up");
    g.sample_size(10);
    g.bench_function("model start-up (evolution kernel + forecast tables)", |b| {
        b.iter(|| black_box(ForecastTables::new(&params)))
    });
    g.finish();
}

criterion_group!(benches, tick, steady, wide, startup);
criterion_main!(benches);
