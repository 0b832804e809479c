//! `sprout traces stats|plot|synth|convert|scale`: figures, charts, synthetic traces,
//! conversions and rate scaling of mahimahi traces (one line per 1500-byte delivery
//! opportunity, at its millisecond).

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};
use sprout_core::error_chain::chain_message;
use sprout_eval::trace_plot;
use sprout_files as files;
use sprout_link::convert::{throughput_csv_to_trace, write_trace, Column, CsvOptions};
use sprout_link::synthetic::OutageOverlay;
use sprout_link::trace_stats::{details_text, load_stats, summary_table, StatsOptions};
use sprout_link::{constant_rate_trace, StepwiseError, StepwiseLink, SyntheticLink, Trace};
use sprout_sim::distributions::{self, InterArrival};

/// The trace files an argument stands for: a file is itself; a folder, every `NAME.up` and
/// `NAME.down` pair in it (sorted by name, up before down); a `NAME` that is not a file, the
/// `NAME.up` and `NAME.down` beside it that exist. Anything else is returned as given, to
/// fail when read (so that its error names it).
fn expand(arg: &Path) -> Result<Vec<PathBuf>> {
    if arg.is_file() {
        return Ok(vec![arg.to_path_buf()]);
    }
    if arg.is_dir() {
        let pairs = Trace::find_pairs(arg)?;
        if pairs.is_empty() {
            bail!(
                "{}: no NAME.up and NAME.down pair in this folder",
                arg.display()
            );
        }
        return Ok(pairs.into_iter().flat_map(|(_, u, d)| [u, d]).collect());
    }
    let with = |ext: &str| {
        let mut s = arg.as_os_str().to_owned();
        s.push(ext);
        PathBuf::from(s)
    };
    let both: Vec<PathBuf> = [with(".up"), with(".down")]
        .into_iter()
        .filter(|p| p.is_file())
        .collect();
    if both.is_empty() {
        Ok(vec![arg.to_path_buf()])
    } else {
        Ok(both)
    }
}

// ---------------------------------------------------------------------------------------
// stats

/// `sprout traces stats` arguments.
#[derive(clap::Args)]
#[command(after_long_help = "\
Figures (1500 bytes per trace line; kbit = 1000 bits):
  duration       the last timestamp, mahimahi's loop period
  mean           opportunities x 12,000 bits / duration
  peak           the most opportunities in one bin (--bin; bin k = [k x bin, (k+1) x bin) ms) \
x 12,000 bits / bin
  outages        gaps of at least --outage-threshold between consecutive lines (the start, \
0 ms, counts as a line): count, longest, share of the duration
  inter-arrival  the intervals between consecutive lines in log-spaced bins 0, 1, 2-3, 4-7, ... \
