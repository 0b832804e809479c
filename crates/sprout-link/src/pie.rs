//! PIE, "Proportional Integral controller Enhanced" (RFC 8033), the state the link's queue runs.
//!
//! Our own code after the RFC's pseudocode (section 4 and its appendix), with Linux's defaults
//! and Linux's `sch_pie` safeguards for the early drop:
//!
//! - every `tupdate` (15 ms) the drop probability moves by `alpha * (qdelay - target) + beta *
//!   (qdelay - qdelay_old)` (`alpha` 1/8 and `beta` 5/4 per second, scaled down while the
//!   probability is small: by 2048 under 0.000001, 512 under 0.00001, 128 under 0.0001, 32 under
//!   0.001, 8 under 0.01, 2 under 0.1), an increase capped at 0.02 once the probability is 0.1 or
//!   more, decayed by 2% while both the current and the previous delay are under half the
//!   target, and kept within `[0, 1]`; the burst allowance (150 ms) falls by `tupdate`;
//! - the queue delay is the sojourn time of the last packet dequeued (taken for transmission),
//!   0 when that left the queue empty (PIE with timestamps, Linux's default);
//! - at enqueue, no early drop while burst allowance remains, while the current delay is under
//!   half the target and the probability under 0.2, or while fewer than two MTUs (3000 bytes)
//!   are queued (Linux's `pie_drop_early`); otherwise the RFC's derandomized drop: `accu_prob`
//!   adds the probability, no drop under 0.85, a drop at 8.5 or more, else a drop with the
//!   probability; any drop clears `accu_prob`;
//! - the burst allowance is refilled at enqueue when the probability is 0 and both delays are
//!   under half the target (RFC 8033 section 5.1).
//!
//! The periodic update runs lazily: before the queue handles an event at time `t`, every update
//! due at or before `t` (at `k * tupdate` from the link's start) runs, in order. Between events
//! nothing the update reads changes, so this is the timer's result exactly.

use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;
use sprout_core::time::Duration;

/// PIE's defaults, Linux's (`tc qdisc add ... pie`): target 15 ms.
pub const PIE_DEFAULT_TARGET: Duration = Duration::from_millis(15);
/// Linux's `tupdate`: 15 ms.
pub const PIE_DEFAULT_TUPDATE: Duration = Duration::from_millis(15);
/// Linux's `alpha`, in sixteenths: 2 (0.125 per second).
pub const PIE_DEFAULT_ALPHA_16THS: u32 = 2;
/// Linux's `beta`, in sixteenths: 20 (1.25 per second).
pub const PIE_DEFAULT_BETA_16THS: u32 = 20;
/// The burst allowance (RFC 8033 `MAX_BURST`, Linux's): 150 ms.
pub const PIE_DEFAULT_MAX_BURST: Duration = Duration::from_millis(150);
/// The drop probability at and under which PIE with ECN marks an ECN-capable packet instead
/// of dropping it (RFC 8033 section 5.1's `mark_ecnth`): 0.1.
pub const PIE_MARK_ECN_THRESHOLD: f64 = 0.1;
/// The MTU of Linux's "fewer than two MTUs queued" rule (bytes).
pub const PIE_MTU_BYTES: u64 = 1500;

/// One step of RFC 8033's `calculate_drop_prob`: the new drop probability from the current one,
/// the current and previous queue delays and the target (seconds), and `alpha`, `beta` (per
/// second). Pure, for the tests' known answers.
pub fn pie_drop_prob_step(
    prob: f64,
    qdelay_s: f64,
    qdelay_old_s: f64,
    target_s: f64,
    alpha: f64,
    beta: f64,
) -> f64 {
    let mut p = alpha * (qdelay_s - target_s) + beta * (qdelay_s - qdelay_old_s);
    // Auto-tuning: small probabilities move in small steps.
    p /= match prob {
        x if x < 0.000_001 => 2048.0,
        x if x < 0.000_01 => 512.0,
        x if x < 0.000_1 => 128.0,
        x if x < 0.001 => 32.0,
        x if x < 0.01 => 8.0,
        x if x < 0.1 => 2.0,
        _ => 1.0,
    };
    // Cap the adjustment.
    if prob >= 0.1 && p > 0.02 {
        p = 0.02;
    }
    let mut next = prob + p;
    // Exponential decay when congestion goes away.
    if qdelay_s < target_s / 2.0 && qdelay_old_s < target_s / 2.0 {
        next *= 0.98;
    }
    next.clamp(0.0, 1.0)
}

/// PIE's parameters, in the queue's configuration's units.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PieParams {
    pub target_us: u64,
    pub tupdate_us: u64,
    pub alpha_16ths: u32,
    pub beta_16ths: u32,
    pub max_burst_us: u64,
}

