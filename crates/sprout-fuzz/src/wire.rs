//! Fuzz target: `sprout_core::wire::decode`.

use crate::Target;

/// Decodes any bytes; a decoded datagram must re-encode to the same bytes.
#[derive(Default)]
pub struct WireTarget;

impl Target for WireTarget {
    fn name(&self) -> &'static str {
        "wire"
    }
    fn seeds(&mut self) -> Vec<Vec<u8>> {
        todo!("helper A")
    }
    fn run(&mut self, input: &[u8]) {
        let _ = input;
        todo!("helper A")
    }
}
