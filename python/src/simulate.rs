//! `sprout.simulate` and its result, `sprout.SimResult`: one run of `sprout sim`, through the
//! code the command line runs (`sprout_sim::sim_json`), so the figures are the same.

use std::path::PathBuf;

use numpy::IntoPyArray;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString};
use serde_json::Value;
use sprout_sim::scheme::Scheme;
use sprout_sim::sim::{parse_load, DirectionRun};
use sprout_sim::sim_json::{self, QueueKind, SimOptions};

use crate::convert::value_to_py;
use crate::errors::{bad_parameter, sim_to_py, sprout_error};
use crate::link_options;
use crate::trace::TraceArg;

/// The result of ``sprout.simulate``: ``sprout sim --json``'s figures for both directions.
///
/// ``str(result)`` is exactly what ``sprout sim --json`` prints; ``result.to_dict()`` (and
/// item access, ``result["downlink"]["metrics"]["throughput_kbps"]``) is its JSON as Python
/// objects; ``result.uplink`` / ``result.downlink`` are the directions' metrics dicts;
/// ``result.to_pandas()`` is a DataFrame with a row per direction. With ``records=True``,
/// ``result.records`` holds every packet that left the link queues as numpy arrays.
/// Metrics: throughput/goodput/capacity in kbit/s, delays in ms, utilization 0..1, window_s in s.
/// With a non-bulk ``app``, ``result.app`` holds each loaded direction's application-level
/// figures (offered/delivered kbit/s, delay p50/p95/p99 in ms, shares within 100/150/300 ms).
#[pyclass(name = "SimResult", module = "sprout", frozen)]
pub struct SimResult {
    json: Value,
    records: Option<Py<PyDict>>,
}

impl SimResult {
    fn direction(&self, key: &str) -> &Value {
        &self.json[key]
    }
}

