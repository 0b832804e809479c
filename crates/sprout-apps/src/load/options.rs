//! The options of `sprout bench load`: the clap arguments of the CLI, and a typed builder of
//! its command line (`to_args`).

use sprout_core::SproutVariant;

use crate::args::ArgsWriter;
use crate::choices;

/// `sprout bench load` options; `Default` gives the command line's defaults.
///
/// ```
/// use sprout_apps::load::LoadOptions;
/// let o = LoadOptions { sessions: 20, duration: 5.0, json: true, ..LoadOptions::default() };
/// assert_eq!(o.to_args()[..3], ["bench", "load", "--sessions=20"]);
/// ```
#[derive(clap::Args, Clone, Debug, PartialEq)]
pub struct LoadOptions {
    /// Concurrent client sessions.
    #[arg(long, default_value_t = DEFAULT_SESSIONS)]
    pub sessions: usize,
    /// Paced application rate of each session, each way, kbit/s (DATA messages of 1000
    /// bytes).
    #[arg(long, default_value_t = DEFAULT_RATE_KBPS)]
    pub rate: f64,
    /// Seconds of transfer of each session, from its own start.
    #[arg(long, default_value_t = DEFAULT_DURATION_S)]
    pub duration: f64,
    /// Bogus handshake initiations sent to the server while the sessions run (after the last
    /// client started, spread over half the duration).
    #[arg(long, default_value_t = DEFAULT_FLOOD)]
    pub flood: u64,
    /// Seconds over which the clients start, spread evenly [default: one per 50 ms, at most
    /// 10 s].
    #[arg(long)]
    pub ramp: Option<f64>,
    /// Receiver estimator of every session, at both ends: Sprout on the wide rate model (the
    /// default of `sprout client`), on the paper's, or Sprout-EWMA.
    #[arg(long, value_parser = choices::sprout_variant(), default_value = "sprout-wide")]
    pub scheme: SproutVariant,
    /// Least share of the released DATA each session must deliver, each way.
    #[arg(long, default_value_t = DEFAULT_TOLERANCE)]
    pub tolerance: f64,
    /// Nice value of the clients' endpoint threads (0-19): on one machine the load generator
    /// runs as many Sprout connections as the server, and at 19 they give way to the server
    /// under test when the CPUs are short (the server, and the clients' pacing and receiving
    /// threads, keep the bench's own priority).
    #[arg(long, default_value_t = DEFAULT_CLIENT_NICE, value_parser = clap::value_parser!(i32).range(0..=19))]
    pub client_nice: i32,
    /// One JSON object (the report) instead of text.
    #[arg(long)]
    pub json: bool,
}

/// Default number of sessions.
const DEFAULT_SESSIONS: usize = 200;
/// Default rate of each session, each way, kbit/s.
const DEFAULT_RATE_KBPS: f64 = 200.0;
/// Default duration of each session, s.
const DEFAULT_DURATION_S: f64 = 60.0;
/// Default number of bogus handshakes.
const DEFAULT_FLOOD: u64 = 100_000;
/// Default least delivered share.
const DEFAULT_TOLERANCE: f64 = 0.98;
/// Default nice value of the clients' endpoint threads.
const DEFAULT_CLIENT_NICE: i32 = 19;

impl Default for LoadOptions {
    fn default() -> Self {
        LoadOptions {
            sessions: DEFAULT_SESSIONS,
            rate: DEFAULT_RATE_KBPS,
            duration: DEFAULT_DURATION_S,
            flood: DEFAULT_FLOOD,
            ramp: None,
            scheme: SproutVariant::SproutWide,
            tolerance: DEFAULT_TOLERANCE,
            client_nice: DEFAULT_CLIENT_NICE,
            json: false,
        }
    }
}

impl LoadOptions {
    /// The arguments of `sprout` that run this benchmark: `bench load` and every option.
    pub fn to_args(&self) -> Vec<String> {
        ArgsWriter::new(&["bench", "load"])
            .value("sessions", self.sessions)
            .value("rate", self.rate)
            .value("duration", self.duration)
            .value("flood", self.flood)
            .opt("ramp", self.ramp)
            .value("scheme", self.scheme.as_str())
            .value("tolerance", self.tolerance)
            .value("client-nice", self.client_nice)
            .switch("json", self.json)
            .finish()
    }
}
