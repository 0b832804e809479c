//! Application-level delay: for every message (a datagram of a constant stream, a video frame)
//! the time from the application handing it to the transport until its last byte reaches the
//! receiving application (time waiting in the sender plus time in the network), and the
//! figures of [`AppMetrics`] over a measured window.
//!
//! Times are [`Instant`]s and [`Duration`]s unless a name says otherwise; rates kbit/s
//! (1 kbit = 1000 bits).

use serde::{Deserialize, Deserializer, Serialize};
use sprout_core::time::{Duration, Instant};

use crate::metrics::Window;

/// Delays (ms) whose share [`AppMetrics`] reports: 100, 150 and 300 ms.
pub const WITHIN_MS: [f64; 3] = [100.0, 150.0, 300.0];

/// One message the application handed to the transport.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Message {
    /// When the application handed it over.
    pub created: Instant,
    /// Application bytes.
    pub bytes: u64,
    /// When its last byte reached the receiving application; `None` if it never did.
    pub delivered: Option<Instant>,
    /// Datagrams of it still to arrive (transports that deliver datagrams).
    pub missing: u32,
}

/// The messages of one direction, in the order they were created, as they are delivered.
#[derive(Clone, Debug, Default)]
pub struct Ledger {
    messages: Vec<Message>,
}

impl Ledger {
    /// Records a message created at `created` of `bytes`, sent in `datagrams` datagrams;
    /// returns its index.
    pub fn open(&mut self, created: Instant, bytes: u64, datagrams: u32) -> u32 {
        self.messages.push(Message {
            created,
            bytes,
            delivered: None,
            missing: datagrams,
        });
        (self.messages.len() - 1) as u32
    }

    /// One datagram of message `index` arrived `at`: the message is delivered when the
    /// last of its datagrams has.
    pub fn datagram_arrived(&mut self, index: u32, at: Instant) {
        if let Some(m) = self.messages.get_mut(index as usize) {
            m.missing = m.missing.saturating_sub(1);
            if m.missing == 0 && m.delivered.is_none() {
                m.delivered = Some(at);
            }
        }
    }

    /// Message `index` arrived whole `at` (a byte stream's in-order delivery).
    pub fn delivered(&mut self, index: u32, at: Instant) {
        if let Some(m) = self.messages.get_mut(index as usize) {
            m.missing = 0;
            m.delivered.get_or_insert(at);
        }
    }

    /// Every message so far.
    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    /// How many messages so far.
    pub fn len(&self) -> usize {
        self.messages.len()
    }

    /// Whether no message was created.
    pub fn is_empty(&self) -> bool {
        self.messages.is_empty()
    }
}

/// Application-level figures of one direction over the measured window: the messages created
/// in it (`[start, end)`), delivered by the end of the run or not.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AppMetrics {
    /// Application bytes handed to the transport in the window, kbit/s over the window.
    pub offered_kbps: f64,
    /// Application bytes of those messages delivered whole, kbit/s over the window.
    pub delivered_kbps: f64,
    /// Delivered bytes / offered bytes, 0..1 (NaN when nothing was offered).
    #[serde(deserialize_with = "nan_if_null")]
    pub delivered_share: f64,
    /// Datagrams (constant stream) or frames (video) created in the window.
    pub messages: u64,
    /// Median application-level delay, ms; +inf (null in JSON) when at least half the
    /// messages were never delivered; NaN (null) with no message.
    #[serde(deserialize_with = "nan_if_null")]
    pub delay_p50_ms: f64,
    /// 95th percentile of the application-level delay, ms (a never-delivered message counts
    /// as infinitely late).
    #[serde(deserialize_with = "nan_if_null")]
    pub delay_p95_ms: f64,
    /// 99th percentile of the application-level delay, ms.
    #[serde(deserialize_with = "nan_if_null")]
    pub delay_p99_ms: f64,
    /// Share of messages delivered within 100 ms, 0..1.
    #[serde(deserialize_with = "nan_if_null")]
    pub within_100ms: f64,
    /// Share of messages delivered within 150 ms, 0..1.
    #[serde(deserialize_with = "nan_if_null")]
    pub within_150ms: f64,
    /// Share of messages delivered within 300 ms, 0..1.
    #[serde(deserialize_with = "nan_if_null")]
    pub within_300ms: f64,
}

