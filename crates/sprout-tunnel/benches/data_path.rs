//! The tunnel's data path per 1400-byte IP packet on one core: classify
//! ([`sprout_tunnel::packet::parse`]), queue ([`FlowQueue`] push + pop among eight flows with
//! a backlog), seal ([`sprout_secure::Client::seal`] of a core datagram carrying the packet)
//! and open ([`sprout_secure::Server::handle`] of it); each alone, then the four together (the
//! figure the issue asks for: at least 1 Gbit/s of 1400-byte packets, at most 11.2 µs per
//! packet), then the whole path through the Sprout core as well (classify, queue,
//! `Connection::send` + `poll_transmit`, seal, open, `handle_datagram` + `recv`, with the
//! feedback datagrams the receiving end sends back).
//!
//! ```text
//! cargo bench -p sprout-tunnel --bench data_path
//! ```
//!
//! Criterion prints time per packet and throughput in bytes/s; at the end a summary gives
//! each median as time per packet and Gbit/s of IP packets.
// criterion_main! generates a `main` that cannot carry a doc comment.
#![allow(missing_docs)]

use std::cell::RefCell;
use std::collections::HashSet;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use criterion::{black_box, Criterion, Throughput};
use sprout_core::wire::{self, Feedback, Header};
use sprout_core::{Config, Connection};
use sprout_secure::{
    AllowedClients, Client, ClientConfig, ClientReceived, Limits, PrivateKey, Server, ServerConfig,
    ServerReceived, SessionId,
};
use sprout_tunnel::flow_queue::{FlowQueue, FlowQueueConfig};
use sprout_tunnel::packet::parse;

/// IP packet size measured, in bytes.
const PACKET_BYTES: usize = 1400;
/// Flows the queue holds.
const FLOWS: usize = 8;
/// Packets queued per flow before measuring (the backlog the round robin works through).
const BACKLOG_PER_FLOW: usize = 4;

fn addr() -> SocketAddr {
    "192.0.2.1:40000".parse().unwrap()
}

/// A 1400-byte IPv4 TCP packet of flow `i` (source port 40000 + i).
fn ip_packet(i: usize) -> Vec<u8> {
    let mut p = vec![0u8; PACKET_BYTES];
    p[0] = 0x45;
    p[2..4].copy_from_slice(&(PACKET_BYTES as u16).to_be_bytes());
    p[6] = 0x40; // don't fragment
    p[8] = 64;
    p[9] = 6; // TCP
    p[12..16].copy_from_slice(&[10, 77, 0, 2]);
    p[16..20].copy_from_slice(&[198, 51, 100, 10]);
    p[20..22].copy_from_slice(&(40_000 + i as u16).to_be_bytes());
    p[22..24].copy_from_slice(&443u16.to_be_bytes());
    p[32] = 0x50; // data offset 5
    for (k, b) in p[40..].iter_mut().enumerate() {
        *b = (k * 7 + i) as u8;
    }
    p
}

/// Keys that never expire or roll over during a benchmark (millions of datagrams, hours of
/// simulated time in the core path).
fn long_limits() -> Limits {
    Limits {
        rekey_after: sprout_core::Duration::from_micros(u64::MAX / 4),
        rekey_after_messages: u64::MAX / 4,
        reject_after: sprout_core::Duration::from_micros(u64::MAX / 2),
        reject_after_messages: u64::MAX / 2,
        ..Limits::default()
    }
}

/// A server and a client with an established session (initiation, response, keepalive).
fn pair() -> (Server, Client, SessionId) {
    let client_key = PrivateKey::generate();
    let allowed = AllowedClients::Keys(
        [client_key.public_key()]
            .into_iter()
            .collect::<HashSet<_>>(),
    );
    let mut config = ServerConfig::new(PrivateKey::generate(), allowed);
    config.limits = long_limits();
    config.idle_timeout = sprout_core::Duration::from_micros(u64::MAX / 4);
    let mut server = Server::new(config);
    let mut client = Client::new(
        ClientConfig {
            private_key: client_key,
            server_key: server.public_key(),
            limits: long_limits(),
        },
        sprout_core::Instant::from_micros(0),
        b"",
    )
    .unwrap();
    let (mut buf, mut pt) = (Vec::new(), Vec::new());
    assert!(client.poll_transmit(sprout_core::Instant::from_micros(0), &mut buf));
    assert_eq!(
        server.handle(sprout_core::Instant::from_micros(0), addr(), &buf, &mut pt),
        ServerReceived::Control
    );
    server.poll_transmit(&mut buf).unwrap();
    assert_eq!(
        client.handle(sprout_core::Instant::from_micros(0), &buf, &mut pt),
        ClientReceived::Established
    );
    assert!(client.poll_transmit(sprout_core::Instant::from_micros(0), &mut buf));
    let id = match server.handle(sprout_core::Instant::from_micros(0), addr(), &buf, &mut pt) {
        ServerReceived::NewSession { id, .. } => id,
        other => panic!("{other:?}"),
    };
    (server, client, id)
}

