//! The link model against the kernel's own qdiscs (issue 38, "checked against something real"):
//! kernel Cubic through `sprout link` and the same kernel Cubic through network namespaces
//! shaped by `tc` at the same constant rate, with the same queue. Throughput within 5%; the
//! queueing delay's median and 95th percentile within 20% or 5 ms, whichever is larger.
//!
//! The two paths:
//! - **The emulator**: `sprout link --delay 0` (the jitter case: `--delay 20`) over a
//!   constant-rate trace both ways, the sender (`sprout tcp client --cc cubic`) in the mobile
//!   namespace, the receiver (this test, a socket with an 8 MB receive buffer so the window
//!   never limits) outside. Queueing delay per packet from the uplink's mm-link log.
//! - **The kernel**: three namespaces, sender -> router -> here. The router forwards, and its
//!   egress toward here has `tbf` at the rate with the case's qdisc below it. The bottleneck is
//!   in another namespace than the sender, as the emulator is: a qdisc on the sender's own
//!   device keeps part of the window in the sender (TCP small queues), which made the kernel's
//!   Cubic lose at a lower queue every ~2 s instead of ~4-6 s in a first try. Queueing delay:
//!   the sender's `ss -ti` smoothed RTT every 50 ms minus its `minrtt`.
//!
//! Rates: a mahimahi trace opportunity carries 1500 bytes of IP packet; `tbf` counts the
//! Ethernet frame (1514 bytes for a full segment). The kernel's rate is the trace's times
//! 1514/1500 (10 Mbit/s: 10093 kbit), so both carry the same IP bytes per second. The sender's
//! device has `gso_max_segs 1`, so the queues see MTU-sized packets as the emulator does; a
//! 100-packet `bfifo` is 100 x 1514 = 151,400 bytes. `tbf`'s bucket is 20 frames, so timer
//! lateness on a busy machine loses no rate (the emulator, too, serves late opportunities).
//!
//! Kernels without a qdisc a case needs (this repository's CI kernel has tbf, htb and the fifos
//! but not pie, fq_codel, codel or netem) skip that case where a person sees it: a line on the
//! terminal and one in the skip log that `tools/test` lists last (`sprout_link::testdata::skip`);
//! `SPROUT_REQUIRE_KERNEL_QDISCS=1` makes such a case fail instead.
//!
//! Every case runs in a guest booted from a Debian kernel of /boot that has the qdiscs as
//! modules (`tools/kernel-vm`, docs/real-networks.md, "The kernel's qdiscs in a VM"); `sprout`
//! is found at `$SPROUT_TEST_BIN`, else at the path cargo built it to, which `--file` copies:
//!
//! ```text
//! tools/kernel-vm --file target/release/sprout --env SPROUT_REQUIRE_KERNEL_QDISCS=1 \
//!     -- target/release/deps/cli_suite-HASH kernel_qdiscs --test-threads 1
//! ```

use std::io::Read;
use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use sprout_link::testdata;

/// Seconds each sender sends.
const SEND_S: u32 = 10;
/// The measured window, seconds after the receiver accepted the connection (slow start and
/// the end left out).
const WINDOW_S: (f64, f64) = (3.0, 9.5);
/// A full-size segment's Ethernet frame as `tbf` and `bfifo` count it (bytes).
const FRAME_BYTES: u64 = 1514;
/// A mahimahi opportunity: the IP bytes it carries.
const OPPORTUNITY_BYTES: u64 = 1500;
/// Throughput tolerance (fraction of the kernel's).
const RATE_TOLERANCE: f64 = 0.05;
/// Queueing-delay tolerance: this fraction of the kernel's, or [`DELAY_FLOOR_MS`] if larger.
const DELAY_TOLERANCE: f64 = 0.20;
/// Queueing-delay tolerance floor (ms).
const DELAY_FLOOR_MS: f64 = 5.0;
/// The environment variable that turns a missing kernel qdisc into a failure.
const REQUIRE_ENV: &str = "SPROUT_REQUIRE_KERNEL_QDISCS";

