//! The `vpn` experiment's runs: each arm of each part through a fresh emulator.

use std::fs;
use std::sync::Arc;
use std::time::Instant;

use indicatif::ProgressBar;
use sprout_eval::{eval, progress};
use sprout_link::{constant_rate_trace, QueueConfig, Trace};

use super::options::{VpnOptions, VPN_RATE_DURATION_US, VPN_RATE_MBPS};
use super::report::{text, write_outputs};
use super::results::{VpnFlowRow, VpnRateRow, VpnResults, ARMS};
use super::wireguard::Wireguard;
use crate::error::{Context, LabError};
use crate::tunnel_experiment::analysis::{goodput_kbps, isolation_run};
use crate::tunnel_experiment::call::preflight;
use crate::tunnel_experiment::one_run::{run_once_with, start_tunnel, RunOutput, RunSpec};
use crate::tunnel_experiment::options::{
    CALL_LINGER_S, DEFAULT_TUNNEL_DURATION_US, DEFAULT_TUNNEL_SKIP_US, INTERACTIVE_LINGER_S,
    TUNNEL_LINK,
};

/// Runs the parts asked for, writes their outputs and returns what to print.
pub fn run(opts: &VpnOptions) -> Result<String, LabError> {
    sprout_emu::check_privileges()?;
    if !opts.rate && !opts.lte {
        return Err(LabError::Invalid(
            "no part of the vpn experiment given".into(),
        ));
    }
    let t = &opts.tunnel;
    let rate_dur = t.duration_us.unwrap_or(VPN_RATE_DURATION_US);
    let rate_skip = VpnOptions::rate_skip_us(rate_dur);
    let lte_dur = t.duration_us.unwrap_or(DEFAULT_TUNNEL_DURATION_US);
    let lte_skip = t.skip_us.unwrap_or(DEFAULT_TUNNEL_SKIP_US);
    if opts.rate && rate_skip == 0 {
        return Err(LabError::Invalid(
            "the vpn-rate runs must last 1 s or more".into(),
        ));
    }
    if opts.lte && lte_skip >= lte_dur {
        return Err(LabError::Invalid(format!(
            "the skipped time ({} s) must be shorter than the run ({} s)",
            lte_skip as f64 / 1e6,
            lte_dur as f64 / 1e6
        )));
    }
    // Before anything runs: missing tools say so, with how to install them.
    let wg = Wireguard::preflight(opts)?;
    let call = opts.lte && t.call;
    if call {
        preflight(t)?;
    }
    fs::create_dir_all(&t.out)
        .with_context(|| format!("creating output folder {}", t.out.display()))?;
    let mut total = 0;
    if opts.rate {
        total += 3 * (rate_dur / 1_000_000);
    }
    if opts.lte {
        total += 3 * (lte_dur / 1_000_000 + INTERACTIVE_LINGER_S as u64);
        if call {
            total += 3 * (lte_dur / 1_000_000 + CALL_LINGER_S as u64);
        }
    }
    let bar = progress::bar(total, " s", t.progress);
    let started = Instant::now();
    let mut res = VpnResults {
        boringtun_version: wg.boringtun_version.clone(),
        wg_version: wg.wg_version.clone(),
        rate_duration_s: rate_dur as f64 / 1e6,
        rate_skip_s: rate_skip as f64 / 1e6,
        lte_duration_s: lte_dur as f64 / 1e6,
        lte_skip_s: lte_skip as f64 / 1e6,
        ..VpnResults::default()
    };
    if opts.rate {
        res.rate = run_rate(opts, &wg, rate_dur, rate_skip, &bar)?;
    }
    if opts.lte {
        let (link, rows) = run_lte(opts, &wg, lte_dur, lte_skip, call, &bar)?;
        res.lte_link = Some(link);
        res.lte = rows;
    }
    bar.finish_and_clear();
    res.wall_s = started.elapsed().as_secs_f64();
    write_outputs(&t.out, &res)?;
    Ok(text(&res, &t.out))
}

/// One arm's run: direct, through boringtun (`wg`) or through SproutTunnel (`tuned`: with the
/// tunnel experiment's settings, else its defaults). Boringtun's control sockets are removed
/// after it, whether it ended well or not.
fn run_arm(
    opts: &VpnOptions,
    wg: &Wireguard,
    arm: &str,
    spec: &RunSpec,
    tuned: bool,
    bar: &ProgressBar,
) -> Result<RunOutput, LabError> {
    let t = &opts.tunnel;
    let out = match arm {
        "boringtun" => {
            let start = |e: &_, p: &mut _, pre: &str| wg.start(e, p, pre);
            let r = run_once_with(t, spec, bar, Some(&start));
            wg.clean();
            r
        }
        "sprout" => {
            let start = |e: &_, p: &mut _, pre: &str| start_tunnel(t, e, p, pre, tuned);
            run_once_with(t, spec, bar, Some(&start))
        }
        _ => run_once_with(t, spec, bar, None),
    };
    out.with_context(|| format!("the {} run of the vpn experiment", spec.name))
}

