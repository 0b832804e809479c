//! `sprout._sprout.Env`: the stepping environment of `sprout_sim::rl_env` (the engine of
//! `sprout.gym.CellularLinkEnv`). One step is a call into Rust; the observation comes back as
//! a new float32 numpy array.

use numpy::{IntoPyArray, PyArray1};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};
use sprout_core::Duration;
use sprout_link::{QueueKind, SyntheticLink};
use sprout_sim::overrides;
use sprout_sim::rl_env::{
    ActionKind, EnvConfig, FeedbackPath, LinkSource, RewardWeights, RlEnv, StepInfo,
    DEFAULT_DELAY_WEIGHT, DEFAULT_FEEDBACK_BYTES, DEFAULT_MAX_RATE_MBPS, DEFAULT_MAX_WINDOW_KB,
};
use sprout_sim::sim::Direction;

use crate::convert::value_to_py;
use crate::errors::{bad_parameter, sim_to_py, sprout_error};
use crate::link_options;
use crate::trace::TraceArg;

/// The stepping environment (see ``sprout.gym.CellularLinkEnv`` for the Gymnasium wrapper).
///
/// ``Env(uplink=..., downlink=...)`` replays a trace pair (``sprout.Trace`` or paths) from a
/// start drawn from each episode's seed; without traces, each episode runs a fresh synthetic
/// link of the paper's model (``synthetic`` = a dict of its fields: ``start_rate``, ``sigma``,
/// ``outage_escape_rate``, ``max_rate``, ``resume_rate``). The agent's data crosses
/// ``direction`` ("down" or "up"); the receiver's reports come back on the other direction
/// (``feedback="reverse"``) or at once (``"instant"``). ``action`` is "rate" (Mbit/s) or
/// "window" (kilobytes). Reward per step: ``throughput_weight`` x throughput (Mbit/s) -
/// ``reward_weight`` x self-inflicted delay (s) - ``loss_weight`` x loss (Mbit/s).
/// ``params`` are Sprout parameters (``KEY=VALUE`` strings, as ``sprout sim --param``) of the
/// receiver's model. ``app`` is what the application at the sender offers (``sprout sim
/// --app``'s specs: ``"bulk"``, the default, always has data; ``"constant:rate=500k"``,
/// ``"video:rate=1M"``, ``"adaptive:fps=30"``): with a non-bulk app the sender sends only
/// what the application handed it, the step's ``info`` adds the application's figures
/// (``app_*``) and ``app_metrics()`` gives the episode's; the reward is unchanged.
/// BadParameterError (a SproutError) for a bad option.
#[pyclass(name = "Env", module = "sprout._sprout")]
pub struct PyEnv {
    /// In a mutex only to make the class `Sync` (the model's estimator is `Send` only);
    /// `&mut self` methods reach it without locking.
    inner: std::sync::Mutex<RlEnv>,
}

impl PyEnv {
    fn env(&self) -> std::sync::MutexGuard<'_, RlEnv> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn env_mut(&mut self) -> &mut RlEnv {
        self.inner.get_mut().unwrap_or_else(|e| e.into_inner())
    }
}

/// The step's figures; with an application (`app`), its figures too (a delay figure of a
/// step in which no message completed is None, not NaN, so that equal steps give equal
/// dicts, as Gymnasium's checker wants).
fn info_dict<'py>(py: Python<'py>, i: &StepInfo, app: bool) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("time_s", i.time_s)?;
    d.set_item("throughput_mbps", i.throughput_mbps)?;
    d.set_item("capacity_mbps", i.capacity_mbps)?;
    d.set_item("delay_s", i.delay_s)?;
    d.set_item("self_inflicted_s", i.self_inflicted_s)?;
    d.set_item("sent_bytes", i.sent_bytes)?;
    d.set_item("delivered_bytes", i.delivered_bytes)?;
    d.set_item("lost_bytes", i.lost_bytes)?;
    d.set_item("queue_bytes", i.queue_bytes)?;
    d.set_item("action", i.action)?;
    if app {
        d.set_item("app_offered_mbps", i.app_offered_mbps)?;
        d.set_item("app_backlog_bytes", i.app_backlog_bytes)?;
        d.set_item("app_messages", i.app_messages)?;
        d.set_item("app_p50_ms", i.app_p50_ms)?;
        d.set_item("app_p95_ms", i.app_p95_ms)?;
        d.set_item("app_within_150ms", i.app_within_150ms)?;
    }
    Ok(d)
}

