//! The `aqm` experiment's outputs: aqm.csv (a row per queue, scheme and link direction),
//! aqm-table.csv (the averages the table shows, per group, queue and scheme), aqm-stream.csv
//! (the interactive stream beside the Cubic download), aqm.json, aqm.svg, its section of
//! report.md (appended after the rest) with the paper's CoDel figures beside the CoDel
//! column, and its table for the terminal.

use std::fmt::Write as _;
use std::path::Path;

use crate::aqm::{queue, AqmResults, StreamRow, ALL, CODEL, FQ_CODEL};
use crate::chart::{frontier_chart, FrontierPanel, FrontierSeries};
use crate::error::Result;
use crate::output_dir::{write_atomically, write_csv};
use crate::paper;

/// Writes aqm.csv, aqm-table.csv, aqm-stream.csv, aqm.json and aqm.svg into `out` and
/// appends the experiment's section to `out`/report.md.
pub fn write_aqm(out: &Path, res: &AqmResults) -> Result<()> {
    write_csv(&out.join("aqm.csv"), &res.rows)?;
    write_csv(&out.join("aqm-table.csv"), &res.averages)?;
    write_csv(&out.join("aqm-stream.csv"), &res.stream)?;
    write_atomically(out.join("aqm.json"), serde_json::to_string_pretty(res)?)?;
    write_atomically(out.join("aqm.svg"), aqm_chart(res))?;
    super::append_section(out, &section(res))
}

/// The paper's figure for `scheme` beside the CoDel column, as `(utilization, delay ms,
/// where it was measured)`: Cubic over CoDel's (Figure 8), and Sprout's and Sprout-EWMA's on
/// the paper's unlimited drop-tail queue, the other side of its comparison.
pub fn paper_beside_codel(scheme: &str) -> Option<(f64, f64, &'static str)> {
    let (key, queue) = match scheme {
        "cubic" => ("cubic-codel", "Cubic over CoDel"),
        "sprout" | "sprout-ewma" => (scheme, "unlimited drop-tail"),
        _ => return None,
    };
    paper::fig8(key).map(|p| (p.utilization, p.self_inflicted_ms, queue))
}

/// A point as `61.1% / 497 ms`.
fn figure(u: f64, d: f64) -> String {
    format!("{:.1}% / {} ms", 100.0 * u, super::thousands(d))
}

/// The chart: a panel per queue (every link direction averaged), a marker per scheme, and
/// the paper's Cubic over CoDel on the CoDel panel.
pub fn aqm_chart(res: &AqmResults) -> String {
    let panels: Vec<FrontierPanel> = res
        .settings
        .queues
        .iter()
        .map(|q| {
            let mut series: Vec<FrontierSeries> = res
                .settings
                .schemes
                .iter()
                .map(|s| FrontierSeries {
                    label: s.clone(),
                    points: res
                        .average(ALL, q, s)
                        .map(|a| vec![(0.0, a.utilization, a.self_inflicted_ms)])
                        .unwrap_or_default(),
                })
                .collect();
            if q == CODEL {
                if let Some((u, d, _)) = paper_beside_codel("cubic") {
                    series.push(FrontierSeries {
                        label: "cubic-codel (paper)".into(),
                        points: vec![(0.0, u, d)],
                    });
                }
            }
            FrontierPanel {
                title: q.clone(),
                series,
            }
        })
        .collect();
    let caption = format!(
        "The {} link directions averaged; both directions loaded, 20 ms each way, whole traces, \
         the first {:.0} s skipped; cubic-codel (paper): the paper's Figure 8",
        2 * res.links.len(),
        res.settings.skip_us as f64 / 1e6
    );
    frontier_chart(
        "Schemes over finite buffers and AQMs: utilization and self-inflicted delay",
        &panels,
        &[&caption],
    )
}

/// The table for the terminal: a row per scheme, a column per queue.
pub fn aqm_terminal_table(res: &AqmResults) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "aqm: utilization / self-inflicted delay over the {} link directions ({} simulations \
         in {:.1} s)",
        2 * res.links.len(),
        res.simulations,
        res.wall_s
    );
    let _ = write!(s, "  {:<12}", "scheme");
    for q in &res.settings.queues {
        let _ = write!(s, " {q:>18}");
    }
    let _ = writeln!(s);
    for sch in &res.settings.schemes {
        let _ = write!(s, "  {sch:<12}");
        for q in &res.settings.queues {
            let cell = res
                .average(ALL, q, sch)
                .map_or("-".into(), |a| figure(a.utilization, a.self_inflicted_ms));
            let _ = write!(s, " {cell:>18}");
        }
        let _ = writeln!(s);
    }
    if let Some((u, d, _)) = paper_beside_codel("cubic") {
        let _ = writeln!(s, "  paper, Cubic over CoDel (Figure 8): {}", figure(u, d));
    }
    for r in &res.stream {
        let _ = writeln!(s, "  {}", stream_line(r));
    }
    s
}

