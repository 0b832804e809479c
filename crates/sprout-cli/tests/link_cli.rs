//! `sprout link` as a user runs it: end to end through the emulated link, clean-up on every
//! way of ending (signal, crashing command, SIGKILL of the emulator), clear errors.

use std::io::Read;
use std::net::UdpSocket;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use sprout_emu::leftovers::{interface_names, process_gone, remains, wait_until};

fn sprout() -> Command {
    Command::new(env!("CARGO_BIN_EXE_sprout"))
}

fn uid_is_root() -> bool {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|v| v.split_whitespace().nth(1))
        == Some("0")
}

/// Whether the emulator can run here (root and a TUN driver); says why not. When it can, the
/// guard makes the tests that start an emulator run one at a time: they measure real time on a
/// 2-core machine and must not compete with each other (`kernel_qdiscs` takes it too).
pub(crate) fn may_emulate() -> Option<MutexGuard<'static, ()>> {
    static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());
    if !uid_is_root() {
        eprintln!("skipped: not root");
        return None;
    }
    if !Path::new("/dev/net/tun").exists() {
        eprintln!("skipped: no /dev/net/tun");
        return None;
    }
    Some(ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner()))
}

/// A folder with a 12 Mbit/s constant trace `c12` (one opportunity per ms), readable by all.
fn trace_dir() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c12");
    let text: String = (1..=1000).map(|i| format!("{i}\n")).collect();
    std::fs::write(&path, text).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    (dir, path)
}

fn link_cmd(trace: &Path) -> Command {
    let mut c = sprout();
    c.arg("link")
        .arg("--uplink")
        .arg(trace)
        .arg("--downlink")
        .arg(trace);
    c
}

/// Starts `sprout link` over `trace` both ways running `command`, its stderr piped.
fn spawn_link(trace: &Path, command: &[&str]) -> Child {
    link_cmd(trace)
        .arg("--")
        .args(command)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// The outside TUN device name prefix of the emulator with process id `pid`.
fn iface_prefix(pid: u32) -> String {
    format!("spo{pid:x}-")
}

/// Live children of `pid`.
fn children_of(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(p) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if let Ok(stat) = std::fs::read_to_string(format!("/proc/{p}/stat")) {
            if let Some((_, rest)) = stat.rsplit_once(')') {
                let f: Vec<&str> = rest.split_whitespace().collect();
                if f.len() > 1 && f[1] == pid.to_string() && f[0] != "Z" {
                    out.push(p);
                }
            }
        }
    }
    out
}

/// Waits (at most 10 s) until the emulator `child` has set up its device and started its
/// command; returns the command's pid(s).
fn wait_ready(child: &Child) -> Vec<u32> {
    let prefix = iface_prefix(child.id());
    let mut kids = Vec::new();
    assert!(
        wait_until(Duration::from_secs(10), || {
            kids = children_of(child.id());
            interface_names().iter().any(|l| l.starts_with(&prefix)) && !kids.is_empty()
        }),
        "emulator did not come up"
    );
    kids
}

/// Reads the mobile and outside addresses from the emulator's stderr banner.
fn addresses(stderr: &str) -> Vec<String> {
    let line = stderr
        .lines()
        .find(|l| l.starts_with("sprout link: mobile "))
        .unwrap_or_else(|| panic!("no banner in: {stderr}"));
    let words: Vec<&str> = line.split_whitespace().collect();
    let mobile = words[3].to_string();
    let outside = words[words.iter().position(|w| *w == "outside").unwrap() + 1]
        .trim_end_matches(';')
        .to_string();
    vec![mobile, outside]
}

/// Asserts that nothing of emulator `pid` is left: no device, address, route or namespace.
fn assert_clean(pid: u32, addrs: &[String]) {
    let prefix = iface_prefix(pid);
    let mut left = Vec::new();
    assert!(
        wait_until(Duration::from_secs(3), || {
            left = remains(&prefix, addrs);
            left.is_empty()
        }),
        "left behind: {left:?}"
    );
}

/// Waits at most `limit` for `child` to exit, then kills it; returns its output.
fn output_within(mut child: Child, limit: Duration) -> Output {
    if !wait_until(limit, || child.try_wait().unwrap().is_some()) {
        let _ = child.kill();
        panic!("sprout link did not exit within {limit:?}");
    }
    let mut stderr = String::new();
    if let Some(mut e) = child.stderr.take() {
        e.read_to_string(&mut stderr).unwrap();
    }
    let mut stdout = Vec::new();
    if let Some(mut o) = child.stdout.take() {
        o.read_to_end(&mut stdout).unwrap();
    }
    Output {
        status: child.wait().unwrap(),
        stdout,
        stderr: stderr.into_bytes(),
    }
}

