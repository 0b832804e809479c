//! Sweeps: a grid of simulations (traces x schemes x Sprout parameters x simulator options x
//! seeds) described by a TOML spec, expanded into runs with stable ids, each run one
//! simulation (`sprout sim`'s code, [`sprout_sim::sim_json`]) giving one tidy row, and a resumable
//! CSV output. `sprout sweep` runs the runs on all cores ([`run_local`]); the Python package
//! (`sprout.sweep`) expands the same spec with this code and runs each run through
//! [`run_line`], in a local pool or as Ray tasks, so the rows are the same whichever executor
//! ran them.
//!
//! # The spec
//!
//! ```toml
//! traces = ["Verizon-LTE-short", { name = "synth", synthetic = { seed = 1, duration_s = 60 } }]
//! traces_dir = "../shared/traces"  # where trace names are looked up (default: as `sprout eval`)
//! schemes = ["sprout", "sprout-ewma", "cubic"]          # default ["sprout"]
//! seeds = [1, 2, 3]                                    # or a count: 3 = [1, 2, 3]; default [0]
//! out = "sigma.csv"                                    # default: the spec's name, .csv
//!
//! [params]             # Sprout parameters (`sprout params` lists them): a value or a list
//! "model.sigma" = [100, 200]
//! window_skip_ticks = [0, 1]
//!
//! [sim]                # `sprout sim`'s options: a value, or a list (another grid dimension)
//! duration = 20.0      # seconds [default: the shorter trace's length]
//! skip = 5.0           # seconds [default: 60]
//! load = "both"        # both, up or down
//! queue = "infinite"   # infinite or codel; also uplink_queue, downlink_queue
//! loss = [0.0, 0.05]   # also uplink_loss, downlink_loss
//! host_jitter_ms = 1.0
//! confidence = 0.95    # Sprout only
//! app = ["constant:rate=500k", "video:rate=1M"]  # `sprout sim --app` specs [default "bulk"]
//! ```
//!
//! A trace entry is a pair's name (`NAME.up` and `NAME.down` in `traces_dir`), `"*"` (every
//! pair there), a table `{ name, uplink, downlink }` of files, `{ name, synthetic = {...} }`
//! (the paper's link model, [`SyntheticLink`]'s fields; the uplink uses `seed`, the downlink
//! `seed + 1`) or `{ name, constant = { mbps, seconds } }`. Paths are relative to the spec's
//! folder (to the current folder for a spec given as a value). A list-valued parameter is given
//! as a list of lists. Sprout parameters apply to Sprout schemes only, and those of Sprout's
//! Bayesian model (and `confidence`) to Sprout alone, not Sprout-EWMA
//! ([`sprout_sim::scheme::BAYESIAN_MODEL_KEYS`]): a scheme runs once per combination of what
//! it uses, with the other columns empty, so that no run is a duplicate under another name.
//!
//! # Runs, ids and rows
//!
//! Runs are expanded in the order traces, schemes, parameters (keys sorted), simulator options
//! (keys sorted), seeds. A run's id is 16 hex digits of FNV-1a (64 bits) of its configuration
//! as canonical JSON: trace name and source (file names with a digest of their contents,
//! not their folders, so a spec gives the same ids wherever it lies), scheme, parameters,
//! every simulator option with its default filled in, seed. Identical runs are run once.
//! A row is `run_id, trace, scheme, seed, params` (the `KEY=VALUE` assignments), a
//! `param.KEY` column per parameter of the spec, the simulator options (`duration_s` is the
//! simulated length), then `up_` and `down_` columns of every [`DirectionMetrics`] figure.
//! Numbers are written as Rust prints them (shortest exact decimal), so the same run gives
//! the same text on every executor.
//!
//! A spec whose `[sim]` sets `app` (even to `"bulk"`) adds an `app` column (the canonical
//! spec) after the simulator options, and, after the `down_` figures, `up_app_` and `down_app_`
//! columns of the application-level figures ([`APP_COLUMNS`]; empty in a direction without
//! data or for a bulk run). A spec without `app` has exactly the columns and run ids it had
//! before applications came in: a bulk run's id does not include the app.
//!
//! A scheme that cannot run a bulk sender (`gcc`) runs, where the spec gives no app or
//! `"bulk"`, its natural application ([`Scheme::natural_app`]: the adaptive video source at
//! its defaults), as `sprout eval` runs it; its id is that of the same run with
//! `app = "adaptive"`. `direct` has none and is refused without an app of its own rate.
//!
//! # Output and resuming
//!
//! Rows are appended to the output as each run finishes, one `write` of a whole line (so a
//! crash leaves at most one partial line, which the next start drops); at the end the file is
//! rewritten sorted by run id (a temporary file renamed over it, so the sorted file replaces
//! the old one whole). Starting a sweep on an existing output skips the runs whose ids are
//! already in it (the header must match); rows of runs not in the spec are kept. A run that
//! fails is reported and left out, so the next start runs it again.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::Value as Json;
use sprout_files::{AtomicFile, ReadError};
use sprout_link::{constant_rate_trace, SyntheticLink, Trace};

use crate::error::{EvalError, Result};
use crate::traces::{self, DEFAULT_TRACE_DIRS};
use sprout_sim::app_metrics::AppMetrics;
use sprout_sim::metrics::DirectionMetrics;
use sprout_sim::scheme::Scheme;
use sprout_sim::sim::Load;
use sprout_sim::sim_json::{self, QueueKind, SimOptions};

/// The most seeds a sweep's `seeds = N` may ask for.
pub const MAX_SEEDS: u64 = 100_000;
/// The most runs one sweep may hold (its plan keeps every run in memory).
pub const MAX_RUNS: usize = 1_000_000;
/// The largest sweep spec read, bytes (1 MiB). A spec is a few hundred bytes; one that lists
/// every value of a grid of [`MAX_RUNS`] runs (a thousand values in each of two dimensions)
/// is some tens of KiB.
pub const MAX_SPEC_BYTES: u64 = 1 << 20;
/// The largest sweep output read back to resume or sort it, bytes (2 GiB: [`MAX_RUNS`] rows
/// of about 2 KB, the widest rows, with the application's columns, are under 1 KB).
pub const MAX_OUTPUT_BYTES: u64 = 2 << 30;

/// Returns an [`EvalError::Spec`] with this message (as `anyhow::bail!` would).
macro_rules! bad_spec {
    ($($arg:tt)*) => {
        return Err(EvalError::Spec(format!($($arg)*)))
    };
}

/// The figures of [`DirectionMetrics`], in the order of the row's columns (each twice, with
/// `up_` and `down_`).
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

/// The simulator options a spec's `[sim]` table may set, as `sprout sim`'s flags (with `_`).
pub const SIM_KEYS: [&str; 12] = [
    "app",
    "confidence",
    "downlink_loss",
    "downlink_queue",
    "duration",
    "host_jitter_ms",
    "load",
    "loss",
    "queue",
    "skip",
    "uplink_loss",
    "uplink_queue",
];

/// The row's columns for the simulator options, in order.
const SIM_COLUMNS: [&str; 11] = [
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

/// Where a run's traces come from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum TraceSource {
    /// Two mahimahi files (absolute paths) and digests of their contents.
    Files {
        /// Uplink file.
        uplink: PathBuf,
        /// Downlink file.
        downlink: PathBuf,
        /// FNV-1a digest of the uplink's opportunity times (16 hex digits).
        uplink_digest: String,
        /// FNV-1a digest of the downlink's opportunity times.
        downlink_digest: String,
    },
    /// The paper's link model; the uplink uses `link.seed`, the downlink `link.seed + 1`.
    Synthetic {
        /// The model (its `duration_s` is the traces' length, seconds).
        link: SyntheticLink,
    },
    /// A constant rate both ways.
    Constant {
        /// Rate, Mbit/s.
        mbps: f64,
        /// Length, seconds.
        seconds: f64,
    },
}

