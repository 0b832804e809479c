//! The C examples against `sprout client` through the link emulator (issue 37's first
//! done-when line): on Verizon-LTE-short, a paced 1 Mbit/s stream for 20 s from
//! examples/c/sender.c to examples/c/receiver.c, then the same stream from `sprout server` to
//! `sprout client --rate 1000`, each printing the delivered rate and the application delay's
//! 95th percentile of every second; the two must agree within 15% (the delay: or 20 ms,
//! whichever is larger) second by second.
//!
//! One after the other, each in an emulator of its own, not side by side: each emulator
//! replays the trace from its start, so both streams cross the same 20 s of the link; side by
//! side, each stream would queue behind the other (2 Mbit/s into seconds where the downlink
//! carries 1 to 2), and what one printed would not be what it does alone. The `sprout` run
//! goes first; the C stream then starts as long after its emulator's start (its banner) as
//! the `sprout` stream did after its own (the sender's `--start-at`), so that each second of
//! the two lines covers the same second of the trace: the link's rate changes within tens of
//! ms, and where a second ends in a burst of delay decides its 95th percentile. Where each
//! run's seconds began is measured (its first per-second line, less a second); a C run whose
//! seconds began more than 5 ms away from the client's is run again, aimed by the miss (at
//! most three C runs).
//!
//! The rate compared is the application bytes delivered in each second, as the receiver
//! prints it and as `sprout client` prints its running total (`received_bytes`): its
//! `received_kbps` of the first second divides by the time since its endpoint was made,
//! the handshake included, not by the second (both are printed).
//!
//! Both streams go down the link (outside to mobile), where `sprout client` prints what it
//! receives: the C sender outside, its receiver in the mobile namespace; `sprout server`
//! outside, `sprout client --direction down` inside (its default `both` would load the uplink
//! with a second stream the C run does not have). Both run Sprout on the wide model (the C
//! sender's `--hello` asks for `sprout client`'s default) with 1,000-byte messages.
//!
//! Needs root (network namespaces, TUN devices), the trace (../shared/traces) and the `sprout`
//! command of this build (`target/<profile>/sprout`, which `cargo test --workspace` builds, or
//! `$SPROUT_BIN`); says which is missing and passes otherwise.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime};

use sprout_link::testdata;

use crate::example::{build, finish, per_second};
use crate::interop::{cc, sprout_bin};

/// Seconds of each stream.
const SECONDS: usize = 20;
/// Longest a run may take, emulator included.
const RUN_LIMIT: Duration = Duration::from_secs(60);
/// The link.
const LINK: &str = "Verizon-LTE-short";
/// How long `sprout client` waits in its emulator before it starts: by then the C sender of
/// the other run has connected, so that its stream can start as late as this one did.
const CLIENT_WAIT: Duration = Duration::from_secs(1);
/// The emulator's one-way delay (`sprout link`'s default) and a little more: a stream's first
/// message arrives this long after it left.
const ONE_WAY: Duration = Duration::from_millis(21);
/// How close the two runs' seconds must begin on the trace: the link's rate changes within
/// tens of ms, and where a second ends in a burst of delay decides its 95th percentile.
const ALIGNED: Duration = Duration::from_millis(5);
/// Most C runs, each aimed by the last one's miss.
const C_RUNS: usize = 3;

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|v| v.split_whitespace().nth(1))
        == Some("0")
}

/// `sprout link` over the trace `stem` (.up, .down) running `command`.
fn link(sprout: &Path, stem: &Path, command: &str) -> Command {
    let mut c = Command::new(sprout);
    c.arg("link")
        .arg("--uplink")
        .arg(stem.with_extension("up"))
        .arg("--downlink")
        .arg(stem.with_extension("down"))
        .args(["--duration", "50", "--", "sh", "-c", command])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c
}

/// Reads `out` line by line on a thread, each line with the time it came.
fn timed_lines(out: impl Read + Send + 'static) -> mpsc::Receiver<(SystemTime, String)> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines() {
            let Ok(line) = line else { break };
            if tx.send((SystemTime::now(), line)).is_err() {
                break;
            }
        }
    });
    rx
}

/// Waits (at most 15 s) for `sprout link`'s banner among its stderr `lines`: the time it came
/// (the emulator's trace starts just before), and the lines so far.
fn link_banner(lines: &mpsc::Receiver<(SystemTime, String)>) -> (SystemTime, Vec<String>) {
    let mut seen = Vec::new();
    while let Ok((at, line)) = lines.recv_timeout(Duration::from_secs(15)) {
        let found = line.starts_with("sprout link: mobile ");
        seen.push(line);
        if found {
            return (at, seen);
        }
    }
    panic!("no banner from sprout link: {seen:?}");
}