#[pymethods]
impl SimResult {
    /// The whole result as ``sprout sim --json`` gives it: scheme, confidence, load,
    /// duration_s, skip_s, params, and ``uplink``/``downlink`` each with ``trace`` (name) and
    /// ``metrics`` (a dict of the paper's metrics). A new dict each call.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        value_to_py(py, &self.json)
    }

    /// The result as JSON text, exactly ``sprout sim --json``'s output (without the final
    /// newline).
    fn to_json(&self) -> PyResult<String> {
        serde_json::to_string_pretty(&self.json).map_err(|e| sprout_error(e.to_string()))
    }

    /// ``result[key]``: the JSON's top-level entries (``"uplink"``, ``"downlink"``,
    /// ``"scheme"``, ``"duration_s"``, ...).
    fn __getitem__<'py>(&self, py: Python<'py>, key: &str) -> PyResult<Bound<'py, PyAny>> {
        match self.json.get(key) {
            Some(v) => value_to_py(py, v),
            None => Err(pyo3::exceptions::PyKeyError::new_err(key.to_string())),
        }
    }

    fn __contains__(&self, key: &str) -> bool {
        self.json.get(key).is_some()
    }

    /// The top-level keys of ``to_dict()``.
    fn keys(&self) -> Vec<String> {
        self.json
            .as_object()
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default()
    }

    /// The scheme simulated (its key, e.g. ``"sprout"``).
    #[getter]
    fn scheme(&self) -> String {
        self.json["scheme"].as_str().unwrap_or_default().to_string()
    }

    /// The application's canonical spec (``"bulk"``, ``"constant:rate=500k,packet=1200"``, ...).
    #[getter]
    fn app_spec(&self) -> String {
        self.json["app"].as_str().unwrap_or_default().to_string()
    }

    /// Application-level figures per direction: ``{"uplink": dict or None, "downlink": ...}``,
    /// None for a bulk sender or a direction that carries no data. Each dict: offered_kbps,
    /// delivered_kbps, delivered_share, messages, delay_p50_ms, delay_p95_ms, delay_p99_ms
    /// (None when infinite: a message never delivered counts as infinitely late),
    /// within_100ms, within_150ms, within_300ms.
    #[getter]
    fn app<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let d = PyDict::new(py);
        for dir in ["uplink", "downlink"] {
            d.set_item(dir, value_to_py(py, &self.json[dir]["app"])?)?;
        }
        Ok(d.into_any())
    }

    /// Simulated seconds.
    #[getter]
    fn duration_s(&self) -> f64 {
        self.json["duration_s"].as_f64().unwrap_or(f64::NAN)
    }

    /// The uplink's metrics (a dict: throughput_kbps, p95_delay_ms, self_inflicted_ms, ...).
    #[getter]
    fn uplink<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        value_to_py(py, &self.direction("uplink")["metrics"])
    }

    /// The downlink's metrics (a dict, as ``uplink``).
    #[getter]
    fn downlink<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        value_to_py(py, &self.direction("downlink")["metrics"])
    }

    /// Per-packet records when ``simulate(..., records=True)``, else None: a dict of equal-
    /// length numpy arrays, uplink packets then downlink packets, each in arrival order:
    /// ``sent_us`` and ``arrived_us`` (uint64, µs since the start: sent by the endpoint, left
    /// the link queue), ``bytes`` (uint32, size on the link), ``app_bytes`` (uint32, payload),
    /// ``is_data`` (bool; false for heartbeats, acks and feedback), ``direction`` (str,
    /// ``"up"`` or ``"down"``). Packets dropped by the link are not in it.
    #[getter]
    fn records<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyDict>> {
        self.records.as_ref().map(|r| r.bind(py).clone())
    }

    /// A pandas DataFrame with a row per direction (``uplink``, ``downlink``): ``direction``,
    /// ``trace``, ``scheme``, ``confidence``, ``load``, ``duration_s``, ``skip_s``, then every
    /// metric; with a non-bulk app, ``app`` (its spec) and the application-level figures as
    /// ``app_<name>`` (NaN in a direction without data). Needs pandas.
    fn to_pandas<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let pd = py.import("pandas")?;
        let rows = PyList::empty(py);
        for dir in ["uplink", "downlink"] {
            let row = PyDict::new(py);
            row.set_item("direction", dir)?;
            row.set_item("trace", value_to_py(py, &self.json[dir]["trace"])?)?;
            for k in ["scheme", "confidence", "load", "duration_s", "skip_s"] {
                row.set_item(k, value_to_py(py, &self.json[k])?)?;
            }
            if let Some(m) = self.json[dir]["metrics"].as_object() {
                for (k, v) in m {
                    row.set_item(k, value_to_py(py, v)?)?;
                }
            }
            if self.app_spec() != "bulk" {
                row.set_item("app", self.app_spec())?;
                if let Some(m) = self.json[dir]["app"].as_object() {
                    for (k, v) in m {
                        row.set_item(format!("app_{k}"), value_to_py(py, v)?)?;
                    }
                }
            }
            rows.append(row)?;
        }
        pd.call_method1("DataFrame", (rows,))
    }

    /// The per-packet records (``records=True``) as a pandas DataFrame, a row per packet.
    /// SproutError when the simulation ran without ``records=True``.
    fn records_to_pandas<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let Some(r) = &self.records else {
            return Err(sprout_error(
                "no per-packet records: run sprout.simulate(..., records=True)",
            ));
        };
        py.import("pandas")?
            .call_method1("DataFrame", (r.bind(py),))
    }

    fn __str__(&self) -> PyResult<String> {
        self.to_json()
    }

    fn __repr__(&self) -> String {
        let dir = |key: &str| {
            let d = &self.json[key];
            let m = &d["metrics"];
            format!(
                "{} {}: {:.0} kbit/s, utilization {:.1}%, self-inflicted {:.0} ms",
                key,
                d["trace"].as_str().unwrap_or_default(),
                m["throughput_kbps"].as_f64().unwrap_or(f64::NAN),
                100.0 * m["utilization"].as_f64().unwrap_or(f64::NAN),
                m["self_inflicted_ms"].as_f64().unwrap_or(f64::NAN),
            )
        };
        format!(
            "<SimResult {} over {} s: {}; {}>",
            self.scheme(),
            self.duration_s(),
            dir("uplink"),
            dir("downlink")
        )
    }
}

