//! The evaluation's errors: one enum for the experiments, the trace folders, the outputs and
//! the sweeps, each variant one kind of failure, its message the one `sprout` prints.
//!
//! Messages are the text the harness always printed. Where it printed a failure and its cause
//! as two parts ("cannot read trace PATH", then the I/O error), the variant has the cause as
//! its `source`, so that a formatter walking the chain (the CLI's, Python's) prints the same
//! line. Where the cause's text is part of the message itself, the cause is kept in a field
//! that is not a source, so that it is not said twice.

use std::io;
use std::path::PathBuf;

use sprout_link::TraceError;
use sprout_sim::SimError;

/// Where an evaluation looks for traces when it is not given a folder, after `$SPROUT_TRACES`
/// (relative to the current folder): `./traces` (where `sprout traces fetch` puts them), then
/// the paper's traces beside the repository ([`sprout_link::data_dirs`]). With none, it runs
/// the built-in synthetic link.
pub use sprout_link::data_dirs::DEFAULT_TRACE_DIRS;

/// What can go wrong in an evaluation, a sweep or the files they read and write.
///
/// The kinds, for a caller that reports them apart (the Python package): a file that cannot be
/// read or written ([`Io`](Self::Io), [`ReadTrace`](Self::ReadTrace),
/// [`TraceFolder`](Self::TraceFolder), [`SpecTraceFolder`](Self::SpecTraceFolder),
/// [`Output`](Self::Output), [`ReadCsv`](Self::ReadCsv), [`Csv`](Self::Csv): their I/O error,
/// [`EvalError::io_error`], says whether it was not found); a trace that does not
/// parse or is missing ([`BadTrace`](Self::BadTrace), [`NoTraces`](Self::NoTraces),
/// [`TraceChanged`](Self::TraceChanged), [`DownloadedBadTrace`](Self::DownloadedBadTrace));
/// a bad option, parameter or sweep spec ([`BadParameter`](Self::BadParameter),
/// [`Spec`](Self::Spec), [`SpecSynthetic`](Self::SpecSynthetic), and [`Sim`](Self::Sim) when
/// [`SimError::is_bad_parameter`]: [`EvalError::is_bad_parameter`] tells them all); a
/// simulation that failed ([`Sim`](Self::Sim), [`SimRun`](Self::SimRun)); the network ([`Download`](Self::Download),
/// [`Curl`](Self::Curl)). [`SpecFile`](Self::SpecFile) and [`SweepRun`](Self::SweepRun) say
/// which spec or run another error is about ([`EvalError::innermost`] finds that one).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EvalError {
    /// A trace file could not be read.
    #[error("cannot read trace {}", path.display())]
    ReadTrace {
        /// The file.
        path: PathBuf,
        /// Why (not found, no permission, ...).
        #[source]
        source: io::Error,
    },
    /// A trace that does not parse (its message names the file and line), or is empty.
    #[error(transparent)]
    BadTrace(TraceError),
    /// The trace folder could not be listed; when it does not exist, the message says where
    /// `sprout eval` looks without `--traces`.
    #[error(
        "cannot read trace folder {}: {error}{}",
        dir.display(),
        folder_hint(error)
    )]
    TraceFolder {
        /// The folder.
        dir: PathBuf,
        /// Why (its text is part of the message, so it is not a source).
        error: io::Error,
    },
    /// The trace folder holds no trace pair.
    #[error(
        "no trace pairs (NAME.up and NAME.down) in {}; {}",
        dir.display(),
        sprout_link::data_dirs::folder_contents(dir)
    )]
    NoTraces {
        /// The folder.
        dir: PathBuf,
    },
    /// A trace file of a planned sweep changed before its run.
    #[error(
        "trace {} changed since the sweep was planned (digest {now} now, {then} then)",
        path.display()
    )]
    TraceChanged {
        /// The file.
        path: PathBuf,
        /// Digest of its contents now (16 hex digits).
        now: String,
        /// Digest when the sweep was planned.
        then: String,
    },
    /// A bad option or Sprout parameter (`--param`, a scheme, a queue, an output's name).
    #[error("{0}")]
    BadParameter(String),
    /// A sweep spec that is not well formed (an unknown key, a value of the wrong type, ...).
    #[error("{0}")]
    Spec(String),
    /// A sweep spec's synthetic link that does not describe one.
    #[error("traces: {name}: synthetic")]
    SpecSynthetic {
        /// The trace entry's name.
        name: String,
        /// What is wrong with it.
        #[source]
        source: serde_json::Error,
    },
    /// A sweep spec's trace folder could not be listed.
    #[error("traces: reading {}", dir.display())]
    SpecTraceFolder {
        /// The folder.
        dir: PathBuf,
        /// Why.
        #[source]
        source: TraceError,
    },
    /// An error in the sweep spec at `path`.
    #[error("{}", path.display())]
    SpecFile {
        /// The spec file.
        path: PathBuf,
        /// The error.
        #[source]
        source: Box<EvalError>,
    },
    /// An error of one sweep run (a bad parameter or option of that run, found when the sweep
    /// is planned).
    #[error("{run}")]
    SweepRun {
        /// The run, described as in messages (`run ID (TRACE SCHEME seed N PARAMS)`).
        run: String,
        /// The error.
        #[source]
        source: Box<EvalError>,
    },
    /// A simulation failed, or its options or Sprout parameters are not usable
    /// ([`SimError::is_bad_parameter`] tells which).
    #[error(transparent)]
    Sim(#[from] SimError),
    /// One simulation of an evaluation failed.
    #[error("{run}")]
    SimRun {
        /// The run: `LINK / SCHEME`.
        run: String,
        /// Why.
        #[source]
        source: SimError,
    },
    /// A file or folder could not be created, read or written.
    #[error("{what} {}", path.display())]
    Io {
        /// What was being done ("creating", "reading", "cannot read sweep spec", ...).
        what: &'static str,
        /// The file or folder.
        path: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// Writing an output file failed (the message is the I/O error's).
    #[error(transparent)]
    Output(io::Error),
    /// A CSV file could not be read.
    #[error("reading {}", path.display())]
    ReadCsv {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: csv::Error,
    },
    /// Writing a CSV output failed.
    #[error(transparent)]
    Csv(csv::Error),
    /// Writing JSON failed.
    #[error(transparent)]
    Json(serde_json::Error),
    /// The worker threads could not be started.
    #[error("starting the worker threads")]
    Threads(#[source] rayon::ThreadPoolBuildError),
    /// Downloading a trace failed (curl ran, but the network did not give the file).
    #[error(
        "could not download {url} (curl exit {code}): this machine's network does not reach \
         the traces' public home, and nothing was written. With a checkout of \
         https://github.com/ravinet/mahimahi (made on a machine that reaches it), `sprout \
         traces fetch --from CHECKOUT` copies its traces into {}; or pass --traces DIR to \
         `sprout eval`.",
        dir.display()
    )]
    Download {
        /// The file's address.
        url: String,
        /// curl's exit status (-1: killed by a signal).
        code: i32,
        /// The folder the traces were to go to.
        dir: PathBuf,
    },
    /// curl could not be started.
    #[error("could not run curl to download traces: {error}")]
    Curl {
        /// Why (its text is part of the message, so it is not a source).
        error: io::Error,
    },
    /// A downloaded file is not a trace.
    #[error("downloaded {file} is not a valid trace")]
    DownloadedBadTrace {
        /// The file's name.
        file: String,
        /// Why.
        #[source]
        source: TraceError,
    },
}