#[pymethods]
impl PyEnv {
    #[new]
    #[pyo3(signature = (*, uplink = None, downlink = None, synthetic = None, direction = "down",
        ticks_per_step = 1, action = "rate", reward_weight = DEFAULT_DELAY_WEIGHT,
        throughput_weight = 1.0, loss_weight = 0.0, episode_seconds = 30.0, random_start = true,
        feedback = "reverse", propagation_delay_ms = 20.0, queue = "infinite", loss = 0.0,
        max_rate_mbps = DEFAULT_MAX_RATE_MBPS, max_window_kb = DEFAULT_MAX_WINDOW_KB,
        packet_bytes = 1500, feedback_bytes = DEFAULT_FEEDBACK_BYTES, params = Vec::new(),
        confidence = None, app = "bulk", **link))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        uplink: Option<&Bound<'_, PyAny>>,
        downlink: Option<&Bound<'_, PyAny>>,
        synthetic: Option<&Bound<'_, PyDict>>,
        direction: &str,
        ticks_per_step: u32,
        action: &str,
        reward_weight: f64,
        throughput_weight: f64,
        loss_weight: f64,
        episode_seconds: f64,
        random_start: bool,
        feedback: &str,
        propagation_delay_ms: f64,
        queue: &str,
        loss: f64,
        max_rate_mbps: f64,
        max_window_kb: f64,
        packet_bytes: u32,
        feedback_bytes: u32,
        params: Vec<String>,
        confidence: Option<f64>,
        app: &str,
        link: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<PyEnv> {
        let source = match (uplink, downlink) {
            (Some(u), Some(d)) => {
                let (u, d) = (
                    TraceArg::extract(u, "uplink")?,
                    TraceArg::extract(d, "downlink")?,
                );
                let (u, d) = py
                    .detach(|| -> Result<_, sprout_sim::SimError> { Ok((u.load()?, d.load()?)) })
                    .map_err(sim_to_py)?;
                if synthetic.is_some() {
                    return Err(bad_parameter("give traces or synthetic, not both"));
                }
                LinkSource::Traces {
                    uplink: u,
                    downlink: d,
                }
            }
            (None, None) => {
                let mut link = SyntheticLink::default();
                if let Some(s) = synthetic {
                    let json = py
                        .import("json")?
                        .call_method1("dumps", (s,))?
                        .extract::<String>()?;
                    let mut v: serde_json::Value =
                        serde_json::from_str(&json).map_err(|e| bad_parameter(e.to_string()))?;
                    if let Some(m) = v.as_object_mut() {
                        for k in m.keys() {
                            if ![
                                "start_rate",
                                "sigma",
                                "outage_escape_rate",
                                "max_rate",
                                "resume_rate",
                            ]
                            .contains(&k.as_str())
                            {
                                return Err(bad_parameter(format!(
                                    "synthetic: unknown field '{k}' (known: start_rate, sigma, \
                                     outage_escape_rate, max_rate, resume_rate)"
                                )));
                            }
                        }
                    }
                    link = serde_json::from_value(v)
                        .map_err(|e| bad_parameter(format!("synthetic: {e}")))?;
                }
                LinkSource::Synthetic(link)
            }
            _ => {
                return Err(bad_parameter(
                    "give both uplink and downlink traces, or neither",
                ))
            }
        };
        let mut cfg = EnvConfig::new(source);
        cfg.data_direction = match direction {
            "down" => Direction::Down,
            "up" => Direction::Up,
            other => {
                return Err(bad_parameter(format!(
                    "unknown direction '{other}' (expected down or up)"
                )))
            }
        };
        cfg.ticks_per_step = ticks_per_step;
        cfg.action = action.parse::<ActionKind>().map_err(bad_parameter)?;
        cfg.feedback = feedback.parse::<FeedbackPath>().map_err(bad_parameter)?;
        cfg.reward = RewardWeights {
            throughput: throughput_weight,
            delay: reward_weight,
            loss: loss_weight,
        };
        if !(episode_seconds.is_finite() && episode_seconds > 0.0) {
            return Err(bad_parameter(format!(
                "episode_seconds must be positive, got {episode_seconds}"
            )));
        }
        cfg.episode = Duration::from_micros((episode_seconds * 1e6).round() as u64);
        cfg.random_start = random_start;
        if !(propagation_delay_ms.is_finite() && propagation_delay_ms >= 0.0) {
            return Err(bad_parameter(format!(
                "propagation_delay_ms must be >= 0, got {propagation_delay_ms}"
            )));
        }
        cfg.link.propagation_delay_us =
            sprout_core::Duration::from_micros((propagation_delay_ms * 1e3).round() as u64);
        cfg.link.queue = queue.parse::<QueueKind>().map_err(bad_parameter)?.config();
        cfg.link.loss = loss;
        link_options::shape_both_ways(link, &mut cfg.link)?;
        cfg.max_rate_mbps = max_rate_mbps;
        cfg.max_window_kb = max_window_kb;
        cfg.packet_bytes = packet_bytes;
        cfg.feedback_bytes = feedback_bytes;
        if let Some(c) = confidence {
            cfg.protocol.confidence = c;
        }
        overrides::apply(&mut cfg.protocol, &params).map_err(sim_to_py)?;
        cfg.app = sprout_sim::App::parse(app).map_err(sim_to_py)?;
        let inner = py.detach(|| RlEnv::new(cfg)).map_err(sim_to_py)?;
        Ok(PyEnv {
            inner: std::sync::Mutex::new(inner),
        })
    }

    /// Starts an episode with ``seed`` (0 .. 2**64-1); returns the first observation.
    fn reset<'py>(&mut self, py: Python<'py>, seed: u64) -> PyResult<Bound<'py, PyArray1<f32>>> {
        let inner = self.env_mut();
        let obs = py
            .detach(|| inner.reset(seed).map(|o| o.to_vec()))
            .map_err(sim_to_py)?;
        Ok(obs.into_pyarray(py))
    }

    /// One step with ``action`` (Mbit/s or kilobytes; clipped to the bounds, NaN = 0):
    /// ``(observation, reward, terminated, truncated, info)``, Gymnasium's tuple; ``info`` has
    /// the step's time_s, throughput_mbps, capacity_mbps, delay_s, self_inflicted_s,
    /// sent_bytes, delivered_bytes, lost_bytes, queue_bytes and action (as applied); with a
    /// non-bulk ``app``, also app_offered_mbps (created in the step), app_backlog_bytes
    /// (waiting in the sender at its end), app_messages (completed in the step), and their
    /// application-level delay: app_p50_ms, app_p95_ms and app_within_150ms (None when no
    /// message completed).
    fn step<'py>(&mut self, py: Python<'py>, action: f64) -> PyResult<Bound<'py, PyTuple>> {
        let env = self.env_mut();
        let app = !env.config().app.is_bulk();
        let o = env.step(action);
        let obs = PyArray1::from_slice(py, env.observation());
        (
            obs,
            o.reward,
            o.terminated,
            o.truncated,
            info_dict(py, &o.info, app)?,
        )
            .into_pyobject(py)
    }

    /// Runs ``steps`` steps at a constant ``action`` entirely in Rust (the GIL released) and
    /// returns the seconds they took: the engine's own cost, without Python's per-step
    /// overhead. Starts a new episode (``seed``) whenever one ends.
    #[pyo3(signature = (steps, action, seed = 0))]
    fn bench(&mut self, py: Python<'_>, steps: u64, action: f64, seed: u64) -> PyResult<f64> {
        let inner = self.env_mut();
        py.detach(|| -> Result<f64, sprout_sim::SimError> {
            inner.reset(seed)?;
            let t = std::time::Instant::now();
            for _ in 0..steps {
                if inner.step(action).truncated {
                    inner.reset(seed)?;
                }
            }
            Ok(t.elapsed().as_secs_f64())
        })
        .map_err(sim_to_py)
    }

    /// The current observation (a new float32 array).
    fn observation<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f32>> {
        PyArray1::from_slice(py, self.env().observation())
    }

    /// Names of the observation's entries: delivery_rate_mbps, delivery_rate_avg_mbps,
    /// delay_ms, min_delay_ms, loss_rate, inflight_kb, send_rate_mbps, report_age_ms, then
    /// forecast_1 .. forecast_8 (cumulative MTU-sized packets by the end of each coming tick).
    #[getter]
    fn observation_names(&self) -> Vec<String> {
        self.env().observation_names()
    }

    /// ``(low, high)`` of the action: Mbit/s for "rate", kilobytes for "window".
    #[getter]
    fn action_bounds(&self) -> (f64, f64) {
        self.env().action_bounds()
    }

    /// Steps in an episode.
    #[getter]
    fn episode_steps(&self) -> u64 {
        self.env().config().episode_steps()
    }

    /// Length of one step, seconds.
    #[getter]
    fn step_s(&self) -> f64 {
        self.env().config().step().as_secs_f64()
    }

    /// The current episode's seed.
    #[getter]
    fn seed(&self) -> u64 {
        self.env().seed()
    }

    /// Where the current episode started in the trace, seconds.
    #[getter]
    fn start_s(&self) -> f64 {
        self.env().start().as_secs_f64()
    }

    /// Seconds since the episode's start.
    #[getter]
    fn elapsed_s(&self) -> f64 {
        self.env().elapsed().as_secs_f64()
    }

    /// Steps taken in the current episode.
    #[getter]
    fn steps(&self) -> u64 {
        self.env().steps()
    }

    /// The data direction's trace name.
    #[getter]
    fn trace_name(&self) -> String {
        self.env().data_trace().name().to_string()
    }

    /// The paper's metrics of the data direction over ``[skip_s, now)`` of the episode (a dict
    /// like ``sprout.simulate``'s: throughput_kbps, p95_delay_ms, self_inflicted_ms, ...),
    /// computed with the simulator's code.
    #[pyo3(signature = (skip_s = 0.0))]
    fn episode_metrics<'py>(&self, py: Python<'py>, skip_s: f64) -> PyResult<Bound<'py, PyAny>> {
        if !(skip_s.is_finite() && skip_s >= 0.0) {
            return Err(bad_parameter(format!("skip_s must be >= 0, got {skip_s}")));
        }
        let skip = Duration::from_micros((skip_s * 1e6).round() as u64);
        let m = self.env().episode_metrics(skip);
        let v = serde_json::to_value(m).map_err(|e| sprout_error(e.to_string()))?;
        value_to_py(py, &v)
    }

    /// The application-level figures of the episode over ``[skip_s, now)`` (as
    /// ``sprout.simulate``'s ``result.app``: offered_kbps, delivered_kbps, delivered_share,
    /// messages, delay_p50_ms, delay_p95_ms, delay_p99_ms, within_100ms, within_150ms,
    /// within_300ms; a message not yet delivered counts as infinitely late: a percentile is
    /// then ``inf``, and NaN with no message), or None for bulk.
    #[pyo3(signature = (skip_s = 0.0))]
    fn app_metrics<'py>(
        &self,
        py: Python<'py>,
        skip_s: f64,
    ) -> PyResult<Option<Bound<'py, PyDict>>> {
        if !(skip_s.is_finite() && skip_s >= 0.0) {
            return Err(bad_parameter(format!("skip_s must be >= 0, got {skip_s}")));
        }
        let skip = Duration::from_micros((skip_s * 1e6).round() as u64);
        let Some(m) = self.env().app_metrics(skip) else {
            return Ok(None);
        };
        let d = PyDict::new(py);
        d.set_item("offered_kbps", m.offered_kbps)?;
        d.set_item("delivered_kbps", m.delivered_kbps)?;
        d.set_item("delivered_share", m.delivered_share)?;
        d.set_item("messages", m.messages)?;
        d.set_item("delay_p50_ms", m.delay_p50_ms)?;
        d.set_item("delay_p95_ms", m.delay_p95_ms)?;
        d.set_item("delay_p99_ms", m.delay_p99_ms)?;
        d.set_item("within_100ms", m.within_100ms)?;
        d.set_item("within_150ms", m.within_150ms)?;
        d.set_item("within_300ms", m.within_300ms)?;
        Ok(Some(d))
    }

    /// The application's canonical spec (``"bulk"``, ``"constant:rate=500k,packet=1200"``,
    /// ...).
    #[getter]
    fn app(&self) -> String {
        self.env().config().app.to_string()
    }

    /// Every data packet delivered this episode: a dict of numpy arrays ``sent_us``,
    /// ``arrived_us`` (uint64, µs since the episode's start) and ``bytes`` (uint32).
    fn arrivals<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let env = self.env();
        let a = env.arrivals();
        let d = PyDict::new(py);
        d.set_item(
            "sent_us",
            a.iter()
                .map(|x| x.sent.as_micros())
                .collect::<Vec<u64>>()
                .into_pyarray(py),
        )?;
        d.set_item(
            "arrived_us",
            a.iter()
                .map(|x| x.arrived.as_micros())
                .collect::<Vec<u64>>()
                .into_pyarray(py),
        )?;
        d.set_item(
            "bytes",
            a.iter()
                .map(|x| x.bytes)
                .collect::<Vec<u32>>()
                .into_pyarray(py),
        )?;
        Ok(d)
    }

    fn __repr__(&self) -> String {
        let env = self.env();
        let c = env.config();
        let app = if c.app.is_bulk() {
            String::new()
        } else {
            format!(", app {}", c.app)
        };
        format!(
            "Env({}, {:?} action, {} tick(s) per step, {} s episodes{app})",
            env.data_trace().name(),
            c.action,
            c.ticks_per_step,
            c.episode.as_secs_f64()
        )
    }
}

/// Adds `Env` to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyEnv>()
}
