//! The tables computed from the results: the introduction's (summary.csv), the seeds' spread
//! (sensitivity.csv) and the model variants' averages (model.csv).

use serde::Serialize;

use crate::experiment::{Experiment, MODEL_VARIANTS};
use crate::paper;
use crate::results::{EvalResults, ResultRow};

/// A row of summary.csv: the introduction's table, ours beside the paper's.
#[derive(Clone, Debug, Serialize)]
pub struct SummaryRow {
    /// Scheme key.
    pub scheme: String,
    /// Sprout's average throughput / the scheme's (averages over the link directions).
    pub sprout_speedup: f64,
    /// The mean over the link directions of Sprout's throughput / the scheme's (dominated by
    /// any direction where the scheme nearly starves).
    pub sprout_speedup_mean_of_ratios: f64,
    /// The scheme's average self-inflicted delay / Sprout's.
    pub delay_reduction: f64,
    /// The scheme's average self-inflicted delay, s.
    pub self_inflicted_s: f64,
    /// The paper's speedup.
    pub paper_sprout_speedup: Option<f64>,
    /// The paper's average self-inflicted delay, s.
    pub paper_self_inflicted_s: Option<f64>,
}

/// The introduction's table computed from the `fig7` rows.
pub fn summary_rows(res: &EvalResults) -> Vec<SummaryRow> {
    let fig7: Vec<&ResultRow> = res.rows_of(Experiment::Fig7).collect();
    let sprout_avg = match res.average("sprout") {
        Some(a) => a,
        None => return Vec::new(),
    };
    res.averages
        .iter()
        .map(|a| {
            let mut ratios = Vec::new();
            for r in fig7.iter().filter(|r| r.scheme == a.scheme) {
                if let Some(sp) = fig7.iter().find(|s| {
                    s.scheme == "sprout" && s.link == r.link && s.direction == r.direction
                }) {
                    if r.throughput_kbps > 0.0 {
                        ratios.push(sp.throughput_kbps / r.throughput_kbps);
                    }
                }
            }
            let p = paper::intro(&a.scheme);
            SummaryRow {
                scheme: a.scheme.clone(),
                sprout_speedup: sprout_avg.throughput_kbps / a.throughput_kbps.max(1e-9),
                sprout_speedup_mean_of_ratios: ratios.iter().sum::<f64>()
                    / ratios.len().max(1) as f64,
                delay_reduction: a.self_inflicted_ms / sprout_avg.self_inflicted_ms.max(1e-9),
                self_inflicted_s: a.self_inflicted_ms / 1000.0,
                paper_sprout_speedup: p.map(|p| p.sprout_speedup),
                paper_self_inflicted_s: p.map(|p| p.self_inflicted_s),
            }
        })
        .collect()
}

/// A row of sensitivity.csv: one link, direction and scheme over the seeds.
#[derive(Clone, Debug, Serialize)]
pub struct SpreadRow {
    /// Link name.
    pub link: String,
    /// "up" or "down".
    pub direction: String,
    /// Scheme key.
    pub scheme: String,
    /// Runs (seeds).
    pub runs: usize,
    /// Mean throughput, kbit/s.
    pub throughput_mean_kbps: f64,
    /// Standard deviation of the throughput, kbit/s.
    pub throughput_std_kbps: f64,
    /// Mean self-inflicted delay, ms.
    pub self_inflicted_mean_ms: f64,
    /// Standard deviation of the self-inflicted delay, ms.
    pub self_inflicted_std_ms: f64,
}

fn mean_std(xs: &[f64]) -> (f64, f64) {
    let n = xs.len().max(1) as f64;
    let m = xs.iter().sum::<f64>() / n;
    let v = xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0).max(1.0);
    (m, v.sqrt())
}

/// The sensitivity experiment's means and standard deviations.
pub fn spread_rows(res: &EvalResults) -> Vec<SpreadRow> {
    let mut keys: Vec<(String, String, String)> = Vec::new();
    for r in res.rows_of(Experiment::Sensitivity) {
        let k = (r.link.clone(), r.direction.clone(), r.scheme.clone());
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    keys.into_iter()
        .map(|(link, direction, scheme)| {
            let runs: Vec<&ResultRow> = res
                .rows_of(Experiment::Sensitivity)
                .filter(|r| r.link == link && r.direction == direction && r.scheme == scheme)
                .collect();
            let t: Vec<f64> = runs.iter().map(|r| r.throughput_kbps).collect();
            let d: Vec<f64> = runs.iter().map(|r| r.self_inflicted_ms).collect();
            let (tm, ts) = mean_std(&t);
            let (dm, ds) = mean_std(&d);
            SpreadRow {
                link,
                direction,
                scheme,
                runs: runs.len(),
                throughput_mean_kbps: tm,
                throughput_std_kbps: ts,
                self_inflicted_mean_ms: dm,
                self_inflicted_std_ms: ds,
            }
        })
        .collect()
}

/// Sprout's averages over every link direction under one variant of the receiver's model
/// (the `model` experiment; a row of `model.csv`).
#[derive(Clone, Debug, Serialize)]
pub struct VariantRow {
    /// The variant's name ([`MODEL_VARIANTS`]).
    pub variant: String,
    /// What it changes.
    pub change: String,
    /// Link directions averaged.
    pub directions: usize,
    /// Mean utilization, 0..1.
    pub utilization: f64,
    /// Mean throughput, kbit/s.
    pub throughput_kbps: f64,
    /// Mean self-inflicted delay, ms.
    pub self_inflicted_ms: f64,
}

/// The `model` experiment's averages, one row per variant, in [`MODEL_VARIANTS`] order.
pub fn variant_rows(res: &EvalResults) -> Vec<VariantRow> {
    MODEL_VARIANTS
        .iter()
        .filter_map(|(name, change, _)| {
            let rows: Vec<&ResultRow> = res
                .rows_of(Experiment::Model)
                .filter(|r| r.variant == *name)
                .collect();
            if rows.is_empty() {
                return None;
            }
            let n = rows.len() as f64;
            let mean = |f: fn(&ResultRow) -> f64| rows.iter().map(|r| f(r)).sum::<f64>() / n;
            Some(VariantRow {
                variant: name.to_string(),
                change: change.to_string(),
                directions: rows.len(),
                utilization: mean(|r| r.utilization),
                throughput_kbps: mean(|r| r.throughput_kbps),
                self_inflicted_ms: mean(|r| r.self_inflicted_ms),
            })
        })
        .collect()
}
