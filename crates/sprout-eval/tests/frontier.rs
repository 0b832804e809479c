//! The `frontier` experiment: its table's structure on a short synthetic link pair (a row per
//! model, point and direction; averages that are the rows' means; a verdict per Bayesian model
//! and group that agrees with the dominance of the averages; the files and the report's
//! section), and the dominance logic on hand-made points (which point dominates which, the
//! Pareto front, the utilization interpolated at a delay, the gaps and the report's answer).

use std::sync::Arc;

use sprout_eval::eval::{Experiment, LinkSet};
use sprout_eval::frontier::{
    self, best_gap, dominates, dominating_pairs, front, gaps, utilization_at, verdicts, CurvePoint,
    FrontierAverage, FrontierResults, FrontierSettings, ALL, FIGURE9_LINK,
};
use sprout_link::Trace;

/// 40 s of a link whose rate steps every second between 500, 125 and 250 packets/s (an
/// opportunity every 2, 8 or 4 ms), the uplink a third slower.
fn stepping(name: &str, slow: u64) -> Arc<Trace> {
    let mut opps = Vec::new();
    for s in 0..40u64 {
        let gap = [2, 8, 4][(s % 3) as usize] * slow;
        let mut t = s * 1000 + gap;
        while t <= (s + 1) * 1000 {
            opps.push(t);
            t += gap;
        }
    }
    Arc::new(Trace::from_opportunities_ms(name, opps).unwrap())
}

/// The scaled and synthetic links: each set a group of its own with a verdict, at the extra
/// grid, its runs cut at the extra duration; the `x1` averages hold the `x1` rows alone.
#[test]
fn the_scaled_and_synthetic_links_are_groups_of_their_own() {
    let links = LinkSet {
        source: "synthetic".into(),
        note: None,
        pairs: vec![("one".into(), stepping("s.up", 3), stepping("s.down", 1))],
    };
    let settings = FrontierSettings {
        confidences: vec![0.5],
        gains: vec![0.125],
        models: vec![
            "sprout-wide".into(),
            "wide-vol".into(),
            "sprout-ewma".into(),
        ],
        skip_us: 5_000_000,
        scales: vec![2.0],
        synthetic: true,
        extra_confidences: vec![0.9],
        extra_gains: vec![0.25],
        extra_duration_us: 12_000_000,
    };
    let res = frontier::run(&settings, &[], &links, Some(2), false).unwrap();
    // x1: 3 models at a point on 1 pair; x2: the same on 1 pair; synthetic: on 3 pairs.
    assert_eq!(res.simulations, 3 + 3 + 3 * 3);
    assert_eq!(res.verdict_groups(), [ALL, "x2", frontier::SYNTHETIC]);
    assert_eq!(res.sets[1].1.len(), 3);
    for r in &res.rows {
        let extra = r.set != frontier::X1;
        let want = match (extra, r.knob.as_str()) {
            (false, "gain") => 0.125,
            (false, _) => 0.5,
            (true, "gain") => 0.25,
            (true, _) => 0.9,
        };
        assert_eq!(r.value, want, "{r:?}");
        assert!(
            r.utilization > 0.05 && r.self_inflicted_ms.is_finite(),
            "{r:?}"
        );
    }
    for a in &res.averages {
        let n = match a.group.as_str() {
            ALL | "one" | "x2" => 2,
            _ => 6,
        };
        assert_eq!(a.directions, n, "{a:?}");
    }
    // A verdict per group and Bayesian model; the report names every group.
    assert_eq!(res.verdicts.len(), 3 * 2);
    let out = tempfile::tempdir().unwrap();
    sprout_eval::report::write_frontier(out.path(), &res).unwrap();
    let report = std::fs::read_to_string(out.path().join("report.md")).unwrap();
    assert!(
        report.contains("the links scaled x2 (2 directions, average)"),
        "{report}"
    );
    assert!(report.contains("the synthetic links (6 directions, average)"));
    assert!(report.contains("`calibration`"));
}

fn point(value: f64, utilization: f64, delay_ms: f64) -> CurvePoint {
    CurvePoint {
        value,
        utilization,
        delay_ms,
    }
}

