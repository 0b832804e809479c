//! `sprout saturator server|client|check`: the paper's Saturator (§4.1), recording a link's
//! delivery opportunities as mahimahi traces, and its round trips through the emulator.
//!
//! The client runs at the mobile end and connects to the server. Whichever end sends a
//! direction keeps that direction's queue backlogged with MTU-sized UDP packets (1472-byte
//! payloads, 1500-byte IPv4 packets; `--mtu`), a window of packets in flight adjusted so that
//! the measured RTT stays between `--low-rtt-ms` (750) and `--high-rtt-ms` (3000); the other
//! end records when each packet arrives (kernel receive timestamps, `SO_TIMESTAMPNS`, on
//! `CLOCK_MONOTONIC`) and sends feedback: over the same path by default (piggybacked on its
//! own data when it sends some), or over a second path with `--feedback ADDR` (the server's
//! address as reached through that path; the paper used a second phone, so that a backlog of
//! seconds in one direction does not delay the other direction's feedback — record both
//! directions at once with it: through the emulator, recording both directions of
//! Verizon-LTE-short and Verizon-EVDO-driving over one path missed 15-28% of their
//! opportunities, and the summaries' `low_backlog_seconds` rose from 1-2 to 24-46; with a
//! second path the recordings matched the traces, `sprout saturator check --same-path` against
//! `sprout saturator check`). The sans-IO logic is [`sprout_saturator`].
//!
//! Files: the client writes `NAME.down` (its recording of the downlink), `NAME.up` (the
//! server's recording of the uplink, sent back to the client when the recording ends, over the
//! feedback path if there is one) and `NAME.json` (both summaries). With `--out DIR` the server
//! also keeps its own copy, `DIR/<name>.up` and `DIR/<name>.up.json` (the name the client
//! gave, without folders). Each trace has one line per recorded packet: the millisecond of its
//! arrival counted from the start of the recording on the recording side (the client's first
//! hello for `.down`, the server's receipt of the first hello for `.up`), sorted; the summaries
//! give that start on `CLOCK_MONOTONIC` (`start_clock_us`) to line recordings up with other
//! clocks of the same host (the check does, with the emulator's).
//!
//! Both sides print a line per second (rate, RTT, window, losses of each direction) and a
//! summary (`--json`: one JSON object per line). A recording survives loss, reordering,
//! duplicates and outages of any length (the sender keeps probing, 5 packets/s, with its window
//! full); stray or malformed datagrams are counted and ignored. Ctrl-C ends the client's
//! recording early, as if its duration had passed.

use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6, UdpSocket};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use serde::Serialize;
use socket2::{Domain, Protocol, Socket, Type};
use sprout_emu::monotonic_ns;
use sprout_emu::signals::SignalWatcher;
use sprout_saturator::{
    decode, encode, valid_name, Dir, Hello, Message, Mode, Reassembly, Recorder,
    RecorderConfig, ResultMeta, Sender, SenderConfig, SenderStats, Summary,
};
use sprout_lab::saturator_check::{self, CheckOptions};

/// `sprout saturator` arguments.
#[derive(clap::Args)]
pub struct SaturatorArgs {
    #[command(subcommand)]
    command: SaturatorCommand,
}

#[derive(clap::Subcommand)]
enum SaturatorCommand {
    /// Wait for a client and run the recording it asks for (one at a time).
    Server(ServerArgs),
    /// Record a link to a server: NAME.down, NAME.up, NAME.json.
    Client(ClientArgs),
    /// Round trips: record the paper's traces replayed by the emulator (root; real time) and
    /// compare the recordings with them (per-second counts, totals, Sprout in the simulator).
    Check(CheckArgs),
}

#[derive(clap::Args)]
struct ServerArgs {
    /// Address and port to listen on (data and feedback).
    #[arg(long, default_value = "0.0.0.0:9200")]
    listen: SocketAddr,
    /// Also write each recording of the uplink here, as <name>.up and <name>.up.json
    /// [default: only sent back to the client].
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Exit after the first recording.
    #[arg(long)]
    once: bool,
    /// End a recording whose client has been silent this long, s (longer than any outage you
    /// mean to record).
    #[arg(long, default_value_t = 120.0)]
    idle_timeout: f64,
    /// JSON lines instead of text.
    #[arg(long)]
    json: bool,
    /// No per-second lines.
    #[arg(long)]
    quiet: bool,
}

#[derive(clap::Args)]
struct ClientArgs {
    /// The server's address and port (the data path).
    #[arg(long)]
    connect: SocketAddr,
    /// The server's address and port over a second path, for the feedback (acks) of both
    /// directions and the transfer of the uplink's recording [default: the data path].
    #[arg(long, value_name = "ADDR")]
    feedback: Option<SocketAddr>,
    /// Directions to saturate and record: up, down or both at once.
    #[arg(long, default_value = "both")]
    direction: Mode,
    /// Seconds of recording [default: until Ctrl-C].
    #[arg(long)]
    duration: Option<f64>,
    /// Output prefix: writes NAME.down, NAME.up and NAME.json.
    #[arg(long, default_value = "saturator")]
    name: PathBuf,
    /// Low RTT mark of both senders, ms: the window grows while the RTT is below it.
    #[arg(long, default_value_t = 750)]
    low_rtt_ms: u32,
    /// High RTT mark of both senders, ms: the window shrinks while the RTT is above it.
    #[arg(long, default_value_t = 3000)]
    high_rtt_ms: u32,
    /// Largest window of both senders, packets (a cap for tests or fragile networks; the
    /// RTT marks normally keep it far below).
    #[arg(long, default_value_t = 100_000)]
    max_window: u32,
    /// IP packet size of the data packets, bytes (the UDP payload is 28 bytes less over IPv4,
    /// 48 over IPv6); each trace line stands for one such packet.
    #[arg(long, default_value_t = 1500)]
    mtu: u32,
    /// Seconds to wait, after the recording, for the server's recording of the uplink.
    #[arg(long, default_value_t = 60.0)]
    fetch_timeout: f64,
    /// JSON lines instead of text.
    #[arg(long)]
    json: bool,
    /// No per-second lines.
    #[arg(long)]
    quiet: bool,
}

#[derive(clap::Args)]
struct CheckArgs {
    /// Folder of trace pairs (NAME.up, NAME.down) [default: ../shared/traces, else ./traces].
    #[arg(long)]
    traces: Option<PathBuf>,
    /// Comma-separated link pairs [default: every pair in the folder].
    #[arg(long, value_delimiter = ',')]
    links: Vec<String>,
    /// Seconds compared (from --from).
    #[arg(long, default_value_t = 120)]
    seconds: u64,
    /// First second compared. Seconds 0 and 1 are the warm-up: the recording starts a few
    /// tens of ms into the replay, its handshake crosses the data path (and on
    /// Verizon-EVDO-driving the uplink has no opportunity until 1.06 s), and the window opens.
    #[arg(long, default_value_t = 2)]
    from: u64,
    /// Bernoulli loss at each direction's queue, 0..1 (the loss variant).
    #[arg(long, default_value_t = 0.0)]
    loss: f64,
    /// Seconds of outage injected in the middle of the compared window, both directions.
    #[arg(long, default_value_t = 0)]
    outage: u64,
    /// Seed of the loss.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Run the link model on a virtual clock instead of the emulator (no root, no real time).
    #[arg(long)]
    simulated: bool,
    /// Output folder (recordings, logs, saturator-check.csv and .json).
    #[arg(long, default_value = "saturator-check")]
    out: PathBuf,
    /// Send the Saturator's feedback over the emulated links (the data path) instead of a
    /// separate path, to see what the paper's second phone avoided.
    #[arg(long)]
    same_path: bool,
    /// Leave the emulator's threads at normal priority (by default they run under
    /// SCHED_FIFO, so that a busy machine does not make them deliver, and the recording
    /// stamp, late).
    #[arg(long)]
    no_realtime: bool,
    /// Print the results as JSON instead of a table.
    #[arg(long)]
    json: bool,
}

