//! The `rates` experiment's outputs: rates.csv (a row per direction of every run),
//! rates.json, rates.svg, its section of report.md (appended after the rest) and its table
//! for the terminal.

use std::fmt::Write as _;
use std::path::Path;

use crate::chart::{rates_chart, RatesSeries};
use crate::error::Result;
use crate::output_dir::{write_atomically, write_csv};
use crate::rates::{checks, RatesAverage, RatesResults, SCHEMES};

/// Writes rates.csv, rates.json and rates.svg into `out` and appends the experiment's section
/// to `out`/report.md (written before by [`super::write_outputs`]; created if it was not).
pub fn write_rates(out: &Path, res: &RatesResults) -> Result<()> {
    write_csv(&out.join("rates.csv"), &res.rows)?;
    write_atomically(out.join("rates.json"), serde_json::to_string_pretty(res)?)?;
    write_atomically(out.join("rates.svg"), chart(res))?;
    super::append_section(out, &section(res))
}

/// The chart: the scaled links' averages and the constant links', per scheme.
fn chart(res: &RatesResults) -> String {
    let series = |constant: bool| -> Vec<RatesSeries> {
        SCHEMES
            .iter()
            .map(|s| RatesSeries {
                label: s.key().to_string(),
                points: res
                    .averages
                    .iter()
                    .filter(|a| a.scheme == s.key())
                    .filter_map(|a| {
                        let x = if constant { a.constant_mbps } else { a.scale }?;
                        Some((x, a.utilization, a.self_inflicted_ms))
                    })
                    .collect(),
            })
            .filter(|s| !s.points.is_empty())
            .collect()
    };
    let caption = format!(
        "Both directions loaded, 20 ms each way, the first {:.0} s skipped; the paper's {} \
         link directions whole (at most {} s), constant links {:.0} s; 0 ms drawn at 1 ms",
        res.settings.skip_us as f64 / 1e6,
        2 * res.links.len(),
        crate::report::thousands(res.settings.duration_us as f64 / 1e6),
        res.settings.constant_duration_us as f64 / 1e6,
    );
    rates_chart(
        "Sprout at today's link rates: utilization and self-inflicted delay",
        &series(false),
        &series(true),
        &[&caption],
    )
}

/// One average as a table cell: `47.1% / 383 ms`.
fn cell(a: Option<&RatesAverage>) -> String {
    a.map_or("-".into(), |a| {
        format!(
            "{:.1}% / {:.0} ms",
            100.0 * a.utilization,
            a.self_inflicted_ms
        )
    })
}

/// The groups (`x1`, ..., `10 Mbit/s`, ...) in the order they ran.
fn groups(res: &RatesResults) -> Vec<&str> {
    let mut g: Vec<&str> = Vec::new();
    for a in &res.averages {
        if !g.contains(&a.group.as_str()) {
            g.push(&a.group);
        }
    }
    g
}

fn average<'a>(res: &'a RatesResults, group: &str, scheme: &str) -> Option<&'a RatesAverage> {
    res.averages
        .iter()
        .find(|a| a.group == group && a.scheme == scheme)
}

/// The table for the terminal: a row per group, a column per scheme (utilization /
/// self-inflicted delay), then the checks.
pub fn rates_terminal_table(res: &RatesResults) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "rates: utilization / self-inflicted delay ({} simulations in {:.1} s)",
        res.simulations, res.wall_s
    );
    let _ = write!(s, "{:<12}", "links");
    for sc in SCHEMES {
        let _ = write!(s, " {:>17}", sc.key());
    }
    let _ = writeln!(s);
    for g in groups(res) {
        let _ = write!(s, "{g:<12}");
        for sc in SCHEMES {
            let _ = write!(s, " {:>17}", cell(average(res, g, sc.key())));
        }
        let _ = writeln!(s);
    }
    for c in checks(res) {
        let _ = writeln!(s, "{}", c.line());
    }
    s
}

/// report.md's section.
fn section(res: &RatesResults) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "## Sprout at today's link rates (`rates`)\n");
    let _ = writeln!(
        s,
        "The paper's links ({}; {}) with their delivery rate multiplied by {} (every \
         millisecond's opportunities times the factor, as `sprout traces scale` does), and \
         constant links of {} Mbit/s, both directions loaded at once, 20 ms each way. Sprout \
         on the paper's model (`sprout`) and on the wide model (`sprout-wide`, an outage to \
         1 Gbit/s), Sprout-EWMA, Cubic and BBR. A run on a scaled link replays its trace pair \
         whole, as fig7 does, up to {} s of simulated time, and one on a constant link \
         lasts {:.0} s (at 1 Gbit/s it replays 167,000 packets a second, and its figures \
         settle within seconds), each measured from {:.0} s. \
         {} simulations in {:.1} s of wall time. Each cell is utilization / self-inflicted \
         delay, averaged over the {} link directions of a scale or the 2 of a constant link; \
         every direction is in `rates.csv`.\n",
        res.links.join(", "),
        res.source,
        res.settings
            .scales
            .iter()
            .map(|f| format!("{f}"))
            .collect::<Vec<_>>()
            .join(", "),
        res.settings
            .constant_mbps
            .iter()
            .map(|m| crate::report::thousands(*m))
            .collect::<Vec<_>>()
            .join(", "),
        crate::report::thousands(res.settings.duration_us as f64 / 1e6),
        res.settings.constant_duration_us as f64 / 1e6,
        res.settings.skip_us as f64 / 1e6,
        res.simulations,
        res.wall_s,
        2 * res.links.len()
    );
    let _ = write!(s, "| links |");
    for sc in SCHEMES {
        let _ = write!(s, " {} |", sc.key());
    }
    let _ = writeln!(s);
    let _ = writeln!(s, "|---|{}", "---|".repeat(SCHEMES.len()));
    for g in groups(res) {
        let _ = write!(s, "| {g} |");
        for sc in SCHEMES {
            let _ = write!(s, " {} |", cell(average(res, g, sc.key())));
        }
        let _ = writeln!(s);
    }
    let _ = writeln!(
        s,
        "\nThe paper model's forecast tables stop at 30 packets a tick, so it plateaus near \
         the paper's 12 Mbit/s ceiling whatever the link; the wide model's rates reach \
         1 Gbit/s.\n"
    );
    let _ = writeln!(s, "Checks (issue 24):\n");
    for c in checks(res) {
        let _ = writeln!(s, "- {}", c.line());
    }
    let _ = writeln!(s, "\n![rates.svg](rates.svg)\n");
    s
}