/// A run's trace pair: a name (the row's `trace`) and its source.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TraceRef {
    /// Name shown in the row.
    pub name: String,
    /// Where the traces come from.
    pub source: TraceSource,
}

/// A run's simulator options, every default filled in (times in seconds).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SimSettings {
    /// Simulated seconds; `None` = the shorter trace's length.
    pub duration_s: Option<f64>,
    /// Seconds skipped before measuring.
    pub skip_s: f64,
    /// Which directions carry data: both, up or down.
    pub load: String,
    /// Queue of both directions: infinite or codel.
    pub queue: String,
    /// The uplink's queue, if not `queue`.
    pub uplink_queue: Option<String>,
    /// The downlink's queue, if not `queue`.
    pub downlink_queue: Option<String>,
    /// Loss probability of both directions.
    pub loss: f64,
    /// The uplink's loss, if not `loss`.
    pub uplink_loss: Option<f64>,
    /// The downlink's loss, if not `loss`.
    pub downlink_loss: Option<f64>,
    /// Sprout hosts' wake-up latency, milliseconds.
    pub host_jitter_ms: f64,
    /// Forecast confidence (Sprout schemes only; `None` = the scheme's).
    pub confidence: Option<f64>,
    /// The application's canonical spec (`sprout sim --app`); `None` = bulk, left out of
    /// the JSON (and so of the run's id) as before applications came in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app: Option<String>,
}

impl Default for SimSettings {
    fn default() -> Self {
        let o = SimOptions::default();
        SimSettings {
            duration_s: o.duration_s,
            skip_s: o.skip_s,
            load: "both".into(),
            queue: "infinite".into(),
            uplink_queue: None,
            downlink_queue: None,
            loss: o.loss,
            uplink_loss: None,
            downlink_loss: None,
            host_jitter_ms: o.host_jitter_ms,
            confidence: None,
            app: None,
        }
    }
}

/// One run of a sweep: one simulation. Serialised as JSON to hand it to another process.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunSpec {
    /// The run's id (see the module docs).
    pub id: String,
    /// The traces.
    pub trace: TraceRef,
    /// The scheme's key.
    pub scheme: String,
    /// Sprout parameters, `KEY=VALUE` (VALUE as JSON), keys sorted.
    pub params: Vec<String>,
    /// The seed.
    pub seed: u64,
    /// Simulator options.
    pub sim: SimSettings,
    /// The sweep's parameter keys (the row's `param.KEY` columns); not part of the id.
    pub param_columns: Vec<String>,
    /// Whether the row has the application columns (the spec sets `app`); not part of the
    /// id.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub app_columns: bool,
}

/// What the id is computed from: the run without its id, its columns and its folders.
#[derive(Serialize)]
struct IdView<'a> {
    trace: &'a str,
    source: Json,
    scheme: &'a str,
    params: &'a [String],
    seed: u64,
    sim: &'a SimSettings,
}

impl RunSpec {
    /// The run's id: FNV-1a (64 bits) of its configuration as canonical JSON, 16 hex digits.
    pub fn compute_id(&self) -> String {
        let source = match &self.trace.source {
            TraceSource::Files {
                uplink,
                downlink,
                uplink_digest,
                downlink_digest,
            } => serde_json::json!({
                "kind": "files",
                "uplink": file_name(uplink),
                "downlink": file_name(downlink),
                "uplink_digest": uplink_digest,
                "downlink_digest": downlink_digest,
            }),
            other => serde_json::to_value(other).unwrap_or(Json::Null),
        };
        let view = IdView {
            trace: &self.trace.name,
            source,
            scheme: &self.scheme,
            params: &self.params,
            seed: self.seed,
            sim: &self.sim,
        };
        let text = serde_json::to_string(&view).unwrap_or_default();
        format!("{:016x}", fnv1a(text.as_bytes()))
    }

    /// `sprout sim`'s options for this run.
    pub fn sim_options(&self) -> Result<SimOptions> {
        let s = &self.sim;
        let queue = |q: &str| QueueKind::from_str(q).map_err(|e| EvalError::Sim(e.into()));
        Ok(SimOptions {
            scheme: Scheme::from_str(&self.scheme)
                .map_err(|e| EvalError::BadParameter(e.to_string()))?,
            confidence: s.confidence,
            params: self.params.clone(),
            seed: self.seed,
            host_jitter_ms: s.host_jitter_ms,
            loss: s.loss,
            queue: queue(&s.queue)?,
            uplink_queue: s.uplink_queue.as_deref().map(queue).transpose()?,
            downlink_queue: s.downlink_queue.as_deref().map(queue).transpose()?,
            uplink_loss: s.uplink_loss,
            downlink_loss: s.downlink_loss,
            duration_s: s.duration_s,
            skip_s: s.skip_s,
            load: Load::from_str(&s.load).map_err(|e| EvalError::BadParameter(e.to_string()))?,
            app: match &s.app {
                Some(spec) => sprout_sim::App::parse(spec)?,
                None => sprout_sim::App::Bulk,
            },
        })
    }

    /// A short description for messages: trace, scheme, parameters, seed.
    pub fn describe(&self) -> String {
        let mut s = format!(
            "run {} ({} {} seed {}",
            self.id, self.trace.name, self.scheme, self.seed
        );
        for p in &self.params {
            s.push(' ');
            s.push_str(p);
        }
        s.push(')');
        s
    }
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// FNV-1a, 64 bits.
fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// Digest of a trace's opportunity times (16 hex digits).
pub fn trace_digest(t: &Trace) -> String {
    let mut bytes = Vec::with_capacity(t.len() * 8);
    for &ms in t.opportunities_ms() {
        bytes.extend_from_slice(&ms.to_le_bytes());
    }
    format!("{:016x}", fnv1a(&bytes))
}

/// Traces loaded or made in this process, by source and direction (at most 64 kept).
fn cache() -> &'static Mutex<HashMap<String, Arc<Trace>>> {
    static CACHE: OnceLock<Mutex<HashMap<String, Arc<Trace>>>> = OnceLock::new();
    CACHE.get_or_init(|| Mutex::new(HashMap::new()))
}

fn cached(key: String, make: impl FnOnce() -> Result<Trace>) -> Result<Arc<Trace>> {
    if let Some(t) = cache().lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
        return Ok(t.clone());
    }
    let t = Arc::new(make()?);
    let mut c = cache().lock().unwrap_or_else(|e| e.into_inner());
    if c.len() >= 64 {
        c.clear();
    }
    c.insert(key, t.clone());
    Ok(t)
}

fn load_file(path: &Path) -> Result<Arc<Trace>> {
    cached(format!("file:{}", path.display()), || {
        traces::load_trace(path)
    })
}