/// Runs `sprout saturator`.
pub fn run(a: SaturatorArgs) -> Result<()> {
    match a.command {
        SaturatorCommand::Server(s) => server(s),
        SaturatorCommand::Client(c) => client(c),
        SaturatorCommand::Check(c) => check(c),
    }
}

// ---------------------------------------------------------------------------------------------
// Sockets and clocks
// ---------------------------------------------------------------------------------------------

/// `CLOCK_MONOTONIC`, µs.
fn now_us() -> u64 {
    monotonic_ns() / 1000
}

/// `CLOCK_REALTIME`, ns.
fn realtime_ns() -> i128 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    ts.tv_sec as i128 * 1_000_000_000 + ts.tv_nsec as i128
}

/// Socket buffers asked for, bytes.
const SOCKET_BUFFER_BYTES: usize = 4 << 20;
/// Largest datagram read, bytes.
const RECV_BUFFER_BYTES: usize = 65_536;
/// Most datagrams read from a socket, or data packets sent, per loop iteration.
const BATCH: usize = 256;

/// A non-blocking UDP socket that reads kernel receive timestamps.
struct Sock {
    sock: UdpSocket,
}

/// One datagram read: its length, source and arrival time (µs of `CLOCK_MONOTONIC`).
struct Received {
    len: usize,
    from: SocketAddr,
    at_us: u64,
}

impl Sock {
    fn new(bind: SocketAddr) -> Result<Sock> {
        let domain = if bind.is_ipv4() {
            Domain::IPV4
        } else {
            Domain::IPV6
        };
        let s = Socket::new(domain, Type::DGRAM, Some(Protocol::UDP)).context("UDP socket")?;
        // Best effort: the kernel caps them at rmem_max / wmem_max.
        let _ = s.set_recv_buffer_size(SOCKET_BUFFER_BYTES);
        let _ = s.set_send_buffer_size(SOCKET_BUFFER_BYTES);
        s.bind(&bind.into())
            .with_context(|| format!("binding {bind}"))?;
        s.set_nonblocking(true)?;
        let one: libc::c_int = 1;
        // SAFETY: a valid socket and a c_int option value.
        unsafe {
            libc::setsockopt(
                s.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_TIMESTAMPNS,
                (&one as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            );
        }
        Ok(Sock { sock: s.into() })
    }

    /// A socket connected to `remote` from an ephemeral port.
    fn connected(remote: SocketAddr) -> Result<Sock> {
        let any: SocketAddr = if remote.is_ipv4() {
            (Ipv4Addr::UNSPECIFIED, 0).into()
        } else {
            (Ipv6Addr::UNSPECIFIED, 0).into()
        };
        let s = Sock::new(any)?;
        s.sock
            .connect(remote)
            .with_context(|| format!("connecting to {remote}"))?;
        Ok(s)
    }

    fn send_to(&self, data: &[u8], to: SocketAddr) -> io::Result<()> {
        self.sock.send_to(data, to).map(|_| ())
    }

    fn send(&self, data: &[u8]) -> io::Result<()> {
        self.sock.send(data).map(|_| ())
    }

    /// Reads one datagram, if one is waiting; its arrival time from the kernel's stamp
    /// (`CLOCK_REALTIME` less `rt_offset_ns`, the current realtime-monotonic difference) when
    /// plausible, else `now`.
    fn recv(&self, buf: &mut [u8], rt_offset_ns: i128, now: u64) -> io::Result<Option<Received>> {
        // SAFETY: zeroed C structs are valid; every pointer handed to recvmsg points into live
        // buffers of the stated sizes.
        unsafe {
            let mut storage: libc::sockaddr_storage = std::mem::zeroed();
            let mut iov = libc::iovec {
                iov_base: buf.as_mut_ptr().cast(),
                iov_len: buf.len(),
            };
            let mut control = [0u64; 16];
            let mut msg: libc::msghdr = std::mem::zeroed();
            msg.msg_name = (&mut storage as *mut libc::sockaddr_storage).cast();
            msg.msg_namelen = std::mem::size_of::<libc::sockaddr_storage>() as libc::socklen_t;
            msg.msg_iov = &mut iov;
            msg.msg_iovlen = 1;
            msg.msg_control = control.as_mut_ptr().cast();
            msg.msg_controllen = std::mem::size_of_val(&control) as _;
            let n = loop {
                let n = libc::recvmsg(self.sock.as_raw_fd(), &mut msg, libc::MSG_DONTWAIT);
                if n >= 0 {
                    break n as usize;
                }
                let e = io::Error::last_os_error();
                match e.kind() {
                    io::ErrorKind::Interrupted => continue,
                    io::ErrorKind::WouldBlock => return Ok(None),
                    // An ICMP error of an earlier send (the peer's port closed): not fatal.
                    io::ErrorKind::ConnectionRefused => return Ok(None),
                    _ => return Err(e),
                }
            };
            let mut at_us = now;
            let mut cmsg = libc::CMSG_FIRSTHDR(&msg);
            while !cmsg.is_null() {
                if (*cmsg).cmsg_level == libc::SOL_SOCKET
                    && (*cmsg).cmsg_type == libc::SCM_TIMESTAMPNS
                {
                    let ts: libc::timespec =
                        std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast::<libc::timespec>());
                    let rt = ts.tv_sec as i128 * 1_000_000_000 + ts.tv_nsec as i128;
                    let mono_us = (rt - rt_offset_ns) / 1000;
                    // Trust the stamp when it is in the last 2 s (not after a clock step).
                    if mono_us <= now as i128 && mono_us + 2_000_000 >= now as i128 {
                        at_us = mono_us as u64;
                    }
                }
                cmsg = libc::CMSG_NXTHDR(&msg, cmsg);
            }
            let from =
                sockaddr_to_std(&storage).unwrap_or_else(|| (Ipv4Addr::UNSPECIFIED, 0).into());
            let len = if msg.msg_flags & libc::MSG_TRUNC != 0 {
                buf.len() + 1
            } else {
                n
            };
            Ok(Some(Received { len, from, at_us }))
        }
    }

    fn pollfd(&self) -> libc::pollfd {
        libc::pollfd {
            fd: self.sock.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        }
    }
}

