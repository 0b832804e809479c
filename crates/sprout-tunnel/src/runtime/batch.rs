//! Sealed datagrams gathered for one segmented UDP send (`UDP_SEGMENT`, "GSO"): consecutive
//! datagrams to one peer, all of one length but the last, which may be shorter. A bulk flow's
//! datagrams through the tunnel are nearly all full-size, so one `sendmsg` carries up to
//! [`MAX_SEGMENTS`] of them through the sending host's stack at once (the kernel cuts them
//! apart at the device), instead of one system call and one pass through the stack each.

use std::net::SocketAddr;

/// Most datagrams of one segmented send (the kernel's `UDP_MAX_SEGMENTS`).
pub(super) const MAX_SEGMENTS: usize = 64;
/// Most bytes of one segmented send: the largest UDP payload over IPv4.
pub(super) const MAX_BYTES: usize = 65_507;

/// Datagrams to one peer, one after the other in `buf`, each `segment` bytes but the last.
#[derive(Debug, Default)]
pub(super) struct Batch {
    /// The datagrams.
    pub(super) buf: Vec<u8>,
    /// Length of each datagram but the last, bytes (at least 1 in a batch of any).
    pub(super) segment: usize,
    /// How many datagrams `buf` holds.
    pub(super) count: usize,
    /// Where they go.
    pub(super) to: Option<SocketAddr>,
}

impl Batch {
    /// The datagrams, in order.
    pub(super) fn datagrams(&self) -> std::slice::Chunks<'_, u8> {
        self.buf.chunks(self.segment.max(1))
    }

    /// Leaves out the first `k` datagrams (sent already).
    pub(super) fn skip(&mut self, k: usize) {
        let k = k.min(self.count);
        let bytes = (k * self.segment).min(self.buf.len());
        self.buf.drain(..bytes);
        self.count -= k;
    }
}

/// The batch being gathered, with a spare buffer so that gathering allocates only at the start.
#[derive(Debug)]
pub(super) struct Gather {
    batch: Batch,
    spare: Vec<u8>,
    /// Most datagrams of one batch: [`MAX_SEGMENTS`], or 1 when segmented sends are off.
    limit: usize,
    /// Longest datagram that others may join, bytes: shorter than the segments the kernel
    /// refused as longer than the path's MTU allows (a datagram that long goes alone, and the
    /// kernel fragments it).
    longest: usize,
}

impl Gather {
    /// Batches of at most `limit` datagrams (1: every datagram alone).
    pub(super) fn new(limit: usize) -> Gather {
        Gather {
            batch: Batch::default(),
            spare: Vec::new(),
            limit: limit.clamp(1, MAX_SEGMENTS),
            longest: MAX_BYTES,
        }
    }

    /// From now on every datagram alone (the kernel refused a segmented send).
    pub(super) fn one_by_one(&mut self) {
        self.limit = 1;
    }

    /// The kernel refused segments of `segment` bytes as longer than the path's MTU allows:
    /// datagrams that long go alone from now on.
    pub(super) fn too_big(&mut self, segment: usize) {
        self.longest = self.longest.min(segment.saturating_sub(1));
    }

    /// Whether datagrams are gathered (more than one a batch).
    pub(super) fn segmenting(&self) -> bool {
        self.limit > 1
    }

    /// Whether a datagram of `len` bytes to `to` can join the batch: an empty batch takes any;
    /// else the same peer, no longer than the others and none shorter before it, within the
    /// kernel's limits.
    pub(super) fn fits(&self, len: usize, to: SocketAddr) -> bool {
        let b = &self.batch;
        b.count == 0
            || (b.to == Some(to)
                && len > 0
                && len <= b.segment
                && b.segment <= self.longest
                && b.buf.len() == b.count * b.segment
                && b.count < self.limit
                && b.buf.len() + len <= MAX_BYTES)
    }

    /// Adds datagram `d` to `to` (the caller took the batch first unless it [`Gather::fits`]).
    pub(super) fn push(&mut self, d: &[u8], to: SocketAddr) {
        let b = &mut self.batch;
        if b.count == 0 {
            b.segment = d.len();
            b.to = Some(to);
        }
        b.buf.extend_from_slice(d);
        b.count += 1;
    }

    /// The batch gathered, if any, leaving the gather empty.
    pub(super) fn take(&mut self) -> Option<Batch> {
        if self.batch.count == 0 {
            return None;
        }
        let mut next = std::mem::take(&mut self.spare);
        next.clear();
        let buf = std::mem::replace(&mut self.batch.buf, next);
        let b = Batch {
            buf,
            segment: self.batch.segment,
            count: self.batch.count,
            to: self.batch.to,
        };
        self.batch.count = 0;
        self.batch.to = None;
        Some(b)
    }

    /// Takes back a sent batch's buffer for reuse.
    pub(super) fn recycle(&mut self, mut buf: Vec<u8>) {
        if buf.capacity() > self.spare.capacity() {
            buf.clear();
            self.spare = buf;
        }
    }

