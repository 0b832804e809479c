//! The sweep spec as written: a serde-derived [`SweepSpec`] (TOML, or JSON of the same shape)
//! whose unknown keys are refused by name. What the spec's values mean (a scheme's name, a
//! count of seeds, a trace pair) is checked when the plan is expanded ([`super::plan`]),
//! where the messages can name the entry they are about.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::de::{self, Deserializer};
use serde::Deserialize;
use serde_json::Value as Json;
use sprout_files::ReadError;

use crate::error::{EvalError, Result};

/// The largest sweep spec read, bytes (1 MiB). A spec is a few hundred bytes; one that lists
/// every value of a grid of [`MAX_RUNS`](super::MAX_RUNS) runs (a thousand values in each of
/// two dimensions) is some tens of KiB.
pub const MAX_SPEC_BYTES: u64 = 1 << 20;

/// The simulator options a spec's `[sim]` table may set, as `sprout sim`'s flags (with `_`).
pub const SIM_KEYS: [&str; 13] = [
    "app",
    "confidence",
    "downlink_loss",
    "downlink_queue",
    "duration",
    "ecn",
    "host_jitter_ms",
    "load",
    "loss",
    "queue",
    "skip",
    "uplink_loss",
    "uplink_queue",
];

/// The link's shaping options a spec's `[sim]` table may set besides [`SIM_KEYS`], by
/// `sprout sim`'s names and spellings (`buffer = ["100pkt", "50ms"]`, `l4s_step = "1ms"`,
/// `fq_flows = 16`): [`sprout_link::SHAPE_OPTIONS`] but `ecn` (a key of its own) and the delay
/// traces (files, whose contents a run's id would have to digest).
pub const LINK_KEYS: [&str; 14] = [
    "buffer",
    "codel_interval",
    "codel_target",
    "downlink_buffer",
    "downlink_gemodel",
    "downlink_jitter",
    "fq_flows",
    "fq_quantum",
    "gemodel",
    "jitter",
    "l4s_step",
    "uplink_buffer",
    "uplink_gemodel",
    "uplink_jitter",
];

/// A sweep spec: the module docs of [`super`] describe each key. Every key but `traces` may
/// be left out; a key the spec does not know is refused with its name.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SweepSpec {
    /// The trace pairs: one entry or a list.
    #[serde(default, deserialize_with = "keyed::traces")]
    pub traces: Option<Grid<TraceEntry>>,
    /// Where trace names are looked up, relative to the spec's folder.
    #[serde(default, deserialize_with = "keyed::traces_dir")]
    pub traces_dir: Option<PathBuf>,
    /// The schemes' keys: one or a list (default `["sprout"]`).
    #[serde(default, deserialize_with = "keyed::schemes")]
    pub schemes: Option<Grid<String>>,
    /// The seeds: a list, or a count N meaning 1..=N (default `[0]`).
    #[serde(default, deserialize_with = "keyed::seeds")]
    pub seeds: Option<Seeds>,
    /// The output, relative to the spec's folder.
    #[serde(default, deserialize_with = "keyed::out")]
    pub out: Option<PathBuf>,
    /// Sprout parameters (`sprout params` lists them): a value or a list of values each.
    #[serde(default, deserialize_with = "keyed::params")]
    pub params: BTreeMap<String, Grid<Json>>,
    /// `sprout sim`'s options ([`SIM_KEYS`]): a value or a list of values each, converted to
    /// the option's type when the plan is expanded.
    #[serde(default, deserialize_with = "keyed::sim")]
    pub sim: BTreeMap<SimKey, Grid<Json>>,
}

/// A grid dimension's values: a list is its values, anything else one value.
#[derive(Clone, Debug, PartialEq)]
pub struct Grid<T>(pub Vec<T>);

impl<'de, T: serde::de::DeserializeOwned> Deserialize<'de> for Grid<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let values = match Json::deserialize(d)? {
            Json::Array(a) => a,
            one => vec![one],
        };
        values
            .into_iter()
            .map(|v| T::deserialize(v).map_err(de::Error::custom))
            .collect::<std::result::Result<_, _>>()
            .map(Grid)
    }
}