fn sockaddr_to_std(s: &libc::sockaddr_storage) -> Option<SocketAddr> {
    match s.ss_family as libc::c_int {
        libc::AF_INET => {
            // SAFETY: the family says it is a sockaddr_in, which fits in sockaddr_storage.
            let a = unsafe { &*(s as *const libc::sockaddr_storage).cast::<libc::sockaddr_in>() };
            Some(SocketAddr::V4(SocketAddrV4::new(
                Ipv4Addr::from(u32::from_be(a.sin_addr.s_addr)),
                u16::from_be(a.sin_port),
            )))
        }
        libc::AF_INET6 => {
            // SAFETY: as above, sockaddr_in6.
            let a = unsafe { &*(s as *const libc::sockaddr_storage).cast::<libc::sockaddr_in6>() };
            Some(SocketAddr::V6(SocketAddrV6::new(
                Ipv6Addr::from(a.sin6_addr.s6_addr),
                u16::from_be(a.sin6_port),
                a.sin6_flowinfo,
                a.sin6_scope_id,
            )))
        }
        _ => None,
    }
}

/// Waits until a socket is readable or `until_us` (µs of `CLOCK_MONOTONIC`) passes, at most
/// 50 ms (so that signals are noticed).
fn wait(socks: &[&Sock], until_us: u64) {
    let now = now_us();
    let ms = until_us.saturating_sub(now).div_ceil(1000).min(50) as libc::c_int;
    if ms == 0 {
        return;
    }
    let mut fds: Vec<libc::pollfd> = socks.iter().map(|s| s.pollfd()).collect();
    // SAFETY: fds is a valid array of pollfd.
    unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
}

/// A random session id (never 0).
fn random_session() -> u64 {
    let mut b = [0u8; 8];
    // SAFETY: b is a valid buffer of 8 bytes.
    let n = unsafe { libc::getrandom(b.as_mut_ptr().cast(), 8, 0) };
    let v = if n == 8 {
        u64::from_ne_bytes(b)
    } else {
        monotonic_ns() ^ (u64::from(std::process::id()) << 32)
    };
    v.max(1)
}

/// UDP payload of a data packet for an IP packet of `mtu` bytes to `addr`.
fn payload_for(mtu: u32, addr: &SocketAddr) -> Result<u32> {
    let overhead = if addr.is_ipv4() { 28 } else { 48 };
    let p = mtu.saturating_sub(overhead);
    if !(sprout_saturator::MIN_PAYLOAD_BYTES..=sprout_saturator::MAX_PAYLOAD_BYTES).contains(&p) {
        bail!(
            "--mtu {mtu} gives {p}-byte UDP payloads; they must be {} to {} bytes",
            sprout_saturator::MIN_PAYLOAD_BYTES,
            sprout_saturator::MAX_PAYLOAD_BYTES
        );
    }
    Ok(p)
}

// ---------------------------------------------------------------------------------------------
// Progress and summaries
// ---------------------------------------------------------------------------------------------

/// One direction of a progress line.
#[derive(Clone, Copy, Debug, Default, Serialize)]
struct DirProgress {
    /// Delivered over the last second, kbit/s (1500 bytes a packet).
    kbps: f64,
    /// The sender's smoothed RTT, ms (0 before the first sample).
    rtt_ms: u64,
    /// The sender's window, packets.
    window: u64,
    /// Packets lost so far (sequence gaps).
    lost: u64,
    /// Packets recorded (or reported received) so far.
    packets: u64,
}

impl DirProgress {
    fn text(&self) -> String {
        format!(
            "{:>6.0} kbit/s rtt {:>5} ms win {:>6} lost {}",
            self.kbps, self.rtt_ms, self.window, self.lost
        )
    }
}

#[derive(Serialize)]
struct Progress {
    #[serde(rename = "type")]
    kind: &'static str,
    role: &'static str,
    t_s: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    down: Option<DirProgress>,
    #[serde(skip_serializing_if = "Option::is_none")]
    up: Option<DirProgress>,
}

fn print_progress(p: &Progress, json: bool) {
    if json {
        if let Ok(s) = serde_json::to_string(p) {
            println!("{s}");
        }
    } else {
        let mut line = format!("{:>5} s", p.t_s);
        if let Some(d) = &p.down {
            line.push_str(&format!("  down {}", d.text()));
        }
        if let Some(u) = &p.up {
            line.push_str(&format!("  up {}", u.text()));
        }
        println!("{line}");
    }
    let _ = io::stdout().flush();
}

/// Per-second rate bookkeeping of a counter.
#[derive(Default)]
struct Rate {
    last: u64,
}

impl Rate {
    fn kbps(&mut self, total: u64, line_bytes: u32) -> f64 {
        let d = total.saturating_sub(self.last);
        self.last = total;
        (d * u64::from(line_bytes) * 8) as f64 / 1000.0
    }
}

fn write_file(path: &Path, f: impl FnOnce(&mut BufWriter<File>) -> io::Result<()>) -> Result<()> {
    if let Some(parent) = path.parent() {
        if !parent.as_os_str().is_empty() {
            fs::create_dir_all(parent)
                .with_context(|| format!("creating folder {}", parent.display()))?;
        }
    }
    let file = File::create(path).with_context(|| format!("creating {}", path.display()))?;
    let mut w = BufWriter::new(file);
    f(&mut w).with_context(|| format!("writing {}", path.display()))?;
    w.flush()
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}

