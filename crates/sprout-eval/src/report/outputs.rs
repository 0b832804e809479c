//! Writing the evaluation's files: results.csv/json, a table (CSV) and chart (SVG) per
//! experiment, and report.md.

use std::path::Path;

use sprout_sim::metrics::TimeSeriesPoint;

use super::format::pct;
use super::markdown::report;
use super::tables::{spread_rows, summary_rows, variant_rows};
use crate::chart::{self, ChartPoint, Spread, SpreadPanel, SpreadPoint, UtilizationPoint};
use crate::error::Result;
use crate::experiment::{Experiment, MODEL_VARIANTS};
use crate::output_dir::{write_atomically, write_csv};
use crate::paper;
use crate::results::{EvalResults, ResultRow};

/// The chart point of one result row, labelled `label`.
pub fn point(label: String, r: &ResultRow) -> ChartPoint {
    ChartPoint {
        label,
        throughput_kbps: r.throughput_kbps,
        delay_ms: r.self_inflicted_ms,
        paper: false,
    }
}

/// The chart point of one of the paper's published points, labelled `label`.
pub fn paper_point(label: String, p: paper::PaperPoint) -> ChartPoint {
    ChartPoint {
        label,
        throughput_kbps: p.throughput_kbps,
        delay_ms: p.self_inflicted_ms,
        paper: true,
    }
}

/// Writes every output of an evaluation into `out`.
pub fn write_outputs(
    out: &Path,
    res: &EvalResults,
    fig1: Option<&[TimeSeriesPoint]>,
) -> Result<()> {
    if res.rows.is_empty() {
        // Only the interactive experiment ran, which has files of its own: a results.csv
        // of its header alone still reads as a table of no rows.
        write_atomically(out.join("results.csv"), results_header()?)?;
    } else {
        write_csv(&out.join("results.csv"), &res.rows)?;
    }
    write_atomically(out.join("results.json"), serde_json::to_string_pretty(res)?)?;
    let want = |e: Experiment| res.experiments.contains(&e);
    let mut charts: Vec<(Experiment, String)> = Vec::new();

    if want(Experiment::Fig7) || want(Experiment::Fig8) || want(Experiment::Summary) {
        write_csv(&out.join("fig7.csv"), res.rows_of(Experiment::Fig7))?;
    }
    if want(Experiment::Fig7) {
        write_fig7(out, res, fig1, &mut charts)?;
    }
    // Figure 8 always comes with fig7: it is its average.
    if want(Experiment::Fig7) || want(Experiment::Fig8) {
        write_fig8(out, res, &mut charts)?;
    }
    if want(Experiment::Summary) {
        write_summary(out, res, &mut charts)?;
    }
    if want(Experiment::Confidence) {
        write_confidence(out, res, &mut charts)?;
    }
    if want(Experiment::Loss) {
        write_loss(out, res, &mut charts)?;
    }
    if want(Experiment::Distributions) {
        write_distributions(out, res, &mut charts)?;
    }
    if want(Experiment::Sensitivity) {
        write_sensitivity(out, res, &mut charts)?;
    }
    if want(Experiment::Model) {
        write_model(out, res, &mut charts)?;
    }
    if let Some(interactive) = &res.interactive {
        super::interactive::write_interactive(out, interactive, &mut charts)?;
    }
    write_atomically(out.join("report.md"), report(res, &charts))?;
    Ok(())
}

/// The header line of results.csv (the names of [`ResultRow`]'s fields), with its newline.
fn results_header() -> Result<Vec<u8>> {
    let blank = ResultRow {
        experiment: String::new(),
        link: String::new(),
        direction: String::new(),
        scheme: String::new(),
        confidence: None,
        loss: 0.0,
        seed: 0,
        queue: String::new(),
        throughput_kbps: 0.0,
        goodput_kbps: 0.0,
        capacity_kbps: 0.0,
        utilization: 0.0,
        p95_delay_ms: 0.0,
        p95_delay_data_ms: 0.0,
        omniscient_p95_ms: 0.0,
        self_inflicted_ms: 0.0,
        self_inflicted_data_ms: 0.0,
        paper_throughput_kbps: None,
        paper_self_inflicted_ms: None,
        window_s: 0.0,
        variant: String::new(),
    };
    let mut w = csv::Writer::from_writer(Vec::new());
    w.serialize(&blank)?;
    let bytes = w.into_inner().map_err(|e| e.into_error())?;
    let end = bytes
        .iter()
        .position(|&b| b == b'\n')
        .map_or(bytes.len(), |k| k + 1);
    Ok(bytes[..end].to_vec())
}

// Each writer below writes one experiment's table and charts into `out` and notes each chart
// (with its experiment) in `charts`, for report.md.