impl TraceRef {
    /// The (uplink, downlink) traces; files are checked against their digests.
    pub fn load(&self) -> Result<(Arc<Trace>, Arc<Trace>)> {
        match &self.source {
            TraceSource::Files {
                uplink,
                downlink,
                uplink_digest,
                downlink_digest,
            } => {
                let (u, d) = (load_file(uplink)?, load_file(downlink)?);
                for (t, want, p) in [(&u, uplink_digest, uplink), (&d, downlink_digest, downlink)] {
                    if &trace_digest(t) != want {
                        return Err(EvalError::TraceChanged {
                            path: p.clone(),
                            now: trace_digest(t),
                            then: want.clone(),
                        });
                    }
                }
                Ok((u, d))
            }
            TraceSource::Synthetic { link } => {
                let key = serde_json::to_string(link).unwrap_or_default();
                let make = |seed: u64, dir: &str| {
                    let l = SyntheticLink {
                        seed,
                        ..link.clone()
                    };
                    let name = format!("{}.{dir}", self.name);
                    cached(format!("synthetic:{dir}:{key}"), || Ok(l.generate(name)))
                };
                Ok((
                    make(link.seed, "up")?,
                    make(link.seed.wrapping_add(1), "down")?,
                ))
            }
            TraceSource::Constant { mbps, seconds } => {
                let make = |dir: &str| {
                    let name = format!("{}.{dir}", self.name);
                    cached(format!("constant:{dir}:{mbps}:{seconds}"), || {
                        constant_rate_trace(name, *mbps, *seconds).map_err(EvalError::BadTrace)
                    })
                };
                Ok((make("up")?, make("down")?))
            }
        }
    }
}

/// A sweep expanded into runs.
#[derive(Clone, Debug)]
pub struct SweepPlan {
    /// The runs, in expansion order (see the module docs), without duplicates.
    pub runs: Vec<RunSpec>,
    /// The parameter keys of the spec (the `param.KEY` columns), sorted.
    pub param_keys: Vec<String>,
    /// The output named by the spec (`out`), resolved against its folder, if any.
    pub out: Option<PathBuf>,
    /// A name for the sweep (the spec file's stem, or "sweep").
    pub name: String,
    /// Whether the rows have the application columns (the spec's `[sim]` sets `app`).
    pub app_columns: bool,
}

/// A spec's value as an error message may quote it: at most an excerpt
/// ([`sprout_files::excerpt`]) of its JSON.
fn shown(v: &Json) -> String {
    sprout_files::excerpt(&v.to_string())
}

/// A grid's values: a list is its values, anything else one value.
fn values(v: &Json) -> Vec<Json> {
    match v {
        Json::Array(a) => a.clone(),
        other => vec![other.clone()],
    }
}

/// Every combination of the (key, values) dimensions, keys in order.
fn product(dims: &[(String, Vec<Json>)]) -> Vec<Vec<(String, Json)>> {
    let mut out: Vec<Vec<(String, Json)>> = vec![Vec::new()];
    for (k, vs) in dims {
        let mut next = Vec::with_capacity(out.len() * vs.len());
        for combo in &out {
            for v in vs {
                let mut c = combo.clone();
                c.push((k.clone(), v.clone()));
                next.push(c);
            }
        }
        out = next;
    }
    out
}

fn as_f64(key: &str, v: &Json) -> Result<f64> {
    v.as_f64()
        .ok_or_else(|| EvalError::Spec(format!("[sim] {key}: expected a number, got {}", shown(v))))
}

fn as_str(key: &str, v: &Json) -> Result<String> {
    v.as_str()
        .map(str::to_string)
        .ok_or_else(|| EvalError::Spec(format!("[sim] {key}: expected a string, got {}", shown(v))))
}

/// Simulator settings from one combination of `[sim]` values.
fn sim_settings(combo: &[(String, Json)]) -> Result<SimSettings> {
    let mut s = SimSettings::default();
    for (k, v) in combo {
        match k.as_str() {
            "duration" => s.duration_s = Some(as_f64(k, v)?),
            "skip" => s.skip_s = as_f64(k, v)?,
            "load" => s.load = as_str(k, v)?,
            "queue" => s.queue = as_str(k, v)?,
            "uplink_queue" => s.uplink_queue = Some(as_str(k, v)?),
            "downlink_queue" => s.downlink_queue = Some(as_str(k, v)?),
            "loss" => s.loss = as_f64(k, v)?,
            "uplink_loss" => s.uplink_loss = Some(as_f64(k, v)?),
            "downlink_loss" => s.downlink_loss = Some(as_f64(k, v)?),
            "host_jitter_ms" => s.host_jitter_ms = as_f64(k, v)?,
            "confidence" => s.confidence = Some(as_f64(k, v)?),
            "app" => {
                let app = sprout_sim::App::parse(&as_str(k, v)?)
                    .map_err(|e| EvalError::Spec(format!("[sim] app: {e}")))?;
                s.app = (!app.is_bulk()).then(|| app.to_string());
            }
            other => bad_spec!(
                "[sim]: unknown option '{}' (known: {})",
                sprout_files::excerpt(other),
                SIM_KEYS.join(", ")
            ),
        }
    }
    Ok(s)
}

/// The pairs named in a spec's `traces`, resolved.
fn trace_refs(spec: &Json, base: &Path) -> Result<Vec<TraceRef>> {
    let dir = match spec.get("traces_dir") {
        Some(Json::String(d)) => Some(base.join(d)),
        Some(other) => bad_spec!("traces_dir: expected a folder, got {}", shown(other)),
        None => None,
    };
    let default_dir = || -> Result<PathBuf> {
        if let Some(d) = &dir {
            return Ok(d.clone());
        }
        DEFAULT_TRACE_DIRS
            .iter()
            .map(PathBuf::from)
            .find(|d| matches!(Trace::find_pairs(d), Ok(p) if !p.is_empty()))
            .ok_or_else(|| {
                EvalError::Spec(format!(
                    "traces: no traces_dir given and no traces in {}",
                    DEFAULT_TRACE_DIRS.join(" or ")
                ))
            })
    };
    let files = |name: String, up: PathBuf, down: PathBuf| -> Result<TraceRef> {
        let up = absolute(&up);
        let down = absolute(&down);
        let (u, d) = (load_file(&up)?, load_file(&down)?);
        Ok(TraceRef {
            name,
            source: TraceSource::Files {
                uplink_digest: trace_digest(&u),
                downlink_digest: trace_digest(&d),
                uplink: up,
                downlink: down,
            },
        })
    };
    let entries = match spec.get("traces") {
        Some(Json::Array(a)) if !a.is_empty() => a.clone(),
        Some(Json::String(s)) => vec![Json::String(s.clone())],
        Some(other) => bad_spec!(
            "traces: expected a list of trace pairs, got {}",
            shown(other)
        ),
        None => bad_spec!("traces: the spec names no traces (traces = [\"NAME\", ...])"),
    };
    let mut out = Vec::new();
    for e in entries {
        match e {
            Json::String(s) if s == "*" => {
                let d = default_dir()?;
                let pairs = Trace::find_pairs(&d).map_err(|source| EvalError::SpecTraceFolder {
                    dir: d.clone(),
                    source,
                })?;
                if pairs.is_empty() {
                    bad_spec!(
                        "traces: no pairs (NAME.up and NAME.down) in {}",
                        d.display()
                    );
                }
                for (name, up, down) in pairs {
                    out.push(files(name, up, down)?);
                }
            }
            Json::String(name) => {
                let d = default_dir()?;
                out.push(files(
                    name.clone(),
                    d.join(format!("{name}.up")),
                    d.join(format!("{name}.down")),
                )?);
            }
            Json::Object(m) => {
                let name = match m.get("name") {
                    Some(Json::String(n)) => n.clone(),
                    _ => bad_spec!("traces: a table entry needs a name (name = \"...\")"),
                };
                if let Some(syn) = m.get("synthetic") {
                    let link: SyntheticLink =
                        serde_json::from_value(syn.clone()).map_err(|source| {
                            EvalError::SpecSynthetic {
                                name: name.clone(),
                                source,
                            }
                        })?;
                    link.check_size(&name).map_err(EvalError::BadTrace)?;
                    out.push(TraceRef {
                        name,
                        source: TraceSource::Synthetic { link },
                    });
                } else if let Some(c) = m.get("constant") {
                    let (mbps, seconds) = match (
                        c.get("mbps").and_then(Json::as_f64),
                        c.get("seconds").and_then(Json::as_f64),
                    ) {
                        (Some(a), Some(b)) => (a, b),
                        _ => bad_spec!("traces: {name}: constant needs mbps and seconds"),
                    };
                    // Generated only when a run needs it: check its size now.
                    sprout_link::synthetic::check_constant_size(&name, mbps, seconds)
                        .map_err(EvalError::BadTrace)?;
                    out.push(TraceRef {
                        name,
                        source: TraceSource::Constant { mbps, seconds },
                    });
                } else {
                    let path = |k: &str| -> Result<PathBuf> {
                        match m.get(k) {
                            Some(Json::String(p)) => Ok(base.join(p)),
                            _ => bad_spec!(
                                "traces: {name}: give uplink and downlink files, synthetic = {{...}} or constant = {{...}}"
                            ),
                        }
                    };
                    out.push(files(name.clone(), path("uplink")?, path("downlink")?)?);
                }
            }
            other => bad_spec!("traces: expected a name or a table, got {}", shown(&other)),
        }
    }
    Ok(out)
}

