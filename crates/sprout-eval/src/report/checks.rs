//! The paper's findings checked on our numbers: for report.md and the terminal.

use super::format::pct;
use crate::experiment::{Experiment, LOSSES};
use crate::paper;
use crate::results::{EvalResults, ResultRow};

/// Schemes whose congestion signal is delay alone (for the "highest throughput of the
/// delay-based schemes" finding). Compound TCP and BBR are hybrids and not counted.
pub const DELAY_BASED: [&str; 4] = ["sprout", "sprout-ewma", "vegas", "ledbat"];

/// One of the paper's findings checked on our numbers.
#[derive(Clone, Debug, PartialEq)]
pub struct Check {
    /// A few words naming the check, for the line that lists the skipped ones.
    pub topic: &'static str,
    /// The finding with our numbers.
    pub text: String,
    /// Whether our numbers agree (meaningless when the check does not apply).
    pub ok: bool,
    /// Why the check does not apply to this run's links, if it does not: it compares with the
    /// paper's numbers for links this run did not use.
    pub not_applicable: Option<String>,
}

impl Check {
    /// The check as one line: ✅ or ❌ and the finding, or ➖ with why it does not apply.
    pub fn line(&self) -> String {
        match &self.not_applicable {
            Some(why) => format!("➖ Not applicable ({why}): {}", self.text),
            None => format!("{} {}", if self.ok { "✅" } else { "❌" }, self.text),
        }
    }
}

/// Why the checks of averages over the paper's eight link directions do not apply to this
/// run's fig7 links, or `None` when those are exactly the paper's four link pairs.
fn not_the_paper_links(fig7: &[&ResultRow]) -> Option<String> {
    let mut links: Vec<&str> = fig7.iter().map(|r| r.link.as_str()).collect();
    links.sort();
    links.dedup();
    let paper: Vec<&str> = paper::TRACE_LINKS.iter().map(|(t, _)| *t).collect();
    let have = paper.iter().filter(|p| links.contains(p)).count();
    if have == paper.len() && links.len() == paper.len() {
        return None;
    }
    let what = if have == 0 {
        format!("this run's links: {}", links.join(", "))
    } else {
        format!(
            "this run has {have} of its {} link pairs{}",
            paper.len(),
            if links.len() > have {
                " and others"
            } else {
                ""
            }
        )
    };
    Some(format!(
        "the paper's averages are over its eight link directions; {what}"
    ))
}

/// Why a check of the paper's results on one link (`paper_link`, our trace name) does not
/// apply to `rows`, run on another; `None` when it does.
fn not_the_link(rows: &[&ResultRow], paper_link: &str, what: &str) -> Option<String> {
    let ran = rows.first().map(|r| r.link.as_str()).unwrap_or("");
    (ran != paper_link)
        .then(|| format!("the paper's {what} is on {paper_link}; this run's on {ran}"))
}

/// The checks made so far.
struct Found(Vec<Check>);

impl Found {
    /// Adds a check: its topic, whether our numbers agree, the finding with them, and why it
    /// does not apply, if it does not.
    fn add(&mut self, topic: &'static str, ok: bool, text: String, na: &Option<String>) {
        self.0.push(Check {
            topic,
            text,
            ok,
            not_applicable: na.clone(),
        })
    }
}

/// The paper's findings, checked on our numbers. Checks that compare with the paper's numbers
/// for its links say so, and do not apply (`not_applicable`), when this run used other links:
/// then only the checks that hold on any link count (Sprout is below Sprout-EWMA on each link).
pub fn checks(res: &EvalResults) -> Vec<Check> {
    let mut out = Found(Vec::new());
    let fig7: Vec<&ResultRow> = res.rows_of(Experiment::Fig7).collect();
    let averages_na = not_the_paper_links(&fig7);
    sprout_against_ewma(res, &fig7, &averages_na, &mut out);
    sprout_against_others(res, &averages_na, &mut out);
    codel_and_delay_based(res, &averages_na, &mut out);
    confidence_sweep(res, &mut out);
    loss_kept(res, &mut out);
    if let Some(interactive) = &res.interactive {
        out.0.extend(super::interactive::checks(interactive));
    }
    out.0
}

