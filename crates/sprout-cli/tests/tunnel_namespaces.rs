//! SproutTunnel end to end between network namespaces: one `sprout tunnel server` in the host
//! namespace and two `sprout tunnel client`s, each in the mobile namespace of its own link
//! emulator (fast constant links), connected to the server at once. A ping (ICMP echo from a
//! raw socket) goes through the tunnel to the server's tunnel address and to the other
//! client's; both clients download 20 MB of pseudo-random bytes through the tunnel at the same
//! time and check that every byte arrived intact (length and hash). Then Ctrl-C (SIGINT) ends
//! the tunnels, and nothing of them is left on the host. Needs root; prints "SKIPPED: ..."
//! otherwise. Usually takes 4 s; bounded at 240 s (see [`BUDGET`]).
//!
//! Then a client that survives its relay: the relay killed (SIGKILL) and started again, and
//! the link cut for 35 s (both directions blackholed by policy rules in the host namespace);
//! each time a ping through the tunnel must answer within 20 s of the relay or the link coming
//! back (usually about 15 s after a restart: the dead-peer timeout; about 1 s after a cut).
//! About 60 s, bounded at [`RECONNECT_BUDGET`]. And `--isolate`: a client's TCP connections to
//! the relay host's own addresses (its tunnel address, an address on its loopback device
//! routed into the tunnel) fail while a ping to the tunnel address still answers; without
//! `--isolate` the same connection succeeds (about 10 s).
//!
//! `a_ping_after_idle_is_answered_at_once`: after 0, 3 and 10 s of quiet, a ping through a
//! tunnel is answered within a few round trips (about 15 s). One more, ignored (real time; run
//! with `--ignored`): `downloads_at_a_high_link_rate`, one download and then two clients'
//! downloads at once through the tunnel over 100 Mbit/s links, with their goodput asserted
//! (issue 24).
//!
//! `tunnel_try_measures_and_leaves_nothing_behind_also_after_sigint`: `sprout tunnel try` to a
//! normal end and interrupted by SIGINT, and nothing of it left after either (about 12 s).

use std::collections::hash_map::DefaultHasher;
use std::hash::Hasher;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use sprout_emu::leftovers::{interface_names, process_gone, remains, wait_until};
use sprout_emu::{Emulator, EmulatorConfig};
use sprout_lab::tunnel_args;
use sprout_link::constant_rate_trace;
use sprout_tunnel::config::{ClientFlags, ServerFlags};

/// Bytes each client downloads through the tunnel.
const TRANSFER_BYTES: usize = 20_000_000;
/// Rate of both emulated links, each way (Mbit/s).
const LINK_MBPS: f64 = 80.0;
/// The whole test must end within this. With the wide rate model (the default since issue 24)
/// the transfers take about 2.5 s (63 Mbit/s each; 2.5-2.6 s in 20 runs on a loaded
/// machine); with the paper's model they took 11-15 s (12 Mbit/s each), with a long tail (26 s
/// now and then, once 93 s). The budget bounds CI against a hang, not against a tail:
/// throughput is `downloads_at_a_high_link_rate`'s business, and a slow run prints the tunnel
/// ends' last status lines instead.
const BUDGET: Duration = Duration::from_secs(240);
/// A transfer slower than this prints the tunnel ends' last status lines.
const SLOW_TRANSFER: Duration = Duration::from_secs(20);
/// Traffic must flow again within this of the relay or the link coming back (issue 22.5).
const RECOVERY: Duration = Duration::from_secs(20);
/// The reconnection test must end within this (usually about 60 s).
const RECONNECT_BUDGET: Duration = Duration::from_secs(110);

fn uid_is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// A peer process whose stdout lines arrive on a channel (and are kept for messages).
struct Peer {
    name: String,
    child: Child,
    lines: Receiver<String>,
    seen: Vec<String>,
    stderr: std::path::PathBuf,
}

impl Peer {
    fn start(name: &str, cmd: &mut Command, emu: Option<&Emulator>, dir: &Path) -> Peer {
        let stderr = dir.join(format!("{name}.err"));
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&stderr).unwrap());
        let mut child = match emu {
            Some(e) => e.spawn_in_namespace(cmd),
            None => cmd.spawn(),
        }
        .unwrap_or_else(|e| panic!("starting {name}: {e}"));
        let out = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Peer {
            name: name.into(),
            child,
            lines: rx,
            seen: Vec::new(),
            stderr,
        }
    }

    fn stderr_text(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }

    /// Waits for a JSON line whose `event` is `event`; panics with the peer's output if it
    /// does not come within `limit`.
    fn wait_event(&mut self, event: &str, limit: Duration) -> serde_json::Value {
        let until = Instant::now() + limit;
        loop {
            let left = until.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left.min(Duration::from_millis(200))) {
                Ok(line) => {
                    self.seen.push(line.clone());
                    if let Ok(v) = serde_json::from_str::<serde_json::Value>(&line) {
                        if v["event"] == event {
                            return v;
                        }
                    }
                }
                Err(mpsc::RecvTimeoutError::Timeout) if left > Duration::ZERO => {}
                Err(_) => panic!(
                    "{}: no \"{event}\" line within {limit:?} (exit: {:?})\nstdout:\n{}\nstderr:\n{}",
                    self.name,
                    self.child.try_wait(),
                    self.seen.join("\n"),
                    self.stderr_text()
                ),
            }
        }
    }

    /// SIGINT, then waits for a clean exit and the "exit" line; returns that line.
    fn interrupt_and_wait(&mut self) -> serde_json::Value {
        let _ = rustix::process::kill_process(
            rustix::process::Pid::from_child(&self.child),
            rustix::process::Signal::INT,
        );
        let until = Instant::now() + Duration::from_secs(10);
        let status = loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                break s;
            }
            assert!(
                Instant::now() < until,
                "{} did not exit within 10 s of SIGINT",
                self.name
            );
            thread::sleep(Duration::from_millis(20));
        };
        let exit = self.wait_event("exit", Duration::from_secs(2));
        assert!(
            status.success(),
            "{} exited with {status} after SIGINT; stderr:\n{}",
            self.name,
            self.stderr_text()
        );
        exit
    }

    /// The reconnection count of the last "established" line seen (0 if none).
    fn last_reconnections(&self) -> u64 {
        self.seen
            .iter()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .filter(|v| v["event"] == "established")
            .last()
            .and_then(|v| v["reconnections"].as_u64())
            .unwrap_or(0)
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}

/// The internet checksum (RFC 1071).
fn checksum(data: &[u8]) -> u16 {
    let mut sum: u32 = data
        .chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)])))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// A raw ICMP socket in the calling thread's namespace, reads time out after 50 ms.
fn icmp_socket() -> socket2::Socket {
    use socket2::{Domain, Protocol, Socket, Type};
    let sock = Socket::new(Domain::IPV4, Type::RAW, Some(Protocol::ICMPV4))
        .unwrap_or_else(|e| panic!("raw socket: {e}"));
    sock.set_read_timeout(Some(Duration::from_millis(50)))
        .expect("SO_RCVTIMEO");
    sock
}

