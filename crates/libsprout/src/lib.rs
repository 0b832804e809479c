//! libsprout: Sprout embedded in C applications. A shared and a static C library (`-lsprout`)
//! with the header `include/sprout.h`, generated from this crate by cbindgen
//! (`tools/sprout-header`, run by CI, fails when the checked-in header differs from the code;
//! `cargo run --manifest-path tools/sprout-header/Cargo.toml -- --write` rewrites it).
//!
//! The sans-IO layer is a secure Sprout connection object ([`api::SproutConn`]),
//! client side or server side of one session, that the application feeds with the datagrams
//! it receives and the current time, and that hands back datagrams to send, the next
//! deadline, the application messages received (with their send time), the window and the
//! forecast, and events. It is a thin layer over the pieces the runtime of sprout-net uses,
//! unchanged: sprout-secure's `Client` (with its redial machine) and `Server`, and
//! sprout-core's `Connection` ([`conn::Conn`] glues them); application messages are the DATA
//! messages of `sprout client` ([`sprout_net::message`]).
//!
//! | module | what |
//! |---|---|
//! | [`api`] | the C functions and types |
//! | [`conn`] | [`conn::Conn`], the connection in safe Rust |
//! | [`boundary`] | status codes, the last error message, the panic guard, pointer checks |
//! | `socket_api` | the socket layer's C functions (`sprout_socket_*`; feature `sockets`, Unix) |
//! | `socket` | `socket::Socket`, `socket::SocketServer`: sprout-net's endpoint and server with a descriptor to poll |
//!
//! The C boundary: every entry point catches panics ([`std::panic::catch_unwind`]) and returns
//! [`boundary::SproutStatus::Internal`]; errors are status codes plus a per-thread message
//! (`sprout_last_error`); NULL pointers and impossible lengths are errors. The `unsafe` blocks
//! (turning the caller's pointers into references, and freeing a connection) are in
//! [`boundary`] and `sprout_conn_free`, each with its SAFETY comment. See docs/embedding.md.
//!
//! A client's loop in C (a UDP socket connected to the server, and `poll()`; the full program
//! is examples/c/sender.c):
//!
//! ```c
//! SproutConn *conn;
//! if (sprout_conn_new_client(key, server_public, NULL, 0, now_us(), &conn) != SPROUT_STATUS_OK)
//!     fail();  /* sprout_last_error(buf, sizeof buf) says why */
//! sprout_conn_send(conn, now_us(), message, message_len);  /* leaves once the session is up */
//! for (;;) {
//!     uint64_t deadline;
//!     sprout_conn_deadline(conn, &deadline);
//!     /* poll() the socket until `deadline`; each datagram read: */
//!     sprout_conn_recv(conn, now_us(), datagram, datagram_len);
//!     sprout_conn_on_timeout(conn, now_us());
//!     size_t len;
//!     while (sprout_conn_poll_transmit(conn, now_us(), out, sizeof out, &len) == SPROUT_STATUS_OK)
//!         send(fd, out, len, 0);
//!     SproutMessage m;
//!     while (sprout_conn_read(conn, &m, payload, sizeof payload) == SPROUT_STATUS_OK)
//!         handle(payload, m.len, now_us() - m.sent_us);  /* the message's delay, us */
//! }
//! sprout_conn_free(conn);
//! ```
//!
//! The same in Rust with [`conn::Conn`], a client and a server side in memory (an application
//! puts its socket between them):
//!
//! ```
//! use sprout::conn::{Conn, State};
//! use sprout_core::Instant;
//! use sprout_secure::PrivateKey;
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let (client_key, server_key) = (PrivateKey::generate(), PrivateKey::generate());
//! let client_public = client_key.public_key();
//! let mut client = Conn::client(client_key, server_key.public_key(), b"hi", Instant::ZERO)?;
//! let mut server = Conn::server(server_key, Some(client_public), Instant::ZERO);
//! client.send(0, b"hello")?; // sent at 0 us; it waits for the handshake
//! let mut datagram = Vec::new();
//! let mut received = None;
//! for ms in 1..=200u64 {
//!     let now = Instant::from_millis(ms);
//!     client.on_timeout(now);
//!     server.on_timeout(now);
//!     while client.poll_transmit(now, &mut datagram) {
//!         server.recv(now, &datagram);
//!     }
//!     while server.poll_transmit(now, &mut datagram) {
//!         client.recv(now, &datagram);
//!     }
//!     if let Some(m) = server.recv_message() {
//!         received = Some((m.payload, ms * 1000 - m.sent_us));
//!         break;
//!     }
//! }
//! assert_eq!(client.state(), State::Established);
//! let (payload, delay_us) = received.expect("the message arrived");
//! assert_eq!(payload, b"hello");
//! println!("delivered after {delay_us} us");
//! # Ok(())
//! # }
//! ```
// The workspace denies unsafe code (Cargo.toml's [workspace.lints]); the C boundary needs it
// (raw pointers from C, `#[no_mangle]`), each block small and with its SAFETY comment.
#![allow(unsafe_code)]
// The entry points take raw pointers from C and are safe Rust functions on purpose: each
// checks NULL and lengths, and the rest of the C caller's contract is in the header.
#![allow(clippy::not_unsafe_ptr_arg_deref)]

pub mod api;
pub mod boundary;
pub mod conn;
pub mod listener;
#[cfg(all(unix, feature = "sockets"))]
pub mod socket;
#[cfg(all(unix, feature = "sockets"))]
pub mod socket_api;

pub use api::*;
pub use boundary::SproutStatus;
#[cfg(all(unix, feature = "sockets"))]
pub use socket_api::*;
