//! The `frontier` experiment's outputs: frontier.csv (a row per model, point and link
//! direction), frontier.json, frontier.svg, its section of report.md (appended after the rest)
//! and its verdicts for the terminal.

use std::fmt::Write as _;
use std::path::Path;

use crate::chart::{frontier_chart, FrontierPanel, FrontierSeries};
use crate::error::Result;
use crate::frontier::{model, FrontierAverage, FrontierResults, Verdict, ALL, FIGURE9_LINK};
use crate::output_dir::{write_atomically, write_csv};

/// Writes frontier.csv, frontier.json and frontier.svg into `out` and appends the
/// experiment's section to `out`/report.md.
pub fn write_frontier(out: &Path, res: &FrontierResults) -> Result<()> {
    write_csv(&out.join("frontier.csv"), &res.rows)?;
    write_atomically(
        out.join("frontier.json"),
        serde_json::to_string_pretty(res)?,
    )?;
    write_atomically(out.join("frontier.svg"), chart(res))?;
    super::append_section(out, &section(res))
}

/// A group's name for people: "the N link directions" or "LINK (both directions)".
fn group_name(res: &FrontierResults, group: &str) -> String {
    if group == ALL {
        format!("the {} link directions (average)", 2 * res.links.len())
    } else if let Some((set, pairs)) = res.sets.iter().find(|s| s.0 == group) {
        let what = if set.as_str() == crate::frontier::SYNTHETIC {
            "the synthetic links".to_string()
        } else {
            format!("the links scaled {set}")
        };
        format!("{what} ({} directions, average)", 2 * pairs.len())
    } else {
        format!("{group} (both directions, average)")
    }
}

/// A group's name on its panel, short (a panel may be a third of the chart's width): "8
/// directions", the link's name without "-driving", "scaled x4", "synthetic".
fn panel_name(res: &FrontierResults, group: &str) -> String {
    if group == ALL {
        format!("{} directions", 2 * res.links.len())
    } else if group == crate::frontier::SYNTHETIC {
        group.to_string()
    } else if res.sets.iter().any(|s| s.0 == group) {
        format!("scaled {group}")
    } else {
        group.trim_end_matches("-driving").to_string()
    }
}

/// The chart's caption lines on its panels: the link directions each averages (what
/// [`group_name`] says in the report), the `x1` links' panels on the first line, the further
/// sets' on the second (empty if there are none).
fn panels_caption(res: &FrontierResults) -> (String, String) {
    let links = res.links.len();
    let (mut own, mut further) = (Vec::new(), Vec::new());
    for g in res.verdict_groups() {
        let panel = panel_name(res, &g);
        match res.sets.iter().find(|s| s.0 == g).map(|s| s.1.len()) {
            _ if g == ALL => own.push(format!("{panel}, the {links} links' {}", 2 * links)),
            None => own.push(format!("{panel}, {g}'s 2")),
            Some(n) if g == crate::frontier::SYNTHETIC => {
                further.push(format!("{panel}, the {n} synthetic links' {}", 2 * n))
            }
            Some(n) => further.push(format!(
                "{panel}, the {n} links' {} at {} times their rates",
                2 * n,
                g.trim_start_matches('x')
            )),
        }
    }
    (
        format!(
            "Each panel an average over link directions: {}",
            own.join("; ")
        ),
        further.join("; "),
    )
}