/// `params` as `KEY=VALUE` strings: a dict (values: str as is, anything else as JSON, so
/// `{"model.sigma": 250, "window_skip_ticks": 0}` gives `model.sigma=250
/// window_skip_ticks=0`), or a sequence of `KEY=VALUE` strings, in order.
pub fn param_strings(params: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<String>> {
    let Some(p) = params else {
        return Ok(Vec::new());
    };
    if p.is_none() {
        return Ok(Vec::new());
    }
    if let Ok(d) = p.cast::<PyDict>() {
        let json = p.py().import("json")?;
        let mut out = Vec::with_capacity(d.len());
        for (k, v) in d.iter() {
            let key: String = k.extract()?;
            let value: String = if v.is_instance_of::<PyString>() {
                v.extract()?
            } else {
                json.call_method1("dumps", (v,))?.extract()?
            };
            out.push(format!("{key}={value}"));
        }
        return Ok(out);
    }
    if p.is_instance_of::<PyString>() {
        return Err(pyo3::exceptions::PyTypeError::new_err(
            "params must be a dict {key: value} or a list of \"KEY=VALUE\" strings, not a str",
        ));
    }
    p.extract::<Vec<String>>().map_err(|_| {
        pyo3::exceptions::PyTypeError::new_err(
            "params must be a dict {key: value} or a list of \"KEY=VALUE\" strings",
        )
    })
}

/// A scheme name (`sprout`, `sprout-ewma`, `cubic`, ...) as the command line takes it.
pub fn parse_scheme(s: &str) -> PyResult<Scheme> {
    s.parse::<Scheme>().map_err(bad_parameter)
}

fn parse_queue(s: Option<&str>) -> PyResult<Option<QueueKind>> {
    s.map(|q| q.parse::<QueueKind>().map_err(bad_parameter))
        .transpose()
}

/// The per-packet records of both directions as numpy arrays (see `SimResult.records`).
fn records<'py>(
    py: Python<'py>,
    up: &DirectionRun,
    down: &DirectionRun,
) -> PyResult<Bound<'py, PyDict>> {
    let all = || up.arrivals.iter().chain(down.arrivals.iter());
    let d = PyDict::new(py);
    d.set_item(
        "sent_us",
        all()
            .map(|a| a.sent.as_micros())
            .collect::<Vec<u64>>()
            .into_pyarray(py),
    )?;
    d.set_item(
        "arrived_us",
        all()
            .map(|a| a.arrived.as_micros())
            .collect::<Vec<u64>>()
            .into_pyarray(py),
    )?;
    d.set_item(
        "bytes",
        all()
            .map(|a| a.bytes)
            .collect::<Vec<u32>>()
            .into_pyarray(py),
    )?;
    d.set_item(
        "app_bytes",
        all()
            .map(|a| a.app_bytes)
            .collect::<Vec<u32>>()
            .into_pyarray(py),
    )?;
    d.set_item(
        "is_data",
        all()
            .map(|a| a.is_data)
            .collect::<Vec<bool>>()
            .into_pyarray(py),
    )?;
    let np = py.import("numpy")?;
    let direction = np.call_method1(
        "repeat",
        (
            vec!["up", "down"],
            vec![up.arrivals.len(), down.arrivals.len()],
        ),
    )?;
    d.set_item("direction", direction)?;
    Ok(d)
}

