//! `sprout saturator`: how recordings end (issue 36). A server that dies leaves an incomplete
//! recording (its files named `NAME.incomplete.*`, `"complete": false`, a failed exit), never
//! an outage of the link; a genuine outage of one direction is still an outage; the server
//! ends a recording at its bound (`--max-recording`), and tells the next client when to retry.

use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::saturator_cli::{
    free_addr, json_client, kill_and_read, loopback_server, server_wait, spawn_piped,
    spawn_server_with, stop_and_read, succeeded, summary_line, summary_lines, with,
};

/// The client's `NAME.json` (or `NAME.incomplete.json`) as JSON.
fn read_json(path: &std::path::Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

/// The server dies (SIGKILL) 2 s into a 6 s recording of the downlink. The client fails
/// (non-zero exit, saying the recording is incomplete) and writes what it recorded under the
/// incomplete names only (`NAME.incomplete.down`, `NAME.incomplete.json`; never `NAME.down`
/// or `NAME.json`); the JSON says `"complete": false`, why, and when the server went silent,
/// and the downlink's recording is cut there: no outage, no trailing gap.
#[test]
fn a_dead_server_leaves_an_incomplete_recording_not_an_outage() {
    let (_dir, addr, mut server, name) = loopback_server("orphan");
    let started = Instant::now();
    let client =
        spawn_piped(json_client(Some("down"), "6", &addr, &name).args(["--fetch-timeout", "2"]));
    std::thread::sleep(Duration::from_millis(2000));
    kill_and_read(&mut server);
    let o = client.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{stderr}");
    assert!(started.elapsed() < Duration::from_secs(15));
    assert!(stderr.contains("incomplete"), "{stderr}");
    assert!(
        !with(&name, ".down").exists() && !with(&name, ".json").exists(),
        "never the finished names"
    );
    assert!(!with(&name, ".down.partial").exists());
    let v = read_json(&with(&name, ".incomplete.json"));
    assert_eq!(v["complete"], false, "{v}");
    assert_eq!(v["ended"], "server-silent", "{v}");
    assert!(
        v["incomplete_reason"]
            .as_str()
            .unwrap_or("")
            .contains("server"),
        "{v}"
    );
    let silent = v["server_silent_since_s"]
        .as_f64()
        .expect("when it went silent");
    assert!((1.2..2.6).contains(&silent), "{v}");
    let down = &v["down"];
    assert_eq!(
        down["outages"], 0,
        "the server's death is no outage: {down}"
    );
    assert!(down["longest_gap_ms"].as_u64().unwrap() < 1000, "{down}");
    assert!(
        (down["duration_s"].as_f64().unwrap() - silent).abs() < 0.05,
        "cut where the server went silent: {v}"
    );
    let trace = std::fs::read_to_string(with(&name, ".incomplete.down")).unwrap();
    assert_eq!(
        trace.lines().count() as u64,
        down["packets"].as_u64().unwrap()
    );
    assert!(down["packets"].as_u64().unwrap() > 100, "{down}");
}

/// A relay on loopback between a client and a server that drops every datagram from the
/// server to the client from `from` to `to` after it starts (an outage of the downlink only:
/// the client's acks still reach the server).
struct Relay {
    addr: String,
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
}

impl Relay {
    fn new(server: &str, from: Duration, to: Duration) -> Relay {
        let front = UdpSocket::bind("127.0.0.1:0").unwrap();
        let back = UdpSocket::bind("127.0.0.1:0").unwrap();
        back.connect(server).unwrap();
        for s in [&front, &back] {
            s.set_read_timeout(Some(Duration::from_millis(20))).unwrap();
        }
        let addr = front.local_addr().unwrap().to_string();
        let stop = Arc::new(AtomicBool::new(false));
        let client: Arc<Mutex<Option<SocketAddr>>> = Arc::default();
        let start = Instant::now();
        let (front2, back2) = (front.try_clone().unwrap(), back.try_clone().unwrap());
        let (stop_up, client_up) = (stop.clone(), client.clone());
        let up = std::thread::spawn(move || {
            let mut buf = vec![0u8; 65_536];
            while !stop_up.load(Ordering::Relaxed) {
                if let Ok((n, from)) = front.recv_from(&mut buf) {
                    *client_up.lock().unwrap() = Some(from);
                    let _ = back.send(&buf[..n]);
                }
            }
        });
        let stop_down = stop.clone();
        let down = std::thread::spawn(move || {
            let mut buf = vec![0u8; 65_536];
            while !stop_down.load(Ordering::Relaxed) {
                if let Ok(n) = back2.recv(&mut buf) {
                    let t = start.elapsed();
                    let to_client = *client.lock().unwrap();
                    if let (false, Some(c)) = (t >= from && t < to, to_client) {
                        let _ = front2.send_to(&buf[..n], c);
                    }
                }
            }
        });
        Relay {
            addr,
            stop,
            threads: vec![up, down],
        }
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// An outage of the downlink alone (2.5 s, from 1.5 s into a 6 s recording over one path):
/// the server is alive (it hears the client's acks, and its data comes again after), so the
/// recording is complete, under its finished names, and reports the outage.
#[test]
fn an_outage_of_one_direction_is_still_an_outage() {
    let (_dir, addr, mut server, name) = loopback_server("outage");
    let relay = Relay::new(
        &addr,
        Duration::from_millis(1500),
        Duration::from_millis(4000),
    );
    let o = json_client(Some("down"), "6", &relay.addr, &name)
        .output()
        .unwrap();
    let v = summary_line(&succeeded(&o));
    assert_eq!(v["complete"], true, "{v}");
    let down = &read_json(&with(&name, ".json"))["down"];
    assert!(down["outages"].as_u64().unwrap() >= 1, "{down}");
    let gap = down["longest_gap_ms"].as_u64().unwrap();
    assert!((2000..3500).contains(&gap), "{down}");
    assert!(down["duration_s"].as_f64().unwrap() > 5.5, "{down}");
    assert!(with(&name, ".down").is_file());
    assert!(!with(&name, ".incomplete.json").exists());
    drop(relay);
    assert_eq!(summary_line(&server_wait(&mut server))["ended"], "fin");
}

/// A server whose recordings are bounded at 3 s (`--max-recording 3`) and a client asking
/// for 20 s of the uplink: the server ends the recording at its bound and tells the client,
/// which ends at once (not after 20 s), successfully: its files are the finished ones, marked
/// as cut at the server's bound (`"ended": "server-limit"`), not as an outage or a failure.
#[test]
fn the_server_ends_a_recording_at_its_bound() {
    let dir = tempfile::tempdir().unwrap();
    let addr = free_addr();
    let mut server = spawn_server_with(&addr, &["--once", "--max-recording", "3"]);
    let name = dir.path().join("bounded");
    let started = Instant::now();
    let o = json_client(Some("up"), "20", &addr, &name)
        .output()
        .unwrap();
    let elapsed = started.elapsed();
    let s = summary_line(&succeeded(&o));
    assert!(elapsed < Duration::from_secs(10), "{elapsed:?}");
    assert_eq!(s["complete"], true, "{s}");
    assert_eq!(s["ended"], "server-limit", "{s}");
    assert_eq!(s["server_limit_s"], 3.0, "{s}");
    let up = &read_json(&with(&name, ".json"))["up"];
    let d = up["duration_s"].as_f64().unwrap();
    assert!((2.5..=3.05).contains(&d), "cut at the bound: {up}");
    assert_eq!(up["outages"], 0, "{up}");
    assert!(up["packets"].as_u64().unwrap() > 100, "{up}");
    assert!(with(&name, ".up").is_file());
    let v = summary_line(&server_wait(&mut server));
    assert_eq!(v["ended"], "limit", "{v}");
    assert_eq!(v["delivered"], true, "{v}");
}

/// While a client holds a server bounded at 4 s, a second client is refused at once with
/// when to retry (the time left, a few seconds); after the first ends, it records.
#[test]
fn the_next_client_is_told_when_to_retry() {
    let dir = tempfile::tempdir().unwrap();
    let addr = free_addr();
    let mut server = spawn_server_with(&addr, &["--max-recording", "4"]);
    let first = spawn_piped(&mut json_client(
        Some("up"),
        "20",
        &addr,
        &dir.path().join("first"),
    ));
    std::thread::sleep(Duration::from_millis(1500));
    let started = Instant::now();
    let o = json_client(Some("up"), "1", &addr, &dir.path().join("second"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{stderr}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "refused at once"
    );
    assert!(stderr.contains("busy"), "{stderr}");
    let at = stderr.find("try again in ").expect(&stderr) + "try again in ".len();
    let secs: u64 = stderr[at..]
        .split(' ')
        .next()
        .and_then(|n| n.parse().ok())
        .expect(&stderr);
    assert!((1..=6).contains(&secs), "{stderr}");
    let s = summary_line(&succeeded(&first.wait_with_output().unwrap()));
    assert_eq!(s["ended"], "server-limit", "{s}");
    let o = json_client(Some("up"), "1", &addr, &dir.path().join("second"))
        .output()
        .unwrap();
    assert_eq!(summary_line(&succeeded(&o))["complete"], true);
    let summaries = summary_lines(&stop_and_read(&mut server));
    assert_eq!(summaries.len(), 2, "{summaries:?}");
}

/// A proven client that keeps sending and never ends its recording (the hog) on a
/// server bounded at 2 s: it is told the recording is over (a `Refused` of its session saying
/// the server's bound), and the server is free again within the bound and as long again
/// (2 + 2 s) although the client's data never stops: `--once` exits, its summary "limit".
#[test]
fn a_client_that_keeps_sending_is_cut_at_the_bound() {
    use crate::saturator_cli::prove;
    use sprout_core::direction::{Direction, Load};
    use sprout_saturator::{decode, encode, DataHeader, Message};
    let addr = free_addr();
    let mut server = spawn_server_with(&addr, &["--once", "--max-recording", "2"]);
    let hog = UdpSocket::bind("127.0.0.1:0").unwrap();
    let session = 0x4060_0001;
    prove(&hog, &addr, session, Load::Up);
    hog.set_nonblocking(true).unwrap();
    let started = Instant::now();
    let (mut buf, mut reply) = (Vec::new(), [0u8; 2048]);
    let mut told = None;
    let mut seq = 0u64;
    while started.elapsed() < Duration::from_secs(8) && server.try_wait().unwrap().is_none() {
        let h = DataHeader {
            session,
            dir: Direction::Up,
            seq,
            sent_us: seq,
            window: 8,
            rtt_ms: 0,
            probe: false,
            ack: None,
        };
        encode(&Message::Data(h), 1472, &mut buf);
        let _ = hog.send_to(&buf, &addr);
        seq += 1;
        while let Ok((n, _)) = hog.recv_from(&mut reply) {
            if let Ok(Message::Refused { session: s, reason }) = decode(&reply[..n]) {
                assert_eq!(s, session);
                told.get_or_insert((started.elapsed(), reason.to_string()));
            }
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    let freed = started.elapsed();
    let (at, why) = told.expect("the client is told the recording is over");
    assert!(why.contains("ends recordings at 2 s"), "{why}");
    assert!(at < Duration::from_secs(3), "{at:?}");
    assert!(
        freed < Duration::from_secs(6),
        "the server is free again: {freed:?}"
    );
    let v = summary_line(&server_wait(&mut server));
    assert_eq!(v["ended"], "limit", "{v}");
    let d = v["up"]["duration_s"].as_f64().unwrap();
    assert!(d <= 2.0 + 1e-6, "cut at the bound: {v}");
    assert!(
        v["up"]["late"].as_u64().unwrap() > 0,
        "data after the bound: {v}"
    );
}
