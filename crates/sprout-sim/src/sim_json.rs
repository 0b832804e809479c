//! One simulation as `sprout sim` runs it: its options with their defaults, their checks (with
//! the command line's messages), the run (with optional mm-link logs) and the `--json` output.
//! The command line and the Python package (`sprout.simulate`) both call this module, so that
//! they give the same figures, to the last bit, and the same errors.
//!
//! Times are seconds in [`SimOptions`] (as on the command line), microseconds in the
//! [`SimConfig`] it builds.

use std::io::BufWriter;
use std::path::Path;
use std::sync::Arc;

use serde_json::Value;
use sprout_core::direction::Load;
use sprout_files::AtomicFile;
pub use sprout_link::QueueKind;
use sprout_link::{LinkShape, LinkStats, Trace, TraceError};
pub use sprout_tcp::CcKind;

use crate::app::App;
use crate::duration::seconds;
use crate::error::SimError;
use crate::overrides;
use crate::scheme::Scheme;
use crate::sim::{self, DirectionOverride, Logs, SimConfig, SimOutput};

/// Loads a mahimahi trace as `sprout sim` does: a file that cannot be read is
/// [`SimError::TraceUnreadable`] ("cannot read trace PATH: ..."), one that does not parse
/// [`SimError::Trace`] ("PATH:LINE: ...").
pub fn load_trace(path: &Path) -> Result<Trace, SimError> {
    Trace::load(path).map_err(|e| match e {
        TraceError::Io { file, source } => SimError::TraceUnreadable { file, source },
        e => SimError::Trace(e),
    })
}

/// Every option of `sprout sim` but the traces, `--json` and the log files; the defaults are
/// the command line's.
#[derive(Clone, Debug, PartialEq)]
pub struct SimOptions {
    /// The scheme simulated [default: sprout].
    pub scheme: Scheme,
    /// Forecast confidence, strictly between 0 and 1 (Sprout schemes only) [default: the
    /// scheme's, 0.95].
    pub confidence: Option<f64>,
    /// Changes to the Sprout configuration, `KEY=VALUE` (Sprout schemes only) [default: none].
    pub params: Vec<String>,
    /// Seed for anything random (loss; when not 0, the endpoints' start times too) [default: 0].
    pub seed: u64,
    /// Sprout hosts' timer wake-up latency, milliseconds (uniform 0..this) [default: 1].
    pub host_jitter_ms: f64,
    /// Bernoulli loss probability of both directions, 0..1 [default: 0].
    pub loss: f64,
    /// Queue discipline of both directions [default: infinite; cubic-codel always CoDel, and
    /// refuses pie and fq-codel].
    pub queue: QueueKind,
    /// The uplink's queue discipline, overriding `queue`.
    pub uplink_queue: Option<QueueKind>,
    /// The downlink's queue discipline, overriding `queue`.
    pub downlink_queue: Option<QueueKind>,
    /// The uplink's loss probability, overriding `loss`.
    pub uplink_loss: Option<f64>,
    /// The downlink's loss probability, overriding `loss`.
    pub downlink_loss: Option<f64>,
    /// Simulated seconds [default: the shorter trace's length].
    pub duration_s: Option<f64>,
    /// Seconds skipped before measuring [default: 60, the paper's].
    pub skip_s: f64,
    /// Which directions carry data [default: both].
    pub load: Load,
    /// What the application offers in each direction that carries data [default: bulk].
    pub app: App,
    /// Buffers, CoDel's parameters, bursty loss, delay traces and jitter, of both directions
    /// and of each [default: none].
    pub shape: LinkShape,
    /// Cross traffic: a bulk TCP transfer with this congestion controller beside the scheme's
    /// flow in every loaded direction ([`SimConfig::cross`]) [default: none].
    pub cross: Option<CcKind>,
}