/// A core data header as a sender mid-transfer writes it (with an 8-tick forecast).
fn core_header(seq: u64) -> Header {
    Header {
        seq,
        throwaway: seq.saturating_sub(100_000),
        time_to_next_us: 0,
        sent_us: 1_000_000 + seq,
        heartbeat: false,
        app_limited: false,
        feedback: Some(Feedback::new(77, seq / 2, &[3, 7, 11, 15, 19, 23, 27, 31])),
    }
}

/// A queue of eight flows with four packets each queued, and the packets to push.
struct QueueBench {
    queue: FlowQueue,
    packets: Vec<Vec<u8>>,
    next: usize,
    /// A buffer recycled from pop to push (a TUN read fills it), so that nothing allocates.
    spare: Vec<u8>,
    now_us: u64,
}

impl QueueBench {
    fn new() -> QueueBench {
        let packets: Vec<Vec<u8>> = (0..FLOWS).map(ip_packet).collect();
        let mut queue = FlowQueue::new(FlowQueueConfig::default());
        for _ in 0..BACKLOG_PER_FLOW {
            for p in &packets {
                let flow = parse(p).unwrap().flow;
                assert_eq!(
                    queue.push(sprout_core::Instant::from_micros(0), flow, p.clone()),
                    0
                );
            }
        }
        QueueBench {
            queue,
            packets,
            next: 0,
            spare: Vec::with_capacity(PACKET_BYTES),
            now_us: 0,
        }
    }

    /// The next arriving packet copied into the spare buffer (as a TUN read would).
    fn arrive(&mut self) -> Vec<u8> {
        let mut buf = std::mem::take(&mut self.spare);
        buf.clear();
        buf.extend_from_slice(&self.packets[self.next]);
        self.next = (self.next + 1) % FLOWS;
        self.now_us += 10;
        buf
    }

    /// Classify and queue `buf`, then take the next packet in round-robin order.
    fn classify_queue(&mut self, buf: Vec<u8>) -> Vec<u8> {
        let info = parse(black_box(&buf)).expect("a valid packet");
        let dropped = self.queue.push(
            sprout_core::Instant::from_micros(self.now_us),
            info.flow,
            buf,
        );
        debug_assert_eq!(dropped, 0);
        self.queue
            .pop(sprout_core::Instant::from_micros(self.now_us))
            .expect("a backlog")
    }
}

/// Median per-iteration times (ns) recorded by [`measure`], by benchmark name.
type Medians = RefCell<Vec<(String, f64)>>;

/// Runs a criterion benchmark whose routine handles `iters` packets and returns the time it
/// measured; records the median of its samples (ns per packet).
fn measure(
    c: &mut Criterion,
    medians: &Medians,
    name: &str,
    mut routine: impl FnMut(u64) -> Duration,
) {
    let samples = RefCell::new(Vec::new());
    let mut group = c.benchmark_group("data_path");
    group.throughput(Throughput::Bytes(PACKET_BYTES as u64));
    group.bench_function(name, |b| {
        b.iter_custom(|iters| {
            let t = routine(iters);
            samples
                .borrow_mut()
                .push(t.as_nanos() as f64 / iters.max(1) as f64);
            t
        })
    });
    group.finish();
    // The last 100 samples are criterion's measurement (the earlier ones its warm-up).
    let mut all = samples.into_inner();
    let mut s = all.split_off(all.len().saturating_sub(100));
    s.sort_by(f64::total_cmp);
    // Nothing when a filter on the command line skipped this benchmark.
    if let Some(&median) = s.get(s.len() / 2) {
        medians.borrow_mut().push((name.to_string(), median));
    }
}

fn classify(c: &mut Criterion, medians: &Medians) {
    let packet = ip_packet(3);
    measure(c, medians, "classify (packet::parse)", |iters| {
        let start = Instant::now();
        for _ in 0..iters {
            black_box(parse(black_box(&packet)).unwrap());
        }
        start.elapsed()
    });
}

