//! A one-way download with the default client (Sprout on the wide rate model) through the
//! link emulator: it must fill the link every time, not stay at the few packets a heartbeat
//! round lets through. With forecasts returned only on the idle receiver's heartbeats (every
//! 50 ms), two downloads of three over a constant 10 Mbit/s link stayed near 300 kbit/s for
//! their whole length; the wide parameter set returns them every tick. Needs root (network
//! namespaces); says so and passes otherwise.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::common::{assert_ok, free_udp_port, is_root, keygen, sprout, sprout_bin};
use serde_json::Value;

/// Rate of the constant link, each way (Mbit/s).
const LINK_MBPS: f64 = 10.0;
/// Seconds of each download.
const SECONDS: &str = "4";
/// Downloads in a row, each of which must fill the link.
const RUNS: usize = 3;

/// Writes constant traces NAME.up/.down of [`LINK_MBPS`] in `dir`; returns the stem.
fn constant_traces(dir: &Path) -> std::path::PathBuf {
    let stem = dir.join("constant");
    let out = sprout()
        .args(["traces", "synth", "--kind", "constant", "--seconds", "30"])
        .args(["--rate-mbit", &LINK_MBPS.to_string(), "--out"])
        .arg(&stem)
        .output()
        .unwrap();
    assert_ok(&out);
    stem
}

/// One download: a server outside, the default client inside the emulated link's mobile
/// namespace loading only the downlink. Returns the client's received kbit/s.
fn download(stem: &Path, key: &Path, public: &str) -> f64 {
    let port = free_udp_port("0.0.0.0");
    let listen = format!("0.0.0.0:{port}");
    let mut server = sprout()
        .args([
            "server",
            "--once",
            "--allow-any-client",
            "--listen",
            &listen,
        ])
        .arg("--key")
        .arg(key)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(200));
    let client = format!(
        "exec {} client --connect \"$SPROUT_LINK_OUTSIDE:{port}\" --server-key {public} \
         --direction down --duration {SECONDS} --json",
        sprout_bin()
    );
    let started = Instant::now();
    let out = sprout()
        .arg("link")
        .arg("--uplink")
        .arg(stem.with_extension("up"))
        .arg("--downlink")
        .arg(stem.with_extension("down"))
        .args(["--duration", "20", "--", "sh", "-c", &client])
        .output()
        .unwrap();
    let _ = server.kill();
    let _ = server.wait();
    assert_ok(&out);
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "the download hung"
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let summary: Value = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| v["type"] == "summary")
        .unwrap_or_else(|| panic!("no summary in the client's output:\n{stdout}"));
    assert_eq!(summary["scheme"], "sprout-wide", "{summary}");
    summary["received_kbps"].as_f64().unwrap()
}

#[test]
fn every_one_way_download_on_the_wide_model_fills_a_constant_link() {
    if !is_root() {
        eprintln!("SKIPPED: the one-way download test needs root for network namespaces");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let stem = constant_traces(dir.path());
    let (key, public) = keygen(dir.path(), "server.key");
    let rates: Vec<f64> = (0..RUNS).map(|_| download(&stem, &key, &public)).collect();
    eprintln!("one-way downloads over {LINK_MBPS} Mbit/s: {rates:?} kbit/s");
    for r in &rates {
        assert!(
            *r >= 0.5 * LINK_MBPS * 1000.0,
            "a download got {r:.0} kbit/s of a {LINK_MBPS} Mbit/s link: {rates:?}"
        );
    }
}