fn absolute(p: &Path) -> PathBuf {
    fs::canonicalize(p).unwrap_or_else(|_| {
        std::env::current_dir()
            .map(|d| d.join(p))
            .unwrap_or_else(|_| p.to_path_buf())
    })
}

impl SweepPlan {
    /// Reads and expands the TOML spec at `path` (paths in it relative to its folder).
    pub fn load(path: &Path) -> Result<SweepPlan> {
        let text = sprout_files::read_to_string_capped(path, MAX_SPEC_BYTES).map_err(|e| {
            let why = match e {
                ReadError::Io { source, .. } => {
                    return EvalError::io("cannot read sweep spec", path)(source)
                }
                ReadError::TooLarge { cap, .. } => format!(
                    "larger than {}, the most a sweep spec may hold",
                    sprout_files::human_bytes(cap)
                ),
                ReadError::NotText { .. } => "not text (UTF-8)".to_string(),
            };
            EvalError::SpecFile {
                path: path.to_path_buf(),
                source: Box::new(EvalError::Spec(why)),
            }
        })?;
        let base = path.parent().unwrap_or(Path::new("."));
        let base = if base.as_os_str().is_empty() {
            Path::new(".")
        } else {
            base
        };
        let name = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "sweep".into());
        Self::from_toml(&text, base, &name).map_err(|e| EvalError::SpecFile {
            path: path.to_path_buf(),
            source: Box::new(e),
        })
    }

    /// Expands a spec given as TOML text.
    pub fn from_toml(text: &str, base: &Path, name: &str) -> Result<SweepPlan> {
        let value: toml::Value = toml::from_str(text).map_err(|e| toml_error(text, &e))?;
        let json = serde_json::to_value(value)?;
        Self::from_json(&json, base, name)
    }

    /// Expands a spec given as a JSON value of the same shape as the TOML (what Python's
    /// `sprout.sweep` passes for a dict).
    pub fn from_json(spec: &Json, base: &Path, name: &str) -> Result<SweepPlan> {
        let Json::Object(top) = spec else {
            bad_spec!("a sweep spec is a table of traces, schemes, seeds, params and sim");
        };
        const KNOWN: [&str; 7] = [
            "out",
            "params",
            "schemes",
            "seeds",
            "sim",
            "traces",
            "traces_dir",
        ];
        for k in top.keys() {
            if !KNOWN.contains(&k.as_str()) {
                bad_spec!(
                    "unknown key '{}' (known: {})",
                    sprout_files::excerpt(k),
                    KNOWN.join(", ")
                );
            }
        }
        let traces = trace_refs(spec, base)?;
        let schemes: Vec<Scheme> = match top.get("schemes") {
            None => vec![Scheme::Sprout],
            Some(v) => values(v)
                .iter()
                .map(|s| {
                    let s = s.as_str().ok_or_else(|| {
                        EvalError::Spec(format!("schemes: expected names, got {}", shown(s)))
                    })?;
                    let scheme = Scheme::from_str(s)
                        .map_err(|e| EvalError::Spec(format!("schemes: {e}")))?;
                    if !scheme.is_simulated() {
                        bad_spec!("schemes: the omniscient sender is not simulated");
                    }
                    Ok(scheme)
                })
                .collect::<Result<_>>()?,
        };
        let seeds = seeds_of(top.get("seeds"))?;
        let table = |k: &str| -> Result<BTreeMap<String, Vec<Json>>> {
            match top.get(k) {
                None => Ok(BTreeMap::new()),
                Some(Json::Object(m)) => {
                    Ok(m.iter().map(|(k, v)| (k.clone(), values(v))).collect())
                }
                Some(other) => bad_spec!("[{k}]: expected a table, got {}", shown(other)),
            }
        };
        let params = table("params")?;
        let sim = table("sim")?;
        for (k, vs) in params.iter().chain(sim.iter()) {
            if vs.is_empty() {
                bad_spec!("{k}: an empty list leaves nothing to run");
            }
        }
        check_grid(&traces, &schemes, &seeds, &params, &sim)?;
        let app_columns = sim.contains_key("app");
        let param_keys: Vec<String> = params.keys().cloned().collect();
        let param_dims: Vec<(String, Vec<Json>)> = params.into_iter().collect();
        let sim_dims: Vec<(String, Vec<Json>)> = sim.into_iter().collect();
        let param_combos = product(&param_dims);
        let sim_combos = product(&sim_dims);
        let out = match top.get("out") {
            Some(Json::String(o)) => Some(base.join(o)),
            Some(other) => bad_spec!("out: expected a file name, got {}", shown(other)),
            None => None,
        };

        let no_params: Vec<Vec<(String, Json)>> = vec![Vec::new()];
        let mut runs = Vec::new();
        let mut seen = HashSet::new();
        for trace in &traces {
            for scheme in &schemes {
                // Parameters apply to Sprout schemes only, and each only to the schemes it
                // changes (Sprout-EWMA has no Bayesian model): the others run once per
                // remaining combination (the ids below drop the repeats), not as duplicates.
                let pcs = if scheme.is_sprout() {
                    &param_combos
                } else {
                    &no_params
                };
                for pc in pcs {
                    let assignments: Vec<String> = pc
                        .iter()
                        .map(|(k, v)| format!("{k}={v}"))
                        .filter(|a| scheme.uses_param(a))
                        .collect();
                    for sc in &sim_combos {
                        let mut settings = sim_settings(sc)?;
                        if !scheme.uses_confidence() {
                            settings.confidence = None;
                        }
                        // A scheme that cannot run a bulk sender (gcc) runs its own
                        // application, as in `sprout eval`.
                        if settings.app.is_none() {
                            settings.app = scheme.natural_app().map(|a| a.to_string());
                        }
                        for &seed in &seeds {
                            let mut run = RunSpec {
                                id: String::new(),
                                trace: trace.clone(),
                                scheme: scheme.key().to_string(),
                                params: assignments.clone(),
                                seed,
                                sim: settings.clone(),
                                param_columns: param_keys.clone(),
                                app_columns,
                            };
                            run.id = run.compute_id();
                            if !seen.insert(run.id.clone()) {
                                continue;
                            }
                            run.sim_options()
                                .and_then(|o| Ok(o.config()?))
                                .map_err(|e| EvalError::SweepRun {
                                    run: run.describe(),
                                    source: Box::new(e),
                                })?;
                            runs.push(run);
                        }
                    }
                }
            }
        }
        Ok(SweepPlan {
            runs,
            param_keys,
            out,
            name: name.to_string(),
            app_columns,
        })
    }

    /// The output's columns.
    pub fn header(&self) -> Vec<String> {
        header_with_app(&self.param_keys, self.app_columns)
    }
}

