//! The `aqm` experiment (issue 38): the paper's CoDel comparison (Cubic over CoDel against
//! Sprout, one column of Figure 8) made whole. On every link direction of the evaluation (both
//! directions loaded at once, 20 ms each way, each trace pair replayed whole as fig7 does,
//! measured from the evaluation's `--skip`), each scheme of [`SCHEMES`] (Sprout, Sprout-EWMA,
//! Cubic, BBR, Copa) runs over each queue of [`QUEUES`]: a finite drop-tail buffer of 100 ms at
//! the trace's mean rate, CoDel, PIE and FQ-CoDel, from the one link model
//! ([`sprout_link::QueueKind`], [`sprout_link::Buffer`]). Per queue and scheme: utilization,
//! throughput, self-inflicted delay and the queue's drops per direction, averaged over every
//! direction (`all`) and over each link pair's two.
//!
//! Beside them, on [`STREAM_LINK`]'s downlink: the paced interactive stream of the emulated
//! tunnel experiment ([`STREAM_RATE_KBPS`] in [`STREAM_PACKET_BYTES`]-byte datagrams, sent
//! straight into the link with no congestion control, `direct`) beside a Cubic download
//! (`sprout sim --cross cubic`) in one FQ-CoDel queue, and in the paper's unlimited drop-tail
//! queue: what FQ-CoDel's flow isolation gives the stream, to set beside SproutTunnel's
//! (paper §5.7; its run is the emulated evaluation's, `sprout eval --emulate --experiments
//! tunnel`, since the tunnel runs only as real programs).
//!
//! Not in `all` ([`crate::experiment::Experiment::OPT_IN`]). The files, table and report
//! section are in `crate::report::aqm`, with the paper's CoDel figures
//! ([`crate::paper::fig8`]'s `cubic-codel`, [`crate::paper::intro`]'s) beside the CoDel
//! column.

mod results;
mod run;
mod settings;

pub use results::{average_rows, AqmAverage, AqmResults, AqmRow, StreamRow, ALL};
pub use run::{run, run_if_asked, simulate_stream};
pub use settings::{
    queue, AqmQueue, AqmSettings, CODEL, DROP_TAIL_BUFFER, FQ_CODEL, QUEUES, SCHEMES, STREAM_LINK,
    STREAM_PACKET_BYTES, STREAM_QUEUES, STREAM_RATE_KBPS, UNLIMITED, UNLIMITED_QUEUE,
};
