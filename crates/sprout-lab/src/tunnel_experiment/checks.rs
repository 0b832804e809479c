//! The §5.7 table of the isolation experiment and its acceptance checks.

use sprout_eval::paper;

use super::options::{
    MAX_CALL_DELAY_SHARE, MAX_DELAY_SHARE, MAX_OTHER_DELAY_SHARE, MIN_BULK_SHARE,
    MIN_CALL_RATE_SHARE, MIN_INTERACTIVE_SHARE,
};
use super::results::{CallFlow, CallRun, IsolationRun, TunnelCheck, TunnelRow};

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

/// A row of the table.
fn row(
    metric: &str,
    unit: &str,
    direct: f64,
    tunnel: f64,
    delay: bool,
    paper: Option<(f64, f64)>,
) -> TunnelRow {
    TunnelRow {
        metric: metric.into(),
        unit: unit.into(),
        direct,
        tunnel,
        change: change(direct, tunnel, delay),
        paper_direct: paper.map(|x| x.0),
        paper_tunnel: paper.map(|x| x.1),
    }
}

/// `a / b`, 0 when `b` is not positive.
fn share(a: f64, b: f64) -> f64 {
    if b > 0.0 {
        a / b
    } else {
        0.0
    }
}

/// The WebRTC call's rows (frame delay p50 and p95, received rate; down then up; the
/// download's goodput in the call's runs) and its checks ([`call_checks`]). The paper's Skype
/// values go beside the rows of the download's direction, as for the paced stream.
fn call_rows_and_checks(d: &CallRun, t: &CallRun) -> (Vec<TunnelRow>, Vec<TunnelCheck>) {
    let p = paper::TUNNEL;
    let ms = (p.skype_delay_s.0 * 1e3, p.skype_delay_s.1 * 1e3);
    let mut rows = Vec::new();
    for (a, b, paper) in [(&d.down, &t.down, true), (&d.up, &t.up, false)] {
        let dir = &a.direction;
        rows.extend([
            row(
                &format!("WebRTC frame delay p50, {dir}"),
                "ms",
                a.delay_p50_ms,
                b.delay_p50_ms,
                true,
                None,
            ),
            row(
                &format!("WebRTC frame delay p95, {dir}"),
                "ms",
                a.delay_p95_ms,
                b.delay_p95_ms,
                true,
                paper.then_some(ms),
            ),
            row(
                &format!("WebRTC received, {dir}"),
                "kbit/s",
                a.received_kbps,
                b.received_kbps,
                false,
                paper.then_some(p.skype_kbps),
            ),
        ]);
    }
    rows.push(row(
        "bulk throughput, call's runs",
        "kbit/s",
        d.bulk_kbps,
        t.bulk_kbps,
        false,
        None,
    ));
    (rows, call_checks(d, t))
}

/// The call's checks: frame delay p95 down (the download's direction) through the tunnel at
/// most [`MAX_CALL_DELAY_SHARE`] of direct, with frames through the tunnel; p95 up at most
/// [`MAX_OTHER_DELAY_SHARE`] of direct, with frames; the received rate through the tunnel at
/// least [`MIN_CALL_RATE_SHARE`] of direct's each way.
fn call_checks(d: &CallRun, t: &CallRun) -> Vec<TunnelCheck> {
    let down = share(t.down.delay_p95_ms, d.down.delay_p95_ms);
    let up = share(t.up.delay_p95_ms, d.up.delay_p95_ms);
    let figures = |f: &CallFlow| format!("{:.0} ms, {} frames", f.delay_p95_ms, f.frames);
    let rate = |a: &CallFlow, b: &CallFlow| share(b.received_kbps, a.received_kbps);
    vec![
        TunnelCheck {
            ok: d.down.delay_p95_ms > 0.0 && t.down.frames > 0 && down <= MAX_CALL_DELAY_SHARE,
            text: format!(
                "The WebRTC call's frame delay p95 (down, the download's direction) through the \
                 tunnel is at most 1/5 of direct: {} against {} ({:.3} of it).",
                figures(&t.down),
                figures(&d.down),
                down,
            ),
        },
        TunnelCheck {
            ok: d.up.delay_p95_ms > 0.0 && t.up.frames > 0 && up <= MAX_OTHER_DELAY_SHARE,
            text: format!(
                "The WebRTC call's frame delay p95 (up, the direction without the download) \
                 through the tunnel is at most direct's: {} against {} ({:.3} of it).",
                figures(&t.up),
                figures(&d.up),
                up,
            ),
        },
        TunnelCheck {
            ok: [(&d.down, &t.down), (&d.up, &t.up)]
                .iter()
                .all(|(a, b)| rate(a, b) >= MIN_CALL_RATE_SHARE),
            text: format!(
                "The WebRTC call receives at least 80% of its direct rate through the tunnel \
                 each way: down {:.0} of {:.0} kbit/s ({:.1}%), up {:.0} of {:.0} kbit/s \
                 ({:.1}%).",
                t.down.received_kbps,
                d.down.received_kbps,
                100.0 * rate(&d.down, &t.down),
                t.up.received_kbps,
                d.up.received_kbps,
                100.0 * rate(&d.up, &t.up),
            ),
        },
    ]
}

