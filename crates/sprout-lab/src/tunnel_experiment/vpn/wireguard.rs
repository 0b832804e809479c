//! boringtun's ends: a WireGuard server in the host namespace on the emulator's outside
//! address, a client in the mobile namespace, each a `boringtun-cli --foreground` configured
//! with `wg set` through its control socket, keys made by `wg genkey` for each run.

use std::cell::RefCell;
use std::fs;
use std::io::Write as _;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use sprout_emu::Emulator;

use super::options::VpnOptions;
use crate::error::{Context, LabError};
use crate::tunnel_experiment::one_run::{device_name, tunnel_network, Addrs};
use crate::tunnel_experiment::peers::Peers;

/// Where boringtun (as the kernel's WireGuard tools expect) puts each device's control socket.
const SOCKET_DIR: &str = "/var/run/wireguard";
/// Longest wait for an end's control socket.
const SOCKET_WAIT: Duration = Duration::from_secs(10);
/// Longest wait for the first handshake.
const HANDSHAKE_WAIT: Duration = Duration::from_secs(15);
/// MTU of both ends' devices (`wg-quick`'s default).
const MTU: u32 = 1420;
/// What to say when a tool is missing.
const INSTALL: &str = "install them with `cargo install boringtun-cli --locked` (or give its \
                       path with --boringtun) and `apt-get install wireguard-tools`";

/// The tools and what the runs made that outlives them (the control sockets).
pub(super) struct Wireguard {
    /// The boringtun executable.
    exe: PathBuf,
    /// Control sockets of the devices started, removed by [`Wireguard::clean`].
    sockets: RefCell<Vec<PathBuf>>,
    /// `boringtun-cli --version`.
    pub(super) boringtun_version: String,
    /// `wg --version`.
    pub(super) wg_version: String,
}

/// `PROGRAM ARGS...`'s standard output, failing with its standard error.
fn output(cmd: &mut Command, input: Option<&str>) -> Result<String, LabError> {
    let shown = format!("{cmd:?}").replace('"', "");
    cmd.stdin(if input.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let mut child = cmd.spawn().with_context(|| format!("running {shown}"))?;
    if let (Some(text), Some(mut stdin)) = (input, child.stdin.take()) {
        stdin.write_all(text.as_bytes())?;
    }
    checked(&shown, child.wait_with_output()?)
}

/// `out`'s standard output if it succeeded, else an error with its standard error.
fn checked(shown: &str, out: Output) -> Result<String, LabError> {
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
    } else {
        Err(LabError::Failed(format!(
            "{shown} failed ({}): {}",
            out.status,
            sprout_files::excerpt(String::from_utf8_lossy(&out.stderr).trim())
        )))
    }
}

/// Runs `program args` in the emulator's mobile namespace, failing with its standard error.
fn in_namespace(emu: &Emulator, program: &str, args: &[&str]) -> Result<String, LabError> {
    let mut cmd = Command::new(program);
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let shown = format!("{program} {} (mobile namespace)", args.join(" "));
    let child = emu
        .spawn_in_namespace(&mut cmd)
        .with_context(|| format!("running {shown}"))?;
    checked(&shown, child.wait_with_output()?)
}

/// Runs `program args` here (the host namespace), failing with its standard error.
fn here(program: &str, args: &[&str]) -> Result<String, LabError> {
    output(Command::new(program).args(args), None)
}

/// A UDP port free on this host now.
fn free_udp_port() -> Result<u16, LabError> {
    Ok(UdpSocket::bind("0.0.0.0:0")?.local_addr()?.port())
}

impl Wireguard {
    /// Checks that boringtun and `wg` run and the TUN device exists, before anything runs.
    pub(super) fn preflight(opts: &VpnOptions) -> Result<Wireguard, LabError> {
        let exe = opts.boringtun_exe();
        let missing = |what: &str, e: &dyn std::fmt::Display| {
            LabError::Invalid(format!(
                "the vpn experiment needs boringtun and wg, and {what} does not run ({e}): {INSTALL}"
            ))
        };
        let boringtun_version = output(Command::new(&exe).arg("--version"), None)
            .map_err(|e| missing(&exe.display().to_string(), &e))?;
        let wg_version =
            output(Command::new("wg").arg("--version"), None).map_err(|e| missing("wg", &e))?;
        if !Path::new("/dev/net/tun").exists() {
            return Err(LabError::Invalid(
                "the vpn experiment needs /dev/net/tun for boringtun's devices".into(),
            ));
        }
        Ok(Wireguard {
            exe,
            sockets: RefCell::new(Vec::new()),
            boringtun_version,
            wg_version,
        })
    }

    /// A fresh private key (base64) and its public key.
    fn keypair() -> Result<(String, String), LabError> {
        let private = here("wg", &["genkey"])?;
        let public = output(
            Command::new("wg").arg("pubkey"),
            Some(&format!("{private}\n")),
        )?;
        Ok((private, public))
    }

    /// Writes a private key to `path`, readable by its owner only.
    fn write_key(path: &Path, key: &str) -> Result<(), LabError> {
        use std::os::unix::fs::OpenOptionsExt as _;
        let _ = fs::remove_file(path);
        let mut f = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(path)
            .with_context(|| format!("writing {}", path.display()))?;
        writeln!(f, "{key}")?;
        Ok(())
    }

