//! The `vpn` experiment's outputs: `vpn-rate.csv`, `vpn-lte.csv`, `vpn.json`, `vpn.svg`, the
//! table for the terminal and the `## Against WireGuard` section of report.md.

use std::fmt::Write as _;
use std::fs;
use std::path::Path;

use sprout_eval::report::write_csv;

use super::chart::chart;
use super::options::VPN_SECTION;
use super::results::{VpnFlowRow, VpnRateRow, VpnResults, ARMS};
use crate::emulate::report::merge_named_section;
use crate::error::{Context, LabError};

/// A figure with `digits` decimals, or "–".
fn fmt(v: Option<f64>, digits: usize) -> String {
    v.map_or("–".into(), |v| format!("{v:.digits$}"))
}

/// The line-rate part's table (Markdown).
pub fn rate_table(rows: &[VpnRateRow]) -> String {
    let mut s = String::from(
        "| arm | goodput, Mbit/s | server end CPU, s/GB | client end CPU, s/GB |\n|---|---:|---:|---:|\n",
    );
    for r in rows {
        let _ = writeln!(
            s,
            "| {} | {:.1} | {} | {} |",
            r.arm,
            r.goodput_mbps,
            fmt(r.server_cpu_s_per_gb, 2),
            fmt(r.client_cpu_s_per_gb, 2)
        );
    }
    s
}

/// The LTE part's table (Markdown): a row per flow and direction, each arm's rate and delay
/// p95 side by side.
pub fn lte_table(rows: &[VpnFlowRow]) -> String {
    let mut s = String::from("| flow | direction |");
    for arm in ARMS {
        let _ = write!(s, " {arm}: kbit/s | {arm}: p95 ms |");
    }
    s.push_str("\n|---|---|");
    s.push_str(&"---:|".repeat(2 * ARMS.len()));
    s.push('\n');
    let mut keys: Vec<(&str, &str)> = Vec::new();
    for r in rows {
        if !keys.contains(&(&r.flow, &r.direction)) {
            keys.push((&r.flow, &r.direction));
        }
    }
    for (flow, dir) in keys {
        let _ = write!(s, "| {flow} | {dir} |");
        for arm in ARMS {
            let r = rows
                .iter()
                .find(|r| r.arm == arm && r.flow == flow && r.direction == dir);
            let _ = write!(
                s,
                " {} | {} |",
                fmt(r.map(|r| r.rate_kbps), 0),
                fmt(r.and_then(|r| r.delay_p95_ms), 0)
            );
        }
        s.push('\n');
    }
    s
}

/// The tables of both parts that ran, with their settings.
fn tables(res: &VpnResults) -> String {
    let mut s = String::new();
    if !res.rate.is_empty() {
        let _ = writeln!(
            s,
            "One Cubic download alone over a constant {:.0} Mbit/s emulated link ({:.0} s runs, \
             goodput from {:.0} s; CPU of each tunnel end over the whole run):\n",
            res.rate[0].link_mbps, res.rate_duration_s, res.rate_skip_s
        );
        s.push_str(&rate_table(&res.rate));
        s.push('\n');
    }
    if let Some(link) = &res.lte_link {
        let _ = writeln!(
            s,
            "{link}, the Cubic download (down) beside the paced stream, then beside the WebRTC \
             call if it ran ({:.0} s runs, measured from {:.0} s); delays one-way (the call's: \
             capture to decode):\n",
            res.lte_duration_s, res.lte_skip_s
        );
        s.push_str(&lte_table(&res.lte));
        s.push('\n');
    }
    s
}

/// What the terminal shows.
pub fn text(res: &VpnResults, out: &Path) -> String {
    let mut s = format!(
        "vpn: SproutTunnel against WireGuard ({}, {}):\n\n",
        res.boringtun_version, res.wg_version
    );
    s.push_str(&tables(res));
    let _ = writeln!(
        s,
        "wrote vpn-rate.csv, vpn-lte.csv, vpn.json, vpn.svg and the \"Against WireGuard\" \
         section of report.md in {}, every peer's output in {}",
        out.display(),
        out.join("tunnel").display()
    );
    s
}

/// The `## Against WireGuard` section of report.md.
pub fn report_section(res: &VpnResults) -> String {
    let mut s = format!(
        "{VPN_SECTION}\n\nSproutTunnel against boringtun ({}, configured with {}), \
         in the same namespaces over the same emulated links (`sprout eval --emulate \
         --experiments vpn`).\n\n",
        res.boringtun_version, res.wg_version
    );
    s.push_str(&tables(res));
    s.push_str("![SproutTunnel against WireGuard](vpn.svg)\n");
    s
}

