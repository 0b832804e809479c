//! A secure Sprout server and client on loopback, in one process, with keys made in memory:
//! the client greets the server in its handshake and sends a few datagrams, the server echoes
//! them back, then both print their statistics.
//!
//! ```text
//! cargo run -p sprout-net --example echo
//! ```

use std::time::Duration;

use sprout_core::Config;
use sprout_net::secure::{AllowedClients, ClientConfig, Limits, PrivateKey, ServerConfig};
use sprout_net::{Endpoint, Server, ServerOptions};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server_key = PrivateKey::generate();
    let client_key = PrivateKey::generate();
    let server_public = server_key.public_key();
    // Only this client's key may open a session.
    let allowed = AllowedClients::Keys([client_key.public_key()].into_iter().collect());
    let options = ServerOptions::new(ServerConfig::new(server_key, allowed));
    let server = Server::bind("127.0.0.1:0".parse()?, options, |addr, key, greeting| {
        println!(
            "server: session from {addr}, key {key}, greeting {:?}",
            String::from_utf8_lossy(greeting)
        );
        Some(Config::default())
    })?;
    println!(
        "server on {} with public key {}",
        server.local_addr(),
        server.public_key()
    );

    let client = Endpoint::connect(
        "127.0.0.1:0".parse()?,
        server.local_addr(),
        ClientConfig {
            private_key: client_key,
            server_key: server_public,
            limits: Limits::default(),
        },
        Config::default(),
        b"echo, please",
    )?;
    client.wait_established(Duration::from_secs(5))?;
    println!("client on {}: session established", client.local_addr());

    let session = server
        .accept_timeout(Duration::from_secs(5))
        .ok_or("no session within 5 s")?;
    let echo = std::thread::spawn(move || {
        let mut n = 0;
        while let Some(d) = session.recv_timeout(Duration::from_secs(2)) {
            session.send(d);
            n += 1;
        }
        (n, session.stats())
    });

    for i in 0..5 {
        let msg = format!("message {i}");
        client.send(msg.clone().into_bytes());
        let back = client
            .recv_timeout(Duration::from_secs(2))
            .ok_or("no echo within 2 s")?;
        println!(
            "client: sent {msg:?}, got back {:?}",
            String::from_utf8_lossy(&back)
        );
    }
    let c = client.stats();
    println!(
        "client: {} datagrams sent ({} bytes sealed), {} received; security layer {}",
        c.datagrams_sent,
        c.bytes_sent,
        c.datagrams_received,
        serde_json::to_string(&c.secure)?
    );
    client.close();
    let (n, s) = echo.join().map_err(|_| "the echo thread panicked")?;
    println!(
        "server: echoed {n} datagrams to {}; {} datagrams received",
        s.peer_addr
            .map_or_else(|| "-".to_string(), |a| a.to_string()),
        s.datagrams_received
    );
    println!("server: {}", serde_json::to_string(&server.stats())?);
    Ok(())
}
