//! One emulated run: a scheme's server outside and client inside the link emulator, scored
//! from the emulator's logs.

use std::fs;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use indicatif::ProgressBar;
use sprout_emu::{Emulator, EmulatorConfig};
use sprout_eval::aqm::AqmQueue;
use sprout_eval::eval::Scheme;
use sprout_link::{LinkConfig, MmLog, QueueConfig, Trace};
use sprout_secure::{PrivateKey, PublicKey};
use sprout_sim::logscore;
use sprout_sim::metrics::DirectionMetrics;

use super::children::{finish, redirect, wait_showing_progress};
use super::options::EmulateOptions;
use super::peers::{sprout_commands, tcp_commands};
use super::webrtc::{run_call, CallPair};
use crate::error::{Context, LabError};

/// Port the servers listen on, on the emulator's outside address.
const PORT: u16 = 9100;
/// Time the server gets to start listening before the client starts.
const SERVER_START: Duration = Duration::from_millis(400);
/// Time the client may overrun its duration before it is killed.
const CLIENT_GRACE: Duration = Duration::from_secs(20);

/// The link configuration a scheme runs over: `queue` if given, else CoDel for
/// `cubic-codel` and unlimited for the others.
pub(super) fn link_config(scheme: Scheme, queue: Option<&AqmQueue>) -> LinkConfig {
    let mut cfg = LinkConfig::default();
    if let Some(q) = queue {
        q.apply(&mut cfg);
    } else if scheme == Scheme::CubicCodel {
        cfg.queue = QueueConfig::codel();
    }
    cfg
}

/// The server's keys for a Sprout run: a fresh private key written to `path` (mode 0600) and
/// its public key, which the client is given. The server accepts any client key (the client
/// makes an ephemeral one): every datagram is still sealed, as in a real deployment.
pub(super) fn server_key(path: &Path) -> Result<PublicKey, LabError> {
    if path.exists() {
        fs::remove_file(path).with_context(|| format!("removing the old {}", path.display()))?;
    }
    let key = PrivateKey::generate();
    key.write_file(path)?;
    Ok(key.public_key())
}

/// Starts a run's peers, their output next to the logs at `base`: the server outside `emu`,
/// then, [`SERVER_START`] later, the client inside its namespace (a client that cannot start
/// stops the server). Returns both and when the client started.
pub(super) fn start_peers(
    emu: &Emulator,
    (srv_cmd, cli_cmd): (&mut Command, &mut Command),
    base: &str,
    exe: &Path,
) -> Result<(Child, Child, Instant), LabError> {
    redirect(srv_cmd, &format!("{base}.server"))?;
    redirect(cli_cmd, &format!("{base}.client"))?;
    let mut server = srv_cmd
        .spawn()
        .with_context(|| format!("starting {}", exe.display()))?;
    thread::sleep(SERVER_START);
    let started = Instant::now();
    match emu.spawn_in_namespace(cli_cmd) {
        Ok(client) => Ok((server, client, started)),
        Err(e) => {
            finish(&mut server);
            Err(LabError::context(
                "starting the client in the emulator's namespace",
                e,
            ))
        }
    }
}

/// What one emulated run produced: (downlink, uplink) metrics from the emulator's logs, the
/// downlink's log (for the Figure-1 series) and, for `webrtc`, the call's (downlink, uplink)
/// summaries.
pub(super) struct Emulated {
    /// Downlink metrics.
    pub down: DirectionMetrics,
    /// Uplink metrics.
    pub up: DirectionMetrics,
    /// The downlink's log.
    pub down_log: MmLog,
    /// The WebRTC call's (offer = downlink, answer = uplink) summaries.
    pub call: Option<CallPair>,
}

