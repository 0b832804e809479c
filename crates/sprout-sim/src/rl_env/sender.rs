//! The agent's sender: pacing, the window and the application's datagrams.

use sprout_core::Instant;
use sprout_link::LinkEvent;

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
            let now_ns = u128::from(self.now_us) * 1000;
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

    /// Sends one data packet at `t_us`.
    pub(super) fn send_packet(&mut self, t_us: u64) {
        self.send_datagram(t_us, self.cfg.packet_bytes, NO_MESSAGE);
    }

    /// Sends a data packet of `bytes` carrying part of `message` at `t_us`.
    pub(super) fn send_datagram(&mut self, t_us: u64, bytes: u32, message: u32) {
        let at = Instant::from_micros(t_us);
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

    /// The application hands the sender what it created by `until_us`.
    pub(super) fn hand_over(&mut self, until_us: u64) {
        let allowance = self.app_allowance();
        let max = self.cfg.packet_bytes;
        if let Some(app) = self.app.as_mut() {
            app.hand_over(until_us, max, allowance);
        }
    }

    /// Rate mode with an application: the paced datagrams of `[now, t1)`, each at its paced
    /// instant if the queue holds one then; an empty queue moves the next instant to the
    /// application's next message.
    pub(super) fn app_rate_sends(&mut self, t1: u64) {
        let end_ns = u128::from(t1) * 1000;
        while let Some(next) = self.next_send_ns {
            if next >= end_ns {
                break;
            }
            let at_us = (next / 1000) as u64;
            self.hand_over(at_us);
            let Some(app) = self.app.as_mut() else {
                break;
            };
            if let Some((message, len)) = app.queue.pop_front() {
                app.queued_bytes -= u64::from(len);
                self.send_datagram(at_us, len, message);
                self.last_send_ns = Some(next);
                self.next_send_ns = Some(next + self.interval_ns_for(len));
            } else {
                // Every message due by `at_us` is handed over, so this is later than `next`.
                let due = u128::from(app.source.next_us()) * 1000;
                self.next_send_ns = Some(next.max(due));
            }
        }
        self.hand_over(t1 - 1);
    }

    /// Window mode with an application: hands over what is due by `t_us` and sends at `t_us`
    /// the queued datagrams the window allows.
    pub(super) fn app_window_send(&mut self, t_us: u64) {
        self.hand_over(t_us);
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
            self.send_datagram(t_us, len, message);
        }
    }

    /// Window mode with an application over `[t0, t1)`: sends at `t0`, then, in time order,
    /// at each report's arrival (`reports`, in arrival order) and each message's creation.
    pub(super) fn app_window_tick(&mut self, reports: &mut Vec<(u64, Report)>, t0: u64, t1: u64) {
        self.app_window_send(t0);
        let mut reports = reports.drain(..).peekable();
        loop {
            let created = self
                .app
                .as_ref()
                .map(|a| a.source.next_us())
                .filter(|&t| t < t1);
            let report_first = match (reports.peek().map(|r| r.0), created) {
                (None, None) => break,
                (Some(r), c) => c.is_none_or(|c| r <= c),
                (None, Some(_)) => false,
            };
            if report_first {
                if let Some((at_us, report)) = reports.next() {
                    self.on_report(report);
                    self.app_window_send(at_us);
                }
            } else if let Some(c) = created {
                self.app_window_send(c);
            }
        }
        self.hand_over(t1 - 1);
    }

    /// Window mode: sends at `t_us` what the window allows.
    pub(super) fn send_window(&mut self, t_us: u64) {
        let bytes = u64::from(self.cfg.packet_bytes);
        while self.sent_bytes - self.acked_bytes + bytes <= self.window_bytes {
            self.send_packet(t_us);
        }
    }

    /// The sender takes in a report.
    pub(super) fn on_report(&mut self, report: Report) {
        self.acked_bytes = self.acked_bytes.max(report.acked_bytes);
        self.report = Some(report);
    }

    /// Steps 1 and 2 of a tick `[t0, t1]`: the reports reach the sender, and it sends.
    pub(super) fn sender_tick(&mut self, t0: u64, t1: u64) {
        let mut reports = std::mem::take(&mut self.scratch_reports);
        if self.cfg.feedback == FeedbackPath::Reverse {
            self.reverse.advance(Instant::from_micros(t1), &mut |ev| {
                if let LinkEvent::Delivered(d) = ev {
                    reports.push((d.delivered.as_micros(), d.payload));
                }
            });
        }
        if self.app.is_some() {
            match self.cfg.action {
                ActionKind::Window => self.app_window_tick(&mut reports, t0, t1),
                ActionKind::Rate => {
                    for (_, r) in reports.drain(..) {
                        self.on_report(r);
                    }
                    self.app_rate_sends(t1);
                }
            }
            self.scratch_reports = reports;
            return;
        }
        // 1. Reports reach the sender (window mode: it sends at each).
        for (at_us, r) in reports.drain(..) {
            self.on_report(r);
            if self.cfg.action == ActionKind::Window {
                self.send_window(at_us);
            }
        }
        self.scratch_reports = reports;
        // 2. The sender's own sends in the tick.
        match self.cfg.action {
            ActionKind::Window => self.send_window(t0),
            ActionKind::Rate => {
                let end_ns = u128::from(t1) * 1000;
                while let Some(next) = self.next_send_ns {
                    if next >= end_ns {
                        break;
                    }
                    self.send_packet((next / 1000) as u64);
                    self.last_send_ns = Some(next);
                    self.next_send_ns = Some(next + self.interval_ns());
                }
            }
        }
    }
}
