//! The link's shaping options by name, as every front end takes them: `sprout sim` and `sprout
//! link` (typed by clap), the Python package (`sprout.simulate(buffer="100pkt", ...)`, the
//! Gymnasium environment) and the sweeps (`[sim] l4s_step = ["1ms", "5ms"]`) set
//! [`ShapeOptions`] by the command line's names (with `_`) and its spellings
//! ([`ShapeOptions::set`]), and one function turns them into the link's [`LinkShape`],
//! delay traces loaded ([`ShapeOptions::shape`]).

use std::path::PathBuf;
use std::sync::Arc;

use sprout_core::time::Duration;

use crate::buffer::Buffer;
use crate::delay::{DelayTrace, DelayTraceError, Jitter};
use crate::loss::GilbertElliott;
use crate::shape::{DirectionShape, LinkShape};

/// Every shaping option's name, as `sprout sim`'s flag without its `--` and with `_` for `-`.
pub const SHAPE_OPTIONS: [&str; 18] = [
    "buffer",
    "uplink_buffer",
    "downlink_buffer",
    "codel_target",
    "codel_interval",
    "fq_quantum",
    "fq_flows",
    "gemodel",
    "uplink_gemodel",
    "downlink_gemodel",
    "delay_trace",
    "uplink_delay_trace",
    "downlink_delay_trace",
    "jitter",
    "uplink_jitter",
    "downlink_jitter",
    "ecn",
    "l4s_step",
];

/// The largest FQ-CoDel flow count (Linux's `flows` limit).
pub const MAX_FQ_FLOWS: u32 = 65536;

/// The shaping options as given: `None` (and `ecn` false) leaves the link as it is. Delay
/// traces are paths, read by [`shape`](ShapeOptions::shape).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ShapeOptions {
    /// Both directions' buffer.
    pub buffer: Option<Buffer>,
    /// The uplink's buffer, overriding `buffer`.
    pub uplink_buffer: Option<Buffer>,
    /// The downlink's buffer, overriding `buffer`.
    pub downlink_buffer: Option<Buffer>,
    /// CoDel's target for every CoDel queue and FQ-CoDel flow.
    pub codel_target: Option<Duration>,
    /// CoDel's interval for every CoDel queue and FQ-CoDel flow.
    pub codel_interval: Option<Duration>,
    /// FQ-CoDel's quantum, bytes (at least 1).
    pub fq_quantum: Option<u32>,
    /// FQ-CoDel's number of flow queues (1 to [`MAX_FQ_FLOWS`]).
    pub fq_flows: Option<u32>,
    /// Both directions' Gilbert-Elliott loss.
    pub gemodel: Option<GilbertElliott>,
    /// The uplink's Gilbert-Elliott loss, overriding `gemodel`.
    pub uplink_gemodel: Option<GilbertElliott>,
    /// The downlink's Gilbert-Elliott loss, overriding `gemodel`.
    pub downlink_gemodel: Option<GilbertElliott>,
    /// Both directions' delay trace file.
    pub delay_trace: Option<PathBuf>,
    /// The uplink's delay trace file, overriding `delay_trace`.
    pub uplink_delay_trace: Option<PathBuf>,
    /// The downlink's delay trace file, overriding `delay_trace`.
    pub downlink_delay_trace: Option<PathBuf>,
    /// Both directions' jitter.
    pub jitter: Option<Jitter>,
    /// The uplink's jitter, overriding `jitter`.
    pub uplink_jitter: Option<Jitter>,
    /// The downlink's jitter, overriding `jitter`.
    pub downlink_jitter: Option<Jitter>,
    /// ECN marking by the AQMs of both directions.
    pub ecn: bool,
    /// The L4S step threshold of both directions.
    pub l4s_step: Option<Duration>,
}

