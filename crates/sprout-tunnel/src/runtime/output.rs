//! The runtime's output on standard output: status lines (rates from the deltas of successive
//! [`TunnelStatus`] snapshots), the server's client events and the exit line, as text or, with
//! `--json`, one JSON object per line.

use std::collections::HashMap;
use std::io::{self, Write};

use serde_json::{json, Value};
use sprout_core::time::Instant;

use super::io::IoCounters;
use super::stop::ExitReason;
use crate::control::Assignment;
use crate::packet::FlowKey;
use crate::server::ServerTunnelEvent;
use crate::status::{SessionStatus, TunnelDrops, TunnelStatus};

/// Flows shown in a text status line.
pub const TEXT_FLOWS: usize = 3;

/// Prints one line on standard output, ignoring a closed pipe.
pub(super) fn out(line: &str) {
    let stdout = io::stdout();
    let mut lock = stdout.lock();
    let _ = writeln!(lock, "{line}");
    let _ = lock.flush();
}

pub(super) fn out_json(v: Value) {
    out(&v.to_string());
}

pub(super) fn round1(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

/// One session's counters at the previous status line.
#[derive(Clone, Copy, Default)]
pub(super) struct Prev {
    pub(super) sent_bytes: u64,
    pub(super) received_bytes: u64,
    pub(super) sent_packets: u64,
    pub(super) received_packets: u64,
}

/// Turns successive [`TunnelStatus`] snapshots into status lines (rates from deltas).
pub(super) struct StatusPrinter {
    pub(super) json: bool,
    pub(super) server: bool,
    pub(super) last: Instant,
    pub(super) sessions: HashMap<u32, Prev>,
    /// (session, flow) → (sent bytes, last seen µs).
    pub(super) flows: HashMap<(u32, FlowKey), (u64, Instant)>,
    /// Totals of sessions that have ended.
    pub(super) closed: Prev,
    pub(super) latest: Option<TunnelStatus>,
}

/// A flow's line in the status output.
pub(super) struct FlowRate {
    pub(super) session: u32,
    pub(super) flow: FlowKey,
    pub(super) queued_bytes: usize,
    pub(super) kbps: f64,
    pub(super) dropped: u64,
}

impl StatusPrinter {
    pub(super) fn new(json: bool, server: bool) -> StatusPrinter {
        StatusPrinter {
            json,
            server,
            last: Instant::ZERO,
            sessions: HashMap::new(),
            flows: HashMap::new(),
            closed: Prev::default(),
            latest: None,
        }
    }

    pub(super) fn print(&mut self, s: TunnelStatus, io: &IoCounters) {
        let dt_s = (s.now_us - self.last).as_secs_f64().max(1e-3);
        let mut t = LineTotals::default();
        let mut sessions_json = Vec::new();
        let mut rates: Vec<FlowRate> = Vec::new();
        let mut seen = HashMap::new();
        for ss in &s.sessions {
            sessions_json.push(self.session_json(ss, s.now_us, dt_s, &mut t, &mut rates));
            seen.insert(
                ss.id,
                Prev {
                    sent_bytes: ss.sent_bytes,
                    received_bytes: ss.received_bytes,
                    sent_packets: ss.sent_packets,
                    received_packets: ss.received_packets,
                },
            );
        }
        self.replace_sessions(seen);
        // Flows not seen for a minute are forgotten.
        let now = s.now_us;
        self.flows
            .retain(|_, &mut (_, at)| now - at < sprout_core::Duration::from_secs(60));
        rates.sort_by(|a, b| {
            b.kbps
                .total_cmp(&a.kbps)
                .then(b.queued_bytes.cmp(&a.queued_bytes))
        });
        // Up = mobile host to relay: the client's sent, the server's received.
        let (up, down) = if self.server {
            (t.received_bytes, t.sent_bytes)
        } else {
            (t.sent_bytes, t.received_bytes)
        };
        let line = LineRates { up, down, dt_s };
        if self.json {
            out_json(status_json(&s, io, &t, &line, sessions_json));
        } else {
            out(&self.text_line(&s, &t, &rates, &line));
        }
        self.last = s.now_us;
        self.latest = Some(s);
    }

    /// One session's part of a status line (JSON), adding its deltas to `t` and its flows'
    /// rates to `rates`, and remembering its flows' byte counts for the next line.
    pub(super) fn session_json(
        &mut self,
        ss: &SessionStatus,
        now: Instant,
        dt_s: f64,
        t: &mut LineTotals,
        rates: &mut Vec<FlowRate>,
    ) -> Value {
        let kbps = |bytes: u64| kbps_over(bytes, dt_s);
        let prev = self.sessions.get(&ss.id).copied().unwrap_or_default();
        let ds = ss.sent_bytes.saturating_sub(prev.sent_bytes);
        let dr = ss.received_bytes.saturating_sub(prev.received_bytes);
        t.sent_bytes += ds;
        t.received_bytes += dr;
        t.queued_bytes += ss.queue.queued_bytes;
        t.cap_bytes += ss.queue.cap_bytes;
        let f = ss.forecast.last().copied().unwrap_or(0) as u64;
        t.forecast_packets += f;
        t.over_cap += ss.queue.drops.over_cap;
        t.too_many_flows += ss.queue.drops.too_many_flows;
        let mut flows_json = Vec::new();
        for fl in &ss.flows {
            let key = (ss.id, fl.flow);
            let before = self.flows.get(&key).map(|&(b, _)| b).unwrap_or(0);
            let rate = kbps(fl.sent_bytes.saturating_sub(before));
            if self.flows.len() < 65_536 || self.flows.contains_key(&key) {
                self.flows.insert(key, (fl.sent_bytes, now));
            }
            flows_json.push(json!({
                "flow": fl.flow.to_string(),
                "queued_bytes": fl.queued_bytes,
                "queued_packets": fl.queued_packets,
                "sent_kbps": rate,
                "sent_bytes": fl.sent_bytes,
                "dropped_packets": fl.dropped_packets,
            }));
            rates.push(FlowRate {
                session: ss.id,
                flow: fl.flow,
                queued_bytes: fl.queued_bytes,
                kbps: rate,
                dropped: fl.dropped_packets,
            });
        }
        let a = ss.assignment;
        json!({
            "id": ss.id,
            "peer": ss.peer,
            "addr": ss.addr,
            "v4": a.and_then(|a| a.v4).map(|v| v.client.to_string()),
            "v6": a.and_then(|a| a.v6).map(|v| v.client.to_string()),
            "queued_bytes": ss.queue.queued_bytes,
            "queued_packets": ss.queue.queued_packets,
            "cap_bytes": ss.queue.cap_bytes,
            "active_flows": ss.queue.active_flows,
            "tracked_flows": ss.queue.tracked_flows,
            "queue_drops": ss.queue.drops,
            "forecast": ss.forecast,
            "forecast_packets": f,
            "window_bytes": ss.window_bytes,
            "incoming_rate_pps": round1(ss.incoming_rate_pps),
            "sent_kbps": kbps(ds),
            "received_kbps": kbps(dr),
            "sent_bytes": ss.sent_bytes,
            "received_bytes": ss.received_bytes,
            "sent_packets": ss.sent_packets,
            "received_packets": ss.received_packets,
            "flows": flows_json,
        })
    }

    /// Makes `seen` the current sessions; the totals of sessions gone since the last line are
    /// kept for the exit line.
    pub(super) fn replace_sessions(&mut self, seen: HashMap<u32, Prev>) {
        for (id, p) in &self.sessions {
            if !seen.contains_key(id) {
                self.closed.sent_bytes += p.sent_bytes;
                self.closed.received_bytes += p.received_bytes;
                self.closed.sent_packets += p.sent_packets;
                self.closed.received_packets += p.received_packets;
            }
        }
        self.sessions = seen;
    }

    /// The human-readable status line.
    pub(super) fn text_line(
        &self,
        s: &TunnelStatus,
        t: &LineTotals,
        rates: &[FlowRate],
        line: &LineRates,
    ) -> String {
        let kbps = |bytes: u64| kbps_over(bytes, line.dt_s);
        let mut drops: Vec<String> = drop_names(&s.drops)
            .into_iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect();
        for (k, v) in [
            ("over_cap", t.over_cap),
            ("too_many_flows", t.too_many_flows),
        ] {
            if v > 0 {
                drops.push(format!("{k} {v}"));
            }
        }
        for (k, v) in &s.secure_drops {
            if *v > 0 {
                drops.push(format!("{k} {v}"));
            }
        }
        let top: Vec<String> = rates
            .iter()
            .filter(|r| r.kbps > 0.0 || r.queued_bytes > 0)
            .take(TEXT_FLOWS)
            .map(|r| self.flow_text(r))
            .collect();
        let clients = if self.server {
            match s.clients() {
                (n, 0) => format!("clients {n} | "),
                (n, u) => format!("clients {n} (+{u} unconfirmed) | "),
            }
        } else if s.reconnecting {
            "reconnecting | ".to_string()
        } else {
            String::new()
        };
        let elapsed = round1(s.now_us.as_secs_f64());
        format!(
            "[{elapsed:>7.1} s] {clients}up {:.0} kbit/s, down {:.0} kbit/s | queue {}/{} B | forecast {} pkt | drops: {} | top: {}",
            kbps(line.up),
            kbps(line.down),
            t.queued_bytes,
            t.cap_bytes,
            t.forecast_packets,
            if drops.is_empty() { "none".into() } else { drops.join(", ") },
            if top.is_empty() { "-".into() } else { top.join("; ") }
        )
    }

    /// One flow of the text line's "top" list.
    pub(super) fn flow_text(&self, r: &FlowRate) -> String {
        let who = if self.server {
            format!("{:08x} ", r.session)
        } else {
            String::new()
        };
        let dropped = if r.dropped > 0 {
            format!(", {} dropped", r.dropped)
        } else {
            String::new()
        };
        format!(
            "{who}{} {:.0} kbit/s ({} B queued{dropped})",
            r.flow, r.kbps, r.queued_bytes
        )
    }

    /// Totals over all sessions, ended and current.
    pub(super) fn totals(&self) -> Prev {
        let mut t = self.closed;
        for p in self.sessions.values() {
            t.sent_bytes += p.sent_bytes;
            t.received_bytes += p.received_bytes;
            t.sent_packets += p.sent_packets;
            t.received_packets += p.received_packets;
        }
        t
    }
}

/// Sums over the sessions of one status line.
#[derive(Default)]
pub(super) struct LineTotals {
    /// Bytes sent since the last line.
    pub(super) sent_bytes: u64,
    /// Bytes received since the last line.
    pub(super) received_bytes: u64,
    pub(super) queued_bytes: usize,
    pub(super) cap_bytes: usize,
    pub(super) forecast_packets: u64,
    pub(super) over_cap: u64,
    pub(super) too_many_flows: u64,
}

/// The bytes up and down since the last status line, and the time since it (s).
pub(super) struct LineRates {
    pub(super) up: u64,
    pub(super) down: u64,
    pub(super) dt_s: f64,
}

/// `bytes` over `dt_s` seconds, in kbit/s to one decimal.
pub(super) fn kbps_over(bytes: u64, dt_s: f64) -> f64 {
    round1(bytes as f64 * 8.0 / 1000.0 / dt_s)
}

/// The JSON status line.
pub(super) fn status_json(
    s: &TunnelStatus,
    io: &IoCounters,
    t: &LineTotals,
    line: &LineRates,
    sessions_json: Vec<Value>,
) -> Value {
    let kbps = |bytes: u64| kbps_over(bytes, line.dt_s);
    let mut v = json!({
        "event": "status",
        "elapsed_s": round1(s.now_us.as_secs_f64()),
        "clients": s.clients().0,
        "unconfirmed": s.clients().1,
        "reconnecting": s.reconnecting,
        "reconnections": s.reconnections,
        "up_kbps": kbps(line.up),
        "down_kbps": kbps(line.down),
        "queued_bytes": t.queued_bytes,
        "cap_bytes": t.cap_bytes,
        "forecast_packets": t.forecast_packets,
        "drops": s.drops,
        "queue_drops": {"over_cap": t.over_cap, "too_many_flows": t.too_many_flows},
        "secure_drops": s.secure_drops,
        "tun_read_packets": s.tun_read_packets,
        "tun_write_packets": s.tun_write_packets,
        "udp_sent": io.udp_sent,
        "udp_received": io.udp_received,
        "udp_send_errors": io.udp_send_errors,
        "sessions": sessions_json,
    });
    // A client's state (a server has none).
    if let (Some(state), Value::Object(m)) = (s.state, &mut v) {
        m.insert("state".into(), json!(state));
    }
    v
}

/// The non-zero tunnel drop counters by name.
pub(super) fn drop_names(d: &TunnelDrops) -> Vec<(String, u64)> {
    match serde_json::to_value(d) {
        Ok(Value::Object(m)) => m
            .into_iter()
            .filter_map(|(k, v)| v.as_u64().filter(|&n| n > 0).map(|n| (k, n)))
            .collect(),
        _ => Vec::new(),
    }
}

pub(super) fn exit_line(
    printer: &StatusPrinter,
    io: &IoCounters,
    reason: &ExitReason,
    now: Instant,
    extra: Value,
) {
    let t = printer.totals();
    let (drops, secure) = match &printer.latest {
        Some(s) => (
            serde_json::to_value(s.drops).unwrap_or(Value::Null),
            serde_json::to_value(&s.secure_drops).unwrap_or(Value::Null),
        ),
        None => (Value::Null, Value::Null),
    };
    if printer.json {
        let mut v = json!({
            "event": "exit",
            "reason": reason.text(),
            "elapsed_s": round1(now.as_secs_f64()),
            "sent_bytes": t.sent_bytes,
            "received_bytes": t.received_bytes,
            "sent_packets": t.sent_packets,
            "received_packets": t.received_packets,
            "udp_sent": io.udp_sent,
            "udp_received": io.udp_received,
            "udp_send_errors": io.udp_send_errors,
            "udp_recv_errors": io.udp_recv_errors,
            "tun_read_packets": io.tun_read,
            "tun_write_packets": io.tun_written,
            "tun_write_errors": io.tun_write_errors,
            "drops": drops,
            "secure_drops": secure,
        });
        if let (Value::Object(m), Value::Object(e)) = (&mut v, extra) {
            m.extend(e);
        }
        out_json(v);
    } else {
        out(&format!(
            "exit ({}) after {:.1} s: sent {} packets ({} bytes), received {} packets ({} bytes) through the tunnel; {} datagrams sent, {} received, {} send errors; removed the device{}",
            reason.text(),
            now.as_secs_f64(),
            t.sent_packets,
            t.sent_bytes,
            t.received_packets,
            t.received_bytes,
            io.udp_sent,
            io.udp_received,
            io.udp_send_errors,
            extra
                .get("removed")
                .and_then(Value::as_str)
                .map(|s| format!(" and {s}"))
                .unwrap_or_default()
        ));
    }
}

pub(super) fn assignment_json(a: &Assignment) -> Value {
    json!({
        "v4": a.v4.map(|v| v.client.to_string()),
        "v6": a.v6.map(|v| v.client.to_string()),
        "mtu": a.mtu,
    })
}

pub(super) fn print_server_event(ev: &ServerTunnelEvent, json: bool) {
    match ev {
        ServerTunnelEvent::ClientUp {
            id,
            peer,
            addr,
            assignment,
        } => {
            if json {
                let mut v = json!({
                    "event": "client_up",
                    "id": id,
                    "peer": peer.to_base64(),
                    "addr": addr,
                });
                if let (Value::Object(m), Value::Object(a)) = (&mut v, assignment_json(assignment))
                {
                    m.extend(a);
                }
                out_json(v);
            } else {
                let addrs: Vec<String> = assignment
                    .v4
                    .map(|v| v.client.to_string())
                    .into_iter()
                    .chain(assignment.v6.map(|v| v.client.to_string()))
                    .collect();
                out(&format!(
                    "client {id:08x} up from {addr} (key {}): {}, MTU {}",
                    peer.to_base64(),
                    addrs.join(" "),
                    assignment.mtu
                ));
            }
        }
        ServerTunnelEvent::ClientDown { id, peer } => {
            if json {
                out_json(json!({"event": "client_down", "id": id, "peer": peer.to_base64()}));
            } else {
                out(&format!("client {id:08x} down (key {})", peer.to_base64()));
            }
        }
        ServerTunnelEvent::ClientRefused { id, peer, reason } => {
            if json {
                out_json(json!({
                    "event": "client_refused",
                    "id": id,
                    "peer": peer.to_base64(),
                    "reason": reason,
                }));
            } else {
                out(&format!(
                    "client {id:08x} refused (key {}): {reason}",
                    peer.to_base64()
                ));
            }
        }
    }
}
