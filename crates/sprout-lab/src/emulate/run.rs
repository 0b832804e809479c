//! The whole emulated evaluation: every scheme on every link pair, emulated and simulated,
//! then the outputs.

use std::fs;
use std::sync::Arc;
use std::time::Instant;

use sprout_eval::eval::{self, ResultRow, RunLabel, Scheme};
use sprout_link::Trace;
use sprout_sim::logscore;
use sprout_sim::metrics::{self, DirectionMetrics, TimeSeriesPoint, Window};

use super::emulated::{link_config, run_emulated};
use super::error::EmulateError;
use super::options::{EmulateOptions, DEFAULT_LINK, EMULATED_SCHEMES};
use super::report;
use super::results::{Agreement, EmulateResults};
use super::simulated::run_simulated;
use sprout_eval::progress;

/// A link pair: its name and its (uplink, downlink) traces.
type LinkPair = (String, Arc<Trace>, Arc<Trace>);

/// Runs the emulated evaluation and writes its outputs; returns a short summary.
pub fn run(opts: &EmulateOptions) -> Result<String, EmulateError> {
    check_options(opts)?;
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
            .ok_or_else(|| EmulateError::NoLinkPair {
                name: n.clone(),
                traces: links.source.clone(),
            })?;
        pairs.push(p.clone());
    }
    fs::create_dir_all(&opts.out).map_err(|source| EmulateError::CreateOutput {
        path: opts.out.clone(),
        source,
    })?;
    let seconds = opts.duration_us / 1_000_000;
    let total = (pairs.len() * opts.schemes.len()) as u64 * seconds;
    let bar = progress::bar(total, " s", opts.progress);
    let started = Instant::now();
    let mut rows = Vec::new();
    let mut agreement = Vec::new();
    let mut fig1: Option<Vec<TimeSeriesPoint>> = None;
    for (link, up, down) in &pairs {
        for &scheme in &opts.schemes {
            bar.set_message(format!("{link} {}", scheme.key()));
            let (e_down, e_up, down_log) = run_emulated(opts, link, up, down, scheme, &bar)
                .map_err(|e| EmulateError::Run {
                    scheme: scheme.key().into(),
                    link: link.clone(),
                    source: Box::new(e),
                })?;
            let [s_down, s_up] = run_simulated(opts, up, down, scheme)?;
            if scheme == Scheme::Sprout && link == eval::FIGURE1_LINK {
                let (arrivals, opportunities) = logscore::from_log(&down_log);
                fig1 = Some(metrics::time_series(
                    &arrivals,
                    &opportunities,
                    1500,
                    Window::new(0, opts.duration_us),
                    500_000,
                ));
            }
            let emulated = [(0, &e_down), (0, &e_up)];
            let simulated = [(s_down.0, &s_down.1), (s_up.0, &s_up.1)];
            push_rows(&mut rows, link, scheme, emulated, simulated);
            let n = rows.len();
            agreement.push(Agreement::new(&rows[n - 4], &rows[n - 2]));
            agreement.push(Agreement::new(&rows[n - 3], &rows[n - 1]));
        }
    }
    bar.finish_and_clear();
    let results = EmulateResults {
        source: links.source.clone(),
        duration_s: opts.duration_us as f64 / 1e6,
        skip_s: opts.skip_us as f64 / 1e6,
        rows,
        agreement,
        wall_s: started.elapsed().as_secs_f64(),
    };
    report::write(&opts.out, &results, fig1.as_deref())?;
    Ok(report::summary(&results, &opts.out))
}

/// Fails unless the options name schemes the emulator runs and a non-empty measured window.
fn check_options(opts: &EmulateOptions) -> Result<(), EmulateError> {
    if opts.schemes.is_empty() {
        return Err(EmulateError::NoScheme);
    }
    if let Some(s) = opts.schemes.iter().find(|s| !EMULATED_SCHEMES.contains(s)) {
        let known: Vec<&str> = EMULATED_SCHEMES.iter().map(|s| s.key()).collect();
        return Err(EmulateError::NotEmulated {
            scheme: s.key().into(),
            known: known.join(", "),
        });
    }
    if opts.skip_us >= opts.duration_us {
        return Err(EmulateError::SkipTooLong);
    }
    Ok(())
}

/// Appends the four rows of one scheme on one link: emulated down and up, then simulated down
/// and up, each given as [(seed, metrics) down, (seed, metrics) up].
fn push_rows(
    rows: &mut Vec<ResultRow>,
    link: &str,
    scheme: Scheme,
    emulated: [(u64, &DirectionMetrics); 2],
    simulated: [(u64, &DirectionMetrics); 2],
) {
    let queue = link_config(scheme).queue;
    for (experiment, [(down_seed, down_m), (up_seed, up_m)]) in
        [("emulated", emulated), ("simulated", simulated)]
    {
        let label = |seed| RunLabel {
            experiment,
            link,
            scheme,
            confidence: scheme
                .is_sprout()
                .then(|| scheme.protocol_config().confidence),
            loss: 0.0,
            seed,
            queue: &queue,
            with_paper: true,
        };
        rows.push(ResultRow::new(&label(down_seed), "down", down_m));
        rows.push(ResultRow::new(&label(up_seed), "up", up_m));
    }
}