    /// Starts boringtun on device `name` as peer `role` (in the mobile namespace with `emu`)
    /// and waits for its control socket.
    fn start_end(
        &self,
        peers: &mut Peers,
        role: &'static str,
        name: &str,
        emu: Option<&Emulator>,
    ) -> Result<usize, LabError> {
        let socket = Path::new(SOCKET_DIR).join(format!("{name}.sock"));
        self.sockets.borrow_mut().push(socket.clone());
        let mut cmd = Command::new(&self.exe);
        cmd.args(["--foreground", "--disable-drop-privileges", name]);
        let k = peers.spawn(role, &mut cmd, emu)?;
        let until = Instant::now() + SOCKET_WAIT;
        while !socket.exists() {
            if peers.poll(k).is_some() || Instant::now() >= until {
                return Err(LabError::Failed(format!(
                    "the {role} made no control socket {}; see {}",
                    socket.display(),
                    peers.err(role).display()
                )));
            }
            thread::sleep(Duration::from_millis(50));
        }
        Ok(k)
    }

    /// Starts the server (host namespace, listening on all addresses) and the client (mobile
    /// namespace, to the emulator's outside address), configures both and waits for their
    /// handshake; returns the server's and the client's tunnel addresses and their peer
    /// indices.
    pub(super) fn start(
        &self,
        emu: &Emulator,
        peers: &mut Peers,
        prefix: &str,
    ) -> Result<(Addrs, (usize, usize)), LabError> {
        let net = tunnel_network();
        let (server_v4, client_v4) = (Ipv4Addr::new(10, 77, net, 1), Ipv4Addr::new(10, 77, net, 2));
        let (server_key, server_pub) = Self::keypair()?;
        let (client_key, client_pub) = Self::keypair()?;
        let server_key_file = format!("{prefix}.wg-server.key");
        let client_key_file = format!("{prefix}.wg-client.key");
        Self::write_key(Path::new(&server_key_file), &server_key)?;
        Self::write_key(Path::new(&client_key_file), &client_key)?;
        let port = free_udp_port()?;
        let endpoint = SocketAddr::new(IpAddr::V4(emu.outside_addr()), port).to_string();
        let (sdev, cdev) = (device_name("wgs"), device_name("wgc"));
        let mtu = MTU.to_string();

        let s = self.start_end(peers, "wg-server", &sdev, None)?;
        let port_s = port.to_string();
        let client_ip = format!("{client_v4}/32");
        here(
            "wg",
            &[
                "set",
                &sdev,
                "private-key",
                &server_key_file,
                "listen-port",
                &port_s,
                "peer",
                &client_pub,
                "allowed-ips",
                &client_ip,
            ],
        )?;
        here(
            "ip",
            &["address", "add", &format!("{server_v4}/24"), "dev", &sdev],
        )?;
        here("ip", &["link", "set", "dev", &sdev, "mtu", &mtu, "up"])?;

        let c = self.start_end(peers, "wg-client", &cdev, Some(emu))?;
        let server_ip = format!("{server_v4}/32");
        in_namespace(
            emu,
            "wg",
            &[
                "set",
                &cdev,
                "private-key",
                &client_key_file,
                "peer",
                &server_pub,
                "endpoint",
                &endpoint,
                "allowed-ips",
                &server_ip,
                "persistent-keepalive",
                "25",
            ],
        )?;
        in_namespace(
            emu,
            "ip",
            &["address", "add", &format!("{client_v4}/24"), "dev", &cdev],
        )?;
        in_namespace(emu, "ip", &["link", "set", "dev", &cdev, "mtu", &mtu, "up"])?;
        self.wait_for_handshake(emu, &sdev, server_v4)?;
        Ok(((IpAddr::V4(server_v4), IpAddr::V4(client_v4)), (s, c)))
    }

    /// Waits until the server end reports a handshake with its peer, nudging the client end
    /// (which starts one only when it has something to send) with a datagram from the mobile
    /// namespace to the server's tunnel address every 200 ms.
    fn wait_for_handshake(
        &self,
        emu: &Emulator,
        device: &str,
        server_v4: Ipv4Addr,
    ) -> Result<(), LabError> {
        let until = Instant::now() + HANDSHAKE_WAIT;
        let mut nudged = Instant::now() - Duration::from_secs(1);
        loop {
            if nudged.elapsed() >= Duration::from_millis(200) {
                nudged = Instant::now();
                let nudge = emu.run_on_namespace_thread(move || {
                    let s = UdpSocket::bind("0.0.0.0:0")?;
                    s.send_to(b"nudge", SocketAddr::new(IpAddr::V4(server_v4), 9))
                })?;
                let _ = nudge.join();
            }
            let shown = here("wg", &["show", device, "latest-handshakes"])?;
            let done = shown
                .split_whitespace()
                .nth(1)
                .and_then(|t| t.parse::<u64>().ok())
                .is_some_and(|t| t > 0);
            if done {
                return Ok(());
            }
            if Instant::now() >= until {
                return Err(LabError::Failed(format!(
                    "boringtun's ends made no handshake within {:.0} s (wg show {device}: {})",
                    HANDSHAKE_WAIT.as_secs_f64(),
                    sprout_files::excerpt(&shown)
                )));
            }
            thread::sleep(Duration::from_millis(100));
        }
    }

    /// Removes the control sockets the ends left (their devices went with their processes).
    pub(super) fn clean(&self) {
        for s in self.sockets.borrow_mut().drain(..) {
            let _ = fs::remove_file(s);
        }
    }
}

impl Drop for Wireguard {
    fn drop(&mut self) {
        self.clean();
    }
}
