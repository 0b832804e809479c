//! The environment as the simulation loop's endpoints: the links' events, the receiver's
//! ticks, and the observation.

use sprout_core::time::Duration;
use sprout_core::wire::MAX_FORECAST_TICKS;
use sprout_core::Instant;
use sprout_link::LinkEvent;

use super::*;
use crate::error::SimError;
use crate::metrics::Arrival;
use crate::sim_loop::Endpoints;

impl Endpoints for RlEnv {
    /// Steps 1-2: the reports that reach the sender by `now`, and the data link's events.
    fn deliver(&mut self, now: Instant) -> Result<(), SimError> {
        if self.cfg.feedback == FeedbackPath::Reverse {
            let mut reports = std::mem::take(&mut self.scratch_reports);
            self.reverse.advance(now, &mut |ev| {
                if let LinkEvent::Delivered(d) = ev {
                    reports.push(d.payload);
                }
            });
            for r in reports.drain(..) {
                self.on_report(r);
            }
            self.scratch_reports = reports;
        }
        self.deliver_data(now);
        Ok(())
    }

    /// Step 3: the receiver's tick ends (it reports), then the sender sends.
    fn act(&mut self, now: Instant) -> Result<(), SimError> {
        if now == self.tick_end {
            self.close_tick();
        }
        self.sender_act(now);
        Ok(())
    }

    fn next_event(&self) -> Instant {
        let own = self.tick_end.min(self.sender_next());
        let links = [self.data.next_event(), self.reverse.next_event()];
        links.into_iter().flatten().fold(own, Instant::min)
    }
}

impl RlEnv {
    /// The data link's events up to `now`: the receiver records deliveries and losses.
    fn deliver_data(&mut self, now: Instant) {
        let mut delivered = std::mem::take(&mut self.scratch_delivered);
        let opportunities = &mut self.tick_opportunities;
        let entered = &mut self.entered;
        let lost = &mut self.acc.lost_bytes;
        self.data.advance(now, &mut |ev| match ev {
            LinkEvent::Opportunity { at, .. } => opportunities.push(at.as_micros()),
            LinkEvent::Enqueued { .. } => *entered = true,
            LinkEvent::Dropped { bytes, .. } | LinkEvent::HeadDropped { bytes, .. } => {
                *lost += u64::from(bytes)
            }
            LinkEvent::Delivered(d) => delivered.push((d.payload, d.sent, d.delivered, d.bytes)),
        });
        let start = self.start;
        for (packet, sent, arrived, bytes) in delivered.drain(..) {
            let seq = packet.seq;
            if packet.message != NO_MESSAGE {
                if let Some(app) = self.app.as_mut() {
                    app.arrived(packet.message, arrived);
                }
            }
            if seq > self.rx_expected {
                self.tick_rec.lost +=
                    (seq - self.rx_expected).div_ceil(u64::from(self.cfg.packet_bytes));
            }
            self.rx_expected = self.rx_expected.max(seq + u64::from(bytes));
            self.tick_rec.bytes += u64::from(bytes);
            self.tick_rec.delivered += 1;
            let owd = arrived - sent;
            self.rx_min_delay = Some(self.rx_min_delay.map_or(owd, |m| m.min(owd)));
            self.tick_arrivals
                .push((arrived.as_micros(), sent.as_micros()));
            // The episode's records are relative to its start.
            self.arrivals.push(Arrival {
                sent: Instant::ZERO + (sent - start),
                arrived: Instant::ZERO + (arrived - start),
                bytes,
                app_bytes: bytes,
                is_data: true,
            });
        }
        self.scratch_delivered = delivered;
    }