/// Where a case's queueing delay comes from on the emulator's side.
#[derive(Clone, Copy, PartialEq)]
enum EmuDelay {
    /// Per packet, from the uplink's mm-link log (the issue's measure).
    Log,
    /// The sender's `ss` RTT minus its minimum, as on the kernel's side: for the jitter case,
    /// where the RTT holds the jitter above its minimum and the log's queue time does not.
    Ss,
}

/// One comparison.
struct Case {
    /// Shown in messages.
    name: &'static str,
    /// The link's rate (Mbit/s of IP packets).
    mbit: u32,
    /// `sprout link` options besides the traces and logs.
    emu: &'static [&'static str],
    /// `tc` argument lists run in the router on the data direction's device `{dev}`, after
    /// `tc qdisc add dev {dev} root handle 1: tbf ...`; `{limit}` is 100 frames in bytes.
    kernel: &'static [&'static str],
    /// `tc` argument lists on the router's device toward the sender (the ACKs' direction).
    kernel_acks: &'static [&'static str],
    /// Where the emulator's queueing delay comes from.
    emu_delay: EmuDelay,
    /// ECN: the sender asks for it (`net.ipv4.tcp_ecn=1`), and the check is marks without
    /// drops instead of rates and delays.
    ecn: bool,
}

const BFIFO: &[&str] = &["qdisc add dev {dev} parent 1:1 handle 10: bfifo limit {limit}"];
const PIE: &[&str] = &["qdisc add dev {dev} parent 1:1 handle 10: pie"];
const FQ_CODEL: &[&str] = &["qdisc add dev {dev} parent 1:1 handle 10: fq_codel"];
const GE: &[&str] =
    &["qdisc add dev {dev} parent 1:1 handle 10: netem limit 100 loss gemodel 0.5% 40%"];
const JITTER: &[&str] = &[
    "qdisc add dev {dev} parent 1:1 handle 10: netem delay 20ms 5ms limit 100000",
    "qdisc add dev {dev} parent 10:1 handle 20: bfifo limit {limit}",
];
const ACK_DELAY: &[&str] = &["qdisc add dev {dev} root netem delay 20ms limit 100000"];

fn case(mbit: u32, name: &'static str) -> Case {
    let (emu, kernel, kernel_acks, emu_delay, ecn): (&[&str], _, &[&str], _, _) = match name {
        "bfifo" => (&["--buffer", "100pkt"], BFIFO, &[], EmuDelay::Log, false),
        // Linux's pie: 1000 packets, 15 ms target and update; PIE drops (no ECN).
        "pie" => (
            &["--queue", "pie", "--buffer", "1000pkt"],
            PIE,
            &[],
            EmuDelay::Log,
            false,
        ),
        // Linux's fq_codel defaults are the emulator's (10,240 packets, 32 MiB, 1024 flows).
        "fq_codel" => (
            &["--queue", "fq-codel"],
            FQ_CODEL,
            &[],
            EmuDelay::Log,
            false,
        ),
        // netem's `loss gemodel p r`: 1-h = 1, 1-k = 0; 1.2% loss in bursts of 2.5 on average.
        "gemodel" => (
            &["--buffer", "100pkt", "--uplink-gemodel", "0.5%,40%"],
            GE,
            &[],
            EmuDelay::Log,
            false,
        ),
        // netem reorders with jitter; 20 ms both ways, +/- 5 ms (uniform) on the data's way.
        "jitter" => (
            &[
                "--buffer",
                "100pkt",
                "--delay",
                "20",
                "--uplink-jitter",
                "5ms,reorder",
            ],
            JITTER,
            ACK_DELAY,
            EmuDelay::Ss,
            false,
        ),
        // The emulator marks only with `--ecn` (Linux's fq_codel marks by default).
        "ecn" => (
            &["--queue", "fq-codel", "--ecn"],
            FQ_CODEL,
            &[],
            EmuDelay::Log,
            true,
        ),
        other => panic!("no case {other}"),
    };
    Case {
        name,
        mbit,
        emu,
        kernel,
        kernel_acks,
        emu_delay,
        ecn,
    }
}

