//! What `sprout saturator check` runs.

use std::path::PathBuf;

/// What `sprout saturator check` runs.
#[derive(Clone, Debug)]
pub struct CheckOptions {
    /// Folder of trace pairs.
    pub traces: PathBuf,
    /// Link pairs to run (empty: all in the folder).
    pub links: Vec<String>,
    /// Seconds compared.
    pub seconds: u64,
    /// First second compared (of the replayed trace).
    pub from_s: u64,
    /// Bernoulli loss at each direction's queue (0: none).
    pub loss: f64,
    /// Seconds of outage injected in the middle of the compared window (0: none).
    pub outage_s: u64,
    /// Seed of the loss.
    pub seed: u64,
    /// Run on the link model's virtual clock instead of the emulator.
    pub simulated: bool,
    /// Output folder.
    pub out: PathBuf,
    /// The `sprout` binary (`sprout saturator server|client` are run through the emulator).
    pub sprout_exe: PathBuf,
    /// Send the feedback over the data path (the emulated links) instead of a separate path:
    /// the setting the paper avoided with its second phone, for comparison.
    pub same_path: bool,
    /// Run the emulator's threads at real-time priority (`SCHED_FIFO` 10), so that a busy
    /// machine does not make it deliver late (the recording would then be late too).
    pub realtime: bool,
    /// Print a line per link on stderr while running.
    pub progress: bool,
}

impl CheckOptions {
    /// "plain", or "loss 5% + 10 s outage" and the like.
    pub fn variant(&self) -> String {
        let mut parts = Vec::new();
        if self.loss > 0.0 {
            parts.push(format!("loss {}%", self.loss * 100.0));
        }
        if self.outage_s > 0 {
            parts.push(format!("{} s outage", self.outage_s));
        }
        if self.same_path {
            parts.push("feedback over the data path".into());
        }
        if parts.is_empty() {
            "plain".into()
        } else {
            parts.join(" + ")
        }
    }

    /// The injected outage, `[from, from + len)` in ms of the replayed trace.
    pub fn outage_ms(&self) -> (u64, u64) {
        let len = self.outage_s * 1000;
        let from = self.from_s * 1000 + (self.seconds * 1000).saturating_sub(len) / 2;
        (from, len)
    }

    /// Seconds each recording lasts: from the start of the replay to one second past the
    /// compared window.
    pub fn record_s(&self) -> u64 {
        self.from_s + self.seconds + 1
    }
}
