//! Fuzz target: the security layer's open path.

use crate::Target;

/// A server and a client with an established session, fed hostile datagrams.
pub struct SecureTarget {}

impl SecureTarget {
    /// A new target.
    pub fn new() -> Self {
        todo!("helper B")
    }
}

impl Default for SecureTarget {
    fn default() -> Self {
        Self::new()
    }
}

impl Target for SecureTarget {
    fn name(&self) -> &'static str {
        "secure"
    }
    fn seeds(&mut self) -> Vec<Vec<u8>> {
        todo!("helper B")
    }
    fn run(&mut self, input: &[u8]) {
        let _ = input;
        todo!("helper B")
    }
}