/// Checks, before a run (or a combination) is made, that the grid holds at most [`MAX_RUNS`]
/// runs; the error names its dimensions and their product.
fn check_grid(
    traces: &[TraceRef],
    schemes: &[Scheme],
    seeds: &[u64],
    params: &BTreeMap<String, Vec<Json>>,
    sim: &BTreeMap<String, Vec<Json>>,
) -> Result<()> {
    let mut dims = vec![
        (traces.len(), "traces".to_string()),
        (schemes.len(), "schemes".to_string()),
    ];
    for (k, vs) in params {
        dims.push((vs.len(), format!("values of {}", sprout_files::excerpt(k))));
    }
    for (k, vs) in sim {
        dims.push((vs.len(), format!("[sim] {}", sprout_files::excerpt(k))));
    }
    dims.push((seeds.len(), "seeds".to_string()));
    let runs: f64 = dims.iter().map(|(n, _)| *n as f64).product();
    if runs > MAX_RUNS as f64 {
        let shown: Vec<String> = dims
            .iter()
            .filter(|(n, _)| *n > 1)
            .take(8)
            .map(|(n, what)| format!("{n} {what}"))
            .collect();
        bad_spec!(
            "the grid is {} = {runs:.0} runs, more than the {MAX_RUNS} one sweep may hold; split \
             it into several specs",
            shown.join(" x ")
        );
    }
    Ok(())
}

/// A TOML error as a short message: where it is, what is wrong, and at most an excerpt of
/// the line ([`sprout_files::excerpt`]); the parser's own message quotes the whole line.
fn toml_error(text: &str, e: &toml::de::Error) -> EvalError {
    let Some(span) = e.span() else {
        return EvalError::Spec(sprout_files::excerpt(e.message()));
    };
    let start = span.start.min(text.len());
    let before = text.get(..start).unwrap_or("");
    let line_no = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let line = text[line_start..].lines().next().unwrap_or("");
    EvalError::Spec(format!(
        "TOML line {line_no}: {}: `{}`",
        sprout_files::excerpt(e.message()),
        sprout_files::excerpt(line)
    ))
}

/// The seeds of a spec's `seeds`: a list, or a count N meaning 1..=N (at most [`MAX_SEEDS`]);
/// none given: `[0]`.
fn seeds_of(seeds: Option<&Json>) -> Result<Vec<u64>> {
    Ok(match seeds {
        None => vec![0],
        Some(Json::Number(n)) => {
            // A whole count, also written as a float (`1e3`), compared before it is a u64.
            let count = n
                .as_f64()
                .filter(|c| c.fract() == 0.0 && *c >= 0.0)
                .ok_or_else(|| EvalError::Spec("seeds: a count must be a whole number".into()))?;
            if count > MAX_SEEDS as f64 {
                bad_spec!("seeds: {count} is more than the {MAX_SEEDS} one sweep may run");
            }
            (1..=count as u64).collect()
        }
        Some(Json::Array(a)) => a
            .iter()
            .map(|s| {
                s.as_u64()
                    .ok_or_else(|| EvalError::Spec(format!("seeds: {} is not a seed", shown(s))))
            })
            .collect::<Result<_>>()?,
        Some(other) => bad_spec!(
            "seeds: expected a list of seeds or a count, got {}",
            shown(other)
        ),
    })
}

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

/// The fields of [`APP_COLUMNS`] for one direction: empty without application figures.
fn app_fields(m: Option<&AppMetrics>) -> [String; 10] {
    let Some(m) = m else {
        return Default::default();
    };
    [
        m.offered_kbps.to_string(),
        m.delivered_kbps.to_string(),
        m.delivered_share.to_string(),
        m.messages.to_string(),
        m.delay_p50_ms.to_string(),
        m.delay_p95_ms.to_string(),
        m.delay_p99_ms.to_string(),
        m.within_100ms.to_string(),
        m.within_150ms.to_string(),
        m.within_300ms.to_string(),
    ]
}

fn opt<T: ToString>(v: &Option<T>) -> String {
    v.as_ref().map(|x| x.to_string()).unwrap_or_default()
}

fn metric_fields(m: &DirectionMetrics) -> [String; 13] {
    [
        m.throughput_kbps.to_string(),
        m.goodput_kbps.to_string(),
        m.capacity_kbps.to_string(),
        m.utilization.to_string(),
        m.p95_delay_ms.to_string(),
        m.p95_delay_data_ms.to_string(),
        m.omniscient_p95_ms.to_string(),
        m.self_inflicted_ms.to_string(),
        m.self_inflicted_data_ms.to_string(),
        m.delivered_bytes.to_string(),
        m.offered_bytes.to_string(),
        m.packets.to_string(),
        m.window_s.to_string(),
    ]
}

/// Runs one run and gives its row's fields (see [`header`]).
pub fn run_fields(run: &RunSpec) -> Result<Vec<String>> {
    let opts = run.sim_options()?;
    let cfg = opts.config()?;
    let (up, down) = run.trace.load()?;
    let out = sim_json::run(up, down, &cfg, None)?;
    let given: HashMap<&str, &str> = run
        .params
        .iter()
        .filter_map(|p| p.split_once('='))
        .collect();
    let mut f = vec![
        run.id.clone(),
        run.trace.name.clone(),
        run.scheme.clone(),
        run.seed.to_string(),
        run.params.join(" "),
    ];
    for k in &run.param_columns {
        f.push(
            given
                .get(k.as_str())
                .map(|v| v.to_string())
                .unwrap_or_default(),
        );
    }
    let s = &run.sim;
    f.extend([
        out.duration.as_secs_f64().to_string(),
        s.skip_s.to_string(),
        s.load.clone(),
        s.queue.clone(),
        opt(&s.uplink_queue),
        opt(&s.downlink_queue),
        s.loss.to_string(),
        opt(&s.uplink_loss),
        opt(&s.downlink_loss),
        s.host_jitter_ms.to_string(),
        if opts.scheme.uses_confidence() {
            cfg.protocol.confidence.to_string()
        } else {
            String::new()
        },
    ]);
    if run.app_columns {
        f.push(opts.app.to_string());
    }
    f.extend(metric_fields(&out.uplink.metrics));
    f.extend(metric_fields(&out.downlink.metrics));
    if run.app_columns {
        f.extend(app_fields(out.uplink.app.as_ref()));
        f.extend(app_fields(out.downlink.app.as_ref()));
    }
    Ok(f)
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

/// Runs one run and gives its row as a CSV line (without the newline): what every executor
/// writes.
pub fn run_line(run: &RunSpec) -> Result<String> {
    Ok(csv_line(&run_fields(run)?))
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

/// What a sweep did.
#[derive(Clone, Debug, Default)]
pub struct SweepReport {
    /// Runs in the plan.
    pub runs: usize,
    /// Runs skipped because their rows were already in the output.
    pub skipped: usize,
    /// Runs run now and written.
    pub ran: usize,
    /// Runs that failed: (description, error).
    pub failed: Vec<(String, String)>,
    /// Rows in the output at the end.
    pub rows: usize,
    /// Wall-clock seconds.
    pub elapsed_s: f64,
}

impl std::fmt::Display for SweepReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} runs: {} run in {:.1} s, {} already done, {} failed; {} rows",
            self.runs,
            self.ran,
            self.elapsed_s,
            self.skipped,
            self.failed.len(),
            self.rows
        )?;
        for (run, e) in &self.failed {
            write!(f, "\n  {run}: {e}")?;
        }
        Ok(())
    }
}

