//! The measurements of a run: goodput from per-second counts, the interactive flow's
//! throughput, loss and one-way delays within the measured window, the delay chart's bins.

use serde_json::Value;
use sprout_core::Instant;
use sprout_link::Trace;

use super::call::{CallOutput, Frame};
use super::one_run::{Arrival, RunOutput};
use super::options::DELAY_BIN_S;
use super::results::{CallFlow, CallRun, FlowResult, IsolationRun};
use crate::webrtc_call::CallSummary;

/// Bytes received by `t_s` seconds, interpolated between the per-second counts (0 at 0; the
/// last count after the last tick).
fn bytes_at(ticks: &[(f64, u64)], t_s: f64) -> f64 {
    let mut prev = (0.0, 0.0);
    for &(t, b) in ticks {
        let b = b as f64;
        if t >= t_s {
            if t <= prev.0 {
                return b;
            }
            return prev.1 + (b - prev.1) * (t_s - prev.0) / (t - prev.0);
        }
        prev = (t, b);
    }
    prev.1
}

/// Goodput between `from_s` and `to_s` of the per-second counts, kbit/s.
pub(super) fn goodput_kbps(ticks: &[(f64, u64)], from_s: f64, to_s: f64) -> f64 {
    if to_s <= from_s {
        return 0.0;
    }
    (bytes_at(ticks, to_s) - bytes_at(ticks, from_s)).max(0.0) * 8.0 / 1000.0 / (to_s - from_s)
}

/// The `q`-quantile (0..1) of `v` by nearest rank; 0 for none.
pub(super) fn quantile(v: &mut [f64], q: f64) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    let rank = (q * v.len() as f64).ceil() as usize;
    v[rank.clamp(1, v.len()) - 1]
}

/// The interactive flow of one direction within `[t0 + from_s, t0 + to_s)`.
pub(super) fn flow_result(
    direction: &str,
    arrivals: &[Arrival],
    sender: Option<&Value>,
    t0_us: u64,
    from_s: f64,
    to_s: f64,
) -> FlowResult {
    let (w0, w1) = (
        t0_us + (from_s * 1e6) as u64,
        t0_us + (to_s * 1e6).max(0.0) as u64,
    );
    let received: u64 = arrivals
        .iter()
        .filter(|a| (w0..w1).contains(&a.received_us))
        .map(|a| a.bytes)
        .sum();
    let sent_in: Vec<&Arrival> = arrivals
        .iter()
        .filter(|a| (w0..w1).contains(&a.sent_us))
        .collect();
    let mut delays: Vec<f64> = sent_in
        .iter()
        .map(|a| a.received_us.saturating_sub(a.sent_us) as f64 / 1e3)
        .collect();
    let lost = match (
        sent_in.iter().map(|a| a.seq).min(),
        sent_in.iter().map(|a| a.seq).max(),
    ) {
        (Some(lo), Some(hi)) => (hi - lo + 1).saturating_sub(sent_in.len() as u64),
        _ => 0,
    };
    let window = (to_s - from_s).max(1e-9);
    FlowResult {
        direction: direction.into(),
        offered_kbps: sender.and_then(|s| s["sent_kbps"].as_f64()).unwrap_or(0.0),
        throughput_kbps: received as f64 * 8.0 / 1000.0 / window,
        packets: sent_in.len() as u64,
        lost,
        delay_p50_ms: quantile(&mut delays, 0.5),
        delay_p95_ms: quantile(&mut delays, 0.95),
        delay_max_ms: delays.iter().copied().fold(0.0, f64::max),
    }
}

/// The highest delay of the packets sent in each [`DELAY_BIN_S`] bin (s since `t0_us`, ms).
pub(super) fn delay_bins(arrivals: &[Arrival], t0_us: u64) -> Vec<(f64, f64)> {
    let mut bins: std::collections::BTreeMap<u64, f64> = Default::default();
    for a in arrivals {
        let Some(t) = a.sent_us.checked_sub(t0_us) else {
            continue;
        };
        let k = (t as f64 / 1e6 / DELAY_BIN_S) as u64;
        let d = a.received_us.saturating_sub(a.sent_us) as f64 / 1e3;
        let e = bins.entry(k).or_insert(0.0);
        *e = e.max(d);
    }
    bins.into_iter()
        .map(|(k, d)| (k as f64 * DELAY_BIN_S, d))
        .collect()
}

