//! The Saturator (the paper's §4.1): records a link's delivery opportunities as mahimahi
//! traces by keeping its queue backlogged; the sans-IO protocol and, with the `runtime`
//! feature (on by default, Linux), the UDP server and client that run it.
//!
//! - [`Sender`] ([`sender`]): keeps a window of packets in flight and adjusts it so that the
//!   measured round-trip time stays between a low and a high mark (750 ms and 3000 ms by
//!   default, the paper's): the window grows by one packet per newly acknowledged packet while
//!   the RTT is below the low mark, shrinks by an eighth while it is above the high mark (at
//!   most once per round trip: only an acknowledgement of a packet sent after the last decrease
//!   can shrink it again, so the old samples of one long queue, or of an outage, count once),
//!   and holds in between. While the window is full it still sends one probe every
//!   [`SenderConfig::probe_interval`] without any acknowledgement, so that an outage of any
//!   length (or the loss of everything in flight) cannot wedge it; the window recovers from
//!   the first acknowledgement after.
//! - [`Recorder`] ([`recorder`]): records every valid data packet's arrival (ms since the
//!   recording's start), counts loss (sequence gaps), reordering (a sequence number below the
//!   highest seen, not seen before), duplicates, stray and malformed datagrams, and produces
//!   the feedback ([`AckInfo`]: the highest sequence number, the echo of its send time and how
//!   long the ack was held, enough for the sender's RTT).
//! - The wire format ([`wire`]: [`Message`], [`encode`], [`decode`]) and the end-of-recording
//!   transfer of a recording ([`transfer`]: [`encode_result`], [`decode_result`]).
//! - Return-routability ([`cookie`]: [`CookieJar`]): a server sends an address nothing larger
//!   than the hello it received from it (a 32-byte challenge for a hello padded to 1200 bytes
//!   or more) until that address has sent back the challenge's cookie, a keyed BLAKE2s MAC
//!   over its address and port, the session id and a 30 s time bucket under a random secret
//!   that rotates. Each path of a session (data, feedback) proves its own address; only then
//!   does the session start, or a path move to a new address. A cookie exchange rather than
//!   the Noise keys of `sprout-secure`: the Saturator is a measurement tool run with no key
//!   distribution, its data packets must stay MTU-sized plain UDP for the recording to be
//!   faithful, and the attack to remove is amplification toward an address that never asked,
//!   which proving the address removes. It is not authentication: whoever receives at the
//!   client's address (on the path) can still join or disturb a recording, as on any
//!   unauthenticated measurement.
//! - [`Summary`] ([`summary`]): duration, mean and peak rate (1 s bins), longest gap, outages,
//!   loss, reordering, duplicates, strays, in text ([`Summary::text`]) and JSON (serde).
//! - [`runtime`] (feature `runtime`): `sprout saturator server|client` as library calls, on
//!   UDP sockets with kernel receive timestamps.
//!
//! Times are microseconds (`_us`) of the caller's clock (the runtime uses `CLOCK_MONOTONIC`),
//! passed in; nothing in the protocol reads a clock or does IO beyond writing a trace to a
//! `Write`. Everything from the network is checked: no panic, saturating arithmetic, bounded
//! state.
//!
//! Trace output: one line per recorded data packet, the whole millisecond of its arrival
//! counted from the recording's start (`floor((arrival_us - start_us) / 1000)`), sorted, as
//! mahimahi reads it: each line stands for one opportunity of [`DEFAULT_MTU_BYTES`] bytes (the
//! data packets are MTU-sized: 1472 bytes of UDP payload in 1500-byte IPv4 packets).
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod cookie;
pub mod recorder;
pub mod sender;
pub mod summary;
pub mod transfer;
pub mod wire;

#[cfg(all(feature = "runtime", target_os = "linux", not(sprout_portable_check)))]
pub mod runtime;

#[cfg(test)]
mod test_support;

pub use cookie::CookieJar;
pub use recorder::*;
pub use sender::*;
pub use summary::*;
pub use transfer::*;
pub use wire::*;