/// Sends one echo request (`id`, `seq`) to `dst` and waits for its reply (with the request's
/// payload) until `until`.
fn echo(sock: &socket2::Socket, dst: Ipv4Addr, (id, seq): (u16, u16), until: Instant) -> bool {
    let to = socket2::SockAddr::from(std::net::SocketAddrV4::new(dst, 0));
    let mut req = vec![8u8, 0, 0, 0];
    req.extend_from_slice(&id.to_be_bytes());
    req.extend_from_slice(&seq.to_be_bytes());
    req.extend_from_slice(b"sprout tunnel ping payload 0123456789");
    let c = checksum(&req);
    req[2..4].copy_from_slice(&c.to_be_bytes());
    let _ = sock.send_to(&req, &to);
    while Instant::now() < until {
        let mut buf = [0u8; 1500];
        let n = match (&*sock).read(&mut buf) {
            Ok(n) if n >= 20 => n,
            _ => continue,
        };
        let ihl = usize::from(buf[0] & 0x0f) * 4;
        if n < ihl + 8 || buf[12..16] != dst.octets() {
            continue;
        }
        let icmp = &buf[ihl..n];
        if icmp[0] == 0
            && icmp[4..6] == id.to_be_bytes()
            && icmp[6..8] == seq.to_be_bytes()
            && icmp.ends_with(b"0123456789")
        {
            return true;
        }
    }
    false
}

/// Pings `dst` from `emu`'s namespace every 250 ms until a reply comes, for at most `limit`
/// after `since`; how long after `since` the first reply came.
fn ping_until(
    emu: &Emulator,
    dst: Ipv4Addr,
    id: u16,
    since: Instant,
    limit: Duration,
) -> Option<Duration> {
    emu.run_on_namespace_thread(move || {
        let sock = icmp_socket();
        let mut seq = 0u16;
        while since.elapsed() < limit {
            seq = seq.wrapping_add(1);
            if echo(
                &sock,
                dst,
                (id, seq),
                Instant::now() + Duration::from_millis(250),
            ) {
                return Some(since.elapsed());
            }
        }
        None
    })
    .unwrap()
    .join()
    .unwrap()
}

/// Sends ICMP echo requests (id `id`, sequence numbers 1..=`count`) from a raw socket in the
/// calling thread's namespace to `dst`, each retried up to 3 times, 1 s apart; returns how many
/// sequence numbers got their echo reply from `dst`.
fn ping(dst: Ipv4Addr, id: u16, count: u16) -> u16 {
    let sock = icmp_socket();
    let mut answered = 0;
    for seq in 1..=count {
        let ok = (0..3).any(|_| {
            let until = Instant::now() + Duration::from_secs(1);
            echo(&sock, dst, (id, seq), until)
        });
        answered += u16::from(ok);
    }
    answered
}

/// `n` pseudo-random bytes from `seed` (xorshift64*), fed to `sink` in 64 KiB chunks.
fn pseudo_random(seed: u64, n: usize, mut sink: impl FnMut(&[u8])) {
    let mut x = seed | 1;
    let mut buf = vec![0u8; 65_536];
    let mut left = n;
    while left > 0 {
        let len = left.min(buf.len());
        for chunk in buf[..len].chunks_mut(8) {
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            let v = x.wrapping_mul(0x2545_f491_4f6c_dd1d).to_le_bytes();
            chunk.copy_from_slice(&v[..chunk.len()]);
        }
        sink(&buf[..len]);
        left -= len;
    }
}

fn expected_hash(seed: u64) -> u64 {
    let mut h = DefaultHasher::new();
    pseudo_random(seed, TRANSFER_BYTES, |b| h.write(b));
    h.finish()
}

/// A /24 in 10.77.0.0/16 with no address of this host in it.
fn free_network() -> u8 {
    free_network_for(0)
}

/// As [`free_network`], another one for each test `k` of this process (tests run at once).
fn free_network_for(k: u32) -> u8 {
    let taken = sprout_os::interfaces::ipv4_addresses_in_use();
    let start = (std::process::id() + k * 37) % 240;
    (0..240u32)
        .map(|k| (10 + (start + k * 7) % 240) as u8)
        .find(|&n| !taken.iter().any(|a| a.octets()[..3] == [10, 77, n]))
        .expect("a free 10.77.N.0/24")
}

/// The server's key file and its public key (base64), from `sprout keygen`.
fn keygen(exe: &str, dir: &Path) -> (PathBuf, String) {
    let key_file = dir.join("server.key");
    let keygen = Command::new(exe)
        .args(["keygen", "--out"])
        .arg(&key_file)
        .output()
        .unwrap();
    assert!(keygen.status.success(), "{keygen:?}");
    let server_key = String::from_utf8(keygen.stdout).unwrap().trim().to_string();
    (key_file, server_key)
}

/// The tunnel server in the host namespace on every address's UDP `port`, tunnel network
/// `server_v4`/24, device `device`; returns once it says "listening".
fn start_server(
    exe: &str,
    dir: &Path,
    key_file: &Path,
    port: u16,
    server_v4: Ipv4Addr,
    device: &str,
) -> Peer {
    start_server_with(exe, dir, key_file, port, (server_v4, device), &[])
}

/// As [`start_server`], with `extra` arguments (e.g. `--isolate`).
fn start_server_with(
    exe: &str,
    dir: &Path,
    key_file: &Path,
    port: u16,
    (server_v4, device): (Ipv4Addr, &str),
    extra: &[&str],
) -> Peer {
    let flags = ServerFlags {
        key: Some(key_file.to_path_buf()),
        allow_any_client: true,
        listen: Some(format!("0.0.0.0:{port}")),
        address: Some(format!("{server_v4}/24")),
        address6: Some("none".into()),
        device: Some(device.into()),
        json: true,
        ..ServerFlags::default()
    };
    let mut cmd = Command::new(exe);
    cmd.args(tunnel_args::server_args(&flags)).args(extra);
    let mut server = Peer::start("tunnel server", &mut cmd, None, dir);
    server.wait_event("listening", Duration::from_secs(10));
    server
}

/// A tunnel client in each emulator's mobile namespace, to the server's `port` on the
/// emulator's outside address; returns them with their IPv4 tunnel addresses once each is up
/// (in the tunnel network `10.77.net.0/24`, the server at `server_v4`).
fn start_clients(
    exe: &str,
    dir: &Path,
    emus: &[Emulator],
    port: u16,
    server_key: &str,
    (server_v4, net): (Ipv4Addr, u8),
) -> (Vec<Peer>, Vec<Ipv4Addr>) {
    let pid = std::process::id();
    let mut clients: Vec<Peer> = emus
        .iter()
        .enumerate()
        .map(|(k, emu)| {
            let flags = ClientFlags {
                server: Some(format!("{}:{port}", emu.outside_addr())),
                server_key: Some(server_key.into()),
                device: Some(format!("tnc{pid:x}{k}")),
                json: true,
                ..ClientFlags::default()
            };
            let mut cmd = Command::new(exe);
            cmd.args(tunnel_args::client_args(&flags));
            Peer::start(&format!("tunnel client {k}"), &mut cmd, Some(emu), dir)
        })
        .collect();
    let client_v4: Vec<Ipv4Addr> = clients
        .iter_mut()
        .map(|c| {
            let up = c.wait_event("up", Duration::from_secs(20));
            assert_eq!(up["server_v4"], server_v4.to_string(), "{up}");
            let v4 = up["v4"].as_str().unwrap_or_default();
            v4.split('/').next().unwrap().parse().unwrap()
        })
        .collect();
    assert_ne!(client_v4[0], client_v4[1]);
    for v4 in &client_v4 {
        assert_eq!(
            v4.octets()[..3],
            [10, 77, net],
            "{v4} outside the tunnel network"
        );
    }
    (clients, client_v4)
}

