//! Child processes: running a command in a process group of its own, waiting for it, for a
//! deadline or for a stop signal, ending its group, signalling it, and handing the terminal
//! back and forth.

use std::io;
use std::os::fd::AsFd;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, ExitStatus};
use std::time::{Duration, Instant};

use rustix::event::{PollFd, PollFlags};
use rustix::process::{Pid, PidfdFlags, Signal, WaitOptions};

use crate::poll::poll_in;
use crate::signals::SignalWatcher;

/// How the wait for a command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitOutcome {
    /// The command exited by itself.
    Exited(ExitStatus),
    /// The deadline passed first.
    TimedOut,
    /// This process received this stop signal first.
    Signaled(libc::c_int),
}

/// The pid of a child that has not been reaped (so its pid is still its own).
fn pid_of(child: &Child) -> Pid {
    Pid::from_child(child)
}

/// Waits until `child` exits, `duration` (if any) passes, or `signals` catches a stop signal,
/// whichever comes first. Does not reap the child unless it exited.
pub fn wait_for(
    child: &mut Child,
    duration: Option<Duration>,
    signals: &SignalWatcher,
) -> io::Result<WaitOutcome> {
    let deadline = duration.map(|d| Instant::now() + d);
    let pidfd = rustix::process::pidfd_open(pid_of(child), PidfdFlags::empty())?;
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
        let mut fds: Vec<PollFd<'_>> = std::iter::once(pidfd.as_fd())
            .chain(signals.fds())
            .map(|fd| PollFd::from_borrowed_fd(fd, PollFlags::IN))
            .collect();
        poll_in(&mut fds, timeout)?;
    }
}

fn group_exists(pgid: Pid) -> bool {
    rustix::process::test_kill_process_group(pgid).is_ok()
}

/// Reaps every exited member of process group `pgid` that is our child (all of them once we
/// are a [subreaper](become_subreaper)), noting the leader's status if it is among them.
fn reap_group(pgid: Pid, leader: &mut Option<ExitStatus>) {
    while let Ok(Some((pid, status))) = rustix::process::waitpgid(pgid, WaitOptions::NOHANG) {
        if pid == pgid {
            *leader = Some(ExitStatus::from_raw(status.as_raw()));
        }
    }
}

/// Ends the process group led by `child` (spawned in a group of its own, so its group id is
/// its pid): `SIGTERM` (and `SIGCONT`) to the group, then `SIGKILL` to whatever is left after
/// `grace`. Reaps the child and the group's members that are our children, and returns the
/// child's status. Returns at once if the group is already gone.
pub fn terminate_group(child: &mut Child, grace: Duration) -> io::Result<ExitStatus> {
    let pgid = pid_of(child);
    let mut leader = child.try_wait()?;
    reap_group(pgid, &mut leader);
    if group_exists(pgid) {
        let _ = rustix::process::kill_process_group(pgid, Signal::TERM);
        // A stopped group would never act on SIGTERM.
        let _ = rustix::process::kill_process_group(pgid, Signal::CONT);
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
                let _ = rustix::process::kill_process_group(pgid, Signal::KILL);
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

/// Sends `SIGINT` to `child` (as Ctrl-C would), unless it has been reaped.
pub fn interrupt(child: &Child) -> io::Result<()> {
    Ok(rustix::process::kill_process(pid_of(child), Signal::INT)?)
}

/// Makes this process the "child subreaper" of its descendants (`PR_SET_CHILD_SUBREAPER`):
/// processes orphaned inside a command's process group are re-parented to us rather than to
/// init, so [`terminate_group`] can reap them and see the group gone (some init processes
/// never reap orphans, leaving zombie group members). Best effort.
pub fn become_subreaper() {
    // Any non-zero argument turns the attribute on.
    let _ = rustix::process::set_child_subreaper(Some(Pid::INIT));
}

/// Whether this process is the foreground process group of the terminal on standard input.
pub fn owns_terminal() -> bool {
    let stdin = std::io::stdin();
    rustix::termios::isatty(&stdin)
        && rustix::termios::tcgetpgrp(&stdin).ok() == Some(rustix::process::getpgrp())
}

/// Makes this process's group the terminal's foreground group again (after a command was
/// given it, see [`isolate_on_exec`]); does nothing when standard input is not a terminal.
pub fn reclaim_terminal() {
    if !rustix::termios::isatty(std::io::stdin()) {
        return;
    }
    // SAFETY: the sigset_t values are plain data initialised by sigemptyset before use, and
    // `old` outlives both pthread_sigmask calls. SIGTTOU is blocked around tcsetpgrp so that
    // a background group may call it (else the kernel stops us). libc, because rustix's
    // signal-mask call is meant for runtimes and is unsafe too.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGTTOU);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, &mut old);
        libc::tcsetpgrp(0, libc::getpgrp());
        libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
    }
}

/// Prepares `cmd` so that, between fork and exec, the child: starts a process group of its
/// own (its group id is its pid); gets `SIGKILL` when the thread that spawned it ends
/// (`PR_SET_PDEATHSIG`); exits at once (status 137) if process `parent` (pid) already died;
/// hears interrupts (`hear_interrupts`); and, if `take_terminal`, becomes the terminal's
/// foreground group.
pub fn isolate_on_exec(cmd: &mut Command, parent: u32, take_terminal: bool) {
    let parent = parent as libc::pid_t;
    // SAFETY: the hook runs in the child between fork and exec, where only async-signal-safe
    // calls are allowed: it calls setpgid, prctl, getppid, _exit, signal, sigemptyset,
    // sigaddset, sigprocmask, tcsetpgrp and getpid only, allocates nothing, and its sigset_t values are
    // plain data initialised by sigemptyset before use. The calls are libc's because these
    // are the ones async-signal-safety is documented for.
    unsafe {
        cmd.pre_exec(move || {
            if libc::setpgid(0, 0) != 0 {
                return Err(io::Error::last_os_error());
            }
            if libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGKILL as libc::c_ulong,
                0,
                0,
                0,
            ) != 0
            {
                return Err(io::Error::last_os_error());
            }
            if libc::getppid() != parent {
                // The parent died between fork and prctl.
                libc::_exit(137);
            }
            hear_interrupts();
            if take_terminal {
                let mut set: libc::sigset_t = std::mem::zeroed();
                let mut old: libc::sigset_t = std::mem::zeroed();
                libc::sigemptyset(&mut set);
                libc::sigaddset(&mut set, libc::SIGTTOU);
                libc::sigprocmask(libc::SIG_BLOCK, &set, &mut old);
                libc::tcsetpgrp(0, libc::getpid());
                libc::sigprocmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
            }
            Ok(())
        });
    }
}