/// One emulated run of a scheme on a link pair.
pub(super) fn run_emulated(
    opts: &EmulateOptions,
    link: &str,
    up: &Arc<Trace>,
    down: &Arc<Trace>,
    scheme: Scheme,
    bar: &ProgressBar,
) -> Result<Emulated, LabError> {
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
        uplink_link: link_config(scheme, opts.queue.as_ref()),
        downlink_link: link_config(scheme, opts.queue.as_ref()),
        uplink_log: Some(up_log.clone()),
        downlink_log: Some(down_log.clone()),
    })
    .context("starting the link emulator")?;
    let call = if scheme == Scheme::Webrtc {
        let call = run_call(opts, &emu, (link, &base), bar);
        emu.stop().context("stopping the link emulator")?;
        Some(call?)
    } else {
        let status = run_peers(opts, &emu, scheme, &base, bar)?;
        emu.stop().context("stopping the link emulator")?;
        client_outcome(opts, scheme, link, base, status)?;
        None
    };
    let read = |path: &Path, direction| {
        MmLog::load(path).with_context(|| format!("reading the {direction}link log"))
    };
    let up_log = read(&up_log, "up")?;
    let down_log = read(&down_log, "down")?;
    let end = Some(sprout_core::time::Instant::from_micros(opts.duration_us));
    let skip = sprout_core::time::Duration::from_micros(opts.skip_us);
    Ok(Emulated {
        down: logscore::score(&down_log, skip, end),
        up: logscore::score(&up_log, skip, end),
        down_log,
        call,
    })
}

/// Fails unless the client exited with success (`None`: it overran its time).
fn client_outcome(
    opts: &EmulateOptions,
    scheme: Scheme,
    link: &str,
    base: String,
    status: Option<ExitStatus>,
) -> Result<(), LabError> {
    match status {
        Some(s) if s.success() => Ok(()),
        Some(status) => Err(LabError::Failed(format!(
            "{} client on {link} failed ({status}); see {base}.client.err",
            scheme.key()
        ))),
        None => Err(LabError::Failed(format!(
            "{} client on {link} did not end within {:.0} s",
            scheme.key(),
            (Duration::from_micros(opts.duration_us) + CLIENT_GRACE).as_secs_f64()
        ))),
    }
}

/// Runs the server outside and the client inside `emu` (files `BASE.server.*`,
/// `BASE.client.*`), showing progress; returns the client's exit status, or `None` if it
/// overran its duration and grace time. Both peers are reaped.
fn run_peers(
    opts: &EmulateOptions,
    emu: &Emulator,
    scheme: Scheme,
    base: &str,
    bar: &ProgressBar,
) -> Result<Option<ExitStatus>, LabError> {
    let server_addr = SocketAddr::new(IpAddr::V4(emu.outside_addr()), PORT);
    let seconds = opts.duration_us as f64 / 1e6;
    let exe = &opts.sprout_exe;
    let (mut srv_cmd, mut cli_cmd) = if scheme.is_sprout() {
        let key_file = PathBuf::from(format!("{base}.server.key"));
        let public = server_key(&key_file)?;
        sprout_commands(exe, scheme, server_addr, seconds, (&key_file, public))
    } else {
        tcp_commands(exe, scheme, server_addr, seconds)
    };
    let (mut server, mut client, started) =
        start_peers(emu, (&mut srv_cmd, &mut cli_cmd), base, exe)?;
    let limit = Duration::from_secs_f64(seconds) + CLIENT_GRACE;
    let waited = wait_showing_progress(&mut client, started, limit, seconds, bar);
    finish(&mut client);
    finish(&mut server);
    Ok(waited?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_aqm_queue_replaces_every_schemes_own() {
        assert_eq!(
            link_config(Scheme::Cubic, None).queue,
            QueueConfig::default()
        );
        assert_eq!(
            link_config(Scheme::CubicCodel, None).queue,
            QueueConfig::codel()
        );
        let pie = sprout_eval::aqm::queue("pie").unwrap();
        for s in [Scheme::Sprout, Scheme::Cubic, Scheme::CubicCodel] {
            let cfg = link_config(s, Some(&pie));
            assert_eq!(cfg.queue, QueueConfig::pie());
            assert_eq!(cfg.buffer, None);
        }
        let tail = sprout_eval::aqm::queue("drop-tail-100ms").unwrap();
        let cfg = link_config(Scheme::Cubic, Some(&tail));
        assert_eq!(cfg.queue, QueueConfig::default());
        assert_eq!(cfg.buffer, Some(sprout_eval::aqm::DROP_TAIL_BUFFER));
    }
}
