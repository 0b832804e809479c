//! Application traffic in the simulator: a constant stream, video and adaptive video over
//! Sprout, TCP and `direct`, scored by application-level delay.

use std::sync::Arc;

use sprout_core::direction::Load;
use sprout_core::time::Duration;
use sprout_link::{constant_rate_trace, testdata, Trace};
use sprout_sim::app_metrics::AppMetrics;
use sprout_sim::scheme::Scheme;
use sprout_sim::sim::{self, SimConfig, SimOutput};
use sprout_sim::sim_json::{self, SimOptions};
use sprout_sim::App;

/// A constant 5 Mbit/s link both ways, 25 s.
fn link() -> Arc<Trace> {
    Arc::new(constant_rate_trace("c5", 5.0, 25.0).unwrap())
}

fn config(scheme: Scheme, app: &str, load: Load) -> SimConfig {
    let mut cfg = SimConfig {
        skip: Duration::from_secs(5),
        load,
        app: App::parse(app).unwrap(),
        ..SimConfig::default()
    };
    scheme.configure(&mut cfg);
    cfg
}

fn run(scheme: Scheme, app: &str, load: Load, trace: &Arc<Trace>) -> SimOutput {
    sim::run(
        trace.clone(),
        trace.clone(),
        &config(scheme, app, load),
        None,
    )
    .unwrap()
}

fn down_app(out: &SimOutput) -> &AppMetrics {
    out.downlink
        .app
        .as_ref()
        .expect("a non-bulk app has app metrics")
}

#[test]
fn direct_delivers_a_constant_stream_at_the_propagation_delay() {
    let out = run(Scheme::Direct, "constant:rate=500k", Load::Down, &link());
    let a = down_app(&out);
    // 1200-byte datagrams every 19.2 ms made in the first 15 s of the 20 s window (its last
    // quarter is left for them to arrive: app_metrics::counted_window).
    assert!((a.messages as i64 - 781).abs() <= 1, "{a:?}");
    assert!((a.offered_kbps - 500.0).abs() < 1.0, "{a:?}");
    assert!(a.delivered_share > 0.99, "{a:?}");
    // 20 ms of propagation, plus the wait for the next opportunity (2.4 ms apart at 5 Mbit/s).
    assert!(a.delay_p95_ms >= 20.0 && a.delay_p95_ms < 24.0, "{a:?}");
    assert!(
        a.delay_p50_ms >= 20.0 && a.delay_p50_ms <= a.delay_p95_ms,
        "{a:?}"
    );
    assert_eq!(a.within_100ms, a.within_300ms);
    assert!(a.within_150ms > 0.99);
    // The datagrams cross the link with their 28-byte header; the uplink carries nothing.
    assert!(out.uplink.app.is_none());
    assert_eq!(out.uplink.datagrams_sent, 0);
    assert!(out
        .downlink
        .arrivals
        .iter()
        .all(|x| x.bytes == 1228 && x.app_bytes == 1200));
    let goodput = out.downlink.metrics.goodput_kbps;
    assert!((goodput - 500.0).abs() < 5.0, "goodput {goodput}");
}

#[test]
fn direct_floods_a_link_slower_than_its_stream() {
    // 2 Mbit/s into 1 Mbit/s: the queue grows without bound, and so does the delay.
    let slow = Arc::new(constant_rate_trace("c1", 1.0, 25.0).unwrap());
    let a = down_app(&run(Scheme::Direct, "constant:rate=2M", Load::Down, &slow)).clone();
    assert!(a.delivered_share < 0.6, "{a:?}");
    assert!(a.delay_p50_ms > 3_000.0, "{a:?}");
    assert_eq!(a.delay_p99_ms, f64::INFINITY);
    assert!(a.within_300ms < 0.1, "{a:?}");
}

#[test]
fn sprout_delivers_a_constant_stream() {
    let out = run(Scheme::Sprout, "constant:rate=500k", Load::Down, &link());
    let a = down_app(&out);
    assert!((a.offered_kbps - 500.0).abs() < 1.0, "{a:?}");
    assert!(a.delivered_share > 0.9, "{a:?}");
    assert!(
        a.delay_p50_ms >= 20.0 && a.delay_p50_ms.is_finite(),
        "{a:?}"
    );
    // Each data datagram carries one application datagram, never filler.
    assert!(out
        .downlink
        .arrivals
        .iter()
        .all(|x| !x.is_data || x.app_bytes == 1200));
}

