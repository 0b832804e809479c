//! The options of `sprout interactive server` and `sprout interactive client`: the clap
//! arguments of the CLI, and typed builders of their command lines (`to_args`) for programs
//! that start them.

use std::net::SocketAddr;
use std::path::PathBuf;

use crate::args::ArgsWriter;

/// `sprout interactive` options: which side to run.
#[derive(clap::Args, Clone, Debug, PartialEq)]
pub struct InteractiveOptions {
    /// The side.
    #[command(subcommand)]
    pub role: InteractiveRole,
}

/// The side of an interactive stream.
#[derive(clap::Subcommand, Clone, Debug, PartialEq)]
pub enum InteractiveRole {
    /// Wait for a client, then stream back to the address of its first packet.
    Server(InteractiveServerOptions),
    /// Stream to a server and receive its stream.
    Client(InteractiveClientOptions),
}

impl InteractiveOptions {
    /// The arguments of `sprout` that run this side: `interactive`, the side and every option.
    pub fn to_args(&self) -> Vec<String> {
        match &self.role {
            InteractiveRole::Server(o) => o.to_args(),
            InteractiveRole::Client(o) => o.to_args(),
        }
    }
}

/// `sprout interactive server` options; `Default` gives the command line's defaults.
///
/// ```
/// use sprout_apps::interactive::{InteractiveServerOptions, StreamOptions};
/// let srv = InteractiveServerOptions {
///     listen: "10.0.0.1:9101".parse().unwrap(),
///     stream: StreamOptions { duration: Some(120.0), json: true, ..StreamOptions::default() },
/// };
/// assert_eq!(srv.to_args()[..3], ["interactive", "server", "--listen=10.0.0.1:9101"]);
/// ```
#[derive(clap::Args, Clone, Debug, PartialEq)]
pub struct InteractiveServerOptions {
    /// Address and port to listen on.
    #[arg(long, default_value = DEFAULT_LISTEN)]
    pub listen: SocketAddr,
    /// The stream.
    #[command(flatten)]
    pub stream: StreamOptions,
}

/// The server's default address and port.
const DEFAULT_LISTEN: &str = "0.0.0.0:9101";

impl Default for InteractiveServerOptions {
    fn default() -> Self {
        InteractiveServerOptions {
            listen: DEFAULT_LISTEN.parse().expect("a socket address"),
            stream: StreamOptions::default(),
        }
    }
}

impl InteractiveServerOptions {
    /// The arguments of `sprout` that run this server: `interactive server` and every option.
    pub fn to_args(&self) -> Vec<String> {
        let mut w = ArgsWriter::new(&["interactive", "server"]);
        w.value("listen", self.listen);
        self.stream.write(&mut w);
        w.finish()
    }
}

/// `sprout interactive client` options.
#[derive(clap::Args, Clone, Debug, PartialEq)]
pub struct InteractiveClientOptions {
    /// The server's address and port.
    #[arg(long)]
    pub connect: SocketAddr,
    /// The stream.
    #[command(flatten)]
    pub stream: StreamOptions,
}

impl InteractiveClientOptions {
    /// The arguments of `sprout` that run this client: `interactive client` and every option.
    pub fn to_args(&self) -> Vec<String> {
        let mut w = ArgsWriter::new(&["interactive", "client"]);
        w.value("connect", self.connect);
        self.stream.write(&mut w);
        w.finish()
    }
}

/// What both sides share: the stream's shape, its length and the outputs. `Default` gives the
/// command line's defaults.
#[derive(clap::Args, Clone, Debug, PartialEq)]
pub struct StreamOptions {
    /// Sending rate, kbit/s of UDP payload.
    #[arg(long, default_value_t = DEFAULT_RATE_KBPS)]
    pub rate_kbps: f64,
    /// UDP payload of each packet, bytes (24 to 65000; the interval between packets is
    /// payload / rate: 1000 bytes at 500 kbit/s is one packet every 16 ms).
    #[arg(long, default_value_t = DEFAULT_PAYLOAD_BYTES)]
    pub payload_bytes: usize,
    /// Seconds of sending; the server counts from its first client packet [default: until
    /// Ctrl-C].
    #[arg(long)]
    pub duration: Option<f64>,
    /// Seconds of receiving after sending stops, for packets still on their way.
    #[arg(long, default_value_t = DEFAULT_LINGER_S)]
    pub linger: f64,
    /// Write one row per received packet to FILE (direction, seq, sent_us, received_us, bytes).
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,
    /// Print the summary as one JSON line.
    #[arg(long)]
    pub json: bool,
}

/// Default sending rate, kbit/s.
const DEFAULT_RATE_KBPS: f64 = 500.0;
/// Default payload, bytes.
const DEFAULT_PAYLOAD_BYTES: usize = 1000;
/// Default linger, s.
const DEFAULT_LINGER_S: f64 = 2.0;

impl Default for StreamOptions {
    fn default() -> Self {
        StreamOptions {
            rate_kbps: DEFAULT_RATE_KBPS,
            payload_bytes: DEFAULT_PAYLOAD_BYTES,
            duration: None,
            linger: DEFAULT_LINGER_S,
            csv: None,
            json: false,
        }
    }
}

impl StreamOptions {
    /// Writes the stream's options.
    fn write(&self, w: &mut ArgsWriter) {
        w.value("rate-kbps", self.rate_kbps)
            .value("payload-bytes", self.payload_bytes)
            .opt("duration", self.duration)
            .value("linger", self.linger)
            .path("csv", self.csv.as_deref())
            .switch("json", self.json);
    }
}
