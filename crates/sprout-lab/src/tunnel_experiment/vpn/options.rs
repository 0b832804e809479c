//! What the `vpn` experiment runs: its options, defaults and the link rate of its first part.

use std::path::PathBuf;

use crate::tunnel_experiment::TunnelOptions;

/// Rate of the line-rate part's constant link, each way (Mbit/s).
pub const VPN_RATE_MBPS: f64 = 1000.0;
/// Length of each line-rate run when none is given (µs): 20 s.
pub const VPN_RATE_DURATION_US: u64 = 20_000_000;
/// Start-up of each line-rate run left out of its goodput (µs): 3 s, or a third of a shorter
/// run.
pub const VPN_RATE_SKIP_US: u64 = 3_000_000;
/// The environment variable naming the boringtun executable when `--boringtun` does not.
pub const BORINGTUN_ENV: &str = "SPROUT_BORINGTUN";
/// The heading of the experiment's section of report.md.
pub const VPN_SECTION: &str = "## Against WireGuard";

/// Options of the `vpn` experiment.
#[derive(Clone, Debug)]
pub struct VpnOptions {
    /// Where, what and how long, as for the tunnel experiment: its folder of traces, link pair
    /// (the LTE part's), duration (every run's; `None` = [`VPN_RATE_DURATION_US`] for the
    /// line-rate runs and the tunnel experiment's default for the LTE ones), skip (the LTE
    /// part's), output folder, `sprout` binary, WebRTC call (the LTE part's) and progress bar.
    pub tunnel: TunnelOptions,
    /// Run the line-rate part (`vpn-rate`).
    pub rate: bool,
    /// Run the LTE part (`vpn-lte`).
    pub lte: bool,
    /// The `boringtun-cli` executable; `None` = `boringtun-cli` on `PATH`.
    pub boringtun: Option<PathBuf>,
}

impl VpnOptions {
    /// The boringtun executable to run.
    pub fn boringtun_exe(&self) -> PathBuf {
        self.boringtun
            .clone()
            .unwrap_or_else(|| PathBuf::from("boringtun-cli"))
    }

    /// The skipped start of a line-rate run of `dur_us` (µs): [`VPN_RATE_SKIP_US`], at most a
    /// third of the run.
    pub fn rate_skip_us(dur_us: u64) -> u64 {
        VPN_RATE_SKIP_US.min(dur_us / 3)
    }
}