/// A shaping option that is not one, or whose value is not what its name takes.
#[derive(Debug, thiserror::Error)]
pub enum ShapeOptionError {
    /// No option has this name.
    #[error("unknown link option '{0}' (known: {known})", known = SHAPE_OPTIONS.join(", "))]
    Unknown(String),
    /// The value does not read as the option's type; `reason` says what it takes.
    #[error("{option}: {reason}")]
    BadValue {
        /// The option's name.
        option: &'static str,
        /// What is wrong, with what the option takes.
        reason: String,
    },
    /// A delay trace could not be read (its message names the file).
    #[error(transparent)]
    DelayTrace(#[from] DelayTraceError),
}

impl ShapeOptionError {
    /// The I/O error of a delay trace that could not be read, if that is what this is (a
    /// front end tells a missing file from a bad value by it).
    pub fn io_error(&self) -> Option<&std::io::Error> {
        match self {
            ShapeOptionError::DelayTrace(DelayTraceError::Read(sprout_files::ReadError::Io {
                source,
                ..
            })) => Some(source),
            _ => None,
        }
    }
}

/// A time that is not a positive one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("expected a positive time such as 5ms, 0.1s or 500us, got '{0}'")]
pub struct BadTime(pub String);

/// A positive time as the command line writes it (`5ms`, `0.1s`, `500us`; see
/// [`crate::units::parse_time`]).
pub fn parse_positive_time(s: &str) -> Result<Duration, BadTime> {
    crate::units::parse_time(s)
        .filter(|d| *d > Duration::ZERO)
        .ok_or_else(|| BadTime(sprout_files::excerpt(s)))
}

/// A whole number from 1 to `max` (`what` names its unit in the message).
fn parse_count(s: &str, max: u32, what: &str) -> Result<u32, String> {
    s.trim()
        .parse::<u32>()
        .ok()
        .filter(|n| (1..=max).contains(n))
        .ok_or_else(|| {
            format!(
                "expected a whole number of {what} from 1 to {max}, got '{}'",
                sprout_files::excerpt(s)
            )
        })
}

impl ShapeOptions {
    /// Sets the option `name` (one of [`SHAPE_OPTIONS`]) from its command-line spelling:
    /// `100pkt`, `1%,30%`, `5ms,reorder`, a path, `true`/`false` for `ecn`. The error names
    /// the option.
    pub fn set(&mut self, name: &str, value: &str) -> Result<(), ShapeOptionError> {
        let Some(&option) = SHAPE_OPTIONS.iter().find(|o| **o == name) else {
            return Err(ShapeOptionError::Unknown(sprout_files::excerpt(name)));
        };
        let bad = |reason: String| ShapeOptionError::BadValue { option, reason };
        let buffer = || value.parse::<Buffer>().map_err(|e| bad(e.to_string()));
        let ge = || {
            value
                .parse::<GilbertElliott>()
                .map_err(|e| bad(e.to_string()))
        };
        let jitter = || value.parse::<Jitter>().map_err(|e| bad(e.to_string()));
        let time = || parse_positive_time(value).map_err(|e| bad(e.to_string()));
        let path = || {
            if value.trim().is_empty() {
                Err(bad("expected a file's path, got ''".into()))
            } else {
                Ok(PathBuf::from(value))
            }
        };
        match option {
            "buffer" => self.buffer = Some(buffer()?),
            "uplink_buffer" => self.uplink_buffer = Some(buffer()?),
            "downlink_buffer" => self.downlink_buffer = Some(buffer()?),
            "codel_target" => self.codel_target = Some(time()?),
            "codel_interval" => self.codel_interval = Some(time()?),
            "fq_quantum" => {
                self.fq_quantum = Some(parse_count(value, u32::MAX, "bytes").map_err(bad)?)
            }
            "fq_flows" => {
                self.fq_flows = Some(parse_count(value, MAX_FQ_FLOWS, "flows").map_err(bad)?)
            }
            "gemodel" => self.gemodel = Some(ge()?),
            "uplink_gemodel" => self.uplink_gemodel = Some(ge()?),
            "downlink_gemodel" => self.downlink_gemodel = Some(ge()?),
            "delay_trace" => self.delay_trace = Some(path()?),
            "uplink_delay_trace" => self.uplink_delay_trace = Some(path()?),
            "downlink_delay_trace" => self.downlink_delay_trace = Some(path()?),
            "jitter" => self.jitter = Some(jitter()?),
            "uplink_jitter" => self.uplink_jitter = Some(jitter()?),
            "downlink_jitter" => self.downlink_jitter = Some(jitter()?),
            "ecn" => {
                self.ecn = match value.trim() {
                    "true" => true,
                    "false" => false,
                    other => {
                        return Err(bad(format!(
                            "expected true or false, got '{}'",
                            sprout_files::excerpt(other)
                        )))
                    }
                }
            }
            _ => self.l4s_step = Some(time()?),
        }
        Ok(())
    }

