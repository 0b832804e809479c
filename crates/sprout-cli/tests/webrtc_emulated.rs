//! `webrtc` in `sprout eval --emulate` (issue 25): a real aiortc video call through the link
//! emulator on Verizon-LTE-short, its frame delays in results.csv, its GCC model beside it,
//! and the refusals and install hints around it.
//!
//! The call needs root (the emulator), the paper's traces (`../shared/traces`) and a Python
//! with the `sprout` package and aiortc (`$SPROUT_PYTHON`, else `python3`; install with
//! `pip install './python[webrtc]'`). Without them the test says it skipped; with
//! `SPROUT_REQUIRE_WEBRTC=1` a missing aiortc fails it instead.

use std::fs;
use std::path::PathBuf;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use sprout_lab::webrtc_call::{check_python, python_from, PYTHON_ENV};
use sprout_link::testdata;

fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

fn sprout(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sprout"))
        .args(args)
        .output()
        .unwrap()
}

/// The Python to test with, or `None` (skipped, or failed under `SPROUT_REQUIRE_WEBRTC=1`)
/// when it cannot hold the call.
fn webrtc_python() -> Option<PathBuf> {
    let python = python_from(None, std::env::var_os(PYTHON_ENV));
    match check_python(&python) {
        Ok(v) => {
            eprintln!(
                "aiortc {} and av {} in {}",
                v.aiortc,
                v.av,
                python.display()
            );
            Some(python)
        }
        Err(e) if std::env::var("SPROUT_REQUIRE_WEBRTC").as_deref() == Ok("1") => {
            panic!("SPROUT_REQUIRE_WEBRTC=1 but the WebRTC call cannot run: {e}")
        }
        Err(e) => {
            testdata::skip(&format!("the WebRTC call cannot run here: {e}"));
            None
        }
    }
}

#[test]
fn webrtc_is_refused_outside_the_emulator_and_a_missing_python_says_how_to_install() {
    for args in [
        &["sim", "--scheme", "webrtc"][..],
        &[
            "eval",
            "--schemes",
            "sprout,webrtc",
            "--out",
            "/nonexistent/out",
        ][..],
    ] {
        let out = sprout(args);
        let err = String::from_utf8_lossy(&out.stderr);
        // clap's usage error for `sim`, an error of the evaluation's for `eval`.
        let want = if args[0] == "sim" { 2 } else { 1 };
        assert_eq!(out.status.code(), Some(want), "{err}");
        assert!(
            err.contains("runs only in the emulated evaluation"),
            "{err}"
        );
        assert!(err.contains("gcc is its model in the simulator"), "{err}");
    }
    // The preflight comes before the emulator (and its need for root).
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let out = sprout(&[
        "eval",
        "--emulate",
        "--schemes",
        "sprout,webrtc",
        "--python",
        "/nonexistent/python3",
        "--out",
        out.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("cannot run /nonexistent/python3"), "{err}");
    assert!(err.contains("pip install './python[webrtc]'"), "{err}");
}

#[test]
fn a_webrtc_call_through_the_emulator_has_frame_delays_both_ways() {
    if !is_root() {
        testdata::skip("the link emulator needs root (network namespaces, TUN devices)");
        return;
    }
    let Some(traces) = testdata::require("traces") else {
        return;
    };
    let Some(python) = webrtc_python() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let started = Instant::now();
    let run = Command::new(env!("CARGO_BIN_EXE_sprout"))
        .args(["eval", "--emulate", "--quiet", "--schemes", "webrtc"])
        .args([
            "--links",
            "Verizon-LTE-short",
            "--duration",
            "20",
            "--skip",
            "5",
        ])
        .arg("--traces")
        .arg(&traces)
        .arg("--python")
        .arg(&python)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    let printed = String::from_utf8_lossy(&run.stdout);
    eprintln!("{printed}{}", String::from_utf8_lossy(&run.stderr));
    // 0, or 3 when the GCC model and the call disagree beyond the tolerance on 20 s.
    assert!(
        matches!(run.status.code(), Some(0) | Some(3)),
        "{}",
        run.status
    );
    assert!(started.elapsed() < Duration::from_secs(150));
    for dir in ["down", "up"] {
        assert!(
            printed.contains(&format!("webrtc Verizon-LTE-short {dir}: the call ")),
            "{printed}"
        );
    }

    let mut rdr = csv::Reader::from_path(out.join("results.csv")).unwrap();
    let header = rdr.headers().unwrap().clone();
    let col = |name: &str| header.iter().position(|h| h == name).unwrap();
    let rows: Vec<csv::StringRecord> = rdr.records().map(|r| r.unwrap()).collect();
    assert_eq!(rows.len(), 4, "the call and its model, each way");
    let num = |r: &csv::StringRecord, c: &str| -> f64 {
        r[col(c)].parse().unwrap_or_else(|_| panic!("{c} of {r:?}"))
    };
    for (experiment, scheme) in [("emulated", "webrtc"), ("simulated", "gcc")] {
        for dir in ["down", "up"] {
            let r = rows
                .iter()
                .find(|r| {
                    &r[col("experiment")] == experiment
                        && &r[col("scheme")] == scheme
                        && &r[col("direction")] == dir
                })
                .unwrap_or_else(|| panic!("no {experiment} {scheme} {dir} row"));
            let (p50, p95) = (num(r, "app_p50_ms"), num(r, "app_p95_ms"));
            // At least the link's 20 ms each way, at most a few seconds.
            assert!(
                20.0 <= p50 && p50 <= p95 && p95 < 5000.0,
                "{experiment} {dir}: {p50} {p95}"
            );
            let kbps = num(r, "throughput_kbps");
            assert!(
                50.0 < kbps && kbps < num(r, "capacity_kbps"),
                "{experiment} {dir}: {kbps}"
            );
        }
    }
    let json: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
    let calls: Vec<&serde_json::Value> = json["app_delays"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["scheme"] == "webrtc")
        .collect();
    assert_eq!(calls.len(), 2);
    for c in calls {
        // About 20 s at 30 frames/s.
        let frames = c["frames"].as_u64().unwrap();
        assert!(frames > 200, "{c}");
    }
    let report = fs::read_to_string(out.join("report.md")).unwrap();
    assert!(report.contains("## The WebRTC call against Sprout and the GCC model"));
    assert!(report.contains("### The GCC model against the call"));
    let chart = fs::read_to_string(out.join("emulated-Verizon-LTE-short-down.svg")).unwrap();
    assert!(chart.contains("webrtc") && chart.contains("skype (paper)"));
    let emulated = out.join("emulated");
    for end in ["offer", "answer"] {
        let frames = emulated.join(format!("Verizon-LTE-short-webrtc.{end}.frames.csv"));
        assert!(
            fs::metadata(&frames).unwrap().len() > 1000,
            "{}",
            frames.display()
        );
    }
}
