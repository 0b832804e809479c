//! What an emulated evaluation produced: its rows and the agreement of each emulated result
//! with the simulator's on the same configuration.

use serde::{Deserialize, Serialize};
use sprout_eval::eval::ResultRow;
use sprout_sim::app_metrics::AppMetrics;

use crate::webrtc_call::CallSummary;

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
    /// Application-level (frame) delays of the rows that carried video: the WebRTC call's
    /// (emulated) and its GCC model's (simulated); results.csv has them as `app_p50_ms` and
    /// `app_p95_ms`.
    #[serde(default)]
    pub app_delays: Vec<AppDelayRow>,
    /// The paper's shape on each link and direction where Sprout and the call both ran.
    #[serde(default)]
    pub shape: Vec<ShapeCheck>,
    /// Wall-clock time, s.
    pub wall_s: f64,
}

/// The paper's shape on one link and direction: Sprout against the WebRTC call, both
/// emulated.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ShapeCheck {
    /// Link name.
    pub link: String,
    /// "up" or "down".
    pub direction: String,
    /// Sprout's throughput, kbit/s.
    pub sprout_kbps: f64,
    /// Sprout's 95th-percentile self-inflicted delay, ms.
    pub sprout_delay_ms: f64,
    /// The call's throughput, kbit/s.
    pub call_kbps: f64,
    /// The call's 95th-percentile self-inflicted delay, ms.
    pub call_delay_ms: f64,
    /// The link's capacity over the window, kbit/s.
    pub capacity_kbps: f64,
    /// Whether Sprout's delay is at most [`DELAY_SHARE`](super::webrtc_report::DELAY_SHARE) of the call's.
    pub delay_ok: bool,
    /// Whether Sprout's throughput is at least the call's.
    pub throughput_ok: bool,
    /// Both.
    pub passes: bool,
    /// The figures in words, and for a failure why, from the data.
    pub explanation: String,
}

/// The application-level figures of one row that carried video (experiment, link, direction
/// and scheme as in the row).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AppDelayRow {
    /// `emulated` or `simulated`.
    pub experiment: String,
    /// Link name.
    pub link: String,
    /// "up" or "down".
    pub direction: String,
    /// Scheme key (`webrtc` emulated, `gcc` simulated).
    pub scheme: String,
    /// Frames received and read (the call) or created in the measured window (the model).
    pub frames: u64,
    /// Median frame delay, capture to decode (the call) or creation to delivery (the model),
    /// ms; `None` without frames.
    pub app_p50_ms: Option<f64>,
    /// 95th percentile of the frame delay, ms; `None` without frames.
    pub app_p95_ms: Option<f64>,
    /// The video's own rate: RTP payload received over the call (the call) or application
    /// bytes delivered over the window (the model), kbit/s.
    pub app_kbps: f64,
    /// The call's encoder target at its end, kbit/s (`None`: unknown, or the model).
    pub target_last_kbps: Option<f64>,
    /// The call's lowest encoder target, kbit/s (`None`: unknown, or the model).
    pub target_min_kbps: Option<f64>,
}

/// `Some(x)` for a finite `x`.
fn finite(x: f64) -> Option<f64> {
    x.is_finite().then_some(x)
}

impl AppDelayRow {
    /// The emulated row of the call's end that received `direction`'s video (the offer end
    /// the downlink's, the answer end the uplink's).
    pub fn from_call(link: &str, direction: &str, s: &CallSummary) -> AppDelayRow {
        let t = s.target_bitrate_kbps.unwrap_or_default();
        AppDelayRow {
            experiment: "emulated".into(),
            link: link.into(),
            direction: direction.into(),
            scheme: "webrtc".into(),
            frames: s.frames_received,
            app_p50_ms: s.frame_delay_ms.map(|d| d.p50),
            app_p95_ms: s.frame_delay_ms.map(|d| d.p95),
            app_kbps: s.received_kbps,
            target_last_kbps: t.last,
            target_min_kbps: t.min,
        }
    }

    /// The simulated row of `scheme` (the model) from its application metrics.
    pub fn from_sim(link: &str, direction: &str, scheme: &str, a: &AppMetrics) -> AppDelayRow {
        AppDelayRow {
            experiment: "simulated".into(),
            link: link.into(),
            direction: direction.into(),
            scheme: scheme.into(),
            frames: a.messages,
            app_p50_ms: finite(a.delay_p50_ms),
            app_p95_ms: finite(a.delay_p95_ms),
            app_kbps: a.delivered_kbps,
            target_last_kbps: None,
            target_min_kbps: None,
        }
    }

    /// Whether this is the application side of `row`.
    pub fn is_of(&self, row: &ResultRow) -> bool {
        self.experiment == row.experiment
            && self.link == row.link
            && self.direction == row.direction
            && self.scheme == row.scheme
    }
}

impl EmulateResults {
    /// The application-level figures of `row`, if it carried video.
    pub fn app_of(&self, row: &ResultRow) -> Option<&AppDelayRow> {
        self.app_delays.iter().find(|a| a.is_of(row))
    }

