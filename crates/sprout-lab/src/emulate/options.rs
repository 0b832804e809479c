//! What an emulated evaluation runs: its options and defaults.

use std::path::PathBuf;

use sprout_eval::aqm::AqmQueue;
use sprout_eval::eval::Scheme;

/// Schemes the emulated evaluation can run: Sprout and Sprout-EWMA over UDP, and the kernel's
/// Cubic (also behind CoDel), Reno and BBR.
pub const EMULATED_SCHEMES: [Scheme; 6] = [
    Scheme::Sprout,
    Scheme::SproutEwma,
    Scheme::Cubic,
    Scheme::Reno,
    Scheme::Bbr,
    Scheme::CubicCodel,
];

/// Schemes the emulated evaluation runs only when asked for (`--schemes sprout,webrtc`): the
/// real WebRTC call (aiortc), which needs Python with the package's `webrtc` extra, and Sprout
/// on the wide rate model (`sprout client --scheme sprout-wide`, the client's default).
pub const EXTRA_EMULATED_SCHEMES: [Scheme; 2] = [Scheme::Webrtc, Scheme::SproutWide];

/// The link emulated when none is named.
pub const DEFAULT_LINK: &str = "Verizon-LTE-short";
/// Length of each emulated run when none is given (µs): 140 s, the length of Verizon-LTE-short.
pub const DEFAULT_DURATION_US: u64 = 140_000_000;

/// Options of an emulated evaluation.
#[derive(Clone, Debug)]
pub struct EmulateOptions {
    /// Folder of traces; `None` = ./traces if it holds traces, else a synthetic link.
    pub traces: Option<PathBuf>,
    /// Link pairs to run; empty = [`DEFAULT_LINK`] if present, else the first pair found.
    pub links: Vec<String>,
    /// Schemes to run (each one of [`EMULATED_SCHEMES`]).
    pub schemes: Vec<Scheme>,
    /// Length of each run (µs).
    pub duration_us: u64,
    /// Start of the measured window (µs).
    pub skip_us: u64,
    /// Output folder.
    pub out: PathBuf,
    /// The `sprout` binary that runs the peers (`sprout server`, `client`, `tcp`).
    pub sprout_exe: PathBuf,
    /// The Python that runs the WebRTC call (`python -m sprout.webrtc_call`) for `webrtc`.
    pub python: PathBuf,
    /// Show a progress bar.
    pub progress: bool,
    /// The queue every scheme runs over, emulated and simulated alike (the `aqm` experiment's
    /// agreement check); `None`: each scheme's own (CoDel for `cubic-codel`, else the
    /// unlimited drop-tail).
    pub queue: Option<AqmQueue>,
}

/// The `aqm` experiment's emulated agreement check: the queue it runs (PIE: the AQM that is
/// the same one-queue discipline in both, FQ-CoDel's flows being keyed differently: by the
/// real 5-tuples in the emulator, one key per scheme in the simulator).
pub const AQM_QUEUE: &str = "pie";
/// The `aqm` experiment's emulated agreement check: the schemes it runs.
pub const AQM_SCHEMES: [Scheme; 2] = [Scheme::Sprout, Scheme::Cubic];

/// Offered rates of the emulated interactive experiment when none are given, kbit/s.
pub const DEFAULT_INTERACTIVE_RATES_KBPS: [f64; 2] = [500.0, 2000.0];
/// Length of each run of the emulated interactive experiment when none is given (µs).
pub const DEFAULT_INTERACTIVE_DURATION_US: u64 = 60_000_000;
/// The schemes of the emulated interactive experiment: a paced `sprout client --rate` stream
/// with Sprout and with Sprout-EWMA, and `direct`, `sprout interactive` (the stream sent
/// straight into the link with no congestion control).
pub const INTERACTIVE_SCHEMES: [&str; 3] = ["sprout", "sprout-ewma", "direct"];

/// Options of the emulated interactive experiment (`sprout eval --emulate --experiments
/// interactive`): a constant-rate stream down one link pair's downlink, per scheme and rate.
#[derive(Clone, Debug)]
pub struct InteractiveOptions {
    /// Folder of traces; `None` = the default folders, else a synthetic link.
    pub traces: Option<PathBuf>,
    /// The link pair; `None` = [`DEFAULT_LINK`] if present, else the first pair found.
    pub link: Option<String>,
    /// Offered rates, kbit/s of payload (each above 0).
    pub rates_kbps: Vec<f64>,
    /// Length of each run (µs): the time the application offers data.
    pub duration_us: u64,
    /// Output folder.
    pub out: PathBuf,
    /// The `sprout` binary that runs the peers (`sprout server`, `client`, `interactive`).
    pub sprout_exe: PathBuf,
    /// Show a progress bar.
    pub progress: bool,
}
