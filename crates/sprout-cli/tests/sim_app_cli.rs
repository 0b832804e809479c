//! `sprout sim --app`: application traffic and application-level delay on the command line.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn sprout() -> Command {
    Command::new(env!("CARGO_BIN_EXE_sprout"))
}

/// A 12 Mbit/s link (one opportunity a millisecond) for 20 s, written to `dir/c.up` and
/// `dir/c.down`.
fn constant_link(dir: &Path) -> (PathBuf, PathBuf) {
    let text: String = (1..=20_000).map(|ms| format!("{ms}\n")).collect();
    let (up, down) = (dir.join("c.up"), dir.join("c.down"));
    std::fs::write(&up, &text).unwrap();
    std::fs::write(&down, &text).unwrap();
    (up, down)
}

/// `sprout sim` over the constant link with `args`.
fn sim(args: &[&str]) -> Output {
    let dir = tempfile::tempdir().unwrap();
    let (up, down) = constant_link(dir.path());
    sprout()
        .arg("sim")
        .arg("--uplink")
        .arg(&up)
        .arg("--downlink")
        .arg(&down)
        .args(["--skip", "5"])
        .args(args)
        .output()
        .unwrap()
}

fn stdout_of(out: &Output) -> String {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn direct_json_carries_the_app_and_its_delay() {
    let out = sim(&[
        "--scheme",
        "direct",
        "--app",
        "constant:rate=500k",
        "--load",
        "down",
        "--json",
    ]);
    let v: serde_json::Value = serde_json::from_str(&stdout_of(&out)).unwrap();
    assert_eq!(v["scheme"], "direct");
    assert_eq!(v["app"], "constant:rate=500k,packet=1200");
    assert!(v["uplink"]["app"].is_null());
    let a = &v["downlink"]["app"];
    let share = a["delivered_share"].as_f64().unwrap();
    assert!(share > 0.99, "{a}");
    let p95 = a["delay_p95_ms"].as_f64().unwrap();
    assert!((20.0..23.0).contains(&p95), "{a}");
    // 52 datagrams/s made in the first 11.25 s of the 15 s window (its last quarter is left
    // for them to arrive).
    assert_eq!(a["messages"], 586);
}

#[test]
fn the_table_adds_a_line_per_loaded_direction_for_an_app() {
    let text = stdout_of(&sim(&["--app", "video:rate=1M", "--load", "both"]));
    assert!(
        text.contains("\napplication video:rate=1M,fps=30,key=3,keyratio=5\n"),
        "{text}"
    );
    let rows: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("application"))
        .skip(2)
        .collect();
    assert_eq!(rows.len(), 2, "{text}");
    for (row, dir) in rows.iter().zip(["uplink", "downlink"]) {
        assert!(row.starts_with(dir), "{row}");
        // Frames at 30 frames/s made in the first 11.25 s of the 15 s window (its last quarter
        // is left for them to arrive); offered about 1 Mbit/s.
        assert!(row.contains(" 338 ") || row.contains(" 337 "), "{row}");
        assert!(
            row.contains(" kb/s") && row.contains(" ms") && row.ends_with('%'),
            "{row}"
        );
    }
    let text = stdout_of(&sim(&["--app", "constant:rate=200k", "--load", "up"]));
    let rows: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("application"))
        .skip(2)
        .collect();
    assert_eq!(rows.len(), 1, "{text}");
    assert!(
        rows[0].starts_with("uplink") && rows[0].contains(" 200 kb/s"),
        "{text}"
    );
}

#[test]
fn a_bulk_run_prints_no_app_lines_and_its_json_has_null_apps() {
    let text = stdout_of(&sim(&["--duration", "10"]));
    assert!(!text.contains("application"), "{text}");
    assert_eq!(text.lines().count(), 4, "{text}");
    let v: serde_json::Value =
        serde_json::from_str(&stdout_of(&sim(&["--duration", "10", "--json"]))).unwrap();
    assert_eq!(v["app"], "bulk");
    assert!(v["uplink"]["app"].is_null() && v["downlink"]["app"].is_null());
}

#[test]
fn bad_apps_are_clear_errors() {
    for (args, message) in [
        (
            &["--app", "constant:rate=0"][..],
            "app 'constant:rate=0': rate must be between 1000 and 10000000000 bit/s, got 0",
        ),
        (
            &["--app", "video:rate=1M,fps=500"][..],
            "fps must be between 1 and 240 frames/s, got 500",
        ),
        (&["--app", "stream"][..], "unknown kind 'stream'"),
        (
            &["--scheme", "direct"][..],
            "direct with app bulk would flood the link",
        ),
        (
            &["--scheme", "direct", "--app", "adaptive"][..],
            "has no rate to adapt to",
        ),
    ] {
        let out = sim(args);
        assert!(!out.status.success(), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(message), "{args:?}: {err}");
    }
}

#[test]
fn help_lists_the_app_and_direct() {
    let out = sprout().args(["sim", "--help"]).output().unwrap();
    let help = stdout_of(&out);
    assert!(help.contains("--app <APP>"), "{help}");
    assert!(help.contains("[default: bulk]"), "{help}");
    assert!(help.contains("direct"), "{help}");
}

/// `--queue fq-codel`: the paced stream (direct, 500 kbit/s) beside a Cubic download
/// (`--cross cubic`) in the downlink. An unlimited FIFO makes it wait behind the download's
/// standing queue; FQ-CoDel gives it a flow queue of its own, served first.
#[test]
fn fq_codel_keeps_a_stream_beside_a_cubic_download_fast() {
    let run = |queue: &str| -> serde_json::Value {
        let out = sim(&[
            "--scheme",
            "direct",
            "--app",
            "constant:rate=500k",
            "--load",
            "down",
            "--cross",
            "cubic",
            "--queue",
            queue,
            "--json",
        ]);
        serde_json::from_str(&stdout_of(&out)).unwrap()
    };
    let (fifo, fq) = (run("infinite"), run("fq-codel"));
    // A message never delivered makes the percentile infinite (null).
    let p95 = |v: &serde_json::Value| {
        v["downlink"]["app"]["delay_p95_ms"]
            .as_f64()
            .unwrap_or(f64::INFINITY)
    };
    eprintln!(
        "stream p95: fifo {} ms, fq-codel {} ms",
        p95(&fifo),
        p95(&fq)
    );
    assert!(p95(&fq) < 40.0, "{}", fq["downlink"]);
    assert!(p95(&fifo) > 10.0 * p95(&fq), "{}", fifo["downlink"]);
    for v in [&fifo, &fq] {
        assert_eq!(v["cross"], "cubic");
        // The download used the link: at least a third of its 12 Mbit/s over the 20 s.
        assert!(
            v["downlink"]["cross_bytes"].as_u64().unwrap() > 10_000_000,
            "{v}"
        );
    }
    // The download's standing queue made CoDel drop in FQ-CoDel, never in the FIFO.
    assert!(fq["downlink"]["drops"]["aqm"].as_u64().unwrap() > 0);
    assert_eq!(fifo["downlink"]["drops"]["aqm"], 0);
}
