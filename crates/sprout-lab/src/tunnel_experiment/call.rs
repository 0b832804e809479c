//! The WebRTC call of the isolation experiment (issue 25): a real aiortc video call
//! ([`crate::webrtc_call`]) as the interactive flow of two runs of its own, beside the download
//! (direct, then through the tunnel; the paced stream's runs do not carry it). Its answer end runs
//! on the relay side (host namespace), its offer end in the mobile namespace, each bound to the
//! address the run's flows use there (direct: the emulator's outside address and the mobile
//! namespace's; tunnel: the server's and the client's tunnel addresses, so its media goes
//! through the tunnel). Signalling is over a Unix-domain socket in `tunnel/`.

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde::Deserialize;
use sprout_emu::Emulator;

use super::options::TunnelOptions;
use super::peers::Peers;
use crate::error::{Context, LabError};
use crate::webrtc_call::{self, CallError, CallOptions, CallSummary, CheckVersions, Role};

/// Role (file names) of the call's answer end, on the relay side.
pub(super) const ANSWER: &str = "call-answer";
/// Role (file names) of the call's offer end, in the mobile namespace.
pub(super) const OFFER: &str = "call-offer";
/// How long each end waits for the other (signalling and connection), s: importing aiortc
/// takes seconds on a loaded machine.
const CONNECT_TIMEOUT_S: f64 = 60.0;
/// Most bytes of a frames file read (a 150 s call at 30 frames/s writes about 250 kB).
const FRAMES_CAP: u64 = 64 << 20;

/// One readable received frame (a row of `--frames-csv`).
#[derive(Clone, Copy, Debug, Deserialize)]
pub(super) struct Frame {
    /// Captured at, µs of `CLOCK_MONOTONIC`.
    pub(super) capture_us: u64,
    /// Decoded at, µs of `CLOCK_MONOTONIC`.
    pub(super) decode_us: u64,
    /// Capture-to-decode delay, ms.
    pub(super) delay_ms: f64,
}

/// What the call's two ends wrote in one run.
pub(super) struct CallOutput {
    /// The offer end's summary (it received down).
    pub(super) offer: CallSummary,
    /// The answer end's summary (it received up).
    pub(super) answer: CallSummary,
    /// Frames the offer end received (down).
    pub(super) down: Vec<Frame>,
    /// Frames the answer end received (up).
    pub(super) up: Vec<Frame>,
}

/// Checks that `opts.python` can hold the call; the error says how to install it and how to
/// run the experiment without it.
pub(super) fn preflight(opts: &TunnelOptions) -> Result<CheckVersions, LabError> {
    webrtc_call::check_python(&opts.python).with_context(|| {
        format!(
            "the tunnel experiment holds a WebRTC call (aiortc) in two runs of its own and {} \
             cannot run it (leave the call out with --no-call)",
            opts.python.display()
        )
    })
}

/// A file of `role` in the run `name`, relative to the run's folder (the ends run there, so
/// the signalling socket's path stays short whatever the output folder).
fn file(name: &str, role: &str, ext: &str) -> String {
    format!("{name}.{role}.{ext}")
}

/// The command of one end: `media_s` seconds of media from the connection, bound to `bind`,
/// signalling on `NAME.call.sock` and its frames in `NAME.ROLE.frames.csv`, run in `dir`.
fn command(
    opts: &TunnelOptions,
    dir: &Path,
    name: &str,
    role: Role,
    bind: IpAddr,
    media_s: f64,
) -> Command {
    let peer = match role {
        Role::Answer => ANSWER,
        Role::Offer => OFFER,
    };
    let mut o = CallOptions::new(
        opts.python.clone(),
        role,
        PathBuf::from(format!("{name}.call.sock")),
        bind,
        media_s,
    );
    o.frames_csv = Some(PathBuf::from(file(name, peer, "frames.csv")));
    o.connect_timeout_s = Some(CONNECT_TIMEOUT_S);
    let mut cmd = o.command();
    cmd.current_dir(dir);
    cmd
}

/// Starts the answer end on the relay side, bound to `bind`, in the run `name` whose files are
/// in `dir` (a stale signalling socket there is removed first).
pub(super) fn start_answer(
    opts: &TunnelOptions,
    peers: &mut Peers,
    dir: &Path,
    name: &str,
    bind: IpAddr,
    media_s: f64,
) -> Result<usize, LabError> {
    let sock = dir.join(format!("{name}.call.sock"));
    if sock.exists() {
        std::fs::remove_file(&sock)?;
    }
    let mut cmd = command(opts, dir, name, Role::Answer, bind, media_s);
    peers.spawn(ANSWER, &mut cmd, None)
}

