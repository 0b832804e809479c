//! One generation of a session's transport keys: the Noise transport state, the key epoch,
//! the counter of datagrams sealed, and the replay window of datagrams opened.

use snow::StatelessTransportState;
use sprout_core::time::Instant;

use crate::replay::{ReplayError, ReplayWindow};
use crate::stats::DropReason;
use crate::wire::{
    DataHeader, CLOSE_BYTES, CLOSE_NONCE, DATA_HEADER_BYTES, MAGIC, MAX_PLAINTEXT_BYTES,
    OVERHEAD_BYTES, PREFIX_BYTES, TAG_BYTES, TYPE_CLOSE, VERSION,
};
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
        let last = limits.reject_after_messages.min(CLOSE_NONCE);
        if self.expired(now, limits) || self.send_counter >= last {
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

    /// Writes into `out` (cleared first) the close of these keys (see [`crate::wire`]): the
    /// same 24 bytes every time. `None` if the keys are past their time limit at `now`.
    pub(crate) fn close_message(&self, now: Instant, limits: &Limits, out: &mut Vec<u8>) -> bool {
        out.clear();
        if self.expired(now, limits) {
            return false;
        }
        out.extend_from_slice(&[MAGIC, VERSION, TYPE_CLOSE, self.epoch]);
        out.extend_from_slice(&self.peer_index.to_be_bytes());
        out.resize(CLOSE_BYTES, 0);
        match self
            .transport
            .write_message(CLOSE_NONCE, &[], &mut out[PREFIX_BYTES + 4..])
        {
            Ok(TAG_BYTES) => true,
            _ => {
                out.clear();
                false
            }
        }
    }

    /// Whether `datagram` (a close whose prefix and length were checked, for these keys'
    /// epoch) is the close of these keys, at `now`.
    pub(crate) fn opens_close(&self, now: Instant, limits: &Limits, datagram: &[u8]) -> bool {
        if self.expired(now, limits) || datagram.len() != CLOSE_BYTES {
            return false;
        }
        let mut empty = [0u8; 0];
        matches!(
            self.transport
                .read_message(CLOSE_NONCE, &datagram[PREFIX_BYTES + 4..], &mut empty),
            Ok(0)
        )
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
