//! The fidelity acceptance points, measured on the real emulator. Timing-sensitive, so
//! one test function runs the three measurements one after the other.

use sprout_emu::fidelity;
use sprout_emu::has_network_privileges;

#[test]
fn flood_and_probe_fidelity() {
    if !has_network_privileges() || !std::path::Path::new("/dev/net/tun").exists() {
        eprintln!("skipped: not root, or no /dev/net/tun");
        return;
    }
    // Real-time measurements on a 2-core machine: a burst of other work can spoil one run. A run
    // with a failed check is repeated once, and the second run must pass every check; a real
    // regression fails both.
    let mut report = fidelity::run_all(3.0).expect("fidelity run");
    eprintln!("{report}");
    if report.checks().iter().any(|(_, ok)| !ok) {
        eprintln!("a check failed; measuring once more");
        report = fidelity::run_all(3.0).expect("fidelity run");
        eprintln!("{report}");
    }
    for (text, ok) in report.checks() {
        assert!(ok, "{text}");
    }
}
