//! The experiment's links, in sets: the evaluation's trace pairs as they are (`x1`, replayed
//! whole), the same scaled (`x4`, `x16`: [`sprout_link::scale`], as `sprout traces scale`
//! and the rates experiment scale them) and synthetic links (`synthetic`: the paper's own
//! link model at two seeds and a stepwise link), the last three replayed for
//! [`super::FrontierSettings::extra_duration_us`] only.

use std::sync::Arc;

use sprout_link::{StepwiseLink, SyntheticLink, Trace};

use super::FrontierSettings;
use crate::error::{EvalError, Result};
use crate::traces::LinkSet;

/// The set of the evaluation's links as they are.
pub const X1: &str = "x1";
/// The set of the synthetic links.
pub const SYNTHETIC: &str = "synthetic";
/// The paper-model synthetic links' seeds (the uplink's is the downlink's plus 1,000).
pub const SYNTHETIC_SEEDS: [u64; 2] = [1, 2];
/// The stepwise link's rates, Mbit/s: 0.5 to 12 (the paper's model's range, 42 to 1,000
/// packets/s), a new rate drawn log-uniformly every second.
pub const STEPWISE_MBIT: (f64, f64) = (0.5, 12.0);

/// One link pair of the experiment.
#[derive(Clone, Debug)]
pub struct LinkCase {
    /// Its set: [`X1`], `x4`, `x16` ([`scale_set`]) or [`SYNTHETIC`].
    pub set: String,
    /// The pair's name.
    pub name: String,
    /// The uplink's trace.
    pub up: Arc<Trace>,
    /// The downlink's trace.
    pub down: Arc<Trace>,
    /// How long a run lasts, simulated µs (`None`: the pair replayed whole).
    pub duration_us: Option<u64>,
}

/// The set of the links scaled by `factor`: `x4`.
pub fn scale_set(factor: f64) -> String {
    format!("x{factor}")
}

/// Every link pair of the experiment: the evaluation's, then each scale's, then the
/// synthetic ones.
pub fn cases(settings: &FrontierSettings, links: &LinkSet) -> Result<Vec<LinkCase>> {
    let bad = |why: String| EvalError::BadParameter(format!("frontier: {why}"));
    let mut out: Vec<LinkCase> = links
        .pairs
        .iter()
        .map(|(name, up, down)| LinkCase {
            set: X1.into(),
            name: name.clone(),
            up: up.clone(),
            down: down.clone(),
            duration_us: None,
        })
        .collect();
    let extra = Some(settings.extra_duration_us);
    for &factor in &settings.scales {
        for (name, up, down) in &links.pairs {
            let s = |t: &Trace, dir: &str| -> Result<Arc<Trace>> {
                sprout_link::scale::scale(t, factor, format!("{name}.{dir}x{factor}"))
                    .map(Arc::new)
                    .map_err(|e| bad(e.to_string()))
            };
            out.push(LinkCase {
                set: scale_set(factor),
                name: name.clone(),
                up: s(up, "up")?,
                down: s(down, "down")?,
                duration_us: extra,
            });
        }
    }
    if settings.synthetic {
        let seconds = settings.extra_duration_us as f64 / 1e6;
        for seed in SYNTHETIC_SEEDS {
            let link = |seed: u64, dir: &str| {
                let l = SyntheticLink {
                    seed,
                    duration_s: seconds,
                    ..SyntheticLink::default()
                };
                Arc::new(l.generate(format!("paper-model-{seed}.{dir}")))
            };
            out.push(LinkCase {
                set: SYNTHETIC.into(),
                name: format!("paper model, seed {seed}"),
                up: link(seed + 1000, "up"),
                down: link(seed, "down"),
                duration_us: extra,
            });
        }
        let step = |seed: u64, dir: &str| -> Result<Arc<Trace>> {
            let l = StepwiseLink {
                seed,
                duration_s: seconds,
                step_s: 1.0,
                min_mbit: STEPWISE_MBIT.0,
                max_mbit: STEPWISE_MBIT.1,
            };
            l.generate(format!("stepwise-{seed}.{dir}"))
                .map(Arc::new)
                .map_err(|e| bad(e.to_string()))
        };
        out.push(LinkCase {
            set: SYNTHETIC.into(),
            name: format!(
                "stepwise {}-{} Mbit/s, seed 1",
                STEPWISE_MBIT.0, STEPWISE_MBIT.1
            ),
            up: step(1001, "up")?,
            down: step(1, "down")?,
            duration_us: extra,
        });
    }
    Ok(out)
}
