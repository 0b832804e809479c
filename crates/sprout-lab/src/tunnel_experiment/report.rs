//! The tunnel experiments' outputs: `tunnel.csv/json`, `tunnel-cost.csv/json`, the texts for
//! the terminal and the `## SproutTunnel` section of report.md.

use std::fmt::Write as _;
use std::fs;
use std::path::Path;

use sprout_eval::report::write_csv;

use crate::emulate::report::merge_named_section;

use super::checks::change;
use super::options::{CALL_LINGER_S, INTERACTIVE_PAYLOAD_BYTES};
use super::results::{CallFlow, CostResults, FlowResult, IsolationResults, TunnelRow};
use crate::error::{Context, LabError};

/// Writes `tunnel.csv` and `tunnel.json`.
pub(super) fn write_isolation(out: &Path, res: &IsolationResults) -> Result<(), LabError> {
    write_csv(&out.join("tunnel.csv"), &res.rows)?;
    fs::write(out.join("tunnel.json"), serde_json::to_string_pretty(res)?)?;
    Ok(())
}

/// Writes `tunnel-cost.csv` and `tunnel-cost.json`.
pub(super) fn write_cost(out: &Path, res: &CostResults) -> Result<(), LabError> {
    write_csv(&out.join("tunnel-cost.csv"), std::iter::once(res))?;
    fs::write(
        out.join("tunnel-cost.json"),
        serde_json::to_string_pretty(res)?,
    )?;
    Ok(())
}

/// The paper's direct → tunnel values of a row and their change, or "–".
fn fmt_paper(r: &TunnelRow) -> String {
    match (r.paper_direct, r.paper_tunnel) {
        (Some(a), Some(b)) => format!("{a:.0} → {b:.0} ({})", change(a, b, r.unit == "ms")),
        _ => "–".into(),
    }
}

/// The table and checks for the terminal.
pub fn isolation_text(res: &IsolationResults) -> String {
    let mut s = String::new();
    let call = match &res.webrtc {
        Some(v) => format!(
            "; then, in two runs of its own, Cubic download + WebRTC call (aiortc {}) both ways",
            v.aiortc
        ),
        None => String::new(),
    };
    let _ = writeln!(
        s,
        "SproutTunnel isolation (§5.7) on {}: Cubic download + {:.0} kbit/s interactive stream \
         each way{call}; direct, then through the tunnel; {:.0} s per run, measured over \
         [{:.0} s, {:.0} s)",
        res.link, res.interactive_rate_kbps, res.duration_s, res.skip_s, res.duration_s
    );
    let _ = writeln!(
        s,
        "{:<40} {:>10} {:>10} {:>8}   paper: direct → tunnel",
        "", "direct", "tunnel", "change"
    );
    for r in &res.rows {
        let _ = writeln!(
            s,
            "{:<40} {:>10.0} {:>10.0} {:>8}   {}",
            format!("{} ({})", r.metric, r.unit),
            r.direct,
            r.tunnel,
            r.change,
            fmt_paper(r)
        );
    }
    for c in &res.checks {
        let _ = writeln!(s, "{}", c.line());
    }
    s
}

/// The cost figure for the terminal.
pub fn cost_text(res: &CostResults) -> String {
    format!(
        "SproutTunnel cost: a Cubic download through the tunnel over a constant {} Mbit/s link, \
         {:.0} s: goodput {:.0} kbit/s over [{:.0} s, {:.0} s) = {:.1}% of the link's {:.0} \
         kbit/s ({:.0} kbit/s over the whole transfer)\n{} The goodput through the tunnel is at \
         least {:.0}% of the link's capacity.\n",
        res.link_mbps,
        res.duration_s,
        res.goodput_kbps,
        res.skip_s,
        res.duration_s,
        100.0 * res.share,
        res.capacity_kbps,
        res.whole_run_goodput_kbps,
        if res.ok { "✅" } else { "❌" },
        100.0 * res.target_share
    )
}

/// The `## SproutTunnel` section of report.md, from whichever of tunnel.json and
/// tunnel-cost.json `out` holds.
pub fn report_section(out: &Path) -> String {
    let iso: Option<IsolationResults> = fs::read_to_string(out.join("tunnel.json"))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok());
    let cost: Option<CostResults> = fs::read_to_string(out.join("tunnel-cost.json"))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok());
    let mut s = String::new();
    let _ = writeln!(s, "## SproutTunnel\n");
    if let Some(r) = &iso {
        isolation_section(&mut s, r, out);
    }
    if let Some(c) = &cost {
        cost_section(&mut s, c);
    }
    s
}

