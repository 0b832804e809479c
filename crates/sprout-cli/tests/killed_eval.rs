//! `sprout eval` killed (SIGKILL) at any moment leaves no cut file and no mix of runs that
//! looks complete: every file in its folder is whole and byte for byte one run's; unless the
//! folder is marked incomplete (an `INCOMPLETE` file; the manifest's first line says so too
//! while the files move), it holds
//! exactly one run's files, listed by its manifest; and `report.md`, when there, sits only
//! beside its own run's tables and charts (issue 22, finding 7).

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

/// The `sprout` under test: this build's, or the one `SPROUT_TEST_BIN` names (to show that
/// an older build fails these tests).
fn sprout_bin() -> String {
    std::env::var("SPROUT_TEST_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_sprout").into())
}

/// The experiments of run A (the earlier run in the folder) and of run B (the one killed).
const A: &str = "fig7";
const B: &str = "fig7,loss";

fn eval(dir: &Path, out: &str, experiments: &str) -> Command {
    let mut c = Command::new(sprout_bin());
    // No traces beside the folder: the built-in synthetic link (or ../shared/traces if the
    // temporary folder's parent has one); either way the same for every run.
    c.current_dir(dir)
        .args([
            "eval",
            "--quiet",
            "--out",
            out,
            "--experiments",
            experiments,
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    c
}

/// The visible files of a folder, by name, with their contents.
fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            let bytes = std::fs::read(&p).unwrap();
            (name, bytes)
        })
        .filter(|(n, _)| !n.starts_with('.'))
        .collect()
}

/// Which run a report or results.json is of: its experiments.
fn run_of(name: &str, bytes: &[u8]) -> &'static str {
    let text = String::from_utf8_lossy(bytes);
    let loss = match name {
        "report.md" => text.contains("Experiments: fig7, loss."),
        "results.json" => {
            let v: serde_json::Value = serde_json::from_str(&text).unwrap();
            v["experiments"]
                .as_array()
                .unwrap()
                .iter()
                .any(|e| e == "loss")
        }
        _ => unreachable!(),
    };
    if loss {
        B
    } else {
        A
    }
}

/// A whole file: the CSVs parse to the end, with a final newline; the JSON parses; an SVG
/// ends with its closing tag.
fn check_whole(name: &str, bytes: &[u8], when: &str) {
    let text = std::str::from_utf8(bytes).unwrap_or_else(|_| panic!("{when}: {name}: not text"));
    if name.ends_with(".csv") {
        assert!(text.ends_with('\n'), "{when}: {name} is cut");
        for record in csv::Reader::from_reader(text.as_bytes()).records() {
            record.unwrap_or_else(|e| panic!("{when}: {name}: {e}"));
        }
    } else if name.ends_with(".json") {
        serde_json::from_str::<serde_json::Value>(text)
            .unwrap_or_else(|e| panic!("{when}: {name} is cut: {e}"));
    } else if name.ends_with(".svg") {
        assert!(text.trim_end().ends_with("</svg>"), "{when}: {name} is cut");
    }
}

/// The checks of a folder after a kill; `runs` are the complete folders of runs A and B.
fn check(res: &Path, runs: &BTreeMap<&str, BTreeMap<String, Vec<u8>>>, when: &str) -> bool {
    let now = files(res);
    let manifest = String::from_utf8_lossy(&now["files.txt"]).into_owned();
    // The `INCOMPLETE` file is the mark: written before the manifest is marked and removed
    // after the final manifest is written, so a kill between two of those steps leaves the
    // file without the manifest's mark (a whole set called incomplete), never the reverse.
    let incomplete = now.contains_key("INCOMPLETE");
    assert!(
        incomplete || !manifest.starts_with("# INCOMPLETE"),
        "{when}: the manifest is marked incomplete but the INCOMPLETE file is gone"
    );
    for (name, bytes) in &now {
        check_whole(name, bytes, when);
        // A table or chart is byte for byte one run's (the report and results.json say the
        // run's wall time, so they are told apart by their experiments).
        if name.ends_with(".csv") || name.ends_with(".svg") {
            assert!(
                runs.values().any(|r| r.get(name) == Some(bytes)),
                "{when}: {name} is neither run's"
            );
        }
    }
    let data = |files: &BTreeMap<String, Vec<u8>>| -> BTreeMap<String, Vec<u8>> {
        files
            .iter()
            .filter(|(n, _)| n.ends_with(".csv") || n.ends_with(".svg"))
            .map(|(n, b)| (n.clone(), b.clone()))
            .collect()
    };
    if let Some(report) = now.get("report.md") {
        // A report sits beside its own run's files only, marked incomplete or not.
        let run = run_of("report.md", report);
        assert_eq!(
            data(&now),
            data(&runs[run]),
            "{when}: report.md of run {run} beside another run's files"
        );
        if let Some(json) = now.get("results.json") {
            assert_eq!(run_of("results.json", json), run, "{when}: results.json");
        }
    }
    if !incomplete {
        // Unmarked: one run's complete set, every file listed.
        let listed: Vec<&str> = manifest.lines().collect();
        let present: Vec<&str> = now
            .keys()
            .map(String::as_str)
            .filter(|n| *n != "files.txt")
            .collect();
        assert_eq!(listed, present, "{when}: files.txt");
        assert!(now.contains_key("report.md"), "{when}: no report, unmarked");
    }
    incomplete
}