    /// The end of a tick: the delay samples of the tick, then the receiver's model ticks and
    /// reports (on the reverse link, or straight to the sender).
    fn close_tick(&mut self) {
        let tick_us = self.cfg.protocol.model.tick_us.as_micros();
        let t1 = self.tick_end.as_micros();
        let t0 = t1 - tick_us;
        let rec = std::mem::take(&mut self.tick_rec);
        let prop = self.cfg.link.propagation_delay_us.as_micros();
        let start = self.start.as_micros();
        self.opportunities
            .extend(self.tick_opportunities.iter().map(|&t| t - start));
        self.acc.offered_bytes +=
            self.tick_opportunities.len() as u64 * u64::from(self.cfg.link.opportunity_bytes);
        self.acc.delivered_bytes += rec.bytes;
        // The delay function and the omniscient's at t0 + 1 ms, ..., t1.
        let (mut ia, mut io) = (0, 0);
        let mut rx_max_sent_us = self.rx_max_sent.as_micros();
        let mut omni_max_sent_us = self.omni_max_sent.as_micros();
        let mut t = t0 + DELAY_SAMPLE_US;
        while t <= t1 {
            while ia < self.tick_arrivals.len() && self.tick_arrivals[ia].0 <= t {
                rx_max_sent_us = rx_max_sent_us.max(self.tick_arrivals[ia].1);
                ia += 1;
            }
            while io < self.tick_opportunities.len() && self.tick_opportunities[io] <= t {
                let sent = self.tick_opportunities[io].saturating_sub(prop);
                omni_max_sent_us = omni_max_sent_us.max(sent);
                io += 1;
            }
            let delay = t - rx_max_sent_us.min(t);
            let omni = t - omni_max_sent_us.min(t);
            self.acc.delay_sum += Duration::from_micros(delay);
            self.acc.self_inflicted_sum += Duration::from_micros(delay.saturating_sub(omni));
            self.acc.samples += 1;
            t += DELAY_SAMPLE_US;
        }
        self.rx_max_sent = Instant::from_micros(rx_max_sent_us);
        self.omni_max_sent = Instant::from_micros(omni_max_sent_us);
        // 4. The receiver's model ticks and reports.
        self.estimator.evolve();
        if rec.bytes > 0 {
            let mtu = f64::from(self.cfg.protocol.model.mtu_bytes);
            self.estimator.observe((rec.bytes as f64 / mtu).max(1.0));
        } else if self.busy_at_start || self.entered {
            self.estimator.observe(0.0);
        }
        let slot = (self.rx_tick_count % AVERAGE_TICKS as u64) as usize;
        self.rx_ticks[slot] = rec;
        self.rx_tick_count += 1;
        let mut forecast = [0u32; MAX_FORECAST_TICKS];
        self.estimator
            .forecast(&mut forecast[..self.forecast_ticks]);
        let avg_ticks = self.rx_tick_count.min(AVERAGE_TICKS as u64) as u32;
        let (mut avg_bytes, mut avg_delivered, mut avg_lost) = (0, 0, 0);
        for r in &self.rx_ticks {
            avg_bytes += r.bytes;
            avg_delivered += r.delivered;
            avg_lost += r.lost;
        }
        let report = Report {
            tick_end: self.tick_end,
            acked_bytes: self.rx_expected,
            tick_bytes: rec.bytes,
            avg_bytes,
            avg_delivered,
            avg_lost,
            avg_ticks,
            delay: Duration::from_micros(t1 - rx_max_sent_us.min(t1)),
            min_delay: self.rx_min_delay.unwrap_or(Duration::ZERO),
            forecast,
        };
        self.now = self.tick_end;
        match self.cfg.feedback {
            FeedbackPath::Reverse => {
                self.reverse
                    .send(Instant::from_micros(t1), self.cfg.feedback_bytes, report)
            }
            FeedbackPath::Instant => self.on_report(report),
        }
        self.tick_arrivals.clear();
        self.tick_opportunities.clear();
        self.entered = false;
        self.busy_at_start = self.data.queue_packets() > 0;
        self.tick_end += self.cfg.protocol.model.tick_us;
    }
}

impl RlEnv {
    /// Builds the observation from the latest report and the sender's own state.
    pub(super) fn fill_observation(&mut self) {
        let tick_s = self.cfg.protocol.model.tick_us.as_secs_f64();
        let step_s = self.cfg.step().as_secs_f64();
        let o = &mut self.observation;
        o.iter_mut().for_each(|x| *x = 0.0);
        if let Some(r) = &self.report {
            o[0] = (r.tick_bytes as f64 * 8.0 / tick_s / 1e6) as f32;
            o[1] =
                (r.avg_bytes as f64 * 8.0 / (tick_s * f64::from(r.avg_ticks.max(1))) / 1e6) as f32;
            o[2] = (r.delay.as_micros() as f64 / 1e3) as f32;
            o[3] = (r.min_delay.as_micros() as f64 / 1e3) as f32;
            let seen = r.avg_delivered + r.avg_lost;
            o[4] = if seen == 0 {
                0.0
            } else {
                (r.avg_lost as f64 / seen as f64) as f32
            };
            for (slot, &f) in o[OBSERVATION_FEATURES.len()..]
                .iter_mut()
                .zip(&r.forecast[..self.forecast_ticks])
            {
                *slot = f as f32;
            }
        }
        o[5] = ((self.sent_bytes - self.acked_bytes) as f64 / 1e3) as f32;
        o[6] = if self.steps == 0 {
            0.0
        } else {
            (self.step_sent as f64 * 8.0 / step_s / 1e6) as f32
        };
        let since = self.report.as_ref().map_or(self.start, |r| r.tick_end);
        o[7] = ((self.now - since).as_micros() as f64 / 1e3) as f32;
    }
}

/// Sums over the ticks of a step.
#[derive(Clone, Debug, Default)]
pub(super) struct StepAccumulator {
    pub(super) delivered_bytes: u64,
    pub(super) offered_bytes: u64,
    pub(super) lost_bytes: u64,
    /// Sums of the delay function's and of the self-inflicted delay's samples.
    pub(super) delay_sum: Duration,
    pub(super) self_inflicted_sum: Duration,
    pub(super) samples: u64,
}