fn with_suffix(name: &Path, suffix: &str) -> PathBuf {
    let mut s = name.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

// ---------------------------------------------------------------------------------------------
// Client
// ---------------------------------------------------------------------------------------------

/// The client's final summary (`--json`).
#[derive(Serialize)]
struct ClientSummary {
    #[serde(rename = "type")]
    kind: &'static str,
    role: &'static str,
    session: String,
    mode: Mode,
    server: String,
    feedback: Option<String>,
    /// The downlink's recording (this side's).
    down: Option<Summary>,
    /// The uplink's recording (the server's, transferred back).
    up: Option<Summary>,
    /// Why the uplink's recording is missing, if it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    up_error: Option<String>,
    /// The uplink's sender (this side's).
    up_sender: Option<SenderStats>,
    /// Files written.
    files: Vec<String>,
}

struct ClientEnd {
    data: Sock,
    fb: Option<Sock>,
    /// The server answered over the feedback path: feedback goes there (until then, and
    /// without one, over the data path).
    fb_ok: bool,
}

impl ClientEnd {
    /// The socket feedback goes over.
    fn feedback(&self) -> &Sock {
        self.fb
            .as_ref()
            .filter(|_| self.fb_ok)
            .unwrap_or(&self.data)
    }

    /// Whether feedback goes over the separate path.
    fn fb_path(&self) -> bool {
        self.fb.is_some() && self.fb_ok
    }

    fn socks(&self) -> Vec<&Sock> {
        let mut v = vec![&self.data];
        if let Some(f) = &self.fb {
            v.push(f);
        }
        v
    }
}

fn client(a: ClientArgs) -> Result<()> {
    let payload = payload_for(a.mtu, &a.connect)?;
    if a.max_window == 0 {
        bail!("--max-window must be at least 1");
    }
    let sender_cfg = SenderConfig::with(
        u64::from(a.low_rtt_ms) * 1000,
        u64::from(a.high_rtt_ms) * 1000,
        a.max_window,
    );
    sender_cfg
        .validate()
        .map_err(|e| anyhow::anyhow!("--low-rtt-ms/--high-rtt-ms: {e}"))?;
    if a.high_rtt_ms > 3_600_000 {
        bail!("--high-rtt-ms must be at most an hour");
    }
    let duration_us = match a.duration {
        None => None,
        Some(d) if d.is_finite() && d > 0.0 => Some((d * 1e6) as u64),
        Some(d) => bail!("--duration must be a positive number of seconds, got {d}"),
    };
    if !(a.fetch_timeout.is_finite() && a.fetch_timeout >= 0.0) {
        bail!("--fetch-timeout must be a non-negative number of seconds");
    }
    if a.name.as_os_str().is_empty() || a.name.file_name().is_none() {
        bail!("--name must name a file prefix, got {:?}", a.name);
    }
    let base_name = a
        .name
        .file_name()
        .and_then(|n| n.to_str())
        .filter(|n| valid_name(n))
        .unwrap_or("")
        .to_string();
    let mut end = ClientEnd {
        data: Sock::connected(a.connect)?,
        fb: a.feedback.map(Sock::connected).transpose()?,
        fb_ok: false,
    };
    let signals = SignalWatcher::new().context("installing signal handlers")?;
    let session = random_session();
    let hello = |feedback_path: bool| Hello {
        session,
        mode: a.direction,
        payload_bytes: payload,
        low_rtt_ms: a.low_rtt_ms,
        high_rtt_ms: a.high_rtt_ms,
        max_window: a.max_window,
        feedback_path,
        uses_feedback: a.feedback.is_some(),
        name: base_name.clone(),
    };
    let mut out = Vec::with_capacity(RECV_BUFFER_BYTES);
    let mut buf = vec![0u8; RECV_BUFFER_BYTES];

    // Hello until the server answers on the data path.
    let start_us = now_us();
    let mut rec = a.direction.has(Dir::Down).then(|| {
        let cfg = RecorderConfig {
            payload_bytes: payload,
            line_bytes: a.mtu,
            ..RecorderConfig::default()
        };
        Recorder::new(cfg, session, Dir::Down, start_us)
    });
    let mut fb_acked = false;
    let mut data_acked = false;
    let mut next_hello = 0;
    let hello_deadline = start_us + 10_000_000;
    let mut early_malformed = 0u64;
    loop {
        let now = now_us();
        if signals.take().is_some() {
            bail!("interrupted before the server answered");
        }
        if now >= hello_deadline {
            bail!(
                "no answer from {} in 10 s (is `sprout saturator server` running there, and \
                 UDP open?)",
                a.connect
            );
        }
        if now >= next_hello {
            encode(&Message::Hello(hello(false)), 0, &mut out);
            let _ = end.data.send(&out);
            if let Some(f) = &end.fb {
                encode(&Message::Hello(hello(true)), 0, &mut out);
                let _ = f.send(&out);
            }
            next_hello = now + 200_000;
        }
        let mut answered = false;
        for (i, s) in end.socks().into_iter().enumerate() {
            while let Some(r) = s.recv(&mut buf, realtime_ns() - i128::from(monotonic_ns()), now)? {
                match decode(&buf[..r.len.min(buf.len())]) {
                    Ok(Message::HelloAck { session: s2, flags }) if s2 == session => {
                        if flags & sprout_saturator::FLAG_FEEDBACK_PATH != 0 || i == 1 {
                            fb_acked = true;
                        } else {
                            data_acked = true;
                        }
                        // Either path will do: the server knows the session. (Over the
                        // feedback path it answers first when the data path is slow to
                        // start, e.g. in an outage; the data path's hello follows.)
                        answered = true;
                    }
                    Ok(Message::Busy { session: s2 }) if s2 == session => {
                        bail!("the server at {} is busy with another recording", a.connect)
                    }
                    Ok(Message::Data(h)) => {
                        if let Some(rec) = rec.as_mut() {
                            rec.on_data(r.at_us, &h, r.len);
                        }
                    }
                    Ok(_) => {}
                    Err(_) => early_malformed += 1,
                }
            }
        }
        if answered {
            end.fb_ok = fb_acked;
            break;
        }
        wait(&end.socks(), now + 20_000);
    }
    if let Some(rec) = rec.as_mut() {
        for _ in 0..early_malformed {
            rec.on_malformed();
        }
    }
    let mut sender = a
        .direction
        .has(Dir::Up)
        .then(|| Sender::new(sender_cfg, session, Dir::Up, now_us()));
    let end_us = duration_us.map(|d| start_us.saturating_add(d));
    if !a.json {
        println!(
            "recording {} with {} (session {session:016x}), feedback {}, {}",
            match a.direction {
                Mode::Both => "both directions",
                Mode::Up => "the uplink",
                Mode::Down => "the downlink",
            },
            a.connect,
            a.feedback
                .map_or("over the data path".to_string(), |f| format!("over {f}")),
            duration_us.map_or("until Ctrl-C".to_string(), |d| format!(
                "{:.0} s",
                d as f64 / 1e6
            )),
        );
    }

    // The recording.
    let mut next_progress = start_us + 1_000_000;
    let mut down_rate = Rate::default();
    let mut up_rate = Rate::default();
    let mut peer_window = 0u64;
    let mut peer_rtt_ms = 0u64;
    let mut last_data_send = now_us();
    let mut last_fb_send = now_us();
    let mut next_fb_hello = now_us();
    let mut send_errors = 0u64;
    let mut warned_fb = false;
    let mut warned_data = false;
    let mut next_data_hello = now_us() + 200_000;
    loop {
        let now = now_us();
        if end_us.is_some_and(|e| now >= e) || signals.take().is_some() {
            break;
        }
        let mut fb_answered = false;
        let offset = realtime_ns() - i128::from(monotonic_ns());
        for (i, s) in end.socks().into_iter().enumerate() {
            for _ in 0..BATCH {
                let Some(r) = s.recv(&mut buf, offset, now)? else {
                    break;
                };
                let msg = match decode(&buf[..r.len.min(buf.len())]) {
                    Ok(m) => m,
                    Err(_) => {
                        if let Some(rec) = rec.as_mut() {
                            rec.on_malformed();
                        }
                        continue;
                    }
                };
                if msg.session() != session {
                    if let Some(rec) = rec.as_mut() {
                        rec.on_stray();
                    }
                    continue;
                }
                match msg {
                    Message::Data(h) => {
                        peer_window = u64::from(h.window);
                        peer_rtt_ms = u64::from(h.rtt_ms);
                        if let Some(rec) = rec.as_mut() {
                            rec.on_data(r.at_us, &h, r.len);
                        }
                        if let (Some(ack), Some(snd)) = (h.ack, sender.as_mut()) {
                            snd.on_ack(r.at_us, &ack);
                        }
                    }
                    Message::Ack {
                        dir: Dir::Up,
                        info: Some(ack),
                        ..
                    } => {
                        if let Some(snd) = sender.as_mut() {
                            snd.on_ack(r.at_us, &ack);
                        }
                    }
                    Message::HelloAck { flags, .. } => {
                        if i == 1 || flags & sprout_saturator::FLAG_FEEDBACK_PATH != 0 {
                            fb_answered = true;
                        } else {
                            data_acked = true;
                        }
                    }
                    _ => {}
                }
            }
        }
        if fb_answered {
            end.fb_ok = true;
        }
        let now = now_us();
        let mut pending_ack = rec.as_mut().and_then(|r| r.poll_ack(now));
        if let Some(snd) = sender.as_mut() {
            for _ in 0..BATCH {
                let Some(o) = snd.poll_transmit(now) else {
                    break;
                };
                let piggy = if !end.fb_path() {
                    pending_ack.take()
                } else {
                    None
                };
                let h = snd.data_header(&o, piggy);
                encode(&Message::Data(h), payload as usize, &mut out);
                match end.data.send(&out) {
                    Ok(()) => last_data_send = now,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                        snd.unsend(&o);
                        if piggy.is_some() {
                            pending_ack = piggy;
                        }
                        break;
                    }
                    Err(_) => send_errors += 1,
                }
            }
        }
        let fb_path = end.fb_path();
        if pending_ack.is_some() || now >= last_fb_send + 1_000_000 {
            let info = pending_ack.or_else(|| rec.as_ref().and_then(|r| r.ack_info(now)));
            encode(
                &Message::Ack {
                    session,
                    dir: Dir::Down,
                    feedback_path: fb_path,
                    info,
                },
                0,
                &mut out,
            );
            if end.feedback().send(&out).is_ok() {
                last_fb_send = now;
                if !fb_path {
                    last_data_send = now;
                }
            }
        }
        if fb_path && now >= last_data_send + 5_000_000 {
            // Keep the data path's mappings (NAT) alive while nothing else goes up it.
            encode(
                &Message::Ack {
                    session,
                    dir: Dir::Down,
                    feedback_path: false,
                    info: None,
                },
                0,
                &mut out,
            );
            let _ = end.data.send(&out);
            last_data_send = now;
        }
        if !data_acked && now >= next_data_hello {
            if !warned_data && now >= start_us + 5_000_000 {
                eprintln!("warning: no answer over the data path ({}) yet", a.connect);
                warned_data = true;
            }
            encode(&Message::Hello(hello(false)), 0, &mut out);
            let _ = end.data.send(&out);
            next_data_hello = now + 200_000;
        }
        if end.fb.is_some() && !end.fb_ok && now >= next_fb_hello {
            if !warned_fb && now >= start_us + 5_000_000 {
                eprintln!(
                    "warning: no answer over the feedback path {} yet; the feedback goes over \
                     the data path meanwhile",
                    a.feedback.map_or(String::new(), |f| f.to_string())
                );
                warned_fb = true;
            }
            if let Some(f) = &end.fb {
                encode(&Message::Hello(hello(true)), 0, &mut out);
                let _ = f.send(&out);
            }
            next_fb_hello = now + 200_000;
        }
        if now >= next_progress {
            let t_s = (now - start_us) / 1_000_000;
            next_progress = start_us + (t_s + 1) * 1_000_000;
            if !a.quiet {
                let down = rec.as_ref().map(|r| {
                    let c = r.counters();
                    DirProgress {
                        kbps: down_rate.kbps(c.packets, a.mtu),
                        rtt_ms: peer_rtt_ms,
                        window: peer_window,
                        lost: c.lost,
                        packets: c.packets,
                    }
                });
                let up = sender.as_ref().map(|s| {
                    let st = s.stats();
                    DirProgress {
                        kbps: up_rate.kbps(st.peer_received, a.mtu),
                        rtt_ms: s.srtt_us().unwrap_or(0) / 1000,
                        window: s.window(),
                        lost: st.peer_lost,
                        packets: st.peer_received,
                    }
                });
                print_progress(
                    &Progress {
                        kind: "progress",
                        role: "client",
                        t_s,
                        down,
                        up,
                    },
                    a.json,
                );
            }
        }
        let mut until = next_progress;
        for t in [
            end_us,
            sender.as_ref().and_then(|s| s.next_timeout_us()),
            rec.as_ref().and_then(|r| r.next_ack_us()),
            Some(last_fb_send + 1_000_000),
        ]
        .into_iter()
        .flatten()
        {
            until = until.min(t);
        }
        wait(&end.socks(), until);
    }
    let stop_us = now_us();
    if let Some(r) = rec.as_mut() {
        r.finish(stop_us);
    }
    if let Some(s) = sender.as_mut() {
        s.stop();
    }
    let _ = send_errors;

    // The end: FIN until FIN-ACK, then the uplink's recording.
    let fetch_deadline = stop_us + (a.fetch_timeout * 1e6) as u64;
    let up_sent = sender.as_ref().map_or(0, |s| s.stats().packets_sent);
    let (up, up_error) = finish_client(
        &end,
        session,
        a.direction,
        sprout_saturator::max_result_bytes(up_sent),
        fetch_deadline,
        &signals,
    )?;

    // Files.
    let mut files = Vec::new();
    let down_summary = rec.as_ref().map(|r| r.summary(stop_us));
    if let Some(r) = &rec {
        let p = with_suffix(&a.name, ".down");
        write_file(&p, |w| r.write_trace(w))?;
        files.push(p.display().to_string());
    }
    let up_summary = match up {
        Some((s, ms)) => {
            let p = with_suffix(&a.name, ".up");
            write_file(&p, |w| sprout_saturator::write_trace(&ms, w))?;
            files.push(p.display().to_string());
            Some(s)
        }
        None => None,
    };
    let json_path = with_suffix(&a.name, ".json");
    files.push(json_path.display().to_string());
    let summary = ClientSummary {
        kind: "summary",
        role: "client",
        session: format!("{session:016x}"),
        mode: a.direction,
        server: a.connect.to_string(),
        feedback: a.feedback.map(|f| f.to_string()),
        down: down_summary,
        up: up_summary,
        up_error,
        up_sender: sender.as_ref().map(|s| s.stats()),
        files,
    };
    write_file(&json_path, |w| {
        serde_json::to_writer_pretty(&mut *w, &summary)?;
        writeln!(w)
    })?;
    if a.json {
        println!("{}", serde_json::to_string(&summary)?);
    } else {
        for s in [&summary.down, &summary.up].into_iter().flatten() {
            println!("{}", s.text());
        }
        if let Some(e) = &summary.up_error {
            println!("up: no recording: {e}");
        }
        println!("wrote {}", summary.files.join(", "));
    }
    Ok(())
}

