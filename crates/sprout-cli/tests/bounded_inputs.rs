//! Inputs too large for memory are refused fast, with a short message and little memory
//! (issue 22, finding 8): a 1 GiB file given as a trace, a forecast's counts, a sweep spec or
//! a throughput CSV; `/dev/zero` as any of them; sweep specs that ask for 10^12 seeds, a
//! 10^9-run grid or a constant link of 10^15 Mbit/s; a trace of one line at the largest
//! timestamp; `--duration 1e30`.
//!
//! Each command runs under an address-space limit of 1 GiB (`ulimit -v`), so that reading a
//! 1 GiB input whole (or allocating for it) aborts instead of passing, and must end within a
//! few seconds with exit code 1 and a message of a few hundred bytes at most.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{assert_ok, sprout_bin};

/// The address space a refused input may cost, KiB (1 GiB).
const MEMORY_KIB: u64 = 1 << 20;
/// The longest a refusal may take.
const LIMIT: Duration = Duration::from_secs(20);
/// The longest a refusal's message may be, bytes.
const MAX_MESSAGE: usize = 400;

/// Runs `sprout ARGS` in `dir` under the memory limit; returns its stderr after checking that
/// it failed fast (exit code 1) with a short message.
fn refused(dir: &Path, args: &[&str]) -> String {
    let started = Instant::now();
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(format!("ulimit -v {MEMORY_KIB} && exec \"$0\" \"$@\""))
        .arg(sprout_bin())
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            panic!("sprout {}: still running after {LIMIT:?}", args.join(" "));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let shown = || stderr.chars().take(MAX_MESSAGE).collect::<String>();
    assert_eq!(
        out.status.code(),
        Some(1),
        "sprout {}: {} after {:?}: {}",
        args.join(" "),
        out.status,
        started.elapsed(),
        shown()
    );
    assert!(
        stderr.len() <= MAX_MESSAGE && stderr.starts_with("error: "),
        "sprout {}: a message of {} bytes: {}",
        args.join(" "),
        stderr.len(),
        shown()
    );
    stderr
}

/// A folder with `big` (a sparse 1 GiB file: no disk, 1 GiB if read), `small.up` and
/// `small.down` (a valid 120 s trace) and `far` (one line at the largest timestamp a trace
/// accepts).
fn inputs() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n);
    std::fs::File::create(p("big"))
        .unwrap()
        .set_len(1 << 30)
        .unwrap();
    let small: String = (1..=120_000u64).map(|ms| format!("{ms}\n")).collect();
    std::fs::write(p("small.up"), &small).unwrap();
    std::fs::write(p("small.down"), &small).unwrap();
    let far = sprout_link::trace::MAX_TIMESTAMP_MS;
    std::fs::write(p("far"), format!("{far}\n")).unwrap();
    dir
}

