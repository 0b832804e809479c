//! ECN (RFC 3168): negotiation in the handshake, ECT(0) on new data only, the receiver's ECE
//! echo until CWR, and the sender's one reduction per window of data with CWR on the next
//! new data.

use sprout_core::time::Instant;
use sprout_tcp::{CcKind, Segment, TcpConfig, TcpEndpoint};

fn ms(t: u64) -> Instant {
    Instant::from_millis(t)
}

fn drain(e: &mut TcpEndpoint, now: Instant) -> Vec<Segment> {
    std::iter::from_fn(|| e.poll_transmit(now)).collect()
}

fn cfg(ecn: bool) -> TcpConfig {
    TcpConfig {
        ecn,
        ..TcpConfig::default()
    }
}

/// Opens a connection between a client and a server wanting ECN as given; returns both,
/// established, the SYN and SYN-ACK, and what the client sent after it (its ACK and first
/// window, which the server took in).
fn open(client_ecn: bool, server_ecn: bool) -> (TcpEndpoint, TcpEndpoint, Segment, Segment) {
    let (c, s, syn, syn_ack, _) = open_and_send(client_ecn, server_ecn);
    (c, s, syn, syn_ack)
}

fn open_and_send(
    client_ecn: bool,
    server_ecn: bool,
) -> (TcpEndpoint, TcpEndpoint, Segment, Segment, Vec<Segment>) {
    let mut c = TcpEndpoint::connect(cfg(client_ecn), CcKind::Cubic, ms(0));
    let mut s = TcpEndpoint::listen(cfg(server_ecn), CcKind::Cubic, ms(0));
    c.set_bulk(true);
    let syn = drain(&mut c, ms(0)).remove(0);
    s.handle_segment(ms(10), &syn);
    let syn_ack = drain(&mut s, ms(10)).remove(0);
    c.handle_segment(ms(20), &syn_ack);
    let sent = drain(&mut c, ms(20));
    for seg in &sent {
        s.handle_segment(ms(30), seg);
    }
    assert!(c.is_established() && s.is_established());
    (c, s, syn, syn_ack, sent)
}

#[test]
fn the_handshake_negotiates_ecn_only_when_both_want_it() {
    let (c, s, syn, syn_ack) = open(true, true);
    assert!(syn.ecn.ece() && syn.ecn.cwr(), "an ECN-setup SYN");
    assert!(
        syn_ack.ecn.ece() && !syn_ack.ecn.cwr(),
        "an ECN-setup SYN-ACK"
    );
    assert!(c.stats().ecn && s.stats().ecn);
    for (a, b) in [(true, false), (false, true), (false, false)] {
        let (c, s, syn, syn_ack, sent) = open_and_send(a, b);
        assert_eq!(syn.ecn.ece(), a);
        assert!(!syn_ack.ecn.ece());
        assert!(!c.stats().ecn && !s.stats().ecn, "{a} {b}");
        assert!(sent.iter().all(|d| !d.ecn.ect()));
    }
}

#[test]
fn new_data_is_ect_and_acks_are_not() {
    let (_, mut s, _, _, sent) = open_and_send(true, true);
    let data: Vec<_> = sent.iter().filter(|d| d.is_data()).collect();
    assert_eq!(data.len(), 10);
    assert!(data.iter().all(|d| d.ecn.ect() && !d.ecn.cwr()));
    assert!(sent.iter().filter(|d| !d.is_data()).all(|d| !d.ecn.ect()));
    let acks = drain(&mut s, ms(30));
    assert!(acks.iter().all(|a| !a.ecn.ect() && !a.ecn.ece()));
}

#[test]
fn the_receiver_echoes_ece_until_cwr() {
    let mut r = TcpEndpoint::new(cfg(true), CcKind::Cubic, ms(0));
    let data = |seq: u64, ce: bool, cwr: bool| {
        let mut d = Segment {
            seq,
            len: 1448,
            ack: None,
            sent: ms(0),
            echo: None,
            one_way_delay: None,
            retransmission: false,
            syn: false,
            ecn: Default::default(),
        };
        d.ecn.set_ect(true);
        d.ecn.set_ce(ce);
        d.ecn.set_cwr(cwr);
        d
    };
    let mut echoes = Vec::new();
    let arrivals = [
        (false, false),
        (true, false),
        (false, false),
        (false, false),
        (false, true),
        (false, false),
    ];
    for (i, (ce, cwr)) in arrivals.into_iter().enumerate() {
        r.handle_segment(ms(10), &data(i as u64 * 1448, ce, cwr));
        let acks = drain(&mut r, ms(10));
        assert_eq!(acks.len(), 1);
        echoes.push(acks[0].ecn.ece());
    }
    assert_eq!(echoes, [false, true, true, true, false, false]);
    assert_eq!(r.stats().ce_segments_received, 1);
}

#[test]
fn the_sender_reduces_once_per_window_and_sets_cwr() {
    let mut a = TcpEndpoint::new(cfg(true), CcKind::Cubic, ms(0));
    let mut b = TcpEndpoint::new(cfg(true), CcKind::Cubic, ms(0));
    a.set_bulk(true);
    // Grow the window for a few round trips, unmarked.
    let mut now = 0;
    for _ in 0..3 {
        for d in drain(&mut a, ms(now)) {
            b.handle_segment(ms(now + 10), &d);
        }
        for ack in drain(&mut b, ms(now + 10)) {
            a.handle_segment(ms(now + 20), &ack);
        }
        now += 20;
    }
    let before = a.cwnd_bytes();
    let window = drain(&mut a, ms(now));
    assert!(window.len() > 20 && window.iter().all(|d| d.ecn.ect() && !d.ecn.cwr()));
    // The first two segments of the window are marked CE: the receiver echoes both.
    let mut acks = Vec::new();
    for (i, d) in window.iter().enumerate() {
        let mut d = d.clone();
        d.ecn.set_ce(i < 2);
        b.handle_segment(ms(now + 10), &d);
        acks.extend(drain(&mut b, ms(now + 10)));
    }
    assert!(acks.iter().all(|a| a.ecn.ece()), "ECE until CWR");
    // The first ECE reduces the window (Cubic's beta, 0.7); the others of the same window do
    // not; the next new data carries CWR, once.
    let mut sent = Vec::new();
    for (i, ack) in acks.iter().enumerate() {
        a.handle_segment(ms(now + 20), ack);
        if i == 0 {
            let cwnd = a.cwnd_bytes();
            assert!(
                cwnd < before && cwnd as f64 >= 0.69 * before as f64,
                "{before} -> {cwnd}"
            );
        }
        sent.extend(drain(&mut a, ms(now + 20)));
    }
    assert_eq!(a.stats().ecn_reductions, 1);
    assert!(a.cwnd_bytes() < before);
    assert_eq!(sent.iter().filter(|d| d.ecn.cwr()).count(), 1);
    assert!(sent[0].ecn.cwr() || sent.iter().position(|d| d.ecn.cwr()) == Some(0));
    // The receiver stops echoing once CWR reaches it.
    for d in &sent {
        b.handle_segment(ms(now + 30), d);
    }
    assert!(drain(&mut b, ms(now + 30)).iter().all(|a| !a.ecn.ece()));
    // A mark in the next window is answered again.
    assert_eq!(a.stats().fast_retransmits + a.stats().timeouts, 0);
}

#[test]
fn without_ecn_nothing_changes() {
    let (_, _, syn, _, sent) = open_and_send(false, false);
    assert!(!syn.ecn.ece() && !syn.ecn.cwr());
    assert!(sent.iter().all(|d| d.ecn == Default::default()));
}
