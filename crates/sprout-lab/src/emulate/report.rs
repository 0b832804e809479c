//! Outputs of the emulated evaluation: the same files as the simulated one (results.csv/json,
//! a Figure-7-style chart per link and direction, the Figure-1 series, report.md), marked as
//! emulated, with the simulator's results on the same configuration beside them.

use std::fmt::Write as _;
use std::fs;
use std::io;
use std::path::Path;

use sprout_eval::chart::{self, ChartPoint};
use sprout_eval::eval::Scheme;
use sprout_eval::paper;
use sprout_eval::report::{paper_point, point, write_csv};
use sprout_files::write_atomically;
use sprout_sim::metrics::TimeSeriesPoint;

use super::results::{Agreement, EmulateResults, SIMULATED_SEEDS};
use super::webrtc_report;
use crate::error::LabError;

/// results.csv: the rows, each with the application-level (frame) delay columns `app_p50_ms`
/// and `app_p95_ms` at the end (empty for a row that carried no video).
pub fn results_csv(res: &EmulateResults) -> io::Result<Vec<u8>> {
    let mut plain = csv::Writer::from_writer(Vec::new());
    for r in &res.rows {
        plain.serialize(r).map_err(io::Error::from)?;
    }
    let bytes = plain.into_inner().map_err(|e| e.into_error())?;
    let mut rd = csv::Reader::from_reader(bytes.as_slice());
    let mut header = rd.headers().map_err(io::Error::from)?.clone();
    header.push_field("app_p50_ms");
    header.push_field("app_p95_ms");
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(&header).map_err(io::Error::from)?;
    let cell = |x: Option<f64>| x.map_or(String::new(), |v| v.to_string());
    for (rec, row) in rd.records().zip(&res.rows) {
        let mut rec = rec.map_err(io::Error::from)?;
        let app = res.app_of(row);
        rec.push_field(&cell(app.and_then(|a| a.app_p50_ms)));
        rec.push_field(&cell(app.and_then(|a| a.app_p95_ms)));
        w.write_record(&rec).map_err(io::Error::from)?;
    }
    w.into_inner().map_err(|e| e.into_error())
}

/// Writes every output of an emulated evaluation into `out`.
pub fn write(
    out: &Path,
    res: &EmulateResults,
    fig1: Option<&[TimeSeriesPoint]>,
) -> Result<(), LabError> {
    write_atomically(out.join("results.csv"), results_csv(res)?)?;
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
        if res.rows.iter().any(|r| r.scheme == Scheme::Webrtc.key()) {
            // The video calls the paper measured, beside the real call.
            for (name, p) in webrtc_report::paper_call_points(link, dir) {
                points.push(paper_point(format!("{name} (paper)"), p));
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
            "| {} | {} | {}{} | {:.0} | {:.0} | {:.2} | {:.0} | {:.0} | {} | {} | {} | {} |",
            a.link,
            a.direction,
            a.scheme,
            model(a),
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
    let call = webrtc_report::markdown(res);
    if !call.is_empty() {
        let _ = writeln!(s, "{call}");
    }
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
    for l in webrtc_report::summary_lines(res) {
        let _ = writeln!(s, "{l}");
    }
    s
}

/// " (gcc)" when the simulator ran a model of the scheme, else nothing.
fn model(a: &Agreement) -> String {
    if a.simulated_scheme.is_empty() || a.simulated_scheme == a.scheme {
        String::new()
    } else {
        format!(" ({})", a.simulated_scheme)
    }
}

/// One agreement's verdict on one line.
fn line(a: &Agreement) -> String {
    format!(
        "{} {} {:>4} {:<12} emulated {:>7.0} kbit/s {:>6.0} ms | simulated{} {:>7.0} kbit/s {:>6.0} ms ({})",
        tick(a.agrees),
        a.link,
        a.direction,
        a.scheme,
        a.emulated_kbps,
        a.emulated_delay_ms,
        model(a),
        a.simulated_kbps,
        a.simulated_delay_ms,
        a.tolerance
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::emulate::results::fixtures::results;
    use sprout_eval::eval::ResultRow;

    #[test]
    fn results_csv_has_the_frame_delays_of_the_call_only() {
        let res = results((1200.0, 450.0));
        let bytes = results_csv(&res).unwrap();
        let mut rd = csv::Reader::from_reader(bytes.as_slice());
        let header = rd.headers().unwrap().clone();
        let col = |name: &str| header.iter().position(|h| h == name).unwrap();
        let (p50, p95) = (col("app_p50_ms"), col("app_p95_ms"));
        assert_eq!(p95, header.len() - 1);
        let recs: Vec<csv::StringRecord> = rd.records().map(|r| r.unwrap()).collect();
        assert_eq!(recs.len(), res.rows.len());
        let call = &recs[2];
        assert_eq!(
            (&call[col("scheme")], &call[col("direction")]),
            ("webrtc", "down")
        );
        assert_eq!((&call[p50], &call[p95]), ("100", "200"));
        assert_eq!((&recs[0][p50], &recs[0][p95]), ("", ""));
        // The uplink's call had no frames: no delays.
        assert_eq!(&recs[6][p95], "");
        // The rows still read back as ResultRow.
        let mut rd = csv::Reader::from_reader(bytes.as_slice());
        let back: Vec<ResultRow> = rd.deserialize().map(|r| r.unwrap()).collect();
        assert_eq!(back[2].throughput_kbps, 1200.0);
    }

    #[test]
    fn the_summary_names_the_model_the_simulator_ran() {
        let mut res = results((1200.0, 450.0));
        res.shape = webrtc_report::shape_checks(&res);
        let text = summary(&res, Path::new("/o"));
        assert!(text.contains("webrtc       emulated    1200 kbit/s    450 ms | simulated (gcc)    1100 kbit/s    400 ms"), "{text}");
        assert!(
            text.contains("✅ paper's shape on Verizon-LTE-short up"),
            "{text}"
        );
        let md = markdown(&res, &[]);
        assert!(md.contains("| webrtc (gcc) |"), "{md}");
        assert!(
            md.contains("## The WebRTC call against Sprout and the GCC model"),
            "{md}"
        );
    }
}
