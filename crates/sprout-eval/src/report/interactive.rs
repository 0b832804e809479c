//! The `interactive` experiment's outputs: interactive.csv and .json, its chart
//! (interactive.svg), its table for the terminal and its section of report.md.

use std::fmt::Write as _;
use std::path::Path;

use sprout_sim::scheme::Scheme;

use super::format::thousands;
use crate::chart::{app_delay_chart, AppDelayPanel, AppDelaySeries};
use crate::error::Result;
use crate::experiment::Experiment;
use crate::interactive::{
    self, direct_cases, directions_phrase, ms, paper_app_points, InteractiveAverage,
    InteractiveResults, Source, ADAPTIVE_SCHEMES, FIXED_RATE_SCHEMES,
};
use crate::output_dir::{write_atomically, write_csv};

/// The chart's file name.
const CHART: &str = "interactive.svg";

/// Writes interactive.csv, interactive.json and interactive.svg into `out`, and notes the
/// chart in `charts`.
pub(super) fn write_interactive(
    out: &Path,
    res: &InteractiveResults,
    charts: &mut Vec<(Experiment, String)>,
) -> Result<()> {
    write_csv(&out.join("interactive.csv"), &res.rows)?;
    write_atomically(
        out.join("interactive.json"),
        serde_json::to_string_pretty(res)?,
    )?;
    let panels: Vec<AppDelayPanel> = Source::FIXED
        .iter()
        .map(|&source| AppDelayPanel {
            title: source_title(source).into(),
            series: FIXED_RATE_SCHEMES
                .iter()
                .map(|s| AppDelaySeries {
                    label: s.key().into(),
                    points: res
                        .averages
                        .iter()
                        .filter(|a| a.source == source.key() && a.scheme == s.key())
                        .filter_map(|a| a.rate_kbps.map(|r| (r, a.app_p95_median_ms)))
                        .collect(),
                })
                .filter(|s| !s.points.is_empty())
                .collect(),
        })
        .collect();
    let n = res.directions().len();
    write_atomically(
        out.join(CHART),
        app_delay_chart(
            &format!(
                "Application-level p95 delay against offered rate, median of {}",
                directions_phrase(n).trim_start_matches("the ")
            ),
            &panels,
            &[
                "Each point: the median over the link directions of a run's p95 (a message \
                 handed over to its last byte delivered, sender's queue included).",
                "\"never\": half the directions or more left over 5% of the messages undelivered.",
            ],
        ),
    )?;
    charts.push((Experiment::Interactive, CHART.into()));
    Ok(())
}

/// A source as a panel's and table's title.
fn source_title(source: Source) -> &'static str {
    match source {
        Source::Constant => "constant-rate stream (1,200-byte datagrams)",
        Source::Video => "video (30 frames/s, a 5x key frame every 3 s)",
        Source::Adaptive => "adaptive video (30 frames/s)",
    }
}

/// A share as a percentage with one decimal ("99.5%"), or "–".
fn pct1(v: f64) -> String {
    if v.is_finite() {
        format!("{:.1}%", 100.0 * v)
    } else {
        "–".into()
    }
}

/// A delay for a table cell: whole milliseconds with separators, or "never".
fn cell_ms(v: f64) -> String {
    if v.is_infinite() {
        "never".into()
    } else if v.is_nan() {
        "–".into()
    } else {
        thousands(v)
    }
}