/// Sends FIN until the server's FIN-ACK, then fetches the uplink's recording if the mode has
/// one and it is at most `max_blob` bytes (what the packets sent can be owed). Returns it (or
/// why not).
#[allow(clippy::type_complexity)]
fn finish_client(
    end: &ClientEnd,
    session: u64,
    mode: Mode,
    max_blob: usize,
    deadline: u64,
    signals: &SignalWatcher,
) -> Result<(Option<(Summary, Vec<u32>)>, Option<String>)> {
    let mut out = Vec::new();
    let mut buf = vec![0u8; RECV_BUFFER_BYTES];
    let mut meta: Option<ResultMeta> = None;
    let mut next_fin = 0;
    let mut reassembly: Option<Reassembly> = None;
    let mut next_request = 0;
    let mut result = None;
    let mut error = None;
    loop {
        let now = now_us();
        if now >= deadline {
            error = Some(match &reassembly {
                None => "the server did not acknowledge the end of the recording in time".into(),
                Some(r) => format!(
                    "{} of {} chunks of the server's recording still missing at the deadline",
                    r.missing(),
                    r.meta().chunks
                ),
            });
            break;
        }
        if signals.take().is_some() {
            error = Some("interrupted while fetching the server's recording".into());
            break;
        }
        if meta.is_none() && now >= next_fin {
            encode(
                &Message::Fin {
                    session,
                    feedback_path: false,
                },
                0,
                &mut out,
            );
            let _ = end.data.send(&out);
            if let Some(f) = &end.fb {
                encode(
                    &Message::Fin {
                        session,
                        feedback_path: true,
                    },
                    0,
                    &mut out,
                );
                let _ = f.send(&out);
            }
            next_fin = now + 200_000;
        }
        let offset = realtime_ns() - i128::from(monotonic_ns());
        let mut progressed = false;
        for s in end.socks() {
            for _ in 0..BATCH {
                let Some(r) = s.recv(&mut buf, offset, now)? else {
                    break;
                };
                match decode(&buf[..r.len.min(buf.len())]) {
                    Ok(Message::FinAck(m)) if m.session == session && meta.is_none() => {
                        meta = Some(m);
                        if m.blob_len as usize > max_blob {
                            error = Some(format!(
                                "the server announced a {} byte recording of the uplink, more \
                                 than the packets sent could fill ({max_blob} bytes): refused",
                                m.blob_len
                            ));
                        } else if m.blob_len > 0 && mode.has(Dir::Up) {
                            reassembly = Some(Reassembly::new(m));
                        }
                    }
                    Ok(Message::ResultChunk {
                        meta: m,
                        index,
                        data,
                    }) if m.session == session => {
                        if let Some(re) = reassembly.as_mut() {
                            let before = re.missing();
                            re.add(&m, index, data);
                            progressed |= re.missing() < before;
                        }
                    }
                    _ => {}
                }
            }
        }
        if let Some(m) = meta {
            match reassembly.as_ref() {
                None => {
                    if mode.has(Dir::Up) && error.is_none() {
                        error = Some("the server had no recording of the uplink".into());
                    }
                    break;
                }
                Some(re) => {
                    if re.missing() == 0 {
                        match re.complete().and_then(sprout_saturator::decode_result) {
                            Some(r) => result = Some(r),
                            None => {
                                error =
                                    Some("the server's recording arrived damaged (checksum)".into())
                            }
                        }
                        break;
                    }
                    if progressed {
                        // Ask for the next batch as soon as this one is in.
                        next_request = next_request.min(now + 5_000);
                    }
                    if now >= next_request {
                        if let Some((first, count)) = re.wanted(64) {
                            encode(
                                &Message::ResultRequest {
                                    session: m.session,
                                    first,
                                    count,
                                },
                                0,
                                &mut out,
                            );
                            let _ = end.feedback().send(&out);
                        }
                        next_request = now + 200_000;
                    }
                }
            }
        }
        wait(&end.socks(), now + 5_000);
    }
    encode(&Message::Done { session }, 0, &mut out);
    for _ in 0..3 {
        let _ = end.feedback().send(&out);
        if end.fb.is_some() {
            let _ = end.data.send(&out);
        }
    }
    Ok((result, error))
}

