//! Outputs of the emulated evaluation: the same files as the simulated one (results.csv/json,
//! a Figure-7-style chart per link and direction, the Figure-1 series, report.md), marked as
//! emulated, with the simulator's results on the same configuration beside them.

use std::fmt::Write as _;
use std::fs;
use std::path::Path;

use sprout_eval::chart::{self, ChartPoint};
use sprout_eval::paper;
use sprout_eval::report::{paper_point, point, write_csv};
use sprout_sim::metrics::TimeSeriesPoint;

use super::error::EmulateError;
use super::results::{Agreement, EmulateResults, SIMULATED_SEEDS};

/// Writes every output of an emulated evaluation into `out`.
pub fn write(
    out: &Path,
    res: &EmulateResults,
    fig1: Option<&[TimeSeriesPoint]>,
) -> Result<(), EmulateError> {
    write_csv(&out.join("results.csv"), &res.rows)?;
    fs::write(out.join("results.json"), serde_json::to_string_pretty(res)?)?;
    write_csv(&out.join("agreement.csv"), &res.agreement)?;
    let mut charts = Vec::new();
    let mut links: Vec<(String, String)> = res
        .rows
        .iter()
        .map(|r| (r.link.clone(), r.direction.clone()))
        .collect();
    links.sort();
    links.dedup();
    for (link, dir) in &links {
        let mut points: Vec<ChartPoint> = res
            .rows
            .iter()
            .filter(|r| r.link == *link && r.direction == *dir)
            .map(|r| {
                let label = if r.experiment == "emulated" {
                    r.scheme.clone()
                } else {
                    format!("{} (sim)", r.scheme)
                };
                let mut p = point(label, r);
                // Hollow markers for the simulator's points.
                p.paper = r.experiment != "emulated";
                p
            })
            .collect();
        for scheme in paper::FIG7_SCHEMES {
            if let Some(p) = paper::fig7(link, dir, scheme) {
                if res.rows.iter().any(|r| r.scheme == scheme) {
                    points.push(paper_point(format!("{scheme} (paper)"), p));
                }
            }
        }
        let title = format!("{link} {dir}link, emulated: throughput against self-inflicted delay");
        let file = format!("emulated-{link}-{dir}.svg");
        fs::write(
            out.join(&file),
            chart::throughput_delay_chart(&title, &points),
        )?;
        charts.push(file);
    }
    if let Some(series) = fig1 {
        let file = "fig1-Verizon-LTE-short-down-emulated.svg";
        fs::write(
            out.join(file),
            chart::time_series_chart_measured(
                "Sprout on the emulated Verizon LTE downlink (Verizon-LTE-short.down)",
                series,
                res.skip_s,
            ),
        )?;
        write_csv(
            &out.join("fig1-Verizon-LTE-short-down-emulated.csv"),
            series,
        )?;
        charts.push(file.to_string());
    }
    fs::write(out.join("report.md"), markdown(res, &charts))?;
    Ok(())
}

/// Replaces the section of `text` headed `heading` (a `## ` line, up to the next `## ` or `# `
/// heading) with `section`, or appends it; other sections are kept as they are.
pub fn merge_named_section(text: &str, heading: &str, section: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let start = lines.iter().position(|l| l.trim_end() == heading);
    let mut out = String::new();
    match start {
        Some(a) => {
            let b = lines[a + 1..]
                .iter()
                .position(|l| l.starts_with("## ") || l.starts_with("# "))
                .map_or(lines.len(), |k| a + 1 + k);
            for l in &lines[..a] {
                out.push_str(l);
                out.push('\n');
            }
            out.push_str(section.trim_end());
            out.push('\n');
            if b < lines.len() {
                out.push('\n');
                for l in &lines[b..] {
                    out.push_str(l);
                    out.push('\n');
                }
            }
        }
        None => {
            out.push_str(text.trim_end());
            if !out.is_empty() {
                out.push_str("\n\n");
            }
            out.push_str(section.trim_end());
            out.push('\n');
        }
    }
    out
}

/// ✅ or ❌.
fn tick(ok: bool) -> &'static str {
    if ok {
        "✅"
    } else {
        "❌"
    }
}

