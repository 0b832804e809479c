//! Helpers shared by the `sprout` command's integration tests.

#![allow(dead_code)]

use std::net::UdpSocket;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

/// The `sprout` under test: this build's, or the one `SPROUT_TEST_BIN` names (to show that
/// an older build fails these tests).
pub(crate) fn sprout_bin() -> String {
    std::env::var("SPROUT_TEST_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_sprout").into())
}

/// Fails the test with the command's stderr unless it succeeded.
pub(crate) fn assert_ok(out: &Output) {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A `sprout` command (the build under test, [`sprout_bin`]).
pub(crate) fn sprout() -> Command {
    Command::new(sprout_bin())
}

/// Starts `cmd` with no input and its output piped (read it with `wait_with_output`).
pub(crate) fn spawn(cmd: &mut Command) -> Child {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("sprout starts")
}

/// Whether the tests run as root (network namespaces, TUN devices).
pub(crate) fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// A UDP port on `ip` that nothing listens on right now.
pub(crate) fn free_udp_port(ip: &str) -> u16 {
    UdpSocket::bind((ip, 0))
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `sprout keygen --out DIR/NAME`: the private key's path and the printed public key.
pub(crate) fn keygen(dir: &Path, name: &str) -> (PathBuf, String) {
    let path = dir.join(name);
    let out = sprout()
        .args(["keygen", "--out"])
        .arg(&path)
        .output()
        .unwrap();
    assert_ok(&out);
    let public = String::from_utf8(out.stdout).unwrap().trim().to_string();
    assert_eq!(public.len(), 44, "{public}");
    (path, public)
}
