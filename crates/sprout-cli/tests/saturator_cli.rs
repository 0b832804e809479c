//! `sprout saturator`: a recording through the emulator reproduces the replayed trace pair
//! (root); stray or malformed datagrams on the server's port are ignored; the server answers
//! an address that has not proven itself with one small challenge only (no amplification);
//! recordings are never replaced or skewed by strangers; a client that dies or goes silent
//! frees the server and leaves its partial recording.

use sprout_core::direction::{Direction, Load};
use std::io::{BufRead, BufReader};
use std::net::UdpSocket;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use sprout_link::SyntheticLink;
use sprout_saturator::{decode, encode, AckInfo, DataHeader, Hello, Message};

use crate::common::assert_ok;

/// The `sprout` binary under test (`SPROUT_EXE` runs the tests against another build, e.g.
/// an older one, to see which of them it fails).
pub(crate) fn sprout() -> Command {
    match std::env::var_os("SPROUT_EXE") {
        Some(exe) => Command::new(exe),
        None => Command::new(env!("CARGO_BIN_EXE_sprout")),
    }
}

fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// A free UDP address on 127.0.0.1 (`127.0.0.1:PORT`).
pub(crate) fn free_addr() -> String {
    let port = UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    format!("127.0.0.1:{port}")
}

/// `sprout saturator client [--direction DIRECTION] --duration SECS --connect ADDR --name NAME`
/// with stdin closed (`direction` None: the client's default).
pub(crate) fn client(direction: Option<&str>, secs: &str, addr: &str, name: &Path) -> Command {
    let mut c = sprout();
    c.args(["saturator", "client"]);
    if let Some(d) = direction {
        c.args(["--direction", d]);
    }
    c.args(["--duration", secs, "--connect", addr])
        .arg("--name")
        .arg(name)
        .stdin(Stdio::null());
    c
}

/// [`client`] printing JSON lines, quiet, with a window of 8 packets (over loopback about 8
/// packets per 20 ms ack, 5 Mbit/s: gentle on CI).
pub(crate) fn json_client(direction: Option<&str>, secs: &str, addr: &str, name: &Path) -> Command {
    let mut c = client(direction, secs, addr, name);
    c.args(["--json", "--quiet", "--max-window", "8"]);
    c
}

