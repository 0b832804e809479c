//! Costs of the security layer: seal plus open of a 1400-byte datagram, the whole
//! per-datagram path of a server (open, the Sprout core, seal) mid-transfer, a complete
//! handshake, and the refusal of bogus handshakes (by `mac1`, and after Diffie-Hellman);
//! and open and seal each alone for a full-size datagram (1,440 plaintext bytes, 1,472 on the
//! wire: 1,500-byte IP packets), the figures for the per-datagram cost at 1 Gbit/s.
// criterion_main! generates a `main` that cannot carry a doc comment.
#![allow(missing_docs)]

use std::collections::HashSet;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use sprout_core::{Config, Connection};
use sprout_secure::handshake::Mac1;
use sprout_secure::{
    AllowedClients, Client, ClientConfig, ClientReceived, Limits, PrivateKey, Server, ServerConfig,
    ServerReceived, SessionId,
};

fn addr() -> SocketAddr {
    "192.0.2.1:40000".parse().unwrap()
}

/// A server (without handshake rate limits, to measure them back to back) and a client with
/// an established session.
fn pair() -> (Server, Client, SessionId) {
    pair_with(&PrivateKey::generate())
}

/// The same with this client key.
fn pair_with(client_key: &PrivateKey) -> (Server, Client, SessionId) {
    let allowed = AllowedClients::Keys(
        [client_key.public_key()]
            .into_iter()
            .collect::<HashSet<_>>(),
    );
    let mut config = ServerConfig::new(PrivateKey::generate(), allowed);
    config.handshakes_per_s = u32::MAX;
    config.handshakes_per_s_per_source = u32::MAX;
    let mut server = Server::new(config);
    let mut client = Client::new(
        ClientConfig {
            private_key: client_key.clone(),
            server_key: server.public_key(),
            limits: Limits::default(),
        },
        sprout_core::Instant::from_micros(0),
        b"",
    )
    .unwrap();
    let id = handshake(&mut server, &mut client, 0);
    (server, client, id)
}

/// Initiation, response, confirmation; the session id.
fn handshake(server: &mut Server, client: &mut Client, now_us: u64) -> SessionId {
    let mut buf = Vec::new();
    let mut pt = Vec::new();
    assert!(client.poll_transmit(sprout_core::Instant::from_micros(now_us), &mut buf));
    assert_eq!(
        server.handle(
            sprout_core::Instant::from_micros(now_us),
            addr(),
            &buf,
            &mut pt
        ),
        ServerReceived::Control
    );
    server.poll_transmit(&mut buf).unwrap();
    assert_eq!(
        client.handle(sprout_core::Instant::from_micros(now_us), &buf, &mut pt),
        ClientReceived::Established
    );
    assert!(client.poll_transmit(sprout_core::Instant::from_micros(now_us), &mut buf));
    match server.handle(
        sprout_core::Instant::from_micros(now_us),
        addr(),
        &buf,
        &mut pt,
    ) {
        ServerReceived::NewSession { id, .. } => id,
        other => panic!("{other:?}"),
    }
}

/// The server seals `msg` for session `id` into `sealed` (the step both seal benches time).
fn server_seal(server: &mut Server, id: SessionId, msg: &[u8], sealed: &mut Vec<u8>) {
    server
        .seal(
            sprout_core::Instant::from_micros(1),
            id,
            black_box(msg),
            sealed,
        )
        .unwrap();
}

fn seal_open(c: &mut Criterion) {
    let (mut server, mut client, id) = pair();
    let msg = vec![0x5a; 1400];
    let mut sealed = Vec::with_capacity(1500);
    let mut pt = Vec::with_capacity(1500);
    c.bench_function("seal + open, 1400-byte datagram", |b| {
        b.iter(|| {
            client
                .seal(
                    sprout_core::Instant::from_micros(1),
                    black_box(&msg),
                    &mut sealed,
                )
                .unwrap();
            let r = server.handle(
                sprout_core::Instant::from_micros(1),
                addr(),
                black_box(&sealed),
                &mut pt,
            );
            debug_assert_eq!(r, ServerReceived::Data { id });
            black_box(&pt);
        })
    });
    c.bench_function("seal only, 1400-byte datagram", |b| {
        b.iter(|| server_seal(&mut server, id, &msg, &mut sealed))
    });
}

/// Plaintext of a full-size datagram: what the core's default configuration sends at most
/// (1,472 bytes of UDP payload less the security layer's 32), bytes.
const FULL_SIZE: usize = 1472 - 32;

/// Open (decrypt and authenticate) alone, and seal alone, of a full-size datagram. Each
/// opened datagram is a fresh one (the replay window refuses a second copy), sealed outside
/// the timing.
fn full_size(c: &mut Criterion) {
    assert_eq!(FULL_SIZE, Config::default().max_datagram_bytes);
    let (mut server, mut client, id) = pair();
    let msg = vec![0x5a; FULL_SIZE];
    let mut sealed = Vec::with_capacity(1500);
    let mut pt = Vec::with_capacity(1500);
    let mut g = c.benchmark_group("full-size datagram (1,472 bytes on the wire)");
    g.bench_function("open (decrypt + authenticate)", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let now = sprout_core::Instant::from_micros(1);
                client.seal(now, &msg, &mut sealed).unwrap();
                let start = Instant::now();
                let r = server.handle(now, addr(), black_box(&sealed), &mut pt);
                total += start.elapsed();
                assert_eq!(r, ServerReceived::Data { id });
            }
            total
        })
    });
    g.bench_function("seal (encrypt)", |b| {
        b.iter(|| server_seal(&mut server, id, &msg, &mut sealed))
    });
    g.finish();
}

