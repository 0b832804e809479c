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

/// The trace pairs in `traces`; with `None`, those of the first of
/// [`sprout_link::data_dirs::trace_dirs`] (`$SPROUT_TRACES`, [`DEFAULT_TRACE_DIRS`]) that
/// holds any, else the built-in synthetic link (with a note saying so, and what the folders
/// that exist hold instead).
pub fn load_links(traces: Option<&Path>) -> Result<LinkSet> {
    let dir = match traces {
        Some(d) => Some(d.to_path_buf()),
        None => sprout_link::data_dirs::find_trace_dir(),
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
        note: Some(no_traces_note()),
        pairs: vec![("Synthetic".into(), make(1, "up"), make(2, "down"))],
    })
}

/// What the main job says when it found no traces: where it looked, what the folders that
/// exist hold instead (a folder of traces one level too deep, say), and how to get them.
fn no_traces_note() -> String {
    let found: Vec<String> = sprout_link::data_dirs::trace_dirs()
        .iter()
        .filter_map(|d| sprout_link::data_dirs::describe_folder(d))
        .map(|d| format!(" {d}."))
        .collect();
    format!(
        "No traces in {}, so this ran the built-in synthetic cellular link, and only the \
         checks that hold on any link apply.{} For the paper's eight links, put its traces \
         (NAME.up and NAME.down files) in ./traces or pass --traces DIR: `cargo run \
         --release -p sprout-cli -- traces fetch` downloads them from {TRACE_HOME}, and \
         where this machine cannot reach it, `traces fetch --from DIR` copies them from any \
         checkout of mahimahi (docs/data.md).",
        sprout_link::data_dirs::trace_dirs_shown(),
        found.concat()
    )
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
/// Says clearly when the network (or curl) is not available; a download that fails leaves
/// nothing behind (not the files fetched before it, nor the folder if it made it).
pub fn fetch_traces(dir: &Path) -> Result<String> {
    let mut files = Vec::new();
    for name in TRACE_NAMES {
        for d in ["up", "down"] {
            files.push(format!("{name}.{d}"));
        }
    }
    into_folder(dir, &files, |tmp, file| fetch_trace(tmp, file, dir))?;
    Ok(format!(
        "fetched {} traces into {}",
        files.len(),
        dir.display()
    ))
}

/// Copies the trace pairs of a folder (a mahimahi checkout, its `traces/`, or any folder of
/// `NAME.up` / `NAME.down`) into `dir`, checking each parses: the paper's four links when the
/// folder holds all of them (a mahimahi checkout holds others too), else every pair.
/// Whole or nothing, as [`fetch_traces`].
pub fn import_traces(from: &Path, dir: &Path) -> Result<String> {
    let source = [from.to_path_buf(), from.join("traces")]
        .into_iter()
        .find(|d| sprout_link::data_dirs::holds_pairs(d))
        .ok_or_else(|| {
            if from.is_dir() {
                EvalError::NoTraces {
                    dir: from.to_path_buf(),
                }
            } else {
                EvalError::TraceFolder {
                    dir: from.to_path_buf(),
                    error: fs::read_dir(from)
                        .err()
                        .unwrap_or_else(|| std::io::ErrorKind::NotFound.into()),
                }
            }
        })?;
    let pairs = Trace::find_pairs(&source).map_err(EvalError::BadTrace)?;
    let paper = TRACE_NAMES
        .iter()
        .all(|n| pairs.iter().any(|(name, _, _)| name == n));
    let chosen: Vec<&str> = pairs
        .iter()
        .map(|(name, _, _)| name.as_str())
        .filter(|n| !paper || TRACE_NAMES.contains(n))
        .collect();
    let files: Vec<String> = chosen
        .iter()
        .flat_map(|n| [format!("{n}.up"), format!("{n}.down")])
        .collect();
    into_folder(dir, &files, |tmp, file| {
        let target = tmp.join(file);
        fs::copy(source.join(file), &target).map_err(|source| EvalError::Io {
            what: "copying",
            path: target.clone(),
            source,
        })?;
        load_trace(&target).map(|_| ())
    })?;
    let left = pairs.len() - chosen.len();
    Ok(format!(
        "copied {} traces from {} into {}{}",
        files.len(),
        source.display(),
        dir.display(),
        if left > 0 {
            format!(
                " (the paper's {} links; {left} other pairs there not copied: --traces {} runs \
                 them all)",
                chosen.len(),
                source.display()
            )
        } else {
            String::new()
        }
    ))
}

/// Puts `files` into `dir` whole or not at all: each is made by `make(staging, file)` in a
/// staging folder beside `dir`, and they are moved in only when all were made. On failure
/// the staging folder is removed, and `dir` is untouched (not even created).
fn into_folder(
    dir: &Path,
    files: &[String],
    mut make: impl FnMut(&Path, &str) -> Result<()>,
) -> Result<()> {
    let name = dir
        .file_name()
        .map_or_else(|| "traces".into(), |n| n.to_string_lossy().into_owned());
    let parent = match dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let staging = parent.join(format!(".{name}.part-{}", std::process::id()));
    // What a killed run left (its process is gone) goes first.
    let stale = format!(".{name}.part-");
    for entry in fs::read_dir(&parent).into_iter().flatten().flatten() {
        let n = entry.file_name().to_string_lossy().into_owned();
        let pid = n.strip_prefix(&stale).and_then(|p| p.parse::<u32>().ok());
        if pid.is_some_and(crate::output_dir::process_gone) {
            let _ = fs::remove_dir_all(entry.path());
        }
    }
    let io = |what: &'static str, path: &Path| {
        let path = path.to_path_buf();
        move |source| EvalError::Io { what, path, source }
    };
    fs::create_dir_all(&staging).map_err(io("creating", &staging))?;
    let made = files.iter().try_for_each(|f| make(&staging, f));
    let moved = made.and_then(|()| {
        fs::create_dir_all(dir).map_err(io("creating", dir))?;
        for f in files {
            fs::rename(staging.join(f), dir.join(f)).map_err(io("writing", &dir.join(f)))?;
        }
        Ok(())
    });
    let _ = fs::remove_dir_all(&staging);
    moved
}

