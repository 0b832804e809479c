//! `sprout interactive server` and `sprout interactive client`: the stand-in for a video call in
//! the tunnel experiment (paper §5.7): paced UDP both ways, by default 500 kbit/s each way
//! (1000-byte payloads every 16 ms), every packet stamped with a sequence number and its send
//! time on `CLOCK_MONOTONIC`.
//!
//! `CLOCK_MONOTONIC` is one clock for every network namespace of a host, so when both ends run
//! on one machine (the emulator's mobile namespace and the host's), the receiver's clock minus
//! the stamp is the packet's exact one-way delay.
//!
//! The client sends to the server from the start; the server learns the client's address from
//! the first valid packet and streams back to it (packets from any other address are counted as
//! bad). Each side sends for `--duration` seconds (the server from its first client packet),
//! keeps receiving for `--linger` seconds more (late packets still count), then prints a
//! summary (`--json`: one JSON line) and, with `--csv FILE`, writes one row per packet it
//! received: `direction,seq,sent_us,received_us,bytes` (`up` = client to server, `down` =
//! server to client; times in µs of `CLOCK_MONOTONIC`; bytes of UDP payload). The summary
//! includes the application-level delay of the stream received ([`crate::app_delay`]; no sender
//! queue here, so the one-way delay with the packets never delivered counted as infinitely
//! late).
//!
//! Wire format of a packet (UDP payload, big-endian): 4 bytes magic `SPRI`, 1 byte direction
//! (0 up, 1 down), 3 bytes zero, 8 bytes sequence number (from 0), 8 bytes send time (µs of
//! `CLOCK_MONOTONIC`), then zero padding to the payload size. A datagram that is too short, has
//! another magic or direction, a sequence number beyond [`MAX_SEQ`] or a send time in the
//! future is counted as bad and ignored. Ctrl-C stops either side early, with its summary.

mod error;
mod options;
mod packet;
mod side;
mod summary;
#[cfg(test)]
mod tests;

pub use error::InteractiveError;
pub use options::{
    InteractiveClientOptions, InteractiveOptions, InteractiveRole, InteractiveServerOptions,
    StreamOptions,
};
pub use packet::{
    decode, encode, quantile, Arrival, Direction, Recorder, Stamp, HEADER_BYTES, MAX_PAYLOAD_BYTES,
    MAX_RECORDS, MAX_SEQ,
};
pub use side::{run, serve};
pub use summary::Summary;
