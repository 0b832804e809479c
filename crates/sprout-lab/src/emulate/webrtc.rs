//! One emulated run of `webrtc`: a real WebRTC call (aiortc, [`crate::webrtc_call`]) through
//! the link emulator. The answer end runs outside, bound to the emulator's outside address,
//! and listens for signalling on a Unix-domain socket in the run's output folder; the offer
//! end runs in the mobile namespace, bound to its address. Both send video and measure the
//! frames they receive: the offer end's summary is the downlink's, the answer end's the
//! uplink's.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, ExitStatus};
use std::thread;
use std::time::{Duration, Instant};

use indicatif::ProgressBar;
use sprout_emu::Emulator;

use super::children::{finish, redirect, wait_showing_progress};
use super::options::EmulateOptions;
use crate::error::{Context, LabError};
use crate::webrtc_call::{read_summary, CallOptions, CallSummary, Role};

/// Time the answer end may take to open its signalling socket (importing aiortc and av takes
/// a few seconds, more on a loaded machine).
const SIGNAL_WAIT: Duration = Duration::from_secs(30);
/// Time the offer end retries connecting to the signalling socket, s.
const CONNECT_TIMEOUT_S: f64 = 30.0;
/// Time the offer end may overrun its media time (connecting, ICE, DTLS, ending).
const OFFER_GRACE: Duration = Duration::from_secs(60);
/// Time the answer end gets to end by itself once the offer end has.
const ANSWER_EXIT: Duration = Duration::from_secs(15);
/// Longest Unix-domain socket path Linux takes (`sun_path` holds 108 bytes with the NUL).
const MAX_SOCKET_PATH: usize = 107;

/// The (downlink, uplink) summaries of a call: the offer end's and the answer end's.
pub(super) type CallPair = (CallSummary, CallSummary);

/// The signalling socket of the run with file prefix `base` (`BASE.signal`), or one in the
/// temporary folder when that path is too long for a Unix-domain socket.
fn signal_path(base: &str) -> PathBuf {
    let path = PathBuf::from(format!("{base}.signal"));
    if path.as_os_str().len() <= MAX_SOCKET_PATH {
        path
    } else {
        std::env::temp_dir().join(format!("sprout-webrtc-{}.signal", std::process::id()))
    }
}

/// The two ends' options for a call of `seconds` through `emu` (frames files beside the logs).
fn call_options(
    opts: &EmulateOptions,
    emu: &Emulator,
    base: &str,
    seconds: f64,
) -> (CallOptions, CallOptions) {
    let signal = signal_path(base);
    let end = |role: Role, bind: std::net::Ipv4Addr| CallOptions {
        frames_csv: Some(PathBuf::from(format!("{base}.{}.frames.csv", role.key()))),
        connect_timeout_s: Some(CONNECT_TIMEOUT_S),
        ..CallOptions::new(
            opts.python.clone(),
            role,
            signal.clone(),
            bind.into(),
            seconds,
        )
    };
    (
        end(Role::Answer, emu.outside_addr()),
        end(Role::Offer, emu.mobile_addr()),
    )
}

/// Runs the call through `emu` (files `BASE.answer.*`, `BASE.offer.*`), showing progress;
/// returns the (downlink, uplink) summaries. Both ends are reaped whatever happens.
pub(super) fn run_call(
    opts: &EmulateOptions,
    emu: &Emulator,
    (link, base): (&str, &str),
    bar: &ProgressBar,
) -> Result<CallPair, LabError> {
    let seconds = opts.duration_us as f64 / 1e6;
    let (answer_opts, offer_opts) = call_options(opts, emu, base, seconds);
    let signal = answer_opts.signal.clone();
    if signal.exists() {
        // A socket left by a killed run: the answer end could not listen on it.
        fs::remove_file(&signal)?;
    }
    let mut answer_cmd = answer_opts.command();
    redirect(&mut answer_cmd, &format!("{base}.answer"))?;
    let mut answer = answer_cmd.spawn().map_err(|source| {
        LabError::Call(crate::webrtc_call::CallError::NoPython {
            python: opts.python.clone(),
            source,
        })
    })?;
    let ended = run_offer(emu, (link, base), &offer_opts, &mut answer, bar);
    let until = Instant::now() + ANSWER_EXIT;
    while Instant::now() < until && matches!(answer.try_wait(), Ok(None)) {
        thread::sleep(Duration::from_millis(50));
    }
    let answer_status = answer.try_wait()?;
    finish(&mut answer);
    let _ = fs::remove_file(&signal);
    ended?;
    check_end("answer", link, base, answer_status, ANSWER_EXIT)?;
    let summary = |role: &'static str| {
        read_summary(Path::new(&format!("{base}.{role}.out")))
            .with_context(|| format!("reading the webrtc {role} end's summary ({base}.{role}.out)"))
    };
    Ok((summary("offer")?, summary("answer")?))
}

