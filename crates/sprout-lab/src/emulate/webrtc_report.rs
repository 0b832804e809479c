//! The WebRTC call in the emulated evaluation's outputs: the paper's shape (Sprout's
//! self-inflicted delay at most a third of the call's, at no less throughput; Figures 7 and 8
//! held it against Skype, Hangout and Facetime), the GCC model against the real call, the
//! frame delays, and the paper's video-call points for the charts.

use std::fmt::Write as _;

use sprout_eval::eval::{ResultRow, Scheme};
use sprout_eval::{interactive, paper};

use super::results::{AppDelayRow, EmulateResults, ShapeCheck};

/// The video calls the paper measured, in the order its text lists them.
pub const PAPER_CALLS: [&str; 3] = ["skype", "hangout", "facetime"];
/// Sprout's self-inflicted delay must be at most this share of the call's.
pub const DELAY_SHARE: f64 = 1.0 / 3.0;

/// One check per link and direction where both Sprout and the call ran (emulated rows).
pub fn shape_checks(res: &EmulateResults) -> Vec<ShapeCheck> {
    let key = Scheme::Webrtc.key();
    res.rows
        .iter()
        .filter(|r| r.experiment == "emulated" && r.scheme == key)
        .filter_map(|call| {
            let sprout = res.row("emulated", &call.link, &call.direction, "sprout")?;
            Some(shape_check(sprout, call, res.app_of(call)))
        })
        .collect()
}

/// The check of Sprout's row against the call's (`app`: the call's frame figures).
pub fn shape_check(sprout: &ResultRow, call: &ResultRow, app: Option<&AppDelayRow>) -> ShapeCheck {
    let (sd, cd) = (sprout.self_inflicted_ms, call.self_inflicted_ms);
    let (sk, ck) = (sprout.throughput_kbps, call.throughput_kbps);
    let delay_ok = sd <= DELAY_SHARE * cd;
    let throughput_ok = sk >= ck;
    let cap = call.capacity_kbps.max(1e-9);
    let mut why = vec![format!(
        "sprout {sk:.0} kbit/s at {sd:.0} ms, the call {ck:.0} kbit/s at {cd:.0} ms: {} \
         delay at {:.2}x the throughput (the paper: 7.2x to 8.7x less delay at 1.9x to 4.4x \
         the throughput of Skype, Hangout and Facetime)",
        times_less(sd, cd),
        sk / ck.max(1e-9)
    )];
    if !delay_ok {
        let ceiling = Scheme::WEBRTC_BPS.1 / 1e3;
        let target = app
            .and_then(|a| a.target_last_kbps)
            .map_or(String::new(), |t| {
                format!(", its encoder's target {t:.0} kbit/s at the end")
            });
        why.push(if ck <= 1.1 * ceiling && ck < 0.6 * cap {
            format!(
                "why: the call stays under its encoder's ceiling ({ceiling:.0} kbit/s{target}) \
                 and used {:.0}% of the link's {:.0} kbit/s, so it rarely filled the queue, \
                 while Sprout used {:.0}%",
                100.0 * ck / cap,
                cap,
                100.0 * sk / cap
            )
        } else {
            format!(
                "why: the call used {:.0}% of the link's {:.0} kbit/s and its congestion \
                 control (GCC) kept the queue to {cd:.0} ms{target}",
                100.0 * ck / cap,
                cap
            )
        });
    }
    if !throughput_ok {
        why.push(format!(
            "why: Sprout's forecast held it to {:.0}% of the link's {cap:.0} kbit/s, below the \
             call's {:.0}%",
            100.0 * sk / cap,
            100.0 * ck / cap
        ));
    }
    ShapeCheck {
        link: call.link.clone(),
        direction: call.direction.clone(),
        sprout_kbps: sk,
        sprout_delay_ms: sd,
        call_kbps: ck,
        call_delay_ms: cd,
        capacity_kbps: call.capacity_kbps,
        delay_ok,
        throughput_ok,
        passes: delay_ok && throughput_ok,
        explanation: why.join("; "),
    }
}

/// "7.5x less" or "1.3x more" (delays floored at 1 ms).
fn times_less(ours: f64, theirs: f64) -> String {
    let (a, b) = (ours.max(1.0), theirs.max(1.0));
    if a <= b {
        format!("{:.1}x less", b / a)
    } else {
        format!("{:.1}x more", a / b)
    }
}

/// The check's line for the terminal, starting with ✅ or ❌.
pub fn shape_line(c: &ShapeCheck) -> String {
    format!(
        "{} paper's shape on {} {}: sprout's self-inflicted delay {:.0} ms {} a third of the \
         call's {:.0} ms ({:.0} ms), at {:.0} kbit/s {} the call's {:.0} kbit/s; {}",
        if c.passes { "✅" } else { "❌" },
        c.link,
        c.direction,
        c.sprout_delay_ms,
        if c.delay_ok { "≤" } else { ">" },
        c.call_delay_ms,
        DELAY_SHARE * c.call_delay_ms,
        c.sprout_kbps,
        if c.throughput_ok { "≥" } else { "<" },
        c.call_kbps,
        c.explanation
    )
}

