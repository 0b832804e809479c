//! Round trips of the Saturator (`sprout saturator check`): replay a trace pair, record both
//! directions at once with the Saturator, and check that the recording is the replayed trace.
//!
//! For each link pair, the trace pair is replayed (the emulator in real time, or with
//! `simulated` the same link model driven by a virtual clock) while the Saturator records both
//! directions at once, its feedback travelling over a second, unloaded path (as the paper's
//! second phone): in the emulator a veth pair between the mobile namespace and the host,
//! outside the emulated link (`same_path`: over the emulated links instead, for comparison;
//! the simulated replay always uses a separate path with 10 ms of delay). The recorded
//! arrivals are put on the replay's clock (from the recording's `start_clock_us`, then the
//! whole-millisecond offset that lines most arrivals up with the replayed trace's
//! opportunities, searched within ±2 ms of it) and compared over the
//! window `[from_s, from_s + seconds)` of the replayed trace (`sprout saturator check` compares
//! seconds 2-122 by default: seconds 0 and 1 are the warm-up, as the recording starts tens of
//! ms into the replay, its handshake crosses the data path — on Verizon-EVDO-driving the uplink
//! has no opportunity before 1.06 s, so the server cannot learn the client's data address, and
//! start the downlink, before — and the window opens):
//!
//! - per-second delivery counts within 5% (`|recorded - replayed| <= 0.05 * replayed`, and
//!   exactly 0 where the replay had 0) in at least 95% of the seconds where the replayed link
//!   was not in an outage. An **outage second** is a second `[s, s + 1)` that overlaps a gap of
//!   at least 1 s between two consecutive opportunities of the replayed trace (no delivery
//!   opportunity for at least 1 s around it), and so also every second of an injected outage;
//! - the total within 2%;
//! - Sprout (the simulator, [`sprout_sim::sim`], both directions loaded, the mean of the runs with
//!   seeds [`SIM_SEEDS`]) on the recorded window against Sprout on the replayed window:
//!   throughput within 5%, self-inflicted delay within 20 ms or 10%, whichever is larger
//!   (measured after the first [`SIM_SKIP_US`]). One run is not enough: its throughput moves by
//!   about ±5% with the endpoints' start phase alone, and on links with long outages the delay
//!   jumps by seconds when a few opportunities move by a millisecond (see [`SIM_SEEDS`]).
//!
//! The variant with `loss` (Bernoulli loss at each direction's queue, the emulator's
//! [`LinkConfig::loss`](sprout_link::LinkConfig::loss)) and `outage_s` (the replayed traces
//! with their opportunities removed for that long in the middle of the window, both
//! directions) checks instead that the recording completes, that its summary reports the loss
//! (within 1 percentage point or 20% of it) and the outage (a gap at least that long), and the
//! per-second and total figures above.
//!
//! Modules: [`options`] (what to run), [`results`] (what it produced), [`run`](mod@run) (the
//! round trips and their checks), [`compare`] (a recording against its replayed trace),
//! [`sprout`] (Sprout in the simulator on both), [`simulated`] (the Saturator over the link
//! model on a virtual clock), `emulated` (through the emulator in real time), `feedback` (the
//! veth feedback path), `process` (the peer processes), `recording` (reading the recordings
//! back), [`output`] (CSV, JSON, SVG and the table), [`error`](crate::error) (shared by the lab).

pub mod compare;
mod emulated;
mod feedback;
pub mod options;
pub mod output;
mod process;
mod recording;
pub mod results;
pub mod run;
pub mod simulated;
pub mod sprout;
#[cfg(test)]
mod tests;

pub use compare::{
    align_offset_ms, compare_seconds, outage_seconds, per_second_counts, window_trace, with_outage,
    SecondsComparison, OUTAGE_GAP_MS, SECONDS_REQUIRED, SECOND_TOLERANCE, TOTAL_TOLERANCE,
};
pub use options::CheckOptions;
pub use output::{charts, table};
pub use results::{CheckResults, DirectionResult};
pub use run::run;
pub use simulated::{simulate_recording, SimulateOptions, SimulatedRecording};
pub use sprout::{
    compare_sprout, median, SproutComparison, SIM_DELAY_MS, SIM_DELAY_SHARE, SIM_SEEDS,
    SIM_SKIP_US, SIM_THROUGHPUT_TOLERANCE,
};