    /// The options as the link model takes them, delay traces loaded (each file once).
    pub fn shape(&self) -> Result<LinkShape, ShapeOptionError> {
        let mut loaded: Vec<(PathBuf, Arc<DelayTrace>)> = Vec::new();
        let mut load = |p: &Option<PathBuf>| -> Result<Option<Arc<DelayTrace>>, ShapeOptionError> {
            let Some(p) = p else { return Ok(None) };
            if let Some((_, t)) = loaded.iter().find(|(q, _)| q == p) {
                return Ok(Some(t.clone()));
            }
            let t = Arc::new(DelayTrace::load(p)?);
            loaded.push((p.clone(), t.clone()));
            Ok(Some(t))
        };
        let both = DirectionShape {
            buffer: self.buffer,
            codel_target: self.codel_target,
            codel_interval: self.codel_interval,
            fq_quantum: self.fq_quantum,
            fq_flows: self.fq_flows,
            gilbert_elliott: self.gemodel,
            delay_trace: load(&self.delay_trace)?,
            jitter: self.jitter,
            ecn: self.ecn.then_some(true),
            l4s_step: self.l4s_step,
        };
        let uplink = DirectionShape {
            buffer: self.uplink_buffer,
            gilbert_elliott: self.uplink_gemodel,
            delay_trace: load(&self.uplink_delay_trace)?,
            jitter: self.uplink_jitter,
            ..DirectionShape::default()
        };
        let downlink = DirectionShape {
            buffer: self.downlink_buffer,
            gilbert_elliott: self.downlink_gemodel,
            delay_trace: load(&self.downlink_delay_trace)?,
            jitter: self.downlink_jitter,
            ..DirectionShape::default()
        };
        Ok(LinkShape {
            both,
            uplink,
            downlink,
        })
    }

    /// The names of the options given that set one direction only (`uplink_*`,
    /// `downlink_*`), for a front end with a single link configuration that refuses them.
    pub fn per_direction(&self) -> Vec<&'static str> {
        let given = [
            ("uplink_buffer", self.uplink_buffer.is_some()),
            ("downlink_buffer", self.downlink_buffer.is_some()),
            ("uplink_gemodel", self.uplink_gemodel.is_some()),
            ("downlink_gemodel", self.downlink_gemodel.is_some()),
            ("uplink_delay_trace", self.uplink_delay_trace.is_some()),
            ("downlink_delay_trace", self.downlink_delay_trace.is_some()),
            ("uplink_jitter", self.uplink_jitter.is_some()),
            ("downlink_jitter", self.downlink_jitter.is_some()),
        ];
        given.iter().filter(|(_, g)| *g).map(|(n, _)| *n).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_set_by_name_reach_their_directions() {
        let mut o = ShapeOptions::default();
        o.set("buffer", "100pkt").unwrap();
        o.set("uplink_buffer", "50ms,head").unwrap();
        o.set("gemodel", "1%,30%").unwrap();
        o.set("jitter", "5ms,reorder").unwrap();
        o.set("l4s_step", "1ms").unwrap();
        o.set("ecn", "true").unwrap();
        o.set("fq_flows", "16").unwrap();
        let s = o.shape().unwrap();
        assert_eq!(s.uplink().buffer, Some("50ms,head".parse().unwrap()));
        assert_eq!(s.downlink().buffer, Some("100pkt".parse().unwrap()));
        assert_eq!(s.downlink().gilbert_elliott.unwrap().p, 0.01);
        assert!(s.downlink().jitter.unwrap().reorder);
        assert_eq!(s.uplink().l4s_step, Some(Duration::from_millis(1)));
        assert_eq!(s.uplink().ecn, Some(true));
        assert_eq!(s.both.fq_flows, Some(16));
        assert_eq!(o.per_direction(), vec!["uplink_buffer"]);
    }

    #[test]
    fn bad_values_and_names_are_refused_by_name() {
        let mut o = ShapeOptions::default();
        for (name, value) in [
            ("buffer", "lots"),
            ("l4s_step", "0ms"),
            ("l4s_step", "5"),
            ("gemodel", "2,3"),
            ("jitter", "5ms,shuffle"),
            ("fq_flows", "0"),
            ("fq_flows", "70000"),
            ("fq_quantum", "-1"),
            ("ecn", "yes"),
            ("delay_trace", " "),
        ] {
            let e = o.set(name, value).unwrap_err().to_string();
            assert!(e.starts_with(&format!("{name}: ")), "{e}");
        }
        let e = o.set("bufer", "1pkt").unwrap_err().to_string();
        assert!(e.contains("unknown link option 'bufer'"), "{e}");
        assert_eq!(o, ShapeOptions::default());
    }

    #[test]
    fn a_missing_delay_trace_is_an_error_naming_it() {
        let mut o = ShapeOptions::default();
        o.set("delay_trace", "/nonexistent/delays.txt").unwrap();
        let e = o.shape().unwrap_err();
        assert_eq!(
            e.io_error().map(|io| io.kind()),
            Some(std::io::ErrorKind::NotFound)
        );
        assert!(e.to_string().contains("/nonexistent/delays.txt"), "{e}");
    }
}
