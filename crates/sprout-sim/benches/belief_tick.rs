//! One receiver tick on recorded beliefs (issue 34): the cost of a tick of the wide model's
//! receiver (evolve, observe and forecast, the expected counts included when the peer is
//! application-limited), timed on receiver states that real links produce, in both
//! directions: the loaded one (the downlink's bulk data) and the idle one (the uplink's
//! feedback and heartbeats alone, whose belief spreads over every rate).
//!
//! For each link, [`sprout_sim::recorded::record`] runs two `Config::wide()` endpoints and
//! keeps a clone of each receiver just before each of its ticks; each clone is cloned again
//! (not timed) and `on_timeout(at)` + `feedback()` timed on it, `--repeats` times; the least
//! time counts for the state (the others are the machine's noise). Printed per link and
//! direction: states, p50, p99, max and mean in µs, and the median of the `on_timeout` part
//! alone (evolve + observe; the rest of a tick is the forecast); written as CSV and JSON too.
//!
//! ```text
//! cargo bench -p sprout-sim --bench belief_tick                  # about 3 minutes today
//! cargo bench -p sprout-sim --bench belief_tick -- --quick       # 4 s of each link, 1 repeat
//! cargo bench -p sprout-sim --bench belief_tick -- --link const  # links whose name has "const"
//! ```
//!
//! Options (after `--`): `--quick` (or `BELIEF_TICK_QUICK=1`), `--repeats N` (default 3),
//! `--link TEXT` (only the links whose name contains it), `--out DIR` (default
//! `target/belief-tick`).

use std::hint::black_box;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant as Wall;

use serde::Serialize;
use sprout_core::time::Duration;
use sprout_core::wide_forecast::WideForecast;
use sprout_core::{Config, EstimatorKind, WideEstimator};
use sprout_link::synthetic::OutageOverlay;
use sprout_link::{constant_rate_trace, StepwiseLink, Trace};
use sprout_sim::recorded::{record, Direction, RecordOptions, Recording, Snapshot};

/// The command line's options.
struct Args {
    quick: bool,
    repeats: u32,
    link: Option<String>,
    out: PathBuf,
}

fn args() -> Args {
    let mut a = Args {
        quick: std::env::var_os("BELIEF_TICK_QUICK").is_some_and(|v| v != "0"),
        repeats: 3,
        link: None,
        out: std::env::var_os("CARGO_TARGET_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target"))
            .join("belief-tick"),
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = |name: &str| it.next().unwrap_or_else(|| panic!("{name} needs a value"));
        match arg.as_str() {
            "--quick" => a.quick = true,
            "--repeats" => {
                a.repeats = value("--repeats")
                    .parse::<u32>()
                    .ok()
                    .filter(|&n| n > 0)
                    .expect("--repeats: a whole number above 0");
            }
            "--link" => a.link = Some(value("--link")),
            "--out" => a.out = PathBuf::from(value("--out")),
            // cargo bench passes --bench; a filter without a flag selects links too.
            "--bench" => {}
            s if !s.starts_with('-') => a.link = Some(s.to_string()),
            s => panic!("unknown option {s} (--quick, --repeats N, --link TEXT, --out DIR)"),
        }
    }
    if a.quick {
        a.repeats = a.repeats.min(1);
    }
    a
}

/// A link of the bench: its name, what it is, its trace (both directions) and how long to
/// run it.
struct LinkCase {
    name: &'static str,
    what: String,
    trace: Arc<Trace>,
    run: Duration,
}

/// The links: stepwise 20-500 Mbit/s (the issue's, 70 s of trace), the same with outages,
/// and constant links at 1, 10, 100 and 1000 Mbit/s. `quick` runs 4 s of each.
fn links(quick: bool) -> Vec<LinkCase> {
    let secs = |full: u64| Duration::from_secs(if quick { 4 } else { full });
    let stepwise = StepwiseLink {
        seed: 1,
        duration_s: 70.0,
        ..StepwiseLink::default()
    };
    let step = stepwise.generate("stepwise").expect("stepwise trace");
    let overlay = OutageOverlay {
        seed: 7,
        probability_per_s: 0.15,
        mean_length_s: 1.5,
    };
    let (holed, outages) = overlay.apply(&step);
    let first: Vec<String> = outages
        .iter()
        .take_while(|o| o.0 < 25_000)
        .map(|o| format!("{:.1}-{:.1} s", o.0 as f64 / 1e3, o.1 as f64 / 1e3))
        .collect();
    let mut cases = vec![
        LinkCase {
            name: "stepwise",
            what: format!(
                "stepwise 20-500 Mbit/s log-uniform, 1 s steps, mean {:.0} Mbit/s (seed 1, 70 s)",
                step.mean_capacity_kbps() / 1e3
            ),
            trace: Arc::new(step),
            run: secs(25),
        },
        LinkCase {
            name: "stepwise+outages",
            what: format!(
                "the same with outages (p 0.15/s, mean 1.5 s; in the first 25 s: {})",
                first.join(", ")
            ),
            trace: Arc::new(holed),
            run: secs(25),
        },
    ];
    for (name, mbit) in [
        ("const-1", 1.0),
        ("const-10", 10.0),
        ("const-100", 100.0),
        ("const-1000", 1000.0),
    ] {
        cases.push(LinkCase {
            name,
            what: format!("constant {mbit} Mbit/s"),
            trace: Arc::new(constant_rate_trace(name, mbit, 20.0).expect("constant trace")),
            run: secs(10),
        });
    }
    cases
}