#[test]
fn sigint_stops_the_command_and_removes_everything() {
    let Some(_one_at_a_time) = may_emulate() else {
        return;
    };
    let (_dir, trace) = trace_dir();
    let child = spawn_link(&trace, &["sleep", "30"]);
    let pid = child.id();
    let kids = wait_ready(&child);
    Command::new("kill")
        .args(["-INT", &pid.to_string()])
        .status()
        .unwrap();
    let out = output_within(child, Duration::from_secs(10));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("uplink"), "no summary: {stderr}");
    for k in kids {
        assert!(process_gone(k), "command {k} survived");
    }
    assert_clean(pid, &addresses(&stderr));
}

#[test]
fn crashing_command_gives_its_status_and_removes_everything() {
    let Some(_one_at_a_time) = may_emulate() else {
        return;
    };
    let (_dir, trace) = trace_dir();
    let child = spawn_link(&trace, &["sh", "-c", "kill -SEGV $$"]);
    let pid = child.id();
    let out = output_within(child, Duration::from_secs(10));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(128 + 11), "{stderr}");
    assert!(stderr.contains("SIGSEGV"), "{stderr}");
    assert_clean(pid, &addresses(&stderr));
}

#[test]
fn sigkill_of_the_emulator_leaves_nothing_and_kills_the_command() {
    let Some(_one_at_a_time) = may_emulate() else {
        return;
    };
    let (_dir, trace) = trace_dir();
    let mut child = spawn_link(&trace, &["sleep", "30"]);
    let pid = child.id();
    let kids = wait_ready(&child);
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    for k in kids {
        assert!(
            wait_until(Duration::from_secs(3), || process_gone(k)),
            "command {k} survived the emulator"
        );
    }
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert_clean(pid, &addresses(&stderr));
}

#[test]
fn non_root_gets_a_clear_error() {
    if !uid_is_root() {
        // Already not root: the error itself is what we check.
        let (_dir, trace) = trace_dir();
        let out = link_cmd(&trace).args(["--", "true"]).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("needs root (CAP_NET_ADMIN)"), "{stderr}");
        return;
    }
    let (_dir, trace) = trace_dir();
    let out = Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            env!("CARGO_BIN_EXE_sprout"),
            "link",
            "--uplink",
        ])
        .arg(&trace)
        .arg("--downlink")
        .arg(&trace)
        .args(["--", "true"])
        .output();
    let Ok(out) = out else {
        eprintln!("skipped: setpriv is not available");
        return;
    };
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(
            "sprout link needs root (CAP_NET_ADMIN) to create a network namespace and TUN devices"
        ),
        "{stderr}"
    );
}