ms with the share of each (the paper's Figure 2), and percentiles
  per-second     the lines in each second [k, k+1) s, k = 0 .. duration/1000 (the last may be \
partial); every count in --json

A file that cannot be read or parsed is reported (with its line number) and skipped; the others \
are still shown, and the command exits with 1 at the end.")]
pub(crate) struct StatsArgs {
    /// Trace files. NAME (no such file) stands for NAME.up and NAME.down; a folder for every
    /// NAME.up / NAME.down pair in it.
    #[arg(value_name = "FILE", required = true)]
    files: Vec<PathBuf>,
    /// Bin for the peak rate, milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 1000)]
    bin: u64,
    /// Shortest gap between consecutive opportunities that counts as an outage, milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 1000)]
    outage_threshold: u64,
    /// Print JSON (every figure, per-second and per-bin counts, every outage) instead of text.
    #[arg(long)]
    json: bool,
}

/// The options of `sprout traces fetch`.
#[derive(clap::Args)]
pub(crate) struct FetchArgs {
    /// Target folder.
    #[arg(default_value = "traces")]
    dir: PathBuf,
    /// Copy the traces from this folder instead of downloading them: a checkout of mahimahi
    /// (its traces/ folder is found), its traces/ folder, or any folder of NAME.up / NAME.down
    /// pairs. From a folder holding the paper's four links, those four [default: download
    /// them from the mahimahi repository].
    #[arg(long, value_name = "DIR")]
    from: Option<PathBuf>,
}

/// Runs `sprout traces fetch`: the paper's traces into the folder, downloaded or copied
/// (`--from`); whole or nothing.
pub(crate) fn fetch(a: FetchArgs) -> Result<()> {
    let said = match &a.from {
        Some(from) => sprout_eval::eval::import_traces(from, &a.dir)?,
        None => sprout_eval::eval::fetch_traces(&a.dir)?,
    };
    println!("{said}");
    Ok(())
}

/// Runs `sprout traces stats`.
pub(crate) fn stats(a: StatsArgs) -> Result<()> {
    let options = StatsOptions {
        bin_ms: a.bin,
        outage_threshold_ms: a.outage_threshold,
    };
    if a.bin == 0 {
        bail!("--bin must be at least 1 ms");
    }
    if a.outage_threshold == 0 {
        bail!("--outage-threshold must be at least 1 ms");
    }
    let mut files = Vec::new();
    let mut errors: Vec<(String, String)> = Vec::new();
    for arg in &a.files {
        match expand(arg) {
            Ok(f) => files.extend(f),
            Err(e) => {
                let message = chain_message(e.as_ref());
                eprintln!("error: {message}");
                errors.push((arg.display().to_string(), message));
            }
        }
    }
    let mut all = Vec::new();
    for file in &files {
        match load_stats(file, &options) {
            Ok(s) => all.push(s),
            Err(e) => {
                eprintln!("error: {e}");
                errors.push((file.display().to_string(), e.to_string()));
            }
        }
    }
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    if a.json {
        let errors: Vec<serde_json::Value> = errors
            .iter()
            .map(|(f, e)| serde_json::json!({ "file": f, "error": e }))
            .collect();
        let doc = serde_json::json!({
            "options": options,
            "traces": all,
            "errors": errors,
        });
        writeln!(out, "{doc}")?;
    } else if !all.is_empty() {
        write!(out, "{}", summary_table(&all))?;
        for s in &all {
            writeln!(out)?;
            write!(out, "{}", details_text(s))?;
        }
    }
    out.flush()?;
    if !errors.is_empty() {
        bail!(
            "{} of {} file{} could not be read (see above)",
            errors.len(),
            files.len().max(errors.len()),
            if files.len().max(errors.len()) == 1 {
                ""
            } else {
                "s"
            }
        );
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// plot

/// `sprout traces plot` arguments.
#[derive(clap::Args)]
#[command(after_long_help = "\
The chart shows capacity (Mbit/s: a bin's lines x 12,000 bits / the bin's length) against time, \
as mahimahi's graphs: uplinks (NAME.up) in the top panel, downlinks (NAME.down) below, other \
files in a third panel; a panel with one trace is a filled area, with several, lines. Bins run \
from 0 to the trace's duration (its last timestamp), the last one closed.")]
pub(crate) struct PlotArgs {
    /// Trace files. NAME (no such file) stands for NAME.up and NAME.down; a folder for every
    /// NAME.up / NAME.down pair in it.
    #[arg(value_name = "FILE", required = true)]
    files: Vec<PathBuf>,
    /// The SVG file to write.
    #[arg(long, value_name = "X.svg")]
    out: PathBuf,
    /// Bin length, milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 1000)]
    bin: u64,
    /// Chart title [default: "Capacity of NAME"].
    #[arg(long)]
    title: Option<String>,
}

/// Runs `sprout traces plot`.
pub(crate) fn plot(a: PlotArgs) -> Result<()> {
    let mut traces = Vec::new();
    for arg in &a.files {
        for file in expand(arg)? {
            let trace = sprout_sim::sim_json::load_trace(&file)?;
            traces.push((file.display().to_string(), trace));
        }
    }
    let svg = trace_plot::plot_svg(&traces, a.bin, a.title.as_deref()).map_err(|e| anyhow!(e))?;
    files::write_atomically(&a.out, svg)
        .with_context(|| format!("cannot write {}", a.out.display()))?;
    println!(
        "wrote {} ({} trace{}, {} ms bins)",
        a.out.display(),
        traces.len(),
        if traces.len() == 1 { "" } else { "s" },
        a.bin
    );
    Ok(())
}

// ---------------------------------------------------------------------------------------
// synth

/// The kind of synthetic link.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum SynthKind {
    /// Evenly spaced opportunities at --rate-mbit.
    Constant,
    /// The paper's model: the rate does Brownian motion (--sigma) from --rate-mbit, clamped to
    /// [0, --max-rate]; at 0 an outage of mean 1/--outage-escape-rate s, then --resume-rate;
    /// Poisson deliveries each ms.
    Brownian,
    /// Exponential gaps (a Poisson process) of mean rate --rate-mbit (the published
    /// reproduction's distributions).
    Exponential,
    /// Gaussian gaps (sd half the mean, cut at 0) of mean rate --rate-mbit.
    Gaussian,
    /// A Poisson number of opportunities each ms, mean rate --rate-mbit.
    Poisson,
    /// Gaps uniform on [0, 2 x mean], mean rate --rate-mbit.
    Uniform,
    /// The rate holds for --step-seconds, then jumps to a rate drawn log-uniformly in
    /// [--min-mbit, --max-mbit]; evenly spaced opportunities within each step (per-second 5G
    /// drive recordings have this shape).
    Stepwise,
}

/// `sprout traces synth` arguments.
#[derive(clap::Args)]
#[command(after_long_help = "\
Writes NAME.down (drawn from --seed) and NAME.up (drawn from a seed derived from it, so the two \
directions differ), or only NAME with --one (from --seed). The same arguments always write the \
same files. Each trace lasts exactly --seconds: an opportunity is added at the end if none falls \
there. Rates: 1 Mbit/s = 83.3 opportunities (1500 bytes) per second; the Brownian model's \
parameters are in packets (opportunities) per second, as in the paper.

--outage-prob lays random outages over any kind: in each second one starts with that \
probability, at a random millisecond, lasting an exponential time of mean --outage-mean.

stepwise: each --step-seconds a rate drawn log-uniformly in [--min-mbit, --max-mbit] (mean \
(max - min) / ln(max / min): 149 Mbit/s for the defaults 20 and 500), e.g. \
sprout traces synth --kind stepwise --seconds 70 --out step150")]
pub(crate) struct SynthArgs {
    /// constant, brownian (the paper's model), stepwise (a log-uniform rate per step), or one
    /// of the published reproduction's inter-arrival distributions: exponential, gaussian,
    /// poisson, uniform.
    #[arg(long, value_enum)]
    kind: SynthKind,
    /// Length of the trace, seconds.
    #[arg(long, value_name = "S", default_value_t = 60.0)]
    seconds: f64,
    /// Seed of the random draws.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Output name: writes NAME.up and NAME.down (NAME itself with --one).
    #[arg(long, value_name = "NAME")]
    out: PathBuf,
    /// Write one file, NAME.
    #[arg(long)]
    one: bool,
    /// Mean rate (constant and the distributions; default 12) or the starting rate (brownian;
    /// default 4.8 = 400 packets/s), Mbit/s.
    #[arg(long, value_name = "MBIT")]
    rate_mbit: Option<f64>,
    /// Brownian: volatility of the rate, packets/s per sqrt(s).
    #[arg(long, default_value_t = SyntheticLink::default().sigma)]
    sigma: f64,
    /// Brownian: highest rate, packets/s.
    #[arg(long, default_value_t = SyntheticLink::default().max_rate)]
    max_rate: f64,
    /// Brownian: rate after an outage, packets/s.
    #[arg(long, default_value_t = SyntheticLink::default().resume_rate)]
    resume_rate: f64,
    /// Brownian: rate of leaving an outage, 1/s (mean outage 1/this s; 0 = outages never end).
    #[arg(long, default_value_t = SyntheticLink::default().outage_escape_rate)]
    outage_escape_rate: f64,
    /// Chance that an outage starts in any second, 0..1 (laid over any kind).
    #[arg(long, value_name = "P", default_value_t = 0.0)]
    outage_prob: f64,
    /// Mean length of those outages, seconds.
    #[arg(long, value_name = "S", default_value_t = 1.0)]
    outage_mean: f64,
    /// Stepwise: how long each rate holds, seconds [default: 1].
    #[arg(long, value_name = "S")]
    step_seconds: Option<f64>,
    /// Stepwise: the lowest rate a step draws, Mbit/s [default: 20].
    #[arg(long, value_name = "MBIT")]
    min_mbit: Option<f64>,
    /// Stepwise: the highest rate a step draws, Mbit/s [default: 500].
    #[arg(long, value_name = "MBIT")]
    max_mbit: Option<f64>,
}

/// The stepwise link of `a` (its defaults where a flag is not given), `duration_ms` long, drawn
/// from `seed`.
fn stepwise(a: &SynthArgs, seed: u64, duration_ms: u64) -> StepwiseLink {
    let d = StepwiseLink::default();
    StepwiseLink {
        seed,
        duration_s: duration_ms as f64 / 1000.0,
        step_s: a.step_seconds.unwrap_or(d.step_s),
        min_mbit: a.min_mbit.unwrap_or(d.min_mbit),
        max_mbit: a.max_mbit.unwrap_or(d.max_mbit),
    }
}

/// Checks the stepwise flags: only with `--kind stepwise`, and values the generator takes
/// (the error names the flag).
fn check_stepwise_flags(a: &SynthArgs, duration_ms: u64) -> Result<()> {
    let given = [
        (a.step_seconds.is_some(), "--step-seconds"),
        (a.min_mbit.is_some(), "--min-mbit"),
        (a.max_mbit.is_some(), "--max-mbit"),
    ];
    if a.kind != SynthKind::Stepwise {
        if let Some((_, flag)) = given.iter().find(|(g, _)| *g) {
            bail!("{flag} is for --kind stepwise only");
        }
        return Ok(());
    }
    if a.rate_mbit.is_some() {
        bail!("--rate-mbit does not apply to stepwise: give --min-mbit and --max-mbit");
    }
    match stepwise(a, a.seed, duration_ms).validate("stepwise") {
        Ok(()) => Ok(()),
        Err(e) => {
            let flag = match e {
                StepwiseError::MinRate(_) => "--min-mbit",
                StepwiseError::MaxRate { .. } => "--max-mbit",
                StepwiseError::Step(_) => "--step-seconds",
                StepwiseError::Duration(_) => "--seconds",
                StepwiseError::Trace(_) => "--max-mbit and --seconds",
            };
            bail!("{flag}: {e}")
        }
    }
}

/// The seed of a direction: the seed itself for the downlink (and --one), a splitmix64 mix of
/// it for the uplink.
fn direction_seed(seed: u64, up: bool) -> u64 {
    if !up {
        return seed;
    }
    let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// One synthetic trace of `a`'s kind, `duration_ms` long, drawn from `seed`.
fn synth_one(a: &SynthArgs, seed: u64, duration_ms: u64, name: &str) -> Result<Trace> {
    let rate_mbit = a.rate_mbit.unwrap_or(12.0);
    let per_ms = rate_mbit * 1e6 / 12_000.0 / 1000.0;
    let trace = match a.kind {
        SynthKind::Constant => constant_rate_trace(name, rate_mbit, duration_ms as f64 / 1000.0)?,
        SynthKind::Stepwise => stepwise(a, seed, duration_ms).generate(name)?,
        SynthKind::Brownian => SyntheticLink {
            seed,
            duration_s: duration_ms as f64 / 1000.0,
            start_rate: a
                .rate_mbit
                .map_or(SyntheticLink::default().start_rate, |r| r * 1e6 / 12_000.0),
            sigma: a.sigma,
            outage_escape_rate: a.outage_escape_rate,
            max_rate: a.max_rate,
            resume_rate: a.resume_rate,
        }
        .generate(name),
        kind => {
            let kind = match kind {
                SynthKind::Exponential => InterArrival::Exponential,
                SynthKind::Gaussian => InterArrival::Gaussian,
                SynthKind::Poisson => InterArrival::Poisson,
                _ => InterArrival::Uniform,
            };
            distributions::generate(
                kind,
                per_ms,
                sprout_core::time::Duration::from_millis(duration_ms),
                seed,
                name,
            )
        }
    };
    // Exactly `duration_ms` long: an opportunity at the end if none is there.
    let mut ops = trace.opportunities_ms().to_vec();
    ops.retain(|&t| t <= duration_ms);
    if ops.last() != Some(&duration_ms) {
        ops.push(duration_ms);
    }
    let trace = Trace::from_opportunities_ms(name, ops)?;
    let overlay = OutageOverlay {
        seed: seed ^ 0x6f75_7461_6765,
        probability_per_s: a.outage_prob,
        mean_length_s: a.outage_mean,
    };
    Ok(overlay.apply(&trace).0)
}

/// Runs `sprout traces synth`.
pub(crate) fn synth(a: SynthArgs) -> Result<()> {
    // A generated trace holds at most a day (and 10^8 opportunities, which the constant kind
    // checks at its rate): sprout_link::trace::MAX_GENERATED_SECONDS.
    let max_s = sprout_link::trace::MAX_GENERATED_SECONDS as f64;
    if !(a.seconds.is_finite() && a.seconds > 0.0 && a.seconds <= max_s) {
        bail!("--seconds must be more than 0 and at most {max_s} (a day)");
    }
    let duration_ms = (a.seconds * 1000.0).round().max(1.0) as u64;
    if let Some(r) = a.rate_mbit {
        if !(r.is_finite() && r > 0.0 && r <= 100_000.0) {
            bail!("--rate-mbit must be more than 0 and at most 100,000 (100 Gbit/s)");
        }
    }
    if !(0.0..=1.0).contains(&a.outage_prob) {
        bail!("--outage-prob is a probability, 0 to 1");
    }
    if !(a.outage_mean.is_finite() && a.outage_mean > 0.0) {
        bail!("--outage-mean must be a positive number of seconds");
    }
    for (v, flag) in [
        (a.sigma, "--sigma"),
        (a.max_rate, "--max-rate"),
        (a.resume_rate, "--resume-rate"),
        (a.outage_escape_rate, "--outage-escape-rate"),
    ] {
        if !(v.is_finite() && v >= 0.0) {
            bail!("{flag} must be a non-negative number");
        }
    }
    check_stepwise_flags(&a, duration_ms)?;
    // Roughly how many lines: refuse what would not fit in memory comfortably.
    let per_s = match a.kind {
        SynthKind::Brownian => a.max_rate,
        SynthKind::Stepwise => stepwise(&a, a.seed, duration_ms).max_mbit * 1e6 / 12_000.0,
        _ => a.rate_mbit.unwrap_or(12.0) * 1e6 / 12_000.0,
    };
    if per_s * a.seconds > 2e8 {
        bail!(
            "that is about {:.0} million lines per file: too many (lower --seconds or the rate)",
            per_s * a.seconds / 1e6
        );
    }
    let outputs: Vec<(PathBuf, bool)> = if a.one {
        vec![(a.out.clone(), false)]
    } else {
        ["down", "up"]
            .into_iter()
            .map(|d| {
                let mut s = a.out.as_os_str().to_owned();
                s.push(format!(".{d}"));
                (PathBuf::from(s), d == "up")
            })
            .collect()
    };
    for (path, up) in outputs {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let trace = synth_one(&a, direction_seed(a.seed, up), duration_ms, &name)?;
        // Whole or not at all: written beside its name, then renamed into place.
        let cannot = || format!("cannot write {}", path.display());
        let mut out =
            std::io::BufWriter::new(files::AtomicFile::create(&path).with_context(cannot)?);
        write_trace(&trace, &mut out).with_context(cannot)?;
        out.into_inner()
            .map_err(|e| e.into_error())
            .and_then(files::AtomicFile::commit)
            .with_context(cannot)?;
        println!(
            "wrote {}: {} opportunities over {:.3} s, mean {:.3} Mbit/s",
            path.display(),
            trace.len(),
            trace.period_ms() as f64 / 1000.0,
            trace.mean_capacity_kbps() / 1000.0
        );
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// convert

/// Input formats of `sprout traces convert`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum ConvertFrom {
    /// Rows of (time, throughput): the form of most public 5G data sets.
    ThroughputCsv,
}

/// Units of the time column.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum TimeUnit {
    /// Seconds.
    S,
    /// Milliseconds.
    Ms,
}

/// Units of the throughput column.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum RateUnit {
    /// Mbit/s.
    Mbit,
    /// kbit/s.
    Kbit,
    /// bit/s.
    Bit,
    /// Mbyte/s (10^6 bytes).
    Mbyte,
}

/// `sprout traces convert` arguments.
#[derive(clap::Args)]
#[command(after_long_help = "\
AN APPROXIMATION: a throughput CSV says how much crossed the link in each interval, not when each \
packet arrived within it. Each interval's bits become evenly spaced 1500-byte opportunities (the \
k-th of n in [a, b) at ceil(a + k (b - a) / n) ms), the bits short of a whole packet carried to \
the next interval. The trace has the data set's rate in every interval but none of the real \
arrival pattern inside one (bursts, millisecond gaps, outages shorter than an interval): it is \
smoother than the link measured, and a scheme that reacts within an interval meets an easier \
link. Use it for capacity over seconds, not for fine timing.

The CSV: fields separated by commas, semicolons, tabs or spaces (detected, or --delimiter), \
optionally quoted; blank lines and lines starting with # are skipped; the first row is a header \
if the chosen columns hold something other than numbers there (columns are chosen by number, \
from 1, or by header name, and then the first row must be the header). A row's time starts its interval, which lasts until the next row's \
(times must increase, and are taken relative to the first row's); the last row lasts --interval \
if given, else as long as the row before. With --time-col none, each row is one interval of \
--interval seconds. The trace starts at the first row's time and ends at the end of the last \
interval, where an opportunity is added if none falls there.

Example: sprout traces convert --from throughput-csv lumos5g.csv --rate-col Throughput \
--time-col none --interval 1 --out lumos.down")]
pub(crate) struct ConvertArgs {
    /// Input format.
    #[arg(long, value_enum)]
    from: ConvertFrom,
    /// The CSV file (`-` for stdin).
    #[arg(value_name = "IN.csv")]
    input: PathBuf,
    /// The trace file to write (mahimahi format).
    #[arg(long, value_name = "OUT")]
    out: PathBuf,
    /// Time column (number from 1, or header name), or `none` when rows are consecutive
    /// intervals of --interval.
    #[arg(long, value_name = "COL", default_value = "1")]
    time_col: String,
    /// Throughput column (number from 1, or header name).
    #[arg(long, value_name = "COL", default_value = "2")]
    rate_col: String,
    /// Length of each row's interval without a time column, and of the last row's with one,
    /// seconds [default: the last row lasts as long as the one before].
    #[arg(long, value_name = "S")]
    interval: Option<f64>,
    /// Unit of the time column.
    #[arg(long, value_enum, default_value = "s")]
    time_unit: TimeUnit,
    /// Unit of the throughput column (per second).
    #[arg(long, value_enum, default_value = "mbit")]
    rate_unit: RateUnit,
    /// Field separator: a character, `tab` or `space` [default: detected].
    #[arg(long, value_name = "CHAR")]
    delimiter: Option<String>,
}

/// Runs `sprout traces convert`.
pub(crate) fn convert(a: ConvertArgs) -> Result<()> {
    let ConvertFrom::ThroughputCsv = a.from;
    let column = |s: &str, flag: &str| -> Result<Column> {
        s.parse::<Column>().map_err(|e| anyhow!("{flag}: {e}"))
    };
    let time_column = if a.time_col.trim().eq_ignore_ascii_case("none") {
        None
    } else {
        Some(column(&a.time_col, "--time-col")?)
    };
    let delimiter = match a.delimiter.as_deref() {
        None => None,
        Some("tab") | Some("\\t") => Some('\t'),
        Some("space") | Some(" ") => None,
        Some(s) if s.chars().count() == 1 => s.chars().next(),
        Some(s) => bail!("--delimiter: one character, `tab` or `space`, not `{s}`"),
    };
    let options = CsvOptions {
        time_column,
        rate_column: column(&a.rate_col, "--rate-col")?,
        interval_s: a.interval,
        time_unit_s: match a.time_unit {
            TimeUnit::S => 1.0,
            TimeUnit::Ms => 0.001,
        },
        rate_unit_bps: match a.rate_unit {
            RateUnit::Mbit => 1e6,
            RateUnit::Kbit => 1e3,
            RateUnit::Bit => 1.0,
            RateUnit::Mbyte => 8e6,
        },
        delimiter,
        ..CsvOptions::default()
    };
    // Read whole, at most a trace file's cap (a throughput CSV holds fewer lines than the
    // trace it makes): a file with no end (`/dev/zero`) or no newline is refused at the cap.
    let cap = sprout_link::trace::MAX_TRACE_FILE_BYTES;
    let (name, bytes) = if a.input.as_os_str() == "-" {
        let stdin = std::path::Path::new("stdin");
        let bytes = files::read_capped_from(std::io::stdin().lock(), stdin, cap)?;
        ("stdin".to_string(), bytes)
    } else {
        (
            a.input.display().to_string(),
            files::read_capped(&a.input, cap)?,
        )
    };
    let input = &bytes[..];
    // Written beside the output and moved there only when the whole CSV converted.
    let dir = match a.out.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let mut tmp = tempfile::NamedTempFile::new_in(&dir)
        .with_context(|| format!("cannot write in {}", dir.display()))?;
    let summary = throughput_csv_to_trace(input, &name, &options, tmp.as_file_mut())?;
    {
        // Readable by all, as a file written the ordinary way (the temporary file is 0600).
        use std::os::unix::fs::PermissionsExt;
        let _ = tmp
            .as_file()
            .set_permissions(std::fs::Permissions::from_mode(0o644));
    }
    tmp.persist(&a.out)
        .map_err(|e| anyhow!("cannot write {}: {}", a.out.display(), e.error))?;
    println!(
        "wrote {}: {} opportunities over {:.3} s from {} rows; mean {:.3} Mbit/s (the CSV's: {:.3} Mbit/s){}",
        a.out.display(),
        summary.opportunities,
        summary.duration_ms as f64 / 1000.0,
        summary.rows,
        summary.trace_mean_mbit,
        summary.csv_mean_mbit,
        if summary.added_final_opportunity {
            "; one opportunity added at the end"
        } else {
            ""
        }
    );
    Ok(())
}

// ---------------------------------------------------------------------------------------
// scale

/// `sprout traces scale` arguments.
#[derive(clap::Args)]
#[command(after_long_help = "\
Multiplies a trace's delivery rate by --factor, keeping its timing: a millisecond that held n \
opportunities (1500-byte lines) gets about factor x n of them, a millisecond with none keeps \
none (outages stay outages), and the last timestamp (the loop period) is kept. Counting from \
the end of the trace, the opportunities at or after each millisecond are ceil(factor x the \
original's), so over any window the scaled trace holds factor times the original's within 1 \
(and the last millisecond always keeps one). No randomness: the same trace and factor always \
give the same file. A factor below 1 drops some timestamps; none is ever added.

The output must stay within a trace file's cap (256 MiB of text): a factor that would pass it \
is refused before anything is written. The file is written whole or not at all.

Example: sprout traces scale --factor 16 ../shared/traces/Verizon-LTE-short.down --out lte-x16.down")]
pub(crate) struct ScaleArgs {
    /// The rate multiplier: a finite number above 0 (0.5 halves the rate, 64 is 64 times it).
    #[arg(long, value_name = "F", allow_negative_numbers = true)]
    factor: f64,
    /// The trace file to scale (mahimahi format).
    #[arg(value_name = "IN")]
    input: PathBuf,
    /// The trace file to write.
    #[arg(long, value_name = "OUT")]
    out: PathBuf,
}

/// Runs `sprout traces scale`.
pub(crate) fn scale(a: ScaleArgs) -> Result<()> {
    if !(a.factor.is_finite() && a.factor > 0.0) {
        bail!("--factor must be a finite number above 0, not {}", a.factor);
    }
    let trace = Trace::load(&a.input)?;
    // Counted (and refused over the cap) before the output is opened.
    sprout_link::scale::check_scale(&trace, a.factor)?;
    let cannot = || format!("cannot write {}", a.out.display());
    let mut out = files::AtomicFile::create(&a.out).with_context(cannot)?;
    let summary = sprout_link::scale::write_scaled(&trace, a.factor, &mut out)?;
    out.commit().with_context(cannot)?;
    let mbit = |lines: u64| {
        lines as f64 * sprout_link::OPPORTUNITY_BYTES as f64 * 8.0
            / summary.period_ms.max(1) as f64
            / 1000.0
    };
    println!(
        "wrote {}: {} opportunities over {:.3} s, mean {:.3} Mbit/s ({} x {} opportunities, {:.3} Mbit/s)",
        a.out.display(),
        summary.opportunities,
        summary.period_ms as f64 / 1000.0,
        mbit(summary.opportunities),
        a.factor,
        trace.len(),
        mbit(trace.len() as u64)
    );
    Ok(())
}
