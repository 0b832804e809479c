//! The receiving half of an endpoint (paper §3.2–3.4): ticks the rate estimator, honours the
//! sender's time-to-next, counts bytes received or written off as lost, and produces the
//! forecast that goes back to the sender.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::estimator::{self, Estimator};
use crate::params::Config;
use crate::time::{Duration, Instant};
use crate::windowed::Windowed;
use crate::wire::{Feedback, Header, MAX_FORECAST_TICKS};

/// Most received-but-not-yet-written-off datagrams remembered; a peer that never advances its
/// throwaway number can not make the receiver grow without bound. When full, the lowest one is
/// written off (everything below its end counts as received or lost).
pub const MAX_TRACKED: usize = 1 << 16;

/// Counters kept by a receiver.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReceiverStats {
    /// Datagrams taken in.
    pub datagrams: u64,
    /// Link bytes taken in.
    pub link_bytes: u64,
    /// Ticks run.
    pub ticks: u64,
    /// Ticks whose observation was skipped because the sender had announced a pause.
    pub skipped_observations: u64,
    /// Ticks scored as a lower bound on the link's rate: every datagram in them was sent
    /// while the sender was application-limited.
    #[serde(default)]
    pub censored_observations: u64,
    /// Datagrams that arrived after being written off (reordered by more than 10 ms).
    pub late: u64,
    /// Datagrams seen twice, or covering bytes of a datagram already counted (not counted
    /// again in received-or-lost).
    pub duplicates: u64,
}

/// How long a least one-way delay is remembered: long enough that a queue standing for tens
/// of seconds still shows as one, short enough that the two hosts' clocks (100 ppm apart at
/// worst, far less when both follow NTP) drift by no more than a few milliseconds within it,
/// well under the tick a datagram must wait to count as queued.
pub const MIN_DELAY_WINDOW: Duration = Duration::from_micros(30_000_000);

/// How long after a loss in an application-limited peer's stream the receiver sends it only
/// cautious counts (see `Receiver::feedback`).
pub const LOSS_MEMORY: Duration = Duration::from_micros(1_000_000);

/// The receiver: estimator, tick clock, time-to-next hold, received-or-lost count, forecast.
#[derive(Clone, Debug)]
pub struct Receiver {
    estimator: Box<dyn Estimator>,
    tick: Duration,
    mtu_bytes: f64,
    forecast_ticks: usize,
    /// Start of the next tick boundary; `None` until the first datagram arrives.
    next_tick: Option<Instant>,
    bytes_this_tick: u64,
    /// Every datagram of this tick so far was marked application-limited.
    app_limited_this_tick: bool,
    /// A datagram of this tick waited in a queue (its one-way delay more than a tick above
    /// the least seen) or followed a loss.
    queued_this_tick: bool,
    /// The least one-way delay seen lately (clock offset included).
    min_delay: Windowed<i128>,
    /// No observation of an empty tick before this time (arrival + time-to-next).
    hold_until: Instant,
    /// Every link byte of the peer's below this is received or written off as lost.
    written_off: u64,
    /// Datagrams received at or above `written_off`: sequence number -> link bytes. Keyed by
    /// sequence number, so a duplicate anywhere in the window is found in O(log n) and the
    /// ones a new throwaway number writes off are the first entries (O(log n) each, each entry
    /// removed once: O(log n) amortised per datagram, n <= [`MAX_TRACKED`]).
    recent: BTreeMap<u64, u64>,
    /// Sum of the link bytes in `recent`.
    recent_bytes: u64,
    /// End (sequence number + link bytes) of the highest datagram received.
    highest_end: u64,
    forecast: [u32; MAX_FORECAST_TICKS],
    /// The expected counts of the same forecast, when the peer's sender is
    /// application-limited (`None` otherwise).
    expected: Option<[u32; MAX_FORECAST_TICKS]>,
    /// The peer's latest datagram was marked application-limited.
    peer_app_limited: bool,
    /// When a gap in an application-limited peer's byte stream (a loss) was last seen.
    last_loss: Option<Instant>,
    /// When the latest datagram arrived.
    last_arrival: Instant,
    forecast_id: u32,
    forecast_fresh: bool,
    stats: ReceiverStats,
}

