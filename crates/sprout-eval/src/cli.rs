//! The simulated evaluation's command line (the `cli` feature): the flags that `sprout eval`
//! and the `sprout-eval` binary share, what they mean as [`EvalOptions`], and the exit status
//! both give when a check of the paper's findings failed.

use std::path::PathBuf;

use sprout_sim::duration::seconds_to_us;

use crate::error::EvalError;
use crate::eval::{EvalOptions, Experiment, Scheme};

/// The exit status of a run that went to the end but where a check of the paper's findings
/// failed (a summary line starting with ❌): distinct from 1 (an error) and 2 (a usage error).
pub const CHECK_FAILED_STATUS: i32 = 3;

/// The flags of the simulated evaluation (`sprout eval` adds those of `--emulate`).
#[derive(clap::Args, Debug, Clone)]
pub struct EvalArgs {
    /// Folder of traces (NAME.up / NAME.down pairs) [default: the first of $SPROUT_TRACES,
    /// ./traces and ../shared/traces that holds traces, else the built-in synthetic cellular
    /// link; docs/data.md].
    #[arg(long)]
    pub traces: Option<PathBuf>,
    /// Comma-separated schemes of the fig7 (fig8, summary) and sensitivity experiments: sprout,
    /// sprout-ewma, cubic, reno, vegas, ledbat, bbr, compound, cubic-codel, omniscient, and on
    /// request copa, copa-0.1, sprout-wide (Sprout on the wide rate model, to 1 Gbit/s) and gcc
    /// (which runs the adaptive video source, a video call, not a bulk transfer); with
    /// `sprout eval --emulate` also webrtc (a real WebRTC video call, aiortc; gcc is its model
    /// in the simulator) [default: the first ten; with --emulate:
    /// sprout,sprout-ewma,cubic,reno,bbr,cubic-codel].
    #[arg(long, value_delimiter = ',', value_parser = Scheme::parse_emulated)]
    pub schemes: Option<Vec<Scheme>>,
    /// Comma-separated experiments (fig7, fig8, summary, confidence, loss, distributions,
    /// sensitivity, model), or all [default: fig7]; also interactive (application sources on
    /// the 8 link directions against direct), rates (the links scaled x1-x64 and constant
    /// 10-1000 Mbit/s links, both Sprout models), calibration (how often each model's
    /// forecast is met at each stated confidence, per link and horizon), frontier (each
    /// Sprout model's confidence sweep against Sprout-EWMA's gain sweep, utilization against
    /// self-inflicted delay, which dominates which) and aqm (sprout, sprout-ewma, cubic, bbr and
    /// copa over a 100 ms drop-tail buffer, CoDel, PIE and FQ-CoDel, the paper's CoDel figures
    /// beside; an interactive stream beside a Cubic download in FQ-CoDel), none in all. With
    /// `sprout eval --emulate`: fig7 (the schemes through the emulator), tunnel (a Cubic
    /// download with an interactive stream, then with a WebRTC call, each direct and through
    /// SproutTunnel, §5.7), tunnel-cost (a download through the tunnel over a constant 10
    /// Mbit/s link), interactive (a constant-rate stream down the link by sprout, sprout-ewma
    /// and direct, scored by its application-level delay), or all [default: fig7]; also aqm
    /// (sprout and cubic over PIE, emulated against simulated, and the interactive stream
    /// beside a Cubic download in FQ-CoDel against SproutTunnel) and vpn (SproutTunnel against
    /// WireGuard, boringtun: a download over a constant 1 Gbit/s link, its goodput and CPU,
    /// then the tunnel experiment's flows; vpn-rate or vpn-lte for one part), not in all.
    #[arg(long, value_delimiter = ',')]
    pub experiments: Vec<String>,
    /// Output folder.
    #[arg(long, default_value = "results")]
    pub out: PathBuf,
    /// Seconds skipped before measuring (paper: 60).
    #[arg(long, default_value_t = 60.0)]
    pub skip: f64,
    /// Parallel jobs [default: one per core].
    #[arg(long)]
    pub jobs: Option<usize>,
    /// Change a Sprout parameter of both Sprout schemes, KEY=VALUE (repeatable; `sprout params`
    /// lists them). Not with --emulate [default: none, the paper's parameters].
    #[arg(long = "param", value_name = "KEY=VALUE")]
    pub params: Vec<String>,
    /// No progress bar.
    #[arg(long)]
    pub quiet: bool,
}

impl EvalArgs {
    /// The simulated evaluation these flags ask for: an error names the flag (an experiment or
    /// scheme that only the emulated evaluation has, a negative --skip).
    pub fn options(self) -> Result<EvalOptions, EvalError> {
        if let Some(s) = self.schemes.iter().flatten().find(|s| s.is_emulated_only()) {
            // The simulated evaluation has no such scheme: say why, as `sprout sim` does.
            let why = s.key().parse::<Scheme>().err().map(|e| e.to_string());
            return Err(EvalError::BadParameter(format!(
                "--schemes: {}",
                why.unwrap_or_default()
            )));
        }
        let experiments = if self.experiments.is_empty() {
            vec![Experiment::Fig7]
        } else {
            Experiment::parse_list(&self.experiments.join(","))
                .map_err(|e| EvalError::BadParameter(format!("--experiments: {e}")))?
        };
        Ok(EvalOptions {
            traces: self.traces,
            schemes: self.schemes.unwrap_or_else(|| Scheme::ALL.to_vec()),
            experiments,
            out: self.out,
            skip_us: seconds_to_us(self.skip, "skip")?,
            jobs: self.jobs,
            progress: !self.quiet,
            protocol_params: self.params,
        })
    }
}

/// How many checks of the paper's findings a summary says failed (its lines starting with ❌).
pub fn failed_checks(summary: &str) -> usize {
    summary.lines().filter(|l| l.starts_with('❌')).count()
}

/// What to say when `failed` checks failed (after "error: "), with [`CHECK_FAILED_STATUS`].
pub fn checks_failed_message(failed: usize) -> String {
    format!(
        "{failed} check{} of the paper's findings failed (the ❌ above); exit status \
         {CHECK_FAILED_STATUS}",
        if failed == 1 { "" } else { "s" }
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        args: EvalArgs,
    }

    fn options(argv: &[&str]) -> Result<EvalOptions, EvalError> {
        let cli = Cli::try_parse_from(std::iter::once("sprout-eval").chain(argv.iter().copied()))
            .expect("the flags parse");
        cli.args.options()
    }

    #[test]
    fn no_flags_are_fig7_of_the_ten_schemes_after_60_s() {
        let o = options(&[]).unwrap();
        assert_eq!(o.experiments, vec![Experiment::Fig7]);
        assert_eq!(o.schemes, Scheme::ALL.to_vec());
        assert_eq!(o.skip_us, 60_000_000);
        assert!(o.progress);
    }

    #[test]
    fn an_emulated_only_scheme_or_experiment_is_refused_by_name() {
        let e = options(&["--schemes", "webrtc"]).unwrap_err().to_string();
        assert!(e.starts_with("--schemes: "), "{e}");
        let e = options(&["--experiments", "tunnel"])
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("--experiments: "), "{e}");
        let e = options(&["--skip=-1"]).unwrap_err().to_string();
        assert!(e.contains("skip"), "{e}");
    }

    #[test]
    fn failed_checks_count_the_crossed_lines_only() {
        assert_eq!(failed_checks("✅ a\n❌ b\n  ❌ indented\n❌ c"), 2);
        assert_eq!(
            checks_failed_message(1),
            "1 check of the paper's findings failed (the ❌ above); exit status 3"
        );
    }
}
