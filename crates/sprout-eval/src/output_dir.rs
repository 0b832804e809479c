//! The output folder of an evaluation, and what an earlier run left in it.
//!
//! Each run lists the files it wrote in [`MANIFEST`]. A later run into the same folder removes
//! the files that the earlier run's list names and this run did not write again (an experiment
//! left out, a link no longer in the traces), so that every file there belongs to this run's
//! report; it leaves any other file alone and says which ones this run did not write.
//!
//! Nothing is left half-written: every file is written under a temporary name and renamed into
//! place ([`write_atomically`]), and while a run writes, the manifest's first line says the set
//! is incomplete ([`INCOMPLETE`]); only a run that finishes replaces it with its list. A run
//! killed midway thus leaves whole files (each the earlier or the new run's) and a manifest
//! that says so.

use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::error::{EvalError, Result};

/// The file listing what the last run wrote in its folder, one name per line.
pub const MANIFEST: &str = "files.txt";
/// The manifest's first line while a run is writing (and after one that did not finish).
pub const INCOMPLETE: &str =
    "# INCOMPLETE: a sprout eval run started writing here and did not finish; its files and an \
     earlier run's may be mixed. The names below are the earlier run's.";
/// The suffix of a file being written, before it is renamed into place.
const PART: &str = ".part";

/// An output folder as a run found it.
pub struct OutputDir {
    path: PathBuf,
    /// Every regular file there before the run, with its modification time.
    before: HashMap<String, SystemTime>,
    /// The files the earlier run's manifest lists.
    earlier: BTreeSet<String>,
}

/// What a run's folder held besides the run's own files, once tidied.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Tidied {
    /// Files of an earlier run that this run did not write again: removed.
    pub removed: Vec<String>,
    /// Files no run of ours listed and this run did not write: left alone.
    pub foreign: Vec<String>,
}

impl OutputDir {
    /// Creates the folder if needed and notes what is in it.
    pub fn open(path: &Path) -> Result<OutputDir> {
        fs::create_dir_all(path).map_err(|source| EvalError::Io {
            what: "creating output folder",
            path: path.to_path_buf(),
            source,
        })?;
        let earlier: BTreeSet<String> = fs::read_to_string(path.join(MANIFEST))
            .map(|text| {
                text.lines()
                    .filter(|l| !l.starts_with('#'))
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default();
        // What a killed run was writing when it died goes; the rest is what was there.
        let mut before = files(path)?;
        before.retain(|name, _| {
            let part = name.ends_with(PART);
            if part {
                let _ = fs::remove_file(path.join(name));
            }
            !part
        });
        // Marked incomplete until this run finishes (keeping the earlier list for tidying).
        let marked: String = std::iter::once(INCOMPLETE.to_string())
            .chain(earlier.iter().cloned())
            .map(|l| l + "\n")
            .collect();
        write_atomically(&path.join(MANIFEST), marked.as_bytes()).map_err(|source| {
            EvalError::Io {
                what: "writing",
                path: path.join(MANIFEST),
                source,
            }
        })?;
        Ok(OutputDir {
            path: path.to_path_buf(),
            before,
            earlier,
        })
    }

    /// After the run has written its files: writes the manifest of what it wrote (a file new
    /// or modified since [`OutputDir::open`]), removes the earlier run's files it did not
    /// write again, and says what it removed and what else it left.
    pub fn finish(self) -> Result<Tidied> {
        let now = files(&self.path)?;
        let written: BTreeSet<&String> = now
            .iter()
            .filter(|(name, modified)| {
                name.as_str() != MANIFEST
                    && !name.ends_with(PART)
                    && self.before.get(*name) != Some(modified)
            })
            .map(|(name, _)| name)
            .collect();
        let mut tidied = Tidied::default();
        let mut stale: Vec<&String> = now
            .keys()
            .filter(|n| n.as_str() != MANIFEST && !n.ends_with(PART) && !written.contains(n))
            .collect();
        stale.sort();
        for name in stale {
            if self.earlier.contains(name) && !is_manifest_unsafe(name) {
                let path = self.path.join(name);
                fs::remove_file(&path).map_err(|source| EvalError::Io {
                    what: "removing an earlier run's file",
                    path,
                    source,
                })?;
                tidied.removed.push(name.clone());
            } else {
                tidied.foreign.push(name.clone());
            }
        }
        let list: String = written.iter().map(|n| format!("{n}\n")).collect();
        let manifest = self.path.join(MANIFEST);
        write_atomically(&manifest, list.as_bytes()).map_err(|source| EvalError::Io {
            what: "writing",
            path: manifest,
            source,
        })?;
        Ok(tidied)
    }
}

/// A name a manifest may not make us remove: one with a path in it (a hand-edited manifest).
fn is_manifest_unsafe(name: &str) -> bool {
    name.contains('/') || name == ".." || name == "."
}

/// The regular files directly in `dir`, by name, with their modification times.
fn files(dir: &Path) -> Result<HashMap<String, SystemTime>> {
    let io = |source| EvalError::Io {
        what: "listing output folder",
        path: dir.to_path_buf(),
        source,
    };
    let mut out = HashMap::new();
    for entry in fs::read_dir(dir).map_err(io)? {
        let entry = entry.map_err(io)?;
        let meta = entry.metadata().map_err(io)?;
        if let (true, Some(name)) = (meta.is_file(), entry.file_name().to_str()) {
            out.insert(name.to_string(), meta.modified().map_err(io)?);
        }
    }
    Ok(out)
}

/// Writes `bytes` to `path` whole or not at all: to `NAME.part` beside it, then renamed into
/// place, so that a reader (or a run killed midway) never sees a cut file.
pub fn write_atomically(path: impl AsRef<Path>, bytes: impl AsRef<[u8]>) -> std::io::Result<()> {
    let path = path.as_ref();
    let mut part = path.as_os_str().to_owned();
    part.push(PART);
    let part = PathBuf::from(part);
    if let Err(e) = fs::write(&part, bytes).and_then(|()| fs::rename(&part, path)) {
        let _ = fs::remove_file(&part);
        return Err(e);
    }
    Ok(())
}

/// Writes `rows` as CSV to `path` (a header row from the fields' names), whole or not at all
/// ([`write_atomically`]).
pub fn write_csv<T: serde::Serialize>(
    path: &Path,
    rows: impl IntoIterator<Item = T>,
) -> Result<()> {
    let mut w = csv::Writer::from_writer(Vec::new());
    for r in rows {
        w.serialize(r)?;
    }
    let bytes = w.into_inner().map_err(|e| e.into_error())?;
    write_atomically(path, bytes)?;
    Ok(())
}

impl fmt::Display for Tidied {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let list = |names: &[String]| {
            let shown: Vec<&str> = names.iter().take(5).map(String::as_str).collect();
            let more = names.len().saturating_sub(shown.len());
            if more > 0 {
                format!("{} and {more} more", shown.join(", "))
            } else {
                shown.join(", ")
            }
        };
        if !self.removed.is_empty() {
            writeln!(
                f,
                "removed {} an earlier run wrote here and this run did not: {}",
                files_count(self.removed.len()),
                list(&self.removed)
            )?;
        }
        if !self.foreign.is_empty() {
            writeln!(
                f,
                "left {} that this run did not write: {}",
                files_count(self.foreign.len()),
                list(&self.foreign)
            )?;
        }
        Ok(())
    }
}

/// "1 file", "3 files".
fn files_count(n: usize) -> String {
    format!("{n} file{}", if n == 1 { "" } else { "s" })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str) {
        fs::write(dir.join(name), name).unwrap();
    }

