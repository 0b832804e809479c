//! The experiment's rows, their averages over groups of link directions, and the verdicts.

use serde::{Deserialize, Serialize};

use super::dominance::{best_gap, dominating_pairs, gaps, CurvePoint, Gap};
use super::links::{LinkCase, X1};
use super::models::{FrontierSettings, ALL, FIGURE9_LINK};

/// One model at one point on one link direction (frontier.csv's row).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FrontierRow {
    /// The model's name ([`super::FrontierModel::name`]).
    pub model: String,
    /// The link's set: `x1` (the evaluation's links), `x4`, `x16` or `synthetic`.
    pub set: String,
    /// `confidence` or `gain`.
    pub knob: String,
    /// The knob's value.
    pub value: f64,
    /// The link pair's name.
    pub link: String,
    /// "down" or "up".
    pub direction: String,
    /// The direction's capacity over the measured window, kbit/s.
    pub capacity_kbps: f64,
    /// Throughput, kbit/s.
    pub throughput_kbps: f64,
    /// Throughput over capacity, 0..1.
    pub utilization: f64,
    /// Self-inflicted delay (the paper's: 95th-percentile delay above the omniscient
    /// sender's), ms.
    pub self_inflicted_ms: f64,
}

/// One model at one point, averaged over a group of link directions.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FrontierAverage {
    /// [`ALL`] (every direction of the `x1` set), an `x1` link pair's name (its two
    /// directions) or a further set's name (every direction of it: `x4`, `synthetic`).
    pub group: String,
    /// The model's name.
    pub model: String,
    /// `confidence` or `gain`.
    pub knob: String,
    /// The knob's value.
    pub value: f64,
    /// Mean utilization, 0..1.
    pub utilization: f64,
    /// Mean self-inflicted delay, ms.
    pub self_inflicted_ms: f64,
    /// Directions averaged.
    pub directions: usize,
}

/// A Bayesian model against Sprout-EWMA on one group's averages.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// The group ([`ALL`] or a link pair's name).
    pub group: String,
    /// The model's name.
    pub model: String,
    /// Every `(model's confidence, Sprout-EWMA's gain)` whose model point dominates the
    /// Sprout-EWMA point ([`super::dominates`]).
    pub dominating: Vec<(f64, f64)>,
    /// The model's shortfall against each Sprout-EWMA point whose delay its curve reaches
    /// ([`gaps`]).
    pub gaps: Vec<Gap>,
    /// The smallest of them ([`best_gap`]).
    pub best_gap: Option<Gap>,
}

/// Everything the experiment produced (frontier.json).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FrontierResults {
    /// What ran.
    pub settings: FrontierSettings,
    /// The link pairs, in order.
    pub links: Vec<String>,
    /// Each set of links beyond `x1`, in order, with its pairs' names.
    pub sets: Vec<(String, Vec<String>)>,
    /// Where they came from.
    pub source: String,
    /// Every model, point and direction.
    pub rows: Vec<FrontierRow>,
    /// Per group, model and point.
    pub averages: Vec<FrontierAverage>,
    /// Per verdict group ([`ALL`], then [`FIGURE9_LINK`] when it ran) and Bayesian model.
    pub verdicts: Vec<Verdict>,
    /// Simulations run.
    pub simulations: usize,
    /// Wall time, s.
    pub wall_s: f64,
}

impl FrontierResults {
    /// `model`'s curve on `group`: its averaged points in knob order.
    pub fn curve(&self, group: &str, model: &str) -> Vec<CurvePoint> {
        curve(&self.averages, group, model)
    }

    /// The groups with a verdict: [`ALL`], [`FIGURE9_LINK`] when it is one of the links,
    /// then each further set.
    pub fn verdict_groups(&self) -> Vec<String> {
        let mut g = vec![ALL.to_string()];
        if self.links.iter().any(|l| l == FIGURE9_LINK) {
            g.push(FIGURE9_LINK.to_string());
        }
        g.extend(self.sets.iter().map(|s| s.0.clone()));
        g
    }
}

/// The sets beyond `x1` of these link cases, in order, with their pairs' names.
pub fn sets_of(cases: &[LinkCase]) -> Vec<(String, Vec<String>)> {
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    for c in cases.iter().filter(|c| c.set != X1) {
        match out.iter_mut().find(|s| s.0 == c.set) {
            Some(s) => s.1.push(c.name.clone()),
            None => out.push((c.set.clone(), vec![c.name.clone()])),
        }
    }
    out
}

/// Whether `row` is averaged in `group`: [`ALL`] holds the `x1` rows, an `x1` pair's name its
/// rows, a further set's name its rows.
fn in_group(group: &str, row: &FrontierRow) -> bool {
    if row.set == X1 {
        group == ALL || group == row.link
    } else {
        group == row.set
    }
}

/// Per group ([`ALL`], each `x1` link pair in the rows' order, then each further set in the
/// rows' order), model and point in the rows' order, the mean utilization and self-inflicted
/// delay of its directions.
pub fn average_rows(rows: &[FrontierRow]) -> Vec<FrontierAverage> {
    let mut out: Vec<FrontierAverage> = Vec::new();
    let mut groups: Vec<&str> = vec![ALL];
    for r in rows.iter().filter(|r| r.set == X1) {
        if !groups.contains(&r.link.as_str()) {
            groups.push(&r.link);
        }
    }
    for r in rows.iter().filter(|r| r.set != X1) {
        if !groups.contains(&r.set.as_str()) {
            groups.push(&r.set);
        }
    }
    for g in groups {
        for r in rows.iter().filter(|r| in_group(g, r)) {
            let i = match out
                .iter()
                .position(|a| a.group == g && a.model == r.model && a.value == r.value)
            {
                Some(i) => i,
                None => {
                    out.push(FrontierAverage {
                        group: g.to_string(),
                        model: r.model.clone(),
                        knob: r.knob.clone(),
                        value: r.value,
                        utilization: 0.0,
                        self_inflicted_ms: 0.0,
                        directions: 0,
                    });
                    out.len() - 1
                }
            };
            out[i].utilization += r.utilization;
            out[i].self_inflicted_ms += r.self_inflicted_ms;
            out[i].directions += 1;
        }
    }
    for a in &mut out {
        let n = a.directions.max(1) as f64;
        a.utilization /= n;
        a.self_inflicted_ms /= n;
    }
    out
}

/// `model`'s averaged points on `group`, in the averages' order.
pub fn curve(averages: &[FrontierAverage], group: &str, model: &str) -> Vec<CurvePoint> {
    averages
        .iter()
        .filter(|a| a.group == group && a.model == model)
        .map(|a| CurvePoint {
            value: a.value,
            utilization: a.utilization,
            delay_ms: a.self_inflicted_ms,
        })
        .collect()
}

/// The verdicts of every Bayesian model of `models` against `ewma` on each of `groups`.
pub fn verdicts(
    averages: &[FrontierAverage],
    groups: &[String],
    models: &[String],
    ewma: &str,
) -> Vec<Verdict> {
    let mut out = Vec::new();
    for g in groups {
        let other = curve(averages, g, ewma);
        for m in models.iter().filter(|m| m.as_str() != ewma) {
            let mine = curve(averages, g, m);
            out.push(Verdict {
                group: g.clone(),
                model: m.clone(),
                dominating: dominating_pairs(&mine, &other)
                    .into_iter()
                    .map(|(i, j)| (mine[i].value, other[j].value))
                    .collect(),
                gaps: gaps(&mine, &other),
                best_gap: best_gap(&mine, &other),
            });
        }
    }
    out
}