/// Waits for the answer end's signalling socket, then runs the offer end in `emu`'s
/// namespace to its end (or its time limit); the offer end is reaped.
fn run_offer(
    emu: &Emulator,
    (link, base): (&str, &str),
    offer: &CallOptions,
    answer: &mut Child,
    bar: &ProgressBar,
) -> Result<(), LabError> {
    let waiting = Instant::now();
    while !offer.signal.exists() {
        if let Some(status) = answer.try_wait()? {
            return check_end("answer", link, base, Some(status), Duration::ZERO)
                .and(Err(call_end("answer", link, "ended before the call", base)));
        }
        if waiting.elapsed() > SIGNAL_WAIT {
            return Err(LabError::Failed(format!(
                "the webrtc answer end on {link} did not open its signalling socket {} within \
                 {:.0} s; see {base}.answer.err",
                offer.signal.display(),
                SIGNAL_WAIT.as_secs_f64()
            )));
        }
        thread::sleep(Duration::from_millis(50));
    }
    let mut cmd = offer.command();
    redirect(&mut cmd, &format!("{base}.offer"))?;
    let mut child = emu
        .spawn_in_namespace(&mut cmd)
        .context("starting the client in the emulator's namespace")?;
    let started = Instant::now();
    let limit = Duration::from_secs_f64(offer.duration_s) + OFFER_GRACE;
    let waited = wait_showing_progress(&mut child, started, limit, offer.duration_s, bar);
    finish(&mut child);
    check_end("offer", link, base, waited?, limit)
}

/// Fails unless an end exited with success (`None`: it did not end within `limit`).
fn check_end(
    role: &'static str,
    link: &str,
    base: &str,
    status: Option<ExitStatus>,
    limit: Duration,
) -> Result<(), LabError> {
    let how = match status {
        Some(s) if s.success() => return Ok(()),
        Some(s) => format!("failed ({s})"),
        None => format!("did not end within {:.0} s", limit.as_secs_f64()),
    };
    Err(call_end(role, link, &how, base))
}

/// An end of the WebRTC call failed, or did not end in time (`how`: "failed (exit status:
/// 1)", "did not end within 95 s").
fn call_end(role: &str, link: &str, how: &str, base: &str) -> LabError {
    LabError::Failed(format!(
        "the webrtc {role} end on {link} {how}; see {base}.{role}.err"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_signal_socket_is_beside_the_logs_unless_too_long() {
        let short = signal_path("/tmp/out/emulated/Verizon-LTE-short-webrtc");
        assert_eq!(
            short,
            PathBuf::from("/tmp/out/emulated/Verizon-LTE-short-webrtc.signal")
        );
        let long = format!("/tmp/{}/Verizon-LTE-short-webrtc", "x".repeat(120));
        let p = signal_path(&long);
        assert!(p.starts_with(std::env::temp_dir()), "{}", p.display());
        assert!(p.as_os_str().len() <= MAX_SOCKET_PATH);
    }

    #[test]
    fn an_end_that_failed_or_overran_names_its_files() {
        use std::os::unix::process::ExitStatusExt;
        assert!(check_end(
            "offer",
            "L",
            "/o/L-webrtc",
            Some(ExitStatus::from_raw(0)),
            Duration::ZERO
        )
        .is_ok());
        let e = check_end(
            "offer",
            "L",
            "/o/L-webrtc",
            Some(ExitStatus::from_raw(256)),
            Duration::ZERO,
        )
        .unwrap_err()
        .to_string();
        assert_eq!(
            e,
            "the webrtc offer end on L failed (exit status: 1); see /o/L-webrtc.offer.err"
        );
        let e = check_end("answer", "L", "/o/L-webrtc", None, Duration::from_secs(95))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("did not end within 95 s") && e.ends_with(".answer.err"),
            "{e}"
        );
    }
}
