//! What a new user meets in the first hour: no silent all-zero result, no unbounded run, no
//! figure that means nothing, and the command line's edges (negative values, a closed pipe,
//! a failed check's exit status, an output folder used twice).

use std::path::Path;
use std::process::{Command, Output, Stdio};

use sprout_link::testdata;

fn sprout() -> Command {
    Command::new(env!("CARGO_BIN_EXE_sprout"))
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// `sprout traces synth --kind brownian --out DIR/x` (60 s each way); the trace's stem.
fn brownian(dir: &Path) -> String {
    let stem = dir.join("x").display().to_string();
    let out = sprout()
        .args(["traces", "synth", "--kind", "brownian", "--out", &stem])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    stem
}

fn sim(stem: &str, extra: &[&str]) -> Output {
    sprout()
        .arg("sim")
        .args(["--uplink", &format!("{stem}.up")])
        .args(["--downlink", &format!("{stem}.down")])
        .args(extra)
        .output()
        .unwrap()
}

#[test]
fn a_window_that_measures_nothing_is_an_error_not_zeros() {
    let dir = tempfile::tempdir().unwrap();
    let stem = brownian(dir.path());
    // The default skip (60 s) of a 60 s trace, and --skip beyond --duration.
    for extra in [&[][..], &["--duration", "20", "--skip", "30"][..]] {
        let out = sim(&stem, extra);
        assert_eq!(out.status.code(), Some(1), "{extra:?}: {}", stdout(&out));
        assert!(
            stdout(&out).is_empty(),
            "no table of zeros: {}",
            stdout(&out)
        );
        let err = stderr(&out);
        assert!(
            err.contains("x.up") && err.contains("give a --skip at most"),
            "{err}"
        );
    }
    // The evaluation of a folder of such traces says the same, and fails.
    let out = sprout()
        .args(["eval", "--quiet", "--out"])
        .arg(dir.path().join("res"))
        .arg("--traces")
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert!(
        stderr(&out).contains("give a --skip at most"),
        "{}",
        stderr(&out)
    );
    // With room to measure, it runs.
    let out = sim(&stem, &["--skip", "10"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("measured from 10.0 s"));
}

#[test]
fn a_run_too_large_to_hold_is_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let stem = brownian(dir.path());
    let started = std::time::Instant::now();
    let out = sim(&stem, &["--duration", "1e12", "--skip", "0"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains("give a --duration of at most"), "{err}");
    assert!(started.elapsed().as_secs() < 10, "refused before running");
}

#[test]
fn an_unloaded_direction_has_no_data_only_delay_and_tcp_no_confidence() {
    let dir = tempfile::tempdir().unwrap();
    let stem = brownian(dir.path());
    let out = sim(
        &stem,
        &[
            "--scheme", "cubic", "--load", "up", "--skip", "10", "--json",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert!(v["downlink"]["metrics"]["self_inflicted_data_ms"].is_null());
    assert!(v["uplink"]["metrics"]["self_inflicted_data_ms"].is_number());
    let out = sim(
        &stem,
        &["--scheme", "cubic", "--load", "up", "--skip", "10"],
    );
    let text = stdout(&out);
    let header = text.lines().next().unwrap();
    assert!(
        header.starts_with("cubic, load uplink only"),
        "no confidence for TCP: {header}"
    );
    assert!(
        text.contains("none for the downlink, which carried no data"),
        "{text}"
    );
    let down = text.lines().find(|l| l.starts_with("downlink")).unwrap();
    assert!(down.trim_end().ends_with(" -"), "{down}");
}

#[test]
fn a_parameter_a_scheme_ignores_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let stem = brownian(dir.path());
    let out = sim(
        &stem,
        &["--scheme", "sprout-ewma", "--param", "model.sigma=250"],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("sprout-ewma does not use it"));
    let out = sim(&stem, &["--scheme", "sprout-ewma", "--confidence", "0.5"]);
    assert!(stderr(&out).contains("--confidence applies to sprout only"));
}

#[test]
fn negative_values_reach_the_options_own_check() {
    let dir = tempfile::tempdir().unwrap();
    let stem = dir.path().join("n").display().to_string();
    let out = sprout()
        .args(["traces", "synth", "--kind", "brownian", "--out", &stem])
        .args(["--seconds", "-10"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains("--seconds must be more than 0"), "{err}");
    // And a trace of a billion seconds is refused before a line is written.
    let out = sprout()
        .args(["traces", "synth", "--kind", "brownian", "--out", &stem])
        .args(["--seconds", "1e9"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("at most 86400 (a day)"),
        "{}",
        stderr(&out)
    );
    assert!(!Path::new(&format!("{stem}.up")).exists());
    let out = sprout()
        .args(["sim", "--uplink", "a", "--downlink", "b", "--skip", "-1"])
        .output()
        .unwrap();
    let err = stderr(&out);
    assert!(
        !err.contains("unexpected argument"),
        "read as a flag: {err}"
    );
}

#[test]
fn a_closed_pipe_ends_quietly() {
    // `sprout params | head -c 1`: the reader goes away after one byte.
    let mut child = sprout()
        .args(["params"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let err = stderr(&out);
    assert!(
        !err.contains("Broken pipe") && !err.contains("panicked"),
        "{err}"
    );
}

#[test]
fn eval_exits_3_when_a_check_fails_and_tidies_its_folder() {
    let Some(traces) = testdata::require("traces") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("res");
    let eval = |extra: &[&str]| {
        sprout()
            .args(["eval", "--quiet", "--traces"])
            .arg(&traces)
            .arg("--out")
            .arg(&out_dir)
            .args(extra)
            .output()
            .unwrap()
    };
    // At 30% confidence Sprout's delay is far above the paper's: checks fail, exit 3.
    let out = eval(&[
        "--experiments",
        "fig7,loss",
        "--schemes",
        "sprout,sprout-ewma",
        "--param",
        "confidence=0.3",
    ]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let help = sprout().args(["eval", "--help"]).output().unwrap();
    assert!(stdout(&help).contains("3 when the run ended but a check failed"));
    assert!(stdout(&out).lines().any(|l| l.starts_with('❌')));
    assert!(stderr(&out).contains("failed"), "{}", stderr(&out));
    assert!(out_dir.join("loss.csv").exists());
    std::fs::write(out_dir.join("mine.txt"), "a note").unwrap();
    // Again, fig7 only, defaults: the checks hold (exit 0), the loss table of the first run
    // is removed and the user's own file left, each said.
    std::thread::sleep(std::time::Duration::from_millis(20));
    let out = eval(&["--schemes", "sprout,sprout-ewma"]);
    let text = stdout(&out);
    assert!(out.status.success(), "{text}{}", stderr(&out));
    assert!(!out_dir.join("loss.csv").exists());
    assert!(out_dir.join("mine.txt").exists());
    assert!(
        text.contains("an earlier run wrote here") && text.contains("loss.csv"),
        "{text}"
    );
    // On a line of its own, after the line that says what was written.
    assert!(
        text.lines()
            .any(|l| l.starts_with("removed ") && l.contains(" an earlier run wrote here")),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|l| l.ends_with("a table and SVG chart per experiment")),
        "{text}"
    );
    assert!(
        text.contains("left 1 file that this run did not write: mine.txt"),
        "{text}"
    );
}

#[test]
fn the_progress_bar_counts_the_simulations_the_report_counts() {
    // The bar is drawn only on a terminal: run `sprout eval` under script(1)'s pseudo-terminal,
    // on the built-in synthetic link (a folder with no traces), and read the bar's "k/N".
    if Command::new("script").arg("--version").output().is_err() {
        testdata::skip("needs script(1) (util-linux) for a pseudo-terminal");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let cmd = format!(
        "{} eval --out {}",
        env!("CARGO_BIN_EXE_sprout"),
        dir.path().join("res").display()
    );
    let out = Command::new("script")
        .args(["-qec", &cmd, "/dev/null"])
        .current_dir(dir.path())
        .output()
        .unwrap();
    let text = stdout(&out).replace('\r', "\n");
    let simulations: usize = text
        .split(" simulations;")
        .next()
        .and_then(|s| s.rsplit('(').next())
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or_else(|| panic!("no simulation count in {text}"));
    let totals: std::collections::BTreeSet<usize> = text
        .split_whitespace()
        .filter_map(|w| w.split_once('/'))
        .filter_map(|(k, n)| Some((k.parse::<usize>().ok()?, n.parse::<usize>().ok()?)))
        .map(|(_, n)| n)
        .collect();
    assert!(!totals.is_empty(), "no progress bar in {text}");
    assert_eq!(
        totals.into_iter().collect::<Vec<_>>(),
        vec![simulations],
        "{text}"
    );
}
