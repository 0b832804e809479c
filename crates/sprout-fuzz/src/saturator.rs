//! Fuzz targets for the Saturator (`sprout saturator`) and the trace toolkit's CSV reader:
//!
//! - [`SaturatorTarget`]: `sprout_saturator::decode` on any datagram; what decodes is
//!   handed to the state it would reach in a recording (a [`CookieJar`] for hellos and their
//!   cookies, a [`Recorder`] for data, a [`Sender`] for feedback, a [`Reassembly`] for the
//!   uplink recording's chunks), which persist across inputs so that hostile sequences build
//!   up;
//! - [`ResultTarget`]: `decode_result`, the transferred recording (summary and arrivals);
//! - [`CsvTarget`]: `sprout_link::convert::throughput_csv_to_trace` (`sprout traces convert`).

use sprout_core::direction::{Direction, Load};
use sprout_core::time::{Duration, Instant};
use sprout_link::convert::{throughput_csv_to_trace, CsvOptions};
use sprout_saturator::{
    chunk, decode, decode_result, encode, encode_result, result_meta, AckInfo, CookieJar,
    DataHeader, Hello, Message, Reassembly, Recorder, RecorderConfig, Refusal, ResultMeta, Sender,
    SenderConfig, Summary, CHALLENGE_BYTES, COOKIE_BYTES, DEFAULT_PAYLOAD_BYTES, MIN_HELLO_BYTES,
};

use crate::Target;

/// The session the persistent state belongs to (seeds use it, so mutations reach the state).
const SESSION: u64 = 0x5a7_0001;

/// Largest blob the fuzzer reassembles, bytes (the protocol allows 256 MiB, too slow per input).
const MAX_FUZZ_BLOB: u32 = 64 * 1024;

/// Decodes any bytes as a Saturator message and drives a recorder, a sender and a reassembly
/// with what decodes; invariants of each are checked after every input.
pub struct SaturatorTarget {
    now_us: u64,
    jar: CookieJar,
    recorder: Recorder,
    sender: Sender,
    reassembly: Option<Reassembly>,
    inputs: u64,
}

impl Default for SaturatorTarget {
    fn default() -> Self {
        SaturatorTarget {
            now_us: 0,
            jar: CookieJar::new(Instant::ZERO, [7; 32], [9; 32]),
            recorder: Recorder::new(
                RecorderConfig::default(),
                SESSION,
                Direction::Down,
                Instant::ZERO,
            ),
            sender: Sender::new(
                SenderConfig::default(),
                SESSION,
                Direction::Up,
                Instant::ZERO,
            ),
            reassembly: None,
            inputs: 0,
        }
    }
}

fn ack(highest_seq: u64) -> AckInfo {
    AckInfo {
        highest_seq,
        echo_sent_us: 1_000,
        ack_delay_us: 300,
        received: highest_seq + 1,
        lost: 0,
        queue_delay_us: 5_000,
    }
}

/// The address the fuzzed hellos come from.
fn peer() -> std::net::SocketAddr {
    std::net::SocketAddr::from(([192, 0, 2, 1], 4000))
}

fn enc(m: &Message<'_>, payload: usize) -> Vec<u8> {
    let mut out = Vec::new();
    encode(m, payload, &mut out);
    out
}

/// A small valid recording blob, and its transfer description.
fn sample_blob() -> (Vec<u8>, ResultMeta) {
    let ms: Vec<u32> = (0..3000u32).map(|i| i / 2).collect();
    let summary = Summary::from_arrivals(Direction::Up, &ms, Duration::from_secs(2), 1500);
    let blob = encode_result(&summary, &ms);
    let meta = result_meta(SESSION, &blob);
    (blob, meta)
}