/// The rest of `lines` (their writer has ended), after `seen`, as text.
fn all_lines(mut seen: Vec<String>, lines: mpsc::Receiver<(SystemTime, String)>) -> String {
    seen.extend(lines.iter().map(|(_, l)| l));
    seen.iter().map(|l| format!("{l}\n")).collect()
}

/// A run's per-second lines, when its first one came less a second after its emulator's
/// banner (where its seconds begin on the trace), and everything printed.
struct Run<T> {
    seconds: Vec<T>,
    grid: Duration,
    text: String,
}

/// The C run: the receiver in the mobile namespace, the sender outside, the stream started
/// `start` after the emulator's banner. The receiver's per-second `(kbit/s, p95 ms)`.
fn c_run(cc: &str, sprout: &Path, stem: &Path, start: Duration) -> Run<(f64, f64)> {
    let (sender, receiver) = (build(cc, "sender"), build(cc, "receiver"));
    let command = format!(
        "exec {} --bind \"$SPROUT_LINK_MOBILE\" 0 {}",
        receiver.display(),
        SECONDS + 25
    );
    let mut rx = link(sprout, stem, &command)
        .spawn()
        .expect("starting sprout link");
    let notes = timed_lines(rx.stderr.take().expect("its stderr"));
    let (linked, seen) = link_banner(&notes);
    let lines = timed_lines(rx.stdout.take().expect("its stdout"));
    let first = lines
        .recv_timeout(Duration::from_secs(15))
        .map(|(_, l)| l)
        .unwrap_or_default();
    let words: Vec<&str> = first.split_whitespace().collect();
    let (addr, port, key) = match words.as_slice() {
        ["receiver", "on", addr, "port", port, "key", key, "base64", _] => (*addr, *port, *key),
        _ => {
            let _ = rx.kill();
            panic!("unexpected first line of the receiver: {first:?}");
        }
    };
    let start_at = (linked + start)
        .duration_since(SystemTime::UNIX_EPOCH)
        .expect("a clock after 1970")
        .as_micros()
        .to_string();
    let tx = Command::new(&sender)
        .args(["--hello", "--start-at", &start_at])
        .args([addr, port, key, "1000", &SECONDS.to_string(), "1000"])
        .stdout(Stdio::piped())
        .spawn()
        .expect("starting the sender");
    let mut sent = String::new();
    let sender_ok = finish(tx, RUN_LIMIT, &mut sent);
    let receiver_ok = finish(rx, RUN_LIMIT, &mut String::new());
    let lines: Vec<(SystemTime, String)> = lines.iter().collect();
    let got: String = lines.iter().map(|(_, l)| format!("{l}\n")).collect();
    let text = format!("{sent}{first}\n{got}{}", all_lines(seen, notes));
    assert!(sender_ok && receiver_ok, "a C example failed:\n{text}");
    let grid = lines
        .iter()
        .find(|(_, l)| per_second(l).is_some())
        .map(|(at, _)| at.duration_since(linked).unwrap_or_default())
        .unwrap_or_default()
        .saturating_sub(Duration::from_secs(1));
    Run {
        seconds: lines.iter().filter_map(|(_, l)| per_second(l)).collect(),
        grid,
        text,
    }
}

/// One second of `sprout client`: the kbit/s delivered in it (from `received_bytes`), the
/// kbit/s it printed, the delay p95 (ms).
type Tick = (f64, f64, f64);

