//! ECN end to end in the simulator (issue 38): Cubic negotiates ECN over a CoDel link that
//! marks, answers the marks as RFC 3168 says, and loses nothing to the AQM; Sprout's
//! datagrams are not ECN-capable, so the same link drops them.

use std::sync::Arc;

use sprout_core::direction::Load;
use sprout_link::{constant_rate_trace, DirectionShape, LinkShape, QueueKind};
use sprout_sim::scheme::Scheme;
use sprout_sim::sim::SimOutput;
use sprout_sim::sim_json::{self, SimOptions};
use sprout_sim::App;

fn run(scheme: Scheme, queue: QueueKind, ecn: bool, cross: bool) -> SimOutput {
    run_app(scheme, App::Bulk, queue, ecn, cross)
}

fn run_app(scheme: Scheme, app: App, queue: QueueKind, ecn: bool, cross: bool) -> SimOutput {
    let opts = SimOptions {
        app,
        scheme,
        queue,
        load: Load::Down,
        duration_s: Some(40.0),
        skip_s: 5.0,
        cross: cross.then_some(sprout_tcp::CcKind::Cubic),
        shape: LinkShape {
            both: DirectionShape {
                ecn: ecn.then_some(true),
                ..DirectionShape::default()
            },
            ..LinkShape::default()
        },
        ..SimOptions::default()
    };
    let cfg = opts.config().unwrap();
    assert_eq!(cfg.tcp.ecn, ecn);
    let trace = || Arc::new(constant_rate_trace("c12", 12.0, 60.0).unwrap());
    sim_json::run(trace(), trace(), &cfg, None).unwrap()
}

#[test]
fn cubic_with_ecn_through_codel_is_marked_not_dropped_and_keeps_its_throughput() {
    let dropping = run(Scheme::Cubic, QueueKind::Codel, false, false);
    let marking = run(Scheme::Cubic, QueueKind::Codel, true, false);
    let (d, m) = (&dropping.downlink, &marking.downlink);
    assert!(d.link.packets_aqm_dropped > 10, "{:?}", d.link);
    assert_eq!(d.link.packets_marked, 0);
    assert!(m.link.packets_aqm_marked > 10, "{:?}", m.link);
    assert_eq!(m.link.packets_dropped, 0, "no AQM drops: {:?}", m.link);
    assert_eq!(m.link.packets_step_marked, 0);
    // The marks do what the drops did: CoDel keeps the delay low, and the throughput stays.
    let (dt, mt) = (d.metrics.throughput_kbps, m.metrics.throughput_kbps);
    assert!(mt > 0.95 * dt, "{mt} kbit/s with ECN, {dt} without");
    assert!(m.metrics.utilization > 0.9, "{:?}", m.metrics);
    assert!(m.metrics.p95_delay_ms < 1.5 * d.metrics.p95_delay_ms + 10.0);
    // The JSON counts them.
    let v = sim_json::to_json(
        &SimOptions {
            scheme: Scheme::Cubic,
            ..SimOptions::default()
        },
        &SimOptions::default().config().unwrap(),
        &marking,
    );
    assert_eq!(v["downlink"]["marks"]["aqm"], m.link.packets_aqm_marked);
    assert_eq!(v["downlink"]["drops"]["aqm"], 0);
}

#[test]
fn cross_traffic_negotiates_ecn_too() {
    let out = run(Scheme::Cubic, QueueKind::FqCodel, true, true);
    let s = out.downlink.link;
    assert!(s.packets_aqm_marked > 10, "{s:?}");
    assert_eq!(s.packets_aqm_dropped, 0, "{s:?}");
    assert!(out.downlink.cross_bytes > 1_000_000);
}

#[test]
fn datagrams_are_not_ect_so_they_are_dropped() {
    // A UDP stream above the link's rate (as Sprout's datagrams, Not-ECT): CoDel drops as
    // it would without ECN, and marks nothing.
    let app = App::parse("constant:rate=14M").unwrap();
    let on = run_app(Scheme::Direct, app, QueueKind::Codel, true, false);
    let off = run_app(Scheme::Direct, app, QueueKind::Codel, false, false);
    assert!(
        on.downlink.link.packets_aqm_dropped > 100,
        "{:?}",
        on.downlink.link
    );
    assert_eq!(on.downlink.link, off.downlink.link);
    assert_eq!(on.downlink.link.packets_marked, 0);
}