/// fig7: a chart per link direction, ours beside the paper's points, and Figure 1's series.
fn write_fig7(
    out: &Path,
    res: &EvalResults,
    fig1: Option<&[TimeSeriesPoint]>,
    charts: &mut Vec<(Experiment, String)>,
) -> Result<()> {
    let mut links: Vec<(String, String)> = res
        .rows_of(Experiment::Fig7)
        .map(|r| (r.link.clone(), r.direction.clone()))
        .collect();
    links.dedup();
    for (link, dir) in &links {
        let mut points: Vec<ChartPoint> = res
            .rows_of(Experiment::Fig7)
            .filter(|r| r.link == *link && r.direction == *dir && r.scheme != "omniscient")
            .map(|r| point(r.scheme.clone(), r))
            .collect();
        for scheme in paper::FIG7_SCHEMES {
            if let Some(p) = paper::fig7(link, dir, scheme) {
                points.push(paper_point(scheme.to_string(), p));
            }
        }
        let title = format!("{link} {dir}link: throughput against self-inflicted delay");
        let file = format!("fig7-{link}-{dir}.svg");
        write_atomically(
            out.join(&file),
            chart::throughput_delay_chart(&title, &points),
        )?;
        charts.push((Experiment::Fig7, file));
    }
    if let Some(series) = fig1 {
        write_atomically(
            out.join("fig1-Verizon-LTE-short-down.svg"),
            chart::time_series_chart_measured(
                "Sprout on the Verizon LTE downlink (Verizon-LTE-short.down)",
                series,
                res.skip_s,
            ),
        )?;
        write_csv(&out.join("fig1-Verizon-LTE-short-down.csv"), series)?;
        charts.push((Experiment::Fig7, "fig1-Verizon-LTE-short-down.svg".into()));
    }
    Ok(())
}

/// fig8: the averages (fig8.csv) and their chart, ours beside the paper's.
fn write_fig8(out: &Path, res: &EvalResults, charts: &mut Vec<(Experiment, String)>) -> Result<()> {
    write_csv(&out.join("fig8.csv"), &res.averages)?;
    let mut fig8 = Vec::new();
    for a in res.averages.iter().filter(|a| a.scheme != "omniscient") {
        fig8.push(UtilizationPoint {
            label: a.scheme.clone(),
            utilization: a.utilization,
            delay_ms: a.self_inflicted_ms,
            paper: false,
        });
        if let Some(p) = paper::fig8(&a.scheme) {
            fig8.push(UtilizationPoint {
                label: a.scheme.clone(),
                utilization: p.utilization,
                delay_ms: p.self_inflicted_ms,
                paper: true,
            });
        }
    }
    write_atomically(
        out.join("fig8-averages.svg"),
        chart::utilization_delay_chart(
            "Average utilization against average self-inflicted delay",
            &fig8,
        ),
    )?;
    charts.push((Experiment::Fig8, "fig8-averages.svg".into()));
    Ok(())
}

/// summary: the introduction's table and the averages' chart.
fn write_summary(
    out: &Path,
    res: &EvalResults,
    charts: &mut Vec<(Experiment, String)>,
) -> Result<()> {
    let rows = summary_rows(res);
    write_csv(&out.join("summary.csv"), &rows)?;
    let points: Vec<ChartPoint> = res
        .averages
        .iter()
        .filter(|a| a.scheme != "omniscient")
        .map(|a| ChartPoint {
            label: a.scheme.clone(),
            throughput_kbps: a.throughput_kbps,
            delay_ms: a.self_inflicted_ms,
            paper: false,
        })
        .collect();
    write_atomically(
        out.join("summary.svg"),
        chart::mean_throughput_delay_chart(
            "Average throughput against average self-inflicted delay, 8 links",
            &points,
        ),
    )?;
    charts.push((Experiment::Summary, "summary.svg".into()));
    Ok(())
}

/// confidence: the sweep's rows and its uplink chart beside the paper's Figure 9.
fn write_confidence(
    out: &Path,
    res: &EvalResults,
    charts: &mut Vec<(Experiment, String)>,
) -> Result<()> {
    write_csv(
        &out.join("confidence.csv"),
        res.rows_of(Experiment::Confidence),
    )?;
    let mut points: Vec<ChartPoint> = res
        .rows_of(Experiment::Confidence)
        .filter(|r| r.direction == "up")
        .map(|r| {
            let label = match (r.scheme.as_str(), r.confidence) {
                ("sprout", Some(c)) => format!("sprout {}", pct(c)),
                _ => r.scheme.clone(),
            };
            point(label, r)
        })
        .collect();
    for (c, p) in paper::FIG9 {
        points.push(paper_point(format!("sprout {c}%"), p));
    }
    write_atomically(
        out.join("confidence.svg"),
        chart::throughput_delay_chart("Confidence sweep, T-Mobile UMTS uplink (Figure 9)", &points),
    )?;
    charts.push((Experiment::Confidence, "confidence.svg".into()));
    Ok(())
}

