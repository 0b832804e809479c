//! The bench's report: a row per session, the totals, as text or JSON.

use std::collections::HashMap;
use std::sync::atomic::Ordering;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::load::control::{ClientEnd, ClientsOutcome, Phase};
use crate::load::error::LoadError;
use crate::load::options::LoadOptions;
use crate::load::shared::lock;
use crate::transfer::{SessionEnd, PACED_PAYLOAD};

/// One session's figures.
#[derive(Clone, Debug, Serialize)]
pub struct SessionRow {
    /// The client's address (the server's summaries name the session by it).
    pub session: String,
    /// How the client's session ended.
    pub end: ClientEnd,
    /// How the server's session ended ([`SessionEnd::Bye`]: the client's BYE came; null: no
    /// summary).
    pub server_end: Option<SessionEnd>,
    /// The scheme the server ran the session on, from its summary (null: no summary).
    pub server_scheme: Option<String>,
    /// DATA messages the server sent / the client received (downlink).
    pub down_released: u64,
    /// DATA messages the client received (downlink).
    pub down_delivered: u64,
    /// DATA messages the client sent / the server received (uplink).
    pub up_released: u64,
    /// DATA messages the server received (uplink).
    pub up_delivered: u64,
    /// Seconds from the client's start to the server's ACCEPT.
    pub accept_s: Option<f64>,
    /// Whether the session completed: both BYEs came and each way delivered at least the
    /// tolerance.
    pub ok: bool,
}

/// The report.
#[derive(Debug, Serialize)]
pub struct LoadReport {
    /// Concurrent client sessions.
    pub sessions: usize,
    /// Paced rate of each session, each way, kbit/s.
    pub rate_kbps: f64,
    /// The scheme every session's HELLO asked for ("sprout-wide", "sprout", "sprout-ewma").
    pub scheme: String,
    /// Transfer of each session, s.
    pub duration_s: f64,
    /// Seconds over which the clients started.
    pub ramp_s: f64,
    /// Sessions whose handshake the server accepted.
    pub accepted: usize,
    /// Sessions that ended by the peers' BYEs both ways and delivered within tolerance.
    pub completed: usize,
    /// Sessions that failed, fell silent, or delivered less than the tolerance.
    pub lost: usize,
    /// The tolerance: least delivered / released share, each way.
    pub tolerance: f64,
    /// Lowest delivered / released share over the sessions, downlink and uplink.
    pub min_down_share: f64,
    /// Lowest delivered / released share over the sessions, uplink.
    pub min_up_share: f64,
    /// Lowest DATA released by a session over what the rate and duration call for, downlink
    /// (the server's senders) and uplink (the bench's pacing): how close to the nominal rate
    /// the streams ran.
    pub min_down_released_of_nominal: f64,
    /// The same, uplink.
    pub min_up_released_of_nominal: f64,
    /// DATA delivered / released over all sessions, each way.
    pub total_down_share: f64,
    /// DATA delivered / released over all sessions, uplink.
    pub total_up_share: f64,
    /// Slowest ACCEPT after a client's start, s.
    pub max_accept_s: f64,
    /// Downlink one-way delay over every DATA received, ms (p50, p95, p99; measured at the
    /// client's sweep, so up to 5 ms late).
    pub down_owd_ms: [f64; 3],
    /// Highest per-session uplink p95 one-way delay the server reported, ms.
    pub up_owd_p95_max_ms: f64,
    /// Bogus handshakes sent.
    pub flood_sent: u64,
    /// Server CPU time over the run (user + system), s.
    pub server_cpu_s: f64,
    /// Server CPU per session: ms of CPU per second of session (server CPU over the sum of
    /// the sessions' lengths).
    pub server_cpu_ms_per_s_per_session: f64,
    /// Server CPU per second of run, s/s (1.0 is one core busy).
    pub server_cores: f64,
    /// Server threads at the peak of the run.
    pub server_threads_peak: u64,
    /// Server resident memory before the clients and at its peak, KiB.
    pub server_rss_idle_kib: u64,
    /// Server resident memory at its peak, KiB.
    pub server_rss_peak_kib: u64,
    /// (peak - idle) / sessions, KiB.
    pub server_rss_per_session_kib: f64,
    /// Datagrams the kernel dropped at the server's socket (receive buffer full).
    pub server_socket_drops: u64,
    /// Datagrams the kernel dropped at the clients' sockets.
    pub client_socket_drops: u64,
    /// The server's security-layer drop counters, as it reported them (if it did).
    pub server_drops: Value,
    /// The bench process's CPU (the clients, the flood), s.
    pub bench_cpu_s: f64,
    /// From the first client's start to the last one's end, s.
    pub run_s: f64,
    /// Wall time, s.
    pub wall_s: f64,
    /// One row per session.
    pub rows: Vec<SessionRow>,
}

