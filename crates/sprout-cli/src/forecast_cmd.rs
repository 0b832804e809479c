//! `sprout forecast`: the receiver's forecast after every tick of a series of packet counts.

use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Read, Write};
use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use sprout_core::{estimator, Config, SproutVariant};
use sprout_sim::overrides;
use sprout_sim::scheme::Scheme;

/// `sprout forecast` arguments.
#[derive(clap::Args)]
#[command(after_long_help = "\
Input: the packets (1500-byte units, may be fractional) that arrived in each 20 ms tick, in \
order: one tick per line, or several per line separated by spaces, tabs or commas. Blank lines \
and everything after a `#` are ignored.

Output, CSV on stdout: a header `tick,count,f1,...,f8`, then one row per tick: the tick's number \
(from 1), its count as given, and the forecast made at its end: fK is the cumulative number of \
packets the link will deliver by the end of the K-th next tick with the confidence asked for \
(Sprout's cautious forecast; Sprout-EWMA's expected count), so f1 <= f2 <= ... <= f8. There are \
as many f columns as model.forecast_ticks.

Each tick is what a fresh receiver does with it: evolve the rate belief by a tick, observe the \
count, forecast (sprout_core::estimator::build, then evolve, observe and forecast per tick).

Example: printf '10\\n%.0s' $(seq 300) | sprout forecast - | tail -1")]
pub(crate) struct ForecastArgs {
    /// File of per-tick packet counts, or `-` for stdin.
    #[arg(value_name = "FILE")]
    file: PathBuf,
    /// Receiver estimator [default: sprout, the paper's rate model, as the authors' forecasts].
    #[arg(long, value_parser = sprout_apps::choices::sprout_variant(), default_value = "sprout")]
    scheme: SproutVariant,
    /// Forecast confidence, strictly between 0 and 1 (Sprout's; Sprout-EWMA has none)
    /// [default: 0.95, the paper's].
    #[arg(long)]
    confidence: Option<f64>,
    /// Change a model parameter, KEY=VALUE as in `sim` (repeatable; `sprout params` lists them),
    /// e.g. `--param model.sigma=250` [default: none, the paper's parameters].
    #[arg(long = "param", value_name = "KEY=VALUE")]
    params: Vec<String>,
}

/// The configuration the arguments ask for: the scheme's, then --confidence, then --param.
fn config(a: &ForecastArgs) -> Result<Config> {
    let scheme = Scheme::from(a.scheme);
    let mut cfg = scheme.protocol_config();
    if let Some(c) = a.confidence {
        cfg.confidence = c;
    }
    overrides::apply(&mut cfg, &a.params)?;
    cfg.validate()
        .map_err(|e| anyhow::anyhow!("--confidence or --param: {e}"))?;
    Ok(cfg)
}

/// The packet counts on one line of input (`line_no` from 1), or an error naming the line and
/// the token.
fn parse_line(name: &str, line_no: usize, line: &str) -> Result<Vec<f64>> {
    let text = line.split('#').next().unwrap_or("");
    text.split(|c: char| c.is_whitespace() || c == ',')
        .filter(|t| !t.is_empty())
        .map(|token| match token.parse::<f64>() {
            Ok(x) if x.is_finite() && x >= 0.0 => Ok(x),
            _ => bail!(
                "{name}:{line_no}: `{}` is not a packet count (a non-negative number)",
                sprout_files::excerpt(token)
            ),
        })
        .collect()
}

/// The longest input line read, bytes: a line holds a few counts (or many ticks' worth, a
/// few KiB); a file with no newline (`/dev/zero`, a binary file) is refused at this length,
/// not read into memory whole. The input is otherwise read as a stream, a line at a time (a
/// pipe may feed it for as long as it likes), so memory stays within this.
const MAX_LINE_BYTES: usize = 64 << 10;

/// The next line of `input` (line `line_no` from 1) without its newline, at most
/// [`MAX_LINE_BYTES`]; `None` at the end.
fn next_line(input: &mut impl BufRead, name: &str, line_no: usize) -> Result<Option<String>> {
    let mut buf = Vec::new();
    let n = input
        .by_ref()
        .take(MAX_LINE_BYTES as u64 + 1)
        .read_until(b'\n', &mut buf)
        .with_context(|| format!("cannot read {name}"))?;
    if n == 0 {
        return Ok(None);
    }
    if buf.last() == Some(&b'\n') {
        buf.pop();
    } else if buf.len() > MAX_LINE_BYTES {
        bail!(
            "{name}:{line_no}: a line longer than {}; is this a file of packet counts?",
            sprout_files::human_bytes(MAX_LINE_BYTES as u64)
        );
    }
    match String::from_utf8(buf) {
        Ok(line) => Ok(Some(line)),
        Err(_) => bail!("{name}:{line_no}: not text (UTF-8); is this a file of packet counts?"),
    }
}

/// Runs `sprout forecast`.
pub(crate) fn run(a: ForecastArgs) -> Result<()> {
    let cfg = config(&a)?;
    let (name, input): (String, Box<dyn BufRead>) = if a.file.as_os_str() == "-" {
        ("stdin".into(), Box::new(BufReader::new(io::stdin().lock())))
    } else {
        let f = File::open(&a.file).with_context(|| format!("cannot read {}", a.file.display()))?;
        (a.file.display().to_string(), Box::new(BufReader::new(f)))
    };
    match write_forecasts(&cfg, &name, input, &mut BufWriter::new(io::stdout().lock())) {
        // A reader that stops early (`| head`) is not an error.
        Err(e)
            if e.downcast_ref::<io::Error>()
                .is_some_and(|e| e.kind() == io::ErrorKind::BrokenPipe) =>
        {
            Ok(())
        }
        r => r,
    }
}

/// Reads the counts from `input` and writes the CSV to `out`, a row per tick as it comes.
fn write_forecasts(
    cfg: &Config,
    name: &str,
    input: impl BufRead,
    out: &mut impl Write,
) -> Result<()> {
    let horizons = cfg.model.forecast_ticks;
    let mut estimator = estimator::build(cfg);
    let mut forecast = vec![0u32; horizons];
    write!(out, "tick,count")?;
    for k in 1..=horizons {
        write!(out, ",f{k}")?;
    }
    writeln!(out)?;
    let mut tick = 0u64;
    let mut input = input;
    let mut line_no = 0;
    while let Some(line) = next_line(&mut input, name, line_no + 1)? {
        line_no += 1;
        for count in parse_line(name, line_no, &line)? {
            tick += 1;
            estimator.evolve();
            estimator.observe(count);
            estimator.forecast(&mut forecast);
            write!(out, "{tick},{count}")?;
            for f in &forecast {
                write!(out, ",{f}")?;
            }
            writeln!(out)?;
        }
    }
    out.flush()?;
    if tick == 0 {
        bail!("{name}: no packet counts");
    }
    Ok(())
}