/// The paper's video-call points for a link and direction (name, point): throughput =
/// the paper's Sprout throughput there (Figure 7; its mean over the 8 link directions for a
/// link it did not measure) over the speedup its introduction reports for the call, delay =
/// the call's mean self-inflicted delay over the 8 link directions (introduction's table). The
/// paper publishes no per-link figures for the calls.
pub fn paper_call_points(link: &str, direction: &str) -> Vec<(&'static str, paper::PaperPoint)> {
    let means = interactive::paper_app_points();
    PAPER_CALLS
        .into_iter()
        .filter_map(|name| {
            let r = paper::intro(name)?;
            let kbps = match paper::fig7(link, direction, "sprout") {
                Some(p) => p.throughput_kbps / r.sprout_speedup,
                None => means.iter().find(|m| m.0 == name)?.1,
            };
            Some((
                name,
                paper::PaperPoint {
                    self_inflicted_ms: r.self_inflicted_s * 1000.0,
                    throughput_kbps: kbps,
                },
            ))
        })
        .collect()
}

/// `x` as "123" or "–" for `None`.
fn ms(x: Option<f64>) -> String {
    x.map_or("–".into(), |v| format!("{v:.0}"))
}

/// The terminal lines of the call: per link and direction, the call, its model and Sprout
/// (throughput, self-inflicted delay, frame delays), the paper's calls, and the shape check.
pub fn summary_lines(res: &EmulateResults) -> Vec<String> {
    let mut out = Vec::new();
    let key = Scheme::Webrtc.key();
    for call in res
        .rows
        .iter()
        .filter(|r| r.experiment == "emulated" && r.scheme == key)
    {
        let (link, dir) = (&call.link, &call.direction);
        let app = res.app_of(call);
        let mut line = format!(
            "webrtc {link} {dir}: the call {:.0} kbit/s, self-inflicted {:.0} ms, frame delay \
             p50 {} ms p95 {} ms ({} frames)",
            call.throughput_kbps,
            call.self_inflicted_ms,
            ms(app.and_then(|a| a.app_p50_ms)),
            ms(app.and_then(|a| a.app_p95_ms)),
            app.map_or(0, |a| a.frames)
        );
        if let Some(m) = res.row("simulated", link, dir, Scheme::Gcc.key()) {
            let mapp = res.app_of(m);
            let _ = write!(
                line,
                " | GCC model {:.0} kbit/s, {:.0} ms, frame p95 {} ms (call/model: throughput \
                 {:.2}, delay {:.2})",
                m.throughput_kbps,
                m.self_inflicted_ms,
                ms(mapp.and_then(|a| a.app_p95_ms)),
                call.throughput_kbps / m.throughput_kbps.max(1e-9),
                call.self_inflicted_ms.max(1.0) / m.self_inflicted_ms.max(1.0)
            );
        }
        if let Some(s) = res.row("emulated", link, dir, "sprout") {
            let _ = write!(
                line,
                " | sprout {:.0} kbit/s, {:.0} ms",
                s.throughput_kbps, s.self_inflicted_ms
            );
        }
        let paper: Vec<String> = paper_call_points(link, dir)
            .iter()
            .map(|(n, p)| {
                format!(
                    "{n} {:.0} kbit/s, {:.0} ms",
                    p.throughput_kbps, p.self_inflicted_ms
                )
            })
            .collect();
        let _ = write!(line, " | paper: {}", paper.join("; "));
        out.push(line);
    }
    out.extend(res.shape.iter().map(shape_line));
    out
}

