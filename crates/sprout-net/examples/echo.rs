//! Two Sprout endpoints on loopback: the client sends a few datagrams, the server echoes them
//! back, then the client prints its statistics.
//!
//! ```text
//! cargo run -p sprout-net --example echo
//! ```

use std::time::Duration;

use sprout_core::Config;
use sprout_net::Endpoint;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = Endpoint::bind("127.0.0.1:0".parse()?, Config::default())?;
    let client = Endpoint::connect(
        "127.0.0.1:0".parse()?,
        server.local_addr(),
        Config::default(),
    )?;
    println!(
        "server on {}, client on {}",
        server.local_addr(),
        client.local_addr()
    );

    let echo = std::thread::spawn(move || {
        let mut n = 0;
        while let Some(d) = server.recv_timeout(Duration::from_secs(2)) {
            server.send(d);
            n += 1;
        }
        n
    });

    for i in 0..5 {
        let msg = format!("message {i}");
        client.send(msg.clone().into_bytes());
        let back = client
            .recv_timeout(Duration::from_secs(2))
            .ok_or("no echo within 2 s")?;
        println!(
            "sent {msg:?}, got back {:?}",
            String::from_utf8_lossy(&back)
        );
    }
    println!("{}", serde_json::to_string_pretty(&client.stats())?);
    client.close();
    println!("server echoed {} datagrams", echo.join().unwrap_or(0));
    Ok(())
}