/// Sprout against Sprout-EWMA: on every link, and Sprout's averages (`averages_na`: why the
/// checks of averages do not apply, if they do not).
fn sprout_against_ewma(
    res: &EvalResults,
    fig7: &[&ResultRow],
    averages_na: &Option<String>,
    out: &mut Found,
) {
    if let (Some(sp), Some(ew)) = (res.average("sprout"), res.average("sprout-ewma")) {
        let mut per_link_delay = true;
        let mut per_link_tput = true;
        for r in fig7.iter().filter(|r| r.scheme == "sprout") {
            if let Some(e) = fig7.iter().find(|e| {
                e.scheme == "sprout-ewma" && e.link == r.link && e.direction == r.direction
            }) {
                per_link_delay &= r.self_inflicted_ms < e.self_inflicted_ms;
                per_link_tput &= r.throughput_kbps < e.throughput_kbps;
            }
        }
        // Sprout's forecast is a cautious quantile and Sprout-EWMA's the mean of the same
        // observations: these two hold on any link.
        out.add(
            "Sprout's delay below Sprout-EWMA's on every link",
            per_link_delay,
            "On every link Sprout's self-inflicted delay is below Sprout-EWMA's.".into(),
            &None,
        );
        out.add(
            "Sprout's throughput below Sprout-EWMA's on every link",
            per_link_tput,
            "On every link Sprout's throughput is below Sprout-EWMA's.".into(),
            &None,
        );
        let u = sp.utilization;
        out.add(
            "Sprout's average utilization",
            (0.30..=0.60).contains(&u),
            format!(
                "Sprout's average utilization {:.1}% is between 30% and 60% (paper 42.1%).",
                100.0 * u
            ),
            averages_na,
        );
        out.add(
            "Sprout's average delay",
            sp.self_inflicted_ms <= 400.0,
            format!(
                "Sprout's average self-inflicted delay {:.0} ms is at most 400 ms (paper 317 ms).",
                sp.self_inflicted_ms
            ),
            averages_na,
        );
        let ratio = ew.utilization / sp.utilization.max(1e-9);
        out.add(
            "Sprout-EWMA's utilization against Sprout's",
            ratio >= 1.5,
            format!(
                "Sprout-EWMA's utilization is {ratio:.2} times Sprout's, at least 1.5 (paper 1.9)."
            ),
            averages_na,
        );
    }
}

/// Sprout's average delay against every other scheme's, and Cubic's. The paper's claim is
/// against other protocols: Sprout on the wide rate model (`sprout-wide`) is Sprout, not a rival.
fn sprout_against_others(res: &EvalResults, averages_na: &Option<String>, out: &mut Found) {
    if let Some(sp) = res.average("sprout") {
        let others: Vec<_> = res
            .averages
            .iter()
            .filter(|a| !["sprout", "sprout-wide", "omniscient"].contains(&a.scheme.as_str()))
            .collect();
        if !others.is_empty() {
            let lowest = others
                .iter()
                .all(|a| sp.self_inflicted_ms < a.self_inflicted_ms);
            let next = others
                .iter()
                .min_by(|a, b| a.self_inflicted_ms.total_cmp(&b.self_inflicted_ms))
                .map(|a| format!("{} {:.0} ms", a.scheme, a.self_inflicted_ms))
                .unwrap_or_default();
            out.add(
                "Sprout's delay the lowest",
                lowest,
                format!(
                    "Sprout has the lowest average self-inflicted delay of all schemes ({:.0} ms; next: {next}).",
                    sp.self_inflicted_ms
                ),
                averages_na,
            );
        }
        if let Some(c) = res.average("cubic") {
            let r = c.self_inflicted_ms / sp.self_inflicted_ms.max(1e-9);
            out.add(
                "Cubic's delay against Sprout's",
                r >= 10.0,
                format!(
                    "Cubic's average self-inflicted delay is {r:.1} times Sprout's, at least 10 (paper 79)."
                ),
                averages_na,
            );
        }
    }
}

