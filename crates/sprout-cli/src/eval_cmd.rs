//! `sprout eval`: the paper's evaluation, simulated (`sprout_eval::eval`) or in real time
//! through the link emulator (`--emulate`, `sprout_lab`); its exit status says whether every
//! check of the paper's findings held.

use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use sprout_eval::cli::{self, EvalArgs as SimEvalArgs};
use sprout_eval::eval::{self, Experiment};
use sprout_lab::emulate::{self, EmulateOptions, InteractiveOptions};
use sprout_lab::tunnel_experiment::vpn::{self, VpnOptions};
use sprout_lab::tunnel_experiment::{self, TunnelOptions};
use sprout_lab::webrtc_call;
use sprout_sim::duration::seconds_to_us;

use crate::exit_status::ExitStatus;

#[derive(clap::Args)]
pub(crate) struct EvalArgs {
    /// The simulated evaluation's flags (the `sprout-eval` binary takes the same).
    #[command(flatten)]
    sim: SimEvalArgs,
    /// With --emulate and the interactive experiment: comma-separated offered rates, kbit/s
    /// [default: 500,2000].
    #[arg(long, value_delimiter = ',', requires = "emulate")]
    rates: Vec<f64>,
    /// Run in real time through the link emulator (needs root): our Sprout over UDP and the
    /// kernel's TCP, metrics from the emulator's logs, the simulator's results beside them.
    #[arg(long)]
    pub(crate) emulate: bool,
    /// With --emulate: comma-separated link pairs to run [default: Verizon-LTE-short].
    #[arg(long, value_delimiter = ',', requires = "emulate")]
    links: Vec<String>,
    /// With --emulate: seconds of each run [default: 140; tunnel: 120; tunnel-cost: 30;
    /// interactive: 60].
    #[arg(long, requires = "emulate")]
    duration: Option<f64>,
    /// With --emulate: the Python that runs the WebRTC call of the webrtc scheme and of the
    /// tunnel experiment (`python -m sprout.webrtc_call`; install with pip install
    /// './python[webrtc]') [default: $SPROUT_PYTHON, else python3].
    #[arg(long, value_name = "PATH", requires = "emulate")]
    python: Option<PathBuf>,
    /// With --emulate --experiments tunnel: leave out the WebRTC call (aiortc) that runs beside
    /// the download in runs of its own (it needs the Python given by --python with the webrtc
    /// extra).
    #[arg(long, requires = "emulate")]
    no_call: bool,
    /// With --emulate --experiments vpn: the boringtun executable (`cargo install
    /// boringtun-cli`; configured with `wg`, from wireguard-tools) [default:
    /// $SPROUT_BORINGTUN, else boringtun-cli].
    #[arg(long, value_name = "PATH", requires = "emulate")]
    boringtun: Option<PathBuf>,
}

/// Runs `sprout eval`.
pub(crate) fn run(a: EvalArgs) -> Result<()> {
    if a.emulate {
        if !a.sim.params.is_empty() {
            bail!("--param: not with --emulate (the emulated runs use the paper's parameters)");
        }
        let (interactive, aqm, exps) = emulated_experiments(&a.sim.experiments)?;
        let (vpn_rate, vpn_lte) = vpn_parts(&a.sim.experiments);
        let boringtun = a
            .boringtun
            .clone()
            .or_else(|| std::env::var_os(vpn::BORINGTUN_ENV).map(PathBuf::from));
        let tunnel = TunnelOptions {
            isolation: exps.contains(&Experiment::Tunnel),
            cost: exps.contains(&Experiment::TunnelCost),
            traces: a.sim.traces.clone(),
            link: a.links.first().cloned(),
            duration_us: a
                .duration
                .map(|d| seconds_to_us(d, "duration"))
                .transpose()?,
            skip_us: Some(seconds_to_us(a.sim.skip, "skip")?),
            out: a.sim.out.clone(),
            sprout_exe: std::env::current_exe().context("locating the sprout binary")?,
            progress: !a.sim.quiet,
            call: !a.no_call,
            python: webrtc_call::python_from(
                a.python.clone(),
                std::env::var_os(webrtc_call::PYTHON_ENV),
            ),
        };
        let interactive = interactive.then(|| -> Result<InteractiveOptions> {
            Ok(InteractiveOptions {
                traces: a.sim.traces.clone(),
                link: a.links.first().cloned(),
                rates_kbps: if a.rates.is_empty() {
                    emulate::DEFAULT_INTERACTIVE_RATES_KBPS.to_vec()
                } else {
                    a.rates.clone()
                },
                duration_us: a
                    .duration
                    .map_or(Ok(emulate::DEFAULT_INTERACTIVE_DURATION_US), |d| {
                        seconds_to_us(d, "duration")
                    })?,
                out: a.sim.out.clone(),
                sprout_exe: std::env::current_exe().context("locating the sprout binary")?,
                progress: !a.sim.quiet,
            })
        });
        let aqm = aqm.then(|| aqm_options(&a)).transpose()?;
        let mut summary = String::new();
        if exps.contains(&Experiment::Fig7) {
            summary.push_str(&emulate_fig7(a, &tunnel)?);
        } else if tunnel.isolation || tunnel.cost {
            let tunnel_summary = tunnel_experiment::run(&tunnel)?;
            println!("{tunnel_summary}");
            summary.push_str(&tunnel_summary);
        }
        if let Some(opts) = interactive.transpose()? {
            let text = emulate::run_interactive(&opts)?;
            println!("{text}");
            summary.push_str(&text);
        }
        if let Some(opts) = aqm {
            summary.push_str(&emulate_aqm(&opts, &tunnel)?);
        }
        if vpn_rate || vpn_lte {
            let opts = VpnOptions {
                tunnel: tunnel.clone(),
                rate: vpn_rate,
                lte: vpn_lte,
                boringtun,
            };
            let text = vpn::run(&opts)?;
            println!("{text}");
            summary.push_str(&text);
        }
        return checks_held(&summary);
    }
    let summary = eval::run(&a.sim.options()?)?;
    println!("{summary}");
    checks_held(&summary)
}