/// Pings through the tunnel from each emulator's namespace: to the server's tunnel address,
/// and to the other client's (forwarded by the server between its clients). Returns each
/// client's (replies from the server, replies from the other client), of 3 each.
fn ping_through(emus: &[Emulator], server_v4: Ipv4Addr, client_v4: &[Ipv4Addr]) -> Vec<(u16, u16)> {
    let pid = std::process::id();
    emus.iter()
        .enumerate()
        .map(|(k, emu)| {
            let other = client_v4[1 - k];
            let id = (pid as u16).wrapping_add(k as u16);
            emu.run_on_namespace_thread(move || (ping(server_v4, id, 3), ping(other, id, 3)))
                .unwrap()
                .join()
                .unwrap()
        })
        .collect()
}

/// Serves [`TRANSFER_BYTES`] on `listener` to each of two clients (the pseudo-random bytes of
/// the seed each sends first); the thread returns the clients' addresses.
fn serve_downloads(listener: TcpListener) -> thread::JoinHandle<Vec<SocketAddr>> {
    thread::spawn(move || {
        let mut sent = Vec::new();
        for _ in 0..2 {
            let (mut conn, peer) = listener.accept().unwrap();
            sent.push(thread::spawn(move || {
                let mut seed = [0u8; 8];
                conn.read_exact(&mut seed).unwrap();
                let seed = u64::from_be_bytes(seed);
                pseudo_random(seed, TRANSFER_BYTES, |b| conn.write_all(b).unwrap());
                conn.shutdown(std::net::Shutdown::Write).unwrap();
                peer
            }));
        }
        sent.into_iter()
            .map(|t| t.join().unwrap())
            .collect::<Vec<_>>()
    })
}

/// Client `k`'s download from `addr` in `emu`'s namespace: its seed, then everything the
/// server sends; returns (seed, bytes received, their hash).
fn download(emu: &Emulator, k: usize, addr: SocketAddr) -> thread::JoinHandle<(u64, usize, u64)> {
    let seed = 0x5eed_0000 + k as u64;
    emu.run_on_namespace_thread(move || {
        let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(10))
            .expect("connect through the tunnel");
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        s.write_all(&seed.to_be_bytes()).unwrap();
        let mut h = DefaultHasher::new();
        let mut total = 0usize;
        let mut buf = vec![0u8; 65_536];
        loop {
            match s.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    h.write(&buf[..n]);
                    total += n;
                }
                Err(e) => panic!("client {k}: reading after {total} bytes: {e}"),
            }
        }
        (seed, total, h.finish())
    })
    .unwrap()
}

/// [`TRANSFER_BYTES`] to each client at once through the tunnel, from a server on
/// `server_v4`: checks every byte and that the server saw each client's tunnel address;
/// returns how long it took.
fn download_through(emus: &[Emulator], server_v4: Ipv4Addr, client_v4: &[Ipv4Addr]) -> Duration {
    let listener = TcpListener::bind(SocketAddr::from((server_v4, 0))).unwrap();
    let tcp_addr = listener.local_addr().unwrap();
    let serving = serve_downloads(listener);
    let transfer_started = Instant::now();
    let downloads: Vec<_> = emus
        .iter()
        .enumerate()
        .map(|(k, emu)| download(emu, k, tcp_addr))
        .collect();
    for (k, d) in downloads.into_iter().enumerate() {
        let (seed, total, hash) = d.join().unwrap();
        assert_eq!(total, TRANSFER_BYTES, "client {k}: bytes received");
        assert_eq!(hash, expected_hash(seed), "client {k}: content differs");
    }
    let peers = serving.join().unwrap();
    let mut from: Vec<Ipv4Addr> = peers
        .iter()
        .map(|p| match p.ip() {
            std::net::IpAddr::V4(a) => a,
            other => panic!("peer {other}"),
        })
        .collect();
    from.sort();
    let mut expected = client_v4.to_vec();
    expected.sort();
    assert_eq!(
        from, expected,
        "the server saw each client's tunnel address"
    );
    transfer_started.elapsed()
}

/// Prints the last status lines of each tunnel end (after a slow transfer).
fn print_last_lines(peers: &mut [&mut Peer]) {
    eprintln!("the last status lines of each tunnel end follow");
    for p in peers.iter_mut() {
        p.seen.extend(p.lines.try_iter());
        let from = p.seen.len().saturating_sub(5);
        for line in &p.seen[from..] {
            eprintln!("  {}: {line}", p.name);
        }
    }
}

/// Ctrl-C ends every tunnel end cleanly, and nothing of them is left: not the server's device
/// and addresses (`10.77.net.0/24`, `server_v4`), not the emulators', not a process.
fn shut_down_and_check(
    mut clients: Vec<Peer>,
    mut server: Peer,
    emus: Vec<Emulator>,
    (server_v4, net): (Ipv4Addr, u8),
    server_dev: &str,
) {
    let emu_names: Vec<(String, [String; 2])> = emus
        .iter()
        .map(|e| {
            (
                e.outside_interface().to_string(),
                [e.outside_addr().to_string(), e.mobile_addr().to_string()],
            )
        })
        .collect();
    let pids: Vec<u32> = clients
        .iter()
        .map(|c| c.child.id())
        .chain([server.child.id()])
        .collect();
    for c in &mut clients {
        // A client that quits tells the relay (issue 36): the relay frees its session at
        // once, not after its idle timeout; its exit line says where it stood.
        let reconnections = c.last_reconnections();
        let exit = c.interrupt_and_wait();
        assert_eq!(exit["state"], "ended", "{exit}");
        assert_eq!(exit["reconnections"], reconnections, "{exit}");
        let down = server.wait_event("client_down", Duration::from_secs(3));
        eprintln!("{} quit; the relay: {down}", c.name);
    }
    server.interrupt_and_wait();
    let addrs = [server_v4.to_string(), format!("10.77.{net}.0/24")];
    let mut left = Vec::new();
    let clean = wait_until(Duration::from_secs(5), || {
        left = remains(server_dev, &addrs);
        left.is_empty()
    });
    assert!(clean, "left by the tunnel server: {left:?}");
    for e in emus {
        e.stop().unwrap();
    }
    for (iface, addrs) in &emu_names {
        let clean = wait_until(Duration::from_secs(5), || {
            left = remains(iface, addrs);
            left.is_empty()
        });
        assert!(clean, "left by an emulator: {left:?}");
    }
    for p in pids {
        assert!(process_gone(p), "process {p} still running");
    }
}

