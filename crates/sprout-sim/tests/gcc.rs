//! The GCC flow in the simulator (issue 25.3): adaptive video over Google Congestion Control
//! across constant, lossy and stepped links.

use std::sync::Arc;

use sprout_core::direction::Load;
use sprout_core::time::Duration;
use sprout_link::{constant_rate_trace, Trace};
use sprout_sim::metrics::Arrival;
use sprout_sim::sim::{self, SimConfig, SimOutput, Transport};
use sprout_sim::App;

fn config(skip_s: u64) -> SimConfig {
    SimConfig {
        transport: Transport::Gcc,
        skip: Duration::from_secs(skip_s),
        load: Load::Down,
        app: App::parse("adaptive").unwrap(),
        ..SimConfig::default()
    }
}

fn run(down: Trace, cfg: &SimConfig) -> SimOutput {
    let up = Arc::new(constant_rate_trace("up", 2.0, 60.0).unwrap());
    sim::run(up, Arc::new(down), cfg, None).unwrap()
}

/// Data bytes on the wire whose time (`at` of an arrival: when it arrived, or when it was sent)
/// falls in `[from_s, to_s)`, as kbit/s.
fn data_kbps(out: &SimOutput, at: impl Fn(&Arrival) -> u64, from_s: f64, to_s: f64) -> f64 {
    let (a, b) = ((from_s * 1e6) as u64, (to_s * 1e6) as u64);
    let bytes: u64 = out
        .downlink
        .arrivals
        .iter()
        .filter(|x| x.is_data && (a..b).contains(&at(x)))
        .map(|x| u64::from(x.bytes))
        .sum();
    bytes as f64 * 8.0 / (to_s - from_s) / 1e3
}

/// Data bytes on the wire that arrived in `[from_s, to_s)`, as kbit/s.
fn rate_kbps(out: &SimOutput, from_s: f64, to_s: f64) -> f64 {
    data_kbps(out, |x| x.arrived.as_micros(), from_s, to_s)
}

/// Data bytes on the wire sent in `[from_s, to_s)` (and delivered), as kbit/s.
fn sent_kbps(out: &SimOutput, from_s: f64, to_s: f64) -> f64 {
    data_kbps(out, |x| x.sent.as_micros(), from_s, to_s)
}

/// The 95th percentile of the queueing delay (one-way delay less the 20 ms of propagation) of
/// data packets sent in `[from_s, to_s)`, ms.
fn queueing_p95_ms(out: &SimOutput, from_s: f64, to_s: f64) -> f64 {
    let mut d: Vec<f64> = out
        .downlink
        .arrivals
        .iter()
        .filter(|x| x.is_data && x.sent.as_micros() >= (from_s * 1e6) as u64)
        .filter(|x| x.sent.as_micros() < (to_s * 1e6) as u64)
        .map(|x| (x.arrived - x.sent).as_millis_f64() - 20.0)
        .collect();
    assert!(!d.is_empty());
    d.sort_by(f64::total_cmp);
    d[(d.len() * 95 / 100).min(d.len() - 1)]
}

#[test]
fn gcc_converges_on_a_constant_2_mbit_link_with_a_short_queue() {
    let out = run(constant_rate_trace("c2", 2.0, 30.0).unwrap(), &config(5));
    let late = rate_kbps(&out, 20.0, 30.0);
    assert!(late > 1400.0 && late <= 2010.0, "{late} kbit/s");
    let q = queueing_p95_ms(&out, 5.0, 30.0);
    assert!(q < 100.0, "queueing p95 {q} ms");
    let app = out.downlink.app.as_ref().unwrap();
    assert!(app.delivered_share > 0.95, "{app:?}");
    // Feedback flows back on the uplink, and carries no data.
    assert!(out.uplink.datagrams_sent > 300);
    assert!(out.uplink.arrivals.iter().all(|x| !x.is_data));
}