/// The `### Isolation` part of the section, from `tunnel.json`'s results; files are shown
/// relative to `out`.
fn isolation_section(s: &mut String, r: &IsolationResults, out: &Path) {
    let _ = writeln!(
        s,
        "### Isolation (paper §5.7)\n\nThrough the emulator replaying {} (traces: {}; both \
         directions, looped, unlimited drop-tail queues, 20 ms each way), a kernel Cubic bulk \
         download (`sprout tcp`) and a two-way interactive stream standing in for the \
         paper's Skype call (`sprout interactive`: {:.0} kbit/s of {}-byte UDP payloads each \
         way, each packet stamped on CLOCK_MONOTONIC for its exact one-way delay) ran for \
         {:.0} s straight over the link, then for {:.0} s through `sprout tunnel` (server in \
         the host namespace, client in the mobile namespace), each run in a fresh emulator. \
         Measured over [{:.0} s, {:.0} s): bulk goodput from the tcp client's per-second \
         counts; interactive goodput from the payload received in the window; delays of \
         the packets sent in it. The paper's values are for the Verizon LTE downlink \
         (Cubic and Skype), so the interactive rows that compare with them are the \
         download's direction (down: relay to mobile). Wall time {:.0} s.\n",
        r.link,
        r.source,
        r.interactive_rate_kbps,
        INTERACTIVE_PAYLOAD_BYTES,
        r.duration_s,
        r.duration_s,
        r.skip_s,
        r.duration_s,
        r.wall_s
    );
    if let Some(v) = &r.webrtc {
        call_paragraph(s, r, &v.aiortc, &v.av);
    }
    let _ = writeln!(
        s,
        "| | direct | tunnel | change | paper: direct | paper: tunnel | paper: change |"
    );
    let _ = writeln!(s, "|---|---|---|---|---|---|---|");
    for row in &r.rows {
        let p = |v: Option<f64>| v.map_or("–".into(), |x| format!("{x:.0}"));
        let pc = match (row.paper_direct, row.paper_tunnel) {
            (Some(a), Some(b)) => change(a, b, row.unit == "ms"),
            _ => "–".into(),
        };
        let _ = writeln!(
            s,
            "| {} ({}) | {:.0} | {:.0} | {} | {} | {} | {} |",
            row.metric,
            row.unit,
            row.direct,
            row.tunnel,
            row.change,
            p(row.paper_direct),
            p(row.paper_tunnel),
            pc
        );
    }
    let _ = writeln!(s);
    for c in &r.checks {
        let _ = writeln!(s, "- {}", c.line());
    }
    let _ = writeln!(s);
    let lost = |f: &FlowResult| {
        format!(
            "{} of {} lost, median delay {:.0} ms, highest {:.0} ms",
            f.lost,
            f.packets + f.lost,
            f.delay_p50_ms,
            f.delay_max_ms
        )
    };
    let call = |f: &CallFlow| {
        format!(
            "{} frames in the window ({:.1}/s), highest delay {:.0} ms, longest freeze {:.0} \
             ms; {} decoded over the call ({} unreadable), sent at {:.0} kbit/s, encoder \
             target at the end {}",
            f.frames,
            f.frames_per_s,
            f.delay_max_ms,
            f.longest_gap_ms,
            f.frames_received,
            f.frames_unreadable,
            f.sent_kbps,
            f.target_last_kbps
                .map_or("unknown".into(), |k| format!("{k:.0} kbit/s"))
        )
    };
    for run in [&r.direct, &r.tunnel] {
        let _ = writeln!(
            s,
            "- {}: interactive down {}; up {}; peers' output in `{}.*`.",
            run.mode,
            lost(&run.down),
            lost(&run.up),
            Path::new(&run.files)
                .strip_prefix(out)
                .unwrap_or(Path::new(&run.files))
                .display()
        );
        if let Some(c) = &run.call {
            let _ = writeln!(
                s,
                "- {} (the call's run): WebRTC call down {}; up {}; the download's goodput \
                 {:.0} kbit/s; peers' output in `{}.*`.",
                run.mode,
                call(&c.down),
                call(&c.up),
                c.bulk_kbps,
                Path::new(&c.files)
                    .strip_prefix(out)
                    .unwrap_or(Path::new(&c.files))
                    .display()
            );
        }
    }
    let _ = writeln!(
        s,
        "\n![tunnel-delay.svg](tunnel-delay.svg)\n\nFiles: `tunnel.csv`, `tunnel.json`, \
         `tunnel-delay.csv`.\n"
    );
}