/// The terminal's table: for each fixed-rate source and offered rate, each scheme's median
/// p95 (ms) and mean delivered share; then adaptive video's means, with the paper's
/// video-call points.
pub(super) fn terminal_table(res: &InteractiveResults) -> String {
    let mut s = String::new();
    let n = res.directions().len();
    let _ = writeln!(
        s,
        "interactive: application-level p95 delay (ms, median of {}) and share delivered (mean)",
        directions_phrase(n).trim_start_matches("the ")
    );
    let _ = write!(s, "{:<9} {:>6}", "source", "kbit/s");
    for sc in FIXED_RATE_SCHEMES {
        let _ = write!(s, " {:>14}", sc.key());
    }
    let _ = writeln!(s);
    for source in Source::FIXED {
        for &rate in &res.rates_kbps {
            let _ = write!(s, "{:<9} {:>6}", source.key(), thousands(rate));
            for sc in FIXED_RATE_SCHEMES {
                let cell =
                    res.average(source, Some(rate), sc.key())
                        .map_or("–".to_string(), |a| {
                            format!(
                                "{} {}",
                                cell_ms(a.app_p95_median_ms),
                                pct1(a.delivered_share)
                            )
                        });
                let _ = write!(s, " {cell:>14}");
            }
            let _ = writeln!(s);
        }
    }
    let adaptive: Vec<&InteractiveAverage> = ADAPTIVE_SCHEMES
        .iter()
        .filter_map(|sc| res.average(Source::Adaptive, None, sc.key()))
        .collect();
    if !adaptive.is_empty() {
        let _ = writeln!(
            s,
            "adaptive video (means of {}): {}",
            directions_phrase(n).trim_start_matches("the "),
            adaptive
                .iter()
                .map(|a| format!(
                    "{} {} kbit/s p95 {}",
                    a.scheme,
                    thousands(a.delivered_kbps),
                    ms(a.app_p95_mean_ms)
                ))
                .collect::<Vec<_>>()
                .join("; ")
        );
        let _ = writeln!(
            s,
            "  paper (its 8-link averages, self-inflicted delay of a saturating run): {}",
            paper_app_points()
                .iter()
                .map(|(name, kbps, delay)| format!(
                    "{name} {} kbit/s {}",
                    thousands(*kbps),
                    ms(*delay)
                ))
                .collect::<Vec<_>>()
                .join("; ")
        );
    }
    s
}

/// report.md's section of the experiment: what it runs and measures, why `direct` is the
/// floor, the table, adaptive video beside the paper's video calls, the failing cases and the
/// chart.
pub(super) fn section(s: &mut String, res: &InteractiveResults, skip_s: f64) {
    let n = res.directions().len();
    let _ = writeln!(s, "## Interactive applications (interactive)\n");
    let cap = res
        .duration_cap_s
        .map_or("the whole of the shorter trace".to_string(), |d| {
            format!("at most the first {d:.0} s of the traces (shorter traces whole)")
        });
    let _ = writeln!(
        s,
        "An interactive application sends at its own rate, below what the link carries most of \
         the time. Each of {} here is loaded alone (the other carries only \
         acknowledgements and feedback) by a constant-rate stream of 1,200-byte datagrams or a \
         video-like source (30 frames/s, a key frame five times an average frame every 3 s) at \
         {} kbit/s, carried by {}; and by adaptive video (30 frames/s, each frame sized by what \
         the transport allows at capture time, a frame skipped while the previous one still \
         waits) over {}. Each run simulates {cap}, the first {skip_s:.0} s skipped. Per-run \
         rows are in `interactive.csv` (and `interactive.json`, with the averages).\n",
        directions_phrase(n),
        res.rates_kbps
            .iter()
            .map(|r| thousands(*r))
            .collect::<Vec<_>>()
            .join(", "),
        FIXED_RATE_SCHEMES.map(|s| s.key()).join(", "),
        ADAPTIVE_SCHEMES.map(|s| s.key()).join(", "),
    );
    let _ = writeln!(
        s,
        "**The metric.** Application-level delay is, for every message (a datagram of the \
         constant stream, a whole frame of video), the time from the application handing it to \
         the transport until its last byte is delivered to the receiving application: the wait \
         in the sender's queue plus the network. A message never delivered counts as infinitely \
         late, so a p95 is `never` once more than 5% of the messages are lost or still waiting \
         at the end. The paper's delay (the `network_p95_data_ms` column) sees only packets in \
         the network, so a sender that holds its data back looks fast by it.\n"
    );
    let _ = writeln!(
        s,
        "**Why `direct` is the floor.** `direct` hands each datagram to the link the moment the \
         application makes it, with no congestion control. For a source whose rate is fixed, \
         every datagram then enters the link's queue as early as it possibly can; a transport \
         can only hold it back (in its own queue) or add its own packets, never make it arrive \
         sooner. So `direct`'s application-level delay is the lowest any transport can give \
         that stream on that link, and the checks hold Sprout to it: at offered rates up to \
         half a direction's mean capacity, Sprout must deliver 99% of what is offered wherever \
         `direct` does, within 1.5 times `direct`'s p95 plus 30 ms. (`direct` is no floor for \
         adaptive video, which it cannot carry: it has no window to size frames by.)\n"
    );
    fixed_rate_table(s, res, n);
    adaptive_table(s, res, n);
    failing_cases(s, res);
    let _ = writeln!(s, "![{CHART}]({CHART})\n");
}

