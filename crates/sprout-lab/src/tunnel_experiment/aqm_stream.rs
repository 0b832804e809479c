//! The `aqm` experiment's emulated run (issue 38): the paced interactive stream beside a
//! kernel Cubic download in one FQ-CoDel queue, straight over the emulated link, against the
//! same pair of flows through SproutTunnel over the paper's unlimited drop-tail queue, on the
//! isolation experiment's link (`sprout eval --emulate --experiments aqm`). The simulator's
//! FQ-CoDel run of the same stream and download (`sprout_eval::aqm::simulate_stream`, same
//! length and window) stands beside them. Outputs: `aqm-emulated.csv` (a row per run and
//! direction of the stream), `aqm-emulated.json` and a section of report.md.

use std::fmt::Write as _;
use std::fs;
use std::path::Path;
use std::time::Instant;

use serde::{Deserialize, Serialize};
use sprout_eval::aqm::{self, StreamRow, FQ_CODEL};
use sprout_eval::eval;
use sprout_eval::report::write_csv;
use sprout_link::QueueConfig;

use super::analysis::isolation_run;
use super::one_run::{run_once, RunSpec};
use super::options::{
    TunnelOptions, DEFAULT_TUNNEL_DURATION_US, DEFAULT_TUNNEL_SKIP_US, INTERACTIVE_LINGER_S,
    INTERACTIVE_RATE_KBPS, TUNNEL_LINK,
};
use super::results::{FlowResult, IsolationRun};
use crate::emulate::report::merge_named_section;
use crate::error::{Context, LabError};

/// The heading of the section in report.md.
const HEADING: &str = "## The aqm experiment, emulated";

/// What the emulated `aqm` run produced (`aqm-emulated.json`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct AqmStreamResults {
    /// The link pair.
    pub link: String,
    /// Where its traces came from.
    pub source: String,
    /// Length of each run, s.
    pub duration_s: f64,
    /// Start of the measured window, s.
    pub skip_s: f64,
    /// The stream's rate each way, kbit/s.
    pub stream_kbps: f64,
    /// The stream and the download straight over one FQ-CoDel queue each way.
    pub fq_codel: IsolationRun,
    /// The stream and the download through SproutTunnel over the unlimited drop-tail queue.
    pub tunnel: IsolationRun,
    /// The simulator's FQ-CoDel run (the stream down, beside the download).
    pub simulated: StreamRow,
    /// Wall time, s.
    pub wall_s: f64,
}

/// A row of `aqm-emulated.csv`: one direction of the stream in one run.
#[derive(Serialize)]
struct Row<'a> {
    run: &'a str,
    queue: &'a str,
    direction: &'a str,
    offered_kbps: f64,
    throughput_kbps: f64,
    delay_p50_ms: f64,
    delay_p95_ms: f64,
    delay_max_ms: f64,
    lost: u64,
    download_kbps: f64,
}

/// Runs the two emulated runs and the simulated one, writes their files and section, and
/// returns what to print.
pub fn run_aqm_stream(opts: &TunnelOptions) -> Result<String, LabError> {
    sprout_emu::check_privileges()?;
    let dur_us = opts.duration_us.unwrap_or(DEFAULT_TUNNEL_DURATION_US);
    let skip_us = opts.skip_us.unwrap_or(DEFAULT_TUNNEL_SKIP_US);
    if skip_us >= dur_us {
        return Err(LabError::Invalid(format!(
            "the skipped time ({} s) must be shorter than the run ({} s)",
            skip_us as f64 / 1e6,
            dur_us as f64 / 1e6
        )));
    }
    let links = eval::load_links(opts.traces.as_deref())?;
    let name = opts.link.as_deref().unwrap_or(TUNNEL_LINK);
    let (link, up, down) = links
        .pairs
        .iter()
        .find(|p| p.0 == name)
        .cloned()
        .or_else(|| opts.link.is_none().then(|| links.pairs[0].clone()))
        .ok_or_else(|| LabError::no_link_pair(name, &links.source))?;
    fs::create_dir_all(&opts.out)
        .with_context(|| format!("creating output folder {}", opts.out.display()))?;
    let (dur_s, skip_s) = (dur_us as f64 / 1e6, skip_us as f64 / 1e6);
    let total = 2 * (dur_us / 1_000_000 + INTERACTIVE_LINGER_S as u64);
    let bar = sprout_eval::progress::bar(total, " s", opts.progress);
    let started = Instant::now();
    let fq = aqm::queue(FQ_CODEL).expect("a queue of the experiment");
    let mut measured = Vec::new();
    for (run, tunnel, queue) in [
        ("aqm-fq-codel", false, fq.kind.config()),
        ("aqm-tunnel", true, QueueConfig::default()),
    ] {
        bar.set_message(format!("{link}: {run}"));
        let spec = RunSpec {
            name: run,
            up: up.clone(),
            down: down.clone(),
            tunnel,
            interactive: true,
            call: false,
            duration_s: dur_s,
            queue,
        };
        let out = run_once(opts, &spec, &bar)
            .with_context(|| format!("the {run} run of the aqm experiment on {link}"))?;
        let mode = if tunnel { "tunnel" } else { FQ_CODEL };
        measured.push(isolation_run(mode, &out, &up, &down, skip_s, dur_s));
    }
    bar.finish_and_clear();
    let simulated = aqm::simulate_stream(
        fq,
        (&link, &up, &down),
        INTERACTIVE_RATE_KBPS,
        (skip_us, Some(dur_us)),
    )?;
    let tunnel = measured.pop().expect("two runs");
    let fq_codel = measured.pop().expect("two runs");
    let res = AqmStreamResults {
        link,
        source: links.source.clone(),
        duration_s: dur_s,
        skip_s,
        stream_kbps: INTERACTIVE_RATE_KBPS,
        fq_codel,
        tunnel,
        simulated,
        wall_s: started.elapsed().as_secs_f64(),
    };
    write(&opts.out, &res)?;
    Ok(text(&res))
}