impl Target for SaturatorTarget {
    fn name(&self) -> &'static str {
        "saturator"
    }

    fn seeds(&mut self) -> Vec<Vec<u8>> {
        let payload = DEFAULT_PAYLOAD_BYTES as usize;
        let data = |seq, probe, with_ack: bool| {
            enc(
                &Message::Data(DataHeader {
                    session: SESSION,
                    dir: Direction::Down,
                    seq,
                    sent_us: 10_000 + seq * 1_000,
                    window: 40,
                    rtt_ms: 800,
                    probe,
                    ack: with_ack.then(|| ack(seq)),
                }),
                payload,
            )
        };
        let (blob, meta) = sample_blob();
        let hello = Hello {
            session: SESSION,
            mode: Load::Both,
            payload_bytes: DEFAULT_PAYLOAD_BYTES,
            low_rtt_ms: 750,
            high_rtt_ms: 3000,
            max_window: 100_000,
            feedback_path: true,
            uses_feedback: true,
            name: "lte-run_1".into(),
            cookie: None,
        };
        let cookie = self.jar.cookie(&peer(), SESSION);
        vec![
            enc(&Message::Hello(hello.clone()), 0),
            enc(
                &Message::Hello(Hello {
                    cookie: Some(cookie),
                    ..hello
                }),
                0,
            ),
            enc(
                &Message::Challenge {
                    session: SESSION,
                    feedback_path: false,
                    cookie,
                },
                0,
            ),
            enc(
                &Message::Refused {
                    session: SESSION,
                    reason: Refusal::Payload { max: 8972 },
                },
                0,
            ),
            enc(
                &Message::Refused {
                    session: SESSION,
                    reason: Refusal::Busy {
                        retry_after_ms: 4_500,
                    },
                },
                0,
            ),
            enc(
                &Message::Refused {
                    session: SESSION,
                    reason: Refusal::Limit { max_ms: 600_000 },
                },
                0,
            ),
            enc(
                &Message::HelloAck {
                    session: SESSION,
                    flags: 1,
                },
                0,
            ),
            enc(&Message::Busy { session: SESSION }, 0),
            data(0, false, false),
            data(7, true, true),
            enc(
                &Message::Ack {
                    session: SESSION,
                    dir: Direction::Up,
                    feedback_path: true,
                    info: Some(ack(3)),
                },
                0,
            ),
            enc(
                &Message::Fin {
                    session: SESSION,
                    feedback_path: false,
                },
                0,
            ),
            enc(&Message::FinAck(meta), 0),
            enc(
                &Message::ResultRequest {
                    session: SESSION,
                    first: 0,
                    count: 4,
                },
                0,
            ),
            enc(
                &Message::ResultChunk {
                    meta,
                    index: 1,
                    data: chunk(&blob, 1),
                },
                0,
            ),
            enc(&Message::Done { session: SESSION }, 0),
        ]
    }

    fn run(&mut self, input: &[u8]) {
        self.inputs += 1;
        // Time moves on by 0-255 µs per input, from the input itself.
        self.now_us += u64::from(input.last().copied().unwrap_or(0));
        // Start afresh now and then, so that early states are visited again.
        if self.inputs.is_multiple_of(50_000) {
            *self = SaturatorTarget {
                inputs: self.inputs,
                ..SaturatorTarget::default()
            };
        }
        let msg = match decode(input) {
            Ok(m) => m,
            Err(e) => {
                assert!(!e.to_string().is_empty());
                self.recorder.on_malformed();
                return;
            }
        };
        // What decodes encodes to a message that decodes to the same value.
        let again = enc(&msg, input.len());
        assert_eq!(decode(&again).as_ref(), Ok(&msg), "decode(encode(m)) == m");
        match &msg {
            Message::Challenge { .. } => assert_eq!(again.len(), CHALLENGE_BYTES),
            Message::Hello(h) => {
                assert!(again.len() >= MIN_HELLO_BYTES, "hellos are padded");
                // Only the server's own cookie for this address and session passes.
                self.jar.rotate(Instant::from_micros(self.now_us), || {
                    [self.inputs as u8; 32]
                });
                if let Some(c) = &h.cookie {
                    let own = *c == self.jar.cookie(&peer(), h.session);
                    assert!(self.jar.check(&peer(), h.session, c) || !own);
                    assert_eq!(c.len(), COOKIE_BYTES);
                }
                assert!(h.payload_bytes >= sprout_saturator::MIN_PAYLOAD_BYTES);
                assert!(h.payload_bytes <= sprout_saturator::MAX_PAYLOAD_BYTES);
                assert!(h.low_rtt_ms < h.high_rtt_ms, "{h:?}");
                assert!(h.max_window >= 1);
                assert!(sprout_saturator::valid_name(&h.name));
            }
            Message::Data(d) => {
                let before = self.recorder.counters();
                self.recorder
                    .on_data(Instant::from_micros(self.now_us), d, input.len());
                let after = self.recorder.counters();
                assert!(after.packets >= before.packets && after.unique <= after.packets);
                assert!(self.recorder.arrivals_ms().len() as u64 <= after.packets);
                if let Some(a) = d.ack {
                    self.sender.on_ack(Instant::from_micros(self.now_us), &a);
                    self.plausible_ack(&a);
                }
                let _ = self.recorder.poll_ack(Instant::from_micros(self.now_us));
            }
            Message::Ack { info: Some(a), .. } => {
                self.sender.on_ack(Instant::from_micros(self.now_us), a);
                self.plausible_ack(a);
            }
            Message::Refused { reason, .. } => plausible_refusal(reason),
            Message::FinAck(meta) if meta.blob_len <= MAX_FUZZ_BLOB => {
                self.reassembly = Some(Reassembly::new(*meta));
            }
            Message::ResultChunk { meta, index, data } => {
                if let Some(r) = self.reassembly.as_mut() {
                    r.add(meta, *index, data);
                    assert!(r.missing() as usize <= (r.meta().blob_len as usize).div_ceil(1200));
                    if let Some(blob) = r.complete() {
                        let _ = decode_result(blob);
                    }
                }
            }
            _ => {}
        }
        // The sender stays within its bounds whatever the feedback said, and still sends.
        let cfg = SenderConfig::default();
        let w = self.sender.window();
        assert!(
            w >= u64::from(cfg.min_window) && w <= u64::from(cfg.max_window),
            "window {w}"
        );
        // Send a few packets, so that acks can name them (the last one is taken back now and
        // then, as the runtime does when a socket is full).
        for i in 0..4 {
            let Some(out) = self.sender.poll_transmit(Instant::from_micros(self.now_us)) else {
                break;
            };
            assert_eq!(out.sent.as_micros(), self.now_us);
            if i == 3 && input.len().is_multiple_of(2) {
                self.sender.unsend(&out);
            }
        }
        let _ = self.sender.next_timeout();
    }
}

