//! The `calibration` experiment's outputs: calibration.csv (a row per model, confidence, link
//! direction and horizon), calibration.json, calibration.svg, its section of report.md
//! (appended after the rest) and its table for the terminal.

use std::fmt::Write as _;
use std::path::Path;

use sprout_sim::scheme::Scheme;

use crate::calibration::{
    CalibrationAverage, CalibrationResults, MissClass, MODELS, OUTAGE_RUN_TICKS,
    RATE_CHANGE_FRACTION, RECENT_TICKS, REPORT_HORIZONS,
};
use crate::chart::{calibration_chart, CalibrationPanel, CalibrationSeries};
use crate::error::Result;
use crate::output_dir::{write_atomically, write_csv};

/// The horizons the chart shows, ticks.
const CHART_HORIZONS: [usize; 2] = [1, 8];

/// Writes calibration.csv, calibration.json and calibration.svg into `out` and appends the
/// experiment's section to `out`/report.md (written before by [`super::write_outputs`];
/// created if it was not).
pub fn write_calibration(out: &Path, res: &CalibrationResults) -> Result<()> {
    write_csv(&out.join("calibration.csv"), &res.rows)?;
    write_atomically(
        out.join("calibration.json"),
        serde_json::to_string_pretty(res)?,
    )?;
    write_atomically(out.join("calibration.svg"), chart(res))?;
    super::append_section(out, &section(res))
}

/// The confidences that ran, in order.
fn confidences(res: &CalibrationResults) -> &[f64] {
    &res.settings.confidences
}

/// The chart: a reliability diagram per horizon of [`CHART_HORIZONS`].
fn chart(res: &CalibrationResults) -> String {
    let panels: Vec<CalibrationPanel> = CHART_HORIZONS
        .iter()
        .map(|&h| CalibrationPanel {
            title: format!(
                "{h} tick{} ahead ({} ms)",
                if h == 1 { "" } else { "s" },
                20 * h
            ),
            series: MODELS
                .iter()
                .filter(|m| m.uses_confidence())
                .map(|m| CalibrationSeries {
                    label: m.key().to_string(),
                    points: confidences(res)
                        .iter()
                        .filter_map(|&c| Some((c, res.average(*m, Some(c), h)?.coverage)))
                        .collect(),
                })
                .filter(|s| !s.points.is_empty())
                .collect(),
            flat: MODELS
                .iter()
                .filter(|m| !m.uses_confidence())
                .filter_map(|m| Some((m.key().to_string(), res.average(*m, None, h)?.coverage)))
                .collect(),
        })
        .collect();
    let first = format!(
        "Ideal observation: every opportunity of each of the {} link directions fed to the \
         estimator per 20 ms tick, as behind a saturated link; the first {:.0} s skipped; mean \
         over the directions.",
        2 * res.links.len(),
        res.settings.skip_us as f64 / 1e6
    );
    let second = "Sprout-EWMA has no confidence: its share met is the dashed horizontal line. \
                  Above the diagonal a forecast is more cautious than it claims, below less.";
    calibration_chart(
        "Forecast calibration: how often the forecast is met, against its stated confidence",
        &panels,
        &[&first, second],
    )
}

/// A coverage as a table cell: `93.1%`, or `-`.
fn pct(a: Option<&CalibrationAverage>) -> String {
    a.map_or("-".into(), |a| format!("{:.1}%", 100.0 * a.coverage))
}

/// The miss shares as a table cell: `41 / 12 / 20 / 27`, or `-`.
fn shares(a: Option<&CalibrationAverage>) -> String {
    a.and_then(|a| a.miss_shares).map_or("-".into(), |s| {
        s.iter()
            .map(|x| format!("{:.0}", 100.0 * x))
            .collect::<Vec<_>>()
            .join(" / ")
    })
}

