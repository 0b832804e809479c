//! Key files: mode 0600, refusal of files others can read, round trips, allowed-keys files.

use std::os::unix::fs::PermissionsExt;

use sprout_secure::{read_allowed_keys, PrivateKey, PublicKey, OVERHEAD_BYTES};

/// Why `PublicKey::from_arg(arg)` refused `arg` (panics if it did not).
fn public_key_error(arg: &str) -> String {
    PublicKey::from_arg(arg).unwrap_err().to_string()
}

#[test]
fn private_key_file_is_created_0600_and_read_back() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("server.key");
    let key = PrivateKey::generate();
    key.write_file(&path).unwrap();
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let back = PrivateKey::read_file(&path).unwrap();
    assert_eq!(back.as_bytes(), key.as_bytes());
    assert_eq!(back.public_key(), key.public_key());
    // Never overwritten.
    let err = PrivateKey::generate()
        .write_file(&path)
        .unwrap_err()
        .to_string();
    assert!(err.contains("already exists"), "{err}");
    assert_eq!(
        PrivateKey::read_file(&path).unwrap().as_bytes(),
        key.as_bytes()
    );
}

#[test]
fn a_key_file_others_can_read_is_refused_with_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("client.key");
    PrivateKey::generate().write_file(&path).unwrap();
    for mode in [0o644, 0o640, 0o604, 0o660, 0o602] {
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        let err = PrivateKey::read_file(&path).unwrap_err().to_string();
        assert!(
            err.contains(&format!("chmod 600 {}", path.display())),
            "{err}"
        );
        assert!(err.contains(&format!("{mode:04o}")), "{err}");
    }
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o400)).unwrap();
    assert!(PrivateKey::read_file(&path).is_ok());
    let missing = dir.path().join("missing.key");
    let err = PrivateKey::read_file(&missing).unwrap_err().to_string();
    assert!(err.contains("missing.key"), "{err}");
}

#[test]
fn public_keys_from_text_or_file() {
    let dir = tempfile::tempdir().unwrap();
    let key = PrivateKey::generate().public_key();
    let text = key.to_base64();
    assert_eq!(text.len(), 44);
    assert_eq!(PublicKey::from_arg(&text).unwrap(), key);
    let path = dir.path().join("server.pub");
    std::fs::write(&path, format!("{text}\n")).unwrap();
    assert_eq!(PublicKey::from_arg(path.to_str().unwrap()).unwrap(), key);
    let err = public_key_error("no-such-file-or-key");
    assert!(err.contains("neither"), "{err}");
    std::fs::write(&path, "garbage\n").unwrap();
    let err = public_key_error(path.to_str().unwrap());
    assert!(err.contains("server.pub"), "{err}");
}

#[test]
fn allowed_keys_file_errors_name_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("allowed");
    let a = PrivateKey::generate().public_key();
    let b = PrivateKey::generate().public_key();
    std::fs::write(&path, format!("# two phones\n{a}\n\n{b} # laptop\n")).unwrap();
    assert_eq!(read_allowed_keys(&path).unwrap(), vec![a, b]);
    std::fs::write(&path, format!("{a}\n{b}\n\n{}x\n", &a.to_base64()[..40])).unwrap();
    let err = read_allowed_keys(&path).unwrap_err().to_string();
    assert!(err.starts_with(&format!("{}:4:", path.display())), "{err}");
    let err = read_allowed_keys(&dir.path().join("nope"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("nope"), "{err}");
}

#[test]
fn the_core_leaves_room_for_the_security_overhead() {
    assert_eq!(sprout_core::params::SECURE_OVERHEAD_BYTES, OVERHEAD_BYTES);
}

