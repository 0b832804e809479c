//! One tick of the links and the receiver's model, and the observation.

use sprout_core::wire::MAX_FORECAST_TICKS;
use sprout_core::Instant;
use sprout_link::LinkEvent;

use super::*;
use crate::metrics::Arrival;

impl RlEnv {
    pub(super) fn run_tick(&mut self, acc: &mut StepAccumulator) {
        let tick_us = self.cfg.protocol.model.tick_us.as_micros();
        let t0 = self.now_us;
        let t1 = t0 + tick_us;
        // 1-2. Reports reach the sender; it sends.
        self.sender_tick(t0, t1);
        // 3. The data link runs to the tick's end.
        let busy_at_start = self.data.queue_packets() > 0;
        let mut entered = false;
        let mut delivered = std::mem::take(&mut self.scratch_delivered);
        let (arrivals, opportunities) = (&mut self.tick_arrivals, &mut self.tick_opportunities);
        arrivals.clear();
        opportunities.clear();
        let mut lost = 0u64;
        let until = Instant::from_micros(t1);
        self.data.advance(until, &mut |ev| match ev {
            LinkEvent::Opportunity { at, .. } => opportunities.push(at.as_micros()),
            LinkEvent::Enqueued { .. } => entered = true,
            LinkEvent::Dropped { bytes, .. } | LinkEvent::HeadDropped { bytes, .. } => {
                lost += u64::from(bytes)
            }
            LinkEvent::Delivered(d) => {
                let (sent, arrived) = (d.sent.as_micros(), d.delivered.as_micros());
                delivered.push((d.payload, sent, arrived, d.bytes));
            }
        });
        let mut rec = TickRecord::default();
        for (packet, sent_us, arrived_us, bytes) in delivered.drain(..) {
            let seq = packet.seq;
            if packet.message != NO_MESSAGE {
                if let Some(app) = self.app.as_mut() {
                    app.arrived(packet.message, arrived_us);
                }
            }
            if seq > self.rx_expected {
                rec.lost += (seq - self.rx_expected).div_ceil(u64::from(self.cfg.packet_bytes));
            }
            self.rx_expected = self.rx_expected.max(seq + u64::from(bytes));
            rec.bytes += u64::from(bytes);
            rec.delivered += 1;
            let owd = arrived_us - sent_us;
            self.rx_min_delay_us = Some(self.rx_min_delay_us.map_or(owd, |m| m.min(owd)));
            self.tick_arrivals.push((arrived_us, sent_us));
            self.arrivals.push(Arrival {
                sent_us: sent_us - self.start_us,
                arrived_us: arrived_us - self.start_us,
                bytes,
                app_bytes: bytes,
                is_data: true,
            });
        }
        self.scratch_delivered = delivered;
        let prop = self.cfg.link.propagation_delay_us.as_micros();
        let start = self.start_us;
        self.opportunities
            .extend(self.tick_opportunities.iter().map(|&t| t - start));
        acc.offered_bytes +=
            self.tick_opportunities.len() as u64 * u64::from(self.cfg.link.opportunity_bytes);
        acc.delivered_bytes += rec.bytes;
        acc.lost_bytes += lost;
        // The delay function and the omniscient's at t0 + 1 ms, ..., t1.
        let (mut ia, mut io) = (0, 0);
        let mut t = t0 + DELAY_SAMPLE_US;
        while t <= t1 {
            while ia < self.tick_arrivals.len() && self.tick_arrivals[ia].0 <= t {
                self.rx_max_sent_us = self.rx_max_sent_us.max(self.tick_arrivals[ia].1);
                ia += 1;
            }
            while io < self.tick_opportunities.len() && self.tick_opportunities[io] <= t {
                let sent = self.tick_opportunities[io].saturating_sub(prop);
                self.omni_max_sent_us = self.omni_max_sent_us.max(sent);
                io += 1;
            }
            let delay = t - self.rx_max_sent_us.min(t);
            let omni = t - self.omni_max_sent_us.min(t);
            acc.delay_sum_us += delay;
            acc.self_inflicted_sum_us += delay.saturating_sub(omni);
            acc.samples += 1;
            t += DELAY_SAMPLE_US;
        }
        // 4. The receiver's model ticks and reports.
        self.estimator.evolve();
        if rec.bytes > 0 {
            let mtu = f64::from(self.cfg.protocol.model.mtu_bytes);
            self.estimator.observe((rec.bytes as f64 / mtu).max(1.0));
        } else if busy_at_start || entered {
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
            tick_end_us: t1,
            acked_bytes: self.rx_expected,
            tick_bytes: rec.bytes,
            avg_bytes,
            avg_delivered,
            avg_lost,
            avg_ticks,
            delay_us: t1 - self.rx_max_sent_us.min(t1),
            min_delay_us: self.rx_min_delay_us.unwrap_or(0),
            forecast,
        };
        self.now_us = t1;
        match self.cfg.feedback {
            FeedbackPath::Reverse => {
                self.reverse
                    .send(Instant::from_micros(t1), self.cfg.feedback_bytes, report)
            }
            FeedbackPath::Instant => self.on_report(report),
        }
    }

    /// Builds the observation from the latest report and the sender's own state.
    pub(super) fn fill_observation(&mut self) {
        let tick_s = self.cfg.protocol.model.tick_us.as_secs_f64();
        let step_s = self.cfg.step_us() as f64 / 1e6;
        let o = &mut self.observation;
        o.iter_mut().for_each(|x| *x = 0.0);
        if let Some(r) = &self.report {
            o[0] = (r.tick_bytes as f64 * 8.0 / tick_s / 1e6) as f32;
            o[1] =
                (r.avg_bytes as f64 * 8.0 / (tick_s * f64::from(r.avg_ticks.max(1))) / 1e6) as f32;
            o[2] = (r.delay_us as f64 / 1e3) as f32;
            o[3] = (r.min_delay_us as f64 / 1e3) as f32;
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
        let since = self
            .report
            .as_ref()
            .map_or(self.start_us, |r| r.tick_end_us);
        o[7] = ((self.now_us - since) as f64 / 1e3) as f32;
    }
}

/// Sums over the ticks of a step.
#[derive(Default)]
pub(super) struct StepAccumulator {
    pub(super) delivered_bytes: u64,
    pub(super) offered_bytes: u64,
    pub(super) lost_bytes: u64,
    pub(super) delay_sum_us: u64,
    pub(super) self_inflicted_sum_us: u64,
    pub(super) samples: u64,
}