impl SaturatorTarget {
    /// The hostile ack's numbers, bent into what the sender accepts (a sequence number it sent,
    /// an echo between its start and now), so that the growth and decrease rules see them.
    fn plausible_ack(&mut self, a: &AckInfo) {
        let sent = self.sender.stats().packets_sent;
        if sent == 0 {
            return;
        }
        let bent = AckInfo {
            highest_seq: a.highest_seq % sent,
            echo_sent_us: a.echo_sent_us % (self.now_us + 1),
            ..*a
        };
        let acks = self.sender.stats().acks;
        self.sender.on_ack(Instant::from_micros(self.now_us), &bent);
        let stats = self.sender.stats();
        assert!(stats.acks + stats.bogus_acks > acks);
        assert!(self.sender.srtt().is_some() || stats.acks == 0);
    }
}

/// A decoded refusal's limit is one a server can send (the decoder checks each).
fn plausible_refusal(r: &Refusal) {
    use sprout_saturator::{
        MAX_HELLO_HIGH_RTT_MS, MAX_PAYLOAD_BYTES, MAX_RECORDING_LIMIT_MS, MIN_PAYLOAD_BYTES,
    };
    let ok = match *r {
        Refusal::Payload { max } => (MIN_PAYLOAD_BYTES..MAX_PAYLOAD_BYTES).contains(&max),
        Refusal::Window { max } => max >= 1,
        Refusal::RttMarks { max_high_ms } => (1..MAX_HELLO_HIGH_RTT_MS).contains(&max_high_ms),
        Refusal::Busy { retry_after_ms } => (1..=MAX_RECORDING_LIMIT_MS).contains(&retry_after_ms),
        Refusal::Limit { max_ms } => (1..=MAX_RECORDING_LIMIT_MS).contains(&max_ms),
    };
    assert!(ok, "{r:?}");
    assert!(!r.to_string().is_empty());
}

/// Decodes any bytes as a transferred recording: `None`, or sorted arrivals that re-encode.
#[derive(Default)]
pub struct ResultTarget;

impl Target for ResultTarget {
    fn name(&self) -> &'static str {
        "saturator-result"
    }

    fn seeds(&mut self) -> Vec<Vec<u8>> {
        let (blob, _) = sample_blob();
        let empty = encode_result(
            &Summary::from_arrivals(Direction::Down, &[], Duration::ZERO, 1500),
            &[],
        );
        vec![blob, empty]
    }

    fn run(&mut self, input: &[u8]) {
        if let Some((summary, ms)) = decode_result(input) {
            assert!(ms.windows(2).all(|w| w[0] <= w[1]), "arrivals sorted");
            assert!(ms.len() <= input.len(), "at least a byte per arrival");
            let (s2, ms2) = decode_result(&encode_result(&summary, &ms)).expect("re-encodes");
            assert_eq!(ms2, ms);
            assert_eq!(s2.direction, summary.direction);
        }
    }
}

/// Converts any bytes (as lossy UTF-8) as a throughput CSV, under a few option sets: an error,
/// or a sorted trace within the opportunity limit.
#[derive(Default)]
pub struct CsvTarget;

impl Target for CsvTarget {
    fn name(&self) -> &'static str {
        "csv"
    }

    fn seeds(&mut self) -> Vec<Vec<u8>> {
        vec![
            b"time,mbps\n0,1.5\n1,2.25\n2,0\n3,12\n".to_vec(),
            b"\"t\";\"rate\"\n0.0;3\n0.5;4\n".to_vec(),
            b"0 1\n1 1e-3\n2 1e2\n".to_vec(),
            b"0\t10\n1000\t20\n".to_vec(),
        ]
    }

    fn run(&mut self, input: &[u8]) {
        let text = String::from_utf8_lossy(input);
        let limited = CsvOptions {
            max_opportunities: 100_000,
            ..CsvOptions::default()
        };
        let intervals = CsvOptions {
            time_column: None,
            interval_s: Some(0.5),
            rate_unit_bps: 1e3,
            max_opportunities: 100_000,
            ..CsvOptions::default()
        };
        for opts in [limited, intervals] {
            let mut out = Vec::new();
            if let Ok(s) = throughput_csv_to_trace(text.as_bytes(), "fuzz", &opts, &mut out) {
                assert!(s.opportunities <= opts.max_opportunities);
                let written = String::from_utf8(out).expect("a trace is text");
                let ms: Vec<u64> = written
                    .lines()
                    .map(|l| l.parse().expect("a trace line is a number"))
                    .collect();
                assert_eq!(ms.len() as u64, s.opportunities);
                assert!(ms.windows(2).all(|w| w[0] <= w[1]), "opportunities sorted");
            }
        }
    }
}
