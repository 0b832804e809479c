//! The lines a session prints: one per second ([`Tick`]) and its [`Summary`], as text or JSON.

use std::collections::BTreeMap;
use std::net::SocketAddr;

use serde::Serialize;
use sprout_core::direction::Load;
use sprout_net::message::Mode;

use crate::app_delay::AppDelay;
use crate::transfer::end::SessionEnd;

/// One per-second line.
#[derive(Serialize)]
pub(crate) struct Tick {
    #[serde(rename = "type")]
    pub(crate) kind: &'static str,
    pub(crate) role: &'static str,
    /// The server's id of the session, 8 hex digits (server lines only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) session: Option<String>,
    /// The client's address (server lines only; it follows a roaming client).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) peer: Option<SocketAddr>,
    /// Seconds since the session started.
    pub(crate) elapsed_s: f64,
    /// Application data sent in the last second, kbit/s.
    pub(crate) sent_kbps: f64,
    /// Application data received in the last second, kbit/s.
    pub(crate) received_kbps: f64,
    /// Application bytes sent so far.
    pub(crate) sent_bytes: u64,
    /// Application bytes received so far.
    pub(crate) received_bytes: u64,
    /// The sender's window: what the forecast lets it have in the network (its queue estimate
    /// plus the room left), link bytes. A saturating sender keeps its room near 0, so this,
    /// not the room, shows how much the forecast allows.
    pub(crate) window_bytes: u64,
    /// Room left in the window now, link bytes.
    pub(crate) room_bytes: u64,
    /// The sender's estimate of its bytes queued in the network, link bytes.
    pub(crate) queue_estimate_bytes: u64,
    /// Packets the peer forecasts it will receive over the next 8 ticks (160 ms).
    pub(crate) forecast_packets: u64,
    /// The peer's forecast, cumulative packets per 20 ms tick.
    pub(crate) forecast: Vec<u32>,
    /// This side's estimate of the incoming rate, packets/s.
    pub(crate) incoming_rate_pps: f64,
    /// DATA messages received in the last second.
    pub(crate) data_received: usize,
    /// Median one-way delay of those, ms.
    pub(crate) owd_p50_ms: Option<f64>,
    /// 95th percentile one-way delay of those, ms.
    pub(crate) owd_p95_ms: Option<f64>,
    /// Authenticated datagrams the protocol core refused so far.
    pub(crate) malformed: u64,
    /// Datagrams the security layer dropped so far (forged, replayed, wrong key, ...): the
    /// client's own; on the server, the whole server's (unauthenticated datagrams belong to no
    /// session).
    pub(crate) dropped: u64,
    /// Where this side's endpoint stands: `connecting`, `established`, `reconnecting` or
    /// `ended`.
    pub(crate) state: sprout_net::EndpointState,
    /// Times a client's session was established again after its server fell silent.
    pub(crate) reconnections: u64,
}

/// The end of a session.
#[derive(Serialize)]
pub(crate) struct Summary {
    #[serde(rename = "type")]
    pub(crate) kind: &'static str,
    pub(crate) role: &'static str,
    /// The server's id of the session, 8 hex digits (server summaries only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) session: Option<String>,
    /// The client's public key (server summaries only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) peer_key: Option<String>,
    pub(crate) peer: Option<SocketAddr>,
    pub(crate) scheme: &'static str,
    pub(crate) confidence: f64,
    pub(crate) direction: Load,
    pub(crate) mode: Mode,
    /// Paced rate, kbit/s (null in bulk mode).
    pub(crate) rate_kbps: Option<u32>,
    /// Requested duration, s.
    pub(crate) duration_s: f64,
    /// Length of the session, s.
    pub(crate) elapsed_s: f64,
    /// Why it ended (serialized as "bye", "duration", "silence" or "closed").
    pub(crate) end: SessionEnd,
    pub(crate) sent_bytes: u64,
    pub(crate) received_bytes: u64,
    /// Average application throughput over the transfer, kbit/s.
    pub(crate) sent_kbps: f64,
    pub(crate) received_kbps: f64,
    pub(crate) data_sent: u64,
    pub(crate) data_received: u64,
    /// DATA messages the peer said it sent (from its BYE), if it said.
    pub(crate) peer_data_sent: Option<u64>,
    /// Application datagrams (the peer's DATA) that arrived, counted in `datagrams_received`,
    /// but were dropped unread: this side read them more slowly than they came, and the
    /// connection's receive queue (4 MiB) was full. `data_received` + this + the peer's
    /// heartbeats and control messages make `datagrams_received`.
    pub(crate) dropped_unread: u64,
    pub(crate) owd_p50_ms: Option<f64>,
    pub(crate) owd_p95_ms: Option<f64>,
    pub(crate) owd_p99_ms: Option<f64>,
    pub(crate) owd_mean_ms: Option<f64>,
    /// The application-level delay of the paced stream received (`app_*` fields; absent in
    /// bulk mode and when the peer sends nothing).
    #[serde(flatten)]
    pub(crate) app: Option<AppDelay>,
    pub(crate) datagrams_sent: u64,
    pub(crate) datagrams_received: u64,
    pub(crate) heartbeats_sent: u64,
    /// Authenticated datagrams the protocol core refused.
    pub(crate) malformed: u64,
    /// Datagrams the security layer dropped (as in the ticks).
    pub(crate) dropped: u64,
    /// Those drops by reason (only reasons that occurred).
    pub(crate) drops: BTreeMap<&'static str, u64>,
    /// Times the client's address changed during the session (server summaries; roaming).
    pub(crate) roams: u64,
    pub(crate) bad_messages: u64,
    pub(crate) send_errors: u64,
    /// Where this side's endpoint stood when the session ended: `established` (it ended with
    /// the session up: BYE, duration), `reconnecting` (while a client redialled a silent
    /// server) or `ended` (the endpoint had stopped: closed by either side, given up).
    pub(crate) state: sprout_net::EndpointState,
    /// Times a client's session was established again after its server fell silent.
    pub(crate) reconnections: u64,
}

