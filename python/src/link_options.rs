//! The link's shaping options as keyword arguments of `sprout.simulate` and `sprout.Env`
//! (`buffer="100pkt"`, `gemodel="1%,30%"`, `jitter="5ms,reorder"`, `delay_trace=PATH`,
//! `l4s_step="1ms"`, ...): each read by its name into `sprout_link::ShapeOptions`, the type the
//! command line fills, with the command line's spellings, so that a value means what the same
//! flag of `sprout sim` means.

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyInt, PyString};
use sprout_link::{LinkConfig, LinkShape, ShapeOptionError, ShapeOptions, SHAPE_OPTIONS};

use crate::errors::{bad_parameter, Kind};

/// What an option takes, for the message when it is given something else.
fn expected(name: &str) -> &'static str {
    match name {
        "ecn" => "True or False",
        "fq_quantum" | "fq_flows" => "an int",
        n if n.ends_with("delay_trace") => "a path (str or os.PathLike)",
        n if n.ends_with("buffer") => "a str such as '100pkt', '200kB' or '50ms,head'",
        n if n.ends_with("gemodel") => "a str 'P,R[,1-H[,1-K]]' such as '1%,30%'",
        n if n.ends_with("jitter") => "a str such as '5ms' or '5ms,reorder'",
        _ => "a str time such as '5ms', '0.1s' or '500us'",
    }
}

/// The text of one option's value, as the command line would spell it; a value of the wrong
/// type is a `BadParameterError` naming the option.
fn value_text(name: &str, v: &Bound<'_, PyAny>) -> PyResult<String> {
    let wrong = || {
        bad_parameter(format!(
            "{name}: expected {}, got {}",
            expected(name),
            v.get_type()
                .name()
                .map(|n| n.to_string())
                .unwrap_or_default()
        ))
    };
    let is_bool = v.is_instance_of::<PyBool>();
    match name {
        "ecn" if is_bool => Ok(v.extract::<bool>()?.to_string()),
        "fq_quantum" | "fq_flows" if v.is_instance_of::<PyInt>() && !is_bool => {
            Ok(v.str()?.to_string())
        }
        "ecn" | "fq_quantum" | "fq_flows" => Err(wrong()),
        n if n.ends_with("delay_trace") => {
            let path = v
                .py()
                .import("os")?
                .call_method1("fspath", (v,))
                .map_err(|_| wrong())?;
            path.extract::<String>().map_err(|_| wrong())
        }
        _ if v.is_instance_of::<PyString>() => v.extract::<String>(),
        _ => Err(wrong()),
    }
}

/// The shaping options given as keyword arguments (`None` values left out) to `function`; an
/// unknown keyword is a TypeError, as Python's own, and a bad value a `BadParameterError`
/// naming the option.
pub fn shape_options(function: &str, link: Option<&Bound<'_, PyDict>>) -> PyResult<ShapeOptions> {
    let mut options = ShapeOptions::default();
    let Some(link) = link else {
        return Ok(options);
    };
    for (k, v) in link.iter() {
        let name: String = k.extract()?;
        if !SHAPE_OPTIONS.contains(&name.as_str()) {
            return Err(pyo3::exceptions::PyTypeError::new_err(format!(
                "{function}() got an unexpected keyword argument '{name}'"
            )));
        }
        if v.is_none() {
            continue;
        }
        let text = value_text(&name, &v)?;
        options.set(&name, &text).map_err(shape_to_py)?;
    }
    Ok(options)
}

/// The options as the link model takes them, delay traces read.
pub fn link_shape(options: &ShapeOptions) -> PyResult<LinkShape> {
    options.shape().map_err(shape_to_py)
}

/// Applies the shaping options given as keyword arguments of `sprout.Env` to its one link
/// configuration, both directions' (its queue already set); an option of one direction only
/// (`uplink_buffer`, ...) is a `BadParameterError`, as is CoDel's parameter without its queue.
pub fn shape_both_ways(link: Option<&Bound<'_, PyDict>>, cfg: &mut LinkConfig) -> PyResult<()> {
    let options = shape_options("Env", link)?;
    if let Some(one_way) = options.per_direction().first() {
        return Err(bad_parameter(format!(
            "{one_way}: the environment has one link configuration for both directions; give \
             {} instead",
            one_way
                .trim_start_matches("uplink_")
                .trim_start_matches("downlink_")
        )));
    }
    let shape = link_shape(&options)?;
    shape.both.apply(cfg);
    shape.validate(cfg, cfg).map_err(bad_parameter)
}

/// The Python exception for a shaping option's error: a delay trace's file not found or not
/// readable (SproutFileNotFoundError, SproutOSError), a delay trace that does not parse
/// (BadTraceError), else a BadParameterError.
fn shape_to_py(e: ShapeOptionError) -> PyErr {
    let kind = match (&e, e.io_error()) {
        (_, Some(io)) => Kind::of_io(io),
        (ShapeOptionError::DelayTrace(_), None) => Kind::BadTrace,
        _ => Kind::BadParameter,
    };
    kind.err(sprout_sim::error::chain_message(&e))
}
