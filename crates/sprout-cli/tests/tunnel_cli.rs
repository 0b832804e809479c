//! `sprout tunnel server` and `sprout tunnel client` end to end: the server in this namespace,
//! the client in the emulator's mobile namespace behind an emulated 12 Mbit/s link; UDP both
//! ways through the tunnel; Ctrl-C removes everything; a full-tunnel client killed with SIGKILL
//! leaves no host route (the watchdog); and a non-root run gets a clear error. The root tests
//! print "SKIPPED: ..." when not root.

use std::io::{BufRead, BufReader};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, UdpSocket};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rustix::process::Signal;
use serde_json::Value;
use sprout_emu::leftovers::{interface_names, remains, wait_until};
use sprout_emu::{Emulator, EmulatorConfig};
use sprout_link::constant_rate_trace;
use sprout_net::secure::PrivateKey;
use sprout_os::caps::has_network_privileges;

const EXE: &str = env!("CARGO_BIN_EXE_sprout");

fn can_run() -> bool {
    if !has_network_privileges() || !std::path::Path::new("/dev/net/tun").exists() {
        eprintln!("SKIPPED: needs root (CAP_NET_ADMIN, CAP_SYS_ADMIN) and /dev/net/tun");
        return false;
    }
    if Command::new("ip").arg("-V").output().is_err() {
        eprintln!("SKIPPED: no `ip` command (iproute2)");
        return false;
    }
    true
}

/// A per-process number so that parallel runs of this file use other networks.
fn unique(k: u32) -> u32 {
    (std::process::id() * 7 + k) % 200 + 20
}

fn emulator() -> Emulator {
    let trace = Arc::new(constant_rate_trace("12mbit", 12.0, 1.0).unwrap());
    Emulator::start(EmulatorConfig::new(trace.clone(), trace)).unwrap()
}

/// A running `sprout tunnel` process, its JSON lines and its standard error (kept, and shown
/// only when a wait fails: the watchdog's "ended without cleaning up" after a SIGKILL is what
/// the test expects, not a failure to print).
struct Proc {
    name: &'static str,
    child: Child,
    lines: Receiver<Value>,
    seen: Vec<Value>,
    stderr: Arc<Mutex<String>>,
}

