//! X25519 keys: generation, base64 text form (as WireGuard's `wg genkey`), key files written
//! with mode 0600, and the server's file of allowed client public keys.
//!
//! Key files say what they hold: the files this crate writes start with a typed line,
//! [`PRIVATE_KEY_HEADER`] or [`PUBLIC_KEY_HEADER`], then the key in base64 on one line.
//! Files without the line (written by older builds, or by hand) are still read; a typed file
//! given where the other kind is expected is refused with a message that says so (a private
//! key file given as a server's public key, a public key file given as a private key). Every
//! key file and allowed-clients file is opened once and checked through that open handle
//! (mode, kind), and read with a size cap ([`KEY_FILE_CAP`], [`ALLOWED_KEYS_CAP`]): a 1 GiB
//! file or `/dev/zero` is refused at once, and an error quotes at most a short excerpt.

use std::fs::{File, OpenOptions};
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
/// The first line of a private key file this crate writes.
pub const PRIVATE_KEY_HEADER: &str = "# sprout private key: keep it secret";
/// The first line of a public key file this crate writes.
pub const PUBLIC_KEY_HEADER: &str = "# sprout public key";
/// Most bytes a key file may hold (a key and its header are under 100).
pub const KEY_FILE_CAP: u64 = 4 << 10;
/// Most bytes an allowed-clients file may hold (some 70,000 keys with short comments).
pub const ALLOWED_KEYS_CAP: u64 = 4 << 20;

/// What a key file says it holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyFileKind {
    /// Starts with [`PRIVATE_KEY_HEADER`].
    Private,
    /// Starts with [`PUBLIC_KEY_HEADER`].
    Public,
    /// No typed line (an older or handmade file): either.
    Untyped,
}

/// The kind of key file `text` is, from its typed line (the first line that is not blank).
pub fn key_file_kind(text: &str) -> KeyFileKind {
    let first = text.lines().map(str::trim).find(|l| !l.is_empty());
    match first {
        Some(l) if l.starts_with("# sprout private key") => KeyFileKind::Private,
        Some(l) if l.starts_with("# sprout public key") => KeyFileKind::Public,
        _ => KeyFileKind::Untyped,
    }
}

/// The key line of a key file's `text`: the one line left without comments (after `#`) and
/// blank lines; `shown` names the file in errors, which quote at most an excerpt.
fn key_line<'a>(text: &'a str, shown: &str, what: &str) -> Result<&'a str, KeyError> {
    let mut found = None;
    for (i, line) in text.lines().enumerate() {
        let content = line.split('#').next().unwrap_or("").trim();
        if content.is_empty() {
            continue;
        }
        if found.is_some() {
            return Err(KeyError::Invalid(format!(
                "{shown}:{}: a {what} file holds one key, found another line: {:?}",
                i + 1,
                sprout_files::excerpt(content)
            )));
        }
        found = Some(content);
    }
    found.ok_or_else(|| KeyError::Invalid(format!("{shown}: no {what} in the file")))
}

/// Opens `path` once for reading; `what` names the file's role in errors.
fn open_key_file(path: &Path, what: &str) -> Result<(File, std::fs::Metadata), KeyError> {
    let shown = path.display();
    let file = File::open(path)
        .map_err(|e| KeyError::Io(format!("cannot read {what} file {shown}: {e}")))?;
    let meta = file
        .metadata()
        .map_err(|e| KeyError::Io(format!("cannot read {what} file {shown}: {e}")))?;
    if meta.is_dir() {
        return Err(KeyError::Io(format!("{what} file {shown} is a directory")));
    }
    Ok((file, meta))
}

/// Reads the open `file` (named `path`) as text, at most `cap` bytes.
fn read_open(file: File, path: &Path, cap: u64, what: &str) -> Result<String, KeyError> {
    let bytes = sprout_files::read_capped_from(file, path, cap)
        .map_err(|e| KeyError::Io(format!("{what} file: {e}")))?;
    String::from_utf8(bytes).map_err(|e| {
        let mut bytes = e.into_bytes();
        bytes.zeroize();
        KeyError::Invalid(format!("{what} file {} is not text", path.display()))
    })
}