/// Simulates one scheme over an uplink and a downlink trace, as ``sprout sim`` does, and
/// returns a ``SimResult`` whose figures equal ``sprout sim --json``'s on the same inputs.
///
/// ``uplink``, ``downlink``: ``sprout.Trace`` objects or paths of mahimahi trace files.
/// Every option of ``sprout sim``, with its default:
///
/// - ``scheme``: sprout, sprout-ewma, cubic, reno, vegas, ledbat, bbr, compound, cubic-codel,
///   copa (delta 0.5), copa-0.1 (delta 0.1, as Pantheon), direct (no congestion control;
///   with a constant or video ``app``), or gcc (Google Congestion Control; with a non-bulk
///   ``app``, ``"adaptive"`` sizing each frame by its target rate).
/// - ``confidence``: forecast confidence, strictly between 0 and 1 (Sprout schemes) [0.95].
/// - ``params``: changes to Sprout's parameters (``sprout params`` lists them), a dict
///   ``{"window_skip_ticks": 0, "model.sigma": 250}`` or a list of ``"KEY=VALUE"`` strings
///   (``--param``) [none].
/// - ``seed``: seed for anything random (loss; when not 0, the endpoints' start times) [0].
/// - ``host_jitter_ms``: Sprout hosts' timer wake-up latency, uniform 0..this ms [1.0].
/// - ``loss``: Bernoulli loss probability at each direction's queue, 0..1 [0.0].
/// - ``queue``: ``"infinite"``, ``"codel"``, ``"pie"`` or ``"fq-codel"`` for both directions
///   (cubic-codel always CoDel) [``"infinite"``]; ``uplink_queue``, ``downlink_queue``
///   override it per direction.
/// - ``uplink_loss``, ``downlink_loss``: per-direction loss, overriding ``loss``.
/// - ``duration``: simulated seconds; longer than a trace loops it [the shorter trace's length].
/// - ``skip``: seconds skipped before measuring [60.0, the paper's].
/// - ``load``: which directions carry data, ``"both"``, ``"up"`` or ``"down"`` [``"both"``].
/// - ``app``: what the application offers in each loaded direction (``--app``): ``"bulk"``,
///   ``"constant:rate=500k[,packet=1200]"``, ``"video:rate=1M[,fps=30][,key=3][,keyratio=5]"``
///   or ``"adaptive[:fps=30][,min=100k][,max=20M]"`` [``"bulk"``]; a non-bulk app adds
///   application-level delay (``SimResult.app``).
/// - ``cross``: cross traffic, a bulk TCP transfer with this congestion control (``"cubic"``,
///   ``"bbr"``, ...) beside the scheme's flow in each loaded direction, sharing its queues (a
///   flow of its own in an ``"fq-codel"`` queue) and counted in no metric (``--cross``) [None].
/// - ``ecn``: ECN (``--ecn``): CoDel, FQ-CoDel and PIE mark ECN-capable packets CE instead
///   of dropping them (PIE while its drop probability is at most 10%), and the TCP peers
///   negotiate ECN (RFC 3168); Sprout's datagrams are not ECN-capable. The marks are in
///   ``result["downlink"]["marks"]`` (``aqm``, ``step``) [False].
/// - The link's shaping, ``sprout sim``'s flags of the same names with ``_`` for ``-`` and
///   their spellings, each for both directions [none]: ``buffer`` (a finite queue: ``"100pkt"``,
///   ``"200kB"`` or ``"50ms"`` at the trace's mean rate, drop-tail, or drop-head with
///   ``",head"``); ``gemodel`` (Gilbert-Elliott bursty loss instead of ``loss``, netem's
///   ``"P,R[,1-H[,1-K]]"``, probabilities or percentages: ``"1%,30%"``); ``jitter`` (the delay
///   uniform within +/- this: ``"5ms"``, or ``"5ms,reorder"`` letting packets overtake);
///   ``delay_trace`` (a file of delays over time, a str or path, replacing the fixed 20 ms);
///   ``l4s_step`` (ECT(1) packets that waited longer than this are marked CE: ``"1ms"``);
///   ``codel_target``, ``codel_interval`` (times, for codel and fq-codel queues);
///   ``fq_quantum`` (bytes), ``fq_flows`` (1 to 65536), ints, for fq-codel queues. Each of
///   ``buffer``, ``gemodel``, ``jitter`` and ``delay_trace`` also per direction
///   (``uplink_buffer``, ``downlink_jitter``, ...), overriding it. A bad value is a
///   BadParameterError naming the option; a delay trace that is missing a
///   SproutFileNotFoundError, one that does not parse a BadTraceError.
/// - ``uplink_log``, ``downlink_log``: write each direction's mahimahi mm-link log (both or
///   neither).
/// - ``records``: also return every packet's send and arrival times, bytes and direction as
///   numpy arrays (``SimResult.records``) [False].
///
/// The simulation runs without the GIL. Errors, each a SproutError (a ValueError):
/// BadParameterError for bad options or an unknown scheme, BadTraceError for a trace that does
/// not parse, SproutFileNotFoundError (a FileNotFoundError) / SproutOSError (an OSError) for
/// files; the messages are the command line's.
#[pyfunction]
#[pyo3(signature = (scheme, uplink, downlink, *, confidence = None, params = None, seed = 0,
    host_jitter_ms = 1.0, loss = 0.0, queue = "infinite", uplink_queue = None,
    downlink_queue = None, uplink_loss = None, downlink_loss = None, duration = None,
    skip = 60.0, load = "both", app = "bulk", cross = None, ecn = false, uplink_log = None,
    downlink_log = None, records = false, **link))]
