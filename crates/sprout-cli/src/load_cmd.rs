//! `sprout bench load`: one `sprout server` holding many concurrent sessions on loopback.
//!
//! The server runs as its own process (so its CPU time and memory are its own, read from
//! `/proc`); each client is a `sprout client` process running a paced stream in both
//! directions. While the sessions run, a flood of bogus handshake initiations (valid header,
//! random body) hits the server's port. At the end every session's delivered bytes are checked
//! against what its sender released, in both directions (from the clients' summaries and the
//! server's per-session summaries), and the server's CPU and memory per session are reported.
//! Exits non-zero when a session was lost or delivered less than `--tolerance` of what was
//! released.

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::net::{SocketAddr, UdpSocket};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde::Serialize;
use serde_json::Value;
use sprout_net::secure::PrivateKey;

/// `sprout bench load` arguments.
#[derive(clap::Args)]
pub struct LoadArgs {
    /// Concurrent client sessions.
    #[arg(long, default_value_t = 200)]
    sessions: usize,
    /// Paced application rate of each session, each way, kbit/s.
    #[arg(long, default_value_t = 200.0)]
    rate: f64,
    /// Seconds of transfer of each session.
    #[arg(long, default_value_t = 60.0)]
    duration: f64,
    /// Bogus handshake initiations sent to the server while the sessions run.
    #[arg(long, default_value_t = 100_000)]
    flood: u64,
    /// Seconds over which the clients start (spread evenly).
    #[arg(long, default_value_t = 5.0)]
    ramp: f64,
    /// Least share of the released bytes each session must deliver, each way.
    #[arg(long, default_value_t = 0.98)]
    tolerance: f64,
    /// One JSON object (the report) instead of text.
    #[arg(long)]
    json: bool,
}

/// One session's figures.
#[derive(Clone, Debug, Serialize)]
struct SessionRow {
    /// The client's address (the bench chooses each client's port).
    session: String,
    /// How the client's session ended ("bye", "duration", "silence", or "failed").
    end: String,
    /// DATA messages the server sent / the client received (downlink).
    down_released: u64,
    down_delivered: u64,
    /// DATA messages the client sent / the server received (uplink).
    up_released: u64,
    up_delivered: u64,
}

/// The report.
#[derive(Debug, Serialize)]
struct LoadReport {
    sessions: usize,
    rate_kbps: f64,
    duration_s: f64,
    /// Sessions whose client ended with the server's BYE and delivered within tolerance.
    completed: usize,
    /// Sessions that failed, fell silent, or delivered less than the tolerance.
    lost: usize,
    /// Lowest delivered / released share over the sessions, downlink and uplink.
    min_down_share: f64,
    min_up_share: f64,
    /// Bogus handshakes sent.
    flood_sent: u64,
    /// Server CPU time over the run (user + system), s.
    server_cpu_s: f64,
    /// Server CPU per session: ms of CPU per second of run per session.
    server_cpu_ms_per_s_per_session: f64,
    /// Server resident memory before the clients and at its peak, KiB.
    server_rss_idle_kib: u64,
    server_rss_peak_kib: u64,
    /// (peak - idle) / sessions, KiB.
    server_rss_per_session_kib: f64,
    /// The server's security-layer drop counters, as it reported them (if it did).
    server_drops: Value,
    /// Wall time, s.
    wall_s: f64,
    rows: Vec<SessionRow>,
}

/// CPU seconds (user + system) of a process, from /proc/PID/stat.
fn cpu_seconds(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name (which may hold spaces) start after the last ')'.
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let utime: f64 = f.get(11)?.parse().ok()?;
    let stime: f64 = f.get(12)?.parse().ok()?;
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    Some((utime + stime) / hz.max(1.0))
}

/// A memory figure of a process in KiB (`VmRSS`, `VmHWM`) from /proc/PID/status.
fn memory_kib(pid: u32, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find(|l| l.starts_with(field))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// A free UDP port on 127.0.0.1.
fn free_port() -> Result<u16> {
    let s = UdpSocket::bind("127.0.0.1:0").context("finding a free UDP port")?;
    Ok(s.local_addr()?.port())
}

/// Reads a child's stdout lines into a shared list on a thread.
fn collect_lines(child: &mut Child) -> Arc<Mutex<Vec<String>>> {
    let lines = Arc::new(Mutex::new(Vec::new()));
    if let Some(out) = child.stdout.take() {
        let lines = lines.clone();
        thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(|l| l.ok()) {
                lines.lock().unwrap_or_else(|e| e.into_inner()).push(line);
            }
        });
    }
    lines
}

/// The JSON objects of type `kind` among `lines`.
fn objects(lines: &[String], kind: &str) -> Vec<Value> {
    lines
        .iter()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v.get("type").and_then(Value::as_str) == Some(kind))
        .collect()
}

fn u64_of(v: &Value, key: &str) -> u64 {
    v.get(key).and_then(Value::as_u64).unwrap_or(0)
}

