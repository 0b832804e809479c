//! `sprout eval --emulate --experiments vpn-rate`: SproutTunnel against WireGuard (boringtun)
//! over the constant 1 Gbit/s emulated link, 3 s per arm: the rows of `vpn-rate.csv` exist
//! for every arm and are plausible, and nothing of boringtun is left behind (about 15 s).
//! Needs root, boringtun (`$SPROUT_BORINGTUN`, else `boringtun-cli` on `PATH`) and `wg`;
//! says why it was skipped otherwise. And without boringtun the experiment fails at once
//! saying how to install it (root only).

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{is_root, spawn, sprout};

/// The boringtun to run, if it and `wg` run here.
fn boringtun() -> Option<PathBuf> {
    let exe = std::env::var_os("SPROUT_BORINGTUN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("boringtun-cli"));
    let runs = |p: &std::path::Path| {
        Command::new(p)
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    (runs(&exe) && runs(std::path::Path::new("wg"))).then_some(exe)
}

/// Our interfaces' names in this namespace (`ip -br link`'s first column).
fn links() -> Vec<String> {
    let out = Command::new("ip").args(["-br", "link"]).output().unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| Some(l.split_whitespace().next()?.split('@').next()?.to_string()))
        .collect()
}

#[test]
fn vpn_rate_measures_every_arm_and_leaves_nothing_behind() {
    if !is_root() {
        eprintln!("skipped: the vpn experiment needs root (network namespaces, TUN devices)");
        return;
    }
    let Some(exe) = boringtun() else {
        eprintln!(
            "skipped: no boringtun or wg here (cargo install boringtun-cli --locked; \
             apt-get install wireguard-tools; SPROUT_BORINGTUN names boringtun)"
        );
        return;
    };
    let dir = tempfile_dir("vpn-rate");
    let started = Instant::now();
    let child = spawn(
        sprout()
            .args([
                "eval",
                "--emulate",
                "--experiments",
                "vpn-rate",
                "--duration",
                "3",
                "--quiet",
            ])
            .arg("--out")
            .arg(&dir)
            .arg("--boringtun")
            .arg(&exe),
    );
    // The run's devices and control sockets are named after its process id (in hex).
    let pid = format!("{:x}", child.id() & 0xff_ffff);
    let out = child.wait_with_output().unwrap();
    let took = started.elapsed();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(took < Duration::from_secs(60), "took {took:?}");
    let mut rdr = csv::Reader::from_path(dir.join("vpn-rate.csv")).unwrap();
    let header = rdr.headers().unwrap().clone();
    let col = |name: &str| header.iter().position(|h| h == name).unwrap();
    let rows: Vec<csv::StringRecord> = rdr.records().map(Result::unwrap).collect();
    let arms: Vec<&str> = rows.iter().map(|r| &r[col("arm")]).collect();
    assert_eq!(arms, ["direct", "boringtun", "sprout"], "{stdout}");
    for r in &rows {
        let goodput: f64 = r[col("goodput_mbps")].parse().unwrap();
        // Something went through, and never more than the 1 Gbit/s link carries.
        assert!(goodput > 5.0 && goodput <= 1000.0, "{r:?}\n{stdout}");
        for side in ["server_cpu_s_per_gb", "client_cpu_s_per_gb"] {
            let cpu = &r[col(side)];
            if &r[col("arm")] == "direct" {
                assert_eq!(cpu, "", "no tunnel process direct: {r:?}");
            } else {
                // A tunnel end spends some CPU on every GB, and not minutes of it.
                let cpu: f64 = cpu.parse().unwrap();
                assert!(cpu > 0.0 && cpu < 300.0, "{side}: {r:?}\n{stdout}");
            }
        }
    }
    let report = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(report.contains("## Against WireGuard") && dir.join("vpn.svg").exists());
    // The run's boringtun ends took their devices and control sockets with them.
    let ours = |n: &str| n.starts_with(&format!("wgs{pid}")) || n.starts_with(&format!("wgc{pid}"));
    let left: Vec<String> = links().into_iter().filter(|l| ours(l)).collect();
    let sockets: Vec<_> = std::fs::read_dir("/var/run/wireguard")
        .map(|d| d.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "devices left: {left:?}");
    assert!(
        !sockets.iter().any(|s| ours(&s.to_string_lossy())),
        "control sockets left: {sockets:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn vpn_without_boringtun_fails_at_once_saying_how_to_install_it() {
    if !is_root() {
        eprintln!("skipped: the vpn experiment checks root before its tools");
        return;
    }
    let dir = tempfile_dir("vpn-missing");
    let started = Instant::now();
    let out = sprout()
        .args(["eval", "--emulate", "--experiments", "vpn", "--quiet"])
        .arg("--out")
        .arg(&dir)
        .args(["--boringtun", "/nonexistent/boringtun-cli"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(started.elapsed() < Duration::from_secs(10), "{err}");
    assert!(
        err.contains("/nonexistent/boringtun-cli")
            && err.contains("cargo install boringtun-cli")
            && err.contains("apt-get install wireguard-tools"),
        "{err}"
    );
    assert!(!dir.join("vpn.json").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

/// A fresh folder under the system's temporary folder for this test.
fn tempfile_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("sprout-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}
