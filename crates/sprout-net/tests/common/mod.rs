//! Helpers of the sprout-net tests: keys, a server and clients on 127.0.0.1.

#![allow(dead_code)]

use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sprout_core::Config;
use sprout_net::secure::{
    AllowedClients, ClientConfig, Limits, PrivateKey, PublicKey, ServerConfig,
};
use sprout_net::{Endpoint, Server, ServerOptions, Session};

pub(crate) fn any_port() -> SocketAddr {
    "127.0.0.1:0".parse().unwrap()
}

/// Options of a server that accepts `allowed` with a fresh key; its public key.
pub(crate) fn options(allowed: AllowedClients) -> (ServerOptions, PublicKey) {
    let key = PrivateKey::generate();
    let public = key.public_key();
    (ServerOptions::new(ServerConfig::new(key, allowed)), public)
}

/// A server on 127.0.0.1 that accepts any client with the default configuration.
pub(crate) fn open_server() -> Server {
    let (o, _) = options(AllowedClients::Any);
    Server::bind(any_port(), o, |_, _, _| Some(Config::default())).unwrap()
}

/// Client keys for `server_key` (a fresh client key).
pub(crate) fn keys_for(server_key: PublicKey) -> ClientConfig {
    ClientConfig {
        private_key: PrivateKey::generate(),
        server_key,
        limits: Limits::default(),
    }
}

/// A client of `server` with a fresh key and the default configuration.
pub(crate) fn client_of(server: &Server, greeting: &[u8]) -> Endpoint {
    Endpoint::connect(
        any_port(),
        server.local_addr(),
        keys_for(server.public_key()),
        Config::default(),
        greeting,
    )
    .unwrap()
}

/// A server, a client of it, and the client's session at the server.
pub(crate) fn pair() -> (Server, Endpoint, Session) {
    let server = open_server();
    let client = client_of(&server, b"");
    assert!(
        client.wait_established(Duration::from_secs(5)).unwrap(),
        "handshake"
    );
    // The session reaches the server with the client's first sealed datagram (the keepalive
    // that confirms the keys).
    let session = server
        .accept_timeout(Duration::from_secs(5))
        .expect("a session");
    (server, client, session)
}

/// Waits until `cond` holds, for at most `limit`.
pub(crate) fn eventually(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + limit;
    while Instant::now() < end {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    cond()
}

/// A UDP path between one client (which sends to [`Path::front`]) and a server, through a
/// relay on 127.0.0.1 that [`Path::cut`] stops: from then on nothing passes either way, as
/// when a client's link dies or its machine vanishes without a word.
pub(crate) struct Path {
    /// Where the client sends.
    pub front: SocketAddr,
    cut: Arc<AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Path {
    pub(crate) fn start(server: SocketAddr) -> Path {
        let front = Arc::new(UdpSocket::bind(any_port()).unwrap());
        let back = Arc::new(UdpSocket::bind(any_port()).unwrap());
        back.connect(server).unwrap();
        for s in [&front, &back] {
            s.set_read_timeout(Some(Duration::from_millis(20))).unwrap();
        }
        let front_addr = front.local_addr().unwrap();
        let cut = Arc::new(AtomicBool::new(false));
        let client: Arc<Mutex<Option<SocketAddr>>> = Arc::default();
        let up = {
            let (front, back, cut, client) =
                (front.clone(), back.clone(), cut.clone(), client.clone());
            std::thread::spawn(move || {
                let mut buf = [0u8; 65_536];
                while !cut.load(Ordering::SeqCst) {
                    if let Ok((n, from)) = front.recv_from(&mut buf) {
                        *client.lock().unwrap() = Some(from);
                        if !cut.load(Ordering::SeqCst) {
                            let _ = back.send(&buf[..n]);
                        }
                    }
                }
            })
        };
        let down = {
            let cut = cut.clone();
            std::thread::spawn(move || {
                let mut buf = [0u8; 65_536];
                while !cut.load(Ordering::SeqCst) {
                    if let Ok(n) = back.recv(&mut buf) {
                        let to = *client.lock().unwrap();
                        if let (Some(to), false) = (to, cut.load(Ordering::SeqCst)) {
                            let _ = front.send_to(&buf[..n], to);
                        }
                    }
                }
            })
        };
        Path {
            front: front_addr,
            cut,
            threads: vec![up, down],
        }
    }

    /// Stops the relay: nothing passes from now on (what is in flight is dropped).
    pub(crate) fn cut(&mut self) {
        self.cut.store(true, Ordering::SeqCst);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

impl Drop for Path {
    fn drop(&mut self) {
        self.cut();
    }
}