/// Writes the CSVs, the JSON, the chart and the report's section.
pub(super) fn write_outputs(out: &Path, res: &VpnResults) -> Result<(), LabError> {
    write_csv(&out.join("vpn-rate.csv"), &res.rate)?;
    write_csv(&out.join("vpn-lte.csv"), &res.lte)?;
    fs::write(out.join("vpn.json"), serde_json::to_string_pretty(res)?)?;
    fs::write(out.join("vpn.svg"), chart(res))?;
    let path = out.join("report.md");
    let old = fs::read_to_string(&path).unwrap_or_default();
    fs::write(
        &path,
        merge_named_section(&old, VPN_SECTION, &report_section(res)),
    )
    .with_context(|| format!("writing {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rate_rows() -> Vec<VpnRateRow> {
        vec![
            VpnRateRow::new("direct", 1000.0, 940_000.0, 2_000_000_000, None, "d".into()),
            VpnRateRow::new(
                "boringtun",
                1000.0,
                610_500.0,
                1_000_000_000,
                Some((3.0, 4.5)),
                "b".into(),
            ),
            VpnRateRow::new(
                "sprout",
                1000.0,
                380_000.0,
                500_000_000,
                Some((2.0, 1.0)),
                "s".into(),
            ),
        ]
    }

    fn lte_rows() -> Vec<VpnFlowRow> {
        let row = |arm: &str, flow: &str, dir: &str, rate: f64, p95: Option<f64>| VpnFlowRow {
            arm: arm.into(),
            flow: flow.into(),
            direction: dir.into(),
            rate_kbps: rate,
            delay_p50_ms: p95.map(|d| d / 2.0),
            delay_p95_ms: p95,
        };
        vec![
            row("direct", "cubic", "down", 4000.0, None),
            row("direct", "paced", "down", 490.0, Some(14300.0)),
            row("boringtun", "paced", "down", 480.0, Some(15100.0)),
            row("sprout", "paced", "down", 470.0, Some(580.0)),
        ]
    }

    #[test]
    fn cpu_per_gb_is_cpu_over_gigabytes_and_direct_has_none() {
        let rows = rate_rows();
        assert_eq!(rows[0].server_cpu_s_per_gb, None);
        assert_eq!(rows[1].server_cpu_s_per_gb, Some(3.0));
        assert_eq!(rows[2].client_cpu_s_per_gb, Some(2.0));
        assert!((rows[1].goodput_mbps - 610.5).abs() < 1e-9);
        // No bytes: no figure rather than infinity.
        let none = VpnRateRow::new("sprout", 1000.0, 0.0, 0, Some((1.0, 1.0)), String::new());
        assert_eq!(none.client_cpu_s_per_gb, None);
    }

    #[test]
    fn tables_show_every_arm_and_dashes_for_what_was_not_measured() {
        let t = rate_table(&rate_rows());
        assert!(t.contains("| direct | 940.0 | – | – |"), "{t}");
        assert!(t.contains("| boringtun | 610.5 | 3.00 | 4.50 |"), "{t}");
        let t = lte_table(&lte_rows());
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines.len(), 4, "{t}");
        // The download was measured direct only: the tunnels' cells are dashes.
        assert_eq!(lines[2], "| cubic | down | 4000 | – | – | – | – | – |");
        assert_eq!(
            lines[3],
            "| paced | down | 490 | 14300 | 480 | 15100 | 470 | 580 |"
        );
    }

    #[test]
    fn csv_and_json_read_back_as_written() {
        let dir = tempfile::tempdir().unwrap();
        let res = VpnResults {
            rate: rate_rows(),
            lte_link: Some("Verizon-LTE-short".into()),
            lte: lte_rows(),
            ..VpnResults::default()
        };
        write_outputs(dir.path(), &res).unwrap();
        let mut rdr = csv::Reader::from_path(dir.path().join("vpn-rate.csv")).unwrap();
        let back: Vec<VpnRateRow> = rdr.deserialize().map(Result::unwrap).collect();
        assert_eq!(back, res.rate);
        let mut rdr = csv::Reader::from_path(dir.path().join("vpn-lte.csv")).unwrap();
        let back: Vec<VpnFlowRow> = rdr.deserialize().map(Result::unwrap).collect();
        assert_eq!(back, res.lte);
        let json: VpnResults =
            serde_json::from_str(&fs::read_to_string(dir.path().join("vpn.json")).unwrap())
                .unwrap();
        assert_eq!(json.rate, res.rate);
        let report = fs::read_to_string(dir.path().join("report.md")).unwrap();
        assert!(
            report.starts_with(VPN_SECTION) && report.contains("vpn.svg"),
            "{report}"
        );
        let svg = fs::read_to_string(dir.path().join("vpn.svg")).unwrap();
        assert!(svg.contains("boringtun") && svg.contains("</svg>"), "{svg}");
    }
}
