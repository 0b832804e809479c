//! What a Saturator check produced: one row per link and direction.

use serde::{Deserialize, Serialize};
use sprout_saturator::Summary;

use super::compare::SecondsComparison;
use super::sprout::SproutComparison;

/// The checks of one direction of one link.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct DirectionResult {
    /// Link pair.
    pub link: String,
    /// "up" or "down".
    pub direction: String,
    /// "plain" or the loss/outage variant.
    pub variant: String,
    /// The recording completed (both files and summaries came back).
    pub completed: bool,
    /// The per-second and total comparison.
    pub seconds: SecondsComparison,
    /// Sprout on the recording against Sprout on the replay (plain variant only).
    pub sprout: Option<SproutComparison>,
    /// The recording's own summary.
    pub summary: Summary,
    /// Loss variant: whether the summary's loss is within 1 point or 20% of the injected loss.
    pub loss_reported_ok: Option<bool>,
    /// Outage variant: whether the summary reports a gap at least as long as the outage.
    pub outage_reported_ok: Option<bool>,
    /// The emulator's delivered bytes over its offered bytes during the run (how busy the
    /// Saturator kept the link; the warm-up and the end count too). `None` when simulated.
    pub link_utilization: Option<f64>,
    /// The emulator's lateness (its write of a packet to the TUN device, when the recording's
    /// kernel timestamp is taken, after the delivery time of its model), µs: median, 99th
    /// percentile and largest. `None` when simulated.
    pub emulator_late_us: Option<[u64; 3]>,
    /// Every check of this row passed.
    pub ok: bool,
}

/// Everything a check produced.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CheckResults {
    /// Where the traces came from.
    pub source: String,
    /// "plain" or the variant.
    pub variant: String,
    /// "emulator" or "link model (virtual clock)".
    pub replay: String,
    /// First second compared.
    pub from_s: u64,
    /// Seconds compared.
    pub seconds: u64,
    /// Injected loss.
    pub loss: f64,
    /// Injected outage, `[from, from + len)` ms of the replayed trace (len 0: none).
    pub outage_ms: (u64, u64),
    /// One row per link and direction.
    pub rows: Vec<DirectionResult>,
    /// Every check passed.
    pub all_ok: bool,
    /// Wall-clock time, s.
    pub wall_s: f64,
}
