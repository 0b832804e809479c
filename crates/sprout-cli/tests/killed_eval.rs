//! `sprout eval` killed (SIGKILL) at any moment leaves no cut file: every file in its folder is
//! whole (the earlier run's or the new one's), and the manifest says whether the set is
//! complete.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

fn eval(dir: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_sprout"));
    // The built-in synthetic link (the folder holds no traces): no ../shared needed.
    c.current_dir(dir)
        .args(["eval", "--quiet", "--out", "res"])
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    c
}

/// Every file of the folder is whole, and the manifest is either marked incomplete or lists
/// files that all exist.
fn check_whole(res: &Path, when: &str) {
    for entry in std::fs::read_dir(res).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if name.ends_with(".part") {
            continue; // being written when the run died; never a result's name
        }
        let text = std::fs::read_to_string(&path).unwrap();
        if name.ends_with(".csv") {
            // Every record as long as the header (a cut row is shorter), ending in a newline.
            assert!(text.ends_with('\n'), "{when}: {name} is cut");
            let mut reader = csv::Reader::from_reader(text.as_bytes());
            for record in reader.records() {
                record.unwrap_or_else(|e| panic!("{when}: {name}: {e}"));
            }
        } else if name.ends_with(".json") {
            serde_json::from_str::<serde_json::Value>(&text)
                .unwrap_or_else(|e| panic!("{when}: {name} is cut: {e}"));
        } else if name.ends_with(".svg") {
            assert!(text.trim_end().ends_with("</svg>"), "{when}: {name} is cut");
        } else if name == "files.txt" && !text.starts_with("# INCOMPLETE") {
            for listed in text.lines() {
                assert!(
                    res.join(listed).exists(),
                    "{when}: files.txt lists {listed}"
                );
            }
        }
    }
}

#[test]
fn a_killed_eval_leaves_whole_files_and_says_whether_the_set_is_complete() {
    let dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    assert!(eval(dir.path()).status().unwrap().success());
    let full = started.elapsed();
    let res = dir.path().join("res");
    check_whole(&res, "a complete run");
    // Kill a second run into the same folder at 6 moments from 70% to 95% of its length,
    // where it writes its files (the simulations come first).
    for k in 14..=19u32 {
        let mut child = eval(dir.path()).spawn().unwrap();
        let at = full * k / 20;
        std::thread::sleep(at);
        let _ = child.kill();
        let status = child.wait().unwrap();
        // Killed before it wrote anything, the earlier run's complete set stands; killed
        // while writing, the manifest says the set is incomplete.
        check_whole(&res, &format!("killed at {at:?} ({status})"));
    }
    // A run to the end makes the folder complete again.
    assert!(eval(dir.path()).status().unwrap().success());
    check_whole(&res, "a run after the kills");
    let manifest = std::fs::read_to_string(res.join("files.txt")).unwrap();
    assert!(!manifest.starts_with("# INCOMPLETE"));
    assert!(manifest.lines().any(|l| l == "results.csv"));
    assert!(std::fs::read_dir(&res).unwrap().all(|e| !e
        .unwrap()
        .file_name()
        .to_string_lossy()
        .ends_with(".part")));
}
