//! A tunnel client survives its relay (sans-IO, simulated time): a restarted relay (a new
//! `TunnelServer` with the same key, no memory of the client) and a 35 s link cut are detected
//! as a dead peer 15 s after the client sent without an answer, the client redials with its
//! greeting, the relay gives it its address back, and packets flow both ways again; a first
//! handshake nobody answers still fails. And `isolate`: a client's packets to the relay host's
//! own addresses are dropped (ICMP to the tunnel address excepted), and reach the host without
//! it.

use std::net::{IpAddr, Ipv4Addr};

use crate::common::*;
use sprout_core::Instant;
use sprout_tunnel::client::{Reconnect, DEAD_PEER_TIMEOUT};
use sprout_tunnel::{ClientTunnelEvent, ServerTunnelEvent, TunnelServer};

const SECOND: u64 = 1_000_000;

/// Sends a UDP packet each way every 100 ms (client to the internet, the internet to the
/// client) until both arrive, for at most `limit_us`; how long it took (µs), or `None`.
fn flows_within(net: &mut Net, limit_us: u64) -> Option<u64> {
    let start = net.now;
    let mut seq = 0u32;
    while net.now - start <= limit_us {
        seq += 1;
        let tag = seq.to_be_bytes();
        let me = match net.client(0).assignment() {
            Some(a) => a.v4.unwrap().client,
            None => v4(2),
        };
        let now = Instant::from_micros(net.now);
        let up = udp4(me, 5000, INTERNET_V4, 53, &tag);
        net.client(0).handle_tun(now, &up);
        let down = udp4(INTERNET_V4, 53, me, 5000, &tag);
        net.server.handle_tun(now, &down);
        let (tun_before, server_before) = (net.peers[0].tun.len(), net.server_tun.len());
        net.run_for(100_000);
        let got_up = net.server_tun[server_before..].iter().any(|p| p == &up);
        let got_down = net.peers[0].tun[tun_before..].iter().any(|p| p == &down);
        if got_up && got_down {
            return Some(net.now - start);
        }
    }
    None
}

fn one_client(isolate: bool) -> (Net, sprout_secure::PrivateKey) {
    let server_key = key();
    let mut settings = server_settings(server_key.clone(), None);
    settings.isolate = isolate;
    let mut net = Net::new(settings);
    net.add_client(key());
    net.connect_all();
    assert!(flows_within(&mut net, SECOND).is_some(), "the tunnel works");
    (net, server_key)
}

fn reconnecting_events(net: &Net) -> usize {
    net.peers[0]
        .events
        .iter()
        .filter(|e| matches!(e, ClientTunnelEvent::Reconnecting(_)))
        .count()
}

fn failed(net: &Net) -> bool {
    net.peers[0]
        .events
        .iter()
        .any(|e| matches!(e, ClientTunnelEvent::Failed(_)))
}

#[test]
fn a_restarted_relay_is_redialled_and_packets_flow_again_within_20_s() {
    let (mut net, server_key) = one_client(false);
    let before = net.client(0).assignment();
    // The relay restarts: a new server with the same key and nothing of the old session.
    net.server = TunnelServer::new(server_settings(server_key, None)).unwrap();
    let took = flows_within(&mut net, 20 * SECOND).expect("packets flow within 20 s");
    println!(
        "packets flow again {:.1} s after the restart",
        took as f64 / 1e6
    );
    let dead = DEAD_PEER_TIMEOUT.as_micros();
    assert!(
        took >= dead - SECOND && took <= dead + 2 * SECOND,
        "took {took} µs"
    );
    let c = net.client(0);
    assert_eq!(c.reconnections(), 1);
    assert!(c.is_established() && !c.is_reconnecting());
    assert_eq!(c.assignment(), before, "the same address again");
    assert_eq!(reconnecting_events(&net), 1);
    assert!(!failed(&net));
    let established = net.peers[0]
        .events
        .iter()
        .filter(|e| **e == ClientTunnelEvent::Established)
        .count();
    assert_eq!(established, 2);
    assert!(net
        .server_events
        .iter()
        .any(|e| matches!(e, ServerTunnelEvent::ClientUp { .. })));
}

