//! The `sprout` command as a user runs it.

use std::path::{Path, PathBuf};
use std::process::Command;

use sprout_link::testdata;

use crate::common::assert_ok;

fn sprout() -> Command {
    Command::new(env!("CARGO_BIN_EXE_sprout"))
}

/// The paper's traces in ../shared/traces; `None` (the test recorded as skipped) when absent.
fn traces() -> Option<PathBuf> {
    testdata::require("traces")
}

/// Runs `sprout sim` with an uplink trace holding `uplink_text`; returns (success, stderr).
fn sim_with_uplink(uplink_text: &str) -> (bool, String) {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.up");
    std::fs::write(&bad, uplink_text).unwrap();
    let good = dir.path().join("good.down");
    std::fs::write(&good, "1\n2\n").unwrap();
    let out = sprout()
        .args(["sim", "--uplink"])
        .arg(&bad)
        .arg("--downlink")
        .arg(&good)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn broken_trace_is_a_clear_error_naming_file_and_line() {
    let (ok, err) = sim_with_uplink("0\n5\n3\n");
    assert!(!ok);
    assert!(
        err.contains("bad.up:3") && err.contains("backwards"),
        "{err}"
    );

    let (ok, err) = sim_with_uplink("");
    assert!(!ok);
    assert!(err.contains("empty"), "{err}");

    let (ok, err) = sim_with_uplink("1\nten\n");
    assert!(!ok);
    assert!(err.contains("bad.up:2") && err.contains("ten"), "{err}");
}

#[test]
fn wrong_flags_are_rejected() {
    let out = sprout()
        .args([
            "sim",
            "--scheme",
            "tcp-magic",
            "--uplink",
            "a",
            "--downlink",
            "b",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown scheme"));
    let out = sprout()
        .args([
            "sim",
            "--uplink",
            "a",
            "--downlink",
            "b",
            "--confidence",
            "1.5",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
}

#[test]
fn sim_twice_prints_the_same() {
    let Some(t) = traces() else { return };
    let run = || {
        let out = sprout()
            .args(["sim", "--json", "--duration", "70", "--uplink"])
            .arg(t.join("Verizon-LTE-short.up"))
            .arg("--downlink")
            .arg(t.join("Verizon-LTE-short.down"))
            .output()
            .unwrap();
        assert_ok(&out);
        out.stdout
    };
    let a = run();
    assert_eq!(a, run());
    let v: serde_json::Value = serde_json::from_slice(&a).unwrap();
    assert!(v["downlink"]["metrics"]["utilization"].as_f64().unwrap() > 0.1);
}

#[test]
fn eval_writes_every_output() {
    let Some(t) = traces() else { return };
    let out_dir = tempfile::tempdir().unwrap();
    let out = sprout()
        .args(["eval", "--quiet", "--traces"])
        .arg(&t)
        .arg("--out")
        .arg(out_dir.path())
        .output()
        .unwrap();
    assert_ok(&out);
    let csv = std::fs::read_to_string(out_dir.path().join("results.csv")).unwrap();
    let header = csv.lines().next().unwrap();
    for col in [
        "experiment",
        "confidence",
        "loss",
        "seed",
        "queue",
        "link",
        "direction",
        "scheme",
        "throughput_kbps",
        "utilization",
        "p95_delay_ms",
        "omniscient_p95_ms",
        "self_inflicted_ms",
    ] {
        assert!(header.split(',').any(|c| c == col), "missing column {col}");
    }
    // fig7 by default: 10 schemes (omniscient included) on 4 link pairs, both directions.
    assert_eq!(csv.lines().count(), 1 + 80);
    for f in [
        "results.json",
        "report.md",
        "fig8-averages.svg",
        "fig1-Verizon-LTE-short-down.svg",
        "fig7-ATT-LTE-driving-up.svg",
    ] {
        assert!(out_dir.path().join(f).exists(), "missing {f}");
    }
}

#[test]
fn eval_without_traces_uses_the_synthetic_link() {
    // Run from <tmp>/repo: neither ../shared/traces nor ./traces exists, as in a fresh clone.
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    std::fs::create_dir(&repo).unwrap();
    let out = sprout()
        .current_dir(&repo)
        .args(["eval", "--quiet", "--out", "res"])
        .output()
        .unwrap();
    assert_ok(&out);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let first = stdout.lines().next().unwrap_or("");
    assert!(first.contains("synthetic cellular link"), "{stdout}");
    // It says why, and how to run the paper's links.
    assert!(
        stdout.contains("No traces in ./traces or ../shared/traces")
            && stdout.contains("--traces DIR")
            && stdout.contains("`cargo run --release -p sprout-cli -- traces fetch`")
            && stdout.contains("github.com/ravinet/mahimahi"),
        "{stdout}"
    );
    // Checks that compare with the paper's links are not applicable, not failures.
    assert!(!stdout.contains('❌'), "{stdout}");
    assert!(stdout.lines().any(|l| l.starts_with('✅')), "{stdout}");
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("➖ Not applicable") && l.contains("Synthetic")),
        "{stdout}"
    );
    let report = std::fs::read_to_string(repo.join("res/report.md")).unwrap();
    assert!(!report.contains('❌'), "{report}");
    assert!(report.contains("➖ Not applicable"), "{report}");
}

#[test]
fn eval_without_traces_finds_the_shared_traces() {
    let Some(_) = traces() else { return };
    // From the workspace, ../shared/traces is the paper's traces; the omniscient sender alone
    // needs no simulation.
    let out_dir = tempfile::tempdir().unwrap();
    let out = sprout()
        .current_dir(testdata::workspace_dir())
        .args(["eval", "--quiet", "--schemes", "omniscient", "--out"])
        .arg(out_dir.path())
        .output()
        .unwrap();
    assert_ok(&out);
    let stdout = String::from_utf8_lossy(&out.stdout);
    // The first of ./traces and ../shared/traces that holds them (docs/data.md).
    let first = stdout.lines().next().unwrap_or("");
    assert!(
        first.contains("from ./traces") || first.contains("from ../shared/traces"),
        "{stdout}"
    );
    assert!(!stdout.contains("synthetic"), "{stdout}");
}

#[test]
fn a_missing_file_is_named_once() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.up");
    let there = dir.path().join("there.down");
    std::fs::write(&there, "1\n2\n").unwrap();
    let runs: Vec<(Vec<std::ffi::OsString>, String)> = vec![
        (
            vec![
                "sim".into(),
                "--uplink".into(),
                missing.clone().into(),
                "--downlink".into(),
                there.clone().into(),
            ],
            format!("cannot read trace {}", missing.display()),
        ),
        (
            vec![
                "eval".into(),
                "--traces".into(),
                dir.path().join("nowhere").into(),
            ],
            format!(
                "cannot read trace folder {}",
                dir.path().join("nowhere").display()
            ),
        ),
        (
            vec!["forecast".into(), missing.clone().into()],
            format!("cannot read {}", missing.display()),
        ),
    ];
    for (args, expected) in runs {
        let out = sprout().args(&args).output().unwrap();
        assert!(!out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.starts_with(&format!("error: {expected}: No such file or directory")),
            "{args:?}: {err}"
        );
        assert_eq!(
            err.matches("No such file or directory").count(),
            1,
            "{args:?}: {err}"
        );
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
    }
}

/// Every option of every subcommand that takes a value shows its default in `--help`, except
/// those that must be given.
#[test]
fn help_shows_every_default() {
    // (subcommand, options that must be given but the usage line does not say so)
    let commands: [(&[&str], &[&str]); 10] = [
        (&["sim"], &[]),
        (&["eval"], &[]),
        (&["forecast"], &[]),
        (&["params"], &[]),
        (&["server"], &[]),
        (&["client"], &[]),
        (&["link"], &["--uplink", "--downlink"]),
        (&["tcp", "server"], &[]),
        (&["tcp", "client"], &[]),
        (&["traces", "fetch"], &[]),
    ];
    let mut checked = 0;
    for (cmd, exempt) in commands {
        let out = sprout().args(cmd).arg("--help").output().unwrap();
        assert_ok(&out);
        let help = String::from_utf8_lossy(&out.stdout).into_owned();
        let usage = help
            .lines()
            .find(|l| l.starts_with("Usage:"))
            .unwrap_or("")
            .to_string();
        for entry in help_entries(&help) {
            let head = entry.split_whitespace().collect::<Vec<_>>();
            // `--name <VALUE>` or a positional `<NAME>` / `[NAME]`: it takes a value.
            let (name, takes_value) = match head.as_slice() {
                [flag, value, ..] if flag.starts_with("--") => {
                    (flag.to_string(), value.starts_with('<'))
                }
                [pos, ..] if pos.starts_with('<') || pos.starts_with('[') => {
                    (pos.to_string(), true)
                }
                _ => continue,
            };
            if !takes_value || name == "--help" {
                continue;
            }
            // Given on the usage line outside brackets, or listed: it must be given.
            let required = exempt.contains(&name.as_str())
                || usage
                    .split_whitespace()
                    .any(|w| w == name && w.starts_with("--"))
                || name.starts_with('<');
            if required {
                continue;
            }
            assert!(
                entry.contains("[default:"),
                "`sprout {} --help`: {name} shows no default:\n{entry}",
                cmd.join(" ")
            );
            checked += 1;
        }
    }
    assert!(checked > 40, "only {checked} options checked");
}

/// The entries of a `--help` text, one string each: an option (`--name <VALUE> ...`) or an
/// argument (`<NAME> ...`, `[NAME] ...`) and its description, on one line.
fn help_entries(help: &str) -> Vec<String> {
    let mut entries: Vec<String> = Vec::new();
    for line in help.lines() {
        let t = line.trim_start();
        let indent = line.len() - t.len();
        // `-h, --help`: the long name first.
        let t = match t.as_bytes() {
            [b'-', c, b',', b' ', ..] if c.is_ascii_alphabetic() => &t[4..],
            _ => t,
        };
        let starts_entry = (2..=6).contains(&indent)
            && (t.starts_with("--") || t.starts_with('<') || t.starts_with('['));
        if starts_entry {
            entries.push(t.to_string());
        } else if let Some(last) = entries.last_mut() {
            if indent > 0 && !t.is_empty() {
                last.push(' ');
                last.push_str(t);
            }
        }
    }
    entries
}

/// `sprout eval --quiet FLAGS --traces TRACES --out OUT`, which must succeed.
fn quiet_eval(traces: &Path, out: &Path, flags: &[&str]) -> std::process::Output {
    let o = sprout()
        .args(["eval", "--quiet"])
        .args(flags)
        .arg("--traces")
        .arg(traces)
        .arg("--out")
        .arg(out)
        .output()
        .unwrap();
    assert_ok(&o);
    o
}

#[test]
fn eval_runs_every_experiment() {
    let Some(t) = traces() else { return };
    let out_dir = tempfile::tempdir().unwrap();
    let out = quiet_eval(&t, out_dir.path(), &["--experiments", "all"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("CoDel cuts Cubic"), "{stdout}");
    assert!(stdout.contains("Lowering the confidence"), "{stdout}");
    let csv = std::fs::read_to_string(out_dir.path().join("results.csv")).unwrap();
    for e in ["fig7", "confidence", "loss", "distributions", "sensitivity"] {
        assert!(
            csv.lines().any(|l| l.starts_with(&format!("{e},"))),
            "no {e} rows"
        );
    }
    for f in [
        "fig7.csv",
        "fig8.csv",
        "summary.csv",
        "summary.svg",
        "confidence.csv",
        "confidence.svg",
        "loss.csv",
        "loss.svg",
        "distributions.csv",
        "distributions-exponential.svg",
        "sensitivity.csv",
        "sensitivity.svg",
    ] {
        assert!(out_dir.path().join(f).exists(), "missing {f}");
    }
    let report = std::fs::read_to_string(out_dir.path().join("report.md")).unwrap();
    for section in [
        "The introduction's table",
        "Confidence sweep",
        "Loss resilience",
        "Other inter-arrival distributions",
        "Sensitivity to the seed",
    ] {
        assert!(report.contains(section), "report lacks {section}");
    }
}

#[test]
fn unknown_experiment_is_a_clear_error() {
    let out = sprout()
        .args(["eval", "--experiments", "fig7,fig99"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("unknown experiment 'fig99'"), "{err}");
}

#[test]
fn sim_runs_a_tcp_peer_over_codel_with_loss() {
    let Some(t) = traces() else { return };
    let out = sprout()
        .args([
            "sim", "--scheme", "cubic", "--queue", "codel", "--loss", "0.01",
        ])
        .args(["--duration", "30", "--skip", "5", "--uplink"])
        .arg(t.join("Verizon-LTE-short.up"))
        .arg("--downlink")
        .arg(t.join("Verizon-LTE-short.down"))
        .arg("--json")
        .output()
        .unwrap();
    assert_ok(&out);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let util = v["downlink"]["metrics"]["utilization"].as_f64().unwrap();
    assert!(util > 0.3, "cubic over codel used only {util}");
    let bad = sprout()
        .args(["sim", "--loss", "1.5", "--uplink"])
        .arg(t.join("Verizon-LTE-short.up"))
        .arg("--downlink")
        .arg(t.join("Verizon-LTE-short.down"))
        .output()
        .unwrap();
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--loss"));
}

/// Runs `sprout forecast` on `input` (through a file) with `args`; returns the CSV rows.
fn forecast(input: &str, args: &[&str]) -> Vec<Vec<String>> {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("counts.txt");
    std::fs::write(&file, input).unwrap();
    let out = sprout()
        .arg("forecast")
        .arg(&file)
        .args(args)
        .output()
        .unwrap();
    assert_ok(&out);
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| l.split(',').map(str::to_string).collect())
        .collect()
}

/// What the library's receiver model forecasts after each of `counts`, as `sprout forecast`
/// is documented to compute it: a fresh estimator, then evolve, observe, forecast per tick.
fn library_forecasts(config: &sprout_core::Config, counts: &[f64]) -> Vec<Vec<u32>> {
    let mut e = sprout_core::estimator::build(config);
    let mut out = vec![0u32; config.model.forecast_ticks];
    counts
        .iter()
        .map(|&c| {
            e.evolve();
            e.observe(c);
            e.forecast(&mut out);
            out.clone()
        })
        .collect()
}

#[test]
fn forecast_prints_a_csv_row_per_tick() {
    let rows = forecast(
        "# a comment\n\n3 4\n5,0   # five, then none\n\t10\n2.5\n",
        &[],
    );
    let header: Vec<String> = "tick,count,f1,f2,f3,f4,f5,f6,f7,f8"
        .split(',')
        .map(str::to_string)
        .collect();
    assert_eq!(rows[0], header);
    assert_eq!(rows.len(), 1 + 6);
    let counts = [3.0, 4.0, 5.0, 0.0, 10.0, 2.5];
    let expected = library_forecasts(&sprout_core::Config::default(), &counts);
    for (i, row) in rows[1..].iter().enumerate() {
        assert_eq!(row.len(), 10, "{row:?}");
        assert_eq!(row[0], (i + 1).to_string());
        assert_eq!(row[1].parse::<f64>().unwrap(), counts[i]);
        let f: Vec<u32> = row[2..].iter().map(|x| x.parse().unwrap()).collect();
        assert!(
            f.windows(2).all(|w| w[0] <= w[1]),
            "not cumulative: {row:?}"
        );
        assert_eq!(f, expected[i], "tick {}", i + 1);
    }
}

#[test]
fn forecast_after_300_ticks_of_10_packets_is_the_libraries() {
    let input = "10\n".repeat(300);
    let counts = [10.0; 300];
    let last = |rows: &[Vec<String>]| -> Vec<u32> {
        rows.last().unwrap()[2..]
            .iter()
            .map(|x| x.parse().unwrap())
            .collect()
    };
    let rows = forecast(&input, &[]);
    assert_eq!(rows.len(), 301);
    assert_eq!(rows[300][0], "300");
    let ours = last(&rows);
    let config = sprout_core::Config::default();
    assert_eq!(ours, library_forecasts(&config, &counts)[299]);
    // At a steady 10 packets per 20 ms tick the forecast is cautious: below 10 a tick, and
    // growing with the horizon.
    assert!(ours[7] < 80 && ours[7] > ours[0], "{ours:?}");

    // --confidence and --param change the model as they do in `sim`.
    let rows = forecast(
        &input,
        &["--confidence", "0.5", "--param", "model.sigma=100"],
    );
    let mut changed = config.clone();
    changed.confidence = 0.5;
    changed.model.sigma = 100.0;
    assert_eq!(last(&rows), library_forecasts(&changed, &counts)[299]);
    assert!(
        last(&rows)[7] > ours[7],
        "a lower confidence forecasts more"
    );

    let rows = forecast(&input, &["--scheme", "sprout-ewma"]);
    assert_eq!(
        last(&rows),
        library_forecasts(&sprout_core::Config::ewma(), &counts)[299]
    );
}

#[test]
fn forecast_reads_stdin_and_names_a_bad_token() {
    use std::io::Write;
    let mut child = sprout()
        .args(["forecast", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(b"1\n2 3\n").unwrap();
    let out = child.wait_with_output().unwrap();
    assert_ok(&out);
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 1 + 3);

    for (input, line, token) in [("1\n2\n3 x4 5\n", 3, "x4"), ("4\n-1\n", 2, "-1")] {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("counts.txt");
        std::fs::write(&file, input).unwrap();
        let out = sprout().arg("forecast").arg(&file).output().unwrap();
        assert!(!out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(&format!(
                "counts.txt:{line}: `{token}` is not a packet count"
            )),
            "{err}"
        );
    }
    let out = sprout()
        .args(["forecast", "--confidence", "1.5", "-"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("confidence"));
}

#[test]
fn eval_runs_gcc_as_a_video_call_and_lists_the_modern_schemes() {
    // Help lists every scheme a name selects, the modern ones included.
    for cmd in ["sim", "eval"] {
        let out = sprout().args([cmd, "--help"]).output().unwrap();
        assert_ok(&out);
        let help = String::from_utf8_lossy(&out.stdout);
        for s in ["copa", "copa-0.1", "gcc"] {
            assert!(help.contains(s), "`sprout {cmd} --help` lacks {s}: {help}");
        }
    }
    let Some(t) = traces() else { return };
    let out_dir = tempfile::tempdir().unwrap();
    let out = quiet_eval(&t, out_dir.path(), &["--schemes", "sprout,gcc"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let note = "gcc runs the adaptive video source (a video call), not a bulk transfer";
    assert_eq!(stdout.matches(note).count(), 1, "{stdout}");
    let csv = std::fs::read_to_string(out_dir.path().join("results.csv")).unwrap();
    let gcc_rows = csv.lines().filter(|l| l.contains(",gcc,")).count();
    let sprout_rows = csv.lines().filter(|l| l.contains(",sprout,")).count();
    assert!(
        gcc_rows > 0 && gcc_rows == sprout_rows,
        "{gcc_rows} {sprout_rows}"
    );
    let chart =
        std::fs::read_to_string(out_dir.path().join("fig7-Verizon-LTE-short-down.svg")).unwrap();
    assert!(chart.contains("gcc"));
    // direct has no app of its own rate in fig7: still refused, with the simulator's reason.
    let out = sprout()
        .args(["eval", "--quiet", "--schemes", "direct", "--traces"])
        .arg(&t)
        .arg("--out")
        .arg(out_dir.path().join("direct"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("direct with app bulk"), "{stderr}");
}

/// The link's shaping options (issue 38): a PIE queue within a drop-head buffer, bursty loss and
/// jitter, their drops counted by reason in the JSON and logged with it.
#[test]
fn sim_takes_the_links_shaping_options_and_counts_drops_by_reason() {
    let Some(t) = traces() else { return };
    let dir = tempfile::tempdir().unwrap();
    let (ul, dl) = (dir.path().join("up.log"), dir.path().join("down.log"));
    let out = sprout()
        .args(["sim", "--scheme", "cubic", "--queue", "pie"])
        .args(["--buffer", "50ms,head", "--downlink-gemodel", "1%,30%"])
        .args([
            "--jitter",
            "5ms",
            "--duration",
            "30",
            "--skip",
            "5",
            "--uplink",
        ])
        .arg(t.join("Verizon-LTE-short.up"))
        .arg("--downlink")
        .arg(t.join("Verizon-LTE-short.down"))
        .arg("--uplink-log")
        .arg(&ul)
        .arg("--downlink-log")
        .arg(&dl)
        .arg("--json")
        .output()
        .unwrap();
    assert_ok(&out);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let drops = |dir: &str, why: &str| v[dir]["drops"][why].as_u64().unwrap();
    assert!(
        drops("downlink", "aqm") > 0 && drops("downlink", "loss") > 0,
        "{v}"
    );
    assert_eq!(
        drops("uplink", "loss"),
        0,
        "the gemodel is the downlink's only"
    );
    let log = std::fs::read_to_string(&dl).unwrap();
    assert!(log.contains("# queue: pie [target=15ms"), "{log:.300}");
    assert!(log.contains("+ buffer 50ms,head"));
    assert!(log.contains("# loss: gemodel p=0.01 r=0.3 1-h=1 1-k=0"));
    assert!(log.contains("# jitter: 5ms"));
    let logged = |why: &str| {
        log.lines()
            .filter(|l| l.contains(" d ") && l.ends_with(why))
            .count() as u64
    };
    for why in ["aqm", "loss", "buffer"] {
        assert_eq!(logged(why), drops("downlink", why), "{why}");
    }
}

#[test]
fn bad_shaping_options_are_short_clear_errors() {
    let Some(t) = traces() else { return };
    let dir = tempfile::tempdir().unwrap();
    let bad_trace = dir.path().join("delays.txt");
    std::fs::write(&bad_trace, "interval 10ms\n20\nsoon\n").unwrap();
    let run = |args: &[&str], extra: Option<&Path>| {
        let mut c = sprout();
        c.arg("sim").args(args);
        if let Some(p) = extra {
            c.arg(p);
        }
        let out = c
            .arg("--uplink")
            .arg(t.join("Verizon-LTE-short.up"))
            .arg("--downlink")
            .arg(t.join("Verizon-LTE-short.down"))
            .output()
            .unwrap();
        assert!(!out.status.success());
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    assert!(run(&["--buffer", "12 parsecs"], None).contains("bad buffer '12 parsecs'"));
    assert!(run(&["--gemodel", "150%,1%"], None).contains("bad gemodel"));
    assert!(run(&["--jitter", "5ms,shuffle"], None).contains("bad jitter"));
    assert!(run(&["--codel-target", "10ms"], None).contains("apply to a codel or fq-codel queue"));
    assert!(run(&["--gemodel", "1%,30%", "--loss", "0.1"], None).contains("not both"));
    let err = run(&["--delay-trace"], Some(&bad_trace));
    assert!(
        err.contains("delays.txt:3: expected a delay in ms"),
        "{err}"
    );
    assert!(err.lines().count() <= 2, "{err}");
}
