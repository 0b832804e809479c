//! The isolation property of the tunnel (paper §5.7) in simulation: one client and the relay
//! over the trace-driven link (the paper's Cellsim, `sprout_link::Link`, 20 ms each way,
//! unlimited drop-tail queue). Through the tunnel run a greedy downlink flow that offers far
//! more than the link carries (20 Mbit/s of 1300-byte UDP packets) and an interactive flow of
//! 500 kbit/s each way (200-byte UDP packets, each stamped with its sending time, so its
//! one-way delay is measured from the sender's TUN device to the receiver's).
//!
//! Without the tunnel the greedy flow would fill the link's queue without bound and every
//! interactive packet would wait behind it for seconds; through it, the per-flow queue keeps
//! the interactive flow's delay near the link's own, while the greedy flow still gets a good
//! share of the link.

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;

use crate::common::*;
use sprout_core::{Config, Instant};
use sprout_link::{Link, LinkConfig, LinkEvent, Trace};
use sprout_secure::{ClientConfig, Limits};
use sprout_tunnel::{ClientSettings, FlowQueueConfig, TunnelClient, TunnelServer};

/// When the flows start and stop (µs): the first second is for the handshake.
const START_US: u64 = 1_000_000;
const END_US: u64 = 61_000_000;
/// Packets sent in the last second before the end are not judged (still in flight).
const JUDGED_UNTIL_US: u64 = END_US - 1_000_000;

const GREEDY_BYTES: usize = 1300;
/// 20 Mbit/s of 1300-byte packets: one every 520 µs.
const GREEDY_EVERY_US: u64 = (GREEDY_BYTES as u64 * 8 * 1_000_000) / 20_000_000;
const CALL_BYTES: usize = 200;
/// 500 kbit/s of 200-byte packets: one every 3200 µs.
const CALL_EVERY_US: u64 = (CALL_BYTES as u64 * 8 * 1_000_000) / 500_000;

const GREEDY_PORT: u16 = 6001;
const CALL_CLIENT_PORT: u16 = 7001;
const CALL_PEER_PORT: u16 = 7000;
/// The interactive flow's peer on the server's side.
const CALL_PEER: Ipv4Addr = Ipv4Addr::new(198, 51, 100, 20);
/// Outer IPv4 + UDP header of a tunnel datagram on the link (bytes).
const OUTER_BYTES: u32 = 28;

/// A stamped packet: sequence number and sending time in the UDP payload.
fn stamped(src: (Ipv4Addr, u16), dst: (Ipv4Addr, u16), seq: u64, now: u64, len: usize) -> Vec<u8> {
    let mut payload = vec![0u8; len - 28];
    payload[..8].copy_from_slice(&seq.to_be_bytes());
    payload[8..16].copy_from_slice(&now.to_be_bytes());
    udp4(src.0, src.1, dst.0, dst.1, &payload)
}

/// (destination port, sending time) of a stamped UDP packet.
fn read_stamp(p: &[u8]) -> (u16, u64) {
    let dport = u16::from_be_bytes([p[22], p[23]]);
    let sent = u64::from_be_bytes(p[28 + 8..28 + 16].try_into().unwrap());
    (dport, sent)
}

/// One direction of the interactive flow.
#[derive(Default)]
struct Call {
    offered_bytes: u64,
    delivered_bytes: u64,
    delays_us: Vec<u64>,
}

impl Call {
    /// The `q`-th percentile of the one-way delays (ms).
    fn percentile_ms(&mut self, q: usize) -> f64 {
        self.delays_us.sort_unstable();
        if self.delays_us.is_empty() {
            return f64::INFINITY;
        }
        let i = (self.delays_us.len() * q).div_ceil(100).max(1) - 1;
        self.delays_us[i] as f64 / 1000.0
    }

    /// Delivered bytes over offered bytes.
    fn share(&self) -> f64 {
        self.delivered_bytes as f64 / self.offered_bytes.max(1) as f64
    }
}

/// What a run measured.
struct Figures {
    link_mbps: f64,
    greedy_mbps: f64,
    down: Call,
    up: Call,
    over_cap_drops: (u64, u64),
}

/// Runs the interactive flow (and the greedy one if `greedy`) through the tunnel over
/// `down`/`up` traces, with or without probing at both ends, and prints the figures.
fn run_with(
    name: &str,
    down_trace: Arc<Trace>,
    up_trace: Arc<Trace>,
    greedy: bool,
    probe: bool,
) -> Figures {
    run_at(
        name,
        down_trace,
        up_trace,
        greedy,
        probe,
        Config::default().confidence,
    )
}