/// The `p` quantile (0..=1) of sorted values, nearest rank.
pub(crate) fn quantile(sorted: &[f64], p: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let i = ((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len()) - 1;
    Some(sorted[i])
}

/// `x` rounded to `digits` decimals (for readable output).
pub(crate) fn round(x: f64, digits: i32) -> f64 {
    let f = 10f64.powi(digits);
    (x * f).round() / f
}

pub(crate) fn sorted(mut v: Vec<f64>) -> Vec<f64> {
    v.sort_by(f64::total_cmp);
    v
}

fn opt(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), |x| format!("{x:.1}"))
}

/// The column titles of the text lines; a server's lines start with the session.
pub(crate) fn print_header(json: bool, server: bool) {
    if !json {
        println!(
            "{}{:>6} {:>12} {:>12} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
            if server { "session  " } else { "" },
            "time s",
            "sent kbit/s",
            "recv kbit/s",
            "window B",
            "forecast",
            "owd p50",
            "owd p95",
            "malformed",
            "dropped"
        );
    }
}

impl Tick {
    pub(crate) fn print(&self, json: bool) {
        if json {
            println!(
                "{}",
                serde_json::to_string(self).expect("a tick serializes")
            );
        } else {
            let prefix = self
                .session
                .as_ref()
                .map(|s| format!("{s} "))
                .unwrap_or_default();
            println!(
                "{prefix}{:>6.1} {:>12.1} {:>12.1} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
                self.elapsed_s,
                self.sent_kbps,
                self.received_kbps,
                self.window_bytes,
                self.forecast_packets,
                opt(self.owd_p50_ms),
                opt(self.owd_p95_ms),
                self.malformed,
                self.dropped
            );
        }
    }
}

impl Summary {
    pub(crate) fn print(&self, json: bool) {
        if json {
            println!(
                "{}",
                serde_json::to_string(self).expect("a summary serializes")
            );
            return;
        }
        let peer = self.peer.map_or_else(|| "-".into(), |p| p.to_string());
        let session = self
            .session
            .as_ref()
            .map(|s| format!("session {s}, "))
            .unwrap_or_default();
        // One print for the whole summary, so that concurrent sessions' summaries do not
        // interleave line by line.
        let mut text = format!(
            "{} summary: {session}peer {peer}, {} {} {}, confidence {}, {:.1} s (ended by {})\n",
            self.role,
            self.scheme,
            self.direction.as_str(),
            match self.rate_kbps {
                Some(r) => format!("paced {r} kbit/s"),
                None => "bulk".into(),
            },
            self.confidence,
            self.elapsed_s,
            self.end
        );
        if let Some(k) = &self.peer_key {
            text += &format!("  client key {k}\n");
        }
        text += &format!(
            "  sent     {:>12} bytes {:>10.1} kbit/s  {} DATA\n",
            self.sent_bytes, self.sent_kbps, self.data_sent
        );
        let mut lost = self
            .peer_data_sent
            .map(|n| format!(" of {n} the peer sent"))
            .unwrap_or_default();
        if self.dropped_unread > 0 {
            lost += &format!(
                "; {} more arrived but were dropped unread (read too slowly: the 4 MiB receive \
                 queue was full)",
                self.dropped_unread
            );
        }
        text += &format!(
            "  received {:>12} bytes {:>10.1} kbit/s  {} DATA{lost}\n",
            self.received_bytes, self.received_kbps, self.data_received
        );
        text += &format!(
            "  one-way delay ms: p50 {}  p95 {}  p99 {}  mean {}\n",
            opt(self.owd_p50_ms),
            opt(self.owd_p95_ms),
            opt(self.owd_p99_ms),
            opt(self.owd_mean_ms)
        );
        if let Some(a) = &self.app {
            text += &format!("  {}\n", a.text());
        }
        let drops = if self.drops.is_empty() {
            String::new()
        } else {
            let by: Vec<String> = self.drops.iter().map(|(k, v)| format!("{k} {v}")).collect();
            format!(" ({})", by.join(", "))
        };
        text += &format!(
            "  datagrams sent {} ({} heartbeats), received {}; malformed {}, dropped {}{drops}, bad messages {}, send errors {}",
            self.datagrams_sent,
            self.heartbeats_sent,
            self.datagrams_received,
            self.malformed,
            self.dropped,
            self.bad_messages,
            self.send_errors
        );
        println!("{text}");
    }
}
