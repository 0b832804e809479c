//! Issue 36, point 4, as a user meets it: `sprout client` tells a full server from a wrong key
//! ("server full (N sessions) - try later"), and redials a server that was killed and started
//! again (unless `--no-redial`), its JSON saying the endpoint's state and reconnections.

use std::process::{Child, Output};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::{free_udp_port, keygen, spawn, sprout};

/// Waits for `child` at most `limit` (killing it then).
fn finish(mut child: Child, limit: Duration) -> Output {
    let end = Instant::now() + limit;
    while child.try_wait().unwrap().is_none() && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    child.wait_with_output().unwrap()
}

/// `sprout server` (serving until killed) on 127.0.0.1:PORT with the key file `key`.
fn server(port: u16, key: &std::path::Path, extra: &[&str]) -> Child {
    spawn(
        sprout()
            .args(["server", "--allow-any-client", "--json", "--listen"])
            .arg(format!("127.0.0.1:{port}"))
            .arg("--key")
            .arg(key)
            .args(extra),
    )
}

/// `sprout client --connect 127.0.0.1:PORT --server-key PUBLIC ARGS...`.
fn client(port: u16, public: &str, args: &[&str]) -> Child {
    spawn(
        sprout()
            .args(["client", "--connect"])
            .arg(format!("127.0.0.1:{port}"))
            .args(["--server-key", public])
            .args(args),
    )
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn a_second_client_from_a_full_source_is_told_the_server_is_full() {
    let dir = tempfile::tempdir().unwrap();
    let (key, public) = keygen(dir.path(), "server.key");
    let port = free_udp_port("127.0.0.1");
    let srv = server(port, &key, &["--max-sessions-per-source", "1"]);
    std::thread::sleep(Duration::from_millis(300));
    let holder = client(
        port,
        &public,
        &["--duration", "12", "--rate", "100", "--json"],
    );
    std::thread::sleep(Duration::from_secs(2));
    let t0 = Instant::now();
    let second = finish(
        client(port, &public, &["--duration", "5", "--json"]),
        Duration::from_secs(20),
    );
    let took = t0.elapsed();
    let stderr = text(&second.stderr);
    println!(
        "second client ({:?}, after {took:?}): {stderr}",
        second.status
    );
    let _ = finish(holder, Duration::ZERO);
    let _ = finish(srv, Duration::ZERO);
    assert!(!second.status.success(), "{stderr}");
    assert!(
        stderr.contains("server full (1 sessions) - try later"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("--server-key"),
        "points at the keys: {stderr}"
    );
}

/// The JSON lines of a client's stdout.
fn lines(out: &Output) -> Vec<Value> {
    text(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

#[test]
fn a_client_redials_a_server_killed_and_started_again() {
    let dir = tempfile::tempdir().unwrap();
    let (key, public) = keygen(dir.path(), "server.key");
    let port = free_udp_port("127.0.0.1");
    let mut first = server(port, &key, &[]);
    std::thread::sleep(Duration::from_millis(300));
    let start = Instant::now();
    let cli = client(
        port,
        &public,
        &[
            "--duration",
            "24",
            "--rate",
            "200",
            "--direction",
            "down",
            "--json",
        ],
    );
    std::thread::sleep(Duration::from_secs(4));
    first.kill().unwrap(); // SIGKILL: no close, no BYE
    first.wait().unwrap();
    let killed = start.elapsed().as_secs_f64();
    std::thread::sleep(Duration::from_secs(2));
    let second = server(port, &key, &[]);
    let restarted = start.elapsed().as_secs_f64();
    let out = finish(cli, Duration::from_secs(40));
    let _ = finish(second, Duration::ZERO);
    let stderr = text(&out.stderr);
    let all = lines(&out);
    // A tick's elapsed counts from the session's start, at or after the client started.
    let again = all
        .iter()
        .filter(|v| v["type"] == "tick")
        .filter(|v| v["elapsed_s"].as_f64().unwrap_or(0.0) > killed + 1.0)
        .find(|v| v["received_kbps"].as_f64().unwrap_or(0.0) > 0.0)
        .map(|v| v["elapsed_s"].as_f64().unwrap());
    let summary = all.iter().find(|v| v["type"] == "summary").cloned();
    println!(
        "killed at {killed:.1} s, restarted at {restarted:.1} s, receiving again at {again:?}; \
         exit {:?}; summary {summary:?}; stderr {stderr}",
        out.status
    );
    let again = again.unwrap_or_else(|| panic!("never received again; stderr: {stderr}"));
    assert!(
        again <= restarted + 20.0,
        "receiving again only at {again} s"
    );
    assert!(out.status.success(), "{stderr}");
    let summary = summary.expect("a summary");
    assert_eq!(summary["reconnections"], 1, "{summary}");
    // The session ended (BYE) with the redialled session up.
    assert_eq!(summary["state"], "established", "{summary}");
    assert_eq!(summary["end"], "bye", "{summary}");
}

#[test]
fn with_no_redial_a_client_gives_up_a_dead_server() {
    let help = sprout().args(["client", "--help"]).output().unwrap();
    let help = text(&help.stdout);
    assert!(help.contains("--no-redial"), "{help}");
    let dir = tempfile::tempdir().unwrap();
    let (key, public) = keygen(dir.path(), "server.key");
    let port = free_udp_port("127.0.0.1");
    let mut srv = server(port, &key, &[]);
    std::thread::sleep(Duration::from_millis(300));
    let cli = client(
        port,
        &public,
        &["--duration", "30", "--rate", "100", "--no-redial", "--json"],
    );
    std::thread::sleep(Duration::from_secs(2));
    srv.kill().unwrap();
    srv.wait().unwrap();
    let t0 = Instant::now();
    let out = finish(cli, Duration::from_secs(20));
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("fell silent"), "{stderr}");
    assert!(t0.elapsed() < Duration::from_secs(10), "{:?}", t0.elapsed());
}