/// The words of `--experiments`, trimmed and in lower case.
fn experiment_words(given: &[String]) -> Vec<String> {
    given
        .iter()
        .map(|w| w.trim().to_ascii_lowercase())
        .filter(|w| !w.is_empty())
        .collect()
}

/// The emulated-only experiments asked for by name and not in `all`: `vpn` (both parts),
/// `vpn-rate` and `vpn-lte`.
const BY_NAME_ONLY: [&str; 4] = ["aqm", "vpn", "vpn-rate", "vpn-lte"];

/// Which parts of the `vpn` experiment `--experiments` asks for: (line rate, LTE).
fn vpn_parts(given: &[String]) -> (bool, bool) {
    let words = experiment_words(given);
    let has = |w: &str| words.iter().any(|x| x == w);
    (has("vpn") || has("vpn-rate"), has("vpn") || has("vpn-lte"))
}

/// The emulated experiments of `--experiments`: whether the interactive one is among them
/// (`interactive`, or `all`), whether `aqm` is (only by name), and the others (none when only
/// `interactive`, `aqm` or a part of `vpn` is asked for; fig7 when nothing is).
fn emulated_experiments(given: &[String]) -> Result<(bool, bool, Vec<Experiment>)> {
    let words = experiment_words(given);
    let interactive = words.iter().any(|w| w == "interactive" || w == "all");
    let aqm = words.iter().any(|w| w == "aqm");
    let by_name = words.iter().any(|w| BY_NAME_ONLY.contains(&w.as_str()));
    let rest: Vec<&str> = words
        .iter()
        .map(String::as_str)
        .filter(|w| *w != "interactive" && !BY_NAME_ONLY.contains(w))
        .collect();
    if (interactive || by_name) && rest.is_empty() {
        return Ok((interactive, aqm, Vec::new()));
    }
    let exps = Experiment::parse_emulated_list(&rest.join(","))
        .map_err(|e| anyhow::anyhow!("--experiments: {e} (or interactive, aqm, vpn)"))?;
    Ok((interactive, aqm, exps))
}

/// The emulated `aqm` experiment's agreement check: its schemes (`--schemes`, else
/// [`emulate::AQM_SCHEMES`]) over [`emulate::AQM_QUEUE`], emulated and simulated, on the
/// links asked for, its outputs in `aqm/` inside the output folder.
fn aqm_options(a: &EvalArgs) -> Result<EmulateOptions> {
    let queue = sprout_eval::aqm::queue(emulate::AQM_QUEUE).context("the aqm queue")?;
    Ok(EmulateOptions {
        traces: a.sim.traces.clone(),
        links: a.links.clone(),
        schemes: a
            .sim
            .schemes
            .clone()
            .unwrap_or_else(|| emulate::AQM_SCHEMES.to_vec()),
        duration_us: seconds_to_us(a.duration.unwrap_or(140.0), "duration")?,
        skip_us: seconds_to_us(a.sim.skip, "skip")?,
        out: a.sim.out.join("aqm"),
        sprout_exe: std::env::current_exe().context("locating the sprout binary")?,
        python: webrtc_call::python_from(
            a.python.clone(),
            std::env::var_os(webrtc_call::PYTHON_ENV),
        ),
        progress: !a.sim.quiet,
        queue: Some(queue),
    })
}

