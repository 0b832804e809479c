//! The output folder of an evaluation, and what an earlier run left in it.
//!
//! A run writes its files into a hidden folder inside the output folder
//! ([`OutputDir::staging`]) and moves them into place only once every one of them is written
//! ([`OutputDir::finish`]). A run killed (or failed) before that leaves the earlier run's set
//! as it was, complete; the next run removes the hidden folder (named after the run's process
//! id): that of a process that no longer exists, and leaves that of one still running, which
//! it names ([`OutputDir::others_running`]).
//!
//! Moving the files in is quick but not one step, so while it happens the folder is marked
//! incomplete twice over: a file named [`INCOMPLETE_MARKER`], and the manifest's first line
//! ([`INCOMPLETE`]). The file is the mark that counts: it is written before the manifest is
//! marked and removed only after the final manifest is written, so a run killed between those
//! steps can leave a whole set still called incomplete, never a part set called whole. `report.md` is removed first and moved in last, after the earlier run's
//! other files are gone, so a report never sits beside another run's tables: either the
//! earlier run's report beside its own files, or none (the folder marked incomplete), or the
//! new one beside the new files.
//!
//! Each run lists the files it wrote in [`MANIFEST`]. A later run into the same folder removes
//! the files that the earlier run's list names and this run did not write again (an experiment
//! left out, a link no longer in the traces), so that every file there belongs to this run's
//! report; it leaves any other file alone and says which ones this run did not write.

use std::collections::BTreeSet;
use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};

use crate::error::{EvalError, Result};

/// Writes `bytes` to `path` whole or not at all ([`sprout_files::write_atomically`]).
pub use sprout_files::write_atomically;

/// The file listing what the last run wrote in its folder, one name per line.
pub const MANIFEST: &str = "files.txt";
/// The manifest's first line while a run moves its files in (and after one killed then).
pub const INCOMPLETE: &str =
    "# INCOMPLETE: a sprout eval run started moving its files here and did not finish; its \
     files and an earlier run's may be mixed. The names below are both runs'.";
/// The file that marks the folder incomplete while a run moves its files in (and after one
/// killed then); a finished run removes it.
pub const INCOMPLETE_MARKER: &str = "INCOMPLETE";
/// The report, moved in last.
const REPORT: &str = "report.md";
/// The start of the name of the hidden folder a run writes into.
const STAGING_PREFIX: &str = ".sprout-eval-run.";
/// The suffix of a file being written, before it is renamed into place.
const PART: &str = ".part";
/// The largest manifest read, bytes (it lists a few hundred names).
const MAX_MANIFEST_BYTES: u64 = 1 << 20;

/// An output folder as a run found it, and the hidden folder the run writes into.
pub struct OutputDir {
    path: PathBuf,
    staging: PathBuf,
    /// The files the earlier run's manifest lists.
    earlier: BTreeSet<String>,
    finished: bool,
    /// Hidden folders of other runs still running (left alone).
    others_running: Vec<PathBuf>,
}

/// Whether the process `pid` no longer exists (where `/proc` does not tell, every process is
/// taken for gone).
pub(crate) fn process_gone(pid: u32) -> bool {
    let proc = Path::new("/proc");
    !proc.join("self").exists() || !proc.join(pid.to_string()).exists()
}

