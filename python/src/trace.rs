//! `sprout.Trace`: a mahimahi delivery-opportunity trace (one 1500-byte opportunity per line,
//! times in milliseconds), loaded from a file, built from times, or synthesised.

use std::path::PathBuf;
use std::sync::Arc;

use numpy::{IntoPyArray, PyArray1};
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use sprout_link::{constant_rate_trace, SyntheticLink, Trace};
use sprout_sim::sim_json::load_trace;
use sprout_sim::SimError;

use crate::errors::{bad_parameter, sim_to_py, trace_to_py};

/// Most intervals `Trace.capacity` returns (10 million, as `sprout traces stats` allows).
const MAX_INTERVALS: u64 = 10_000_000;

/// A mahimahi trace: the times (ms since the start) of its 1500-byte delivery opportunities.
///
/// Make one with ``Trace.load(path)``, ``Trace.constant(mbit, seconds)``,
/// ``Trace.synthetic(seed=..., seconds=...)`` (the paper's stochastic link model) or
/// ``Trace.from_opportunities(times_ms, name)``. ``sprout.simulate`` takes a Trace wherever it
/// takes a trace file. ``len(trace)`` is its number of opportunities, ``duration_s`` its length
/// (the last timestamp, mahimahi's loop period). Traces are immutable and picklable.
#[pyclass(name = "Trace", module = "sprout", frozen)]
#[derive(Clone)]
pub struct PyTrace {
    /// The trace.
    pub inner: Arc<Trace>,
}

fn trace_or_err(r: Result<Trace, sprout_link::TraceError>) -> PyResult<PyTrace> {
    r.map(|t| PyTrace { inner: Arc::new(t) })
        .map_err(trace_to_py)
}

#[pymethods]
impl PyTrace {
    /// Loads a mahimahi trace file; its name is the file name (e.g. ``Verizon-LTE-short.up``).
    ///
    /// Raises SproutFileNotFoundError (a FileNotFoundError) or SproutOSError (an OSError)
    /// when the file cannot be read, BadTraceError when a line is not a non-negative integer or
    /// times go backwards; the messages are ``sprout sim``'s ("cannot read trace PATH: ...",
    /// "PATH:LINE: ...").
    #[staticmethod]
    fn load(py: Python<'_>, path: PathBuf) -> PyResult<PyTrace> {
        py.detach(|| load_trace(&path))
            .map(|t| PyTrace { inner: Arc::new(t) })
            .map_err(sim_to_py)
    }

    /// A constant-rate trace: ``mbit`` Mbit/s (12 Mbit/s = 1000 opportunities per second) for
    /// ``seconds`` seconds, opportunities evenly spaced with the last one at the end (so it
    /// loops seamlessly), as ``sprout traces synth --kind constant`` makes it.
    /// ``name`` defaults to ``constant-{mbit}mbit``. SproutError when that makes no
    /// opportunity (rate or length zero or negative).
    #[staticmethod]
    #[pyo3(signature = (mbit, seconds, name = None))]
    fn constant(mbit: f64, seconds: f64, name: Option<String>) -> PyResult<PyTrace> {
        let name = name.unwrap_or_else(|| format!("constant-{mbit}mbit"));
        trace_or_err(constant_rate_trace(name, mbit, seconds))
    }