#[test]
fn tcp_delivers_a_constant_stream_after_its_handshake() {
    for scheme in [Scheme::Cubic, Scheme::Vegas] {
        for load in [Load::Up, Load::Down] {
            let out = run(scheme, "constant:rate=500k", load, &link());
            let (a, none) = match load {
                Load::Up => (&out.uplink.app, &out.downlink.app),
                _ => (&out.downlink.app, &out.uplink.app),
            };
            let a = a.as_ref().unwrap();
            assert!(none.is_none());
            assert!(a.delivered_share > 0.99, "{scheme:?} {load:?} {a:?}");
            // A stream far below the link's rate waits for nothing but the link.
            assert!(
                a.delay_p95_ms >= 20.0 && a.delay_p95_ms < 60.0,
                "{scheme:?} {load:?} {a:?}"
            );
        }
    }
}

#[test]
fn video_frames_are_delivered_whole() {
    for scheme in [Scheme::Direct, Scheme::Sprout, Scheme::Cubic] {
        let out = run(
            scheme,
            "video:rate=1M,fps=30,key=2,keyratio=8",
            Load::Down,
            &link(),
        );
        let a = down_app(&out);
        // 30 frames/s over the 15 s counted (counted_window).
        assert_eq!(a.messages, 450, "{scheme:?}");
        assert!((a.offered_kbps - 1000.0).abs() < 20.0, "{scheme:?} {a:?}");
        assert!(a.delivered_share > 0.9, "{scheme:?} {a:?}");
        // A frame is several datagrams: it waits for its last one.
        assert!(a.delay_p50_ms > 20.0 + 4.0, "{scheme:?} {a:?}");
        if scheme == Scheme::Direct {
            // A key frame, 8 average frames (33 kB), takes 53 ms at 5 Mbit/s on top of
            // the propagation delay.
            assert!(a.delay_p99_ms > 70.0 && a.delay_p99_ms < 90.0, "{a:?}");
            assert!(a.delivered_share > 0.99, "{a:?}");
        }
    }
}

#[test]
fn adaptive_video_follows_what_the_transport_allows() {
    for scheme in [Scheme::Sprout, Scheme::Cubic] {
        let out = run(
            scheme,
            "adaptive:fps=30,min=100k,max=20M",
            Load::Down,
            &link(),
        );
        let a = down_app(&out);
        // Far above the floor: the frames follow the transport's window (Cubic's, over a
        // queue that never drops, grows past the link's rate, and frames queue up behind it).
        assert!(
            a.offered_kbps > 1_000.0 && a.offered_kbps < 6_000.0,
            "{scheme:?} {a:?}"
        );
        assert!(a.delivered_kbps > 1_000.0, "{scheme:?} {a:?}");
        assert!(a.messages > 100 && a.messages <= 600, "{scheme:?} {a:?}");
    }
    // A ceiling below the link holds the source to it.
    let out = run(
        Scheme::Cubic,
        "adaptive:fps=25,min=100k,max=400k",
        Load::Down,
        &link(),
    );
    let a = down_app(&out);
    assert!((a.offered_kbps - 400.0).abs() < 5.0, "{a:?}");
    // 25 frames/s over the 15 s counted (counted_window).
    assert_eq!(a.messages, 375);
}

#[test]
fn both_directions_carry_the_stream_when_both_are_loaded() {
    let out = run(Scheme::Sprout, "constant:rate=300k", Load::Both, &link());
    for d in [&out.uplink, &out.downlink] {
        let a = d.app.as_ref().unwrap();
        assert!((a.offered_kbps - 300.0).abs() < 1.0, "{a:?}");
        assert!(a.delivered_share > 0.9, "{a:?}");
    }
}

