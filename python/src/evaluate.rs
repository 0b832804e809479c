//! `sprout.evaluate` (the paper's evaluation, `sprout eval`), `sprout.params` (`sprout
//! params`) and `sprout.SCHEMES`.

use std::path::PathBuf;

use pyo3::prelude::*;
use pyo3::types::PyString;
use sprout_eval::eval::{self, EvalOptions, Experiment, Scheme};
use sprout_sim::duration::seconds_to_us;
use sprout_sim::overrides;

use crate::convert::value_to_py;
use crate::errors::{bad_parameter, eval_to_py, sim_to_py, sprout_error};
use crate::simulate::{param_strings, parse_scheme};

/// A list argument: None, a comma-separated string, or a sequence of strings.
fn string_list(arg: Option<&Bound<'_, PyAny>>, what: &str) -> PyResult<Option<Vec<String>>> {
    let Some(a) = arg else { return Ok(None) };
    if a.is_none() {
        return Ok(None);
    }
    if a.is_instance_of::<PyString>() {
        let s: String = a.extract()?;
        return Ok(Some(s.split(',').map(|x| x.trim().to_string()).collect()));
    }
    a.extract::<Vec<String>>().map(Some).map_err(|_| {
        pyo3::exceptions::PyTypeError::new_err(format!(
            "{what} must be a list of strings or a comma-separated string"
        ))
    })
}

/// Runs the paper's evaluation, as ``sprout eval`` does, writes its outputs (results.csv,
/// results.json, report.md, tables and SVG charts) into ``out``, and returns results.csv's
/// table as a pandas DataFrame (a row per experiment, link, direction and scheme run; its
/// ``attrs["summary"]`` holds the summary ``sprout eval`` prints).
///
/// - ``traces``: folder of NAME.up / NAME.down traces [the first of ``$SPROUT_TRACES``,
///   ./traces and ../shared/traces that holds traces, else the built-in synthetic cellular
///   link: ``sprout.trace_dirs()``].
/// - ``schemes``: list (or comma-separated string) of schemes of fig7 (fig8, summary) and
///   sensitivity [all ten]; on request also copa, copa-0.1 and gcc (which runs the adaptive
///   video source, a video call, not a bulk transfer).
/// - ``experiments``: list (or comma-separated string) of fig7, fig8, summary, confidence,
///   loss, distributions, sensitivity, model, or all [fig7].
/// - ``out``: output folder [``"results"`` in the current folder]; ``skip``: seconds skipped before measuring [60.0];
///   ``jobs``: parallel simulations [one per core]; ``params``: changes to both Sprout schemes'
///   parameters, as in ``simulate`` [none]; ``progress``: show the progress bar [False].
///
/// Runs without the GIL. Errors as ``simulate``'s, with the command line's messages.
#[pyfunction]
#[pyo3(signature = (traces = None, schemes = None, experiments = None, out = None,
    skip = 60.0, jobs = None, params = None, progress = false))]
#[allow(clippy::too_many_arguments)]
pub fn evaluate<'py>(
    py: Python<'py>,
    traces: Option<PathBuf>,
    schemes: Option<&Bound<'py, PyAny>>,
    experiments: Option<&Bound<'py, PyAny>>,
    out: Option<PathBuf>,
    skip: f64,
    jobs: Option<usize>,
    params: Option<&Bound<'py, PyAny>>,
    progress: bool,
) -> PyResult<Bound<'py, PyAny>> {
    let schemes = match string_list(schemes, "schemes")? {
        Some(list) => list
            .iter()
            .map(|s| parse_scheme(s))
            .collect::<PyResult<Vec<Scheme>>>()?,
        None => Scheme::ALL.to_vec(),
    };
    let experiments = match string_list(experiments, "experiments")? {
        Some(list) if !list.is_empty() => Experiment::parse_list(&list.join(","))
            .map_err(|e| bad_parameter(format!("--experiments: {e}")))?,
        _ => vec![Experiment::Fig7],
    };
    let out = out.unwrap_or_else(|| PathBuf::from("results"));
    let opts = EvalOptions {
        traces,
        schemes,
        experiments,
        out: out.clone(),
        skip_us: seconds_to_us(skip, "skip").map_err(sim_to_py)?,
        jobs,
        progress,
        protocol_params: param_strings(params)?,
    };
    // A missing traces folder is EvalError::TraceFolder, whose I/O error makes it a
    // SproutFileNotFoundError.
    let summary = py.detach(|| eval::run(&opts)).map_err(eval_to_py)?;
    let df = py
        .import("pandas")?
        .call_method1("read_csv", (out.join("results.csv"),))?;
    df.getattr("attrs")?.set_item("summary", summary)?;
    Ok(df)
}

/// A Sprout scheme's configuration as a dict, every parameter ``params`` can change with its
/// value (``sprout params``): ``scheme`` is sprout or sprout-ewma; ``params`` (a dict or
/// ``"KEY=VALUE"`` strings) are applied first. SproutError for other schemes or bad params.
#[pyfunction]
#[pyo3(signature = (scheme = "sprout", params = None))]
pub fn params<'py>(
    py: Python<'py>,
    scheme: &str,
    params: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    let scheme = parse_scheme(scheme)?;
    if !scheme.is_sprout() {
        return Err(bad_parameter(
            "`sprout params` describes sprout and sprout-ewma; other schemes have no Sprout parameters",
        ));
    }
    let mut cfg = scheme.protocol_config();
    overrides::apply(&mut cfg, &param_strings(params)?).map_err(sim_to_py)?;
    let v = serde_json::to_value(&cfg).map_err(|e| sprout_error(e.to_string()))?;
    value_to_py(py, &v)
}

/// Adds `evaluate`, `params`, `SCHEMES` and `MODERN_SCHEMES` to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(evaluate, m)?)?;
    m.add_function(wrap_pyfunction!(params, m)?)?;
    let schemes: Vec<&str> = Scheme::ALL.iter().map(|s| s.key()).collect();
    m.add("SCHEMES", schemes)?;
    let modern: Vec<&str> = Scheme::MODERN.iter().map(|s| s.key()).collect();
    m.add("MODERN_SCHEMES", modern)
}
