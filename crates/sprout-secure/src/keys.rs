//! X25519 keys: generation, base64 text form (as WireGuard's `wg genkey`), key files written
//! with mode 0600, and the server's file of allowed client public keys.

use std::fs::OpenOptions;
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use thiserror::Error;
use zeroize::Zeroize;

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

/// Characters of a key in standard base64 (32 bytes with one `=` of padding).
pub const BASE64_CHARS: usize = 44;

/// Decodes 44 characters of standard base64 into 32 bytes, or says why not (`what` names the
/// kind of key in the message).
fn decode_key(s: &str, what: &str) -> Result<[u8; 32], KeyError> {
    let t = s.trim();
    if t.len() != BASE64_CHARS {
        return Err(KeyError::Invalid(format!(
            "not a {what}: expected {BASE64_CHARS} characters of base64, got {}",
            t.chars().count()
        )));
    }
    let mut bytes = STANDARD
        .decode(t)
        .map_err(|e| KeyError::Invalid(format!("not a {what}: bad base64 ({e})")))?;
    if bytes.len() != 32 {
        bytes.zeroize();
        return Err(KeyError::Invalid(format!(
            "not a {what}: base64 of {} bytes, not 32",
            bytes.len()
        )));
    }
    let mut key = [0u8; 32];
    key.copy_from_slice(&bytes);
    bytes.zeroize();
    Ok(key)
}

impl PrivateKey {
    /// A fresh random key from the operating system's generator.
    ///
    /// # Panics
    ///
    /// If the operating system has no random generator to offer (no key can be made safely).
    pub fn generate() -> PrivateKey {
        let mut key = [0u8; 32];
        getrandom::getrandom(&mut key).expect("the operating system's random generator failed");
        PrivateKey(key)
    }
    /// The matching public key.
    pub fn public_key(&self) -> PublicKey {
        let secret = x25519_dalek::StaticSecret::from(self.0);
        PublicKey(x25519_dalek::PublicKey::from(&secret).to_bytes())
    }
    /// The key's 32 bytes.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }
    /// Parses 44 characters of standard base64 (surrounding whitespace ignored).
    pub fn from_base64(s: &str) -> Result<PrivateKey, KeyError> {
        decode_key(s, "private key").map(PrivateKey)
    }
    /// The key as standard base64 (44 characters).
    pub fn to_base64(&self) -> String {
        STANDARD.encode(self.0)
    }
    /// Reads a key file (base64 on one line). Refuses a file that others than its owner can
    /// read or write (mode & 0o077 != 0), naming the command that fixes it.
    pub fn read_file(path: &Path) -> Result<PrivateKey, KeyError> {
        let shown = path.display();
        let meta = std::fs::metadata(path)
            .map_err(|e| KeyError::Io(format!("cannot read private key file {shown}: {e}")))?;
        let mode = meta.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            return Err(KeyError::Io(format!(
                "private key file {shown} has mode {mode:04o}: others than its owner can read or write it; run `chmod 600 {shown}`"
            )));
        }
        let mut text = std::fs::read_to_string(path)
            .map_err(|e| KeyError::Io(format!("cannot read private key file {shown}: {e}")))?;
        let key =
            PrivateKey::from_base64(&text).map_err(|e| KeyError::Invalid(format!("{shown}: {e}")));
        text.zeroize();
        key
    }
    /// Writes the key to a new file created with mode 0600; refuses to overwrite.
    pub fn write_file(&self, path: &Path) -> Result<(), KeyError> {
        let shown = path.display();
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(path)
            .map_err(|e| {
                if e.kind() == std::io::ErrorKind::AlreadyExists {
                    KeyError::Io(format!(
                        "{shown} already exists; refusing to overwrite a key file"
                    ))
                } else {
                    KeyError::Io(format!("cannot create private key file {shown}: {e}"))
                }
            })?;
        let mut text = self.to_base64();
        text.push('\n');
        let written = file
            .write_all(text.as_bytes())
            .and_then(|()| file.sync_all())
            .map_err(|e| KeyError::Io(format!("cannot write private key file {shown}: {e}")));
        text.zeroize();
        written
    }
}