#[test]
fn a_bulk_run_has_no_app_metrics_and_direct_refuses_bulk_and_adaptive() {
    let t = link();
    let out = run(Scheme::Sprout, "bulk", Load::Both, &t);
    assert!(out.uplink.app.is_none() && out.downlink.app.is_none());
    for app in ["bulk", "adaptive"] {
        let e = sim::run(
            t.clone(),
            t.clone(),
            &config(Scheme::Direct, app, Load::Down),
            None,
        )
        .unwrap_err();
        assert!(e.is_bad_parameter());
        assert!(e.to_string().starts_with("direct with app "), "{e}");
    }
    let opts = SimOptions {
        scheme: Scheme::Direct,
        app: App::Bulk,
        ..SimOptions::default()
    };
    assert!(opts
        .config()
        .unwrap_err()
        .to_string()
        .contains("would flood the link"));
    // A stream too fast to hold in memory is refused before the run.
    let e = sim::run(
        t.clone(),
        t,
        &config(Scheme::Direct, "constant:rate=10G,packet=100", Load::Down),
        None,
    )
    .unwrap_err();
    assert!(
        e.to_string()
            .contains("datagrams in 25 s, more than the 20000000"),
        "{e}"
    );
}

#[test]
fn same_inputs_same_app_figures() {
    let t = link();
    let cfg = SimConfig {
        seed: 7,
        ..config(Scheme::Sprout, "video:rate=2M", Load::Both)
    };
    let a = sim::run(t.clone(), t.clone(), &cfg, None).unwrap();
    let b = sim::run(t.clone(), t, &cfg, None).unwrap();
    assert_eq!(a.downlink.app, b.downlink.app);
    assert_eq!(a.uplink.app, b.uplink.app);
}

#[test]
fn lost_datagrams_leave_frames_undelivered() {
    let t = link();
    let mut cfg = config(
        Scheme::Direct,
        "video:rate=1M,fps=30,key=2,keyratio=8",
        Load::Down,
    );
    cfg.link.loss = 0.05;
    let out = sim::run(t.clone(), t, &cfg, None).unwrap();
    let a = down_app(&out);
    // About 4 datagrams a frame, 5% of them lost: most frames lose none, some lose one.
    assert!(a.delivered_share < 0.95 && a.delivered_share > 0.6, "{a:?}");
    assert_eq!(a.delay_p99_ms, f64::INFINITY);
}

#[test]
fn json_carries_the_app_and_its_figures() {
    let t = link();
    let o = SimOptions {
        scheme: Scheme::Direct,
        app: App::parse("constant:rate=500k").unwrap(),
        load: Load::Down,
        skip_s: 5.0,
        ..SimOptions::default()
    };
    let cfg = o.config().unwrap();
    let out = sim_json::run(t.clone(), t, &cfg, None).unwrap();
    let v = sim_json::to_json(&o, &cfg, &out);
    assert_eq!(v["scheme"], "direct");
    assert_eq!(v["app"], "constant:rate=500k,packet=1200");
    assert!(v["uplink"]["app"].is_null());
    let a: AppMetrics = serde_json::from_value(v["downlink"]["app"].clone()).unwrap();
    assert_eq!(&a, down_app(&out));
    for key in [
        "offered_kbps",
        "delivered_kbps",
        "delivered_share",
        "messages",
        "delay_p50_ms",
        "delay_p95_ms",
        "delay_p99_ms",
        "within_100ms",
        "within_150ms",
        "within_300ms",
    ] {
        assert!(v["downlink"]["app"][key].is_number(), "{key}");
    }
}

#[test]
fn sprout_carries_a_constant_stream_over_a_paper_trace() {
    let (Some(up), Some(down)) = (
        testdata::require("traces/Verizon-LTE-short.up"),
        testdata::require("traces/Verizon-LTE-short.down"),
    ) else {
        return;
    };
    let up = Arc::new(Trace::load(&up).unwrap());
    let down = Arc::new(Trace::load(&down).unwrap());
    let mut figures = Vec::new();
    for scheme in [Scheme::Direct, Scheme::Sprout] {
        let cfg = SimConfig {
            duration: Some(Duration::from_secs(70)),
            skip: Duration::from_secs(10),
            ..config(scheme, "constant:rate=500k", Load::Down)
        };
        let out = sim::run(up.clone(), down.clone(), &cfg, None).unwrap();
        let a = down_app(&out).clone();
        assert!((a.offered_kbps - 500.0).abs() < 1.0, "{scheme:?} {a:?}");
        figures.push(a);
    }
    // Direct is the floor: no transport delivers more of a fixed-rate stream sooner.
    assert!(figures[0].delivered_share > 0.99, "{:?}", figures[0]);
    assert!(figures[1].delivered_share > 0.5, "{:?}", figures[1]);
    assert!(
        figures[1].delay_p50_ms >= figures[0].delay_p50_ms - 1.0,
        "{figures:?}"
    );
}