/// The measurements of one run of the isolation experiment over `[skip_s, dur_s)`.
pub(super) fn isolation_run(
    mode: &str,
    out: &RunOutput,
    up: &Trace,
    down: &Trace,
    skip_s: f64,
    dur_s: f64,
) -> IsolationRun {
    let cap = |t: &Trace| {
        let (a, b) = (
            out.t0_link_us + (skip_s * 1e6) as u64,
            out.t0_link_us + (dur_s * 1e6) as u64,
        );
        let bytes = t.capacity_bytes(Instant::from_micros(a), Instant::from_micros(b), true);
        bytes as f64 * 8.0 / 1000.0 / (dur_s - skip_s).max(1e-9)
    };
    IsolationRun {
        mode: mode.into(),
        bulk_kbps: goodput_kbps(&out.bulk_ticks, skip_s, dur_s),
        down: flow_result(
            "down",
            &out.down,
            out.interactive_server.as_ref(),
            out.t0_mono_us,
            skip_s,
            dur_s,
        ),
        up: flow_result(
            "up",
            &out.up,
            out.interactive_client.as_ref(),
            out.t0_mono_us,
            skip_s,
            dur_s,
        ),
        capacity_down_kbps: cap(down),
        capacity_up_kbps: cap(up),
        call: out.call.as_ref().map(|c| CallRun {
            bulk_kbps: goodput_kbps(&out.bulk_ticks, skip_s, dur_s),
            files: out.prefix.clone(),
            ..call_run(c, out.t0_mono_us, skip_s, dur_s)
        }),
        files: out.prefix.clone(),
    }
}

/// The call's video in one direction: the frames captured within `[t0 + from_s, t0 + to_s)`
/// (µs of `CLOCK_MONOTONIC`), what the receiver's summary says of the whole call and the
/// sender's encoder target.
pub(super) fn call_flow(
    direction: &str,
    frames: &[Frame],
    receiver: &CallSummary,
    sender: &CallSummary,
    t0_us: u64,
    from_s: f64,
    to_s: f64,
) -> CallFlow {
    let (w0, w1) = (
        t0_us + (from_s * 1e6) as u64,
        t0_us + (to_s * 1e6).max(0.0) as u64,
    );
    let within: Vec<&Frame> = frames
        .iter()
        .filter(|f| (w0..w1).contains(&f.capture_us))
        .collect();
    let mut delays: Vec<f64> = within.iter().map(|f| f.delay_ms).collect();
    let mut decoded: Vec<u64> = within.iter().map(|f| f.decode_us).collect();
    decoded.sort_unstable();
    let longest_gap_us = decoded.windows(2).map(|w| w[1] - w[0]).max().unwrap_or(0);
    let target = sender.target_bitrate_kbps.unwrap_or_default();
    CallFlow {
        direction: direction.into(),
        frames: delays.len() as u64,
        frames_per_s: delays.len() as f64 / (to_s - from_s).max(1e-9),
        delay_p50_ms: quantile(&mut delays, 0.5),
        delay_p95_ms: quantile(&mut delays, 0.95),
        delay_max_ms: delays.iter().copied().fold(0.0, f64::max),
        longest_gap_ms: longest_gap_us as f64 / 1e3,
        received_kbps: receiver.received_kbps,
        sent_kbps: sender.sent_kbps,
        frames_received: receiver.frames_received,
        frames_unreadable: receiver.frames_unreadable,
        target_last_kbps: target.last,
        target_min_kbps: target.min,
    }
}

