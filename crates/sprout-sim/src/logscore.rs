//! The paper's metrics recomputed from a mahimahi mm-link log, so any run (ours, or mahimahi's
//! own) can be scored the same way and checked independently.

use sprout_core::time::{Duration, Instant};
use sprout_link::MmLog;

use crate::metrics::{self, Arrival, DirectionMetrics, Window};

/// Arrivals and opportunity times (microseconds) read back from a log. A departure's send time
/// is its departure minus its queueing delay minus the propagation delay recorded in the log
/// (0 if the log has none, as with mahimahi's own logs, where the delay shell is separate).
pub fn from_log(log: &MmLog) -> (Vec<Arrival>, Vec<u64>) {
    let prop_ms = log.propagation_delay_ms.unwrap_or(0);
    let arrivals = log
        .departures
        .iter()
        .map(|d| Arrival {
            sent: Instant::from_millis(d.ms.saturating_sub(d.delay_ms + prop_ms)),
            arrived: Instant::from_millis(d.ms),
            bytes: d.bytes as u32,
            app_bytes: 0,
            is_data: true,
        })
        .collect();
    let opportunities = log.opportunities.iter().map(|o| o.ms * 1000).collect();
    (arrivals, opportunities)
}

/// The paper's metrics of one direction from its log, over `[skip, end)` (end: the last
/// opportunity in the log if `None`). Only the all-packet figures are meaningful: a log does not
/// say which packets carried application data.
pub fn score(log: &MmLog, skip: Duration, end: Option<Instant>) -> DirectionMetrics {
    let (arrivals, opportunities) = from_log(log);
    let end =
        end.unwrap_or_else(|| Instant::from_micros(opportunities.last().copied().unwrap_or(0)));
    let prop = Duration::from_millis(log.propagation_delay_ms.unwrap_or(0));
    let bytes = log.opportunities.first().map_or(1500, |o| o.bytes as u32);
    metrics::compute(
        &arrivals,
        &opportunities,
        bytes,
        prop,
        Window::new((Instant::ZERO + skip).min(end), end),
        metrics::DEFAULT_STEP,
    )
}