#[test]
fn bfifo_100_packets_at_10_mbit() {
    compare(&case(10, "bfifo"));
}

#[test]
fn bfifo_100_packets_at_100_mbit() {
    compare(&case(100, "bfifo"));
}

#[test]
fn pie_at_10_mbit() {
    compare(&case(10, "pie"));
}

#[test]
fn pie_at_100_mbit() {
    compare(&case(100, "pie"));
}

#[test]
fn fq_codel_at_10_mbit() {
    compare(&case(10, "fq_codel"));
}

#[test]
fn fq_codel_at_100_mbit() {
    compare(&case(100, "fq_codel"));
}

#[test]
fn gilbert_elliott_loss_at_10_mbit() {
    compare(&case(10, "gemodel"));
}

#[test]
fn gilbert_elliott_loss_at_100_mbit() {
    compare(&case(100, "gemodel"));
}

#[test]
fn jitter_20_ms_5_ms_at_10_mbit() {
    compare(&case(10, "jitter"));
}

#[test]
fn jitter_20_ms_5_ms_at_100_mbit() {
    compare(&case(100, "jitter"));
}

#[test]
fn ecn_through_fq_codel_marks_instead_of_dropping() {
    compare(&case(10, "ecn"));
}

/// Runs one case: the kernel's path first (a missing qdisc skips the case before the emulator
/// runs), then the emulator's; compares; cleans up on every way out (the guards' `Drop`).
fn compare(case: &Case) {
    if !crate::common::is_root() || !Path::new("/dev/net/tun").exists() {
        testdata::skip("needs root and /dev/net/tun (network namespaces, TUN devices)");
        return;
    }
    let Some(_one_at_a_time) = crate::link_cli::may_emulate() else {
        return;
    };
    let started = Instant::now();
    let path = KernelPath::new();
    if let Err(missing) = path.shape(case) {
        let reason = missing.reason();
        if std::env::var(REQUIRE_ENV).as_deref() == Ok("1") {
            panic!("{REQUIRE_ENV}=1 but {reason}");
        }
        testdata::skip(&format!("{}: {reason}", case.name));
        return;
    }
    let kernel = path.run(case);
    drop(path);
    let emu = run_emulator(case);
    eprintln!(
        "{} at {} Mbit/s ({:.0} s): kernel {kernel}; emulator {emu}",
        case.name,
        case.mbit,
        started.elapsed().as_secs_f64()
    );
    if case.ecn {
        check_ecn(&kernel, &emu);
    } else {
        check_agreement(case, &kernel, &emu);
    }
}

/// Asserts the issue's tolerances.
fn check_agreement(case: &Case, kernel: &Run, emu: &Run) {
    let (k, e) = (kernel.mbit, emu.mbit);
    assert!(
        (e - k).abs() <= RATE_TOLERANCE * k,
        "{} at {} Mbit/s: throughput {e:.2} Mbit/s through the emulator, {k:.2} through the \
         kernel: more than {:.0}% apart",
        case.name,
        case.mbit,
        RATE_TOLERANCE * 100.0
    );
    let emu_delays = match case.emu_delay {
        EmuDelay::Log => &emu.log_queue_ms,
        EmuDelay::Ss => &emu.ss_queue_ms,
    };
    for (what, p) in [("median", 0.5), ("p95", 0.95)] {
        let k = percentile(&kernel.ss_queue_ms, p);
        let e = percentile(emu_delays, p);
        let allowed = (DELAY_TOLERANCE * k).max(DELAY_FLOOR_MS);
        assert!(
            (e - k).abs() <= allowed,
            "{} at {} Mbit/s: queueing delay {what} {e:.1} ms through the emulator, {k:.1} ms \
             through the kernel: more than {allowed:.1} ms apart",
            case.name,
            case.mbit
        );
    }
}

