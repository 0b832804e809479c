//! The whole emulated evaluation: every scheme on every link pair, emulated and simulated,
//! then the outputs.

use std::fs;
use std::sync::Arc;
use std::time::Instant;

use sprout_eval::aqm::AqmQueue;
use sprout_eval::eval::{self, ResultRow, RunLabel, Scheme};
use sprout_link::Trace;
use sprout_sim::logscore;
use sprout_sim::metrics::{self, DirectionMetrics, TimeSeriesPoint, Window};

use super::emulated::{link_config, run_emulated, Emulated};
use super::options::{EmulateOptions, DEFAULT_LINK, EMULATED_SCHEMES, EXTRA_EMULATED_SCHEMES};
use super::report;
use super::results::{Agreement, AppDelayRow, EmulateResults};
use super::simulated::{run_simulated, SimulatedRun};
use super::webrtc_report;
use crate::error::{Context, LabError};
use crate::webrtc_call;
use sprout_eval::progress;

/// A link pair: its name and its (uplink, downlink) traces.
type LinkPair = (String, Arc<Trace>, Arc<Trace>);

/// Runs the emulated evaluation and writes its outputs; returns a short summary.
pub fn run(opts: &EmulateOptions) -> Result<String, LabError> {
    check_options(opts)?;
    if opts.schemes.contains(&Scheme::Webrtc) {
        // Before any emulator starts: a missing aiortc is said at once, with how to install.
        webrtc_call::check_python(&opts.python)?;
    }
    sprout_emu::check_privileges()?;
    let links = eval::load_links(opts.traces.as_deref())?;
    let names: Vec<String> = if opts.links.is_empty() {
        vec![links.named(DEFAULT_LINK).0.clone()]
    } else {
        opts.links.clone()
    };
    let mut pairs: Vec<LinkPair> = Vec::new();
    for n in &names {
        let p = links
            .pairs
            .iter()
            .find(|p| p.0 == *n)
            .ok_or_else(|| LabError::no_link_pair(n, &links.source))?;
        pairs.push(p.clone());
    }
    fs::create_dir_all(&opts.out)
        .with_context(|| format!("creating output folder {}", opts.out.display()))?;
    let seconds = opts.duration_us / 1_000_000;
    let total = (pairs.len() * opts.schemes.len()) as u64 * seconds;
    let bar = progress::bar(total, " s", opts.progress);
    let started = Instant::now();
    let mut results = EmulateResults {
        source: links.source.clone(),
        duration_s: opts.duration_us as f64 / 1e6,
        skip_s: opts.skip_us as f64 / 1e6,
        rows: Vec::new(),
        agreement: Vec::new(),
        app_delays: Vec::new(),
        shape: Vec::new(),
        wall_s: 0.0,
    };
    let mut fig1: Option<Vec<TimeSeriesPoint>> = None;
    for (link, up, down) in &pairs {
        for &scheme in &opts.schemes {
            bar.set_message(format!("{link} {}", scheme.key()));
            let em = run_emulated(opts, link, up, down, scheme, &bar)
                .with_context(|| format!("emulating {} on {link}", scheme.key()))?;
            let sim = run_simulated(opts, up, down, scheme)?;
            if scheme == Scheme::Sprout && link == eval::FIGURE1_LINK {
                let (arrivals, opportunities) = logscore::from_log(&em.down_log);
                fig1 = Some(metrics::time_series(
                    &arrivals,
                    &opportunities,
                    1500,
                    Window::new(
                        sprout_core::time::Instant::ZERO,
                        sprout_core::time::Instant::from_micros(opts.duration_us),
                    ),
                    sprout_core::time::Duration::from_millis(500),
                ));
            }
            add_scheme(&mut results, (link, opts.queue.as_ref()), scheme, &em, &sim);
        }
    }
    bar.finish_and_clear();
    results.shape = webrtc_report::shape_checks(&results);
    results.wall_s = started.elapsed().as_secs_f64();
    report::write(&opts.out, &results, fig1.as_deref())?;
    Ok(report::summary(&results, &opts.out))
}