impl Receiver {
    /// A receiver for the given configuration.
    pub fn new(config: &Config) -> Self {
        Receiver {
            estimator: estimator::build(config),
            tick: config.model.tick_us,
            mtu_bytes: config.model.mtu_bytes as f64,
            forecast_ticks: config.model.forecast_ticks.min(MAX_FORECAST_TICKS),
            next_tick: None,
            bytes_this_tick: 0,
            app_limited_this_tick: true,
            queued_this_tick: false,
            min_delay: Windowed::least(MIN_DELAY_WINDOW),
            hold_until: Instant::ZERO,
            written_off: 0,
            recent: BTreeMap::new(),
            recent_bytes: 0,
            highest_end: 0,
            forecast: [0; MAX_FORECAST_TICKS],
            expected: None,
            peer_app_limited: false,
            last_loss: None,
            last_arrival: Instant::ZERO,
            forecast_id: 0,
            forecast_fresh: false,
            stats: ReceiverStats::default(),
        }
    }

    /// Takes in a datagram's header that arrived at `now`, occupying `link_bytes` on the link.
    /// The header's values are taken as they come: [`crate::Connection::handle_datagram`]
    /// checks them against what the peer can have sent before calling this. All arithmetic
    /// saturates, so even unchecked values can not overflow.
    pub fn on_datagram(&mut self, now: Instant, header: &Header, link_bytes: u64) {
        self.run_ticks(now);
        self.stats.datagrams = self.stats.datagrams.saturating_add(1);
        self.stats.link_bytes = self.stats.link_bytes.saturating_add(link_bytes);
        if self.next_tick.is_none() {
            self.next_tick = Some(now + self.tick);
        }
        self.bytes_this_tick = self.bytes_this_tick.saturating_add(link_bytes);
        self.app_limited_this_tick &= header.app_limited;
        self.peer_app_limited = header.app_limited;
        self.last_arrival = now;
        if header.app_limited {
            // Only an application-limited sender's ticks can be censored, so only theirs
            // need the delay; a saturating sender's are scored as the paper scores them.
            let delay = now.as_micros() as i128 - header.sent_us as i128;
            self.min_delay.update(now, delay);
            let least = self.min_delay.get().unwrap_or(delay);
            // A datagram that waited, or one after a gap in the peer's byte stream (a loss:
            // a full queue dropped it), says the link, not the sender, set the pace.
            let gap = header.seq > self.highest_end;
            if gap {
                self.last_loss = Some(now);
            }
            if delay - least > self.tick.as_micros() as i128 || gap {
                self.queued_this_tick = true;
            }
        }
        self.hold_until = now + Duration::from_micros(header.time_to_next_us as u64);
        self.account(header.seq, link_bytes, header.throwaway);
    }