#[test]
fn two_clients_ping_and_download_through_one_server() {
    if !uid_is_root() {
        eprintln!("SKIPPED: the tunnel and the link emulator need root (TUN devices, namespaces)");
        return;
    }
    if !Path::new("/dev/net/tun").exists() {
        eprintln!("SKIPPED: no /dev/net/tun");
        return;
    }
    let started = Instant::now();
    let dir = tempfile::tempdir().unwrap();
    let exe = env!("CARGO_BIN_EXE_sprout");

    // The server's key and a free UDP port on every address of the host.
    let (key_file, server_key) = keygen(exe, dir.path());
    let port = free_udp_port();
    let net = free_network();
    let server_v4 = Ipv4Addr::new(10, 77, net, 1);
    let server_dev = format!("tns{:x}", std::process::id());
    let mut server = start_server(exe, dir.path(), &key_file, port, server_v4, &server_dev);
    assert!(interface_names().contains(&server_dev));

    // Two emulators with fast constant links, a client in each one's mobile namespace.
    let emus: Vec<Emulator> = (0..2).map(|_| fast_emulator()).collect();
    let (mut clients, client_v4) =
        start_clients(exe, dir.path(), &emus, port, &server_key, (server_v4, net));
    eprintln!(
        "both clients up ({} and {}) after {:.1} s",
        client_v4[0],
        client_v4[1],
        started.elapsed().as_secs_f64()
    );

    let replies = ping_through(&emus, server_v4, &client_v4);
    if replies != [(3, 3), (3, 3)] {
        let mut ends: Vec<&mut Peer> = clients.iter_mut().collect();
        ends.push(&mut server);
        print_last_lines(&mut ends);
    }
    assert_eq!(
        replies,
        [(3, 3), (3, 3)],
        "echo replies (from the server, from the other client) of each client"
    );
    let took = download_through(&emus, server_v4, &client_v4);
    let secs = took.as_secs_f64();
    eprintln!(
        "2 x {} MB through the tunnel in {secs:.1} s ({:.1} Mbit/s each)",
        TRANSFER_BYTES / 1_000_000,
        TRANSFER_BYTES as f64 * 8.0 / 1e6 / secs
    );
    if took > SLOW_TRANSFER {
        let mut ends: Vec<&mut Peer> = clients.iter_mut().collect();
        ends.push(&mut server);
        print_last_lines(&mut ends);
    }

    shut_down_and_check(clients, server, emus, (server_v4, net), &server_dev);
    let took = started.elapsed();
    eprintln!("whole test: {:.1} s", took.as_secs_f64());
    assert!(took < BUDGET, "took {took:?}, more than {BUDGET:?}");
}

