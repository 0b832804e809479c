//! The emulated evaluation (`sprout eval --emulate`): the schemes run as real programs (our
//! `sprout server` / `sprout client` over UDP, the kernel's own TCP through `sprout tcp`) in real
//! time through the link emulator (`sprout-emu`, the paper's Cellsim), and the paper's metrics
//! are computed from the emulator's mahimahi logs. The simulator runs the same configuration
//! beside it, so the two can be compared.

use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use serde::{Deserialize, Serialize};
use sprout_emu::{Emulator, EmulatorConfig};
use sprout_link::{LinkConfig, MmLog, QueueConfig, Trace};
use sprout_secure::{PrivateKey, PublicKey};

use crate::emulate_report;
use sprout_eval::eval::{self, ResultRow, RunLabel, Scheme};
use sprout_sim::logscore;
use sprout_sim::metrics::{self, DirectionMetrics, TimeSeriesPoint, Window};
use sprout_sim::sim::{self, SimConfig};

/// Schemes the emulated evaluation can run: Sprout and Sprout-EWMA over UDP, and the kernel's
/// Cubic (also behind CoDel), Reno and BBR.
pub const EMULATED_SCHEMES: [Scheme; 6] = [
    Scheme::Sprout,
    Scheme::SproutEwma,
    Scheme::Cubic,
    Scheme::Reno,
    Scheme::Bbr,
    Scheme::CubicCodel,
];

/// The link emulated when none is named.
pub const DEFAULT_LINK: &str = "Verizon-LTE-short";
/// Length of each emulated run when none is given (µs): 140 s, the length of Verizon-LTE-short.
pub const DEFAULT_DURATION_US: u64 = 140_000_000;
/// Port the servers listen on, on the emulator's outside address.
const PORT: u16 = 9100;
/// Time the server gets to start listening before the client starts.
const SERVER_START: Duration = Duration::from_millis(400);
/// Time the client may overrun its duration before it is killed.
const CLIENT_GRACE: Duration = Duration::from_secs(20);

/// Options of an emulated evaluation.
#[derive(Clone, Debug)]
pub struct EmulateOptions {
    /// Folder of traces; `None` = ./traces if it holds traces, else a synthetic link.
    pub traces: Option<PathBuf>,
    /// Link pairs to run; empty = [`DEFAULT_LINK`] if present, else the first pair found.
    pub links: Vec<String>,
    /// Schemes to run (each one of [`EMULATED_SCHEMES`]).
    pub schemes: Vec<Scheme>,
    /// Length of each run (µs).
    pub duration_us: u64,
    /// Start of the measured window (µs).
    pub skip_us: u64,
    /// Output folder.
    pub out: PathBuf,
    /// The `sprout` binary that runs the peers (`sprout server`, `client`, `tcp`).
    pub sprout_exe: PathBuf,
    /// Show a progress bar.
    pub progress: bool,
}

/// Everything an emulated evaluation produced.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct EmulateResults {
    /// Where the traces came from.
    pub source: String,
    /// Length of each run, s.
    pub duration_s: f64,
    /// Seconds skipped before measuring.
    pub skip_s: f64,
    /// Rows of the emulated runs (experiment `emulated`) and of the simulator on the same
    /// configuration (experiment `simulated`).
    pub rows: Vec<ResultRow>,
    /// One comparison per link, direction and scheme.
    pub agreement: Vec<Agreement>,
    /// Wall-clock time, s.
    pub wall_s: f64,
}

/// The emulated and simulated results of one link, direction and scheme, and whether they agree
/// within the tolerances (Sprout: throughput within 15%, self-inflicted delay within
/// 30 ms or 25%, whichever is larger; TCP: throughput within 25%, delay within a factor of 2).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Agreement {
    /// Link name.
    pub link: String,
    /// "up" or "down".
    pub direction: String,
    /// Scheme key.
    pub scheme: String,
    /// Emulated throughput, kbit/s.
    pub emulated_kbps: f64,
    /// Simulated throughput, kbit/s.
    pub simulated_kbps: f64,
    /// Emulated self-inflicted delay, ms.
    pub emulated_delay_ms: f64,
    /// Simulated self-inflicted delay, ms.
    pub simulated_delay_ms: f64,
    /// emulated / simulated throughput.
    pub throughput_ratio: f64,
    /// Whether throughput and delay agree within the scheme's tolerance.
    pub agrees: bool,
    /// The tolerance applied, in words.
    pub tolerance: String,
}

