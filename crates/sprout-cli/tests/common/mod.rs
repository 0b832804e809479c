//! Helpers shared by the `sprout` command's integration tests.

#![allow(dead_code)]

use std::process::Output;

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
