//! Scratch experiment harness (not committed).
use sprout_link::trace::Trace;
use sprout_testbed::sim::{self, Load, SimConfig};
use std::sync::Arc;

fn env<T: std::str::FromStr>(k: &str) -> Option<T> {
    std::env::var(k).ok().and_then(|v| v.parse().ok())
}

fn main() {
    let dir = "/work/shared/traces";
    let mut cfg = SimConfig::default();
    if let Some(s) = env::<usize>("SKIP") {
        cfg.protocol.window_skip_ticks = s;
    }
    if let Some(f) = env::<u64>("FB") {
        cfg.protocol.feedback_interval_us = Some(f);
    }
    if let Some(c) = env::<f64>("CONF") {
        cfg.protocol.confidence = c;
    }
    if let Some(h) = env::<u64>("HB") {
        cfg.protocol.heartbeat_interval_us = h;
    }
    if std::env::var("GRID").is_ok() {
        cfg.protocol.model.grid = sprout_core::params::RateGrid::Midpoint;
        cfg.protocol.model.bins = 257;
    }
    let mode = std::env::var("MODE").unwrap_or("one".into());
    let links = [
        "Verizon-LTE-short",
        "ATT-LTE-driving",
        "TMobile-UMTS-driving",
        "Verizon-EVDO-driving",
    ];
    for l in links {
        let up = Arc::new(Trace::load(format!("{dir}/{l}.up")).unwrap());
        let down = Arc::new(Trace::load(format!("{dir}/{l}.down")).unwrap());
        let loads: Vec<Load> = if mode == "one" {
            vec![Load::Down, Load::Up]
        } else {
            vec![Load::Both]
        };
        for load in loads {
            let mut c = cfg.clone();
            c.load = load;
            c.duration_us = Some(120_000_000);
            c.skip_us = 0;
            let out = sim::run(up.clone(), down.clone(), &c, None).unwrap();
            let mut line = format!("{l:22} {load:?}");
            for (name, d) in [("down", &out.downlink), ("up", &out.uplink)] {
                if (load == Load::Down && name == "up") || (load == Load::Up && name == "down") {
                    continue;
                }
                line += &format!(
                    "  {name} {:5.1}% {:6.0} ms",
                    100.0 * d.metrics.utilization,
                    d.metrics.self_inflicted_ms
                );
            }
            println!("{line}");
        }
    }
}