impl Agreement {
    fn new(e: &ResultRow, s: &ResultRow) -> Agreement {
        let ratio = e.throughput_kbps / s.throughput_kbps.max(1e-9);
        let (de, ds) = (e.self_inflicted_ms, s.self_inflicted_ms);
        let sprout = e.scheme.starts_with("sprout");
        let (agrees, tolerance) = if sprout {
            let allowed = 30.0f64.max(0.25 * ds.abs());
            (
                (ratio - 1.0).abs() <= 0.15 && (de - ds).abs() <= allowed,
                "throughput ±15%, delay ±max(30 ms, 25%)".to_string(),
            )
        } else {
            // A factor of 2 on delays that may be near zero: compare with a 1 ms floor.
            let (a, b) = (de.max(1.0), ds.max(1.0));
            (
                (ratio - 1.0).abs() <= 0.25 && a / b <= 2.0 && b / a <= 2.0,
                "throughput ±25%, delay within 2x".to_string(),
            )
        };
        Agreement {
            link: e.link.clone(),
            direction: e.direction.clone(),
            scheme: e.scheme.clone(),
            emulated_kbps: e.throughput_kbps,
            simulated_kbps: s.throughput_kbps,
            emulated_delay_ms: de,
            simulated_delay_ms: ds,
            throughput_ratio: ratio,
            agrees,
            tolerance,
        }
    }
}

/// The link configuration a scheme runs over (CoDel for `cubic-codel`, else unlimited).
fn link_config(scheme: Scheme) -> LinkConfig {
    let mut cfg = LinkConfig::default();
    if scheme == Scheme::CubicCodel {
        cfg.queue = QueueConfig::codel();
    }
    cfg
}

/// The server's keys for a Sprout run: a fresh private key written to `path` (mode 0600) and
/// its public key, which the client is given. The server accepts any client key (the client
/// makes an ephemeral one): every datagram is still sealed, as in a real deployment.
fn server_key(path: &Path) -> Result<PublicKey> {
    if path.exists() {
        fs::remove_file(path).with_context(|| format!("removing the old {}", path.display()))?;
    }
    let key = PrivateKey::generate();
    key.write_file(path)?;
    Ok(key.public_key())
}

/// The server and client command lines of a scheme, given the server's address and, for
/// Sprout, the server's key file and public key.
fn peer_commands(
    exe: &Path,
    scheme: Scheme,
    server: &str,
    seconds: f64,
    keys: Option<(&Path, PublicKey)>,
) -> (Command, Command) {
    let secs = format!("{seconds}");
    let mut srv = Command::new(exe);
    let mut cli = Command::new(exe);
    match scheme {
        Scheme::Sprout | Scheme::SproutEwma => {
            srv.args(["server", "--once", "--json", "--listen", server]);
            cli.args(["client"]);
            if let Some((key_file, public)) = keys {
                srv.arg("--key").arg(key_file).arg("--allow-any-client");
                cli.args(["--server-key", &public.to_base64()]);
            }
            cli.args(["--json", "--direction", "both", "--connect", server])
                .args(["--duration", &secs, "--scheme", scheme.key()]);
        }
        _ => {
            let cc = match scheme {
                Scheme::Reno => "reno",
                Scheme::Bbr => "bbr",
                _ => "cubic",
            };
            srv.args(["tcp", "server", "--once", "--json", "--listen", server]);
            cli.args([
                "tcp",
                "client",
                "--json",
                "--direction",
                "both",
                "--connect",
                server,
            ])
            .args(["--duration", &secs, "--cc", cc]);
        }
    }
    (srv, cli)
}

/// Output of a peer process goes to `PREFIX.out` and `PREFIX.err`, next to the logs.
fn redirect(cmd: &mut Command, prefix: &str) -> Result<()> {
    let out = File::create(format!("{prefix}.out"))?;
    let err = File::create(format!("{prefix}.err"))?;
    cmd.stdin(Stdio::null()).stdout(out).stderr(err);
    Ok(())
}

/// Kills a child if it is still running and reaps it.
fn finish(child: &mut Child) {
    if let Ok(None) = child.try_wait() {
        let _ = child.kill();
    }
    let _ = child.wait();
}