#[test]
fn bad_inputs_are_reported_clearly() {
    let (dir, trace) = trace_dir();
    let bad = dir.path().join("bad.up");
    std::fs::write(&bad, "1\nabc\n").unwrap();
    let out = sprout()
        .args(["link", "--uplink"])
        .arg(&bad)
        .arg("--downlink")
        .arg(&trace)
        .args(["--", "true"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("bad.up:2:"), "{stderr}");

    let out = link_cmd(&trace)
        .args(["--uplink-loss", "1.5", "--", "true"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("loss must be a probability between 0 and 1"),
        "{stderr}"
    );

    let out = link_cmd(&trace)
        .args(["--duration", "-1", "--", "true"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--duration"));
}

/// UDP echoes from inside (bash's /dev/udp; the echo server runs in this test, outside) take
/// about twice the one-way delay, and both logs parse.
#[test]
fn end_to_end_round_trips_are_twice_the_delay_and_logs_parse() {
    let Some(_one_at_a_time) = may_emulate() else {
        return;
    };
    let (dir, trace) = trace_dir();
    let server = UdpSocket::bind("0.0.0.0:0").unwrap();
    let port = server.local_addr().unwrap().port();
    server
        .set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stop_echo = stop.clone();
    let echo = std::thread::spawn(move || {
        let mut buf = [0u8; 2048];
        while !stop_echo.load(std::sync::atomic::Ordering::Relaxed) {
            if let Ok((n, from)) = server.recv_from(&mut buf) {
                let _ = server.send_to(&buf[..n], from);
            }
        }
    });
    let up_log = dir.path().join("up.log");
    let down_log = dir.path().join("down.log");
    let script = format!(
        "exec 3<>/dev/udp/$SPROUT_LINK_OUTSIDE/{port}; \
         for i in $(seq 20); do t0=$EPOCHREALTIME; echo p$i >&3; read -t 2 -N 1 -u 3 c; \
         t1=$EPOCHREALTIME; echo \"rtt $t0 $t1 $c\"; sleep 0.05; done"
    );
    let child = link_cmd(&trace)
        .arg("--duration")
        .arg("10")
        .arg("--uplink-log")
        .arg(&up_log)
        .arg("--downlink-log")
        .arg(&down_log)
        .args(["--", "bash", "-c", &script])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = output_within(child, Duration::from_secs(15));
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    echo.join().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let rtts_ms: Vec<f64> = stdout
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() == 4 && f[0] == "rtt" && f[3] == "p").then(|| {
                let t0: f64 = f[1].parse().unwrap();
                let t1: f64 = f[2].parse().unwrap();
                (t1 - t0) * 1000.0
            })
        })
        .collect();
    eprintln!("round trips (ms): {rtts_ms:?}");
    assert_eq!(rtts_ms.len(), 20, "{stdout}\n{stderr}");
    // 2 x 20 ms, plus up to 1 ms of opportunity wait each way, plus bash and the kernel.
    // Scheduling noise on this 2-core VM only adds time, so the fastest echo is the sharp
    // figure: none beats the two propagation delays, and the fastest is within 5 ms of them.
    // The median is only bounded.
    let mut sorted = rtts_ms.clone();
    sorted.sort_by(f64::total_cmp);
    assert!(
        sorted[0] >= 40.0,
        "round trip {} ms beats 2 x 20 ms",
        sorted[0]
    );
    assert!(sorted[0] < 45.0, "fastest round trip {} ms", sorted[0]);
    assert!(sorted[10] < 60.0, "median round trip {} ms", sorted[10]);
    for (path, dir) in [(&up_log, "uplink"), (&down_log, "downlink")] {
        let log = sprout_link::MmLog::load(path).unwrap();
        assert_eq!(log.direction.as_deref(), Some(dir));
        assert_eq!(log.propagation_delay_ms, Some(20));
        assert_eq!(log.departures.len(), 20, "{dir}");
        assert_eq!(log.arrivals.len(), 20, "{dir}");
        assert!(log.opportunities.len() > 500, "{dir}");
        assert!(log.departures.iter().all(|d| d.delay_ms <= 1));
    }
}

/// What the command sends just before it exits still crosses the link (a close, say): the
/// emulator drains its uplink before it stops, here five datagrams still in a 300 ms delay
/// line when the command ends; a command stopped by `--duration` ends the link at once.
#[test]
fn datagrams_sent_just_before_the_command_exits_arrive() {
    let Some(_one_at_a_time) = may_emulate() else {
        return;
    };
    let (_dir, trace) = trace_dir();
    let server = UdpSocket::bind("0.0.0.0:0").unwrap();
    let port = server.local_addr().unwrap().port();
    server
        .set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let script = format!(
        "exec 3<>/dev/udp/$SPROUT_LINK_OUTSIDE/{port}; for i in 1 2 3 4 5; do echo last$i >&3; done"
    );
    let started = std::time::Instant::now();
    let child = link_cmd(&trace)
        .args(["--delay", "300", "--", "bash", "-c", &script])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = output_within(child, Duration::from_secs(10));
    let took = started.elapsed();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut got = Vec::new();
    let mut buf = [0u8; 64];
    while let Ok((n, _)) = server.recv_from(&mut buf) {
        got.push(String::from_utf8_lossy(&buf[..n]).trim().to_string());
    }
    assert_eq!(got, ["last1", "last2", "last3", "last4", "last5"]);
    // The drain waits for the delay line only, not its 1 s bound.
    assert!(took < Duration::from_secs(5), "took {took:?}");
}

/// The shaping options are checked before anything is created (no root needed for that).
#[test]
fn bad_shaping_options_stop_before_the_namespace() {
    let (dir, trace) = trace_dir();
    let missing = dir.path().join("no-such-delays.txt");
    let out = link_cmd(&trace)
        .arg("--delay-trace")
        .arg(&missing)
        .args(["--", "true"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("delay trace: cannot read"), "{stderr}");
    let out = link_cmd(&trace)
        .args(["--codel-interval", "200ms", "--", "true"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("apply to a codel or fq-codel queue"),
        "{stderr}"
    );
}

/// `sprout link --queue fq-codel`: a paced UDP flood from inside at twice the link's rate
/// loads the uplink's queue, and UDP echoes (another 5-tuple, so another flow queue) still take
/// about twice the one-way delay, while the flood's own packets wait long (which a FIFO would
/// make the echoes wait too).
#[test]
fn fq_codel_keeps_echoes_fast_beside_a_flood() {
    let Some(_one_at_a_time) = may_emulate() else {
        return;
    };
    let (dir, trace) = trace_dir();
    let server = UdpSocket::bind("0.0.0.0:0").unwrap();
    let sink = UdpSocket::bind("0.0.0.0:0").unwrap();
    let (port, sink_port) = (
        server.local_addr().unwrap().port(),
        sink.local_addr().unwrap().port(),
    );
    for s in [&server, &sink] {
        s.set_read_timeout(Some(Duration::from_millis(100)))
            .unwrap();
    }
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let threads: Vec<_> = [(server, true), (sink, false)]
        .into_iter()
        .map(|(sock, echo)| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut buf = [0u8; 2048];
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    if let Ok((n, from)) = sock.recv_from(&mut buf) {
                        if echo {
                            let _ = sock.send_to(&buf[..n], from);
                        }
                    }
                }
            })
        })
        .collect();
    // 2000 datagrams of 1400 bytes a second for 6 s: 22 Mbit/s into a 12 Mbit/s link.
    let flood = format!(
        "import os, socket, time\n\
         s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n\
         dst = (os.environ['SPROUT_LINK_OUTSIDE'], {sink_port})\n\
         start = time.monotonic()\n\
         for i in range(12000):\n\
         \x20   wait = start + i / 2000 - time.monotonic()\n\
         \x20   if wait > 0: time.sleep(wait)\n\
         \x20   s.sendto(b'x' * 1400, dst)\n"
    );
    let script = format!(
        "python3 -c \"$FLOOD\" & sleep 2; \
         exec 3<>/dev/udp/$SPROUT_LINK_OUTSIDE/{port}; \
         for i in $(seq 20); do t0=$EPOCHREALTIME; echo p$i >&3; read -t 2 -N 1 -u 3 c; \
         t1=$EPOCHREALTIME; echo \"rtt $t0 $t1 $c\"; sleep 0.1; done; wait"
    );
    let up_log = dir.path().join("up.log");
    let down_log = dir.path().join("down.log");
    let child = link_cmd(&trace)
        .args(["--queue", "fq-codel", "--duration", "12"])
        .arg("--uplink-log")
        .arg(&up_log)
        .arg("--downlink-log")
        .arg(&down_log)
        .env("FLOOD", flood)
        .args(["--", "bash", "-c", &script])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = output_within(child, Duration::from_secs(20));
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for t in threads {
        t.join().unwrap();
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let mut rtts_ms: Vec<f64> = stdout
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() == 4 && f[0] == "rtt" && f[3] == "p").then(|| {
                let t0: f64 = f[1].parse().unwrap();
                let t1: f64 = f[2].parse().unwrap();
                (t1 - t0) * 1000.0
            })
        })
        .collect();
    eprintln!("round trips beside the flood (ms): {rtts_ms:?}");
    assert!(rtts_ms.len() >= 18, "{stdout}\n{stderr}");
    rtts_ms.sort_by(f64::total_cmp);
    let median = rtts_ms[rtts_ms.len() / 2];
    assert!(
        median < 80.0,
        "median round trip {median} ms beside the flood"
    );
    let log = sprout_link::MmLog::load(&up_log).unwrap();
    assert!(
        log.queue.as_deref().unwrap_or("").starts_with("fq_codel ["),
        "{:?}",
        log.queue
    );
    // The flood's packets (1428 bytes on the wire) queued for far longer than the echoes took.
    let flood_delays: Vec<u64> = log
        .departures
        .iter()
        .filter(|d| d.bytes > 1400)
        .map(|d| d.delay_ms)
        .collect();
    let slowest = flood_delays.iter().copied().max().unwrap_or(0);
    assert!(slowest > 500, "the flood waited at most {slowest} ms");
    assert!(!log.drops.is_empty(), "the flood overflowed nothing");
}
