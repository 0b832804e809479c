//! `sprout traces stats|plot|synth|convert|scale` as a user runs them: the stats of the
//! paper's eight traces against an independent count (awk, and a few lines of Rust), synthetic
//! traces that are the same for the same seed, a CSV round trip, a scaled trace, and clear
//! errors.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;
use sprout_link::testdata;

fn sprout() -> Command {
    Command::new(env!("CARGO_BIN_EXE_sprout"))
}

fn run(args: &[&str]) -> Output {
    sprout().args(args).output().expect("sprout runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Runs `sprout` and expects success; returns stdout.
fn ok(args: &[&str]) -> String {
    let o = run(args);
    assert!(
        o.status.success(),
        "sprout {args:?} failed: {}{}",
        stdout(&o),
        stderr(&o)
    );
    stdout(&o)
}

fn json_stats(args: &[&str]) -> Value {
    let mut all = vec!["traces", "stats", "--json"];
    all.extend_from_slice(args);
    serde_json::from_str(&ok(&all)).expect("stats --json prints JSON")
}

fn p(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// What a trace file says, counted without sprout: lines, last timestamp, lines per second
/// (second k = [k, k+1) s), and the gaps of at least 1 s (from 0 to the first line too).
#[derive(Debug, PartialEq)]
struct Count {
    lines: u64,
    last_ms: u64,
    per_second: Vec<u64>,
    outages: u64,
    outage_ms: u64,
    longest_gap_ms: u64,
}

const AWK: &str = r#"
NF { n++; t = $1 + 0; c[int(t / 1000)]++; g = t - prev;
     if (g >= 1000) { o++; ot += g }
     if (g > mg) mg = g; prev = t; last = t }
END { printf "%d %d %d %d %d\n", n, last, o, ot, mg;
      for (k = 0; k <= int(last / 1000); k++) printf "%d\n", c[k] + 0 }
"#;

/// The count by awk; `None` if there is no awk to run.
fn count_awk(file: &Path) -> Option<Count> {
    let out = Command::new("awk").arg(AWK).arg(file).output().ok()?;
    assert!(out.status.success(), "awk: {}", stderr(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    let mut lines = text.lines();
    let head: Vec<u64> = lines
        .next()
        .unwrap()
        .split_whitespace()
        .map(|x| x.parse().unwrap())
        .collect();
    Some(Count {
        lines: head[0],
        last_ms: head[1],
        outages: head[2],
        outage_ms: head[3],
        longest_gap_ms: head[4],
        per_second: lines.map(|l| l.parse().unwrap()).collect(),
    })
}

/// The same count in a few lines of Rust.
fn count_rust(file: &Path) -> Count {
    let text = std::fs::read_to_string(file).unwrap();
    let times: Vec<u64> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.trim().parse().unwrap())
        .collect();
    let last_ms = *times.last().unwrap();
    let mut per_second = vec![0; (last_ms / 1000 + 1) as usize];
    let (mut outages, mut outage_ms, mut longest_gap_ms, mut prev) = (0, 0, 0, 0);
    for &t in &times {
        per_second[(t / 1000) as usize] += 1;
        let gap = t - prev;
        if gap >= 1000 {
            outages += 1;
            outage_ms += gap;
        }
        longest_gap_ms = longest_gap_ms.max(gap);
        prev = t;
    }
    Count {
        lines: times.len() as u64,
        last_ms,
        per_second,
        outages,
        outage_ms,
        longest_gap_ms,
    }
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

/// Checks one file's `stats --json` entry against the independent count.
fn agree(s: &Value, c: &Count, file: &str) {
    assert_eq!(u(&s["opportunities"]), c.lines, "{file}: opportunities");
    assert_eq!(u(&s["duration_ms"]), c.last_ms, "{file}: duration");
    let mean = c.lines as f64 * 1500.0 * 8.0 / c.last_ms as f64;
    assert!(
        (f(&s["mean_rate_kbps"]) - mean).abs() <= 1e-9 * mean,
        "{file}: mean {} against {mean}",
        s["mean_rate_kbps"]
    );
    let per_second: Vec<u64> = s["per_second_counts"]
        .as_array()
        .unwrap()
        .iter()
        .map(u)
        .collect();
    assert_eq!(per_second, c.per_second, "{file}: per-second counts");
    let peak = *c.per_second.iter().max().unwrap();
    assert_eq!(u(&s["peak_second_count"]), peak, "{file}: peak count");
    assert_eq!(u(&s["peak_bin_count"]), peak, "{file}: peak 1 s bin");
    assert!((f(&s["peak_rate_kbps"]) - peak as f64 * 12.0).abs() < 1e-9);
    assert_eq!(per_second.iter().sum::<u64>(), c.lines);
    let o = &s["outages"];
    assert_eq!(u(&o["count"]), c.outages, "{file}: outages");
    assert_eq!(u(&o["total_ms"]), c.outage_ms, "{file}: outage time");
    assert_eq!(
        u(&o["longest_gap_ms"]),
        c.longest_gap_ms,
        "{file}: longest gap"
    );
    let hist_total: u64 = s["interarrival"]["histogram"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| u(&b["count"]))
        .sum();
    assert_eq!(hist_total, c.lines - 1, "{file}: histogram intervals");
}

#[test]
fn stats_on_the_paper_traces_agree_with_an_independent_count() {
    let Some(dir) = testdata::require("traces") else {
        return;
    };
    let mut files: Vec<PathBuf> = Vec::new();
    for (_, up, down) in sprout_link::Trace::find_pairs(&dir).unwrap() {
        files.push(up);
        files.push(down);
    }
    assert_eq!(files.len(), 8, "the paper's eight traces");
    let args: Vec<&str> = files.iter().map(|f| p(f)).collect();
    let doc = json_stats(&args);
    let traces = doc["traces"].as_array().unwrap();
    assert_eq!(traces.len(), 8);
    assert!(doc["errors"].as_array().unwrap().is_empty());
    let mut awk_used = false;
    for (s, file) in traces.iter().zip(&files) {
        assert_eq!(s["name"].as_str().unwrap(), p(file));
        let rust = count_rust(file);
        agree(s, &rust, p(file));
        let by_awk = count_awk(file);
        if let Some(awk) = &by_awk {
            assert_eq!(awk, &rust, "{}: awk and Rust counts", file.display());
            awk_used = true;
        }
        eprintln!(
            "{}: {} lines, {} seconds counted, {} outages ({} ms), longest gap {} ms: \
             stats, {} agree",
            file.file_name().unwrap().to_string_lossy(),
            rust.lines,
            rust.per_second.len(),
            rust.outages,
            rust.outage_ms,
            rust.longest_gap_ms,
            if by_awk.is_some() {
                "awk and Rust counts"
            } else {
                "Rust count"
            }
        );
    }
    if !awk_used {
        eprintln!("note: no awk here; the stats were checked against the Rust count only");
    }

    // The folder stands for its eight files, in the same order; the text table names them.
    let by_dir = json_stats(&[p(&dir)]);
    assert_eq!(by_dir["traces"], doc["traces"]);
    let text = ok(&["traces", "stats", p(&dir)]);
    let rows: BTreeMap<&str, &str> = text
        .lines()
        .skip(1)
        .take(8)
        .map(|l| (l.split_whitespace().next().unwrap(), l))
        .collect();
    assert_eq!(rows.len(), 8, "{text}");
    let lte = rows[p(&dir.join("Verizon-LTE-short.down"))];
    assert!(lte.contains(" 58655 "), "{lte}");
    assert!(
        text.contains("inter-arrival times of 58654 intervals"),
        "{text}"
    );
}

/// A folder with a good trace and a broken one.
fn good_and_bad() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good.down");
    std::fs::write(&good, "1\n2\n1500\n3000\n").unwrap();
    let bad = dir.path().join("bad.up");
    std::fs::write(&bad, "1\n2\nx3\n4\n").unwrap();
    (dir, good, bad)
}

#[test]
fn a_broken_file_is_reported_and_the_others_shown() {
    let (dir, good, bad) = good_and_bad();
    let missing = dir.path().join("missing.down");
    let o = run(&["traces", "stats", p(&bad), p(&good), p(&missing)]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains(&format!(
            "{}:3: not a non-negative integer: `x3`",
            bad.display()
        )),
        "{err}"
    );
    assert!(
        err.contains(&format!("{}: No such file", missing.display())),
        "{err}"
    );
    assert!(err.contains("2 of 3 files could not be read"), "{err}");
    let out = stdout(&o);
    assert!(out.contains(p(&good)), "{out}");
    assert!(!out.contains(p(&bad)), "{out}");

    // In JSON: the good one's figures, the others as errors.
    let o = run(&["traces", "stats", "--json", p(&good), p(&bad)]);
    assert_eq!(o.status.code(), Some(1));
    let doc: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(doc["traces"].as_array().unwrap().len(), 1);
    assert_eq!(u(&doc["traces"][0]["opportunities"]), 4);
    assert_eq!(doc["errors"][0]["file"].as_str().unwrap(), p(&bad));
    assert!(doc["errors"][0]["error"].as_str().unwrap().contains(":3:"));

    // A wrong flag or value: clap's error, exit 2.
    let o = run(&["traces", "stats", "--bogus", p(&good)]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("unexpected argument '--bogus'"),
        "{}",
        stderr(&o)
    );
    let o = run(&["traces", "stats", "--bin", "0", p(&good)]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("--bin must be at least 1 ms"));
    let o = run(&["traces", "synth", "--kind", "pink", "--out", "x"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("invalid value 'pink'"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn synthetic_traces_are_the_same_for_the_same_seed() {
    let dir = tempfile::tempdir().unwrap();
    let kinds = [
        "constant",
        "brownian",
        "exponential",
        "gaussian",
        "poisson",
        "uniform",
    ];
    for kind in kinds {
        let write = |name: &str, seed: &str| -> (Vec<u8>, Vec<u8>) {
            let out = dir.path().join(name);
            ok(&[
                "traces",
                "synth",
                "--kind",
                kind,
                "--seconds",
                "30",
                "--seed",
                seed,
                "--rate-mbit",
                "6",
                "--outage-prob",
                "0.1",
                "--out",
                p(&out),
            ]);
            let read = |ext: &str| std::fs::read(dir.path().join(format!("{name}.{ext}"))).unwrap();
            (read("up"), read("down"))
        };
        let a = write(&format!("{kind}-a"), "7");
        let b = write(&format!("{kind}-b"), "7");
        let c = write(&format!("{kind}-c"), "8");
        assert_eq!(a, b, "{kind}: same seed, same files");
        assert_ne!(a, c, "{kind}: another seed, other files");
        assert_ne!(a.0, a.1, "{kind}: up and down differ");

        // 30 s exactly; the mean rate near 6 Mbit/s less the outages (brownian has its own
        // rate walk: only its length is fixed).
        // Outages of 200 ms or more: the overlay's (exponential, mean 1 s), never the gaps of
        // a 500-a-second link.
        let doc = json_stats(&[
            "--outage-threshold",
            "200",
            p(&dir.path().join(format!("{kind}-a.down"))),
        ]);
        let s = &doc["traces"][0];
        assert_eq!(u(&s["duration_ms"]), 30_000, "{kind}");
        if kind != "brownian" {
            let up_time = 1.0 - f(&s["outages"]["share_of_time"]);
            let mean = f(&s["mean_rate_kbps"]) / up_time;
            assert!((mean - 6000.0).abs() < 6000.0 * 0.1, "{kind}: mean {mean}");
        }
    }
    // --one writes one file, the same as the .down of the same seed.
    let one = dir.path().join("one");
    ok(&[
        "traces",
        "synth",
        "--kind",
        "brownian",
        "--seconds",
        "5",
        "--seed",
        "3",
        "--one",
        "--out",
        p(&one),
    ]);
    ok(&[
        "traces",
        "synth",
        "--kind",
        "brownian",
        "--seconds",
        "5",
        "--seed",
        "3",
        "--out",
        p(&dir.path().join("pair")),
    ]);
    assert_eq!(
        std::fs::read(&one).unwrap(),
        std::fs::read(dir.path().join("pair.down")).unwrap()
    );
    assert!(!dir.path().join("one.up").exists());
}

#[test]
fn stepwise_traces_hold_each_rate_for_a_step_and_refuse_bad_flags() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, seed: &str| -> Vec<u8> {
        let out = dir.path().join(name);
        let args = ["traces", "synth", "--kind", "stepwise", "--seconds", "20"];
        let mut args = args.to_vec();
        args.extend(["--seed", seed, "--one", "--out", p(&out)]);
        ok(&args);
        std::fs::read(out).unwrap()
    };
    let a = write("a", "4");
    assert_eq!(a, write("b", "4"), "same seed, same file");
    assert_ne!(a, write("c", "5"), "another seed, another file");
    let doc = json_stats(&[p(&dir.path().join("a"))]);
    let s = &doc["traces"][0];
    assert_eq!(u(&s["duration_ms"]), 20_000);
    // Each second one rate from [20, 500] Mbit/s (a second holds 1,667 to 41,667 lines, give
    // or take the at most 42 of its last millisecond, which `stats` counts in the next
    // second: second k is [k, k + 1) s), and the seconds differ.
    let counts: Vec<u64> = s["per_second_counts"]
        .as_array()
        .unwrap()
        .iter()
        .map(u)
        .collect();
    assert_eq!(
        counts.len(),
        21,
        "the last line, at 20 s, opens a 21st second"
    );
    assert!(
        counts[..20].iter().all(|c| (1624..=41_709).contains(c)),
        "{counts:?}"
    );
    let mut distinct = counts.clone();
    distinct.sort();
    distinct.dedup();
    assert!(distinct.len() >= 15, "{counts:?}");
    // Steps of 2 s at exactly 24 Mbit/s: 2 lines each millisecond 1..=6000.
    let flat = dir.path().join("flat");
    let flat_args = [
        "--min-mbit",
        "24",
        "--max-mbit",
        "24",
        "--step-seconds",
        "2",
    ];
    let mut args = vec![
        "traces",
        "synth",
        "--kind",
        "stepwise",
        "--seconds",
        "6",
        "--one",
    ];
    args.extend(flat_args);
    args.extend(["--out", p(&flat)]);
    ok(&args);
    let doc = json_stats(&[p(&flat)]);
    assert_eq!(
        doc["traces"][0]["per_second_counts"],
        serde_json::json!([1998, 2000, 2000, 2000, 2000, 2000, 2])
    );

    for (bad, says) in [
        (
            vec!["--min-mbit", "0"],
            "--min-mbit: the lowest rate must be above 0",
        ),
        (
            vec!["--min-mbit", "50", "--max-mbit", "40"],
            "--max-mbit: the highest rate must be at least the lowest (50 Mbit/s)",
        ),
        (
            vec!["--step-seconds", "0"],
            "--step-seconds: a step must last at least 0.001 s",
        ),
        (
            vec!["--rate-mbit", "10"],
            "--rate-mbit does not apply to stepwise",
        ),
    ] {
        let mut args = vec!["traces", "synth", "--kind", "stepwise", "--out", "x"];
        args.extend(bad.iter().copied());
        let o = run(&args);
        assert_eq!(o.status.code(), Some(1), "{bad:?}");
        assert!(stderr(&o).contains(says), "{bad:?}: {}", stderr(&o));
    }
    let o = run(&[
        "traces",
        "synth",
        "--kind",
        "constant",
        "--max-mbit",
        "9",
        "--out",
        "x",
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("--max-mbit is for --kind stepwise only"),
        "{}",
        stderr(&o)
    );
    assert!(!Path::new("x").exists());
}

#[test]
fn a_constant_csv_converts_to_its_rate() {
    let dir = tempfile::tempdir().unwrap();
    // 12 Mbit/s for 60 s, one row a second, with a header and the time in column 2.
    let mut csv = String::from("rate_mbit,time_s\n");
    for k in 0..60 {
        csv.push_str(&format!("12.0,{k}\n"));
    }
    let input = dir.path().join("in.csv");
    std::fs::write(&input, csv).unwrap();
    let out = dir.path().join("c12.down");
    let said = ok(&[
        "traces",
        "convert",
        "--from",
        "throughput-csv",
        p(&input),
        "--time-col",
        "time_s",
        "--rate-col",
        "1",
        "--out",
        p(&out),
    ]);
    assert!(
        said.contains("60000 opportunities over 60.000 s from 60 rows"),
        "{said}"
    );
    let doc = json_stats(&[p(&out)]);
    let mean = f(&doc["traces"][0]["mean_rate_kbps"]);
    assert!((mean - 12_000.0).abs() <= 120.0, "mean {mean} kbit/s");
    assert_eq!(u(&doc["traces"][0]["duration_ms"]), 60_000);

    // A broken row: its line number, and no output written.
    std::fs::write(&input, "0,12\n1,12\n2,twelve\n").unwrap();
    let bad_out = dir.path().join("bad.down");
    let o = run(&[
        "traces",
        "convert",
        "--from",
        "throughput-csv",
        p(&input),
        "--out",
        p(&bad_out),
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains(&format!(
            "{}:3: the throughput (column 2) is not a number: `twelve`",
            input.display()
        )),
        "{}",
        stderr(&o)
    );
    assert!(!bad_out.exists());
    let o = run(&[
        "traces",
        "convert",
        "--from",
        "json",
        p(&input),
        "--out",
        "x",
    ]);
    assert_eq!(o.status.code(), Some(2));

    // The help says it is an approximation.
    let help = ok(&["traces", "convert", "--help"]);
    assert!(help.contains("AN APPROXIMATION"), "{help}");
}

#[test]
fn plot_writes_both_directions_of_a_pair() {
    let dir = tempfile::tempdir().unwrap();
    let name = dir.path().join("link");
    ok(&[
        "traces",
        "synth",
        "--kind",
        "brownian",
        "--seconds",
        "20",
        "--out",
        p(&name),
    ]);
    let svg = dir.path().join("link.svg");
    let said = ok(&["traces", "plot", p(&name), "--out", p(&svg), "--bin", "500"]);
    assert!(said.contains("2 traces, 500 ms bins"), "{said}");
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.starts_with("<svg"));
    assert!(text.contains("Uplink (Mbit/s)") && text.contains("Downlink (Mbit/s)"));
    assert!(text.contains("Capacity of link"));
    assert_eq!(text.matches(r#"class="capacity""#).count(), 2);
    let o = run(&[
        "traces",
        "plot",
        p(&dir.path().join("nothing")),
        "--out",
        p(&svg),
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("nothing"), "{}", stderr(&o));
}

#[test]
fn scale_multiplies_the_rate_and_keeps_the_timing() {
    let Some(original) = testdata::require("traces/Verizon-LTE-short.down") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("lte-x4.down");
    let said = ok(&[
        "traces",
        "scale",
        "--factor",
        "4",
        p(&original),
        "--out",
        p(&out),
    ]);
    assert!(
        said.contains("234620 opportunities over 140.000 s"),
        "{said}"
    );
    let doc = json_stats(&[p(&original), p(&out)]);
    let (was, now) = (&doc["traces"][0], &doc["traces"][1]);
    let ratio = f(&now["mean_rate_kbps"]) / f(&was["mean_rate_kbps"]);
    assert!(
        (ratio - 4.0).abs() <= 0.004,
        "x4 gave x{ratio} the mean rate"
    );
    assert_eq!(u(&now["duration_ms"]), u(&was["duration_ms"]));
    assert_eq!(u(&now["opportunities"]), 4 * u(&was["opportunities"]));
    // The same timestamps, four times each; outages where they were.
    let lines = |f: &Path| -> Vec<u64> {
        let text = std::fs::read_to_string(f).unwrap();
        text.lines().map(|l| l.trim().parse().unwrap()).collect()
    };
    let (a, b) = (lines(&original), lines(&out));
    let mut a4: Vec<u64> = a.iter().flat_map(|&t| [t; 4]).collect();
    a4.sort_unstable();
    assert_eq!(a4, b);

    // Halved: the same period, no timestamp that was not there.
    let half = dir.path().join("lte-half.down");
    ok(&[
        "traces",
        "scale",
        "--factor",
        "0.5",
        p(&original),
        "--out",
        p(&half),
    ]);
    let h = lines(&half);
    assert_eq!(h.len(), a.len().div_ceil(2));
    assert_eq!(h.last(), a.last());
    let kept: std::collections::BTreeSet<u64> = a.iter().copied().collect();
    assert!(h.iter().all(|t| kept.contains(t)));

    // Refused, clearly, with nothing written: a factor of 0, a negative one, one over the cap.
    let bad = dir.path().join("bad.down");
    for (factor, says) in [
        ("0", "--factor must be a finite number above 0"),
        ("-2", "--factor must be a finite number above 0"),
        ("nan", "--factor must be a finite number above 0"),
        ("1e6", "more than a trace file may hold (256 MiB)"),
    ] {
        let o = run(&[
            "traces",
            "scale",
            "--factor",
            factor,
            p(&original),
            "--out",
            p(&bad),
        ]);
        assert_eq!(o.status.code(), Some(1), "x{factor}");
        assert!(stderr(&o).contains(says), "x{factor}: {}", stderr(&o));
        assert!(!bad.exists(), "x{factor} wrote a file");
    }
}

// ---------------------------------------------------------------------------------------
// Getting the traces: `sprout traces fetch` (and `--from`), and a main job that says what a
// folder without pairs holds.

/// A small valid trace pair `NAME.up` / `NAME.down` in `dir` (a line per millisecond, 10 s).
fn small_pair(dir: &Path, name: &str) {
    std::fs::create_dir_all(dir).unwrap();
    let lines: String = (1..=10_000u64).map(|ms| format!("{ms}\n")).collect();
    std::fs::write(dir.join(format!("{name}.up")), &lines).unwrap();
    std::fs::write(dir.join(format!("{name}.down")), &lines).unwrap();
}

const PAPER_LINKS: [&str; 4] = [
    "Verizon-LTE-short",
    "ATT-LTE-driving",
    "TMobile-UMTS-driving",
    "Verizon-EVDO-driving",
];

#[test]
fn a_fetch_without_network_leaves_nothing_behind() {
    // A curl that fails as one without network does (a link to false(1): exit 1; a link,
    // not a script written here, so that no sibling test's fork holds it open for writing).
    let tmp = tempfile::tempdir().unwrap();
    let bin = tmp.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let falsy = ["/bin/false", "/usr/bin/false"]
        .into_iter()
        .find(|f| Path::new(f).exists())
        .expect("false(1)");
    std::os::unix::fs::symlink(falsy, bin.join("curl")).unwrap();
    let work = tmp.path().join("repo");
    std::fs::create_dir(&work).unwrap();
    let o = sprout()
        .current_dir(&work)
        .env("PATH", &bin)
        .args(["traces", "fetch"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    let err = stderr(&o);
    assert!(
        err.contains("curl exit 1") && err.contains("nothing was written"),
        "{err}"
    );
    assert!(err.contains("traces fetch --from"), "{err}");
    let left: Vec<_> = std::fs::read_dir(&work).unwrap().flatten().collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

#[test]
fn fetch_from_a_mahimahi_checkout_copies_the_papers_links() {
    let tmp = tempfile::tempdir().unwrap();
    // A checkout: its traces/ holds the paper's four links and others.
    let checkout = tmp.path().join("mahimahi");
    for name in PAPER_LINKS.iter().chain(&["TMobile-LTE-driving"]) {
        small_pair(&checkout.join("traces"), name);
    }
    let work = tmp.path().join("repo");
    std::fs::create_dir(&work).unwrap();
    let o = sprout()
        .current_dir(&work)
        .args(["traces", "fetch", "--from"])
        .arg(&checkout)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("copied 8 traces"), "{}", stdout(&o));
    assert!(
        stdout(&o).contains("1 other pairs there not copied"),
        "{}",
        stdout(&o)
    );
    let mut got: Vec<String> = std::fs::read_dir(work.join("traces"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    got.sort();
    let mut want: Vec<String> = PAPER_LINKS
        .iter()
        .flat_map(|n| [format!("{n}.down"), format!("{n}.up")])
        .collect();
    want.sort();
    assert_eq!(got, want);
    // Any folder of pairs: every pair; a folder of none: a clear error, nothing written.
    let other = tmp.path().join("mine");
    small_pair(&other, "Home-WiFi");
    let o = run(&[
        "traces",
        "fetch",
        "--from",
        p(&other),
        p(&tmp.path().join("t2")),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(tmp.path().join("t2/Home-WiFi.up").is_file());
    let empty = tmp.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let o = run(&[
        "traces",
        "fetch",
        "--from",
        p(&empty),
        p(&tmp.path().join("t3")),
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("no trace pairs"), "{}", stderr(&o));
    assert!(!tmp.path().join("t3").exists());
}

#[test]
fn the_main_job_names_a_folder_of_traces_one_level_too_deep() {
    // The README's advice followed literally: a mahimahi traces/ folder copied into ./traces.
    let tmp = tempfile::tempdir().unwrap();
    let work = tmp.path().join("repo");
    for name in ["A", "B"] {
        small_pair(&work.join("traces").join("traces"), name);
    }
    let o = sprout()
        .current_dir(&work)
        .env_remove("SPROUT_TRACES")
        .args(["eval", "--quiet", "--schemes", "omniscient", "--out", "res"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains(
            "./traces holds no NAME.up/NAME.down pairs; it holds a folder traces/ with 4 such \
             files: use --traces ./traces/traces"
        ),
        "{out}"
    );
    // And --traces with that folder names it too.
    let o = sprout()
        .current_dir(&work)
        .args(["eval", "--quiet", "--traces", "traces", "--out", "res"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o)
            .contains("it holds a folder traces/ with 4 such files: use --traces traces/traces"),
        "{}",
        stderr(&o)
    );
}
