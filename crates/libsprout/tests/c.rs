//! The C API from C: tests/c/sansio_test.c compiled with plain `cc` against
//! include/sprout.h and the static library cargo built beside this test binary, run as it is,
//! under valgrind (when present) and with AddressSanitizer (when the compiler has it).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Mutex, MutexGuard};

/// The crate's directory.
fn crate_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Where cargo put the libsprout.a and libsprout.so of this build: beside this test binary, in
/// `target/<profile>/deps/` (cargo builds every crate type of the library for the test but
/// copies them up to `target/<profile>/` only for `cargo build`, whose copy may be stale).
pub(crate) fn lib_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    let deps = exe
        .parent()
        .expect("the test binary is in target/<profile>/deps")
        .to_path_buf();
    assert!(
        deps.join("libsprout.a").is_file() && deps.join("libsprout.so").is_file(),
        "no libsprout.a and libsprout.so in {} (cargo builds them with the test)",
        deps.display()
    );
    deps
}

/// Makes the tests of this binary that build the examples, run programs against the clock or
/// load the CPU (valgrind) run one at a time: the examples are built into the same files, and
/// a second's rate and delay are measured on a 2-core machine.
pub(crate) fn one_at_a_time() -> MutexGuard<'static, ()> {
    static ONE: Mutex<()> = Mutex::new(());
    ONE.lock().unwrap_or_else(|e| e.into_inner())
}

/// The C compiler (`$CC` or `cc`), or `None` (and the reason printed) if there is none.
pub(crate) fn c_compiler() -> Option<String> {
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_string());
    match Command::new(&cc).arg("--version").output() {
        Ok(o) if o.status.success() => Some(cc),
        _ => {
            println!("skipped: no C compiler `{cc}` (set CC)");
            None
        }
    }
}

/// Whether `tool` runs (`tool --version`).
pub(crate) fn have(tool: &str) -> bool {
    Command::new(tool)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// The libraries the static library needs from the system (`--print native-static-libs`).
pub(crate) const STATIC_DEPS: [&str; 6] = ["-lgcc_s", "-lutil", "-lrt", "-lpthread", "-lm", "-ldl"];

/// Compiles `sources` into `exe` with `flags`; panics with the compiler's output on failure
/// unless `may_fail` (then false).
pub(crate) fn compile(
    cc: &str,
    sources: &[PathBuf],
    exe: &Path,
    flags: &[&str],
    may_fail: bool,
) -> bool {
    let include = crate_dir().join("include");
    let out = Command::new(cc)
        .args([
            "-std=c11",
            "-D_POSIX_C_SOURCE=200809L",
            "-Wall",
            "-Wextra",
            "-Werror",
            "-O1",
            "-g",
        ])
        .arg("-I")
        .arg(&include)
        .args(sources)
        .args(flags)
        .arg("-o")
        .arg(exe)
        .output()
        .expect("running the C compiler");
    if !out.status.success() && !may_fail {
        panic!(
            "{cc} failed on {sources:?}:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    out.status.success()
}

fn run(cmd: &mut Command, what: &str) -> Output {
    let out = cmd.output().expect(what);
    let text = format!(
        "{what}: {}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{text}");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains(" passed, 0 failed"),
        "{text}"
    );
    println!("{what}: ok");
    out
}

fn sansio_test(tag: &str, flags: &[&str], may_fail: bool) -> Option<PathBuf> {
    let cc = c_compiler()?;
    let exe = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("sansio_test_{tag}"));
    let mut all = flags.to_vec();
    let lib = lib_dir().join("libsprout.a");
    all.push(lib.to_str().expect("a UTF-8 path"));
    all.extend(STATIC_DEPS);
    let src = crate_dir().join("tests/c/sansio_test.c");
    compile(&cc, &[src], &exe, &all, may_fail).then_some(exe)
}

#[test]
fn the_sans_io_c_test_passes_and_runs_clean_under_valgrind() {
    let _one = one_at_a_time();
    let Some(exe) = sansio_test("plain", &[], false) else {
        return;
    };
    run(&mut Command::new(&exe), "sansio_test");
    if !have("valgrind") {
        println!("skipped: valgrind is not installed");
        return;
    }
    run(
        Command::new("valgrind")
            .args([
                "--error-exitcode=1",
                "--leak-check=full",
                "--errors-for-leak-kinds=definite,indirect,possible",
                "-q",
            ])
            .arg(&exe),
        "sansio_test under valgrind",
    );
}

#[test]
fn the_sans_io_c_test_runs_clean_under_address_sanitizer() {
    let _one = one_at_a_time();
    let flags = ["-fsanitize=address,undefined", "-fno-omit-frame-pointer"];
    let Some(exe) = sansio_test("asan", &flags, true) else {
        println!("skipped: the C compiler cannot build with -fsanitize=address");
        return;
    };
    run(
        Command::new(&exe).env("ASAN_OPTIONS", "detect_leaks=1:abort_on_error=0"),
        "sansio_test with AddressSanitizer",
    );
}
