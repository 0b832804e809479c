//! What `sprout tunnel try` runs: the link between the namespaces, the download's length and
//! the tunnel ends' knobs.

use std::path::PathBuf;
use std::sync::Arc;

use sprout_link::Trace;

/// Rate of the built-in constant link, each way (Mbit/s).
pub const DEFAULT_RATE_MBPS: f64 = 20.0;
/// One-way propagation delay of the link, each way (ms).
pub const DEFAULT_DELAY_MS: f64 = 20.0;
/// Length of the download through the tunnel (s); the pings run 1 s before it and beside it.
pub const DEFAULT_DURATION_S: f64 = 10.0;

/// The emulated link between the relay's namespace and the client's.
#[derive(Clone, Debug)]
pub enum TryLink {
    /// A constant rate each way (Mbit/s), made here: no trace files needed.
    Constant {
        /// Mbit/s, each way.
        rate_mbps: f64,
    },
    /// A recorded trace pair (looped).
    Trace {
        /// The pair's name (`NAME.up`, `NAME.down`).
        name: String,
        /// Uplink (client → relay).
        up: Arc<Trace>,
        /// Downlink (relay → client).
        down: Arc<Trace>,
    },
}

/// What to run.
#[derive(Clone, Debug)]
pub struct TryOptions {
    /// The `sprout` executable whose `tunnel server` and `tunnel client` run.
    pub sprout_exe: PathBuf,
    /// The link.
    pub link: TryLink,
    /// One-way propagation delay each way (ms).
    pub delay_ms: f64,
    /// Length of the download (s).
    pub duration_s: f64,
    /// Both ends pad the Sprout window (`--probe`).
    pub probe: bool,
    /// Both ends' forecast confidence (`--confidence`), the tunnel's default if `None`.
    pub confidence: Option<f64>,
}

impl TryOptions {
    /// The defaults: a constant [`DEFAULT_RATE_MBPS`] link, [`DEFAULT_DELAY_MS`] each way,
    /// a [`DEFAULT_DURATION_S`] download, the tunnel's own defaults.
    pub fn new(sprout_exe: PathBuf) -> TryOptions {
        TryOptions {
            sprout_exe,
            link: TryLink::Constant {
                rate_mbps: DEFAULT_RATE_MBPS,
            },
            delay_ms: DEFAULT_DELAY_MS,
            duration_s: DEFAULT_DURATION_S,
            probe: false,
            confidence: None,
        }
    }

    /// The link in words: "constant 20 Mbit/s each way, 20 ms one-way delay".
    pub fn link_text(&self) -> String {
        let link = match &self.link {
            TryLink::Constant { rate_mbps } => format!("constant {rate_mbps} Mbit/s each way"),
            TryLink::Trace { name, .. } => format!("trace {name} (looped)"),
        };
        format!("{link}, {} ms one-way delay", self.delay_ms)
    }
}
