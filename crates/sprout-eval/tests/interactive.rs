//! The `interactive` experiment end to end on a short synthetic link: its rows in
//! interactive.csv and interactive.json, its chart, its report section and its checks on the
//! terminal, and `all` left as it was.

use std::collections::BTreeSet;
use std::path::Path;

use sprout_eval::eval::{self, EvalOptions, Experiment};
use sprout_eval::interactive::{
    InteractiveResults, InteractiveRow, InteractiveSettings, ADAPTIVE_SCHEMES, FIXED_RATE_SCHEMES,
};
use sprout_link::SyntheticLink;

/// A synthetic link pair of `seconds` written as mahimahi traces `Synth.up` / `Synth.down`.
fn synthetic_traces(dir: &Path, seconds: f64) {
    for (seed, name) in [(21, "up"), (22, "down")] {
        let trace = SyntheticLink {
            seed,
            duration_s: seconds,
            ..SyntheticLink::default()
        }
        .generate(format!("Synth.{name}"));
        let text: String = trace
            .opportunities_ms()
            .into_iter()
            .map(|ms| format!("{ms}\n"))
            .collect();
        std::fs::write(dir.join(format!("Synth.{name}")), text).unwrap();
    }
}

/// Runs the experiment alone over the synthetic link: 30 s runs, 5 s skipped, two rates.
fn run(out: &Path) -> String {
    let traces = tempfile::tempdir().unwrap();
    synthetic_traces(traces.path(), 40.0);
    eval::run_with(
        &EvalOptions {
            traces: Some(traces.path().to_path_buf()),
            experiments: Experiment::parse_list("interactive").unwrap(),
            out: out.to_path_buf(),
            skip_us: 5_000_000,
            ..EvalOptions::default()
        },
        &InteractiveSettings {
            rates_kbps: vec![250.0, 1000.0],
            duration_us: Some(30_000_000),
        },
    )
    .expect("the interactive experiment runs")
}

/// Each row's figures are consistent with each other.
fn check_row(r: &InteractiveRow) {
    let what = format!("{} {} {} {:?}", r.direction, r.spec, r.scheme, r.rate_kbps);
    assert_eq!(r.link, "Synth", "{what}");
    assert!(r.capacity_kbps > 100.0, "{what}: {}", r.capacity_kbps);
    assert!((r.window_s - 25.0).abs() < 1e-6, "{what}: {}", r.window_s);
    assert!(r.messages > 0, "{what}");
    assert!(r.delivered_kbps <= r.offered_kbps + 1e-9, "{what}");
    assert!((0.0..=1.0).contains(&r.delivered_share), "{what}");
    assert!(
        r.app_p50_ms <= r.app_p95_ms && r.app_p95_ms <= r.app_p99_ms,
        "{what}"
    );
    assert!(
        r.within_100ms <= r.within_150ms && r.within_150ms <= r.within_300ms,
        "{what}"
    );
    match r.rate_kbps {
        Some(rate) => {
            // The offered rate is the source's, within a frame's or a datagram's worth.
            assert!((r.offered_kbps - rate).abs() < 0.1 * rate, "{what}: {r:?}");
            assert!(r.source == "constant" || r.source == "video", "{what}");
            let spec_rate = match sprout_sim::App::parse(&r.spec).unwrap() {
                sprout_sim::App::Constant { rate_bps, .. }
                | sprout_sim::App::Video { rate_bps, .. } => rate_bps,
                other => panic!("{what}: {other:?}"),
            };
            assert_eq!(spec_rate, rate * 1e3, "{what}");
        }
        None => {
            assert_eq!(r.source, "adaptive", "{what}");
            assert_ne!(r.scheme, "direct", "{what}");
        }
    }
}