/// Starts `cmd` with its stdout and stderr piped.
pub(crate) fn spawn_piped(cmd: &mut Command) -> std::process::Child {
    cmd.stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Asserts that `out` succeeded (saying what it printed if not) and returns its stdout.
pub(crate) fn succeeded(out: &std::process::Output) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// The last JSON line of `text` whose "type" is "summary".
pub(crate) fn summary_line(text: &str) -> serde_json::Value {
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
pub(crate) fn spawn_server(addr: &str) -> std::process::Child {
    spawn_server_with(addr, &["--once"])
}

/// A temporary folder, a server (as [`spawn_server`]) on a free loopback address, and the
/// path `DIR/NAME` for a client's recording.
pub(crate) fn loopback_server(
    name: &str,
) -> (
    tempfile::TempDir,
    String,
    std::process::Child,
    std::path::PathBuf,
) {
    let dir = tempfile::tempdir().unwrap();
    let addr = free_addr();
    let server = spawn_server(&addr);
    let name = dir.path().join(name);
    (dir, addr, server, name)
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
/// server's port from another address: three malformed ones and three well-formed ones of
/// another session (a hello among them, answered with a challenge only). The recording
/// completes; they are counted as foreign in the server's summary and not in the recording
/// (strays 0, malformed 0), and nothing else moves (no loss, no duplicates, no reordering).
#[test]
fn stray_and_malformed_datagrams_are_counted_and_ignored() {
    let (_dir, addr, mut server, name) = loopback_server("loop");
    let client = spawn_piped(&mut json_client(Some("up"), "3", &addr, &name));
    std::thread::sleep(Duration::from_millis(1000));
    let stray = UdpSocket::bind("127.0.0.1:0").unwrap();
    let mut buf = Vec::new();
    // Malformed: not ours at all, too short, a bad version.
    stray.send_to(b"GET / HTTP/1.0\r\n\r\n", &addr).unwrap();
    stray.send_to(b"SPSA", &addr).unwrap();
    encode(&Message::Data(data_header(1, 0, 0)), 1472, &mut buf);
    let mut bad_version = buf.clone();
    bad_version[4] = 99;
    stray.send_to(&bad_version, &addr).unwrap();
    // Well-formed, another session: two data packets and a hello (answered with a challenge).
    stray.send_to(&buf, &addr).unwrap();
    stray.send_to(&buf, &addr).unwrap();
    stray
        .send_to(&hello_bytes(2, Load::Both, None), &addr)
        .unwrap();
    stray
        .set_read_timeout(Some(Duration::from_secs(2)))
        .unwrap();
    let mut reply = [0u8; 2048];
    let (n, _) = stray
        .recv_from(&mut reply)
        .expect("an answer to the stray hello");
    assert!(
        matches!(
            decode(&reply[..n]),
            Ok(Message::Challenge { session: 2, .. })
        ),
        "the server challenges the hello"
    );
    let stdout = succeeded(&client.wait_with_output().unwrap());
    let s = summary_line(&stdout);
    let up = &s["up"];
    assert!(up["packets"].as_u64().unwrap() > 100, "{up}");
    assert_eq!(up["strays"], 0, "{up}");
    assert_eq!(up["malformed"], 0, "{up}");
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
    assert_eq!(v["foreign"], 6, "{v}");
    assert_eq!(v["up"]["strays"], 0, "{v}");
}

pub(crate) fn with(p: &Path, suffix: &str) -> std::path::PathBuf {
    let mut s = p.as_os_str().to_owned();
    s.push(suffix);
    s.into()
}

pub(crate) fn server_wait(server: &mut std::process::Child) -> String {
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
    let out = json_client(Some("both"), "3", &addr, &name)
        .args(["--mtu", "1280"])
        .output()
        .unwrap();
    let s = summary_line(&succeeded(&out));
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
    let mut client = spawn_piped(client(Some("up"), "1", &addr, &name).args([
        "--json",
        "--quiet",
        "--max-window",
        "4",
        "--fetch-timeout",
        "30",
    ]));
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
    let s = summary_line(&succeeded(&out));
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

// ---------------------------------------------------------------------------------------------
// Hostile and broken peers (issue 22): a test-driven client speaks the protocol itself.
// ---------------------------------------------------------------------------------------------

/// The UDP payload of the test's data packets, bytes.
const PAYLOAD: u32 = 1472;

/// A data packet header of the uplink.
fn data_header(session: u64, seq: u64, sent_us: u64) -> DataHeader {
    DataHeader {
        session,
        dir: Direction::Up,
        seq,
        sent_us,
        window: 8,
        rtt_ms: 0,
        probe: false,
        ack: None,
    }
}

/// A hello of `session` for `mode` over the data path, padded as the client pads it.
pub(crate) fn hello_bytes(session: u64, mode: Load, cookie: Option<[u8; 16]>) -> Vec<u8> {
    let mut buf = Vec::new();
    encode(
        &Message::Hello(Hello {
            session,
            mode,
            payload_bytes: PAYLOAD,
            low_rtt_ms: 750,
            high_rtt_ms: 3000,
            max_window: 8,
            feedback_path: false,
            uses_feedback: false,
            name: "hostile".into(),
            cookie,
        }),
        PAYLOAD as usize,
        &mut buf,
    );
    buf
}

/// `sprout saturator server` on `addr` with `extra` flags (JSON lines, quiet), given 300 ms
/// to bind.
pub(crate) fn spawn_server_with(addr: &str, extra: &[&str]) -> std::process::Child {
    let server = spawn_piped(
        sprout()
            .args(["saturator", "server", "--json", "--quiet"])
            .args(["--listen", addr])
            .args(extra)
            .stdin(Stdio::null()),
    );
    std::thread::sleep(Duration::from_millis(300));
    server
}

/// Kills a server (SIGKILL) and returns what it printed.
pub(crate) fn kill_and_read(server: &mut std::process::Child) -> String {
    let _ = server.kill();
    server_wait(server)
}

/// Stops `server` as an operator would (SIGTERM: it ends any recording, printing its summary)
/// and returns its stdout. Unlike [`kill_and_read`], a summary the server was about to print
/// when the client left is not lost.
pub(crate) fn stop_and_read(server: &mut std::process::Child) -> String {
    let _ = Command::new("kill")
        .args(["-TERM", &server.id().to_string()])
        .status();
    server_wait(server)
}

/// Every JSON line of `text` whose "type" is "summary".
pub(crate) fn summary_lines(text: &str) -> Vec<serde_json::Value> {
    text.lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["type"] == "summary")
        .collect()
}

/// Says hello from `sock` to `server` as a client does, sends back the challenge's cookie and
/// waits for the HELLO-ACK (at most 2 s).
pub(crate) fn prove(sock: &UdpSocket, server: &str, session: u64, mode: Load) {
    sock.set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let mut cookie = None;
    let deadline = Instant::now() + Duration::from_secs(2);
    let mut buf = [0u8; 2048];
    while Instant::now() < deadline {
        sock.send_to(&hello_bytes(session, mode, cookie), server)
            .unwrap();
        while let Ok((n, _)) = sock.recv_from(&mut buf) {
            match decode(&buf[..n]) {
                Ok(Message::Challenge { cookie: c, .. }) => cookie = Some(c),
                Ok(Message::HelloAck { session: s, .. }) if s == session => return,
                _ => {}
            }
            if cookie.is_some() {
                break;
            }
        }
    }
    panic!("the server never acknowledged the hello");
}

/// Bytes (and datagrams) that reach `sock` within `within`.
pub(crate) fn bytes_received(sock: &UdpSocket, within: Duration) -> (usize, usize) {
    sock.set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    let (mut bytes, mut n) = (0, 0);
    let mut buf = vec![0u8; 65_536];
    let end = Instant::now() + within;
    while Instant::now() < end {
        if let Ok((len, _)) = sock.recv_from(&mut buf) {
            bytes += len;
            n += 1;
        }
    }
    (bytes, n)
}

/// Spoofed hellos: a socket that never answers stands for the victim whose address an
/// attacker writes into its hellos (the server cannot tell them apart). Whatever the hellos
/// ask for (both directions, a bogus cookie, a small unpadded hello, the old version), within
/// 10 s the server sends that address at most 3x the bytes it received from it (in fact one
/// 32-byte challenge per padded hello), and no recording starts.
#[test]
fn a_spoofed_hello_is_not_amplified() {
    let addr = free_addr();
    let mut server = spawn_server_with(&addr, &["--once"]);
    let victim = UdpSocket::bind("127.0.0.1:0").unwrap();
    let mut sent = 0usize;
    let mut send = |b: &[u8]| {
        victim.send_to(b, &addr).unwrap();
        sent += b.len();
    };
    send(&hello_bytes(0x5f00f, Load::Both, None));
    send(&hello_bytes(0x5f00f, Load::Down, Some([7; 16])));
    // Unpadded (a 63-byte hello, as before the cookie exchange): ignored.
    let mut small = hello_bytes(0x5f010, Load::Down, None);
    small.truncate(63);
    send(&small);
    let mut old = hello_bytes(0x5f011, Load::Down, None);
    old[4] = 1;
    send(&old);
    let (bytes, datagrams) = bytes_received(&victim, Duration::from_secs(10));
    eprintln!("sent {sent} bytes in 4 hellos, received {bytes} bytes in {datagrams} datagrams");
    assert!(bytes <= 3 * sent, "{bytes} bytes for {sent}");
    assert_eq!(
        datagrams, 2,
        "one challenge per padded hello of this version"
    );
    assert!(
        server.try_wait().unwrap().is_none(),
        "no recording started (--once would have ended the server)"
    );
    let out = kill_and_read(&mut server);
    assert!(summary_lines(&out).is_empty(), "{out}");
}

/// A recording of the downlink by a real client while an attacker who knows its session id
/// (sniffed) sends forged acks from its own address, opening the window as wide as it can
/// (a huge and a plausible highest sequence number, both paths' flags), FINs and DONEs: the
/// attacker gets nothing at all, the server counts them as foreign without letting them near
/// the sender, and the recording goes on to its end without a gap.
#[test]
fn forged_acks_from_another_address_change_nothing() {
    let (_dir, addr, mut server, name) = loopback_server("victim");
    let mut client =
        spawn_piped(client(Some("down"), "4", &addr, &name).args(["--max-window", "8"]));
    let session = session_of(&mut client);
    let attacker = UdpSocket::bind("127.0.0.1:0").unwrap();
    let mut buf = Vec::new();
    let mut forged = 0;
    for i in 0..200u64 {
        let info = AckInfo {
            highest_seq: if i % 2 == 0 { u64::MAX / 2 } else { 10 + i },
            echo_sent_us: 1,
            ack_delay_us: 0,
            received: 1 << 40,
            lost: 0,
            queue_delay_us: 0,
        };
        let ack = Message::Ack {
            session,
            dir: Direction::Down,
            feedback_path: i % 3 == 0,
            info: Some(info),
        };
        encode(&ack, 0, &mut buf);
        attacker.send_to(&buf, &addr).unwrap();
        forged += 1;
        if i % 50 == 0 {
            let fb = i % 100 == 0;
            encode(
                &Message::Fin {
                    session,
                    feedback_path: fb,
                },
                0,
                &mut buf,
            );
            attacker.send_to(&buf, &addr).unwrap();
            encode(&Message::Done { session }, 0, &mut buf);
            attacker.send_to(&buf, &addr).unwrap();
            forged += 2;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let (bytes, _) = bytes_received(&attacker, Duration::from_secs(2));
    assert_eq!(bytes, 0, "nothing goes to the attacker");
    let out = client.wait_with_output().unwrap();
    assert_ok(&out);
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(with(&name, ".json")).unwrap()).unwrap();
    let down = &summary["down"];
    assert!(down["packets"].as_u64().unwrap() > 500, "{down}");
    assert!(down["longest_gap_ms"].as_u64().unwrap() < 500, "{down}");
    assert!(down["duration_s"].as_f64().unwrap() > 3.5, "{down}");
    let v = summary_line(&server_wait(&mut server));
    assert_eq!(v["ended"], "fin", "not the forged FIN: {v}");
    assert_eq!(v["delivered"], true, "{v}");
    assert!(v["foreign"].as_u64().unwrap() >= forged, "{v}");
    assert_eq!(v["down_sender"]["bogus_acks"], 0, "{v}");
}

/// The session id a text-mode client announces on its first line.
fn session_of(client: &mut std::process::Child) -> u64 {
    let stdout = client.stdout.take().unwrap();
    let mut lines = BufReader::new(stdout).lines();
    let first = lines.next().unwrap().unwrap();
    // Keep draining the client's output so that it never blocks on a full pipe.
    std::thread::spawn(move || lines.for_each(drop));
    let at = first.find("session ").expect(&first) + "session ".len();
    u64::from_str_radix(&first[at..at + 16], 16).expect(&first)
}

/// A finished recording kept for its client (which has not said DONE): a result request
/// from another address gets nothing, while the same request from the proven address gets
/// its chunks (at most 64 per request, whatever it asks for).
#[test]
fn a_result_request_from_elsewhere_gets_nothing() {
    let addr = free_addr();
    let mut server = spawn_server_with(&addr, &["--once"]);
    let client = UdpSocket::bind("127.0.0.1:0").unwrap();
    let session = 0x7e57_0001;
    prove(&client, &addr, session, Load::Up);
    let mut buf = Vec::new();
    // 2000 uplink packets over about a second, then FIN until the FIN-ACK.
    for seq in 0..2000u64 {
        encode(
            &Message::Data(data_header(session, seq, seq)),
            PAYLOAD as usize,
            &mut buf,
        );
        client.send_to(&buf, &addr).unwrap();
        if seq % 100 == 0 {
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    encode(
        &Message::Fin {
            session,
            feedback_path: false,
        },
        0,
        &mut buf,
    );
    client.send_to(&buf, &addr).unwrap();
    let mut reply = [0u8; 2048];
    let meta = loop {
        let (n, _) = client.recv_from(&mut reply).expect("a FIN-ACK");
        if let Ok(Message::FinAck(m)) = decode(&reply[..n]) {
            break m;
        }
    };
    assert!(meta.chunks > 1, "{meta:?}");
    let request = |buf: &mut Vec<u8>| {
        encode(
            &Message::ResultRequest {
                session,
                first: 0,
                count: u32::MAX,
            },
            0,
            buf,
        )
    };
    let stranger = UdpSocket::bind("127.0.0.1:0").unwrap();
    request(&mut buf);
    for _ in 0..20 {
        stranger.send_to(&buf, &addr).unwrap();
    }
    let (bytes, _) = bytes_received(&stranger, Duration::from_secs(2));
    assert_eq!(bytes, 0, "nothing for an address that never proved itself");
    client.send_to(&buf, &addr).unwrap();
    let (_, chunks) = bytes_received(&client, Duration::from_secs(1));
    assert!(chunks > 0, "the proven address gets its chunks");
    assert!(chunks <= 64, "bounded per request: {chunks}");
    encode(&Message::Done { session }, 0, &mut buf);
    client.send_to(&buf, &addr).unwrap();
    let v = summary_line(&server_wait(&mut server));
    assert_eq!(v["delivered"], true, "{v}");
    assert!(v["foreign"].as_u64().unwrap() >= 20, "{v}");
}

/// Two recordings under one name on a server keeping copies (`--out`): the second one does
/// not replace the first one's files; it is written under the name and its session id, and
/// the server's summary says which files it wrote.
#[test]
fn reusing_a_recording_name_keeps_the_older_file() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("server");
    let addr = free_addr();
    let out_s = out.to_str().unwrap().to_string();
    let mut server = spawn_server_with(&addr, &["--out", &out_s]);
    let record = |secs: &str| {
        let o = json_client(Some("up"), secs, &addr, &dir.path().join("commute"))
            .output()
            .unwrap();
        assert_ok(&o);
    };
    record("2");
    let first = std::fs::read(out.join("commute.up")).unwrap();
    let first_json = std::fs::read(out.join("commute.up.json")).unwrap();
    assert!(!first.is_empty());
    record("1");
    let text = stop_and_read(&mut server);
    assert!(
        std::fs::read(out.join("commute.up")).unwrap() == first,
        "the first recording's trace was replaced"
    );
    assert!(
        std::fs::read(out.join("commute.up.json")).unwrap() == first_json,
        "the first recording's summary was replaced"
    );
    let summaries = summary_lines(&text);
    assert_eq!(summaries.len(), 2, "{text}");
    let second = &summaries[1];
    let files: Vec<&str> = second["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap())
        .collect();
    let session = second["session"].as_str().unwrap();
    let expected = out.join(format!("commute-{session}.up"));
    assert_eq!(files[0], expected.to_str().unwrap(), "{second}");
    let lines = std::fs::read_to_string(&expected).unwrap().lines().count() as u64;
    assert_eq!(lines, second["up"]["packets"].as_u64().unwrap());
}

/// 1000 datagrams of garbage and of other sessions while the server is idle: the next
/// recording's summary counts none of them.
#[test]
fn garbage_while_idle_is_not_charged_to_the_next_recording() {
    let (_dir, addr, mut server, name) = loopback_server("clean");
    let junk = UdpSocket::bind("127.0.0.1:0").unwrap();
    let mut buf = Vec::new();
    encode(
        &Message::Data(data_header(99, 0, 0)),
        PAYLOAD as usize,
        &mut buf,
    );
    for i in 0..1000 {
        if i % 2 == 0 {
            junk.send_to(b"not a saturator datagram", &addr).unwrap();
        } else {
            junk.send_to(&buf, &addr).unwrap();
        }
    }
    std::thread::sleep(Duration::from_millis(300));
    let o = json_client(Some("up"), "2", &addr, &name).output().unwrap();
    assert_ok(&o);
    let v = summary_line(&server_wait(&mut server));
    let up = &v["up"];
    assert!(up["packets"].as_u64().unwrap() > 100, "{up}");
    assert_eq!(
        (&up["strays"], &up["malformed"]),
        (&0.into(), &0.into()),
        "{up}"
    );
    assert_eq!(v["foreign"], 0, "{v}");
}

/// `sprout saturator client` killed (SIGKILL) in the middle of a recording of the downlink:
/// its partial recording is on disk (`NAME.down.partial`, lines of ms) and there is no final
/// trace, cut or not; the server is free again within its idle timeout (5 s), and its
/// recording of the session's uplink ends where the client was last heard ("idle"), without
/// a trailing outage.
#[test]
fn a_killed_client_leaves_its_partial_recording_and_frees_the_server() {
    let (_dir, addr, mut server, name) = loopback_server("killed");
    let mut client = json_client(Some("both"), "30", &addr, &name)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(3500));
    client.kill().unwrap();
    let killed = Instant::now();
    let _ = client.wait();
    let partial = std::fs::read_to_string(with(&name, ".down.partial"))
        .expect("the partial recording is on disk");
    let ms: Vec<u32> = partial.lines().map(|l| l.parse().unwrap()).collect();
    assert!(ms.len() > 100, "{} lines", ms.len());
    assert!(ms.iter().any(|&t| t >= 2000), "recorded as it went");
    assert!(!with(&name, ".down").exists(), "no final trace");
    assert!(!with(&name, ".json").exists(), "no summary");
    // The server ends the session within its idle timeout of the kill.
    let deadline = killed + Duration::from_secs(8);
    while server.try_wait().unwrap().is_none() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let freed = killed.elapsed();
    let v = summary_line(&server_wait(&mut server));
    assert!(freed < Duration::from_secs(7), "{freed:?}");
    assert_eq!(v["ended"], "idle", "{v}");
    let silent = v["silent_since_s"].as_f64().unwrap();
    let up = &v["up"];
    assert!((3.0..4.5).contains(&silent), "{v}");
    assert!(
        (up["duration_s"].as_f64().unwrap() - silent).abs() < 0.01,
        "cut where the client was last heard: {v}"
    );
    assert_eq!(up["outages"], 0, "no trailing outage: {v}");
    assert!(up["longest_gap_ms"].as_u64().unwrap() < 500, "{v}");
}

/// Over one path (no --feedback) the client records the downlink alone by default and says
/// why; `--direction both` over one path is done, with a loud warning.
#[test]
fn the_default_over_one_path_records_the_downlink_only() {
    let (dir, addr, mut server, name) = loopback_server("default");
    let o = json_client(None, "2", &addr, &name).output().unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    assert!(stderr.contains("recording the downlink only"), "{stderr}");
    let s = summary_line(&String::from_utf8_lossy(&o.stdout));
    assert_eq!(s["mode"], "down", "{s}");
    assert!(s["up"].is_null() && s["up_sender"].is_null(), "{s}");
    assert!(s["down"]["packets"].as_u64().unwrap() > 100, "{s}");
    assert!(!with(&name, ".up").exists());
    let v = summary_line(&server_wait(&mut server));
    assert_eq!(v["mode"], "down", "{v}");
    // Asked for explicitly, both directions over one path: recorded, with a warning.
    let mut server = spawn_server(&addr);
    let o = json_client(Some("both"), "1", &addr, &dir.path().join("both"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    assert!(
        stderr.contains("WARNING: saturating both directions over one path"),
        "{stderr}"
    );
    assert_eq!(
        summary_line(&String::from_utf8_lossy(&o.stdout))["mode"],
        "both"
    );
    server_wait(&mut server);
}

/// The server dies (SIGKILL) during a recording: the client exits non-zero and says the
/// server did not acknowledge the end, and keeps what it recorded, under the incomplete
/// names (`saturator_endings` checks the rest).
#[test]
fn a_client_whose_server_died_fails() {
    let (_dir, addr, mut server, name) = loopback_server("orphan");
    let client = spawn_piped(&mut json_client(Some("down"), "3", &addr, &name));
    std::thread::sleep(Duration::from_millis(1500));
    kill_and_read(&mut server);
    let started = Instant::now();
    let o = client.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{stderr}");
    assert!(
        stderr.contains("did not acknowledge the end of the recording"),
        "{stderr}"
    );
    assert!(started.elapsed() < Duration::from_secs(15));
    let down = std::fs::read_to_string(with(&name, ".incomplete.down")).unwrap();
    assert!(down.lines().count() > 100);
    assert!(!with(&name, ".down.partial").exists());
}