/// Creates `path` (never overwriting it) with `mode` and writes `text` to it, flushed to disk.
fn create_key_file(path: &Path, mode: u32, text: &str, what: &str) -> Result<(), KeyError> {
    let shown = path.display();
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(path)
        .map_err(|e| {
            if e.kind() == std::io::ErrorKind::AlreadyExists {
                KeyError::Io(format!(
                    "{shown} already exists; refusing to overwrite a key file"
                ))
            } else {
                KeyError::Io(format!("cannot create {what} file {shown}: {e}"))
            }
        })?;
    file.write_all(text.as_bytes())
        .and_then(|()| file.sync_all())
        .map_err(|e| KeyError::Io(format!("cannot write {what} file {shown}: {e}")))
}

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
    /// The key of these 32 bytes (an X25519 secret: any 32 bytes are a key; the C library
    /// takes keys this way).
    pub fn from_bytes(bytes: [u8; 32]) -> PrivateKey {
        PrivateKey(bytes)
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
    /// Reads a private key file ([`PRIVATE_KEY_HEADER`] then base64 on one line, or the
    /// base64 line alone), opened once: refuses a file that others than its owner can read or
    /// write (mode & 0o077 != 0, from the open file), naming the command that fixes it, a
    /// public key file (it says so), and anything over [`KEY_FILE_CAP`].
    pub fn read_file(path: &Path) -> Result<PrivateKey, KeyError> {
        let shown = path.display().to_string();
        let (file, meta) = open_key_file(path, "private key")?;
        let mode = meta.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            return Err(KeyError::Io(format!(
                "private key file {shown} has mode {mode:04o}: others than its owner can read or write it; run `chmod 600 {shown}`"
            )));
        }
        let mut text = read_open(file, path, KEY_FILE_CAP, "private key")?;
        let key = if key_file_kind(&text) == KeyFileKind::Public {
            Err(KeyError::Invalid(format!(
                "{shown} is a public key file ({PUBLIC_KEY_HEADER:?}), not a private key: give the file `sprout keygen --out` wrote"
            )))
        } else {
            key_line(&text, &shown, "private key").and_then(|line| {
                PrivateKey::from_base64(line)
                    .map_err(|e| KeyError::Invalid(format!("{shown}: {e}")))
            })
        };
        text.zeroize();
        key
    }
    /// Writes the key to a new file created with mode 0600 ([`PRIVATE_KEY_HEADER`], then the
    /// key in base64); refuses to overwrite.
    pub fn write_file(&self, path: &Path) -> Result<(), KeyError> {
        let mut text = format!("{PRIVATE_KEY_HEADER}\n{}\n", self.to_base64());
        let written = create_key_file(path, 0o600, &text, "private key");
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
    /// A public key given as base64 text or as the path of a file holding it
    /// ([`PUBLIC_KEY_HEADER`] then base64, or the base64 line alone). A private key file
    /// (with [`PRIVATE_KEY_HEADER`]) is refused: it says which key to give instead.
    pub fn from_arg(s: &str) -> Result<PublicKey, KeyError> {
        if let Ok(key) = PublicKey::from_base64(s) {
            return Ok(key);
        }
        let path = Path::new(s);
        let (file, _) = match open_key_file(path, "public key") {
            Ok(f) => f,
            Err(_) if !path.exists() => {
                return Err(KeyError::Invalid(format!(
                    "{:?} is neither a public key ({BASE64_CHARS} characters of base64) nor a file holding one",
                    sprout_files::excerpt(s)
                )))
            }
            Err(e) => return Err(e),
        };
        let mut text = read_open(file, path, KEY_FILE_CAP, "public key")?;
        let key = if key_file_kind(&text) == KeyFileKind::Private {
            Err(KeyError::Invalid(format!(
                "{s} is a private key file ({PRIVATE_KEY_HEADER:?}), not a public key: give the public key, which `sprout keygen --public {s}` prints (and keep the private key file where it is)"
            )))
        } else {
            key_line(&text, s, "public key").and_then(|line| {
                PublicKey::from_base64(line).map_err(|e| KeyError::Invalid(format!("{s}: {e}")))
            })
        };
        // Whatever the file held stays out of memory (it may have been a private key).
        text.zeroize();
        key
    }

    /// Writes the key to a new file ([`PUBLIC_KEY_HEADER`], then the key in base64), mode
    /// 0644; refuses to overwrite.
    pub fn write_file(&self, path: &Path) -> Result<(), KeyError> {
        let text = format!("{PUBLIC_KEY_HEADER}\n{}\n", self.to_base64());
        create_key_file(path, 0o644, &text, "public key")
    }
}

impl std::fmt::Display for PublicKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.to_base64())
    }
}

/// Parses the text of an allowed-keys file (see [`read_allowed_keys`]); `name` is shown in
/// errors. A private key file is refused.
pub fn parse_allowed_keys(text: &str, name: &str) -> Result<Vec<PublicKey>, KeyError> {
    if key_file_kind(text) == KeyFileKind::Private {
        return Err(KeyError::Invalid(format!(
            "{name} is a private key file ({PRIVATE_KEY_HEADER:?}), not a list of allowed client public keys"
        )));
    }
    let mut keys = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let content = line.split('#').next().unwrap_or("").trim();
        if content.is_empty() {
            continue;
        }
        let key = PublicKey::from_base64(content).map_err(|e| {
            KeyError::Invalid(format!(
                "{name}:{}: {e}: {:?}",
                i + 1,
                sprout_files::excerpt(content)
            ))
        })?;
        keys.push(key);
    }
    Ok(keys)
}

/// Reads a file of allowed client public keys: one base64 key per line; blank lines and text
/// after `#` ignored; at most [`ALLOWED_KEYS_CAP`] bytes. Errors name the file and the line,
/// quoting at most an excerpt of it.
pub fn read_allowed_keys(path: &Path) -> Result<Vec<PublicKey>, KeyError> {
    let shown = path.display().to_string();
    let (file, _) = open_key_file(path, "allowed keys")?;
    let mut text = read_open(file, path, ALLOWED_KEYS_CAP, "allowed keys")?;
    let keys = parse_allowed_keys(&text, &shown);
    text.zeroize();
    keys
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