/// Runs `ip ARGS` in this namespace; panics if it fails.
fn ip(args: &[String]) {
    let out = Command::new("ip").args(args).output().expect("ip");
    assert!(
        out.status.success(),
        "ip {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `ip` changes of this namespace undone when dropped (the test failed or ended): each entry
/// is the `ip` command that undoes one change.
struct Undo(Vec<Vec<String>>);

impl Undo {
    /// Runs `apply` and remembers `undo`.
    fn run(&mut self, apply: &[&str], undo: &[&str]) {
        ip(&apply.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        self.0.push(undo.iter().map(|s| s.to_string()).collect());
    }

    /// Undoes everything now, newest first.
    fn undo(&mut self) {
        while let Some(cmd) = self.0.pop() {
            let _ = Command::new("ip").args(&cmd).output();
        }
    }
}

impl Drop for Undo {
    fn drop(&mut self) {
        self.undo();
    }
}

/// Cuts the emulated link of the mobile address `mobile` both ways, as a radio outage does
/// (interfaces and routes stay): policy rules in this namespace blackhole what comes from it
/// and what goes to it.
fn cut_link(mobile: Ipv4Addr) -> Undo {
    let m = format!("{mobile}/32");
    let mut undo = Undo(Vec::new());
    for dir in ["from", "to"] {
        undo.run(
            &["rule", "add", dir, &m, "blackhole"],
            &["rule", "del", dir, &m, "blackhole"],
        );
    }
    undo
}

/// One tunnel client in `emu`'s mobile namespace with device `device` and `extra` arguments;
/// returns it with its IPv4 tunnel address once it is up.
fn start_one_client(
    exe: &str,
    dir: &Path,
    emu: &Emulator,
    (port, server_key): (u16, &str),
    device: &str,
    extra: &[String],
) -> (Peer, Ipv4Addr) {
    let flags = ClientFlags {
        server: Some(format!("{}:{port}", emu.outside_addr())),
        server_key: Some(server_key.into()),
        device: Some(device.into()),
        json: true,
        ..ClientFlags::default()
    };
    let mut cmd = Command::new(exe);
    cmd.args(tunnel_args::client_args(&flags)).args(extra);
    let mut client = Peer::start(&format!("tunnel client {device}"), &mut cmd, Some(emu), dir);
    let up = client.wait_event("up", Duration::from_secs(20));
    let v4 = up["v4"].as_str().unwrap_or_default();
    (client, v4.split('/').next().unwrap().parse().unwrap())
}

/// Whether a TCP connection from `emu`'s namespace to `addr` succeeds within 3 s.
fn tcp_connects(emu: &Emulator, addr: SocketAddr) -> bool {
    emu.run_on_namespace_thread(move || {
        TcpStream::connect_timeout(&addr, Duration::from_secs(3)).is_ok()
    })
    .unwrap()
    .join()
    .unwrap()
}

/// The relay killed with SIGKILL and started again: the client redials it and a ping through
/// the tunnel answers within [`RECOVERY`] of the restart; how long it took.
fn relay_restart(
    exe: &str,
    dir: &Path,
    (emu, client): (&Emulator, &mut Peer),
    server: &mut Peer,
    (key_file, port, server_v4, server_dev): (&Path, u16, Ipv4Addr, &str),
) -> Duration {
    server.child.kill().unwrap();
    server.child.wait().unwrap();
    // The watchdog removes the killed server's device; the new one takes its name.
    assert!(
        wait_until(Duration::from_secs(10), || !interface_names()
            .iter()
            .any(|n| n == server_dev)),
        "the killed server's device is still there"
    );
    *server = start_server(exe, dir, key_file, port, server_v4, server_dev);
    let restarted = Instant::now();
    let id = (std::process::id() as u16).wrapping_add(40);
    let took = ping_until(emu, server_v4, id, restarted, RECOVERY);
    let took = took.unwrap_or_else(|| {
        client.seen.extend(client.lines.try_iter());
        panic!(
            "no ping through the tunnel within {RECOVERY:?} of the relay's restart; client:\n{}",
            client.seen.join("\n")
        )
    });
    client.wait_event("reconnecting", Duration::from_secs(1));
    let again = client.wait_event("established", Duration::from_secs(1));
    assert_eq!(again["reconnections"], 1, "{again}");
    server.wait_event("client_up", Duration::from_secs(1));
    took
}

/// The link cut both ways for 35 s: the client says it reconnects (after 15 s) and keeps
/// running, and a ping through the tunnel answers within [`RECOVERY`] of the link coming back;
/// how long it took.
fn link_cut(emu: &Emulator, client: &mut Peer, server_v4: Ipv4Addr) -> Duration {
    let mut cut = cut_link(emu.mobile_addr());
    let cut_at = Instant::now();
    let id = (std::process::id() as u16).wrapping_add(41);
    // Nothing gets through while the link is cut.
    let during = ping_until(emu, server_v4, id, Instant::now(), Duration::from_secs(2));
    assert_eq!(during, None, "a ping answered through a cut link");
    let reconnecting = client.wait_event("reconnecting", Duration::from_secs(20));
    eprintln!("during the cut: {reconnecting}");
    let status = client.wait_event("status", Duration::from_secs(3));
    assert_eq!(status["reconnecting"], true, "{status}");
    assert_eq!(status["state"], "reconnecting", "{status}");
    thread::sleep(Duration::from_secs(35).saturating_sub(cut_at.elapsed()));
    assert!(
        client.child.try_wait().unwrap().is_none(),
        "the client exited"
    );
    cut.undo();
    let restored = Instant::now();
    let took = ping_until(emu, server_v4, id, restored, RECOVERY).unwrap_or_else(|| {
        client.seen.extend(client.lines.try_iter());
        panic!(
            "no ping through the tunnel within {RECOVERY:?} of the link coming back; client:\n{}",
            client.seen.join("\n")
        )
    });
    let again = client.wait_event("established", Duration::from_secs(1));
    assert_eq!(again["reconnections"], 2, "{again}");
    took
}

/// Whether this process can run the namespace tests (root and /dev/net/tun); says it skips if
/// not.
fn can_run_tunnels() -> bool {
    let can = uid_is_root() && Path::new("/dev/net/tun").exists();
    if !can {
        eprintln!("SKIPPED: the tunnel and the link emulator need root and /dev/net/tun");
    }
    can
}

/// A free UDP port on every address of the host.
fn free_udp_port() -> u16 {
    UdpSocket::bind("0.0.0.0:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Two fast constant links ([`LINK_MBPS`] each way) in a new emulator.
fn fast_emulator() -> Emulator {
    let trace = Arc::new(constant_rate_trace("const", LINK_MBPS, 1.0).unwrap());
    Emulator::start(EmulatorConfig::new(trace.clone(), trace)).unwrap()
}

/// A relay of one test: the server's key, a free UDP port and a free tunnel network
/// `10.77.net.0/24` (the server at `.1`, on device `server_dev`).
struct Relay {
    key_file: PathBuf,
    server_key: String,
    port: u16,
    net: u8,
    server_v4: Ipv4Addr,
    server_dev: String,
}

impl Relay {
    /// A key in `dir`, a port and network `free_network_for(k)`, and the tunnel server on them
    /// with device `PREFIX{pid}` and `extra` arguments, started.
    fn start(exe: &str, dir: &Path, (k, prefix): (u32, &str), extra: &[&str]) -> (Relay, Peer) {
        let (key_file, server_key) = keygen(exe, dir);
        let net = free_network_for(k);
        let relay = Relay {
            key_file,
            server_key,
            port: free_udp_port(),
            net,
            server_v4: Ipv4Addr::new(10, 77, net, 1),
            server_dev: format!("{prefix}{:x}", std::process::id()),
        };
        let server = start_server_with(
            exe,
            dir,
            &relay.key_file,
            relay.port,
            (relay.server_v4, &relay.server_dev),
            extra,
        );
        (relay, server)
    }

    /// One client of this relay in `emu`'s mobile namespace (see [`start_one_client`]).
    fn client(
        &self,
        (exe, dir): (&str, &Path),
        emu: &Emulator,
        device: &str,
        extra: &[String],
    ) -> (Peer, Ipv4Addr) {
        let to = (self.port, self.server_key.as_str());
        start_one_client(exe, dir, emu, to, device, extra)
    }

    /// [`shut_down_and_check`] of this relay's `server`, its one `client` and `emu`.
    fn shut_down(&self, client: Peer, server: Peer, emu: Emulator) {
        let net = (self.server_v4, self.net);
        shut_down_and_check(vec![client], server, vec![emu], net, &self.server_dev);
    }
}

#[test]
fn a_client_survives_a_relay_restart_and_a_35_s_link_cut() {
    if !can_run_tunnels() {
        return;
    }
    let started = Instant::now();
    let dir = tempfile::tempdir().unwrap();
    let exe = env!("CARGO_BIN_EXE_sprout");
    let (r, mut server) = Relay::start(exe, dir.path(), (1, "tsr"), &[]);
    let pid = std::process::id();
    let emu = fast_emulator();
    let (mut client, client_v4) = r.client((exe, dir.path()), &emu, &format!("tcr{pid:x}"), &[]);
    // Without --isolate a client reaches services on the relay host (finding 22.9).
    let listener = TcpListener::bind(SocketAddr::from((r.server_v4, 0))).unwrap();
    assert!(tcp_connects(&emu, listener.local_addr().unwrap()));
    eprintln!(
        "client up ({client_v4}) after {:.1} s",
        started.elapsed().as_secs_f64()
    );

    let took = relay_restart(
        exe,
        dir.path(),
        (&emu, &mut client),
        &mut server,
        (&r.key_file, r.port, r.server_v4, &r.server_dev),
    );
    eprintln!(
        "relay restart: a ping answers {:.1} s after it",
        took.as_secs_f64()
    );
    let took = link_cut(&emu, &mut client, r.server_v4);
    eprintln!(
        "35 s link cut: a ping answers {:.1} s after the link is back",
        took.as_secs_f64()
    );
    drop(listener);

    r.shut_down(client, server, emu);
    let took = started.elapsed();
    eprintln!("whole test: {:.1} s", took.as_secs_f64());
    assert!(
        took < RECONNECT_BUDGET,
        "took {took:?}, more than {RECONNECT_BUDGET:?}"
    );
}

#[test]
fn an_isolated_relay_keeps_clients_from_its_own_addresses() {
    if !can_run_tunnels() {
        return;
    }
    let started = Instant::now();
    let dir = tempfile::tempdir().unwrap();
    let exe = env!("CARGO_BIN_EXE_sprout");
    let (r, mut server) = Relay::start(exe, dir.path(), (2, "tsi"), &["--isolate"]);
    let (server_v4, pid) = (r.server_v4, std::process::id());
    // Another address of the relay host, on its loopback device, that the client routes into
    // the tunnel.
    let host_addr = Ipv4Addr::new(10, 78, r.net, 1);
    assert!(!sprout_os::interfaces::ipv4_addresses_in_use().contains(&host_addr));
    let mut undo = Undo(Vec::new());
    let a = format!("{host_addr}/32");
    undo.run(
        &["addr", "add", &a, "dev", "lo"],
        &["addr", "del", &a, "dev", "lo"],
    );
    let emu = fast_emulator();
    let route = ["--route".to_string(), a.clone()];
    let (client, _) = r.client((exe, dir.path()), &emu, &format!("tci{pid:x}"), &route);
    let id = (pid as u16).wrapping_add(42);
    let ping = ping_until(&emu, server_v4, id, Instant::now(), Duration::from_secs(5));
    assert!(ping.is_some(), "ICMP to the tunnel address still answers");
    let on_tunnel = TcpListener::bind(SocketAddr::from((server_v4, 0))).unwrap();
    let on_host = TcpListener::bind(SocketAddr::from((host_addr, 0))).unwrap();
    assert!(
        !tcp_connects(&emu, on_tunnel.local_addr().unwrap()),
        "TCP to the tunnel address"
    );
    assert!(
        !tcp_connects(&emu, on_host.local_addr().unwrap()),
        "TCP to the host's address"
    );
    // The server counts what it dropped.
    let until = Instant::now() + Duration::from_secs(5);
    loop {
        let status = server.wait_event("status", Duration::from_secs(3));
        if status["drops"]["to_relay_host"].as_u64().unwrap_or(0) >= 2 {
            break;
        }
        assert!(
            Instant::now() < until,
            "no to_relay_host drops counted: {status}"
        );
    }
    drop((on_tunnel, on_host));
    r.shut_down(client, server, emu);
    undo.undo();
    eprintln!("whole test: {:.1} s", started.elapsed().as_secs_f64());
}

/// Link rate of [`downloads_at_a_high_link_rate`] unless `SPROUT_TUNNEL_MBIT` says (Mbit/s,
/// each way).
const HIGH_RATE_MBPS: f64 = 100.0;
/// Seconds each download of [`downloads_at_a_high_link_rate`] lasts unless
/// `SPROUT_TUNNEL_SECONDS` says.
const HIGH_RATE_SECONDS: f64 = 20.0;
/// Goodput is measured after this much of each download (the sessions' start-up), in seconds.
const HIGH_RATE_SKIP_S: f64 = 5.0;
/// One download must reach this share of the link as goodput (70 Mbit/s of 100).
const ONE_DOWNLOAD_SHARE: f64 = 0.70;
/// Each of two clients' downloads at once, on links of their own through one server, must
/// reach this share of its link (35 Mbit/s of 100).
const TWO_DOWNLOADS_SHARE: f64 = 0.35;

/// A number from the environment variable `name`, or `default`.
fn env_number(name: &str, default: f64) -> f64 {
    std::env::var(name)
        .ok()
        .map(|v| v.parse().unwrap_or_else(|e| panic!("{name}={v}: {e}")))
        .unwrap_or(default)
}

/// Serves each of `clients` connections on `listener` a stream of bytes until it closes.
fn serve_streams(listener: TcpListener, clients: usize) -> thread::JoinHandle<()> {
    thread::spawn(move || {
        let mut serving = Vec::new();
        for _ in 0..clients {
            let (mut conn, _) = listener.accept().unwrap();
            serving.push(thread::spawn(move || {
                let buf = vec![0x5au8; 65_536];
                while conn.write_all(&buf).is_ok() {}
            }));
        }
        for s in serving {
            s.join().unwrap();
        }
    })
}

/// A download from `addr` in `emu`'s namespace for `seconds`; returns its goodput after
/// `skip` seconds (Mbit/s of application bytes).
fn timed_download(
    emu: &Emulator,
    addr: SocketAddr,
    (seconds, skip): (f64, f64),
) -> thread::JoinHandle<f64> {
    emu.run_on_namespace_thread(move || {
        // The path warmed by a ping just before (see `a_ping_after_idle_is_answered_at_once`).
        let IpAddr::V4(v4) = addr.ip() else {
            panic!("{addr}: not IPv4")
        };
        let sock = icmp_socket();
        let id = addr.port();
        let warm = (1..=u16::MAX).any(|seq| {
            echo(
                &sock,
                v4,
                (id, seq),
                Instant::now() + Duration::from_millis(250),
            )
        });
        assert!(warm, "no ping answered through the tunnel");
        let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(20))
            .expect("connect through the tunnel");
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let started = Instant::now();
        let (skip, end) = (
            Duration::from_secs_f64(skip),
            Duration::from_secs_f64(seconds),
        );
        let mut counted = 0u64;
        let mut buf = vec![0u8; 262_144];
        while started.elapsed() < end {
            match s.read(&mut buf) {
                Ok(0) => panic!("the server closed the download"),
                Ok(n) if started.elapsed() >= skip => counted += n as u64,
                Ok(_) => {}
                Err(e) => panic!("reading the download: {e}"),
            }
        }
        counted as f64 * 8.0 / 1e6 / (end - skip).as_secs_f64()
    })
    .unwrap()
}

/// Downloads from a server on `server_v4` to each of `emus`' namespaces at once, each for
/// `seconds`; their goodputs after `skip` seconds (Mbit/s).
fn timed_downloads(emus: &[&Emulator], server_v4: Ipv4Addr, times: (f64, f64)) -> Vec<f64> {
    let listener = TcpListener::bind(SocketAddr::from((server_v4, 0))).unwrap();
    let addr = listener.local_addr().unwrap();
    let serving = serve_streams(listener, emus.len());
    let downloads: Vec<_> = emus
        .iter()
        .map(|e| timed_download(e, addr, times))
        .collect();
    let goodputs = downloads.into_iter().map(|d| d.join().unwrap()).collect();
    serving.join().unwrap();
    goodputs
}

/// The latest status line of `peer` (reading what it printed so far), summarised: its drops
/// over the queue's cap since the start, the cap and what is queued (bytes) and the forecast
/// (packets over the next 160 ms).
fn queue_summary(peer: &mut Peer) -> String {
    peer.seen.extend(peer.lines.try_iter());
    let last = peer.seen.iter().rev().find_map(|l| {
        serde_json::from_str::<serde_json::Value>(l)
            .ok()
            .filter(|v| v["event"] == "status")
    });
    match last {
        Some(v) => format!(
            "{}: over_cap drops {}, queue {}/{} B, forecast {} pkt",
            peer.name,
            v["queue_drops"]["over_cap"],
            v["queued_bytes"],
            v["cap_bytes"],
            v["forecast_packets"]
        ),
        None => format!("{}: no status line yet", peer.name),
    }
}

/// SproutTunnel at a modern link rate (issue 24): over emulated constant links of
/// [`HIGH_RATE_MBPS`] each way (20 ms each way), one TCP download through the tunnel must reach
/// [`ONE_DOWNLOAD_SHARE`] of the link as goodput, then two clients at once (each on a link
/// of its own, one server) [`TWO_DOWNLOADS_SHARE`] each. Real time, about 50 s, so not part of
/// the default run:
///
/// ```text
/// cargo test --release -p sprout-cli --test cli_suite -- --ignored --nocapture high_link_rate
/// ```
///
/// `SPROUT_TUNNEL_MBIT` sets the link rate, `SPROUT_TUNNEL_SECONDS` each download's length,
/// `SPROUT_TUNNEL_MODEL` the ends' `--model` (the shares are asserted whatever they are).
#[test]
#[ignore = "real time, about 50 s: run with --ignored"]
fn downloads_at_a_high_link_rate() {
    if !can_run_tunnels() {
        return;
    }
    let rate = env_number("SPROUT_TUNNEL_MBIT", HIGH_RATE_MBPS);
    let seconds = env_number("SPROUT_TUNNEL_SECONDS", HIGH_RATE_SECONDS);
    assert!(
        seconds > HIGH_RATE_SKIP_S + 1.0,
        "SPROUT_TUNNEL_SECONDS too short"
    );
    let model = model_flag();
    let extra: Vec<&str> = model.iter().map(String::as_str).collect();
    let dir = tempfile::tempdir().unwrap();
    let exe = env!("CARGO_BIN_EXE_sprout");
    let (relay, mut server) = Relay::start(exe, dir.path(), (5, "tnh"), &extra);
    let trace = Arc::new(constant_rate_trace("const", rate, 1.0).unwrap());
    let emus: Vec<Emulator> = (0..2)
        .map(|_| Emulator::start(EmulatorConfig::new(trace.clone(), trace.clone())).unwrap())
        .collect();
    let pid = std::process::id();
    let (c0, _) = relay.client((exe, dir.path()), &emus[0], &format!("tnh{pid:x}a"), &model);
    let times = (seconds, HIGH_RATE_SKIP_S);
    let one = timed_downloads(&[&emus[0]], relay.server_v4, times)[0];
    eprintln!(
        "one download through the tunnel over {rate} Mbit/s: {one:.1} Mbit/s ({:.0}% of the link; model {})",
        100.0 * one / rate,
        model.first().map_or("default", String::as_str)
    );
    eprintln!("  {}", queue_summary(&mut server));
    let (c1, _) = relay.client((exe, dir.path()), &emus[1], &format!("tnh{pid:x}b"), &model);
    let two = timed_downloads(&[&emus[0], &emus[1]], relay.server_v4, times);
    eprintln!(
        "two clients at once, each over its own {rate} Mbit/s link: {:.1} and {:.1} Mbit/s",
        two[0], two[1]
    );
    eprintln!("  {}", queue_summary(&mut server));
    let net = (relay.server_v4, relay.net);
    shut_down_and_check(vec![c0, c1], server, emus, net, &relay.server_dev);
    assert!(
        one >= ONE_DOWNLOAD_SHARE * rate,
        "one download: {one:.1} Mbit/s, below {:.0}% of {rate}",
        100.0 * ONE_DOWNLOAD_SHARE
    );
    for (k, g) in two.iter().enumerate() {
        assert!(
            *g >= TWO_DOWNLOADS_SHARE * rate,
            "client {k} of two: {g:.1} Mbit/s, below {:.0}% of {rate}",
            100.0 * TWO_DOWNLOADS_SHARE
        );
    }
}

/// `--model=M` for both tunnel ends when `SPROUT_TUNNEL_MODEL` is set (none: their default).
fn model_flag() -> Vec<String> {
    std::env::var("SPROUT_TUNNEL_MODEL")
        .map(|m| vec![format!("--model={m}")])
        .unwrap_or_default()
}

/// A ping through the tunnel after its session idled is answered within [`IDLE_PING_LIMIT`]
/// (with the paper's model: one round trip, 42 ms, after 0, 3 and 10 s of idle; with the wide
/// model 42-46 ms). Before the wide forecast summed a spread-out belief value by value, an
/// idle direction's forecast fell to zero while only heartbeats crossed, and the first
/// packets waited 1.0 s, 11.8 s and 16.1 s after 0, 3 and 10 s of idle in one run, 3.1 s,
/// 2.1 s and 8.0 s in another. About 15 s. `SPROUT_TUNNEL_MODEL` sets the ends' `--model`.
#[test]
fn a_ping_after_idle_is_answered_at_once() {
    if !can_run_tunnels() {
        return;
    }
    let model = model_flag();
    let extra: Vec<&str> = model.iter().map(String::as_str).collect();
    let dir = tempfile::tempdir().unwrap();
    let exe = env!("CARGO_BIN_EXE_sprout");
    let (relay, server) = Relay::start(exe, dir.path(), (6, "tsq"), &extra);
    let emu = fast_emulator();
    let pid = std::process::id();
    let (client, _) = relay.client((exe, dir.path()), &emu, &format!("tsq{pid:x}c"), &model);
    let mut waits = Vec::new();
    for idle_s in [0u64, 3, 10] {
        thread::sleep(Duration::from_secs(idle_s));
        let id = (pid as u16).wrapping_add(idle_s as u16);
        let first = ping_until(&emu, relay.server_v4, id, Instant::now(), RECOVERY);
        eprintln!("after {idle_s} s idle, the first ping answered after {first:?}");
        waits.push((idle_s, first));
    }
    relay.shut_down(client, server, emu);
    for (idle_s, first) in waits {
        assert!(
            first.is_some_and(|t| t <= IDLE_PING_LIMIT),
            "after {idle_s} s idle: first reply after {first:?}"
        );
    }
}

/// The most the first ping after an idle spell may wait (a few round trips of 40 ms).
const IDLE_PING_LIMIT: Duration = Duration::from_millis(500);

/// The network namespace of process `pid` (its `/proc/PID/ns/net` link, "net:[INODE]").
fn netns_of(pid: u32) -> Option<String> {
    std::fs::read_link(format!("/proc/{pid}/ns/net"))
        .ok()
        .map(|p| p.display().to_string())
}

/// Everything that still holds one of `namespaces` ("net:[INODE]"): a task of any process
/// (its threads included) or a bind mount.
fn namespace_holders(namespaces: &[String]) -> Vec<String> {
    let mut held = Vec::new();
    let pids = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()));
    for pid in pids {
        let tasks = std::fs::read_dir(format!("/proc/{pid}/task"))
            .map(|d| d.flatten().map(|e| e.path()).collect::<Vec<_>>())
            .unwrap_or_default();
        for task in tasks {
            if let Ok(ns) = std::fs::read_link(task.join("ns/net")) {
                if namespaces.contains(&ns.display().to_string()) {
                    held.push(format!("{} in {}", task.display(), ns.display()));
                }
            }
        }
    }
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    for ns in namespaces {
        if mounts.contains(ns.as_str()) {
            held.push(format!("a mount of {ns}"));
        }
    }
    held
}

/// The processes whose environment marks them as started by the `sprout tunnel try` of pid
/// `owner`.
fn marked_processes(owner: u32) -> Vec<u32> {
    let mark = format!("SPROUT_TUNNEL_TRY_OWNER={owner}");
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .map(|env| env.split(|&b| b == 0).any(|kv| kv == mark.as_bytes()))
                .unwrap_or(false)
        })
        .collect()
}

