//! Running a command under the emulator: waiting for it, for a deadline or for a signal to
//! the emulator, then ending its process group; and handing the terminal back and forth.

use std::io::{self, Read};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::process::{Child, ExitStatus};
use std::time::{Duration, Instant};

use crate::sys::{self, cvt};

/// Signals that stop the emulator: `SIGINT`, `SIGTERM` and `SIGHUP`.
pub const STOP_SIGNALS: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// Catches [`STOP_SIGNALS`] from the moment it is made until it is dropped: each signal makes
/// a byte readable on its own socket (signal-hook's self-pipe), so the supervisor can wait for
/// the command, a deadline and signals in one `ppoll`.
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
}

impl Drop for SignalWatcher {
    fn drop(&mut self) {
        for (_, _, id) in self.pipes.drain(..) {
            signal_hook::low_level::unregister(id);
        }
    }
}

/// How the wait for a command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitOutcome {
    /// The command exited by itself.
    Exited(ExitStatus),
    /// The deadline passed first.
    TimedOut,
    /// The emulator received this stop signal first.
    Signaled(libc::c_int),
}

fn pidfd_open(pid: u32) -> io::Result<OwnedFd> {
    // SAFETY: pidfd_open takes a pid and flags; the returned fd is owned below.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
    let fd = cvt(fd as libc::c_int)?;
    // SAFETY: fresh descriptor.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Waits until `child` exits, `duration` (if any) passes, or `signals` catches a stop signal,
/// whichever comes first. Does not reap the child unless it exited.
pub fn wait_for(
    child: &mut Child,
    duration: Option<Duration>,
    signals: &SignalWatcher,
) -> io::Result<WaitOutcome> {
    let deadline = duration.map(|d| Instant::now() + d);
    let pidfd = pidfd_open(child.id())?;
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(WaitOutcome::Exited(status));
        }
        if let Some(sig) = signals.take() {
            return Ok(WaitOutcome::Signaled(sig));
        }
        let timeout = match deadline {
            Some(d) => {
                let left = d.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return Ok(WaitOutcome::TimedOut);
                }
                Some(left.as_nanos() as u64)
            }
            None => None,
        };
        let mut fds: Vec<libc::pollfd> = std::iter::once(pidfd.as_raw_fd())
            .chain(signals.pipes.iter().map(|(_, r, _)| r.as_raw_fd()))
            .map(|fd| libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            })
            .collect();
        sys::poll_in(&mut fds, timeout)?;
    }
}

fn group_exists(pgid: libc::pid_t) -> bool {
    // SAFETY: kill with signal 0 only checks for existence.
    unsafe { libc::kill(-pgid, 0) == 0 }
}

/// Reaps every exited member of process group `pgid` that is our child (all of them once we
/// are a [subreaper](become_subreaper)), noting the leader's status if it is among them.
fn reap_group(pgid: libc::pid_t, leader: &mut Option<ExitStatus>) {
    use std::os::unix::process::ExitStatusExt;
    loop {
        let mut status = 0;
        // SAFETY: waitpid on our own children of that group, without blocking.
        let pid = unsafe { libc::waitpid(-pgid, &mut status, libc::WNOHANG) };
        if pid <= 0 {
            return;
        }
        if pid == pgid {
            *leader = Some(ExitStatus::from_raw(status));
        }
    }
}

/// Ends the process group led by `child` (spawned by the emulator, so its group id is its
/// pid): `SIGTERM` (and `SIGCONT`) to the group, then `SIGKILL` to whatever is left after
/// `grace`. Reaps the child and the group's members that are our children, and returns the
/// child's status. Returns at once if the group is already gone.
pub fn terminate_group(child: &mut Child, grace: Duration) -> io::Result<ExitStatus> {
    let pgid = child.id() as libc::pid_t;
    let mut leader = child.try_wait()?;
    reap_group(pgid, &mut leader);
    if group_exists(pgid) {
        // SAFETY: signals the child's own process group.
        unsafe {
            libc::kill(-pgid, libc::SIGTERM);
            // A stopped group would never act on SIGTERM.
            libc::kill(-pgid, libc::SIGCONT);
        }
        let until = Instant::now() + grace;
        let mut killed = false;
        loop {
            if leader.is_none() {
                leader = child.try_wait()?;
            }
            reap_group(pgid, &mut leader);
            if !group_exists(pgid) {
                break;
            }
            let now = Instant::now();
            if now >= until + grace {
                break; // members we cannot reap (zombies of another parent)
            }
            if now >= until && !killed {
                // SAFETY: as above.
                unsafe { libc::kill(-pgid, libc::SIGKILL) };
                killed = true;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
    match leader {
        Some(status) => Ok(status),
        None => child.wait(),
    }
}

/// Makes this process the "child subreaper" of its descendants (`PR_SET_CHILD_SUBREAPER`):
/// processes orphaned inside a command's process group are re-parented to us rather than to
/// init, so [`terminate_group`] can reap them and see the group gone (some init processes
/// never reap orphans, leaving zombie group members).
pub fn become_subreaper() {
    // SAFETY: prctl with PR_SET_CHILD_SUBREAPER takes one integer argument.
    unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1 as libc::c_ulong, 0, 0, 0) };
}

/// Whether this process is the foreground process group of the terminal on standard input.
pub fn owns_terminal() -> bool {
    // SAFETY: plain queries on fd 0.
    unsafe { libc::isatty(0) == 1 && libc::tcgetpgrp(0) == libc::getpgrp() }
}

/// Makes this process's group the terminal's foreground group again (after
/// [`Emulator::spawn_interactive`](crate::Emulator::spawn_interactive)); does nothing when
/// standard input is not a terminal.
pub fn reclaim_terminal() {
    // SAFETY: SIGTTOU is blocked around tcsetpgrp so a background group may call it.
    unsafe {
        if libc::isatty(0) != 1 {
            return;
        }
        let mut set: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGTTOU);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, &mut old);
        libc::tcsetpgrp(0, libc::getpgrp());
        libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
    }
}

/// The shell-style exit code of a status: the code, or 128 + the signal number.
pub fn exit_code(status: ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    status
        .code()
        .or_else(|| status.signal().map(|s| 128 + s))
        .unwrap_or(1)
}