/// A float that JSON may hold as null (NaN or an infinity serialised): null reads as NaN.
/// For `#[serde(deserialize_with = ...)]` on any such field.
pub fn nan_if_null<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
}

/// Nearest-rank percentile (as [`crate::metrics::percentile`]) of `sorted` (ascending, may
/// hold +inf); NaN when empty.
fn percentile_sorted(sorted: &[f64], p: f64) -> f64 {
    let n = sorted.len();
    if n == 0 {
        return f64::NAN;
    }
    let rank = ((p * n as f64 / 100.0).ceil() as usize).clamp(1, n);
    sorted[rank - 1]
}

/// Longest time, in microseconds, left at the end of the measured window for the messages
/// created in it to arrive (see [`counted_window`]).
pub const APP_DRAIN_US: u64 = 30_000_000;

/// Longest time left at the end of the measured window for the messages created in it to
/// arrive (see [`counted_window`]): 30 s.
pub const APP_DRAIN: Duration = Duration::from_micros(APP_DRAIN_US);

/// The part of the measured `window` whose messages the application-level figures count: all
/// of it but its last [`APP_DRAIN`] (at most a quarter of it). A run ends with the
/// window, so a message made near the end, still waiting behind a queue of seconds, would
/// count as never delivered when it is only late; each counted message has at least this
/// long to arrive, while the throughput figures still cover the whole window.
pub fn counted_window(window: Window) -> Window {
    let drain = APP_DRAIN.min(window.duration() / 4);
    Window::new(window.start, (window.end - drain).max(window.start))
}