    /// A trace from the paper's own stochastic link model (``sprout_link::SyntheticLink``):
    /// the rate (packets/s) does Brownian motion (``sigma`` packets/s per sqrt(s)) clamped to
    /// ``[0, max_rate]``, an outage when it reaches 0 (mean ``1/outage_escape_rate`` s), then
    /// it resumes at ``resume_rate``; Poisson deliveries each millisecond. Seeded and
    /// deterministic on every platform. ``name`` defaults to ``synthetic-{seed}``.
    #[staticmethod]
    #[pyo3(signature = (seed = 1, seconds = 60.0, *, start_rate = 400.0, sigma = 200.0,
        outage_escape_rate = 1.0, max_rate = 1000.0, resume_rate = 100.0, name = None))]
    #[allow(clippy::too_many_arguments)]
    fn synthetic(
        py: Python<'_>,
        seed: u64,
        seconds: f64,
        start_rate: f64,
        sigma: f64,
        outage_escape_rate: f64,
        max_rate: f64,
        resume_rate: f64,
        name: Option<String>,
    ) -> PyTrace {
        let name = name.unwrap_or_else(|| format!("synthetic-{seed}"));
        let link = SyntheticLink {
            seed,
            duration_s: seconds,
            start_rate,
            sigma,
            outage_escape_rate,
            max_rate,
            resume_rate,
        };
        PyTrace {
            inner: Arc::new(py.detach(|| link.generate(name))),
        }
    }

    /// A trace from opportunity times in milliseconds (non-decreasing, non-negative, at
    /// least one): any sequence of integers or a numpy integer array. SproutError otherwise.
    #[staticmethod]
    #[pyo3(signature = (opportunities_ms, name = "trace".to_string()))]
    fn from_opportunities(opportunities_ms: Vec<u64>, name: String) -> PyResult<PyTrace> {
        trace_or_err(Trace::from_opportunities_ms(name, opportunities_ms))
    }

    /// A trace from the text of a mahimahi file (one time in ms per line).
    #[staticmethod]
    #[pyo3(signature = (text, name = "trace".to_string()))]
    fn parse(text: &str, name: String) -> PyResult<PyTrace> {
        trace_or_err(Trace::parse(name, text))
    }

    /// The trace's name (the file name for a loaded trace).
    #[getter]
    fn name(&self) -> &str {
        self.inner.name()
    }

    /// Length in seconds: the last timestamp, which is mahimahi's loop period.
    #[getter]
    fn duration_s(&self) -> f64 {
        self.inner.duration().as_secs_f64()
    }

    /// Mean capacity of one pass, Mbit/s (opportunities x 1500 bytes x 8 / duration).
    #[getter]
    fn mean_mbps(&self) -> f64 {
        self.inner.mean_capacity_kbps() / 1e3
    }

    /// The opportunity times, ms since the start of the trace, as a numpy uint64 array (a copy).
    #[getter]
    fn opportunities_ms<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<u64>> {
        self.inner.opportunities_ms().to_vec().into_pyarray(py)
    }

    /// Capacity per interval, Mbit/s, as a numpy float64 array: interval ``k`` is
    /// ``[k * interval_ms, (k + 1) * interval_ms)`` ms, for the intervals that cover one pass
    /// of the trace, ``[0, duration)`` (``ceil(duration / interval_ms)`` of them; the last one
    /// ends at the trace's end and is divided by its own length). Each opportunity in an
    /// interval is worth 1500 bytes. These are the bytes the simulator's metrics count as
    /// offered over a window (``capacity_kbps``); the opportunity at exactly the end of the
    /// trace is the start of its next pass when it loops, so it is not in ``[0, duration)``.
    #[pyo3(signature = (interval_ms = 1000))]
    fn capacity<'py>(
        &self,
        py: Python<'py>,
        interval_ms: u64,
    ) -> PyResult<Bound<'py, PyArray1<f64>>> {
        if interval_ms == 0 {
            return Err(bad_parameter("interval_ms must be at least 1"));
        }
        let end_ms = self.inner.period_ms();
        let bins = end_ms.div_ceil(interval_ms);
        if bins > MAX_INTERVALS {
            return Err(bad_parameter(format!(
                "{}: {bins} intervals of {interval_ms} ms is more than {MAX_INTERVALS}; use a longer interval",
                self.inner.name()
            )));
        }
        let mut counts = vec![0u64; bins as usize];
        for &t in self
            .inner
            .opportunities_ms()
            .iter()
            .take_while(|&&t| t < end_ms)
        {
            counts[(t / interval_ms) as usize] += 1;
        }
        // count x 1500 bytes x 8 bits over the interval's length in s, in Mbit/s.
        let bits = (sprout_link::OPPORTUNITY_BYTES * 8) as f64;
        Ok(counts
            .into_iter()
            .enumerate()
            .map(|(k, c)| {
                let start = k as u64 * interval_ms;
                let len_ms = (end_ms - start).min(interval_ms);
                c as f64 * bits / (len_ms as f64 * 1e3)
            })
            .collect::<Vec<f64>>()
            .into_pyarray(py))
    }

    /// Writes the trace as a mahimahi file (one time in ms per line).
    fn save(&self, py: Python<'_>, path: PathBuf) -> PyResult<()> {
        py.detach(|| -> Result<(), SimError> {
            let f = std::fs::File::create(&path).map_err(|source| SimError::Create {
                path: path.clone(),
                source,
            })?;
            let mut w = std::io::BufWriter::new(f);
            sprout_link::convert::write_trace(&self.inner, &mut w)
                .and_then(|()| std::io::Write::flush(&mut w))
                .map_err(|source| SimError::Write {
                    path: path.clone(),
                    source,
                })
        })
        .map_err(sim_to_py)
    }

    fn __len__(&self) -> usize {
        self.inner.len()
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other
            .cast::<PyTrace>()
            .map(|o| *o.get().inner == *self.inner)
            .unwrap_or(false)
    }

    fn __repr__(&self) -> String {
        format!(
            "Trace('{}', {} opportunities, {} s, {:.3} Mbit/s)",
            self.inner.name(),
            self.inner.len(),
            self.inner.duration().as_secs_f64(),
            self.inner.mean_capacity_kbps() / 1e3
        )
    }

    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyTuple>> {
        let py = slf.py();
        let t = &slf.get().inner;
        let ctor = slf.get_type().getattr("from_opportunities")?;
        let args = (t.opportunities_ms().to_vec(), t.name().to_string());
        (ctor, args).into_pyobject(py)
    }
}

/// A trace argument: a `sprout.Trace`, or a path (str or os.PathLike) to load.
pub enum TraceArg {
    /// Already loaded.
    Loaded(Arc<Trace>),
    /// A file to load (with the command line's messages).
    Path(PathBuf),
}

impl TraceArg {
    /// Reads the argument (with the GIL held).
    pub fn extract(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<TraceArg> {
        if let Ok(t) = obj.cast::<PyTrace>() {
            return Ok(TraceArg::Loaded(t.get().inner.clone()));
        }
        obj.extract::<PathBuf>().map(TraceArg::Path).map_err(|_| {
            pyo3::exceptions::PyTypeError::new_err(format!(
                "{what} must be a sprout.Trace or a path (str or os.PathLike), not {}",
                obj.get_type()
                    .name()
                    .map(|n| n.to_string())
                    .unwrap_or_else(|_| "?".into())
            ))
        })
    }

    /// The trace, loading the file if needed (without the GIL is fine).
    pub fn load(self) -> Result<Arc<Trace>, SimError> {
        match self {
            TraceArg::Loaded(t) => Ok(t),
            TraceArg::Path(p) => Ok(Arc::new(load_trace(&p)?)),
        }
    }
}

/// Adds `Trace` to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyTrace>()
}
