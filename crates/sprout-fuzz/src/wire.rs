//! Fuzz target: `sprout_core::wire::decode`.

use sprout_core::wire::{self, Feedback, Header};

use crate::Target;

/// Decodes any bytes; a decoded datagram must re-encode to the same bytes.
#[derive(Default)]
pub struct WireTarget {
    buf: Vec<u8>,
}

/// A header with the given shape, for the seeds.
fn header(seq: u64, feedback: Option<Feedback>, heartbeat: bool) -> Header {
    Header {
        seq,
        throwaway: seq / 2,
        time_to_next_us: if heartbeat { 50_000 } else { 0 },
        sent_us: 1_234_567,
        heartbeat,
        app_limited: false,
        feedback,
    }
}

impl Target for WireTarget {
    fn name(&self) -> &'static str {
        "wire"
    }

    /// Valid datagrams: data with and without a forecast, heartbeats with and without one,
    /// forecasts of 1, 8 and 32 ticks, an application-limited one with expected counts,
    /// numbers at both ends of their range.
    fn seeds(&mut self) -> Vec<Vec<u8>> {
        let eight = Feedback::new(7, 42_000, &[1, 2, 3, 5, 8, 13, 21, 34]);
        let one = Feedback::new(u32::MAX, 0, &[0]);
        let full: Vec<u32> = (0..wire::MAX_FORECAST_TICKS as u32)
            .map(|i| i * 29)
            .collect();
        let long = Feedback::new(0x7fff_0000, u64::MAX, &full);
        let mut marked = header(
            4500,
            Some(eight.with_expected(&[2, 4, 6, 9, 12, 16, 24, 40])),
            false,
        );
        marked.app_limited = true;
        let cases: [(Header, &[u8]); 8] = [
            (marked, b"app"),
            (header(0, None, false), b"hello"),
            (header(123_456_789, Some(eight), false), &[0xAB; 100]),
            (header(1500, Some(eight), true), b""),
            (header(3000, None, true), b""),
            (header(u64::MAX, Some(one), false), b"x"),
            (header(1 << 40, Some(long), false), &[0; 1300]),
            (header(60, Some(long), true), b""),
        ];
        cases
            .iter()
            .map(|(h, payload)| {
                let mut out = Vec::new();
                wire::encode(h, payload, &mut out);
                out
            })
            .collect()
    }

    fn run(&mut self, input: &[u8]) {
        if let Ok(d) = wire::decode(input) {
            wire::encode(&d.header, d.payload, &mut self.buf);
            assert_eq!(
                self.buf, input,
                "a decoded datagram re-encodes to other bytes"
            );
            assert_eq!(d.header.encoded_len() + d.payload.len(), input.len());
            assert!(d.header.throwaway <= d.header.seq);
            if let Some(f) = &d.header.feedback {
                assert!(!f.forecast().is_empty());
                assert!(f.forecast().windows(2).all(|w| w[0] <= w[1]));
                if let Some(e) = f.expected() {
                    assert_eq!(e.len(), f.forecast().len());
                    assert!(e.windows(2).all(|w| w[0] <= w[1]));
                }
            }
        }
    }
}
