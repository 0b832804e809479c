//! A sweep's output: its columns, rows as CSV lines, and the file they are appended to, which a
//! later start resumes and the end rewrites sorted by run id (see the module docs of
//! [`super`]).

use std::collections::{BTreeMap, HashSet};
use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use sprout_files::{AtomicFile, ReadError};

use crate::error::{EvalError, Result};

/// The largest sweep output read back to resume or sort it, bytes (2 GiB: [`MAX_RUNS`] rows
/// of about 2 KB, the widest rows, with the application's columns, are under 1 KB).
///
/// [`MAX_RUNS`]: crate::sweep::plan::MAX_RUNS
pub const MAX_OUTPUT_BYTES: u64 = 2 << 30;

/// The figures of [`DirectionMetrics`], in the order of the row's columns (each twice, with
/// `up_` and `down_`).
///
/// [`DirectionMetrics`]: sprout_sim::metrics::DirectionMetrics
pub const METRIC_COLUMNS: [&str; 13] = [
    "throughput_kbps",
    "goodput_kbps",
    "capacity_kbps",
    "utilization",
    "p95_delay_ms",
    "p95_delay_data_ms",
    "omniscient_p95_ms",
    "self_inflicted_ms",
    "self_inflicted_data_ms",
    "delivered_bytes",
    "offered_bytes",
    "packets",
    "window_s",
];

/// The application-level figures ([`sprout_sim::app_metrics::AppMetrics`]) in the order of
/// a spec-with-`app`'s columns (each twice, with `up_` and `down_`): offered and delivered
/// kbit/s, delivered share (0..1), messages, delay p50/p95/p99 (ms; `inf` when that many
/// messages were never delivered), shares within 100, 150 and 300 ms.
pub const APP_COLUMNS: [&str; 10] = [
    "app_offered_kbps",
    "app_delivered_kbps",
    "app_share",
    "app_messages",
    "app_p50_ms",
    "app_p95_ms",
    "app_p99_ms",
    "app_within_100ms",
    "app_within_150ms",
    "app_within_300ms",
];

/// The columns a spec whose `[sim]` sets `ecn` adds at the end of each row: whether ECN was
/// on, and each direction's CE marks and AQM drops (packets over the whole run).
pub const ECN_COLUMNS: [&str; 5] = [
    "ecn",
    "up_marks",
    "down_marks",
    "up_aqm_drops",
    "down_aqm_drops",
];

/// The columns a spec whose `[sim]` sets a link shaping option ([`LINK_KEYS`]) adds at the
/// end of each row, after a column per such option (named by it, its value as the command line
/// spells it, empty where not set): each direction's packets dropped by a full buffer and
/// lost at random (Bernoulli or Gilbert-Elliott), over the whole run.
///
/// [`LINK_KEYS`]: crate::sweep::spec::LINK_KEYS
pub const LINK_COLUMNS: [&str; 4] = [
    "up_buffer_drops",
    "down_buffer_drops",
    "up_lost",
    "down_lost",
];

/// The row's columns for the simulator options, in order.
pub(crate) const SIM_COLUMNS: [&str; 11] = [
    "duration_s",
    "skip_s",
    "load",
    "queue",
    "uplink_queue",
    "downlink_queue",
    "loss",
    "uplink_loss",
    "downlink_loss",
    "host_jitter_ms",
    "confidence",
];

/// The columns of a sweep whose spec has these parameter keys (and no `app`).
pub fn header(param_keys: &[String]) -> Vec<String> {
    header_with_app(param_keys, false)
}

