//! Data the tests need that is not in the repository: the paper's traces and the authors'
//! fixtures. The traces are looked for as the command line looks for them
//! ([`crate::data_dirs`]): `$SPROUT_TRACES`, the workspace's `traces/`, then
//! `../shared/traces`; the fixtures in `../shared/fixtures`. `$SPROUT_SHARED_DIR` stands for
//! `../shared` (docs/data.md: where each comes from and how to get it).
//!
//! A test that needs such a file asks [`require`] for it. When the file is there it gets its
//! path; when it is not, the test is recorded as skipped and should return at once:
//!
//! ```no_run
//! let Some(dir) = sprout_link::testdata::require("traces") else { return };
//! let up = dir.join("Verizon-LTE-short.up");
//! ```
//!
//! A skip is reported where a person sees it: on the terminal, written straight to stderr (the
//! test harness captures only `print!`/`eprint!`, so the line shows even for a passing test),
//! and as a line `TEST<TAB>REASON` appended to the skip log, which `tools/test` (the README's
//! test command) reads after the test run: it lists the skipped tests as its last lines, and
//! fails when `SPROUT_REQUIRE_SHARED=1` (CI sets it when `../shared` exists). The skip log is
//! `$SPROUT_SKIPPED_TESTS` if set, otherwise `skipped-tests.txt` in the target folder of the
//! running test binary (`target/`).
//! `SPROUT_SHARED_DIR=/nowhere cargo test` shows what the tests do without `../shared`.

use std::io::Write;
use std::path::{Path, PathBuf};

/// The environment variable naming the skip log, overriding `target/skipped-tests.txt`.
pub const SKIP_LOG_ENV: &str = "SPROUT_SKIPPED_TESTS";
/// The environment variable naming the shared folder, overriding `../shared` (e.g. a folder
/// that does not exist, to see what the tests do without it).
pub const SHARED_DIR_ENV: &str = "SPROUT_SHARED_DIR";

/// The workspace's root folder (where `Cargo.lock` is).
pub fn workspace_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."))
}

/// `../shared` beside the workspace (or `$SPROUT_SHARED_DIR`), whether or not it exists.
pub fn shared_dir() -> PathBuf {
    if let Some(p) = std::env::var_os(SHARED_DIR_ENV).filter(|p| !p.is_empty()) {
        return PathBuf::from(p);
    }
    workspace_dir()
        .parent()
        .map(|p| p.join("shared"))
        .unwrap_or_else(|| PathBuf::from("../shared"))
}

/// The folder of the paper's traces the tests use: the first of `$SPROUT_TRACES`, the
/// workspace's `traces/` and `../shared/traces` (or `$SPROUT_SHARED_DIR/traces`) that holds a
/// `NAME.up` / `NAME.down` pair, as [`crate::data_dirs`] orders them.
pub fn traces_dir() -> Option<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::env::var_os(crate::data_dirs::TRACES_ENV)
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .into_iter()
        .collect();
    dirs.push(workspace_dir().join("traces"));
    dirs.push(shared_dir().join("traces"));
    dirs.into_iter().find(|d| crate::data_dirs::holds_pairs(d))
}

/// `../shared/<relative>` if it exists (a file or a folder); otherwise records the calling test
/// as skipped (see [`skip`]), naming where to get it, and returns `None`. A path under
/// `traces` is looked for in [`traces_dir`].
pub fn require(relative: impl AsRef<Path>) -> Option<PathBuf> {
    let relative = relative.as_ref();
    if let Ok(rest) = relative.strip_prefix("traces") {
        let found = traces_dir().map(|d| d.join(rest)).filter(|p| p.exists());
        if found.is_none() {
            let what = if rest.as_os_str().is_empty() {
                "the paper's traces".to_string()
            } else {
                format!("the paper's trace {}", rest.display())
            };
            skip(&format!(
                "needs {what}, in none of ${}, ./traces, {}: `sprout traces fetch` (or --from \
                 a mahimahi checkout) gets them; see docs/data.md",
                crate::data_dirs::TRACES_ENV,
                shown(&shared_dir().join("traces"))
            ));
        }
        return found;
    }
    let path = shared_dir().join(relative);
    if path.exists() {
        Some(path)
    } else {
        let why = if relative.starts_with("fixtures") {
            "the Sprout authors' forecasts; see docs/data.md#fixtures for where they come from"
        } else {
            "see docs/data.md"
        };
        skip(&format!("needs {}, which is absent ({why})", shown(&path)));
        None
    }
}

/// Records the calling test as skipped for `reason`: a line on stderr that the test harness
/// does not capture, and a line in the skip log. The test's name is its thread's name (the
/// harness names each test's thread after the test), prefixed with the test binary's name.
pub fn skip(reason: &str) {
    let test = current_test();
    let _ = writeln!(std::io::stderr(), "skipped: {test}: {reason}");
    let log = skip_log();
    if let Some(dir) = log.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    // One write of one line per skip: appends from parallel tests do not interleave.
    let line = format!("{test}\t{}\n", reason.replace(['\t', '\n'], " "));
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log)
    {
        let _ = f.write_all(line.as_bytes());
    }
}

/// The skip log's path: `$SPROUT_SKIPPED_TESTS`, or `skipped-tests.txt` in the target folder.
pub fn skip_log() -> PathBuf {
    if let Some(p) = std::env::var_os(SKIP_LOG_ENV).filter(|p| !p.is_empty()) {
        return PathBuf::from(p);
    }
    // A test binary is target/<profile>/deps/<name>-<hash>.
    let from_exe = std::env::current_exe().ok().and_then(|exe| {
        let deps = exe.parent()?;
        if deps.file_name()? != "deps" {
            return None;
        }
        Some(deps.parent()?.parent()?.to_path_buf())
    });
    from_exe
        .unwrap_or_else(|| workspace_dir().join("target"))
        .join("skipped-tests.txt")
}

/// `binary::test` for the running test: the binary's name without its hash, and the test's
/// path as the harness names its thread.
fn current_test() -> String {
    let binary = std::env::current_exe()
        .ok()
        .and_then(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .map(|s| match s.rsplit_once('-') {
            Some((name, hash)) if hash.chars().all(|c| c.is_ascii_hexdigit()) => name.to_string(),
            _ => s,
        })
        .unwrap_or_else(|| "?".into());
    let thread = std::thread::current();
    match thread.name() {
        Some(name) if name != "main" => format!("{binary}::{name}"),
        _ => binary,
    }
}

/// `path` as `../shared/...` when it is under the default shared folder, as a person would
/// type it from the workspace.
fn shown(path: &Path) -> String {
    if std::env::var_os(SHARED_DIR_ENV).is_some_and(|p| !p.is_empty()) {
        return path.display().to_string();
    }
    match path.strip_prefix(shared_dir()) {
        Ok(rest) => Path::new("../shared").join(rest).display().to_string(),
        Err(_) => path.display().to_string(),
    }
}