fn queue(c: &mut Criterion, medians: &Medians) {
    let mut q = QueueBench::new();
    let flows: Vec<_> = q.packets.iter().map(|p| parse(p).unwrap().flow).collect();
    measure(
        c,
        medians,
        "queue (FlowQueue push + pop, 8 flows)",
        |iters| {
            let start = Instant::now();
            for _ in 0..iters {
                let flow = flows[q.next];
                let buf = q.arrive();
                q.queue
                    .push(sprout_core::Instant::from_micros(q.now_us), flow, buf);
                q.spare = black_box(
                    q.queue
                        .pop(sprout_core::Instant::from_micros(q.now_us))
                        .unwrap(),
                );
            }
            start.elapsed()
        },
    );
}

fn seal(c: &mut Criterion, medians: &Medians) {
    let (_server, mut client, _) = pair();
    let mut core = Vec::with_capacity(1600);
    wire::encode(&core_header(1), &ip_packet(0), &mut core);
    let mut sealed = Vec::with_capacity(1600);
    measure(c, medians, "seal (Client::seal)", |iters| {
        let start = Instant::now();
        for _ in 0..iters {
            client
                .seal(
                    sprout_core::Instant::from_micros(1),
                    black_box(&core),
                    &mut sealed,
                )
                .unwrap();
            black_box(&sealed);
        }
        start.elapsed()
    });
}

fn open(c: &mut Criterion, medians: &Medians) {
    let (mut server, mut client, id) = pair();
    let mut core = Vec::with_capacity(1600);
    wire::encode(&core_header(1), &ip_packet(0), &mut core);
    let mut pt = Vec::with_capacity(1600);
    let mut batch: Vec<Vec<u8>> = (0..1024).map(|_| Vec::with_capacity(1600)).collect();
    measure(c, medians, "open (Server::handle)", |iters| {
        let mut total = Duration::ZERO;
        let mut left = iters;
        while left > 0 {
            let n = left.min(batch.len() as u64) as usize;
            for d in &mut batch[..n] {
                client
                    .seal(sprout_core::Instant::from_micros(1), &core, d)
                    .unwrap();
            }
            let start = Instant::now();
            for d in &batch[..n] {
                let r = server.handle(
                    sprout_core::Instant::from_micros(1),
                    addr(),
                    black_box(d),
                    &mut pt,
                );
                assert_eq!(r, ServerReceived::Data { id });
            }
            total += start.elapsed();
            left -= n as u64;
        }
        total
    });
}

fn data_path(c: &mut Criterion, medians: &Medians) {
    let (mut server, mut client, id) = pair();
    let mut q = QueueBench::new();
    let mut core = Vec::with_capacity(1600);
    let mut sealed = Vec::with_capacity(1600);
    let mut pt = Vec::with_capacity(1600);
    let mut seq = 0u64;
    measure(
        c,
        medians,
        "classify + queue + seal + open (the data path)",
        |iters| {
            let start = Instant::now();
            for _ in 0..iters {
                let buf = q.arrive();
                let packet = q.classify_queue(buf);
                seq += 1500;
                wire::encode(&core_header(seq), &packet, &mut core);
                client
                    .seal(sprout_core::Instant::from_micros(1), &core, &mut sealed)
                    .unwrap();
                let r = server.handle(
                    sprout_core::Instant::from_micros(1),
                    addr(),
                    black_box(&sealed),
                    &mut pt,
                );
                assert_eq!(r, ServerReceived::Data { id });
                q.spare = packet;
            }
            start.elapsed()
        },
    );
}

/// Both ends through the Sprout core: the client's connection sends what the queue gives it,
/// the server's receives it and answers with its forecasts. Time is simulated: when the
/// sender's window is closed, the clock moves to the connections' next timeout.
struct CorePath {
    server: Server,
    client: Client,
    id: SessionId,
    /// The client's end of the Sprout connection (sends the packets).
    sender: Connection,
    /// The server's end (receives them, sends forecasts back).
    receiver: Connection,
    q: QueueBench,
    now_us: u64,
    core: Vec<u8>,
    sealed: Vec<u8>,
    pt: Vec<u8>,
}

impl CorePath {
    fn new() -> CorePath {
        let (server, client, id) = pair();
        let config = Config {
            // A 1400-byte packet after the core's largest header.
            max_datagram_bytes: PACKET_BYTES + wire::header_bytes(8),
            ..Config::default()
        };
        CorePath {
            server,
            client,
            id,
            sender: Connection::new(config.clone(), sprout_core::Instant::from_micros(0)).unwrap(),
            receiver: Connection::new(config, sprout_core::Instant::from_micros(0)).unwrap(),
            q: QueueBench::new(),
            now_us: 0,
            core: Vec::with_capacity(1600),
            sealed: Vec::with_capacity(1600),
            pt: Vec::with_capacity(1600),
        }
    }

