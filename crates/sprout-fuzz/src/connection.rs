//! Fuzz target: `sprout_core::Connection::handle_datagram` with decoded-but-hostile headers.

use crate::Target;

/// A connection in the middle of a transfer, fed hostile datagrams.
pub struct ConnectionTarget {}

impl ConnectionTarget {
    /// A new target.
    pub fn new() -> Self {
        todo!("helper A")
    }
}

impl Default for ConnectionTarget {
    fn default() -> Self {
        Self::new()
    }
}

impl Target for ConnectionTarget {
    fn name(&self) -> &'static str {
        "connection"
    }
    fn seeds(&mut self) -> Vec<Vec<u8>> {
        todo!("helper A")
    }
    fn run(&mut self, input: &[u8]) {
        let _ = input;
        todo!("helper A")
    }
}