/// Prints the report: lines of text, or one JSON object.
pub(crate) fn print_report(r: &LoadReport, json: bool) -> Result<(), LoadError> {
    if json {
        println!("{}", serde_json::to_string_pretty(r)?);
        return Ok(());
    }
    println!(
        "sprout bench load: {} sessions on one `sprout server` ({}), paced {} kbit/s each way, {} s each (started over {} s), {} bogus handshakes",
        r.sessions, r.scheme, r.rate_kbps, r.duration_s, r.ramp_s, r.flood_sent
    );
    println!(
        "  sessions accepted {}, completed {} of {} (lost {}); slowest ACCEPT {:.3} s",
        r.accepted, r.completed, r.sessions, r.lost, r.max_accept_s
    );
    println!(
        "  delivered/released DATA: lowest session down {:.4}, up {:.4}; all sessions down {:.4}, up {:.4} (tolerance {})",
        r.min_down_share, r.min_up_share, r.total_down_share, r.total_up_share, r.tolerance
    );
    println!(
        "  released DATA of the nominal rate: lowest session down {:.4}, up {:.4}",
        r.min_down_released_of_nominal, r.min_up_released_of_nominal
    );
    println!(
        "  one-way delay down ms: p50 {:.1} p95 {:.1} p99 {:.1}; worst session's uplink p95 {:.1}",
        r.down_owd_ms[0], r.down_owd_ms[1], r.down_owd_ms[2], r.up_owd_p95_max_ms
    );
    println!(
        "  server CPU {:.2} s over {:.1} s ({:.2} cores; {:.3} ms per second per session), {} threads at peak",
        r.server_cpu_s, r.run_s, r.server_cores, r.server_cpu_ms_per_s_per_session, r.server_threads_peak
    );
    println!(
        "  server RSS idle {} KiB, peak {} KiB ({:.1} KiB per session)",
        r.server_rss_idle_kib, r.server_rss_peak_kib, r.server_rss_per_session_kib
    );
    println!("  server drops: {}", r.server_drops);
    println!(
        "  kernel UDP drops: server socket {}, client sockets {}",
        r.server_socket_drops, r.client_socket_drops
    );
    println!(
        "  bench (clients, flood) CPU {:.1} s; wall {:.1} s",
        r.bench_cpu_s, r.wall_s
    );
    for row in r.rows.iter().filter(|row| !row.ok) {
        println!(
            "  lost {}: client end {}, server end {}, down {}/{}, up {}/{}",
            row.session,
            row.end,
            row.server_end.map_or("-", SessionEnd::as_str),
            row.down_delivered,
            row.down_released,
            row.up_delivered,
            row.up_released
        );
    }
    Ok(())
}

/// The measurements of the server process and the bench around the clients' run.
pub(crate) struct Measured {
    /// Server CPU time over the run, s.
    pub(crate) server_cpu_s: f64,
    /// Server resident memory before the clients and at its peak, KiB.
    pub(crate) rss_idle_kib: u64,
    pub(crate) rss_peak_kib: u64,
    /// Kernel drops at the server's socket.
    pub(crate) server_socket_drops: u64,
    /// The bench process's CPU time over the run, s.
    pub(crate) bench_cpu_s: f64,
}

/// One row per client, from what it saw and the server's summary of its session; also every
/// downlink one-way delay (ms) and the worst uplink p95 the server reported (ms).
fn rows(outcome: &ClientsOutcome, summaries: &[Value]) -> (Vec<SessionRow>, Vec<f32>, f64) {
    let by_peer: HashMap<String, &Value> = summaries
        .iter()
        .filter_map(|v| Some((v.get("peer")?.as_str()?.to_string(), v)))
        .collect();
    let mut rows = Vec::new();
    let mut delays: Vec<f32> = Vec::new();
    let mut up_owd_p95_max_ms = 0f64;
    for (c, phase) in &outcome.clients {
        let end = match phase {
            Phase::Done { end } => *end,
            _ => ClientEnd::Timeout,
        };
        let Some(c) = c else {
            rows.push(SessionRow {
                session: "-".into(),
                end: ClientEnd::Failed,
                server_end: None,
                server_scheme: None,
                down_released: 0,
                down_delivered: 0,
                up_released: 0,
                up_delivered: 0,
                accept_s: None,
                ok: false,
            });
            continue;
        };
        let session = c.ep.local_addr().to_string();
        let s = by_peer.get(&session);
        let rx = lock(&c.rx);
        delays.extend_from_slice(&rx.delays_ms);
        if let Some(p95) = s.and_then(|s| s.get("owd_p95_ms")).and_then(Value::as_f64) {
            up_owd_p95_max_ms = up_owd_p95_max_ms.max(p95);
        }
        rows.push(SessionRow {
            end,
            server_end: s
                .and_then(|s| s.get("end"))
                .and_then(|e| SessionEnd::deserialize(e).ok()),
            server_scheme: s
                .and_then(|s| s.get("scheme"))
                .and_then(Value::as_str)
                .map(str::to_string),
            down_released: s
                .and_then(|s| u64_of(s, "data_sent"))
                .or(rx.bye.map(|b| b.data_sent))
                .unwrap_or(0),
            down_delivered: rx.data_received,
            up_released: c.sent.load(Ordering::Acquire),
            up_delivered: s.and_then(|s| u64_of(s, "data_received")).unwrap_or(0),
            accept_s: rx.accepted_at.map(|t| {
                (t.saturating_duration_since(c.started).as_secs_f64() * 1e3).round() / 1e3
            }),
            session,
            ok: false,
        });
    }
    (rows, delays, up_owd_p95_max_ms)
}