impl Default for SimOptions {
    fn default() -> Self {
        SimOptions {
            scheme: Scheme::Sprout,
            confidence: None,
            params: Vec::new(),
            seed: 0,
            host_jitter_ms: SimConfig::default().host_jitter.as_millis_f64(),
            loss: 0.0,
            queue: QueueKind::Infinite,
            uplink_queue: None,
            downlink_queue: None,
            uplink_loss: None,
            downlink_loss: None,
            duration_s: None,
            skip_s: crate::metrics::DEFAULT_SKIP_US as f64 / 1e6,
            load: Load::Both,
            app: App::Bulk,
            shape: LinkShape::default(),
            cross: None,
        }
    }
}

impl SimOptions {
    /// The simulator's configuration, after `sprout sim`'s checks in its order (the scheme is
    /// simulated; confidence and parameters only for Sprout schemes; parameters, losses and
    /// times valid), with its error messages.
    pub fn config(&self) -> Result<SimConfig, SimError> {
        let invalid = |msg: &str| Err(SimError::InvalidOption(msg.to_string()));
        if self.scheme == Scheme::Omniscient {
            return invalid(
                "the omniscient sender is not simulated; `sprout eval` computes it from the trace",
            );
        }
        let mut cfg = SimConfig::default();
        self.scheme.configure(&mut cfg);
        if let Some(c) = self.confidence {
            if !self.scheme.uses_confidence() {
                return invalid(
                    "--confidence applies to sprout only (sprout-ewma forecasts an EWMA of \
                     the rate, with no confidence; the TCP schemes forecast nothing)",
                );
            }
            cfg.protocol.confidence = c;
        }
        if !self.params.is_empty() && !self.scheme.is_sprout() {
            return invalid("--param applies to sprout and sprout-ewma only");
        }
        let (_, ignored) = self.scheme.split_params(&self.params);
        if !ignored.is_empty() {
            return Err(SimError::InvalidOption(format!(
                "--param {}: {} does not use {} (Sprout's Bayesian model), so the run would \
                 be the same without {}",
                ignored.join(" "),
                self.scheme.key(),
                if ignored.len() == 1 { "it" } else { "them" },
                if ignored.len() == 1 { "it" } else { "them" },
            )));
        }
        overrides::apply(&mut cfg.protocol, &self.params)?;
        cfg.protocol.validate()?;
        match self.queue {
            QueueKind::Infinite => {}
            q @ (QueueKind::Pie | QueueKind::FqCodel) if self.scheme == Scheme::CubicCodel => {
                return Err(SimError::InvalidOption(format!(
                    "cubic-codel always uses CoDel; give --scheme cubic --queue {}",
                    q.key()
                )));
            }
            q => cfg.link.queue = q.config(),
        }
        cfg.link.loss = self.loss;
        cfg.uplink = DirectionOverride {
            queue: self.uplink_queue.map(QueueKind::config),
            loss: self.uplink_loss,
            shape: self.shape.uplink(),
        };
        cfg.downlink = DirectionOverride {
            queue: self.downlink_queue.map(QueueKind::config),
            loss: self.downlink_loss,
            shape: self.shape.downlink(),
        };
        cfg.validate_links().map_err(|e| SimError::Option {
            option: "--loss",
            source: Box::new(e),
        })?;
        let (up, down) = (
            cfg.link_for(sim::Direction::Up),
            cfg.link_for(sim::Direction::Down),
        );
        self.shape
            .validate(&up, &down)
            .map_err(|e| SimError::InvalidOption(e.to_string()))?;
        // With ECN marking on either link, the TCP peers negotiate ECN (RFC 3168).
        cfg.tcp.ecn = up.ecn || down.ecn;
        let cfg = SimConfig {
            duration: self
                .duration_s
                .map(|d| seconds(d, "duration"))
                .transpose()?,
            skip: seconds(self.skip_s, "skip")?,
            load: self.load,
            app: self.app,
            seed: self.seed,
            host_jitter: seconds(self.host_jitter_ms / 1e3, "host-jitter-ms")?,
            cross: self.cross,
            ..cfg
        };
        cfg.validate_app()?;
        Ok(cfg)
    }
}

