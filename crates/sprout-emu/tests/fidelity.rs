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
    let report = fidelity::run_all(3.0).expect("fidelity run");
    eprintln!("{report}");
    for (text, ok) in report.checks() {
        assert!(ok, "{text}");
    }
}