/// Every (model, confidence) that ran, in the tables' order.
fn model_rows(res: &CalibrationResults) -> Vec<(Scheme, Option<f64>)> {
    let mut out = Vec::new();
    for m in MODELS {
        if m.uses_confidence() {
            out.extend(confidences(res).iter().map(|&c| (m, Some(c))));
        } else {
            out.push((m, None));
        }
    }
    out.retain(|&(m, c)| res.average(m, c, 1).is_some());
    out
}

fn confidence_cell(c: Option<f64>) -> String {
    c.map_or("-".into(), |c| format!("{}%", 100.0 * c))
}

/// The table for the terminal: a row per model and confidence, the coverage at each horizon
/// of [`REPORT_HORIZONS`].
pub fn calibration_terminal_table(res: &CalibrationResults) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "calibration: forecasts met, mean of {} link directions ({} estimators, {} ticks, \
         {:.1} s)",
        2 * res.links.len(),
        res.runs,
        crate::report::thousands(res.ticks as f64),
        res.wall_s
    );
    let _ = write!(s, "{:<12} {:>10}", "model", "confidence");
    for h in REPORT_HORIZONS {
        let _ = write!(s, " {:>8}", format!("h={h}"));
    }
    let _ = writeln!(s);
    for (m, c) in model_rows(res) {
        let _ = write!(s, "{:<12} {:>10}", m.key(), confidence_cell(c));
        for h in REPORT_HORIZONS {
            let _ = write!(s, " {:>8}", pct(res.average(m, c, h)));
        }
        let _ = writeln!(s);
    }
    s
}

/// report.md's section.
fn section(res: &CalibrationResults) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "## Forecast calibration (`calibration`)\n");
    let _ = writeln!(
        s,
        "How often each estimator's forecast is met. Each of the {} link directions ({}; {}) \
         is cut into 20 ms ticks (the model's tau) and each tick's delivery opportunities are \
         fed to the estimator as the receiver of a saturated link sees them: each tick \
         `evolve`, then `observe` the count (0 for an empty tick), then the forecast of the \
         next 8 ticks. The forecast of the next h ticks is met when the link offers at least \
         that many opportunities in them; forecasts made in the first {:.0} s are warm-up and \
         not counted. This is the *ideal observation* calibration: the belief sees every \
         opportunity. In a simulation the receiver sees only what the sender sent (an \
         application-limited tick, a queue run dry), which is later work. Sprout on the \
         paper's model (`sprout`) and on the wide model (`sprout-wide`) at each stated \
         confidence, and Sprout-EWMA (no confidence: its forecast is the moving average's). \
         {} estimators, {} ticks, {:.1} s of wall time. Each cell is the share of forecasts \
         met, the mean of the directions; every direction and horizon 1-8 is in \
         `calibration.csv`.\n",
        2 * res.links.len(),
        res.links.join(", "),
        res.source,
        res.settings.skip_us as f64 / 1e6,
        res.runs,
        crate::report::thousands(res.ticks as f64),
        res.wall_s,
    );
    coverage_table(&mut s, res);
    let _ = writeln!(s, "\n{}\n", findings(res));
    misses_table(&mut s, res);
    let _ = writeln!(s, "\n![calibration.svg](calibration.svg)\n");
    s
}

/// The coverage table: a row per model and confidence, a column per horizon of
/// [`REPORT_HORIZONS`].
fn coverage_table(s: &mut String, res: &CalibrationResults) {
    let _ = write!(s, "| model | confidence |");
    for h in REPORT_HORIZONS {
        let _ = write!(s, " met, h = {h} |");
    }
    let _ = writeln!(s);
    let _ = writeln!(s, "|---|---|{}", "---|".repeat(REPORT_HORIZONS.len()));
    for (m, c) in model_rows(res) {
        let _ = write!(s, "| {} | {} |", m.key(), confidence_cell(c));
        for h in REPORT_HORIZONS {
            let _ = write!(s, " {} |", pct(res.average(m, c, h)));
        }
        let _ = writeln!(s);
    }
}

