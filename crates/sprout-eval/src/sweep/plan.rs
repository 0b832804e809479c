//! A sweep's plan: the spec ([`SweepSpec`]) expanded into runs ([`RunSpec`]), each with its
//! stable id, its traces ([`TraceRef`], loaded once per process) and its simulator options
//! ([`SimSettings`]), in the order and with the ids the module docs of [`super`] describe.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::{Arc, Mutex, OnceLock};

use serde::{Deserialize, Serialize};
use serde_json::Value as Json;
use sprout_link::{constant_rate_trace, ShapeOptions, SyntheticLink, Trace};

use super::output::{header_with_app, ECN_COLUMNS, LINK_COLUMNS};
use super::spec::{shown, Grid, Seeds, SimKey, SweepSpec, TraceEntry, TraceTable, LINK_KEYS};
use crate::error::{EvalError, Result};
use crate::traces;
use sprout_sim::scheme::Scheme;
use sprout_sim::sim::parse_load;
use sprout_sim::sim_json::{QueueKind, SimOptions};

/// The most seeds a sweep's `seeds = N` may ask for.
pub const MAX_SEEDS: u64 = 100_000;
/// The most runs one sweep may hold (its plan keeps every run in memory).
pub const MAX_RUNS: usize = 1_000_000;

/// Returns an [`EvalError::Spec`] with this message (as `anyhow::bail!` would).
macro_rules! bad_spec {
    ($($arg:tt)*) => {
        return Err(EvalError::Spec(format!($($arg)*)))
    };
}

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
    /// ECN (`sprout sim --ecn`); left out of the JSON (and so of the run's id) while off, as
    /// before ECN came in.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ecn: bool,
    /// The link's shaping options ([`LINK_KEYS`](super::spec::LINK_KEYS)), each as `sprout
    /// sim` spells it; left out of the JSON (and so of the run's id) while empty, as before
    /// they came in.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub link: BTreeMap<String, String>,
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
            ecn: false,
            link: BTreeMap::new(),
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
    /// Whether the row has the ECN columns (the spec sets `ecn`); not part of the id.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ecn_columns: bool,
    /// The link shaping options the spec sets (the row's link columns, then
    /// [`LINK_COLUMNS`]); not part of the id.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub link_columns: Vec<String>,
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
            load: parse_load(&s.load).map_err(|e| EvalError::BadParameter(e.to_string()))?,
            app: match &s.app {
                Some(spec) => sprout_sim::App::parse(spec)?,
                None => sprout_sim::App::Bulk,
            },
            shape: self.link_shape()?,
            cross: None,
        })
    }

    /// The link's shaping: ECN and the link options, read by the link's own
    /// [`ShapeOptions`] as `sprout sim` reads its flags.
    fn link_shape(&self) -> Result<sprout_link::LinkShape> {
        let mut options = ShapeOptions {
            ecn: self.sim.ecn,
            ..ShapeOptions::default()
        };
        for (k, v) in &self.sim.link {
            options
                .set(k, v)
                .map_err(|e| EvalError::BadParameter(e.to_string()))?;
        }
        options
            .shape()
            .map_err(|e| EvalError::BadParameter(e.to_string()))
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
    /// Whether the rows have the ECN columns (the spec's `[sim]` sets `ecn` or `l4s_step`).
    pub ecn_columns: bool,
    /// The link shaping options the spec's `[sim]` sets, in key order (their columns).
    pub link_keys: Vec<String>,
}

