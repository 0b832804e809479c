//! The emulated interactive experiment's results, checks and outputs:
//! `interactive-emulated.csv` and `.json`, the table and checks for the terminal, and the
//! `## Interactive stream (emulated)` section of report.md.

use std::fmt::Write as _;
use std::fs;
use std::path::Path;

use serde::{Deserialize, Serialize};
use sprout_apps::app_delay::{ms_text, AppDelay};
use sprout_eval::output_dir::write_atomically;
use sprout_eval::report::write_csv;

use super::report::merge_named_section;
use crate::error::LabError;

/// The report.md heading of the experiment's section.
pub const SECTION: &str = "## Interactive stream (emulated)";
/// Share of the offered data a scheme must deliver to count as delivering it.
pub const DELIVERED_SHARE: f64 = 0.99;
/// Sprout's application-level p95 may be at most this many times `direct`'s ...
pub const P95_FACTOR: f64 = 1.5;
/// ... plus this, ms.
pub const P95_SLACK_MS: f64 = 30.0;
/// At offered rates up to [`LOW_RATE_KBPS`], Sprout's application-level p95 must be at most
/// this, ms.
pub const LOW_RATE_P95_MS: f64 = 150.0;
/// The rate (kbit/s) up to which [`LOW_RATE_P95_MS`] applies.
pub const LOW_RATE_KBPS: f64 = 500.0;

/// One scheme's stream at one offered rate. Empty quantiles (`null` in JSON) are infinite:
/// they fall among the datagrams never delivered.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct InteractiveRow {
    /// Link pair name.
    pub link: String,
    /// Always "down".
    pub direction: String,
    /// "sprout", "sprout-ewma" or "direct".
    pub scheme: String,
    /// Offered rate asked for, kbit/s of payload.
    pub rate_kbps: f64,
    /// Rate the application created data at, kbit/s of payload.
    pub offered_kbps: f64,
    /// Rate the receiving application got data at, kbit/s of payload.
    pub delivered_kbps: f64,
    /// Delivered datagrams / offered datagrams, 0..1.
    pub share: f64,
    /// Median application-level delay (creation to delivery), ms.
    pub app_p50_ms: Option<f64>,
    /// 95th-percentile application-level delay, ms.
    pub app_p95_ms: Option<f64>,
    /// 99th-percentile application-level delay, ms.
    pub app_p99_ms: Option<f64>,
    /// Share of the offered datagrams delivered within 100 ms, 0..1.
    pub within_100ms: f64,
    /// Within 150 ms, 0..1.
    pub within_150ms: f64,
    /// Within 300 ms, 0..1.
    pub within_300ms: f64,
    /// Datagrams offered.
    pub offered: u64,
    /// Datagrams delivered.
    pub delivered: u64,
    /// Length of the run, s.
    pub duration_s: f64,
    /// The clock the delays were measured on.
    pub clock: String,
}

impl InteractiveRow {
    /// The row of `scheme`'s stream at `rate_kbps` on `link`, from the client's score `app`.
    pub fn new(
        link: &str,
        scheme: &str,
        rate_kbps: f64,
        duration_s: f64,
        app: &AppDelay,
    ) -> InteractiveRow {
        InteractiveRow {
            link: link.into(),
            direction: "down".into(),
            scheme: scheme.into(),
            rate_kbps,
            offered_kbps: app.app_offered_kbps,
            delivered_kbps: app.app_delivered_kbps,
            share: if app.app_offered > 0 {
                app.app_delivered as f64 / app.app_offered as f64
            } else {
                0.0
            },
            app_p50_ms: app.app_delay_p50_ms,
            app_p95_ms: app.app_delay_p95_ms,
            app_p99_ms: app.app_delay_p99_ms,
            within_100ms: app.app_within_100ms,
            within_150ms: app.app_within_150ms,
            within_300ms: app.app_within_300ms,
            offered: app.app_offered,
            delivered: app.app_delivered,
            duration_s,
            clock: app.app_clock.clone(),
        }
    }
}

/// One check of the issue's: `ok` is `None` where it does not apply (`direct` itself did not
/// deliver the stream).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct InteractiveCheck {
    /// Offered rate, kbit/s.
    pub rate_kbps: f64,
    /// What is checked, in words.
    pub what: String,
    /// The values compared, in words.
    pub detail: String,
    /// Whether it held; `None`: not applicable.
    pub ok: Option<bool>,
}