/// Fills `res` with run A's complete files (and nothing else) and starts run B into it.
fn start_b_over_a(d: &Path, res: &Path, run_a: &BTreeMap<String, Vec<u8>>) -> std::process::Child {
    let _ = std::fs::remove_dir_all(res);
    std::fs::create_dir(res).unwrap();
    for (name, bytes) in run_a {
        std::fs::write(res.join(name), bytes).unwrap();
    }
    eval(d, "res", B).spawn().unwrap()
}

#[test]
fn a_killed_eval_leaves_whole_files_and_never_a_report_beside_another_runs_tables() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // The complete folders of runs A and B, for reference.
    let mut runs = BTreeMap::new();
    for (run, out) in [(A, "ref-a"), (B, "ref-b")] {
        let started = Instant::now();
        assert!(eval(d, out, run).status().unwrap().success());
        runs.insert(run, (files(&d.join(out)), started.elapsed()));
    }
    let full = runs[B].1;
    let runs: BTreeMap<&str, BTreeMap<String, Vec<u8>>> =
        runs.into_iter().map(|(k, (f, _))| (k, f)).collect();
    // A folder holding run A (a copy of its complete folder), into which run B is started
    // and killed at 5 moments from 76% to 100% of its length (the simulations come first,
    // the files last: here, about the last tenth), or ends. (Each moment costs a run of the
    // evaluation; 13 moments took 7 minutes of CI on a loaded machine.)
    let res = d.join("res");
    let (mut marked, mut ended) = (0, 0);
    let mut kills = 0;
    for k in [38u32, 41, 44, 47, 50] {
        kills += 1;
        let mut child = start_b_over_a(d, &res, &runs[A]);
        let at = full * k / 50;
        std::thread::sleep(at);
        let _ = child.kill();
        let status = child.wait().unwrap();
        ended += usize::from(status.success());
        let when = format!("killed at {at:?} ({status})");
        marked += usize::from(check(&res, &runs, &when));
        // The next run to the end leaves one run's complete set, and nothing of the others.
        if k == 44 || k == 50 {
            assert!(eval(d, "res", A).status().unwrap().success());
            assert!(!check(&res, &runs, "a run after the kill"));
            assert_eq!(files(&res).len(), runs[A].len());
            let hidden = std::fs::read_dir(&res)
                .unwrap()
                .filter(|e| {
                    e.as_ref()
                        .unwrap()
                        .file_name()
                        .to_string_lossy()
                        .starts_with('.')
                })
                .count();
            assert_eq!(hidden, 0, "a killed run's hidden folder is left");
        }
    }
    // Killed the moment results.csv changes: while the run puts its files in place.
    for _ in 0..2 {
        kills += 1;
        let mut child = start_b_over_a(d, &res, &runs[A]);
        let started = Instant::now();
        while child.try_wait().unwrap().is_none()
            && std::fs::read(res.join("results.csv")).ok().as_ref() == runs[A].get("results.csv")
        {
            std::thread::sleep(std::time::Duration::from_micros(200));
        }
        let _ = child.kill();
        let status = child.wait().unwrap();
        ended += usize::from(status.success());
        let when = format!(
            "killed as results.csv changed, {:?} ({status})",
            started.elapsed()
        );
        marked += usize::from(check(&res, &runs, &when));
    }
    eprintln!("{marked} of {kills} kills left the folder marked incomplete; {ended} runs ended");
    // Every file of a complete folder is one run's; the references are complete.
    for (run, f) in &runs {
        assert!(
            f.contains_key("report.md") && f.contains_key("results.csv"),
            "{run}"
        );
    }
}

#[test]
fn a_sweep_killed_and_resumed_gives_the_rows_of_one_that_ran_through() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let spec = d.join("s.toml");
    std::fs::write(
        &spec,
        "traces = [{ name = \"c\", constant = { mbps = 6, seconds = 30 } }]\n\
         schemes = [\"sprout\", \"cubic\"]\nseeds = 8\n[sim]\nskip = 5.0\n",
    )
    .unwrap();
    let sweep = |out: &str| {
        let mut c = Command::new(sprout_bin());
        c.current_dir(d)
            .args(["sweep", "s.toml", "--out", out])
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        c
    };
    let started = Instant::now();
    assert!(sweep("ref.csv").status().unwrap().success());
    let full = started.elapsed();
    let reference = std::fs::read(d.join("ref.csv")).unwrap();
    // Killed at a third and at two thirds of its length, then run to the end.
    for k in [1u32, 2] {
        let mut child = sweep("out.csv").spawn().unwrap();
        std::thread::sleep(full * k / 3);
        let _ = child.kill();
        child.wait().unwrap();
    }
    assert!(sweep("out.csv").status().unwrap().success());
    assert!(std::fs::read(d.join("out.csv")).unwrap() == reference);
    let hidden = std::fs::read_dir(d)
        .unwrap()
        .filter(|e| {
            let name = e.as_ref().unwrap().file_name();
            name.to_string_lossy().ends_with(".part")
        })
        .count();
    assert_eq!(hidden, 0);
}
