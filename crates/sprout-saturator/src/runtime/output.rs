//! What the runtime prints and writes: a progress line per second, and files.

use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use serde::Serialize;

use sprout_core::time::Duration;
use sprout_files::AtomicFile;

use crate::runtime::error::SaturatorError;

/// One direction of a progress line.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct DirProgress {
    /// Delivered over the last second, kbit/s (one trace line's bytes a packet).
    pub kbps: f64,
    /// The sender's smoothed RTT (0 before the first sample); `rtt_ms`, whole milliseconds,
    /// in JSON.
    #[serde(rename = "rtt_ms", serialize_with = "whole_millis")]
    pub rtt: Duration,
    /// The sender's window, packets.
    pub window: u64,
    /// Packets lost so far (sequence gaps).
    pub lost: u64,
    /// Packets recorded (or reported received) so far.
    pub packets: u64,
}

impl DirProgress {
    fn text(&self) -> String {
        format!(
            "{:>6.0} kbit/s rtt {:>5} ms win {:>6} lost {}",
            self.kbps,
            self.rtt.as_millis(),
            self.window,
            self.lost
        )
    }
}

/// A duration as its whole milliseconds (the progress line's `rtt_ms`).
fn whole_millis<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u64(d.as_millis())
}

/// A progress line (`"type": "progress"`), once a second.
#[derive(Debug, Serialize)]
pub struct Progress {
    /// "progress".
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// "client" or "server".
    pub role: &'static str,
    /// Seconds since the recording's start.
    pub t_s: u64,
    /// The downlink, if recorded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub down: Option<DirProgress>,
    /// The uplink, if recorded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub up: Option<DirProgress>,
}

/// Prints a progress line on stdout, as JSON or text.
pub(crate) fn print_progress(p: &Progress, json: bool) {
    if json {
        if let Ok(s) = serde_json::to_string(p) {
            println!("{s}");
        }
    } else {
        let mut line = format!("{:>5} s", p.t_s);
        if let Some(d) = &p.down {
            line.push_str(&format!("  down {}", d.text()));
        }
        if let Some(u) = &p.up {
            line.push_str(&format!("  up {}", u.text()));
        }
        println!("{line}");
    }
    let _ = io::stdout().flush();
}

/// Per-second rate bookkeeping of a counter.
#[derive(Default)]
pub(crate) struct Rate {
    last: u64,
}

impl Rate {
    /// kbit/s of the packets counted since the last call, `line_bytes` each (over 1 s).
    pub(crate) fn kbps(&mut self, total: u64, line_bytes: u32) -> f64 {
        let d = total.saturating_sub(self.last);
        self.last = total;
        (d * u64::from(line_bytes) * 8) as f64 / 1000.0
    }
}

/// Writes a file through `f` whole or not at all (a temporary file beside it, renamed into
/// place: [`sprout_files::AtomicFile`]), making its folder first.
pub(crate) fn write_file(
    path: &Path,
    f: impl FnOnce(&mut BufWriter<AtomicFile>) -> io::Result<()>,
) -> Result<(), SaturatorError> {
    make_parent(path)?;
    let file = AtomicFile::create(path).map_err(|source| SaturatorError::CreateFile {
        path: path.to_path_buf(),
        source,
    })?;
    let mut w = BufWriter::new(file);
    let written = f(&mut w).and_then(|()| {
        w.into_inner()
            .map_err(|e| e.into_error())
            .and_then(AtomicFile::commit)
    });
    written.map_err(|source| SaturatorError::Write {
        path: path.to_path_buf(),
        source,
    })
}

/// Makes the folder of `path` if it has one.
pub(crate) fn make_parent(path: &Path) -> Result<(), SaturatorError> {
    if let Some(parent) = path.parent() {
        if !parent.as_os_str().is_empty() {
            fs::create_dir_all(parent).map_err(|source| SaturatorError::CreateDir {
                path: parent.to_path_buf(),
                source,
            })?;
        }
    }
    Ok(())
}

