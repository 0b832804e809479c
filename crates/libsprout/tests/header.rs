//! include/sprout.h is what cbindgen makes of the crate (with cbindgen.toml).

use std::path::Path;

#[test]
fn the_checked_in_header_is_what_cbindgen_makes_of_the_code() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let config = cbindgen::Config::from_file(dir.join("cbindgen.toml")).expect("cbindgen.toml");
    let bindings = cbindgen::Builder::new()
        .with_config(config)
        .with_src(dir.join("src/lib.rs"))
        .generate()
        .expect("cbindgen could not read the crate");
    let mut made = Vec::new();
    bindings.write(&mut made);
    let path = dir.join("include/sprout.h");
    if std::env::var_os("SPROUT_WRITE_HEADER").is_some() {
        std::fs::write(&path, &made).expect("writing include/sprout.h");
        return;
    }
    let have = std::fs::read(&path).unwrap_or_default();
    assert!(
        have == made,
        "crates/libsprout/include/sprout.h differs from what cbindgen makes of the code: \
         regenerate it with `SPROUT_WRITE_HEADER=1 cargo test -p libsprout --test \
         libsprout_suite -- header` and commit it"
    );
    let text = String::from_utf8(made).expect("the header is text");
    for f in [
        "sprout_conn_new_client",
        "sprout_conn_poll_transmit",
        "sprout_last_error",
    ] {
        assert!(text.contains(f), "{f} is missing from the header");
    }
}