/// loss: the rows and their chart beside the paper's loss table.
fn write_loss(out: &Path, res: &EvalResults, charts: &mut Vec<(Experiment, String)>) -> Result<()> {
    write_csv(&out.join("loss.csv"), res.rows_of(Experiment::Loss))?;
    let mut points: Vec<ChartPoint> = res
        .rows_of(Experiment::Loss)
        .map(|r| point(format!("{} {}", r.direction, pct(r.loss)), r))
        .collect();
    for row in paper::LOSS_TABLE {
        let dir = if row.direction == paper::Direction::Up {
            "up"
        } else {
            "down"
        };
        points.push(ChartPoint {
            label: format!("{dir} {}%", row.loss_pct),
            throughput_kbps: row.throughput_kbps,
            delay_ms: row.self_inflicted_ms,
            paper: true,
        });
    }
    write_atomically(
        out.join("loss.svg"),
        chart::throughput_delay_chart("Sprout on Verizon LTE with loss each way", &points),
    )?;
    charts.push((Experiment::Loss, "loss.svg".into()));
    Ok(())
}

/// distributions: the rows and a chart per synthetic link.
fn write_distributions(
    out: &Path,
    res: &EvalResults,
    charts: &mut Vec<(Experiment, String)>,
) -> Result<()> {
    write_csv(
        &out.join("distributions.csv"),
        res.rows_of(Experiment::Distributions),
    )?;
    let mut links: Vec<String> = res
        .rows_of(Experiment::Distributions)
        .map(|r| r.link.clone())
        .collect();
    links.dedup();
    for link in links {
        let points: Vec<ChartPoint> = res
            .rows_of(Experiment::Distributions)
            .filter(|r| r.link == link && r.direction == "down" && r.scheme != "omniscient")
            .map(|r| point(r.scheme.clone(), r))
            .collect();
        let kind = link.rsplit('~').next().unwrap_or("");
        let file = format!("distributions-{kind}.svg");
        write_atomically(
            out.join(&file),
            chart::throughput_delay_chart(
                &format!("{kind} inter-arrivals, downlink rate of {link}"),
                &points,
            ),
        )?;
        charts.push((Experiment::Distributions, file));
    }
    Ok(())
}

/// sensitivity: the means and standard deviations over the seeds, and their chart: a plot per
/// link and direction, each scheme's mean with bars from its lowest to its highest seed.
fn write_sensitivity(
    out: &Path,
    res: &EvalResults,
    charts: &mut Vec<(Experiment, String)>,
) -> Result<()> {
    let spread = spread_rows(res);
    write_csv(&out.join("sensitivity.csv"), &spread)?;
    let mut links: Vec<&str> = Vec::new();
    for s in &spread {
        if !links.contains(&s.link.as_str()) {
            links.push(&s.link);
        }
    }
    let mut panels = Vec::new();
    for link in &links {
        for (dir, word) in [("up", "uplink"), ("down", "downlink")] {
            let points: Vec<SpreadPoint> = spread
                .iter()
                .filter(|s| s.link == *link && s.direction == dir)
                .map(|s| {
                    let runs: Vec<&ResultRow> = res
                        .rows_of(Experiment::Sensitivity)
                        .filter(|r| r.link == *link && r.direction == dir && r.scheme == s.scheme)
                        .collect();
                    let of = |f: fn(&ResultRow) -> f64| {
                        Spread::of(&runs.iter().map(|r| f(r)).collect::<Vec<f64>>())
                    };
                    SpreadPoint {
                        label: s.scheme.clone(),
                        throughput_kbps: of(|r| r.throughput_kbps),
                        delay_ms: of(|r| r.self_inflicted_ms),
                    }
                })
                .collect();
            if !points.is_empty() {
                panels.push(SpreadPanel {
                    title: format!("{link} {word}"),
                    points,
                });
            }
        }
    }
    let seeds = crate::experiment::SEEDS.len();
    write_atomically(
        out.join("sensitivity.svg"),
        chart::seed_spread_chart(
            &format!("Spread over {seeds} seeds, each link both ways"),
            &panels,
            &format!("mean of {seeds} seeds"),
        ),
    )?;
    charts.push((Experiment::Sensitivity, "sensitivity.svg".into()));
    Ok(())
}

/// model: each variant's averages and their chart.
fn write_model(
    out: &Path,
    res: &EvalResults,
    charts: &mut Vec<(Experiment, String)>,
) -> Result<()> {
    let variants = variant_rows(res);
    write_csv(&out.join("model.csv"), &variants)?;
    let points: Vec<ChartPoint> = variants
        .iter()
        .map(|v| ChartPoint {
            label: v.variant.clone(),
            throughput_kbps: v.throughput_kbps,
            delay_ms: v.self_inflicted_ms,
            paper: false,
        })
        .collect();
    write_atomically(
        out.join("model.svg"),
        chart::model_variants_chart(
            "Sprout under each variant of the model, averages over the links",
            &points,
            MODEL_VARIANTS[0].0,
        ),
    )?;
    charts.push((Experiment::Model, "model.svg".into()));
    Ok(())
}
