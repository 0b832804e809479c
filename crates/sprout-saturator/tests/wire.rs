//! The wire format through the public API: every message round trips, garbage is refused.

use sprout_core::direction::{Direction, Load};
use sprout_saturator::*;

/// The session of the tests.
const S: u64 = 0xfeed;

/// A data packet of session [`S`], downlink.
fn data(seq: u64, sent_us: u64) -> DataHeader {
    DataHeader {
        session: S,
        dir: Direction::Down,
        seq,
        sent_us,
        window: 0,
        rtt_ms: 0,
        probe: false,
        ack: None,
    }
}

/// An ack of everything up to `highest_seq`, no loss, no queueing delay reported.
fn ack(highest_seq: u64, echo_sent_us: u64) -> AckInfo {
    AckInfo {
        highest_seq,
        echo_sent_us,
        ack_delay_us: 0,
        received: highest_seq + 1,
        lost: 0,
        queue_delay_us: u32::MAX,
    }
}

#[test]
fn messages_round_trip_and_garbage_is_refused() {
    let hello = Hello {
        session: 7,
        mode: Load::Both,
        payload_bytes: 1472,
        low_rtt_ms: 750,
        high_rtt_ms: 3000,
        max_window: 100,
        feedback_path: true,
        uses_feedback: true,
        name: "lte-run_1".into(),
        cookie: None,
    };
    let with_cookie = Hello {
        cookie: Some([0xa5; COOKIE_BYTES]),
        feedback_path: false,
        ..hello.clone()
    };
    let mut d = data(42, 123);
    d.ack = Some(ack(9, 77));
    d.probe = true;
    let meta = result_meta(7, &[1u8; 2500]);
    let chunk_data = [1u8; CHUNK_BYTES];
    let msgs = [
        Message::Hello(hello),
        Message::Hello(with_cookie),
        Message::Challenge {
            session: 7,
            feedback_path: true,
            cookie: [3; COOKIE_BYTES],
        },
        Message::Refused {
            session: 7,
            reason: Refusal::Payload { max: 8972 },
        },
        Message::Refused {
            session: 7,
            reason: Refusal::Window { max: 100_000 },
        },
        Message::Refused {
            session: 7,
            reason: Refusal::RttMarks {
                max_high_ms: 60_000,
            },
        },
        Message::HelloAck {
            session: 7,
            flags: FLAG_FEEDBACK_PATH,
        },
        Message::Busy { session: 7 },
        Message::Data(d),
        Message::Ack {
            session: 7,
            dir: Direction::Up,
            feedback_path: true,
            info: Some(ack(3, 4)),
        },
        Message::Ack {
            session: 7,
            dir: Direction::Down,
            feedback_path: false,
            info: None,
        },
        Message::Fin {
            session: 7,
            feedback_path: false,
        },
        Message::FinAck(meta),
        Message::ResultRequest {
            session: 7,
            first: 1,
            count: 2,
        },
        Message::ResultChunk {
            meta,
            index: 1,
            data: &chunk_data,
        },
        Message::Done { session: 7 },
    ];
    let mut buf = Vec::new();
    for m in &msgs {
        encode(m, 1472, &mut buf);
        assert_eq!(&decode(&buf).unwrap(), m);
        // Every truncation is refused, never a panic.
        for n in 0..buf.len().min(200) {
            if decode(&buf[..n]).is_ok() {
                // Only a data packet or a hello, whose tails are padding, may decode when cut.
                assert!(
                    matches!(m, Message::Data(_)) && n >= DATA_HEADER_BYTES + ACK_INFO_BYTES
                        || matches!(m, Message::Hello(_)) && n >= 44,
                    "{m:?} at {n}"
                );
            }
        }
    }
    encode(&Message::Data(data(1, 2)), 1472, &mut buf);
    assert_eq!(buf.len(), 1472);
    assert_eq!(
        decode(b"hello world, not a saturator packet"),
        Err(DecodeError::BadMagic)
    );
    let mut bad = buf.clone();
    bad[4] = 9;
    assert_eq!(decode(&bad), Err(DecodeError::BadVersion(9)));
    // The version before the cookie exchange is refused, and the error says what to do.
    bad[4] = 1;
    let e = decode(&bad).unwrap_err();
    assert_eq!(e, DecodeError::BadVersion(1));
    assert!(
        e.to_string().contains("same sprout release at both ends"),
        "{e}"
    );
    bad = buf.clone();
    bad[6] = 5;
    assert!(decode(&bad).is_err());
    bad = buf.clone();
    bad[5] = 99;
    assert_eq!(decode(&bad), Err(DecodeError::BadKind(99)));
    // A chunk whose length does not match its index, or an index out of range.
    encode(
        &Message::ResultChunk {
            meta,
            index: 2,
            data: &chunk_data,
        },
        0,
        &mut buf,
    );
    assert!(decode(&buf).is_err());
    // A bad refusal code.
    encode(
        &Message::Refused {
            session: 7,
            reason: Refusal::Window { max: 1 },
        },
        0,
        &mut buf,
    );
    buf[COMMON_BYTES] = 77;
    assert_eq!(decode(&buf), Err(DecodeError::BadField("refusal")));
    assert!(!valid_name("../etc"));
    assert!(valid_name("ATT-LTE.run_2"));
}

