//! The emulated interactive experiment (`sprout eval --emulate --experiments interactive`): an
//! application stream at a fixed rate, below what the link carries most of the time, sent down
//! one link pair's downlink through the link emulator by Sprout and Sprout-EWMA (`sprout client
//! --rate R --direction down` against `sprout server`) and by `direct` (`sprout interactive`,
//! no congestion control), each scored by the receiving client's application-level delay
//! (creation to delivery, the sender's queue included; [`sprout_apps::app_delay`]).

use std::fs;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use indicatif::ProgressBar;
use sprout_apps::app_delay::AppDelay;
use sprout_apps::transfer::CLIENT_GRACE as SPROUT_CLIENT_GRACE;
use sprout_emu::{Emulator, EmulatorConfig};
use sprout_eval::eval::{self, Scheme};
use sprout_eval::progress;
use sprout_link::Trace;

use super::children::{finish, wait_showing_progress};
use super::emulated::{server_key, start_peers};
use super::interactive_report::{self, InteractiveResults, InteractiveRow};
use super::options::{InteractiveOptions, DEFAULT_LINK, INTERACTIVE_SCHEMES};
use super::peers::{direct_commands, paced_commands};
use crate::error::{Context, LabError};

/// Port the servers listen on, on the emulator's outside address.
const PORT: u16 = 9110;
/// Time the client may overrun its duration before it is killed.
const CLIENT_LIMIT: Duration = Duration::from_secs(20);
/// Time the server gets to end by itself once the client has.
const SERVER_EXIT: Duration = Duration::from_secs(5);

/// Runs the emulated interactive experiment, writes `interactive-emulated.csv` and `.json` and
/// its section of report.md, and returns the table and checks to print.
pub fn run_interactive(opts: &InteractiveOptions) -> Result<String, LabError> {
    if let Some(&r) = opts
        .rates_kbps
        .iter()
        .find(|r| !(r.is_finite() && **r > 0.0))
    {
        return Err(LabError::Invalid(format!(
            "offered rates must be positive kbit/s, got {r}"
        )));
    }
    if opts.duration_us < 1_000_000 {
        return Err(LabError::Invalid(
            "the interactive experiment needs runs of at least 1 s".into(),
        ));
    }
    sprout_emu::check_privileges()?;
    let links = eval::load_links(opts.traces.as_deref())?;
    let (link, up, down) = match &opts.link {
        Some(n) => links
            .pairs
            .iter()
            .find(|p| p.0 == *n)
            .cloned()
            .ok_or_else(|| LabError::no_link_pair(n, &links.source))?,
        None => links.named(DEFAULT_LINK).clone(),
    };
    fs::create_dir_all(opts.out.join("interactive"))?;
    let seconds = opts.duration_us as f64 / 1e6;
    let runs = (INTERACTIVE_SCHEMES.len() * opts.rates_kbps.len()) as u64;
    let bar = progress::bar(runs * seconds.ceil() as u64, " s", opts.progress);
    let started = Instant::now();
    let mut rows = Vec::new();
    for &rate in &opts.rates_kbps {
        for scheme in INTERACTIVE_SCHEMES {
            bar.set_message(format!("{link} {scheme} {rate} kbit/s"));
            let run = Run {
                opts,
                link: &link,
                scheme,
                rate_kbps: rate,
            };
            let app = run
                .emulate(&up, &down, &bar)
                .with_context(|| format!("emulating {scheme} at {rate} kbit/s on {link}"))?;
            rows.push(InteractiveRow::new(&link, scheme, rate, seconds, &app));
        }
    }
    bar.finish_and_clear();
    let results = InteractiveResults::new(
        links.source.clone(),
        link.clone(),
        seconds,
        rows,
        started.elapsed().as_secs_f64(),
    );
    interactive_report::write(&opts.out, &results)?;
    Ok(interactive_report::text(&results, &opts.out))
}

/// One run: a scheme's stream at one rate.
struct Run<'a> {
    opts: &'a InteractiveOptions,
    link: &'a str,
    scheme: &'static str,
    rate_kbps: f64,
}