/// Every combination of the (key, values) dimensions, keys in order.
fn product<K: Clone>(dims: &[(K, Vec<Json>)]) -> Vec<Vec<(K, Json)>> {
    let mut out: Vec<Vec<(K, Json)>> = vec![Vec::new()];
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

fn as_f64(key: SimKey, v: &Json) -> Result<f64> {
    v.as_f64()
        .ok_or_else(|| EvalError::Spec(format!("[sim] {key}: expected a number, got {}", shown(v))))
}

fn as_str(key: SimKey, v: &Json) -> Result<String> {
    v.as_str()
        .map(str::to_string)
        .ok_or_else(|| EvalError::Spec(format!("[sim] {key}: expected a string, got {}", shown(v))))
}

/// Simulator settings from one combination of `[sim]` values.
fn sim_settings(combo: &[(SimKey, Json)]) -> Result<SimSettings> {
    let mut s = SimSettings::default();
    for &(k, ref v) in combo {
        match k {
            SimKey::Duration => s.duration_s = Some(as_f64(k, v)?),
            SimKey::Skip => s.skip_s = as_f64(k, v)?,
            SimKey::Load => s.load = as_str(k, v)?,
            SimKey::Queue => s.queue = as_str(k, v)?,
            SimKey::UplinkQueue => s.uplink_queue = Some(as_str(k, v)?),
            SimKey::DownlinkQueue => s.downlink_queue = Some(as_str(k, v)?),
            SimKey::Loss => s.loss = as_f64(k, v)?,
            SimKey::UplinkLoss => s.uplink_loss = Some(as_f64(k, v)?),
            SimKey::DownlinkLoss => s.downlink_loss = Some(as_f64(k, v)?),
            SimKey::HostJitterMs => s.host_jitter_ms = as_f64(k, v)?,
            SimKey::Ecn => {
                s.ecn = v.as_bool().ok_or_else(|| {
                    EvalError::Spec(format!(
                        "[sim] {k}: expected true or false, got {}",
                        shown(v)
                    ))
                })?
            }
            SimKey::Confidence => s.confidence = Some(as_f64(k, v)?),
            SimKey::Link(_) => {
                let text = match v {
                    Json::String(t) => t.clone(),
                    Json::Number(n) => n.to_string(),
                    other => bad_spec!(
                        "[sim] {k}: expected a string as `sprout sim --{}` takes it, got {}",
                        k.name().replace('_', "-"),
                        shown(other)
                    ),
                };
                ShapeOptions::default()
                    .set(k.name(), &text)
                    .map_err(|e| EvalError::Spec(format!("[sim] {e}")))?;
                s.link.insert(k.name().to_string(), text);
            }
            SimKey::App => {
                let app = sprout_sim::App::parse(&as_str(k, v)?)
                    .map_err(|e| EvalError::Spec(format!("[sim] app: {e}")))?;
                s.app = (!app.is_bulk()).then(|| app.to_string());
            }
        }
    }
    Ok(s)
}

/// The folder trace names are looked up in: the spec's `traces_dir`, else the first of
/// [`sprout_link::data_dirs::trace_dirs`] (`$SPROUT_TRACES`, [`crate::traces::DEFAULT_TRACE_DIRS`])
/// that holds traces.
fn trace_dir(dir: Option<&Path>) -> Result<PathBuf> {
    if let Some(d) = dir {
        return Ok(d.to_path_buf());
    }
    sprout_link::data_dirs::find_trace_dir().ok_or_else(|| {
        let found: Vec<String> = sprout_link::data_dirs::trace_dirs()
            .iter()
            .filter_map(|d| sprout_link::data_dirs::describe_folder(d))
            .map(|d| format!(" ({d})"))
            .collect();
        EvalError::Spec(format!(
            "traces: no traces_dir given and no traces in {}{}",
            sprout_link::data_dirs::trace_dirs_shown(),
            found.concat()
        ))
    })
}

/// A pair of trace files, with digests of their contents.
fn file_pair(name: String, up: PathBuf, down: PathBuf) -> Result<TraceRef> {
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
}

/// The pairs named in a spec's `traces`, resolved.
fn trace_refs(spec: &SweepSpec, base: &Path) -> Result<Vec<TraceRef>> {
    let dir = spec.traces_dir.as_ref().map(|d| base.join(d));
    let entries = match &spec.traces {
        Some(Grid(entries)) if !entries.is_empty() => entries,
        Some(_) => bad_spec!("traces: an empty list names no traces (traces = [\"NAME\", ...])"),
        None => bad_spec!("traces: the spec names no traces (traces = [\"NAME\", ...])"),
    };
    let mut out = Vec::new();
    for entry in entries {
        match entry {
            TraceEntry::Name(s) if s == "*" => {
                let d = trace_dir(dir.as_deref())?;
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
                    out.push(file_pair(name, up, down)?);
                }
            }
            TraceEntry::Name(name) => {
                let d = trace_dir(dir.as_deref())?;
                out.push(file_pair(
                    name.clone(),
                    d.join(format!("{name}.up")),
                    d.join(format!("{name}.down")),
                )?);
            }
            TraceEntry::Table(table) => out.push(table_ref(table, base)?),
        }
    }
    Ok(out)
}

