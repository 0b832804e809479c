//! The sweep's tests: expansion, ids, rows, resuming and the spec's errors.

use std::collections::HashSet;
use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::Path;

use super::output::SIM_COLUMNS;
use super::*;
use crate::error::Result;
use sprout_sim::sim_json;

const SPEC: &str = r#"
traces = [{ name = "c12", constant = { mbps = 12, seconds = 30 } },
      { name = "syn", synthetic = { seed = 3, duration_s = 30 } }]
schemes = ["sprout", "cubic"]
seeds = [1, 2]
[params]
"model.sigma" = [100, 200]
[sim]
duration = 8.0
skip = 2.0
loss = [0.0, 0.01]
"#;

fn plan() -> SweepPlan {
    SweepPlan::from_toml(SPEC, Path::new("."), "t").unwrap()
}

#[test]
fn grid_expands_with_stable_distinct_ids() {
    let p = plan();
    // 2 traces x (sprout: 2 sigmas + cubic: 1) x 2 losses x 2 seeds.
    assert_eq!(p.runs.len(), 2 * 3 * 2 * 2);
    let ids: HashSet<&str> = p.runs.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(ids.len(), p.runs.len());
    // Same spec, same ids, in the same order.
    let again = plan();
    assert_eq!(
        p.runs.iter().map(|r| &r.id).collect::<Vec<_>>(),
        again.runs.iter().map(|r| &r.id).collect::<Vec<_>>()
    );
    // A default written out gives the same run (and id) as leaving it out.
    let explicit = SweepPlan::from_toml(
        &SPEC.replace(
            "skip = 2.0",
            "skip = 2.0\nhost_jitter_ms = 1.0\nload = \"both\"",
        ),
        Path::new("."),
        "t",
    )
    .unwrap();
    assert_eq!(explicit.runs[0].id, p.runs[0].id);
    // Cubic runs carry no Sprout parameters.
    let cubic: Vec<&RunSpec> = p.runs.iter().filter(|r| r.scheme == "cubic").collect();
    assert_eq!(cubic.len(), 8);
    assert!(cubic.iter().all(|r| r.params.is_empty()));
    assert_eq!(p.runs[0].params, vec!["model.sigma=100".to_string()]);
    // The run round-trips through JSON (as Python hands it to a worker).
    let json = serde_json::to_string(&p.runs[5]).unwrap();
    let back: RunSpec = serde_json::from_str(&json).unwrap();
    assert_eq!(back, p.runs[5]);
    assert_eq!(back.compute_id(), back.id);
}