/// The stream's run in one line.
fn stream_line(r: &StreamRow) -> String {
    format!(
        "stream {:.0} kbit/s beside Cubic over {} on {} down: {:.0} kbit/s delivered, p95 {}, \
         Cubic {:.0} kbit/s",
        r.offered_kbps,
        r.queue,
        r.link,
        r.delivered_kbps,
        ms(r.p95_ms),
        r.download_kbps
    )
}

/// A delay as `22 ms`, or `never` (over the share lost for the percentile).
fn ms(d: f64) -> String {
    if d.is_finite() {
        format!("{} ms", super::thousands(d))
    } else if d.is_nan() {
        "-".into()
    } else {
        "never".into()
    }
}

/// The main table: a row per scheme, a column per queue, the paper's figures beside CoDel's.
fn main_table(s: &mut String, res: &AqmResults) {
    let queues = &res.settings.queues;
    let with_paper = queues.iter().any(|q| q == CODEL);
    let _ = write!(s, "| scheme |");
    for q in queues {
        let _ = write!(s, " {q} |");
        if q == CODEL {
            let _ = write!(s, " paper (Figure 8) |");
        }
    }
    let cols = queues.len() + usize::from(with_paper);
    let _ = writeln!(s, "\n|---|{}", "---|".repeat(cols));
    for sch in &res.settings.schemes {
        let _ = write!(s, "| {sch} |");
        for q in queues {
            let cell = res
                .average(ALL, q, sch)
                .map_or("-".into(), |a| figure(a.utilization, a.self_inflicted_ms));
            let _ = write!(s, " {cell} |");
            if q == CODEL {
                let paper = paper_beside_codel(sch)
                    .map_or("-".into(), |(u, d, w)| format!("{} ({w})", figure(u, d)));
                let _ = write!(s, " {paper} |");
            }
        }
        let _ = writeln!(s);
    }
}

/// The drops: a row per scheme, a column per queue, the share of packets each queue dropped.
fn drop_table(s: &mut String, res: &AqmResults) {
    let queues = &res.settings.queues;
    let _ = write!(
        s,
        "\nPackets the queue dropped (its buffer and its AQM), as a share of those it took or \
         dropped, every direction:\n\n| scheme |"
    );
    for q in queues {
        let _ = write!(s, " {q} |");
    }
    let _ = writeln!(s, "\n|---|{}", "---|".repeat(queues.len()));
    for sch in &res.settings.schemes {
        let _ = write!(s, "| {sch} |");
        for q in queues {
            let cell = res
                .average(ALL, q, sch)
                .map_or("-".into(), |a| format!("{:.2}%", 100.0 * a.drop_share));
            let _ = write!(s, " {cell} |");
        }
        let _ = writeln!(s);
    }
}

/// Whether FQ-CoDel gave every scheme exactly CoDel's averages, and if so why.
fn fq_codel_note(s: &mut String, res: &AqmResults) {
    let same = |sch: &String| match (
        res.average(ALL, CODEL, sch),
        res.average(ALL, FQ_CODEL, sch),
    ) {
        (Some(a), Some(b)) => {
            a.utilization == b.utilization && a.self_inflicted_ms == b.self_inflicted_ms
        }
        _ => false,
    };
    if res.settings.schemes.iter().all(same) {
        let _ = writeln!(
            s,
            "
FQ-CoDel and CoDel give the same figures here: in the simulator a scheme's \
             packets are one flow (flow key 0, its data and the acknowledgements of the other \
             direction's alike), so FQ-CoDel holds one flow queue under one CoDel, which is \
             CoDel. Its flow isolation shows only beside another flow: the interactive stream \
             below."
        );
    }
}