    #[test]
    fn a_second_run_removes_what_only_the_first_wrote_and_leaves_the_rest() {
        let dir = std::env::temp_dir().join(format!("sprout-outdir-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        write(&dir, "notes.txt"); // the user's own file
        let first = OutputDir::open(&dir).unwrap();
        for n in ["results.csv", "fig7-a.svg", "loss.csv"] {
            write(&dir, n);
        }
        let t = first.finish().unwrap();
        assert_eq!(t.removed, Vec::<String>::new());
        assert_eq!(t.foreign, vec!["notes.txt".to_string()]);
        // The clock of a file's time stamp may be coarse: let it move on.
        std::thread::sleep(std::time::Duration::from_millis(20));
        let second = OutputDir::open(&dir).unwrap();
        for n in ["results.csv", "fig7-a.svg"] {
            write(&dir, n);
        }
        let t = second.finish().unwrap();
        let second_said = t.to_string();
        assert_eq!(t.removed, vec!["loss.csv".to_string()]);
        assert_eq!(t.foreign, vec!["notes.txt".to_string()]);
        assert!(!dir.join("loss.csv").exists());
        assert!(dir.join("notes.txt").exists());
        let listed = fs::read_to_string(dir.join(MANIFEST)).unwrap();
        assert_eq!(listed, "fig7-a.svg\nresults.csv\n");
        // A third run that dies after opening (and a file it was writing) leaves the folder
        // marked incomplete, with the earlier list kept; the next run clears the leftover.
        let third = OutputDir::open(&dir).unwrap();
        fs::write(dir.join("results.csv.part"), "cut mid-ro").unwrap();
        drop(third);
        let listed = fs::read_to_string(dir.join(MANIFEST)).unwrap();
        assert_eq!(listed, format!("{INCOMPLETE}\nfig7-a.svg\nresults.csv\n"));
        let fourth = OutputDir::open(&dir).unwrap();
        assert!(!dir.join("results.csv.part").exists());
        write(&dir, "results.csv");
        write(&dir, "fig7-a.svg");
        let t = fourth.finish().unwrap();
        assert!(t.removed.is_empty(), "{t:?}");
        assert_eq!(
            fs::read_to_string(dir.join(MANIFEST)).unwrap(),
            "fig7-a.svg\nresults.csv\n"
        );
        assert!(
            second_said.contains("removed 1 file an earlier run wrote here"),
            "{second_said}"
        );
        fs::remove_dir_all(&dir).unwrap();
    }
}