/// The pair a table entry of `traces` describes.
fn table_ref(table: &TraceTable, base: &Path) -> Result<TraceRef> {
    let Some(name) = table.name.clone() else {
        bad_spec!("traces: a table entry needs a name (name = \"...\")");
    };
    if let Some(syn) = &table.synthetic {
        let link = SyntheticLink::deserialize(syn).map_err(|source| EvalError::SpecSynthetic {
            name: name.clone(),
            source,
        })?;
        link.check_size(&name).map_err(EvalError::BadTrace)?;
        return Ok(TraceRef {
            name,
            source: TraceSource::Synthetic { link },
        });
    }
    if let Some(c) = &table.constant {
        let (Some(mbps), Some(seconds)) = (c.mbps, c.seconds) else {
            bad_spec!("traces: {name}: constant needs mbps and seconds");
        };
        // Generated only when a run needs it: check its size now.
        sprout_link::synthetic::check_constant_size(&name, mbps, seconds)
            .map_err(EvalError::BadTrace)?;
        return Ok(TraceRef {
            name,
            source: TraceSource::Constant { mbps, seconds },
        });
    }
    let (Some(up), Some(down)) = (&table.uplink, &table.downlink) else {
        bad_spec!(
            "traces: {name}: give uplink and downlink files, synthetic = {{...}} or constant = {{...}}"
        );
    };
    file_pair(name, base.join(up), base.join(down))
}

fn absolute(p: &Path) -> PathBuf {
    fs::canonicalize(p).unwrap_or_else(|_| {
        std::env::current_dir()
            .map(|d| d.join(p))
            .unwrap_or_else(|_| p.to_path_buf())
    })
}

/// The schemes of a spec's `schemes` (default: Sprout).
fn schemes_of(schemes: Option<&Grid<String>>) -> Result<Vec<Scheme>> {
    let Some(Grid(names)) = schemes else {
        return Ok(vec![Scheme::Sprout]);
    };
    names
        .iter()
        .map(|s| {
            let scheme =
                Scheme::from_str(s).map_err(|e| EvalError::Spec(format!("schemes: {e}")))?;
            if !scheme.is_simulated() {
                bad_spec!("schemes: the omniscient sender is not simulated");
            }
            Ok(scheme)
        })
        .collect()
}

impl SweepPlan {
    /// Reads and expands the TOML spec at `path` (paths in it relative to its folder).
    pub fn load(path: &Path) -> Result<SweepPlan> {
        let text = SweepSpec::read(path)?;
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
        Self::from_spec(&SweepSpec::from_toml(text)?, base, name)
    }

    /// Expands a spec given as a JSON value of the same shape as the TOML (what Python's
    /// `sprout.sweep` passes for a dict).
    pub fn from_json(spec: &Json, base: &Path, name: &str) -> Result<SweepPlan> {
        Self::from_spec(&SweepSpec::from_json(spec)?, base, name)
    }

    /// Expands a spec (paths in it relative to `base`).
    pub fn from_spec(spec: &SweepSpec, base: &Path, name: &str) -> Result<SweepPlan> {
        let traces = trace_refs(spec, base)?;
        let schemes = schemes_of(spec.schemes.as_ref())?;
        let seeds = seeds_of(spec.seeds.as_ref())?;
        let params: BTreeMap<String, Vec<Json>> = spec
            .params
            .iter()
            .map(|(k, Grid(vs))| (k.clone(), vs.clone()))
            .collect();
        let sim: BTreeMap<SimKey, Vec<Json>> = spec
            .sim
            .iter()
            .map(|(k, Grid(vs))| (*k, vs.clone()))
            .collect();
        for (k, empty) in params
            .iter()
            .map(|(k, vs)| (k.clone(), vs.is_empty()))
            .chain(sim.iter().map(|(k, vs)| (k.to_string(), vs.is_empty())))
        {
            if empty {
                bad_spec!("{k}: an empty list leaves nothing to run");
            }
        }
        check_grid(&traces, &schemes, &seeds, &params, &sim)?;
        let l4s_step =
            SimKey::Link(LINK_KEYS.iter().position(|k| *k == "l4s_step").unwrap_or(0) as u8);
        let grid = Expansion {
            app_columns: sim.contains_key(&SimKey::App),
            ecn_columns: sim.contains_key(&SimKey::Ecn) || sim.contains_key(&l4s_step),
            link_keys: sim
                .keys()
                .filter(|k| matches!(k, SimKey::Link(_)))
                .map(|k| k.name().to_string())
                .collect(),
            param_keys: params.keys().cloned().collect(),
            param_combos: product(&params.into_iter().collect::<Vec<_>>()),
            sim_combos: product(&sim.into_iter().collect::<Vec<_>>()),
            seeds,
        };
        let mut runs = Vec::new();
        let mut seen = HashSet::new();
        for trace in &traces {
            for scheme in &schemes {
                grid.runs_of(trace, *scheme, &mut seen, &mut runs)?;
            }
        }
        Ok(SweepPlan {
            runs,
            param_keys: grid.param_keys,
            out: spec.out.as_ref().map(|o| base.join(o)),
            name: name.to_string(),
            app_columns: grid.app_columns,
            ecn_columns: grid.ecn_columns,
            link_keys: grid.link_keys,
        })
    }