    /// Forgets what is gathered.
    pub(super) fn clear(&mut self) {
        self.batch.buf.clear();
        self.batch.count = 0;
        self.batch.to = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn peer(port: u16) -> SocketAddr {
        SocketAddr::from(([10, 0, 0, 1], port))
    }

    /// Gathers `datagrams` (length, peer) as the runtime does: a datagram that does not fit
    /// closes the batch. The batches, each as its datagrams and peer.
    fn gather_all(datagrams: &[(Vec<u8>, SocketAddr)], limit: usize) -> Vec<Batch> {
        let mut g = Gather::new(limit);
        let mut out = Vec::new();
        for (d, to) in datagrams {
            if !g.fits(d.len(), *to) {
                out.extend(g.take());
            }
            assert!(g.fits(d.len(), *to));
            g.push(d, *to);
        }
        out.extend(g.take());
        out
    }

    /// A small deterministic generator (xorshift), so that the property runs without a crate.
    fn next(state: &mut u64) -> u64 {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        *state
    }

    #[test]
    fn batches_give_back_every_datagram_in_order_within_the_kernels_limits() {
        let mut state = 0x9e37_79b9_7f4a_7c15;
        for round in 0..200 {
            let n = (next(&mut state) % 300) as usize;
            let datagrams: Vec<(Vec<u8>, SocketAddr)> = (0..n)
                .map(|i| {
                    let r = next(&mut state);
                    // Mostly full-size datagrams to one peer, some short ones, some elsewhere.
                    let len = match r % 10 {
                        0 => 1 + (r >> 8) as usize % 1400,
                        1 => 1 + (r >> 8) as usize % 60_000,
                        _ => 1400,
                    };
                    let to = peer(if r.is_multiple_of(17) { 2 } else { 1 });
                    (vec![(i % 251) as u8; len], to)
                })
                .collect();
            let limit = if round % 5 == 0 { 1 } else { MAX_SEGMENTS };
            let batches = gather_all(&datagrams, limit);
            let mut back = Vec::new();
            for b in &batches {
                assert!(b.count >= 1 && b.count <= limit, "{} datagrams", b.count);
                assert!(b.count == 1 || b.buf.len() <= MAX_BYTES);
                let ds: Vec<&[u8]> = b.datagrams().collect();
                assert_eq!(ds.len(), b.count);
                for (k, d) in ds.iter().enumerate() {
                    if k + 1 < ds.len() {
                        assert_eq!(d.len(), b.segment);
                    } else {
                        assert!(!d.is_empty() && d.len() <= b.segment);
                    }
                    back.push((d.to_vec(), b.to.unwrap()));
                }
            }
            assert_eq!(back, datagrams, "round {round}");
        }
    }

    #[test]
    fn full_size_datagrams_to_one_peer_go_sixty_four_at_a_time() {
        let ds: Vec<(Vec<u8>, SocketAddr)> = (0..130).map(|_| (vec![7; 1000], peer(1))).collect();
        let counts: Vec<usize> = gather_all(&ds, MAX_SEGMENTS)
            .iter()
            .map(|b| b.count)
            .collect();
        assert_eq!(counts, [64, 64, 2]);
        // A shorter datagram ends its batch; a longer one or another peer starts a new one.
        let mixed = [
            (vec![1; 1000], peer(1)),
            (vec![2; 500], peer(1)),
            (vec![3; 500], peer(1)),
            (vec![4; 1000], peer(1)),
            (vec![5; 1000], peer(2)),
        ];
        let counts: Vec<usize> = gather_all(&mixed, MAX_SEGMENTS)
            .iter()
            .map(|b| b.count)
            .collect();
        assert_eq!(counts, [2, 1, 1, 1]);
    }

    #[test]
    fn datagrams_the_kernel_found_too_big_go_alone_and_shorter_ones_still_gather() {
        let mut g = Gather::new(MAX_SEGMENTS);
        g.too_big(1504);
        for len in [1504, 1427, 1427, 1427, 1504] {
            if !g.fits(len, peer(1)) {
                let b = g.take().unwrap();
                assert_eq!(b.count, if b.segment == 1504 { 1 } else { 3 });
            }
            g.push(&vec![0; len], peer(1));
        }
        assert_eq!(g.take().unwrap().count, 1);
    }

    #[test]
    fn skipping_sent_datagrams_leaves_the_rest() {
        let mut g = Gather::new(MAX_SEGMENTS);
        for i in 0..5u8 {
            g.push(&[i; 100], peer(1));
        }
        g.push(&[9; 10], peer(1));
        let mut b = g.take().unwrap();
        assert!(g.take().is_none());
        b.skip(4);
        let rest: Vec<Vec<u8>> = b.datagrams().map(<[u8]>::to_vec).collect();
        assert_eq!(rest, vec![vec![4; 100], vec![9; 10]]);
        assert_eq!(b.count, 2);
        g.recycle(b.buf);
        g.push(&[1; 3], peer(1));
        assert_eq!(g.take().unwrap().buf, vec![1; 3]);
    }
}