#[test]
fn the_frontier_table_on_a_short_synthetic_link() {
    assert!(!Experiment::parse_list("all")
        .unwrap()
        .contains(&Experiment::Frontier));
    assert_eq!(
        Experiment::parse_list("Frontier").unwrap(),
        [Experiment::Frontier]
    );
    // Named as the Figure-9 link, so that it gets a verdict of its own beside `all`.
    let links = LinkSet {
        source: "synthetic".into(),
        note: None,
        pairs: vec![(
            FIGURE9_LINK.into(),
            stepping("s.up", 3),
            stepping("s.down", 1),
        )],
    };
    let out = tempfile::tempdir().unwrap();
    let none = frontier::run_if_asked(
        &[Experiment::Calibration],
        (5_000_000, &[]),
        (Some(2), false),
        &links,
        out.path(),
    )
    .unwrap();
    assert!(none.is_empty() && !out.path().join("frontier.csv").exists());

    let settings = FrontierSettings {
        confidences: vec![0.5, 0.95],
        gains: vec![0.0625, 0.5],
        skip_us: 5_000_000,
        scales: vec![],
        synthetic: false,
        ..FrontierSettings::default()
    };
    let res = frontier::run(&settings, &[], &links, Some(2), false).unwrap();
    let models = frontier::MODELS.len();
    // Two points per model, one pair: a simulation each, a row per direction.
    assert_eq!(res.simulations, models * 2);
    assert_eq!(res.rows.len(), models * 2 * 2);
    for r in &res.rows {
        assert!(r.utilization > 0.05 && r.utilization <= 1.05, "{r:?}");
        assert!(
            r.self_inflicted_ms.is_finite() && r.self_inflicted_ms >= 0.0,
            "{r:?}"
        );
        let m = frontier::model(&r.model).unwrap();
        assert_eq!(r.knob, m.knob());
        let values = if m.knob() == "gain" {
            &settings.gains
        } else {
            &settings.confidences
        };
        assert!(values.contains(&r.value), "{r:?}");
    }
    // Averages: every point on `all` and on the pair, each the mean of the two directions.
    assert_eq!(res.averages.len(), 2 * models * 2);
    for a in &res.averages {
        assert!(a.group == ALL || a.group == FIGURE9_LINK, "{a:?}");
        let of: Vec<_> = res
            .rows
            .iter()
            .filter(|r| r.model == a.model && r.value == a.value)
            .collect();
        assert_eq!((of.len(), a.directions), (2, 2), "{a:?}");
        let u = (of[0].utilization + of[1].utilization) / 2.0;
        let d = (of[0].self_inflicted_ms + of[1].self_inflicted_ms) / 2.0;
        assert!((a.utilization - u).abs() < 1e-12 && (a.self_inflicted_ms - d).abs() < 1e-9);
    }
    // A verdict per Bayesian model and group, agreeing with the averages' dominance.
    assert_eq!(res.verdict_groups(), [ALL, FIGURE9_LINK]);
    assert_eq!(res.verdicts.len(), 2 * (models - 1));
    for v in &res.verdicts {
        let mine = res.curve(&v.group, &v.model);
        let ewma = res.curve(&v.group, "sprout-ewma");
        assert_eq!((mine.len(), ewma.len()), (2, 2));
        let expect: Vec<(f64, f64)> = mine
            .iter()
            .flat_map(|a| {
                ewma.iter()
                    .filter(|b| dominates(a, b))
                    .map(|b| (a.value, b.value))
            })
            .collect();
        assert_eq!(v.dominating, expect, "{v:?}");
        assert_eq!(v.best_gap, best_gap(&mine, &ewma));
    }
    // The files and the report's section.
    sprout_eval::report::write_frontier(out.path(), &res).unwrap();
    let csv = std::fs::read_to_string(out.path().join("frontier.csv")).unwrap();
    let mut lines = csv.lines();
    assert_eq!(
        lines.next(),
        Some(
            "model,set,knob,value,link,direction,capacity_kbps,throughput_kbps,utilization,\
             self_inflicted_ms"
        )
    );
    assert_eq!(lines.count(), res.rows.len());
    let json = std::fs::read_to_string(out.path().join("frontier.json")).unwrap();
    let back: FrontierResults = serde_json::from_str(&json).unwrap();
    assert_eq!(back.rows.len(), res.rows.len());
    for (a, b) in back.rows.iter().zip(&res.rows) {
        assert_eq!(
            (&a.model, a.value, &a.direction),
            (&b.model, b.value, &b.direction)
        );
        assert!((a.utilization - b.utilization).abs() < 1e-12);
    }
    assert_eq!(back.verdicts.len(), res.verdicts.len());
    let svg = std::fs::read_to_string(out.path().join("frontier.svg")).unwrap();
    // A marker per point on each of the two panels, and a legend swatch per model.
    assert_eq!(
        svg.matches(r#"class="marker""#).count(),
        res.averages.len() + models
    );
    let report = std::fs::read_to_string(out.path().join("report.md")).unwrap();
    assert!(report.contains("(`frontier`)"), "{report}");
    assert!(report.contains("| sprout-ewma | gain 0.0625 |"), "{report}");
    assert!(report.contains("![frontier.svg](frontier.svg)"));
}

#[test]
fn dominance_needs_the_utilization_and_strictly_less_delay() {
    let e = point(0.125, 0.80, 554.0);
    assert!(dominates(&point(0.9, 0.80, 553.9), &e));
    assert!(dominates(&point(0.9, 0.95, 100.0), &e));
    // The same delay is not less; a hair less utilization is not at least.
    assert!(!dominates(&point(0.9, 0.90, 554.0), &e));
    assert!(!dominates(&point(0.9, 0.7999, 100.0), &e));
    assert!(!dominates(&e, &e));
    assert!(!dominates(&point(0.9, f64::NAN, 100.0), &e));
    assert!(!dominates(
        &point(0.9, 0.9, 100.0),
        &point(0.1, 0.5, f64::NAN)
    ));
    let curve = [point(0.5, 0.81, 700.0), point(0.9, 0.6, 300.0)];
    let ewma = [point(0.0625, 0.79, 532.0), point(0.5, 0.796, 827.0)];
    // Only the 0.5 point, and only against the gain-0.5 point.
    assert_eq!(dominating_pairs(&curve, &ewma), [(0, 1)]);
}

#[test]
fn the_curve_is_its_pareto_front_interpolated_in_delay() {
    let curve = [
        point(0.5, 0.5, 1000.0),
        point(0.7, 0.8, 900.0),
        point(0.8, 0.7, 600.0),
        point(0.85, 0.6, 650.0),
        point(0.95, 0.4, 300.0),
        point(0.99, f64::NAN, 10.0),
    ];
    let f: Vec<f64> = front(&curve).iter().map(|p| p.value).collect();
    assert_eq!(f, [0.95, 0.8, 0.7]);
    let at = |d: f64| utilization_at(&curve, d);
    assert_eq!(at(299.0), None);
    assert_eq!(at(300.0), Some(0.4));
    assert!((at(450.0).unwrap() - 0.55).abs() < 1e-12);
    assert!((at(600.0).unwrap() - 0.7).abs() < 1e-12);
    // Beyond the largest delay: what the front shows at no more delay.
    assert_eq!(at(5000.0), Some(0.8));
    assert_eq!(utilization_at(&[], 100.0), None);

    let ewma = [
        point(0.125, 0.80, 554.0),
        point(0.5, 0.75, 1000.0),
        point(0.03125, 0.9, 250.0),
    ];
    let g = gaps(&curve, &ewma);
    // The curve does not come down to 250 ms: two gaps.
    assert_eq!(g.len(), 2);
    let expect = 0.4 + (554.0 - 300.0) / 300.0 * 0.3;
    assert!((g[0].utilization - expect).abs() < 1e-12);
    assert!((g[0].short - (0.80 - expect)).abs() < 1e-12);
    let best = best_gap(&curve, &ewma).unwrap();
    assert_eq!(best.at.value, 0.5);
    assert!((best.short - -0.05).abs() < 1e-12);
    assert_eq!(best_gap(&curve, &ewma[2..]), None);
}

/// Averages of one group: `(model, value, utilization, delay)`.
fn averages(group: &str, points: &[(&str, f64, f64, f64)]) -> Vec<FrontierAverage> {
    points
        .iter()
        .map(|&(m, v, u, d)| FrontierAverage {
            group: group.into(),
            model: m.into(),
            knob: if m == "sprout-ewma" {
                "gain"
            } else {
                "confidence"
            }
            .into(),
            value: v,
            utilization: u,
            self_inflicted_ms: d,
            directions: 2,
        })
        .collect()
}

#[test]
fn verdicts_and_the_reports_answer_follow_the_numbers() {
    let mut avg = averages(
        ALL,
        &[
            ("sprout", 0.5, 0.79, 1026.0),
            ("sprout", 0.95, 0.47, 383.0),
            ("sprout-wide", 0.5, 0.81, 520.0),
            ("sprout-wide", 0.95, 0.44, 339.0),
            ("sprout-ewma", 0.125, 0.803, 554.0),
        ],
    );
    avg.extend(averages(
        FIGURE9_LINK,
        &[
            ("sprout", 0.5, 0.80, 1058.0),
            ("sprout", 0.95, 0.40, 277.0),
            ("sprout-wide", 0.5, 0.82, 725.0),
            ("sprout-wide", 0.95, 0.39, 213.0),
            ("sprout-ewma", 0.125, 0.829, 423.0),
        ],
    ));
    let models: Vec<String> = ["sprout", "sprout-wide", "sprout-ewma"]
        .map(String::from)
        .to_vec();
    let groups = [ALL.to_string(), FIGURE9_LINK.to_string()];
    let v = verdicts(&avg, &groups, &models, "sprout-ewma");
    assert_eq!(v.len(), 4);
    // On `all` the wide model's 0.5 point (81% / 520 ms) dominates; the paper's does not.
    assert!(v[0].dominating.is_empty());
    assert_eq!(v[1].dominating, [(0.5, 0.125)]);
    // The paper's model at 554 ms: 0.47 + (554 - 383) / (1026 - 383) x 0.32 = 0.555.
    let short = 0.803 - (0.47 + (554.0 - 383.0) / (1026.0 - 383.0) * 0.32);
    assert!((v[0].best_gap.unwrap().short - short).abs() < 1e-12);
    // On the Figure-9 link neither does.
    assert!(v[2].dominating.is_empty() && v[3].dominating.is_empty());

    let res = FrontierResults {
        settings: FrontierSettings {
            confidences: vec![0.5, 0.95],
            gains: vec![0.125],
            models: models.clone(),
            skip_us: 60_000_000,
            ..FrontierSettings::default()
        },
        links: vec![FIGURE9_LINK.into(), "other".into()],
        sets: vec![],
        source: "hand-made".into(),
        rows: vec![],
        averages: avg,
        verdicts: v,
        simulations: 0,
        wall_s: 0.0,
    };
    let out = tempfile::tempdir().unwrap();
    sprout_eval::report::write_frontier(out.path(), &res).unwrap();
    let report = std::fs::read_to_string(out.path().join("report.md")).unwrap();
    assert!(
        report.contains(
            "On the 4 link directions (average): a point of sprout-wide dominates a \
             Sprout-EWMA point; Sprout-EWMA at its default gain (0.125): dominated by a point \
             of sprout-wide."
        ),
        "{report}"
    );
    assert!(
        report.contains(&format!(
            "On {FIGURE9_LINK} (both directions, average): no Sprout model point dominates a \
             Sprout-EWMA point; Sprout-EWMA at its default gain (0.125): dominated by no \
             Sprout model point."
        )),
        "{report}"
    );
    assert!(
        report.contains(
            "sprout-wide on the 4 link directions (average): DOMINATES sprout-ewma at gain 0.125 \
         (1 pair), e.g. at confidence 0.5 81.0% / 520 ms against gain 0.125 80.3% / 554 ms"
        ),
        "{report}"
    );
    assert!(
        report.contains(
            "sprout on the 4 link directions (average): no point dominates a sprout-ewma point; \
         best gap: at sprout-ewma's gain 0.125 (80.3% / 554 ms)"
        ),
        "{report}"
    );
    let line = format!("| sprout | {ALL} | {:+.1} |", 100.0 * short);
    assert!(report.contains(&line), "{line} in {report}");
    let table = sprout_eval::report::frontier_terminal_table(&res);
    assert_eq!(table.lines().count(), 1 + 4, "{table}");
}