/// Everything the experiment produced.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct InteractiveResults {
    /// Where the traces came from.
    pub source: String,
    /// The link pair.
    pub link: String,
    /// Length of each run, s.
    pub duration_s: f64,
    /// One row per scheme and rate.
    pub rows: Vec<InteractiveRow>,
    /// The checks.
    pub checks: Vec<InteractiveCheck>,
    /// Wall-clock time, s.
    pub wall_s: f64,
}

impl InteractiveResults {
    /// The results of `rows`, with their checks.
    pub fn new(
        source: String,
        link: String,
        duration_s: f64,
        rows: Vec<InteractiveRow>,
        wall_s: f64,
    ) -> InteractiveResults {
        let checks = checks(&rows);
        InteractiveResults {
            source,
            link,
            duration_s,
            rows,
            checks,
            wall_s,
        }
    }
}

/// `a <= b` for delays where `None` is infinite.
fn at_most(a: Option<f64>, b: Option<f64>) -> bool {
    match (a, b) {
        (_, None) => true,
        (None, Some(_)) => false,
        (Some(a), Some(b)) => a <= b,
    }
}

/// The checks at each rate: where `direct` delivers at least 99% of what is offered,
/// Sprout does too, with an application-level p95 at most 1.5 times `direct`'s plus 30 ms; at
/// rates up to 500 kbit/s, Sprout's p95 is at most 150 ms.
pub fn checks(rows: &[InteractiveRow]) -> Vec<InteractiveCheck> {
    let mut rates: Vec<f64> = rows.iter().map(|r| r.rate_kbps).collect();
    rates.dedup();
    let mut out = Vec::new();
    for rate in rates {
        let find = |s: &str| rows.iter().find(|r| r.rate_kbps == rate && r.scheme == s);
        let (Some(sp), Some(d)) = (find("sprout"), find("direct")) else {
            continue;
        };
        let direct_delivers = d.share >= DELIVERED_SHARE;
        let na = |ok: bool| direct_delivers.then_some(ok);
        out.push(InteractiveCheck {
            rate_kbps: rate,
            what: format!(
                "Sprout delivers at least {:.0}% of what is offered (as direct does)",
                100.0 * DELIVERED_SHARE
            ),
            detail: format!(
                "sprout {:.1}%, direct {:.1}%",
                100.0 * sp.share,
                100.0 * d.share
            ),
            ok: na(sp.share >= DELIVERED_SHARE),
        });
        let bound = d.app_p95_ms.map(|p| P95_FACTOR * p + P95_SLACK_MS);
        out.push(InteractiveCheck {
            rate_kbps: rate,
            what: format!(
                "Sprout's app-level p95 at most {P95_FACTOR} x direct's + {P95_SLACK_MS:.0} ms"
            ),
            detail: format!(
                "sprout {} ms, bound {} ms (direct {} ms)",
                ms_text(sp.app_p95_ms),
                ms_text(bound),
                ms_text(d.app_p95_ms)
            ),
            ok: na(at_most(sp.app_p95_ms, bound)),
        });
        if rate <= LOW_RATE_KBPS {
            out.push(InteractiveCheck {
                rate_kbps: rate,
                what: format!("Sprout's app-level p95 at most {LOW_RATE_P95_MS:.0} ms"),
                detail: format!("sprout {} ms", ms_text(sp.app_p95_ms)),
                ok: Some(at_most(sp.app_p95_ms, Some(LOW_RATE_P95_MS))),
            });
        }
    }
    out
}

/// ✅, ❌, or – (not applicable).
fn mark(ok: Option<bool>) -> &'static str {
    match ok {
        Some(true) => "✅",
        Some(false) => "❌",
        None => "–",
    }
}

/// A check on one line.
fn check_line(c: &InteractiveCheck) -> String {
    let na = if c.ok.is_none() {
        " (not applicable: direct delivered under 99%)"
    } else {
        ""
    };
    format!(
        "{} {:.0} kbit/s: {} ({}){na}",
        mark(c.ok),
        c.rate_kbps,
        c.what,
        c.detail
    )
}

