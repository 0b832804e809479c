//! The simulator's errors ([`SimError`]), each with the message the `sprout` command prints,
//! and the one formatter of an error's cause chain ([`chain_message`], sprout-core's,
//! re-exported) that the command line, the sweeps and the Python package share.

use std::path::PathBuf;

use sprout_core::{ConfigError, DatagramError};
use sprout_link::{LinkConfigError, TraceError, UnknownQueue};

/// What is wrong with one `KEY=VALUE` parameter assignment ([`crate::overrides`]).
#[derive(Debug, thiserror::Error)]
pub enum ParamError {
    /// No `=` in it.
    #[error("expected KEY=VALUE")]
    NotAnAssignment,
    /// `model=NAME` with a name that is no preset.
    #[error(
        "unknown model '{name}' (known: {}, or a JSON object of the paper model's fields)",
        known.join(", ")
    )]
    UnknownModel {
        /// The name as given.
        name: String,
        /// The presets' names.
        known: &'static [&'static str],
    },
    /// An empty key.
    #[error("empty key")]
    EmptyKey,
    /// A key that goes into a value that has no fields.
    #[error("'{0}' has no fields")]
    NoFields(String),
    /// A key no field has.
    #[error(
        "unknown key '{key}'{} (known: {})",
        if within.is_empty() { String::new() } else { format!(" in '{within}'") },
        known.join(", ")
    )]
    UnknownKey {
        /// The unknown part of the key.
        key: String,
        /// The fields it was looked for in (dotted; empty: the top).
        within: String,
        /// Their keys.
        known: Vec<String>,
    },
    /// A value of the wrong type (its message is serde's, part of this one, so not a
    /// source).
    #[error("{0}")]
    Value(serde_json::Error),
}

impl From<serde_json::Error> for ParamError {
    fn from(e: serde_json::Error) -> Self {
        ParamError::Value(e)
    }
}

/// Why a simulation (its options, its traces, its run or its logs) failed. The `Display` text
/// is the command line's message; [`chain_message`] adds the causes the text leaves out.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// A trace file could not be read (the I/O error is the source).
    #[error("cannot read trace {file}")]
    TraceUnreadable {
        /// The trace's path, as given.
        file: String,
        /// Why it could not be read.
        #[source]
        source: std::io::Error,
    },
    /// A trace that does not parse (or is empty, or goes backwards).
    #[error(transparent)]
    Trace(#[from] TraceError),
    /// An output file (an mm-link log) could not be created.
    #[error("creating {}", path.display())]
    Create {
        /// The file.
        path: PathBuf,
        /// Why it could not be created.
        #[source]
        source: std::io::Error,
    },
    /// Writing an output file failed.
    #[error("writing {}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// Why it could not be written.
        #[source]
        source: std::io::Error,
    },
    /// Writing an output (an mm-link log) failed.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// The Sprout configuration is not usable.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// A link configuration is not usable.
    #[error(transparent)]
    Link(#[from] LinkConfigError),
    /// One direction's link configuration is not usable.
    #[error("{direction}: {source}")]
    DirectionLink {
        /// `uplink` or `downlink`.
        direction: &'static str,
        /// What is wrong with it.
        #[source]
        source: LinkConfigError,
    },
    /// A command-line option (`--loss`, ...) led to the error in `source`.
    #[error("{option}: {source}")]
    Option {
        /// The option, e.g. `--loss`.
        option: &'static str,
        /// What is wrong.
        #[source]
        source: Box<SimError>,
    },
    /// A `KEY=VALUE` parameter assignment that cannot be applied.
    #[error("parameter '{assignment}': {why}")]
    BadParameter {
        /// The assignment as given.
        assignment: String,
        /// What is wrong with it (part of the message, so not a source).
        why: ParamError,
    },
    /// Parameter assignments that each apply but together make an unusable configuration.
    #[error("parameters {assignments}: {source}")]
    BadParameters {
        /// The assignments, joined by spaces.
        assignments: String,
        /// What is wrong with the result.
        #[source]
        source: ConfigError,
    },
    /// A duration option that is not a number of the accepted kind.
    #[error(transparent)]
    BadDuration(#[from] sprout_core::time::BadDuration),
    /// An unknown queue name.
    #[error(transparent)]
    UnknownQueue(#[from] UnknownQueue),
    /// An application spec or value (`--app`) that is not usable; the message names the key.
    #[error("app '{spec}': {why}")]
    BadApp {
        /// The spec as given (or the app's canonical spec).
        spec: String,
        /// What is wrong with it.
        why: String,
    },
    /// Options that do not go together or a value out of its range; the message says which.
    #[error("{0}")]
    InvalidOption(String),
    /// A run whose measured window (from `--skip` to its end) is empty or too short for the
    /// paper's metrics to mean anything (`run_limits::MIN_MEASURED_WINDOW_US`).
    #[error(
        "the {direction} ({trace}) would be measured from {skip_s:.1} s (--skip) to {end_s:.1} s \
         ({ends_at}), {}",
        measured_window_advice(*skip_s, *end_s, ends_at, *min_window_s)
    )]
    MeasuredWindow {
        /// `uplink` or `downlink`.
        direction: &'static str,
        /// The direction's trace name.
        trace: String,
        /// Where measuring starts, seconds.
        skip_s: f64,
        /// Where the direction's measured window ends, seconds.
        end_s: f64,
        /// What sets that end: `--duration`, the shorter trace's length, or its own trace's.
        ends_at: &'static str,
        /// The shortest window a run may have, seconds.
        min_window_s: f64,
    },
    /// A run that would replay more delivery opportunities than one run may hold in memory
    /// (`run_limits::MAX_OPPORTUNITIES`).
    #[error(
        "a run of {duration_s:.0} s over these traces would replay about {opportunities:.0} delivery \
         opportunities, more than the {max_opportunities} one run may hold in memory; give a \
         --duration of at most {max_duration_s:.0} s"
    )]
    RunTooLarge {
        /// The run's length, seconds.
        duration_s: f64,
        /// The opportunities both directions would replay.
        opportunities: f64,
        /// The longest run over these traces within the bound, seconds.
        max_duration_s: f64,
        /// The bound: the most opportunities one run may replay.
        max_opportunities: u64,
    },
    /// A run longer than [`crate::run_limits::MAX_RUN_US`] of simulated time.
    #[error(
        "a run of {duration_s} s ({ends_at}) is longer than {max_s} s, the most one run may \
         simulate; give a --duration of at most {max_s} s"
    )]
    RunTooLong {
        /// The run's length, seconds.
        duration_s: f64,
        /// Where that length comes from: `--duration` or `the shorter trace's length`.
        ends_at: &'static str,
        /// The bound, seconds.
        max_s: u64,
    },
    /// A simulated Sprout datagram did not parse: a bug of the simulator.
    #[error("simulated datagram failed to parse: {0}")]
    Datagram(DatagramError),
    /// A packet of one transport reached an endpoint of the other: a bug of the simulator.
    #[error("simulated packet of the wrong transport")]
    WrongTransport,
    /// A configuration that does not convert to or from JSON.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
}

