//! What the runtime prints and writes: a progress line per second, and files.

use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::runtime::error::SaturatorError;

/// One direction of a progress line.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct DirProgress {
    /// Delivered over the last second, kbit/s (one trace line's bytes a packet).
    pub kbps: f64,
    /// The sender's smoothed RTT, ms (0 before the first sample).
    pub rtt_ms: u64,
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
            self.kbps, self.rtt_ms, self.window, self.lost
        )
    }
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

/// Writes a file through `f`, making its folder first.
pub(crate) fn write_file(
    path: &Path,
    f: impl FnOnce(&mut BufWriter<File>) -> io::Result<()>,
) -> Result<(), SaturatorError> {
    if let Some(parent) = path.parent() {
        if !parent.as_os_str().is_empty() {
            fs::create_dir_all(parent).map_err(|source| SaturatorError::CreateDir {
                path: parent.to_path_buf(),
                source,
            })?;
        }
    }
    let file = File::create(path).map_err(|source| SaturatorError::CreateFile {
        path: path.to_path_buf(),
        source,
    })?;
    let mut w = BufWriter::new(file);
    f(&mut w)
        .and_then(|()| w.flush())
        .map_err(|source| SaturatorError::Write {
            path: path.to_path_buf(),
            source,
        })
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
    fn suffixes_keep_folders() {
        assert_eq!(
            with_suffix(Path::new("out/run.1"), ".down"),
            PathBuf::from("out/run.1.down")
        );
    }
}
