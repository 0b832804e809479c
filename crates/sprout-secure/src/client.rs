//! [`Client`]: the client side of the security layer, one session to one server.
//!
//! The client sends a handshake initiation at once (carrying its greeting, authenticated and
//! encrypted), repeats it every [`Limits::handshake_retry_us`] until the server answers, and
//! gives up after [`Limits::handshake_timeout_us`]. On the answer it is established and at
//! once queues an empty keepalive that confirms the keys to the server. It starts a rekey
//! (a fresh handshake naming its session) when its keys reach [`Limits::rekey_after_us`] or
//! [`Limits::rekey_after_messages`], and keeps sealing with the old keys until the answer
//! comes.

use crate::keys::{PrivateKey, PublicKey};
use crate::stats::{DropReason, SecureStats};
use crate::{Limits, SealError, SecureError};

/// Configuration of a [`Client`].
#[derive(Clone, Debug)]
pub struct ClientConfig {
    /// The client's private key.
    pub private_key: PrivateKey,
    /// The server's public key.
    pub server_key: PublicKey,
    /// Key limits.
    pub limits: Limits,
}

/// What [`Client::handle`] made of a datagram.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClientReceived {
    /// The handshake completed: the session is established (first time only).
    Established,
    /// The plaintext buffer holds a core datagram from the server.
    Data,
    /// Handled inside the layer (a rekey answer, a keepalive); nothing for the application.
    Control,
    /// Dropped and counted.
    Dropped(DropReason),
}

/// The client side of one session.
pub struct Client {
    _private: (),
}

impl Client {
    /// A client that starts its handshake at `now_us` with `greeting` (at most
    /// [`crate::wire::MAX_GREETING_BYTES`]), which the server's application receives with the
    /// new session.
    pub fn new(config: ClientConfig, now_us: u64, greeting: &[u8]) -> Result<Client, SecureError> {
        let _ = (config, now_us, greeting);
        todo!()
    }

    /// Whether the handshake has completed.
    pub fn is_established(&self) -> bool {
        todo!()
    }

    /// Why the session failed, if it did (the handshake timed out).
    pub fn error(&self) -> Option<&SecureError> {
        todo!()
    }

    /// Takes one datagram from the server that arrived at `now_us`; a core datagram goes into
    /// `plaintext` (cleared first). Never panics; nothing that fails a check changes any state
    /// but a counter.
    pub fn handle(&mut self, now_us: u64, datagram: &[u8], plaintext: &mut Vec<u8>) -> ClientReceived {
        let _ = (now_us, datagram, plaintext);
        todo!()
    }

    /// Seals the core datagram `plaintext` into `out` (cleared first).
    pub fn seal(&mut self, now_us: u64, plaintext: &[u8], out: &mut Vec<u8>) -> Result<(), SealError> {
        let _ = (now_us, plaintext, out);
        todo!()
    }

    /// The next datagram the layer itself must send (a handshake initiation or its repeat, a
    /// keepalive), written into `out` (cleared first); `false` when there is none.
    pub fn poll_transmit(&mut self, now_us: u64, out: &mut Vec<u8>) -> bool {
        let _ = (now_us, out);
        todo!()
    }

    /// Runs the timers due by `now_us` (handshake repeats and timeout, rekeys).
    pub fn handle_timeout(&mut self, now_us: u64) {
        let _ = now_us;
        todo!()
    }

    /// When [`Client::handle_timeout`] is next needed, in microseconds.
    pub fn poll_timeout(&self) -> Option<u64> {
        todo!()
    }

    /// The server's public key.
    pub fn server_key(&self) -> PublicKey {
        todo!()
    }

    /// Counters.
    pub fn stats(&self) -> SecureStats {
        todo!()
    }
}
