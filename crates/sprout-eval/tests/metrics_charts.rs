//! Property tests of the section-5.1 metrics and well-formedness tests of the SVG charts.

use proptest::prelude::*;
use sprout_core::time::{Duration, Instant};
use sprout_eval::chart::{
    throughput_delay_chart, time_series_chart, utilization_delay_chart, ChartPoint,
    UtilizationPoint,
};
use sprout_eval::paper;
use sprout_sim::metrics::{
    compute, delay_samples, omniscient_delay_samples, percentile, time_series, Arrival, Window,
};

const MS: u64 = 1000;

/// A trace (sorted opportunity times, µs), a propagation delay, and a schedule whose packets
/// each depart at one of the opportunities, having been sent at least one propagation delay
/// earlier (and not before time 0).
fn schedule_strategy() -> impl Strategy<Value = (Vec<u64>, u64, Vec<Arrival>, Window)> {
    (
        prop::collection::vec((0u64..40, 0u64..3), 1..120), // (gap ms, extra copies)
        0u64..50,                                           // propagation ms
        0u64..400,                                          // window start ms
        1u64..2000,                                         // window length ms
    )
        .prop_flat_map(|(gaps, prop_ms, ws, wl)| {
            let mut opps = Vec::new();
            let mut t = 0u64;
            for (g, extra) in gaps {
                t += g * MS + g * 37; // not always on a millisecond boundary
                for _ in 0..=extra {
                    opps.push(t);
                }
            }
            let n = opps.len();
            // For each opportunity: used? and how much earlier than allowed it was sent.
            let choices = prop::collection::vec((any::<bool>(), 0u64..300_000), n);
            (Just(opps), Just(prop_ms * MS), choices, Just(ws), Just(wl))
        })
        .prop_map(|(opps, prop_us, choices, ws, wl)| {
            let mut arrivals = Vec::new();
            for (&o, (used, extra)) in opps.iter().zip(choices) {
                if !used || o < prop_us {
                    continue; // cannot have been sent at or after time 0
                }
                let latest_send = o - prop_us;
                arrivals.push(Arrival {
                    sent: Instant::from_micros(latest_send.saturating_sub(extra)),
                    arrived: Instant::from_micros(o),
                    bytes: 1500,
                    app_bytes: 1400,
                    is_data: true,
                });
            }
            arrivals.sort_by_key(|a| a.arrived);
            (
                opps,
                prop_us,
                arrivals,
                Window::new(Instant::from_millis(ws), Instant::from_millis(ws + wl)),
            )
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// The omniscient sender is a lower bound: pointwise on the delay function, hence on
    /// the 95th percentile, for any schedule that respects the opportunities and the
    /// propagation delay (with any reordering).
    #[test]
    fn omniscient_is_a_lower_bound((opps, prop_us, arrivals, window) in schedule_strategy()) {
        let step = Duration::from_micros(MS);
        let omni = omniscient_delay_samples(&opps, Duration::from_micros(prop_us), window, step);
        let sched = delay_samples(&arrivals, window, step, |_| true);
        prop_assert_eq!(omni.len(), sched.len());
        for (o, s) in omni.iter().zip(&sched) {
            prop_assert!(o <= s, "omniscient {} > schedule {}", o, s);
        }
        prop_assert!(percentile(&omni, 95.0) <= percentile(&sched, 95.0));
        let m = compute(&arrivals, &opps, 1500, Duration::from_micros(prop_us), window, step);
        prop_assert!(m.self_inflicted_ms >= 0.0);
        prop_assert!(m.utilization <= 1.0 + 1e-12);
    }

    /// The delay function never decreases faster than arrivals allow and rises 1 ms per ms
    /// between arrivals.
    #[test]
    fn delay_rises_at_one_per_ms_between_arrivals((_o, _p, arrivals, window) in schedule_strategy()) {
        let step = Duration::from_micros(MS);
        let s = delay_samples(&arrivals, window, step, |_| true);
        let times: Vec<Instant> = window.sample_times(step).collect();
        for k in 1..s.len() {
            let arrived_between = arrivals
                .iter()
                .any(|a| a.arrived > times[k - 1] && a.arrived <= times[k]);
            if !arrived_between {
                prop_assert_eq!(s[k], s[k - 1] + MS);
            }
        }
    }
}

fn parse(svg: &str) -> roxmltree::Document<'_> {
    roxmltree::Document::parse(svg).expect("well-formed SVG")
}

fn point_cx(doc: &roxmltree::Document, label: &str, paper: bool) -> f64 {
    doc.descendants()
        .find(|n| {
            n.attribute("class") == Some("point")
                && n.attribute("data-label") == Some(label)
                && n.attribute("data-paper") == Some(if paper { "true" } else { "false" })
        })
        .unwrap_or_else(|| panic!("no marker for {label}"))
        .attribute("cx")
        .unwrap()
        .parse()
        .unwrap()
}

fn fig7_points() -> Vec<ChartPoint> {
    let mut pts = Vec::new();
    let names = [
        ("sprout", "Sprout"),
        ("sprout-ewma", "Sprout-EWMA"),
        ("cubic", "Cubic"),
        ("vegas", "Vegas"),
        ("ledbat", "LEDBAT"),
        ("compound", "Compound"),
    ];
    for (key, name) in names {
        let p = paper::fig7("Verizon-LTE-short", "down", key).unwrap();
        pts.push(ChartPoint {
            label: name.into(),
            throughput_kbps: p.throughput_kbps,
            delay_ms: p.self_inflicted_ms,
            paper: true,
        });
    }
    // "Ours": made-up values near the published ones.
    pts.push(ChartPoint {
        label: "Sprout".into(),
        throughput_kbps: 4300.0,
        delay_ms: 88.0,
        paper: false,
    });
    pts.push(ChartPoint {
        label: "Sprout-EWMA".into(),
        throughput_kbps: 6900.0,
        delay_ms: 260.0,
        paper: false,
    });
    pts.push(ChartPoint {
        label: "Cubic".into(),
        throughput_kbps: 7100.0,
        delay_ms: 9100.0,
        paper: false,
    });
    pts.push(ChartPoint {
        label: "Omniscient <&>".into(),
        throughput_kbps: 7600.0,
        delay_ms: 0.2,
        paper: false,
    });
    pts
}

#[test]
fn throughput_delay_chart_is_wellformed_and_reversed() {
    let pts = fig7_points();
    let svg = throughput_delay_chart("Verizon LTE downlink", &pts);
    let doc = parse(&svg);
    assert_eq!(doc.root_element().tag_name().name(), "svg");
    let texts: Vec<String> = doc
        .descendants()
        .filter(|n| n.has_tag_name("text"))
        .filter_map(|n| n.text().map(str::to_string))
        .collect();
    for p in &pts {
        assert!(texts.contains(&p.label), "label {} missing", p.label);
    }
    assert!(texts.iter().any(|t| t.contains("up and to the right")));
    assert!(texts.iter().any(|t| t.contains("Throughput (kbit/s)")));
    // Reversed log axis: larger delay further left.
    let cubic = point_cx(&doc, "Cubic", true); // 7568 ms
    let sprout = point_cx(&doc, "Sprout", true); // 73 ms
    let vegas = point_cx(&doc, "Vegas", true); // 215 ms
    assert!(cubic < vegas && vegas < sprout);
    // Logarithmic: equal ratios give equal distances (73 -> 215 is not 10x, so compare
    // against the map of the points' own logs).
    let ours = point_cx(&doc, "Sprout", false); // 88 ms
    let ratio = (sprout - ours) / (sprout - cubic);
    let expect = (88f64.log10() - 73f64.log10()) / (7568f64.log10() - 73f64.log10());
    assert!((ratio - expect).abs() < 1e-3, "{ratio} vs {expect}");
    // Sub-millisecond delay clamped to 1 ms: rightmost.
    let omni = point_cx(&doc, "Omniscient <&>", false);
    assert!(omni > sprout);
    // Paper points hollow, ours filled.
    let hollow = doc
        .descendants()
        .filter(|n| n.attribute("data-paper") == Some("true"))
        .all(|n| n.attribute("fill") == Some("white"));
    assert!(hollow);
}

#[test]
fn utilization_chart_is_wellformed() {
    let mut pts: Vec<UtilizationPoint> = paper::FIG8_TABLE
        .iter()
        .map(|(k, p)| UtilizationPoint {
            label: k.to_string(),
            utilization: p.utilization,
            delay_ms: p.self_inflicted_ms,
            paper: true,
        })
        .collect();
    pts.push(UtilizationPoint {
        label: "sprout".into(),
        utilization: 0.45,
        delay_ms: 250.0,
        paper: false,
    });
    let svg = utilization_delay_chart("Average over 8 links", &pts);
    let doc = parse(&svg);
    let texts: Vec<&str> = doc
        .descendants()
        .filter(|n| n.has_tag_name("text"))
        .filter_map(|n| n.text())
        .collect();
    for p in &pts {
        assert!(texts.contains(&p.label.as_str()));
    }
    assert!(texts.contains(&"100%"));
    assert!(point_cx(&doc, "cubic", true) < point_cx(&doc, "sprout", true));
}

fn example_series() -> Vec<sprout_sim::metrics::TimeSeriesPoint> {
    // A synthetic 20 s trace: capacity oscillates, with a 1.5 s outage; the sender keeps
    // delay near 60 ms except around the outage.
    let mut opps = Vec::new();
    let mut t = 0u64;
    while t < 20_000 * MS {
        let s = t as f64 / 1e6;
        let outage = (9.0..10.5).contains(&s);
        let rate = 300.0 + 250.0 * (s * 0.9).sin(); // packets/s
        if !outage {
            opps.push(t);
        }
        t += (1e6 / rate) as u64;
    }
    let arrivals: Vec<Arrival> = opps
        .iter()
        .enumerate()
        .filter(|(i, _)| i % 3 != 0)
        .map(|(i, &o)| Arrival {
            sent: Instant::from_micros(o.saturating_sub(60 * MS)),
            arrived: Instant::from_micros(o),
            bytes: 1500,
            app_bytes: if i % 17 == 0 { 0 } else { 1400 },
            is_data: i % 17 != 0,
        })
        .collect();
    time_series(
        &arrivals,
        &opps,
        1500,
        Window::new(Instant::ZERO, Instant::from_millis(20_000)),
        Duration::from_millis(100),
    )
}

#[test]
fn time_series_chart_is_wellformed() {
    let pts = example_series();
    let svg = time_series_chart("Example link", &pts);
    let doc = parse(&svg);
    let texts: Vec<&str> = doc
        .descendants()
        .filter(|n| n.has_tag_name("text"))
        .filter_map(|n| n.text())
        .collect();
    assert!(texts.contains(&"Example link"));
    assert!(texts.contains(&"100 ms target"));
    assert!(texts.contains(&"Time (s)"));
    for class in ["capacity", "throughput", "delay"] {
        assert!(
            doc.descendants()
                .any(|n| n.attribute("class") == Some(class)),
            "{class} missing"
        );
    }
    // Empty input still renders.
    parse(&time_series_chart("empty", &[]));
    parse(&throughput_delay_chart("empty", &[]));
}

/// Writes example charts to $SPROUT_CHART_DIR (if set) for visual inspection.
#[test]
fn render_examples() {
    let Ok(dir) = std::env::var("SPROUT_CHART_DIR") else {
        return;
    };
    let dir = std::path::Path::new(&dir);
    std::fs::write(
        dir.join("chart-fig7.svg"),
        throughput_delay_chart("Verizon LTE downlink", &fig7_points()),
    )
    .unwrap();
    let mut u: Vec<UtilizationPoint> = paper::FIG8_TABLE
        .iter()
        .map(|(k, p)| UtilizationPoint {
            label: match *k {
                "sprout" => "Sprout",
                "sprout-ewma" => "Sprout-EWMA",
                "cubic" => "Cubic",
                _ => "Cubic-CoDel",
            }
            .into(),
            utilization: p.utilization,
            delay_ms: p.self_inflicted_ms,
            paper: true,
        })
        .collect();
    u.push(UtilizationPoint {
        label: "Sprout".into(),
        utilization: 0.44,
        delay_ms: 280.0,
        paper: false,
    });
    u.push(UtilizationPoint {
        label: "Cubic".into(),
        utilization: 0.99,
        delay_ms: 18000.0,
        paper: false,
    });
    std::fs::write(
        dir.join("chart-fig8.svg"),
        utilization_delay_chart("Average over the 8 links", &u),
    )
    .unwrap();
    std::fs::write(
        dir.join("chart-fig1.svg"),
        time_series_chart(
            "Synthetic link: capacity, throughput and delay",
            &example_series(),
        ),
    )
    .unwrap();
}
