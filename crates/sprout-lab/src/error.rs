//! Why an experiment of the lab failed: one error for the emulated evaluation, the tunnel
//! experiment and the Saturator check. Nothing matches on what went wrong — the CLI prints
//! the text and its causes — so an error is a sentence saying what was being done, with the
//! error that stopped it as its source ([`LabError::Context`]), or a sentence alone when
//! nothing beneath it failed ([`LabError::Invalid`], [`LabError::Failed`]).

use std::error::Error as StdError;
use std::fmt;
use std::io;

use sprout_emu::EmuError;
use sprout_eval::EvalError;
use sprout_link::TraceError;
use sprout_secure::KeyError;
use sprout_sim::error::SimError;

use crate::webrtc_call::CallError;

/// The source of a [`LabError::Context`]: any error, kept whole for its own causes.
pub type Source = Box<dyn StdError + Send + Sync + 'static>;

/// An error of an experiment ([`emulate`](crate::emulate),
/// [`tunnel_experiment`](crate::tunnel_experiment), [`saturator_check`](crate::saturator_check)).
#[derive(Debug, thiserror::Error)]
pub enum LabError {
    /// The options or inputs ask for what cannot be run (no scheme, a link pair the traces
    /// do not hold, a skipped time longer than the run, ...); the text says what.
    #[error("{0}")]
    Invalid(String),
    /// A peer or step failed with no error beneath it (exited with a failure, did not end
    /// in time, printed no summary); the text says which and where its files are.
    #[error("{0}")]
    Failed(String),
    /// A step failed: `context` says which ("creating output folder out", "starting the
    /// link emulator", "emulating sprout on verizon-lte"), `source` why.
    #[error("{context}")]
    Context {
        /// What was being done.
        context: String,
        /// Why it failed.
        source: Source,
    },
    /// A stop signal (SIGINT, SIGTERM, SIGHUP) ended the run early, after it removed what it
    /// made (`sprout tunnel try`).
    #[error("interrupted by {name}; removed everything the run made")]
    Interrupted {
        /// The signal's number.
        signal: i32,
        /// Its name ("SIGINT").
        name: String,
    },
    /// The emulator's privilege check failed.
    #[error(transparent)]
    Emulator(#[from] EmuError),
    /// The server key could not be written.
    #[error(transparent)]
    Key(#[from] KeyError),
    /// A trace could not be made.
    #[error(transparent)]
    Trace(#[from] TraceError),
    /// The evaluation harness failed (loading the traces, writing a CSV file).
    #[error(transparent)]
    Eval(#[from] EvalError),
    /// A simulated run failed.
    #[error(transparent)]
    Sim(#[from] SimError),
    /// The WebRTC call cannot run here (no Python, no `sprout` package, no aiortc: the text
    /// says how to install them).
    #[error(transparent)]
    Call(#[from] CallError),
    /// A file or process operation failed.
    #[error(transparent)]
    Io(#[from] io::Error),
    /// A CSV file could not be written.
    #[error(transparent)]
    Csv(#[from] csv::Error),
    /// A JSON output could not be encoded.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
}

impl LabError {
    /// What was being done when `source` stopped it.
    pub fn context(context: impl Into<String>, source: impl Into<Source>) -> Self {
        LabError::Context {
            context: context.into(),
            source: source.into(),
        }
    }

    /// A link pair the traces (`traces`: where they came from) do not hold.
    pub fn no_link_pair(name: &str, traces: impl fmt::Display) -> Self {
        LabError::Invalid(format!("no link pair named {name} in {traces}"))
    }
}

/// A result of the lab.
pub type Result<T, E = LabError> = std::result::Result<T, E>;

/// Says what was being done when a result failed.
pub trait Context<T> {
    /// The error, with `context` as what was being done.
    fn context(self, context: impl Into<String>) -> Result<T>;
    /// The error, with `context()` as what was being done (made only on failure).
    fn with_context<C: Into<String>>(self, context: impl FnOnce() -> C) -> Result<T>;
}

impl<T, E: Into<Source>> Context<T> for std::result::Result<T, E> {
    fn context(self, context: impl Into<String>) -> Result<T> {
        self.map_err(|e| LabError::context(context, e))
    }

    fn with_context<C: Into<String>>(self, context: impl FnOnce() -> C) -> Result<T> {
        self.map_err(|e| LabError::context(context(), e))
    }
}
