//! The C examples with `sprout server` and `sprout client` over loopback, 3 s at 1 Mbit/s
//! each: examples/c/sender.c `--hello` to `sprout server` (which refuses a session without
//! a HELLO and ends it on the BYE), and `sprout client --direction up` to
//! examples/c/receiver.c (which answers the HELLO with ACCEPT, the client's wait). Needs the
//! `sprout` command of this build (`target/<profile>/sprout`, which `cargo test --workspace`
//! builds, or `$SPROUT_BIN`); says so and passes otherwise.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;
use sprout_link::testdata;

use crate::example::{build, finish, per_second};

/// Longest a program of these tests may run.
const LIMIT: Duration = Duration::from_secs(30);

/// The `sprout` command: `$SPROUT_BIN`, or the one cargo built beside this test binary; when
/// there is none, the test is recorded as skipped (`None`).
pub(crate) fn sprout_bin() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("SPROUT_BIN").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(p));
    }
    let exe = std::env::current_exe().ok()?;
    let bin = exe.parent()?.parent()?.join("sprout");
    if bin.is_file() {
        return Some(bin);
    }
    testdata::skip(
        "needs the sprout command beside this test (cargo build --release -p sprout-cli, or \
         cargo test --workspace) or $SPROUT_BIN",
    );
    None
}

/// The C compiler, or `None` (the test recorded as skipped).
pub(crate) fn cc() -> Option<String> {
    let cc = crate::c::c_compiler();
    if cc.is_none() {
        testdata::skip("needs a C compiler (cc, or $CC)");
    }
    cc
}

/// The JSON summary among `sprout`'s lines.
fn summary(out: &str) -> Value {
    out.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| v["type"] == "summary")
        .unwrap_or_else(|| panic!("no summary in:\n{out}"))
}

#[test]
fn the_c_sender_greets_sprout_server_with_a_hello_and_ends_with_a_bye() {
    let (Some(sprout), Some(cc)) = (sprout_bin(), cc()) else {
        return;
    };
    let _one = crate::c::one_at_a_time();
    let sender = build(&cc, "sender");
    let mut server = Command::new(&sprout)
        .args(["server", "--once", "--allow-any-client", "--json"])
        .arg("--listen=127.0.0.1:0")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starting sprout server");
    let mut notes = BufReader::new(server.stderr.take().expect("its stderr"));
    let mut banner = String::new();
    notes.read_line(&mut banner).expect("the server's banner");
    // "sprout server listening on ADDR with public key KEY (ephemeral)"
    let words: Vec<&str> = banner.split_whitespace().collect();
    let (Some(addr), Some(key)) = (words.get(4), words.get(8)) else {
        let _ = server.kill();
        panic!("unexpected banner: {banner:?}");
    };
    let (host, port) = addr.rsplit_once(':').expect("ADDR:PORT");
    let tx = Command::new(&sender)
        .args(["--hello", host, port, key, "1000", "3", "1000"])
        .stdout(Stdio::piped())
        .spawn()
        .expect("starting the sender");
    let mut sent = String::new();
    let sender_ok = finish(tx, LIMIT, &mut sent);
    let mut out = String::new();
    let server_ok = finish(server, LIMIT, &mut out);
    drop(notes);
    println!("{sent}{out}");
    assert!(sender_ok && server_ok, "sender:\n{sent}\nserver:\n{out}");
    let s = summary(&out);
    // The HELLO's model and stream, every DATA the BYE counts, the session ended by it.
    assert_eq!(
        (
            &s["scheme"],
            &s["direction"],
            &s["mode"],
            &s["rate_kbps"],
            &s["end"]
        ),
        (
            &Value::from("sprout-wide"),
            &Value::from("up"),
            &Value::from("paced"),
            &Value::from(1000),
            &Value::from("bye")
        ),
        "{s}"
    );
    let (got, told) = (s["data_received"].as_u64(), s["peer_data_sent"].as_u64());
    assert!(got >= Some(370) && got == told, "{s}");
    let kbps = s["received_kbps"].as_f64().unwrap_or(0.0);
    assert!((900.0..=1100.0).contains(&kbps), "{s}");
}

#[test]
fn sprout_client_streams_to_the_c_receiver() {
    let (Some(sprout), Some(cc)) = (sprout_bin(), cc()) else {
        return;
    };
    let _one = crate::c::one_at_a_time();
    let receiver = build(&cc, "receiver");
    let mut rx = Command::new(&receiver)
        .args(["0", "20"])
        .stdout(Stdio::piped())
        .spawn()
        .expect("starting the receiver");
    let mut out = BufReader::new(rx.stdout.take().expect("its stdout"));
    let mut first = String::new();
    out.read_line(&mut first)
        .expect("the receiver's first line");
    let words: Vec<&str> = first.split_whitespace().collect();
    let (port, base64) = match words.as_slice() {
        ["receiver", "on", _, "port", port, "key", _, "base64", b] => (*port, *b),
        _ => {
            let _ = rx.kill();
            panic!("unexpected first line of the receiver: {first:?}");
        }
    };
    let client = Command::new(&sprout)
        .args([
            "client",
            "--direction=up",
            "--rate=1000",
            "--duration=3",
            "--json",
        ])
        .arg(format!("--connect=127.0.0.1:{port}"))
        .arg(format!("--server-key={base64}"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starting sprout client");
    let mut sent = String::new();
    let client_ok = finish(client, LIMIT, &mut sent);
    rx.stdout = Some(out.into_inner());
    let mut got = first.clone();
    let receiver_ok = finish(rx, LIMIT, &mut got);
    println!("{sent}{got}");
    assert!(
        client_ok && receiver_ok,
        "client:\n{sent}\nreceiver:\n{got}"
    );
    let s = summary(&sent);
    assert_eq!(s["scheme"], "sprout-wide", "{s}");
    let data_sent = s["data_sent"].as_u64().unwrap_or(0);
    assert!(data_sent >= 370, "{s}");
    // Every message the client sent, none lost, at the client's rate (its DATA headers
    // counted as it counts them).
    let last = got.lines().last().unwrap_or_default();
    assert!(
        last.starts_with(&format!("receiver: {data_sent} messages, 0 lost")),
        "{got}"
    );
    let seconds: Vec<(f64, f64)> = got.lines().filter_map(per_second).collect();
    for &(kbps, p95) in seconds.iter().take(2) {
        assert!((900.0..=1100.0).contains(&kbps), "{got}");
        assert!(p95 < 100.0, "{got}");
    }
}