/// PIE's state variables.
#[derive(Debug, Clone)]
pub(crate) struct Pie {
    params: PieParams,
    /// Drop probability, 0..1.
    drop_prob: f64,
    /// The current queue delay (µs): the last dequeued packet's sojourn time.
    qdelay_us: u64,
    /// The queue delay at the last update (µs).
    qdelay_old_us: u64,
    /// Burst allowance left (µs).
    burst_allowance_us: u64,
    /// Derandomization's accumulated probability.
    accu_prob: f64,
    /// When the next periodic update is due (µs on the link's clock).
    next_update_us: u64,
    rng: ChaCha8Rng,
}

impl Pie {
    /// PIE at the link's start; its drops draw from `seed` (a stream of its own).
    pub(crate) fn new(params: PieParams, seed: u64) -> Self {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        rng.set_stream(3);
        Pie {
            params,
            drop_prob: 0.0,
            qdelay_us: 0,
            qdelay_old_us: 0,
            burst_allowance_us: params.max_burst_us,
            accu_prob: 0.0,
            next_update_us: params.tupdate_us.max(1),
            rng,
        }
    }

    /// The drop probability (0..1).
    #[cfg(test)]
    pub(crate) fn drop_prob(&self) -> f64 {
        self.drop_prob
    }

    /// Runs every periodic update due at or before `now_us`.
    pub(crate) fn catch_up(&mut self, now_us: u64) {
        let step = self.params.tupdate_us.max(1);
        while self.next_update_us <= now_us {
            let before = (self.drop_prob, self.qdelay_old_us, self.burst_allowance_us);
            self.update();
            self.next_update_us = self.next_update_us.saturating_add(step);
            if before == (self.drop_prob, self.qdelay_old_us, self.burst_allowance_us)
                && self.next_update_us <= now_us
            {
                // A fixed point: the updates left before `now_us` change nothing.
                let left = (now_us - self.next_update_us) / step;
                self.next_update_us = self.next_update_us.saturating_add(left * step);
            }
        }
    }

    /// One periodic update (RFC 8033 `calculate_drop_prob`).
    fn update(&mut self) {
        let s = |us: u64| us as f64 / 1e6;
        self.drop_prob = pie_drop_prob_step(
            self.drop_prob,
            s(self.qdelay_us),
            s(self.qdelay_old_us),
            s(self.params.target_us),
            f64::from(self.params.alpha_16ths) / 16.0,
            f64::from(self.params.beta_16ths) / 16.0,
        );
        self.qdelay_old_us = self.qdelay_us;
        self.burst_allowance_us = self
            .burst_allowance_us
            .saturating_sub(self.params.tupdate_us);
    }

    /// A packet was dequeued after `sojourn_us` in the queue, leaving it empty or not.
    pub(crate) fn on_dequeue(&mut self, sojourn_us: u64, queue_empty: bool) {
        self.qdelay_us = if queue_empty { 0 } else { sojourn_us };
    }

    /// Whether to drop the packet arriving now with `backlog_bytes` already queued; clears
    /// `accu_prob` when it drops.
    pub(crate) fn drop_early(&mut self, backlog_bytes: u64) -> bool {
        let half = self.params.target_us / 2;
        if self.drop_prob == 0.0 && self.qdelay_us < half && self.qdelay_old_us < half {
            self.burst_allowance_us = self.params.max_burst_us;
        }
        if self.burst_allowance_us > 0
            || (self.qdelay_us < half && self.drop_prob < 0.2)
            || backlog_bytes < 2 * PIE_MTU_BYTES
        {
            return false;
        }
        if self.drop_prob == 0.0 {
            self.accu_prob = 0.0;
        }
        self.accu_prob += self.drop_prob;
        if self.accu_prob < 0.85 {
            return false;
        }
        let drop = self.accu_prob >= 8.5 || {
            let u = (self.rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64);
            u < self.drop_prob
        };
        if drop {
            self.accu_prob = 0.0;
        }
        drop
    }

    /// Whether an early drop may be an ECN mark instead: the drop probability is at most 10%
    /// (RFC 8033 section 5.1's `mark_ecnth`, Linux's `MAX_PROB / 10`).
    pub(crate) fn may_mark(&self) -> bool {
        self.drop_prob <= PIE_MARK_ECN_THRESHOLD
    }

    /// Puts PIE in a congested state, for tests: drop probability `p`, both queue delays
    /// `qdelay_us`, no burst allowance left.
    #[cfg(test)]
    pub(crate) fn force(&mut self, p: f64, qdelay_us: u64) {
        self.drop_prob = p;
        self.qdelay_us = qdelay_us;
        self.qdelay_old_us = qdelay_us;
        self.burst_allowance_us = 0;
    }