/// The misses' table at horizon 8: the share of each class.
fn misses_table(s: &mut String, res: &CalibrationResults) {
    let h = *REPORT_HORIZONS.last().expect("horizons");
    let _ = writeln!(
        s,
        "Where the misses at h = {h} fall, as shares of all the directions' misses (%): \
         *outage* an empty tick within the horizon; *after outage* a run of {OUTAGE_RUN_TICKS} \
         or more empty ticks ended within the previous {} s; *rate change* the horizon's mean \
         count departs from the previous {} s's by more than {:.0}% of it; *steady* the \
         rest, each miss in the first class that applies.\n",
        RECENT_TICKS as f64 * 0.02,
        RECENT_TICKS as f64 * 0.02,
        100.0 * RATE_CHANGE_FRACTION
    );
    let _ = writeln!(
        s,
        "| model | confidence | outage / after outage / rate change / steady |"
    );
    let _ = writeln!(s, "|---|---|---|");
    debug_assert_eq!(MissClass::ALL.len(), 4);
    for (m, c) in model_rows(res) {
        let _ = writeln!(
            s,
            "| {} | {} | {} |",
            m.key(),
            confidence_cell(c),
            shares(res.average(m, c, h))
        );
    }
}

/// A paragraph of what the table shows: the paper's 95% at h = 1 and 8, the wide model's,
/// Sprout-EWMA's, and where each model's measured coverage meets its stated confidence.
fn findings(res: &CalibrationResults) -> String {
    let at = |m: Scheme, c: Option<f64>, h: usize| res.average(m, c, h).map(|a| a.coverage);
    let p = |v: Option<f64>| v.map_or("-".into(), |v| format!("{:.1}%", 100.0 * v));
    let mut text = String::new();
    for m in MODELS.iter().filter(|m| m.uses_confidence()) {
        if let Some(c) = confidences(res)
            .iter()
            .copied()
            .find(|c| (c - 0.95).abs() < 1e-9)
        {
            let _ = write!(
                text,
                "`{}`'s 95% forecast is met {} of the time at h = 1 and {} at h = 8. ",
                m.key(),
                p(at(*m, Some(c), 1)),
                p(at(*m, Some(c), 8))
            );
        }
        let gaps: Vec<f64> = confidences(res)
            .iter()
            .filter_map(|&c| Some(at(*m, Some(c), 8)? - c))
            .collect();
        if !gaps.is_empty() {
            let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
            let _ = write!(
                text,
                "Over the confidences its coverage at h = 8 is on average {:.1} points {} the \
                 stated confidence. ",
                100.0 * mean.abs(),
                if mean >= 0.0 { "above" } else { "below" }
            );
        }
    }
    let ewma = at(Scheme::SproutEwma, None, 8);
    let _ = write!(
        text,
        "Sprout-EWMA's forecast (no confidence) is met {} of the time at h = 1 and {} at \
         h = 8{}.",
        p(at(Scheme::SproutEwma, None, 1)),
        p(ewma),
        ewma.map_or(String::new(), |e| bracket(res, e))
    );
    text
}

/// Where a coverage `e` at h = 8 falls on the paper model's curve: `, as often as the paper
/// model's forecast at a stated 50-70%` (between the confidences whose coverage brackets it).
fn bracket(res: &CalibrationResults, e: f64) -> String {
    let curve: Vec<(f64, f64)> = confidences(res)
        .iter()
        .filter_map(|&c| Some((c, res.average(Scheme::Sprout, Some(c), 8)?.coverage)))
        .collect();
    let below = curve.iter().rev().find(|p| p.1 <= e).map(|p| p.0);
    let above = curve.iter().find(|p| p.1 > e).map(|p| p.0);
    let pc = |c: f64| format!("{}%", 100.0 * c);
    match (below, above) {
        (Some(b), Some(a)) => format!(
            ", as often as the paper model's forecast at a stated {}-{}",
            pc(b),
            pc(a)
        ),
        (None, Some(a)) => format!(", less often than the paper model's at {}", pc(a)),
        (Some(b), None) => format!(", more often than the paper model's at {}", pc(b)),
        (None, None) => String::new(),
    }
}
