//! Configuration of `sprout tunnel server` and `sprout tunnel client`: the command-line flags,
//! the optional TOML file (`--config FILE`, the same keys as the flags; flags override it), and
//! their checked, resolved form that the runtime runs.
//!
//! A server's file may pin addresses to client keys, which also allows those keys:
//!
//! ```toml
//! key = "/etc/sprout/server.key"
//! listen = "0.0.0.0:9200"
//! address = "10.77.0.1/24"
//! address6 = "fd77::1/64"        # or "none"
//! allowed-clients = "clients.txt" # relative paths are relative to this file
//!
//! [[peer]]
//! public_key = "base64 public key of a client"
//! address = "10.77.0.5"
//! address6 = "fd77::5"
//! ```
//!
//! A client's file:
//!
//! ```toml
//! server = "relay.example.net:9200"
//! server-key = "base64 public key of the server"
//! key = "laptop.key"
//! route = ["0.0.0.0/0"]
//! ```
//!
//! Keys are written like the flags (`allowed-clients`, `path-mtu`, ...); the snake_case
//! spelling (`allowed_clients`) is accepted too. Unknown keys are errors.

use std::collections::{HashMap, HashSet};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, ToSocketAddrs};
use std::path::{Path, PathBuf};

use ipnet::{IpNet, Ipv4Net, Ipv6Net};
use serde::Deserialize;
use sprout_core::time::Duration;
use sprout_core::Config;
use sprout_secure::{
    read_allowed_keys, AllowedClients, ClientConfig, Limits, PrivateKey, PublicKey, ServerConfig,
};

use crate::client::ClientSettings;
use crate::flow_queue::FlowQueueConfig;
use crate::mtu;
use crate::server::{PinnedAddresses, ServerSettings};
use crate::settings_error::SettingsError;

/// Default UDP address of the server.
pub const DEFAULT_LISTEN: &str = "0.0.0.0:9200";
/// Default IPv4 tunnel network and server address.
pub const DEFAULT_ADDRESS: &str = "10.77.0.1/24";
/// Default IPv6 tunnel network and server address.
pub const DEFAULT_ADDRESS6: &str = "fd77::1/64";
/// Default TUN device name pattern (`%d`: the kernel picks the lowest free number).
pub const DEFAULT_DEVICE: &str = "sprout%d";
/// Default path MTU (bytes).
pub const DEFAULT_PATH_MTU: u32 = 1500;
/// Smallest path MTU accepted (bytes): IPv4's minimum.
pub const MIN_PATH_MTU: u32 = 576;
/// Default most clients at once.
pub const DEFAULT_MAX_CLIENTS: usize = 64;
/// Most clients at once that can be configured.
pub const MAX_MAX_CLIENTS: usize = 65_536;
/// Default idle timeout of a client's session (s).
pub const DEFAULT_IDLE_TIMEOUT_S: f64 = 30.0;
/// Default interval of the status lines (s).
pub const DEFAULT_STATUS_INTERVAL_S: f64 = 1.0;
/// Longest interface name Linux accepts (bytes).
pub const MAX_DEVICE_NAME: usize = 15;

/// A configuration error, worded for the person who typed the flag or wrote the file; each
/// names the flag (or the `--config` file's entry) it is about.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ConfigError {
    /// A flag (or its key in the `--config` file, or the file itself) missing, malformed or out
    /// of range.
    #[error("{message}")]
    Flag {
        /// The flag: `--address`, `--path-mtu`, ..., `--config`, or `[[peer]]` for an entry of
        /// the file.
        flag: &'static str,
        /// The whole message, starting with the flag and its value.
        message: String,
    },
    /// Settings that the tunnel's one check ([`ServerSettings::validate`],
    /// [`ClientSettings::validate`], which its ends run too) refuses, with the flag (and value)
    /// that set them.
    #[error("{flag}: {source}{hint}")]
    Settings {
        /// The flag and its value (`--address 10.77.0.0/24`), or the `[[peer]]` entry.
        flag: String,
        /// What is wrong.
        #[source]
        source: SettingsError,
        /// What to change, when the flag alone does not say (may be empty).
        hint: &'static str,
    },
}

impl ConfigError {
    /// A [`ConfigError::Flag`].
    fn flag(flag: &'static str, message: impl Into<String>) -> ConfigError {
        ConfigError::Flag {
            flag,
            message: message.into(),
        }
    }
}

fn err<T>(flag: &'static str, message: impl Into<String>) -> Result<T, ConfigError> {
    Err(ConfigError::flag(flag, message))
}

/// The forecast confidence: the paper's 0.95 unless given (the core's check,
/// [`Config::validate`], wants it strictly between 0 and 1).
fn confidence(given: Option<f64>) -> f64 {
    given.unwrap_or(Config::default().confidence)
}

/// The flag behind a core configuration the core's check refused: `--confidence` for the
/// confidence, else `--model` (whose parameters make the rest).
fn core_flag(e: &SettingsError, confidence: f64) -> String {
    match e {
        SettingsError::Core(sprout_core::ConfigError::Confidence(_)) => {
            format!("--confidence {confidence}")
        }
        _ => "--model".into(),
    }
}

/// The rate model of the tunnel's Sprout sessions (`--model`, key `model`): both ends must
/// use the same, since each end's receiver forecasts for the other's sender.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RateModel {
    /// The wide model ([`Config::wide`]): rates from an outage to 1 Gbit/s on a log grid; the
    /// default, so that a tunnel on a link faster than 12 Mbit/s can use it.
    #[default]
    Wide,
    /// The paper's model ([`Config::default`]): 256 rates up to 1,000 packets/s (12 Mbit/s of
    /// 1,500-byte packets); what the paper's §5.7 experiment uses.
    Paper,
}

impl RateModel {
    /// The core configuration of this model, before the tunnel's own settings.
    pub fn core_config(self) -> Config {
        match self {
            RateModel::Wide => Config::wide(),
            RateModel::Paper => Config::default(),
        }
    }

    /// The flag's value (`wide` or `paper`).
    pub fn as_str(self) -> &'static str {
        match self {
            RateModel::Wide => "wide",
            RateModel::Paper => "paper",
        }
    }
}