#[test]
fn a_35_s_link_cut_is_survived_and_the_old_session_replaced() {
    let (mut net, _) = one_client(false);
    let before = net.client(0).assignment();
    let old_id = match net.server_events.first() {
        Some(ServerTunnelEvent::ClientUp { id, .. }) => *id,
        e => panic!("{e:?}"),
    };
    net.cut = true;
    net.run_for(16 * SECOND);
    // Dead after 15 s: the client says so and no longer claims a session.
    assert!(net.client(0).is_reconnecting());
    assert!(!net.client(0).is_established());
    let now = Instant::from_micros(net.now);
    let status = net.client(0).status(now);
    assert!(status.reconnecting && status.sessions.is_empty());
    assert_eq!(reconnecting_events(&net), 1);
    net.run_for(19 * SECOND);
    let cut_at_most = net.datagrams_cut;
    net.cut = false;
    let took = flows_within(&mut net, 20 * SECOND).expect("packets flow within 20 s");
    println!(
        "packets flow again {:.1} s after the link came back",
        took as f64 / 1e6
    );
    // A redial is under way or at most REDIAL_BACKOFF_MAX away.
    assert!(took <= 11 * SECOND, "took {took} µs");
    assert!(cut_at_most > 0);
    assert_eq!(net.client(0).reconnections(), 1);
    let now = Instant::from_micros(net.now);
    let status = net.client(0).status(now);
    assert!(!status.reconnecting && status.reconnections == 1);
    assert_eq!(net.client(0).assignment(), before);
    assert!(!failed(&net));
    // The relay kept the old session through the cut; the new handshake replaced it.
    assert!(net.server_events.iter().any(|e| matches!(
        e,
        ServerTunnelEvent::ClientDown { id, .. } if *id == old_id
    )));
    assert_eq!(net.server.client_count(), 1);
}

#[test]
fn redials_back_off_and_never_give_up_while_the_relay_is_away() {
    let (mut net, server_key) = one_client(false);
    net.client(0).set_reconnect(Reconnect {
        dead_after: sprout_core::Duration::from_secs(2),
        ..Reconnect::default()
    });
    net.cut = true;
    // 10 minutes away: handshakes of 10 s (40 initiations each), then 5 s, then 10 s waits.
    net.run_for(300 * SECOND);
    let before = net.datagrams_cut;
    net.run_for(300 * SECOND);
    // Only the client's initiations by now (the relay closed the idle session long ago): one
    // 10 s handshake (4 a second) every 20 s: 600 in 5 min; it keeps trying.
    let sent = net.datagrams_cut - before;
    assert!(net.client(0).is_reconnecting() && !failed(&net));
    assert!(
        (500..=700).contains(&sent),
        "{sent} datagrams in the last 5 min"
    );
    net.cut = false;
    net.server = TunnelServer::new(server_settings(server_key, None)).unwrap();
    let took = flows_within(&mut net, 20 * SECOND).expect("packets flow within 20 s");
    assert!(took <= 11 * SECOND, "took {took} µs");
    assert_eq!(net.client(0).reconnections(), 1);
}

/// The redial schedule is sprout-secure's `Redial` (the one sprout-net's endpoint runs): with
/// the link cut, the relay is taken for dead 15 s after the client's first unanswered send and
/// redialled at once; each 10 s handshake nobody answers is followed by a wait of 5 s, then
/// 10 s, 10 s, ...; the link back, the next redial reconnects. Simulated time: no sockets, no
/// sleeps.
#[test]
fn redials_follow_the_shared_schedule_in_simulated_time() {
    let (mut net, _) = one_client(false);
    net.cut = true;
    let cut = net.now;
    // (start, length) of each wait between redials, in whole seconds after the cut.
    let mut waits: Vec<(u64, u64)> = Vec::new();
    let mut dead_at = None;
    while net.now - cut < 75 * SECOND {
        net.run_for(50_000);
        let now = Instant::from_micros(net.now);
        if dead_at.is_none() && reconnecting_events(&net) == 1 {
            dead_at = Some((net.now - cut) as f64 / 1e6);
        }
        let next = net
            .client(0)
            .poll_timeout()
            .expect("a deadline while redialling");
        let wait = (next - now).as_micros();
        if wait > SECOND
            && waits
                .last()
                .is_none_or(|&(s, l)| (net.now - cut) / SECOND > s + l)
        {
            let start = (net.now - cut) / SECOND;
            waits.push((start, (wait + SECOND / 2) / SECOND));
        }
    }
    let dead_at = dead_at.expect("the relay was taken for dead");
    assert!((15.0..=15.2).contains(&dead_at), "dead at {dead_at} s");
    assert_eq!(waits, [(25, 5), (40, 10), (60, 10)], "the waits");
    assert!(net.client(0).is_reconnecting() && !failed(&net));
    net.cut = false;
    let took = flows_within(&mut net, 15 * SECOND).expect("packets flow once the link is back");
    // The link came back 5 s into the third wait (70-80 s): the redial at 80 s finds it.
    assert!(took <= 6 * SECOND, "took {took} µs");
    assert_eq!(net.client(0).reconnections(), 1);
    assert!(!net.client(0).is_reconnecting());
}