impl SimError {
    /// The I/O error behind this one, if an I/O failure caused it.
    pub fn io_error(&self) -> Option<&std::io::Error> {
        match self {
            SimError::TraceUnreadable { source, .. }
            | SimError::Create { source, .. }
            | SimError::Write { source, .. }
            | SimError::Io(source)
            | SimError::Trace(TraceError::Io { source, .. }) => Some(source),
            SimError::Option { source, .. } => source.io_error(),
            _ => None,
        }
    }

    /// Whether the error is in what the caller gave (options, parameters, a configuration),
    /// rather than in a file or the simulator.
    pub fn is_bad_parameter(&self) -> bool {
        matches!(
            self,
            SimError::Config(_)
                | SimError::Link(_)
                | SimError::DirectionLink { .. }
                | SimError::Option { .. }
                | SimError::BadParameter { .. }
                | SimError::BadParameters { .. }
                | SimError::BadDuration(_)
                | SimError::UnknownQueue(_)
                | SimError::InvalidOption(_)
                | SimError::BadApp { .. }
                | SimError::MeasuredWindow { .. }
                | SimError::RunTooLarge { .. }
                | SimError::RunTooLong { .. }
        )
    }
}

/// A name that is none of a choice's (a scheme, a load, an action, a feedback path): what
/// [`FromStr`](std::str::FromStr) gives for them, as `unknown {what} '{name}' ({choices})`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown {what} '{name}' ({choices})")]
pub struct UnknownName {
    /// What was named: `scheme`, `load`, `action`, `feedback path`.
    pub what: &'static str,
    /// The name given.
    pub name: String,
    /// The names that are known, as the message lists them (`known: a, b` or `expected a or
    /// b`).
    pub choices: String,
}

/// The one formatter of an error's cause chain (each cause said once), from
/// [`sprout_core::error_chain`]: how `sprout` prints an error (after "error: "), how a sweep
/// records a failed run, and the message of the Python package's exceptions.
pub use sprout_core::error_chain::chain_message;

/// The end of [`SimError::MeasuredWindow`]'s message: how long the window is, the minimum it
/// must reach, and the one change that reaches it (a shorter `--skip` when one can, else a
/// longer run or trace), all in seconds.
fn measured_window_advice(skip_s: f64, end_s: f64, ends_at: &str, min_window_s: f64) -> String {
    let window = if end_s <= skip_s {
        "an empty window".to_string()
    } else {
        format!("only {:.1} s", end_s - skip_s)
    };
    let fix = if end_s >= min_window_s {
        format!(
            "give a --skip at most {:.1} s or a longer run",
            end_s - min_window_s
        )
    } else if ends_at == "its trace's length" {
        format!("give a trace at least {:.1} s long", skip_s + min_window_s)
    } else {
        format!(
            "give a --duration of at least {:.1} s",
            skip_s + min_window_s
        )
    };
    format!("{window}, less than the {min_window_s:.0} s a run must measure; {fix}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chain_says_each_cause_once() {
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "No such file");
        let e = SimError::TraceUnreadable {
            file: "a.up".into(),
            source: io,
        };
        assert_eq!(chain_message(&e), "cannot read trace a.up: No such file");
        let e = SimError::Option {
            option: "--loss",
            source: Box::new(SimError::DirectionLink {
                direction: "uplink",
                source: LinkConfigError::Loss(2.0),
            }),
        };
        assert_eq!(
            chain_message(&e),
            "--loss: uplink: loss must be a probability between 0 and 1, got 2"
        );
        assert!(e.is_bad_parameter());
    }
}
