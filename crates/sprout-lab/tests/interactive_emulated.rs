//! The emulated interactive experiment end to end, for a few seconds over a constant synthetic
//! link: Sprout, Sprout-EWMA and `direct` through the real link emulator (network namespace, TUN
//! devices), the CSV, JSON and report section written, the numbers sane. Needs root; says
//! SKIPPED otherwise.
//!
//! `harness = false`: this executable is also the `sprout` of the runs' peers. The experiment
//! starts `SPROUT_EXE server|client|interactive ...` with the command lines sprout-apps'
//! builders render, and this `main` runs them with the same library code the `sprout` binary
//! calls (the binary itself belongs to sprout-cli, which a test of this crate cannot build).

use std::fs;
use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

use clap::{Parser, Subcommand};
use sprout_apps::interactive::{self, InteractiveOptions, InteractiveRole};
use sprout_apps::transfer::{self, ClientOptions, ServerOptions};
use sprout_lab::emulate::interactive_report::{InteractiveResults, InteractiveRow, SECTION};
use sprout_lab::emulate::{run_interactive, InteractiveOptions as ExperimentOptions};

/// The peers' commands, parsed as `sprout` parses them.
#[derive(Parser)]
struct Peer {
    #[command(subcommand)]
    command: PeerCommand,
}

#[derive(Subcommand)]
enum PeerCommand {
    Server(ServerOptions),
    Client(ClientOptions),
    Interactive(InteractiveOptions),
}

/// Runs one peer; its exit code.
fn run_peer() -> ExitCode {
    let ok = match Peer::parse().command {
        PeerCommand::Server(o) => transfer::serve(&o).map_err(|e| e.to_string()),
        PeerCommand::Client(o) => transfer::run(&o).map_err(|e| e.to_string()),
        PeerCommand::Interactive(o) => match o.role {
            InteractiveRole::Server(s) => interactive::serve(&s).map(|_| ()),
            InteractiveRole::Client(c) => interactive::run(&c).map(|_| ()),
        }
        .map_err(|e| e.to_string()),
    };
    match ok {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// A constant link: a 1500-byte opportunity every `every_ms` ms for `secs` seconds.
fn write_constant_trace(path: &Path, every_ms: u64, secs: u64) {
    let lines: String = (0..secs * 1000)
        .step_by(every_ms as usize)
        .map(|t| format!("{}\n", t + 1))
        .collect();
    fs::write(path, lines).unwrap();
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    if matches!(
        args.get(1).map(String::as_str),
        Some("server" | "client" | "interactive")
    ) {
        return run_peer();
    }
    // `cargo test -p sprout-lab FILTER`: a filter that does not name this test leaves it out.
    if let Some(f) = args[1..].iter().find(|a| !a.starts_with('-')) {
        if !"interactive_emulated".contains(f.as_str()) {
            println!("interactive_emulated: filtered out");
            return ExitCode::SUCCESS;
        }
    }
    if let Err(e) = sprout_emu::check_privileges() {
        println!("SKIPPED: the link emulator needs root (network namespaces, TUN devices): {e}");
        return ExitCode::SUCCESS;
    }
    let t0 = Instant::now();
    emulated_interactive_experiment_writes_sane_rows();
    println!(
        "interactive_emulated: ok ({:.0} s)",
        t0.elapsed().as_secs_f64()
    );
    ExitCode::SUCCESS
}

fn emulated_interactive_experiment_writes_sane_rows() {
    let dir = tempfile::tempdir().unwrap();
    let traces = dir.path().join("traces");
    fs::create_dir_all(&traces).unwrap();
    // 1500 bytes every 3 ms: 4 Mbit/s each way, twice the higher offered rate.
    write_constant_trace(&traces.join("Const-4M.up"), 3, 20);
    write_constant_trace(&traces.join("Const-4M.down"), 3, 20);
    let out = dir.path().join("out");
    let opts = ExperimentOptions {
        traces: Some(traces),
        link: Some("Const-4M".into()),
        rates_kbps: vec![500.0, 2000.0],
        duration_us: 4_000_000,
        out: out.clone(),
        sprout_exe: std::env::current_exe().unwrap(),
        progress: false,
    };
    let text = run_interactive(&opts).unwrap();
    println!("{text}");
    let mut rdr = csv::Reader::from_path(out.join("interactive-emulated.csv")).unwrap();
    let rows: Vec<InteractiveRow> = rdr.deserialize().map(Result::unwrap).collect();
    let schemes: Vec<(&str, f64)> = rows
        .iter()
        .map(|r| (r.scheme.as_str(), r.rate_kbps))
        .collect();
    assert_eq!(
        schemes,
        [
            ("sprout", 500.0),
            ("sprout-ewma", 500.0),
            ("direct", 500.0),
            ("sprout", 2000.0),
            ("sprout-ewma", 2000.0),
            ("direct", 2000.0)
        ]
    );
    for r in &rows {
        // What the application created is the rate asked for; nothing arrives twice.
        assert!((r.offered_kbps / r.rate_kbps - 1.0).abs() < 0.05, "{r:?}");
        assert!(
            r.delivered <= r.offered && (0.0..=1.0).contains(&r.share),
            "{r:?}"
        );
        assert!(r.within_100ms <= r.within_150ms && r.within_150ms <= r.within_300ms);
        assert!(r.within_300ms <= r.share + 1e-9, "{r:?}");
        if let (Some(a), Some(b)) = (r.app_p50_ms, r.app_p95_ms) {
            // At least the emulator's 20 ms one-way delay.
            assert!(a >= 19.0 && a <= b, "{r:?}");
        }
        // Nothing is in the sender's queue when the stream goes straight to the socket: on a
        // link with twice the rate's capacity, `direct` delivers it at once.
        if r.scheme == "direct" {
            assert!(r.share >= 0.99, "{r:?}");
            assert!(r.app_p95_ms.is_some_and(|p| p < 60.0), "{r:?}");
            assert_eq!(r.clock, "CLOCK_MONOTONIC");
        } else {
            assert_eq!(r.clock, "CLOCK_REALTIME");
            assert!(r.delivered > 0, "{r:?}");
        }
    }
    let json: InteractiveResults =
        serde_json::from_str(&fs::read_to_string(out.join("interactive-emulated.json")).unwrap())
            .unwrap();
    assert_eq!(json.rows, rows);
    // Two checks at each rate, and the 150 ms bound at 500 kbit/s; direct delivers, so each
    // applies.
    assert_eq!(json.checks.len(), 5);
    assert!(json.checks.iter().all(|c| c.ok.is_some()));
    let report = fs::read_to_string(out.join("report.md")).unwrap();
    assert!(
        report.contains(SECTION) && report.contains("| direct |"),
        "{report}"
    );
    assert!(
        text.lines().filter(|l| l.starts_with(['✅', '❌'])).count() == 5,
        "{text}"
    );
}