/// Runs the simulation; with `logs` (uplink, downlink paths) it writes each direction's
/// mahimahi mm-link log there.
pub fn run(
    uplink: Arc<Trace>,
    downlink: Arc<Trace>,
    cfg: &SimConfig,
    logs: Option<(&Path, &Path)>,
) -> Result<SimOutput, SimError> {
    run_with_progress(uplink, downlink, cfg, logs, &mut |_, _| {})
}

/// [`run`], calling `progress(simulated_us, duration_us)` as
/// [`sim::run_with_progress`] does.
pub fn run_with_progress(
    uplink: Arc<Trace>,
    downlink: Arc<Trace>,
    cfg: &SimConfig,
    logs: Option<(&Path, &Path)>,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<SimOutput, SimError> {
    let Some((u, d)) = logs else {
        return sim::run_with_progress(uplink, downlink, cfg, None, progress);
    };
    // Checked before the log files are created, so that a refused run leaves none behind.
    let duration = cfg.checked_duration_us(&uplink, &downlink)?;
    cfg.check_app_run(sprout_core::time::Duration::from_micros(duration))?;
    // Each log is written beside its name and renamed into place when the run has ended: a
    // run killed or failed midway leaves no cut log (and an earlier one whole).
    let open = |p: &Path| -> Result<BufWriter<AtomicFile>, SimError> {
        let f = AtomicFile::create(p).map_err(|source| SimError::Create {
            path: p.to_path_buf(),
            source,
        })?;
        Ok(BufWriter::new(f))
    };
    let (mut uw, mut dw) = (open(u)?, open(d)?);
    let out = sim::run_with_progress(
        uplink,
        downlink,
        cfg,
        Some(Logs {
            uplink: &mut uw,
            downlink: &mut dw,
        }),
        progress,
    )?;
    for (w, p) in [(uw, u), (dw, d)] {
        let write = |source| SimError::Write {
            path: p.to_path_buf(),
            source,
        };
        w.into_inner()
            .map_err(|e| write(e.into_error()))?
            .commit()
            .map_err(write)?;
    }
    Ok(out)
}

/// `sprout sim --json`'s output: the scheme, confidence, load, application (its canonical
/// spec), simulated and skipped seconds, the parameters as given, and each direction's trace
/// name, metrics ([`crate::metrics::DirectionMetrics`]) and application-level figures
/// ([`crate::app_metrics::AppMetrics`], null for a bulk sender or a direction without data),
/// and its link's drops over the whole run, packets by reason (`buffer`, `aqm`, `loss`), and
/// its CE marks, packets by reason (`aqm`: instead of a drop, `step`: the L4S step); with
/// cross traffic, its controller (`cross`) and the bytes of it each link delivered
/// (`cross_bytes`).
pub fn to_json(opts: &SimOptions, cfg: &SimConfig, out: &SimOutput) -> Value {
    let mut v = serde_json::json!({
        "scheme": opts.scheme.key(),
        "confidence": cfg.protocol.confidence,
        "load": opts.load,
        "app": cfg.app.to_string(),
        "duration_s": out.duration.as_secs_f64(),
        "skip_s": cfg.skip.as_secs_f64(),
        "params": opts.params,
        "uplink": {
            "trace": out.uplink.trace.name(),
            "metrics": out.uplink.metrics,
            "app": out.uplink.app,
            "drops": drops_json(&out.uplink.link),
            "marks": marks_json(&out.uplink.link),
        },
        "downlink": {
            "trace": out.downlink.trace.name(),
            "metrics": out.downlink.metrics,
            "app": out.downlink.app,
            "drops": drops_json(&out.downlink.link),
            "marks": marks_json(&out.downlink.link),
        },
    });
    if let Some(cc) = cfg.cross {
        v["cross"] = serde_json::json!(cc.name());
        v["uplink"]["cross_bytes"] = serde_json::json!(out.uplink.cross_bytes);
        v["downlink"]["cross_bytes"] = serde_json::json!(out.downlink.cross_bytes);
    }
    v
}

/// A link's drops over the run, packets by reason.
fn drops_json(s: &LinkStats) -> Value {
    serde_json::json!({
        "buffer": s.packets_buffer_dropped,
        "aqm": s.packets_aqm_dropped,
        "loss": s.packets_lost,
    })
}

/// A link's CE marks over the run, packets by reason.
fn marks_json(s: &LinkStats) -> Value {
    serde_json::json!({
        "aqm": s.packets_aqm_marked,
        "step": s.packets_step_marked,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use sprout_link::constant_rate_trace;

    #[test]
    fn defaults_are_the_command_lines() {
        let o = SimOptions::default();
        assert_eq!(o.scheme, Scheme::Sprout);
        assert_eq!(o.host_jitter_ms, 1.0);
        assert_eq!(o.skip_s, 60.0);
        assert_eq!(o.load, Load::Both);
        let cfg = o.config().unwrap();
        assert_eq!(cfg.skip, sprout_core::time::Duration::from_secs(60));
        assert_eq!(cfg.host_jitter, sprout_core::time::Duration::from_millis(1));
        assert_eq!(cfg.duration, None);
    }

    #[test]
    fn checks_give_the_command_lines_messages() {
        let err = |o: SimOptions| o.config().unwrap_err().to_string();
        let cubic = SimOptions {
            scheme: Scheme::Cubic,
            confidence: Some(0.5),
            ..SimOptions::default()
        };
        assert!(err(cubic).starts_with("--confidence applies to sprout only"));
        let ewma = SimOptions {
            scheme: Scheme::SproutEwma,
            confidence: Some(0.5),
            ..SimOptions::default()
        };
        assert!(err(ewma).starts_with("--confidence applies to sprout only"));
        let ewma_sigma = SimOptions {
            scheme: Scheme::SproutEwma,
            params: vec!["model.sigma=250".into(), "target_ticks=4".into()],
            ..SimOptions::default()
        };
        assert_eq!(
            err(ewma_sigma),
            "--param model.sigma=250: sprout-ewma does not use it (Sprout's Bayesian model), so \
             the run would be the same without it"
        );
        let bad = SimOptions {
            params: vec!["nope=1".into()],
            ..SimOptions::default()
        };
        assert!(err(bad).starts_with("parameter 'nope=1': unknown key 'nope'"));
        let skip = SimOptions {
            skip_s: -1.0,
            ..SimOptions::default()
        };
        assert_eq!(
            err(skip),
            "--skip must be a non-negative number of seconds, got -1"
        );
        let loss = SimOptions {
            uplink_loss: Some(2.0),
            ..SimOptions::default()
        };
        assert!(err(loss).starts_with("--loss: uplink: "));
        assert!("fifo".parse::<QueueKind>().is_err());
    }

    /// A PIE queue in a drop-head buffer and jitter with reordering: packets leave the queue
    /// from inside and overtake each other, and the simulator still follows them (its debug
    /// assertions compare its copies with the link's counts after every step).
    #[test]
    fn shaped_links_keep_the_packets_straight() {
        use sprout_link::{DirectionShape, LinkShape};
        let t = Arc::new(constant_rate_trace("c", 2.4, 20.0).unwrap());
        // 3 Mbit/s offered to a 2.4 Mbit/s link.
        let o = SimOptions {
            scheme: Scheme::Direct,
            app: App::parse("constant:rate=3M").unwrap(),
            skip_s: 1.0,
            queue: QueueKind::Pie,
            shape: LinkShape {
                both: DirectionShape {
                    buffer: Some("10pkt,head".parse().unwrap()),
                    jitter: Some("20ms,reorder".parse().unwrap()),
                    ..DirectionShape::default()
                },
                ..LinkShape::default()
            },
            ..SimOptions::default()
        };
        let cfg = o.config().unwrap();
        assert_eq!(cfg.link_for(sim::Direction::Up).buffer, o.shape.both.buffer);
        let out = run(t.clone(), t, &cfg, None).unwrap();
        let down = &out.downlink;
        assert_eq!(down.arrivals.len() as u64, down.link.packets_delivered);
        assert!(down.link.packets_buffer_dropped > 0, "{:?}", down.link);
        assert!(down.metrics.throughput_kbps > 2000.0, "{:?}", down.metrics);
        let v = to_json(&o, &cfg, &out);
        assert_eq!(
            v["downlink"]["drops"]["buffer"],
            down.link.packets_buffer_dropped
        );
        assert_eq!(v["downlink"]["drops"]["aqm"], down.link.packets_aqm_dropped);
        let cubic_codel = SimOptions {
            scheme: Scheme::CubicCodel,
            queue: QueueKind::Pie,
            ..SimOptions::default()
        };
        assert!(cubic_codel.config().is_err());
    }

    /// FQ-CoDel delivers out of the order packets joined its queue: the simulator follows
    /// them by their numbers, so that the stream beside a Cubic download (cross traffic, its
    /// own flow) gets its own datagrams, each once, and the download its segments.
    #[test]
    fn fq_codel_and_cross_traffic_keep_the_packets_straight() {
        let t = Arc::new(constant_rate_trace("c", 6.0, 20.0).unwrap());
        let run_with = |queue: QueueKind| {
            let o = SimOptions {
                scheme: Scheme::Direct,
                app: App::parse("constant:rate=500k").unwrap(),
                load: Load::Down,
                skip_s: 5.0,
                queue,
                cross: Some(CcKind::Cubic),
                ..SimOptions::default()
            };
            let cfg = o.config().unwrap();
            let out = run(t.clone(), t.clone(), &cfg, None).unwrap();
            (to_json(&o, &cfg, &out), out)
        };
        let (v, out) = run_with(QueueKind::FqCodel);
        let down = &out.downlink;
        let stream_bytes: u64 = down.arrivals.iter().map(|a| u64::from(a.bytes)).sum();
        assert_eq!(stream_bytes + down.cross_bytes, down.link.bytes_delivered);
        assert!(down.cross_bytes > 5_000_000, "{}", down.cross_bytes);
        let app = down.app.as_ref().unwrap();
        assert!(app.delivered_share > 0.99, "{app:?}");
        assert!(app.delay_p95_ms < 40.0, "{app:?}");
        assert!(down.link.packets_aqm_dropped > 0);
        assert_eq!(v["cross"], "cubic");
        assert_eq!(v["downlink"]["cross_bytes"], down.cross_bytes);
        // In an unlimited FIFO the stream waits behind the download's queue.
        let (_, fifo) = run_with(QueueKind::Infinite);
        let fifo_app = fifo.downlink.app.unwrap();
        assert!(
            fifo_app.delay_p95_ms > 10.0 * app.delay_p95_ms,
            "{fifo_app:?}"
        );
        // Without cross traffic the JSON has no cross keys.
        let o = SimOptions {
            scheme: Scheme::Direct,
            app: App::parse("constant:rate=500k").unwrap(),
            load: Load::Down,
            skip_s: 5.0,
            ..SimOptions::default()
        };
        let cfg = o.config().unwrap();
        let plain = to_json(&o, &cfg, &run(t.clone(), t, &cfg, None).unwrap());
        assert!(plain.get("cross").is_none() && plain["downlink"].get("cross_bytes").is_none());
    }

    #[test]
    fn json_holds_both_directions() {
        let t = Arc::new(constant_rate_trace("c", 2.4, 7.0).unwrap());
        let o = SimOptions {
            skip_s: 1.0,
            params: vec!["window_skip_ticks=0".into()],
            ..SimOptions::default()
        };
        let cfg = o.config().unwrap();
        let out = run(t.clone(), t, &cfg, None).unwrap();
        let v = to_json(&o, &cfg, &out);
        assert_eq!(v["scheme"], "sprout");
        assert_eq!(v["load"], "both");
        assert_eq!(v["duration_s"], 7.0);
        assert_eq!(v["skip_s"], 1.0);
        assert_eq!(v["params"][0], "window_skip_ticks=0");
        assert_eq!(v["uplink"]["trace"], "c");
        let tp = v["downlink"]["metrics"]["throughput_kbps"]
            .as_f64()
            .unwrap();
        assert!(tp > 0.0 && tp <= 2400.0 * 1.01, "throughput {tp}");
    }
}