/// The seeds of a spec.
#[derive(Clone, Debug, PartialEq)]
pub enum Seeds {
    /// A count N, meaning 1..=N (checked to be whole and at most
    /// [`MAX_SEEDS`](super::MAX_SEEDS) when the plan is expanded).
    Count(f64),
    /// The seeds themselves.
    List(Vec<u64>),
}

impl<'de> Deserialize<'de> for Seeds {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        match Json::deserialize(d)? {
            // A whole count, also written as a float (`1e3`), is checked before it is a u64.
            Json::Number(n) => Ok(Seeds::Count(n.as_f64().unwrap_or(f64::NAN))),
            Json::Array(a) => a
                .iter()
                .map(|s| {
                    s.as_u64().ok_or_else(|| {
                        de::Error::custom(format_args!("{} is not a seed", shown(s)))
                    })
                })
                .collect::<std::result::Result<_, _>>()
                .map(Seeds::List),
            other => Err(de::Error::custom(format_args!(
                "expected a list of seeds or a count, got {}",
                shown(&other)
            ))),
        }
    }
}

/// One entry of a spec's `traces`.
#[derive(Clone, Debug, PartialEq)]
pub enum TraceEntry {
    /// A pair's name (`NAME.up` and `NAME.down` in `traces_dir`), or `"*"`: every pair there.
    Name(String),
    /// A table: files, a synthetic link or a constant rate.
    Table(TraceTable),
}

impl<'de> Deserialize<'de> for TraceEntry {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        match Json::deserialize(d)? {
            Json::String(s) => Ok(TraceEntry::Name(s)),
            table @ Json::Object(_) => TraceTable::deserialize(table)
                .map(TraceEntry::Table)
                .map_err(de::Error::custom),
            other => Err(de::Error::custom(format_args!(
                "expected a name or a table, got {}",
                shown(&other)
            ))),
        }
    }
}

/// A trace entry given as a table: `{ name, uplink, downlink }` (files, relative to the
/// spec's folder), `{ name, synthetic = {...} }` or `{ name, constant = { mbps, seconds } }`.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TraceTable {
    /// The row's `trace` (required; checked with the entry).
    pub name: Option<String>,
    /// The uplink's file.
    pub uplink: Option<PathBuf>,
    /// The downlink's file.
    pub downlink: Option<PathBuf>,
    /// The paper's link model ([`sprout_link::SyntheticLink`]'s fields), read when the entry
    /// is checked so that its errors name the entry.
    pub synthetic: Option<Json>,
    /// A constant rate both ways.
    pub constant: Option<ConstantRate>,
}

/// A constant-rate trace pair's figures (both required; checked with the entry).
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConstantRate {
    /// Rate, Mbit/s.
    pub mbps: Option<f64>,
    /// Length, seconds.
    pub seconds: Option<f64>,
}

/// A key of a spec's `[sim]` table ([`SIM_KEYS`], then [`LINK_KEYS`]), in the keys' sorted
/// order, the link's after the others.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SimKey {
    /// `app`: the application (`sprout sim --app`).
    App,
    /// `confidence`: the forecast's confidence.
    Confidence,
    /// `downlink_loss`.
    DownlinkLoss,
    /// `downlink_queue`.
    DownlinkQueue,
    /// `duration`, seconds.
    Duration,
    /// `ecn`: ECN marking in both directions' AQMs, and the TCP peers' ECN (`sprout sim
    /// --ecn`).
    Ecn,
    /// `host_jitter_ms`.
    HostJitterMs,
    /// `load`: both, up or down.
    Load,
    /// `loss`: both directions'.
    Loss,
    /// `queue`: both directions'.
    Queue,
    /// `skip`, seconds.
    Skip,
    /// `uplink_loss`.
    UplinkLoss,
    /// `uplink_queue`.
    UplinkQueue,
    /// A link shaping option: its index in [`LINK_KEYS`].
    Link(u8),
}