/// The server's answer to a hello that has not proven its address is never larger than the
/// hello: hellos are padded to at least 1200 bytes (and to the data packets' size), a
/// challenge is 32 bytes.
#[test]
fn a_challenge_is_never_larger_than_a_hello() {
    let hello = Hello {
        session: 1,
        mode: Load::Down,
        payload_bytes: 128,
        low_rtt_ms: 750,
        high_rtt_ms: 3000,
        max_window: 10,
        feedback_path: false,
        uses_feedback: false,
        name: String::new(),
        cookie: None,
    };
    let mut buf = Vec::new();
    encode(&Message::Hello(hello.clone()), 0, &mut buf);
    assert_eq!(buf.len(), MIN_HELLO_BYTES);
    encode(&Message::Hello(hello), 1472, &mut buf);
    assert_eq!(buf.len(), 1472, "padded to the data packets' size");
    encode(
        &Message::Challenge {
            session: 1,
            feedback_path: false,
            cookie: [0; COOKIE_BYTES],
        },
        1472,
        &mut buf,
    );
    assert_eq!(buf.len(), CHALLENGE_BYTES);
    const { assert!(CHALLENGE_BYTES <= MIN_HELLO_BYTES) };
}

/// The bytes of the directions keep their codes: a hello's mode byte (right after the common
/// header) 0 up, 1 down, 2 both; the common header's direction byte (offset 6) 0 up, 1 down.
#[test]
fn the_direction_and_mode_bytes_keep_their_codes() {
    let hello = |mode| Hello {
        session: 7,
        mode,
        payload_bytes: 1472,
        low_rtt_ms: 750,
        high_rtt_ms: 3000,
        max_window: 100,
        feedback_path: false,
        uses_feedback: false,
        name: "run".into(),
        cookie: None,
    };
    let mut buf = Vec::new();
    encode(&Message::Hello(hello(Load::Up)), 0, &mut buf);
    assert_eq!((buf[6], buf[COMMON_BYTES]), (0, 0));
    for (code, load) in [(0u8, Load::Up), (1, Load::Down), (2, Load::Both)] {
        buf[COMMON_BYTES] = code;
        assert_eq!(decode(&buf), Ok(Message::Hello(hello(load))));
    }
    buf[COMMON_BYTES] = 3;
    assert_eq!(decode(&buf), Err(DecodeError::BadField("mode")));
    for (code, dir) in [(0u8, Direction::Up), (1, Direction::Down)] {
        let ack = Message::Ack {
            session: 7,
            dir,
            feedback_path: false,
            info: None,
        };
        encode(&ack, 0, &mut buf);
        assert_eq!(buf[6], code);
        assert_eq!(decode(&buf), Ok(ack));
    }
    buf[6] = 2;
    assert_eq!(decode(&buf), Err(DecodeError::BadField("direction")));
}

/// A refusal's limit is checked against what a server can send: a payload limit a hello could
/// exceed (128 to 65506 bytes), a window of at least 1, a high RTT mark below an hour, and a
/// wait before retrying or a bound on a recording's length of 1 ms to a day; each code's
/// limits just inside decode, those just outside are refused. A refusal says when to retry
/// in whole seconds, rounded up.
#[test]
fn a_refusals_limit_is_checked_against_what_is_possible() {
    let refused = |code: u8, limit: u32| {
        let mut buf = Vec::new();
        encode(
            &Message::Refused {
                session: 7,
                reason: Refusal::Window { max: 1 },
            },
            0,
            &mut buf,
        );
        buf[COMMON_BYTES] = code;
        buf[COMMON_BYTES + 1..COMMON_BYTES + 5].copy_from_slice(&limit.to_be_bytes());
        decode(&buf).map(|m| match m {
            Message::Refused { reason, .. } => reason,
            other => panic!("{other:?}"),
        })
    };
    let day = MAX_RECORDING_LIMIT_MS;
    assert_eq!(day, 86_400_000);
    for (code, good, bad) in [
        (
            1u8,
            [MIN_PAYLOAD_BYTES, MAX_PAYLOAD_BYTES - 1],
            [MIN_PAYLOAD_BYTES - 1, MAX_PAYLOAD_BYTES],
        ),
        (2, [1, u32::MAX], [0, 0]),
        (3, [1, 3_599_999], [0, 3_600_000]),
        (4, [1, day], [0, day + 1]),
        (5, [1, day], [0, day + 1]),
    ] {
        for l in good {
            assert!(refused(code, l).is_ok(), "code {code}, limit {l}");
        }
        for l in bad {
            assert_eq!(
                refused(code, l),
                Err(DecodeError::BadField("refusal")),
                "code {code}, limit {l}"
            );
        }
    }
    let mut buf = Vec::new();
    for reason in [
        Refusal::Busy {
            retry_after_ms: 4_500,
        },
        Refusal::Limit { max_ms: 600_000 },
    ] {
        let m = Message::Refused { session: 7, reason };
        encode(&m, 1472, &mut buf);
        assert_eq!(decode(&buf), Ok(m));
        for n in 0..buf.len() {
            assert_eq!(decode(&buf[..n]).ok(), None, "cut at {n}");
        }
    }
    assert_eq!(
        refused(4, 4_001),
        Ok(Refusal::Busy {
            retry_after_ms: 4_001
        })
    );
    let busy = Refusal::Busy {
        retry_after_ms: 4_001,
    };
    assert!(busy.to_string().contains("try again in 5 s"), "{busy}");
    let limit = Refusal::Limit { max_ms: 600_000 };
    assert!(limit.to_string().contains("600 s"), "{limit}");
}