/// Sends `count` bogus handshake initiations to `to`, evenly over `seconds`.
fn flood(to: SocketAddr, count: u64, seconds: f64) -> Result<u64> {
    let sock = UdpSocket::bind("127.0.0.1:0").context("binding the flood's socket")?;
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut buf = vec![0u8; 8 + 32 + 48 + 32 + 16];
    let start = Instant::now();
    let mut sent = 0;
    for i in 0..count {
        // Magic, version 2, type 1 (initiation), reserved; the rest random (xorshift: this
        // only needs to look random to the server, not to resist analysis).
        buf[..4].copy_from_slice(&[0x53, 2, 1, 0]);
        for b in buf[4..].iter_mut() {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            *b = state as u8;
        }
        if sock.send_to(&buf, to).is_ok() {
            sent += 1;
        }
        let due = Duration::from_secs_f64(seconds * (i + 1) as f64 / count.max(1) as f64);
        if let Some(wait) = due.checked_sub(start.elapsed()) {
            thread::sleep(wait);
        }
    }
    Ok(sent)
}

/// Runs `sprout bench load`.
pub fn run(a: LoadArgs) -> Result<()> {
    if a.sessions == 0 || a.duration <= 0.0 || a.rate <= 0.0 {
        bail!("--sessions, --duration and --rate must be positive");
    }
    let exe = std::env::current_exe().context("finding the sprout binary")?;
    let dir = tempfile::tempdir().context("creating a temporary folder for the keys")?;
    let key_file = dir.path().join("server.key");
    let key = PrivateKey::generate();
    key.write_file(&key_file)?;
    let public = key.public_key().to_base64();
    let port = free_port()?;
    let listen = format!("127.0.0.1:{port}");
    let started = Instant::now();

    let mut server = Command::new(&exe)
        .args([
            "server",
            "--json",
            "--listen",
            &listen,
            "--allow-any-client",
        ])
        .arg("--key")
        .arg(&key_file)
        .args(["--max-sessions", &(a.sessions + 16).to_string()])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .context("starting `sprout server`")?;
    let server_pid = server.id();
    let server_lines = collect_lines(&mut server);
    thread::sleep(Duration::from_millis(500));
    if let Some(s) = server.try_wait()? {
        bail!("`sprout server` exited at once ({s})");
    }
    let rss_idle = memory_kib(server_pid, "VmRSS:").unwrap_or(0);
    let cpu_before = cpu_seconds(server_pid).unwrap_or(0.0);

    let result = run_clients(&a, &exe, &listen, &public, port, server_pid);
    let cpu_after = cpu_seconds(server_pid).unwrap_or(cpu_before);
    let rss_peak = memory_kib(server_pid, "VmHWM:").unwrap_or(0);
    // Let the server print the summaries of sessions that just ended, then stop it.
    thread::sleep(Duration::from_secs(4));
    // SAFETY: kill with a valid pid and signal has no memory-safety preconditions.
    unsafe {
        libc::kill(server_pid as i32, libc::SIGINT);
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    while server.try_wait()?.is_none() && Instant::now() < deadline {
        thread::sleep(Duration::from_millis(50));
    }
    let _ = server.kill();
    let _ = server.wait();
    let (clients, flood_sent, run_s) = result?;

    let lines = server_lines
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone();
    // The server's summaries name each session's client by its address, which the bench chose.
    let summaries = objects(&lines, "summary");
    let server_summaries: HashMap<String, &Value> = summaries
        .iter()
        .filter_map(|v| Some((v.get("peer")?.as_str()?.to_string(), v)))
        .collect();
    // Each summary carries the server-wide drop counters at its end; the last is the latest.
    let server_drops = summaries
        .iter()
        .filter_map(|v| v.get("drops"))
        .max_by_key(|d| {
            d.as_object()
                .map_or(0, |o| o.values().filter_map(Value::as_u64).sum::<u64>())
        })
        .cloned()
        .unwrap_or(Value::Null);

    let mut rows = Vec::new();
    for (addr, c) in &clients {
        let session = addr.to_string();
        let s = server_summaries.get(&session);
        let c = c.as_ref().unwrap_or(&Value::Null);
        rows.push(SessionRow {
            end: c
                .get("end")
                .and_then(Value::as_str)
                .unwrap_or("failed")
                .to_string(),
            down_released: u64_of(c, "peer_data_sent"),
            down_delivered: u64_of(c, "data_received"),
            up_released: s.map_or(0, |s| u64_of(s, "peer_data_sent")),
            up_delivered: s.map_or(0, |s| u64_of(s, "data_received")),
            session,
        });
    }
    let share = |d: u64, r: u64| if r == 0 { 0.0 } else { d as f64 / r as f64 };
    let ok = |r: &SessionRow| {
        r.end == "bye"
            && share(r.down_delivered, r.down_released) >= a.tolerance
            && share(r.up_delivered, r.up_released) >= a.tolerance
    };
    let completed = rows.iter().filter(|r| ok(r)).count();
    let min_of = |f: &dyn Fn(&SessionRow) -> f64| rows.iter().map(f).fold(f64::INFINITY, f64::min);
    let report = LoadReport {
        sessions: a.sessions,
        rate_kbps: a.rate,
        duration_s: a.duration,
        completed,
        lost: a.sessions - completed,
        min_down_share: min_of(&|r| share(r.down_delivered, r.down_released)),
        min_up_share: min_of(&|r| share(r.up_delivered, r.up_released)),
        flood_sent,
        server_cpu_s: cpu_after - cpu_before,
        server_cpu_ms_per_s_per_session: (cpu_after - cpu_before) * 1000.0
            / run_s.max(1e-3)
            / a.sessions as f64,
        server_rss_idle_kib: rss_idle,
        server_rss_peak_kib: rss_peak,
        server_rss_per_session_kib: rss_peak.saturating_sub(rss_idle) as f64 / a.sessions as f64,
        server_drops,
        wall_s: started.elapsed().as_secs_f64(),
        rows,
    };
    print_report(&report, a.json)?;
    if report.lost > 0 {
        bail!(
            "{} of {} sessions were lost or delivered less than {:.0}% of what was released",
            report.lost,
            report.sessions,
            a.tolerance * 100.0
        );
    }
    Ok(())
}

/// Starts the clients (and the flood), waits for them, and returns their summaries, the
/// bogus handshakes sent, and the seconds from the first client's start to the last's end.
fn run_clients(
    a: &LoadArgs,
    exe: &Path,
    listen: &str,
    public: &str,
    port: u16,
    server_pid: u32,
) -> Result<(Vec<(SocketAddr, Option<Value>)>, u64, f64)> {
    let start = Instant::now();
    let mut clients: Vec<(SocketAddr, Child, Arc<Mutex<Vec<String>>>)> = Vec::new();
    let gap = Duration::from_secs_f64(a.ramp / a.sessions as f64);
    let rate = format!("{}", a.rate);
    let duration = format!("{}", a.duration);
    for i in 0..a.sessions {
        let local: SocketAddr = ([127, 0, 0, 1], free_port()?).into();
        let mut child = Command::new(exe)
            .args([
                "client",
                "--json",
                "--direction",
                "both",
                "--connect",
                listen,
            ])
            .args(["--bind", &local.to_string()])
            .args([
                "--server-key",
                public,
                "--rate",
                &rate,
                "--duration",
                &duration,
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .with_context(|| format!("starting client {i}"))?;
        let lines = collect_lines(&mut child);
        clients.push((local, child, lines));
        thread::sleep(gap);
    }
    // The flood runs over the middle of the transfer.
    let to: SocketAddr = ([127, 0, 0, 1], port).into();
    let (count, secs) = (a.flood, (a.duration / 2.0).max(1.0));
    let flood_thread = thread::spawn(move || flood(to, count, secs));
    let limit = start + Duration::from_secs_f64(a.ramp + a.duration + 30.0);
    let mut last_print = Instant::now();
    loop {
        let running = clients
            .iter_mut()
            .map(|(_, c, _)| matches!(c.try_wait(), Ok(None)))
            .filter(|&running| running)
            .count();
        if running == 0 || Instant::now() >= limit {
            break;
        }
        if !a.json && last_print.elapsed() >= Duration::from_secs(5) {
            last_print = Instant::now();
            eprintln!(
                "{:>5.0} s: {running} clients running; server CPU {:.1} s, RSS {} KiB",
                start.elapsed().as_secs_f64(),
                cpu_seconds(server_pid).unwrap_or(0.0),
                memory_kib(server_pid, "VmRSS:").unwrap_or(0)
            );
        }
        thread::sleep(Duration::from_millis(200));
    }
    let run_s = start.elapsed().as_secs_f64();
    let flood_sent = flood_thread
        .join()
        .map_err(|_| anyhow::anyhow!("the flood thread panicked"))??;
    let mut summaries = Vec::new();
    for (addr, mut child, lines) in clients {
        let _ = child.kill();
        let _ = child.wait();
        // Give the reader thread a moment to take the last line.
        thread::sleep(Duration::from_millis(5));
        let lines = lines.lock().unwrap_or_else(|e| e.into_inner()).clone();
        summaries.push((addr, objects(&lines, "summary").pop()));
    }
    Ok((summaries, flood_sent, run_s))
}

fn print_report(r: &LoadReport, json: bool) -> Result<()> {
    if json {
        println!("{}", serde_json::to_string_pretty(r)?);
        return Ok(());
    }
    println!(
        "sprout bench load: {} sessions, paced {} kbit/s each way, {} s, {} bogus handshakes",
        r.sessions, r.rate_kbps, r.duration_s, r.flood_sent
    );
    println!(
        "  sessions completed {} of {} (lost {}); lowest delivered/released: down {:.4}, up {:.4}",
        r.completed, r.sessions, r.lost, r.min_down_share, r.min_up_share
    );
    println!(
        "  server CPU {:.2} s ({:.3} ms per second per session); RSS idle {} KiB, peak {} KiB ({:.1} KiB per session)",
        r.server_cpu_s,
        r.server_cpu_ms_per_s_per_session,
        r.server_rss_idle_kib,
        r.server_rss_peak_kib,
        r.server_rss_per_session_kib
    );
    println!("  server drops: {}", r.server_drops);
    println!("  wall {:.1} s", r.wall_s);
    Ok(())
}