#[test]
fn sprout_ewma_runs_once_per_parameter_it_uses() {
    // sigma is a key of Sprout's Bayesian model, which Sprout-EWMA does not have: it
    // runs once per target_ticks value, not once per (sigma, target_ticks) pair.
    let spec = SPEC
        .replace(r#"schemes = ["sprout", "cubic"]"#, r#"schemes = ["sprout", "sprout-ewma"]"#)
        .replace(
            r#""model.sigma" = [100, 200]"#,
            "\"model.sigma\" = [100, 200, 400]\ntarget_ticks = [4, 5]\n[sim]\nconfidence = [0.9, 0.95]",
        )
        .replace("[sim]\nduration", "duration");
    let p = SweepPlan::from_toml(&spec, Path::new("."), "t").unwrap();
    let ewma: Vec<&RunSpec> = p
        .runs
        .iter()
        .filter(|r| r.scheme == "sprout-ewma")
        .collect();
    let sprout = p.runs.iter().filter(|r| r.scheme == "sprout").count();
    // 2 traces x 2 seeds x 2 losses: sprout x 3 sigmas x 2 targets x 2 confidences.
    assert_eq!(sprout, 8 * 12);
    assert_eq!(
        ewma.len(),
        8 * 2,
        "duplicates: {:?}",
        ewma.iter().map(|r| &r.params).collect::<Vec<_>>()
    );
    assert!(ewma
        .iter()
        .all(|r| r.params.len() == 1 && r.params[0].starts_with("target_ticks=")));
    assert!(ewma.iter().all(|r| r.sim.confidence.is_none()));
}

#[test]
fn sizes_a_spec_asks_for_are_bounded_before_anything_is_allocated() {
    let err = |spec: &str| {
        SweepPlan::from_toml(spec, Path::new("."), "t")
            .unwrap_err()
            .to_string()
    };
    let c = r#"traces = [{ name = "c", constant = { mbps = 12, seconds = 30 } }]"#;
    assert!(err(&format!("{c}\nseeds = 1000000000000")).contains("more than the 100000"));
    let grid = format!(
        "{c}\n[params]\n\"model.sigma\" = [{}]\ntarget_ticks = [{}]\n[sim]\nloss = [{}]",
        vec!["100"; 1000].join(", "),
        vec!["5"; 1000].join(", "),
        vec!["0.0"; 1000].join(", ")
    );
    let e = err(&grid);
    assert!(
        e.contains(
            "the grid is 1000 values of model.sigma x 1000 values of target_ticks x 1000 \
             [sim] loss = 1000000000 runs, more than the 1000000"
        ),
        "{e}"
    );
    let e = err(r#"traces = [{ name = "c", constant = { mbps = 1e15, seconds = 30 } }]"#);
    assert!(e.contains("faster than 100000 Mbit/s"), "{e}");
    let e = err(r#"traces = [{ name = "s", synthetic = { duration_s = 1e9 } }]"#);
    assert!(e.contains("a generated trace may hold at most"), "{e}");
}

#[test]
fn rows_are_the_simulators_figures() {
    let p = plan();
    let run = &p.runs[1];
    let fields = run_fields(run).unwrap();
    let header = p.header();
    assert_eq!(fields.len(), header.len());
    let col = |name: &str| &fields[header.iter().position(|h| h == name).unwrap()];
    assert_eq!(col("run_id"), &run.id);
    assert_eq!(col("param.model.sigma"), "100");
    assert_eq!(col("duration_s"), "8");
    // The same figures as sprout sim's code on the same options.
    let opts = run.sim_options().unwrap();
    let cfg = opts.config().unwrap();
    let (up, down) = run.trace.load().unwrap();
    let out = sim_json::run(up, down, &cfg, None).unwrap();
    assert_eq!(
        col("down_throughput_kbps"),
        &out.downlink.metrics.throughput_kbps.to_string()
    );
    assert_eq!(col("up_packets"), &out.uplink.metrics.packets.to_string());
    // The header's metric names are DirectionMetrics' fields, all of them.
    let m = serde_json::to_value(&out.uplink.metrics).unwrap();
    let mut names: Vec<&str> = m.as_object().unwrap().keys().map(String::as_str).collect();
    let mut ours = METRIC_COLUMNS.to_vec();
    names.sort_unstable();
    ours.sort_unstable();
    assert_eq!(names, ours);
    // Rerunning gives the identical line.
    assert_eq!(run_line(run).unwrap(), csv_line(&fields));
}

#[test]
fn resume_skips_done_runs_and_drops_a_partial_line() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("s.csv");
    let mut p = plan();
    p.runs.truncate(6);
    let first = run_local(&p, &out, Some(2), false).unwrap();
    assert_eq!((first.ran, first.skipped, first.rows), (6, 0, 6));
    let sorted = fs::read_to_string(&out).unwrap();
    let ids: Vec<&str> = sorted
        .lines()
        .skip(1)
        .map(|l| l.split(',').next().unwrap())
        .collect();
    let mut want: Vec<&str> = p.runs.iter().map(|r| r.id.as_str()).collect();
    want.sort_unstable();
    assert_eq!(ids, want);
    // A crash mid-row: the partial line is dropped and the sweep goes on.
    let mut f = OpenOptions::new().append(true).open(&out).unwrap();
    f.write_all(b"deadbeef,partial").unwrap();
    drop(f);
    let mut q = plan();
    q.runs.truncate(8);
    let second = run_local(&q, &out, Some(2), false).unwrap();
    assert_eq!((second.ran, second.skipped, second.rows), (2, 6, 8));
    let text = fs::read_to_string(&out).unwrap();
    assert!(!text.contains("partial"));
    // The first six rows are unchanged, and a full run from scratch gives the same file.
    let fresh = dir.path().join("fresh.csv");
    run_local(&q, &fresh, Some(1), false).unwrap();
    assert_eq!(text, fs::read_to_string(&fresh).unwrap());
    // Another sweep's columns are refused.
    let other = SweepPlan::from_toml(
        &SPEC.replace("\"model.sigma\"", "confidence_x"),
        Path::new("."),
        "t",
    );
    assert!(other.is_err(), "unknown parameter is refused at expansion");
    let mut header = q.header();
    header.push("extra".into());
    assert!(SweepOutput::open(&out, &header).is_err());
}

#[test]
fn spec_errors_name_the_problem() {
    let err = |s: &str| {
        SweepPlan::from_toml(s, Path::new("."), "t")
            .unwrap_err()
            .to_string()
    };
    let c = r#"traces = [{ name = "c", constant = { mbps = 12, seconds = 30 } }]"#;
    assert!(err("").contains("names no traces"));
    assert!(err(&format!("{c}\nschemes = [\"warp\"]")).contains("unknown scheme 'warp'"));
    assert!(err(&format!("{c}\n[sim]\nspeed = 1")).contains("unknown option 'speed'"));
    let e = err(&format!("{c}\nbogus = 1"));
    assert!(
        e.starts_with("unknown field `bogus`, expected one of `traces`"),
        "{e}"
    );
    let e = err(&format!("{c}\n[sim]\nloss = \"x\""));
    assert_eq!(e, "[sim] loss: expected a number, got \"x\"");
    let e = err(&format!("{c}\nseeds = [1, \"two\"]"));
    assert_eq!(e, "seeds: \"two\" is not a seed");
    let e = err(&format!("{c}\nseeds = 2.5"));
    assert_eq!(e, "seeds: a count must be a whole number");
    let e = err(&format!("{c}\nseeds = \"all\""));
    assert_eq!(e, "seeds: expected a list of seeds or a count, got \"all\"");
    let e = err(&format!("{c}\nschemes = [1]"));
    assert!(
        e.starts_with("schemes: invalid type: integer `1`, expected a string"),
        "{e}"
    );
    let e = err(&format!("{c}\nout = 3"));
    assert!(e.starts_with("out: invalid type: integer `3`"), "{e}");
    let e = err("traces = [5]");
    assert_eq!(e, "traces: expected a name or a table, got 5");
    let e = err("traces = []");
    assert!(e.contains("an empty list names no traces"), "{e}");
    let e = err("traces = [{ constant = { mbps = 1, seconds = 5 } }]");
    assert!(e.contains("a table entry needs a name"), "{e}");
    let e = err("traces = [{ name = \"c\", constant = { mbps = 1 } }]");
    assert_eq!(e, "traces: c: constant needs mbps and seconds");
    let e = err("traces = [{ name = \"c\", uplink = \"u\", dowlink = \"d\" }]");
    assert!(
        e.starts_with("traces: unknown field `dowlink`, expected one of"),
        "{e}"
    );
    let e = err(&format!("{c}\n[params]\nsigma = []"));
    assert_eq!(e, "sigma: an empty list leaves nothing to run");
    let e = err(&format!("{c}\nsim = 1"));
    assert!(e.starts_with("[sim]: invalid type"), "{e}");
    let e = SweepPlan::from_json(&serde_json::json!([1]), Path::new("."), "t").unwrap_err();
    assert!(e.to_string().starts_with("a sweep spec is a table"), "{e}");
    let e = sim_error_message(
        &SweepPlan::from_toml(&format!("{c}\n[params]\nnope = 1"), Path::new("."), "t")
            .unwrap_err(),
    );
    assert!(e.contains("parameter 'nope=1': unknown key 'nope'"), "{e}");
    assert!(err(&format!("{c}\n[sim]\nloss = 2.0")).contains("run "));
    assert!(SweepOutput::open(Path::new("/tmp/x.parquet"), &[]).is_err());
}

/// A constant 12 Mbit/s pair, 8 s runs measured from 2 s, data down only.
const APP_SPEC: &str = r#"
traces = [{ name = "c12", constant = { mbps = 12, seconds = 30 } }]
schemes = ["sprout", "cubic"]
seeds = [1]
[sim]
duration = 8.0
skip = 2.0
load = "down"
"#;

fn app_plan(app: &str) -> Result<SweepPlan> {
    SweepPlan::from_toml(&format!("{APP_SPEC}app = {app}\n"), Path::new("."), "t")
}

#[test]
fn a_bulk_spec_keeps_its_run_ids_and_columns() {
    // The ids and columns the spec had before applications came in (computed with that
    // code): a sweep's output from then resumes.
    let p = SweepPlan::from_toml(APP_SPEC, Path::new("."), "t").unwrap();
    let ids: Vec<&str> = p.runs.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(ids, ["1d8b13c4139f6dc8", "5e72cc4dbfe305ff"]);
    let h = p.header();
    assert_eq!(h.len(), 5 + SIM_COLUMNS.len() + 2 * METRIC_COLUMNS.len());
    assert_eq!(h, header(&[]));
    assert!(!h.iter().any(|c| c.contains("app")));
    assert!(!serde_json::to_string(&p.runs[0]).unwrap().contains("app"));
    // `app = "bulk"` is the same runs, with the application columns.
    let bulk = app_plan("\"bulk\"").unwrap();
    assert_eq!(
        bulk.runs.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(),
        ids
    );
    assert!(bulk.header().contains(&"app".to_string()));
    assert_eq!(bulk.header().len(), h.len() + 1 + 2 * APP_COLUMNS.len());
}

#[test]
fn app_specs_are_a_sweep_dimension() {
    let p = app_plan(r#"["constant:rate=500k", "bulk", "video:rate=1M,fps=25"]"#).unwrap();
    assert_eq!(p.runs.len(), 2 * 3);
    let apps: Vec<Option<&str>> = p.runs.iter().map(|r| r.sim.app.as_deref()).collect();
    assert_eq!(
        apps[..3],
        [
            Some("constant:rate=500k,packet=1200"),
            None,
            Some("video:rate=1M,fps=25,key=3,keyratio=5")
        ]
    );
    assert_eq!(
        p.runs[0].sim_options().unwrap().app,
        sprout_sim::App::parse("constant:rate=500k").unwrap()
    );
    // The same app written another way is the same run.
    let same = app_plan("\"constant:rate=500000,packet=1200\"").unwrap();
    assert_eq!(same.runs[0].id, p.runs[0].id);
    // The bulk runs are the spec's runs without app.
    let plain = SweepPlan::from_toml(APP_SPEC, Path::new("."), "t").unwrap();
    assert_eq!(p.runs[1].id, plain.runs[0].id);
    // The app reaches the run through its JSON (as Python hands it to a worker).
    let json = serde_json::to_string(&p.runs[0]).unwrap();
    let back: RunSpec = serde_json::from_str(&json).unwrap();
    assert_eq!(back, p.runs[0]);
    assert_eq!(back.compute_id(), back.id);
    assert!(back.app_columns);
    // direct runs with an application of its own rate.
    let direct = SweepPlan::from_toml(
        &format!("{APP_SPEC}app = \"constant:rate=1M\"\n")
            .replace(r#"["sprout", "cubic"]"#, r#"["direct"]"#),
        Path::new("."),
        "t",
    )
    .unwrap();
    assert_eq!(direct.runs.len(), 1);
}

#[test]
fn bad_app_specs_name_the_key() {
    let err = |app: &str| sim_error_message(&app_plan(app).unwrap_err());
    let e = err("\"warp\"");
    assert!(
        e.contains("[sim] app: app 'warp': unknown kind 'warp'"),
        "{e}"
    );
    let e = err(r#"["constant:rate=1M", "constant:rate=fast"]"#);
    assert!(
        e.contains("[sim] app: app 'constant:rate=fast': rate"),
        "{e}"
    );
    assert!(err("5").contains("[sim] app: expected a string"));
    // direct has no congestion control to hold a bulk sender back.
    let e = sim_error_message(
        &SweepPlan::from_toml(
            &APP_SPEC.replace(r#"["sprout", "cubic"]"#, r#"["direct"]"#),
            Path::new("."),
            "t",
        )
        .unwrap_err(),
    );
    assert!(e.contains("direct with app bulk"), "{e}");
}

#[test]
fn gcc_and_copa_run_in_a_sweep() {
    let spec = APP_SPEC.replace(r#"["sprout", "cubic"]"#, r#"["gcc", "copa"]"#);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("modern.csv");
    let p =
        SweepPlan::from_toml(&format!("{spec}app = \"adaptive\"\n"), Path::new("."), "t").unwrap();
    let report = run_local(&p, &out, Some(2), false).unwrap();
    assert_eq!((report.ran, report.rows), (2, 2));
    let mut r = csv::Reader::from_path(&out).unwrap();
    let header: Vec<String> = r.headers().unwrap().iter().map(str::to_string).collect();
    let col = |name: &str| header.iter().position(|h| h == name).unwrap();
    let rows: Vec<csv::StringRecord> = r.records().map(Result::unwrap).collect();
    let of = |scheme: &str| rows.iter().find(|r| &r[col("scheme")] == scheme).unwrap();
    let num = |row: &csv::StringRecord, c: &str| row[col(c)].parse::<f64>().unwrap();
    // GCC paces adaptive video down a 12 Mbit/s link: frames arrive, well within 300 ms,
    // at a rate of its own below the link's.
    let gcc = of("gcc");
    assert!(
        gcc[col("app")].starts_with("adaptive"),
        "{}",
        &gcc[col("app")]
    );
    assert!(num(gcc, "down_app_messages") > 100.0);
    let gcc_p95 = num(gcc, "down_app_p95_ms");
    assert!(
        (20.0..300.0).contains(&gcc_p95),
        "gcc frame p95 {gcc_p95} ms"
    );
    let gcc_kbps = num(gcc, "down_throughput_kbps");
    assert!(
        (100.0..12_000.0).contains(&gcc_kbps),
        "gcc {gcc_kbps} kbit/s"
    );
    // Copa sizes the same frames by its window: it fills more of the link than nothing.
    assert!(num(of("copa"), "down_app_messages") > 100.0);

    // Without an app gcc runs its natural one (the run id of app = "adaptive"), and copa
    // a bulk sender that fills the link with a small queue.
    let bare = SweepPlan::from_toml(&spec, Path::new("."), "t").unwrap();
    let gcc_run = bare.runs.iter().find(|r| r.scheme == "gcc").unwrap();
    assert_eq!(
        gcc_run.sim_options().unwrap().app,
        sprout_sim::App::parse("adaptive").unwrap()
    );
    let explicit = p.runs.iter().find(|r| r.scheme == "gcc").unwrap();
    assert_eq!(gcc_run.id, explicit.id);
    let out2 = dir.path().join("bare.csv");
    let report = run_local(&bare, &out2, Some(2), false).unwrap();
    assert_eq!(report.rows, 2);
    let mut r = csv::Reader::from_path(&out2).unwrap();
    let header: Vec<String> = r.headers().unwrap().iter().map(str::to_string).collect();
    assert!(!header.iter().any(|h| h.contains("app")));
    let col = |name: &str| header.iter().position(|h| h == name).unwrap();
    let rows: Vec<csv::StringRecord> = r.records().map(Result::unwrap).collect();
    let copa = rows.iter().find(|r| &r[col("scheme")] == "copa").unwrap();
    let util = copa[col("down_utilization")].parse::<f64>().unwrap();
    let delay = copa[col("down_self_inflicted_data_ms")]
        .parse::<f64>()
        .unwrap();
    assert!(util > 0.8 && delay < 40.0, "copa {util} {delay} ms");
    let gcc = rows.iter().find(|r| &r[col("scheme")] == "gcc").unwrap();
    let gcc_bare = gcc[col("down_throughput_kbps")].parse::<f64>().unwrap();
    assert_eq!(
        gcc_bare, gcc_kbps,
        "the same run as with app = \"adaptive\""
    );
}

#[test]
fn an_app_sweep_writes_the_application_columns() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("app.csv");
    let p = app_plan(r#"["constant:rate=500k", "bulk"]"#).unwrap();
    let report = run_local(&p, &out, Some(2), false).unwrap();
    assert_eq!((report.ran, report.rows), (4, 4));
    let mut r = csv::Reader::from_path(&out).unwrap();
    let header: Vec<String> = r.headers().unwrap().iter().map(str::to_string).collect();
    assert_eq!(header, p.header());
    let col = |name: &str| header.iter().position(|h| h == name).unwrap();
    let rows: Vec<csv::StringRecord> = r.records().map(Result::unwrap).collect();
    let mut seen_app = 0;
    for row in &rows {
        let run = p.runs.iter().find(|r| r.id == row[0]).unwrap();
        match run.sim.app.as_deref() {
            Some(spec) => {
                seen_app += 1;
                assert_eq!(&row[col("app")], spec);
                // 500 kbit/s down a 12 Mbit/s link: all of it, at about the
                // propagation delay.
                let num = |c: &str| row[col(c)].parse::<f64>().unwrap();
                assert!((num("down_app_offered_kbps") - 500.0).abs() < 5.0);
                assert!(num("down_app_share") > 0.99);
                let p95 = num("down_app_p95_ms");
                assert!((20.0..100.0).contains(&p95), "{p95}");
                assert!(num("down_app_within_150ms") > 0.99);
                // 52 a second, made in the window but its last quarter.
                assert!(
                    num("down_app_messages") > 200.0,
                    "{}",
                    num("down_app_messages")
                );
                // The uplink carries no data: no application figures.
                assert_eq!(&row[col("up_app_p95_ms")], "");
                // The same figures as the simulator's.
                let cfg = run.sim_options().unwrap().config().unwrap();
                let (up, down) = run.trace.load().unwrap();
                let sim = sim_json::run(up, down, &cfg, None).unwrap();
                let a = sim.downlink.app.unwrap();
                assert_eq!(row[col("down_app_p95_ms")], a.delay_p95_ms.to_string());
            }
            None => {
                assert_eq!(&row[col("app")], "bulk");
                assert_eq!(&row[col("down_app_p95_ms")], "");
            }
        }
    }
    assert_eq!(seen_app, 2);
    // A second start finds every run done.
    let again = run_local(&p, &out, Some(2), false).unwrap();
    assert_eq!((again.ran, again.skipped), (0, 4));
}

#[test]
fn fq_codel_is_a_queue_of_the_sweep() {
    let spec = r#"
traces = [{ name = "c12", constant = { mbps = 12, seconds = 30 } }]
schemes = ["cubic"]
[sim]
duration = 8.0
skip = 2.0
queue = ["infinite", "fq-codel"]
"#;
    let p = SweepPlan::from_toml(spec, Path::new("."), "t").unwrap();
    assert_eq!(p.runs.len(), 2);
    assert_ne!(p.runs[0].id, p.runs[1].id);
    let cfg = p.runs[1].sim_options().unwrap().config().unwrap();
    assert!(matches!(
        cfg.link_for(sprout_sim::sim::Direction::Down).queue,
        sprout_link::QueueConfig::FqCodel { .. }
    ));
    // Cubic's standing queue: none in FQ-CoDel's short flow queue, seconds in the FIFO's.
    let header = p.header();
    let p95 = |run: &RunSpec| -> f64 {
        let fields = run_fields(run).unwrap();
        fields[header
            .iter()
            .position(|h| h == "down_p95_delay_ms")
            .unwrap()]
        .parse()
        .unwrap()
    };
    let (fifo, fq) = (p95(&p.runs[0]), p95(&p.runs[1]));
    assert!(
        fq * 3.0 < fifo,
        "p95 delay: fifo {fifo} ms, fq-codel {fq} ms"
    );
    let bad = SweepPlan::from_toml(&spec.replace("fq-codel", "fq_codell"), Path::new("."), "t");
    assert!(bad.is_err());
}

const ECN_SPEC: &str = r#"
traces = { name = "c12", constant = { mbps = 12, seconds = 20 } }
schemes = ["cubic"]
[sim]
duration = 20.0
skip = 2.0
load = "down"
queue = "codel"
"#;

#[test]
fn ecn_is_a_sweep_dimension_with_its_columns() {
    let plain = SweepPlan::from_toml(ECN_SPEC, Path::new("."), "t").unwrap();
    let p = SweepPlan::from_toml(
        &format!("{ECN_SPEC}ecn = [false, true]\n"),
        Path::new("."),
        "t",
    )
    .unwrap();
    assert_eq!(p.runs.len(), 2);
    // The run without ECN is the spec's run without `ecn`: same id.
    assert_eq!(p.runs[0].id, plain.runs[0].id);
    assert_ne!(p.runs[1].id, p.runs[0].id);
    assert!(!plain.header().contains(&"ecn".to_string()));
    let h = p.header();
    assert_eq!(h[h.len() - ECN_COLUMNS.len()..], ECN_COLUMNS);
    assert!(p.runs[1].sim_options().unwrap().config().unwrap().tcp.ecn);
    let row = |r: &RunSpec| -> Vec<String> {
        let line = run_line(r).unwrap();
        let mut rd = csv::ReaderBuilder::new()
            .has_headers(false)
            .from_reader(line.as_bytes());
        let rec = rd.records().next().unwrap().unwrap();
        let n = rec.len();
        rec.iter()
            .skip(n - ECN_COLUMNS.len())
            .map(str::to_string)
            .collect()
    };
    let (off, on) = (row(&p.runs[0]), row(&p.runs[1]));
    let num = |v: &str| v.parse::<u64>().unwrap();
    assert_eq!(off[0], "false");
    assert_eq!(num(&off[2]), 0, "no marks without ECN: {off:?}");
    assert!(num(&off[4]) > 0, "CoDel drops Cubic's packets: {off:?}");
    assert_eq!(on[0], "true");
    assert!(num(&on[2]) > 0, "marks with ECN: {on:?}");
    assert_eq!(num(&on[4]), 0, "and no AQM drops: {on:?}");
    let bad = SweepPlan::from_toml(&format!("{ECN_SPEC}ecn = \"yes\"\n"), Path::new("."), "t");
    assert!(bad
        .unwrap_err()
        .to_string()
        .contains("expected true or false"));
}

#[test]
fn link_options_are_sweep_dimensions_with_their_columns() {
    let plain = SweepPlan::from_toml(ECN_SPEC, Path::new("."), "t").unwrap();
    let spec = format!(
        "{}buffer = [\"5pkt\", \"1000pkt\"]\ngemodel = \"1%,30%\"\nl4s_step = \"1ms\"\n",
        ECN_SPEC.replace("queue = \"codel\"", "queue = \"infinite\"")
    );
    let p = SweepPlan::from_toml(&spec, Path::new("."), "t").unwrap();
    assert_eq!(p.runs.len(), 2);
    assert_ne!(p.runs[0].id, plain.runs[0].id);
    let h = p.header();
    let tail: Vec<&str> = h[h.len() - 7..].iter().map(String::as_str).collect();
    assert_eq!(
        tail,
        [
            "buffer",
            "gemodel",
            "l4s_step",
            "up_buffer_drops",
            "down_buffer_drops",
            "up_lost",
            "down_lost"
        ]
    );
    assert!(
        h.contains(&"ecn".to_string()),
        "l4s_step brings the marks: {h:?}"
    );
    let cfg = p.runs[1].sim_options().unwrap().config().unwrap();
    let down = cfg.link_for(sprout_sim::sim::Direction::Down);
    assert_eq!(down.buffer, Some("1000pkt".parse().unwrap()));
    assert_eq!(
        down.l4s_step_us,
        Some(sprout_core::time::Duration::from_millis(1))
    );
    assert!(down.gilbert_elliott.is_some());
    let row = |r: &RunSpec| -> Vec<String> {
        let line = run_line(r).unwrap();
        let mut rd = csv::ReaderBuilder::new()
            .has_headers(false)
            .from_reader(line.as_bytes());
        let rec = rd.records().next().unwrap().unwrap();
        let n = rec.len();
        rec.iter().skip(n - 7).map(str::to_string).collect()
    };
    let (small, large) = (row(&p.runs[0]), row(&p.runs[1]));
    let num = |v: &str| v.parse::<u64>().unwrap();
    assert_eq!(small[..3], ["5pkt", "1%,30%", "1ms"]);
    assert!(
        num(&small[4]) > num(&large[4]),
        "a 5-packet buffer drops more than a 1000-packet one: {small:?} {large:?}"
    );
    assert!(
        num(&small[6]) > 0,
        "Gilbert-Elliott loses packets: {small:?}"
    );
    for (bad, why) in [
        ("buffer = \"lots\"", "[sim] buffer: bad buffer 'lots'"),
        ("l4s_step = 1", "[sim] l4s_step: expected a positive time"),
        ("jitter = true", "[sim] jitter: expected a string"),
        ("delay_trace = \"d.txt\"", "unknown option 'delay_trace'"),
    ] {
        let e = SweepPlan::from_toml(&format!("{ECN_SPEC}{bad}\n"), Path::new("."), "t")
            .unwrap_err()
            .to_string();
        assert!(e.contains(why), "{bad}: {e}");
    }
}