// ---------------------------------------------------------------------------------------------
// Server
// ---------------------------------------------------------------------------------------------

/// The server's summary of one recording (`--json`).
#[derive(Serialize)]
struct ServerSummary {
    #[serde(rename = "type")]
    kind: &'static str,
    role: &'static str,
    session: String,
    mode: Mode,
    client: String,
    feedback: Option<String>,
    /// How the recording ended: "fin" (the client ended it), "idle" (the client went silent).
    ended: &'static str,
    /// Whether the client confirmed it received the uplink's recording.
    delivered: bool,
    up: Option<Summary>,
    down_sender: Option<SenderStats>,
    files: Vec<String>,
}

struct Session {
    hello: Hello,
    /// The client's address on the data path, once a message came over it (a hello over the
    /// feedback path does not tell it).
    data_addr: Option<SocketAddr>,
    fb_addr: Option<SocketAddr>,
    /// The downlink's sender's configuration; the sender starts once the data path is known.
    sender_cfg: SenderConfig,
    start_us: u64,
    rec: Option<Recorder>,
    sender: Option<Sender>,
    last_heard_us: u64,
    /// Once the client ended the recording: the encoded uplink recording and its description.
    finished: Option<(Vec<u8>, ResultMeta, u64)>,
    done: bool,
    files: Vec<String>,
}

impl Session {
    /// A message came over the data path from `from` at `now`: the client's data address
    /// (it may change: roaming, NAT rebinding); the downlink's sender starts with the first.
    fn data_path(&mut self, from: SocketAddr, now: u64) {
        self.data_addr = Some(from);
        if self.sender.is_none() && self.finished.is_none() && self.hello.mode.has(Dir::Down) {
            self.sender = Some(Sender::new(
                self.sender_cfg,
                self.hello.session,
                Dir::Down,
                now,
            ));
        }
    }
}

fn server(a: ServerArgs) -> Result<()> {
    if !(a.idle_timeout.is_finite() && a.idle_timeout > 0.0) {
        bail!("--idle-timeout must be a positive number of seconds");
    }
    let sock = Sock::new(a.listen)?;
    let signals = SignalWatcher::new().context("installing signal handlers")?;
    if let Some(dir) = &a.out {
        fs::create_dir_all(dir).with_context(|| format!("creating folder {}", dir.display()))?;
    }
    if !a.json {
        println!("listening on {}", sock.sock.local_addr()?);
        let _ = io::stdout().flush();
    }
    let mut buf = vec![0u8; RECV_BUFFER_BYTES];
    let mut out = Vec::with_capacity(RECV_BUFFER_BYTES);
    let mut idle_strays = 0u64;
    let mut idle_malformed = 0u64;
    loop {
        // Wait for a hello.
        let hello = loop {
            if signals.take().is_some() {
                return Ok(());
            }
            let now = now_us();
            let offset = realtime_ns() - i128::from(monotonic_ns());
            let mut got = None;
            while let Some(r) = sock.recv(&mut buf, offset, now)? {
                match decode(&buf[..r.len.min(buf.len())]) {
                    Ok(Message::Hello(h)) => {
                        got = Some((h, r));
                        break;
                    }
                    Ok(_) => idle_strays += 1,
                    Err(_) => idle_malformed += 1,
                }
            }
            if let Some(g) = got {
                break g;
            }
            wait(&[&sock], now + 50_000);
        };
        let (h, r) = hello;
        let summary = serve(
            &a,
            &sock,
            h,
            r,
            &signals,
            &mut buf,
            &mut out,
            &mut idle_strays,
            &mut idle_malformed,
        )?;
        if a.json {
            println!("{}", serde_json::to_string(&summary)?);
        } else {
            println!(
                "recording {} from {} ended ({}){}",
                summary.session,
                summary.client,
                summary.ended,
                if summary.delivered {
                    ", the uplink's recording delivered"
                } else {
                    ""
                }
            );
            if let Some(u) = &summary.up {
                println!("{}", u.text());
            }
            if !summary.files.is_empty() {
                println!("wrote {}", summary.files.join(", "));
            }
        }
        let _ = io::stdout().flush();
        if a.once {
            return Ok(());
        }
    }
}