/// What one `sprout tunnel try` showed of itself while it ran.
#[derive(Default)]
struct TryRun {
    /// Its pid, and those of the tunnel's relay and client.
    pids: Vec<u32>,
    /// The relay's and the client's network namespaces.
    namespaces: Vec<String>,
    /// Both ends of its emulated link.
    link_addrs: Vec<String>,
    /// Its standard output.
    stdout: Vec<String>,
}

impl TryRun {
    /// Notes what `line` of its output says: the link's addresses, the ends' pids (and their
    /// namespaces, read while they run).
    fn note(&mut self, line: &str) {
        if let Some(rest) = line.strip_prefix("link: ") {
            for word in rest.split_whitespace() {
                if word.parse::<Ipv4Addr>().is_ok() {
                    self.link_addrs.push(word.to_string());
                }
            }
        }
        if line.starts_with("relay: ") || line.starts_with("client: ") {
            let pid = line
                .split("(pid ")
                .nth(1)
                .and_then(|s| s.split(')').next()?.parse::<u32>().ok())
                .unwrap_or_else(|| panic!("no pid in {line:?}"));
            self.pids.push(pid);
            self.namespaces
                .push(netns_of(pid).unwrap_or_else(|| panic!("no namespace of {pid}")));
        }
        self.stdout.push(line.to_string());
    }