/// Both ends of a Sprout transfer over the security layer, both in bulk mode.
struct Transfer {
    server: Server,
    client: Client,
    id: SessionId,
    core_server: Connection,
    core_client: Connection,
    now_us: u64,
    to_server: Option<Vec<u8>>,
    to_client: Option<Vec<u8>>,
    pt: Vec<u8>,
    core_buf: Vec<u8>,
}

impl Transfer {
    fn new() -> Transfer {
        let (server, client, id) = pair();
        let mut core_server =
            Connection::new(Config::default(), sprout_core::Instant::from_micros(0)).unwrap();
        let mut core_client =
            Connection::new(Config::default(), sprout_core::Instant::from_micros(0)).unwrap();
        for c in [&mut core_server, &mut core_client] {
            c.set_bulk(true);
            c.set_keep_incoming(false);
        }
        Transfer {
            server,
            client,
            id,
            core_server,
            core_client,
            now_us: 0,
            to_server: None,
            to_client: None,
            pt: Vec::with_capacity(1500),
            core_buf: Vec::with_capacity(1500),
        }
    }

    /// The client's side (not measured): takes the server's datagram, then advances time until
    /// its core has a datagram to send, and seals it for the server.
    fn client_step(&mut self) {
        if let Some(d) = self.to_client.take() {
            if self.client.handle(
                sprout_core::Instant::from_micros(self.now_us),
                &d,
                &mut self.pt,
            ) == ClientReceived::Data
            {
                let _ = self
                    .core_client
                    .handle_datagram(sprout_core::Instant::from_micros(self.now_us), &self.pt);
            }
        }
        for _ in 0..10_000 {
            self.now_us += 250;
            self.core_client
                .handle_timeout(sprout_core::Instant::from_micros(self.now_us));
            if self
                .core_client
                .poll_transmit(
                    sprout_core::Instant::from_micros(self.now_us),
                    &mut self.core_buf,
                )
                .is_some()
            {
                let mut out = Vec::with_capacity(1500);
                self.client
                    .seal(
                        sprout_core::Instant::from_micros(self.now_us),
                        &self.core_buf,
                        &mut out,
                    )
                    .unwrap();
                self.to_server = Some(out);
                return;
            }
        }
        panic!("the client's core sent nothing in 2.5 s");
    }

    /// The server's per-datagram path (measured): open, core, poll, seal.
    fn server_step(&mut self) {
        let Some(d) = self.to_server.take() else {
            return;
        };
        let now = self.now_us;
        if let ServerReceived::Data { .. } = self.server.handle(
            sprout_core::Instant::from_micros(now),
            addr(),
            &d,
            &mut self.pt,
        ) {
            let _ = self
                .core_server
                .handle_datagram(sprout_core::Instant::from_micros(now), &self.pt);
        }
        self.core_server
            .handle_timeout(sprout_core::Instant::from_micros(now));
        if self
            .core_server
            .poll_transmit(sprout_core::Instant::from_micros(now), &mut self.core_buf)
            .is_some()
        {
            let mut out = d; // reuse the buffer
            self.server
                .seal(
                    sprout_core::Instant::from_micros(now),
                    self.id,
                    &self.core_buf,
                    &mut out,
                )
                .unwrap();
            self.to_client = Some(out);
        }
    }
}

/// Simulated time after which a transfer is started afresh, us: well within the session
/// keys' lifetime (a long measurement ran past it and every seal failed with `KeysExpired`).
const FRESH_AFTER_US: u64 = 100_000_000;

/// A transfer mid-way: a few thousand datagrams each way first.
fn under_way() -> Transfer {
    let mut t = Transfer::new();
    for _ in 0..5_000 {
        t.client_step();
        t.server_step();
    }
    assert!(
        t.core_server.stats().app_bytes_received > 1_000_000,
        "the transfer is under way"
    );
    t
}

fn whole_path(c: &mut Criterion) {
    let mut t = under_way();
    c.bench_function(
        "whole path: open + Connection::handle_datagram + poll_transmit + seal",
        |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    if t.now_us > FRESH_AFTER_US {
                        t = under_way();
                    }
                    t.client_step();
                    let start = Instant::now();
                    t.server_step();
                    total += start.elapsed();
                }
                total
            })
        },
    );
}

fn handshakes(c: &mut Criterion) {
    let client_key = PrivateKey::generate();
    let (mut server, _, _) = pair_with(&client_key);
    let server_key = server.public_key();
    let mut now = 1u64;
    c.bench_function("handshake (initiation, response, confirmation)", |b| {
        b.iter(|| {
            now += 1;
            let mut client = Client::new(
                ClientConfig {
                    private_key: client_key.clone(),
                    server_key,
                    limits: Limits::default(),
                },
                sprout_core::Instant::from_micros(now),
                b"",
            )
            .unwrap();
            let id = handshake(&mut server, &mut client, now);
            server.close(id);
        })
    });
    let mac = Mac1::new(&server.public_key());
    let mut bogus = vec![0x77u8; 200];
    bogus[..4].copy_from_slice(&[0x53, 2, 1, 0]);
    let mut pt = Vec::new();
    c.bench_function("refuse a bogus initiation by mac1", |b| {
        b.iter(|| {
            server.handle(
                sprout_core::Instant::from_micros(now),
                addr(),
                black_box(&bogus),
                &mut pt,
            )
        })
    });
    let tag = mac.compute(&bogus[..184]);
    bogus[184..].copy_from_slice(&tag);
    c.bench_function(
        "refuse a mac1-valid bogus initiation (Diffie-Hellman)",
        |b| {
            b.iter(|| {
                server.handle(
                    sprout_core::Instant::from_micros(now),
                    addr(),
                    black_box(&bogus),
                    &mut pt,
                )
            })
        },
    );
}

criterion_group!(benches, seal_open, full_size, whole_path, handshakes);
criterion_main!(benches);