/// Downloads one trace `file` into `dir` (through a temporary file, renamed once it parses);
/// `target_dir` is the folder the user asked for, which an error names.
fn fetch_trace(dir: &Path, file: &str, target_dir: &Path) -> Result<()> {
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
                dir: target_dir.to_path_buf(),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_run_removes_what_a_killed_one_left() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("traces");
        let pid = crate::output_dir::tests::dead_pid();
        let left = tmp.path().join(format!(".traces.part-{pid}"));
        fs::create_dir(&left).unwrap();
        fs::write(left.join("a.up"), "1\n").unwrap();
        let files = ["a.up".to_string()];
        into_folder(&dir, &files, |d, f| {
            fs::write(d.join(f), "1\n").map_err(EvalError::from)
        })
        .unwrap();
        assert!(!left.exists(), "a killed run's staging folder left behind");
    }

    #[test]
    fn a_failed_step_leaves_nothing_behind() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("traces");
        let files = ["a.up".to_string(), "a.down".to_string()];
        let e = into_folder(&dir, &files, |d, f| {
            if f == "a.down" {
                return Err(EvalError::BadParameter("no network".into()));
            }
            fs::write(d.join(f), "1\n").map_err(EvalError::from)
        });
        assert!(e.is_err());
        assert!(!dir.exists(), "the folder was left behind");
        assert_eq!(
            fs::read_dir(tmp.path()).unwrap().count(),
            0,
            "a staging folder left"
        );
        into_folder(&dir, &files, |d, f| {
            fs::write(d.join(f), "1\n").map_err(EvalError::from)
        })
        .unwrap();
        assert!(dir.join("a.up").is_file() && dir.join("a.down").is_file());
        assert_eq!(fs::read_dir(tmp.path()).unwrap().count(), 1);
    }
}
