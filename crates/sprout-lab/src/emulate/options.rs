//! What an emulated evaluation runs: its options and defaults.

use std::path::PathBuf;

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
    /// Show a progress bar.
    pub progress: bool,
}
