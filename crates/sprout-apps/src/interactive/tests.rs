//! Tests of the packets, the recorder, the summary and a stream on loopback.

use std::net::UdpSocket;

use crate::interactive::options::StreamOptions;
use crate::interactive::packet::{
    decode, encode, quantile, Direction, Recorder, Stamp, HEADER_BYTES, MAX_SEQ,
};
use crate::interactive::side::run_side;
use crate::interactive::summary::{summary, Sent};

fn packet(dir: Direction, seq: u64, sent_us: u64, len: usize) -> Vec<u8> {
    let mut b = vec![0u8; len];
    encode(Stamp { dir, seq, sent_us }, &mut b);
    b
}

#[test]
fn packets_round_trip_and_bad_ones_are_refused() {
    let p = packet(Direction::Down, 7, 1_000, 1000);
    assert_eq!(
        decode(&p, Direction::Down, 2_000),
        Some(Stamp {
            dir: Direction::Down,
            seq: 7,
            sent_us: 1_000
        })
    );
    // Wrong direction, from the future, too short, bad magic, sequence too high.
    assert_eq!(decode(&p, Direction::Up, 2_000), None);
    assert_eq!(decode(&p, Direction::Down, 999), None);
    assert_eq!(decode(&p[..HEADER_BYTES - 1], Direction::Down, 2_000), None);
    let mut q = p.clone();
    q[0] = b'X';
    assert_eq!(decode(&q, Direction::Down, 2_000), None);
    assert_eq!(
        decode(
            &packet(Direction::Down, MAX_SEQ + 1, 0, 24),
            Direction::Down,
            1
        ),
        None
    );
    assert!(decode(&packet(Direction::Down, MAX_SEQ, 0, 24), Direction::Down, 1).is_some());
    assert_eq!(decode(&[], Direction::Up, 0), None);
}

#[test]
fn recorder_counts_losses_duplicates_and_bad_packets() {
    let mut r = Recorder::new(Direction::Up);
    for (seq, sent, recv) in [(0, 0, 30_000), (1, 16_000, 50_000), (3, 48_000, 90_000)] {
        assert!(r
            .on_datagram(&packet(Direction::Up, seq, sent, 100), recv)
            .is_some());
    }
    assert!(r
        .on_datagram(&packet(Direction::Up, 1, 16_000, 100), 95_000)
        .is_none());
    assert!(r
        .on_datagram(&packet(Direction::Down, 4, 0, 100), 95_000)
        .is_none());
    assert!(r.on_datagram(b"hello", 95_000).is_none());
    r.on_foreign();
    assert_eq!(
        (r.packets, r.bytes, r.duplicates, r.bad, r.lost()),
        (3, 300, 1, 3, 1)
    );
    let mut csv = Vec::new();
    r.write_csv(&mut csv).unwrap();
    assert_eq!(
        String::from_utf8(csv).unwrap(),
        "direction,seq,sent_us,received_us,bytes\nup,0,0,30000,100\nup,1,16000,50000,100\n\
         up,3,48000,90000,100\n"
    );
    // Delays 30, 34 and 42 ms: median 34, p95 42.
    let args = StreamOptions {
        rate_kbps: 50.0,
        payload_bytes: 100,
        duration: None,
        linger: 0.0,
        csv: None,
        json: true,
    };
    let s = summary("server", None, &args, &Sent::default(), &r);
    assert_eq!(
        (s.delay_p50_ms, s.delay_p95_ms, s.delay_max_ms),
        (34.0, 42.0, 42.0)
    );
    assert_eq!(s.lost_packets, 1);
    assert!((s.loss - 0.25).abs() < 1e-12);
    // 300 bytes over 60 ms of arrivals plus one 16 ms interval: 31.6 kbit/s.
    assert!(
        (s.received_kbps - 2.4 / 0.076).abs() < 1e-9,
        "{}",
        s.received_kbps
    );
}

#[test]
fn quantiles_by_nearest_rank() {
    let mut v: Vec<u64> = (1..=100).rev().collect();
    assert_eq!(quantile(&mut v, 0.95), 95);
    assert_eq!(quantile(&mut v, 0.5), 50);
    assert_eq!(quantile(&mut [], 0.5), 0);
    assert_eq!(quantile(&mut [7], 0.95), 7);
}

#[test]
fn a_client_and_a_server_stream_both_ways_on_loopback() {
    let server = UdpSocket::bind("127.0.0.1:0").unwrap();
    let addr = server.local_addr().unwrap();
    let args = StreamOptions {
        rate_kbps: 400.0,
        payload_bytes: 500,
        duration: Some(0.5),
        linger: 0.2,
        csv: None,
        json: true,
    };
    let a2 = args.clone();
    let t = std::thread::spawn(move || run_side("server", server, None, &a2));
    let client = UdpSocket::bind("127.0.0.1:0").unwrap();
    let client_addr = client.local_addr().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("client.csv");
    let c = run_side(
        "client",
        client,
        Some(addr),
        &StreamOptions {
            csv: Some(csv.clone()),
            ..args
        },
    )
    .unwrap();
    let s = t.join().unwrap().unwrap();
    // 400 kbit/s of 500-byte packets: one every 10 ms, about 50 in 0.5 s each way.
    for x in [&c, &s] {
        assert!((40..=52).contains(&x.sent_packets), "{x:?}");
        assert_eq!(x.sent_bytes, 500 * x.sent_packets);
        assert!((x.sent_kbps - 400.0).abs() < 40.0, "{x:?}");
    }
    // Loopback loses nothing; each side lingers long enough for the other's last packet.
    assert_eq!(s.received_packets, c.sent_packets, "{s:?}");
    assert_eq!(c.received_packets, s.sent_packets, "{c:?}");
    assert_eq!((s.lost_packets, s.bad_packets, s.duplicates), (0, 0, 0));
    assert!(s.delay_p95_ms < 50.0, "{s:?}");
    assert_eq!(s.peer, Some(client_addr.to_string()));
    assert_eq!(c.peer, Some(addr.to_string()));
    let rows = std::fs::read_to_string(&csv).unwrap();
    assert_eq!(rows.lines().count() as u64, 1 + c.received_packets);
    assert!(rows.lines().nth(1).unwrap().starts_with("down,0,"));
}