/// report.md of an emulated evaluation.
pub fn markdown(res: &EmulateResults, charts: &[String]) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "# Emulated evaluation\n");
    let _ = writeln!(
        s,
        "Each scheme ran as real programs in real time through `sprout link`'s emulator (the \
         paper's Cellsim: trace replay, 20 ms each way, the shared link model), both directions \
         loaded at once, for {:.0} s; metrics from the emulator's mahimahi logs over [{:.0} s, \
         {:.0} s). Sprout and Sprout-EWMA are `sprout server` / `sprout client` over UDP; cubic, \
         reno and bbr are the Linux kernel's own TCP (`sprout tcp`, TCP_CONGESTION), cubic-codel \
         is kernel Cubic behind CoDel. The simulator ran the same configuration (same traces, \
         duration and window) with seeds {}-{}, each starting the endpoints at its own random \
         offsets as a real run does; a `simulated` row is the run with the median \
         self-inflicted delay (its seed is in `results.csv`). Traces: {}. Wall time {:.0} s.\n",
        res.duration_s,
        res.skip_s,
        res.duration_s,
        SIMULATED_SEEDS.start(),
        SIMULATED_SEEDS.end(),
        res.source,
        res.wall_s
    );
    let _ = writeln!(s, "## Simulation against emulation\n");
    let _ = writeln!(
        s,
        "| link | dir | scheme | emulated kbit/s | simulated kbit/s | ratio | emulated delay (ms) | \
         simulated delay (ms) | paper kbit/s | paper delay (ms) | agree? | tolerance |"
    );
    let _ = writeln!(s, "|---|---|---|---|---|---|---|---|---|---|---|---|");
    for a in &res.agreement {
        let p = paper::fig7(&a.link, &a.direction, &a.scheme);
        let _ = writeln!(
            s,
            "| {} | {} | {} | {:.0} | {:.0} | {:.2} | {:.0} | {:.0} | {} | {} | {} | {} |",
            a.link,
            a.direction,
            a.scheme,
            a.emulated_kbps,
            a.simulated_kbps,
            a.throughput_ratio,
            a.emulated_delay_ms,
            a.simulated_delay_ms,
            p.map_or("–".into(), |p| format!("{:.0}", p.throughput_kbps)),
            p.map_or("–".into(), |p| format!("{:.0}", p.self_inflicted_ms)),
            tick(a.agrees),
            a.tolerance
        );
    }
    let _ = writeln!(s);
    let _ = writeln!(s, "## All rows\n");
    let _ = writeln!(
        s,
        "| mode | link | dir | scheme | throughput (kbit/s) | utilization | p95 delay (ms) | \
         omniscient p95 (ms) | self-inflicted (ms) |"
    );
    let _ = writeln!(s, "|---|---|---|---|---|---|---|---|---|");
    for r in &res.rows {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {:.0} | {:.1}% | {:.0} | {:.0} | {:.0} |",
            r.experiment,
            r.link,
            r.direction,
            r.scheme,
            r.throughput_kbps,
            100.0 * r.utilization,
            r.p95_delay_ms,
            r.omniscient_p95_ms,
            r.self_inflicted_ms
        );
    }
    let _ = writeln!(s, "\n## Charts\n");
    for c in charts {
        let _ = writeln!(s, "![{c}]({c})\n");
    }
    s
}

/// A short summary for the terminal: the agreement table's verdicts.
pub fn summary(res: &EmulateResults, out: &Path) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{} emulated direction results ({} runs of {:.0} s) in {:.0} s; outputs in {}",
        res.agreement.len(),
        res.agreement.len() / 2,
        res.duration_s,
        res.wall_s,
        out.display()
    );
    for a in &res.agreement {
        let _ = writeln!(s, "{}", line(a));
    }
    s
}

/// One agreement's verdict on one line.
fn line(a: &Agreement) -> String {
    format!(
        "{} {} {:>4} {:<12} emulated {:>7.0} kbit/s {:>6.0} ms | simulated {:>7.0} kbit/s {:>6.0} ms ({})",
        tick(a.agrees),
        a.link,
        a.direction,
        a.scheme,
        a.emulated_kbps,
        a.emulated_delay_ms,
        a.simulated_kbps,
        a.simulated_delay_ms,
        a.tolerance
    )
}
