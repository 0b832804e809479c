//! A side's summary: what it sent and received, the one-way delays, as text or a JSON line.

use std::net::SocketAddr;
use std::time::Instant;

use serde::Serialize;

use crate::app_delay::{paced_count, AppDelay, Stream};
use crate::interactive::error::InteractiveError;
use crate::interactive::options::StreamOptions;
use crate::interactive::packet::{quantile, Recorder};

/// A side's summary (the `--json` line).
#[derive(Debug, Serialize)]
pub struct Summary {
    /// Always "summary".
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// "server" or "client".
    pub role: &'static str,
    /// The peer's address (the server's once a client came), if any.
    pub peer: Option<String>,
    /// Configured sending rate, kbit/s of payload.
    pub rate_kbps: f64,
    /// Payload of each packet, bytes.
    pub payload_bytes: usize,
    /// Packets sent.
    pub sent_packets: u64,
    /// Payload bytes sent.
    pub sent_bytes: u64,
    /// Sends that failed (counted, not retried).
    pub send_errors: u64,
    /// Time from the first send to the last, s.
    pub sending_s: f64,
    /// Payload sent per second of sending, kbit/s.
    pub sent_kbps: f64,
    /// Packets received (each sequence number once).
    pub received_packets: u64,
    /// Payload bytes received.
    pub received_bytes: u64,
    /// Payload received per second between the first and the last arrival, kbit/s.
    pub received_kbps: f64,
    /// Received packets whose sequence number had already arrived.
    pub duplicates: u64,
    /// Datagrams that were not valid packets (ignored).
    pub bad_packets: u64,
    /// Packets missing below the highest sequence number received.
    pub lost_packets: u64,
    /// lost / (lost + received), 0..1.
    pub loss: f64,
    /// Median one-way delay of the received packets, ms.
    pub delay_p50_ms: f64,
    /// 95th-percentile one-way delay of the received packets, ms.
    pub delay_p95_ms: f64,
    /// Highest one-way delay, ms.
    pub delay_max_ms: f64,
    /// The application-level delay of the stream received (`app_*` fields, on
    /// `CLOCK_MONOTONIC`): this stream has no sender queue (each packet goes to the socket as
    /// it is made), so it is the one-way delay with the packets never delivered counted as
    /// infinitely late. The peer's packets are counted from the rate and `--duration` (both
    /// ends run the same stream), or up to the highest sequence number received without a
    /// duration.
    #[serde(flatten)]
    pub app: AppDelay,
}

/// What the sending half did.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Sent {
    pub(crate) packets: u64,
    pub(crate) bytes: u64,
    pub(crate) errors: u64,
    pub(crate) first: Option<Instant>,
    pub(crate) last: Option<Instant>,
}

/// The summary of a side that sent `sent` and received `rec`.
pub(crate) fn summary(
    role: &'static str,
    peer: Option<SocketAddr>,
    a: &StreamOptions,
    sent: &Sent,
    rec: &Recorder,
) -> Summary {
    let sending_s = match (sent.first, sent.last) {
        (Some(f), Some(l)) => (l - f).as_secs_f64(),
        _ => 0.0,
    };
    // The rate over whole intervals: n packets span n - 1 intervals, plus the last one's.
    let interval_s = a.payload_bytes as f64 * 8.0 / (a.rate_kbps * 1000.0);
    let kbps = |bytes: u64, secs: f64| {
        if secs > 0.0 {
            bytes as f64 * 8.0 / 1000.0 / secs
        } else {
            0.0
        }
    };
    let mut delays: Vec<u64> = rec
        .arrivals()
        .iter()
        .map(|x| x.received_us.saturating_sub(x.sent_us))
        .collect();
    let span_s = match (rec.arrivals().first(), rec.arrivals().last()) {
        (Some(f), Some(l)) if rec.packets > 1 => {
            l.received_us.saturating_sub(f.received_us) as f64 / 1e6 + interval_s
        }
        _ => 0.0,
    };
    let lost = rec.lost();
    let app = app_delay(a, rec, span_s);
    Summary {
        kind: "summary",
        role,
        peer: peer.map(|p| p.to_string()),
        rate_kbps: a.rate_kbps,
        payload_bytes: a.payload_bytes,
        sent_packets: sent.packets,
        sent_bytes: sent.bytes,
        send_errors: sent.errors,
        sending_s,
        sent_kbps: kbps(
            sent.bytes,
            if sent.packets > 0 {
                sending_s + interval_s
            } else {
                0.0
            },
        ),
        received_packets: rec.packets,
        received_bytes: rec.bytes,
        received_kbps: kbps(rec.bytes, span_s),
        duplicates: rec.duplicates,
        bad_packets: rec.bad,
        lost_packets: lost,
        loss: if lost + rec.packets > 0 {
            lost as f64 / (lost + rec.packets) as f64
        } else {
            0.0
        },
        delay_p50_ms: quantile(&mut delays, 0.5) as f64 / 1e3,
        delay_p95_ms: quantile(&mut delays, 0.95) as f64 / 1e3,
        delay_max_ms: delays.iter().max().copied().unwrap_or(0) as f64 / 1e3,
        app,
    }
}

/// The application-level delay of the stream `rec` received: the packets the peer created in
/// `--duration` at the rate (or up to the highest sequence number received, if more or if no
/// duration was given, when the rates are over the arrivals' span `span_s`).
fn app_delay(a: &StreamOptions, rec: &Recorder, span_s: f64) -> AppDelay {
    let size = a.payload_bytes as u64;
    let seen = rec.max_seq.map_or(0, |m| m.saturating_add(1));
    let nominal = a.duration.map_or(0, |d| paced_count(d, a.rate_kbps, size));
    let delays_ms: Vec<f64> = rec
        .arrivals()
        .iter()
        .map(|x| x.received_us.saturating_sub(x.sent_us) as f64 / 1e3)
        .collect();
    AppDelay::new(Stream {
        clock: "CLOCK_MONOTONIC",
        offered: seen.max(nominal),
        datagram_bytes: size,
        duration_s: a.duration.unwrap_or(span_s),
        delays_ms: &delays_ms,
    })
}

/// Prints the summary: a line of text, or a JSON line.
pub(crate) fn print_summary(s: &Summary, json: bool) -> Result<(), InteractiveError> {
    if json {
        println!("{}", serde_json::to_string(s)?);
    } else {
        println!(
            "{}: sent {} packets ({:.0} kbit/s), received {} ({:.0} kbit/s), lost {} ({:.2}%), \
             {} duplicate, {} bad; one-way delay p50 {:.1} ms, p95 {:.1} ms, max {:.1} ms",
            s.role,
            s.sent_packets,
            s.sent_kbps,
            s.received_packets,
            s.received_kbps,
            s.lost_packets,
            100.0 * s.loss,
            s.duplicates,
            s.bad_packets,
            s.delay_p50_ms,
            s.delay_p95_ms,
            s.delay_max_ms
        );
        println!("{}: {}", s.role, s.app.text());
    }
    Ok(())
}