fn u64_of(v: &Value, key: &str) -> Option<u64> {
    v.get(key).and_then(Value::as_u64)
}

/// Delivered over released, 0 when nothing was released.
fn share(d: u64, r: u64) -> f64 {
    if r == 0 {
        0.0
    } else {
        d as f64 / r as f64
    }
}

/// The report of a run: each session's row and the totals.
pub(crate) fn build(
    o: &LoadOptions,
    ramp: f64,
    outcome: ClientsOutcome,
    summaries: &[Value],
    m: &Measured,
    wall_s: f64,
) -> LoadReport {
    // Each summary carries the server-wide drop counters at its end; the largest is the
    // latest.
    let server_drops = summaries
        .iter()
        .filter_map(|v| v.get("drops"))
        .max_by_key(|d| {
            d.as_object()
                .map_or(0, |o| o.values().filter_map(Value::as_u64).sum::<u64>())
        })
        .cloned()
        .unwrap_or(Value::Null);
    let (mut rows, mut delays, up_owd_p95_max_ms) = rows(&outcome, summaries);
    delays.sort_by(f32::total_cmp);
    let quantile = |p: f64| -> f64 {
        if delays.is_empty() {
            return f64::NAN;
        }
        let i = ((p * delays.len() as f64).ceil() as usize).clamp(1, delays.len()) - 1;
        (delays[i] as f64 * 1000.0).round() / 1000.0
    };
    let ok = |r: &SessionRow| {
        r.end == ClientEnd::Session(SessionEnd::Bye)
            && r.server_end == Some(SessionEnd::Bye)
            && share(r.down_delivered, r.down_released) >= o.tolerance
            && share(r.up_delivered, r.up_released) >= o.tolerance
    };
    for r in rows.iter_mut() {
        r.ok = ok(r);
    }
    let completed = rows.iter().filter(|r| r.ok).count();
    let min_of = |f: &dyn Fn(&SessionRow) -> f64| rows.iter().map(f).fold(f64::INFINITY, f64::min);
    let sum_of = |f: &dyn Fn(&SessionRow) -> u64| rows.iter().map(f).sum::<u64>();
    // DATA messages a session's sender releases over the duration at the nominal rate.
    let nominal = (o.duration * o.rate.round() * 1000.0 / (8.0 * PACED_PAYLOAD as f64)).max(1.0);
    LoadReport {
        sessions: o.sessions,
        rate_kbps: o.rate,
        scheme: o.scheme.as_str().to_string(),
        duration_s: o.duration,
        ramp_s: ramp,
        accepted: rows.iter().filter(|r| r.accept_s.is_some()).count(),
        completed,
        lost: o.sessions - completed,
        tolerance: o.tolerance,
        min_down_share: min_of(&|r| share(r.down_delivered, r.down_released)),
        min_up_share: min_of(&|r| share(r.up_delivered, r.up_released)),
        min_down_released_of_nominal: min_of(&|r| r.down_released as f64) / nominal,
        min_up_released_of_nominal: min_of(&|r| r.up_released as f64) / nominal,
        total_down_share: share(sum_of(&|r| r.down_delivered), sum_of(&|r| r.down_released)),
        total_up_share: share(sum_of(&|r| r.up_delivered), sum_of(&|r| r.up_released)),
        max_accept_s: rows.iter().filter_map(|r| r.accept_s).fold(0.0, f64::max),
        down_owd_ms: [quantile(0.5), quantile(0.95), quantile(0.99)],
        up_owd_p95_max_ms,
        flood_sent: outcome.flood_sent,
        server_cpu_s: m.server_cpu_s,
        server_cpu_ms_per_s_per_session: m.server_cpu_s * 1000.0 / outcome.session_s.max(1e-3),
        server_cores: m.server_cpu_s / outcome.run_s.max(1e-3),
        server_threads_peak: outcome.threads_peak,
        server_rss_idle_kib: m.rss_idle_kib,
        server_rss_peak_kib: m.rss_peak_kib,
        server_rss_per_session_kib: m.rss_peak_kib.saturating_sub(m.rss_idle_kib) as f64
            / o.sessions as f64,
        server_socket_drops: m.server_socket_drops,
        client_socket_drops: outcome.client_drops,
        server_drops,
        bench_cpu_s: m.bench_cpu_s,
        run_s: outcome.run_s,
        wall_s,
        rows,
    }
}