    /// Received-or-lost bookkeeping from the sequence and throwaway numbers.
    fn account(&mut self, seq: u64, len: u64, throwaway: u64) {
        if throwaway > self.written_off {
            self.written_off = throwaway;
            // Entries are ordered by sequence number: the ones below the mark come first.
            while let Some(entry) = self.recent.first_entry() {
                if *entry.key() >= throwaway {
                    break;
                }
                let l = entry.remove();
                self.recent_bytes = self.recent_bytes.saturating_sub(l);
            }
        }
        let end = seq.saturating_add(len);
        self.highest_end = self.highest_end.max(end);
        if seq < self.written_off {
            self.stats.late = self.stats.late.saturating_add(1);
            return;
        }
        // The peer's datagrams tile its byte stream: one that covers bytes already counted is
        // a duplicate (or a forgery) and adds nothing to received-or-lost. Counting it would
        // let the count run ahead of what the peer sent, and the peer drops feedback that
        // does. Found in O(log n) from the neighbours by sequence number.
        let overlaps_below = self
            .recent
            .range(..=seq)
            .next_back()
            .is_some_and(|(&s, &l)| s.saturating_add(l) > seq);
        let overlaps_above = self
            .recent
            .range(seq..)
            .next()
            .is_some_and(|(&s, _)| s < end);
        if overlaps_below || overlaps_above {
            self.stats.duplicates = self.stats.duplicates.saturating_add(1);
            return;
        }
        if self.recent.len() >= MAX_TRACKED {
            if let Some((s, l)) = self.recent.pop_first() {
                self.recent_bytes = self.recent_bytes.saturating_sub(l);
                self.written_off = self.written_off.max(s.saturating_add(l));
            }
            if seq < self.written_off {
                self.stats.late = self.stats.late.saturating_add(1);
                return;
            }
        }
        self.recent.insert(seq, len);
        self.recent_bytes = self.recent_bytes.saturating_add(len);
    }

    /// Link bytes of the peer's data received, or sent long enough ago to be written off.
    pub fn received_or_lost(&self) -> u64 {
        self.written_off.saturating_add(self.recent_bytes)
    }

    /// How far into the peer's byte stream this receiver has accounted, in link bytes: the
    /// larger of [`Receiver::received_or_lost`] and the end of the highest datagram received.
    /// The peer can not have sent much beyond it (see `Connection`'s sequence bound).
    pub fn accounted(&self) -> u64 {
        self.received_or_lost().max(self.highest_end)
    }

    /// Datagrams currently tracked as received and not yet written off (at most
    /// [`MAX_TRACKED`]).
    pub fn tracked(&self) -> usize {
        self.recent.len()
    }

    /// The largest cumulative count the estimator can forecast at horizon `h` ticks, in
    /// MTU-sized packets ([`Estimator::max_forecast`]).
    pub fn max_forecast(&self, h: usize) -> u32 {
        self.estimator.max_forecast(h)
    }

    /// When the next tick is due (`None` before any datagram has arrived).
    pub fn next_tick(&self) -> Option<Instant> {
        self.next_tick
    }

    /// Runs every tick due by `now`.
    pub fn on_timeout(&mut self, now: Instant) {
        self.run_ticks(now);
    }

    fn run_ticks(&mut self, now: Instant) {
        while let Some(t) = self.next_tick {
            if t > now {
                break;
            }
            self.tick(t);
            self.next_tick = Some(t + self.tick);
            if t == Instant::MAX {
                break;
            }
        }
    }

    /// One tick ending at `end`: evolve, then observe (unless the sender announced a pause
    /// that covers the tick and nothing came), then mark the forecast stale. A tick whose
    /// datagrams were all sent by an application-limited sender and met no queue on the way
    /// (none took more than a tick longer than the quickest lately) is a censored
    /// observation: the link was not kept busy, so it could have carried at least what came.
    /// A tick in which one of them queued measures the link, as the paper scores every tick.
    ///
    /// A peer that marks every datagram so only keeps its own forecast, the one that paces
    /// its sending toward us, from falling: it could as well ignore the forecast.
    fn tick(&mut self, end: Instant) {
        self.stats.ticks = self.stats.ticks.saturating_add(1);
        self.estimator.evolve();
        let censored = std::mem::replace(&mut self.app_limited_this_tick, true)
            && !std::mem::take(&mut self.queued_this_tick);
        self.queued_this_tick = false;
        if self.bytes_this_tick > 0 {
            // A tick that saw some bytes but less than one MTU counts as one packet.
            let packets = (self.bytes_this_tick as f64 / self.mtu_bytes).max(1.0);
            if censored {
                self.stats.censored_observations =
                    self.stats.censored_observations.saturating_add(1);
                self.estimator.observe_at_least(packets);
            } else {
                self.estimator.observe(packets);
            }
        } else if self.hold_until > end - self.tick {
            // The sender said it would not send before this tick began: an empty tick says
            // nothing about the link.
            self.stats.skipped_observations = self.stats.skipped_observations.saturating_add(1);
        } else {
            self.estimator.observe(0.0);
        }
        self.bytes_this_tick = 0;
        self.forecast_fresh = false;
    }

