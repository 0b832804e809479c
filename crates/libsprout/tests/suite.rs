//! libsprout's one test binary: its modules are the other files of tests/.
#![forbid(unsafe_code)]

mod c;
mod emulated;
mod example;
mod interop;
#[cfg(feature = "sockets")]
mod socket;