/// CoDel's cut of Cubic's delay, and Sprout-EWMA's throughput among the delay-based schemes.
fn codel_and_delay_based(res: &EvalResults, averages_na: &Option<String>, out: &mut Found) {
    if let (Some(c), Some(cc)) = (res.average("cubic"), res.average("cubic-codel")) {
        let r = c.self_inflicted_ms / cc.self_inflicted_ms.max(1e-9);
        out.add(
            "CoDel's cut of Cubic's delay",
            r >= 10.0,
            format!(
                "CoDel cuts Cubic's average self-inflicted delay {r:.1}-fold, at least 10 (paper 50)."
            ),
            averages_na,
        );
    }
    if let Some(ew) = res.average("sprout-ewma") {
        let others: Vec<_> = res
            .averages
            .iter()
            .filter(|a| DELAY_BASED.contains(&a.scheme.as_str()) && a.scheme != "sprout-ewma")
            .collect();
        if others.len() >= 2 {
            let best = others
                .iter()
                .all(|a| ew.throughput_kbps > a.throughput_kbps);
            out.add(
                "Sprout-EWMA's throughput among the delay-based schemes",
                best,
                format!(
                    "Sprout-EWMA has the highest average throughput of the delay-based schemes ({:.0} kbit/s against {}).",
                    ew.throughput_kbps,
                    others
                        .iter()
                        .map(|a| format!("{} {:.0}", a.scheme, a.throughput_kbps))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                averages_na,
            );
        }
    }
}

/// The confidence sweep: lowering the confidence raises delay, and throughput.
fn confidence_sweep(res: &EvalResults, out: &mut Found) {
    let sweep: Vec<&ResultRow> = res
        .rows_of(Experiment::Confidence)
        .filter(|r| r.scheme == "sprout" && r.direction == "up")
        .collect();
    if sweep.len() >= 2 {
        // With rising confidence, throughput and delay fall.
        let mut by_conf = sweep.clone();
        by_conf.sort_by(|a, b| {
            a.confidence
                .partial_cmp(&b.confidence)
                .unwrap_or(std::cmp::Ordering::Equal)
        });
        // Near 0% confidence the sender fills the link, so throughput can only level off
        // there: a step that gives up less than 1% of it still counts as not falling.
        let tput = by_conf
            .windows(2)
            .all(|w| w[0].throughput_kbps >= 0.99 * w[1].throughput_kbps);
        let delay = by_conf
            .windows(2)
            .all(|w| w[0].self_inflicted_ms >= w[1].self_inflicted_ms);
        out.add(
            "the confidence sweep",
            tput && delay,
            format!(
                "Lowering the confidence raises delay, and throughput until the link is full (no step gives up 1% of it) (uplink, {} points: {}).",
                by_conf.len(),
                by_conf
                    .iter()
                    .map(|r| format!(
                        "{} {:.0} kbit/s {:.0} ms",
                        pct(r.confidence.unwrap_or(0.0)),
                        r.throughput_kbps,
                        r.self_inflicted_ms
                    ))
                    .collect::<Vec<_>>()
                    .join("; ")
            ),
            &not_the_link(&sweep, crate::experiment::CONFIDENCE_LINK, "confidence sweep"),
        );
    }
}

/// The share of its throughput Sprout keeps under loss.
fn loss_kept(res: &EvalResults, out: &mut Found) {
    let loss: Vec<&ResultRow> = res.rows_of(Experiment::Loss).collect();
    let mut kept = Vec::new();
    for dir in ["down", "up"] {
        let at = |l: f64| {
            loss.iter()
                .find(|r| r.direction == dir && (r.loss - l).abs() < 1e-9)
                .map(|r| r.throughput_kbps)
        };
        if let (Some(base), Some(lossy)) = (at(LOSSES[0]), at(LOSSES[2])) {
            kept.push((dir, lossy / base.max(1e-9)));
        }
    }
    if !kept.is_empty() {
        let mean = kept.iter().map(|(_, k)| k).sum::<f64>() / kept.len() as f64;
        out.add(
            "the throughput kept under loss",
            mean >= 0.4,
            format!(
                "At 10% loss each way Sprout keeps {:.0}% of its loss-free throughput on average, at least 40% ({}; paper 58% down, 31% up, 45% on average).",
                100.0 * mean,
                kept.iter()
                    .map(|(d, k)| format!("{d} {:.0}%", 100.0 * k))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            &not_the_link(&loss, crate::experiment::LOSS_LINK, "loss table"),
        );
    }
}

/// The terminal's lines for `checks`: each that applies, then one line per reason naming the
/// checks that do not (report.md has them in full, with this run's numbers).
pub fn check_lines(checks: &[Check]) -> Vec<String> {
    let mut lines: Vec<String> = checks
        .iter()
        .filter(|c| c.not_applicable.is_none())
        .map(Check::line)
        .collect();
    let mut reasons: Vec<&String> = Vec::new();
    for c in checks {
        if let Some(why) = &c.not_applicable {
            if !reasons.contains(&why) {
                reasons.push(why);
            }
        }
    }
    for why in reasons {
        let topics: Vec<&str> = checks
            .iter()
            .filter(|c| c.not_applicable.as_ref() == Some(why))
            .map(|c| c.topic)
            .collect();
        lines.push(format!(
            "➖ Not applicable ({why}), {} skipped: {}; report.md lists {} with this run's numbers.",
            if topics.len() == 1 {
                "1 check".to_string()
            } else {
                format!("{} checks", topics.len())
            },
            topics.join(", "),
            if topics.len() == 1 { "it" } else { "them" },
        ));
    }
    lines
}
