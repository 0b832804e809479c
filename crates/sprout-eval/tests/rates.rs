//! The `rates` experiment end to end at reduced settings on a short synthetic link (x1 and x4)
//! and a constant 10 Mbit/s link: its rows in rates.csv and rates.json, its chart, its
//! section of report.md and its checks; `all` leaves it out.

use std::sync::Arc;

use sprout_eval::eval::{Experiment, LinkSet};
use sprout_eval::rates::{self, RatesResults, RatesSettings, SCHEMES};
use sprout_link::SyntheticLink;

fn links() -> LinkSet {
    let t = |seed, dir: &str| {
        Arc::new(
            SyntheticLink {
                seed,
                duration_s: 20.0,
                ..SyntheticLink::default()
            }
            .generate(format!("Synth.{dir}")),
        )
    };
    LinkSet {
        source: "synthetic".into(),
        note: None,
        pairs: vec![("Synth".into(), t(31, "up"), t(32, "down"))],
    }
}

#[test]
fn the_rates_experiment_at_reduced_settings() {
    assert!(!Experiment::parse_list("all")
        .unwrap()
        .contains(&Experiment::Rates));
    assert_eq!(
        Experiment::parse_list("Rates").unwrap(),
        [Experiment::Rates]
    );
    let out = tempfile::tempdir().unwrap();
    let links = links();
    // Not asked for: nothing runs, nothing is written.
    let none = rates::run_if_asked(
        &[Experiment::Fig7],
        (2_000_000, &[]),
        (Some(2), false),
        &links,
        out.path(),
    )
    .unwrap();
    assert!(none.is_empty() && !out.path().join("rates.csv").exists());

    let settings = RatesSettings {
        scales: vec![1.0, 4.0],
        constant_mbps: vec![10.0],
        duration_us: 12_000_000,
        constant_duration_us: 8_000_000,
        skip_us: 2_000_000,
    };
    let res = rates::run(&settings, &[], &links, Some(2), false).unwrap();
    assert_eq!(res.simulations, 3 * SCHEMES.len());
    assert_eq!(res.rows.len(), 2 * res.simulations);
    // Every row measured its window: 10 s on the scaled links, 6 s on the constant one.
    for r in &res.rows {
        let want = if r.scale.is_some() { 10.0 } else { 6.0 };
        assert!((r.window_s - want).abs() < 0.01, "{r:?}");
        assert!(r.utilization > 0.0 && r.utilization < 1.01, "{r:?}");
    }
    // A constant 10 Mbit/s link is 10,000 kbit/s of capacity each way.
    let c = res.rows.iter().find(|r| r.constant_mbps.is_some()).unwrap();
    assert!((c.capacity_kbps - 10_000.0).abs() < 50.0, "{c:?}");
    // x4 offers four times x1's capacity, to within a packet a millisecond-window.
    let cap = |scale: f64| {
        res.rows
            .iter()
            .find(|r| r.scale == Some(scale) && r.direction == "down")
            .unwrap()
            .capacity_kbps
    };
    assert!(
        (cap(4.0) / cap(1.0) - 4.0).abs() < 0.05,
        "{}",
        cap(4.0) / cap(1.0)
    );
    assert_eq!(res.averages.len(), 3 * SCHEMES.len());
    // The checks ran on the synthetic link, so they are said not to apply.
    let checks = rates::checks(&res);
    assert_eq!(checks.len(), 1, "x16 and x64 did not run");
    assert!(checks[0].not_applicable.is_some());

    sprout_eval::report::write_rates(out.path(), &res).unwrap();
    let csv = std::fs::read_to_string(out.path().join("rates.csv")).unwrap();
    assert_eq!(csv.lines().count(), 1 + res.rows.len());
    assert!(csv.starts_with("group,scale,constant_mbps,link,direction,scheme,"));
    let json = std::fs::read_to_string(out.path().join("rates.json")).unwrap();
    let back: RatesResults = serde_json::from_str(&json).unwrap();
    assert_eq!(back.rows.len(), res.rows.len());
    let svg = std::fs::read_to_string(out.path().join("rates.svg")).unwrap();
    roxmltree::Document::parse(&svg).unwrap();
    for s in SCHEMES {
        assert!(
            svg.contains(&format!(r#"data-series="{}""#, s.key())),
            "{}",
            s.key()
        );
    }
    let report = std::fs::read_to_string(out.path().join("report.md")).unwrap();
    assert!(report.starts_with("## Sprout at today's link rates (`rates`)"));
    assert!(report.contains("| x4 |") && report.contains("| 10 Mbit/s |"));
    assert!(report.contains("![rates.svg](rates.svg)"));
    let table = sprout_eval::report::rates_terminal_table(&res);
    assert!(table.contains("sprout-wide") && table.contains("➖ Not applicable"));
}

/// A folder holding the first synthetic link pair as `Synth.up` and `Synth.down`.
fn synthetic_pair_folder() -> tempfile::TempDir {
    let traces = tempfile::tempdir().unwrap();
    let pair = &links().pairs[0];
    for (t, dir) in [(&pair.1, "up"), (&pair.2, "down")] {
        let text: String = t
            .opportunities_ms()
            .iter()
            .map(|ms| format!("{ms}\n"))
            .collect();
        std::fs::write(traces.path().join(format!("Synth.{dir}")), text).unwrap();
    }
    traces
}

/// `sprout eval --schemes sprout-wide` runs the wide model with the run's `--param` changes.
#[test]
fn sprout_wide_in_fig7_takes_the_runs_params() {
    use sprout_eval::eval::{self, EvalOptions, Scheme};
    let traces = synthetic_pair_folder();
    let run = |params: &[&str]| {
        let out = tempfile::tempdir().unwrap();
        eval::run(&EvalOptions {
            traces: Some(traces.path().to_path_buf()),
            schemes: vec![Scheme::SproutWide],
            experiments: vec![Experiment::Fig7],
            out: out.path().to_path_buf(),
            skip_us: 2_000_000,
            jobs: Some(2),
            progress: false,
            protocol_params: params.iter().map(|p| p.to_string()).collect(),
        })
        .unwrap();
        std::fs::read_to_string(out.path().join("results.csv")).unwrap()
    };
    let plain = run(&[]);
    assert!(plain.contains(",sprout-wide,"), "{plain}");
    assert_ne!(plain, run(&["estimator.Wide.sigma_log=0.3"]));
}

/// The report says which rate model `sprout` ran, names both when `sprout-wide` ran too, and
/// does not hold Sprout's wide model against Sprout as a rival scheme.
#[test]
fn the_report_names_the_rate_models_and_sprout_wide_is_not_a_rival() {
    use sprout_eval::eval::{self, EvalOptions, Scheme};
    let traces = synthetic_pair_folder();
    let report = |schemes: Vec<Scheme>| {
        let out = tempfile::tempdir().unwrap();
        let _ = eval::run(&EvalOptions {
            traces: Some(traces.path().to_path_buf()),
            schemes,
            experiments: vec![Experiment::Fig7, Experiment::Fig8],
            out: out.path().to_path_buf(),
            skip_us: 2_000_000,
            jobs: Some(2),
            progress: false,
            protocol_params: Vec::new(),
        });
        std::fs::read_to_string(out.path().join("report.md")).unwrap()
    };
    let one = report(vec![Scheme::Sprout, Scheme::SproutEwma]);
    assert!(one.contains("**Sprout's rate model:**"), "{one}");
    assert!(one.contains("--experiments rates"), "{one}");
    let both = report(vec![Scheme::Sprout, Scheme::SproutWide, Scheme::SproutEwma]);
    assert!(both.contains("**Sprout's two rate models:**"), "{both}");
    assert!(
        both.contains("Sprout has the lowest average self-inflicted delay"),
        "{both}"
    );
    assert!(!both.contains("next: sprout-wide"), "{both}");
}
