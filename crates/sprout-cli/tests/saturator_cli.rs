//! `sprout saturator`: a recording through the emulator reproduces the replayed trace pair
//! (root), and stray or malformed datagrams on the server's port are counted and ignored.

use std::net::UdpSocket;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use sprout_link::SyntheticLink;
use sprout_saturator::{encode, DataHeader, Dir, Hello, Message, Mode};

fn sprout() -> Command {
    Command::new(env!("CARGO_BIN_EXE_sprout"))
}

fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

fn free_port() -> u16 {
    UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The last JSON line of `text` whose "type" is "summary".
fn summary_line(text: &str) -> serde_json::Value {
    text.lines()
        .rev()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|v| v["type"] == "summary")
        .unwrap_or_else(|| panic!("no summary line in:\n{text}"))
}

fn write_trace(path: &Path, ms: &[u64]) {
    let text: String = ms.iter().map(|t| format!("{t}\n")).collect();
    std::fs::write(path, text).unwrap();
}

/// A 25 s pair `NAME.up` (250 packets/s to start) and `NAME.down` (400) of the paper's model,
/// seeds `seed` and `seed + 1`, in `DIR/traces`, which is returned.
fn synthetic_pair(dir: &Path, name: &str, seed: u64) -> std::path::PathBuf {
    let traces = dir.join("traces");
    std::fs::create_dir_all(&traces).unwrap();
    for (file, seed, rate) in [
        (format!("{name}.up"), seed, 250.0),
        (format!("{name}.down"), seed + 1, 400.0),
    ] {
        let link = SyntheticLink {
            seed,
            duration_s: 25.0,
            start_rate: rate,
            sigma: 60.0,
            max_rate: 700.0,
            ..SyntheticLink::default()
        };
        write_trace(
            &traces.join(&file),
            link.generate(file.clone()).opportunities_ms(),
        );
    }
    traces
}

/// A 25 s synthetic pair, a few Mbit/s with variation (the paper's model, seeded): recorded
/// both directions at once through the emulator (feedback over a separate veth path), the
/// per-second counts of trace seconds 2-22 match within 5% in at least 95% of the seconds
/// outside outages, and the totals within 2%.
#[test]
fn round_trip_through_the_emulator() {
    if !is_root() {
        eprintln!(
            "SKIPPED: the emulator needs root (CAP_NET_ADMIN) for its namespace and TUN devices"
        );
        return;
    }
    if Command::new("ip").arg("-V").output().is_err() {
        eprintln!("SKIPPED: `ip` (iproute2) is needed for the feedback path");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let traces = synthetic_pair(dir.path(), "synth", 11);
    let out = dir.path().join("out");
    let started = Instant::now();
    let run = run_check(&traces, &out, &["--json"]);
    let stdout = String::from_utf8_lossy(&run.stdout);
    let stderr = String::from_utf8_lossy(&run.stderr);
    eprintln!("{stderr}");
    let v: serde_json::Value = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}):\n{stdout}\n{stderr}"));
    let rows = v["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    for r in rows {
        let c = &r["seconds"];
        eprintln!(
            "{}: {}/{} seconds within 5%, total {}/{}, exact ms {:.3}, Sprout {:.0}/{:.0} kbit/s, \
             delay {:.0}/{:.0} ms",
            r["direction"],
            c["seconds_within"],
            c["seconds"].as_u64().unwrap() - c["outage_seconds"].as_u64().unwrap(),
            c["recorded_total"],
            c["replayed_total"],
            c["exact_ms_share"].as_f64().unwrap(),
            r["sprout"]["recorded_kbps"].as_f64().unwrap_or(0.0),
            r["sprout"]["replayed_kbps"].as_f64().unwrap_or(0.0),
            r["sprout"]["recorded_delay_ms"].as_f64().unwrap_or(0.0),
            r["sprout"]["replayed_delay_ms"].as_f64().unwrap_or(0.0),
        );
        assert_eq!(r["completed"], true, "{r}");
        assert!(
            c["replayed_total"].as_u64().unwrap() > 2000,
            "a few Mbit/s: {c}"
        );
        assert_eq!(
            c["per_second_ok"], true,
            "per-second counts: {}",
            c["per_second"]
        );
        assert_eq!(c["total_ok"], true, "total: {c}");
        let judged = c["seconds"].as_u64().unwrap() - c["outage_seconds"].as_u64().unwrap();
        assert!(judged >= 15, "most seconds are judged: {c}");
        // The recording's own summary: no loss, nothing stray on a clean link.
        let s = &r["summary"];
        assert_eq!(s["lost"], 0, "{s}");
        assert_eq!(s["strays"], 0, "{s}");
    }
    assert_tables(&out);
    assert_chart(&out.join("saturator-synth.svg"));
    for f in ["synth.up", "synth.down", "synth.json"] {
        assert!(out.join("recordings").join(f).is_file(), "{f}");
    }
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "{:?}",
        started.elapsed()
    );
}

