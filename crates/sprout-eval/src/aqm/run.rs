//! The experiment's runs: every scheme over every queue on every link pair, and the
//! interactive stream beside a Cubic download, in parallel; and the experiment as
//! `sprout eval` runs it.

use std::sync::Arc;
use std::time::Instant;

use sprout_core::direction::Load;
use sprout_core::time::Duration;
use sprout_link::Trace;
use sprout_sim::scheme::Scheme;
use sprout_sim::sim::{self, DirectionRun, SimConfig};
use sprout_sim::App;
use sprout_tcp::CcKind;

use super::results::{average_rows, AqmResults, AqmRow, StreamRow};
use super::settings::{queue, AqmQueue, AqmSettings, STREAM_LINK, STREAM_PACKET_BYTES};
use crate::error::{EvalError, Result};
use crate::traces::LinkSet;

/// What one simulation runs over its queue.
enum Work {
    /// A scheme's bulk transfer, both directions loaded, with its Sprout configuration.
    Bulk(Scheme, sprout_core::Config),
    /// The interactive stream (`direct`, paced) beside a Cubic download, the downlink loaded.
    Stream,
}

/// One simulation: a scheme (or the stream) over a queue on a link pair.
struct Job {
    queue: AqmQueue,
    work: Work,
    /// Index into the link pairs.
    pair: usize,
}

/// What a job produced.
enum Out {
    Bulk(Vec<AqmRow>),
    Stream(StreamRow),
}

/// The settings' queues and schemes, checked: known queues, bulk schemes the simulator runs,
/// at least one of each, a positive stream rate when the stream runs.
fn check_settings(settings: &AqmSettings) -> Result<(Vec<AqmQueue>, Vec<Scheme>, Vec<AqmQueue>)> {
    let bad = |why: String| EvalError::BadParameter(format!("aqm: {why}"));
    let find = |name: &String| queue(name).ok_or_else(|| bad(format!("unknown queue '{name}'")));
    let queues = settings
        .queues
        .iter()
        .map(find)
        .collect::<Result<Vec<_>>>()?;
    let stream = settings
        .stream_queues
        .iter()
        .map(find)
        .collect::<Result<Vec<_>>>()?;
    let mut schemes = Vec::new();
    for key in &settings.schemes {
        let s: Scheme = key
            .parse()
            .map_err(|e: sprout_sim::error::UnknownName| bad(e.to_string()))?;
        if !s.is_simulated() || Scheme::APP_ONLY.contains(&s) {
            return Err(bad(format!(
                "{} is no bulk transfer the simulator runs",
                s.key()
            )));
        }
        schemes.push(s);
    }
    if queues.is_empty() || schemes.is_empty() {
        return Err(bad("no queue or no scheme".into()));
    }
    if !stream.is_empty() && !(settings.stream_kbps > 0.0 && settings.stream_kbps.is_finite()) {
        return Err(bad(format!(
            "stream rate {} kbit/s is not positive",
            settings.stream_kbps
        )));
    }
    Ok((queues, schemes, stream))
}

/// Every job: queues, schemes, pairs in order (each scheme's configuration with the run's
/// `--param` changes it uses), then the stream's queues on the stream's pair.
fn jobs(settings: &AqmSettings, params: &[String], links: &LinkSet) -> Result<Vec<Job>> {
    let (queues, schemes, stream) = check_settings(settings)?;
    let mut configs = Vec::new();
    for &s in &schemes {
        let mut c = s.protocol_config();
        let (used, _) = s.split_params(params);
        sprout_sim::overrides::apply(&mut c, &used).map_err(EvalError::Sim)?;
        configs.push((s, c));
    }
    let mut out = Vec::new();
    for &q in &queues {
        for (s, c) in &configs {
            for pair in 0..links.pairs.len() {
                out.push(Job {
                    queue: q,
                    work: Work::Bulk(*s, c.clone()),
                    pair,
                });
            }
        }
    }
    let stream_pair = links
        .pairs
        .iter()
        .position(|p| p.0 == STREAM_LINK)
        .unwrap_or(0);
    for q in stream {
        out.push(Job {
            queue: q,
            work: Work::Stream,
            pair: stream_pair,
        });
    }
    Ok(out)
}

