//! The `sprout` command as a user runs it.

use std::path::PathBuf;
use std::process::Command;

fn sprout() -> Command {
    Command::new(env!("CARGO_BIN_EXE_sprout"))
}

/// Fails the test with the command's stderr unless it succeeded.
fn assert_ok(out: &std::process::Output) {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn traces() -> Option<PathBuf> {
    let d = PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/traces"
    ));
    d.join("Verizon-LTE-short.up")
        .exists()
        .then_some(d)
        .or_else(|| {
            eprintln!("skipped: the paper's traces are not present");
            None
        })
}

/// Runs `sprout sim` with an uplink trace holding `uplink_text`; returns (success, stderr).
fn sim_with_uplink(uplink_text: &str) -> (bool, String) {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.up");
    std::fs::write(&bad, uplink_text).unwrap();
    let good = dir.path().join("good.down");
    std::fs::write(&good, "1\n2\n").unwrap();
    let out = sprout()
        .args(["sim", "--uplink"])
        .arg(&bad)
        .arg("--downlink")
        .arg(&good)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn broken_trace_is_a_clear_error_naming_file_and_line() {
    let (ok, err) = sim_with_uplink("0\n5\n3\n");
    assert!(!ok);
    assert!(
        err.contains("bad.up:3") && err.contains("backwards"),
        "{err}"
    );

    let (ok, err) = sim_with_uplink("");
    assert!(!ok);
    assert!(err.contains("empty"), "{err}");

    let (ok, err) = sim_with_uplink("1\nten\n");
    assert!(!ok);
    assert!(err.contains("bad.up:2") && err.contains("ten"), "{err}");
}

#[test]
fn wrong_flags_are_rejected() {
    let out = sprout()
        .args([
            "sim",
            "--scheme",
            "tcp-magic",
            "--uplink",
            "a",
            "--downlink",
            "b",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown scheme"));
    let out = sprout()
        .args([
            "sim",
            "--uplink",
            "a",
            "--downlink",
            "b",
            "--confidence",
            "1.5",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
}

#[test]
fn sim_twice_prints_the_same() {
    let Some(t) = traces() else { return };
    let run = || {
        let out = sprout()
            .args(["sim", "--json", "--duration", "70", "--uplink"])
            .arg(t.join("Verizon-LTE-short.up"))
            .arg("--downlink")
            .arg(t.join("Verizon-LTE-short.down"))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        out.stdout
    };
    let a = run();
    assert_eq!(a, run());
    let v: serde_json::Value = serde_json::from_slice(&a).unwrap();
    assert!(v["downlink"]["metrics"]["utilization"].as_f64().unwrap() > 0.1);
}

#[test]
fn eval_writes_every_output() {
    let Some(t) = traces() else { return };
    let out_dir = tempfile::tempdir().unwrap();
    let out = sprout()
        .args(["eval", "--quiet", "--traces"])
        .arg(&t)
        .arg("--out")
        .arg(out_dir.path())
        .output()
        .unwrap();
    assert_ok(&out);
    let csv = std::fs::read_to_string(out_dir.path().join("results.csv")).unwrap();
    let header = csv.lines().next().unwrap();
    for col in [
        "experiment",
        "confidence",
        "loss",
        "seed",
        "queue",
        "link",
        "direction",
        "scheme",
        "throughput_kbps",
        "utilization",
        "p95_delay_ms",
        "omniscient_p95_ms",
        "self_inflicted_ms",
    ] {
        assert!(header.split(',').any(|c| c == col), "missing column {col}");
    }
    // fig7 by default: 10 schemes (omniscient included) on 4 link pairs, both directions.
    assert_eq!(csv.lines().count(), 1 + 80);
    for f in [
        "results.json",
        "report.md",
        "fig8-averages.svg",
        "fig1-Verizon-LTE-short-down.svg",
        "fig7-ATT-LTE-driving-up.svg",
    ] {
        assert!(out_dir.path().join(f).exists(), "missing {f}");
    }
}

#[test]
fn eval_without_traces_uses_the_synthetic_link() {
    let dir = tempfile::tempdir().unwrap();
    let out = sprout()
        .current_dir(dir.path())
        .args(["eval", "--quiet", "--out", "res"])
        .output()
        .unwrap();
    assert_ok(&out);
    assert!(String::from_utf8_lossy(&out.stdout).contains("synthetic"));
    assert!(dir.path().join("res/report.md").exists());
}

#[test]
fn eval_runs_every_experiment() {
    let Some(t) = traces() else { return };
    let out_dir = tempfile::tempdir().unwrap();
    let out = sprout()
        .args(["eval", "--quiet", "--experiments", "all", "--traces"])
        .arg(&t)
        .arg("--out")
        .arg(out_dir.path())
        .output()
        .unwrap();
    assert_ok(&out);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("CoDel cuts Cubic"), "{stdout}");
    assert!(stdout.contains("Lowering the confidence"), "{stdout}");
    let csv = std::fs::read_to_string(out_dir.path().join("results.csv")).unwrap();
    for e in ["fig7", "confidence", "loss", "distributions", "sensitivity"] {
        assert!(
            csv.lines().any(|l| l.starts_with(&format!("{e},"))),
            "no {e} rows"
        );
    }
    for f in [
        "fig7.csv",
        "fig8.csv",
        "summary.csv",
        "summary.svg",
        "confidence.csv",
        "confidence.svg",
        "loss.csv",
        "loss.svg",
        "distributions.csv",
        "distributions-exponential.svg",
        "sensitivity.csv",
        "sensitivity.svg",
    ] {
        assert!(out_dir.path().join(f).exists(), "missing {f}");
    }
    let report = std::fs::read_to_string(out_dir.path().join("report.md")).unwrap();
    for section in [
        "The introduction's table",
        "Confidence sweep",
        "Loss resilience",
        "Other inter-arrival distributions",
        "Sensitivity to the seed",
    ] {
        assert!(report.contains(section), "report lacks {section}");
    }
}

#[test]
fn unknown_experiment_is_a_clear_error() {
    let out = sprout()
        .args(["eval", "--experiments", "fig7,fig99"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("unknown experiment 'fig99'"), "{err}");
}

#[test]
fn sim_runs_a_tcp_peer_over_codel_with_loss() {
    let Some(t) = traces() else { return };
    let out = sprout()
        .args([
            "sim", "--scheme", "cubic", "--queue", "codel", "--loss", "0.01",
        ])
        .args(["--duration", "30", "--skip", "5", "--uplink"])
        .arg(t.join("Verizon-LTE-short.up"))
        .arg("--downlink")
        .arg(t.join("Verizon-LTE-short.down"))
        .arg("--json")
        .output()
        .unwrap();
    assert_ok(&out);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let util = v["downlink"]["metrics"]["utilization"].as_f64().unwrap();
    assert!(util > 0.3, "cubic over codel used only {util}");
    let bad = sprout()
        .args(["sim", "--loss", "1.5", "--uplink"])
        .arg(t.join("Verizon-LTE-short.up"))
        .arg("--downlink")
        .arg(t.join("Verizon-LTE-short.down"))
        .output()
        .unwrap();
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--loss"));
}