#[test]
fn the_interactive_experiment_on_a_synthetic_link() {
    let out = tempfile::tempdir().unwrap();
    let summary = run(out.path());

    // interactive.csv: one row per direction, source, rate and scheme.
    let mut reader = csv::Reader::from_path(out.path().join("interactive.csv")).unwrap();
    let header: Vec<String> = reader.headers().unwrap().iter().map(String::from).collect();
    for col in [
        "link",
        "direction",
        "capacity_kbps",
        "source",
        "spec",
        "rate_kbps",
        "scheme",
        "offered_kbps",
        "delivered_kbps",
        "delivered_share",
        "app_p50_ms",
        "app_p95_ms",
        "app_p99_ms",
        "within_100ms",
        "within_150ms",
        "within_300ms",
    ] {
        assert!(header.iter().any(|h| h == col), "{col} missing: {header:?}");
    }
    let rows: Vec<InteractiveRow> = reader.deserialize().map(|r| r.unwrap()).collect();
    let per_direction = 2 * 2 * FIXED_RATE_SCHEMES.len() + ADAPTIVE_SCHEMES.len();
    assert_eq!(rows.len(), 2 * per_direction);
    for r in &rows {
        check_row(r);
    }
    let keys: BTreeSet<(String, String, String, Option<u64>)> = rows
        .iter()
        .map(|r| {
            (
                r.direction.clone(),
                r.source.clone(),
                r.scheme.clone(),
                r.rate_kbps.map(|x| x as u64),
            )
        })
        .collect();
    assert_eq!(keys.len(), rows.len(), "a run appears twice");
    for dir in ["down", "up"] {
        let caps: BTreeSet<u64> = rows
            .iter()
            .filter(|r| r.direction == dir)
            .map(|r| r.capacity_kbps.round() as u64)
            .collect();
        assert_eq!(caps.len(), 1, "one capacity per direction: {caps:?}");
    }

    // interactive.json: the same rows, and the averages over the two directions.
    let json: InteractiveResults = serde_json::from_str(
        &std::fs::read_to_string(out.path().join("interactive.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(json.rows.len(), rows.len());
    assert_eq!(json.rates_kbps, [250.0, 1000.0]);
    assert_eq!(json.duration_cap_s, Some(30.0));
    assert_eq!(json.averages.len(), per_direction);
    assert!(json.averages.iter().all(|a| a.directions == 2));
    for (a, b) in json.rows.iter().zip(&rows) {
        assert_eq!(
            (&a.spec, &a.scheme, a.messages),
            (&b.spec, &b.scheme, b.messages)
        );
    }

    // The chart: a line per scheme of the fixed-rate sources, direct in its own colour.
    let svg = std::fs::read_to_string(out.path().join("interactive.svg")).unwrap();
    let doc = roxmltree::Document::parse(&svg).unwrap();
    let series: BTreeSet<&str> = doc
        .descendants()
        .filter_map(|n| n.attribute("data-series"))
        .collect();
    let want: BTreeSet<&str> = FIXED_RATE_SCHEMES.iter().map(|s| s.key()).collect();
    assert_eq!(series, want);
    assert!(svg.contains(
        r##"stroke="#6b4226" stroke-width="2" stroke-dasharray="6 4" data-series="direct""##
    ));

    // The checks, printed as the evaluation's others are.
    for check in [
        "Sprout against direct, constant source, on the 2 link directions",
        "Sprout against direct, video source",
        "Adaptive video, averages over the 2 link directions",
    ] {
        let line = summary
            .lines()
            .find(|l| l.contains(check))
            .unwrap_or_else(|| panic!("no line for {check:?}:\n{summary}"));
        assert!(
            line.starts_with("✅") || line.starts_with("❌") || line.starts_with("➖"),
            "{line}"
        );
    }
    assert!(
        summary.contains("interactive: application-level p95 delay"),
        "{summary}"
    );
    assert!(summary.contains("60 interactive runs"), "{summary}");
    // gcc carries adaptive video beside Sprout and Sprout-EWMA (reported, not judged).
    let adaptive = summary
        .lines()
        .find(|l| l.starts_with("adaptive video (means of 2 link directions)"))
        .unwrap_or_else(|| panic!("no adaptive line:\n{summary}"));
    assert!(adaptive.contains("; gcc "), "{adaptive}");

    // report.md's section; results.csv a header without rows; every file listed.
    let report = std::fs::read_to_string(out.path().join("report.md")).unwrap();
    for want in [
        "## Interactive applications (interactive)",
        "**The metric.**",
        "**Why `direct` is the floor.**",
        "| skype (paper) |",
        "| gcc |",
        "![interactive.svg](interactive.svg)",
    ] {
        assert!(report.contains(want), "report.md lacks {want:?}");
    }
    let results = std::fs::read_to_string(out.path().join("results.csv")).unwrap();
    assert_eq!(results.lines().count(), 1, "{results}");
    assert!(results.starts_with("experiment,link,direction,scheme,"));
    let files = std::fs::read_to_string(out.path().join("files.txt")).unwrap();
    for f in [
        "interactive.csv",
        "interactive.json",
        "interactive.svg",
        "report.md",
    ] {
        assert!(
            files.lines().any(|l| l == f),
            "files.txt lacks {f}:\n{files}"
        );
    }
}

#[test]
fn all_is_the_papers_experiments_alone() {
    let all = Experiment::parse_list("all").unwrap();
    assert!(!all.contains(&Experiment::Interactive));
    let both = Experiment::parse_list("all,interactive").unwrap();
    assert!(both.contains(&Experiment::Interactive) && both.contains(&Experiment::Fig7));
    // A bad offered rate is refused before anything runs.
    let out = tempfile::tempdir().unwrap();
    let e = eval::run_with(
        &EvalOptions {
            experiments: vec![Experiment::Interactive],
            out: out.path().to_path_buf(),
            ..EvalOptions::default()
        },
        &InteractiveSettings {
            rates_kbps: vec![0.5],
            duration_us: None,
        },
    )
    .unwrap_err();
    assert!(e.to_string().contains("offered rate 0.5 kbit/s"), "{e}");
}