/// Runs the experiment on the evaluation's `links` with `params` (`--param`) on `threads`
/// threads (`None`: one per core), with a progress bar when `progress`.
pub fn run(
    settings: &AqmSettings,
    params: &[String],
    links: &LinkSet,
    threads: Option<usize>,
    progress: bool,
) -> Result<AqmResults> {
    if links.pairs.is_empty() {
        return Err(EvalError::BadParameter("aqm: no link pair".into()));
    }
    let plan = jobs(settings, params, links)?;
    let started = Instant::now();
    let pairs = &links.pairs;
    // A simulation's cost: the opportunities it replays, Sprout's ticks dearer.
    let dearness = |j: &Job| {
        let (_, up, down) = &pairs[j.pair];
        let per_tick = match &j.work {
            Work::Bulk(s, _) if s.uses_confidence() => 3.0,
            _ => 1.0,
        };
        (up.len() + down.len()) as f64 * per_tick
    };
    let message = |j: &Job| {
        let what = match &j.work {
            Work::Bulk(s, _) => s.key(),
            Work::Stream => "stream+cubic",
        };
        format!("aqm {} {} {what}", pairs[j.pair].0, j.queue.name)
    };
    let work = |j: &Job| {
        let (name, up, down) = &pairs[j.pair];
        run_one(j, name, (up, down), settings)
    };
    let outs =
        crate::parallel::run_costliest_first(&plan, threads, progress, (dearness, message), work)?;
    let (mut rows, mut stream) = (Vec::new(), Vec::new());
    for o in outs {
        match o? {
            Out::Bulk(r) => rows.extend(r),
            Out::Stream(s) => stream.push(s),
        }
    }
    Ok(AqmResults {
        settings: settings.clone(),
        links: pairs.iter().map(|p| p.0.clone()).collect(),
        source: links.source.clone(),
        averages: average_rows(&rows),
        rows,
        stream,
        simulations: plan.len(),
        wall_s: started.elapsed().as_secs_f64(),
    })
}

/// One simulation, 20 ms each way, the pair replayed whole, measured from the settings' skip.
fn run_one(
    j: &Job,
    name: &str,
    (up, down): (&Arc<Trace>, &Arc<Trace>),
    settings: &AqmSettings,
) -> Result<Out> {
    let mut cfg = SimConfig {
        skip: Duration::from_micros(settings.skip_us),
        ..SimConfig::default()
    };
    let what = match &j.work {
        Work::Bulk(s, c) => {
            s.configure(&mut cfg);
            cfg.protocol = c.clone();
            s.key()
        }
        Work::Stream => {
            stream_config(&mut cfg, settings.stream_kbps);
            "the interactive stream beside Cubic"
        }
    };
    j.queue.apply(&mut cfg.link);
    let out = sim::run(up.clone(), down.clone(), &cfg, None).map_err(|e| EvalError::SimRun {
        run: format!("aqm {name} / {} over {}", what, j.queue.name),
        source: e,
    })?;
    match &j.work {
        Work::Bulk(s, _) => {
            let row = |direction: &str, d: &DirectionRun| bulk_row(j, *s, name, direction, d);
            Ok(Out::Bulk(vec![
                row("down", &out.downlink),
                row("up", &out.uplink),
            ]))
        }
        Work::Stream => Ok(Out::Stream(stream_row(
            j,
            name,
            &out.downlink,
            out.duration,
        ))),
    }
}

/// Sets `cfg` to the interactive stream at `kbps` (`direct`, paced) beside a Cubic download,
/// the downlink loaded.
fn stream_config(cfg: &mut SimConfig, kbps: f64) {
    Scheme::Direct.configure(cfg);
    cfg.load = Load::Down;
    cfg.app = App::Constant {
        rate_bps: kbps * 1000.0,
        packet_bytes: STREAM_PACKET_BYTES,
    };
    cfg.cross = Some(CcKind::Cubic);
}