/// As [`run_with`], at forecast confidence `confidence` at both ends.
fn run_at(
    name: &str,
    down_trace: Arc<Trace>,
    up_trace: Arc<Trace>,
    greedy: bool,
    probe: bool,
    confidence: f64,
) -> Figures {
    let mut pair = Pair::new(down_trace, up_trace, greedy, probe, confidence);
    let mut offered_at_start = 0;
    let mut now = 0u64;
    let mut steps = 0u64;
    loop {
        steps += 1;
        pair.deliver(now);
        if now == START_US {
            assert!(
                pair.client.assignment().is_some(),
                "no assignment after 1 s"
            );
            offered_at_start = pair.down.stats().bytes_offered;
        }
        pair.offer(now);
        pair.exchange(now);
        pair.collect(now);
        if now >= END_US {
            break;
        }
        now = pair.next_time(now);
    }
    pair.figures(name, now, steps, offered_at_start)
}

/// The two ends of a tunnel joined by a link each way, and the flows through them.
struct Pair {
    down: Link<Vec<u8>>,
    up: Link<Vec<u8>>,
    server: TunnelServer,
    client: TunnelClient,
    client_addr: SocketAddr,
    /// The client's tunnel address.
    me: Ipv4Addr,
    /// When each flow sends its next packet (µs).
    next_greedy: u64,
    next_down: u64,
    next_up: u64,
    seq: u64,
    greedy_offered: u64,
    greedy_delivered: u64,
    call_down: Call,
    call_up: Call,
    buf: Vec<u8>,
    arrivals: Vec<Vec<u8>>,
}

impl Pair {
    fn new(
        down_trace: Arc<Trace>,
        up_trace: Arc<Trace>,
        greedy: bool,
        probe: bool,
        confidence: f64,
    ) -> Pair {
        let core = Config {
            confidence,
            ..Config::default()
        };
        let client_key = key();
        let mut settings = server_settings(key(), Some(&[client_key.public_key()]));
        settings.probe = probe;
        settings.core = core.clone();
        let server = TunnelServer::new(settings).unwrap();
        let client = TunnelClient::new(
            ClientSettings {
                secure: ClientConfig {
                    private_key: client_key,
                    server_key: server.public_key(),
                    limits: Limits::default(),
                },
                core,
                queue: FlowQueueConfig::default(),
                probe,
            },
            Instant::from_micros(0),
        )
        .unwrap();
        Pair {
            down: Link::new(down_trace, LinkConfig::default()),
            up: Link::new(up_trace, LinkConfig::default()),
            server,
            client,
            client_addr: "192.0.2.10:40000".parse().unwrap(),
            me: v4(2),
            next_greedy: if greedy { START_US } else { u64::MAX },
            next_down: START_US,
            next_up: START_US + 1600,
            seq: 0,
            greedy_offered: 0,
            greedy_delivered: 0,
            call_down: Call::default(),
            call_up: Call::default(),
            buf: Vec::new(),
            arrivals: Vec::new(),
        }
    }

    /// The links deliver what is due.
    fn deliver(&mut self, now: u64) {
        let arrivals = &mut self.arrivals;
        self.down.advance(Instant::from_micros(now), &mut |ev| {
            if let LinkEvent::Delivered(d) = ev {
                arrivals.push(d.payload);
            }
        });
        for d in arrivals.drain(..) {
            self.client.handle_udp(Instant::from_micros(now), &d);
        }
        self.up.advance(Instant::from_micros(now), &mut |ev| {
            if let LinkEvent::Delivered(d) = ev {
                arrivals.push(d.payload);
            }
        });
        for d in arrivals.drain(..) {
            self.server
                .handle_udp(Instant::from_micros(now), self.client_addr, &d);
        }
    }

    /// The applications offer their packets.
    fn offer(&mut self, now: u64) {
        let me = self.me;
        while self.next_greedy <= now && self.next_greedy < END_US {
            let p = stamped(
                (INTERNET_V4, 5001),
                (me, GREEDY_PORT),
                self.seq,
                self.next_greedy,
                GREEDY_BYTES,
            );
            self.seq += 1;
            self.server.handle_tun(Instant::from_micros(now), &p);
            if self.next_greedy < JUDGED_UNTIL_US {
                self.greedy_offered += p.len() as u64;
            }
            self.next_greedy += GREEDY_EVERY_US;
        }
        while self.next_down <= now && self.next_down < END_US {
            let p = stamped(
                (CALL_PEER, CALL_PEER_PORT),
                (me, CALL_CLIENT_PORT),
                self.seq,
                self.next_down,
                CALL_BYTES,
            );
            self.seq += 1;
            self.server.handle_tun(Instant::from_micros(now), &p);
            if self.next_down < JUDGED_UNTIL_US {
                self.call_down.offered_bytes += p.len() as u64;
            }
            self.next_down += CALL_EVERY_US;
        }
        while self.next_up <= now && self.next_up < END_US {
            let p = stamped(
                (me, CALL_CLIENT_PORT),
                (CALL_PEER, CALL_PEER_PORT),
                self.seq,
                self.next_up,
                CALL_BYTES,
            );
            self.seq += 1;
            self.client.handle_tun(Instant::from_micros(now), &p);
            if self.next_up < JUDGED_UNTIL_US {
                self.call_up.offered_bytes += p.len() as u64;
            }
            self.next_up += CALL_EVERY_US;
        }
    }

