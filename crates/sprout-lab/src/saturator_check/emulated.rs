//! Both directions recorded with `sprout saturator server|client` through the emulator, in
//! real time.

use sprout_core::direction::Load;
use std::fs;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use sprout_link::{LinkConfig, Trace};
use sprout_saturator::runtime::{ClientOptions, ServerOptions};

use super::feedback::FeedbackPath;
use super::options::CheckOptions;
use super::process::{finish, free_udp_port, normal_priority, redirect, set_fifo};
use super::recording::{read_recordings, EmuFacts, Recorded};
use crate::error::{Context, LabError, Result};

/// How much longer than its recording the client may take (the end, the transfer).
const CLIENT_GRACE: Duration = Duration::from_secs(90);

/// Both directions recorded with `sprout saturator server|client` while the emulator replays
/// the traces in real time; the feedback over a veth pair outside the emulated link (or over
/// the emulated links with `same_path`).
#[allow(clippy::type_complexity)]
pub(super) fn recordings(
    o: &CheckOptions,
    name: &str,
    up: &Arc<Trace>,
    down: &Arc<Trace>,
) -> Result<([Option<Recorded>; 2], Option<[EmuFacts; 2]>)> {
    let dir = o.out.join("recordings");
    fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut tag = if o.loss > 0.0 || o.outage_s > 0 {
        format!("{name}-loss{}-outage{}", o.loss, o.outage_s)
    } else {
        name.to_string()
    };
    if o.same_path {
        tag.push_str("-same-path");
    }
    let prefix = dir.join(&tag);
    for suffix in [".up", ".down", ".json"] {
        let _ = fs::remove_file(PathBuf::from(format!("{}{suffix}", prefix.display())));
    }
    let port = free_udp_port()?;
    let defaults = ServerOptions::new((Ipv4Addr::UNSPECIFIED, port).into());
    let server_opts = ServerOptions {
        out: Some(dir.join("server")),
        once: true,
        json: true,
        quiet: true,
        // With the feedback over the emulated links, an injected outage silences the client.
        idle_timeout: defaults
            .idle_timeout
            .max(Duration::from_secs(o.outage_s + 5)),
        // The recording may be longer than a shared server's bound (10 minutes).
        max_recording: defaults
            .max_recording
            .max(Duration::from_secs(o.from_s + o.seconds + 60)),
        ..defaults
    };
    let mut srv = Command::new(&o.sprout_exe);
    srv.args(server_opts.to_args());
    redirect(&mut srv, &prefix, "server")?;
    let mut server = srv
        .spawn()
        .with_context(|| format!("starting {}", o.sprout_exe.display()))?;
    let (emu, fb) = match start_emulator(o, up, down) {
        Ok(started) => started,
        Err(e) => {
            finish(&mut server);
            return Err(e);
        }
    };
    let epoch_us = (emu.epoch_ns() / 1000) as i64;
    let client_opts = ClientOptions {
        feedback: fb.as_ref().map(|f| (f.root_addr, port).into()),
        direction: Some(Load::Both),
        duration: Some(Duration::from_secs(o.record_s())),
        name: prefix.clone(),
        json: true,
        ..ClientOptions::new((emu.outside_addr(), port).into())
    };
    let status = run_client(o, &emu, &client_opts, &prefix);
    // The server exits after the client's DONE; give it a moment.
    for _ in 0..50 {
        if let Ok(Some(_)) = server.try_wait() {
            break;
        }
        thread::sleep(Duration::from_millis(100));
    }
    finish(&mut server);
    let report = emu.stop().context("stopping the link emulator")?;
    drop(fb);
    let client_out = status?;
    let recs = read_recordings(&client_out, &prefix, epoch_us)?;
    let facts = |d: &sprout_emu::DirectionReport| {
        let h = &d.lateness_us;
        (
            d.stats.capacity_used(),
            [
                h.quantile(0.5).unwrap_or(0),
                h.quantile(0.99).unwrap_or(0),
                h.max(),
            ],
        )
    };
    Ok((recs, Some([facts(&report.uplink), facts(&report.downlink)])))
}

/// Starts the emulator replaying the traces (its threads real-time if asked) and, unless
/// `same_path`, the feedback path beside it.
fn start_emulator(
    o: &CheckOptions,
    up: &Arc<Trace>,
    down: &Arc<Trace>,
) -> Result<(sprout_emu::Emulator, Option<FeedbackPath>)> {
    use sprout_emu::{Emulator, EmulatorConfig};
    let link = |stream: u64| LinkConfig {
        loss: o.loss,
        seed: o.seed.wrapping_mul(2).wrapping_add(stream),
        ..LinkConfig::default()
    };
    // The emulator's threads inherit this thread's scheduling: real-time while it starts them.
    let realtime = o.realtime && set_fifo(true);
    let started_emu = Emulator::start(EmulatorConfig {
        uplink: up.clone(),
        downlink: down.clone(),
        uplink_link: link(1),
        downlink_link: link(0),
        uplink_log: None,
        downlink_log: None,
    });
    if realtime {
        set_fifo(false);
    }
    let emu = started_emu.context("starting the link emulator")?;
    if o.same_path {
        return Ok((emu, None));
    }
    match FeedbackPath::create(&emu) {
        Ok(f) => Ok((emu, Some(f))),
        Err(e) => {
            let _ = emu.stop();
            Err(e)
        }
    }
}

/// Runs `sprout saturator client` as `opts` says in the emulator's mobile namespace and waits
/// for it (at most its recording and [`CLIENT_GRACE`]); the file of its output.
fn run_client(
    o: &CheckOptions,
    emu: &sprout_emu::Emulator,
    opts: &ClientOptions,
    prefix: &Path,
) -> Result<PathBuf> {
    let mut cli = Command::new(&o.sprout_exe);
    cli.args(opts.to_args());
    let client_out = redirect(&mut cli, prefix, "client")?;
    normal_priority(&mut cli);
    let started = Instant::now();
    let mut client = emu
        .spawn_in_namespace(&mut cli)
        .context("starting the client in the emulator's namespace")?;
    let limit = opts.duration.unwrap_or_default() + CLIENT_GRACE;
    let status = loop {
        match client.try_wait() {
            Ok(Some(s)) => break Some(s),
            Ok(None) => {}
            Err(e) => {
                finish(&mut client);
                return Err(e.into());
            }
        }
        if started.elapsed() > limit {
            break None;
        }
        thread::sleep(Duration::from_millis(100));
    };
    finish(&mut client);
    match status {
        Some(s) if s.success() => Ok(client_out),
        Some(status) => Err(LabError::Failed(format!(
            "the saturator client failed ({status}); see {}.client.err",
            prefix.display()
        ))),
        None => Err(LabError::Failed(format!(
            "the saturator client did not end within {} s",
            limit.as_secs()
        ))),
    }
}