    /// A packet was dropped for another reason (the buffer was full): clears `accu_prob`, as
    /// Linux does.
    pub(crate) fn on_overflow(&mut self) {
        self.accu_prob = 0.0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params() -> PieParams {
        PieParams {
            target_us: PIE_DEFAULT_TARGET.as_micros(),
            tupdate_us: PIE_DEFAULT_TUPDATE.as_micros(),
            alpha_16ths: PIE_DEFAULT_ALPHA_16THS,
            beta_16ths: PIE_DEFAULT_BETA_16THS,
            max_burst_us: PIE_DEFAULT_MAX_BURST.as_micros(),
        }
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-12 * b.abs().max(1e-300)
    }

    /// Known answers worked by hand from RFC 8033's pseudocode, alpha 0.125, beta 1.25, target
    /// 15 ms.
    #[test]
    fn drop_probability_steps_follow_the_rfc() {
        let step = |prob, q, q_old| pie_drop_prob_step(prob, q, q_old, 0.015, 0.125, 1.25);
        // From 0, delay 35 ms (was 15 ms): p = 0.125 * 0.020 + 1.25 * 0.020 = 0.0275, scaled by
        // 1/2048 (prob < 1e-6).
        assert!(close(step(0.0, 0.035, 0.015), 0.0275 / 2048.0));
        // prob 0.05 (< 0.1: p / 2), delay 25 ms steady: p = 0.125 * 0.010 = 0.00125 -> 0.000625.
        assert!(close(step(0.05, 0.025, 0.025), 0.050625));
        // prob 0.005 (< 0.01: p / 8), delay 55 ms from 15 ms: p = 0.005 + 0.05 = 0.055 -> /8.
        assert!(close(step(0.005, 0.055, 0.015), 0.005 + 0.055 / 8.0));
        // prob 0.0005 (< 0.001: /32); 0.00005 (< 0.0001: /128); 0.000005 (< 0.00001: /512).
        assert!(close(step(0.0005, 0.025, 0.025), 0.0005 + 0.00125 / 32.0));
        assert!(close(
            step(0.00005, 0.025, 0.025),
            0.00005 + 0.00125 / 128.0
        ));
        assert!(close(
            step(0.000005, 0.025, 0.025),
            0.000005 + 0.00125 / 512.0
        ));
        // prob 0.3 (>= 0.1: no scaling, increase capped at 0.02): p = 0.125*0.085 + 1.25*0.085
        // = 0.116875 -> 0.02.
        assert!(close(step(0.3, 0.1, 0.015), 0.32));
        // prob 0.3, a decrease is not capped: delay 5 ms from 25 ms: p = 0.125 * -0.010 + 1.25 *
        // -0.020 = -0.02625.
        assert!(close(step(0.3, 0.005, 0.025), 0.27375));
        // Both delays under half the target: p = 0.125 * -0.012 + 1.25 * 0.001 = -0.00025,
        // then decay by 2%: (0.2 - 0.00025) * 0.98.
        assert!(close(step(0.2, 0.003, 0.002), (0.2 - 0.00025) * 0.98));
        // Bounded to [0, 1].
        assert_eq!(step(0.0, 0.0, 0.0), 0.0);
        assert_eq!(step(0.995, 1.0, 0.0), 1.0);
    }

    #[test]
    fn updates_run_every_tupdate_and_burn_the_burst_allowance() {
        let mut pie = Pie::new(params(), 0);
        pie.on_dequeue(35_000, false);
        pie.catch_up(14_999);
        assert_eq!(pie.drop_prob(), 0.0, "no update before 15 ms");
        pie.catch_up(15_000);
        // qdelay 35 ms, qdelay_old 0: p = 0.125 * 0.020 + 1.25 * 0.035 = 0.046250, / 2048.
        assert!(close(pie.drop_prob(), 0.04625 / 2048.0));
        assert_eq!(pie.burst_allowance_us, 135_000);
        // Nine more updates (to 150 ms) use up the allowance.
        pie.catch_up(150_000);
        assert_eq!(pie.burst_allowance_us, 0);
        assert_eq!(pie.next_update_us, 165_000);
    }

    #[test]
    fn early_drop_safeguards() {
        let mut pie = Pie::new(params(), 7);
        // Probability 0.5 but burst allowance left: no drop.
        pie.drop_prob = 0.5;
        pie.qdelay_us = 40_000;
        pie.qdelay_old_us = 40_000;
        assert!(!pie.drop_early(100_000));
        pie.burst_allowance_us = 0;
        // Fewer than two MTUs queued: no drop.
        assert!(!pie.drop_early(2999));
        // Delay under half the target with probability under 0.2: no drop.
        pie.drop_prob = 0.19;
        pie.qdelay_us = 7_000;
        assert!(!pie.drop_early(100_000));
        // Derandomization: with probability 0.5, the first arrival only accumulates (0.5 <
        // 0.85), and 17 accumulated arrivals (8.5) always drop.
        pie.drop_prob = 0.5;
        pie.qdelay_us = 40_000;
        pie.accu_prob = 0.0;
        assert!(!pie.drop_early(100_000));
        pie.accu_prob = 8.0;
        assert!(pie.drop_early(100_000));
        assert_eq!(pie.accu_prob, 0.0);
    }

    #[test]
    fn idle_catch_up_reaches_a_fixed_point_quickly() {
        let mut pie = Pie::new(params(), 0);
        pie.catch_up(3_600_000_000);
        assert_eq!(pie.drop_prob(), 0.0);
        assert!(pie.next_update_us > 3_600_000_000);
        assert!(pie.next_update_us <= 3_600_000_000 + 15_000);
    }
}
