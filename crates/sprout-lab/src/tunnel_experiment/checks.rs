//! The §5.7 table of the isolation experiment and its acceptance checks.

use sprout_eval::paper;

use super::options::{MAX_DELAY_SHARE, MIN_BULK_SHARE, MIN_INTERACTIVE_SHARE};
use super::results::{IsolationRun, TunnelCheck, TunnelRow};

/// A change for the table: "+12%" / "-55%" for throughputs, "÷35" / "×1.4" for delays.
pub(super) fn change(direct: f64, tunnel: f64, delay: bool) -> String {
    if !(direct > 0.0 && tunnel.is_finite()) {
        return "–".into();
    }
    if delay {
        if tunnel > 0.0 && tunnel < direct {
            format!("÷{:.1}", direct / tunnel)
        } else {
            format!("×{:.2}", tunnel / direct)
        }
    } else {
        format!("{:+.0}%", 100.0 * (tunnel / direct - 1.0))
    }
}

/// The §5.7 table and the acceptance checks of two runs.
pub(super) fn table_and_checks(
    d: &IsolationRun,
    t: &IsolationRun,
) -> (Vec<TunnelRow>, Vec<TunnelCheck>) {
    let p = paper::TUNNEL;
    let row = |metric: &str, unit: &str, a: f64, b: f64, delay: bool, paper: Option<(f64, f64)>| {
        TunnelRow {
            metric: metric.into(),
            unit: unit.into(),
            direct: a,
            tunnel: b,
            change: change(a, b, delay),
            paper_direct: paper.map(|x| x.0),
            paper_tunnel: paper.map(|x| x.1),
        }
    };
    let ms = (p.skype_delay_s.0 * 1e3, p.skype_delay_s.1 * 1e3);
    let rows = vec![
        row(
            "bulk (Cubic) throughput",
            "kbit/s",
            d.bulk_kbps,
            t.bulk_kbps,
            false,
            Some(p.cubic_kbps),
        ),
        row(
            "interactive throughput, down",
            "kbit/s",
            d.down.throughput_kbps,
            t.down.throughput_kbps,
            false,
            Some(p.skype_kbps),
        ),
        row(
            "interactive 95% delay, down",
            "ms",
            d.down.delay_p95_ms,
            t.down.delay_p95_ms,
            true,
            Some(ms),
        ),
        row(
            "interactive throughput, up",
            "kbit/s",
            d.up.throughput_kbps,
            t.up.throughput_kbps,
            false,
            None,
        ),
        row(
            "interactive 95% delay, up",
            "ms",
            d.up.delay_p95_ms,
            t.up.delay_p95_ms,
            true,
            None,
        ),
        row(
            "link capacity, down",
            "kbit/s",
            d.capacity_down_kbps,
            t.capacity_down_kbps,
            false,
            None,
        ),
    ];
    let share = |a: f64, b: f64| if b > 0.0 { a / b } else { 0.0 };
    let delay_share = share(t.down.delay_p95_ms, d.down.delay_p95_ms);
    let checks = vec![
        TunnelCheck {
            ok: d.down.delay_p95_ms > 0.0 && delay_share <= MAX_DELAY_SHARE,
            text: format!(
                "The interactive flow's 95% one-way delay (down, the download's direction) \
                 through the tunnel is at most 1/10 of direct: {:.0} ms against {:.0} ms \
                 ({:.3} of it).",
                t.down.delay_p95_ms, d.down.delay_p95_ms, delay_share
            ),
        },
        TunnelCheck {
            ok: [&t.down, &t.up]
                .iter()
                .all(|f| share(f.throughput_kbps, f.offered_kbps) >= MIN_INTERACTIVE_SHARE),
            text: format!(
                "The interactive flow's throughput through the tunnel is at least 90% of what \
                 it offers: down {:.0} of {:.0} kbit/s ({:.1}%), up {:.0} of {:.0} kbit/s \
                 ({:.1}%).",
                t.down.throughput_kbps,
                t.down.offered_kbps,
                100.0 * share(t.down.throughput_kbps, t.down.offered_kbps),
                t.up.throughput_kbps,
                t.up.offered_kbps,
                100.0 * share(t.up.throughput_kbps, t.up.offered_kbps)
            ),
        },
        TunnelCheck {
            ok: share(t.bulk_kbps, d.bulk_kbps) >= MIN_BULK_SHARE,
            text: format!(
                "The bulk flow keeps at least 30% of its direct throughput through the tunnel: \
                 {:.0} of {:.0} kbit/s ({:.1}%).",
                t.bulk_kbps,
                d.bulk_kbps,
                100.0 * share(t.bulk_kbps, d.bulk_kbps)
            ),
        },
    ];
    (rows, checks)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tunnel_experiment::results::FlowResult;

    #[test]
    fn changes_read_naturally() {
        assert_eq!(change(8336.0, 3776.0, false), "-55%");
        assert_eq!(change(78.0, 490.0, false), "+528%");
        assert_eq!(change(6000.0, 170.0, true), "÷35.3");
        assert_eq!(change(20.0, 30.0, true), "×1.50");
        assert_eq!(change(0.0, 30.0, true), "–");
    }

    fn run(bulk: f64, down_kbps: f64, down_p95: f64, up_kbps: f64) -> IsolationRun {
        let flow = |dir: &str, kbps: f64, p95: f64| FlowResult {
            direction: dir.into(),
            offered_kbps: 500.0,
            throughput_kbps: kbps,
            delay_p95_ms: p95,
            ..FlowResult::default()
        };
        IsolationRun {
            mode: "x".into(),
            bulk_kbps: bulk,
            down: flow("down", down_kbps, down_p95),
            up: flow("up", up_kbps, 40.0),
            ..IsolationRun::default()
        }
    }

    #[test]
    fn the_checks_hold_exactly_at_their_bounds() {
        let direct = run(8000.0, 500.0, 6000.0, 500.0);
        let (rows, checks) = table_and_checks(&direct, &run(2400.0, 450.0, 600.0, 450.0));
        assert!(checks.iter().all(|c| c.ok), "{checks:?}");
        assert_eq!(rows[0].paper_direct, Some(8336.0));
        assert_eq!(rows[2].paper_tunnel, Some(170.0));
        let (_, checks) = table_and_checks(&direct, &run(2399.0, 449.0, 601.0, 500.0));
        assert!(checks.iter().all(|c| !c.ok), "{checks:?}");
        // The uplink counts for throughput too.
        let (_, checks) = table_and_checks(&direct, &run(8000.0, 500.0, 60.0, 300.0));
        assert_eq!(
            checks.iter().map(|c| c.ok).collect::<Vec<_>>(),
            [true, false, true]
        );
    }
}
