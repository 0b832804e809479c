//! examples/c: the paced sender and the receiver, built with plain `cc` against the header and
//! the shared library (`-lsprout`), run against each other over loopback for 3 s at 1 Mbit/s.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::c::{c_compiler, compile, lib_dir};

/// The example's directory, examples/c at the workspace's root.
fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/c")
}

pub(crate) fn build(cc: &str, name: &str) -> PathBuf {
    let exe = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("example_{name}"));
    let dir = lib_dir();
    let dir = dir.to_str().expect("a UTF-8 path");
    let flags = [
        format!("-L{dir}"),
        format!("-Wl,-rpath,{dir}"),
        "-lsprout".to_string(),
    ];
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    compile(
        cc,
        &[examples().join(format!("{name}.c"))],
        &exe,
        &flags,
        false,
    );
    exe
}

/// Waits for `child` at most `limit`, killing it then; its exit status and standard output.
pub(crate) fn finish(mut child: Child, limit: Duration, rest: &mut String) -> bool {
    let end = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().expect("waiting for an example") {
            if let Some(mut out) = child.stdout.take() {
                out.read_to_string(rest)
                    .expect("reading an example's output");
            }
            return status.success();
        }
        if Instant::now() >= end {
            let _ = child.kill();
            let _ = child.wait();
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `(kbit/s, p95 ms)` of a receiver's per-second line.
pub(crate) fn per_second(line: &str) -> Option<(f64, f64)> {
    let rest = line.strip_prefix("receiver ")?;
    let (_, rest) = rest.split_once(" s: ")?;
    let mut words = rest.split_whitespace();
    let kbps = words.next()?.parse().ok()?;
    let p95 = rest
        .split_once("delay p95 ")?
        .1
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    Some((kbps, p95))
}

#[test]
fn the_paced_sender_reaches_the_receiver_over_loopback() {
    let _one = crate::c::one_at_a_time();
    let Some(cc) = c_compiler() else {
        return;
    };
    let (sender, receiver) = (build(&cc, "sender"), build(&cc, "receiver"));
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
    let (port, key) = match words.as_slice() {
        ["receiver", "on", _, "port", port, "key", key, "base64", _] => {
            (port.to_string(), key.to_string())
        }
        _ => panic!("unexpected first line of the receiver: {first:?}"),
    };
    let tx = Command::new(&sender)
        .args(["127.0.0.1", &port, &key, "1000", "3", "1000"])
        .stdout(Stdio::piped())
        .spawn()
        .expect("starting the sender");
    let mut sent = String::new();
    let sender_ok = finish(tx, Duration::from_secs(20), &mut sent);
    rx.stdout = Some(out.into_inner());
    let mut got = first.clone();
    let receiver_ok = finish(rx, Duration::from_secs(10), &mut got);
    println!("{sent}{got}");
    assert!(
        sender_ok && receiver_ok,
        "an example failed:\n{sent}\n{got}"
    );
    // Whole seconds of the stream: about 1000 kbit/s each, with a short delay.
    let seconds: Vec<(f64, f64)> = got.lines().filter_map(per_second).collect();
    assert!(seconds.len() >= 3, "per-second lines: {got}");
    for &(kbps, p95) in &seconds[..2] {
        assert!(
            (800.0..=1200.0).contains(&kbps),
            "delivered {kbps} kbit/s:\n{got}"
        );
        assert!(p95 < 100.0, "delay p95 {p95} ms over loopback:\n{got}");
    }
    let count = |text: &str, prefix: &str| -> u64 {
        let line = text
            .lines()
            .find(|l| l.starts_with(prefix))
            .unwrap_or_default();
        line[prefix.len()..]
            .split_whitespace()
            .next()
            .and_then(|w| w.parse().ok())
            .unwrap_or(0)
    };
    let (n_sent, n_got) = (count(&sent, "sender: "), count(&got, "receiver: "));
    assert!(
        n_sent >= 350,
        "sent {n_sent} messages in 3 s at 1 Mbit/s:\n{sent}"
    );
    assert!(
        n_got * 100 >= n_sent * 99,
        "received {n_got} of {n_sent}:\n{got}"
    );
}
