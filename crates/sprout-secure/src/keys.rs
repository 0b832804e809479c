//! X25519 keys: generation, base64 text form (as WireGuard's `wg genkey`), key files written
//! with mode 0600, and the server's file of allowed client public keys.

use std::path::Path;

use thiserror::Error;

/// Why a key or key file could not be used. Messages name the file and line.
#[derive(Debug, Error)]
pub enum KeyError {
    /// Not 32 bytes of base64.
    #[error("{0}")]
    Invalid(String),
    /// The file could not be read or written.
    #[error("{0}")]
    Io(String),
}

/// An X25519 private key (32 bytes, wiped from memory on drop).
#[derive(Clone)]
pub struct PrivateKey(pub(crate) [u8; 32]);

/// An X25519 public key (32 bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PublicKey(pub [u8; 32]);

impl PrivateKey {
    /// A fresh random key from the operating system's generator.
    pub fn generate() -> PrivateKey {
        todo!()
    }
    /// The matching public key.
    pub fn public_key(&self) -> PublicKey {
        todo!()
    }
    /// The key's 32 bytes.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }
    /// Parses 44 characters of standard base64 (surrounding whitespace ignored).
    pub fn from_base64(s: &str) -> Result<PrivateKey, KeyError> {
        let _ = s;
        todo!()
    }
    /// The key as standard base64 (44 characters).
    pub fn to_base64(&self) -> String {
        todo!()
    }
    /// Reads a key file (base64 on one line). Refuses a file that others than its owner can
    /// read or write (mode & 0o077 != 0), naming the command that fixes it.
    pub fn read_file(path: &Path) -> Result<PrivateKey, KeyError> {
        let _ = path;
        todo!()
    }
    /// Writes the key to a new file created with mode 0600; refuses to overwrite.
    pub fn write_file(&self, path: &Path) -> Result<(), KeyError> {
        let _ = path;
        todo!()
    }
}

impl std::fmt::Debug for PrivateKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PrivateKey(public {})", self.public_key())
    }
}

impl PublicKey {
    /// Parses 44 characters of standard base64 (surrounding whitespace ignored).
    pub fn from_base64(s: &str) -> Result<PublicKey, KeyError> {
        let _ = s;
        todo!()
    }
    /// The key as standard base64 (44 characters).
    pub fn to_base64(&self) -> String {
        todo!()
    }
    /// A public key given as base64 text or as the path of a file holding it.
    pub fn from_arg(s: &str) -> Result<PublicKey, KeyError> {
        let _ = s;
        todo!()
    }
}

impl std::fmt::Display for PublicKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.to_base64())
    }
}

/// Reads a file of allowed client public keys: one base64 key per line; blank lines and text
/// after `#` ignored. Errors name the file and the line.
pub fn read_allowed_keys(path: &Path) -> Result<Vec<PublicKey>, KeyError> {
    let _ = path;
    todo!()
}