/// Runs one recording, from its first hello to the client's DONE (or silence).
#[allow(clippy::too_many_arguments)]
fn serve(
    a: &ServerArgs,
    sock: &Sock,
    hello: Hello,
    first: Received,
    signals: &SignalWatcher,
    buf: &mut [u8],
    out: &mut Vec<u8>,
    idle_strays: &mut u64,
    idle_malformed: &mut u64,
) -> Result<ServerSummary> {
    let start_us = first.at_us;
    let session = hello.session;
    let sender_cfg = SenderConfig::with(
        u64::from(hello.low_rtt_ms) * 1000,
        u64::from(hello.high_rtt_ms) * 1000,
        hello.max_window,
    );
    let line_bytes = hello.payload_bytes + if first.from.is_ipv4() { 28 } else { 48 };
    let mut s = Session {
        data_addr: None,
        fb_addr: None,
        sender_cfg,
        start_us,
        rec: hello.mode.has(Dir::Up).then(|| {
            let cfg = RecorderConfig {
                payload_bytes: hello.payload_bytes,
                line_bytes,
                ..RecorderConfig::default()
            };
            Recorder::new(cfg, session, Dir::Up, start_us)
        }),
        sender: None,
        last_heard_us: start_us,
        finished: None,
        done: false,
        files: Vec::new(),
        hello,
    };
    if s.hello.feedback_path {
        // The first hello came over the feedback path: the data path is not known yet.
        s.fb_addr = Some(first.from);
    } else {
        s.data_path(first.from, start_us);
    }
    if let Some(rec) = s.rec.as_mut() {
        for _ in 0..*idle_strays {
            rec.on_stray();
        }
        for _ in 0..*idle_malformed {
            rec.on_malformed();
        }
    }
    *idle_strays = 0;
    *idle_malformed = 0;
    let reply_flags = if s.hello.feedback_path {
        sprout_saturator::FLAG_FEEDBACK_PATH
    } else {
        0
    };
    encode(
        &Message::HelloAck {
            session,
            flags: reply_flags,
        },
        0,
        out,
    );
    let _ = sock.send_to(out, first.from);
    if !a.json {
        println!(
            "recording {session:016x} from {}: {} ({} ms - {} ms RTT, {}-byte payloads){}",
            first.from,
            s.hello.mode.name(),
            s.hello.low_rtt_ms,
            s.hello.high_rtt_ms,
            s.hello.payload_bytes,
            if s.hello.uses_feedback {
                ", feedback over a second path"
            } else {
                ""
            }
        );
        let _ = io::stdout().flush();
    }
    let idle_us = (a.idle_timeout * 1e6) as u64;
    let mut next_progress = start_us + 1_000_000;
    let mut up_rate = Rate::default();
    let mut down_rate = Rate::default();
    let mut peer_window = 0u64;
    let mut peer_rtt_ms = 0u64;
    let mut ended = "fin";
    let payload = s.hello.payload_bytes as usize;
    loop {
        let now = now_us();
        if s.done {
            break;
        }
        if signals.take().is_some() {
            ended = "interrupted";
            break;
        }
        if now >= s.last_heard_us.saturating_add(idle_us) {
            ended = if s.finished.is_some() { "fin" } else { "idle" };
            break;
        }
        if let Some((_, _, since)) = &s.finished {
            if now >= since + 60_000_000 {
                break;
            }
        }
        let offset = realtime_ns() - i128::from(monotonic_ns());
        for _ in 0..BATCH {
            let Some(r) = sock.recv(buf, offset, now)? else {
                break;
            };
            let msg = match decode(&buf[..r.len.min(buf.len())]) {
                Ok(m) => m,
                Err(_) => {
                    if let Some(rec) = s.rec.as_mut() {
                        rec.on_malformed();
                    }
                    continue;
                }
            };
            if msg.session() != session {
                if let Message::Hello(_) = msg {
                    encode(
                        &Message::Busy {
                            session: msg.session(),
                        },
                        0,
                        out,
                    );
                    let _ = sock.send_to(out, r.from);
                }
                if let Some(rec) = s.rec.as_mut() {
                    rec.on_stray();
                }
                continue;
            }
            s.last_heard_us = r.at_us.max(s.last_heard_us);
            match msg {
                Message::Hello(h) => {
                    if h.feedback_path {
                        s.fb_addr = Some(r.from);
                    } else {
                        s.data_path(r.from, now);
                    }
                    let flags = if h.feedback_path {
                        sprout_saturator::FLAG_FEEDBACK_PATH
                    } else {
                        0
                    };
                    encode(&Message::HelloAck { session, flags }, 0, out);
                    let _ = sock.send_to(out, r.from);
                }
                Message::Data(h) => {
                    if h.dir == Dir::Up {
                        s.data_path(r.from, now);
                    }
                    if let Some(rec) = s.rec.as_mut() {
                        rec.on_data(r.at_us, &h, r.len);
                    }
                    peer_window = u64::from(h.window);
                    peer_rtt_ms = u64::from(h.rtt_ms);
                    if let (Some(ack), Some(snd)) = (h.ack, s.sender.as_mut()) {
                        snd.on_ack(r.at_us, &ack);
                    }
                }
                Message::Ack {
                    dir,
                    feedback_path,
                    info,
                    ..
                } => {
                    if feedback_path {
                        s.fb_addr = Some(r.from);
                    } else {
                        s.data_path(r.from, now);
                    }
                    if let (Dir::Down, Some(ack), Some(snd)) = (dir, info, s.sender.as_mut()) {
                        snd.on_ack(r.at_us, &ack);
                    }
                }
                Message::Fin { .. } => {
                    if s.finished.is_none() {
                        finish_session(a, &mut s, now)?;
                    }
                    if let Some((_, meta, _)) = &s.finished {
                        encode(&Message::FinAck(*meta), 0, out);
                        let _ = sock.send_to(out, r.from);
                    }
                }
                Message::ResultRequest { first, count, .. } => {
                    if let Some((blob, meta, since)) = s.finished.as_mut() {
                        *since = now;
                        let mut chunk_out = Vec::with_capacity(sprout_saturator::CHUNK_BYTES + 64);
                        let last = first.saturating_add(count.min(256)).min(meta.chunks);
                        for index in first..last {
                            encode(
                                &Message::ResultChunk {
                                    meta: *meta,
                                    index,
                                    data: sprout_saturator::chunk(blob, index),
                                },
                                0,
                                &mut chunk_out,
                            );
                            let _ = sock.send_to(&chunk_out, r.from);
                        }
                    }
                }
                Message::Done { .. } if s.finished.is_some() => s.done = true,
                _ => {}
            }
        }
        if s.finished.is_some() {
            wait(&[sock], now + 50_000);
            continue;
        }
        let now = now_us();
        let fb_to = s.fb_addr.filter(|_| s.hello.uses_feedback);
        let mut pending_ack = s.rec.as_mut().and_then(|r| r.poll_ack(now));
        if let (Some(snd), Some(data_addr)) = (s.sender.as_mut(), s.data_addr) {
            for _ in 0..BATCH {
                let Some(o) = snd.poll_transmit(now) else {
                    break;
                };
                let piggy = if fb_to.is_none() {
                    pending_ack.take()
                } else {
                    None
                };
                let h = snd.data_header(&o, piggy);
                encode(&Message::Data(h), payload, out);
                match sock.send_to(out, data_addr) {
                    Ok(()) => {}
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                        snd.unsend(&o);
                        if piggy.is_some() {
                            pending_ack = piggy;
                        }
                        break;
                    }
                    Err(_) => {}
                }
            }
        }
        if let (Some(info), Some(to)) = (pending_ack, fb_to.or(s.data_addr)) {
            encode(
                &Message::Ack {
                    session,
                    dir: Dir::Up,
                    feedback_path: fb_to.is_some(),
                    info: Some(info),
                },
                0,
                out,
            );
            let _ = sock.send_to(out, to);
        }
        if now >= next_progress {
            let t_s = (now - start_us) / 1_000_000;
            next_progress = start_us + (t_s + 1) * 1_000_000;
            if !a.quiet {
                let up = s.rec.as_ref().map(|r| {
                    let c = r.counters();
                    DirProgress {
                        kbps: up_rate.kbps(c.packets, line_bytes),
                        rtt_ms: peer_rtt_ms,
                        window: peer_window,
                        lost: c.lost,
                        packets: c.packets,
                    }
                });
                let down = s.sender.as_ref().map(|snd| {
                    let st = snd.stats();
                    DirProgress {
                        kbps: down_rate.kbps(st.peer_received, line_bytes),
                        rtt_ms: snd.srtt_us().unwrap_or(0) / 1000,
                        window: snd.window(),
                        lost: st.peer_lost,
                        packets: st.peer_received,
                    }
                });
                print_progress(
                    &Progress {
                        kind: "progress",
                        role: "server",
                        t_s,
                        down,
                        up,
                    },
                    a.json,
                );
            }
        }
        let mut until = next_progress;
        for t in [
            s.sender.as_ref().and_then(|x| x.next_timeout_us()),
            s.rec.as_ref().and_then(|x| x.next_ack_us()),
        ]
        .into_iter()
        .flatten()
        {
            until = until.min(t);
        }
        wait(&[sock], until);
    }
    let now = now_us();
    if s.finished.is_none() {
        // The client went silent (or Ctrl-C): keep what was recorded.
        finish_session(a, &mut s, now)?;
    }
    Ok(ServerSummary {
        kind: "summary",
        role: "server",
        session: format!("{session:016x}"),
        mode: s.hello.mode,
        client: s
            .data_addr
            .or(s.fb_addr)
            .map_or_else(|| "unknown".into(), |a| a.to_string()),
        feedback: s.fb_addr.map(|f| f.to_string()),
        ended,
        delivered: s.done,
        up: s.rec.as_ref().map(|r| r.summary(now)),
        down_sender: s.sender.as_ref().map(|x| x.stats()),
        files: s.files,
    })
}