/// The interactive stream at `kbps` beside a Cubic download over `queue` on the link pair
/// `name` (`up`, `down`), measured from `skip_us`, for `duration_us` (`None`: the pair
/// replayed whole): the simulator's counterpart of an emulated run.
pub fn simulate_stream(
    queue: AqmQueue,
    (name, up, down): (&str, &Arc<Trace>, &Arc<Trace>),
    kbps: f64,
    (skip_us, duration_us): (u64, Option<u64>),
) -> Result<StreamRow> {
    let mut cfg = SimConfig {
        skip: Duration::from_micros(skip_us),
        duration: duration_us.map(Duration::from_micros),
        ..SimConfig::default()
    };
    stream_config(&mut cfg, kbps);
    queue.apply(&mut cfg.link);
    let out = sim::run(up.clone(), down.clone(), &cfg, None).map_err(|e| EvalError::SimRun {
        run: format!(
            "aqm {name} / the interactive stream beside Cubic over {}",
            queue.name
        ),
        source: e,
    })?;
    let j = Job {
        queue,
        work: Work::Stream,
        pair: 0,
    };
    Ok(stream_row(&j, name, &out.downlink, out.duration))
}

fn bulk_row(j: &Job, s: Scheme, link: &str, direction: &str, d: &DirectionRun) -> AqmRow {
    let m = &d.metrics;
    AqmRow {
        queue: j.queue.name.to_string(),
        scheme: s.key().to_string(),
        link: link.to_string(),
        direction: direction.to_string(),
        capacity_kbps: m.capacity_kbps,
        throughput_kbps: m.throughput_kbps,
        utilization: m.utilization,
        p95_delay_ms: m.p95_delay_ms,
        self_inflicted_ms: m.self_inflicted_ms,
        buffer_drops: d.link.packets_buffer_dropped,
        aqm_drops: d.link.packets_aqm_dropped,
        packets_delivered: d.link.packets_delivered,
    }
}

fn stream_row(j: &Job, link: &str, d: &DirectionRun, duration: Duration) -> StreamRow {
    let seconds = duration.as_secs_f64().max(1e-9);
    let app =
        |f: fn(&sprout_sim::app_metrics::AppMetrics) -> f64| d.app.as_ref().map_or(f64::NAN, f);
    StreamRow {
        queue: j.queue.name.to_string(),
        link: link.to_string(),
        direction: "down".into(),
        offered_kbps: app(|a| a.offered_kbps),
        delivered_kbps: app(|a| a.delivered_kbps),
        p50_ms: app(|a| a.delay_p50_ms),
        p95_ms: app(|a| a.delay_p95_ms),
        within_150ms: app(|a| a.within_150ms),
        download_kbps: d.cross_bytes as f64 * 8.0 / 1000.0 / seconds,
        capacity_kbps: d.metrics.capacity_kbps,
    }
}

/// The experiment as `sprout eval` runs it: nothing (an empty text) unless `experiments`
/// holds it; else at the default settings with the evaluation's skip and `--param` changes,
/// on `threads` threads with a progress bar when `progress`, its files written into `out`
/// (after report.md) and its table returned for the terminal.
pub fn run_if_asked(
    experiments: &[crate::experiment::Experiment],
    (skip_us, params): (u64, &[String]),
    (threads, progress): (Option<usize>, bool),
    links: &LinkSet,
    out: &std::path::Path,
) -> Result<String> {
    if !experiments.contains(&crate::experiment::Experiment::Aqm) {
        return Ok(String::new());
    }
    let settings = AqmSettings {
        skip_us,
        ..AqmSettings::default()
    };
    let res = run(&settings, params, links, threads, progress)?;
    crate::report::write_aqm(out, &res)?;
    Ok(crate::report::aqm_terminal_table(&res))
}
