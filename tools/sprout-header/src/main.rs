//! `sprout-header [--write]`: regenerates libsprout's C header from its code with cbindgen
//! (`crates/libsprout/cbindgen.toml`) and fails when the checked-in
//! `crates/libsprout/include/sprout.h` differs; with `--write`, writes it instead.
//!
//! Run from anywhere: `cargo run --manifest-path tools/sprout-header/Cargo.toml [-- --write]`.
#![forbid(unsafe_code)]

use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// The functions a header that is not empty by mistake must declare.
const EXPECTED: [&str; 6] = [
    "sprout_conn_new_client",
    "sprout_conn_poll_transmit",
    "sprout_last_error",
    "sprout_socket_connect",
    "sprout_socket_bind",
    "sprout_socket_fd",
];

fn crate_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../crates/libsprout")
}

fn main() -> ExitCode {
    let write = match std::env::args().nth(1).as_deref() {
        None => false,
        Some("--write") => true,
        Some(other) => {
            eprintln!("error: unknown argument {other:?}; usage: sprout-header [--write]");
            return ExitCode::from(2);
        }
    };
    let dir = crate_dir();
    let config = match cbindgen::Config::from_file(dir.join("cbindgen.toml")) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: crates/libsprout/cbindgen.toml: {e}");
            return ExitCode::FAILURE;
        }
    };
    let bindings = match cbindgen::Builder::new()
        .with_config(config)
        .with_src(dir.join("src/lib.rs"))
        .generate()
    {
        Ok(b) => b,
        Err(e) => {
            eprintln!("error: cbindgen could not read libsprout: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut made = Vec::new();
    bindings.write(&mut made);
    let text = String::from_utf8_lossy(&made);
    if let Some(f) = EXPECTED.iter().find(|f| !text.contains(**f)) {
        eprintln!("error: the generated header lacks {f}");
        return ExitCode::FAILURE;
    }
    let path = dir.join("include/sprout.h");
    if write {
        if let Err(e) = std::fs::write(&path, &made) {
            eprintln!("error: writing {}: {e}", path.display());
            return ExitCode::FAILURE;
        }
        println!("wrote crates/libsprout/include/sprout.h");
        return ExitCode::SUCCESS;
    }
    if std::fs::read(&path).unwrap_or_default() != made {
        eprintln!(
            "error: crates/libsprout/include/sprout.h differs from what cbindgen makes of the \
             code: regenerate it with `cargo run --manifest-path tools/sprout-header/Cargo.toml \
             -- --write` and commit it"
        );
        return ExitCode::FAILURE;
    }
    println!("crates/libsprout/include/sprout.h is what cbindgen makes of the code");
    ExitCode::SUCCESS
}
