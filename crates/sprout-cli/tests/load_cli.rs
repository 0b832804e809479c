//! `sprout bench load`, short: one `sprout server` process, 20 concurrent paced sessions in
//! both directions for 10 s, and 10^4 bogus handshakes during the run. The full benchmark
//! (200 sessions, 60 s, 10^5 bogus handshakes) is the same command with its defaults. The
//! sessions run on `sprout client`'s default model, the wide one (they ran the paper's until
//! `--scheme` came, whose rates stop at 12 Mbit/s): the server's own summary of every session
//! must say so.

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// The test's bound on the whole run.
const LIMIT: Duration = Duration::from_secs(40);

#[test]
fn twenty_sessions_hold_under_a_handshake_flood() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_sprout"))
        .args([
            "bench",
            "load",
            "--sessions",
            "20",
            "--duration",
            "10",
            "--flood",
            "10000",
            "--json",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("sprout starts");
    let started = Instant::now();
    let mut stdout = child.stdout.take().expect("stdout is piped");
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        stdout.read_to_string(&mut s).map(|_| s)
    });
    let status = loop {
        if let Some(status) = child.try_wait().expect("waiting for sprout") {
            break status;
        }
        if started.elapsed() > LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            panic!("`sprout bench load` still running after {LIMIT:?}");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let out = reader.join().unwrap().expect("stdout is text");
    let mut err = String::new();
    child
        .stderr
        .take()
        .expect("stderr is piped")
        .read_to_string(&mut err)
        .unwrap();
    let r: Value =
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: stdout {out:?}\nstderr {err}"));
    let show = || format!("{out}\nstderr: {err}");
    assert!(status.success(), "exit {status}: {}", show());

    assert_eq!(r["sessions"], 20);
    assert_eq!(r["scheme"], "sprout-wide", "{}", show());
    assert_eq!(r["completed"], 20, "{}", show());
    assert_eq!(r["lost"], 0, "{}", show());
    let down = r["min_down_share"].as_f64().unwrap();
    let up = r["min_up_share"].as_f64().unwrap();
    assert!(
        down >= 0.98 && up >= 0.98,
        "down {down}, up {up}: {}",
        show()
    );
    // Every session ran its paced stream: 200 kbit/s of 1000-byte DATA is 25 a second.
    let rows = r["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 20);
    for row in rows {
        assert_eq!(row["end"], "bye", "{row}");
        assert_eq!(row["server_end"], "bye", "{row}");
        assert_eq!(row["server_scheme"], "sprout-wide", "{row}");
        for key in ["down_released", "up_released"] {
            let n = row[key].as_u64().unwrap();
            assert!((240..=260).contains(&n), "{key} {n}: {row}");
        }
    }
    // Every bogus handshake reached the server and was dropped for its MAC.
    assert_eq!(r["flood_sent"], 10_000);
    assert_eq!(r["server_drops"]["bad_mac"], 10_000, "{}", show());
    // The server's figures were measured.
    assert!(r["server_cpu_s"].as_f64().unwrap() > 0.0);
    assert!(r["server_rss_peak_kib"].as_u64().unwrap() > 0);
}