/// Prepares `cmd` so that the child starts a new session (`setsid`) before exec: no
/// controlling terminal, so a Ctrl-C or hang-up meant for us does not reach it; and it hears
/// our own interrupts (`hear_interrupts`).
pub fn new_session_on_exec(cmd: &mut Command) {
    // SAFETY: the hook runs in the child between fork and exec; setsid and signal are
    // async-signal-safe system calls and the hook allocates nothing.
    unsafe {
        cmd.pre_exec(|| {
            let _ = rustix::process::setsid();
            hear_interrupts();
            Ok(())
        });
    }
}

/// In a child between fork and exec: the default action for `SIGINT` and `SIGQUIT`, so that
/// [`interrupt`] ends it even when we were started with them ignored (a shell without job
/// control starts its background commands so, and exec keeps an ignored signal). The child
/// has a group or session of its own, so a terminal's Ctrl-C still does not reach it.
///
/// # Safety
///
/// Only between fork and exec (it changes this process's dispositions); it calls `signal`
/// only, which is async-signal-safe.
unsafe fn hear_interrupts() {
    libc::signal(libc::SIGINT, libc::SIG_DFL);
    libc::signal(libc::SIGQUIT, libc::SIG_DFL);
}

/// The shell-style exit code of a status: the code, or 128 + the signal number.
pub fn exit_code(status: ExitStatus) -> i32 {
    status
        .code()
        .or_else(|| status.signal().map(|s| 128 + s))
        .unwrap_or(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_group_is_ended_and_reaped() {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "sleep 30 & sleep 30"]);
        isolate_on_exec(&mut cmd, std::process::id(), false);
        let mut child = cmd.spawn().unwrap();
        let signals = SignalWatcher::new().unwrap();
        let out = wait_for(&mut child, Some(Duration::from_millis(50)), &signals).unwrap();
        assert_eq!(out, WaitOutcome::TimedOut);
        let status = terminate_group(&mut child, Duration::from_secs(1)).unwrap();
        assert_eq!(exit_code(status), 128 + libc::SIGTERM);
        assert!(!group_exists(pid_of(&child)));
    }

    #[test]
    fn interrupt_is_a_ctrl_c_and_exits_are_seen() {
        let mut cmd = Command::new("sleep");
        cmd.arg("30");
        new_session_on_exec(&mut cmd);
        let mut child = cmd.spawn().unwrap();
        // Until the exec, the child runs with this process's signal handlers (another test of
        // this binary may have installed one for SIGINT), which would swallow the interrupt:
        // wait for it to be `sleep`.
        let comm = format!("/proc/{}/comm", child.id());
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while std::fs::read_to_string(&comm).map_or(true, |c| c.trim() != "sleep")
            && std::time::Instant::now() < deadline
        {
            std::thread::sleep(Duration::from_millis(1));
        }
        // Should an interrupt still land before the exec (it would be swallowed), the next one
        // ends it: interrupt until it exits, at most 10 s (the sleep lasts 30). It must end
        // even when this test runs with SIGINT ignored (a background job of a shell).
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        let status = loop {
            interrupt(&child).unwrap();
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "an interrupt never ended sleep"
            );
            std::thread::sleep(Duration::from_millis(50));
        };
        assert_eq!(exit_code(status), 128 + libc::SIGINT);
        let mut child = Command::new("true").spawn().unwrap();
        let signals = SignalWatcher::new().unwrap();
        // Another test of this binary may raise a stop signal meanwhile: wait on.
        let out = loop {
            match wait_for(&mut child, None, &signals).unwrap() {
                WaitOutcome::Signaled(_) => continue,
                out => break out,
            }
        };
        assert!(
            matches!(out, WaitOutcome::Exited(s) if s.success()),
            "{out:?}"
        );
    }
}