    /// One packet from the TUN device at the client to the TUN device at the server.
    fn step(&mut self) {
        let buf = self.q.arrive();
        let packet = self.q.classify_queue(buf);
        self.sender.send(packet);
        for _ in 0..100_000 {
            let now = self.now_us;
            self.sender
                .handle_timeout(sprout_core::Instant::from_micros(now));
            self.receiver
                .handle_timeout(sprout_core::Instant::from_micros(now));
            let sent = self
                .sender
                .poll_transmit(sprout_core::Instant::from_micros(now), &mut self.core)
                .is_some();
            if sent {
                self.client
                    .seal(
                        sprout_core::Instant::from_micros(now),
                        &self.core,
                        &mut self.sealed,
                    )
                    .unwrap();
                let r = self.server.handle(
                    sprout_core::Instant::from_micros(now),
                    addr(),
                    &self.sealed,
                    &mut self.pt,
                );
                assert_eq!(r, ServerReceived::Data { id: self.id });
                let _ = self
                    .receiver
                    .handle_datagram(sprout_core::Instant::from_micros(now), &self.pt);
            }
            // The receiver's forecasts (heartbeats) back to the sender.
            while self
                .receiver
                .poll_transmit(sprout_core::Instant::from_micros(now), &mut self.core)
                .is_some()
            {
                self.server
                    .seal(
                        sprout_core::Instant::from_micros(now),
                        self.id,
                        &self.core,
                        &mut self.sealed,
                    )
                    .unwrap();
                if self.client.handle(
                    sprout_core::Instant::from_micros(now),
                    &self.sealed,
                    &mut self.pt,
                ) == ClientReceived::Data
                {
                    let _ = self
                        .sender
                        .handle_datagram(sprout_core::Instant::from_micros(now), &self.pt);
                }
            }
            if let Some(p) = self.receiver.recv() {
                debug_assert_eq!(p.len(), PACKET_BYTES);
                self.q.spare = p;
                return;
            }
            if !sent {
                let next = [self.sender.poll_timeout(), self.receiver.poll_timeout()]
                    .into_iter()
                    .flatten()
                    .min()
                    .unwrap_or(sprout_core::Instant::from_micros(now + 1_000));
                self.now_us = (next.max(sprout_core::Instant::from_micros(now + 1))).as_micros();
            }
        }
        panic!("the packet did not get through in 100 000 steps");
    }
}

fn core_path(c: &mut Criterion, medians: &Medians) {
    let mut p = CorePath::new();
    // Mid-transfer: forecasts established.
    for _ in 0..5_000 {
        p.step();
    }
    let start_us = p.now_us;
    measure(
        c,
        medians,
        "whole path through the core (classify, queue, send + poll_transmit, seal, open, handle_datagram + recv, feedback back)",
        |iters| {
            let start = Instant::now();
            for _ in 0..iters {
                p.step();
            }
            start.elapsed()
        },
    );
    let s = p.receiver.stats();
    println!(
        "core path: {} packets received over {:.0} s of simulated time ({:.1} Mbit/s simulated), {} datagrams back",
        s.app_bytes_received / PACKET_BYTES as u64,
        (p.now_us - start_us) as f64 / 1e6,
        s.app_bytes_received as f64 * 8.0 / (p.now_us.max(1) as f64),
        s.datagrams_sent,
    );
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    let medians = Medians::default();
    classify(&mut c, &medians);
    queue(&mut c, &medians);
    seal(&mut c, &medians);
    open(&mut c, &medians);
    data_path(&mut c, &medians);
    core_path(&mut c, &medians);
    c.final_summary();
    let medians = medians.into_inner();
    println!();
    println!("Per {PACKET_BYTES}-byte IP packet, one core (median of criterion's samples):");
    for (name, ns) in &medians {
        let gbit = PACKET_BYTES as f64 * 8.0 / ns;
        println!("  {ns:>9.1} ns/packet  {gbit:>7.2} Gbit/s  {name}");
    }
    let target_ns = PACKET_BYTES as f64 * 8.0; // 1 Gbit/s = 11.2 µs per 1400-byte packet
    if let Some((_, ns)) = medians
        .iter()
        .find(|(n, _)| n.starts_with("classify + queue + seal + open"))
    {
        println!(
            "  data path (classify + queue + seal + open): {:.2} µs per packet against the 1 Gbit/s target of {:.1} µs: {}",
            ns / 1000.0,
            target_ns / 1000.0,
            if *ns <= target_ns { "met" } else { "NOT met" }
        );
    }
}