/// Runs the plan's runs not yet in `out` on `jobs` threads (default: one per core), appending
/// each row as it finishes, then sorts the file. A progress bar when `progress`.
pub fn run_local(
    plan: &SweepPlan,
    out: &Path,
    jobs: Option<usize>,
    progress: bool,
) -> Result<SweepReport> {
    let started = Instant::now();
    let mut output = SweepOutput::open(out, &plan.header())?;
    let pending: Vec<&RunSpec> = plan
        .runs
        .iter()
        .filter(|r| !output.done().contains(&r.id))
        .collect();
    let mut report = SweepReport {
        runs: plan.runs.len(),
        skipped: plan.runs.len() - pending.len(),
        ..SweepReport::default()
    };
    let bar = crate::progress::bar(pending.len() as u64, "", progress);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(jobs.unwrap_or(0))
        .build()
        .map_err(EvalError::Threads)?;
    let (tx, rx) = std::sync::mpsc::channel::<(&RunSpec, Result<String>)>();
    let mut write_error = None;
    std::thread::scope(|s| {
        s.spawn(move || {
            pool.install(|| {
                pending.par_iter().for_each_with(tx, |tx, run| {
                    let _ = tx.send((run, run_line(run)));
                })
            })
        });
        for (run, line) in rx {
            match line {
                Ok(l) => {
                    if write_error.is_none() {
                        match output.append(&l) {
                            Ok(()) => report.ran += 1,
                            Err(e) => write_error = Some(e),
                        }
                    }
                }
                Err(e) => report.failed.push((run.describe(), sim_error_message(&e))),
            }
            bar.inc(1);
        }
    });
    bar.finish_and_clear();
    if let Some(e) = write_error {
        return Err(e);
    }
    report.rows = output.finish()?;
    report.elapsed_s = started.elapsed().as_secs_f64();
    Ok(report)
}