/// `sprout saturator server --once --json --quiet` on `addr`, given 300 ms to bind.
fn spawn_server(addr: &str) -> std::process::Child {
    let server = sprout()
        .args(["saturator", "server", "--once", "--json", "--quiet"])
        .args(["--listen", addr])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    server
}

/// `sprout saturator check --seconds 20` on `traces`, writing into `out`, with `extra` flags.
fn run_check(traces: &Path, out: &Path, extra: &[&str]) -> std::process::Output {
    sprout()
        .args(["saturator", "check", "--seconds", "20"])
        .args(extra)
        .arg("--traces")
        .arg(traces)
        .arg("--out")
        .arg(out)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// The check's tables are in `out`.
fn assert_tables(out: &Path) {
    for f in [
        "saturator-check.csv",
        "saturator-check.json",
        "saturator-check-seconds.csv",
    ] {
        assert!(out.join(f).is_file(), "{f}");
    }
}

/// The check's chart of a pair: both panels, both series (replayed and recorded), one step
/// per compared second, and no stray values.
fn assert_chart(path: &Path) {
    let svg = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert!(
        svg.starts_with("<svg") || svg.starts_with("<?xml"),
        "{svg:.200}"
    );
    for text in [
        "Uplink (Mbit/s)",
        "Downlink (Mbit/s)",
        "replayed trace",
        "recording",
    ] {
        assert!(svg.contains(text), "{text} missing from {}", path.display());
    }
    assert_eq!(
        svg.matches("class=\"rate\"").count(),
        4,
        "two lines in each panel"
    );
    assert!(!svg.contains("NaN"));
}

/// Without root: the same round trip on the link model's virtual clock (`--simulated`)
/// passes, and writes its tables and its chart.
#[test]
fn simulated_check_writes_its_tables_and_chart() {
    let dir = tempfile::tempdir().unwrap();
    let traces = synthetic_pair(dir.path(), "pair", 21);
    let out = dir.path().join("out");
    let run = run_check(&traces, &out, &["--simulated"]);
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&run.stderr)
    );
    assert!(stdout.contains("2 of 2 link directions pass"), "{stdout}");
    assert_tables(&out);
    // 20 compared seconds in each direction, plus the header.
    let seconds = std::fs::read_to_string(out.join("saturator-check-seconds.csv")).unwrap();
    assert_eq!(seconds.lines().count(), 1 + 2 * 20);
    assert_chart(&out.join("saturator-pair.svg"));
}