impl EvalError {
    /// The error of a trace file that could not be loaded: [`ReadTrace`](Self::ReadTrace)
    /// when it could not be read, else [`BadTrace`](Self::BadTrace).
    pub fn trace(path: &std::path::Path, e: TraceError) -> EvalError {
        match e {
            TraceError::Io { source, .. } => EvalError::ReadTrace {
                path: path.to_path_buf(),
                source,
            },
            e => EvalError::BadTrace(e),
        }
    }

    /// A function making the [`Io`](Self::Io) error of `what` (such as "reading") on `path`
    /// from an I/O error, for `map_err`.
    pub fn io(what: &'static str, path: &std::path::Path) -> impl FnOnce(io::Error) -> EvalError {
        let path = path.to_path_buf();
        move |source| EvalError::Io { what, path, source }
    }

    /// Whether the error is in what the caller gave (an option, a Sprout parameter, a sweep
    /// spec), rather than in a file, a trace or the simulator.
    pub fn is_bad_parameter(&self) -> bool {
        match self.innermost() {
            EvalError::BadParameter(_) | EvalError::Spec(_) | EvalError::SpecSynthetic { .. } => {
                true
            }
            EvalError::Sim(e) | EvalError::SimRun { source: e, .. } => e.is_bad_parameter(),
            _ => false,
        }
    }