    /// What remains of the run: its processes (by pid and by mark), a holder of its
    /// namespaces, its devices, addresses and routes in this namespace, a named namespace, its
    /// key folder.
    fn leftovers(&self) -> Vec<String> {
        let own = self.pids[0];
        let mut left: Vec<String> = self
            .pids
            .iter()
            .filter(|&&p| !process_gone(p))
            .map(|p| format!("process {p}"))
            .collect();
        left.extend(
            marked_processes(own)
                .iter()
                .map(|p| format!("marked process {p}")),
        );
        left.extend(namespace_holders(&self.namespaces));
        let mut addrs = self.link_addrs.clone();
        addrs.push("10.77.0.0/24".into());
        left.extend(remains(&format!("spo{own:x}-"), &addrs));
        let dir = std::env::temp_dir().join(format!("sprout-tunnel-try-{own}"));
        if dir.exists() {
            left.push(format!("folder {}", dir.display()));
        }
        left
    }
}

/// Starts `sprout tunnel try ARGS` with its standard output read line by line.
fn start_try(args: &[&str]) -> (Child, Receiver<String>) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_sprout"))
        .args(["tunnel", "try"])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    (child, rx)
}

/// Reads the run's lines until it exits (killed after `limit`); its exit status and stderr.
fn finish_try(
    child: &mut Child,
    rx: &Receiver<String>,
    run: &mut TryRun,
    limit: Duration,
) -> (std::process::ExitStatus, String) {
    let until = Instant::now() + limit;
    loop {
        match rx.recv_timeout(Duration::from_millis(100)) {
            Ok(line) => run.note(&line),
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
            Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
        if Instant::now() > until {
            let _ = child.kill();
            panic!(
                "sprout tunnel try still ran after {limit:?}:\n{}",
                run.stdout.join("\n")
            );
        }
    }
    let status = child.wait().unwrap();
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    (status, err)
}

/// `sprout tunnel try` (issue 39): to a normal end it prints the pings' round trips alone and
/// beside the download, the download's rate and both tunnel ends' totals, from two network
/// namespaces of its own (the relay's and the client's, neither this one); interrupted with
/// SIGINT during its measurements it exits with 130 saying so. After either, nothing of it
/// remains: no process (by pid or by its mark), nothing holding its namespaces, no device,
/// address or route here, no named namespace, no key folder. About 12 s; bounded at 60 s.
#[test]
fn tunnel_try_measures_and_leaves_nothing_behind_also_after_sigint() {
    if !uid_is_root() || !Path::new("/dev/net/tun").exists() {
        sprout_link::testdata::skip(
            "sprout tunnel try needs root and /dev/net/tun (network namespaces, TUN devices)",
        );
        return;
    }
    let started = Instant::now();
    let here = netns_of(std::process::id()).unwrap();

    // To a normal end.
    let (mut child, rx) = start_try(&["--duration", "3"]);
    let mut run = TryRun {
        pids: vec![child.id()],
        ..TryRun::default()
    };
    let (status, err) = finish_try(&mut child, &rx, &mut run, Duration::from_secs(30));
    let out = run.stdout.join("\n");
    assert!(status.success(), "{status}\n{out}\n{err}");
    assert_eq!(run.namespaces.len(), 2, "{out}");
    assert_ne!(run.namespaces[0], run.namespaces[1], "one namespace each");
    assert!(!run.namespaces.contains(&here), "{:?}", run.namespaces);
    assert_eq!(run.link_addrs.len(), 2, "{out}");
    for want in [
        "ping 10.77.0.1 from 10.77.0.2, alone:",
        "ping 10.77.0.1 from 10.77.0.2, beside it:",
        "round trip min",
        "p95",
        "download 10.77.0.1 -> 10.77.0.2 (TCP): ",
        "tunnel, relay's end:  sent",
        "tunnel, client's end: sent",
    ] {
        assert!(out.contains(want), "no {want:?} in:\n{out}");
    }
    // The pings alone were answered (one late answer is allowed: a loaded CI machine can hold
    // a reply past the ping's timeout on a lossless link), and the download moved data at a
    // real rate.
    let alone = run.stdout.iter().find(|l| l.contains("alone:")).unwrap();
    // "N of M answered": M is 5 or 6 (a ping every 200 ms for 1 s, timers aside).
    let counts: Vec<u32> = alone
        .split(": ")
        .nth(1)
        .and_then(|rest| rest.split(" answered").next())
        .map(|nm| {
            nm.split(" of ")
                .filter_map(|x| x.trim().parse().ok())
                .collect()
        })
        .unwrap_or_default();
    assert!(
        matches!(counts[..], [n, m] if m >= 4 && n + 1 >= m),
        "{alone}"
    );
    let mbps: f64 = run
        .stdout
        .iter()
        .find(|l| l.starts_with("download "))
        .and_then(|l| l.split(" s = ").nth(1)?.split(' ').next()?.parse().ok())
        .unwrap_or_else(|| panic!("no rate in:\n{out}"));
    assert!(mbps > 2.0, "{mbps} Mbit/s over a 20 Mbit/s link:\n{out}");
    let mut left = Vec::new();
    let clean = wait_until(Duration::from_secs(5), || {
        left = run.leftovers();
        left.is_empty()
    });
    assert!(clean, "left after a normal end: {left:?}");

    // Interrupted (SIGINT) once its measurements are under way.
    let (mut child, rx) = start_try(&["--duration", "20"]);
    let mut run = TryRun {
        pids: vec![child.id()],
        ..TryRun::default()
    };
    let until = Instant::now() + Duration::from_secs(20);
    while !run
        .stdout
        .iter()
        .any(|l| l.starts_with("through the tunnel:"))
    {
        assert!(Instant::now() < until, "{}", run.stdout.join("\n"));
        if let Ok(line) = rx.recv_timeout(Duration::from_millis(100)) {
            run.note(&line);
        }
    }
    thread::sleep(Duration::from_secs(2));
    assert_eq!(run.namespaces.len(), 2);
    rustix::process::kill_process(
        rustix::process::Pid::from_child(&child),
        rustix::process::Signal::INT,
    )
    .unwrap();
    let (status, err) = finish_try(&mut child, &rx, &mut run, Duration::from_secs(15));
    assert_eq!(status.code(), Some(130), "{err}");
    assert!(err.contains("interrupted by SIGINT"), "{err}");
    assert!(
        !run.stdout.iter().any(|l| l.starts_with("download ")),
        "no report when interrupted"
    );
    let clean = wait_until(Duration::from_secs(5), || {
        left = run.leftovers();
        left.is_empty()
    });
    assert!(clean, "left after SIGINT: {left:?}");
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "{:?}",
        started.elapsed()
    );
}