/// A recording of the uplink over loopback while datagrams that are not its own hit the
/// server's port: three malformed ones and three well-formed ones of another session. The
/// recording completes, its summary counts them (strays 3, malformed 3) and nothing else
/// moves (no loss, no duplicates, no reordering).
#[test]
fn stray_and_malformed_datagrams_are_counted_and_ignored() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let mut server = spawn_server(&addr);
    let name = dir.path().join("loop");
    // Window 8 over loopback: about 8 packets per 20 ms ack, 5 Mbit/s, gentle on CI.
    let client = sprout()
        .args([
            "saturator",
            "client",
            "--direction",
            "up",
            "--duration",
            "3",
            "--json",
        ])
        .args(["--quiet", "--max-window", "8", "--connect", &addr])
        .arg("--name")
        .arg(&name)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1000));
    let stray = UdpSocket::bind("127.0.0.1:0").unwrap();
    let mut buf = Vec::new();
    // Malformed: not ours at all, too short, a bad version.
    stray.send_to(b"GET / HTTP/1.0\r\n\r\n", &addr).unwrap();
    stray.send_to(b"SPSA", &addr).unwrap();
    encode(
        &Message::Data(DataHeader {
            session: 1,
            dir: Dir::Up,
            seq: 0,
            sent_us: 0,
            window: 0,
            rtt_ms: 0,
            probe: false,
            ack: None,
        }),
        1472,
        &mut buf,
    );
    let mut bad_version = buf.clone();
    bad_version[4] = 99;
    stray.send_to(&bad_version, &addr).unwrap();
    // Well-formed, another session: two data packets and a hello (answered "busy").
    stray.send_to(&buf, &addr).unwrap();
    stray.send_to(&buf, &addr).unwrap();
    encode(
        &Message::Hello(Hello {
            session: 2,
            mode: Mode::Both,
            payload_bytes: 1472,
            low_rtt_ms: 750,
            high_rtt_ms: 3000,
            max_window: 10,
            feedback_path: false,
            uses_feedback: false,
            name: String::new(),
        }),
        0,
        &mut buf,
    );
    stray.send_to(&buf, &addr).unwrap();
    stray
        .set_read_timeout(Some(Duration::from_secs(2)))
        .unwrap();
    let mut reply = [0u8; 2048];
    let (n, _) = stray
        .recv_from(&mut reply)
        .expect("an answer to the stray hello");
    assert!(
        matches!(
            sprout_saturator::decode(&reply[..n]),
            Ok(Message::Busy { session: 2 })
        ),
        "the server says it is busy"
    );
    let out = client.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let s = summary_line(&stdout);
    let up = &s["up"];
    assert!(up["packets"].as_u64().unwrap() > 100, "{up}");
    assert_eq!(up["strays"], 3, "{up}");
    assert_eq!(up["malformed"], 3, "{up}");
    assert_eq!(up["lost"], 0, "{up}");
    assert_eq!(up["duplicates"], 0, "{up}");
    assert_eq!(up["reordered"], 0, "{up}");
    assert!(s["down"].is_null(), "the downlink was not recorded: {s}");
    // The uplink's recording came back to the client: one line per packet.
    let trace = std::fs::read_to_string(with(&name, ".up")).unwrap();
    assert_eq!(
        trace.lines().count() as u64,
        up["packets"].as_u64().unwrap()
    );
    let server_out = server_wait(&mut server);
    let v = summary_line(&server_out);
    assert_eq!(v["ended"], "fin", "{v}");
    assert_eq!(v["delivered"], true, "{v}");
    assert_eq!(v["up"]["strays"], 3, "{v}");
}

fn with(p: &Path, suffix: &str) -> std::path::PathBuf {
    let mut s = p.as_os_str().to_owned();
    s.push(suffix);
    s.into()
}

fn server_wait(server: &mut std::process::Child) -> String {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if let Ok(Some(_)) = server.try_wait() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    if let Ok(None) = server.try_wait() {
        let _ = server.kill();
    }
    let mut out = String::new();
    use std::io::Read;
    if let Some(mut o) = server.stdout.take() {
        let _ = o.read_to_string(&mut out);
    }
    let _ = server.wait();
    out
}

