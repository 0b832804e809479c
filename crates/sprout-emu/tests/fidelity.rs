//! The emulator's fidelity, measured for real: floods at 12, 200 and 1,000 Mbit/s and a light probe.
//! Timing-sensitive, so one test function runs the four measurements one after the other.
//!
//! The floods must use the capacity (`FidelityReport::flood_checks`). For the probe, the test guards
//! what our code decides: every datagram arrives, and the median overhead beyond the model's
//! opportunity wait is under 1 ms. The 99th percentile, which `sprout link --fidelity` reports
//! against 1 ms, is set by how this 2-core VM schedules the emulator (4.4 ms in one CI run, 0.3
//! ms alone), so it is printed here but not asserted.

use sprout_emu::fidelity::{self, FidelityReport};
use sprout_os::caps::has_network_privileges;

/// (description, passed) of what this test asserts.
fn guarded(report: &FidelityReport) -> Vec<(String, bool)> {
    let p = &report.probe;
    let p50 = p.overhead_us.quantile(0.5).unwrap_or(u64::MAX);
    let mut checks = report.flood_checks().to_vec();
    checks.push((
        format!(
            "probe: {} of {} datagrams received; median overhead beyond the model's wait {p50} µs, at most 1000 µs",
            p.received, p.sent
        ),
        p.received == p.sent && p50 <= 1000,
    ));
    checks
}

#[test]
fn flood_and_probe_fidelity() {
    if !has_network_privileges() || !std::path::Path::new("/dev/net/tun").exists() {
        eprintln!("skipped: not root, or no /dev/net/tun");
        return;
    }
    // A burst of other work on the machine can spoil one run: a run with a failed check is
    // repeated once, and the second run must pass; a real regression fails both.
    let mut report = fidelity::run_all(3.0).expect("fidelity run");
    eprintln!("{report}");
    if guarded(&report).iter().any(|(_, ok)| !ok) {
        eprintln!("a check failed; measuring once more");
        report = fidelity::run_all(3.0).expect("fidelity run");
        eprintln!("{report}");
    }
    for (text, ok) in guarded(&report) {
        assert!(ok, "{text}");
    }
}