/// ECN: CE marks reach the sender, and no packet is dropped below the buffer limit, through
/// both.
fn check_ecn(kernel: &Run, emu: &Run) {
    for (who, run) in [("kernel", kernel), ("emulator", emu)] {
        assert!(
            run.delivered_ce > 0,
            "no CE mark reached the sender through the {who}"
        );
        assert_eq!(run.drops, 0, "drops through the {who}'s fq_codel");
    }
}

/// What one path measured.
#[derive(Default)]
struct Run {
    /// Goodput in the window (Mbit/s).
    mbit: f64,
    /// The sender's smoothed RTT minus its minimum, sampled in the window (ms, sorted).
    ss_queue_ms: Vec<f64>,
    /// Per-packet time in the emulator's queue in the window (ms, sorted; emulator only).
    log_queue_ms: Vec<f64>,
    /// CE marks the sender was told of (`TcpExtTCPDeliveredCE`).
    delivered_ce: u64,
    /// Packets the queue dropped (the qdisc's count, or the log's drops).
    drops: u64,
}

impl std::fmt::Display for Run {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{:.2} Mbit/s, queueing (ss) median {:.1} p95 {:.1} ms",
            self.mbit,
            percentile(&self.ss_queue_ms, 0.5),
            percentile(&self.ss_queue_ms, 0.95)
        )?;
        if !self.log_queue_ms.is_empty() {
            write!(
                f,
                ", (log) median {:.1} p95 {:.1} ms",
                percentile(&self.log_queue_ms, 0.5),
                percentile(&self.log_queue_ms, 0.95)
            )?;
        }
        write!(f, ", {} drops, {} CE", self.drops, self.delivered_ce)
    }
}

/// The `p` quantile of sorted `v` (nearest rank); NaN when empty.
fn percentile(v: &[f64], p: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v[((v.len() - 1) as f64 * p).round() as usize]
}

/// The sender, in bash, run in the sender's namespace: `sprout tcp client` for [`SEND_S`]
/// seconds, and meanwhile `ss -ti` of its connection every 50 ms, each sample after a
/// `t EPOCH` line (the pause is `read -t` on a pipe no one writes, not a `sleep` process: one
/// program started per sample, not two, which matters in an emulated guest, `tools/kernel-vm`); then its `TcpExtTCPDeliveredCE`. `DST` (default `$SPROUT_LINK_OUTSIDE`),
/// `PORT`, `SPROUT` and `ECN` come from the environment.
const SENDER: &str = r#"
DST=${DST:-$SPROUT_LINK_OUTSIDE}
if [ "$ECN" = 1 ]; then sysctl -qw net.ipv4.tcp_ecn=1 || exit 9; fi
"$SPROUT" tcp client --connect "$DST:$PORT" --direction up --cc cubic --duration "$SECONDS_TO_SEND" >/dev/null &
c=$!
exec {idle}<> <(:)
while kill -0 $c 2>/dev/null; do
  echo "t $EPOCHREALTIME"
  ss -tinH dst "$DST" dport = :"$PORT"
  read -t 0.05 -u $idle
done
wait $c
echo "client $?"
nstat -asz TcpExtTCPDeliveredCE | awk '$1 == "TcpExtTCPDeliveredCE" { print "delivered_ce", $2 }'
"#;

/// Environment of [`SENDER`].
fn sender_env(cmd: &mut Command, port: u16, ecn: bool) {
    cmd.env("PORT", port.to_string())
        .env("SPROUT", crate::common::sprout_bin())
        .env("ECN", if ecn { "1" } else { "0" })
        .env("SECONDS_TO_SEND", SEND_S.to_string());
}