/// The chart: a panel per verdict group, a line per model.
fn chart(res: &FrontierResults) -> String {
    let panels: Vec<FrontierPanel> = res
        .verdict_groups()
        .iter()
        .map(|g| FrontierPanel {
            title: panel_name(res, g),
            series: res
                .settings
                .models
                .iter()
                .map(|m| FrontierSeries {
                    label: m.clone(),
                    points: res
                        .curve(g, m)
                        .iter()
                        .map(|p| (p.value, p.utilization, p.delay_ms))
                        .collect(),
                })
                .collect(),
        })
        .collect();
    let mut runs = format!(
        "Both directions loaded, 20 ms each way, the first {:.0} s skipped; the links' whole \
         traces",
        res.settings.skip_us as f64 / 1e6,
    );
    if !res.sets.is_empty() {
        let _ = write!(
            runs,
            ", the scaled and synthetic links' first {:.0} s at fewer points",
            res.settings.extra_duration_us as f64 / 1e6
        );
    }
    let knobs = format!(
        "Bayesian models at confidences {}; Sprout-EWMA at gains {}",
        list(&res.settings.confidences),
        list(&res.settings.gains)
    );
    let (own, further) = panels_caption(res);
    let mut caption = vec![runs.as_str(), knobs.as_str(), own.as_str()];
    if !further.is_empty() {
        caption.push(&further);
    }
    frontier_chart(
        "Sprout's models against Sprout-EWMA: utilization and self-inflicted delay",
        &panels,
        &caption,
    )
}

