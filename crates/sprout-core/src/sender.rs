//! The sending half of an endpoint (paper §3.4–3.5): sequence and throwaway numbers, the queue
//! occupancy estimate, and the window computed from the receiver's latest forecast.

use std::collections::VecDeque;

use crate::params::{Config, QueueDrain};
use crate::time::{Duration, Instant};
use crate::windowed::Windowed;
use crate::wire::{Feedback, MAX_FORECAST_TICKS};

/// The forecast the sender is currently working from.
#[derive(Clone, Debug)]
struct ActiveForecast {
    id: u32,
    received_or_lost: u64,
    counts: [u32; MAX_FORECAST_TICKS],
    /// The expected (median) counts, or `counts` again when the receiver sent none.
    expected: [u32; MAX_FORECAST_TICKS],
    len: usize,
    /// When this forecast first arrived: tick `i` of it ends at `anchor + i * tick`.
    anchor: Instant,
    /// When this forecast first arrived.
    arrived: Instant,
    /// Forecast ticks whose deliveries have been taken off the queue estimate.
    applied: usize,
    /// Estimated link bytes in the queue toward the receiver, drained by the cautious counts.
    queue: u64,
    /// The same, drained by the expected counts.
    queue_expected: u64,
    /// Ticks past the forecast's end already drained from `queue_expected`.
    beyond: u64,
}

impl ActiveForecast {
    /// Packets the queue estimate loses when tick `tick` (1-based) of the forecast elapses,
    /// by the cautious counts or (`expected`) the expected ones.
    fn drained(&self, tick: usize, drain: QueueDrain, expected: bool) -> u64 {
        match drain {
            QueueDrain::ForecastEntry => self.cumulative(tick, expected),
            QueueDrain::Increment => self
                .cumulative(tick, expected)
                .saturating_sub(self.cumulative(tick - 1, expected)),
        }
    }

    fn cumulative(&self, ticks: usize, expected: bool) -> u64 {
        if ticks == 0 {
            0
        } else if expected {
            self.expected[ticks - 1].max(self.counts[ticks - 1]) as u64
        } else {
            self.counts[ticks - 1] as u64
        }
    }

    /// The queue estimate for the cautious or the expected counts.
    fn queue(&self, expected: bool) -> u64 {
        if expected {
            self.queue_expected
        } else {
            self.queue
        }
    }
}

/// The sender: bookkeeping of what was sent, and the window.
#[derive(Clone, Debug)]
pub struct Sender {
    tick: Duration,
    target_ticks: usize,
    mtu_bytes: u64,
    throwaway_window: Duration,
    drain: QueueDrain,
    forecast_age: Duration,
    window_skip: usize,
    sent: u64,
    history: VecDeque<(Instant, u64)>,
    throwaway: u64,
    last_send: Option<Instant>,
    forecast: Option<ActiveForecast>,
    /// Application data is waiting for the window: windows come from the expected counts.
    backlogged: bool,
    /// The largest expected window of the forecasts of the last one to two
    /// [`PEAK_WINDOW`]s, in link bytes: the least window of a sender whose data waits
    /// through a stall.
    recent_peak: Windowed<u64>,
    /// The most the receiver has reported received or lost, and when that last grew.
    best_received: u64,
    last_progress: Option<Instant>,
    /// No progress for longer than this is a stall: the heartbeat interval (the gap between
    /// two forecasts from a peer with nothing to send) plus a tick.
    stall_after: Duration,
}

/// How long a sender whose data waits remembers the largest window a forecast gave it: long
/// enough to span the stalls of a cellular link (seconds), after which what the link carried
/// before says little about what it carries now.
pub const PEAK_WINDOW: Duration = Duration::from_micros(10_000_000);

/// How long past the end of its last forecast a sender whose data waits goes on as the link
/// recently carried (see `Sender::advance`); after that it stops until feedback comes, as TCP
/// stops at its first retransmission timeout (1 s).
pub const BLIND_SPAN: Duration = Duration::from_micros(1_000_000);