    /// The I/O error behind this one, if an I/O failure caused it (its kind says whether a
    /// file was not found).
    pub fn io_error(&self) -> Option<&io::Error> {
        match self.innermost() {
            EvalError::ReadTrace { source, .. }
            | EvalError::Io { source, .. }
            | EvalError::Output(source)
            | EvalError::BadTrace(TraceError::Io { source, .. })
            | EvalError::SpecTraceFolder {
                source: TraceError::Io { source, .. },
                ..
            }
            | EvalError::DownloadedBadTrace {
                source: TraceError::Io { source, .. },
                ..
            } => Some(source),
            EvalError::TraceFolder { error, .. } | EvalError::Curl { error } => Some(error),
            EvalError::Sim(e) | EvalError::SimRun { source: e, .. } => e.io_error(),
            EvalError::ReadCsv { source, .. } | EvalError::Csv(source) => match source.kind() {
                csv::ErrorKind::Io(e) => Some(e),
                _ => None,
            },
            _ => None,
        }
    }

    /// The error a [`SpecFile`](Self::SpecFile) or [`SweepRun`](Self::SweepRun) wraps (through
    /// any number of them); this error itself otherwise.
    pub fn innermost(&self) -> &EvalError {
        match self {
            EvalError::SpecFile { source, .. } | EvalError::SweepRun { source, .. } => {
                source.innermost()
            }
            e => e,
        }
    }
}

/// What a missing trace folder's message adds: where `sprout eval` looks without `--traces`.
fn folder_hint(error: &io::Error) -> String {
    if error.kind() == io::ErrorKind::NotFound {
        format!(
            " (without --traces, eval uses {} if one holds traces, else the built-in \
             synthetic link)",
            sprout_link::data_dirs::trace_dirs_shown()
        )
    } else {
        String::new()
    }
}

impl From<serde_json::Error> for EvalError {
    fn from(e: serde_json::Error) -> Self {
        EvalError::Json(e)
    }
}

impl From<csv::Error> for EvalError {
    fn from(e: csv::Error) -> Self {
        EvalError::Csv(e)
    }
}

impl From<io::Error> for EvalError {
    fn from(e: io::Error) -> Self {
        EvalError::Output(e)
    }
}

/// A `Result` with an [`EvalError`].
pub type Result<T, E = EvalError> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    /// The error and its causes as the command line prints them.
    fn chain(e: &EvalError) -> String {
        sprout_sim::error::chain_message(e)
    }

    #[test]
    fn messages_are_the_command_lines() {
        let missing = || io::Error::new(io::ErrorKind::NotFound, "No such file");
        let e = EvalError::trace(
            std::path::Path::new("a.up"),
            TraceError::Io {
                file: "a.up".into(),
                source: missing(),
            },
        );
        assert_eq!(chain(&e), "cannot read trace a.up: No such file");
        assert_eq!(
            e.io_error().map(io::Error::kind),
            Some(io::ErrorKind::NotFound)
        );
        let e = EvalError::TraceFolder {
            dir: "t".into(),
            error: missing(),
        };
        assert_eq!(
            chain(&e),
            "cannot read trace folder t: No such file (without --traces, eval uses \
             ./traces or ../shared/traces if one holds traces, else the built-in synthetic link)"
        );
        let e = EvalError::SpecFile {
            path: "s.toml".into(),
            source: Box::new(EvalError::SweepRun {
                run: "run 1 (c sprout seed 0)".into(),
                source: Box::new(EvalError::BadParameter("unknown queue 'x'".into())),
            }),
        };
        assert_eq!(
            chain(&e),
            "s.toml: run 1 (c sprout seed 0): unknown queue 'x'"
        );
        assert!(e.is_bad_parameter());
        assert!(e.io_error().is_none());
    }
}