#[allow(clippy::too_many_arguments)]
pub fn simulate(
    py: Python<'_>,
    scheme: &str,
    uplink: &Bound<'_, PyAny>,
    downlink: &Bound<'_, PyAny>,
    confidence: Option<f64>,
    params: Option<&Bound<'_, PyAny>>,
    seed: u64,
    host_jitter_ms: f64,
    loss: f64,
    queue: &str,
    uplink_queue: Option<&str>,
    downlink_queue: Option<&str>,
    uplink_loss: Option<f64>,
    downlink_loss: Option<f64>,
    duration: Option<f64>,
    skip: f64,
    load: &str,
    app: &str,
    cross: Option<&str>,
    ecn: bool,
    uplink_log: Option<PathBuf>,
    downlink_log: Option<PathBuf>,
    records: bool,
    link: Option<&Bound<'_, PyDict>>,
) -> PyResult<SimResult> {
    let mut shape = link_options::shape_options("simulate", link)?;
    shape.ecn |= ecn;
    // As the command line: the options' values are read first, then the traces, then the
    // options are checked together.
    let opts = SimOptions {
        scheme: parse_scheme(scheme)?,
        confidence,
        params: param_strings(params)?,
        seed,
        host_jitter_ms,
        loss,
        queue: parse_queue(Some(queue))?.unwrap_or(QueueKind::Infinite),
        uplink_queue: parse_queue(uplink_queue)?,
        downlink_queue: parse_queue(downlink_queue)?,
        uplink_loss,
        downlink_loss,
        duration_s: duration,
        skip_s: skip,
        load: parse_load(load).map_err(bad_parameter)?,
        app: sprout_sim::App::parse(app).map_err(sim_to_py)?,
        shape: link_options::link_shape(&shape)?,
        cross: cross
            .map(|c| {
                c.parse::<sprout_sim::sim_json::CcKind>()
                    .map_err(bad_parameter)
            })
            .transpose()?,
    };
    let logs = match (uplink_log, downlink_log) {
        (Some(u), Some(d)) => Some((u, d)),
        (None, None) => None,
        _ => {
            return Err(bad_parameter(
                "uplink_log and downlink_log go together: give both or neither",
            ))
        }
    };
    let up = TraceArg::extract(uplink, "uplink")?;
    let down = TraceArg::extract(downlink, "downlink")?;
    let (json, out) = py
        .detach(|| -> Result<_, sprout_sim::SimError> {
            let (up, down) = (up.load()?, down.load()?);
            let cfg = opts.config()?;
            let out = sim_json::run(
                up,
                down,
                &cfg,
                logs.as_ref().map(|(u, d)| (u.as_path(), d.as_path())),
            )?;
            Ok((sim_json::to_json(&opts, &cfg, &out), out))
        })
        .map_err(sim_to_py)?;
    let records = if records {
        Some(self::records(py, &out.uplink, &out.downlink)?.unbind())
    } else {
        None
    };
    Ok(SimResult { json, records })
}

/// Adds `simulate` and `SimResult` to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<SimResult>()?;
    m.add_function(wrap_pyfunction!(simulate, m)?)
}