/// report.md's section on the call (empty when `webrtc` did not run).
pub fn markdown(res: &EmulateResults) -> String {
    let key = Scheme::Webrtc.key();
    let calls: Vec<&ResultRow> = res
        .rows
        .iter()
        .filter(|r| r.experiment == "emulated" && r.scheme == key)
        .collect();
    if calls.is_empty() {
        return String::new();
    }
    let mut s = String::new();
    let _ = writeln!(s, "## The WebRTC call against Sprout and the GCC model\n");
    let _ = writeln!(
        s,
        "`webrtc` is a real video call between two aiortc peers (`python -m \
         sprout.webrtc_call`: VP8, RTP/RTCP, receiver-side bandwidth estimation with REMB after \
         Google's congestion control), the answer end outside the emulator and the offer end in \
         its mobile namespace, each sending synthetic video at 30 frames/s and timing the \
         frames it receives from capture to decode (both share the machine's monotonic clock). \
         Throughput and self-inflicted delay come from the emulator's logs as for every scheme; \
         the frame delays from the receiving end (the offer end's for the downlink, the answer \
         end's for the uplink), over the whole call (the program reports no window; the \
         model's over the measured window). Its simulated counterpart is the GCC model (`gcc`) carrying \
         adaptive video within the call's encoder limits ({:.0}-{:.0} kbit/s). The paper's \
         calls have no per-link figures: their points are the paper's Sprout throughput on the \
         link over the speedup its introduction reports, at their mean self-inflicted delay \
         over the 8 link directions.\n",
        Scheme::WEBRTC_BPS.0 / 1e3,
        Scheme::WEBRTC_BPS.1 / 1e3
    );
    let _ = writeln!(
        s,
        "| link | dir | what | throughput (kbit/s) | self-inflicted (ms) | frame p50 (ms) | \
         frame p95 (ms) | frames |"
    );
    let _ = writeln!(s, "|---|---|---|---|---|---|---|---|");
    for call in &calls {
        let (link, dir) = (&call.link, &call.direction);
        let mut rows: Vec<(&str, &ResultRow)> = vec![("webrtc (the call, emulated)", call)];
        if let Some(m) = res.row("simulated", link, dir, Scheme::Gcc.key()) {
            rows.push(("gcc (its model, simulated)", m));
        }
        if let Some(sp) = res.row("emulated", link, dir, "sprout") {
            rows.push(("sprout (emulated)", sp));
        }
        for (what, r) in rows {
            let app = res.app_of(r);
            let _ = writeln!(
                s,
                "| {link} | {dir} | {what} | {:.0} | {:.0} | {} | {} | {} |",
                r.throughput_kbps,
                r.self_inflicted_ms,
                ms(app.and_then(|a| a.app_p50_ms)),
                ms(app.and_then(|a| a.app_p95_ms)),
                app.map_or("–".into(), |a| a.frames.to_string())
            );
        }
        for (name, p) in paper_call_points(link, dir) {
            let _ = writeln!(
                s,
                "| {link} | {dir} | {name} (paper) | {:.0} | {:.0} | – | – | – |",
                p.throughput_kbps, p.self_inflicted_ms
            );
        }
    }
    s.push_str(&model_table(res, &calls));
    let _ = writeln!(s, "\n### The paper's shape\n");
    let _ = writeln!(
        s,
        "On each direction Sprout's self-inflicted delay should be at most a third of the \
         call's, at no less throughput (the paper: 7.9x, 7.2x and 8.7x less delay than Skype, \
         Hangout and Facetime at 2.2x, 4.4x and 1.9x their throughput).\n"
    );
    for c in &res.shape {
        let _ = writeln!(s, "- {}", shape_line(c));
    }
    if res.shape.is_empty() {
        let _ = writeln!(s, "- not judged: sprout did not run beside the call");
    }
    s
}