impl Proc {
    fn new(name: &'static str, mut child: Child) -> Proc {
        let stderr = Arc::new(Mutex::new(String::new()));
        if let Some(err) = child.stderr.take() {
            let kept = stderr.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(err).lines().map_while(Result::ok) {
                    let mut k = kept.lock().unwrap_or_else(|e| e.into_inner());
                    k.push_str(&line);
                    k.push('\n');
                }
            });
        }
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                match serde_json::from_str::<Value>(&line) {
                    Ok(v) => {
                        if tx.send(v).is_err() {
                            break;
                        }
                    }
                    Err(_) => eprintln!("non-JSON line: {line}"),
                }
            }
        });
        Proc {
            name,
            child,
            lines: rx,
            seen: Vec::new(),
            stderr,
        }
    }

    /// What the process (and its watchdog) wrote to standard error so far.
    fn stderr(&self) -> String {
        self.stderr
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The next line whose `event` is `event`, within `limit`.
    fn wait_event(&mut self, event: &str, limit: Duration) -> Value {
        let until = Instant::now() + limit;
        loop {
            let left = until.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(v) => {
                    self.seen.push(v.clone());
                    if v["event"] == event {
                        return v;
                    }
                }
                Err(_) => {
                    let status = self.child.try_wait().ok().flatten();
                    let _ = self.child.kill();
                    panic!(
                        "{}: no {event:?} line within {limit:?} (exit status {status:?}); lines: {:#?}\nstderr:\n{}",
                        self.name,
                        self.seen.iter().filter(|v| v["event"] != "status").collect::<Vec<_>>(),
                        self.stderr()
                    );
                }
            }
        }
    }

    fn signal(&self, sig: Signal) {
        let _ = rustix::process::kill_process(rustix::process::Pid::from_child(&self.child), sig);
    }

    /// Waits for the exit (at most `limit`), returns its status.
    fn wait_exit(&mut self, limit: Duration) -> std::process::ExitStatus {
        let until = Instant::now() + limit;
        loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                return s;
            }
            if Instant::now() > until {
                let _ = self.child.kill();
                panic!("{} did not exit within {limit:?}", self.name);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

struct ServerSetup {
    _dir: tempfile::TempDir,
    proc: Proc,
    port: u16,
    key: String,
    device: String,
    v4: Ipv4Addr,
}

/// Starts `sprout tunnel server` in this namespace on network 10.`net`.`n`.0/24 (and
/// fd77:`net`:`n`::/64), listening on `listen_ip` (any port), device `dev%d`.
fn start_server(net: u32, n: u32, dev: &str, listen_ip: &str) -> ServerSetup {
    let dir = tempfile::tempdir().unwrap();
    let key_path = dir.path().join("server.key");
    PrivateKey::generate().write_file(&key_path).unwrap();
    let child = Command::new(EXE)
        .args(["tunnel", "server", "--allow-any-client", "--json"])
        .arg("--key")
        .arg(&key_path)
        .args([
            "--listen",
            &SocketAddr::new(listen_ip.parse().unwrap(), 0).to_string(),
        ])
        .args(["--address", &format!("10.{net}.{n}.1/24")])
        .args(["--address6", &format!("fd77:{net}:{n}::1/64")])
        .args(["--device", &format!("{dev}%d")])
        .args(["--status-interval", "0.5"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut proc = Proc::new("server", child);
    let l = proc.wait_event("listening", Duration::from_secs(10));
    let listen: SocketAddr = l["listen"].as_str().unwrap().parse().unwrap();
    let device = l["device"].as_str().unwrap().to_string();
    assert!(device.starts_with(dev), "{l}");
    assert!(interface_names().contains(&device));
    assert_eq!(l["v4"], format!("10.{net}.{n}.1/24"));
    // 1500 - 28 (IPv4 + UDP) - 32 - 77 (also on a dual-stack [::] socket: IPv4 clients).
    assert_eq!(l["mtu"], 1363);
    ServerSetup {
        _dir: dir,
        proc,
        port: listen.port(),
        key: l["public_key"].as_str().unwrap().to_string(),
        device,
        v4: format!("10.{net}.{n}.1").parse().unwrap(),
    }
}

fn client_command(server: SocketAddr, key: &str, extra: &[&str]) -> Command {
    let mut c = Command::new(EXE);
    c.args(["tunnel", "client", "--json", "--device", "stcl%d"])
        .args(["--server", &server.to_string()])
        .args(["--server-key", key])
        .args(["--status-interval", "0.5"])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c
}

/// One datagram from the client's tunnel address to the server's, answered; retried a few
/// times. `client` runs in the mobile namespace.
fn exchange(emu: &Emulator, client: IpAddr, server: IpAddr) {
    let srv = UdpSocket::bind(SocketAddr::new(server, 0)).unwrap();
    srv.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let srv_addr = srv.local_addr().unwrap();
    let echo = std::thread::spawn(move || {
        let mut buf = [0u8; 2048];
        let (n, from) = srv
            .recv_from(&mut buf)
            .expect("nothing came through the tunnel");
        srv.send_to(&buf[..n], from).unwrap();
        (buf[..n].to_vec(), from)
    });
    let cli = emu
        .run_on_namespace_thread(move || {
            let sock = UdpSocket::bind(SocketAddr::new(client, 0)).unwrap();
            sock.set_read_timeout(Some(Duration::from_millis(500)))
                .unwrap();
            let msg = b"through the sprout tunnel".to_vec();
            for _ in 0..10 {
                sock.send_to(&msg, srv_addr).unwrap();
                let mut buf = [0u8; 2048];
                if let Ok((n, from)) = sock.recv_from(&mut buf) {
                    return Some((buf[..n].to_vec(), from, sock.local_addr().unwrap()));
                }
            }
            None
        })
        .unwrap();
    let (got, from, local) = cli
        .join()
        .unwrap()
        .expect("no answer came back through the tunnel");
    let (at_server, server_saw) = echo.join().unwrap();
    assert_eq!(got, b"through the sprout tunnel");
    assert_eq!(at_server, got);
    assert_eq!(from, srv_addr);
    // The server saw the client's own tunnel address: nothing was translated on the way.
    assert_eq!(server_saw, local);
}

fn assert_gone_here(device: &str, addrs: &[String]) {
    let mut left = Vec::new();
    assert!(
        wait_until(Duration::from_secs(3), || {
            left = remains(device, addrs);
            left.is_empty()
        }),
        "left behind in this namespace: {left:?}"
    );
}

/// `remains` run inside the mobile namespace.
fn remains_in(emu: &Emulator, device: &str, addrs: &[String]) -> Vec<String> {
    let (device, addrs) = (device.to_string(), addrs.to_vec());
    emu.run_on_namespace_thread(move || {
        let mut left = Vec::new();
        wait_until(Duration::from_secs(3), || {
            left = remains(&device, &addrs);
            left.is_empty()
        });
        left
    })
    .unwrap()
    .join()
    .unwrap()
}

fn routes_in(emu: &Emulator) -> String {
    emu.run_on_namespace_thread(|| {
        let out = Command::new("ip").args(["route", "show"]).output().unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    })
    .unwrap()
    .join()
    .unwrap()
}

#[test]
fn datagrams_cross_both_ways_and_ctrl_c_removes_everything() {
    if !can_run() {
        return;
    }
    let n = unique(0);
    let emu = emulator();
    // A dual-stack socket when this host has IPv6: the IPv4 client arrives as ::ffff:a.b.c.d.
    let ipv6 = std::fs::read_to_string("/proc/sys/net/ipv6/conf/all/disable_ipv6")
        .is_ok_and(|v| v.trim() == "0");
    let listen = if ipv6 { "::" } else { "0.0.0.0" };
    let mut server = start_server(201, n, "stsa", listen);
    // A second server cannot take the first one's device name, address or port, and says so.
    let (other_net, dev, net, any) = (
        format!("10.204.{n}.1/24"),
        server.device.clone(),
        format!("10.201.{n}.1/24"),
        "0.0.0.0:0".to_string(),
    );
    let port = format!("0.0.0.0:{}", server.port);
    for (device, address, listen, want) in [
        (
            dev.as_str(),
            other_net.as_str(),
            any.as_str(),
            "an interface of that name exists",
        ),
        (
            "stsx%d",
            net.as_str(),
            any.as_str(),
            "is in use on interface",
        ),
        (
            "stsx%d",
            other_net.as_str(),
            port.as_str(),
            "address in use",
        ),
    ] {
        let key = server._dir.path().join("server.key");
        let out = Command::new(EXE)
            .args([
                "tunnel",
                "server",
                "--allow-any-client",
                "--address6",
                "none",
            ])
            .arg("--key")
            .arg(&key)
            .args(["--device", device, "--address", address, "--listen", listen])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{want}: {err}");
        assert!(err.contains(want), "{want}: {err}");
        assert!(
            !interface_names().iter().any(|d| d.starts_with("stsx")),
            "{want}: a device was left"
        );
    }
    let server_udp = SocketAddr::new(emu.outside_addr().into(), server.port);
    let mut client = Proc::new(
        "client",
        emu.spawn_in_namespace(&mut client_command(server_udp, &server.key, &[]))
            .unwrap(),
    );
    let c = client.wait_event("connecting", Duration::from_secs(5));
    assert_eq!(c["ephemeral_key"], true);
    client.wait_event("established", Duration::from_secs(10));
    let up = client.wait_event("up", Duration::from_secs(10));
    let up_s = client.wait_event("status", Duration::from_secs(5));
    assert!(up_s["sessions"].is_array(), "{up_s}");
    let cdev = up["device"].as_str().unwrap().to_string();
    assert!(cdev.starts_with("stcl"), "{up}");
    assert_eq!(up["v4"], format!("10.201.{n}.2/24"), "{up}");
    assert_eq!(up["server_v4"], format!("10.201.{n}.1"), "{up}");
    assert_eq!(up["mtu"], 1363);
    let cu = server.proc.wait_event("client_up", Duration::from_secs(5));
    assert_eq!(cu["v4"], format!("10.201.{n}.2"), "{cu}");
    assert_eq!(cu["peer"], c["public_key"], "{cu}");

    let client_v4: Ipv4Addr = format!("10.201.{n}.2").parse().unwrap();
    exchange(&emu, client_v4.into(), server.v4.into());
    let mut addrs = vec![server.v4.to_string(), client_v4.to_string()];
    // IPv6 too when both namespaces have it.
    if let (Some(v6), Some(sv6)) = (up["v6"].as_str(), up["server_v6"].as_str()) {
        let v6: IpAddr = v6.split('/').next().unwrap().parse().unwrap();
        let sv6: IpAddr = sv6.parse().unwrap();
        exchange(&emu, v6, sv6);
        addrs.push(v6.to_string());
        addrs.push(sv6.to_string());
    } else {
        eprintln!("IPv6 not carried here: {up}");
    }
    // The status lines count the traffic (the next lines after the exchange).
    let until = Instant::now() + Duration::from_secs(3);
    loop {
        let s = server.proc.wait_event("status", Duration::from_secs(3));
        assert_eq!(s["clients"], 1, "{s}");
        let session = &s["sessions"][0];
        if session["received_packets"].as_u64().unwrap() >= 2
            && session["sent_packets"].as_u64().unwrap() >= 2
        {
            assert!(s["tun_read_packets"].as_u64().unwrap() >= 2, "{s}");
            assert!(s["tun_write_packets"].as_u64().unwrap() >= 2, "{s}");
            break;
        }
        assert!(
            Instant::now() < until,
            "the status never counted the exchange: {s}"
        );
    }

    // Ctrl-C both: exit 0, an exit line, nothing left.
    client.signal(Signal::INT);
    let e = client.wait_event("exit", Duration::from_secs(5));
    assert_eq!(e["reason"], "SIGINT", "{e}");
    assert!(e["received_packets"].as_u64().unwrap() >= 1, "{e}");
    assert!(client.wait_exit(Duration::from_secs(5)).success());
    server.proc.signal(Signal::INT);
    let e = server.proc.wait_event("exit", Duration::from_secs(5));
    assert_eq!(e["reason"], "SIGINT", "{e}");
    assert_eq!(e["clients_seen"], 1, "{e}");
    assert!(server.proc.wait_exit(Duration::from_secs(5)).success());
    assert_gone_here(&server.device, &addrs);
    let left = remains_in(&emu, &cdev, &addrs);
    assert!(
        left.is_empty(),
        "left behind in the mobile namespace: {left:?}"
    );
    emu.stop().unwrap();
}

#[test]
fn full_tunnel_client_stopped_or_killed_leaves_no_host_route() {
    if !can_run() {
        return;
    }
    let n = unique(1);
    let emu = emulator();
    // The server's UDP address is an address of this namespace other than the emulator's
    // outside end, so that the mobile namespace reaches it through its gateway (as a laptop
    // reaches a relay) and the client must add a host route for it. The address lives on a
    // TUN device this test holds: it goes when the test ends, however it ends.
    let relay: Ipv4Addr = format!("10.203.{n}.1").parse().unwrap();
    let holder = sprout_os::tun::TunDevice::create(&format!("strl{n}")).unwrap();
    sprout_os::tun::configure_point_to_point(
        holder.name(),
        relay,
        format!("10.203.{n}.2").parse().unwrap(),
        1500,
    )
    .unwrap();
    // Listening on 0.0.0.0: the replies must leave from the address the client wrote to (the
    // route back to the client prefers the emulator's outside address), or the client, whose
    // socket is connected, never hears the server.
    let mut server = start_server(202, n, "stsb", "0.0.0.0");
    let server_udp = SocketAddr::new(relay.into(), server.port);
    // First a client that ends with Ctrl-C (it removes the host route itself), then one killed
    // with SIGKILL (the watchdog removes it).
    for kill in [false, true] {
        let mut client = Proc::new(
            "client",
            emu.spawn_in_namespace(&mut client_command(
                server_udp,
                &server.key,
                &["--route", "0.0.0.0/0"],
            ))
            .unwrap(),
        );
        let up = client.wait_event("up", Duration::from_secs(15));
        let cdev = up["device"].as_str().unwrap().to_string();
        assert_eq!(
            up["routes"],
            serde_json::json!(["0.0.0.0/1", "128.0.0.0/1"]),
            "{up}"
        );
        let host_route = up["server_route"]
            .as_str()
            .expect("a host route to the server");
        assert!(
            host_route.starts_with(&format!("{relay}/32 via {}", emu.outside_addr())),
            "{up}"
        );
        let routes = routes_in(&emu);
        assert!(
            routes.contains(&format!("0.0.0.0/1 dev {cdev}")),
            "{routes}"
        );
        assert!(
            routes.contains(&format!("128.0.0.0/1 dev {cdev}")),
            "{routes}"
        );
        assert!(
            routes.contains(&format!("{relay} via {}", emu.outside_addr())),
            "{routes}"
        );
        assert!(
            routes.contains("default via"),
            "the default route must stay: {routes}"
        );
        // Traffic flows with everything routed into the tunnel: its own datagrams do not loop.
        let v4 = up["v4"].as_str().unwrap();
        let client_v4: Ipv4Addr = v4.split('/').next().unwrap().parse().unwrap();
        exchange(&emu, client_v4.into(), server.v4.into());

        if kill {
            client.child.kill().unwrap(); // SIGKILL: only the watchdog can clean up now
            client.child.wait().unwrap();
        } else {
            client.signal(Signal::INT);
            let e = client.wait_event("exit", Duration::from_secs(5));
            let removed = e["removed"].as_str().unwrap_or_default();
            assert!(
                removed.contains(&format!("ip route del {relay}/32 via")),
                "{e}"
            );
            assert!(client.wait_exit(Duration::from_secs(5)).success());
        }
        let mut routes = String::new();
        assert!(
            wait_until(Duration::from_secs(5), || {
                routes = routes_in(&emu);
                !routes.contains(&relay.to_string()) && !routes.contains(&cdev)
            }),
            "left behind (SIGKILL: {kill}): {routes}"
        );
        if kill {
            // The watchdog says what it removed (kept, not printed: it is expected here).
            assert!(
                wait_until(Duration::from_secs(5), || client
                    .stderr()
                    .contains("the tunnel process ended without cleaning up")),
                "{}",
                client.stderr()
            );
        }
        let left = remains_in(&emu, &cdev, &[relay.to_string(), client_v4.to_string()]);
        assert!(
            left.is_empty(),
            "left behind in the mobile namespace (SIGKILL: {kill}): {left:?}"
        );
    }

    server.proc.signal(Signal::TERM);
    let e = server.proc.wait_event("exit", Duration::from_secs(5));
    assert_eq!(e["reason"], "SIGTERM", "{e}");
    assert!(server.proc.wait_exit(Duration::from_secs(5)).success());
    assert_gone_here(&server.device, &[server.v4.to_string()]);
    drop(holder);
    emu.stop().unwrap();
}

/// Runs `sprout ARGS` as user nobody when root (or as itself when not root); (exit code,
/// stderr).
fn run_unprivileged(args: &[&str]) -> Option<(i32, String)> {
    // SAFETY: geteuid has no preconditions.
    let root = rustix::process::geteuid().is_root();
    let out = if root {
        let has_setpriv = Command::new("setpriv").arg("--version").output().is_ok();
        if !has_setpriv {
            return None;
        }
        Command::new("setpriv")
            .args([
                "--reuid",
                "65534",
                "--regid",
                "65534",
                "--clear-groups",
                EXE,
            ])
            .args(args)
            .output()
            .unwrap()
    } else {
        Command::new(EXE).args(args).output().unwrap()
    };
    Some((
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    ))
}

#[test]
fn without_privileges_the_error_is_clear_and_flags_are_checked_first() {
    let key = PrivateKey::generate().public_key().to_base64();
    let base = [
        "tunnel",
        "client",
        "--server",
        "127.0.0.1:9",
        "--server-key",
    ];
    let mut args: Vec<&str> = base.to_vec();
    args.push(&key);
    let Some((code, err)) = run_unprivileged(&args) else {
        eprintln!("SKIPPED: root without setpriv cannot run a non-root check");
        return;
    };
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("needs root (CAP_NET_ADMIN)"), "{err}");
    assert!(err.contains("sudo"), "{err}");
    // Bad values are reported before privileges, as the flag's error.
    for (extra, want) in [
        (vec!["--route", "10.0.0.0/33"], "--route \"10.0.0.0/33\""),
        (vec!["--path-mtu", "100"], "--path-mtu must be"),
        (vec!["--device", "a/b"], "--device"),
    ] {
        let mut a = args.clone();
        a.extend(extra.iter().copied());
        let (code, err) = run_unprivileged(&a).unwrap();
        assert_eq!(code, 1, "{extra:?}: {err}");
        assert!(err.contains(want), "{extra:?}: {err}");
    }
    let (code, err) = run_unprivileged(&[
        "tunnel",
        "client",
        "--server",
        "127.0.0.1:9",
        "--server-key",
        "not-a-key",
    ])
    .unwrap();
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("--server-key: "), "{err}");
    // An unknown flag is clap's usage error (exit code 2).
    let (code, err) = run_unprivileged(&["tunnel", "server", "--bogus"]).unwrap();
    assert_eq!(code, 2, "{err}");
    let (code, err) = run_unprivileged(&["tunnel", "server", "--allow-any-client"]).unwrap();
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("--key FILE is required"), "{err}");
}

