//! Once-per-RTT bookkeeping shared by Vegas and Compound.

use sprout_core::time::Duration;

use super::AckEvent;

/// Once-per-RTT bookkeeping shared by Vegas and Compound (Linux's `beg_snd_nxt`): a round ends
/// when an ACK covers the sequence number that was next to send when the round began; RTT
/// samples are reduced to their minimum over the round.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RttRound {
    /// Round ends when snd_una passes this (bytes); None = start a round at the next ACK.
    end_seq: Option<u64>,
    /// Smallest RTT sample in the round.
    pub min_rtt: Duration,
    /// Samples in the round.
    pub samples: u32,
    /// Smallest RTT ever: the propagation-delay estimate (`baseRTT`).
    pub base_rtt: Duration,
}

impl RttRound {
    pub(crate) fn new() -> Self {
        RttRound {
            end_seq: None,
            min_rtt: Duration::MAX,
            samples: 0,
            base_rtt: Duration::MAX,
        }
    }

    /// Records the ACK's RTT sample; returns true if this ACK ends a round (then the caller
    /// reads `min_rtt`/`samples` and calls [`reset`](Self::reset)).
    pub(crate) fn on_ack(&mut self, ack: &AckEvent) -> bool {
        if let Some(r) = ack.rtt {
            let r = r.max(Duration::from_micros(1));
            self.base_rtt = self.base_rtt.min(r);
            self.min_rtt = self.min_rtt.min(r);
            self.samples += 1;
        }
        match self.end_seq {
            None => {
                self.end_seq = Some(ack.snd_max);
                false
            }
            Some(end) => ack.snd_una > end,
        }
    }

    /// Whether no round is in progress (the next ACK starts one).
    pub(crate) fn idle(&self) -> bool {
        self.end_seq.is_none()
    }

    /// Starts a new round ending at `snd_max`.
    pub(crate) fn reset(&mut self, snd_max: u64) {
        self.end_seq = Some(snd_max);
        self.min_rtt = Duration::MAX;
        self.samples = 0;
    }

    /// Forgets the round in progress (after loss recovery); the next ACK starts a new one.
    pub(crate) fn restart(&mut self) {
        self.end_seq = None;
        self.min_rtt = Duration::MAX;
        self.samples = 0;
    }
}