impl Sender {
    /// A sender for the given configuration.
    pub fn new(config: &Config) -> Self {
        Sender {
            tick: config.model.tick_us,
            target_ticks: config.target_ticks,
            mtu_bytes: config.model.mtu_bytes as u64,
            throwaway_window: config.throwaway_window_us,
            drain: config.queue_drain,
            forecast_age: config.model.tick_us * config.forecast_age_ticks as u64,
            window_skip: config.window_skip_ticks,
            sent: 0,
            history: VecDeque::new(),
            throwaway: 0,
            last_send: None,
            forecast: None,
            backlogged: false,
            recent_peak: Windowed::largest(PEAK_WINDOW),
            best_received: 0,
            last_progress: None,
            stall_after: config.heartbeat_interval_us + config.model.tick_us,
        }
    }

    /// Takes in feedback from the receiver that arrived at `now`. Older forecasts than the
    /// one in use are ignored; a repeat of the current one refreshes the queue estimate.
    pub fn on_feedback(&mut self, now: Instant, fb: &Feedback) {
        let len = fb.forecast().len();
        if len == 0 {
            return;
        }
        let queue = self.sent.saturating_sub(fb.received_or_lost);
        if fb.received_or_lost > self.best_received {
            self.best_received = fb.received_or_lost;
            self.last_progress = Some(now);
        }
        match &mut self.forecast {
            Some(cur) if cur.id == fb.forecast_id => {
                if fb.received_or_lost > cur.received_or_lost {
                    cur.received_or_lost = fb.received_or_lost;
                    cur.queue = queue;
                    cur.queue_expected = queue;
                }
            }
            // Forecast ids increase by one per tick; wrapping comparison rejects stale ones.
            Some(cur) if (fb.forecast_id.wrapping_sub(cur.id) as i32) < 0 => {}
            _ => {
                let mut counts = [0u32; MAX_FORECAST_TICKS];
                counts[..len].copy_from_slice(fb.forecast());
                let mut expected = counts;
                if let Some(e) = fb.expected() {
                    expected[..len].copy_from_slice(e);
                }
                self.forecast = Some(ActiveForecast {
                    id: fb.forecast_id,
                    received_or_lost: fb.received_or_lost,
                    counts,
                    expected,
                    len,
                    // The forecast's first tick began when the receiver made it, about one
                    // one-way delay (a tick) before it arrived.
                    anchor: now - self.forecast_age,
                    arrived: now,
                    applied: 0,
                    queue,
                    queue_expected: queue,
                    beyond: 0,
                });
                // The prior's forecast (id 0, made before anything was observed) is no peak.
                if let Some(f) = self.forecast.as_ref().filter(|f| f.id != 0) {
                    let peak = self.window_at(f, 0, 0, true);
                    self.recent_peak.update(now, peak);
                }
            }
        }
    }

    /// How many ids `forecast_id` is ahead of the forecast in use (wrapping), or 0 if it is the
    /// same or older (such a forecast is ignored or only refreshes the queue estimate).
    pub fn forecast_id_ahead(&self, forecast_id: u32) -> u32 {
        match &self.forecast {
            Some(cur) => {
                let ahead = forecast_id.wrapping_sub(cur.id);
                if (ahead as i32) > 0 {
                    ahead
                } else {
                    0
                }
            }
            None => 0,
        }
    }

    /// The most link bytes the receiver has reported received or lost, and when that last
    /// grew (`None` before it ever did).
    pub fn progress(&self) -> (u64, Option<Instant>) {
        (self.best_received, self.last_progress)
    }

    /// When the forecast in use arrived (`None` without one).
    pub fn forecast_arrived(&self) -> Option<Instant> {
        self.forecast.as_ref().map(|f| f.arrived)
    }

