//! What the `aqm` experiment runs: its queues, its schemes, the interactive stream beside a
//! Cubic download, and its settings.

use serde::{Deserialize, Serialize};
use sprout_core::time::Duration;
use sprout_link::{Buffer, BufferLimit, DropEnd, QueueKind};
use sprout_sim::scheme::Scheme;

/// One queue of the experiment: a discipline ([`QueueKind`], the one queue type) and the
/// link's buffer, if finite.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AqmQueue {
    /// The queue's name in aqm.csv and the table.
    pub name: &'static str,
    /// What it is, for the report.
    pub about: &'static str,
    /// The discipline.
    pub kind: QueueKind,
    /// The link's buffer (`None`: the discipline's own limits).
    pub buffer: Option<Buffer>,
}

/// The finite drop-tail buffer: 100 ms at the trace's mean rate.
pub const DROP_TAIL_BUFFER: Buffer = Buffer {
    limit: BufferLimit::Time(Duration::from_millis(100)),
    drop: DropEnd::Tail,
};

/// The name of the CoDel queue, the column the paper's figures stand beside.
pub const CODEL: &str = "codel";
/// The name of the FQ-CoDel queue, where the interactive stream meets the Cubic download.
pub const FQ_CODEL: &str = "fq-codel";
/// The name of the paper's queue (unlimited drop-tail), the stream's baseline.
pub const UNLIMITED: &str = "unlimited";

/// The experiment's queues, in the table's order.
pub const QUEUES: [AqmQueue; 4] = [
    AqmQueue {
        name: "drop-tail-100ms",
        about: "a finite drop-tail FIFO holding 100 ms at the trace's mean rate (one pass: \
                opportunities x 1500 bytes / its length)",
        kind: QueueKind::Infinite,
        buffer: Some(DROP_TAIL_BUFFER),
    },
    AqmQueue {
        name: CODEL,
        about: "CoDel (RFC 8289: 5 ms target, 100 ms interval), no buffer limit: the paper's \
                `cubic-codel` queue",
        kind: QueueKind::Codel,
        buffer: None,
    },
    AqmQueue {
        name: "pie",
        about: "PIE (RFC 8033 with Linux's defaults: 15 ms target, 15 ms update, 150 ms burst \
                allowance), no buffer limit",
        kind: QueueKind::Pie,
        buffer: None,
    },
    AqmQueue {
        name: FQ_CODEL,
        about: "FQ-CoDel (RFC 8290 with Linux's defaults: 1024 flows, 1514-byte quantum, \
                10,240 packets, 32 MiB, CoDel's 5 ms / 100 ms per flow)",
        kind: QueueKind::FqCodel,
        buffer: None,
    },
];

/// The paper's queue, where the interactive stream's baseline runs.
pub const UNLIMITED_QUEUE: AqmQueue = AqmQueue {
    name: UNLIMITED,
    about: "the paper's unlimited drop-tail queue",
    kind: QueueKind::Infinite,
    buffer: None,
};

/// The queue of this name: one of [`QUEUES`] or [`UNLIMITED_QUEUE`].
pub fn queue(name: &str) -> Option<AqmQueue> {
    QUEUES
        .iter()
        .chain(std::iter::once(&UNLIMITED_QUEUE))
        .find(|q| q.name == name)
        .copied()
}

impl AqmQueue {
    /// Sets `link` to this queue: the discipline and the buffer.
    pub fn apply(&self, link: &mut sprout_link::LinkConfig) {
        link.queue = self.kind.config();
        link.buffer = self.buffer;
    }
}

/// The experiment's schemes, in the table's order.
pub const SCHEMES: [Scheme; 5] = [
    Scheme::Sprout,
    Scheme::SproutEwma,
    Scheme::Cubic,
    Scheme::Bbr,
    Scheme::Copa,
];

/// The interactive stream's rate (kbit/s of application payload): the emulated tunnel
/// experiment's paced stream (`sprout interactive`, 500 kbit/s).
pub const STREAM_RATE_KBPS: f64 = 500.0;
/// The interactive stream's datagrams (bytes of payload), as the emulated tunnel experiment's.
pub const STREAM_PACKET_BYTES: u32 = 1000;
/// The link of the interactive stream beside the Cubic download: the paper's §5.7 link,
/// where the emulated tunnel experiment runs (else the first pair).
pub const STREAM_LINK: &str = "Verizon-LTE-short";
/// The queues of the interactive stream beside the Cubic download: the paper's unlimited
/// drop-tail (what the tunnel is measured against) and FQ-CoDel.
pub const STREAM_QUEUES: [&str; 2] = [UNLIMITED, FQ_CODEL];

/// What an `aqm` run covers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AqmSettings {
    /// The queues' names (each one of [`QUEUES`]).
    pub queues: Vec<String>,
    /// The schemes' keys (each one a simulated bulk scheme).
    pub schemes: Vec<String>,
    /// Start of the measured window, µs.
    pub skip_us: u64,
    /// The interactive stream's rate, kbit/s.
    pub stream_kbps: f64,
    /// The queues of the interactive stream beside the Cubic download (each one of
    /// [`QUEUES`] or [`UNLIMITED`]); empty: no such run.
    pub stream_queues: Vec<String>,
}

impl Default for AqmSettings {
    /// Every queue and scheme, measured from 60 s, the stream at [`STREAM_RATE_KBPS`] in
    /// [`STREAM_QUEUES`].
    fn default() -> Self {
        AqmSettings {
            queues: QUEUES.iter().map(|q| q.name.to_string()).collect(),
            schemes: SCHEMES.iter().map(|s| s.key().to_string()).collect(),
            skip_us: 60_000_000,
            stream_kbps: STREAM_RATE_KBPS,
            stream_queues: STREAM_QUEUES.iter().map(|q| q.to_string()).collect(),
        }
    }
}
