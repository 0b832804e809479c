//! The end-of-recording transfer: a recording encoded as one checked blob
//! ([`encode_result`], [`decode_result`]), sent in chunks ([`chunk`]) and put back together
//! in any order ([`Reassembly`]).

use crate::summary::Summary;
use crate::wire::{put_u32, ResultMeta, CHUNK_BYTES, MAX_BLOB_BYTES};

const RESULT_MAGIC: [u8; 4] = *b"SPSR";

/// FNV-1a, 32 bit.
pub fn fnv1a32(data: &[u8]) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for &b in data {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    h
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn get_varint(buf: &[u8], at: &mut usize) -> Option<u64> {
    let mut v: u64 = 0;
    for shift in (0..64).step_by(7) {
        let b = *buf.get(*at)?;
        *at += 1;
        v |= u64::from(b & 0x7f).checked_shl(shift)?;
        if b & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

/// Encodes a recording for transfer: its summary (as JSON) and its sorted arrivals (ms,
/// delta-encoded varints: about one byte per packet).
pub fn encode_result(summary: &Summary, sorted_ms: &[u32]) -> Vec<u8> {
    let json = serde_json::to_vec(summary).unwrap_or_default();
    let mut out = Vec::with_capacity(16 + json.len() + sorted_ms.len() + 8);
    out.extend_from_slice(&RESULT_MAGIC);
    put_u32(&mut out, json.len() as u32);
    out.extend_from_slice(&json);
    put_varint(&mut out, sorted_ms.len() as u64);
    let mut prev = 0u32;
    for &t in sorted_ms {
        put_varint(&mut out, u64::from(t.saturating_sub(prev)));
        prev = prev.max(t);
    }
    out
}

/// Decodes a transferred recording: its summary and sorted arrivals (ms). Checks every length;
/// `None` if anything is off.
pub fn decode_result(blob: &[u8]) -> Option<(Summary, Vec<u32>)> {
    if blob.len() < 8 || blob[..4] != RESULT_MAGIC {
        return None;
    }
    let json_len = u32::from_be_bytes([blob[4], blob[5], blob[6], blob[7]]) as usize;
    let json = blob.get(8..8usize.checked_add(json_len)?)?;
    let summary: Summary = serde_json::from_slice(json).ok()?;
    let mut at = 8 + json_len;
    let count = get_varint(blob, &mut at)?;
    // Each arrival takes at least one byte.
    if count > (blob.len() - at) as u64 {
        return None;
    }
    let mut v = Vec::with_capacity(count as usize);
    let mut t: u64 = 0;
    for _ in 0..count {
        t = t.checked_add(get_varint(blob, &mut at)?)?;
        v.push(u32::try_from(t).ok()?);
    }
    (at == blob.len()).then_some((summary, v))
}

/// The largest transferred recording a sender of `packets_sent` packets can be owed, bytes:
/// room for the summary (64 KiB), and 5 bytes (the longest varint of a `u32`) for each of
/// twice the packets sent plus 1024 (duplicates made by the network are recorded too), at
/// most [`MAX_BLOB_BYTES`]. A client refuses a larger announcement rather than reserve its
/// size: a hostile or broken server cannot make it hold 256 MiB for a short recording.
pub fn max_result_bytes(packets_sent: u64) -> usize {
    let arrivals = packets_sent.saturating_mul(2).saturating_add(1024);
    let bytes = arrivals.saturating_mul(5).saturating_add(64 * 1024 + 16);
    usize::try_from(bytes).map_or(MAX_BLOB_BYTES, |b| b.min(MAX_BLOB_BYTES))
}

/// The description of a blob's transfer.
pub fn result_meta(session: u64, blob: &[u8]) -> ResultMeta {
    ResultMeta {
        session,
        blob_len: blob.len() as u32,
        chunks: blob.len().div_ceil(CHUNK_BYTES) as u32,
        checksum: fnv1a32(blob),
    }
}

/// Chunk `index` of `blob` (empty past the end).
pub fn chunk(blob: &[u8], index: u32) -> &[u8] {
    let start = (index as usize).saturating_mul(CHUNK_BYTES);
    if start >= blob.len() {
        return &[];
    }
    &blob[start..(start + CHUNK_BYTES).min(blob.len())]
}

/// Reassembles a transferred blob from chunks in any order, duplicates ignored.
#[derive(Clone, Debug)]
pub struct Reassembly {
    meta: ResultMeta,
    data: Vec<u8>,
    have: Vec<bool>,
    missing: u32,
}

impl Reassembly {
    /// An empty reassembly for `meta` (whose sizes [`decode_result`] checked).
    pub fn new(meta: ResultMeta) -> Reassembly {
        let blob_len = (meta.blob_len as usize).min(MAX_BLOB_BYTES);
        let chunks = blob_len.div_ceil(CHUNK_BYTES);
        Reassembly {
            meta,
            data: vec![0; blob_len],
            have: vec![false; chunks],
            missing: chunks as u32,
        }
    }

    /// The transfer's description.
    pub fn meta(&self) -> ResultMeta {
        self.meta
    }

    /// Takes chunk `index` (ignored if it does not fit the description).
    pub fn add(&mut self, meta: &ResultMeta, index: u32, data: &[u8]) {
        if *meta != self.meta {
            return;
        }
        let i = index as usize;
        let start = i.saturating_mul(CHUNK_BYTES);
        if i >= self.have.len() || self.have[i] {
            return;
        }
        let end = (start + CHUNK_BYTES).min(self.data.len());
        if data.len() != end - start {
            return;
        }
        self.data[start..end].copy_from_slice(data);
        self.have[i] = true;
        self.missing -= 1;
    }

    /// The first missing chunk and how many follow it missing (up to `max`).
    pub fn wanted(&self, max: u32) -> Option<(u32, u32)> {
        let first = self.have.iter().position(|h| !h)?;
        let count = self.have[first..]
            .iter()
            .take(max as usize)
            .take_while(|h| !**h)
            .count();
        Some((first as u32, count as u32))
    }

    /// Chunks still missing.
    pub fn missing(&self) -> u32 {
        self.missing
    }

    /// The blob, once complete and matching its checksum.
    pub fn complete(&self) -> Option<&[u8]> {
        (self.missing == 0 && fnv1a32(&self.data) == self.meta.checksum).then_some(&self.data[..])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sprout_core::direction::Direction;
    use sprout_core::time::Duration;

    #[test]
    fn the_largest_recording_a_sender_is_owed_fits_its_bound() {
        // Worst case: every packet arrives twice, each delta a 5-byte varint, and more.
        for sent in [0u64, 1, 100, 10_000] {
            let n = (2 * sent + 1024) as usize;
            let ms: Vec<u32> = (0..n).map(|i| (i as u32).saturating_mul(1 << 28)).collect();
            let mut sorted = ms.clone();
            sorted.sort_unstable();
            let summary = Summary::from_arrivals(
                Direction::Up,
                &sorted,
                Duration::from_micros(u64::MAX / 4),
                1500,
            );
            let blob = encode_result(&summary, &sorted);
            assert!(
                blob.len() <= max_result_bytes(sent),
                "{sent}: {} > {}",
                blob.len(),
                max_result_bytes(sent)
            );
        }
        assert_eq!(max_result_bytes(u64::MAX), MAX_BLOB_BYTES);
        assert!(max_result_bytes(1000) < 100 * 1024);
    }

    #[test]
    fn results_round_trip_through_chunks_in_any_order() {
        let ms: Vec<u32> = (0..5000u32)
            .map(|i| i / 3 + (i % 7) * 1000)
            .collect::<Vec<_>>();
        let mut sorted = ms.clone();
        sorted.sort_unstable();
        let summary = Summary::from_arrivals(Direction::Up, &sorted, Duration::from_secs(10), 1500);
        let blob = encode_result(&summary, &sorted);
        assert!(
            blob.len() < 2 * sorted.len() + 1000,
            "about a byte per arrival"
        );
        let meta = result_meta(3, &blob);
        let mut r = Reassembly::new(meta);
        for i in (0..meta.chunks).rev() {
            r.add(&meta, i, chunk(&blob, i));
            r.add(&meta, i, chunk(&blob, i));
        }
        assert_eq!(r.wanted(64), None);
        let (s2, v2) = decode_result(r.complete().unwrap()).unwrap();
        assert_eq!(s2, summary);
        assert_eq!(v2, sorted);
        // A corrupted blob fails its checksum; a truncated one does not decode.
        let mut r = Reassembly::new(meta);
        let mut broken = chunk(&blob, 0).to_vec();
        broken[10] ^= 1;
        r.add(&meta, 0, &broken);
        for i in 1..meta.chunks {
            r.add(&meta, i, chunk(&blob, i));
        }
        assert!(r.complete().is_none());
        assert!(decode_result(&blob[..blob.len() - 1]).is_none());
        let mut r = Reassembly::new(meta);
        r.add(&meta, 1, chunk(&blob, 1));
        assert_eq!(r.wanted(64), Some((0, 1)));
    }
}