/// One emulated run of a scheme on a link pair; returns (downlink, uplink) metrics and the
/// downlink's arrivals and opportunities for the Figure-1 series.
fn run_emulated(
    opts: &EmulateOptions,
    link: &str,
    up: &Arc<Trace>,
    down: &Arc<Trace>,
    scheme: Scheme,
    bar: &ProgressBar,
) -> Result<(DirectionMetrics, DirectionMetrics, MmLog)> {
    let dir = opts.out.join("emulated");
    fs::create_dir_all(&dir)?;
    let base = dir
        .join(format!("{link}-{}", scheme.key()))
        .display()
        .to_string();
    let up_log = PathBuf::from(format!("{base}.up.log"));
    let down_log = PathBuf::from(format!("{base}.down.log"));
    let emu = Emulator::start(EmulatorConfig {
        uplink: up.clone(),
        downlink: down.clone(),
        uplink_link: link_config(scheme),
        downlink_link: link_config(scheme),
        uplink_log: Some(up_log.clone()),
        downlink_log: Some(down_log.clone()),
    })
    .context("starting the link emulator")?;
    let server_addr = format!("{}:{PORT}", emu.outside_addr());
    let seconds = opts.duration_us as f64 / 1e6;
    let key_file = PathBuf::from(format!("{base}.server.key"));
    let public = if scheme.is_sprout() {
        Some(server_key(&key_file)?)
    } else {
        None
    };
    let keys = public.map(|p| (key_file.as_path(), p));
    let (mut srv_cmd, mut cli_cmd) =
        peer_commands(&opts.sprout_exe, scheme, &server_addr, seconds, keys);
    redirect(&mut srv_cmd, &format!("{base}.server"))?;
    redirect(&mut cli_cmd, &format!("{base}.client"))?;
    let mut server = srv_cmd
        .spawn()
        .with_context(|| format!("starting {}", opts.sprout_exe.display()))?;
    thread::sleep(SERVER_START);
    let started = Instant::now();
    let mut client = match emu.spawn_in_namespace(&mut cli_cmd) {
        Ok(c) => c,
        Err(e) => {
            finish(&mut server);
            return Err(e).context("starting the client in the emulator's namespace");
        }
    };
    let limit = Duration::from_secs_f64(seconds) + CLIENT_GRACE;
    let mut shown = 0u64;
    let status = loop {
        if let Some(s) = client.try_wait()? {
            break Some(s);
        }
        if started.elapsed() > limit {
            break None;
        }
        let secs = started.elapsed().as_secs().min(seconds as u64);
        if secs > shown {
            bar.inc(secs - shown);
            shown = secs;
        }
        thread::sleep(Duration::from_millis(100));
    };
    bar.inc((seconds as u64).saturating_sub(shown));
    finish(&mut client);
    finish(&mut server);
    emu.stop().context("stopping the link emulator")?;
    match status {
        Some(s) if s.success() => {}
        Some(s) => bail!(
            "{} client on {link} failed ({s}); see {base}.client.err",
            scheme.key()
        ),
        None => bail!(
            "{} client on {link} did not end within {:.0} s",
            scheme.key(),
            limit.as_secs_f64()
        ),
    }
    let up_log = MmLog::load(&up_log).context("reading the uplink log")?;
    let down_log = MmLog::load(&down_log).context("reading the downlink log")?;
    let end = Some(opts.duration_us);
    Ok((
        logscore::score(&down_log, opts.skip_us, end),
        logscore::score(&up_log, opts.skip_us, end),
        down_log,
    ))
}

/// Seeds of the simulated runs an emulated run is compared with. Each starts the two endpoints
/// at its own random offsets (0-100 ms), as a real run does, rather than both at 0 (seed 0).
pub const SIMULATED_SEEDS: std::ops::RangeInclusive<u64> = 1..=5;

/// The simulator's median (downlink, uplink) runs for the same configuration over
/// [`SIMULATED_SEEDS`], each as (seed, metrics): per direction, the run with the median
/// self-inflicted delay.
fn run_simulated(
    opts: &EmulateOptions,
    up: &Arc<Trace>,
    down: &Arc<Trace>,
    scheme: Scheme,
) -> Result<[(u64, DirectionMetrics); 2]> {
    let mut cfg = SimConfig {
        skip_us: opts.skip_us,
        duration_us: Some(opts.duration_us),
        ..SimConfig::default()
    };
    scheme.configure(&mut cfg);
    let (mut downs, mut ups) = (Vec::new(), Vec::new());
    for seed in SIMULATED_SEEDS {
        cfg.seed = seed;
        let out = sim::run(up.clone(), down.clone(), &cfg, None)?;
        downs.push((seed, out.downlink.metrics));
        ups.push((seed, out.uplink.metrics));
    }
    let delay = |r: &(u64, DirectionMetrics)| r.1.self_inflicted_ms;
    Ok([median_by(downs, delay), median_by(ups, delay)])
}

/// The element whose `key` is the median (the upper one of an even count). Panics on none.
fn median_by<T>(mut items: Vec<T>, key: impl Fn(&T) -> f64) -> T {
    items.sort_by(|a, b| key(a).total_cmp(&key(b)));
    items.swap_remove(items.len() / 2)
}

