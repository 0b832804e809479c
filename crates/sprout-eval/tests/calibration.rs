//! The `calibration` experiment on one of the paper's link pairs (skipped, with a message,
//! when ../shared/traces is absent): every coverage a share, every miss share a share that
//! sums to one, calibration.csv with a row per model, confidence, direction and horizon, the
//! chart and the report's section; `all` leaves it out and `run_if_asked` runs it only when
//! named.

use sprout_eval::calibration::{self, CalibrationSettings, MODELS};
use sprout_eval::eval::{load_links, Experiment, LinkSet};
use sprout_link::testdata;

#[test]
fn the_calibration_experiment_on_a_real_link() {
    assert!(!Experiment::parse_list("all")
        .unwrap()
        .contains(&Experiment::Calibration));
    assert_eq!(
        Experiment::parse_list("Calibration").unwrap(),
        [Experiment::Calibration]
    );
    let Some(dir) = testdata::require("traces") else {
        return;
    };
    let all = load_links(Some(&dir)).unwrap();
    let links = LinkSet {
        source: all.source.clone(),
        note: None,
        pairs: vec![all.named("Verizon-LTE-short").clone()],
    };
    assert_eq!(links.pairs[0].0, "Verizon-LTE-short");
    let out = tempfile::tempdir().unwrap();
    // Not asked for: nothing runs, nothing is written.
    let none = calibration::run_if_asked(
        &[Experiment::Fig7],
        (60_000_000, &[]),
        (Some(2), false),
        &links,
        out.path(),
    )
    .unwrap();
    assert!(none.is_empty() && !out.path().join("calibration.csv").exists());

    let settings = CalibrationSettings {
        confidences: vec![0.5, 0.95],
        ..CalibrationSettings::default()
    };
    let res = calibration::run(&settings, &[], &links, Some(2), false).unwrap();
    // The paper's and the wide model at two confidences, Sprout-EWMA once; two directions.
    let estimators = (2 * 2 + 1) * 2;
    assert_eq!(res.runs, estimators);
    assert_eq!(res.rows.len(), estimators * 8);
    for r in &res.rows {
        assert!((0.0..=1.0).contains(&r.coverage), "{r:?}");
        // 140 s of trace, the first 60 s skipped: about 4,000 forecasts.
        assert!(r.forecasts > 3_900 && r.forecasts <= 4_000, "{r:?}");
        let shares = [r.outage_in_horizon, r.after_outage, r.rate_change, r.steady];
        if r.met < r.forecasts {
            let sum: f64 = shares.iter().map(|s| s.unwrap()).sum();
            assert!((sum - 1.0).abs() < 1e-9, "{r:?}");
        } else {
            assert!(shares.iter().all(Option::is_none), "{r:?}");
        }
    }
    // A lower confidence forecasts more, so it is met no more often.
    for m in MODELS.iter().filter(|m| m.uses_confidence()) {
        for h in 1..=8 {
            let at = |c| res.average(*m, Some(c), h).unwrap().coverage;
            assert!(at(0.5) <= at(0.95), "{} h={h}", m.key());
        }
    }
    sprout_eval::report::write_calibration(out.path(), &res).unwrap();
    let mut csv = csv::Reader::from_path(out.path().join("calibration.csv")).unwrap();
    let header: Vec<String> = csv.headers().unwrap().iter().map(String::from).collect();
    assert_eq!(
        header,
        [
            "model",
            "confidence",
            "link",
            "direction",
            "horizon",
            "forecasts",
            "met",
            "coverage",
            "outage_in_horizon",
            "after_outage",
            "rate_change",
            "steady"
        ]
    );
    let records: Vec<csv::StringRecord> = csv.records().map(Result::unwrap).collect();
    assert_eq!(records.len(), estimators * 8);
    let ewma: Vec<&csv::StringRecord> = records.iter().filter(|r| &r[0] == "sprout-ewma").collect();
    assert_eq!(ewma.len(), 2 * 8);
    assert!(ewma.iter().all(|r| r[1].is_empty()));
    let report = std::fs::read_to_string(out.path().join("report.md")).unwrap();
    assert!(report.contains("## Forecast calibration (`calibration`)"));
    assert!(report.contains("| sprout | 95% |"), "{report}");
    assert!(out.path().join("calibration.svg").exists());
    assert!(out.path().join("calibration.json").exists());
}