/// One tick on a copy of `s`, timed `repeats` times: the least time of the whole tick
/// (`on_timeout` + `feedback`) and the least of its `on_timeout` part alone (evolve and
/// observe; the rest is the forecast), µs.
fn time_tick(s: &Snapshot, repeats: u32) -> (f64, f64) {
    let (mut best, mut best_tick) = (f64::INFINITY, f64::INFINITY);
    for _ in 0..repeats.max(1) {
        let mut r = s.receiver.clone();
        let start = Wall::now();
        r.on_timeout(s.at);
        let ticked = start.elapsed();
        let fb = r.feedback();
        let took = start.elapsed();
        black_box(fb);
        best = best.min(took.as_secs_f64() * 1e6);
        best_tick = best_tick.min(ticked.as_secs_f64() * 1e6);
    }
    (best, best_tick)
}

/// The largest distance in level between the wide forecast's table answers and the exact
/// value-by-value CDF on the belief `s` holds after its tick, over every horizon, for the
/// cautious (5%) and the median forecast: how far `F(c)` falls short of `q`, or `F(c - 1)`
/// reaches past it (the stated bound is `sprout_core::wide_mixture::ERROR_BOUND`).
fn level_error(s: &Snapshot, f: &WideForecast) -> f64 {
    let mut r = s.receiver.clone();
    r.on_timeout(s.at);
    let Some(p) = r.estimator().wide_belief() else {
        return f64::NAN;
    };
    [0.05, 0.5]
        .into_iter()
        .map(|q| f.table_level_error(p, q))
        .fold(0.0, f64::max)
}

/// The figures of one link and direction.
#[derive(Serialize)]
struct Row {
    link: String,
    direction: &'static str,
    states: usize,
    p50_us: f64,
    p99_us: f64,
    max_us: f64,
    mean_us: f64,
    /// The median of the `on_timeout` part alone (evolve + observe), µs.
    p50_observe_us: f64,
    /// The largest level error of the forecast's tables against the exact computation, over
    /// one state in [`CHECK_EVERY`].
    level_error: f64,
}

/// One state in this many is checked against the exact computation (a millisecond each).
const CHECK_EVERY: usize = 10;

/// Nearest-rank percentile `p` (0..1) of sorted `v`.
fn percentile(v: &[f64], p: f64) -> f64 {
    let rank = ((p * v.len() as f64).ceil() as usize).clamp(1, v.len());
    v[rank - 1]
}

fn row(link: &str, d: Direction, times: Vec<(f64, f64)>, level_error: f64) -> Row {
    let (mut us, mut observe): (Vec<f64>, Vec<f64>) = times.into_iter().unzip();
    us.sort_by(f64::total_cmp);
    observe.sort_by(f64::total_cmp);
    let n = us.len().max(1);
    Row {
        link: link.to_string(),
        direction: d.name(),
        states: us.len(),
        p50_us: if us.is_empty() {
            f64::NAN
        } else {
            percentile(&us, 0.5)
        },
        p99_us: if us.is_empty() {
            f64::NAN
        } else {
            percentile(&us, 0.99)
        },
        max_us: us.last().copied().unwrap_or(f64::NAN),
        mean_us: us.iter().sum::<f64>() / n as f64,
        p50_observe_us: if us.is_empty() {
            f64::NAN
        } else {
            percentile(&observe, 0.5)
        },
        level_error,
    }
}