/// A prefix in `dir` for a recording called `name` whose files (`prefix` + each of
/// `suffixes`) do not exist yet: `name`, else `name-SESSION` (16 hex digits), else that with
/// `-2`, `-3`, ... so that no earlier recording is ever replaced.
pub(crate) fn unused_prefix(dir: &Path, name: &str, session: u64, suffixes: &[&str]) -> PathBuf {
    let free = |p: &Path| suffixes.iter().all(|s| !with_suffix(p, s).exists());
    let first = dir.join(name);
    if free(&first) {
        return first;
    }
    let tagged = dir.join(format!("{name}-{session:016x}"));
    let mut p = tagged.clone();
    let mut n = 2u32;
    while !free(&p) && n < 10_000 {
        p = with_suffix(&tagged, &format!("-{n}"));
        n += 1;
    }
    p
}

/// The downlink's arrivals written as they come, to `NAME.down.partial`: appended and flushed
/// about once a second, so that a killed client leaves what it recorded (ms since the start,
/// in arrival order: `sort -n` makes it a trace).
pub(crate) struct PartialTrace {
    path: PathBuf,
    file: File,
    written: usize,
}

impl PartialTrace {
    /// Creates (or empties) `path`.
    pub(crate) fn create(path: PathBuf) -> Result<PartialTrace, SaturatorError> {
        make_parent(&path)?;
        let file = File::create(&path).map_err(|source| SaturatorError::CreateFile {
            path: path.clone(),
            source,
        })?;
        Ok(PartialTrace {
            path,
            file,
            written: 0,
        })
    }

    /// Appends the arrivals after those written already and flushes them to the file.
    pub(crate) fn append(&mut self, arrivals_ms: &[u32]) -> Result<(), SaturatorError> {
        let new = arrivals_ms.get(self.written..).unwrap_or(&[]);
        if new.is_empty() {
            return Ok(());
        }
        let mut text = String::with_capacity(new.len() * 8);
        for ms in new {
            text.push_str(&ms.to_string());
            text.push('\n');
        }
        self.file
            .write_all(text.as_bytes())
            .and_then(|()| self.file.flush())
            .map_err(|source| SaturatorError::Write {
                path: self.path.clone(),
                source,
            })?;
        self.written = arrivals_ms.len();
        Ok(())
    }

    /// Removes the file (the final trace is written).
    pub(crate) fn remove(self) {
        let _ = fs::remove_file(&self.path);
    }
}

/// Writes `value` as pretty JSON and a newline.
pub(crate) fn write_json(path: &Path, value: &impl Serialize) -> Result<(), SaturatorError> {
    write_file(path, |w| {
        serde_json::to_writer_pretty(&mut *w, value)?;
        writeln!(w)
    })
}

/// `name` with `suffix` appended to its last component (`out/run.1` + `.down`).
pub(crate) fn with_suffix(name: &Path, suffix: &str) -> PathBuf {
    let mut s = name.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_existing_recording_name_gets_the_session_then_a_number() {
        let dir = tempfile_dir();
        let sfx = [".up", ".up.json"];
        assert_eq!(unused_prefix(&dir, "run", 0xab, &sfx), dir.join("run"));
        fs::write(dir.join("run.up.json"), "x").unwrap();
        let tagged = dir.join("run-00000000000000ab");
        assert_eq!(unused_prefix(&dir, "run", 0xab, &sfx), tagged);
        fs::write(with_suffix(&tagged, ".up"), "x").unwrap();
        assert_eq!(
            unused_prefix(&dir, "run", 0xab, &sfx),
            with_suffix(&tagged, "-2")
        );
        let _ = fs::remove_dir_all(&dir);
    }

    fn tempfile_dir() -> PathBuf {
        let d = std::env::temp_dir().join(format!(
            "sprout-saturator-out-{}-{}",
            std::process::id(),
            crate::runtime::socket::random_session()
        ));
        fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn a_failed_write_leaves_the_old_file() {
        let dir = tempfile_dir();
        let p = dir.join("t.down");
        fs::write(&p, "old\n").unwrap();
        let r = write_file(&p, |w| {
            w.write_all(b"1\n2\n")?;
            Err(io::Error::other("killed"))
        });
        assert!(r.is_err());
        assert_eq!(fs::read_to_string(&p).unwrap(), "old\n");
        write_file(&p, |w| w.write_all(b"1\n")).unwrap();
        assert_eq!(fs::read_to_string(&p).unwrap(), "1\n");
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn suffixes_keep_folders() {
        assert_eq!(
            with_suffix(Path::new("out/run.1"), ".down"),
            PathBuf::from("out/run.1.down")
        );
    }
}
