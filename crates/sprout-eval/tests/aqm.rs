//! The `aqm` experiment on a short synthetic link pair (its rate in steps): asked for by name only; through
//! `sprout eval` it writes its files; aqm.csv has a row for every queue, scheme and direction
//! and the averages are their means; the queues behave as their kinds say (the 100 ms buffer
//! drops at its limit, the AQMs by their own rule); FQ-CoDel keeps the interactive stream clear
//! of the Cubic download that the unlimited queue lets bury it; the report's section names the
//! paper's CoDel figures beside the CoDel column; bad settings are refused by name.

use std::collections::BTreeSet;
use std::path::Path;

use sprout_eval::aqm::{
    self, AqmResults, AqmSettings, ALL, CODEL, FQ_CODEL, QUEUES, SCHEMES, UNLIMITED,
};
use sprout_eval::eval::{self, EvalOptions, Experiment, LinkSet};

/// 40 s of a link whose rate steps every second between 500, 125 and 250 packets/s (an
/// opportunity every 2, 8 or 4 ms: 6, 1.5 and 3 Mbit/s), `slow` times slower, as the text of
/// a mahimahi trace.
fn stepping(slow: u64) -> String {
    let mut text = String::new();
    for s in 0..40u64 {
        let gap = [2, 8, 4][(s % 3) as usize] * slow;
        let mut t = s * 1000 + gap;
        while t <= (s + 1) * 1000 {
            text.push_str(&format!("{t}\n"));
            t += gap;
        }
    }
    text
}

/// The link pair `Steps` (the uplink three times slower) written as mahimahi traces.
fn synthetic_traces(dir: &Path) {
    std::fs::write(dir.join("Steps.up"), stepping(3)).unwrap();
    std::fs::write(dir.join("Steps.down"), stepping(1)).unwrap();
}

/// `sprout eval --experiments aqm --skip 5` over the synthetic pair: its terminal text.
fn run_eval(traces: &Path, out: &Path) -> String {
    eval::run(&EvalOptions {
        traces: Some(traces.to_path_buf()),
        experiments: Experiment::parse_list("aqm").unwrap(),
        out: out.to_path_buf(),
        skip_us: 5_000_000,
        jobs: Some(2),
        progress: false,
        ..EvalOptions::default()
    })
    .expect("the aqm experiment runs")
}

#[test]
fn aqm_is_asked_for_by_name() {
    assert!(!Experiment::parse_list("all")
        .unwrap()
        .contains(&Experiment::Aqm));
    assert_eq!(Experiment::parse_list(" AQM").unwrap(), [Experiment::Aqm]);
    assert!(Experiment::OPT_IN.contains(&Experiment::Aqm));
    // The emulated evaluation's list is its own.
    assert!(Experiment::parse_emulated_list("aqm").is_err());
}