#[test]
fn gcc_sends_under_400_kbit_over_a_300_kbit_link() {
    let out = run(constant_rate_trace("c03", 0.3, 40.0).unwrap(), &config(10));
    let app = out.downlink.app.as_ref().unwrap();
    assert!(app.offered_kbps < 400.0, "{app:?}");
    assert!(app.delivered_kbps > 150.0, "{app:?}");
    let q = queueing_p95_ms(&out, 10.0, 40.0);
    assert!(q < 400.0, "queueing p95 {q} ms");
}

fn offered_kbps(loss: f64) -> f64 {
    let mut cfg = config(10);
    cfg.downlink.loss = Some(loss);
    let out = run(constant_rate_trace("c2", 2.0, 30.0).unwrap(), &cfg);
    out.downlink.app.as_ref().unwrap().offered_kbps
}

#[test]
fn random_loss_lowers_the_rate_above_10_percent_and_holds_it_at_5() {
    let clean = offered_kbps(0.0);
    assert!(clean > 1500.0, "{clean}");
    // 15% random loss: the loss-based controller cuts 7.5% a window until the target is
    // far below the link (which has no queue to blame).
    let heavy = offered_kbps(0.15);
    assert!(
        heavy < 0.3 * clean,
        "15% loss: {heavy} kbit/s, clean {clean} kbit/s"
    );
    // 5% (between the draft's 2% and 10%): the loss-based estimate holds where the start-up
    // probe left it, so the delay-based search above it never raises the rate; it stays
    // below the lossless flow's.
    let light = offered_kbps(0.05);
    assert!(
        light > heavy && light < clean,
        "5% loss: {light} kbit/s, clean {clean}"
    );
}

#[test]
fn gcc_follows_a_step_down_from_4_to_1_mbit() {
    // 1500-byte opportunities every 3 ms (4 Mbit/s) for 15 s, then every 12 ms (1 Mbit/s).
    let mut ms: Vec<u64> = (0..5_000).map(|i| i * 3).collect();
    ms.extend((0..1_250).map(|i| 15_000 + i * 12));
    let out = run(
        Trace::from_opportunities_ms("step", ms).unwrap(),
        &config(5),
    );
    let before = rate_kbps(&out, 10.0, 15.0);
    assert!(before > 3000.0, "{before} kbit/s before the step");
    // Within 2 s of the step the sender sends under the new capacity (wire bytes by send
    // time) and the link stays busy.
    let sent = sent_kbps(&out, 17.0, 24.0);
    assert!(
        sent < 1000.0 && sent > 800.0,
        "{sent} kbit/s sent after the step"
    );
    let after = rate_kbps(&out, 17.0, 29.0);
    assert!(after > 950.0, "{after} kbit/s after the step");
    // GCC reads the delay gradient, not its level: the queue the step left drains only as
    // fast as the target stays under the capacity, but it drains.
    let peak = queueing_p95_ms(&out, 15.0, 16.0);
    let drained = queueing_p95_ms(&out, 22.0, 25.0);
    assert!(peak > 500.0, "{peak}");
    assert!(
        drained < 0.4 * peak,
        "queueing p95 {peak} ms at the step, {drained} ms 7 s later"
    );
}

#[test]
fn gcc_calls_both_ways_with_feedback_beside_the_media() {
    // Both directions carry a call; each direction's feedback shares the link with the other
    // direction's media, as in the paper's video calls.
    let link = Arc::new(constant_rate_trace("c2", 2.0, 30.0).unwrap());
    let cfg = SimConfig {
        load: Load::Both,
        ..config(10)
    };
    let out = sim::run(link.clone(), link, &cfg, None).unwrap();
    for (name, run) in [("up", &out.uplink), ("down", &out.downlink)] {
        let app = run.app.as_ref().unwrap();
        assert!(app.offered_kbps > 1300.0, "{name}: {app:?}");
        assert!(app.delay_p95_ms < 150.0, "{name}: {app:?}");
        // Feedback (not data) travels beside the media.
        assert!(run.arrivals.iter().any(|x| !x.is_data));
    }
}