    /// Timers, then everything the two ends send.
    fn exchange(&mut self, now: u64) {
        self.server.handle_timeout(Instant::from_micros(now));
        self.client.handle_timeout(Instant::from_micros(now));
        while let Some(to) = self
            .server
            .poll_udp(Instant::from_micros(now), &mut self.buf)
        {
            assert_eq!(to, self.client_addr);
            self.down.send(
                Instant::from_micros(now),
                self.buf.len() as u32 + OUTER_BYTES,
                self.buf.clone(),
            );
        }
        while self
            .client
            .poll_udp(Instant::from_micros(now), &mut self.buf)
        {
            self.up.send(
                Instant::from_micros(now),
                self.buf.len() as u32 + OUTER_BYTES,
                self.buf.clone(),
            );
        }
    }

    /// What comes out of the tunnel.
    fn collect(&mut self, now: u64) {
        while let Some(p) = self.client.poll_tun() {
            let (port, sent) = read_stamp(&p);
            if sent >= JUDGED_UNTIL_US {
                continue;
            }
            match port {
                GREEDY_PORT => self.greedy_delivered += p.len() as u64,
                CALL_CLIENT_PORT => {
                    self.call_down.delivered_bytes += p.len() as u64;
                    self.call_down.delays_us.push(now - sent);
                }
                other => panic!("unexpected port {other}"),
            }
        }
        while let Some(p) = self.server.poll_tun() {
            let (port, sent) = read_stamp(&p);
            assert_eq!(port, CALL_PEER_PORT);
            if sent < JUDGED_UNTIL_US {
                self.call_up.delivered_bytes += p.len() as u64;
                self.call_up.delays_us.push(now - sent);
            }
        }
    }

    /// On to the next thing that happens (µs).
    fn next_time(&mut self, now: u64) -> u64 {
        let mut next = END_US;
        for t in [
            self.down.next_event().map(Instant::as_micros),
            self.up.next_event().map(Instant::as_micros),
            self.server.poll_timeout().map(Instant::as_micros),
            self.client.poll_timeout().map(Instant::as_micros),
            Some(self.next_greedy),
            Some(self.next_down),
            Some(self.next_up),
            Some(START_US),
        ]
        .into_iter()
        .flatten()
        {
            if t > now {
                next = next.min(t);
            }
        }
        next.max(now + 1)
    }

    /// The figures of the run, printed.
    fn figures(mut self, name: &str, now: u64, steps: u64, offered_at_start: u64) -> Figures {
        let secs = (JUDGED_UNTIL_US - START_US) as f64 / 1e6;
        let link_bytes = self.down.stats().bytes_offered - offered_at_start;
        let link_mbps = link_bytes as f64 * 8.0 / ((END_US - START_US) as f64 / 1e6) / 1e6;
        let greedy_mbps = self.greedy_delivered as f64 * 8.0 / secs / 1e6;
        let server_status = self.server.status(Instant::from_micros(now));
        let client_status = self.client.status(Instant::from_micros(now));
        assert_eq!(server_status.drops.total(), 0, "{:?}", server_status.drops);
        assert_eq!(client_status.drops.total(), 0, "{:?}", client_status.drops);
        let over_cap_drops = (
            server_status.sessions[0].queue.drops.over_cap,
            client_status.sessions[0].queue.drops.over_cap,
        );
        println!("{name}, {secs:.0} s judged ({steps} simulation steps):");
        println!(
            "  downlink capacity {link_mbps:.2} Mbit/s; greedy flow offered {:.1} Mbit/s, got {greedy_mbps:.2} Mbit/s ({:.0}% of the link)",
            self.greedy_offered as f64 * 8.0 / secs / 1e6,
            100.0 * greedy_mbps / link_mbps
        );
        for (dir, call) in [("down", &mut self.call_down), ("up  ", &mut self.call_up)] {
            println!(
                "  interactive {dir}: {:.1}% of {:.0} kbit/s delivered; one-way delay median {:.0} ms, 95% {:.0} ms",
                100.0 * call.share(),
                call.offered_bytes as f64 * 8.0 / secs / 1e3,
                call.percentile_ms(50),
                call.percentile_ms(95),
            );
        }
        println!(
            "  dropped over the forecast cap: {} packets toward the client, {} toward the server",
            over_cap_drops.0, over_cap_drops.1
        );
        Figures {
            link_mbps,
            greedy_mbps,
            down: self.call_down,
            up: self.call_up,
            over_cap_drops,
        }
    }
}

