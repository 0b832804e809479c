//! The links an evaluation runs: trace pairs loaded from a folder (or the built-in synthetic
//! link when there is none), and the download of the paper's traces.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use sprout_link::{SyntheticLink, Trace, TraceError};

pub use crate::error::DEFAULT_TRACE_DIRS;
use crate::error::{EvalError, Result};

/// A link pair: its name, its uplink and its downlink trace.
pub type Pair = (String, Arc<Trace>, Arc<Trace>);

/// The link pairs an evaluation runs, and where they came from.
pub struct LinkSet {
    /// Where the links came from (a folder, or the built-in synthetic link).
    pub source: String,
    /// How the links were chosen, when the user did not name a folder and none was found.
    pub note: Option<String>,
    /// The pairs, in order.
    pub pairs: Vec<Pair>,
}

impl LinkSet {
    /// The pair with this name, or else the first.
    pub fn named(&self, name: &str) -> &Pair {
        self.pairs
            .iter()
            .find(|p| p.0 == name)
            .unwrap_or(&self.pairs[0])
    }
}

/// Loads a trace file; a file that cannot be read is "cannot read trace PATH: why", once
/// ([`EvalError::ReadTrace`]), one that does not parse [`EvalError::BadTrace`].
pub fn load_trace(path: &Path) -> Result<Trace> {
    Trace::load(path).map_err(|e| EvalError::trace(path, e))
}

/// The trace pairs in `dir`, loaded; an error when there are none.
fn load_pairs(dir: &Path) -> Result<Vec<Pair>> {
    let found = Trace::find_pairs(dir).map_err(|e| match e {
        TraceError::Io { source, .. } => EvalError::TraceFolder {
            dir: dir.to_path_buf(),
            error: source,
        },
        e => EvalError::BadTrace(e),
    })?;
    if found.is_empty() {
        return Err(EvalError::NoTraces {
            dir: dir.to_path_buf(),
        });
    }
    found
        .into_iter()
        .map(|(name, up, down)| -> Result<_> {
            Ok((
                name,
                Arc::new(load_trace(&up)?),
                Arc::new(load_trace(&down)?),
            ))
        })
        .collect()
}

/// The trace pairs in `traces`; with `None`, those of the first of [`DEFAULT_TRACE_DIRS`] that
/// holds any, else the built-in synthetic link (with a note saying so).
pub fn load_links(traces: Option<&Path>) -> Result<LinkSet> {
    let dir = match traces {
        Some(d) => Some(d.to_path_buf()),
        None => DEFAULT_TRACE_DIRS
            .iter()
            .map(PathBuf::from)
            .find(|d| matches!(Trace::find_pairs(d), Ok(p) if !p.is_empty())),
    };
    if let Some(d) = dir {
        return Ok(LinkSet {
            pairs: load_pairs(&d)?,
            source: d.display().to_string(),
            note: None,
        });
    }
    let make = |seed: u64, dir: &str| {
        Arc::new(
            SyntheticLink {
                seed,
                duration_s: 300.0,
                ..SyntheticLink::default()
            }
            .generate(format!("Synthetic.{dir}")),
        )
    };
    Ok(LinkSet {
        source: "the built-in synthetic cellular link (the paper's model, seeds 1 and 2, 300 s)"
            .into(),
        note: Some(format!(
            "No traces in {}, so this ran the built-in synthetic cellular link, and only the \
             checks that hold on any link apply. For the paper's eight links, put its traces \
             (NAME.up and NAME.down files) in ./traces or pass --traces DIR: `cargo run \
             --release -p sprout-cli -- traces fetch` downloads them from {TRACE_HOME}, and \
             where this machine cannot reach it, a copy of that folder from any checkout of \
             mahimahi will do.",
            DEFAULT_TRACE_DIRS.join(" or ")
        )),
        pairs: vec![("Synthetic".into(), make(1, "up"), make(2, "down"))],
    })
}

/// Where people find the paper's traces: the mahimahi repository's traces folder.
const TRACE_HOME: &str = "https://github.com/ravinet/mahimahi/tree/master/traces";
/// Public home of the paper's traces (the mahimahi repository's traces folder), raw files.
const TRACE_BASE: &str = "https://raw.githubusercontent.com/ravinet/mahimahi/master/traces";
const TRACE_NAMES: [&str; 4] = [
    "Verizon-LTE-short",
    "ATT-LTE-driving",
    "TMobile-UMTS-driving",
    "Verizon-EVDO-driving",
];

/// Downloads the paper's traces into `dir` with `curl`, checking each file parses as a trace.
/// Says clearly when the network (or curl) is not available.
pub fn fetch_traces(dir: &Path) -> Result<String> {
    fs::create_dir_all(dir).map_err(|source| EvalError::Io {
        what: "creating",
        path: dir.to_path_buf(),
        source,
    })?;
    let mut fetched = Vec::new();
    for name in TRACE_NAMES {
        for d in ["up", "down"] {
            let file = format!("{name}.{d}");
            fetch_trace(dir, &file)?;
            fetched.push(file);
        }
    }
    Ok(format!(
        "fetched {} traces into {}",
        fetched.len(),
        dir.display()
    ))
}

/// Downloads one trace `file` into `dir` (through a temporary file, renamed once it parses).
fn fetch_trace(dir: &Path, file: &str) -> Result<()> {
    let target = dir.join(file);
    let tmp = dir.join(format!(".{file}.part"));
    let url = format!("{TRACE_BASE}/{file}");
    let status = std::process::Command::new("curl")
        .args([
            "-fsSL",
            "--connect-timeout",
            "10",
            "--max-time",
            "120",
            // No more than a trace file may hold (sprout_link's cap).
            "--max-filesize",
            &sprout_link::trace::MAX_TRACE_FILE_BYTES.to_string(),
            "-o",
        ])
        .arg(&tmp)
        .arg(&url)
        .status();
    match status {
        Ok(s) if s.success() => {}
        Ok(s) => {
            let _ = fs::remove_file(&tmp);
            return Err(EvalError::Download {
                url,
                code: s.code().unwrap_or(-1),
                dir: dir.to_path_buf(),
            });
        }
        Err(error) => return Err(EvalError::Curl { error }),
    }
    Trace::load(&tmp).map_err(|source| EvalError::DownloadedBadTrace {
        file: file.to_string(),
        source,
    })?;
    fs::rename(&tmp, &target)?;
    Ok(())
}