/// Issue 22, finding 9: a public key file was accepted as a private key, and the server's
/// private key file as `--server-key`, without a word.
#[test]
fn private_and_public_key_files_are_told_apart() {
    let dir = tempfile::tempdir().unwrap();
    let private = PrivateKey::generate();
    let private_path = dir.path().join("server.key");
    private.write_file(&private_path).unwrap();
    let text = std::fs::read_to_string(&private_path).unwrap();
    assert!(text.starts_with("# sprout private key"), "{text}");
    let public_path = dir.path().join("server.pub");
    private.public_key().write_file(&public_path).unwrap();
    // Each where it belongs.
    assert_eq!(
        PrivateKey::read_file(&private_path).unwrap().as_bytes(),
        private.as_bytes()
    );
    let arg = |p: &std::path::Path| p.to_str().unwrap().to_string();
    assert_eq!(
        PublicKey::from_arg(&arg(&public_path)).unwrap(),
        private.public_key()
    );
    // The private key file given as the server's public key: refused, saying what to give.
    let err = public_key_error(&arg(&private_path));
    assert!(err.contains("is a private key file"), "{err}");
    assert!(err.contains("sprout keygen --public"), "{err}");
    assert!(!err.contains(&private.to_base64()), "the key is not echoed");
    // The public key file given as a private key (even with mode 0600): refused.
    std::fs::set_permissions(&public_path, std::fs::Permissions::from_mode(0o600)).unwrap();
    let err = PrivateKey::read_file(&public_path).unwrap_err().to_string();
    assert!(err.contains("is a public key file"), "{err}");
    // A private key file given as the allowed-clients list: refused.
    let err = read_allowed_keys(&private_path).unwrap_err().to_string();
    assert!(err.contains("is a private key file"), "{err}");
    // Files without the typed line (older builds, by hand) are still read.
    let old_private = dir.path().join("old.key");
    std::fs::write(&old_private, format!("{}\n", private.to_base64())).unwrap();
    std::fs::set_permissions(&old_private, std::fs::Permissions::from_mode(0o600)).unwrap();
    assert_eq!(
        PrivateKey::read_file(&old_private).unwrap().as_bytes(),
        private.as_bytes()
    );
    let old_public = dir.path().join("old.pub");
    std::fs::write(&old_public, format!("{}\n", private.public_key())).unwrap();
    assert_eq!(
        PublicKey::from_arg(&arg(&old_public)).unwrap(),
        private.public_key()
    );
    // Two keys in one key file: refused, quoting an excerpt.
    std::fs::write(&old_public, format!("{0}\n{0}\n", private.public_key())).unwrap();
    let err = public_key_error(&arg(&old_public));
    assert!(err.contains("one key"), "{err}");
}

/// Issue 22, findings 8 and 9: a huge or endless file given as a key file or an allowed-clients
/// file is refused at once with a short message.
#[test]
fn huge_and_endless_key_files_are_refused_quickly() {
    let dir = tempfile::tempdir().unwrap();
    let huge = dir.path().join("huge");
    let f = std::fs::File::create(&huge).unwrap();
    f.set_len(1 << 30).unwrap();
    drop(f);
    std::fs::set_permissions(&huge, std::fs::Permissions::from_mode(0o600)).unwrap();
    let started = std::time::Instant::now();
    let errors = [
        read_allowed_keys(&huge).unwrap_err().to_string(),
        read_allowed_keys(std::path::Path::new("/dev/zero"))
            .unwrap_err()
            .to_string(),
        public_key_error(huge.to_str().unwrap()),
        public_key_error("/dev/zero"),
        PrivateKey::read_file(&huge).unwrap_err().to_string(),
    ];
    let took = started.elapsed();
    println!("{took:?}: {errors:#?}");
    assert!(took < std::time::Duration::from_secs(1), "{took:?}");
    for e in &errors {
        assert!(e.len() < 200, "{} bytes: {}", e.len(), &e[..200]);
        assert!(e.contains("larger than"), "{e}");
    }
    // A long bad line is quoted by an excerpt only.
    let allowed = dir.path().join("allowed");
    std::fs::write(&allowed, format!("{}\n", "x".repeat(100_000))).unwrap();
    let e = read_allowed_keys(&allowed).unwrap_err().to_string();
    assert!(e.len() < 300, "{} bytes", e.len());
    assert!(e.starts_with(&format!("{}:1:", allowed.display())), "{e}");
}
