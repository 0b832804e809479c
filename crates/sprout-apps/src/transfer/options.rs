//! The options of `sprout server` and `sprout client`: the clap arguments of the CLI, and
//! typed builders of their command lines (`to_args`) for programs that start them.

use std::path::PathBuf;

use sprout_core::direction::Load;
use sprout_core::SproutVariant;
use sprout_net::secure::server::{DEFAULT_MAX_SESSIONS_PER_KEY, DEFAULT_MAX_SESSIONS_PER_SOURCE};

use crate::args::ArgsWriter;
use crate::choices;
use crate::transfer::limits::PACED_PAYLOAD;

/// `sprout server` options. Exactly one of `allowed_clients` and `allow_any_client` must be
/// set. [`ServerOptions::to_args`] renders them as the command line after the program name.
///
/// ```
/// use sprout_apps::transfer::ServerOptions;
/// let srv = ServerOptions {
///     listen: "10.0.0.1:9100".into(),
///     allow_any_client: true,
///     once: true,
///     json: true,
///     ..ServerOptions::default()
/// };
/// assert_eq!(srv.to_args()[..2], ["server", "--listen=10.0.0.1:9100"]);
/// ```
#[derive(clap::Args, Clone, Debug, PartialEq)]
#[command(group(
    clap::ArgGroup::new("clients")
        .required(true)
        .args(["allowed_clients", "allow_any_client"])
))]
pub struct ServerOptions {
    /// Address and port to listen on (IPv4 or IPv6, or a host name).
    #[arg(long, default_value = DEFAULT_LISTEN)]
    pub listen: String,
    /// The server's private key file (from `sprout keygen --out FILE`) [default: a new
    /// ephemeral key for this run; its public key, which clients need for --server-key, is
    /// printed at startup either way].
    #[arg(long, value_name = "FILE")]
    pub key: Option<PathBuf>,
    /// File of the client public keys allowed to open sessions: one base64 key per line, `#`
    /// starts a comment. Exactly one of --allowed-clients and --allow-any-client is required
    /// [default: none, then --allow-any-client must be given].
    #[arg(long, value_name = "FILE")]
    pub allowed_clients: Option<PathBuf>,
    /// Accept any client key (an open test server; every session is still encrypted and
    /// authenticated).
    #[arg(long)]
    pub allow_any_client: bool,
    /// Most sessions at once; handshakes beyond are refused.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_SESSIONS)]
    pub max_sessions: usize,
    /// Most sessions at once from one source (an IPv4 address, or an IPv6 /64); handshakes
    /// beyond are refused. Raise it for many clients behind one carrier-grade NAT.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_SESSIONS_PER_SOURCE)]
    pub max_sessions_per_source: usize,
    /// Most sessions at once with one client key; handshakes beyond are refused.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_SESSIONS_PER_KEY)]
    pub max_sessions_per_key: usize,
    /// A session with no authenticated datagram from its client for this long is closed, in
    /// seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = DEFAULT_IDLE_TIMEOUT_S)]
    pub idle_timeout: f64,
    /// Exit after the first session ends instead of serving clients until killed.
    #[arg(long)]
    pub once: bool,
    /// JSON lines (one object per session per second, then `"type":"summary"` per session,
    /// each with a `session` field) instead of text.
    #[arg(long)]
    pub json: bool,
}

/// The server's default address and port.
const DEFAULT_LISTEN: &str = "0.0.0.0:9100";
/// The server's default session limit.
const DEFAULT_MAX_SESSIONS: usize = 1024;
/// The server's default idle timeout, s.
const DEFAULT_IDLE_TIMEOUT_S: f64 = 30.0;

impl Default for ServerOptions {
    /// The command line's defaults, with neither way of allowing clients chosen yet.
    fn default() -> Self {
        ServerOptions {
            listen: DEFAULT_LISTEN.into(),
            key: None,
            allowed_clients: None,
            allow_any_client: false,
            max_sessions: DEFAULT_MAX_SESSIONS,
            max_sessions_per_source: DEFAULT_MAX_SESSIONS_PER_SOURCE,
            max_sessions_per_key: DEFAULT_MAX_SESSIONS_PER_KEY,
            idle_timeout: DEFAULT_IDLE_TIMEOUT_S,
            once: false,
            json: false,
        }
    }
}