/// An error and its causes joined by ": ", each said once, as `sprout` prints errors
/// ([`sprout_sim::error::chain_message`]).
pub fn sim_error_message(e: &(dyn std::error::Error + 'static)) -> String {
    sprout_sim::error::chain_message(e)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPEC: &str = r#"
traces = [{ name = "c12", constant = { mbps = 12, seconds = 30 } },
          { name = "syn", synthetic = { seed = 3, duration_s = 30 } }]
schemes = ["sprout", "cubic"]
seeds = [1, 2]
[params]
"model.sigma" = [100, 200]
[sim]
duration = 8.0
skip = 2.0
loss = [0.0, 0.01]
"#;

    fn plan() -> SweepPlan {
        SweepPlan::from_toml(SPEC, Path::new("."), "t").unwrap()
    }

    #[test]
    fn grid_expands_with_stable_distinct_ids() {
        let p = plan();
        // 2 traces x (sprout: 2 sigmas + cubic: 1) x 2 losses x 2 seeds.
        assert_eq!(p.runs.len(), 2 * 3 * 2 * 2);
        let ids: HashSet<&str> = p.runs.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(ids.len(), p.runs.len());
        // Same spec, same ids, in the same order.
        let again = plan();
        assert_eq!(
            p.runs.iter().map(|r| &r.id).collect::<Vec<_>>(),
            again.runs.iter().map(|r| &r.id).collect::<Vec<_>>()
        );
        // A default written out gives the same run (and id) as leaving it out.
        let explicit = SweepPlan::from_toml(
            &SPEC.replace(
                "skip = 2.0",
                "skip = 2.0\nhost_jitter_ms = 1.0\nload = \"both\"",
            ),
            Path::new("."),
            "t",
        )
        .unwrap();
        assert_eq!(explicit.runs[0].id, p.runs[0].id);
        // Cubic runs carry no Sprout parameters.
        let cubic: Vec<&RunSpec> = p.runs.iter().filter(|r| r.scheme == "cubic").collect();
        assert_eq!(cubic.len(), 8);
        assert!(cubic.iter().all(|r| r.params.is_empty()));
        assert_eq!(p.runs[0].params, vec!["model.sigma=100".to_string()]);
        // The run round-trips through JSON (as Python hands it to a worker).
        let json = serde_json::to_string(&p.runs[5]).unwrap();
        let back: RunSpec = serde_json::from_str(&json).unwrap();
        assert_eq!(back, p.runs[5]);
        assert_eq!(back.compute_id(), back.id);
    }

    #[test]
    fn sprout_ewma_runs_once_per_parameter_it_uses() {
        // sigma is a key of Sprout's Bayesian model, which Sprout-EWMA does not have: it
        // runs once per target_ticks value, not once per (sigma, target_ticks) pair.
        let spec = SPEC
            .replace(r#"schemes = ["sprout", "cubic"]"#, r#"schemes = ["sprout", "sprout-ewma"]"#)
            .replace(
                r#""model.sigma" = [100, 200]"#,
                "\"model.sigma\" = [100, 200, 400]\ntarget_ticks = [4, 5]\n[sim]\nconfidence = [0.9, 0.95]",
            )
            .replace("[sim]\nduration", "duration");
        let p = SweepPlan::from_toml(&spec, Path::new("."), "t").unwrap();
        let ewma: Vec<&RunSpec> = p
            .runs
            .iter()
            .filter(|r| r.scheme == "sprout-ewma")
            .collect();
        let sprout = p.runs.iter().filter(|r| r.scheme == "sprout").count();
        // 2 traces x 2 seeds x 2 losses: sprout x 3 sigmas x 2 targets x 2 confidences.
        assert_eq!(sprout, 8 * 12);
        assert_eq!(
            ewma.len(),
            8 * 2,
            "duplicates: {:?}",
            ewma.iter().map(|r| &r.params).collect::<Vec<_>>()
        );
        assert!(ewma
            .iter()
            .all(|r| r.params.len() == 1 && r.params[0].starts_with("target_ticks=")));
        assert!(ewma.iter().all(|r| r.sim.confidence.is_none()));
    }

    #[test]
    fn sizes_a_spec_asks_for_are_bounded_before_anything_is_allocated() {
        let err = |spec: &str| {
            SweepPlan::from_toml(spec, Path::new("."), "t")
                .unwrap_err()
                .to_string()
        };
        let c = r#"traces = [{ name = "c", constant = { mbps = 12, seconds = 30 } }]"#;
        assert!(err(&format!("{c}\nseeds = 1000000000000")).contains("more than the 100000"));
        let grid = format!(
            "{c}\n[params]\n\"model.sigma\" = [{}]\ntarget_ticks = [{}]\n[sim]\nloss = [{}]",
            vec!["100"; 1000].join(", "),
            vec!["5"; 1000].join(", "),
            vec!["0.0"; 1000].join(", ")
        );
        let e = err(&grid);
        assert!(
            e.contains(
                "the grid is 1000 values of model.sigma x 1000 values of target_ticks x 1000 \
                 [sim] loss = 1000000000 runs, more than the 1000000"
            ),
            "{e}"
        );
        let e = err(r#"traces = [{ name = "c", constant = { mbps = 1e15, seconds = 30 } }]"#);
        assert!(e.contains("faster than 100000 Mbit/s"), "{e}");
        let e = err(r#"traces = [{ name = "s", synthetic = { duration_s = 1e9 } }]"#);
        assert!(e.contains("a generated trace may hold at most"), "{e}");
    }

    #[test]
    fn rows_are_the_simulators_figures() {
        let p = plan();
        let run = &p.runs[1];
        let fields = run_fields(run).unwrap();
        let header = p.header();
        assert_eq!(fields.len(), header.len());
        let col = |name: &str| &fields[header.iter().position(|h| h == name).unwrap()];
        assert_eq!(col("run_id"), &run.id);
        assert_eq!(col("param.model.sigma"), "100");
        assert_eq!(col("duration_s"), "8");
        // The same figures as sprout sim's code on the same options.
        let opts = run.sim_options().unwrap();
        let cfg = opts.config().unwrap();
        let (up, down) = run.trace.load().unwrap();
        let out = sim_json::run(up, down, &cfg, None).unwrap();
        assert_eq!(
            col("down_throughput_kbps"),
            &out.downlink.metrics.throughput_kbps.to_string()
        );
        assert_eq!(col("up_packets"), &out.uplink.metrics.packets.to_string());
        // The header's metric names are DirectionMetrics' fields, all of them.
        let m = serde_json::to_value(&out.uplink.metrics).unwrap();
        let mut names: Vec<&str> = m.as_object().unwrap().keys().map(String::as_str).collect();
        let mut ours = METRIC_COLUMNS.to_vec();
        names.sort_unstable();
        ours.sort_unstable();
        assert_eq!(names, ours);
        // Rerunning gives the identical line.
        assert_eq!(run_line(run).unwrap(), csv_line(&fields));
    }

    #[test]
    fn resume_skips_done_runs_and_drops_a_partial_line() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("s.csv");
        let mut p = plan();
        p.runs.truncate(6);
        let first = run_local(&p, &out, Some(2), false).unwrap();
        assert_eq!((first.ran, first.skipped, first.rows), (6, 0, 6));
        let sorted = fs::read_to_string(&out).unwrap();
        let ids: Vec<&str> = sorted
            .lines()
            .skip(1)
            .map(|l| l.split(',').next().unwrap())
            .collect();
        let mut want: Vec<&str> = p.runs.iter().map(|r| r.id.as_str()).collect();
        want.sort_unstable();
        assert_eq!(ids, want);
        // A crash mid-row: the partial line is dropped and the sweep goes on.
        let mut f = OpenOptions::new().append(true).open(&out).unwrap();
        f.write_all(b"deadbeef,partial").unwrap();
        drop(f);
        let mut q = plan();
        q.runs.truncate(8);
        let second = run_local(&q, &out, Some(2), false).unwrap();
        assert_eq!((second.ran, second.skipped, second.rows), (2, 6, 8));
        let text = fs::read_to_string(&out).unwrap();
        assert!(!text.contains("partial"));
        // The first six rows are unchanged, and a full run from scratch gives the same file.
        let fresh = dir.path().join("fresh.csv");
        run_local(&q, &fresh, Some(1), false).unwrap();
        assert_eq!(text, fs::read_to_string(&fresh).unwrap());
        // Another sweep's columns are refused.
        let other = SweepPlan::from_toml(
            &SPEC.replace("\"model.sigma\"", "confidence_x"),
            Path::new("."),
            "t",
        );
        assert!(other.is_err(), "unknown parameter is refused at expansion");
        let mut header = q.header();
        header.push("extra".into());
        assert!(SweepOutput::open(&out, &header).is_err());
    }

    #[test]
    fn spec_errors_name_the_problem() {
        let err = |s: &str| {
            SweepPlan::from_toml(s, Path::new("."), "t")
                .unwrap_err()
                .to_string()
        };
        let c = r#"traces = [{ name = "c", constant = { mbps = 12, seconds = 30 } }]"#;
        assert!(err("").contains("names no traces"));
        assert!(err(&format!("{c}\nschemes = [\"warp\"]")).contains("unknown scheme 'warp'"));
        assert!(err(&format!("{c}\n[sim]\nspeed = 1")).contains("unknown option 'speed'"));
        assert!(err(&format!("{c}\nbogus = 1")).contains("unknown key 'bogus'"));
        let e = sim_error_message(
            &SweepPlan::from_toml(&format!("{c}\n[params]\nnope = 1"), Path::new("."), "t")
                .unwrap_err(),
        );
        assert!(e.contains("parameter 'nope=1': unknown key 'nope'"), "{e}");
        assert!(err(&format!("{c}\n[sim]\nloss = 2.0")).contains("run "));
        assert!(SweepOutput::open(Path::new("/tmp/x.parquet"), &[]).is_err());
    }

    /// A constant 12 Mbit/s pair, 8 s runs measured from 2 s, data down only.
    const APP_SPEC: &str = r#"
traces = [{ name = "c12", constant = { mbps = 12, seconds = 30 } }]
schemes = ["sprout", "cubic"]
seeds = [1]
[sim]
duration = 8.0
skip = 2.0
load = "down"
"#;

    fn app_plan(app: &str) -> Result<SweepPlan> {
        SweepPlan::from_toml(&format!("{APP_SPEC}app = {app}\n"), Path::new("."), "t")
    }

    #[test]
    fn a_bulk_spec_keeps_its_run_ids_and_columns() {
        // The ids and columns the spec had before applications came in (computed with that
        // code): a sweep's output from then resumes.
        let p = SweepPlan::from_toml(APP_SPEC, Path::new("."), "t").unwrap();
        let ids: Vec<&str> = p.runs.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(ids, ["1d8b13c4139f6dc8", "5e72cc4dbfe305ff"]);
        let h = p.header();
        assert_eq!(h.len(), 5 + SIM_COLUMNS.len() + 2 * METRIC_COLUMNS.len());
        assert_eq!(h, header(&[]));
        assert!(!h.iter().any(|c| c.contains("app")));
        assert!(!serde_json::to_string(&p.runs[0]).unwrap().contains("app"));
        // `app = "bulk"` is the same runs, with the application columns.
        let bulk = app_plan("\"bulk\"").unwrap();
        assert_eq!(
            bulk.runs.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(),
            ids
        );
        assert!(bulk.header().contains(&"app".to_string()));
        assert_eq!(bulk.header().len(), h.len() + 1 + 2 * APP_COLUMNS.len());
    }

    #[test]
    fn app_specs_are_a_sweep_dimension() {
        let p = app_plan(r#"["constant:rate=500k", "bulk", "video:rate=1M,fps=25"]"#).unwrap();
        assert_eq!(p.runs.len(), 2 * 3);
        let apps: Vec<Option<&str>> = p.runs.iter().map(|r| r.sim.app.as_deref()).collect();
        assert_eq!(
            apps[..3],
            [
                Some("constant:rate=500k,packet=1200"),
                None,
                Some("video:rate=1M,fps=25,key=3,keyratio=5")
            ]
        );
        assert_eq!(
            p.runs[0].sim_options().unwrap().app,
            sprout_sim::App::parse("constant:rate=500k").unwrap()
        );
        // The same app written another way is the same run.
        let same = app_plan("\"constant:rate=500000,packet=1200\"").unwrap();
        assert_eq!(same.runs[0].id, p.runs[0].id);
        // The bulk runs are the spec's runs without app.
        let plain = SweepPlan::from_toml(APP_SPEC, Path::new("."), "t").unwrap();
        assert_eq!(p.runs[1].id, plain.runs[0].id);
        // The app reaches the run through its JSON (as Python hands it to a worker).
        let json = serde_json::to_string(&p.runs[0]).unwrap();
        let back: RunSpec = serde_json::from_str(&json).unwrap();
        assert_eq!(back, p.runs[0]);
        assert_eq!(back.compute_id(), back.id);
        assert!(back.app_columns);
        // direct runs with an application of its own rate.
        let direct = SweepPlan::from_toml(
            &format!("{APP_SPEC}app = \"constant:rate=1M\"\n")
                .replace(r#"["sprout", "cubic"]"#, r#"["direct"]"#),
            Path::new("."),
            "t",
        )
        .unwrap();
        assert_eq!(direct.runs.len(), 1);
    }

    #[test]
    fn bad_app_specs_name_the_key() {
        let err = |app: &str| sim_error_message(&app_plan(app).unwrap_err());
        let e = err("\"warp\"");
        assert!(
            e.contains("[sim] app: app 'warp': unknown kind 'warp'"),
            "{e}"
        );
        let e = err(r#"["constant:rate=1M", "constant:rate=fast"]"#);
        assert!(
            e.contains("[sim] app: app 'constant:rate=fast': rate"),
            "{e}"
        );
        assert!(err("5").contains("[sim] app: expected a string"));
        // direct has no congestion control to hold a bulk sender back.
        let e = sim_error_message(
            &SweepPlan::from_toml(
                &APP_SPEC.replace(r#"["sprout", "cubic"]"#, r#"["direct"]"#),
                Path::new("."),
                "t",
            )
            .unwrap_err(),
        );
        assert!(e.contains("direct with app bulk"), "{e}");
    }

    #[test]
    fn gcc_and_copa_run_in_a_sweep() {
        let spec = APP_SPEC.replace(r#"["sprout", "cubic"]"#, r#"["gcc", "copa"]"#);
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("modern.csv");
        let p = SweepPlan::from_toml(&format!("{spec}app = \"adaptive\"\n"), Path::new("."), "t")
            .unwrap();
        let report = run_local(&p, &out, Some(2), false).unwrap();
        assert_eq!((report.ran, report.rows), (2, 2));
        let mut r = csv::Reader::from_path(&out).unwrap();
        let header: Vec<String> = r.headers().unwrap().iter().map(str::to_string).collect();
        let col = |name: &str| header.iter().position(|h| h == name).unwrap();
        let rows: Vec<csv::StringRecord> = r.records().map(Result::unwrap).collect();
        let of = |scheme: &str| rows.iter().find(|r| &r[col("scheme")] == scheme).unwrap();
        let num = |row: &csv::StringRecord, c: &str| row[col(c)].parse::<f64>().unwrap();
        // GCC paces adaptive video down a 12 Mbit/s link: frames arrive, well within 300 ms,
        // at a rate of its own below the link's.
        let gcc = of("gcc");
        assert!(
            gcc[col("app")].starts_with("adaptive"),
            "{}",
            &gcc[col("app")]
        );
        assert!(num(gcc, "down_app_messages") > 100.0);
        let gcc_p95 = num(gcc, "down_app_p95_ms");
        assert!(
            (20.0..300.0).contains(&gcc_p95),
            "gcc frame p95 {gcc_p95} ms"
        );
        let gcc_kbps = num(gcc, "down_throughput_kbps");
        assert!(
            (100.0..12_000.0).contains(&gcc_kbps),
            "gcc {gcc_kbps} kbit/s"
        );
        // Copa sizes the same frames by its window: it fills more of the link than nothing.
        assert!(num(of("copa"), "down_app_messages") > 100.0);

        // Without an app gcc runs its natural one (the run id of app = "adaptive"), and copa
        // a bulk sender that fills the link with a small queue.
        let bare = SweepPlan::from_toml(&spec, Path::new("."), "t").unwrap();
        let gcc_run = bare.runs.iter().find(|r| r.scheme == "gcc").unwrap();
        assert_eq!(
            gcc_run.sim_options().unwrap().app,
            sprout_sim::App::parse("adaptive").unwrap()
        );
        let explicit = p.runs.iter().find(|r| r.scheme == "gcc").unwrap();
        assert_eq!(gcc_run.id, explicit.id);
        let out2 = dir.path().join("bare.csv");
        let report = run_local(&bare, &out2, Some(2), false).unwrap();
        assert_eq!(report.rows, 2);
        let mut r = csv::Reader::from_path(&out2).unwrap();
        let header: Vec<String> = r.headers().unwrap().iter().map(str::to_string).collect();
        assert!(!header.iter().any(|h| h.contains("app")));
        let col = |name: &str| header.iter().position(|h| h == name).unwrap();
        let rows: Vec<csv::StringRecord> = r.records().map(Result::unwrap).collect();
        let copa = rows.iter().find(|r| &r[col("scheme")] == "copa").unwrap();
        let util = copa[col("down_utilization")].parse::<f64>().unwrap();
        let delay = copa[col("down_self_inflicted_data_ms")]
            .parse::<f64>()
            .unwrap();
        assert!(util > 0.8 && delay < 40.0, "copa {util} {delay} ms");
        let gcc = rows.iter().find(|r| &r[col("scheme")] == "gcc").unwrap();
        let gcc_bare = gcc[col("down_throughput_kbps")].parse::<f64>().unwrap();
        assert_eq!(
            gcc_bare, gcc_kbps,
            "the same run as with app = \"adaptive\""
        );
    }

    #[test]
    fn an_app_sweep_writes_the_application_columns() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("app.csv");
        let p = app_plan(r#"["constant:rate=500k", "bulk"]"#).unwrap();
        let report = run_local(&p, &out, Some(2), false).unwrap();
        assert_eq!((report.ran, report.rows), (4, 4));
        let mut r = csv::Reader::from_path(&out).unwrap();
        let header: Vec<String> = r.headers().unwrap().iter().map(str::to_string).collect();
        assert_eq!(header, p.header());
        let col = |name: &str| header.iter().position(|h| h == name).unwrap();
        let rows: Vec<csv::StringRecord> = r.records().map(Result::unwrap).collect();
        let mut seen_app = 0;
        for row in &rows {
            let run = p.runs.iter().find(|r| r.id == row[0]).unwrap();
            match run.sim.app.as_deref() {
                Some(spec) => {
                    seen_app += 1;
                    assert_eq!(&row[col("app")], spec);
                    // 500 kbit/s down a 12 Mbit/s link: all of it, at about the
                    // propagation delay.
                    let num = |c: &str| row[col(c)].parse::<f64>().unwrap();
                    assert!((num("down_app_offered_kbps") - 500.0).abs() < 5.0);
                    assert!(num("down_app_share") > 0.99);
                    let p95 = num("down_app_p95_ms");
                    assert!((20.0..100.0).contains(&p95), "{p95}");
                    assert!(num("down_app_within_150ms") > 0.99);
                    // 52 a second, made in the window but its last quarter.
                    assert!(
                        num("down_app_messages") > 200.0,
                        "{}",
                        num("down_app_messages")
                    );
                    // The uplink carries no data: no application figures.
                    assert_eq!(&row[col("up_app_p95_ms")], "");
                    // The same figures as the simulator's.
                    let cfg = run.sim_options().unwrap().config().unwrap();
                    let (up, down) = run.trace.load().unwrap();
                    let sim = sim_json::run(up, down, &cfg, None).unwrap();
                    let a = sim.downlink.app.unwrap();
                    assert_eq!(row[col("down_app_p95_ms")], a.delay_p95_ms.to_string());
                }
                None => {
                    assert_eq!(&row[col("app")], "bulk");
                    assert_eq!(&row[col("down_app_p95_ms")], "");
                }
            }
        }
        assert_eq!(seen_app, 2);
        // A second start finds every run done.
        let again = run_local(&p, &out, Some(2), false).unwrap();
        assert_eq!((again.ran, again.skipped), (0, 4));
    }
}