/// Parses [`SENDER`]'s output: the queueing-delay samples in the window (ms, sorted) and the
/// CE count. Fails the test unless the client ended well.
fn parse_sender(stdout: &str, accepted_unix_s: f64) -> (Vec<f64>, u64) {
    assert!(
        stdout.lines().any(|l| l == "client 0"),
        "the sender failed:\n{stdout}"
    );
    let mut t = 0.0;
    let mut samples = Vec::new();
    let mut min_rtt = f64::INFINITY;
    let mut ce = 0;
    for line in stdout.lines() {
        if let Some(v) = line.strip_prefix("t ") {
            t = v.trim().parse::<f64>().unwrap_or(0.0) - accepted_unix_s;
        } else if let Some(v) = line.strip_prefix("delivered_ce ") {
            ce = v.trim().parse().unwrap_or(0);
        }
        let field = |name: &str| {
            line.split_whitespace()
                .find_map(|w| w.strip_prefix(name))
                .and_then(|v| v.split('/').next()?.parse::<f64>().ok())
        };
        if let Some(m) = field("minrtt:") {
            min_rtt = min_rtt.min(m);
        }
        if let Some(rtt) = field("rtt:") {
            if (WINDOW_S.0..=WINDOW_S.1).contains(&t) {
                samples.push(rtt);
            }
        }
    }
    let mut queue: Vec<f64> = samples.iter().map(|r| (r - min_rtt).max(0.0)).collect();
    queue.sort_by(f64::total_cmp);
    assert!(
        queue.len() >= 20,
        "few RTT samples ({}):\n{stdout}",
        queue.len()
    );
    (queue, ce)
}

/// The receiver: a listener with an 8 MB receive buffer (so the window never limits; the
/// accepted socket inherits it), on all addresses.
fn listen() -> (TcpListener, u16) {
    use socket2::{Domain, Socket, Type};
    let s = Socket::new(Domain::IPV4, Type::STREAM, None).unwrap();
    s.set_reuse_address(true).unwrap();
    s.set_recv_buffer_size(8 << 20).unwrap();
    s.bind(&SocketAddr::from((Ipv4Addr::UNSPECIFIED, 0)).into())
        .unwrap();
    s.listen(4).unwrap();
    let l: TcpListener = s.into();
    let port = l.local_addr().unwrap().port();
    (l, port)
}

/// What the receiver saw: when it accepted (Unix time, s) and its goodput in the window.
struct Received {
    accepted_unix_s: f64,
    mbit: f64,
}

/// Accepts one connection (within 20 s) and reads it to its end (or 3 s of silence, or 30 s),
/// counting bytes.
fn receive(listener: TcpListener) -> Received {
    listener.set_nonblocking(true).unwrap();
    let give_up = Instant::now() + Duration::from_secs(20);
    let mut stream = loop {
        match listener.accept() {
            Ok((s, _)) => break s,
            Err(_) if Instant::now() < give_up => std::thread::sleep(Duration::from_millis(5)),
            Err(e) => panic!("no connection to the receiver: {e}"),
        }
    };
    let accepted = Instant::now();
    let accepted_unix_s = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    stream.set_nonblocking(false).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(3)))
        .unwrap();
    let mut buf = vec![0u8; 1 << 16];
    let (mut total, mut first, mut last) = (0u64, None, None);
    while accepted.elapsed() < Duration::from_secs(30) {
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => total += n as u64,
        }
        let t = accepted.elapsed().as_secs_f64();
        if t >= WINDOW_S.0 && first.is_none() {
            first = Some((t, total));
        }
        if t <= WINDOW_S.1 {
            last = Some((t, total));
        }
    }
    let (Some((t0, b0)), Some((t1, b1))) = (first, last) else {
        panic!("the transfer ended before the window ({total} bytes)");
    };
    assert!(t1 - t0 > 3.0, "the window is {:.1} s", t1 - t0);
    Received {
        accepted_unix_s,
        mbit: (b1 - b0) as f64 * 8.0 / (t1 - t0) / 1e6,
    }
}

