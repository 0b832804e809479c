//! The experiment's rows, their averages, and the interactive stream's rows.

use serde::{Deserialize, Serialize};

/// The group of every link direction in [`AqmAverage::group`].
pub const ALL: &str = "all";

/// One scheme over one queue on one link direction (aqm.csv's row).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AqmRow {
    /// The queue's name ([`super::AqmQueue::name`]).
    pub queue: String,
    /// The scheme's key.
    pub scheme: String,
    /// The link pair's name.
    pub link: String,
    /// "down" or "up".
    pub direction: String,
    /// The direction's capacity over the measured window, kbit/s.
    pub capacity_kbps: f64,
    /// Throughput over the window, kbit/s.
    pub throughput_kbps: f64,
    /// Throughput over capacity, 0..1.
    pub utilization: f64,
    /// 95th-percentile end-to-end delay, ms.
    pub p95_delay_ms: f64,
    /// Self-inflicted delay (the 95th-percentile delay above the omniscient sender's), ms.
    pub self_inflicted_ms: f64,
    /// Packets the buffer's limit (or the queue's own limits) dropped, over the whole run.
    pub buffer_drops: u64,
    /// Packets the AQM dropped (CoDel, PIE, FQ-CoDel's CoDel), over the whole run.
    pub aqm_drops: u64,
    /// Packets that left the queue, over the whole run.
    pub packets_delivered: u64,
}

/// One scheme over one queue, averaged over a group of link directions.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AqmAverage {
    /// [`ALL`] or a link pair's name (its two directions).
    pub group: String,
    /// The queue's name.
    pub queue: String,
    /// The scheme's key.
    pub scheme: String,
    /// Mean utilization, 0..1.
    pub utilization: f64,
    /// Mean throughput, kbit/s.
    pub throughput_kbps: f64,
    /// Mean self-inflicted delay, ms.
    pub self_inflicted_ms: f64,
    /// The share of packets the queue dropped (buffer and AQM) among those it took or
    /// dropped, over every direction, 0..1.
    pub drop_share: f64,
    /// Directions averaged.
    pub directions: usize,
}

/// The interactive stream beside a Cubic download on one direction of one queue.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StreamRow {
    /// The queue's name.
    pub queue: String,
    /// The link pair's name.
    pub link: String,
    /// "down" (the download's direction).
    pub direction: String,
    /// The stream's offered rate over the window, kbit/s.
    pub offered_kbps: f64,
    /// The stream's bytes delivered whole over the window, kbit/s.
    pub delivered_kbps: f64,
    /// The stream's median one-way delay (application level), ms; null when over half its
    /// packets never arrived.
    #[serde(deserialize_with = "sprout_sim::app_metrics::nan_if_null")]
    pub p50_ms: f64,
    /// The stream's 95th-percentile one-way delay, ms (a lost packet counts as infinitely
    /// late; null: over 5% lost).
    #[serde(deserialize_with = "sprout_sim::app_metrics::nan_if_null")]
    pub p95_ms: f64,
    /// Share of the stream's packets delivered within 150 ms, 0..1.
    pub within_150ms: f64,
    /// The Cubic download's rate over the whole run, kbit/s.
    pub download_kbps: f64,
    /// The direction's capacity over the window, kbit/s.
    pub capacity_kbps: f64,
}

/// Everything the experiment produced (aqm.json).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AqmResults {
    /// What ran.
    pub settings: super::AqmSettings,
    /// The link pairs, in order.
    pub links: Vec<String>,
    /// Where they came from.
    pub source: String,
    /// Every queue, scheme and direction.
    pub rows: Vec<AqmRow>,
    /// Per group, queue and scheme.
    pub averages: Vec<AqmAverage>,
    /// The interactive stream beside the Cubic download, per queue of
    /// [`super::AqmSettings::stream_queues`].
    pub stream: Vec<StreamRow>,
    /// Simulations run.
    pub simulations: usize,
    /// Wall time, s.
    pub wall_s: f64,
}

impl AqmResults {
    /// The average of `scheme` over `queue` on `group`, if it ran.
    pub fn average(&self, group: &str, queue: &str, scheme: &str) -> Option<&AqmAverage> {
        self.averages
            .iter()
            .find(|a| a.group == group && a.queue == queue && a.scheme == scheme)
    }
}

/// Per group ([`ALL`], then each link pair in the rows' order), queue and scheme in the rows'
/// order: the mean utilization, throughput and self-inflicted delay of its directions, and the
/// share of packets dropped.
pub fn average_rows(rows: &[AqmRow]) -> Vec<AqmAverage> {
    let mut groups: Vec<&str> = vec![ALL];
    for r in rows {
        if !groups.contains(&r.link.as_str()) {
            groups.push(&r.link);
        }
    }
    let mut out: Vec<AqmAverage> = Vec::new();
    // Per average: packets dropped and packets delivered, for the drop share.
    let mut counts: Vec<(u64, u64)> = Vec::new();
    for g in groups {
        for r in rows.iter().filter(|r| g == ALL || r.link == g) {
            let i = match out
                .iter()
                .position(|a| a.group == g && a.queue == r.queue && a.scheme == r.scheme)
            {
                Some(i) => i,
                None => {
                    out.push(AqmAverage {
                        group: g.to_string(),
                        queue: r.queue.clone(),
                        scheme: r.scheme.clone(),
                        utilization: 0.0,
                        throughput_kbps: 0.0,
                        self_inflicted_ms: 0.0,
                        drop_share: 0.0,
                        directions: 0,
                    });
                    counts.push((0, 0));
                    out.len() - 1
                }
            };
            out[i].utilization += r.utilization;
            out[i].throughput_kbps += r.throughput_kbps;
            out[i].self_inflicted_ms += r.self_inflicted_ms;
            out[i].directions += 1;
            counts[i].0 += r.buffer_drops + r.aqm_drops;
            counts[i].1 += r.packets_delivered;
        }
    }
    for (a, (dropped, delivered)) in out.iter_mut().zip(counts) {
        let n = a.directions.max(1) as f64;
        a.utilization /= n;
        a.throughput_kbps /= n;
        a.self_inflicted_ms /= n;
        a.drop_share = dropped as f64 / ((dropped + delivered).max(1)) as f64;
    }
    out
}