impl std::fmt::Display for RateModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A server's flags, or the keys of its TOML file (the same names; `None`/`false` = not given).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, rename_all = "kebab-case", deny_unknown_fields)]
pub struct ServerFlags {
    /// `--config FILE` (not a key of the file).
    #[serde(skip)]
    pub config: Option<PathBuf>,
    /// `--key FILE`: the server's private key file.
    pub key: Option<PathBuf>,
    /// `--allowed-clients FILE`: allowed client public keys, one per line.
    #[serde(alias = "allowed_clients")]
    pub allowed_clients: Option<PathBuf>,
    /// `--allow-any-client`.
    #[serde(alias = "allow_any_client")]
    pub allow_any_client: bool,
    /// `--listen HOST:PORT`.
    pub listen: Option<String>,
    /// `--address A/P` (IPv4 server address and tunnel network, or `none`).
    pub address: Option<String>,
    /// `--address6 A/P|none`.
    pub address6: Option<String>,
    /// `--device NAME` (may hold one `%d`).
    pub device: Option<String>,
    /// `--path-mtu BYTES`.
    #[serde(alias = "path_mtu")]
    pub path_mtu: Option<u32>,
    /// `--no-routes`.
    #[serde(alias = "no_routes")]
    pub no_routes: bool,
    /// `--no-client-to-client`.
    #[serde(alias = "no_client_to_client")]
    pub no_client_to_client: bool,
    /// `--probe`.
    pub probe: bool,
    /// `--confidence P`.
    pub confidence: Option<f64>,
    /// `--model wide|paper` (none: [`RateModel::default`], wide).
    pub model: Option<RateModel>,
    /// `--max-clients N`.
    #[serde(alias = "max_clients")]
    pub max_clients: Option<usize>,
    /// `--idle-timeout SECONDS`.
    #[serde(alias = "idle_timeout")]
    pub idle_timeout: Option<f64>,
    /// `--json`.
    pub json: bool,
    /// `--status-interval SECONDS`.
    #[serde(alias = "status_interval")]
    pub status_interval: Option<f64>,
    /// `--duration SECONDS`.
    pub duration: Option<f64>,
    /// `[[peer]]` entries (file only).
    #[serde(default)]
    pub peer: Vec<PeerEntry>,
}

/// A `[[peer]]` entry of a server's file: a client key, allowed, with pinned addresses.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PeerEntry {
    /// The client's public key (base64).
    #[serde(alias = "public-key")]
    pub public_key: String,
    /// Its IPv4 tunnel address.
    pub address: Option<Ipv4Addr>,
    /// Its IPv6 tunnel address.
    pub address6: Option<Ipv6Addr>,
}

/// A client's flags, or the keys of its TOML file.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, rename_all = "kebab-case", deny_unknown_fields)]
pub struct ClientFlags {
    /// `--config FILE` (not a key of the file).
    #[serde(skip)]
    pub config: Option<PathBuf>,
    /// `--server HOST:PORT`.
    pub server: Option<String>,
    /// `--server-key BASE64|FILE`.
    #[serde(alias = "server_key")]
    pub server_key: Option<String>,
    /// `--key FILE` (none: an ephemeral key).
    pub key: Option<PathBuf>,
    /// `--device NAME`.
    pub device: Option<String>,
    /// `--path-mtu BYTES`.
    #[serde(alias = "path_mtu")]
    pub path_mtu: Option<u32>,
    /// `--route CIDR` (repeatable; `0.0.0.0/0`, `::/0`: everything).
    #[serde(default)]
    pub route: Vec<String>,
    /// `--no-routes`.
    #[serde(alias = "no_routes")]
    pub no_routes: bool,
    /// `--probe`.
    pub probe: bool,
    /// `--confidence P`.
    pub confidence: Option<f64>,
    /// `--model wide|paper` (none: [`RateModel::default`], wide).
    pub model: Option<RateModel>,
    /// `--json`.
    pub json: bool,
    /// `--status-interval SECONDS`.
    #[serde(alias = "status_interval")]
    pub status_interval: Option<f64>,
    /// `--duration SECONDS`.
    pub duration: Option<f64>,
}

/// What a server's runtime needs beyond the engine's settings.
#[derive(Clone, Debug)]
pub struct ServerRun {
    /// UDP address to listen on.
    pub listen: SocketAddr,
    /// TUN device name or pattern.
    pub device: String,
    /// Path MTU (bytes).
    pub path_mtu: u16,
    /// No routes beyond the device's addresses (see [`crate::routes`]).
    pub no_routes: bool,
    /// JSON lines instead of text.
    pub json: bool,
    /// Interval of the status lines.
    pub status_interval: Duration,
    /// Stop after this long; `None`: until a signal.
    pub duration: Option<Duration>,
}

/// A checked server configuration.
#[derive(Clone, Debug)]
pub struct TunnelServerConfig {
    /// The engine's settings.
    pub settings: ServerSettings,
    /// The runtime's.
    pub run: ServerRun,
}

/// What a client's runtime needs beyond the engine's settings.
#[derive(Clone, Debug)]
pub struct ClientRun {
    /// The server's UDP address.
    pub server: SocketAddr,
    /// TUN device name or pattern.
    pub device: String,
    /// Path MTU (bytes).
    pub path_mtu: u16,
    /// Prefixes routed through the tunnel besides the tunnel networks (`0.0.0.0/0` and
    /// `::/0` mean everything; see [`crate::routes`]).
    pub routes: Vec<IpNet>,
    /// Only the device and its addresses.
    pub no_routes: bool,
    /// JSON lines instead of text.
    pub json: bool,
    /// Interval of the status lines.
    pub status_interval: Duration,
    /// Stop after this long; `None`: until a signal.
    pub duration: Option<Duration>,
    /// The client's public key.
    pub public_key: PublicKey,
    /// Whether the key is an ephemeral one made for this run (no `--key`).
    pub ephemeral_key: bool,
}

/// A checked client configuration.
#[derive(Clone, Debug)]
pub struct TunnelClientConfig {
    /// The engine's settings.
    pub settings: ClientSettings,
    /// The runtime's.
    pub run: ClientRun,
}

/// Largest `--config` file read, bytes: thousands of `[[peer]]` entries fit; a larger file
/// (or `/dev/zero` given by mistake) is refused after reading this much.
pub const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// Reads a TOML file (at most [`MAX_CONFIG_BYTES`]) into `T`; relative paths in it are
/// resolved later against its folder. An error quotes at most
/// [`sprout_files::excerpt`] of the offending line.
fn read_toml<T: for<'de> Deserialize<'de>>(path: &Path) -> Result<T, ConfigError> {
    let text = sprout_files::read_to_string_capped(path, MAX_CONFIG_BYTES)
        .map_err(|e| ConfigError::flag("--config", format!("--config: {e}")))?;
    toml::from_str(&text).map_err(|e| ConfigError::flag("--config", toml_error(path, &text, &e)))
}