/// The §5.7 table and the acceptance checks of two runs (with the WebRTC call's rows and
/// check when both carry the call of their mode's own run).
pub(super) fn table_and_checks(
    d: &IsolationRun,
    t: &IsolationRun,
) -> (Vec<TunnelRow>, Vec<TunnelCheck>) {
    let p = paper::TUNNEL;
    let ms = (p.skype_delay_s.0 * 1e3, p.skype_delay_s.1 * 1e3);
    let mut rows = vec![
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
    let delay_share = share(t.down.delay_p95_ms, d.down.delay_p95_ms);
    let up_share = share(t.up.delay_p95_ms, d.up.delay_p95_ms);
    let mut checks = vec![
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
            ok: d.up.delay_p95_ms > 0.0 && up_share <= MAX_OTHER_DELAY_SHARE,
            text: format!(
                "The interactive flow's 95% one-way delay (up, the direction without the \
                 download) through the tunnel is at most direct's: {:.0} ms against {:.0} ms \
                 ({:.3} of it).",
                t.up.delay_p95_ms, d.up.delay_p95_ms, up_share
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
    if let (Some(dc), Some(tc)) = (&d.call, &t.call) {
        let (call_rows, call_checks) = call_rows_and_checks(dc, tc);
        rows.extend(call_rows);
        checks.extend(call_checks);
    }
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
        run_up(bulk, down_kbps, down_p95, up_kbps, 40.0)
    }

    fn run_up(bulk: f64, down_kbps: f64, down_p95: f64, up_kbps: f64, up_p95: f64) -> IsolationRun {
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
            up: flow("up", up_kbps, up_p95),
            ..IsolationRun::default()
        }
    }

    fn oks(checks: &[TunnelCheck]) -> Vec<bool> {
        checks.iter().map(|c| c.ok).collect()
    }

    #[test]
    fn the_checks_hold_exactly_at_their_bounds() {
        let direct = run(8000.0, 500.0, 6000.0, 500.0);
        let (rows, checks) = table_and_checks(&direct, &run(2400.0, 450.0, 600.0, 450.0));
        assert!(checks.iter().all(|c| c.ok), "{checks:?}");
        assert_eq!(rows[0].paper_direct, Some(8336.0));
        assert_eq!(rows[2].paper_tunnel, Some(170.0));
        let worse = run_up(2399.0, 449.0, 601.0, 500.0, 40.001);
        let (_, checks) = table_and_checks(&direct, &worse);
        assert!(checks.iter().all(|c| !c.ok), "{checks:?}");
        // The uplink counts for throughput too.
        let (_, checks) = table_and_checks(&direct, &run(8000.0, 500.0, 60.0, 300.0));
        assert_eq!(oks(&checks), [true, true, false, true]);
    }

    /// Issue 36: the direction without the download is checked against direct's own delay,
    /// not a share of it: 205 ms direct and 476 ms through the tunnel (the run) fail.
    #[test]
    fn the_direction_without_the_download_may_not_be_worse_than_direct() {
        let direct = run_up(8000.0, 500.0, 6000.0, 500.0, 205.0);
        let (_, checks) = table_and_checks(&direct, &run_up(2400.0, 480.0, 580.0, 496.0, 476.0));
        assert_eq!(oks(&checks), [true, false, true, true]);
        assert!(
            checks[1].text.contains("476 ms against 205 ms"),
            "{}",
            checks[1].text
        );
        let (_, checks) = table_and_checks(&direct, &run_up(2400.0, 480.0, 580.0, 496.0, 205.0));
        assert!(checks.iter().all(|c| c.ok), "{checks:?}");
        // No delay measured directly is no pass.
        let none = run_up(8000.0, 500.0, 6000.0, 500.0, 0.0);
        let (_, checks) = table_and_checks(&none, &run_up(2400.0, 480.0, 580.0, 496.0, 0.0));
        assert!(!checks[1].ok);
    }

    fn with_call(r: IsolationRun, down_p95: f64, down_frames: u64, up_p95: f64) -> IsolationRun {
        with_call_rates(r, down_p95, down_frames, up_p95, (300.0, 300.0))
    }

    fn with_call_rates(
        mut r: IsolationRun,
        down_p95: f64,
        down_frames: u64,
        up_p95: f64,
        kbps: (f64, f64),
    ) -> IsolationRun {
        let flow = |dir: &str, p95: f64, frames: u64, received_kbps: f64| CallFlow {
            direction: dir.into(),
            frames,
            delay_p50_ms: p95 / 2.0,
            delay_p95_ms: p95,
            received_kbps,
            ..CallFlow::default()
        };
        r.call = Some(CallRun {
            down: flow("down", down_p95, down_frames, kbps.0),
            up: flow("up", up_p95, 1000, kbps.1),
            media_s: 150.0,
            ..CallRun::default()
        });
        r
    }

    #[test]
    fn the_call_check_holds_at_a_fifth_of_direct() {
        let direct = with_call(run(8000.0, 500.0, 6000.0, 500.0), 5000.0, 1500, 200.0);
        let tunnel =
            |p95: f64, frames: u64| with_call(run(2400.0, 450.0, 600.0, 450.0), p95, frames, 200.0);
        let (rows, checks) = table_and_checks(&direct, &tunnel(1000.0, 1500));
        assert_eq!(checks.len(), 7);
        assert!(checks.iter().all(|c| c.ok), "{checks:?}");
        // Seven rows of the call after the six of the flows; the paper's Skype beside down.
        assert_eq!(rows.len(), 13);
        assert_eq!(rows[12].metric, "bulk throughput, call's runs");
        assert_eq!(rows[7].metric, "WebRTC frame delay p95, down");
        assert_eq!((rows[7].direct, rows[7].tunnel), (5000.0, 1000.0));
        assert_eq!(rows[7].paper_tunnel, Some(170.0));
        assert_eq!(rows[10].metric, "WebRTC frame delay p95, up");
        assert_eq!(rows[10].paper_direct, None);
        let (_, checks) = table_and_checks(&direct, &tunnel(1001.0, 1500));
        assert!(!checks[4].ok);
        // No frame through the tunnel is no pass, however small its (empty) p95.
        let (_, checks) = table_and_checks(&direct, &tunnel(0.0, 0));
        assert!(!checks[4].ok);
        // Without the call in both runs: no call rows and no call check.
        let (rows, checks) = table_and_checks(&run(8000.0, 500.0, 6000.0, 500.0), &tunnel(1.0, 9));
        assert_eq!((rows.len(), checks.len()), (6, 4));
    }

    /// The call's up delay is held to direct's, and its received rate to 80% of direct's each
    /// way (the run: 781 kbit/s up direct, 272 through the tunnel; 388 and 225 down).
    #[test]
    fn the_call_up_and_its_rates_are_checked() {
        let base = || run(8000.0, 500.0, 6000.0, 500.0);
        let direct = with_call_rates(base(), 13_000.0, 1500, 713.0, (388.0, 781.0));
        let tunnel = |up_p95: f64, kbps: (f64, f64)| {
            with_call_rates(run(2400.0, 450.0, 600.0, 450.0), 400.0, 1500, up_p95, kbps)
        };
        let (_, checks) = table_and_checks(&direct, &tunnel(878.0, (225.0, 272.0)));
        assert_eq!(oks(&checks[4..]), [true, false, false]);
        assert!(
            checks[6].text.contains("down 225 of 388"),
            "{}",
            checks[6].text
        );
        let (_, checks) = table_and_checks(&direct, &tunnel(713.0, (311.0, 625.0)));
        assert_eq!(oks(&checks[4..]), [true, true, true]);
        // Either direction's rate below 80% fails it.
        let (_, checks) = table_and_checks(&direct, &tunnel(713.0, (310.0, 781.0)));
        assert!(!checks[6].ok);
        let (_, checks) = table_and_checks(&direct, &tunnel(713.0, (388.0, 624.0)));
        assert!(!checks[6].ok);
    }
}