    /// The output's columns.
    pub fn header(&self) -> Vec<String> {
        let mut h = header_with_app(&self.param_keys, self.app_columns);
        if self.ecn_columns {
            h.extend(ECN_COLUMNS.iter().map(|c| c.to_string()));
        }
        if !self.link_keys.is_empty() {
            h.extend(self.link_keys.iter().cloned());
            h.extend(LINK_COLUMNS.iter().map(|c| c.to_string()));
        }
        h
    }
}

/// The grid's combinations, which every (trace, scheme) pair runs.
struct Expansion {
    /// Whether the spec's `[sim]` sets `app`.
    app_columns: bool,
    /// Whether the spec's `[sim]` sets `ecn` or `l4s_step`.
    ecn_columns: bool,
    /// The link shaping options the spec's `[sim]` sets, in key order.
    link_keys: Vec<String>,
    /// The parameter keys of the spec, sorted.
    param_keys: Vec<String>,
    /// Every combination of the parameters' values.
    param_combos: Vec<Vec<(String, Json)>>,
    /// Every combination of the simulator options' values.
    sim_combos: Vec<Vec<(SimKey, Json)>>,
    /// The seeds.
    seeds: Vec<u64>,
}

impl Expansion {
    /// Appends the runs of one trace pair and scheme to `runs`, in expansion order, leaving
    /// out those whose ids are in `seen` (and noting the others' there).
    fn runs_of(
        &self,
        trace: &TraceRef,
        scheme: Scheme,
        seen: &mut HashSet<String>,
        runs: &mut Vec<RunSpec>,
    ) -> Result<()> {
        // Parameters apply to Sprout schemes only, and each only to the schemes it changes
        // (Sprout-EWMA has no Bayesian model): the others run once per remaining combination
        // (the ids below drop the repeats), not as duplicates.
        let no_params: Vec<Vec<(String, Json)>> = vec![Vec::new()];
        let pcs = if scheme.is_sprout() {
            &self.param_combos
        } else {
            &no_params
        };
        for pc in pcs {
            let assignments: Vec<String> = pc
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .filter(|a| scheme.uses_param(a))
                .collect();
            for sc in &self.sim_combos {
                let mut settings = sim_settings(sc)?;
                if !scheme.uses_confidence() {
                    settings.confidence = None;
                }
                // A scheme that cannot run a bulk sender (gcc) runs its own application, as
                // in `sprout eval`.
                if settings.app.is_none() {
                    settings.app = scheme.natural_app().map(|a| a.to_string());
                }
                for &seed in &self.seeds {
                    let mut run = RunSpec {
                        id: String::new(),
                        trace: trace.clone(),
                        scheme: scheme.key().to_string(),
                        params: assignments.clone(),
                        seed,
                        sim: settings.clone(),
                        param_columns: self.param_keys.clone(),
                        app_columns: self.app_columns,
                        ecn_columns: self.ecn_columns,
                        link_columns: self.link_keys.clone(),
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
        Ok(())
    }
}

/// Checks, before a run (or a combination) is made, that the grid holds at most [`MAX_RUNS`]
/// runs; the error names its dimensions and their product.
fn check_grid(
    traces: &[TraceRef],
    schemes: &[Scheme],
    seeds: &[u64],
    params: &BTreeMap<String, Vec<Json>>,
    sim: &BTreeMap<SimKey, Vec<Json>>,
) -> Result<()> {
    let mut dims = vec![
        (traces.len(), "traces".to_string()),
        (schemes.len(), "schemes".to_string()),
    ];
    for (k, vs) in params {
        dims.push((vs.len(), format!("values of {}", sprout_files::excerpt(k))));
    }
    for (k, vs) in sim {
        dims.push((vs.len(), format!("[sim] {k}")));
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

/// The seeds of a spec's `seeds`: a list, or a count N meaning 1..=N (at most [`MAX_SEEDS`]);
/// none given: `[0]`.
fn seeds_of(seeds: Option<&Seeds>) -> Result<Vec<u64>> {
    Ok(match seeds {
        None => vec![0],
        Some(&Seeds::Count(count)) => {
            if !(count.fract() == 0.0 && count >= 0.0) {
                bad_spec!("seeds: a count must be a whole number");
            }
            if count > MAX_SEEDS as f64 {
                bad_spec!("seeds: {count} is more than the {MAX_SEEDS} one sweep may run");
            }
            (1..=count as u64).collect()
        }
        Some(Seeds::List(list)) => list.clone(),
    })
}