impl Run<'_> {
    /// The file prefix of the run's peer outputs, in `OUT/interactive/`.
    fn base(&self) -> String {
        self.opts
            .out
            .join("interactive")
            .join(format!("{}-{}-{}", self.link, self.scheme, self.rate_kbps))
            .display()
            .to_string()
    }

    /// Runs the stream through a fresh emulator and returns the client's score of it.
    fn emulate(
        &self,
        up: &Arc<Trace>,
        down: &Arc<Trace>,
        bar: &ProgressBar,
    ) -> Result<AppDelay, LabError> {
        let emu = Emulator::start(EmulatorConfig::new(up.clone(), down.clone()))
            .context("starting the link emulator")?;
        let ran = self.run_peers(&emu, bar);
        emu.stop().context("stopping the link emulator")?;
        ran?;
        self.client_summary()
    }

    /// The server and client command lines.
    fn commands(&self, server: SocketAddr) -> Result<(Command, Command), LabError> {
        let exe = &self.opts.sprout_exe;
        let stream = (self.opts.duration_us as f64 / 1e6, self.rate_kbps);
        Ok(if self.scheme == "direct" {
            // The direct client listens past the duration as long as a Sprout client waits.
            direct_commands(exe, server, stream, SPROUT_CLIENT_GRACE.as_secs_f64())
        } else {
            let scheme = if self.scheme == "sprout-ewma" {
                Scheme::SproutEwma
            } else {
                Scheme::Sprout
            };
            let key_file = PathBuf::from(format!("{}.server.key", self.base()));
            let public = server_key(&key_file)?;
            paced_commands(exe, scheme, server, stream, (&key_file, public))
        })
    }

    /// Runs the server outside and the client inside `emu`; both are reaped. Fails if the
    /// client fails or overruns.
    fn run_peers(&self, emu: &Emulator, bar: &ProgressBar) -> Result<(), LabError> {
        let server = SocketAddr::new(IpAddr::V4(emu.outside_addr()), PORT);
        let (mut srv_cmd, mut cli_cmd) = self.commands(server)?;
        let base = self.base();
        let (mut srv, mut client, started) = start_peers(
            emu,
            (&mut srv_cmd, &mut cli_cmd),
            &base,
            &self.opts.sprout_exe,
        )?;
        let seconds = self.opts.duration_us as f64 / 1e6;
        let limit = Duration::from_secs_f64(seconds) + CLIENT_LIMIT;
        let waited = wait_showing_progress(&mut client, started, limit, seconds.ceil(), bar);
        finish(&mut client);
        let until = Instant::now() + SERVER_EXIT;
        while Instant::now() < until && matches!(srv.try_wait(), Ok(None)) {
            thread::sleep(Duration::from_millis(50));
        }
        finish(&mut srv);
        match waited? {
            Some(s) if s.success() => Ok(()),
            Some(status) => Err(LabError::Failed(format!(
                "{} client on {} failed ({status}); see {base}.client.err",
                self.scheme, self.link
            ))),
            None => Err(LabError::Failed(format!(
                "{} client on {} did not end within {:.0} s",
                self.scheme,
                self.link,
                limit.as_secs_f64()
            ))),
        }
    }

    /// The application-level delay in the client's JSON summary.
    fn client_summary(&self) -> Result<AppDelay, LabError> {
        let base = self.base();
        summary_app_delay(Path::new(&format!("{base}.client.out"))).ok_or_else(|| {
            LabError::Failed(format!(
                "the client of {} at {} kbit/s on {} printed no summary; see {base}.client.out \
                 and .err",
                self.scheme, self.rate_kbps, self.link
            ))
        })
    }
}

/// The `app_*` fields of the last `"type":"summary"` JSON line of a peer's output, if any.
pub fn summary_app_delay(path: &Path) -> Option<AppDelay> {
    let text = fs::read_to_string(path).ok()?;
    text.lines()
        .filter(|l| l.trim_start().starts_with('{'))
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .rfind(|v| v["type"] == "summary" && v.get("app_offered").is_some())
        .and_then(|v| serde_json::from_value(v).ok())
}