/// The process id in a staging folder's name `PREFIX<pid>-...` (`None`: not one of ours).
fn staging_pid(name: &str, prefix: &str) -> Option<u32> {
    name.strip_prefix(prefix)?.split('-').next()?.parse().ok()
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
    /// Creates the folder if needed, removes what a killed run left (its hidden folder, a
    /// half-written file), notes the earlier run's manifest, and makes the hidden folder this
    /// run writes into.
    pub fn open(path: &Path) -> Result<OutputDir> {
        let io = |what: &'static str, p: &Path| EvalError::io(what, p);
        fs::create_dir_all(path).map_err(io("creating output folder", path))?;
        let mut others_running = Vec::new();
        for entry in fs::read_dir(path).map_err(io("listing output folder", path))? {
            let entry = entry.map_err(io("listing output folder", path))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let p = entry.path();
            if name.starts_with(STAGING_PREFIX) && p.is_dir() {
                let pid = staging_pid(&name, STAGING_PREFIX);
                if pid.is_some_and(|pid| pid != std::process::id() && !process_gone(pid)) {
                    others_running.push(p);
                    continue;
                }
                fs::remove_dir_all(&p).map_err(io("removing a killed run's folder", &p))?;
            } else if name.ends_with(PART) && p.is_file() {
                let _ = fs::remove_file(&p);
            }
        }
        let earlier: BTreeSet<String> =
            sprout_files::read_to_string_capped(path.join(MANIFEST), MAX_MANIFEST_BYTES)
                .map(|text| {
                    text.lines()
                        .filter(|l| !l.starts_with('#') && !l.is_empty())
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default();
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let staging = path.join(format!("{STAGING_PREFIX}{}-{nanos}", std::process::id()));
        fs::create_dir(&staging).map_err(io("creating", &staging))?;
        Ok(OutputDir {
            path: path.to_path_buf(),
            staging,
            earlier,
            finished: false,
            others_running,
        })
    }

    /// The hidden folders of other runs into this folder that are still running (left in
    /// place; a killed run's folder is removed).
    pub fn others_running(&self) -> &[PathBuf] {
        &self.others_running
    }

    /// The hidden folder the run writes its files into.
    pub fn staging(&self) -> &Path {
        &self.staging
    }

    /// After the run has written its files into [`OutputDir::staging`]: marks the folder
    /// incomplete, moves them into place (the report last, after removing the earlier run's
    /// files this run did not write again), writes the manifest of what it wrote, removes
    /// the mark, and says what it removed and what else it left.
    pub fn finish(mut self) -> Result<Tidied> {
        let written: BTreeSet<String> = regular_files(&self.staging)?
            .into_iter()
            .filter(|n| !n.ends_with(PART))
            .collect();
        let both: BTreeSet<&String> = self.earlier.iter().chain(&written).collect();
        let marked: String = std::iter::once(INCOMPLETE)
            .chain(both.iter().map(|n| n.as_str()))
            .map(|l| format!("{l}\n"))
            .collect();
        self.write(INCOMPLETE_MARKER, INCOMPLETE.trim_start_matches("# "))?;
        self.write(MANIFEST, &marked)?;
        let report = self.path.join(REPORT);
        if written.contains(REPORT) && report.is_file() {
            fs::remove_file(&report).map_err(EvalError::io("removing", &report))?;
        }
        for name in written.iter().filter(|n| n.as_str() != REPORT) {
            self.move_in(name)?;
        }
        let tidied = self.tidy(&written)?;
        if written.contains(REPORT) {
            self.move_in(REPORT)?;
        }
        let list: String = written.iter().map(|n| format!("{n}\n")).collect();
        self.write(MANIFEST, &list)?;
        let marker = self.path.join(INCOMPLETE_MARKER);
        fs::remove_file(&marker).map_err(EvalError::io("removing", &marker))?;
        fs::remove_dir_all(&self.staging).map_err(EvalError::io("removing", &self.staging))?;
        self.finished = true;
        Ok(tidied)
    }

    /// Writes `text` to `name` in the output folder, whole or not at all.
    fn write(&self, name: &str, text: &str) -> Result<()> {
        let p = self.path.join(name);
        write_atomically(&p, text).map_err(EvalError::io("writing", &p))
    }

    /// Moves the staged file `name` into the output folder, replacing any file there.
    fn move_in(&self, name: &str) -> Result<()> {
        let to = self.path.join(name);
        fs::rename(self.staging.join(name), &to).map_err(EvalError::io("moving into place", &to))
    }

    /// Removes the earlier run's files this run did not write again; returns them and the
    /// other files no run of ours wrote.
    fn tidy(&self, written: &BTreeSet<String>) -> Result<Tidied> {
        let mut tidied = Tidied::default();
        let ours = [MANIFEST, INCOMPLETE_MARKER];
        let mut stale: Vec<String> = regular_files(&self.path)?
            .into_iter()
            .filter(|n| !ours.contains(&n.as_str()) && !n.ends_with(PART) && !written.contains(n))
            .collect();
        stale.sort();
        for name in stale {
            if self.earlier.contains(&name) && !is_manifest_unsafe(&name) {
                let path = self.path.join(&name);
                fs::remove_file(&path)
                    .map_err(EvalError::io("removing an earlier run's file", &path))?;
                tidied.removed.push(name);
            } else {
                tidied.foreign.push(name);
            }
        }
        Ok(tidied)
    }
}

impl Drop for OutputDir {
    /// A run that failed before [`OutputDir::finish`] leaves no hidden folder behind (a
    /// killed one does; the next run removes it).
    fn drop(&mut self) {
        if !self.finished {
            let _ = fs::remove_dir_all(&self.staging);
        }
    }
}

/// A name a manifest may not make us remove: one with a path in it (a hand-edited manifest).
fn is_manifest_unsafe(name: &str) -> bool {
    name.contains('/') || name == ".." || name == "."
}

/// The names of the regular files directly in `dir`.
fn regular_files(dir: &Path) -> Result<Vec<String>> {
    let io = |e| EvalError::io("listing output folder", dir)(e);
    let mut out = Vec::new();
    for entry in fs::read_dir(dir).map_err(io)? {
        let entry = entry.map_err(io)?;
        let file = entry.file_type().map_err(io)?.is_file();
        if let (true, Some(name)) = (file, entry.file_name().to_str()) {
            out.push(name.to_string());
        }
    }
    Ok(out)
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
pub(crate) mod tests {
    use super::*;

    fn write(dir: &Path, name: &str) {
        fs::write(dir.join(name), name).unwrap();
    }

    fn listed(dir: &Path) -> String {
        fs::read_to_string(dir.join(MANIFEST)).unwrap()
    }

    /// The id of a process that has ended (a child waited for).
    pub(crate) fn dead_pid() -> u32 {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        pid
    }

    #[test]
    fn a_new_run_removes_the_folders_of_killed_runs_and_keeps_a_running_ones() {
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("out");
        fs::create_dir(&out).unwrap();
        let killed = out.join(format!("{STAGING_PREFIX}{}-1", dead_pid()));
        // Another process, running (this process's own folders are its own runs', killed
        // ones being simulated by forgetting an `OutputDir`).
        let mut other = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let running = out.join(format!("{STAGING_PREFIX}{}-2", other.id()));
        for d in [&killed, &running] {
            fs::create_dir(d).unwrap();
            write(d, "fig7.csv");
        }
        let dir = OutputDir::open(&out);
        let _ = other.kill();
        let _ = other.wait();
        let dir = dir.unwrap();
        assert!(!killed.exists(), "a killed run's folder left behind");
        assert!(running.exists(), "a running run's folder removed under it");
        assert_eq!(dir.others_running(), [running.clone()]);
    }

    #[test]
    fn a_second_run_removes_what_only_the_first_wrote_and_leaves_the_rest() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("res");
        fs::create_dir_all(&dir).unwrap();
        write(&dir, "notes.txt"); // the user's own file
        let first = OutputDir::open(&dir).unwrap();
        for n in ["results.csv", "fig7-a.svg", "loss.csv", "report.md"] {
            write(first.staging(), n);
        }
        // Nothing is in place before the run finishes.
        assert!(!dir.join("results.csv").exists());
        let t = first.finish().unwrap();
        assert_eq!(t.removed, Vec::<String>::new());
        assert_eq!(t.foreign, vec!["notes.txt".to_string()]);
        assert_eq!(
            listed(&dir),
            "fig7-a.svg\nloss.csv\nreport.md\nresults.csv\n"
        );
        let second = OutputDir::open(&dir).unwrap();
        for n in ["results.csv", "fig7-a.svg", "report.md"] {
            write(second.staging(), n);
        }
        let t = second.finish().unwrap();
        let second_said = t.to_string();
        assert_eq!(t.removed, vec!["loss.csv".to_string()]);
        assert_eq!(t.foreign, vec!["notes.txt".to_string()]);
        assert!(!dir.join("loss.csv").exists());
        assert!(dir.join("notes.txt").exists());
        assert_eq!(listed(&dir), "fig7-a.svg\nreport.md\nresults.csv\n");
        assert!(
            second_said.contains("removed 1 file an earlier run wrote here"),
            "{second_said}"
        );
        // Nothing of ours is left but the run's files, the manifest and the user's file.
        let mut names: Vec<String> = fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(
            names,
            [
                "fig7-a.svg",
                "files.txt",
                "notes.txt",
                "report.md",
                "results.csv"
            ]
        );
    }

    #[test]
    fn a_run_killed_before_it_finishes_leaves_the_earlier_set_whole_and_unmarked() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("res");
        let first = OutputDir::open(&dir).unwrap();
        for n in ["results.csv", "report.md"] {
            write(first.staging(), n);
        }
        first.finish().unwrap();
        // Killed while it wrote (forgotten: no destructor runs, as under SIGKILL), with a
        // file half-written in its folder.
        let killed = OutputDir::open(&dir).unwrap();
        write(killed.staging(), "results.csv");
        fs::write(killed.staging().join(".report.md.x.part"), "cut mid-").unwrap();
        let staged = killed.staging().to_path_buf();
        std::mem::forget(killed);
        assert_eq!(listed(&dir), "report.md\nresults.csv\n");
        assert!(!dir.join(INCOMPLETE_MARKER).exists());
        assert_eq!(
            fs::read_to_string(dir.join("report.md")).unwrap(),
            "report.md"
        );
        // The next run clears what the killed one left.
        let next = OutputDir::open(&dir).unwrap();
        assert!(!staged.exists());
        write(next.staging(), "results.csv");
        let t = next.finish().unwrap();
        assert_eq!(t.removed, vec!["report.md".to_string()]);
        assert_eq!(listed(&dir), "results.csv\n");
        // A run that fails (an error, not a kill) leaves no hidden folder either.
        let failed = OutputDir::open(&dir).unwrap();
        let staged = failed.staging().to_path_buf();
        drop(failed);
        assert!(!staged.exists());
        assert_eq!(listed(&dir), "results.csv\n");
    }
}