/// A TOML error as `--config PATH: line N: message (at: excerpt of the line)`, never the
/// whole line (the toml crate's own message quotes it).
fn toml_error(path: &Path, text: &str, e: &toml::de::Error) -> String {
    let message = sprout_files::excerpt(e.message().lines().next().unwrap_or(""));
    match e.span() {
        Some(span) => {
            let start = span.start.min(text.len());
            let start = (0..=start)
                .rev()
                .find(|&i| text.is_char_boundary(i))
                .unwrap_or(0);
            let line_no = text[..start].matches('\n').count() + 1;
            let line = text[start..].lines().next().unwrap_or("");
            let line_start = text[..start].rfind('\n').map_or(0, |i| i + 1);
            let whole = text[line_start..].lines().next().unwrap_or(line);
            format!(
                "--config {}: line {line_no}: {message} (at: {})",
                path.display(),
                sprout_files::excerpt(whole.trim())
            )
        }
        None => format!("--config {}: {message}", path.display()),
    }
}

/// `p` relative to the folder of `file` when it is relative.
fn relative_to(file: &Path, p: PathBuf) -> PathBuf {
    if p.is_absolute() {
        return p;
    }
    match file.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.join(p),
        _ => p,
    }
}

/// A value from the flags or the file as an error message quotes it: at most
/// [`sprout_files::excerpt`] of it, in quotes.
fn quote(value: &str) -> String {
    format!("{:?}", sprout_files::excerpt(value))
}

/// Resolves `HOST:PORT` (IPv4, `[IPv6]:port`, or a host name) to its first address.
pub fn resolve(flag: &'static str, addr: &str) -> Result<SocketAddr, ConfigError> {
    addr.to_socket_addrs()
        .map_err(|e| {
            ConfigError::flag(
                flag,
                format!("{flag} {}: {e} (expected HOST:PORT)", quote(addr)),
            )
        })?
        .next()
        .ok_or_else(|| {
            ConfigError::flag(
                flag,
                format!("{flag} {} resolves to no address", quote(addr)),
            )
        })
}

/// Checks a device name or pattern: 1..=15 bytes, no `/`, whitespace or `:`, at most one `%d`
/// and no other `%`.
pub fn check_device_name(name: &str) -> Result<(), ConfigError> {
    let bad = name.is_empty()
        || name.len() > MAX_DEVICE_NAME
        || name.contains(['/', ':', '\0'])
        || name.chars().any(char::is_whitespace)
        || name == "."
        || name == ".."
        || name.matches('%').count() > 1
        || (name.contains('%') && !name.contains("%d"));
    if bad {
        return err("--device", format!(
            "--device {}: an interface name is 1 to {MAX_DEVICE_NAME} bytes without '/', ':' or spaces, with at most one %d (the kernel picks the number)",
            quote(name)
        ));
    }
    Ok(())
}

fn seconds(flag: &'static str, v: f64, min: f64, max: f64) -> Result<Duration, ConfigError> {
    if !(v.is_finite() && v >= min && v <= max) {
        return err(
            flag,
            format!("{flag} must be a number of seconds from {min} to {max}, got {v}"),
        );
    }
    Ok(Duration::from_micros((v * 1e6).round() as u64))
}

fn path_mtu(v: Option<u32>) -> Result<u16, ConfigError> {
    let v = v.unwrap_or(DEFAULT_PATH_MTU);
    if !(MIN_PATH_MTU..=u16::MAX as u32).contains(&v) {
        return err(
            "--path-mtu",
            format!("--path-mtu must be {MIN_PATH_MTU}..=65535 bytes, got {v}"),
        );
    }
    Ok(v as u16)
}

/// Parses a server's `--address` (`none` allowed); [`ServerSettings::validate`] checks it.
fn parse_v4(flag: &'static str, s: &str) -> Result<Option<Ipv4Net>, ConfigError> {
    if s.eq_ignore_ascii_case("none") {
        return Ok(None);
    }
    let net: Ipv4Net = s.parse().map_err(|_| {
        ConfigError::flag(
            flag,
            format!(
                "{flag} {}: expected ADDRESS/PREFIX such as 10.77.0.1/24, or none",
                quote(s)
            ),
        )
    })?;
    Ok(Some(net))
}

/// Parses a server's `--address6` (`none` allowed); [`ServerSettings::validate`] checks it.
fn parse_v6(flag: &'static str, s: &str) -> Result<Option<Ipv6Net>, ConfigError> {
    if s.eq_ignore_ascii_case("none") {
        return Ok(None);
    }
    let net: Ipv6Net = s.parse().map_err(|_| {
        ConfigError::flag(
            flag,
            format!(
                "{flag} {}: expected ADDRESS/PREFIX such as fd77::1/64, or none",
                quote(s)
            ),
        )
    })?;
    Ok(Some(net))
}

/// The security layer's allowed clients from the flags and the `[[peer]]` keys.
fn allowed_clients(
    file: Option<&Path>,
    any: bool,
    peers: &HashMap<PublicKey, PinnedAddresses>,
) -> Result<AllowedClients, ConfigError> {
    match (file, any) {
        (Some(_), true) => err("--allowed-clients", "give one of --allowed-clients FILE and --allow-any-client, not both"),
        (None, true) => Ok(AllowedClients::Any),
        (None, false) if peers.is_empty() => err(
        "--allowed-clients",
            "give --allowed-clients FILE (client public keys, one per line) or --allow-any-client, or [[peer]] entries in the --config file",
        ),
        (None, false) => Ok(AllowedClients::Keys(peers.keys().copied().collect())),
        (Some(path), false) => {
            let keys = read_allowed_keys(path)
                .map_err(|e| ConfigError::flag("--allowed-clients", format!("--allowed-clients: {e}")))?;
            let mut set: HashSet<PublicKey> = keys.into_iter().collect();
            set.extend(peers.keys().copied());
            if set.is_empty() {
                return err("--allowed-clients", format!(
                    "--allowed-clients: {} holds no key (one base64 public key per line, from `sprout keygen`)",
                    path.display()
                ));
            }
            Ok(AllowedClients::Keys(set))
        }
    }
}

fn pinned(peers: &[PeerEntry]) -> Result<HashMap<PublicKey, PinnedAddresses>, ConfigError> {
    let mut out = HashMap::new();
    for (i, p) in peers.iter().enumerate() {
        let what = peer_name(i, p);
        let key = PublicKey::from_base64(p.public_key.trim())
            .map_err(|e| ConfigError::flag("[[peer]]", format!("{what}: {e}")))?;
        let entry = PinnedAddresses {
            v4: p.address,
            v6: p.address6,
        };
        if out.insert(key, entry).is_some() {
            return err(
                "[[peer]]",
                format!("{what}: this key has two [[peer]] entries"),
            );
        }
    }
    Ok(out)
}