    /// The feedback to piggyback on the next outgoing datagram: the latest forecast and the
    /// received-or-lost count, and, for an application-limited peer, the forecast's expected
    /// counts. `None` until a datagram has arrived.
    pub fn feedback(&mut self) -> Option<Feedback> {
        self.next_tick?;
        let n = self.forecast_ticks;
        if !self.forecast_fresh {
            self.estimator.forecast(&mut self.forecast[..n]);
            self.forecast_id = self.forecast_id.wrapping_add(1);
            self.forecast_fresh = true;
            self.expected = None;
        }
        if self.peer_app_limited && self.expected.is_none() {
            let mut e = [0u32; MAX_FORECAST_TICKS];
            if self.estimator.forecast_expected(&mut e[..n]) {
                self.expected = Some(e);
            }
        }
        let fb = Feedback::new(
            self.forecast_id,
            self.received_or_lost(),
            &self.forecast[..n],
        );
        // A peer whose datagrams are being dropped is sending at least what the link takes:
        // it gets the cautious counts alone, whose windows Sprout keeps however the link
        // drops (its forecasts do not count losses).
        let losing = self
            .last_loss
            .is_some_and(|t| self.last_arrival - t < LOSS_MEMORY);
        Some(match (&self.expected, self.peer_app_limited && !losing) {
            (Some(e), true) => fb.with_expected(&e[..n]),
            _ => fb,
        })
    }

    /// Whether [`Receiver::feedback`] would now give a forecast other than `last_sent` (the id
    /// of the forecast last piggybacked), without computing it.
    pub fn has_unsent_feedback(&self, last_sent: Option<u32>) -> bool {
        self.next_tick.is_some() && (!self.forecast_fresh || Some(self.forecast_id) != last_sent)
    }

    /// The rate estimator (read-only: its belief, for tests and benches).
    pub fn estimator(&self) -> &dyn Estimator {
        self.estimator.as_ref()
    }

    /// The estimator's current rate estimate, in packets/s.
    pub fn rate_pps(&self) -> f64 {
        self.estimator.rate_pps()
    }