/// Waits at most `limit` for `child`, killing it then; its output (read while it runs: the
/// sender writes more than a pipe holds).
fn wait_within(mut child: Child, limit: Duration, what: &str) -> Output {
    fn drain(pipe: Option<impl Read + Send + 'static>) -> std::thread::JoinHandle<Vec<u8>> {
        std::thread::spawn(move || {
            let mut v = Vec::new();
            if let Some(mut p) = pipe {
                let _ = p.read_to_end(&mut v);
            }
            v
        })
    }
    let (stdout, stderr) = (drain(child.stdout.take()), drain(child.stderr.take()));
    let end = Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > end {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what} did not end within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Output {
        status,
        stdout: stdout.join().unwrap(),
        stderr: stderr.join().unwrap(),
    }
}

/// Runs `cmd`; its stdout, or the failure's stderr.
fn run(cmd: &mut Command) -> Result<String, String> {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .map_err(|e| e.to_string())?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(format!(
            "{:?}: {}",
            cmd,
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// `ip ARGS...`, which must succeed.
fn ip(args: &str) {
    run(Command::new("ip").args(args.split_whitespace())).unwrap();
}

/// The emulator's path: its measurements.
fn run_emulator(case: &Case) -> Run {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join(format!("c{}", case.mbit));
    let t = sprout_link::synthetic::constant_rate_trace("c", f64::from(case.mbit), 10.0).unwrap();
    let text: String = t
        .opportunities_ms()
        .iter()
        .map(|ms| format!("{ms}\n"))
        .collect();
    std::fs::write(&trace, text).unwrap();
    let log = dir.path().join("up.log");
    let (listener, port) = listen();
    let receiver = std::thread::spawn(move || receive(listener));
    let mut cmd = crate::common::sprout();
    cmd.arg("link");
    // No propagation delay unless the case gives one (`--delay` may be given once).
    if !case.emu.contains(&"--delay") {
        cmd.args(["--delay", "0"]);
    }
    cmd.args(case.emu)
        .arg("--uplink")
        .arg(&trace)
        .arg("--downlink")
        .arg(&trace)
        .arg("--uplink-log")
        .arg(&log)
        .args(["--", "bash", "-c", SENDER])
        .env_remove("DST")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    sender_env(&mut cmd, port, case.ecn);
    let out = wait_within(
        cmd.spawn().unwrap(),
        Duration::from_secs(u64::from(SEND_S) + 30),
        "sprout link",
    );
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stdout}\n{stderr}");
    // The emulator's own summary (capacity used, lateness): what to read when rates differ.
    for line in stderr.lines().filter(|l| l.starts_with("uplink ")) {
        eprintln!(
            "{} at {} Mbit/s, the emulator: {line}",
            case.name, case.mbit
        );
    }
    let got = receiver.join().unwrap();
    let (ss_queue_ms, delivered_ce) = parse_sender(&stdout, got.accepted_unix_s);
    let mm = sprout_link::MmLog::load(&log).unwrap();
    // The connection's first packet starts the window's clock.
    let start = mm.arrivals.first().map_or(0, |a| a.ms) as f64;
    let window = |ms: u64| (WINDOW_S.0..=WINDOW_S.1).contains(&((ms as f64 - start) / 1000.0));
    let mut log_queue_ms: Vec<f64> = mm
        .departures
        .iter()
        .filter(|d| window(d.ms))
        .map(|d| d.delay_ms as f64)
        .collect();
    log_queue_ms.sort_by(f64::total_cmp);
    Run {
        mbit: got.mbit,
        ss_queue_ms,
        log_queue_ms,
        delivered_ce,
        drops: mm.drops.iter().map(|d| d.packets).sum(),
    }
}

/// A qdisc kind the kernel does not have.
struct Missing {
    /// `tc`'s name of it.
    kind: String,
}

impl Missing {
    /// "this kernel has no sch_pie (CONFIG_NET_SCH_PIE is not set)", from the kernel's
    /// configuration when it is readable.
    fn reason(&self) -> String {
        let (module, option) = match self.kind.as_str() {
            "bfifo" | "pfifo" => ("sch_fifo".to_string(), "CONFIG_NET_SCH_FIFO".to_string()),
            k => (
                format!("sch_{k}"),
                format!("CONFIG_NET_SCH_{}", k.to_uppercase()),
            ),
        };
        let config = run(Command::new("zcat").arg("/proc/config.gz")).unwrap_or_default();
        let why = if config.contains(&format!("# {option} is not set")) {
            format!("{option} is not set")
        } else {
            format!("tc: \"Specified qdisc kind is unknown\"; {option} off or the module absent")
        };
        format!("this kernel has no {module} ({why})")
    }
}

/// The kernel's path: namespaces `kc<pid>-<n>s` (sender) and `kc<pid>-<n>r` (router) and a
/// veth pair into this namespace; removed on drop (their processes killed first), which also
/// removes the device and route here.
struct KernelPath {
    sender_ns: String,
    router_ns: String,
    /// The router's device toward here (the data's bottleneck).
    data_dev: String,
    /// The router's device toward the sender (the ACKs').
    ack_dev: String,
    /// The receiver's address (here).
    receiver: Ipv4Addr,
}

impl KernelPath {
    fn new() -> KernelPath {
        use std::sync::atomic::{AtomicU32, Ordering};
        static N: AtomicU32 = AtomicU32::new(0);
        let tag = format!(
            "kc{:x}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        );
        let used = sprout_os::interfaces::ipv4_addresses_in_use();
        let third = (0..=255u8)
            .map(|i| (std::process::id() as u8).wrapping_add(i))
            .find(|&x| !used.iter().any(|a| a.octets()[..3] == [10, 77, x]))
            .expect("a free 10.77.x.0/24");
        let net = |last: u8| Ipv4Addr::new(10, 77, third, last);
        let path = KernelPath {
            sender_ns: format!("{tag}s"),
            router_ns: format!("{tag}r"),
            data_dev: format!("{tag}d"),
            ack_dev: format!("{tag}a"),
            receiver: net(6),
        };
        let (s, r, here) = (&path.sender_ns, &path.router_ns, format!("{tag}h"));
        let sdev = format!("{tag}x");
        ip(&format!("netns add {s}"));
        ip(&format!("netns add {r}"));
        ip(&format!(
            "link add {sdev} netns {s} type veth peer name {} netns {r}",
            path.ack_dev
        ));
        ip(&format!(
            "link add {} netns {r} type veth peer name {here}",
            path.data_dev
        ));
        for (ns, dev, addr) in [
            (s, &sdev, net(2)),
            (r, &path.ack_dev, net(1)),
            (r, &path.data_dev, net(5)),
        ] {
            ip(&format!("-n {ns} addr add {addr}/30 dev {dev}"));
            ip(&format!("-n {ns} link set {dev} up"));
        }
        ip(&format!("addr add {}/30 dev {here}", path.receiver));
        ip(&format!("link set {here} up"));
        // One segment per packet from the sender, so every queue sees MTU-sized packets.
        ip(&format!("-n {s} link set {sdev} gso_max_segs 1"));
        ip(&format!("-n {s} link set lo up"));
        ip(&format!("-n {s} route add default via {}", net(1)));
        ip(&format!(
            "route add {}/30 via {} dev {here}",
            net(0),
            net(5)
        ));
        run(Command::new("ip").args([
            "netns",
            "exec",
            r,
            "sysctl",
            "-qw",
            "net.ipv4.ip_forward=1",
        ]))
        .unwrap();
        path
    }

    /// `tc ARGS` in the router, `{dev}` and `{limit}` filled in; a kind the kernel lacks is
    /// [`Missing`], any other failure fails the test.
    fn tc(&self, args: &str, dev: &str) -> Result<(), Missing> {
        let args = args
            .replace("{dev}", dev)
            .replace("{limit}", &(100 * FRAME_BYTES).to_string());
        let words: Vec<&str> = args.split_whitespace().collect();
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", &self.router_ns, "tc"])
            .args(&words);
        match run(&mut cmd) {
            Ok(_) => Ok(()),
            Err(e) if e.contains("kind is unknown") => {
                // The kind follows `handle H` or, without a handle, `root`.
                let at = match words.iter().position(|w| *w == "handle") {
                    Some(h) => Some(h + 2),
                    None => words.iter().position(|w| *w == "root").map(|r| r + 1),
                };
                let kind = at.and_then(|i| words.get(i)).copied().unwrap_or("?");
                Err(Missing {
                    kind: kind.to_string(),
                })
            }
            Err(e) => panic!("{e}"),
        }
    }

    /// Installs `tbf` at the case's rate (in Ethernet frames: see the module's comment) and the
    /// case's qdiscs.
    fn shape(&self, case: &Case) -> Result<(), Missing> {
        let kbit = u64::from(case.mbit) * 1000 * FRAME_BYTES / OPPORTUNITY_BYTES;
        let tbf = format!(
            "qdisc add dev {{dev}} root handle 1: tbf rate {kbit}kbit burst {} limit {}",
            20 * FRAME_BYTES,
            100 * FRAME_BYTES
        );
        self.tc(&tbf, &self.data_dev)?;
        for args in case.kernel {
            self.tc(args, &self.data_dev)?;
        }
        for args in case.kernel_acks {
            self.tc(args, &self.ack_dev)?;
        }
        Ok(())
    }

    /// Runs the sender through the router; its measurements.
    fn run(&self, case: &Case) -> Run {
        let (listener, port) = listen();
        let receiver = std::thread::spawn(move || receive(listener));
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", &self.sender_ns, "bash", "-c", SENDER])
            .env("DST", self.receiver.to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        sender_env(&mut cmd, port, case.ecn);
        let out = wait_within(
            cmd.spawn().unwrap(),
            Duration::from_secs(u64::from(SEND_S) + 30),
            "the kernel's sender",
        );
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let got = receiver.join().unwrap();
        let (ss_queue_ms, delivered_ce) = parse_sender(&stdout, got.accepted_unix_s);
        let stats = run(Command::new("ip").args([
            "netns",
            "exec",
            &self.router_ns,
            "tc",
            "-s",
            "qdisc",
            "show",
            "dev",
            &self.data_dev,
        ]))
        .unwrap();
        eprintln!(
            "{} at {} Mbit/s, the kernel's qdiscs:\n{stats}",
            case.name, case.mbit
        );
        Run {
            mbit: got.mbit,
            ss_queue_ms,
            log_queue_ms: Vec::new(),
            delivered_ce,
            drops: dropped(&stats),
        }
    }
}

/// The first "(dropped N," of `tc -s qdisc show` (the root's count, which holds its
/// children's).
fn dropped(stats: &str) -> u64 {
    stats
        .split("(dropped ")
        .nth(1)
        .and_then(|rest| rest.split(',').next()?.trim().parse().ok())
        .unwrap_or(0)
}

impl Drop for KernelPath {
    fn drop(&mut self) {
        for ns in [&self.sender_ns, &self.router_ns] {
            if let Ok(pids) = run(Command::new("ip").args(["netns", "pids", ns])) {
                for pid in pids.split_whitespace() {
                    let _ = Command::new("kill").args(["-KILL", pid]).status();
                }
            }
            let _ = Command::new("ip").args(["netns", "del", ns]).status();
        }
    }
}
