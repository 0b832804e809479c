//! The programs the `sprout` command runs, as library code: Sprout transfers between a server
//! and clients, the load benchmark, the interactive stream and kernel-TCP transfers.
#![forbid(unsafe_code)]

mod args;
pub mod interactive;
pub mod kernel_tcp;
pub mod load;
pub mod transfer;