/// [`AppMetrics`] of `messages` over `window`: those created in `[start, end)` count; a
/// message never delivered counts as infinitely late.
pub fn compute(messages: &[Message], window: Window) -> AppMetrics {
    let mut offered = 0u64;
    let mut delivered = 0u64;
    let mut delays_ms: Vec<f64> = Vec::new();
    for m in messages.iter().filter(|m| window.contains(m.created)) {
        offered += m.bytes;
        let delay = match m.delivered {
            Some(t) => {
                delivered += m.bytes;
                (t - m.created).as_millis_f64()
            }
            None => f64::INFINITY,
        };
        delays_ms.push(delay);
    }
    delays_ms.sort_unstable_by(f64::total_cmp);
    let n = delays_ms.len();
    let within = |ms: f64| {
        if n == 0 {
            f64::NAN
        } else {
            delays_ms.partition_point(|&d| d <= ms) as f64 / n as f64
        }
    };
    let kbps = |bytes: u64| {
        let len = window.duration();
        if len.is_zero() {
            0.0
        } else {
            bytes as f64 * 8.0 * 1000.0 / len.as_micros() as f64
        }
    };
    AppMetrics {
        offered_kbps: kbps(offered),
        delivered_kbps: kbps(delivered),
        delivered_share: if offered == 0 {
            f64::NAN
        } else {
            delivered as f64 / offered as f64
        },
        messages: n as u64,
        delay_p50_ms: percentile_sorted(&delays_ms, 50.0),
        delay_p95_ms: percentile_sorted(&delays_ms, 95.0),
        delay_p99_ms: percentile_sorted(&delays_ms, 99.0),
        within_100ms: within(WITHIN_MS[0]),
        within_150ms: within(WITHIN_MS[1]),
        within_300ms: within(WITHIN_MS[2]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The window `[a, b)`, ms.
    fn win_ms(a: u64, b: u64) -> Window {
        Window::new(at_ms(a), at_ms(b))
    }

    #[test]
    fn the_counted_window_leaves_time_to_arrive() {
        let w = counted_window(win_ms(60_000, 180_000));
        assert_eq!(w, win_ms(60_000, 150_000));
        // A short window keeps three quarters of itself.
        let w = counted_window(win_ms(5_000, 25_000));
        assert_eq!(w, win_ms(5_000, 20_000));
        let t = Instant::from_micros(7);
        assert_eq!(counted_window(Window::new(t, t)), Window::new(t, t));
        // A reversed window stays empty where it starts.
        assert_eq!(counted_window(win_ms(9, 5)), win_ms(9, 9));
    }

    /// A message created at `created` of `bytes`, delivered `delay` later if ever.
    fn msg(created: Instant, bytes: u64, delay: Option<Duration>) -> Message {
        Message {
            created,
            bytes,
            delivered: delay.map(|d| created + d),
            missing: 0,
        }
    }

    fn at_ms(ms: u64) -> Instant {
        Instant::from_millis(ms)
    }

    fn ms(ms: u64) -> Duration {
        Duration::from_millis(ms)
    }

    #[test]
    fn a_hand_made_case() {
        // Over a 1 s window: 20 messages of 1000 bytes with delays 10, 20, ..., 190 ms and one
        // never delivered; one before the window and one after it, which do not count.
        let mut m: Vec<Message> = (0..19)
            .map(|i| msg(at_ms(1000 + 40 * i), 1000, Some(ms(10 * (i + 1)))))
            .collect();
        m.push(msg(at_ms(1900), 1000, None));
        m.push(msg(at_ms(999), 5000, None));
        m.push(msg(at_ms(2000), 5000, Some(ms(1))));
        m.swap(3, 17);
        let a = compute(&m, win_ms(1_000, 2_000));
        assert_eq!(a.messages, 20);
        assert_eq!(a.offered_kbps, 160.0);
        assert_eq!(a.delivered_kbps, 152.0);
        assert_eq!(a.delivered_share, 0.95);
        // Sorted: 10, 20, ..., 190, inf. Nearest rank: p50 is the 10th, p95 the 19th, p99 the
        // 20th (the undelivered message).
        assert_eq!(a.delay_p50_ms, 100.0);
        assert_eq!(a.delay_p95_ms, 190.0);
        assert_eq!(a.delay_p99_ms, f64::INFINITY);
        assert_eq!(a.within_100ms, 0.5);
        assert_eq!(a.within_150ms, 0.75);
        assert_eq!(a.within_300ms, 0.95);
        let json = serde_json::to_value(&a).unwrap();
        assert!(json["delay_p99_ms"].is_null());
        assert_eq!(json["delay_p95_ms"], 190.0);
        let back: AppMetrics = serde_json::from_value(json).unwrap();
        assert!(back.delay_p99_ms.is_nan());
        assert_eq!(back.delay_p95_ms, 190.0);
    }

    #[test]
    fn no_message_gives_no_delay() {
        let a = compute(&[msg(at_ms(5), 100, Some(ms(1)))], win_ms(1_000, 2_000));
        assert_eq!(a.messages, 0);
        assert_eq!(a.offered_kbps, 0.0);
        assert!(a.delay_p50_ms.is_nan() && a.delivered_share.is_nan() && a.within_150ms.is_nan());
    }

    #[test]
    fn a_message_is_delivered_when_its_last_datagram_arrives() {
        let mut l = Ledger::default();
        let a = l.open(at_ms(1), 3000, 3);
        let b = l.open(at_ms(2), 10, 1);
        l.datagram_arrived(a, at_ms(5));
        l.datagram_arrived(a, at_ms(6));
        assert_eq!(l.messages()[a as usize].delivered, None);
        l.datagram_arrived(a, at_ms(9));
        assert_eq!(l.messages()[a as usize].delivered, Some(at_ms(9)));
        l.delivered(b, at_ms(7));
        l.delivered(b, at_ms(8));
        assert_eq!(l.messages()[b as usize].delivered, Some(at_ms(7)));
        assert_eq!(l.len(), 2);
    }
}