/// The columns of a sweep whose spec has these parameter keys, with the application columns
/// when `app` (the spec sets `app`).
pub fn header_with_app(param_keys: &[String], app: bool) -> Vec<String> {
    let mut h: Vec<String> = ["run_id", "trace", "scheme", "seed", "params"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    h.extend(param_keys.iter().map(|k| format!("param.{k}")));
    h.extend(SIM_COLUMNS.iter().map(|s| s.to_string()));
    if app {
        h.push("app".into());
    }
    for dir in ["up", "down"] {
        h.extend(METRIC_COLUMNS.iter().map(|m| format!("{dir}_{m}")));
    }
    if app {
        for dir in ["up", "down"] {
            h.extend(APP_COLUMNS.iter().map(|m| format!("{dir}_{m}")));
        }
    }
    h
}

/// Fields as one CSV line (quoted as needed), without the newline.
pub fn csv_line(fields: &[String]) -> String {
    let mut w = csv::WriterBuilder::new()
        .has_headers(false)
        .from_writer(Vec::new());
    // Writing to memory can not fail.
    let _ = w.write_record(fields);
    let bytes = w.into_inner().unwrap_or_default();
    let mut s = String::from_utf8_lossy(&bytes).into_owned();
    while s.ends_with('\n') {
        s.pop();
    }
    s
}

/// The sweep's output file, appended to row by row (see the module docs).
pub struct SweepOutput {
    path: PathBuf,
    header: Vec<String>,
    file: File,
    done: HashSet<String>,
}

impl SweepOutput {
    /// Opens (or creates) the output at `path` for a sweep with these columns: drops a partial
    /// last line left by a crash, checks the header, and notes the run ids already in it.
    pub fn open(path: &Path, header: &[String]) -> Result<SweepOutput> {
        if path.extension().is_some_and(|e| e == "parquet") {
            return Err(EvalError::BadParameter(format!(
                "{}: the command line writes CSV; for Parquet use the Python package \
                 (sprout.sweep(spec, out=\"....parquet\"), which converts the CSV with pandas)",
                path.display()
            )));
        }
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            fs::create_dir_all(dir).map_err(EvalError::io("creating", dir))?;
        }
        remove_leftovers(path);
        let mut done = HashSet::new();
        let existing = match read_output(path) {
            Ok(b) => Some(b),
            Err(EvalError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
                None
            }
            Err(e) => return Err(e),
        };
        let header_line = csv_line(header);
        match existing {
            Some(bytes) if !bytes.is_empty() => {
                // A crash may leave a partial last line: drop it.
                let keep = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
                if keep < bytes.len() {
                    let f = OpenOptions::new().write(true).open(path)?;
                    f.set_len(keep as u64)?;
                }
                let mut r = csv::ReaderBuilder::new()
                    .has_headers(true)
                    .from_reader(&bytes[..keep]);
                let found: Vec<String> = r
                    .headers()
                    .map_err(|source| EvalError::ReadCsv {
                        path: path.to_path_buf(),
                        source,
                    })?
                    .iter()
                    .map(str::to_string)
                    .collect();
                if keep == 0 {
                    sprout_files::write_atomically(path, format!("{header_line}\n"))?;
                } else if found != header {
                    return Err(EvalError::BadParameter(format!(
                        "{} holds another sweep's rows (its columns differ from this sweep's); \
                         give another --out",
                        path.display()
                    )));
                }
                for rec in r.records() {
                    let rec = rec.map_err(|source| EvalError::ReadCsv {
                        path: path.to_path_buf(),
                        source,
                    })?;
                    if let Some(id) = rec.get(0) {
                        done.insert(id.to_string());
                    }
                }
            }
            _ => sprout_files::write_atomically(path, format!("{header_line}\n"))
                .map_err(EvalError::io("writing", path))?,
        }
        let file = OpenOptions::new()
            .append(true)
            .open(path)
            .map_err(EvalError::io("opening", path))?;
        Ok(SweepOutput {
            path: path.to_path_buf(),
            header: header.to_vec(),
            file,
            done,
        })
    }

    /// Run ids whose rows are in the file.
    pub fn done(&self) -> &HashSet<String> {
        &self.done
    }

    /// Appends a row (a CSV line without its newline, its first field the run id) in one write.
    pub fn append(&mut self, line: &str) -> Result<()> {
        let mut buf = String::with_capacity(line.len() + 1);
        buf.push_str(line);
        buf.push('\n');
        self.file
            .write_all(buf.as_bytes())
            .and_then(|_| self.file.flush())
            .map_err(EvalError::io("appending to", &self.path))?;
        if let Some(id) = line.split(',').next() {
            self.done.insert(id.trim_matches('"').to_string());
        }
        Ok(())
    }

    /// Rewrites the file sorted by run id (one row per id), through a temporary file renamed
    /// over it. Returns the number of rows.
    pub fn finish(self) -> Result<usize> {
        let bytes = read_output(&self.path)?;
        let mut r = csv::ReaderBuilder::new()
            .has_headers(true)
            .from_reader(&bytes[..]);
        let mut rows: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for rec in r.records() {
            let rec = rec.map_err(|source| EvalError::ReadCsv {
                path: self.path.clone(),
                source,
            })?;
            let fields: Vec<String> = rec.iter().map(str::to_string).collect();
            if let Some(id) = fields.first() {
                rows.entry(id.clone()).or_insert(fields);
            }
        }
        let replace = EvalError::io("replacing", &self.path);
        let mut w = std::io::BufWriter::new(AtomicFile::create(&self.path).map_err(replace)?);
        writeln!(w, "{}", csv_line(&self.header))?;
        for fields in rows.values() {
            writeln!(w, "{}", csv_line(fields))?;
        }
        w.into_inner()
            .map_err(|e| e.into_error())?
            .commit()
            .map_err(EvalError::io("replacing", &self.path))?;
        Ok(rows.len())
    }
}

/// Removes what a sweep killed while it rewrote `path` left beside it: the temporary files of
/// [`AtomicFile`] (`.NAME.XXXXXX.part`).
fn remove_leftovers(path: &Path) {
    let (Some(name), dir) = (path.file_name(), path.parent()) else {
        return;
    };
    let dir = dir
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let prefix = format!(".{}.", name.to_string_lossy());
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let n = entry.file_name().to_string_lossy().into_owned();
        if n.starts_with(&prefix) && n.ends_with(".part") {
            let _ = fs::remove_file(entry.path());
        }
    }
}

/// A sweep's output as it is on disk, at most [`MAX_OUTPUT_BYTES`] of it.
fn read_output(path: &Path) -> Result<Vec<u8>> {
    sprout_files::read_capped(path, MAX_OUTPUT_BYTES).map_err(|e| match e {
        ReadError::Io { source, .. } => EvalError::io("reading", path)(source),
        e => EvalError::BadParameter(e.to_string()),
    })
}