impl SimKey {
    /// Every key, in the order of [`SIM_KEYS`].
    pub const ALL: [SimKey; 13] = [
        SimKey::App,
        SimKey::Confidence,
        SimKey::DownlinkLoss,
        SimKey::DownlinkQueue,
        SimKey::Duration,
        SimKey::Ecn,
        SimKey::HostJitterMs,
        SimKey::Load,
        SimKey::Loss,
        SimKey::Queue,
        SimKey::Skip,
        SimKey::UplinkLoss,
        SimKey::UplinkQueue,
    ];

    /// The key as the spec writes it.
    pub fn name(self) -> &'static str {
        match self {
            SimKey::Link(i) => LINK_KEYS[usize::from(i)],
            other => SimKey::ALL
                .iter()
                .position(|k| *k == other)
                .map_or("", |i| SIM_KEYS[i]),
        }
    }
}

impl fmt::Display for SimKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl<'de> Deserialize<'de> for SimKey {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let key = String::deserialize(d)?;
        let link = (0..LINK_KEYS.len()).map(|i| SimKey::Link(i as u8));
        SimKey::ALL
            .into_iter()
            .chain(link)
            .find(|k| k.name() == key)
            .ok_or_else(|| {
                de::Error::custom(format_args!(
                    "unknown option '{}' (known: {}, {})",
                    sprout_files::excerpt(&key),
                    SIM_KEYS.join(", "),
                    LINK_KEYS.join(", ")
                ))
            })
    }
}

/// Deserializers of the spec's keys that put the key's name before what is wrong with its
/// value, as `seeds: ...` (serde's own messages do not say which field they are about).
mod keyed {
    use super::*;

    macro_rules! keyed {
        ($($name:ident: $ty:ty = $key:literal;)*) => {$(
            pub(super) fn $name<'de, D: Deserializer<'de>>(
                d: D,
            ) -> std::result::Result<$ty, D::Error> {
                <$ty>::deserialize(d).map_err(|e| de::Error::custom(format_args!("{}: {e}", $key)))
            }
        )*};
    }

    keyed! {
        traces: Option<Grid<TraceEntry>> = "traces";
        traces_dir: Option<PathBuf> = "traces_dir";
        schemes: Option<Grid<String>> = "schemes";
        seeds: Option<Seeds> = "seeds";
        out: Option<PathBuf> = "out";
        params: BTreeMap<String, Grid<Json>> = "[params]";
        sim: BTreeMap<SimKey, Grid<Json>> = "[sim]";
    }
}

/// A spec's value as an error message may quote it: at most an excerpt
/// ([`sprout_files::excerpt`]) of its JSON.
pub(crate) fn shown(v: &Json) -> String {
    sprout_files::excerpt(&v.to_string())
}

impl SweepSpec {
    /// The spec in a JSON value of the TOML's shape (what Python's `sprout.sweep` passes for
    /// a dict).
    pub fn from_json(spec: &Json) -> Result<SweepSpec> {
        if !spec.is_object() {
            return Err(EvalError::Spec(
                "a sweep spec is a table of traces, schemes, seeds, params and sim".into(),
            ));
        }
        SweepSpec::deserialize(spec).map_err(|e| EvalError::Spec(e.to_string()))
    }

    /// The spec in TOML text; a syntax error names its line.
    pub fn from_toml(text: &str) -> Result<SweepSpec> {
        Self::from_json(&toml_to_json(text)?)
    }

    /// Reads the TOML spec at `path` (at most [`MAX_SPEC_BYTES`]).
    pub fn read(path: &Path) -> Result<String> {
        sprout_files::read_to_string_capped(path, MAX_SPEC_BYTES).map_err(|e| {
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
        })
    }
}

/// TOML text as the JSON value of the same shape; a syntax error names its line.
pub(crate) fn toml_to_json(text: &str) -> Result<Json> {
    let value: toml::Value = toml::from_str(text).map_err(|e| toml_error(text, &e))?;
    Ok(serde_json::to_value(value)?)
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
