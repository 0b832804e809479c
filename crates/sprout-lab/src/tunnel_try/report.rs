//! What `sprout tunnel try` measured, and its text.

use std::net::Ipv4Addr;

use serde::Serialize;
use serde_json::Value;

/// Round trips of the pings of one phase.
#[derive(Clone, Debug, Default, Serialize)]
pub struct PingStats {
    /// Echo requests sent.
    pub sent: usize,
    /// Round-trip times of the answered ones (ms), in the order sent.
    pub rtts_ms: Vec<f64>,
}

impl PingStats {
    /// The `q` quantile (0 to 1) of the round trips (ms, nearest rank), if any was answered.
    pub fn quantile(&self, q: f64) -> Option<f64> {
        let mut v = self.rtts_ms.clone();
        if v.is_empty() {
            return None;
        }
        v.sort_by(f64::total_cmp);
        let rank = ((q * v.len() as f64).ceil() as usize).clamp(1, v.len());
        Some(v[rank - 1])
    }

    /// "5 of 5 answered, round trip min 41.2 ms, median 41.9 ms, p95 43.0 ms".
    pub fn text(&self) -> String {
        let answered = self.rtts_ms.len();
        match (self.quantile(0.0), self.quantile(0.5), self.quantile(0.95)) {
            (Some(min), Some(med), Some(p95)) => format!(
                "{answered} of {} answered, round trip min {min:.1} ms, median {med:.1} ms, p95 {p95:.1} ms",
                self.sent
            ),
            _ => format!("{answered} of {} answered", self.sent),
        }
    }
}

/// A tunnel end's totals, from its `exit` line.
#[derive(Clone, Debug, Default, Serialize)]
pub struct EndTotals {
    /// IP packets sent into the tunnel.
    pub sent_packets: u64,
    /// Their bytes.
    pub sent_bytes: u64,
    /// IP packets received out of the tunnel.
    pub received_packets: u64,
    /// Their bytes.
    pub received_bytes: u64,
    /// UDP datagrams sent.
    pub udp_sent: u64,
    /// UDP datagrams received.
    pub udp_received: u64,
    /// The tunnel's and the security layer's non-zero drop counters, by name.
    pub drops: Vec<(String, u64)>,
}

impl EndTotals {
    /// The totals of an `exit` JSON line.
    pub fn from_exit(v: &Value) -> EndTotals {
        let n = |k: &str| v[k].as_u64().unwrap_or(0);
        let mut drops = Vec::new();
        for group in ["drops", "secure_drops"] {
            if let Some(m) = v[group].as_object() {
                for (k, c) in m {
                    if let Some(c) = c.as_u64().filter(|&c| c > 0) {
                        drops.push((k.clone(), c));
                    }
                }
            }
        }
        EndTotals {
            sent_packets: n("sent_packets"),
            sent_bytes: n("sent_bytes"),
            received_packets: n("received_packets"),
            received_bytes: n("received_bytes"),
            udp_sent: n("udp_sent"),
            udp_received: n("udp_received"),
            drops,
        }
    }

    /// "sent 15123 packets (22.3 MB) into the tunnel, received 7000 (0.4 MB); 15500 datagrams
    /// sent, 7300 received; drops: none".
    pub fn text(&self) -> String {
        let drops = if self.drops.is_empty() {
            "none".to_string()
        } else {
            let d: Vec<String> = self.drops.iter().map(|(k, n)| format!("{k} {n}")).collect();
            d.join(", ")
        };
        format!(
            "sent {} packets ({:.1} MB) into the tunnel, received {} ({:.1} MB); {} datagrams sent, {} received; drops: {drops}",
            self.sent_packets,
            self.sent_bytes as f64 / 1e6,
            self.received_packets,
            self.received_bytes as f64 / 1e6,
            self.udp_sent,
            self.udp_received
        )
    }
}

/// What one `sprout tunnel try` measured.
#[derive(Clone, Debug, Serialize)]
pub struct TryReport {
    /// The link in words.
    pub link: String,
    /// The link's rate each way (Mbit/s) when constant.
    pub link_rate_mbps: Option<f64>,
    /// The relay's end of the emulated link (its namespace) and the client's.
    pub link_addrs: (Ipv4Addr, Ipv4Addr),
    /// The relay's tunnel address and the client's.
    pub tunnel_addrs: (Ipv4Addr, Ipv4Addr),
    /// Pings before the download.
    pub ping_alone: PingStats,
    /// Pings during the download.
    pub ping_loaded: PingStats,
    /// Bytes the client received in the download.
    pub download_bytes: u64,
    /// From the connection to the last byte (s).
    pub download_s: f64,
    /// The relay's totals, if it printed its exit line.
    pub relay: Option<EndTotals>,
    /// The client's totals, if it printed its exit line.
    pub client: Option<EndTotals>,
}

impl TryReport {
    /// The download's rate (Mbit/s).
    pub fn download_mbps(&self) -> f64 {
        if self.download_s > 0.0 {
            self.download_bytes as f64 * 8.0 / 1e6 / self.download_s
        } else {
            0.0
        }
    }

    /// The report as lines of text.
    pub fn text(&self) -> String {
        let (relay, client) = self.tunnel_addrs;
        let share = self
            .link_rate_mbps
            .filter(|r| *r > 0.0)
            .map(|r| {
                format!(
                    " ({:.0}% of the link's {r} Mbit/s)",
                    100.0 * self.download_mbps() / r
                )
            })
            .unwrap_or_default();
        let end = |e: &Option<EndTotals>| {
            e.as_ref()
                .map(EndTotals::text)
                .unwrap_or_else(|| "no exit line".into())
        };
        [
            format!(
                "ping {relay} from {client}, alone:        {}",
                self.ping_alone.text()
            ),
            format!(
                "ping {relay} from {client}, beside it:    {}",
                self.ping_loaded.text()
            ),
            format!(
                "download {relay} -> {client} (TCP): {:.1} MB in {:.1} s = {:.1} Mbit/s{share}",
                self.download_bytes as f64 / 1e6,
                self.download_s,
                self.download_mbps()
            ),
            format!("tunnel, relay's end:  {}", end(&self.relay)),
            format!("tunnel, client's end: {}", end(&self.client)),
        ]
        .join("\n")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_are_nearest_rank_and_the_text_says_what_was_lost() {
        let p = PingStats {
            sent: 5,
            rtts_ms: vec![50.0, 40.0, 45.0, 90.0],
        };
        assert_eq!(p.quantile(0.0), Some(40.0));
        assert_eq!(p.quantile(0.5), Some(45.0));
        assert_eq!(p.quantile(0.95), Some(90.0));
        assert!(p.text().starts_with("4 of 5 answered"), "{}", p.text());
        let none = PingStats {
            sent: 3,
            rtts_ms: Vec::new(),
        };
        assert_eq!(none.text(), "0 of 3 answered");
    }

    #[test]
    fn exit_totals_keep_only_the_drops_that_happened() {
        let v = serde_json::json!({"event": "exit", "sent_packets": 7, "sent_bytes": 2_000_000,
            "drops": {"no_route": 0, "too_big": 2}, "secure_drops": {"replayed": 1}});
        let t = EndTotals::from_exit(&v);
        assert_eq!(t.sent_packets, 7);
        assert_eq!(
            t.drops,
            vec![("too_big".to_string(), 2), ("replayed".to_string(), 1)]
        );
        assert!(t.text().contains("(2.0 MB)"), "{}", t.text());
    }
}
