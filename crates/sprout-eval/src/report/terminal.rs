//! The evaluation's summary for the terminal.

use std::fmt::Write as _;
use std::path::Path;

use super::checks::{check_lines, checks};
use crate::results::EvalResults;

/// A short summary for the terminal.
pub fn summary(res: &EvalResults, out: &Path) -> String {
    let mut s = String::new();
    let exps: Vec<&str> = res.experiments.iter().map(|e| e.key()).collect();
    let interactive = res.interactive.as_ref().map_or(String::new(), |i| {
        format!(" and {} interactive runs", i.rows.len())
    });
    // Experiments with sections of their own (rates, interactive) add no direction results:
    // a line of zeros would say nothing, so it is left out for them.
    if !res.rows.is_empty() {
        let _ = writeln!(
            s,
            "{} direction results{interactive} ({} simulations; {}) from {} in {:.1} s",
            res.rows.len(),
            res.simulations,
            exps.join(", "),
            res.source,
            res.wall_s
        );
    } else if let Some(i) = &res.interactive {
        let _ = writeln!(
            s,
            "{} interactive runs ({}) from {} in {:.1} s",
            i.rows.len(),
            exps.join(", "),
            res.source,
            res.wall_s
        );
    }
    if let Some(note) = &res.source_note {
        let _ = writeln!(s, "{note}");
    }
    if let Some(phrase) = res.params_phrase() {
        let _ = writeln!(s, "Not the paper's defaults: {phrase}");
    }
    if !res.averages.is_empty() {
        let _ = writeln!(
            s,
            "{:<12} {:>12} {:>22} {:>14}",
            "scheme", "utilization", "self-inflicted delay", "(data only)"
        );
        for a in &res.averages {
            let _ = writeln!(
                s,
                "{:<12} {:>11.1}% {:>19.0} ms {:>11.0} ms",
                a.scheme,
                100.0 * a.utilization,
                a.self_inflicted_ms,
                a.self_inflicted_data_ms
            );
        }
    }
    for note in res.natural_app_notes() {
        let _ = writeln!(s, "{note}");
    }
    if let Some(i) = &res.interactive {
        s.push_str(&super::interactive::terminal_table(i));
    }
    for line in check_lines(&checks(res)) {
        let _ = writeln!(s, "{line}");
    }
    let _ = write!(
        s,
        "wrote {0}/results.csv, {0}/results.json, {0}/report.md and a table and SVG chart per experiment",
        out.display()
    );
    if res.interactive.is_some() {
        let _ = write!(
            s,
            " (interactive: {0}/interactive.csv, .json and .svg)",
            out.display()
        );
    }
    s
}