/// How an error names `[[peer]]` entry `i` (from 0).
fn peer_name(i: usize, p: &PeerEntry) -> String {
    format!("[[peer]] {} (public_key {})", i + 1, quote(&p.public_key))
}

/// The `[[peer]]` entry that pins `addr` (the last one when two do), or the one of `key`.
fn peer_of(peers: &[PeerEntry], key: Option<&PublicKey>, addr: IpAddr) -> String {
    let by_addr = peers.iter().rposition(|p| {
        p.address.map(IpAddr::V4) == Some(addr) || p.address6.map(IpAddr::V6) == Some(addr)
    });
    let by_key = || {
        peers
            .iter()
            .position(|p| PublicKey::from_base64(p.public_key.trim()).ok().as_ref() == key)
    };
    match by_addr.or_else(by_key) {
        Some(i) => peer_name(i, &peers[i]),
        None => "[[peer]]".into(),
    }
}

/// What the flags set that [`ServerSettings::validate`] refused, as the flag's error.
fn server_settings_error(
    e: SettingsError,
    address: &str,
    address6: &str,
    path_mtu: u16,
    confidence: f64,
    peers: &[PeerEntry],
) -> ConfigError {
    use SettingsError as S;
    let (flag, hint) = match &e {
        S::V4NetworkTooSmall(_) | S::V4ServerNotHost { .. } => (format!("--address {address}"), ""),
        S::V6NetworkTooSmall(_) | S::V6ServerNotHost(_) => (format!("--address6 {address6}"), ""),
        S::NoNetwork => ("--address none and --address6 none".into(), ""),
        S::MtuTooSmall { v6: true, .. } => (
            format!("--path-mtu {path_mtu}"),
            " (raise --path-mtu, or carry IPv4 only with --address6 none)",
        ),
        S::MtuTooSmall { v6: false, .. }
        | S::DatagramSizeBelowMinimum { .. }
        | S::DatagramSize { .. } => (format!("--path-mtu {path_mtu}"), " (raise --path-mtu)"),
        S::PinnedOutside { addr, key, .. } | S::PinnedWithoutFamily { addr, key, .. } => {
            (peer_of(peers, Some(key), *addr), "")
        }
        S::PinnedTwice(addr) => (peer_of(peers, None, *addr), ""),
        S::Core(_) | S::Secure(_) => (core_flag(&e, confidence), ""),
    };
    ConfigError::Settings {
        flag,
        source: e,
        hint,
    }
}

/// Merges `--config` (if any) under the flags and checks everything, reading the key and
/// allowed-clients files. No system state is looked at or changed (that is the runtime's).
pub fn server_config(flags: ServerFlags) -> Result<TunnelServerConfig, ConfigError> {
    let file: ServerFlags = match &flags.config {
        Some(p) => {
            let mut f: ServerFlags = read_toml(p)?;
            f.key = f.key.map(|k| relative_to(p, k));
            f.allowed_clients = f.allowed_clients.map(|k| relative_to(p, k));
            f
        }
        None => ServerFlags::default(),
    };
    let key_path = flags.key.or(file.key).ok_or_else(|| {
        ConfigError::flag("--key", 
            "--key FILE is required: the server's private key (make one with `sprout keygen --out FILE`)",
        )
    })?;
    let listen_s = flags
        .listen
        .or(file.listen)
        .unwrap_or_else(|| DEFAULT_LISTEN.into());
    let listen = resolve("--listen", &listen_s)?;
    let address = flags
        .address
        .or(file.address)
        .unwrap_or_else(|| DEFAULT_ADDRESS.into());
    let v4 = parse_v4("--address", &address)?;
    let address6 = flags
        .address6
        .or(file.address6)
        .unwrap_or_else(|| DEFAULT_ADDRESS6.into());
    let v6 = parse_v6("--address6", &address6)?;
    let device = flags
        .device
        .or(file.device)
        .unwrap_or_else(|| DEFAULT_DEVICE.into());
    check_device_name(&device)?;
    let path_mtu = path_mtu(flags.path_mtu.or(file.path_mtu))?;
    let max_clients = flags
        .max_clients
        .or(file.max_clients)
        .unwrap_or(DEFAULT_MAX_CLIENTS);
    if !(1..=MAX_MAX_CLIENTS).contains(&max_clients) {
        return err(
            "--max-clients",
            format!("--max-clients must be 1..={MAX_MAX_CLIENTS}, got {max_clients}"),
        );
    }
    let idle_timeout = seconds(
        "--idle-timeout",
        flags
            .idle_timeout
            .or(file.idle_timeout)
            .unwrap_or(DEFAULT_IDLE_TIMEOUT_S),
        1.0,
        86_400.0,
    )?;
    let status_interval = seconds(
        "--status-interval",
        flags
            .status_interval
            .or(file.status_interval)
            .unwrap_or(DEFAULT_STATUS_INTERVAL_S),
        0.1,
        3600.0,
    )?;
    let duration = flags
        .duration
        .or(file.duration)
        .map(|d| seconds("--duration", d, 0.001, 1e9))
        .transpose()?;
    let pinned = pinned(&file.peer)?;
    let allowed = allowed_clients(
        flags
            .allowed_clients
            .as_deref()
            .or(file.allowed_clients.as_deref()),
        flags.allow_any_client || file.allow_any_client,
        &pinned,
    )?;
    let private_key = PrivateKey::read_file(&key_path)
        .map_err(|e| ConfigError::flag("--key", format!("--key: {e}")))?;

    // A socket on [::] is dual-stack: its IPv4 clients (the smaller outer header) bound the
    // datagram size; each client's greeting brings its own, and its MTU is assigned from it.
    let outer = if listen.ip().is_unspecified() {
        IpAddr::V4(Ipv4Addr::UNSPECIFIED)
    } else {
        listen.ip()
    };
    let core = Config {
        max_datagram_bytes: mtu::max_datagram_bytes(path_mtu as usize, &outer),
        confidence: confidence(flags.confidence.or(file.confidence)),
        ..flags.model.or(file.model).unwrap_or_default().core_config()
    };
    let tun_mtu = mtu::tun_mtu(core.max_datagram_bytes, core.model.forecast_ticks);
    let mut secure = ServerConfig::new(private_key, allowed);
    secure.max_sessions = max_clients;
    secure.idle_timeout = idle_timeout;
    let settings = ServerSettings {
        secure,
        core,
        v4,
        v6,
        pinned,
        queue: FlowQueueConfig::default(),
        tun_mtu: tun_mtu.min(u16::MAX as usize) as u16,
        client_to_client: !(flags.no_client_to_client || file.no_client_to_client),
        probe: flags.probe || file.probe,
        // `sprout tunnel server --isolate` sets it after this (not a file key yet).
        isolate: false,
    };
    settings.validate().map_err(|e| {
        server_settings_error(
            e,
            &address,
            &address6,
            path_mtu,
            settings.core.confidence,
            &file.peer,
        )
    })?;
    Ok(TunnelServerConfig {
        settings,
        run: ServerRun {
            listen,
            device,
            path_mtu,
            no_routes: flags.no_routes || file.no_routes,
            json: flags.json || file.json,
            status_interval,
            duration,
        },
    })
}