/// The call of one run over `[from_s, to_s)` after `t0_us`.
pub(super) fn call_run(out: &CallOutput, t0_us: u64, from_s: f64, to_s: f64) -> CallRun {
    CallRun {
        down: call_flow(
            "down",
            &out.down,
            &out.offer,
            &out.answer,
            t0_us,
            from_s,
            to_s,
        ),
        up: call_flow("up", &out.up, &out.answer, &out.offer, t0_us, from_s, to_s),
        media_s: out.offer.duration_s,
        bulk_kbps: 0.0,
        files: String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn goodput_from_per_second_counts() {
        let ticks = [(1.0, 1000), (2.0, 3000), (3.0, 6000), (4.0, 6000)];
        assert_eq!(bytes_at(&ticks, 0.5), 500.0);
        assert_eq!(bytes_at(&ticks, 2.5), 4500.0);
        assert_eq!(bytes_at(&ticks, 9.0), 6000.0);
        // 5000 bytes between 1 s and 3 s: 20 kbit/s.
        assert!((goodput_kbps(&ticks, 1.0, 3.0) - 20.0).abs() < 1e-12);
        assert_eq!(goodput_kbps(&ticks, 3.0, 3.0), 0.0);
        assert_eq!(goodput_kbps(&[], 0.0, 10.0), 0.0);
    }

    fn arrival(seq: u64, sent_ms: u64, delay_ms: u64) -> Arrival {
        Arrival {
            seq,
            sent_us: 1_000_000 + sent_ms * 1000,
            received_us: 1_000_000 + (sent_ms + delay_ms) * 1000,
            bytes: 1000,
        }
    }

    #[test]
    fn a_flow_within_its_window() {
        // t0 at 1 s; the window is [1 s, 3 s) after it. Packets every 100 ms with delays
        // growing by 10 ms, seq 15 lost, one sent before the window, one after.
        let mut v: Vec<Arrival> = (10..30)
            .filter(|&k| k != 15)
            .map(|k| arrival(k, k * 100, 10 * (k - 9)))
            .collect();
        v.push(arrival(5, 500, 2000)); // sent before, received inside
        v.push(arrival(31, 3100, 5)); // sent and received after
        let f = flow_result("down", &v, None, 1_000_000, 1.0, 3.0);
        assert_eq!((f.packets, f.lost), (19, 1));
        // Received within [2 s, 4 s) absolute: seq 10..=28 but 15 (18; seq 29 arrives at
        // 4.1 s) and seq 5 (at 3.5 s): 19 kB in 2 s.
        assert!((f.throughput_kbps - 19.0 * 8.0 / 2.0).abs() < 1e-9, "{f:?}");
        // Delays 10..200 ms without 60: nearest-rank p95 of 19 values is the 19th = 200.
        assert_eq!(f.delay_p95_ms, 200.0);
        assert_eq!(f.delay_p50_ms, 110.0);
        assert_eq!(f.delay_max_ms, 200.0);
    }

    #[test]
    fn delay_bins_keep_the_highest_per_bin() {
        let v = vec![
            arrival(0, 0, 30),
            arrival(1, 100, 50),
            arrival(2, 600, 20),
            arrival(3, 1600, 40),
        ];
        assert_eq!(
            delay_bins(&v, 1_000_000),
            vec![(0.0, 50.0), (0.5, 20.0), (1.5, 40.0)]
        );
    }

    fn summary(role: &str, received_kbps: f64, sent_kbps: f64) -> CallSummary {
        crate::webrtc_call::parse_summary(&format!(
            r#"{{"role": "{role}", "duration_s": 150.0, "frames_sent": 4500, "frames_received": 4400, "frames_unreadable": 3, "received_kbps": {received_kbps}, "sent_kbps": {sent_kbps}, "frame_delay_ms": null, "frames_within_ms": null, "target_bitrate_kbps": {{"first": 500, "last": 280, "min": 250}}}}"#
        ))
        .unwrap()
    }

    #[test]
    fn frames_are_measured_within_the_window() {
        // t0 at 10 s; window [1 s, 3 s) after it. Frames every 100 ms from 0.5 s with delays
        // growing by 10 ms; the ones captured before 11 s or from 13 s on are left out.
        let frames: Vec<Frame> = (5..40)
            .map(|k| Frame {
                capture_us: 10_000_000 + k * 100_000,
                decode_us: 10_000_000 + k * 110_000,
                delay_ms: 10.0 * k as f64,
            })
            .collect();
        let rx = summary("offer", 400.0, 450.0);
        let tx = summary("answer", 420.0, 410.0);
        let f = call_flow("down", &frames, &rx, &tx, 10_000_000, 1.0, 3.0);
        // Frames 10..=29: delays 100..=290 ms.
        assert_eq!(f.frames, 20);
        assert_eq!(f.frames_per_s, 10.0);
        assert_eq!(f.delay_p50_ms, 190.0);
        assert_eq!(f.delay_p95_ms, 280.0);
        assert_eq!(f.delay_max_ms, 290.0);
        // Decoded every 110 ms: the longest gap between two decodes.
        assert!((f.longest_gap_ms - 110.0).abs() < 1e-9, "{f:?}");
        // Rates: the receiver's received, the sender's sent.
        assert_eq!((f.received_kbps, f.sent_kbps), (400.0, 410.0));
        assert_eq!(
            (f.target_last_kbps, f.target_min_kbps),
            (Some(280.0), Some(250.0))
        );
        let none = call_flow("down", &frames, &rx, &tx, 10_000_000, 5.0, 6.0);
        assert_eq!((none.frames, none.delay_p95_ms), (0, 0.0));
    }
}