/// What was recorded on one link, for the JSON.
#[derive(Serialize)]
struct LinkInfo {
    link: String,
    what: String,
    run_s: f64,
    loaded_mbit_per_s: f64,
    ticks_loaded: u64,
    ticks_idle: u64,
    record_s: f64,
    time_s: f64,
}

fn recording(case: &LinkCase, quick: bool) -> Recording {
    let options = RecordOptions {
        duration: case.run,
        record_from: Duration::from_secs(if quick { 1 } else { 2 }),
        ..RecordOptions::default()
    };
    record(case.trace.clone(), case.trace.clone(), &options).expect("recording")
}

fn fmt_us(x: f64) -> String {
    if x >= 100.0 {
        format!("{x:.0}")
    } else {
        format!("{x:.1}")
    }
}

fn table(rows: &[Row]) -> String {
    let mut s = format!(
        "{:<17} {:<9} {:>6} {:>10} {:>10} {:>10} {:>10} {:>14} {:>11}\n",
        "link",
        "direction",
        "states",
        "p50 us",
        "p99 us",
        "max us",
        "mean us",
        "p50 observe us",
        "level error"
    );
    for r in rows {
        s += &format!(
            "{:<17} {:<9} {:>6} {:>10} {:>10} {:>10} {:>10} {:>14} {:>11.1e}\n",
            r.link,
            r.direction,
            r.states,
            fmt_us(r.p50_us),
            fmt_us(r.p99_us),
            fmt_us(r.max_us),
            fmt_us(r.mean_us),
            fmt_us(r.p50_observe_us),
            r.level_error
        );
    }
    s
}

fn csv(rows: &[Row]) -> String {
    let mut s = String::from(
        "link,direction,states,p50_us,p99_us,max_us,mean_us,p50_observe_us,level_error\n",
    );
    for r in rows {
        s += &format!(
            "{},{},{},{:.3},{:.3},{:.3},{:.3},{:.3},{:.3e}\n",
            r.link,
            r.direction,
            r.states,
            r.p50_us,
            r.p99_us,
            r.max_us,
            r.mean_us,
            r.p50_observe_us,
            r.level_error
        );
    }
    s
}

fn main() {
    let a = args();
    let mut rows = Vec::new();
    let mut infos = Vec::new();
    let config = Config::wide();
    let EstimatorKind::Wide(ref wide) = config.estimator else {
        unreachable!("Config::wide() holds the wide model")
    };
    let reference = WideEstimator::new(&config.model, wide, config.confidence);
    for case in links(a.quick) {
        if a.link.as_deref().is_some_and(|f| !case.name.contains(f)) {
            continue;
        }
        let start = Wall::now();
        let rec = recording(&case, a.quick);
        let record_s = start.elapsed().as_secs_f64();
        let start = Wall::now();
        for d in Direction::ALL {
            let us = rec.of(d).map(|s| time_tick(s, a.repeats)).collect();
            let err = rec
                .of(d)
                .step_by(CHECK_EVERY)
                .map(|s| level_error(s, reference.forecaster()))
                .fold(0.0, f64::max);
            rows.push(row(case.name, d, us, err));
        }
        let time_s = start.elapsed().as_secs_f64();
        eprintln!(
            "{}: {}; {} s run, loaded direction {:.1} Mbit/s; recorded in {record_s:.1} s, \
             timed in {time_s:.1} s",
            case.name,
            case.what,
            case.run.as_secs_f64(),
            rec.loaded_mbit_per_s()
        );
        infos.push(LinkInfo {
            link: case.name.to_string(),
            what: case.what,
            run_s: case.run.as_secs_f64(),
            loaded_mbit_per_s: rec.loaded_mbit_per_s(),
            ticks_loaded: rec.ticks[0],
            ticks_idle: rec.ticks[1],
            record_s,
            time_s,
        });
    }
    print!("{}", table(&rows));
    std::fs::create_dir_all(&a.out).expect("output folder");
    let out = std::fs::canonicalize(&a.out).unwrap_or(a.out);
    std::fs::write(out.join("belief_tick.csv"), csv(&rows)).expect("CSV");
    let doc = serde_json::json!({
        "what": "one receiver tick (on_timeout + feedback) of Config::wide() on recorded \
                 states, least of `repeats` timings per state, microseconds",
        "repeats": a.repeats,
        "quick": a.quick,
        "links": infos,
        "rows": rows,
    });
    let json = serde_json::to_string_pretty(&doc).expect("JSON");
    std::fs::write(out.join("belief_tick.json"), json).expect("JSON");
    println!(
        "wrote {} and belief_tick.json",
        out.join("belief_tick.csv").display()
    );
}
