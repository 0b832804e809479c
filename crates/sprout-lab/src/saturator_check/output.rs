//! The outputs: the table, `saturator-check.csv`, `saturator-check.json`,
//! `saturator-check-seconds.csv` and one SVG chart per link pair.

use std::fs::{self, File};
use std::io::Write as _;
use std::path::Path;

use super::results::{CheckResults, DirectionResult};
use crate::error::{Context, Result};

/// ✅ or ❌.
fn mark(ok: bool) -> &'static str {
    if ok {
        "✅"
    } else {
        "❌"
    }
}

/// One row of the table, as text.
pub(super) fn row_line(r: &DirectionResult) -> String {
    let c = &r.seconds;
    let judged = c.seconds - c.outage_seconds;
    let mut line = format!(
        "{:<22} {:<4} {} seconds within 5%: {}/{} ({:.1}%) {}  total {}/{} ({:+.2}%) {}",
        r.link,
        r.direction,
        if r.completed { "" } else { "❌ incomplete" },
        c.seconds_within,
        judged,
        100.0 * c.share_within,
        mark(c.per_second_ok),
        c.recorded_total,
        c.replayed_total,
        100.0 * c.total_error,
        mark(c.total_ok),
    );
    if let Some(s) = &r.sprout {
        line.push_str(&format!(
            "  Sprout {:.0}/{:.0} kbit/s ({:+.1}%) {}  delay {:.0}/{:.0} ms {}",
            s.recorded_kbps,
            s.replayed_kbps,
            100.0 * s.throughput_error,
            mark(s.throughput_ok),
            s.recorded_delay_ms,
            s.replayed_delay_ms,
            mark(s.delay_ok)
        ));
    }
    if let Some([p50, p99, _]) = r.emulator_late_us {
        line.push_str(&format!("  (emulator late p50/p99 {p50}/{p99} µs)"));
    }
    if let Some(ok) = r.loss_reported_ok {
        line.push_str(&format!(
            "  loss reported {:.2}% {}",
            100.0 * r.summary.loss_rate,
            mark(ok)
        ));
    }
    if let Some(ok) = r.outage_reported_ok {
        line.push_str(&format!(
            "  outage reported: longest gap {:.2} s {}",
            r.summary.longest_gap_ms as f64 / 1000.0,
            mark(ok)
        ));
    }
    line
}

/// The results as a table with ✅/❌ per check, and a closing line.
pub fn table(r: &CheckResults) -> String {
    let mut out = format!(
        "Saturator round trips ({}, {}), trace seconds {}-{} compared, from {}\n",
        r.variant,
        r.replay,
        r.from_s,
        r.from_s + r.seconds,
        r.source
    );
    out.push_str(
        "(per second: |recorded - replayed| <= 5% of replayed, in >= 95% of the seconds outside \
         outages (seconds overlapping a >= 1 s gap between opportunities); total within 2%",
    );
    if r.loss == 0.0 && r.outage_ms.1 == 0 {
        out.push_str(
            "; Sprout in the simulator, means of 48 seeded runs: throughput within 5%, \
             self-inflicted delay within max(20 ms, 10%)",
        );
    }
    out.push_str(")\n");
    for row in &r.rows {
        out.push_str(&row_line(row));
        out.push('\n');
    }
    let passed = r.rows.iter().filter(|x| x.ok).count();
    out.push_str(&format!(
        "{} {passed} of {} link directions pass every check ({:.0} s)",
        mark(r.all_ok),
        r.rows.len(),
        r.wall_s
    ));
    out
}