    /// Takes each elapsed forecast tick's deliveries off the queue estimate (never below 0).
    fn advance(&mut self, now: Instant) {
        let tick = self.tick;
        if let Some(f) = &mut self.forecast {
            let elapsed = ((now - f.anchor) / tick) as usize;
            let upto = elapsed.min(f.len);
            while f.applied < upto {
                let mtu = self.mtu_bytes;
                let drained = f.drained(f.applied + 1, self.drain, false);
                f.queue = f.queue.saturating_sub(drained.saturating_mul(mtu));
                let drained = f.drained(f.applied + 1, self.drain, true);
                f.queue_expected = f.queue_expected.saturating_sub(drained.saturating_mul(mtu));
                f.applied += 1;
            }
            // Past the forecast's end (no feedback for its whole horizon), for at most
            // BLIND_SPAN, the queue estimate a waiting sender's windows use drains at the
            // recent peak rate: data in flight before the silence is taken to be delivered as
            // the link recently delivered, so the sender goes on at most at that rate (and at
            // most at its application's) instead of stopping while the reverse path is out.
            if elapsed > f.len {
                let per_tick =
                    self.recent_peak.get().unwrap_or(0) / self.target_ticks.max(1) as u64;
                let extra = ((elapsed - f.len) as u64).min(BLIND_SPAN / tick);
                let new = extra.saturating_sub(f.beyond);
                f.queue_expected = f
                    .queue_expected
                    .saturating_sub(new.saturating_mul(per_tick));
                f.beyond = extra;
            }
        }
    }

    /// Says whether application data is waiting for the window. While it is, windows come
    /// from the receiver's expected (median) counts when it sent them, not the cautious ones:
    /// data already waiting gains nothing by waiting here rather than in the link's queue,
    /// which drains at the link's rate, not at the cautious forecast's; the window still
    /// bounds that queue to what the link is expected to drain within the delay target.
    pub fn set_backlogged(&mut self, backlogged: bool) {
        self.backlogged = backlogged;
    }

    /// The window at `now`, in link bytes: what the forecast says will drain within the
    /// delay target (5 ticks, looking further along the forecast as it ages) minus the queue
    /// estimate. Zero without a forecast or once the forecast has run out.
    pub fn window_bytes(&mut self, now: Instant) -> u64 {
        self.advance(now);
        let e = self.backlogged;
        self.window_with(now, e)
    }

    /// The cautious window at `now`, in link bytes, whether data waits or not: what the
    /// forecast lets the application send within the delay target, the rate an adaptive
    /// application should size its data by (the windows of waiting data are for draining
    /// what already waits, not for making more).
    pub fn cautious_window_bytes(&mut self, now: Instant) -> u64 {
        self.advance(now);
        self.window_with(now, false)
    }

    fn window_with(&self, now: Instant, e: bool) -> u64 {
        match &self.forecast {
            Some(f) => self.window_at(f, f.applied, f.queue(e), e),
            None => 0,
        }
        .max(if e { self.backlog_floor(now) } else { 0 })
    }

    /// The least window of a sender whose data waits, in link bytes: two MTU-sized packets
    /// (TCP's least window) minus what it believes is in flight; through a stall (the
    /// receiver has reported nothing more received or lost for longer than the gap between
    /// two of its forecasts, `stall_after`), the largest
    /// window a forecast gave it in the last [`PEAK_WINDOW`] instead. An outage forecast then
    /// does not hold back data that has waited through the outage: the link drains it at its
    /// own rate when it returns, as it would drain a stream sent without congestion control,
    /// while what is in flight stays within what the link recently drained within the delay
    /// target. Once the link delivers again, the forecast alone sets the window.
    fn backlog_floor(&self, now: Instant) -> u64 {
        let least = 2 * self.mtu_bytes;
        // Only through a stall: while the link delivers, the forecast knows its rate.
        let stalled = self
            .last_progress
            .is_none_or(|t| now - t > self.stall_after);
        match (&self.forecast, self.backlogged) {
            (Some(f), true) if stalled => self
                .recent_peak
                .get()
                .unwrap_or(0)
                .max(least)
                .saturating_sub(f.queue_expected),
            _ => 0,
        }
    }

    fn window_at(&self, f: &ActiveForecast, i: usize, queue: u64, expected: bool) -> u64 {
        if i >= f.len {
            return 0;
        }
        let lo = (i + self.window_skip).min(f.len);
        let hi = (i + self.window_skip + self.target_ticks).min(f.len);
        (f.cumulative(hi, expected)
            .saturating_sub(f.cumulative(lo, expected)))
        .saturating_mul(self.mtu_bytes)
        .saturating_sub(queue)
    }