fn spec(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn a_huge_or_endless_trace_is_refused_at_the_cap() {
    let dir = inputs();
    let d = dir.path();
    for trace in ["big", "/dev/zero"] {
        let e = refused(d, &["sim", "--uplink", trace, "--downlink", "small.down"]);
        assert!(
            e.contains("larger than 256 MiB, the most a trace file may hold"),
            "{e}"
        );
        let e = refused(d, &["traces", "stats", trace]);
        assert!(e.contains("larger than 256 MiB"), "{e}");
        let e = refused(d, &["traces", "plot", trace, "--out", "x.svg"]);
        assert!(e.contains("larger than 256 MiB"), "{e}");
        let e = refused(
            d,
            &[
                "traces",
                "convert",
                trace,
                "--from",
                "throughput-csv",
                "--out",
                "t",
            ],
        );
        assert!(e.contains("larger than 256 MiB"), "{e}");
    }
    assert!(!d.join("x.svg").exists() && !d.join("t").exists());
}

#[test]
fn a_huge_or_endless_forecast_input_is_refused_at_its_first_line() {
    let dir = inputs();
    for input in ["big", "/dev/zero"] {
        let e = refused(dir.path(), &["forecast", input]);
        assert!(e.contains(":1: a line longer than 64 KiB"), "{e}");
    }
}

#[test]
fn a_huge_or_endless_sweep_spec_is_refused_at_the_cap() {
    let dir = inputs();
    for file in ["big", "/dev/zero"] {
        let e = refused(dir.path(), &["sweep", file, "--out", "o.csv"]);
        assert!(
            e.contains("larger than 1 MiB, the most a sweep spec may hold"),
            "{e}"
        );
    }
    // A spec whose traces are the huge file: the trace's cap.
    let s = spec(
        dir.path(),
        "t.toml",
        "traces = [{ name = \"x\", uplink = \"big\", downlink = \"small.down\" }]\n",
    );
    let e = refused(
        dir.path(),
        &["sweep", s.to_str().unwrap(), "--out", "o.csv"],
    );
    assert!(e.contains("larger than 256 MiB"), "{e}");
    assert!(!dir.path().join("o.csv").exists());
}

#[test]
fn sweep_specs_that_ask_for_too_much_are_refused_before_anything_is_allocated() {
    let dir = inputs();
    let d = dir.path();
    let c = "traces = [{ name = \"c\", constant = { mbps = 1, seconds = 100 } }]\n";
    let s = spec(d, "seeds.toml", &format!("{c}seeds = 1e12\n"));
    let e = refused(d, &["sweep", s.to_str().unwrap()]);
    assert!(
        e.contains("seeds: 1000000000000 is more than the 100000"),
        "{e}"
    );
    let values = |f: &dyn Fn(usize) -> String| (0..1000).map(f).collect::<Vec<_>>().join(",");
    let grid = format!(
        "{c}[params]\n\"model.sigma\" = [{}]\nwindow_skip_ticks = [{}]\n[sim]\nloss = [{}]\n",
        values(&|i| format!("{}", 100 + i)),
        values(&|i| format!("{i}")),
        values(&|i| format!("{}", i as f64 / 1e4))
    );
    let s = spec(d, "grid.toml", &grid);
    let e = refused(d, &["sweep", s.to_str().unwrap()]);
    assert!(
        e.contains(
            "the grid is 1000 values of model.sigma x 1000 values of window_skip_ticks x \
             1000 [sim] loss = 1000000000 runs, more than the 1000000"
        ),
        "{e}"
    );
    let fast = "traces = [{ name = \"c\", constant = { mbps = 1e15, seconds = 100 } }]\n";
    let s = spec(d, "fast.toml", fast);
    let e = refused(d, &["sweep", s.to_str().unwrap()]);
    assert!(e.contains("faster than 100000 Mbit/s (100 Gbit/s)"), "{e}");
    // However short the trace.
    let s = spec(
        d,
        "short.toml",
        &fast.replace("seconds = 100", "seconds = 1e-6"),
    );
    let e = refused(d, &["sweep", s.to_str().unwrap()]);
    assert!(e.contains("faster than 100000 Mbit/s"), "{e}");
    // A bad line of a big spec is quoted in an excerpt.
    let s = spec(
        d,
        "long.toml",
        &format!("{c}seeds = [{}\n", "9".repeat(500_000)),
    );
    let e = refused(d, &["sweep", s.to_str().unwrap()]);
    assert!(e.contains("TOML line 2"), "{e}");
}

#[test]
fn a_run_longer_than_a_day_is_refused() {
    let dir = inputs();
    let d = dir.path();
    // One line at the largest timestamp: the run would last 584 years.
    let e = refused(d, &["sim", "--uplink", "far", "--downlink", "far"]);
    assert!(
        e.contains("(the shorter trace's length) is longer than 86400 s"),
        "{e}"
    );
    let e = refused(
        d,
        &[
            "sim",
            "--uplink",
            "far",
            "--downlink",
            "far",
            "--duration",
            "1e30",
        ],
    );
    assert!(e.contains("(--duration) is longer than 86400 s"), "{e}");
    // Traces of 2000 opportunities a second both ways: a day of them is already more than a
    // run may hold, so the one bound said is that smaller one (25000 s), not first the day.
    for duration in ["1e30", "86400"] {
        let args = [
            "sim",
            "--uplink",
            "small.up",
            "--downlink",
            "small.down",
            "--duration",
            duration,
        ];
        let e = refused(d, &args);
        assert!(e.contains("give a --duration of at most 25000 s"), "{e}");
        assert!(!e.contains("at most 86400"), "{e}");
    }
    // Too short a window names the minimum and the longer run that reaches it.
    let args = ["sim", "--uplink", "small.up", "--downlink", "small.down"];
    let e = refused(
        d,
        &[&args[..], &["--duration", "3", "--skip", "0"]].concat(),
    );
    assert!(
        e.contains("less than the 5 s a run must measure; give a --duration of at least 5.0 s"),
        "{e}"
    );
    // A day is still allowed (over a link that offers nothing, it is quick).
    let out = Command::new(sprout_bin())
        .args(["sim", "--uplink", "far", "--downlink", "far", "--duration"])
        .args(["86400", "--scheme", "cubic"])
        .current_dir(d)
        .output()
        .unwrap();
    assert_ok(&out);
}
