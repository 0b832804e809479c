//! The options of `sprout tcp server` and `sprout tcp client`: the clap arguments of the CLI,
//! and typed builders of their command lines (`to_args`) for programs that start them.

use std::net::SocketAddr;

use sprout_core::direction::Load;

use crate::args::ArgsWriter;
use crate::choices;

/// `sprout tcp` options: which side to run.
#[derive(clap::Args, Clone, Debug, PartialEq)]
pub struct TcpOptions {
    /// The side.
    #[command(subcommand)]
    pub role: TcpRole,
}

/// The side of a kernel-TCP transfer.
#[derive(clap::Subcommand, Clone, Debug, PartialEq)]
pub enum TcpRole {
    /// Accept clients and run the transfers they ask for.
    Server(TcpServerOptions),
    /// Connect to a server and run bulk transfers in one or both directions.
    Client(TcpClientOptions),
}

impl TcpOptions {
    /// The arguments of `sprout` that run this side: `tcp`, the side and every option.
    pub fn to_args(&self) -> Vec<String> {
        match &self.role {
            TcpRole::Server(o) => o.to_args(),
            TcpRole::Client(o) => o.to_args(),
        }
    }
}

/// `sprout tcp server` options; `Default` gives the command line's defaults.
///
/// ```
/// use sprout_apps::kernel_tcp::TcpServerOptions;
/// let srv = TcpServerOptions { once: true, json: true, ..TcpServerOptions::default() };
/// assert_eq!(srv.to_args()[..2], ["tcp", "server"]);
/// ```
#[derive(clap::Args, Clone, Debug, PartialEq)]
pub struct TcpServerOptions {
    /// Address and port to listen on.
    #[arg(long, default_value = DEFAULT_LISTEN)]
    pub listen: SocketAddr,
    /// Exit once the first client's transfers are over.
    #[arg(long)]
    pub once: bool,
    /// JSON lines instead of text.
    #[arg(long)]
    pub json: bool,
}

/// The server's default address and port.
const DEFAULT_LISTEN: &str = "0.0.0.0:9100";

impl Default for TcpServerOptions {
    fn default() -> Self {
        TcpServerOptions {
            listen: DEFAULT_LISTEN.parse().expect("a socket address"),
            once: false,
            json: false,
        }
    }
}

impl TcpServerOptions {
    /// The arguments of `sprout` that run this server: `tcp server` and every option.
    pub fn to_args(&self) -> Vec<String> {
        ArgsWriter::new(&["tcp", "server"])
            .value("listen", self.listen)
            .switch("once", self.once)
            .switch("json", self.json)
            .finish()
    }
}

/// `sprout tcp client` options; [`TcpClientOptions::new`] gives the command line's defaults.
#[derive(clap::Args, Clone, Debug, PartialEq)]
pub struct TcpClientOptions {
    /// The server's address and port.
    #[arg(long)]
    pub connect: SocketAddr,
    /// Kernel congestion controller of the sending sockets (cubic, reno, bbr, ...).
    #[arg(long, default_value = DEFAULT_CC)]
    pub cc: String,
    /// Loaded directions: up (client to server), down, or both.
    #[arg(long, value_parser = choices::load_bare(), default_value = "both")]
    pub direction: Load,
    /// Seconds of transfer.
    #[arg(long, default_value_t = DEFAULT_DURATION_S)]
    pub duration: f64,
    /// JSON lines instead of text.
    #[arg(long)]
    pub json: bool,
}

/// The client's default congestion controller.
const DEFAULT_CC: &str = "cubic";
/// The client's default duration, s.
const DEFAULT_DURATION_S: f64 = 10.0;

impl TcpClientOptions {
    /// Cubic bulk transfers both ways with the server at `connect`, for the default duration.
    pub fn new(connect: SocketAddr) -> TcpClientOptions {
        TcpClientOptions {
            connect,
            cc: DEFAULT_CC.into(),
            direction: Load::Both,
            duration: DEFAULT_DURATION_S,
            json: false,
        }
    }

    /// The arguments of `sprout` that run this client: `tcp client` and every option.
    pub fn to_args(&self) -> Vec<String> {
        ArgsWriter::new(&["tcp", "client"])
            .value("connect", self.connect)
            .value("cc", &self.cc)
            .value("direction", self.direction)
            .value("duration", self.duration)
            .switch("json", self.json)
            .finish()
    }
}