/// Starts the offer end in the mobile namespace, bound to `bind`.
pub(super) fn start_offer(
    opts: &TunnelOptions,
    peers: &mut Peers,
    emu: &Emulator,
    dir: &Path,
    name: &str,
    bind: IpAddr,
    media_s: f64,
) -> Result<usize, LabError> {
    let mut cmd = command(opts, dir, name, Role::Offer, bind, media_s);
    peers.spawn(OFFER, &mut cmd, Some(emu))
}

/// Reads both ends' summaries and frames from the files of the run with prefix `prefix`.
pub(super) fn read_output(prefix: &str) -> Result<CallOutput, LabError> {
    let summary = |role: &'static str| {
        let path = PathBuf::from(format!("{prefix}.{role}.out"));
        webrtc_call::read_summary(&path)
            .with_context(|| format!("reading the output of the {role}"))
    };
    let frames = |role: &str| read_frames(Path::new(&format!("{prefix}.{role}.frames.csv")));
    Ok(CallOutput {
        offer: summary(OFFER)?,
        answer: summary(ANSWER)?,
        down: frames(OFFER)?,
        up: frames(ANSWER)?,
    })
}

/// The rows of a frames file (`frame,capture_us,decode_us,delay_ms`).
fn read_frames(path: &Path) -> Result<Vec<Frame>, LabError> {
    let bytes = sprout_files::read_capped(path, FRAMES_CAP)
        .map_err(CallError::Read)
        .context("reading the output of the call")?;
    csv::Reader::from_reader(bytes.as_slice())
        .deserialize()
        .collect::<Result<Vec<Frame>, _>>()
        .with_context(|| format!("reading {}", path.display()))
}

#[cfg(test)]
mod tests {
    use std::fs;
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    #[test]
    fn frames_files_are_read_and_bad_ones_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("direct.call-offer.frames.csv");
        fs::write(
            &path,
            "frame,capture_us,decode_us,delay_ms\n0,1000,41000,40.0\n1,34000,80000,46.0\n",
        )
        .unwrap();
        let v = read_frames(&path).unwrap();
        assert_eq!(v.len(), 2);
        assert_eq!((v[1].capture_us, v[1].decode_us), (34000, 80000));
        assert_eq!(v[1].delay_ms, 46.0);
        fs::write(&path, "frame,capture_us,decode_us,delay_ms\n0,soon,1,2\n").unwrap();
        let e = read_frames(&path).unwrap_err();
        assert!(
            e.to_string().contains("direct.call-offer.frames.csv"),
            "{e}"
        );
    }

    fn options(python: PathBuf) -> TunnelOptions {
        TunnelOptions {
            isolation: true,
            cost: false,
            traces: None,
            link: None,
            duration_us: None,
            skip_us: None,
            out: PathBuf::from("/out"),
            sprout_exe: PathBuf::from("sprout"),
            progress: false,
            call: true,
            python,
        }
    }

    #[test]
    fn a_python_without_aiortc_is_refused_with_the_install_hint() {
        let dir = tempfile::tempdir().unwrap();
        let py = dir.path().join("python");
        let err = "error: the WebRTC call needs aiortc: pip install './python[webrtc]'";
        fs::write(&py, format!("#!/bin/sh\necho \"{err}\" >&2\nexit 2\n")).unwrap();
        fs::set_permissions(&py, fs::Permissions::from_mode(0o755)).unwrap();
        let e = preflight(&options(py)).unwrap_err();
        let text = sprout_sim::error::chain_message(&e);
        assert!(text.contains("pip install './python[webrtc]'"), "{text}");
        assert!(text.contains("--no-call"), "{text}");
        let e = preflight(&options(dir.path().join("no-python"))).unwrap_err();
        let text = sprout_sim::error::chain_message(&e);
        assert!(text.contains("no-python cannot run it"), "{text}");
        assert!(text.contains("--no-call"), "{text}");
    }

    #[test]
    fn the_ends_run_in_the_run_folder_with_short_relative_paths() {
        let opts = options(PathBuf::from("/venv/bin/python"));
        let dir = Path::new("/a/very/long/output/folder/tunnel");
        let cmd = command(
            &opts,
            dir,
            "tunnel",
            Role::Offer,
            "10.77.3.2".parse().unwrap(),
            150.0,
        );
        assert_eq!(cmd.get_current_dir(), Some(dir));
        let args: Vec<String> = cmd.get_args().map(|a| a.to_string_lossy().into()).collect();
        let at = |flag: &str| args[args.iter().position(|a| a == flag).unwrap() + 1].clone();
        assert_eq!(at("--signal"), "tunnel.call.sock");
        assert_eq!(at("--frames-csv"), "tunnel.call-offer.frames.csv");
        assert_eq!(at("--bind"), "10.77.3.2");
        assert_eq!(at("--role"), "offer");
        assert_eq!(at("--duration"), "150");
    }
}