#[test]
fn a_config_of_dev_zero_or_a_huge_line_is_refused_at_once_with_a_short_error() {
    let dir = tempfile::tempdir().unwrap();
    let long = dir.path().join("long.toml");
    std::fs::write(&long, format!("listen = {}\n", "9".repeat(800_000))).unwrap();
    let long = long.to_str().unwrap().to_string();
    for (command, config) in [
        ("server", "/dev/zero"),
        ("client", "/dev/zero"),
        ("server", long.as_str()),
    ] {
        let started = Instant::now();
        let out = Command::new(EXE)
            .args(["tunnel", command, "--config", config])
            .output()
            .unwrap();
        let took = started.elapsed();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{command} {config}: {err}");
        assert!(
            took < Duration::from_secs(5),
            "{command} {config}: {took:?}"
        );
        assert!(
            err.len() < 600,
            "{command} {config}: {} bytes of stderr",
            err.len()
        );
        assert!(err.contains("--config"), "{command} {config}: {err}");
        if config == "/dev/zero" {
            assert!(err.contains("larger than 1 MiB"), "{err}");
        } else {
            assert!(err.contains("line 1:"), "{err}");
        }
    }
}

/// `--model` is documented with its default on both ends, takes `wide` and `paper`, and
/// refuses anything else as a usage error naming the choices.
#[test]
fn the_model_flag_is_documented_and_checked() {
    for end in ["server", "client"] {
        let out = Command::new(EXE)
            .args(["tunnel", end, "--help"])
            .output()
            .unwrap();
        let help = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{help}");
        assert!(help.contains("--model <MODEL>"), "{end}: {help}");
        assert!(help.contains("[default: wide]"), "{end}: {help}");
        assert!(help.contains("paper"), "{end}: {help}");
        let out = Command::new(EXE)
            .args(["tunnel", end, "--model", "narrow"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{end}: {err}");
        assert!(
            err.contains("[possible values: wide, paper]"),
            "{end}: {err}"
        );
    }
}