/// The rows as a Markdown table.
fn table(rows: &[InteractiveRow]) -> String {
    let mut s = String::from(
        "| scheme | offered kbit/s | delivered kbit/s | share | app p50 (ms) | app p95 (ms) | \
         app p99 (ms) | within 100 ms | within 150 ms | within 300 ms |\n\
         |---|---|---|---|---|---|---|---|---|---|\n",
    );
    for r in rows {
        let _ = writeln!(
            s,
            "| {} | {:.0} | {:.0} | {:.1}% | {} | {} | {} | {:.1}% | {:.1}% | {:.1}% |",
            r.scheme,
            r.offered_kbps,
            r.delivered_kbps,
            100.0 * r.share,
            ms_text(r.app_p50_ms),
            ms_text(r.app_p95_ms),
            ms_text(r.app_p99_ms),
            100.0 * r.within_100ms,
            100.0 * r.within_150ms,
            100.0 * r.within_300ms
        );
    }
    s
}

/// The experiment's setup, in words.
fn setup(res: &InteractiveResults) -> String {
    format!(
        "A constant-rate stream of 1000-byte datagrams down {}'s downlink through the link \
         emulator (20 ms each way, unlimited queue), {:.0} s per run: Sprout and Sprout-EWMA \
         as `sprout client --rate R --direction down` against `sprout server`, and `direct` as \
         `sprout interactive` (no congestion control; it streams the same rate up as well, on \
         the emulator's separate uplink). Application-level delay: from the datagram's \
         creation by the sending application (its stamp) to its delivery to the receiving one, \
         the sender's queue included, on {}; a datagram never delivered (still queued or on \
         its way 1 s after the run) counts as infinitely late (∞). Traces: {}.",
        res.link,
        res.duration_s,
        clocks(res),
        res.source
    )
}

/// The clocks the rows were measured on, e.g. "CLOCK_REALTIME (sprout, sprout-ewma) and
/// CLOCK_MONOTONIC (direct)".
fn clocks(res: &InteractiveResults) -> String {
    let mut by: Vec<(String, Vec<String>)> = Vec::new();
    for r in &res.rows {
        match by.iter_mut().find(|(c, _)| *c == r.clock) {
            Some((_, s)) if !s.contains(&r.scheme) => s.push(r.scheme.clone()),
            Some(_) => {}
            None => by.push((r.clock.clone(), vec![r.scheme.clone()])),
        }
    }
    let parts: Vec<String> = by
        .iter()
        .map(|(c, s)| format!("{c} ({})", s.join(", ")))
        .collect();
    format!(
        "{}, each read by both ends of a run on one machine",
        parts.join(" and ")
    )
}

/// The report.md section.
pub fn section(res: &InteractiveResults) -> String {
    let mut s = format!("{SECTION}\n\n{}\n\n", setup(res));
    let mut rates: Vec<f64> = res.rows.iter().map(|r| r.rate_kbps).collect();
    rates.dedup();
    for rate in rates {
        let rows: Vec<InteractiveRow> = res
            .rows
            .iter()
            .filter(|r| r.rate_kbps == rate)
            .cloned()
            .collect();
        let _ = writeln!(s, "### {rate:.0} kbit/s offered\n\n{}", table(&rows));
    }
    let _ = writeln!(s, "### Checks\n");
    for c in &res.checks {
        let _ = writeln!(s, "- {}", check_line(c));
    }
    let _ = writeln!(
        s,
        "\nFiles: `interactive-emulated.csv`, `interactive-emulated.json`; every peer's output \
         in `interactive/`. Wall time {:.0} s.",
        res.wall_s
    );
    s
}

/// Writes `interactive-emulated.csv` and `.json` (each whole, through a temporary file) and
/// merges the section into report.md.
pub fn write(out: &Path, res: &InteractiveResults) -> Result<(), LabError> {
    write_csv(&out.join("interactive-emulated.csv"), &res.rows)?;
    write_atomically(
        out.join("interactive-emulated.json"),
        serde_json::to_string_pretty(res)?,
    )?;
    let path = out.join("report.md");
    let old = fs::read_to_string(&path).unwrap_or_default();
    write_atomically(&path, merge_named_section(&old, SECTION, &section(res)))?;
    Ok(())
}

/// The table and checks for the terminal.
pub fn text(res: &InteractiveResults, out: &Path) -> String {
    let mut s = format!(
        "Interactive stream (emulated) on {} downlink, {:.0} s per run, in {:.0} s\n",
        res.link, res.duration_s, res.wall_s
    );
    s.push_str(&table(&res.rows));
    for c in &res.checks {
        let _ = writeln!(s, "{}", check_line(c));
    }
    let _ = writeln!(
        s,
        "wrote interactive-emulated.csv, interactive-emulated.json and the \"{}\" section of \
         report.md in {}, every peer's output in {}",
        SECTION.trim_start_matches("## "),
        out.display(),
        out.join("interactive").display()
    );
    s
}