/// The table of the GCC model against the call: throughput and self-inflicted delay with
/// their ratios, and the frame delays.
fn model_table(res: &EmulateResults, calls: &[&ResultRow]) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "\n### The GCC model against the call\n");
    let _ = writeln!(
        s,
        "| link | dir | call kbit/s | model kbit/s | call/model | call delay (ms) | model delay \
         (ms) | call/model | call frame p95 (ms) | model frame p95 (ms) |"
    );
    let _ = writeln!(s, "|---|---|---|---|---|---|---|---|---|---|");
    for call in calls {
        let Some(m) = res.row("simulated", &call.link, &call.direction, Scheme::Gcc.key()) else {
            continue;
        };
        let p95 = |r: &ResultRow| ms(res.app_of(r).and_then(|a| a.app_p95_ms));
        let _ = writeln!(
            s,
            "| {} | {} | {:.0} | {:.0} | {:.2} | {:.0} | {:.0} | {:.2} | {} | {} |",
            call.link,
            call.direction,
            call.throughput_kbps,
            m.throughput_kbps,
            call.throughput_kbps / m.throughput_kbps.max(1e-9),
            call.self_inflicted_ms,
            m.self_inflicted_ms,
            call.self_inflicted_ms.max(1.0) / m.self_inflicted_ms.max(1.0),
            p95(call),
            p95(m)
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::emulate::results::fixtures::{results as unjudged, row};

    /// The fixture's results with their shape checks.
    fn results(call_down: (f64, f64)) -> EmulateResults {
        let mut res = unjudged(call_down);
        res.shape = shape_checks(&res);
        res
    }

    #[test]
    fn the_shape_passes_with_a_third_of_the_delay_at_no_less_throughput() {
        let res = results((1200.0, 450.0));
        assert_eq!(res.shape.len(), 2);
        let down = &res.shape[0];
        assert_eq!(down.direction, "down");
        assert!(down.passes && down.delay_ok && down.throughput_ok);
        let line = shape_line(down);
        assert!(
            line.starts_with("✅ paper's shape on Verizon-LTE-short down"),
            "{line}"
        );
        assert!(
            line.contains("100 ms ≤ a third of the call's 450 ms (150 ms)"),
            "{line}"
        );
        assert!(
            line.contains("4.5x less delay at 2.50x the throughput"),
            "{line}"
        );
        // Exactly a third still passes; a millisecond more fails.
        let c = shape_check(
            &row("emulated", "sprout", "down", 3000.0, 150.0),
            &row("emulated", "webrtc", "down", 1200.0, 450.0),
            None,
        );
        assert!(c.passes);
        let c = shape_check(
            &row("emulated", "sprout", "down", 3000.0, 151.0),
            &row("emulated", "webrtc", "down", 1200.0, 450.0),
            None,
        );
        assert!(!c.passes && !c.delay_ok && c.throughput_ok);
    }

    #[test]
    fn a_failure_is_explained_by_the_data() {
        // The call under its encoder's ceiling queues little: the delay part fails.
        let res = results((1200.0, 200.0));
        let down = &res.shape[0];
        assert!(!down.passes && !down.delay_ok && down.throughput_ok);
        let line = shape_line(down);
        assert!(line.starts_with("❌"), "{line}");
        assert!(
            line.contains("100 ms > a third of the call's 200 ms"),
            "{line}"
        );
        assert!(
            line.contains("encoder's ceiling (1500 kbit/s, its encoder's target 900 kbit/s"),
            "{line}"
        );
        assert!(
            line.contains("used 24% of the link's 5000 kbit/s"),
            "{line}"
        );
        // Sprout below the call's throughput: that part fails and says so.
        let c = shape_check(
            &row("emulated", "sprout", "down", 800.0, 10.0),
            &row("emulated", "webrtc", "down", 1200.0, 450.0),
            None,
        );
        assert!(!c.passes && c.delay_ok && !c.throughput_ok);
        assert!(c
            .explanation
            .contains("16% of the link's 5000 kbit/s, below the call's 24%"));
    }

    #[test]
    fn summary_and_report_show_the_call_its_model_sprout_and_the_paper() {
        let res = results((1200.0, 450.0));
        let lines = summary_lines(&res);
        assert_eq!(lines.len(), 4, "{lines:#?}");
        let down = &lines[0];
        assert!(
            down.starts_with("webrtc Verizon-LTE-short down: the call 1200 kbit/s"),
            "{down}"
        );
        assert!(
            down.contains("frame delay p50 100 ms p95 200 ms (2390 frames)"),
            "{down}"
        );
        assert!(down.contains("GCC model 1100 kbit/s, 400 ms"), "{down}");
        assert!(down.contains("throughput 1.09, delay 1.12"), "{down}");
        assert!(down.contains("sprout 3000 kbit/s, 100 ms"), "{down}");
        // The paper's Sprout on the Verizon LTE downlink (4741 kbit/s) over Skype's 2.2x.
        assert!(down.contains("paper: skype 2155 kbit/s, 2520 ms"), "{down}");
        assert!(lines[1].contains("frame delay p50 – ms p95 – ms (2390 frames)"));
        let md = markdown(&res);
        assert!(md.contains("| Verizon-LTE-short | down | webrtc (the call, emulated) | 1200 | 450 | 100 | 200 | 2390 |"), "{md}");
        assert!(md.contains("| Verizon-LTE-short | down | gcc (its model, simulated) | 1100 | 400 | – | – | – |"), "{md}");
        assert!(
            md.contains(
                "| Verizon-LTE-short | down | 1200 | 1100 | 1.09 | 450 | 400 | 1.12 | 200 | – |"
            ),
            "{md}"
        );
        assert!(md.contains("hangout (paper)") && md.contains("### The paper's shape"));
        assert_eq!(md.matches("- ✅ paper's shape").count(), 2, "{md}");
        assert!(markdown(&EmulateResults {
            rows: res.rows[..2].to_vec(),
            ..res.clone()
        })
        .is_empty());
    }

    #[test]
    fn paper_call_points_scale_sprouts_throughput_on_the_link() {
        let pts = paper_call_points("Verizon-LTE-short", "down");
        let names: Vec<&str> = pts.iter().map(|p| p.0).collect();
        assert_eq!(names, PAPER_CALLS);
        assert!((pts[0].1.throughput_kbps - 4741.0 / 2.2).abs() < 1e-6);
        assert_eq!(pts[2].1.self_inflicted_ms, 2750.0);
        // A link the paper did not measure: its means over the 8 link directions.
        let synth = paper_call_points("Synth", "down");
        assert_eq!(synth.len(), 3);
        assert!(synth[0].1.throughput_kbps < pts[0].1.throughput_kbps);
    }
}
