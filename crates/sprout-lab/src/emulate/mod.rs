//! The emulated evaluation (`sprout eval --emulate`): the schemes run as real programs (our
//! `sprout server` / `sprout client` over UDP, the kernel's own TCP through `sprout tcp`) in real
//! time through the link emulator (`sprout-emu`, the paper's Cellsim), and the paper's metrics
//! are computed from the emulator's mahimahi logs. The simulator runs the same configuration
//! beside it, so the two can be compared.
//!
//! Modules: [`options`] (what to run), [`results`] (what it produced), [`mod@run`] (the whole
//! evaluation), `emulated` and `simulated` (one run of a scheme each way), `peers` (the peer
//! programs' command lines), [`report`] (the output files), [`error`](crate::error) (shared by the lab).
//!
//! `webrtc` runs the real WebRTC call (aiortc, [`crate::webrtc_call`]) as a scheme, its
//! simulated counterpart the GCC model; [`webrtc_report`] its frame delays, the GCC model
//! against the call, and the paper's shape (Sprout against the video calls).
//!
//! [`interactive`] is the emulated interactive experiment (`--experiments interactive`): a
//! constant-rate stream down one link by Sprout, Sprout-EWMA and `direct`, scored by its
//! application-level delay; [`interactive_report`] its results, checks and outputs.

mod children;
mod emulated;
pub mod interactive;
pub mod interactive_report;
pub mod options;
mod peers;
pub mod report;
pub mod results;
pub mod run;
mod simulated;
mod webrtc;
pub mod webrtc_report;

pub use interactive::run_interactive;
pub use options::{
    EmulateOptions, InteractiveOptions, AQM_QUEUE, AQM_SCHEMES, DEFAULT_DURATION_US,
    DEFAULT_INTERACTIVE_DURATION_US, DEFAULT_INTERACTIVE_RATES_KBPS, DEFAULT_LINK,
    EMULATED_SCHEMES, EXTRA_EMULATED_SCHEMES, INTERACTIVE_SCHEMES,
};
pub use results::{Agreement, EmulateResults, SIMULATED_SEEDS};
pub use run::run;