/// Writes `saturator-check.json`, `saturator-check.csv`, `saturator-check-seconds.csv` and
/// the charts into `dir`.
pub(super) fn write_outputs(dir: &Path, r: &CheckResults) -> Result<()> {
    let json = dir.join("saturator-check.json");
    fs::write(&json, serde_json::to_string_pretty(r)?)
        .with_context(|| format!("writing {}", json.display()))?;
    let csv = dir.join("saturator-check.csv");
    let mut w =
        csv::Writer::from_path(&csv).with_context(|| format!("writing {}", csv.display()))?;
    w.write_record([
        "link",
        "direction",
        "variant",
        "completed",
        "seconds_judged",
        "seconds_within",
        "share_within",
        "per_second_ok",
        "replayed_total",
        "recorded_total",
        "total_error",
        "total_ok",
        "exact_ms_share",
        "offset_ms",
        "sprout_replayed_kbps",
        "sprout_recorded_kbps",
        "sprout_throughput_ok",
        "sprout_replayed_delay_ms",
        "sprout_recorded_delay_ms",
        "sprout_delay_ok",
        "loss_reported",
        "loss_reported_ok",
        "longest_gap_ms",
        "outage_reported_ok",
        "low_backlog_seconds",
        "link_utilization",
        "emulator_late_p50_us",
        "emulator_late_p99_us",
        "emulator_late_max_us",
        "ok",
    ])?;
    let opt = |x: Option<f64>| x.map_or(String::new(), |v| format!("{v:.4}"));
    let optb = |x: Option<bool>| x.map_or(String::new(), |v| v.to_string());
    for x in &r.rows {
        let c = &x.seconds;
        let s = x.sprout.as_ref();
        w.write_record([
            x.link.clone(),
            x.direction.clone(),
            x.variant.clone(),
            x.completed.to_string(),
            (c.seconds - c.outage_seconds).to_string(),
            c.seconds_within.to_string(),
            format!("{:.4}", c.share_within),
            c.per_second_ok.to_string(),
            c.replayed_total.to_string(),
            c.recorded_total.to_string(),
            format!("{:.5}", c.total_error),
            c.total_ok.to_string(),
            format!("{:.4}", c.exact_ms_share),
            c.offset_ms.to_string(),
            opt(s.map(|s| s.replayed_kbps)),
            opt(s.map(|s| s.recorded_kbps)),
            optb(s.map(|s| s.throughput_ok)),
            opt(s.map(|s| s.replayed_delay_ms)),
            opt(s.map(|s| s.recorded_delay_ms)),
            optb(s.map(|s| s.delay_ok)),
            format!("{:.4}", x.summary.loss_rate),
            optb(x.loss_reported_ok),
            x.summary.longest_gap_ms.to_string(),
            optb(x.outage_reported_ok),
            x.summary.low_backlog_seconds.to_string(),
            opt(x.link_utilization),
            x.emulator_late_us
                .map_or(String::new(), |l| l[0].to_string()),
            x.emulator_late_us
                .map_or(String::new(), |l| l[1].to_string()),
            x.emulator_late_us
                .map_or(String::new(), |l| l[2].to_string()),
            x.ok.to_string(),
        ])?;
    }
    w.flush()?;
    let sec = dir.join("saturator-check-seconds.csv");
    let mut f = std::io::BufWriter::new(
        File::create(&sec).with_context(|| format!("writing {}", sec.display()))?,
    );
    writeln!(f, "link,direction,variant,second,replayed,recorded,outage")?;
    for x in &r.rows {
        for (i, (a, b, out)) in x.seconds.per_second.iter().enumerate() {
            writeln!(
                f,
                "{},{},{},{},{a},{b},{out}",
                x.link,
                x.direction,
                x.variant,
                r.from_s + i as u64
            )?;
        }
    }
    f.flush()?;
    for (link, svg) in charts(r) {
        let path = dir.join(format!("saturator-{link}.svg"));
        fs::write(&path, svg).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

/// One chart per link pair (`saturator-NAME.svg`): the replayed and the recorded capacity of
/// each compared second, Mbit/s (one 1500-byte line = 12,000 bits), uplink above downlink.
pub fn charts(r: &CheckResults) -> Vec<(String, String)> {
    use sprout_core::direction::Direction;
    use sprout_eval::chart::{rate_over_time_chart, RatePanel, RateSeries};
    use sprout_eval::trace_plot::Panel;
    let mut links: Vec<&str> = Vec::new();
    for x in &r.rows {
        if !links.contains(&x.link.as_str()) {
            links.push(&x.link);
        }
    }
    let mbit = |n: u64| (n * sprout_link::OPPORTUNITY_BYTES * 8) as f64 / 1e6;
    links
        .into_iter()
        .map(|link| {
            let mut panels = Vec::new();
            for (dir, panel) in Direction::BOTH.map(|d| (d.as_str(), Panel::Link(d))) {
                let Some(x) = r.rows.iter().find(|x| x.link == link && x.direction == dir) else {
                    continue;
                };
                let per = &x.seconds.per_second;
                panels.push(RatePanel {
                    axis_title: panel.axis_title().to_string(),
                    series: vec![
                        RateSeries {
                            label: "replayed trace".into(),
                            values: per.iter().map(|&(a, _, _)| mbit(a)).collect(),
                        },
                        RateSeries {
                            label: "recording".into(),
                            values: per.iter().map(|&(_, b, _)| mbit(b)).collect(),
                        },
                    ],
                });
            }
            // The recording is drawn over the trace: where they agree only its colour shows.
            let caption = format!(
                "Time after trace second {}; {}, {}; the trace shows only where the recording differs",
                r.from_s, r.variant, r.replay
            );
            let svg = rate_over_time_chart(
                &format!("Saturator round trip: {link}"),
                &panels,
                1.0,
                &caption,
            );
            (link.to_string(), svg)
        })
        .collect()
}
