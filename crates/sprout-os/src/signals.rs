//! Signals: catching the stop signals (through signal-hook's self-pipe), and ignoring them.

use std::io::{self, Read};
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::net::UnixStream;

/// Signals that stop a runtime: `SIGINT`, `SIGTERM` and `SIGHUP`.
pub const STOP_SIGNALS: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// Catches [`STOP_SIGNALS`] from the moment it is made until it is dropped: each signal makes
/// a byte readable on its own socket (signal-hook's self-pipe), so a supervisor can wait for
/// a command, a deadline and signals in one `ppoll`.
#[derive(Debug)]
pub struct SignalWatcher {
    /// (signal, read end, signal-hook registration)
    pipes: Vec<(libc::c_int, UnixStream, signal_hook::SigId)>,
}

impl SignalWatcher {
    /// Installs the handlers.
    pub fn new() -> io::Result<SignalWatcher> {
        let mut pipes = Vec::new();
        for sig in STOP_SIGNALS {
            let (read, write) = UnixStream::pair()?;
            read.set_nonblocking(true)?;
            let id = signal_hook::low_level::pipe::register(sig, write)?;
            pipes.push((sig, read, id));
        }
        Ok(SignalWatcher { pipes })
    }

    /// The first stop signal received and not yet taken, if any (non-blocking).
    pub fn take(&self) -> Option<libc::c_int> {
        for (sig, read, _) in &self.pipes {
            let mut buf = [0u8; 16];
            if let Ok(n) = (&*read).read(&mut buf) {
                if n > 0 {
                    return Some(*sig);
                }
            }
        }
        None
    }

    /// The descriptors that become readable when a signal arrives (to poll them).
    pub fn fds(&self) -> impl Iterator<Item = BorrowedFd<'_>> {
        self.pipes.iter().map(|(_, read, _)| read.as_fd())
    }
}

impl Drop for SignalWatcher {
    fn drop(&mut self) {
        for (_, _, id) in self.pipes.drain(..) {
            signal_hook::low_level::unregister(id);
        }
    }
}

/// Ignores `signals` for the rest of the process's life (`SIG_IGN`, kept across `exec`).
///
/// Hand-written on libc: signal-hook installs handlers but has no "ignore", and nix's
/// `signal` is as unsafe as libc's.
pub fn ignore(signals: &[libc::c_int]) {
    for &sig in signals {
        // SAFETY: setting a disposition to SIG_IGN installs no handler, so no code of ours
        // runs in signal context; an invalid signal number only makes the call fail.
        unsafe { libc::signal(sig, libc::SIG_IGN) };
    }
}

/// Restores the default action of `SIGPIPE` (end the process quietly) for a command that
/// only writes to its standard output: `sprout params | head` then ends as `cat` does instead
/// of failing on the Rust runtime's ignored SIGPIPE with "Broken pipe". Not for commands that
/// write to sockets, where EPIPE must stay an error to handle.
///
/// Hand-written on libc for the reason [`ignore`] is.
pub fn default_sigpipe() {
    // SAFETY: SIG_DFL installs no handler, so no code of ours runs in signal context.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
}

/// The usual name of a stop signal (`SIGINT`), or `signal N`.
pub fn name(sig: libc::c_int) -> String {
    match sig {
        libc::SIGINT => "SIGINT".into(),
        libc::SIGTERM => "SIGTERM".into(),
        libc::SIGHUP => "SIGHUP".into(),
        _ => format!("signal {sig}"),
    }
}
