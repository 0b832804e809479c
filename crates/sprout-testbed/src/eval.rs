//! The evaluation harness: every link pair and scheme, in parallel, with the paper beside us.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use sprout_core::Config;

/// A scheme the evaluation can run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Scheme {
    /// Sprout with its cautious forecast.
    #[serde(rename = "sprout")]
    Sprout,
    /// Sprout-EWMA.
    #[serde(rename = "sprout-ewma")]
    SproutEwma,
}

impl Scheme {
    /// The scheme's key, as used on the command line and in results.csv.
    pub fn key(&self) -> &'static str {
        match self {
            Scheme::Sprout => "sprout",
            Scheme::SproutEwma => "sprout-ewma",
        }
    }

    /// The protocol configuration the scheme runs with.
    pub fn protocol_config(&self) -> Config {
        match self {
            Scheme::Sprout => Config::default(),
            Scheme::SproutEwma => Config::ewma(),
        }
    }
}

impl std::str::FromStr for Scheme {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim() {
            "sprout" => Ok(Scheme::Sprout),
            "sprout-ewma" | "ewma" => Ok(Scheme::SproutEwma),
            other => Err(format!("unknown scheme '{other}' (known: sprout, sprout-ewma)")),
        }
    }
}

/// Options of an evaluation run.
#[derive(Clone, Debug)]
pub struct EvalOptions {
    /// Folder of traces; `None` = ./traces if it holds traces, else a synthetic link.
    pub traces: Option<PathBuf>,
    /// Schemes to run.
    pub schemes: Vec<Scheme>,
    /// Output folder.
    pub out: PathBuf,
    /// Start of the measured window, in microseconds.
    pub skip_us: u64,
    /// Parallel jobs; `None` = one per core.
    pub jobs: Option<usize>,
    /// Show a progress bar.
    pub progress: bool,
}

/// Runs the evaluation; returns a short summary for the terminal.
pub fn run(_opts: &EvalOptions) -> anyhow::Result<String> {
    anyhow::bail!("not yet")
}

/// Downloads the paper's traces into `dir`.
pub fn fetch_traces(_dir: &std::path::Path) -> anyhow::Result<String> {
    anyhow::bail!("not yet")
}