    /// The row of one experiment, link, direction and scheme.
    pub fn row(&self, experiment: &str, link: &str, dir: &str, scheme: &str) -> Option<&ResultRow> {
        self.rows.iter().find(|r| {
            r.experiment == experiment && r.link == link && r.direction == dir && r.scheme == scheme
        })
    }
}

/// The emulated and simulated results of one link, direction and scheme, and whether they agree
/// within the issue's tolerances (Sprout: throughput within 15%, self-inflicted delay within
/// 30 ms or 25%, whichever is larger; TCP: throughput within 25%, delay within a factor of 2).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Agreement {
    /// Link name.
    pub link: String,
    /// "up" or "down".
    pub direction: String,
    /// Scheme key.
    pub scheme: String,
    /// The scheme the simulator ran for it (`gcc` for `webrtc`, else the same).
    #[serde(default)]
    pub simulated_scheme: String,
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
    /// emulated / simulated self-inflicted delay (each at least 1 ms).
    #[serde(default)]
    pub delay_ratio: f64,
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
            simulated_scheme: s.scheme.clone(),
            emulated_kbps: e.throughput_kbps,
            simulated_kbps: s.throughput_kbps,
            emulated_delay_ms: de,
            simulated_delay_ms: ds,
            throughput_ratio: ratio,
            delay_ratio: de.max(1.0) / ds.max(1.0),
            agrees,
            tolerance,
        }
    }
}

/// Results for tests: sprout, webrtc and its model on Verizon-LTE-short, both directions.
#[cfg(test)]
pub(crate) mod fixtures {
    use super::*;
    use crate::webrtc_call::parse_summary;

    /// A row of `scheme` on Verizon-LTE-short `dir` over a 5,000 kbit/s link.
    pub(crate) fn row(
        experiment: &str,
        scheme: &str,
        dir: &str,
        kbps: f64,
        delay_ms: f64,
    ) -> ResultRow {
        ResultRow {
            experiment: experiment.into(),
            link: "Verizon-LTE-short".into(),
            direction: dir.into(),
            scheme: scheme.into(),
            confidence: None,
            loss: 0.0,
            seed: 0,
            queue: "infinite".into(),
            throughput_kbps: kbps,
            goodput_kbps: kbps,
            capacity_kbps: 5000.0,
            utilization: kbps / 5000.0,
            p95_delay_ms: delay_ms + 40.0,
            p95_delay_data_ms: delay_ms + 40.0,
            omniscient_p95_ms: 40.0,
            self_inflicted_ms: delay_ms,
            self_inflicted_data_ms: delay_ms,
            paper_throughput_kbps: None,
            paper_self_inflicted_ms: None,
            window_s: 80.0,
            variant: String::new(),
        }
    }

    /// The offer end's summary: `p95` ms frame delay (`None`: no frames), target 900 at the end.
    pub(crate) fn summary(p95: Option<f64>) -> crate::webrtc_call::CallSummary {
        let delay = p95.map_or("null".to_string(), |p| {
            format!(
                r#"{{"p50": {}, "p95": {p}, "p99": {p}, "mean": {p}}}"#,
                p / 2.0
            )
        });
        parse_summary(&format!(
            r#"{{"role": "offer", "duration_s": 80, "frames_sent": 2400, "frames_received": 2390,
            "frames_unreadable": 0, "received_kbps": 1200, "sent_kbps": 1210,
            "frame_delay_ms": {delay}, "frames_within_ms": null,
            "target_bitrate_kbps": {{"first": 500, "last": 900, "min": 300}}}}"#
        )
        .replace('\n', " "))
        .unwrap()
    }

    /// Results of sprout and webrtc (and its model) on both directions: the call at `call`
    /// (kbit/s, ms) downlink and 1,000 kbit/s at 600 ms uplink.
    pub(crate) fn results(call_down: (f64, f64)) -> EmulateResults {
        let mut rows = Vec::new();
        for (dir, call) in [("down", call_down), ("up", (1000.0, 600.0))] {
            rows.push(row("emulated", "sprout", dir, 3000.0, 100.0));
            rows.push(row("simulated", "sprout", dir, 3100.0, 90.0));
            rows.push(row("emulated", "webrtc", dir, call.0, call.1));
            rows.push(row("simulated", "gcc", dir, 1100.0, 400.0));
        }
        let agreement = vec![Agreement::new(&rows[2], &rows[3])];
        EmulateResults {
            source: "test".into(),
            duration_s: 140.0,
            skip_s: 60.0,
            rows,
            agreement,
            app_delays: vec![
                AppDelayRow::from_call("Verizon-LTE-short", "down", &summary(Some(200.0))),
                AppDelayRow::from_call("Verizon-LTE-short", "up", &summary(None)),
            ],
            shape: Vec::new(),
            wall_s: 1.0,
        }
    }
}