impl ServerOptions {
    /// The arguments of `sprout` that run this server: `server` and every option.
    pub fn to_args(&self) -> Vec<String> {
        ArgsWriter::new(&["server"])
            .value("listen", &self.listen)
            .path("key", self.key.as_deref())
            .path("allowed-clients", self.allowed_clients.as_deref())
            .switch("allow-any-client", self.allow_any_client)
            .value("max-sessions", self.max_sessions)
            .value("max-sessions-per-source", self.max_sessions_per_source)
            .value("max-sessions-per-key", self.max_sessions_per_key)
            .value("idle-timeout", self.idle_timeout)
            .switch("once", self.once)
            .switch("json", self.json)
            .finish()
    }
}

/// `sprout client` options; [`ClientOptions::new`] gives the command line's defaults.
/// [`ClientOptions::to_args`] renders them as the command line after the program name.
#[derive(clap::Args, Clone, Debug, PartialEq)]
pub struct ClientOptions {
    /// The server's address and port.
    #[arg(long)]
    pub connect: String,
    /// Loaded directions: up (client to server), down, or both.
    #[arg(long, value_parser = choices::load_with_help(), default_value = "both")]
    pub direction: Load,
    /// A paced interactive stream at this application bit rate, in kbit/s [default: none, a
    /// saturating bulk transfer].
    #[arg(long, value_name = "KBIT/S")]
    pub rate: Option<f64>,
    /// Seconds of transfer.
    #[arg(long, default_value_t = DEFAULT_DURATION_S)]
    pub duration: f64,
    /// Forecast confidence at both ends, strictly between 0 and 1 (paper: 0.95).
    #[arg(long, default_value_t = DEFAULT_CONFIDENCE)]
    pub confidence: f64,
    /// Receiver estimator at both ends: Sprout on the wide rate model (to 1 Gbit/s), on the
    /// paper's (to about 12 Mbit/s), or Sprout-EWMA.
    #[arg(long, value_parser = choices::sprout_variant(), default_value = "sprout-wide")]
    pub scheme: SproutVariant,
    /// Bytes per paced DATA message (24 up to the largest payload). Bulk datagrams are as large
    /// as the window allows.
    #[arg(long, default_value_t = PACED_PAYLOAD)]
    pub payload: usize,
    /// Local address to send from [default: any address, a port chosen by the system].
    #[arg(long)]
    pub bind: Option<String>,
    /// The server's public key: base64 (as `sprout server` prints it at startup, or `sprout
    /// keygen --public SERVER_KEY_FILE`), or a file holding that public key (not the server's
    /// private key file). Required.
    #[arg(long, value_name = "BASE64|FILE")]
    pub server_key: String,
    /// This client's private key file (from `sprout keygen --out FILE`) [default: a new
    /// ephemeral key, which only a server started with --allow-any-client accepts].
    #[arg(long, value_name = "FILE")]
    pub key: Option<PathBuf>,
    /// JSON lines (one object per second, then `"type":"summary"`) instead of text.
    #[arg(long)]
    pub json: bool,
    /// Give up when the server falls silent for 5 s (exit with an error) instead of
    /// redialling it. By default a server silent for 5 s (restarted, or out of reach) is
    /// redialled with the same keys and greeting until the duration ends.
    #[arg(long)]
    pub no_redial: bool,
}

/// The client's default duration, s.
const DEFAULT_DURATION_S: f64 = 10.0;
/// The client's default forecast confidence (the paper's).
const DEFAULT_CONFIDENCE: f64 = 0.95;

impl ClientOptions {
    /// A saturating transfer both ways to `connect` ("HOST:PORT") whose server has the public
    /// key `server_key` (base64, or a file holding it), with the command line's defaults.
    pub fn new(connect: impl Into<String>, server_key: impl Into<String>) -> ClientOptions {
        ClientOptions {
            connect: connect.into(),
            direction: Load::Both,
            rate: None,
            duration: DEFAULT_DURATION_S,
            confidence: DEFAULT_CONFIDENCE,
            scheme: SproutVariant::SproutWide,
            payload: PACED_PAYLOAD,
            bind: None,
            server_key: server_key.into(),
            key: None,
            json: false,
            no_redial: false,
        }
    }

    /// The arguments of `sprout` that run this client: `client` and every option.
    pub fn to_args(&self) -> Vec<String> {
        ArgsWriter::new(&["client"])
            .value("connect", &self.connect)
            .value("direction", self.direction)
            .opt("rate", self.rate)
            .value("duration", self.duration)
            .value("confidence", self.confidence)
            .value("scheme", self.scheme.as_str())
            .value("payload", self.payload)
            .opt("bind", self.bind.as_ref())
            .value("server-key", &self.server_key)
            .path("key", self.key.as_deref())
            .switch("json", self.json)
            .switch("no-redial", self.no_redial)
            .finish()
    }
}