/// Runs the emulated evaluation and writes its outputs; returns a short summary.
pub fn run(opts: &EmulateOptions) -> Result<String> {
    if opts.schemes.is_empty() {
        bail!("no scheme given");
    }
    if let Some(s) = opts.schemes.iter().find(|s| !EMULATED_SCHEMES.contains(s)) {
        let known: Vec<&str> = EMULATED_SCHEMES.iter().map(|s| s.key()).collect();
        bail!(
            "scheme {} cannot be emulated (emulated schemes: {})",
            s.key(),
            known.join(", ")
        );
    }
    if opts.skip_us >= opts.duration_us {
        bail!("the skipped time must be shorter than the run");
    }
    sprout_emu::check_privileges()?;
    let links = eval::load_links(opts.traces.as_deref())?;
    let names: Vec<String> = if opts.links.is_empty() {
        vec![links.named(DEFAULT_LINK).0.clone()]
    } else {
        opts.links.clone()
    };
    let mut pairs = Vec::new();
    for n in &names {
        let p = links
            .pairs
            .iter()
            .find(|p| p.0 == *n)
            .with_context(|| format!("no link pair named {n} in {}", links.source))?;
        pairs.push(p.clone());
    }
    fs::create_dir_all(&opts.out)
        .with_context(|| format!("creating output folder {}", opts.out.display()))?;
    let seconds = opts.duration_us / 1_000_000;
    let total = (pairs.len() * opts.schemes.len()) as u64 * seconds;
    let bar = if opts.progress {
        let b = ProgressBar::new(total);
        b.set_style(
            ProgressStyle::with_template(
                "{spinner} [{elapsed_precise}] {bar:40} {pos}/{len} s {msg}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        b
    } else {
        ProgressBar::hidden()
    };
    let started = Instant::now();
    let mut rows = Vec::new();
    let mut agreement = Vec::new();
    let mut fig1: Option<Vec<TimeSeriesPoint>> = None;
    for (link, up, down) in &pairs {
        for &scheme in &opts.schemes {
            bar.set_message(format!("{link} {}", scheme.key()));
            let (e_down, e_up, down_log) = run_emulated(opts, link, up, down, scheme, &bar)
                .with_context(|| format!("emulating {} on {link}", scheme.key()))?;
            let [s_down, s_up] = run_simulated(opts, up, down, scheme)?;
            if scheme == Scheme::Sprout && link == eval::FIGURE1_LINK {
                let (arrivals, opportunities) = logscore::from_log(&down_log);
                fig1 = Some(metrics::time_series(
                    &arrivals,
                    &opportunities,
                    1500,
                    Window::new(0, opts.duration_us),
                    500_000,
                ));
            }
            let queue = link_config(scheme).queue;
            for (experiment, [(down_seed, down_m), (up_seed, up_m)]) in [
                ("emulated", [(0, &e_down), (0, &e_up)]),
                ("simulated", [(s_down.0, &s_down.1), (s_up.0, &s_up.1)]),
            ] {
                let label = |seed| RunLabel {
                    experiment,
                    link,
                    scheme,
                    confidence: scheme
                        .is_sprout()
                        .then(|| scheme.protocol_config().confidence),
                    loss: 0.0,
                    seed,
                    queue: &queue,
                    with_paper: true,
                };
                rows.push(ResultRow::new(&label(down_seed), "down", down_m));
                rows.push(ResultRow::new(&label(up_seed), "up", up_m));
            }
            let n = rows.len();
            agreement.push(Agreement::new(&rows[n - 4], &rows[n - 2]));
            agreement.push(Agreement::new(&rows[n - 3], &rows[n - 1]));
        }
    }
    bar.finish_and_clear();
    let results = EmulateResults {
        source: links.source.clone(),
        duration_s: opts.duration_us as f64 / 1e6,
        skip_s: opts.skip_us as f64 / 1e6,
        rows,
        agreement,
        wall_s: started.elapsed().as_secs_f64(),
    };
    emulate_report::write(&opts.out, &results, fig1.as_deref())?;
    Ok(emulate_report::summary(&results, &opts.out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_by_takes_the_middle_key() {
        let runs = vec![(1, 30.0), (2, 10.0), (3, 50.0), (4, 20.0), (5, 40.0)];
        assert_eq!(median_by(runs, |r| r.1), (1, 30.0));
        assert_eq!(median_by(vec![(1, 5.0), (2, 1.0)], |r| r.1), (1, 5.0));
    }
}