/// A constant 10 Mbit/s link both ways: the interactive flow gets all it offers at a delay
/// near the link's own (20 ms propagation), the greedy flow most of the rest.
#[test]
fn isolation_on_a_constant_link() {
    let trace = Arc::new(sprout_link::constant_rate_trace("10 Mbit/s", 10.0, 10.0).unwrap());
    let mut f = run_with(
        "constant 10 Mbit/s link, probing",
        trace.clone(),
        trace,
        true,
        true,
    );
    for call in [&mut f.down, &mut f.up] {
        assert!(call.share() >= 0.9, "interactive got {:.3}", call.share());
        let p95 = call.percentile_ms(95);
        assert!(p95 < 150.0, "interactive 95% delay {p95} ms");
    }
    // Probing pads the uplink, which only the call uses: the downlink's feedback then rides
    // a queue of up to 100 ms, and its sender is more cautious (85% of the link without
    // probing, about half with it).
    assert!(
        f.greedy_mbps >= 0.45 * f.link_mbps,
        "greedy flow {:.2} of {:.2} Mbit/s",
        f.greedy_mbps,
        f.link_mbps
    );
    // The greedy flow's excess is dropped at the sender's queue, not in the link.
    assert!(f.over_cap_drops.0 > 0);
}

/// Verizon-LTE-short (the paper's §5.7 link), run as the emulated experiment runs it (probing,
/// confidence 0.75): the interactive flow's 95% delay stays well under a second and it gets
/// at least 90% of what it offers; the greedy flow gets a good share.
#[test]
fn isolation_on_verizon_lte() {
    let Some(down) = sprout_link::testdata::require("traces/Verizon-LTE-short.down") else {
        return;
    };
    let Some(up) = sprout_link::testdata::require("traces/Verizon-LTE-short.up") else {
        return;
    };
    let down = Arc::new(Trace::load(down).unwrap());
    let up = Arc::new(Trace::load(up).unwrap());
    // As the emulated experiment runs it: probing, confidence 0.75.
    let mut f = run_at(
        "Verizon-LTE-short, probing, 75%",
        down,
        up,
        true,
        true,
        0.75,
    );
    for call in [&mut f.down, &mut f.up] {
        let p95 = call.percentile_ms(95);
        // Behind an unlimited drop-tail queue the greedy flow would delay it by seconds.
        assert!(p95 < 1000.0, "interactive 95% delay {p95} ms");
        assert!(call.share() >= 0.9, "interactive got {:.3}", call.share());
    }
    assert!(
        f.greedy_mbps >= 0.3 * f.link_mbps,
        "greedy flow {:.2} of {:.2} Mbit/s",
        f.greedy_mbps,
        f.link_mbps
    );
}

/// The interactive flow alone on an idle constant 10 Mbit/s link. Before the core scored an
/// application-limited sender's ticks as lower bounds, each direction without probing was
/// forecast from the flow's own 500 kbit/s, the cautious forecast was below that, and the cap
/// dropped part of it (probing, padding while active, made the receivers measure the link).
/// Now the flow gets all it offers either way, within the delay target.
#[test]
fn a_light_flow_gets_through_with_or_without_probing() {
    let trace = Arc::new(sprout_link::constant_rate_trace("10 Mbit/s", 10.0, 10.0).unwrap());
    let mut plain = run_with(
        "alone, no probing",
        trace.clone(),
        trace.clone(),
        false,
        false,
    );
    let mut probed = run_with("alone, probing", trace.clone(), trace, false, true);
    for (label, d) in [
        ("no probing, down", &mut plain.down),
        ("no probing, up", &mut plain.up),
        ("probing, down", &mut probed.down),
        ("probing, up", &mut probed.up),
    ] {
        assert!(
            d.share() >= 0.99,
            "{label}: interactive got {:.3}",
            d.share()
        );
        let p95 = d.percentile_ms(95);
        assert!(p95 < 150.0, "{label}: interactive 95% delay {p95} ms");
    }
}
