//! Sprout over real UDP sockets: a blocking [`Endpoint`] on top of the unchanged sans-IO
//! [`sprout_core::Connection`].
//!
//! An endpoint binds a UDP socket and runs the connection on a background thread (a `mio`
//! poller with the socket and a waker): it reads datagrams, runs the receiver's 20 ms ticks,
//! sends what the Sprout window allows and sleeps until the connection's next deadline. The
//! protocol's time is microseconds since the endpoint was created ([`clock::Clock`]).
//!
//! | module | what |
//! |---|---|
//! | [`endpoint`] | [`Endpoint`]: `bind` / `accept` (server), `connect` (client), `send`, `recv_timeout`, bulk modes, `stats` |
//! | [`driver`] | the background thread and the state it shares with the application |
//! | [`clock`] | the monotonic protocol clock and the wall clock for one-way delays |
//! | [`stats`] | [`EndpointStats`], a serializable snapshot |
//! | [`message`] | the application messages of `sprout server` / `sprout client` (HELLO, ACCEPT, DATA, BYE) |
//!
//! ```no_run
//! use std::time::Duration;
//! use sprout_core::Config;
//! use sprout_net::Endpoint;
//!
//! let server = Endpoint::bind("127.0.0.1:9000".parse().unwrap(), Config::default()).unwrap();
//! let client = Endpoint::connect(
//!     "127.0.0.1:0".parse().unwrap(),
//!     "127.0.0.1:9000".parse().unwrap(),
//!     Config::default(),
//! )
//! .unwrap();
//! client.send(b"hello".to_vec());
//! assert_eq!(server.recv_timeout(Duration::from_secs(1)).unwrap(), b"hello");
//! println!("{}", serde_json::to_string(&client.stats()).unwrap());
//! ```

pub mod clock;
pub mod driver;
pub mod endpoint;
pub mod error;
pub mod message;
pub mod stats;

pub use clock::{realtime_us, Clock};
pub use driver::{Acceptor, BulkWriter};
pub use endpoint::Endpoint;
pub use error::NetError;
pub use stats::{EndpointStats, SocketCounters};
