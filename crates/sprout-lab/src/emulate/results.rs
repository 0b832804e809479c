//! What an emulated evaluation produced: its rows and the agreement of each emulated result
//! with the simulator's on the same configuration.

use serde::{Deserialize, Serialize};
use sprout_eval::eval::ResultRow;

/// Seeds of the simulated runs an emulated run is compared with. Each starts the two endpoints
/// at its own random offsets (0-100 ms), as a real run does, rather than both at 0 (seed 0).
pub const SIMULATED_SEEDS: std::ops::RangeInclusive<u64> = 1..=5;

/// Everything an emulated evaluation produced.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct EmulateResults {
    /// Where the traces came from.
    pub source: String,
    /// Length of each run, s.
    pub duration_s: f64,
    /// Seconds skipped before measuring.
    pub skip_s: f64,
    /// Rows of the emulated runs (experiment `emulated`) and of the simulator on the same
    /// configuration (experiment `simulated`).
    pub rows: Vec<ResultRow>,
    /// One comparison per link, direction and scheme.
    pub agreement: Vec<Agreement>,
    /// Wall-clock time, s.
    pub wall_s: f64,
}

/// The emulated and simulated results of one link, direction and scheme, and whether they agree
/// within the tolerances (Sprout: throughput within 15%, self-inflicted delay within
/// 30 ms or 25%, whichever is larger; TCP: throughput within 25%, delay within a factor of 2).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Agreement {
    /// Link name.
    pub link: String,
    /// "up" or "down".
    pub direction: String,
    /// Scheme key.
    pub scheme: String,
    /// Emulated throughput, kbit/s.
    pub emulated_kbps: f64,
    /// Simulated throughput, kbit/s.
    pub simulated_kbps: f64,
    /// Emulated self-inflicted delay, ms.
    pub emulated_delay_ms: f64,
    /// Simulated self-inflicted delay, ms.
    pub simulated_delay_ms: f64,
    /// emulated / simulated throughput.
    pub throughput_ratio: f64,
    /// Whether throughput and delay agree within the scheme's tolerance.
    pub agrees: bool,
    /// The tolerance applied, in words.
    pub tolerance: String,
}

impl Agreement {
    /// Compares an emulated row `e` with the simulated row `s` of the same link, direction and
    /// scheme.
    pub(crate) fn new(e: &ResultRow, s: &ResultRow) -> Agreement {
        let ratio = e.throughput_kbps / s.throughput_kbps.max(1e-9);
        let (de, ds) = (e.self_inflicted_ms, s.self_inflicted_ms);
        let sprout = e.scheme.starts_with("sprout");
        let (agrees, tolerance) = if sprout {
            let allowed = 30.0f64.max(0.25 * ds.abs());
            (
                (ratio - 1.0).abs() <= 0.15 && (de - ds).abs() <= allowed,
                "throughput ±15%, delay ±max(30 ms, 25%)".to_string(),
            )
        } else {
            // A factor of 2 on delays that may be near zero: compare with a 1 ms floor.
            let (a, b) = (de.max(1.0), ds.max(1.0));
            (
                (ratio - 1.0).abs() <= 0.25 && a / b <= 2.0 && b / a <= 2.0,
                "throughput ±25%, delay within 2x".to_string(),
            )
        };
        Agreement {
            link: e.link.clone(),
            direction: e.direction.clone(),
            scheme: e.scheme.clone(),
            emulated_kbps: e.throughput_kbps,
            simulated_kbps: s.throughput_kbps,
            emulated_delay_ms: de,
            simulated_delay_ms: ds,
            throughput_ratio: ratio,
            agrees,
            tolerance,
        }
    }
}