impl Drop for PrivateKey {
    fn drop(&mut self) {
        self.0.zeroize();
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
        decode_key(s, "public key").map(PublicKey)
    }
    /// The key as standard base64 (44 characters).
    pub fn to_base64(&self) -> String {
        STANDARD.encode(self.0)
    }
    /// A public key given as base64 text or as the path of a file holding it.
    pub fn from_arg(s: &str) -> Result<PublicKey, KeyError> {
        if let Ok(key) = PublicKey::from_base64(s) {
            return Ok(key);
        }
        let path = Path::new(s);
        if path.is_file() {
            let text = std::fs::read_to_string(path)
                .map_err(|e| KeyError::Io(format!("cannot read public key file {s}: {e}")))?;
            return PublicKey::from_base64(&text)
                .map_err(|e| KeyError::Invalid(format!("{s}: {e}")));
        }
        Err(KeyError::Invalid(format!(
            "{s:?} is neither a public key ({BASE64_CHARS} characters of base64) nor a file holding one"
        )))
    }
}

impl std::fmt::Display for PublicKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.to_base64())
    }
}

/// Parses the text of an allowed-keys file (see [`read_allowed_keys`]); `name` is shown in
/// errors.
pub fn parse_allowed_keys(text: &str, name: &str) -> Result<Vec<PublicKey>, KeyError> {
    let mut keys = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let content = line.split('#').next().unwrap_or("").trim();
        if content.is_empty() {
            continue;
        }
        let key = PublicKey::from_base64(content)
            .map_err(|e| KeyError::Invalid(format!("{name}:{}: {e}", i + 1)))?;
        keys.push(key);
    }
    Ok(keys)
}

/// Reads a file of allowed client public keys: one base64 key per line; blank lines and text
/// after `#` ignored. Errors name the file and the line.
pub fn read_allowed_keys(path: &Path) -> Result<Vec<PublicKey>, KeyError> {
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(path)
        .map_err(|e| KeyError::Io(format!("cannot read allowed keys file {shown}: {e}")))?;
    parse_allowed_keys(&text, &shown)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_key_round_trips_through_base64() {
        let k = PrivateKey::generate();
        let s = k.to_base64();
        assert_eq!(s.len(), BASE64_CHARS);
        let back = PrivateKey::from_base64(&format!("  {s}\n")).unwrap();
        assert_eq!(back.as_bytes(), k.as_bytes());
        assert_eq!(back.public_key(), k.public_key());
    }

    #[test]
    fn public_key_matches_rfc7748_test_vector() {
        // RFC 7748 section 6.1: Alice's private and public keys.
        let hex = |s: &str| -> [u8; 32] {
            let mut out = [0u8; 32];
            for (i, o) in out.iter_mut().enumerate() {
                *o = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap();
            }
            out
        };
        let private = PrivateKey(hex(
            "77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a",
        ));
        let public = hex("8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a");
        assert_eq!(private.public_key().0, public);
    }

    #[test]
    fn bad_base64_is_refused() {
        assert!(PublicKey::from_base64("abc").is_err());
        assert!(PublicKey::from_base64(&"!".repeat(44)).is_err());
        // 44 characters of base64 that decode to 33 bytes cannot exist; 43 chars + '=' of a
        // 31-byte value would be 44 characters too: refused for its length.
        let short = STANDARD.encode([7u8; 31]);
        assert!(PublicKey::from_base64(&short).is_err());
    }

    #[test]
    fn allowed_keys_skip_comments_and_name_the_bad_line() {
        let a = PrivateKey::generate().public_key();
        let b = PrivateKey::generate().public_key();
        let text = format!("# clients\n{a}  # phone\n\n   \n{b}\n");
        assert_eq!(parse_allowed_keys(&text, "f").unwrap(), vec![a, b]);
        let bad = format!("{a}\n# ok\nnot-a-key\n");
        let err = parse_allowed_keys(&bad, "allowed.txt")
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("allowed.txt:3:"), "{err}");
    }
}