/// Over IPv6 (loopback), both directions at once with 1280-byte packets (`--mtu`: a
/// 1232-byte UDP payload over IPv6): both recordings complete without loss, each trace line
/// is one packet, and the summaries' rates count 1280-byte lines.
#[test]
fn both_directions_over_ipv6_with_a_small_mtu() {
    if UdpSocket::bind("[::1]:0").is_err() {
        eprintln!("SKIPPED: no IPv6 loopback here");
        return;
    }
    let port = UdpSocket::bind("[::1]:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let addr = format!("[::1]:{port}");
    let dir = tempfile::tempdir().unwrap();
    let mut server = spawn_server(&addr);
    let name = dir.path().join("v6");
    let out = sprout()
        .args([
            "saturator",
            "client",
            "--direction",
            "both",
            "--duration",
            "3",
        ])
        .args(["--json", "--quiet", "--max-window", "8", "--mtu", "1280"])
        .args(["--connect", &addr])
        .arg("--name")
        .arg(&name)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let s = summary_line(&stdout);
    for d in ["up", "down"] {
        let r = &s[d];
        let packets = r["packets"].as_u64().unwrap();
        assert!(packets > 100, "{d}: {r}");
        assert_eq!(r["lost"], 0, "{d}: {r}");
        assert_eq!(
            (r["strays"].as_u64(), r["malformed"].as_u64()),
            (Some(0), Some(0))
        );
        let trace = std::fs::read_to_string(with(&name, &format!(".{d}"))).unwrap();
        assert_eq!(trace.lines().count() as u64, packets, "{d}");
        // mean_kbps counts 1280-byte lines over the recording's duration.
        let expect = packets as f64 * 1280.0 * 8.0 / 1000.0 / r["duration_s"].as_f64().unwrap();
        let mean = r["mean_kbps"].as_f64().unwrap();
        assert!(
            (mean - expect).abs() < 0.01 * expect,
            "{d}: {mean} vs {expect}"
        );
    }
    let v = summary_line(&server_wait(&mut server));
    assert_eq!(v["ended"], "fin", "{v}");
}

/// A hostile server that announces a 200 MiB recording of a one-second uplink: the client
/// refuses it at once (it reserves nothing), says why in its summary, and still writes what
/// it has.
#[test]
fn an_impossible_recording_size_is_refused() {
    use sprout_saturator::{decode, ResultMeta};
    let server = UdpSocket::bind("127.0.0.1:0").unwrap();
    let addr = server.local_addr().unwrap().to_string();
    server
        .set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let name = dir.path().join("hostile");
    let started = Instant::now();
    let mut client = sprout()
        .args([
            "saturator",
            "client",
            "--direction",
            "up",
            "--duration",
            "1",
        ])
        .args([
            "--json",
            "--quiet",
            "--max-window",
            "4",
            "--fetch-timeout",
            "30",
        ])
        .args(["--connect", &addr])
        .arg("--name")
        .arg(&name)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (mut buf, mut out) = ([0u8; 2048], Vec::new());
    let mut done = false;
    let mut first_fin: Option<Instant> = None;
    while started.elapsed() < Duration::from_secs(20) && client.try_wait().unwrap().is_none() {
        let Ok((n, from)) = server.recv_from(&mut buf) else {
            continue;
        };
        match decode(&buf[..n]) {
            Ok(Message::Hello(h)) => {
                let ack = Message::HelloAck {
                    session: h.session,
                    flags: 0,
                };
                encode(&ack, 0, &mut out);
                server.send_to(&out, from).unwrap();
            }
            Ok(Message::Fin { session, .. }) => {
                let blob_len = 200u32 << 20;
                let meta = ResultMeta {
                    session,
                    blob_len,
                    chunks: blob_len.div_ceil(1200),
                    checksum: 0,
                };
                encode(&Message::FinAck(meta), 0, &mut out);
                server.send_to(&out, from).unwrap();
                first_fin.get_or_insert_with(Instant::now);
            }
            Ok(Message::Done { .. }) => done = true,
            _ => {}
        }
    }
    let out = client.wait_with_output().unwrap();
    // The DONEs the client sent just before it exited.
    while let Ok((n, _)) = server.recv_from(&mut buf) {
        done |= matches!(decode(&buf[..n]), Ok(Message::Done { .. }));
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let s = summary_line(&stdout);
    let why = s["up_error"].as_str().unwrap_or_default();
    assert!(why.contains("refused"), "{s}");
    assert!(s["up"].is_null(), "{s}");
    assert!(with(&name, ".json").is_file());
    // Not the 30 s fetch timeout: the refusal ends the recording at once, with a DONE.
    let fin = first_fin.expect("the client sent FIN");
    assert!(
        fin.elapsed() < Duration::from_secs(5),
        "{:?}",
        fin.elapsed()
    );
    assert!(done, "the client said DONE");
}
