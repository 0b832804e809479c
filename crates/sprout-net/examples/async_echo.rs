//! The async (tokio) API: a secure Sprout server and two clients on loopback, in one process,
//! with keys made in memory. The server accepts sessions and echoes each one in its own task;
//! the two clients connect at once, each sends a few datagrams and prints what came back, then
//! goes away; the server's sessions end at its (here short) idle timeout, and it prints its
//! counters.
//!
//! ```text
//! cargo run -p sprout-net --example async_echo
//! ```

use std::time::Duration;

use sprout_core::Config;
use sprout_net::secure::{AllowedClients, ClientConfig, Limits, PrivateKey, ServerConfig};
use sprout_net::tokio::{Endpoint, Server};
use sprout_net::ServerOptions;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server_key = PrivateKey::generate();
    let server_public = server_key.public_key();
    let mut options = ServerOptions::new(ServerConfig::new(server_key, AllowedClients::Any));
    // Sessions whose client went away end after 1 s (default 30 s).
    options.idle_timeout = Duration::from_secs(1);
    let server = Server::bind("127.0.0.1:0".parse()?, options, |_, _, _| {
        Some(Config::default())
    })
    .await?;
    let addr = server.local_addr();
    println!("server on {addr} with public key {server_public}");

    let server_task = tokio::spawn(async move {
        let mut tasks = Vec::new();
        for _ in 0..2 {
            let Some(session) = server.accept().await else {
                break;
            };
            println!(
                "server: session {:08x} from {} says {:?}",
                session.id(),
                session.peer_addr(),
                String::from_utf8_lossy(session.greeting())
            );
            tasks.push(tokio::spawn(async move {
                let mut n = 0;
                while let Some(d) = session.recv().await {
                    session.send(d);
                    n += 1;
                }
                (session.id(), n)
            }));
        }
        for t in tasks {
            if let Ok((id, n)) = t.await {
                println!("server: session {id:08x} echoed {n} datagrams, then ended");
            }
        }
        // Let the driver count the sessions' ends before reading its counters.
        tokio::time::sleep(Duration::from_millis(50)).await;
        println!(
            "server: {}",
            serde_json::to_string(&server.stats()).unwrap_or_default()
        );
    });

    let mut clients = Vec::new();
    for c in 0..2 {
        clients.push(tokio::spawn(async move {
            let keys = ClientConfig {
                private_key: PrivateKey::generate(),
                server_key: server_public,
                limits: Limits::default(),
            };
            let greeting = format!("client {c}");
            let client = Endpoint::connect(
                "127.0.0.1:0".parse().expect("an address"),
                addr,
                keys,
                Config::default(),
                greeting.as_bytes(),
            )
            .await?;
            for i in 0..3 {
                let msg = format!("client {c} message {i}");
                client.send(msg.clone().into_bytes());
                let back = tokio::time::timeout(Duration::from_secs(2), client.recv()).await;
                match back {
                    Ok(Some(b)) => println!(
                        "client {c}: sent {msg:?}, got back {:?}",
                        String::from_utf8_lossy(&b)
                    ),
                    _ => println!("client {c}: no echo of {msg:?} within 2 s"),
                }
            }
            let s = client.stats();
            println!(
                "client {c}: {} datagrams sent, {} received, {} handshake(s); closing",
                s.datagrams_sent,
                s.datagrams_received,
                s.secure.map_or(0, |x| x.handshakes)
            );
            Ok::<(), sprout_net::NetError>(())
        }));
    }
    for c in clients {
        c.await??;
    }
    tokio::time::timeout(Duration::from_secs(10), server_task).await??;
    Ok(())
}