    /// The earliest forecast tick boundary after `now` at which the window, with nothing
    /// more sent and no new forecast, would reach `need_bytes`; `None` if it never does.
    pub fn next_window_open(&mut self, now: Instant, need_bytes: u64) -> Option<Instant> {
        self.advance(now);
        let f = self.forecast.as_ref()?;
        let e = self.backlogged;
        let mut queue = f.queue(e);
        for j in f.applied + 1..=f.len {
            let drained = f.drained(j, self.drain, e).saturating_mul(self.mtu_bytes);
            queue = queue.saturating_sub(drained);
            if self.window_at(f, j, queue, e) >= need_bytes {
                return Some(f.anchor + self.tick * j as u64);
            }
        }
        None
    }

    /// Sequence and throwaway numbers for a datagram about to be sent at `now`.
    pub fn numbers(&mut self, now: Instant) -> (u64, u64) {
        // Everything sent more than the throwaway window ago is assumed not to be reordered
        // with what is sent now.
        while let Some(&(t, end)) = self.history.front() {
            if t + self.throwaway_window < now {
                self.throwaway = end;
                self.history.pop_front();
            } else {
                break;
            }
        }
        (self.sent, self.throwaway)
    }

    /// Records a datagram of `link_bytes` sent at `now`.
    pub fn on_sent(&mut self, now: Instant, link_bytes: u64) {
        self.advance(now);
        self.sent = self.sent.saturating_add(link_bytes);
        self.history.push_back((now, self.sent));
        self.last_send = Some(now);
        if let Some(f) = &mut self.forecast {
            f.queue = f.queue.saturating_add(link_bytes);
            f.queue_expected = f.queue_expected.saturating_add(link_bytes);
        }
    }

    /// When the last datagram was sent.
    pub fn last_send(&self) -> Option<Instant> {
        self.last_send
    }

    /// Link bytes sent so far (the next sequence number).
    pub fn bytes_sent(&self) -> u64 {
        self.sent
    }

    /// The current queue occupancy estimate, in link bytes (0 without a forecast).
    pub fn queue_estimate(&mut self, now: Instant) -> u64 {
        self.advance(now);
        self.forecast.as_ref().map_or(0, |f| f.queue)
    }

