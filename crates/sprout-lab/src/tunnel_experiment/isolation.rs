//! The isolation experiment (§5.7): the bulk download and the interactive stream straight over
//! the emulated link, then through the tunnel, and with the WebRTC call the same two runs with
//! the call in place of the paced stream; its table, checks and delay chart.

use std::fs;
use std::path::Path;
use std::time::Instant;

use indicatif::ProgressBar;
use serde::Serialize;
use sprout_eval::chart::{self, DelayPanel, DelaySeries};
use sprout_eval::eval;
use sprout_eval::report::write_csv;

use super::analysis::{delay_bins, isolation_run};
use super::checks::table_and_checks;
use super::one_run::{run_once, RunOutput, RunSpec};
use super::options::{TunnelOptions, DELAY_BIN_S, INTERACTIVE_RATE_KBPS, TUNNEL_LINK};
use super::results::IsolationResults;
use crate::error::{Context, LabError};
use crate::webrtc_call::CheckVersions;

/// A point of `tunnel-delay.csv`.
#[derive(Serialize)]
struct DelayPoint {
    mode: String,
    direction: String,
    t_s: f64,
    bin_s: f64,
    max_delay_ms: f64,
}

/// Runs the isolation experiment (`dur_us` per run, measured from `skip_us`; the runs of
/// [`run_plan`]), with the WebRTC call's runs if `webrtc` holds the versions its preflight
/// found, writes its delay chart and points (the paced stream's), and returns its results.
pub(super) fn run_isolation(
    opts: &TunnelOptions,
    dur_us: u64,
    skip_us: u64,
    webrtc: Option<CheckVersions>,
    bar: &ProgressBar,
) -> Result<IsolationResults, LabError> {
    let links = eval::load_links(opts.traces.as_deref())?;
    let name = opts.link.as_deref().unwrap_or(TUNNEL_LINK);
    let (link, up, down) = links
        .pairs
        .iter()
        .find(|p| p.0 == name)
        .cloned()
        .or_else(|| opts.link.is_none().then(|| links.pairs[0].clone()))
        .ok_or_else(|| LabError::no_link_pair(name, &links.source))?;
    let (dur_s, skip_s) = (dur_us as f64 / 1e6, skip_us as f64 / 1e6);
    let started = Instant::now();
    let mut runs = Vec::new();
    for (name, tunnel, call) in run_plan(webrtc.is_some()) {
        bar.set_message(format!("{link}: {name}"));
        let spec = RunSpec {
            name,
            up: up.clone(),
            down: down.clone(),
            tunnel,
            interactive: !call,
            call,
            duration_s: dur_s,
            queue: sprout_link::QueueConfig::default(),
        };
        let out = run_once(opts, &spec, bar)
            .with_context(|| format!("the {name} run of the tunnel experiment on {link}"))?;
        runs.push(out);
    }
    let measure = |k: usize, mode: &str| isolation_run(mode, &runs[k], &up, &down, skip_s, dur_s);
    let mut direct = measure(0, "direct");
    let mut tunnel = measure(1, "tunnel");
    if runs.len() == 4 {
        direct.call = measure(2, "direct").call;
        tunnel.call = measure(3, "tunnel").call;
    }
    let (rows, checks) = table_and_checks(&direct, &tunnel);
    let res = IsolationResults {
        link: link.clone(),
        source: links.source.clone(),
        duration_s: dur_s,
        skip_s,
        interactive_rate_kbps: INTERACTIVE_RATE_KBPS,
        webrtc,
        direct,
        tunnel,
        rows,
        checks,
        wall_s: started.elapsed().as_secs_f64(),
    };
    write_delay_chart(&opts.out, &link, &runs[..2], skip_s)?;
    Ok(res)
}

/// The runs of the isolation experiment, in order: (file prefix, through the tunnel, the
/// WebRTC call as the interactive flow). The paced stream's two runs, then, with the call,
/// the call's own two (the call and the download only, the paper's §5.7 setup with a real
/// call), so that neither interactive flow shares the link with the other.
pub(super) fn run_plan(call: bool) -> Vec<(&'static str, bool, bool)> {
    let mut plan = vec![("direct", false, false), ("tunnel", true, false)];
    if call {
        plan.extend([("call-direct", false, true), ("call-tunnel", true, true)]);
    }
    plan
}

/// Writes `tunnel-delay.svg` and `tunnel-delay.csv`: the interactive flow's highest delay per
/// bin, each way, in the direct run (`runs[0]`) and the tunnel run (`runs[1]`).
fn write_delay_chart(
    out: &Path,
    link: &str,
    runs: &[RunOutput],
    skip_s: f64,
) -> Result<(), LabError> {
    let series = |k: usize, down_dir: bool| {
        let r = &runs[k];
        delay_bins(if down_dir { &r.down } else { &r.up }, r.t0_mono_us)
    };
    let mut points = Vec::new();
    let mut panels = Vec::new();
    for (down_dir, axis_title) in [
        (true, "Down (relay → mobile), ms"),
        (false, "Up (mobile → relay), ms"),
    ] {
        let mut lines = Vec::new();
        for (k, label) in [(0, "direct"), (1, "through the tunnel")] {
            let bins = series(k, down_dir);
            for &(t, d) in &bins {
                points.push(DelayPoint {
                    mode: ["direct", "tunnel"][k].into(),
                    direction: if down_dir { "down" } else { "up" }.into(),
                    t_s: t,
                    bin_s: DELAY_BIN_S,
                    max_delay_ms: d,
                });
            }
            lines.push(DelaySeries {
                label: label.into(),
                bins,
            });
        }
        panels.push(DelayPanel {
            axis_title: axis_title.into(),
            series: lines,
        });
    }
    let title = format!(
        "Interactive flow beside a Cubic download on {link}: one-way delay, direct and through \
         SproutTunnel"
    );
    let caption = format!(
        "Highest one-way delay of the {:.0} kbit/s stream's packets sent in each {} ms bin, by \
         send time; log scale.",
        INTERACTIVE_RATE_KBPS,
        DELAY_BIN_S * 1e3
    );
    fs::write(
        out.join("tunnel-delay.svg"),
        chart::delay_over_time_chart(&title, &panels, DELAY_BIN_S, skip_s, &caption),
    )?;
    write_csv(&out.join("tunnel-delay.csv"), &points)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::run_plan;

    #[test]
    fn the_call_has_its_own_pair_of_runs() {
        // The paced stream's runs never carry the call; the call's carry no paced stream.
        assert_eq!(
            run_plan(true),
            [
                ("direct", false, false),
                ("tunnel", true, false),
                ("call-direct", false, true),
                ("call-tunnel", true, true),
            ]
        );
        assert_eq!(
            run_plan(false),
            [("direct", false, false), ("tunnel", true, false)]
        );
    }
}
