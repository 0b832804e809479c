//! CoDel, "Controlled Delay" (RFC 8289), as a state machine over any queue that can show its
//! head and drop it: the link's FIFO runs one instance ([`QueueConfig::CoDel`]), FQ-CoDel one
//! per flow ([`QueueConfig::FqCodel`]). With ECN ([`crate::ecn`]) a drop of an ECN-capable
//! head is a CE mark instead, the head then sent, as in Linux's `codel_dequeue`.
//!
//! [`QueueConfig::CoDel`]: crate::QueueConfig::CoDel
//! [`QueueConfig::FqCodel`]: crate::QueueConfig::FqCodel

/// CoDel's `MAXPACKET` (bytes): while at most this many bytes remain in the queue after a packet
/// is taken from it, CoDel never drops (RFC 8289 section 5, "queue below one MTU"). One MTU,
/// the size of a trace opportunity.
pub const CODEL_MAXPACKET_BYTES: u64 = 1500;

/// What CoDel needs of the queue it controls.
pub(crate) trait CoDelQueue {
    /// The head packet (not yet started): when it joined the queue (µs on the link's clock),
    /// and the bytes the queue CoDel judges would still hold once it is taken (for RFC 8289's
    /// "queue below one MTU" rule); `None` if there is no head.
    fn head(&self) -> Option<(u64, u64)>;
    /// Drops the head packet (CoDel's drop).
    fn drop_head(&mut self);
    /// Marks the head packet CE instead of dropping it, if ECN marking is on and the packet
    /// is ECN-capable; whether it did (then the packet is sent).
    fn mark_head(&mut self) -> bool;
}

/// CoDel's state variables (RFC 8289 section 5), times in µs.
#[derive(Debug, Clone, Default)]
pub(crate) struct CoDelState {
    /// When the sojourn time will have been above target for a whole interval; `None` stands
    /// for the RFC's 0 ("below target").
    first_above_time: Option<u64>,
    /// When the next drop is due while dropping.
    drop_next: u64,
    /// Drops since entering the dropping state (plus the carried-over count).
    pub(crate) count: u64,
    /// `count` when the dropping state was last entered.
    lastcount: u64,
    /// Whether in the dropping state.
    dropping: bool,
}

impl CoDelState {
    /// RFC 8289 `dodequeue`, looking at the head packet instead of removing it: `None` if the
    /// queue is empty, else whether it is ok to drop the head.
    fn dodequeue(
        &mut self,
        q: &impl CoDelQueue,
        now: u64,
        target: u64,
        interval: u64,
    ) -> Option<bool> {
        let Some((enqueued, bytes_after)) = q.head() else {
            // Queue empty: reset first_above_time.
            self.first_above_time = None;
            return None;
        };
        let sojourn_time = now.saturating_sub(enqueued);
        let mut ok_to_drop = false;
        if sojourn_time < target || bytes_after <= CODEL_MAXPACKET_BYTES {
            // Went below: stay below for at least an interval.
            self.first_above_time = None;
        } else {
            match self.first_above_time {
                // Just went above from below; if still above at first_above_time, ok to drop.
                None => self.first_above_time = Some(now.saturating_add(interval)),
                Some(t) if now >= t => ok_to_drop = true,
                Some(_) => {}
            }
        }
        Some(ok_to_drop)
    }

    /// RFC 8289 `control_law`: `t + interval / sqrt(count)`, truncated to whole µs.
    fn control_law(t: u64, count: u64, interval: u64) -> u64 {
        let step = interval as f64 / (count as f64).sqrt();
        t.saturating_add(step as u64)
    }

    /// RFC 8289 `dequeue` at `now` (µs) with `target` and `interval` (µs): afterwards the head
    /// of `q` (if any) is the packet to transmit.
    pub(crate) fn dequeue(
        &mut self,
        q: &mut impl CoDelQueue,
        now: u64,
        target: u64,
        interval: u64,
    ) {
        let Some(mut ok_to_drop) = self.dodequeue(&*q, now, target, interval) else {
            // An empty queue takes us out of the dropping state.
            self.dropping = false;
            return;
        };
        if self.dropping {
            if !ok_to_drop {
                // Sojourn time below target: leave the dropping state.
                self.dropping = false;
            }
            // Time for the next drop: drop the head and look at the next. A large backlog may
            // make the next drop due now too, hence the loop.
            while now >= self.drop_next && self.dropping {
                self.count += 1;
                if q.mark_head() {
                    // Marked instead (Linux's `codel_dequeue` with `ecn`): the next mark or
                    // drop is scheduled as after a drop, and the head is sent.
                    self.drop_next = Self::control_law(self.drop_next, self.count, interval);
                    break;
                }
                q.drop_head();
                ok_to_drop = self.dodequeue(&*q, now, target, interval) == Some(true);
                if !ok_to_drop {
                    self.dropping = false;
                } else {
                    self.drop_next = Self::control_law(self.drop_next, self.count, interval);
                }
            }
        } else if ok_to_drop {
            // The sojourn time has been above target for an interval: enter the dropping state,
            // dropping the head or, with ECN, marking it (and sending it).
            if !q.mark_head() {
                q.drop_head();
                // The next head is sent whatever this says (as in the RFC), but the call still
                // updates first_above_time.
                let _ = self.dodequeue(&*q, now, target, interval);
            }
            self.dropping = true;
            // Went above target soon after last going below: resume with the drop rate that
            // controlled the queue last time.
            let delta = self.count.saturating_sub(self.lastcount);
            self.count = 1;
            if delta > 1 && now.saturating_sub(self.drop_next) < interval.saturating_mul(16) {
                self.count = delta;
            }
            self.drop_next = Self::control_law(now, self.count, interval);
            self.lastcount = self.count;
        }
    }
}
