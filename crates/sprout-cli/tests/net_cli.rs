//! `sprout server` and `sprout client` as processes on 127.0.0.1.

use std::net::UdpSocket;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

fn sprout() -> Command {
    Command::new(env!("CARGO_BIN_EXE_sprout"))
}

/// A UDP port on 127.0.0.1 that nothing listens on right now.
fn free_port() -> u16 {
    UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn spawn(cmd: &mut Command) -> Child {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("sprout starts")
}

/// Waits for `child` at most `limit`, killing it (and failing) if it runs longer.
fn finish(mut child: Child, limit: Duration) -> Output {
    let end = Instant::now() + limit;
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > end {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "still running after {limit:?}; stdout:\n{}\nstderr:\n{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

/// The JSON lines of a run: (per-second ticks, summary).
fn parse(out: &Output) -> (Vec<Value>, Value) {
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "failed ({}): {text}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let ticks = lines
        .iter()
        .filter(|v| v["type"] == "tick")
        .cloned()
        .collect();
    let summary = lines
        .iter()
        .find(|v| v["type"] == "summary")
        .cloned()
        .unwrap_or_else(|| panic!("no summary in {text}"));
    (ticks, summary)
}

fn server(port: u16, json: bool) -> Child {
    let listen = format!("127.0.0.1:{port}");
    let mut cmd = sprout();
    cmd.args(["server", "--once", "--listen", &listen]);
    if json {
        cmd.arg("--json");
    }
    spawn(&mut cmd)
}

/// `sprout client --connect 127.0.0.1:PORT ARGS...`, started.
fn client(port: u16, args: &[&str]) -> Child {
    let connect = format!("127.0.0.1:{port}");
    spawn(sprout().args(["client", "--connect", &connect]).args(args))
}

fn f(v: &Value, key: &str) -> f64 {
    v[key]
        .as_f64()
        .unwrap_or_else(|| panic!("no number {key} in {v}"))
}

#[test]
fn saturating_transfer_in_both_directions() {
    let port = free_port();
    let srv = server(port, true);
    let cli = client(port, &["--duration", "3", "--direction", "both", "--json"]);
    let (cticks, csum) = parse(&finish(cli, Duration::from_secs(20)));
    let (sticks, ssum) = parse(&finish(srv, Duration::from_secs(20)));
    println!("client {csum}\nserver {ssum}");
    assert!(cticks.len() >= 3, "{} client ticks", cticks.len());
    assert!(sticks.len() >= 3, "{} server ticks", sticks.len());
    for (who, sum) in [("client", &csum), ("server", &ssum)] {
        assert_eq!(sum["role"], who);
        assert_eq!(sum["direction"], "both");
        assert_eq!(sum["mode"], "bulk");
        assert!(f(sum, "sent_kbps") > 1000.0, "{who} sent too little: {sum}");
        assert!(
            f(sum, "received_kbps") > 1000.0,
            "{who} got too little: {sum}"
        );
        assert!(f(sum, "owd_p50_ms") >= 0.0 && f(sum, "owd_p95_ms") < 1000.0);
        assert_eq!(f(sum, "malformed"), 0.0);
        assert_eq!(f(sum, "bad_peers"), 0.0);
    }
    // What one side sent, the other received (loopback loses little, if anything, when the
    // machine is busy) and the BYE told the totals.
    for (a, b) in [(&csum, &ssum), (&ssum, &csum)] {
        assert!(
            f(b, "received_bytes") >= 0.9 * f(a, "sent_bytes"),
            "{a}\n{b}"
        );
        // (The server also counts the client's 36-byte HELLO.)
        assert!(f(b, "received_bytes") <= f(a, "sent_bytes") + 36.0);
        assert_eq!(a["data_sent"], b["peer_data_sent"]);
    }
    assert_eq!(ssum["end"], "bye");
    assert_eq!(csum["end"], "bye");
    // Per-second lines carry the window, the forecast and the delays.
    let t = &cticks[1];
    for key in [
        "elapsed_s",
        "sent_kbps",
        "received_kbps",
        "window_bytes",
        "forecast_packets",
        "owd_p50_ms",
        "owd_p95_ms",
        "malformed",
        "bad_peers",
    ] {
        assert!(t[key].is_number(), "tick lacks {key}: {t}");
    }
    assert!(f(t, "forecast_packets") > 0.0);
    // A saturating sender has no room left most of the time, but its window (what is in the
    // network plus the room) shows what the forecast allows.
    assert!(
        cticks.iter().any(|t| f(t, "window_bytes") > 0.0),
        "the window was 0 every second"
    );
    for t in &cticks {
        assert_eq!(
            f(t, "window_bytes"),
            f(t, "queue_estimate_bytes") + f(t, "room_bytes"),
            "{t}"
        );
    }
}

#[test]
fn paced_stream_delivers_its_rate_with_measured_delay() {
    let port = free_port();
    let srv = server(port, true);
    let cli = client(
        port,
        &[
            "--duration",
            "3",
            "--direction",
            "both",
            "--rate",
            "500",
            "--json",
        ],
    );
    let (_, csum) = parse(&finish(cli, Duration::from_secs(20)));
    let (_, ssum) = parse(&finish(srv, Duration::from_secs(20)));
    println!("client {csum}\nserver {ssum}");
    for sum in [&csum, &ssum] {
        assert_eq!(sum["mode"], "paced");
        assert_eq!(sum["rate_kbps"], 500);
        for key in ["sent_kbps", "received_kbps"] {
            let r = f(sum, key);
            assert!((400.0..=600.0).contains(&r), "{key} {r} kbit/s: {sum}");
        }
        let p50 = f(sum, "owd_p50_ms");
        assert!((0.0..100.0).contains(&p50), "one-way delay {p50} ms");
        assert!(f(sum, "data_received") > 100.0);
    }
}

#[test]
fn ewma_in_text_mode_prints_lines_and_a_summary() {
    let port = free_port();
    let srv = server(port, false);
    let cli = client(
        port,
        &[
            "--duration",
            "2",
            "--direction",
            "down",
            "--rate",
            "200",
            "--scheme",
            "sprout-ewma",
        ],
    );
    let out = finish(cli, Duration::from_secs(20));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("sent kbit/s"), "{text}");
    assert!(text.contains("client summary"), "{text}");
    assert!(text.contains("sprout-ewma down paced 200 kbit/s"), "{text}");
    let srv = finish(srv, Duration::from_secs(20));
    let stext = String::from_utf8_lossy(&srv.stdout);
    assert!(stext.contains("server summary"), "{stext}");
    let stderr = String::from_utf8_lossy(&srv.stderr);
    assert!(stderr.contains("sprout-ewma down"), "{stderr}");
}

#[test]
fn client_without_a_server_ends_with_a_clear_message() {
    let port = free_port();
    let start = Instant::now();
    let cli = client(port, &["--duration", "2"]);
    let out = finish(cli, Duration::from_secs(15));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("no answer from"), "{stderr}");
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "took {:?}",
        start.elapsed()
    );
}