    /// Counters.
    pub fn stats(&self) -> ReceiverStats {
        self.stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(us: u64) -> Instant {
        Instant::from_micros(us)
    }

    fn header(seq: u64, throwaway: u64, ttn_us: u32) -> Header {
        Header {
            seq,
            throwaway,
            time_to_next_us: ttn_us,
            sent_us: 0,
            heartbeat: false,
            app_limited: false,
            feedback: None,
        }
    }

    /// Feeds `r` two MTU-sized datagrams a tick for `ticks` ticks from tick `from`, marked
    /// application-limited or not, each taking `delay(i)` µs on the way.
    fn feed(r: &mut Receiver, from: u64, ticks: u64, marked: bool, delay: impl Fn(u64) -> u64) {
        for i in from..from + ticks {
            for j in 0..2 {
                let arrive = 1_000_000 + i * 20_000 + j * 5_000;
                let mut h = header((i * 2 + j) * 1500, 0, 0);
                h.app_limited = marked;
                h.sent_us = arrive - delay(i);
                r.on_datagram(t(arrive), &h, 1500);
            }
        }
        r.on_timeout(t(1_000_000 + (from + ticks) * 20_000));
    }

    #[test]
    fn a_quiet_senders_ticks_are_censored_and_keep_its_forecast_up() {
        let cfg = Config::default();
        let (mut marked, mut plain) = (Receiver::new(&cfg), Receiver::new(&cfg));
        feed(&mut marked, 0, 250, true, |_| 20_000);
        feed(&mut plain, 0, 250, false, |_| 20_000);
        assert!(
            marked.stats().censored_observations >= 245,
            "{:?}",
            marked.stats()
        );
        assert_eq!(plain.stats().censored_observations, 0);
        // Two packets a tick is 100 packets/s. Scored as measurements, the cautious forecast
        // falls below what the sender sends; as lower bounds, it stays well above it.
        let five = |r: &mut Receiver| r.feedback().unwrap().forecast()[4];
        assert!(five(&mut plain) < 10, "{}", five(&mut plain));
        assert!(five(&mut marked) > 20, "{}", five(&mut marked));
        // Only the application-limited peer is sent the expected counts, at least the cautious.
        assert!(plain.feedback().unwrap().expected().is_none());
        let fb = marked.feedback().unwrap();
        let e = fb.expected().unwrap();
        assert!(e.iter().zip(fb.forecast()).all(|(e, c)| e >= c), "{e:?}");
    }

    #[test]
    fn a_loss_makes_ticks_measurements_and_withholds_the_expected_counts() {
        let mut r = Receiver::new(&Config::default());
        feed(&mut r, 0, 50, true, |_| 20_000);
        assert!(r.feedback().unwrap().expected().is_some());
        let censored = r.stats().censored_observations;
        // One datagram of the peer's stream goes missing: a full queue dropped it.
        let mut h = header(200 * 1500, 0, 0);
        h.app_limited = true;
        h.sent_us = 1_000_000 + 50 * 20_000 - 20_000;
        r.on_datagram(t(1_000_000 + 50 * 20_000), &h, 1500);
        r.on_timeout(t(1_000_000 + 51 * 20_000));
        assert_eq!(
            r.stats().censored_observations,
            censored,
            "the tick with the gap"
        );
        assert!(r.feedback().unwrap().expected().is_none());
        // A second on, with nothing lost since, the expected counts come back.
        let mut h = header(201 * 1500, 0, 0);
        h.app_limited = true;
        h.sent_us = 1_000_000 + 101 * 20_000 - 20_000;
        r.on_datagram(t(1_000_000 + 101 * 20_000), &h, 1500);
        assert!(r.feedback().unwrap().expected().is_some());
    }

    #[test]
    fn an_application_limited_tick_that_met_a_queue_measures_the_link() {
        let mut r = Receiver::new(&Config::default());
        feed(&mut r, 0, 50, true, |_| 20_000);
        let censored = r.stats().censored_observations;
        // The same sender's datagrams now wait longer and longer: the link is the bottleneck.
        feed(&mut r, 50, 50, true, |i| 20_000 + (i - 49) * 2_000);
        let more = r.stats().censored_observations - censored;
        // Only the first ticks, within a tick (20 ms) of the least delay, are censored.
        assert!(more <= 11, "{more} censored of 50");
        assert!(r.rate_pps() < 200.0, "{}", r.rate_pps());
    }

    #[test]
    fn received_or_lost_from_sequence_and_throwaway() {
        let mut r = Receiver::new(&Config::default());
        r.on_datagram(t(0), &header(0, 0, 0), 1500);
        r.on_datagram(t(1), &header(1500, 0, 0), 1500);
        assert_eq!(r.received_or_lost(), 3000);
        // 3000..4500 is lost; the next datagram says everything below 4500 is settled.
        r.on_datagram(t(30_000), &header(6000, 4500, 0), 1500);
        assert_eq!(r.received_or_lost(), 4500 + 1500);
        // The lost datagram turns up late: already written off, not counted twice.
        r.on_datagram(t(30_001), &header(3000, 0, 0), 1500);
        assert_eq!(r.received_or_lost(), 6000);
        assert_eq!(r.stats().late, 1);
        // A duplicate is not counted twice either.
        r.on_datagram(t(30_002), &header(6000, 4500, 0), 1500);
        assert_eq!(r.received_or_lost(), 6000);
        assert_eq!(r.stats().duplicates, 1);
    }

    #[test]
    fn time_to_next_skips_empty_ticks() {
        let cfg = Config::default();
        let mut r = Receiver::new(&cfg);
        // The sender says it will pause 100 ms: the next four empty ticks are not observed.
        r.on_datagram(t(0), &header(0, 0, 100_000), 1500);
        r.on_timeout(t(100_000));
        assert_eq!(r.stats().ticks, 5);
        // Tick at 20 ms saw the datagram; the ticks ending at 40, 60, 80 and 100 ms began before
        // the hold ran out.
        assert_eq!(r.stats().skipped_observations, 4);
        r.on_timeout(t(120_000));
        assert_eq!(
            r.stats().skipped_observations,
            4,
            "tick 100..120 ms is observed"
        );
    }

    #[test]
    fn forecast_only_after_first_datagram_and_refreshes_per_tick() {
        let mut r = Receiver::new(&Config::default());
        assert!(r.feedback().is_none());
        r.on_datagram(t(0), &header(0, 0, 0), 1500);
        let a = r.feedback().unwrap();
        let b = r.feedback().unwrap();
        assert_eq!(a.forecast_id, b.forecast_id, "same tick, same forecast");
        for i in 1..=50u64 {
            r.on_datagram(t(i * 2000), &header(i * 1500, 0, 0), 1500);
        }
        let c = r.feedback().unwrap();
        assert!(c.forecast_id > a.forecast_id);
        // 10 packets every 20 ms = 500 packets/s: the forecast is cautious but positive.
        assert!(c.forecast()[4] > 0, "{:?}", c.forecast());
    }

    #[test]
    fn hostile_peer_can_not_grow_state_without_bound() {
        let mut r = Receiver::new(&Config::default());
        for i in 0..(MAX_TRACKED as u64 + 100) {
            r.on_datagram(t(0), &header(i * 10, 0, 0), 10);
        }
        assert!(r.recent.len() <= MAX_TRACKED);
        assert_eq!(r.received_or_lost(), (MAX_TRACKED as u64 + 100) * 10);
    }

    #[test]
    fn duplicates_are_found_anywhere_in_the_window() {
        let mut r = Receiver::new(&Config::default());
        for i in 0..1000u64 {
            r.on_datagram(t(0), &header(i * 100, 0, 0), 100);
        }
        assert_eq!(r.received_or_lost(), 100_000);
        // A repeat of the very first one, 1000 datagrams back (the old scan saw only 64).
        r.on_datagram(t(0), &header(0, 0, 0), 100);
        // One that starts inside a counted datagram, and one that runs into the next.
        r.on_datagram(t(0), &header(150, 0, 0), 10);
        r.on_datagram(t(0), &header(99_950, 0, 0), 100);
        assert_eq!(r.stats().duplicates, 3);
        assert_eq!(r.received_or_lost(), 100_000, "nothing counted twice");
        assert_eq!(r.tracked(), 1000);
        // A throwaway number writes off what lies below it, in order.
        r.on_datagram(t(0), &header(100_000, 50_000, 0), 100);
        assert_eq!(r.tracked(), 501);
        assert_eq!(r.received_or_lost(), 100_100);
    }

    #[test]
    fn numbers_near_the_top_do_not_overflow() {
        let mut r = Receiver::new(&Config::default());
        r.on_datagram(t(0), &header(u64::MAX - 10, u64::MAX - 10, u32::MAX), 1500);
        r.on_datagram(t(1), &header(u64::MAX, u64::MAX, 0), 1500);
        assert_eq!(r.received_or_lost(), u64::MAX);
        assert_eq!(r.accounted(), u64::MAX);
        r.on_timeout(t(100_000));
        assert!(r.feedback().is_some());
    }
}