/// The `sprout` run: `sprout server` outside, `sprout client --rate 1000 --direction down`
/// in the mobile namespace (after [`CLIENT_WAIT`]). The client's seconds, from `received_bytes`,
/// its printed rate and its delay p95.
fn sprout_run(sprout: &Path, stem: &Path) -> Run<Tick> {
    let port = std::net::UdpSocket::bind("0.0.0.0:0")
        .and_then(|s| s.local_addr())
        .expect("a free port")
        .port();
    let mut server = Command::new(sprout)
        .args(["server", "--once", "--allow-any-client"])
        .arg(format!("--listen=0.0.0.0:{port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starting sprout server");
    // Kept open until the server is gone (it writes its notes there).
    let mut notes = BufReader::new(server.stderr.take().expect("its stderr"));
    let mut banner = String::new();
    notes
        .read_line(&mut banner)
        .expect("the server's first line");
    let Some(key) = banner
        .split_once("public key ")
        .and_then(|(_, k)| k.split_whitespace().next())
    else {
        let _ = server.kill();
        panic!("no public key in the server's first line: {banner:?}");
    };
    let command = format!(
        "sleep {}; exec {} client --connect \"$SPROUT_LINK_OUTSIDE:{port}\" \
         --server-key {key} --rate 1000 --direction down --duration {SECONDS} --json",
        CLIENT_WAIT.as_secs_f64(),
        sprout.display()
    );
    let mut client = link(sprout, stem, &command)
        .spawn()
        .expect("starting sprout link");
    let lines = timed_lines(client.stdout.take().expect("its stdout"));
    let link_notes = timed_lines(client.stderr.take().expect("its stderr"));
    let (linked, seen) = link_banner(&link_notes);
    let ok = finish(client, RUN_LIMIT, &mut String::new());
    let err = all_lines(seen, link_notes);
    let _ = server.kill();
    let _ = server.wait();
    drop(notes);
    let lines: Vec<(SystemTime, String)> = lines.iter().collect();
    let out: String = lines.iter().map(|(_, l)| format!("{l}\n")).collect();
    assert!(ok, "sprout client failed:\n{out}{err}");
    let (mut ticks, mut began, mut total) = (Vec::new(), None, 0.0);
    for (at, line) in &lines {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        if v["type"] != "tick" {
            continue;
        }
        // The first second's line came a second after the stream's first message arrived.
        began.get_or_insert_with(|| at.duration_since(linked).unwrap_or_default());
        let bytes = v["received_bytes"].as_f64().unwrap_or(0.0);
        let printed = v["received_kbps"].as_f64().unwrap_or(0.0);
        let p95 = v["owd_p95_ms"].as_f64().unwrap_or(f64::NAN);
        ticks.push(((bytes - total) * 8.0 / 1000.0, printed, p95));
        total = bytes;
    }
    let began = began.expect("sprout client printed no second");
    Run {
        seconds: ticks,
        grid: began.saturating_sub(Duration::from_secs(1)),
        text: format!("{out}{err}"),
    }
}

/// Whether `c` is within 15% of `s`, or within `floor` of it.
fn close(c: f64, s: f64, floor: f64) -> bool {
    (c - s).abs() <= (0.15 * s.abs()).max(floor)
}

#[test]
fn the_c_examples_match_sprout_client_through_the_emulated_verizon_lte_link() {
    if !is_root() {
        testdata::skip("the link emulator needs root (network namespaces, TUN devices)");
        return;
    }
    let Some(traces) = testdata::require("traces") else {
        return;
    };
    let (Some(sprout), Some(cc)) = (sprout_bin(), cc()) else {
        return;
    };
    let _one = crate::c::one_at_a_time();
    let stem = traces.join(LINK);
    let started = Instant::now();
    let s = sprout_run(&sprout, &stem);
    // The C stream aimed to start a one-way delay before the client's seconds began (on the
    // trace); if its receiver's seconds began more than ALIGNED away, aimed again.
    let mut aim = s.grid.saturating_sub(ONE_WAY);
    let mut c = c_run(&cc, &sprout, &stem, aim);
    for _ in 1..C_RUNS {
        if c.grid.abs_diff(s.grid) <= ALIGNED {
            break;
        }
        aim = (aim + s.grid).saturating_sub(c.grid);
        c = c_run(&cc, &sprout, &stem, aim);
    }
    let elapsed = started.elapsed();
    println!(
        "sprout server / sprout client:\n{}\nC examples:\n{}",
        s.text, c.text
    );
    let off = c.grid.as_secs_f64() - s.grid.as_secs_f64();
    println!(
        "{LINK} downlink, paced 1000 kbit/s, sprout-wide, {SECONDS} s each, one after the \
         other; the seconds begin {:.3} s (client) and {:.3} s (C receiver) after the \
         emulator started ({:+.1} ms; {elapsed:.0?} in all)",
        s.grid.as_secs_f64(),
        c.grid.as_secs_f64(),
        off * 1000.0
    );
    let (s, c) = (s.seconds, c.seconds);
    println!(" second   C kbit/s  client kbit/s (printed)   C p95 ms  client p95 ms");
    let mut bad = Vec::new();
    for k in 0..SECONDS {
        let (Some(&(ck, cp)), Some(&(sk, printed, sp))) = (c.get(k), s.get(k)) else {
            bad.push(format!("second {}: missing", k + 1));
            continue;
        };
        let ok = close(ck, sk, 0.0) && close(cp, sp, 20.0);
        println!(
            "{:>7} {ck:>10.0} {sk:>14.1} {:>9} {cp:>10.1} {sp:>14.1}{}",
            k + 1,
            format!("({printed:.1})"),
            if ok { "" } else { "  <- differs" }
        );
        if !ok {
            bad.push(format!(
                "second {}: C {ck} kbit/s p95 {cp} ms, client {sk} kbit/s p95 {sp} ms",
                k + 1
            ));
        }
    }
    assert!(
        bad.is_empty(),
        "the C example and sprout client differ beyond 15% (or 20 ms): {bad:?}"
    );
    assert!(elapsed < Duration::from_secs(150), "took {elapsed:?}");
}
