//! One receiver tick (evolve + observe + forecast) and model start-up, at the paper's parameters,
//! and the wide model's tick from a trickle to 1 Gbit/s.
// criterion_main! generates a `main` that cannot carry a doc comment.
#![allow(missing_docs)]

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use sprout_core::estimator_trait::Estimator;
use sprout_core::forecast::ForecastTables;
use sprout_core::{
    ModelParams, RateModel, WideEstimator, WideParams, WideVolEstimator, WideVolParams,
};

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

/// [`WideVolParams::default`], its factors from `WIDE_VOL_FACTORS` (e.g. `0.25,1,2`) when set.
fn vol_params() -> WideVolParams {
    let mut p = WideVolParams::default();
    if let Ok(f) = std::env::var("WIDE_VOL_FACTORS") {
        p.factors = f
            .split(',')
            .map(|x| x.trim().parse().expect("WIDE_VOL_FACTORS: numbers"))
            .collect();
    }
    p
}

/// The wide model's tick against the same with a belief over its volatility (three
/// components, [`WideVolParams::default`]), side by side on links from a steady trickle to a
/// volatile 12 Mbit/s (the rate jumping by a factor of 3 every other tick), each tick's
/// expected forecast included as an application-limited peer's receiver computes it.
fn wide_vol(c: &mut Criterion) {
    let params = ModelParams::default();
    let mut g = c.benchmark_group("wide against wide-vol receiver tick");
    g.measurement_time(std::time::Duration::from_secs(2));
    g.warm_up_time(std::time::Duration::from_secs(1));
    for (name, pps, volatile) in [
        ("100 packets/s steady", 100.0, false),
        ("12 Mbit/s steady", 1_000.0, false),
        ("12 Mbit/s volatile", 1_000.0, true),
        ("100 Mbit/s steady", 8_333.0, false),
    ] {
        let per_tick = pps * params.tau();
        let counts: Vec<f64> = (0..1000u64)
            .map(|i| {
                let jitter = (i * 7919 % 61) as f64 / 60.0 * 0.6 - 0.3;
                let level = if volatile && (i / 2) % 2 == 0 {
                    0.33
                } else {
                    1.0
                };
                (per_tick * level * (1.0 + jitter)).round()
            })
            .collect();
        let estimators: [(&str, Box<dyn Estimator>); 2] = [
            (
                "wide",
                Box::new(WideEstimator::new(&params, &WideParams::default(), 0.95)),
            ),
            (
                "wide-vol",
                Box::new(WideVolEstimator::new(&params, &vol_params(), 0.95)),
            ),
        ];
        for (model, mut e) in estimators {
            let (mut out, mut expected) = ([0u32; 8], [0u32; 8]);
            let mut i = 0;
            g.bench_function(format!("{model}, {name}"), |b| {
                b.iter(|| {
                    e.evolve();
                    e.observe(counts[i % counts.len()]);
                    e.forecast(&mut out);
                    e.forecast_expected(&mut expected);
                    i += 1;
                    black_box((&out, &expected));
                })
            });
        }
    }
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

criterion_group!(benches, tick, steady, wide, wide_vol, startup);
criterion_main!(benches);
