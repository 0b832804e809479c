//! Key files: mode 0600, refusal of files others can read, round trips, allowed-keys files.

use std::os::unix::fs::PermissionsExt;

use sprout_secure::{read_allowed_keys, PrivateKey, PublicKey, OVERHEAD_BYTES};

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
    let err = PublicKey::from_arg("no-such-file-or-key")
        .unwrap_err()
        .to_string();
    assert!(err.contains("neither"), "{err}");
    std::fs::write(&path, "garbage\n").unwrap();
    let err = PublicKey::from_arg(path.to_str().unwrap())
        .unwrap_err()
        .to_string();
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