/// The line-rate part: one download alone over the constant link, in each arm.
fn run_rate(
    opts: &VpnOptions,
    wg: &Wireguard,
    dur_us: u64,
    skip_us: u64,
    bar: &ProgressBar,
) -> Result<Vec<VpnRateRow>, LabError> {
    let name = format!("Constant-{VPN_RATE_MBPS}Mbps");
    // 6 s of a constant rate (a whole number of 1500-byte opportunities), looped.
    let trace = Arc::new(constant_rate_trace(&name, VPN_RATE_MBPS, 6.0)?);
    let (dur_s, skip_s) = (dur_us as f64 / 1e6, skip_us as f64 / 1e6);
    let mut rows = Vec::new();
    for arm in ARMS {
        bar.set_message(format!("vpn: {name}, {arm}"));
        let file = format!("vpn-rate-{arm}");
        let spec = RunSpec {
            name: &file,
            up: trace.clone(),
            down: trace.clone(),
            tunnel: arm != "direct",
            interactive: false,
            call: false,
            duration_s: dur_s,
            queue: QueueConfig::default(),
        };
        let out = run_arm(opts, wg, arm, &spec, false, bar)?;
        let bytes = out.bulk_ticks.last().map_or(0, |t| t.1);
        rows.push(VpnRateRow::new(
            arm,
            VPN_RATE_MBPS,
            goodput_kbps(&out.bulk_ticks, skip_s, dur_s),
            bytes,
            out.tunnel_cpu_s,
            out.prefix.clone(),
        ));
    }
    Ok(rows)
}

/// The link pair of the LTE part: `--links`' first, else [`TUNNEL_LINK`].
fn lte_link(opts: &VpnOptions) -> Result<(String, Arc<Trace>, Arc<Trace>), LabError> {
    let t = &opts.tunnel;
    let links = eval::load_links(t.traces.as_deref())?;
    let name = t.link.as_deref().unwrap_or(TUNNEL_LINK);
    links
        .pairs
        .iter()
        .find(|p| p.0 == name)
        .cloned()
        .or_else(|| t.link.is_none().then(|| links.pairs[0].clone()))
        .ok_or_else(|| LabError::no_link_pair(name, &links.source))
}

/// The LTE part: in each arm the download with the paced stream, then (with `call`) the
/// download with the WebRTC call; returns the link's name and each flow's rows.
fn run_lte(
    opts: &VpnOptions,
    wg: &Wireguard,
    dur_us: u64,
    skip_us: u64,
    call: bool,
    bar: &ProgressBar,
) -> Result<(String, Vec<VpnFlowRow>), LabError> {
    let (link, up, down) = lte_link(opts)?;
    let (dur_s, skip_s) = (dur_us as f64 / 1e6, skip_us as f64 / 1e6);
    let mut rows = Vec::new();
    for arm in ARMS {
        for with_call in [false, true].into_iter().filter(|&c| !c || call) {
            bar.set_message(format!("vpn: {link}, {arm}"));
            let file = format!("vpn-lte-{arm}{}", if with_call { "-call" } else { "" });
            let spec = RunSpec {
                name: &file,
                up: up.clone(),
                down: down.clone(),
                tunnel: arm != "direct",
                interactive: !with_call,
                call: with_call,
                duration_s: dur_s,
                queue: QueueConfig::default(),
            };
            let out = run_arm(opts, wg, arm, &spec, true, bar)?;
            let m = isolation_run(arm, &out, &up, &down, skip_s, dur_s);
            let row =
                |flow: &str, dir: &str, rate: f64, p50: Option<f64>, p95: Option<f64>| VpnFlowRow {
                    arm: arm.into(),
                    flow: flow.into(),
                    direction: dir.into(),
                    rate_kbps: rate,
                    delay_p50_ms: p50,
                    delay_p95_ms: p95,
                };
            if let Some(c) = &m.call {
                for f in [&c.down, &c.up] {
                    let (p50, p95) = (Some(f.delay_p50_ms), Some(f.delay_p95_ms));
                    rows.push(row("call", &f.direction, f.received_kbps, p50, p95));
                }
            } else {
                rows.push(row("cubic", "down", m.bulk_kbps, None, None));
                for f in [&m.down, &m.up] {
                    let (p50, p95) = (Some(f.delay_p50_ms), Some(f.delay_p95_ms));
                    rows.push(row("paced", &f.direction, f.throughput_kbps, p50, p95));
                }
            }
        }
    }
    Ok((link, rows))
}