/// Ends the recording: stops the downlink, encodes the uplink's recording for the client and
/// writes it under `--out` if asked.
fn finish_session(a: &ServerArgs, s: &mut Session, now: u64) -> Result<()> {
    if let Some(snd) = s.sender.as_mut() {
        snd.stop();
    }
    let blob = match s.rec.as_mut() {
        Some(rec) => {
            rec.finish(now);
            let summary = rec.summary(now);
            let sorted = rec.sorted_arrivals_ms();
            if let Some(dir) = &a.out {
                let name = if s.hello.name.is_empty() {
                    format!("saturator-{:016x}", s.hello.session)
                } else {
                    s.hello.name.clone()
                };
                let trace = dir.join(format!("{name}.up"));
                write_file(&trace, |w| sprout_saturator::write_trace(&sorted, w))?;
                let json = dir.join(format!("{name}.up.json"));
                write_file(&json, |w| {
                    serde_json::to_writer_pretty(&mut *w, &summary)?;
                    writeln!(w)
                })?;
                s.files.push(trace.display().to_string());
                s.files.push(json.display().to_string());
            }
            sprout_saturator::encode_result(&summary, &sorted)
        }
        None => Vec::new(),
    };
    let meta = sprout_saturator::result_meta(s.hello.session, &blob);
    s.finished = Some((blob, meta, now));
    let _ = s.start_us;
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Check
// ---------------------------------------------------------------------------------------------

fn check(a: CheckArgs) -> Result<()> {
    let traces = match a.traces {
        Some(t) => t,
        None => {
            let shared = PathBuf::from("../shared/traces");
            if shared.is_dir() {
                shared
            } else {
                PathBuf::from("traces")
            }
        }
    };
    if !(0.0..1.0).contains(&a.loss) {
        bail!("--loss must be a probability in [0, 1), got {}", a.loss);
    }
    if a.seconds == 0 || a.outage >= a.seconds {
        bail!("--seconds must be positive and longer than --outage");
    }
    let opts = CheckOptions {
        traces,
        links: a.links,
        seconds: a.seconds,
        from_s: a.from,
        loss: a.loss,
        outage_s: a.outage,
        seed: a.seed,
        simulated: a.simulated,
        out: a.out,
        sprout_exe: std::env::current_exe().context("locating the sprout binary")?,
        same_path: a.same_path,
        realtime: !a.no_realtime,
        progress: !a.json,
    };
    let results = saturator_check::run(&opts)?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&results)?);
    } else {
        println!("{}", saturator_check::table(&results));
    }
    if !results.all_ok {
        bail!("some checks failed (see the table)");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payload_sizes() {
        let v4: SocketAddr = "10.0.0.1:9".parse().unwrap();
        let v6: SocketAddr = "[::1]:9".parse().unwrap();
        assert_eq!(payload_for(1500, &v4).unwrap(), 1472);
        assert_eq!(payload_for(1500, &v6).unwrap(), 1452);
        assert!(payload_for(100, &v4).is_err());
    }

    #[test]
    fn suffixes_keep_folders() {
        assert_eq!(
            with_suffix(Path::new("out/run.1"), ".down"),
            PathBuf::from("out/run.1.down")
        );
    }

    #[test]
    fn sockaddr_conversion() {
        let s = Sock::new("127.0.0.1:0".parse().unwrap()).unwrap();
        let addr = s.sock.local_addr().unwrap();
        let t = Sock::connected(addr).unwrap();
        t.send(b"x").unwrap();
        let mut buf = [0u8; 64];
        let mut got = None;
        for _ in 0..100 {
            let now = now_us();
            if let Some(r) = s
                .recv(&mut buf, realtime_ns() - i128::from(monotonic_ns()), now)
                .unwrap()
            {
                got = Some((r, now));
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        let (r, now) = got.expect("a datagram");
        assert_eq!(r.len, 1);
        assert_eq!(r.from, t.sock.local_addr().unwrap());
        assert!(
            r.at_us <= now && r.at_us + 1_000_000 > now,
            "kernel stamp near now"
        );
    }
}
