//! The agent's sender: pacing, the window and the application's datagrams.

use sprout_core::time::Duration;
use sprout_core::Instant;

use super::*;

impl RlEnv {
    /// Sets the pacing rate (bit/s): the next packet leaves one new interval after the last.
    pub(super) fn set_rate(&mut self, rate_bps: f64) {
        if rate_bps == self.rate_bps {
            return;
        }
        self.rate_bps = rate_bps;
        self.next_send_ns = if rate_bps <= 0.0 {
            None
        } else {
            let now_ns = u128::from(self.now.as_micros()) * 1000;
            let interval = self.interval_ns();
            Some(match self.last_send_ns {
                Some(last) => (last + interval).max(now_ns),
                None => now_ns,
            })
        };
    }

    /// Time between paced packets at the current rate, nanoseconds (at least 1).
    pub(super) fn interval_ns(&self) -> u128 {
        self.interval_ns_for(self.cfg.packet_bytes)
    }

    /// Time a datagram of `bytes` takes at the current rate, nanoseconds (at least 1).
    pub(super) fn interval_ns_for(&self, bytes: u32) -> u128 {
        let ns = (f64::from(bytes) * 8.0 * 1e9 / self.rate_bps).round();
        if ns.is_finite() && ns >= 1.0 {
            ns.min(1e30) as u128
        } else {
            1
        }
    }

    /// Sends one data packet `at`.
    pub(super) fn send_packet(&mut self, at: Instant) {
        self.send_datagram(at, self.cfg.packet_bytes, NO_MESSAGE);
    }

    /// Sends a data packet of `bytes` carrying part of `message` `at`.
    pub(super) fn send_datagram(&mut self, at: Instant, bytes: u32, message: u32) {
        let packet = Packet {
            seq: self.sent_bytes,
            message,
        };
        self.data.send(at, bytes, packet);
        self.sent_bytes += u64::from(bytes);
        self.step_sent += u64::from(bytes);
    }

    /// What the transport allows the application to hand over now (adaptive video's frame
    /// size), bytes: the rate times one frame interval, or the window less what is in flight.
    pub(super) fn app_allowance(&self) -> u64 {
        match self.cfg.action {
            ActionKind::Rate => {
                let per_s = self.cfg.app.messages_per_s().max(f64::MIN_POSITIVE);
                (self.rate_bps / 8.0 / per_s).floor().min(u64::MAX as f64) as u64
            }
            ActionKind::Window => self
                .window_bytes
                .saturating_sub(self.sent_bytes - self.acked_bytes),
        }
    }

    /// The application hands the sender what it created by `until`.
    pub(super) fn hand_over(&mut self, until: Instant) {
        let allowance = self.app_allowance();
        let max = self.cfg.packet_bytes;
        if let Some(app) = self.app.as_mut() {
            app.hand_over(until, max, allowance);
        }
    }

    /// Rate mode with an application: the paced datagrams before `end`, each at its
    /// paced instant if the queue holds one then (an empty queue moves the next instant to the
    /// application's next message); then hands over what is due by `until`.
    pub(super) fn app_rate_sends(&mut self, end: Instant, until: Instant) {
        let end_ns = ns_of(end);
        while let Some(next) = self.next_send_ns {
            if next >= end_ns {
                break;
            }
            let at = instant_of_ns(next);
            self.hand_over(at);
            let Some(app) = self.app.as_mut() else {
                break;
            };
            if let Some((message, len)) = app.queue.pop_front() {
                app.queued_bytes -= u64::from(len);
                self.send_datagram(at, len, message);
                self.last_send_ns = Some(next);
                self.next_send_ns = Some(next + self.interval_ns_for(len));
            } else {
                // Every message due by `at` is handed over, so this is later than `next`.
                let due = ns_of(app.source.next_at());
                self.next_send_ns = Some(next.max(due));
            }
        }
        self.hand_over(until);
    }

    /// Window mode with an application: hands over what is due by `at` and sends `at` the
    /// queued datagrams the window allows.
    pub(super) fn app_window_send(&mut self, at: Instant) {
        self.hand_over(at);
        loop {
            let Some(app) = self.app.as_mut() else {
                return;
            };
            let Some(&(message, len)) = app.queue.front() else {
                return;
            };
            if self.sent_bytes - self.acked_bytes + u64::from(len) > self.window_bytes {
                return;
            }
            app.queue.pop_front();
            app.queued_bytes -= u64::from(len);
            self.send_datagram(at, len, message);
        }
    }

    /// Window mode: sends `at` what the window allows.
    pub(super) fn send_window(&mut self, at: Instant) {
        let bytes = u64::from(self.cfg.packet_bytes);
        while self.sent_bytes - self.acked_bytes + bytes <= self.window_bytes {
            self.send_packet(at);
        }
    }

    /// The sender takes in a report.
    pub(super) fn on_report(&mut self, report: Report) {
        self.acked_bytes = self.acked_bytes.max(report.acked_bytes);
        self.report = Some(report);
    }

    /// The sender at `now`, in the loop's step 3: in rate mode it sends its paced packets
    /// due by `now` (none at or after the step's end, whose rate the next action sets); in
    /// window mode what the window allows.
    pub(super) fn sender_act(&mut self, now: Instant) {
        match self.cfg.action {
            ActionKind::Window => {
                if self.app.is_some() {
                    self.app_window_send(now);
                } else {
                    self.send_window(now);
                }
            }
            ActionKind::Rate => {
                if now >= self.horizon {
                    return;
                }
                let end = (now + Duration::from_micros(1)).min(self.horizon);
                if self.app.is_some() {
                    self.app_rate_sends(end, now);
                    return;
                }
                let end_ns = ns_of(end);
                while let Some(next) = self.next_send_ns {
                    if next >= end_ns {
                        break;
                    }
                    self.send_packet(instant_of_ns(next));
                    self.last_send_ns = Some(next);
                    self.next_send_ns = Some(next + self.interval_ns());
                }
            }
        }
    }

    /// When the sender next has something to do: its next paced instant, or its
    /// application's next message ([`Instant::MAX`]: nothing).
    pub(super) fn sender_next(&self) -> Instant {
        let paced = match self.cfg.action {
            ActionKind::Rate => self.next_send_ns.map_or(Instant::MAX, instant_of_ns),
            ActionKind::Window => Instant::MAX,
        };
        let app = self
            .app
            .as_ref()
            .map_or(Instant::MAX, |a| a.source.next_at());
        paced.min(app)
    }
}

/// `t` in nanoseconds, the pacer's unit.
fn ns_of(t: Instant) -> u128 {
    u128::from(t.as_micros()) * 1000
}

/// The instant of `ns` nanoseconds, rounded down to the microsecond ([`Instant::MAX`] beyond
/// it).
fn instant_of_ns(ns: u128) -> Instant {
    Instant::from_micros(u64::try_from(ns / 1000).unwrap_or(u64::MAX))
}
