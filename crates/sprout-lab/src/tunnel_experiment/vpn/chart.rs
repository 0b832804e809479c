//! `vpn.svg`: horizontal bars, one colour per arm, a panel per measure, each bar labelled
//! with its value to its right (bars and labels each on their own row, so none overlap).

use std::fmt::Write as _;

use super::results::{VpnResults, ARMS};

/// Width of the chart (px).
const WIDTH: f64 = 900.0;
/// Left edge of the bars (the row labels are to its left).
const BAR_X: f64 = 190.0;
/// Longest bar (px); its value label follows it.
const BAR_MAX: f64 = 580.0;
/// Height of a bar and the step between bars of a group (px).
const BAR_H: f64 = 14.0;
const BAR_STEP: f64 = 17.0;
/// Space after a group and before a panel (px).
const GROUP_GAP: f64 = 10.0;
const PANEL_GAP: f64 = 34.0;

/// One colour per arm (direct, boringtun, SproutTunnel).
fn colour(arm: &str) -> &'static str {
    match arm {
        "direct" => "#7f7f7f",
        "boringtun" => "#1f77b4",
        _ => "#e6550d",
    }
}

/// What the legend calls an arm.
fn arm_label(arm: &str) -> &'static str {
    match arm {
        "direct" => "direct",
        "boringtun" => "WireGuard (boringtun)",
        _ => "SproutTunnel",
    }
}

/// XML-escaped text.
fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// A panel: a title and groups of (label, bars of (arm, value)); `log` puts values on a log
/// scale (delays spanning tenths to tens of seconds).
struct Panel {
    title: String,
    groups: Vec<(String, Vec<(&'static str, f64)>)>,
    log: bool,
    digits: usize,
}

/// The panels of the parts that ran.
fn panels(res: &VpnResults) -> Vec<Panel> {
    let mut out = Vec::new();
    if !res.rate.is_empty() {
        let bars = |f: &dyn Fn(&super::results::VpnRateRow) -> Option<f64>| {
            ARMS.iter()
                .filter_map(|&a| Some((a, f(res.rate.iter().find(|r| r.arm == a)?)?)))
                .collect::<Vec<_>>()
        };
        out.push(Panel {
            title: format!(
                "One Cubic download, constant {:.0} Mbit/s link: goodput, Mbit/s",
                res.rate[0].link_mbps
            ),
            groups: vec![("goodput".into(), bars(&|r| Some(r.goodput_mbps)))],
            log: false,
            digits: 0,
        });
        out.push(Panel {
            title: "CPU of each tunnel end, s per GB downloaded".into(),
            groups: vec![
                ("server end".into(), bars(&|r| r.server_cpu_s_per_gb)),
                ("client end".into(), bars(&|r| r.client_cpu_s_per_gb)),
            ],
            log: false,
            digits: 2,
        });
    }
    if let Some(link) = &res.lte_link {
        let mut keys: Vec<(String, String)> = Vec::new();
        for r in &res.lte {
            let k = (r.flow.clone(), r.direction.clone());
            if !keys.contains(&k) {
                keys.push(k);
            }
        }
        let group = |delay: bool| {
            keys.iter()
                .filter_map(|(flow, dir)| {
                    let bars: Vec<(&'static str, f64)> =
                        ARMS.iter()
                            .filter_map(|&a| {
                                let r = res.lte.iter().find(|r| {
                                    r.arm == a && &r.flow == flow && &r.direction == dir
                                })?;
                                Some((a, if delay { r.delay_p95_ms? } else { r.rate_kbps }))
                            })
                            .collect();
                    (!bars.is_empty()).then(|| (format!("{flow}, {dir}"), bars))
                })
                .collect()
        };
        out.push(Panel {
            title: format!("{link}: each flow's delay p95, ms (log scale)"),
            groups: group(true),
            log: true,
            digits: 0,
        });
        out.push(Panel {
            title: format!("{link}: each flow's rate, kbit/s"),
            groups: group(false),
            log: false,
            digits: 0,
        });
    }
    out
}

/// The bar length of `v` in a panel whose largest value is `max`.
fn length(v: f64, max: f64, log: bool) -> f64 {
    if max <= 0.0 || v <= 0.0 {
        return 0.0;
    }
    if log {
        // From 10 (ms) at zero length to the largest value at the full length.
        let (a, b) = (
            (v.max(10.0) / 10.0).log10(),
            (max.max(100.0) / 10.0).log10(),
        );
        return BAR_MAX * (a / b).max(0.0);
    }
    BAR_MAX * v / max
}

/// The whole chart as an SVG document.
pub(super) fn chart(res: &VpnResults) -> String {
    let mut body = String::new();
    let mut y = 56.0;
    // The legend: one swatch and name per arm, in a row.
    let mut x = BAR_X;
    for arm in ARMS {
        let _ = write!(
            body,
            r#"<rect x="{x:.1}" y="{:.1}" width="12" height="12" fill="{}"/><text x="{:.1}" y="{:.1}">{}</text>"#,
            y - 11.0,
            colour(arm),
            x + 17.0,
            y,
            esc(arm_label(arm))
        );
        x += 17.0 + 7.5 * arm_label(arm).len() as f64 + 24.0;
    }
    y += 12.0;
    for p in panels(res) {
        y += PANEL_GAP;
        let _ = write!(
            body,
            r#"<text x="10" y="{y:.1}" font-weight="bold">{}</text>"#,
            esc(&p.title)
        );
        y += 10.0;
        let max = p
            .groups
            .iter()
            .flat_map(|g| g.1.iter().map(|b| b.1))
            .fold(0.0, f64::max);
        for (label, bars) in &p.groups {
            let top = y;
            for (arm, v) in bars {
                let w = length(*v, max, p.log);
                let _ = write!(
                    body,
                    r#"<rect x="{BAR_X}" y="{y:.1}" width="{w:.1}" height="{BAR_H}" fill="{}"/><text x="{:.1}" y="{:.1}">{:.*}</text>"#,
                    colour(arm),
                    BAR_X + w + 5.0,
                    y + BAR_H - 2.0,
                    p.digits,
                    v
                );
                y += BAR_STEP;
            }
            let mid = (top + y - (BAR_STEP - BAR_H)) / 2.0 + 4.0;
            let _ = write!(
                body,
                r#"<text x="{:.1}" y="{mid:.1}" text-anchor="end">{}</text>"#,
                BAR_X - 8.0,
                esc(label)
            );
            y += GROUP_GAP;
        }
    }
    let height = y + 20.0;
    format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height:.0}" viewBox="0 0 {WIDTH} {height:.0}" font-family="sans-serif" font-size="12"><rect width="100%" height="100%" fill="white"/><text x="10" y="22" font-size="15" font-weight="bold">SproutTunnel against WireGuard (boringtun), same namespaces, same emulated links</text>{body}</svg>
"#
    )
}

#[cfg(test)]
mod tests {
    use super::length;

    #[test]
    fn bars_scale_to_the_largest_and_log_bars_keep_their_order() {
        assert_eq!(length(50.0, 100.0, false), 290.0);
        assert_eq!(length(0.0, 100.0, true), 0.0);
        let (a, b, c) = (
            length(300.0, 15000.0, true),
            length(3000.0, 15000.0, true),
            length(15000.0, 15000.0, true),
        );
        assert!(0.0 < a && a < b && b < c && (c - 580.0).abs() < 1e-9);
    }
}