/// The paper's CoDel comparison against ours, in words.
fn codel_comparison(s: &mut String, res: &AqmResults) {
    let (Some(paper_codel), Some(intro)) =
        (paper::fig8("cubic-codel"), paper::intro("cubic-codel"))
    else {
        return;
    };
    let sprout_paper = paper::intro("sprout").map_or(f64::NAN, |r| r.self_inflicted_s);
    let _ = write!(
        s,
        "\nThe paper's CoDel comparison: Cubic over CoDel {} on average over its 8 links \
         (Figure 8); Sprout had {:.2}x its throughput, with {:.2} s of self-inflicted delay \
         against its {:.2} s (introduction), Sprout running over the unlimited drop-tail queue.",
        figure(paper_codel.utilization, paper_codel.self_inflicted_ms),
        intro.sprout_speedup,
        sprout_paper,
        intro.self_inflicted_s
    );
    let here = |sch: &str| res.average(ALL, CODEL, sch);
    match (here("cubic"), here("sprout")) {
        (Some(c), Some(sp)) => {
            let _ = writeln!(
                s,
                " Here over CoDel: Cubic {}, Sprout {}; Sprout has {:.2}x Cubic's throughput \
                 (the directions' mean throughputs), with {:.2} s of self-inflicted delay \
                 against Cubic's {:.2} s.",
                figure(c.utilization, c.self_inflicted_ms),
                figure(sp.utilization, sp.self_inflicted_ms),
                sp.throughput_kbps / c.throughput_kbps.max(1e-9),
                sp.self_inflicted_ms / 1000.0,
                c.self_inflicted_ms / 1000.0
            );
        }
        _ => {
            let _ = writeln!(s, " (Cubic or Sprout did not run over CoDel here.)");
        }
    }
}

/// The interactive stream beside the Cubic download.
fn stream_part(s: &mut String, res: &AqmResults) {
    if res.stream.is_empty() {
        return;
    }
    let link = &res.stream[0].link;
    let _ = writeln!(
        s,
        "\n### The interactive stream beside a Cubic download\n\n\
         On {link}'s downlink, the emulated tunnel experiment's paced stream ({:.0} kbit/s, \
         sent straight into the link with no congestion control) beside a Cubic bulk \
         download in the same queue: FQ-CoDel gives each its own flow queue; the paper's \
         unlimited drop-tail queue is what SproutTunnel was measured against. The stream's \
         one-way delay is of the packets sent in the measured window (a lost packet counts as \
         infinitely late: \"never\" when over 5% are lost); the download's rate is over the \
         whole run.\n",
        res.settings.stream_kbps
    );
    let _ = writeln!(
        s,
        "| queue | stream delivered | stream p50 | stream p95 | within 150 ms | Cubic \
         download | capacity |\n|---|---|---|---|---|---|---|"
    );
    for r in &res.stream {
        let _ = writeln!(
            s,
            "| {} | {:.0} of {:.0} kbit/s | {} | {} | {:.1}% | {:.0} kbit/s | {:.0} kbit/s |",
            r.queue,
            r.delivered_kbps,
            r.offered_kbps,
            ms(r.p50_ms),
            ms(r.p95_ms),
            100.0 * r.within_150ms,
            r.download_kbps,
            r.capacity_kbps
        );
    }
    let t = paper::TUNNEL;
    let _ = writeln!(
        s,
        "\nThe paper's SproutTunnel (§5.7, Verizon LTE downlink, Cubic with Skype): Skype's 95% \
         delay {:.1} s direct, {:.2} s through the tunnel; Cubic {:.0} kbit/s direct, {:.0} \
         kbit/s through it. The tunnel runs only as real programs: its run on this link is \
         the emulated evaluation's (`sprout eval --emulate --experiments tunnel`, its \
         `## SproutTunnel` section).",
        t.skype_delay_s.0, t.skype_delay_s.1, t.cubic_kbps.0, t.cubic_kbps.1
    );
    if !res.stream.iter().any(|r| r.queue == FQ_CODEL) {
        let _ = writeln!(s, "\n(FQ-CoDel was not among this run's stream queues.)");
    }
}

/// report.md's section.
fn section(res: &AqmResults) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "## Finite buffers and AQMs: the paper's CoDel comparison made whole (`aqm`)\n"
    );
    let _ = writeln!(
        s,
        "The paper compared Sprout with Cubic over CoDel, one column. Here every scheme runs \
         over every queue on the links of {} ({}), both directions loaded at once, 20 ms each \
         way, each trace pair replayed whole and measured from {:.0} s. {} simulations in \
         {:.1} s of wall time. Every direction is in `aqm.csv`, the averages in \
         `aqm-table.csv`.\n\nThe queues:\n",
        res.links.join(", "),
        res.source,
        res.settings.skip_us as f64 / 1e6,
        res.simulations,
        res.wall_s
    );
    for q in res.settings.queues.iter().filter_map(|q| queue(q)) {
        let _ = writeln!(s, "- `{}`: {}", q.name, q.about);
    }
    let _ = writeln!(
        s,
        "\nUtilization / self-inflicted delay, the {} link directions averaged (the paper's \
         figures, its 8 links averaged, beside the CoDel column):\n",
        2 * res.links.len()
    );
    main_table(&mut s, res);
    fq_codel_note(&mut s, res);
    codel_comparison(&mut s, res);
    drop_table(&mut s, res);
    stream_part(&mut s, res);
    let _ = writeln!(s, "\n![aqm.svg](aqm.svg)\n");
    s
}