/// Fails unless the options name schemes the emulator runs and a non-empty measured window.
fn check_options(opts: &EmulateOptions) -> Result<(), LabError> {
    if opts.schemes.is_empty() {
        return Err(LabError::Invalid("no scheme given".into()));
    }
    let runnable = |s: &Scheme| EMULATED_SCHEMES.contains(s) || EXTRA_EMULATED_SCHEMES.contains(s);
    if let Some(s) = opts.schemes.iter().find(|s| !runnable(s)) {
        let known: Vec<&str> = EMULATED_SCHEMES
            .iter()
            .chain(&EXTRA_EMULATED_SCHEMES)
            .map(|s| s.key())
            .collect();
        return Err(LabError::Invalid(format!(
            "scheme {} cannot be emulated (emulated schemes: {})",
            s.key(),
            known.join(", ")
        )));
    }
    if opts.skip_us >= opts.duration_us {
        return Err(LabError::Invalid(
            "the skipped time must be shorter than the run".into(),
        ));
    }
    Ok(())
}

/// Adds one scheme's results on one link (over `queue`, if not its own): its four rows, their two agreements and, for a
/// scheme that carried video, the frame delays of the call and of its model.
fn add_scheme(
    res: &mut EmulateResults,
    (link, queue): (&str, Option<&AqmQueue>),
    scheme: Scheme,
    em: &Emulated,
    [s_down, s_up]: &[SimulatedRun; 2],
) {
    let emulated = [(0, &em.down), (0, &em.up)];
    let simulated = [(s_down.0, &s_down.1), (s_up.0, &s_up.1)];
    push_rows(&mut res.rows, link, scheme, emulated, simulated, queue);
    let rows = &res.rows;
    let n = rows.len();
    res.agreement
        .push(Agreement::new(&rows[n - 4], &rows[n - 2]));
    res.agreement
        .push(Agreement::new(&rows[n - 3], &rows[n - 1]));
    if let Some((offer, answer)) = &em.call {
        res.app_delays
            .push(AppDelayRow::from_call(link, "down", offer));
        res.app_delays
            .push(AppDelayRow::from_call(link, "up", answer));
    }
    for (dir, run) in [("down", s_down), ("up", s_up)] {
        if let Some(app) = &run.2 {
            let model = scheme.sim_model();
            res.app_delays
                .push(AppDelayRow::from_sim(link, dir, model.key(), app));
        }
    }
}

/// Appends the four rows of one scheme on one link: emulated down and up, then simulated down
/// and up, each given as [(seed, metrics) down, (seed, metrics) up]. The simulated rows are
/// of the scheme's model ([`Scheme::sim_model`]: gcc for `webrtc`); their queue is `aqm`'s
/// name when given, else the scheme's own.
fn push_rows(
    rows: &mut Vec<ResultRow>,
    link: &str,
    scheme: Scheme,
    emulated: [(u64, &DirectionMetrics); 2],
    simulated: [(u64, &DirectionMetrics); 2],
    aqm: Option<&AqmQueue>,
) {
    let queue = link_config(scheme, aqm).queue;
    let first = rows.len();
    for (experiment, [(down_seed, down_m), (up_seed, up_m)]) in
        [("emulated", emulated), ("simulated", simulated)]
    {
        let label = |seed| RunLabel {
            experiment,
            link,
            scheme: if experiment == "emulated" {
                scheme
            } else {
                scheme.sim_model()
            },
            confidence: scheme
                .is_sprout()
                .then(|| scheme.protocol_config().confidence),
            loss: 0.0,
            seed,
            queue: &queue,
            with_paper: aqm.is_none(),
        };
        rows.push(ResultRow::new(&label(down_seed), "down", down_m));
        rows.push(ResultRow::new(&label(up_seed), "up", up_m));
    }
    if let Some(q) = aqm {
        for r in &mut rows[first..] {
            r.queue = q.name.to_string();
        }
    }
}