/// The markdown table of the fixed-rate sources: a row per source and rate, a column per
/// scheme (median p95 and mean share delivered).
fn fixed_rate_table(s: &mut String, res: &InteractiveResults, n: usize) {
    let _ = writeln!(
        s,
        "Application-level p95 delay, the median of {} (the chart's points), and in brackets \
         the mean share of what was offered that was delivered:\n",
        directions_phrase(n)
    );
    let _ = write!(s, "| source | offered kbit/s |");
    for sc in FIXED_RATE_SCHEMES {
        let _ = write!(s, " {} |", sc.key());
    }
    let _ = writeln!(s);
    let _ = writeln!(s, "|---|---|{}", "---|".repeat(FIXED_RATE_SCHEMES.len()));
    for source in Source::FIXED {
        for &rate in &res.rates_kbps {
            let _ = write!(s, "| {} | {} |", source.key(), thousands(rate));
            for sc in FIXED_RATE_SCHEMES {
                let cell = res
                    .average(source, Some(rate), sc.key())
                    .map_or("–".to_string(), |a| {
                        format!("{} ({})", ms(a.app_p95_median_ms), pct1(a.delivered_share))
                    });
                let _ = write!(s, " {cell} |");
            }
            let _ = writeln!(s);
        }
    }
    let _ = writeln!(s);
}

/// Adaptive video's means per scheme, with the paper's video-call applications beside them.
fn adaptive_table(s: &mut String, res: &InteractiveResults, n: usize) {
    let rows: Vec<&InteractiveAverage> = ADAPTIVE_SCHEMES
        .iter()
        .filter_map(|sc| res.average(Source::Adaptive, None, sc.key()))
        .collect();
    if rows.is_empty() {
        return;
    }
    let _ = writeln!(
        s,
        "Adaptive video, means of {} (frame-level delay), and the paper's \
         video-call applications (its introduction's table: averages over its 8 link \
         directions; throughput from its mean Sprout throughput of Figure 7 over the speedup it \
         reports, delay the 95th-percentile self-inflicted delay of the network's queue, not an \
         application-level delay):\n",
        directions_phrase(n)
    );
    let _ = writeln!(
        s,
        "| scheme | delivered kbit/s | frame p95 (mean) | frame p95 (median) | within 150 ms |"
    );
    let _ = writeln!(s, "|---|---|---|---|---|");
    for a in rows {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} |",
            a.scheme,
            thousands(a.delivered_kbps),
            ms(a.app_p95_mean_ms),
            ms(a.app_p95_median_ms),
            pct1(a.within_150ms)
        );
    }
    for (name, kbps, delay) in paper_app_points() {
        let _ = writeln!(
            s,
            "| {name} (paper) | {} | {} (self-inflicted) | – | – |",
            thousands(kbps),
            ms(delay)
        );
    }
    let _ = writeln!(s);
}

/// The cases of the check against `direct` that fail, each with its numbers.
fn failing_cases(s: &mut String, res: &InteractiveResults) {
    if !res.rows.iter().any(|r| r.scheme == Scheme::Direct.key()) {
        return;
    }
    for source in Source::FIXED {
        let cases = direct_cases(&res.rows, source);
        let failing: Vec<String> = cases
            .iter()
            .filter(|c| !c.holds())
            .map(|c| c.describe())
            .collect();
        let _ = writeln!(
            s,
            "Cases of the {} source against `direct` (offered rates up to half the direction's \
             mean capacity): {} of {} hold{}",
            source.key(),
            cases.len() - failing.len(),
            cases.len(),
            if failing.is_empty() {
                ".\n".to_string()
            } else {
                "; failing:\n".to_string()
            }
        );
        for f in &failing {
            let _ = writeln!(s, "- {f}");
        }
        if !failing.is_empty() {
            let _ = writeln!(s);
        }
    }
}

/// The experiment's checks ([`interactive::checks`]).
pub(super) fn checks(res: &InteractiveResults) -> Vec<super::Check> {
    interactive::checks(res)
}