/// The paragraph on the WebRTC call of the isolation experiment.
fn call_paragraph(s: &mut String, r: &IsolationResults, aiortc: &str, av: &str) {
    let _ = writeln!(
        s,
        "The WebRTC call has two runs of its own after the paced stream's, direct then through \
         the tunnel, each in a fresh emulator with the Cubic download competing and the call \
         as the only interactive flow (the paper's §5.7 setup with a real call; the paced \
         stream's runs do not carry it): a real WebRTC video call (`python -m \
         sprout.webrtc_call`, aiortc {aiortc} with PyAV {av}: VP8, RTP/RTCP, NACK, \
         receiver-side bandwidth estimation fed back as REMB, and a video jitter buffer that \
         asks for a key frame instead of waiting behind a loss retransmission cannot repair, \
         as libwebrtc does; a synthetic moving picture at 30 frames/s each way, every frame \
         stamped on CLOCK_MONOTONIC in a barcode): its answer end on \
         the relay side, its offer end in the mobile namespace, each bound to the address the \
         run's flows use (direct: the emulator's outside address and the namespace's; tunnel: \
         the server's and the client's tunnel addresses, so its media goes through the \
         tunnel). It runs {:.0} s longer than the download, so that the frames captured in \
         the window and still queued arrive and count. Frame delay (capture to decode) is of \
         the frames captured in [{:.0} s, {:.0} s); its received rate (RTP payload) is over \
         the call's whole media time, start-up and those {:.0} s included. The table's \
         WebRTC rows and \"bulk throughput, call's runs\" are of the call's runs; \
         its other rows are of the paced stream's.\n",
        CALL_LINGER_S, r.skip_s, r.duration_s, CALL_LINGER_S
    );
}

/// The `### Cost` part of the section, from `tunnel-cost.json`'s results.
fn cost_section(s: &mut String, c: &CostResults) {
    let _ = writeln!(
        s,
        "### Cost\n\nA kernel Cubic download alone through the tunnel over a constant {} \
         Mbit/s emulated link (both directions), {:.0} s. Goodput (application bytes) over \
         [{:.0} s, {:.0} s): **{:.0} kbit/s, {:.1}% of the link's {:.0} kbit/s** ({:.0} \
         kbit/s over the whole transfer, start-up included).\n\n- {} The goodput through \
         the tunnel is at least {:.0}% of the link's capacity.\n\nFiles: `tunnel-cost.csv`, \
         `tunnel-cost.json`.\n",
        c.link_mbps,
        c.duration_s,
        c.skip_s,
        c.duration_s,
        c.goodput_kbps,
        100.0 * c.share,
        c.capacity_kbps,
        c.whole_run_goodput_kbps,
        if c.ok { "✅" } else { "❌" },
        100.0 * c.target_share
    );
}

/// Replaces the `## SproutTunnel` section of `text` (up to the next `## ` heading) with
/// `section`, or appends it; other sections are kept as they are.
pub fn merge_section(text: &str, section: &str) -> String {
    merge_named_section(text, "## SproutTunnel", section)
}

/// Merges the `## SproutTunnel` section into `out`'s report.md (made if missing).
pub(super) fn merge_report(out: &Path) -> Result<(), LabError> {
    let path = out.join("report.md");
    let old = fs::read_to_string(&path).unwrap_or_default();
    fs::write(&path, merge_section(&old, &report_section(out)))
        .with_context(|| format!("writing {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_section_replaces_its_old_self_and_keeps_the_rest() {
        let old = "# Emulated evaluation\n\nintro\n\n## Charts\n\n![a](a.svg)\n";
        let once = merge_section(old, "## SproutTunnel\n\nfirst\n");
        assert_eq!(
            once,
            "# Emulated evaluation\n\nintro\n\n## Charts\n\n![a](a.svg)\n\n## SproutTunnel\n\nfirst\n"
        );
        let twice = merge_section(&once, "## SproutTunnel\n\nsecond\n");
        assert_eq!(twice, once.replace("first", "second"));
        let middle = "# R\n\n## SproutTunnel\n\nold\n### sub\nold\n\n## Later\n\nkept\n";
        assert_eq!(
            merge_section(middle, "## SproutTunnel\n\nnew\n"),
            "# R\n\n## SproutTunnel\n\nnew\n\n## Later\n\nkept\n"
        );
        assert_eq!(merge_section("", "## SproutTunnel\n"), "## SproutTunnel\n");
    }
}