#[test]
fn bad_addresses_and_flags_are_errors() {
    let out = sprout()
        .args(["client", "--connect", "not an address"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("bad address"));
    let out = sprout()
        .args(["server", "--listen", "127.0.0.1:99999"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let out = sprout()
        .args([
            "client",
            "--connect",
            "127.0.0.1:9",
            "--direction",
            "sideways",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "clap rejects bad flags");
    let out = sprout()
        .args(["client", "--connect", "127.0.0.1:9", "--confidence", "1.5"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("confidence"));
}

#[test]
fn server_without_once_serves_clients_one_after_another() {
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let srv = spawn(sprout().args(["server", "--listen", &listen, "--json"]));
    for scheme in ["sprout", "sprout-ewma"] {
        let cli = spawn(sprout().args([
            "client",
            "--connect",
            &listen,
            "--duration",
            "1",
            "--direction",
            "up",
            "--rate",
            "300",
            "--scheme",
            scheme,
            "--json",
        ]));
        let (_, sum) = parse(&finish(cli, Duration::from_secs(15)));
        assert_eq!(sum["scheme"], scheme);
        assert!(f(&sum, "sent_kbps") > 200.0, "{sum}");
    }
    let mut srv = srv;
    let _ = srv.kill();
    let out = srv.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let summaries: Vec<Value> = text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["type"] == "summary")
        .collect();
    assert_eq!(summaries.len(), 2, "{text}");
    assert_eq!(summaries[1]["scheme"], "sprout-ewma");
    assert!(
        f(&summaries[1], "received_kbps") > 200.0,
        "{}",
        summaries[1]
    );
}