/// The emulated `aqm` experiment: the agreement check over its queue (`opts`), then the
/// interactive stream beside a Cubic download in FQ-CoDel against SproutTunnel (`tunnel`'s
/// link, length and folder); returns what it printed.
fn emulate_aqm(opts: &EmulateOptions, tunnel: &TunnelOptions) -> Result<String> {
    let mut summary = format!(
        "aqm, emulated against simulated over {} (outputs in {}):\n",
        emulate::AQM_QUEUE,
        opts.out.display()
    );
    summary.push_str(&emulate::run(opts)?);
    println!("{summary}");
    let stream = tunnel_experiment::aqm_stream::run_aqm_stream(tunnel)?;
    println!("{stream}");
    summary.push_str(&stream);
    Ok(summary)
}

/// The emulated fig7 experiment (and the tunnel experiments after it, if asked for); returns
/// what it printed.
fn emulate_fig7(a: EvalArgs, tunnel: &TunnelOptions) -> Result<String> {
    let opts = EmulateOptions {
        traces: a.sim.traces,
        links: a.links,
        schemes: a
            .sim
            .schemes
            .unwrap_or_else(|| emulate::EMULATED_SCHEMES.to_vec()),
        duration_us: seconds_to_us(a.duration.unwrap_or(140.0), "duration")?,
        skip_us: seconds_to_us(a.sim.skip, "skip")?,
        out: a.sim.out,
        sprout_exe: std::env::current_exe().context("locating the sprout binary")?,
        python: webrtc_call::python_from(a.python, std::env::var_os(webrtc_call::PYTHON_ENV)),
        progress: !a.sim.quiet,
        queue: None,
    };
    let mut summary = emulate::run(&opts)?;
    println!("{summary}");
    if tunnel.isolation || tunnel.cost {
        let tunnel_summary = tunnel_experiment::run(tunnel)?;
        println!("{tunnel_summary}");
        summary.push_str(&tunnel_summary);
    }
    Ok(summary)
}

/// Whether every check a summary printed held; if not, an [`ExitStatus`] of
/// [`cli::CHECK_FAILED_STATUS`] naming how many failed.
fn checks_held(summary: &str) -> Result<()> {
    match cli::failed_checks(summary) {
        0 => Ok(()),
        failed => Err(ExitStatus {
            message: cli::checks_failed_message(failed),
            status: cli::CHECK_FAILED_STATUS,
        }
        .into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(list: &[&str]) -> Vec<String> {
        list.iter().map(|w| w.to_string()).collect()
    }

    #[test]
    fn aqm_is_emulated_only_when_named() {
        use Experiment::*;
        assert_eq!(
            emulated_experiments(&words(&["aqm"])).unwrap(),
            (false, true, vec![])
        );
        assert_eq!(
            emulated_experiments(&words(&["all"])).unwrap(),
            (true, false, vec![Fig7, Tunnel, TunnelCost])
        );
        assert_eq!(
            emulated_experiments(&words(&["AQM", "tunnel", "interactive"])).unwrap(),
            (true, true, vec![Tunnel])
        );
        assert_eq!(
            emulated_experiments(&words(&[])).unwrap(),
            (false, false, vec![Fig7])
        );
        let e = emulated_experiments(&words(&["aqm", "loss"])).unwrap_err();
        assert!(e.to_string().contains("aqm, vpn"), "{e}");
    }

    #[test]
    fn vpn_and_its_parts_are_emulated_only_when_named() {
        use Experiment::*;
        assert_eq!(
            emulated_experiments(&words(&["vpn"])).unwrap(),
            (false, false, vec![])
        );
        assert_eq!(vpn_parts(&words(&["VPN"])), (true, true));
        assert_eq!(vpn_parts(&words(&["vpn-rate"])), (true, false));
        assert_eq!(vpn_parts(&words(&["tunnel", " vpn-lte"])), (false, true));
        assert_eq!(vpn_parts(&words(&["all"])), (false, false));
        assert_eq!(
            emulated_experiments(&words(&["vpn-rate", "tunnel"])).unwrap(),
            (false, false, vec![Tunnel])
        );
    }
}
