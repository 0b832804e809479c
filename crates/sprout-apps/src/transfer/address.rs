//! Resolving the addresses given on the command line.

use std::net::{SocketAddr, ToSocketAddrs};

use crate::transfer::error::TransferError;

/// Resolves `addr` ("host:port") to its first socket address.
pub(crate) fn resolve(addr: &str) -> Result<SocketAddr, TransferError> {
    addr.to_socket_addrs()
        .map_err(|source| TransferError::BadAddress {
            addr: addr.to_string(),
            source,
        })?
        .next()
        .ok_or_else(|| TransferError::Unresolved {
            addr: addr.to_string(),
        })
}