/// Values as `0.5, 0.7, ...`.
fn list(v: &[f64]) -> String {
    v.iter()
        .map(|x| format!("{x}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A point as `80.3% / 554 ms`.
fn figure(u: f64, d: f64) -> String {
    format!("{:.1}% / {:.0} ms", 100.0 * u, d)
}

/// The verdict in one sentence.
fn verdict_line(res: &FrontierResults, v: &Verdict) -> String {
    let curve = res.curve(&v.group, &v.model);
    let ewma = ewma_name(res);
    let point = |name: &str, value: f64| {
        res.averages
            .iter()
            .find(|a| a.group == v.group && a.model == name && a.value == value)
            .map_or("-".into(), |a: &FrontierAverage| {
                figure(a.utilization, a.self_inflicted_ms)
            })
    };
    let mut s = format!("{} on {}: ", v.model, group_name(res, &v.group));
    if !v.dominating.is_empty() {
        // The Sprout-EWMA points dominated; the example: the default gain's if it is one, else
        // the one of most utilization, against the model's point of least delay that
        // dominates it.
        let mut gains: Vec<f64> = v.dominating.iter().map(|d| d.1).collect();
        gains.sort_by(f64::total_cmp);
        gains.dedup();
        let util = |name: &str, value: f64| {
            res.averages
                .iter()
                .find(|a| a.group == v.group && a.model == name && a.value == value)
                .map_or((f64::NAN, f64::NAN), |a| {
                    (a.utilization, a.self_inflicted_ms)
                })
        };
        let default_gain = sprout_core::params::DEFAULT_EWMA_GAIN;
        let g = if gains.contains(&default_gain) {
            default_gain
        } else {
            gains
                .iter()
                .copied()
                .max_by(|a, b| util(&ewma, *a).0.total_cmp(&util(&ewma, *b).0))
                .unwrap_or(f64::NAN)
        };
        let c = v
            .dominating
            .iter()
            .filter(|d| d.1 == g)
            .map(|d| d.0)
            .min_by(|a, b| util(&v.model, *a).1.total_cmp(&util(&v.model, *b).1))
            .unwrap_or(f64::NAN);
        let rest: Vec<String> = res
            .curve(&v.group, &ewma)
            .iter()
            .map(|p| p.value)
            .filter(|x| !gains.contains(x))
            .map(|x| format!("{x}"))
            .collect();
        let _ = write!(
            s,
            "DOMINATES {ewma} at gain{} {} ({} pair{}), e.g. at confidence {c} {} against \
             gain {g} {}",
            if gains.len() == 1 { "" } else { "s" },
            list(&gains),
            v.dominating.len(),
            if v.dominating.len() == 1 { "" } else { "s" },
            point(&v.model, c),
            point(&ewma, g),
        );
        if !rest.is_empty() {
            let _ = write!(s, "; not at gain {}", rest.join(", "));
        }
    } else {
        let _ = write!(s, "no point dominates a {ewma} point");
        match &v.best_gap {
            Some(gap) => {
                let _ = write!(
                    s,
                    "; best gap: at {ewma}'s gain {} ({}) its curve reaches {:.1}%, {:.1} \
                     points {}",
                    gap.at.value,
                    figure(gap.at.utilization, gap.at.delay_ms),
                    100.0 * gap.utilization,
                    100.0 * gap.short.abs(),
                    if gap.short > 0.0 { "short" } else { "more" }
                );
            }
            None => {
                let least = curve
                    .iter()
                    .map(|p| p.delay_ms)
                    .fold(f64::INFINITY, f64::min);
                let _ = write!(
                    s,
                    "; its curve does not come down to any {ewma} point's delay (its least: \
                     {least:.0} ms)"
                );
            }
        }
    }
    s
}

/// The Sprout-EWMA model's name in this run.
fn ewma_name(res: &FrontierResults) -> String {
    res.settings
        .models
        .iter()
        .find(|m| model(m).is_some_and(|m| !m.scheme.uses_confidence()))
        .cloned()
        .unwrap_or_default()
}

/// The table for the terminal: each verdict on a line.
pub fn frontier_terminal_table(res: &FrontierResults) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "frontier: each model's best against {} ({} simulations in {:.1} s)",
        ewma_name(res),
        res.simulations,
        res.wall_s
    );
    for v in &res.verdicts {
        let _ = writeln!(s, "  {}", verdict_line(res, v));
    }
    s
}

/// The gaps at every Sprout-EWMA point: a row per verdict, a column per gain, each cell the
/// points of utilization the model's curve is short (negative: more) at that point's delay.
fn gap_table(s: &mut String, res: &FrontierResults) {
    let ewma = ewma_name(res);
    let gains = &res.settings.gains;
    let _ = write!(
        s,
        "\nThe gap at each {ewma} point (points of utilization short at its delay; negative: \
         the curve carries more; -: the curve does not come down to that delay):\n\n| model \
         | links |"
    );
    for g in gains {
        let _ = write!(s, " gain {g} |");
    }
    let _ = writeln!(s, "\n|---|---|{}", "---|".repeat(gains.len()));
    for v in &res.verdicts {
        let _ = write!(s, "| {} | {} |", v.model, v.group);
        for g in gains {
            let cell = v
                .gaps
                .iter()
                .find(|x| x.at.value == *g)
                .map_or("-".into(), |x| format!("{:+.1}", 100.0 * x.short));
            let _ = write!(s, " {cell} |");
        }
        let _ = writeln!(s);
    }
}

/// report.md's section.
fn section(res: &FrontierResults) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "## The paper's open question: Sprout against Sprout-EWMA on both metrics (`frontier`)\n"
    );
    let _ = writeln!(
        s,
        "Section 5.5 of the paper: along its confidence sweep Sprout beats Sprout-EWMA on \
         throughput or on delay, never on both; whether a stochastic model can was left open. \
         Here every model runs on the links of {} ({}), both directions loaded at once, 20 ms \
         each way, each trace pair replayed whole and measured from {:.0} s: the Bayesian \
         models at confidences {}, Sprout-EWMA at gains {} (per 20 ms tick), so that both \
         sides get their best curve. {} simulations in {:.1} s of wall time. Every direction \
         is in `frontier.csv`.\n",
        res.links.join(", "),
        res.source,
        res.settings.skip_us as f64 / 1e6,
        list(&res.settings.confidences),
        list(&res.settings.gains),
        res.simulations,
        res.wall_s
    );
    if !res.sets.is_empty() {
        let _ = writeln!(
            s,
            "The same on links the models were not tuned on, each set averaged on its own: {}. \
             Each of these runs {:.0} s (measured from {:.0} s), the Bayesian models at \
             confidences {}, Sprout-EWMA at gains {}, so that the experiment keeps within two \
             minutes.\n",
            res.sets
                .iter()
                .map(|(set, pairs)| format!("`{set}` ({})", pairs.join(", ")))
                .collect::<Vec<_>>()
                .join("; "),
            res.settings.extra_duration_us as f64 / 1e6,
            res.settings.skip_us as f64 / 1e6,
            list(&res.settings.extra_confidences),
            list(&res.settings.extra_gains),
        );
    }
    let _ = writeln!(
        s,
        "Whether each model's forecast is met as often as it claims is the `calibration` \
         experiment's (`sprout eval --experiments calibration`: the coverage per model, link \
         and horizon, its table, chart and section of this report when both run): a model \
         whose coverage is near its stated confidence cannot gain by recalibrating its \
         quantile, which only moves it along its own curve.\n"
    );
    let _ = writeln!(s, "The models:\n");
    for m in res.settings.models.iter().filter_map(|m| model(m)) {
        let params = if m.params.is_empty() {
            String::new()
        } else {
            format!(" (`{}`)", m.params.join("`, `"))
        };
        let _ = writeln!(s, "- `{}`: {}{params}", m.name, m.about);
    }
    let groups = res.verdict_groups();
    let _ = write!(
        s,
        "\nUtilization / self-inflicted delay:\n\n| model | point |"
    );
    for g in &groups {
        let _ = write!(s, " {} |", group_name(res, g));
    }
    let _ = writeln!(s, "\n|---|---|{}", "---|".repeat(groups.len()));
    for a in res.averages.iter().filter(|a| a.group == ALL) {
        let _ = write!(s, "| {} | {} {} |", a.model, a.knob, a.value);
        for g in &groups {
            let cell = res
                .averages
                .iter()
                .find(|b| &b.group == g && b.model == a.model && b.value == a.value)
                .map_or("-".into(), |b| figure(b.utilization, b.self_inflicted_ms));
            let _ = write!(s, " {cell} |");
        }
        let _ = writeln!(s);
    }
    let _ = writeln!(
        s,
        "\nA point dominates another when it carries at least its utilization with strictly \
         less self-inflicted delay. The gap is the utilization the model's curve (its Pareto \
         front, linear in delay between its points) is short of Sprout-EWMA's at \
         Sprout-EWMA's delay, the smallest over Sprout-EWMA's points.\n"
    );
    for v in &res.verdicts {
        let _ = writeln!(s, "- {}", verdict_line(res, v));
    }
    gap_table(&mut s, res);
    let answered = |g: &str| {
        res.verdicts
            .iter()
            .filter(|v| v.group == g && !v.dominating.is_empty())
            .map(|v| v.model.as_str())
            .collect::<Vec<_>>()
    };
    let _ = writeln!(s);
    let default_gain = sprout_core::params::DEFAULT_EWMA_GAIN;
    for g in &groups {
        let who = answered(g);
        let of_default: Vec<&str> = res
            .verdicts
            .iter()
            .filter(|v| &v.group == g && v.dominating.iter().any(|d| d.1 == default_gain))
            .map(|v| v.model.as_str())
            .collect();
        let _ = writeln!(
            s,
            "On {}: {}; Sprout-EWMA at its default gain ({default_gain}): {}.",
            group_name(res, g),
            if who.is_empty() {
                "no Sprout model point dominates a Sprout-EWMA point".to_string()
            } else {
                format!(
                    "a point of {} dominates a Sprout-EWMA point",
                    who.join(", ")
                )
            },
            if of_default.is_empty() {
                "dominated by no Sprout model point".to_string()
            } else {
                format!("dominated by a point of {}", of_default.join(", "))
            }
        );
    }
    if !groups.iter().any(|g| g == FIGURE9_LINK) {
        let _ = writeln!(
            s,
            "\n{FIGURE9_LINK} is not among this run's links: its verdict is left out."
        );
    }
    let _ = writeln!(s, "\n![frontier.svg](frontier.svg)\n");
    s
}