#[test]
fn the_aqm_experiment_writes_every_cell_and_the_papers_codel_figures() {
    let traces = tempfile::tempdir().unwrap();
    synthetic_traces(traces.path());
    let out = tempfile::tempdir().unwrap();
    let text = run_eval(traces.path(), out.path());
    assert!(
        text.contains("aqm: utilization / self-inflicted delay"),
        "{text}"
    );
    assert!(
        text.contains("Cubic over CoDel (Figure 8): 61.1% / 497 ms"),
        "{text}"
    );
    for f in [
        "aqm.csv",
        "aqm-table.csv",
        "aqm-stream.csv",
        "aqm.json",
        "aqm.svg",
    ] {
        assert!(out.path().join(f).is_file(), "{f} missing");
    }

    // aqm.csv: a row per queue, scheme, link and direction, every field filled.
    let csv = std::fs::read_to_string(out.path().join("aqm.csv")).unwrap();
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    assert_eq!(&header[..4], ["queue", "scheme", "link", "direction"]);
    let mut cells = BTreeSet::new();
    for line in lines {
        let f: Vec<&str> = line.split(',').collect();
        assert_eq!(f.len(), header.len(), "{line}");
        assert!(f.iter().all(|x| !x.is_empty()), "an empty field: {line}");
        assert!(cells.insert((f[0].to_string(), f[1].to_string(), f[3].to_string())));
    }
    for q in QUEUES {
        for s in SCHEMES {
            for d in ["down", "up"] {
                let cell = (q.name.to_string(), s.key().to_string(), d.to_string());
                assert!(cells.contains(&cell), "no row for {cell:?}");
            }
        }
    }
    assert_eq!(cells.len(), QUEUES.len() * SCHEMES.len() * 2);

    // The table's averages, and the JSON that holds everything.
    let table = std::fs::read_to_string(out.path().join("aqm-table.csv")).unwrap();
    // Per queue and scheme: the `all` average and the one link pair's.
    assert_eq!(table.lines().count(), 1 + 2 * QUEUES.len() * SCHEMES.len());
    let json = std::fs::read_to_string(out.path().join("aqm.json")).unwrap();
    let res: AqmResults = serde_json::from_str(&json).unwrap();
    assert_eq!(res.simulations, QUEUES.len() * SCHEMES.len() + 2);
    for a in res.averages.iter().filter(|a| a.group == ALL) {
        let mine: Vec<_> = res
            .rows
            .iter()
            .filter(|r| r.queue == a.queue && r.scheme == a.scheme)
            .collect();
        assert_eq!(mine.len(), 2);
        let mean = (mine[0].utilization + mine[1].utilization) / 2.0;
        assert!((a.utilization - mean).abs() < 1e-12, "{a:?}");
    }

    // Each queue drops by its own rule: Cubic fills the 100 ms buffer and loses packets at
    // its limit, with no AQM drop; CoDel drops by its rule, with no buffer to fill.
    let cubic = |q: &str| {
        res.rows
            .iter()
            .filter(|r| r.queue == q && r.scheme == "cubic")
            .fold((0, 0), |(b, a), r| (b + r.buffer_drops, a + r.aqm_drops))
    };
    let (buffer, aqm_drops) = cubic("drop-tail-100ms");
    assert!(buffer > 0 && aqm_drops == 0, "{buffer} {aqm_drops}");
    let (buffer, aqm_drops) = cubic(CODEL);
    assert!(buffer == 0 && aqm_drops > 0, "{buffer} {aqm_drops}");
    // Cubic's standing queue is shorter under CoDel than in the 100 ms buffer.
    let delay = |q: &str| res.average(ALL, q, "cubic").unwrap().self_inflicted_ms;
    assert!(delay(CODEL) < delay("drop-tail-100ms"), "{res:#?}");

    // The stream beside the download: FQ-CoDel keeps it clear, the unlimited queue does not.
    let stream = |q: &str| res.stream.iter().find(|r| r.queue == q).unwrap();
    let (fq, open) = (stream(FQ_CODEL), stream(UNLIMITED));
    assert!(fq.p95_ms < 200.0, "{fq:?}");
    assert!(open.p50_ms > 5.0 * fq.p95_ms, "{open:?} against {fq:?}");
    assert!(fq.delivered_kbps > 0.9 * fq.offered_kbps, "{fq:?}");
    assert!(fq.download_kbps > 0.0 && open.download_kbps > 0.0);
    let stream_csv = std::fs::read_to_string(out.path().join("aqm-stream.csv")).unwrap();
    assert_eq!(stream_csv.lines().count(), 3);

    // The report's section: the paper's CoDel figures beside the CoDel column.
    let report = std::fs::read_to_string(out.path().join("report.md")).unwrap();
    let section = report
        .split("## Finite buffers and AQMs")
        .nth(1)
        .expect("the aqm section");
    assert!(
        section.contains("| codel | paper (Figure 8) | pie |"),
        "{section}"
    );
    assert!(
        section.contains("61.1% / 497 ms (Cubic over CoDel)"),
        "{section}"
    );
    assert!(section.contains("42.1% / 317 ms (unlimited drop-tail)"));
    assert!(section.contains("Sprout had 0.70x its throughput"));
    assert!(section.contains("0.32 s of self-inflicted delay against its 0.50 s"));
    assert!(section.contains("The interactive stream beside a Cubic download"));
    assert!(section.contains("![aqm.svg](aqm.svg)"));
    // The chart: a panel per queue, a marker per scheme on each and the paper's point.
    let svg = std::fs::read_to_string(out.path().join("aqm.svg")).unwrap();
    assert_eq!(svg.matches(r#"class="frame""#).count(), QUEUES.len());
    assert!(svg.contains(r#"data-series="cubic-codel (paper)""#));
}

#[test]
fn aqm_refuses_unknown_queues_and_schemes_and_runs_only_when_asked() {
    let traces = tempfile::tempdir().unwrap();
    synthetic_traces(traces.path());
    let links: LinkSet = eval::load_links(Some(traces.path())).unwrap();
    let out = tempfile::tempdir().unwrap();
    let none = aqm::run_if_asked(
        &[Experiment::Frontier],
        (5_000_000, &[]),
        (Some(1), false),
        &links,
        out.path(),
    )
    .unwrap();
    assert!(none.is_empty() && !out.path().join("aqm.csv").exists());
    let bad = |settings: AqmSettings| {
        aqm::run(&settings, &[], &links, Some(1), false)
            .unwrap_err()
            .to_string()
    };
    let e = bad(AqmSettings {
        queues: vec!["red".into()],
        ..AqmSettings::default()
    });
    assert!(e.contains("unknown queue 'red'"), "{e}");
    let e = bad(AqmSettings {
        schemes: vec!["direct".into()],
        ..AqmSettings::default()
    });
    assert!(e.contains("direct is no bulk transfer"), "{e}");
    let e = bad(AqmSettings {
        stream_kbps: 0.0,
        ..AqmSettings::default()
    });
    assert!(e.contains("stream rate 0 kbit/s"), "{e}");
}