/// Parses a `--route` value; host bits are cleared (`10.1.2.3/8` is `10.0.0.0/8`).
pub fn parse_route(s: &str) -> Result<IpNet, ConfigError> {
    let net: IpNet = s.trim().parse().map_err(|_| {
        ConfigError::flag("--route", format!(
            "--route {}: expected a prefix such as 192.168.10.0/24, 2001:db8::/32, 0.0.0.0/0 or ::/0",
            quote(s)
        ))
    })?;
    Ok(net.trunc())
}

/// Merges `--config` (if any) under the flags and checks everything, reading the key file (or
/// making an ephemeral key). No system state is looked at or changed.
pub fn client_config(flags: ClientFlags) -> Result<TunnelClientConfig, ConfigError> {
    let file: ClientFlags = match &flags.config {
        Some(p) => {
            let mut f: ClientFlags = read_toml(p)?;
            f.key = f.key.map(|k| relative_to(p, k));
            // A server key given as a file name is relative to the file too.
            if let Some(k) = &f.server_key {
                if PublicKey::from_base64(k).is_err() {
                    let rel = relative_to(p, PathBuf::from(k));
                    f.server_key = Some(rel.to_string_lossy().into_owned());
                }
            }
            f
        }
        None => ClientFlags::default(),
    };
    let server_s = flags.server.or(file.server).ok_or_else(|| {
        ConfigError::flag(
            "--server",
            "--server HOST:PORT is required: the tunnel server's UDP address",
        )
    })?;
    let server = resolve("--server", &server_s)?;
    if server.port() == 0 {
        return err("--server", format!("--server {}: port 0", quote(&server_s)));
    }
    let server_key_s = flags.server_key.or(file.server_key).ok_or_else(|| {
        ConfigError::flag("--server-key", 
            "--server-key BASE64|FILE is required: the server's public key, as `sprout tunnel server` prints it",
        )
    })?;
    let server_key = PublicKey::from_arg(server_key_s.trim())
        .map_err(|e| ConfigError::flag("--server-key", format!("--server-key: {e}")))?;
    let device = flags
        .device
        .or(file.device)
        .unwrap_or_else(|| DEFAULT_DEVICE.into());
    check_device_name(&device)?;
    let path_mtu = path_mtu(flags.path_mtu.or(file.path_mtu))?;
    let route_strings = if flags.route.is_empty() {
        file.route
    } else {
        flags.route
    };
    let mut routes = Vec::new();
    for r in &route_strings {
        let net = parse_route(r)?;
        if !routes.contains(&net) {
            routes.push(net);
        }
    }
    let no_routes = flags.no_routes || file.no_routes;
    if no_routes && !routes.is_empty() {
        return err("--no-routes", "--no-routes and --route exclude each other");
    }
    let status_interval = seconds(
        "--status-interval",
        flags
            .status_interval
            .or(file.status_interval)
            .unwrap_or(DEFAULT_STATUS_INTERVAL_S),
        0.1,
        3600.0,
    )?;
    let duration = flags
        .duration
        .or(file.duration)
        .map(|d| seconds("--duration", d, 0.001, 1e9))
        .transpose()?;
    let key_path = flags.key.or(file.key);
    let private_key = match &key_path {
        Some(p) => PrivateKey::read_file(p)
            .map_err(|e| ConfigError::flag("--key", format!("--key: {e}")))?,
        None => PrivateKey::generate(),
    };
    let public_key = private_key.public_key();
    let core = Config {
        max_datagram_bytes: mtu::max_datagram_bytes(path_mtu as usize, &server.ip()),
        confidence: confidence(flags.confidence.or(file.confidence)),
        ..flags.model.or(file.model).unwrap_or_default().core_config()
    };
    let settings = ClientSettings {
        secure: ClientConfig {
            private_key,
            server_key,
            limits: Limits::default(),
        },
        core,
        queue: FlowQueueConfig::default(),
        probe: flags.probe || file.probe,
    };
    settings.validate().map_err(|e| {
        let (flag, hint) = match e {
            SettingsError::Core(_) | SettingsError::Secure(_) => {
                (core_flag(&e, settings.core.confidence), "")
            }
            _ => (
                format!("--path-mtu {path_mtu} (to {server})"),
                " (raise --path-mtu)",
            ),
        };
        ConfigError::Settings {
            flag,
            source: e,
            hint,
        }
    })?;
    Ok(TunnelClientConfig {
        settings,
        run: ClientRun {
            server,
            device,
            path_mtu,
            routes,
            no_routes,
            json: flags.json || file.json,
            status_interval,
            duration,
            public_key,
            ephemeral_key: key_path.is_none(),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    struct Files {
        dir: tempfile::TempDir,
    }

    impl Files {
        fn new() -> Files {
            Files {
                dir: tempfile::tempdir().unwrap(),
            }
        }
        fn key(&self, name: &str) -> (PathBuf, PublicKey) {
            let path = self.dir.path().join(name);
            if path.exists() {
                let k = PrivateKey::read_file(&path).unwrap();
                return (path, k.public_key());
            }
            let k = PrivateKey::generate();
            k.write_file(&path).unwrap();
            (path, k.public_key())
        }
        fn write(&self, name: &str, text: &str) -> PathBuf {
            let path = self.dir.path().join(name);
            let mut f = std::fs::File::create(&path).unwrap();
            f.write_all(text.as_bytes()).unwrap();
            path
        }
    }

    fn server_flags(f: &Files) -> ServerFlags {
        ServerFlags {
            key: Some(f.key("server.key").0),
            allow_any_client: true,
            ..ServerFlags::default()
        }
    }

    fn server_err(flags: ServerFlags) -> String {
        server_config(flags).unwrap_err().to_string()
    }

    #[test]
    fn server_defaults() {
        let f = Files::new();
        let c = server_config(server_flags(&f)).unwrap();
        assert_eq!(c.run.listen, "0.0.0.0:9200".parse().unwrap());
        assert_eq!(c.settings.v4, Some("10.77.0.1/24".parse().unwrap()));
        assert_eq!(c.settings.v6, Some("fd77::1/64".parse().unwrap()));
        assert_eq!(c.run.device, "sprout%d");
        // 1500 - 28 (IPv4 + UDP) - 32 (secure) = 1440; minus the core's 77-byte header.
        assert_eq!(c.settings.core.max_datagram_bytes, 1440);
        assert_eq!(c.settings.tun_mtu, 1363);
        assert_eq!(c.settings.secure.max_sessions, 64);
        assert_eq!(
            c.settings.secure.idle_timeout,
            Duration::from_micros(30_000_000)
        );
        assert!(c.settings.client_to_client);
        assert!(matches!(c.settings.secure.allowed, AllowedClients::Any));
        assert_eq!(c.run.status_interval, Duration::from_micros(1_000_000));
        assert_eq!(c.run.duration, None);
        assert!(!c.run.no_routes && !c.run.json);
    }

    #[test]
    fn server_listening_on_ipv6_has_a_smaller_tun_mtu() {
        let f = Files::new();
        let c = server_config(ServerFlags {
            listen: Some("[::1]:9300".into()),
            ..server_flags(&f)
        })
        .unwrap();
        assert_eq!(c.settings.core.max_datagram_bytes, 1420);
        assert_eq!(c.settings.tun_mtu, 1343);
        // [::] is dual-stack: IPv4 clients may come, with their larger datagrams.
        let c = server_config(ServerFlags {
            listen: Some("[::]:9300".into()),
            ..server_flags(&f)
        })
        .unwrap();
        assert_eq!(c.settings.core.max_datagram_bytes, 1440);
        assert_eq!(c.settings.tun_mtu, 1363);
    }

    #[test]
    fn server_flag_errors() {
        let f = Files::new();
        let e = server_err(ServerFlags {
            key: None,
            ..server_flags(&f)
        });
        assert!(e.contains("--key FILE is required"), "{e}");
        let e = server_err(ServerFlags {
            allow_any_client: false,
            ..server_flags(&f)
        });
        assert!(e.contains("--allowed-clients FILE"), "{e}");
        let list = f.write("clients.txt", "");
        let e = server_err(ServerFlags {
            allowed_clients: Some(list.clone()),
            ..server_flags(&f)
        });
        assert!(e.contains("not both"), "{e}");
        let e = server_err(ServerFlags {
            allowed_clients: Some(list),
            allow_any_client: false,
            ..server_flags(&f)
        });
        assert!(e.contains("holds no key"), "{e}");
        for (addr, want) in [
            ("10.77.0.1", "expected ADDRESS/PREFIX"),
            ("10.77.0.0/24", "network address"),
            ("10.77.0.255/24", "broadcast address"),
            ("10.77.0.1/31", "no room for clients"),
        ] {
            let e = server_err(ServerFlags {
                address: Some(addr.into()),
                ..server_flags(&f)
            });
            assert!(e.contains(want), "{addr}: {e}");
            assert!(e.starts_with("--address "), "{e}");
        }
        assert_eq!(
            server_err(ServerFlags {
                address: Some("10.77.0.0/24".into()),
                ..server_flags(&f)
            }),
            "--address 10.77.0.0/24: the server's IPv4 tunnel address 10.77.0.0 is the network's network address; give the server's own address, e.g. 10.77.0.1/24"
        );
        // The last address of an IPv6 network, refused by the tunnel's one check, is the
        // flag's error too (the string checks here used to let it through to the runtime).
        let e = server_err(ServerFlags {
            address6: Some("fd77::ffff:ffff:ffff:ffff/64".into()),
            ..server_flags(&f)
        });
        assert!(
            e.starts_with("--address6 fd77::ffff:ffff:ffff:ffff/64: ")
                && e.contains("last address"),
            "{e}"
        );
        let e = server_err(ServerFlags {
            address: Some("none".into()),
            address6: Some("none".into()),
            ..server_flags(&f)
        });
        assert!(e.contains("must carry IPv4 or IPv6"), "{e}");
        let e = server_err(ServerFlags {
            address6: Some("fd77::/64".into()),
            ..server_flags(&f)
        });
        assert!(e.contains("anycast"), "{e}");
        for mtu in [575, 70_000] {
            let e = server_err(ServerFlags {
                path_mtu: Some(mtu),
                ..server_flags(&f)
            });
            assert!(e.contains("--path-mtu must be"), "{e}");
        }
        // 1300 - 60 - 77 = 1163 < 1280.
        let e = server_err(ServerFlags {
            path_mtu: Some(1300),
            ..server_flags(&f)
        });
        assert!(
            e.contains("TUN MTU of 1163") && e.contains("--address6 none"),
            "{e}"
        );
        let c = server_config(ServerFlags {
            path_mtu: Some(1300),
            address6: Some("none".into()),
            ..server_flags(&f)
        })
        .unwrap();
        assert_eq!((c.settings.tun_mtu, c.settings.v6), (1163, None));
        for d in ["", "a/b", "much-too-long-name", "a b", "x%d%d", "x%s"] {
            let e = server_err(ServerFlags {
                device: Some(d.into()),
                ..server_flags(&f)
            });
            assert!(e.contains("--device"), "{d:?}: {e}");
        }
        for p in [0.0, 1.5, f64::NAN] {
            let e = server_err(ServerFlags {
                confidence: Some(p),
                ..server_flags(&f)
            });
            assert!(
                e.starts_with(&format!("--confidence {p}: ")) && e.contains("between 0 and 1"),
                "{e}"
            );
        }
        let e = server_err(ServerFlags {
            max_clients: Some(0),
            ..server_flags(&f)
        });
        assert!(e.contains("--max-clients"), "{e}");
        let e = server_err(ServerFlags {
            idle_timeout: Some(f64::NAN),
            ..server_flags(&f)
        });
        assert!(e.contains("--idle-timeout"), "{e}");
        let e = server_err(ServerFlags {
            status_interval: Some(0.0),
            ..server_flags(&f)
        });
        assert!(e.contains("--status-interval"), "{e}");
        let e = server_err(ServerFlags {
            listen: Some("nowhere".into()),
            ..server_flags(&f)
        });
        assert!(e.contains("--listen"), "{e}");
        let bad_key = f.write("bad.key", "not a key\n");
        let e = server_err(ServerFlags {
            key: Some(bad_key),
            ..server_flags(&f)
        });
        assert!(e.starts_with("--key: "), "{e}");
    }

    #[test]
    fn server_toml_with_pinned_peers_and_flags_over_it() {
        let f = Files::new();
        let (_, client) = f.key("client.key");
        let (_, other) = f.key("other.key");
        f.key("server.key");
        let toml = format!(
            r#"
key = "server.key"
listen = "127.0.0.1:9301"
address = "10.88.0.1/24"
address6 = "fd88::1/64"
path-mtu = 1450
no_client_to_client = true
max-clients = 5

[[peer]]
public_key = "{client}"
address = "10.88.0.5"
address6 = "fd88::5"

[[peer]]
public_key = "{other}"
"#
        );
        let path = f.write("server.toml", &toml);
        let c = server_config(ServerFlags {
            config: Some(path.clone()),
            listen: Some("127.0.0.1:9302".into()),
            ..ServerFlags::default()
        })
        .unwrap();
        assert_eq!(c.run.listen, "127.0.0.1:9302".parse().unwrap());
        assert_eq!(c.settings.v4, Some("10.88.0.1/24".parse().unwrap()));
        assert_eq!(c.settings.core.max_datagram_bytes, 1390);
        assert_eq!(c.settings.tun_mtu, 1313);
        assert_eq!(c.settings.secure.max_sessions, 5);
        assert!(!c.settings.client_to_client);
        assert_eq!(
            c.settings.pinned[&client],
            PinnedAddresses {
                v4: Some("10.88.0.5".parse().unwrap()),
                v6: Some("fd88::5".parse().unwrap()),
            }
        );
        assert_eq!(c.settings.pinned[&other], PinnedAddresses::default());
        // The [[peer]] keys are the allowed clients.
        match &c.settings.secure.allowed {
            AllowedClients::Keys(k) => {
                assert_eq!(k.len(), 2);
                assert!(k.contains(&client) && k.contains(&other));
            }
            AllowedClients::Any => panic!("peers must make a key list"),
        }

        for (peer, want) in [
            ("address = \"10.99.0.5\"", "not a client address"),
            ("address = \"10.88.0.1\"", "not a client address"),
            ("address6 = \"fd99::5\"", "not a client address"),
            ("port = 5", "unknown field"),
        ] {
            let text = format!("key = \"server.key\"\naddress = \"10.88.0.1/24\"\naddress6 = \"fd88::1/64\"\n[[peer]]\npublic_key = \"{client}\"\n{peer}\n");
            let path = f.write("bad.toml", &text);
            let e = server_err(ServerFlags {
                config: Some(path),
                ..ServerFlags::default()
            });
            assert!(e.contains(want), "{peer}: {e}");
        }
        let text = format!(
            "key = \"server.key\"\n[[peer]]\npublic_key = \"{client}\"\naddress = \"10.77.0.9\"\n[[peer]]\npublic_key = \"{other}\"\naddress = \"10.77.0.9\"\n"
        );
        let e = server_err(ServerFlags {
            config: Some(f.write("twice.toml", &text)),
            ..ServerFlags::default()
        });
        assert!(e.contains("pinned twice"), "{e}");
        let e = server_err(ServerFlags {
            config: Some(f.write("typo.toml", "kye = \"server.key\"\n")),
            ..ServerFlags::default()
        });
        assert!(
            e.contains("typo.toml") && e.contains("unknown field"),
            "{e}"
        );
        let e = server_err(ServerFlags {
            config: Some(f.dir.path().join("missing.toml")),
            ..ServerFlags::default()
        });
        assert!(e.contains("missing.toml"), "{e}");
    }

    #[test]
    fn config_files_are_read_with_a_cap_and_errors_quote_an_excerpt() {
        let f = Files::new();
        // /dev/zero: refused after MAX_CONFIG_BYTES, at once.
        let t0 = std::time::Instant::now();
        let e = server_err(ServerFlags {
            config: Some(PathBuf::from("/dev/zero")),
            ..ServerFlags::default()
        });
        assert!(t0.elapsed() < std::time::Duration::from_secs(2));
        assert!(
            e.contains("/dev/zero") && e.contains("larger than 1 MiB"),
            "{e}"
        );
        let e = client_config(ClientFlags {
            config: Some(PathBuf::from("/dev/zero")),
            ..ClientFlags::default()
        })
        .unwrap_err()
        .to_string();
        assert!(e.contains("larger than 1 MiB"), "{e}");
        // A file just over the cap is refused too; one under it is parsed.
        let big = format!("# {}\n", "x".repeat(MAX_CONFIG_BYTES as usize));
        let e = server_err(ServerFlags {
            config: Some(f.write("big.toml", &big)),
            ..ServerFlags::default()
        });
        assert!(e.contains("larger than"), "{e}");
        // A bad line of 500 kB: the error names its line and quotes at most an excerpt.
        let long = format!("key = \"server.key\"\nlisten = {}\n", "9".repeat(500_000));
        let e = server_err(ServerFlags {
            config: Some(f.write("long.toml", &long)),
            ..ServerFlags::default()
        });
        assert!(e.contains("long.toml: line 2:"), "{e}");
        assert!(e.len() < 400, "{} bytes: {e}", e.len());
        // Values from the file are quoted as excerpts as well.
        let text = format!(
            "key = \"server.key\"\nallow_any_client = true\naddress = \"{}\"\n",
            "z".repeat(100_000)
        );
        let e = server_err(ServerFlags {
            config: Some(f.write("value.toml", &text)),
            ..ServerFlags::default()
        });
        assert!(e.contains("--address") && e.len() < 400, "{e}");
    }

    #[test]
    fn allowed_clients_file_and_peers_are_joined() {
        let f = Files::new();
        let (_, a) = f.key("a.key");
        let (_, b) = f.key("b.key");
        let list = f.write("clients.txt", &format!("# laptop\n{a}\n"));
        let toml = format!(
            "allowed-clients = \"clients.txt\"\n[[peer]]\npublic_key = \"{b}\"\naddress = \"10.77.0.7\"\n"
        );
        let path = f.write("s.toml", &toml);
        let c = server_config(ServerFlags {
            config: Some(path),
            key: Some(f.key("server.key").0),
            ..ServerFlags::default()
        })
        .unwrap();
        let _ = list;
        match &c.settings.secure.allowed {
            AllowedClients::Keys(k) => assert!(k.contains(&a) && k.contains(&b) && k.len() == 2),
            AllowedClients::Any => panic!("expected keys"),
        }
    }

    fn client_flags(server_key: &PublicKey) -> ClientFlags {
        ClientFlags {
            server: Some("192.0.2.1:9200".into()),
            server_key: Some(server_key.to_base64()),
            ..ClientFlags::default()
        }
    }

    #[test]
    fn client_defaults_and_routes() {
        let sk = PrivateKey::generate().public_key();
        let c = client_config(client_flags(&sk)).unwrap();
        assert!(c.run.ephemeral_key);
        assert_eq!(c.run.public_key, c.settings.secure.private_key.public_key());
        assert_eq!(c.settings.secure.server_key, sk);
        assert_eq!(c.settings.core.max_datagram_bytes, 1440);
        assert_eq!(c.run.device, "sprout%d");
        assert!(c.run.routes.is_empty() && !c.run.no_routes);
        let c = client_config(ClientFlags {
            route: vec![
                "0.0.0.0/0".into(),
                "10.1.2.3/8".into(),
                "::/0".into(),
                "10.0.0.0/8".into(),
            ],
            server: Some("[2001:db8::1]:9200".into()),
            ..client_flags(&sk)
        })
        .unwrap();
        let want: Vec<IpNet> = ["0.0.0.0/0", "10.0.0.0/8", "::/0"]
            .iter()
            .map(|s| s.parse().unwrap())
            .collect();
        assert_eq!(c.run.routes, want);
        assert_eq!(c.settings.core.max_datagram_bytes, 1420);
    }

    /// Both ends run the wide model unless told otherwise; `--model paper` (or `model =
    /// "paper"` in the file, which a flag overrides) gives the paper's.
    #[test]
    fn the_model_is_wide_unless_paper_is_asked_for() {
        use sprout_core::EstimatorKind;
        let is_wide = |c: &Config| matches!(c.estimator, EstimatorKind::Wide(_));
        let sk = PrivateKey::generate().public_key();
        let c = client_config(client_flags(&sk)).unwrap();
        assert!(is_wide(&c.settings.core));
        assert_eq!(c.settings.core.confidence, 0.95);
        let c = client_config(ClientFlags {
            model: Some(RateModel::Paper),
            confidence: Some(0.75),
            ..client_flags(&sk)
        })
        .unwrap();
        assert!(matches!(c.settings.core.estimator, EstimatorKind::Sprout));
        assert_eq!(c.settings.core.confidence, 0.75);
        let f = Files::new();
        assert!(is_wide(
            &server_config(server_flags(&f)).unwrap().settings.core
        ));
        let file = f.write("paper.toml", "model = \"paper\"\n");
        let from_file = |model| {
            server_config(ServerFlags {
                config: Some(file.clone()),
                model,
                ..server_flags(&f)
            })
            .unwrap()
            .settings
            .core
        };
        assert!(matches!(from_file(None).estimator, EstimatorKind::Sprout));
        assert!(is_wide(&from_file(Some(RateModel::Wide))));
        let bad = f.write("bad.toml", "model = \"narrow\"\n");
        let e = server_err(ServerFlags {
            config: Some(bad),
            ..server_flags(&f)
        });
        assert!(e.contains("narrow") || e.contains("model"), "{e}");
    }

    #[test]
    fn client_flag_errors() {
        let sk = PrivateKey::generate().public_key();
        let e = client_config(ClientFlags {
            server: None,
            ..client_flags(&sk)
        })
        .unwrap_err()
        .to_string();
        assert!(e.contains("--server HOST:PORT is required"), "{e}");
        let e = client_config(ClientFlags {
            server_key: None,
            ..client_flags(&sk)
        })
        .unwrap_err()
        .to_string();
        assert!(e.contains("--server-key"), "{e}");
        let e = client_config(ClientFlags {
            server_key: Some("AAAA".into()),
            ..client_flags(&sk)
        })
        .unwrap_err()
        .to_string();
        assert!(e.starts_with("--server-key: "), "{e}");
        let e = client_config(ClientFlags {
            route: vec!["10.0.0.0/33".into()],
            ..client_flags(&sk)
        })
        .unwrap_err()
        .to_string();
        assert!(e.contains("--route"), "{e}");
        let e = client_config(ClientFlags {
            route: vec!["10.0.0.0/8".into()],
            no_routes: true,
            ..client_flags(&sk)
        })
        .unwrap_err()
        .to_string();
        assert!(e.contains("exclude each other"), "{e}");
        let e = client_config(ClientFlags {
            duration: Some(-1.0),
            ..client_flags(&sk)
        })
        .unwrap_err()
        .to_string();
        assert!(e.contains("--duration"), "{e}");
        let e = client_config(ClientFlags {
            path_mtu: Some(600),
            ..client_flags(&sk)
        })
        .unwrap_err()
        .to_string();
        assert!(e.contains("too small"), "{e}");
        let f = Files::new();
        let e = client_config(ClientFlags {
            key: Some(f.dir.path().join("absent.key")),
            ..client_flags(&sk)
        })
        .unwrap_err()
        .to_string();
        assert!(e.starts_with("--key: "), "{e}");
    }

    #[test]
    fn client_toml_and_flags_over_it() {
        let f = Files::new();
        let (key, public) = f.key("laptop.key");
        let sk = PrivateKey::generate().public_key();
        let server_pub = f.write("server.pub", &format!("{sk}\n"));
        let _ = server_pub;
        let toml = "server = \"127.0.0.1:9400\"\nserver-key = \"server.pub\"\nkey = \"laptop.key\"\nroute = [\"0.0.0.0/0\"]\nstatus_interval = 2.5\njson = true\n";
        let path = f.write("client.toml", toml);
        let c = client_config(ClientFlags {
            config: Some(path.clone()),
            ..ClientFlags::default()
        })
        .unwrap();
        assert_eq!(c.run.server, "127.0.0.1:9400".parse().unwrap());
        assert_eq!(c.settings.secure.server_key, sk);
        assert_eq!(c.run.public_key, public);
        assert!(!c.run.ephemeral_key && c.run.json);
        assert_eq!(c.run.status_interval, Duration::from_micros(2_500_000));
        assert_eq!(c.run.routes, vec!["0.0.0.0/0".parse::<IpNet>().unwrap()]);
        let _ = key;
        // Flags replace the file's routes and values.
        let c = client_config(ClientFlags {
            config: Some(path),
            route: vec!["192.168.7.0/24".into()],
            server: Some("127.0.0.1:9401".into()),
            ..ClientFlags::default()
        })
        .unwrap();
        assert_eq!(c.run.server.port(), 9401);
        assert_eq!(
            c.run.routes,
            vec!["192.168.7.0/24".parse::<IpNet>().unwrap()]
        );
        let e = client_config(ClientFlags {
            config: Some(f.write("bad.toml", "route = \"0.0.0.0/0\"\n")),
            ..ClientFlags::default()
        })
        .unwrap_err()
        .to_string();
        assert!(e.contains("bad.toml"), "{e}");
    }
}
