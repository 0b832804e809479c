//! One generation of a session's transport keys: the Noise transport state, the key epoch,
//! the counter of datagrams sealed, and the replay window of datagrams opened.

use snow::StatelessTransportState;
use sprout_core::time::Instant;

use crate::replay::{ReplayError, ReplayWindow};
use crate::stats::DropReason;
use crate::wire::{DataHeader, DATA_HEADER_BYTES, MAX_PLAINTEXT_BYTES, OVERHEAD_BYTES, TAG_BYTES};
use crate::{Limits, SealError};

/// Transport keys of one handshake, in one direction each.
pub(crate) struct KeySet {
    /// The epoch data messages under these keys carry.
    pub epoch: u8,
    /// The two ChaCha20-Poly1305 keys (snow's stateless transport: the nonce is explicit).
    pub transport: StatelessTransportState,
    /// When the keys were made.
    pub created: Instant,
    /// The counter of the next datagram sealed.
    pub send_counter: u64,
    /// Counters opened.
    pub replay: ReplayWindow,
    /// The receiver index to write in datagrams sealed with these keys (the peer's).
    pub peer_index: u32,
}

impl KeySet {
    /// New keys made at `now`.
    pub(crate) fn new(
        epoch: u8,
        transport: StatelessTransportState,
        now: Instant,
        peer_index: u32,
    ) -> KeySet {
        KeySet {
            epoch,
            transport,
            created: now,
            send_counter: 0,
            replay: ReplayWindow::new(),
            peer_index,
        }
    }

    /// Whether the keys are past their time limit at `now`.
    pub(crate) fn expired(&self, now: Instant, limits: &Limits) -> bool {
        now - self.created >= limits.reject_after
    }

    /// Seals `plaintext` into `out` (cleared first) under the next counter.
    pub(crate) fn seal(
        &mut self,
        now: Instant,
        limits: &Limits,
        plaintext: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<(), SealError> {
        out.clear();
        if plaintext.len() > MAX_PLAINTEXT_BYTES {
            return Err(SealError::TooLong(plaintext.len()));
        }
        if self.expired(now, limits) || self.send_counter >= limits.reject_after_messages {
            return Err(SealError::KeysExpired);
        }
        out.resize(plaintext.len() + OVERHEAD_BYTES, 0);
        DataHeader {
            epoch: self.epoch,
            receiver: self.peer_index,
            counter: self.send_counter,
        }
        .write(&mut out[..DATA_HEADER_BYTES]);
        match self.transport.write_message(
            self.send_counter,
            plaintext,
            &mut out[DATA_HEADER_BYTES..],
        ) {
            Ok(n) if n == plaintext.len() + TAG_BYTES => {
                self.send_counter += 1;
                Ok(())
            }
            _ => {
                out.clear();
                Err(SealError::KeysExpired)
            }
        }
    }

    /// Opens the data message `datagram` (header `h`, already parsed) into `plaintext`; on
    /// success marks its counter seen and returns whether it is the highest yet. On failure
    /// nothing changes (`plaintext` is left empty).
    pub(crate) fn open(
        &mut self,
        now: Instant,
        limits: &Limits,
        h: &DataHeader,
        datagram: &[u8],
        plaintext: &mut Vec<u8>,
    ) -> Result<bool, DropReason> {
        plaintext.clear();
        if self.expired(now, limits) {
            return Err(DropReason::KeysExpired);
        }
        if h.counter >= limits.reject_after_messages {
            // No genuine peer seals beyond the limit: this one was made up.
            return Err(DropReason::Forged);
        }
        self.replay.check(h.counter).map_err(|e| match e {
            ReplayError::Replayed => DropReason::Replayed,
            ReplayError::TooOld => DropReason::TooOld,
        })?;
        let sealed = &datagram[DATA_HEADER_BYTES..];
        plaintext.resize(sealed.len() - TAG_BYTES, 0);
        match self.transport.read_message(h.counter, sealed, plaintext) {
            Ok(n) if n == plaintext.len() => Ok(self.replay.mark(h.counter)),
            _ => {
                plaintext.clear();
                Err(DropReason::Forged)
            }
        }
    }
}
