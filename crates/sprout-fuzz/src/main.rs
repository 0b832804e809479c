//! `sprout-fuzz TARGET|all --iterations N --seed S`: runs the fuzz targets and exits non-zero
//! on the first panic, printing the input that caused it.
#![forbid(unsafe_code)]

use std::io::IsTerminal;

use anyhow::{bail, Result};
use clap::Parser;

#[derive(Parser)]
#[command(name = "sprout-fuzz", about = "Fuzz Sprout's decoders on stable Rust")]
struct Args {
    /// A target (wire, connection, secure, message, trace, mmlog, packet, control, saturator,
    /// saturator-result, csv) or all.
    target: String,
    /// Inputs per target.
    #[arg(long, default_value_t = 1_000_000)]
    iterations: u64,
    /// Seed of the input generator (the same seed gives the same inputs).
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

fn main() -> Result<()> {
    let args = Args::parse();
    let mut targets = sprout_fuzz::targets();
    if args.target != "all" {
        targets.retain(|t| t.name() == args.target);
        if targets.is_empty() {
            let names: Vec<&str> = sprout_fuzz::targets().iter().map(|t| t.name()).collect();
            bail!(
                "no target {:?} (targets: {}, all)",
                args.target,
                names.join(", ")
            );
        }
    }
    let mut failed = false;
    for t in targets.iter_mut() {
        let name = t.name();
        // Progress on a terminal only (a line rewritten in place, cleared at the end).
        let tty = std::io::stderr().is_terminal();
        let report = sprout_fuzz::run(t.as_mut(), args.iterations, args.seed, &mut |n| {
            if tty {
                eprint!("\r{name}: {n} inputs");
            }
        });
        if tty {
            eprint!("\r\x1b[K");
        }
        match &report.panic {
            None => println!(
                "{name}: {} inputs in {:.1} s ({:.0}/s), no panic",
                report.iterations,
                report.seconds,
                report.rate()
            ),
            Some((hex, msg)) => {
                failed = true;
                println!(
                    "{name}: PANIC after {} inputs (seed {}): {msg}\n  input: {hex}",
                    report.iterations, args.seed
                );
            }
        }
    }
    if failed {
        bail!("a target panicked");
    }
    Ok(())
}
