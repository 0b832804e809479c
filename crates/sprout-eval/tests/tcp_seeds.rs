//! The simulated loss-based TCP peers against the kernel's through the emulator, over every
//! seeded start: on Verizon-LTE-short with both directions saturated (140 s, measured from
//! 60 s, as the emulated evaluation runs them), kernel Cubic and Reno got about 4.9 Mbit/s each
//! way. Every seed's Cubic and Reno, each direction, must get at least 70% of that goodput.
//! Before the peers opened with a handshake, a mobile starting more than one propagation delay
//! after the server (seeds 2-4) lost the server's first segments, and the downlink flow never
//! recovered: Reno's goodput was 20-29 kbit/s.

use std::path::PathBuf;
use std::sync::Arc;

use sprout_core::time::Duration;
use sprout_eval::eval::Scheme;
use sprout_link::{testdata, Trace};
use sprout_sim::sim::{self, SimConfig};

/// The kernel's goodput through the emulator, about 4.9 Mbit/s each way, times 70% (kbit/s).
const MIN_GOODPUT_KBPS: f64 = 0.7 * 4_900.0;

fn traces() -> Option<PathBuf> {
    testdata::require("traces")
}

#[test]
fn cubic_and_reno_get_most_of_verizon_lte_in_both_directions_from_every_start() {
    let Some(dir) = traces() else { return };
    let load = |ext: &str| {
        Arc::new(Trace::load(dir.join(format!("Verizon-LTE-short.{ext}"))).expect("trace"))
    };
    let (up, down) = (load("up"), load("down"));
    let mut failures = Vec::new();
    for scheme in [Scheme::Cubic, Scheme::Reno] {
        for seed in 0..10 {
            let mut cfg = SimConfig {
                duration: Some(Duration::from_secs(140)),
                seed,
                ..SimConfig::default()
            };
            scheme.configure(&mut cfg);
            let out = sim::run(up.clone(), down.clone(), &cfg, None).expect("simulation");
            for (direction, run) in [("down", &out.downlink), ("up", &out.uplink)] {
                let m = &run.metrics;
                eprintln!(
                    "{:>5} seed {seed} {direction:>4}: goodput {:5.0} kbit/s, throughput {:5.0} \
                     kbit/s, self-inflicted delay {:6.0} ms",
                    scheme.key(),
                    m.goodput_kbps,
                    m.throughput_kbps,
                    m.self_inflicted_ms
                );
                if m.goodput_kbps < MIN_GOODPUT_KBPS {
                    failures.push(format!(
                        "{} seed {seed} {direction}: {:.0} kbit/s",
                        scheme.key(),
                        m.goodput_kbps
                    ));
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "below {MIN_GOODPUT_KBPS:.0} kbit/s: {failures:?}"
    );
}