    /// The forecast in use (cumulative MTU-sized packets per tick), if any.
    pub fn forecast(&self) -> Option<&[u32]> {
        self.forecast.as_ref().map(|f| &f.counts[..f.len])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(us: u64) -> Instant {
        Instant::from_micros(us)
    }

    fn fb(id: u32, rol: u64, counts: &[u32]) -> Feedback {
        Feedback::new(id, rol, counts)
    }

    /// The paper read literally: increments drained, the window from the forecast's first tick.
    fn increment_config() -> Config {
        Config {
            queue_drain: QueueDrain::Increment,
            window_skip_ticks: 0,
            ..Config::default()
        }
    }

    #[test]
    fn a_backlogged_sender_takes_its_window_from_the_expected_counts() {
        let cautious = [1, 2, 3, 4, 5, 6, 7, 8];
        let expected = [4, 8, 12, 16, 20, 24, 28, 32];
        let mut s = Sender::new(&Config::default());
        s.on_feedback(t(0), &fb(1, 0, &cautious).with_expected(&expected));
        // Nothing waits: ticks 2..6 of the cautious counts (the authors' skip of one tick).
        assert_eq!(s.window_bytes(t(0)), 5 * 1500);
        // Data waits: the same ticks of the expected counts.
        s.set_backlogged(true);
        assert_eq!(s.window_bytes(t(0)), 20 * 1500);
        // Each queue estimate drains by its own counts: 12 packets sent, one tick on.
        s.on_sent(t(0), 12 * 1500);
        assert_eq!(s.window_bytes(t(20_000)), (20 + 4 - 12) * 1500);
        s.set_backlogged(false);
        assert_eq!(s.window_bytes(t(20_000)), 0);
        // Without expected counts, and before anything is reported received (a stall), a
        // backlog changes nothing but the floor of two packets.
        let mut plain = Sender::new(&Config::default());
        plain.on_feedback(t(0), &fb(1, 0, &[0; 8]));
        assert_eq!(plain.window_bytes(t(0)), 0);
        plain.set_backlogged(true);
        assert_eq!(plain.window_bytes(t(0)), 2 * 1500);
        plain.on_sent(t(0), 2 * 1500);
        assert_eq!(
            plain.window_bytes(t(0)),
            0,
            "the floor counts what is in flight"
        );
    }

    #[test]
    fn a_waiting_sender_keeps_the_recent_peak_window_through_an_outage_forecast() {
        let mut s = Sender::new(&Config::default());
        s.set_backlogged(true);
        // A good forecast: 10 packets a tick, so ticks 2..6 hold 50.
        let good: Vec<u32> = (1..=8).map(|i| 10 * i).collect();
        s.on_feedback(t(0), &fb(1, 0, &good));
        assert_eq!(s.window_bytes(t(0)), 50 * 1500);
        // Then an outage: the forecast says nothing will drain. The data that waits may still
        // have the recent peak in flight (here nothing is in flight yet)...
        s.on_feedback(t(20_000), &fb(2, 0, &[0; 8]));
        assert_eq!(s.window_bytes(t(20_000)), 50 * 1500);
        s.on_sent(t(20_000), 50 * 1500);
        assert_eq!(s.window_bytes(t(20_000)), 0);
        // ...and no more while the outage forecast covers the time (8 ticks from its arrival,
        // its anchor at the default forecast age of 0).
        assert_eq!(s.window_bytes(t(120_000)), 0);
        // Past its end, with no feedback, the estimate drains at the peak rate (10 packets a
        // tick) for at most BLIND_SPAN (50 ticks), then stops.
        let end = 20_000 + 8 * 20_000;
        assert_eq!(s.window_bytes(t(end + 2 * 20_000)), 20 * 1500);
        s.on_sent(t(end + 2 * 20_000), 20 * 1500);
        assert_eq!(s.window_bytes(t(end + 50 * 20_000)), 50 * 1500);
        s.on_sent(t(end + 50 * 20_000), 50 * 1500);
        assert_eq!(
            s.window_bytes(t(end + 80 * 20_000)),
            0,
            "blind for 1 s at most"
        );
        // A sender with nothing waiting has no floor: the outage forecast closes its window.
        s.set_backlogged(false);
        assert_eq!(s.window_bytes(t(end + 80 * 20_000)), 0);
    }

    #[test]
    fn window_skips_the_tick_spent_in_transit() {
        // A rising forecast: 0, 1, 2, ... packets in successive ticks.
        let f = [0, 1, 3, 6, 10, 15, 21, 28];
        let window = |skip: usize, now: u64| {
            let mut s = Sender::new(&Config {
                window_skip_ticks: skip,
                queue_drain: QueueDrain::Increment,
                ..Config::default()
            });
            s.on_feedback(t(0), &fb(1, 0, &f));
            s.window_bytes(t(now))
        };
        // Ticks 1..5 hold 10 packets; ticks 2..6 (the authors' counts(5) - counts(0)) hold 15.
        assert_eq!(window(0, 0), 10 * 1500);
        assert_eq!(window(1, 0), 15 * 1500);
        // Two ticks on (nothing sent, nothing to drain): ticks 3..7 = 20 and 4..8 = 25 packets.
        assert_eq!(window(0, 40_000), 20 * 1500);
        assert_eq!(window(1, 40_000), 25 * 1500);
        // Near the end the window shrinks to what is left of the forecast.
        assert_eq!(window(1, 120_000), (28 - 21) * 1500);
        assert_eq!(window(1, 140_000), 0);
        assert_eq!(window(0, 160_000), 0);
    }

    #[test]
    fn authors_drain_subtracts_the_cumulative_entry() {
        let mut s = Sender::new(&Config::default());
        s.on_feedback(t(0), &fb(1, 0, &[2, 4, 6, 8, 10, 12, 14, 16]));
        s.on_sent(t(0), 30_000);
        // Tick 1 takes off 2 packets, tick 2 the entry 4, tick 3 the entry 6, tick 4 the entry 8.
        assert_eq!(s.queue_estimate(t(20_000)), 30_000 - 3000);
        assert_eq!(s.queue_estimate(t(40_000)), 30_000 - 3000 - 6000);
        assert_eq!(s.queue_estimate(t(60_000)), 30_000 - 3000 - 6000 - 9000);
        assert_eq!(s.queue_estimate(t(80_000)), 0);
    }

    #[test]
    fn window_from_forecast_minus_queue() {
        let mut s = Sender::new(&increment_config());
        assert_eq!(s.window_bytes(t(0)), 0, "no forecast, no window");
        // 2 packets per tick: 5 ticks drain 10 packets = 15000 bytes.
        let f = [2, 4, 6, 8, 10, 12, 14, 16];
        s.on_feedback(t(0), &fb(1, 0, &f));
        assert_eq!(s.window_bytes(t(0)), 15_000);
        s.on_sent(t(0), 9000);
        assert_eq!(s.window_bytes(t(0)), 6000);
        // After one tick 3000 bytes have drained and the sender looks one tick further.
        assert_eq!(s.queue_estimate(t(20_000)), 6000);
        assert_eq!(s.window_bytes(t(20_000)), 15_000 - 6000);
        // After 3 ticks only ticks 4..8 remain: 5 ticks but the forecast ends at 8.
        assert_eq!(s.queue_estimate(t(60_000)), 0);
        assert_eq!(s.window_bytes(t(60_000)), 15_000);
        assert_eq!(s.window_bytes(t(100_000)), 3 * 2 * 1500);
        assert_eq!(s.window_bytes(t(160_000)), 0, "forecast ran out");
    }

    #[test]
    fn queue_from_received_or_lost() {
        let mut s = Sender::new(&Config::default());
        s.on_sent(t(0), 30_000);
        s.on_feedback(t(1000), &fb(1, 12_000, &[10, 20, 30, 40, 50, 60, 70, 80]));
        assert_eq!(s.queue_estimate(t(1000)), 18_000);
        // A repeat of the same forecast with a newer count refreshes the queue only.
        s.on_feedback(t(5000), &fb(1, 27_000, &[10, 20, 30, 40, 50, 60, 70, 80]));
        assert_eq!(s.queue_estimate(t(5000)), 3000);
        // An older forecast is ignored.
        s.on_feedback(t(6000), &fb(0, 0, &[0; 8]));
        assert_eq!(s.forecast().unwrap()[0], 10);
        // A peer claiming more than was sent can not make the estimate negative.
        s.on_feedback(t(7000), &fb(2, 99_999, &[1; 8]));
        assert_eq!(s.queue_estimate(t(7000)), 0);
    }

    #[test]
    fn throwaway_is_the_last_datagram_older_than_10_ms() {
        let mut s = Sender::new(&Config::default());
        assert_eq!(s.numbers(t(0)), (0, 0));
        s.on_sent(t(0), 1000);
        assert_eq!(s.numbers(t(5000)), (1000, 0));
        s.on_sent(t(5000), 1000);
        assert_eq!(s.numbers(t(10_001)), (2000, 1000));
        s.on_sent(t(10_001), 1000);
        assert_eq!(s.numbers(t(15_001)), (3000, 2000));
    }

    #[test]
    fn next_window_open() {
        let mut s = Sender::new(&increment_config());
        s.on_feedback(t(0), &fb(1, 0, &[1, 2, 3, 4, 5, 6, 7, 8]));
        s.on_sent(t(0), 7500);
        assert_eq!(s.window_bytes(t(0)), 0);
        // Tick 1 drains 1500 (queue 6000) and the horizon 2..6 holds 5 packets: room 1500.
        // Tick 2: queue 4500, room 7500 - 4500 = 3000; tick 3: queue 3000, room 4500.
        assert_eq!(s.next_window_open(t(0), 1500), Some(t(20_000)));
        assert_eq!(s.next_window_open(t(0), 4500), Some(t(60_000)));
        assert_eq!(s.next_window_open(t(0), 100_000), None);
    }
}
