//! Reading the recordings back: the client's summary line and the recorded arrival times.

use sprout_core::direction::Direction;
use std::fs;
use std::path::{Path, PathBuf};

use sprout_saturator::Summary;

use crate::error::{Context, LabError, Result};

/// A recording of one direction: its summary and its arrivals (ms since its start).
pub(super) struct Recorded {
    /// The recording's own summary.
    pub(super) summary: Summary,
    /// Arrival times, ms since the recording's start, sorted.
    pub(super) arrivals_ms: Vec<u32>,
    /// Offset estimate to the replay's clock, µs (recording start minus replay start).
    pub(super) offset_us: i64,
}

/// What the emulator says of one direction: the share of its capacity used, and its lateness
/// (µs: median, 99th percentile, largest).
pub(super) type EmuFacts = (f64, [u64; 3]);

/// The text of a file.
fn read_text(path: &Path) -> Result<String> {
    fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))
}

/// The last `{"type":"summary", ...}` line of a JSON-lines output file.
fn last_summary(path: &Path) -> Result<serde_json::Value> {
    let text = read_text(path)?;
    text.lines()
        .rev()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|v| v["type"] == "summary")
        .ok_or_else(|| LabError::Failed(format!("no summary line in {}", path.display())))
}

/// Reads a recorded trace (possibly empty) as ms values.
fn read_recording(path: &Path) -> Result<Vec<u32>> {
    let text = read_text(path)?;
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            l.trim()
                .parse::<u32>()
                .with_context(|| format!("{}: not a time: {l}", path.display()))
        })
        .collect()
}

/// The recordings the client wrote (`prefix.up`, `prefix.down`) with its summary's
/// description of them (the last line of `client_out`), put on the emulator's clock
/// (`epoch_us`, µs of `CLOCK_MONOTONIC`): (up, down).
pub(super) fn read_recordings(
    client_out: &Path,
    prefix: &Path,
    epoch_us: i64,
) -> Result<[Option<Recorded>; 2]> {
    let summary = last_summary(client_out)?;
    let mut recs: [Option<Recorded>; 2] = [None, None];
    for (k, dir) in [Direction::Up, Direction::Down].into_iter().enumerate() {
        let v = &summary[dir.as_str()];
        if v.is_null() {
            continue;
        }
        let s: Summary = serde_json::from_value(v.clone())
            .with_context(|| format!("reading the {} summary", dir.as_str()))?;
        let path = PathBuf::from(format!("{}.{}", prefix.display(), dir.as_str()));
        let arrivals_ms = read_recording(&path)?;
        recs[k] = Some(Recorded {
            offset_us: s.start_clock_us as i64 - epoch_us,
            summary: s,
            arrivals_ms,
        });
    }
    Ok(recs)
}
