//! Trace-driven cellular link model: the Sprout paper's "Cellsim" emulator as a sans-IO library.
//!
//! - [`trace`]: mahimahi delivery-opportunity traces ([`Trace`], [`OpportunityCursor`]).
//! - [`queue`] and [`link`]: the link ([`Link`]) — propagation delay (fixed, or from a
//!   [`DelayTrace`], with optional [`Jitter`]), optional Bernoulli or Gilbert-Elliott loss
//!   ([`loss`]), then a queue (drop-tail, CoDel, PIE ([`pie`]) or FQ-CoDel ([`fq_codel`],
//!   flows keyed by [`flow::ip_flow_key`] in the emulator), [`QueueConfig`], within an
//!   optional [`Buffer`]) served per byte by the trace's opportunities, with events
//!   ([`LinkEvent`], drops with their [`DropReason`]) and counters; [`ecn`]: CE marks
//!   instead of drops for ECN-capable packets, the L4S step, and the real IP header's ECN
//!   field.
//! - [`shape`]: the shaping options the front ends set per direction ([`LinkShape`]);
//!   [`shape_options`]: the same by the command line's names and spellings ([`ShapeOptions`]),
//!   which every front end sets and turns into a [`LinkShape`]; [`buffer`],
//!   [`delay`], [`loss`], [`units`]: their types and how the command line writes them.
//! - [`mmlog`]: mahimahi `mm-link` log writer and reader.
//! - [`synthetic`]: seeded synthetic traces from the paper's own link model, stepwise links
//!   (a log-uniform rate per step, as per-second 5G recordings) and constant-rate traces.
//! - [`trace_stats`]: a trace's figures (duration, mean and peak rate, outages, the
//!   inter-arrival histogram of the paper's Figure 2); [`convert`]: per-interval throughput
//!   CSVs to traces, and writing traces; [`scale`]: a trace's rate times a factor, its timing
//!   kept.
//! - [`testdata`]: for tests, the paper's traces and fixtures in `../shared`, and reporting the
//!   tests that skip without them.
//!
//! Times on the link's clock are [`Instant`](sprout_core::time::Instant)s and delays
//! [`Duration`](sprout_core::time::Duration)s (whole microseconds); trace and log files stay in
//! milliseconds (`_ms` names).
//!
//! ```
//! use std::sync::Arc;
//! use sprout_core::time::Instant;
//! use sprout_link::{Link, LinkConfig, LinkEvent, Trace};
//!
//! // Opportunities at 5 ms and 25 ms; default 20 ms propagation delay.
//! let trace = Arc::new(Trace::parse("example.down", "5\n25\n").unwrap());
//! let mut link = Link::new(trace, LinkConfig::default());
//! link.send(Instant::ZERO, 1500, "hello");
//! assert_eq!(link.next_event(), Some(Instant::from_millis(20))); // joins the queue after the delay
//! let mut delivered = Vec::new();
//! while let Some(t) = link.next_event() {
//!     link.advance(t, &mut |e| {
//!         if let LinkEvent::Delivered(d) = e {
//!             delivered.push((d.payload, d.delivered));
//!         }
//!     });
//! }
//! assert_eq!(delivered, vec![("hello", Instant::from_millis(25))]);
//! ```
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod buffer;
pub(crate) mod codel;
pub mod convert;
pub mod data_dirs;
pub mod delay;
pub mod ecn;
pub mod flow;
pub mod fq_codel;
pub mod link;
mod link_queue;
pub mod loss;
pub mod mmlog;
pub mod pie;
pub mod queue;
pub mod scale;
pub mod shape;
pub mod shape_options;
pub mod synthetic;
pub mod testdata;
pub mod trace;
pub mod trace_stats;
pub mod units;

pub use buffer::{BadBuffer, Buffer, BufferLimit, DropEnd};
pub use delay::{BadJitter, DelayTrace, DelayTraceError, Jitter};
pub use ecn::{Ecn, MarkReason};
pub use fq_codel::{
    FQ_CODEL_DEFAULT_FLOWS, FQ_CODEL_DEFAULT_LIMIT, FQ_CODEL_DEFAULT_MEMORY_LIMIT,
    FQ_CODEL_DEFAULT_QUANTUM, FQ_CODEL_MAX_FLOWS,
};
pub use link::{Delivery, Link, LinkConfig, LinkConfigError, LinkEvent, LinkStats};
pub use loss::{BadGilbertElliott, GilbertElliott};
pub use mmlog::{MmArrival, MmDeparture, MmDrop, MmLog, MmLogError, MmLogWriter, MmOpportunity};
pub use queue::{
    DropReason, QueueConfig, QueueKind, UnknownQueue, CODEL_DEFAULT_INTERVAL, CODEL_DEFAULT_TARGET,
    CODEL_MAXPACKET_BYTES,
};
pub use shape::{DirectionShape, LinkShape, ShapeError};
pub use shape_options::{
    parse_positive_time, BadTime, ShapeOptionError, ShapeOptions, SHAPE_OPTIONS,
};
pub use synthetic::{constant_rate_trace, StepwiseError, StepwiseLink, SyntheticLink};
pub use trace::{OpportunityCursor, Trace, TraceError, TracePair, OPPORTUNITY_BYTES};
