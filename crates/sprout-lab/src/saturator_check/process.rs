//! The processes a check starts: their scheduling, their output files, their end.

use std::fs::File;
use std::net::{Ipv4Addr, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use crate::error::{Context, Result};

/// Puts the calling thread under `SCHED_FIFO` (priority 10) or back under `SCHED_OTHER`;
/// whether it worked.
pub(super) fn set_fifo(on: bool) -> bool {
    sprout_os::sched::set_fifo(on.then_some(10))
}

/// Makes a command start under `SCHED_OTHER` even when spawned by a real-time thread.
pub(super) fn normal_priority(cmd: &mut Command) {
    sprout_os::sched::normal_priority_on_exec(cmd);
}

/// A free UDP port on the host (bound and released; the server binds it right after).
pub(super) fn free_udp_port() -> Result<u16> {
    let s = UdpSocket::bind((Ipv4Addr::UNSPECIFIED, 0)).context("finding a free UDP port")?;
    Ok(s.local_addr()?.port())
}

/// A file created for a process's output.
fn create(path: &Path) -> Result<File> {
    File::create(path).with_context(|| format!("creating {}", path.display()))
}

/// Sends a command's standard output and error to `PREFIX.WHAT.out` and `PREFIX.WHAT.err`
/// (its input from nowhere); the output file.
pub(super) fn redirect(cmd: &mut Command, prefix: &Path, what: &str) -> Result<PathBuf> {
    let out = PathBuf::from(format!("{}.{what}.out", prefix.display()));
    let err = PathBuf::from(format!("{}.{what}.err", prefix.display()));
    cmd.stdin(Stdio::null())
        .stdout(create(&out)?)
        .stderr(create(&err)?);
    Ok(out)
}

/// Kills a child that is still running, and reaps it.
pub(super) fn finish(child: &mut Child) {
    if let Ok(None) = child.try_wait() {
        let _ = child.kill();
    }
    let _ = child.wait();
}
