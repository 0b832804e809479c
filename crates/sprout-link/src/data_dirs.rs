//! Where the paper's traces are looked for when no folder is named: one order for the
//! command line (`sprout eval`, `sprout sweep`, `sprout saturator check`), the tests
//! ([`crate::testdata`]), the Python package and the README's snippets
//! (docs/data.md says it for people):
//!
//! 1. `--traces DIR` (or the caller's own folder argument), when given;
//! 2. `$SPROUT_TRACES`, when set;
//! 3. `./traces` (where `sprout traces fetch` puts them);
//! 4. `../shared/traces` (the paper's traces beside the repository; the tests read
//!    `$SPROUT_SHARED_DIR/traces` when that is set).
//!
//! The first folder that holds a `NAME.up` / `NAME.down` pair is used. A folder that exists
//! but holds none is described by [`describe_folder`], so that a message can say what is
//! there instead (a mahimahi checkout's `traces/` copied into `./traces`, say).

use std::fs;
use std::path::{Path, PathBuf};

use crate::Trace;

/// The environment variable naming a folder of traces, looked in before `./traces`.
pub const TRACES_ENV: &str = "SPROUT_TRACES";

/// The folders looked in, after `$SPROUT_TRACES`, relative to the current folder.
pub const DEFAULT_TRACE_DIRS: [&str; 2] = ["./traces", "../shared/traces"];

/// The folders looked in for traces when none is named, in order (relative to the current
/// folder): `$SPROUT_TRACES` if set, then [`DEFAULT_TRACE_DIRS`].
pub fn trace_dirs() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::env::var_os(TRACES_ENV)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .into_iter()
        .collect();
    dirs.extend(DEFAULT_TRACE_DIRS.iter().map(PathBuf::from));
    dirs
}

/// The folders of [`trace_dirs`] joined for a message: "$SPROUT_TRACES (x), ./traces or
/// ../shared/traces".
pub fn trace_dirs_shown() -> String {
    let shown: Vec<String> = trace_dirs()
        .iter()
        .enumerate()
        .map(|(k, d)| {
            let is_env = k == 0 && std::env::var_os(TRACES_ENV).is_some_and(|v| !v.is_empty());
            if is_env {
                format!("${TRACES_ENV} ({})", d.display())
            } else {
                d.display().to_string()
            }
        })
        .collect();
    match shown.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => shown.join(""),
    }
}

/// Whether `dir` holds at least one `NAME.up` / `NAME.down` pair.
pub fn holds_pairs(dir: &Path) -> bool {
    matches!(Trace::find_pairs(dir), Ok(p) if !p.is_empty())
}

/// The first folder of [`trace_dirs`] that holds a pair, if any.
pub fn find_trace_dir() -> Option<PathBuf> {
    trace_dirs().into_iter().find(|d| holds_pairs(d))
}

/// What a folder that holds no `NAME.up` / `NAME.down` pair holds instead, as a sentence for
/// a message ("DIR holds no NAME.up/NAME.down pairs; it holds ..."), or `None` when it does
/// not exist or does hold pairs.
pub fn describe_folder(dir: &Path) -> Option<String> {
    if !dir.is_dir() || holds_pairs(dir) {
        return None;
    }
    Some(format!(
        "{} holds no NAME.up/NAME.down pairs; {}",
        dir.display(),
        folder_contents(dir)
    ))
}

/// What `dir` holds, for a message about a folder without pairs: "it holds a folder traces/
/// with 16 such files: use --traces DIR/traces (...)" when a sub-folder (one or two levels
/// down) holds pairs, else "it is empty" or "it holds a, b and 3 more".
pub fn folder_contents(dir: &Path) -> String {
    let Ok(entries) = fs::read_dir(dir) else {
        return "it cannot be read".to_string();
    };
    let mut names: Vec<String> = Vec::new();
    let mut nested: Vec<(PathBuf, usize)> = Vec::new();
    for e in entries.flatten() {
        let path = e.path();
        names.push(e.file_name().to_string_lossy().into_owned());
        if path.is_dir() {
            nested.extend(nested_pairs(&path));
        }
    }
    names.sort();
    nested.sort();
    if let Some((sub, files)) = nested.first() {
        let rel = sub.strip_prefix(dir).unwrap_or(sub).display().to_string();
        return format!(
            "it holds a folder {rel}/ with {files} such files: use --traces {} (or \
             `sprout traces fetch --from {}` to copy them into {})",
            sub.display(),
            sub.display(),
            dir.display()
        );
    }
    if names.is_empty() {
        return "it is empty".to_string();
    }
    let shown: Vec<&str> = names.iter().take(5).map(String::as_str).collect();
    let more = names.len() - shown.len();
    format!(
        "it holds {}{}",
        shown.join(", "),
        if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        }
    )
}

/// `dir` and its sub-folders (one level) that hold pairs, with how many pair files each has.
fn nested_pairs(dir: &Path) -> Vec<(PathBuf, usize)> {
    let count = |d: &Path| Trace::find_pairs(d).map_or(0, |p| p.len() * 2);
    let n = count(dir);
    if n > 0 {
        return vec![(dir.to_path_buf(), n)];
    }
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .filter_map(|p| {
            let n = count(&p);
            (n > 0).then_some((p, n))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair(dir: &Path, name: &str) {
        fs::create_dir_all(dir).unwrap();
        fs::write(dir.join(format!("{name}.up")), "1\n2\n").unwrap();
        fs::write(dir.join(format!("{name}.down")), "1\n2\n").unwrap();
    }

    #[test]
    fn a_folder_of_a_folder_of_traces_is_named_with_the_flag_that_uses_it() {
        let tmp = tempfile::tempdir().unwrap();
        let traces = tmp.path().join("traces");
        for name in ["A", "B", "C"] {
            pair(&traces.join("traces"), name);
        }
        let said = describe_folder(&traces).unwrap();
        let inner = traces.join("traces");
        assert!(
            said.starts_with(&format!(
                "{} holds no NAME.up/NAME.down pairs; it holds a folder traces/ with 6 such files: \
                 use --traces {}",
                traces.display(),
                inner.display()
            )),
            "{said}"
        );
        // A folder with pairs, or none at all, needs no description.
        assert_eq!(describe_folder(&inner), None);
        assert_eq!(describe_folder(&tmp.path().join("nowhere")), None);
        // Two levels down (a mahimahi checkout copied whole: mahimahi/traces/).
        let outer = tmp.path().join("outer");
        pair(&outer.join("mahimahi").join("traces"), "A");
        let said = describe_folder(&outer).unwrap();
        assert!(
            said.contains("a folder mahimahi/traces/ with 2 such files"),
            "{said}"
        );
    }

    #[test]
    fn an_empty_folder_and_one_of_other_files_say_so() {
        let tmp = tempfile::tempdir().unwrap();
        let said = describe_folder(tmp.path()).unwrap();
        assert!(
            said.ends_with("holds no NAME.up/NAME.down pairs; it is empty"),
            "{said}"
        );
        fs::write(tmp.path().join("A.up"), "1\n").unwrap();
        fs::write(tmp.path().join("notes.txt"), "").unwrap();
        let said = describe_folder(tmp.path()).unwrap();
        assert!(said.ends_with("it holds A.up, notes.txt"), "{said}");
    }
}
