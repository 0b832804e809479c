//! `sprout-eval`: the paper's evaluation over the simulator, the same as `sprout eval` without
//! its real-network parts (`--emulate`), so that reproducing the paper's figures builds the
//! simulator and the harness only (no sockets, cryptography, tunnel or emulator).

#![forbid(unsafe_code)]

use clap::Parser;
use sprout_core::error_chain::chain_message;
use sprout_eval::cli::{self, EvalArgs};

/// The paper's evaluation over the simulator: its experiments on every link, the published
/// values beside ours, report.md, CSV and SVG charts (`sprout eval` is the same command,
/// with --emulate for real time through the link emulator).
#[derive(Parser)]
#[command(name = "sprout-eval", version)]
struct Cli {
    #[command(flatten)]
    args: EvalArgs,
}

fn main() {
    let cli = Cli::parse();
    let status = match cli.args.options().and_then(|o| sprout_eval::eval::run(&o)) {
        Ok(summary) => {
            println!("{summary}");
            match cli::failed_checks(&summary) {
                0 => 0,
                n => {
                    eprintln!("error: {}", cli::checks_failed_message(n));
                    cli::CHECK_FAILED_STATUS
                }
            }
        }
        Err(e) => {
            eprintln!("error: {}", chain_message(&e));
            1
        }
    };
    std::process::exit(status);
}