#[test]
fn a_first_handshake_nobody_answers_still_fails() {
    let mut net = Net::new(server_settings(key(), None));
    net.add_client(key());
    net.cut = true;
    net.run_for(30 * SECOND);
    assert!(failed(&net), "{:?}", net.peers[0].events);
    assert_eq!(reconnecting_events(&net), 0);
}

/// What reaches the relay host's TUN device from the client, by destination.
fn reaches_host(net: &mut Net, packets: &[(&str, Vec<u8>)]) -> Vec<(String, bool)> {
    let me = net.client(0).assignment().unwrap().v4.unwrap().client;
    let mut out = Vec::new();
    for (name, p) in packets {
        let mut p = p.clone();
        // Re-source each packet from the client's address (and fix the IPv4 checksum).
        let me_bytes = me.octets();
        p[12..16].copy_from_slice(&me_bytes);
        p[10] = 0;
        p[11] = 0;
        let sum = header_checksum(&p[..20]);
        p[10..12].copy_from_slice(&sum.to_be_bytes());
        let before = net.server_tun.len();
        let now = Instant::from_micros(net.now);
        net.client(0).handle_tun(now, &p);
        net.run_for(200_000);
        let got = net.server_tun[before..].contains(&p);
        out.push((name.to_string(), got));
    }
    out
}

fn header_checksum(h: &[u8]) -> u16 {
    let mut sum: u32 = h
        .chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], c[1]])))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

#[test]
fn isolate_keeps_clients_from_the_relay_hosts_own_addresses() {
    let host_lan = Ipv4Addr::new(192, 168, 1, 10);
    let any = Ipv4Addr::UNSPECIFIED;
    let packets = [
        (
            "tcp to the tunnel address",
            tcp4(any, 40000, SERVER_V4, 22, b""),
        ),
        (
            "udp to the tunnel address",
            udp4(any, 40000, SERVER_V4, 53, b"q"),
        ),
        ("ping to the tunnel address", icmp4(any, SERVER_V4, 1)),
        ("tcp to a host address", tcp4(any, 40000, host_lan, 22, b"")),
        (
            "udp to loopback",
            udp4(any, 40000, Ipv4Addr::LOCALHOST, 53, b"q"),
        ),
        (
            "udp to broadcast",
            udp4(any, 40000, Ipv4Addr::BROADCAST, 67, b"q"),
        ),
        (
            "udp to the internet",
            udp4(any, 40000, INTERNET_V4, 53, b"q"),
        ),
    ];
    let expect_isolated = [false, false, true, false, false, false, true];

    let (mut open, _) = one_client(false);
    let seen = reaches_host(&mut open, &packets);
    assert!(
        seen.iter().all(|(_, got)| *got),
        "without isolate: {seen:?}"
    );
    assert_eq!(open.server.drops().to_relay_host, 0);

    let (mut closed, _) = one_client(true);
    closed
        .server
        .set_host_addresses([IpAddr::V4(host_lan), IpAddr::V4(Ipv4Addr::LOCALHOST)]);
    let seen = reaches_host(&mut closed, &packets);
    for ((name, got), want) in seen.iter().zip(expect_isolated) {
        assert_eq!(*got, want, "with isolate: {name}");
    }
    assert_eq!(closed.server.drops().to_relay_host, 5);
}
