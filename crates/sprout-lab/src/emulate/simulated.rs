//! The simulator on an emulated run's configuration: the runs an emulated result is compared
//! with.

use std::sync::Arc;

use sprout_core::time::Duration;
use sprout_eval::eval::Scheme;
use sprout_link::Trace;
use sprout_sim::app_metrics::AppMetrics;
use sprout_sim::metrics::DirectionMetrics;
use sprout_sim::sim::{self, SimConfig};

use super::options::EmulateOptions;
use super::results::SIMULATED_SEEDS;
use crate::error::LabError;

/// One simulated direction: its seed, metrics and application-level figures (for a scheme
/// that carries an application: `webrtc`'s model).
pub(super) type SimulatedRun = (u64, DirectionMetrics, Option<AppMetrics>);

/// The simulator's median (downlink, uplink) runs for the same configuration over
/// [`SIMULATED_SEEDS`]: per direction, the run with the median self-inflicted delay. A
/// scheme runs as its model ([`Scheme::sim_model`]: gcc for `webrtc`) carrying its natural
/// application, if it has one ([`Scheme::natural_app`]: the call's adaptive video).
pub(super) fn run_simulated(
    opts: &EmulateOptions,
    up: &Arc<Trace>,
    down: &Arc<Trace>,
    scheme: Scheme,
) -> Result<[SimulatedRun; 2], LabError> {
    let mut cfg = SimConfig {
        skip: Duration::from_micros(opts.skip_us),
        duration: Some(Duration::from_micros(opts.duration_us)),
        ..SimConfig::default()
    };
    scheme.sim_model().configure(&mut cfg);
    if let Some(q) = &opts.queue {
        q.apply(&mut cfg.link);
    }
    if let Some(app) = scheme.natural_app() {
        cfg.app = app;
    }
    let (mut downs, mut ups) = (Vec::new(), Vec::new());
    for seed in SIMULATED_SEEDS {
        cfg.seed = seed;
        let out = sim::run(up.clone(), down.clone(), &cfg, None)?;
        downs.push((seed, out.downlink.metrics, out.downlink.app));
        ups.push((seed, out.uplink.metrics, out.uplink.app));
    }
    let delay = |r: &SimulatedRun| r.1.self_inflicted_ms;
    Ok([median_by(downs, delay), median_by(ups, delay)])
}

/// The element whose `key` is the median (the upper one of an even count). Panics on none.
fn median_by<T>(mut items: Vec<T>, key: impl Fn(&T) -> f64) -> T {
    items.sort_by(|a, b| key(a).total_cmp(&key(b)));
    items.swap_remove(items.len() / 2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_by_takes_the_middle_key() {
        let runs = vec![(1, 30.0), (2, 10.0), (3, 50.0), (4, 20.0), (5, 40.0)];
        assert_eq!(median_by(runs, |r| r.1), (1, 30.0));
        assert_eq!(median_by(vec![(1, 5.0), (2, 1.0)], |r| r.1), (1, 5.0));
    }
}