/// Writes `aqm-emulated.csv` and `aqm-emulated.json` and merges the section into report.md.
fn write(out: &Path, res: &AqmStreamResults) -> Result<(), LabError> {
    let mut rows = Vec::new();
    for (run, queue, r) in [
        ("direct", FQ_CODEL, &res.fq_codel),
        ("tunnel", "unlimited", &res.tunnel),
    ] {
        for f in [&r.down, &r.up] {
            rows.push(Row {
                run,
                queue,
                direction: &f.direction,
                offered_kbps: f.offered_kbps,
                throughput_kbps: f.throughput_kbps,
                delay_p50_ms: f.delay_p50_ms,
                delay_p95_ms: f.delay_p95_ms,
                delay_max_ms: f.delay_max_ms,
                lost: f.lost,
                download_kbps: r.bulk_kbps,
            });
        }
    }
    write_csv(&out.join("aqm-emulated.csv"), &rows)?;
    fs::write(
        out.join("aqm-emulated.json"),
        serde_json::to_string_pretty(res)?,
    )?;
    let path = out.join("report.md");
    let old = fs::read_to_string(&path).unwrap_or_default();
    fs::write(&path, merge_named_section(&old, HEADING, &section(res)))
        .with_context(|| format!("writing {}", path.display()))
}

/// One direction of the stream as `p50 23 ms, p95 105 ms, 496 of 500 kbit/s`.
fn flow(f: &FlowResult) -> String {
    format!(
        "p50 {:.0} ms, p95 {:.0} ms, {:.0} of {:.0} kbit/s",
        f.delay_p50_ms, f.delay_p95_ms, f.throughput_kbps, f.offered_kbps
    )
}

/// The lines for the terminal.
fn text(res: &AqmStreamResults) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "aqm, emulated: the {:.0} kbit/s stream beside a Cubic download on {} ({:.0} s runs, \
         measured from {:.0} s)",
        res.stream_kbps, res.link, res.duration_s, res.skip_s
    );
    for (what, r) in [
        ("FQ-CoDel, direct", &res.fq_codel),
        ("SproutTunnel, unlimited queue", &res.tunnel),
    ] {
        let _ = writeln!(
            s,
            "  {what}: down {}; up {}; Cubic {:.0} kbit/s",
            flow(&r.down),
            flow(&r.up),
            r.bulk_kbps
        );
    }
    let m = &res.simulated;
    let _ = writeln!(
        s,
        "  FQ-CoDel, simulated: down p50 {:.0} ms, p95 {:.0} ms, {:.0} of {:.0} kbit/s; Cubic \
         {:.0} kbit/s",
        m.p50_ms, m.p95_ms, m.delivered_kbps, m.offered_kbps, m.download_kbps
    );
    s
}

/// report.md's section.
fn section(res: &AqmStreamResults) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{HEADING}\n\nThe paced interactive stream ({:.0} kbit/s each way, `sprout interactive`) \
         beside a kernel Cubic download on {} ({}), {:.0} s runs measured from {:.0} s: \
         straight over the emulated link with one FQ-CoDel queue each way (RFC 8290, Linux's \
         defaults, the real packets' 5-tuples as flow keys), and through SproutTunnel over the \
         paper's unlimited drop-tail queue. The simulator's FQ-CoDel run of the same stream \
         and download (the downlink loaded) stands beside them; `sprout eval --experiments \
         aqm` has it on every queue.\n",
        res.stream_kbps, res.link, res.source, res.duration_s, res.skip_s
    );
    let _ = writeln!(
        s,
        "| run | queue | stream down p50 | stream down p95 | stream down delivered | stream up \
         p95 | Cubic download |\n|---|---|---|---|---|---|---|"
    );
    for (run, queue, r) in [
        ("emulated, direct", "fq-codel", &res.fq_codel),
        ("emulated, through SproutTunnel", "unlimited", &res.tunnel),
    ] {
        let _ = writeln!(
            s,
            "| {run} | {queue} | {:.0} ms | {:.0} ms | {:.0} of {:.0} kbit/s | {:.0} ms | {:.0} \
             kbit/s |",
            r.down.delay_p50_ms,
            r.down.delay_p95_ms,
            r.down.throughput_kbps,
            r.down.offered_kbps,
            r.up.delay_p95_ms,
            r.bulk_kbps
        );
    }
    let m = &res.simulated;
    let _ = writeln!(
        s,
        "| simulated, direct | fq-codel | {:.0} ms | {:.0} ms | {:.0} of {:.0} kbit/s | - | \
         {:.0} kbit/s (whole run) |",
        m.p50_ms, m.p95_ms, m.delivered_kbps, m.offered_kbps, m.download_kbps
    );
    let t = sprout_eval::paper::TUNNEL;
    let _ = writeln!(
        s,
        "\nThe paper's SproutTunnel (§5.7, Verizon LTE downlink, Cubic with Skype): Skype's 95% \
         delay {:.1} s direct, {:.2} s through the tunnel; Cubic {:.0} kbit/s direct, {:.0} \
         kbit/s through it. Every peer's output is in `tunnel/aqm-fq-codel.*` and \
         `tunnel/aqm-tunnel.*`; the rows in `aqm-emulated.csv`.\n",
        t.skype_delay_s.0, t.skype_delay_s.1, t.cubic_kbps.0, t.cubic_kbps.1
    );
    s
}
