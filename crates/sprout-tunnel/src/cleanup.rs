//! Undoing what the tunnel changed outside its TUN device, however the process ends.
//!
//! The TUN device needs no clean-up: it is non-persistent, so the kernel deletes it with its
//! addresses and routes when its descriptor closes (see [`crate::device`]). Anything made
//! outside it (today: the client's host route to the server's UDP address through the old
//! gateway, in full-tunnel mode) is registered here *before* it is made, as the `ip` command
//! that undoes it, and undone:
//!
//! - on a normal exit, `SIGINT`/`SIGTERM` (the runtime's exit path) and any error return: the
//!   [`Undo`] owner runs its actions when dropped (also while a panic unwinds);
//! - from a panic hook ([`install_panic_hook`]), for the actions registered by the panicking
//!   thread, in case the panic aborts instead of unwinding;
//! - after a crash or `SIGKILL`, by a **watchdog**: a child process (the same executable
//!   re-run with a hidden subcommand, [`WatchdogCommand`]) started with the first action. It
//!   reads the actions from a pipe whose write end only this process holds; when the pipe
//!   closes with actions still pending, this process has died, and the watchdog runs them.
//!   It has its own session (`setsid`): signals to the terminal's or the tunnel's process
//!   group do not reach it, and it ignores `SIGINT`, `SIGTERM` and `SIGHUP`. It runs only
//!   `ip` commands.
//!
//! Actions run in reverse order of registration. Protocol on the pipe (one line each):
//! `add ID ARG<TAB>ARG...` and `done ID` (undone or no longer needed).

use std::collections::BTreeMap;
use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Mutex, MutexGuard, Once};
use std::thread::ThreadId;
use std::time::{Duration, Instant};

use crate::device::{ip, SetupError};

/// How to start the watchdog process: it must end up calling [`watchdog_main`] with its
/// standard input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WatchdogCommand {
    /// The executable.
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<String>,
}

struct Action {
    args: Vec<String>,
    thread: ThreadId,
}

#[derive(Default)]
struct State {
    next_id: u64,
    actions: BTreeMap<u64, Action>,
    command: Option<WatchdogCommand>,
    watchdog: Option<(Child, ChildStdin)>,
}

static STATE: Mutex<State> = Mutex::new(State {
    next_id: 1,
    actions: BTreeMap::new(),
    command: None,
    watchdog: None,
});

fn state() -> MutexGuard<'static, State> {
    STATE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Sets how the watchdog is started (the CLI: its own executable, `tunnel watchdog`). Without
/// it no watchdog runs and only exits and panics are covered.
pub fn set_watchdog_command(command: WatchdogCommand) {
    state().command = Some(command);
}

/// Installs (once per process) a panic hook that runs the actions the panicking thread
/// registered, then the previous hook.
pub fn install_panic_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let me = std::thread::current().id();
            // try_lock: the panic may have happened with the lock held (then it is skipped;
            // the watchdog still has the actions).
            let ids: Vec<u64> = match STATE.try_lock() {
                Ok(st) => st
                    .actions
                    .iter()
                    .filter(|(_, a)| a.thread == me)
                    .map(|(id, _)| *id)
                    .collect(),
                Err(_) => Vec::new(),
            };
            for id in ids.into_iter().rev() {
                run_one(id);
            }
            previous(info);
        }));
    });
}

fn start_watchdog(st: &mut State) -> Result<(), SetupError> {
    if st.watchdog.is_some() {
        return Ok(());
    }
    let Some(cmd) = st.command.clone() else {
        return Ok(());
    };
    let mut c = Command::new(&cmd.program);
    c.args(&cmd.args)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit());
    sprout_os::child::new_session_on_exec(&mut c);
    let mut child = c.spawn().map_err(|e| {
        SetupError(format!(
            "cannot start the clean-up watchdog ({}): {e}",
            cmd.program.display()
        ))
    })?;
    let stdin = child.stdin.take().expect("piped stdin");
    st.watchdog = Some((child, stdin));
    Ok(())
}

fn tell_watchdog(st: &mut State, line: &str) -> Result<(), SetupError> {
    if let Some((_, stdin)) = st.watchdog.as_mut() {
        stdin
            .write_all(line.as_bytes())
            .and_then(|_| stdin.flush())
            .map_err(|e| SetupError(format!("the clean-up watchdog is gone: {e}")))?;
    }
    Ok(())
}

/// Runs action `id` (if still pending) and tells the watchdog it is done; the error of the
/// command, if any.
fn run_one(id: u64) -> Option<SetupError> {
    let action = {
        let mut st = state();
        let a = st.actions.remove(&id)?;
        // Told before it runs: a racing watchdog must not run it a second time.
        let _ = tell_watchdog(&mut st, &format!("done {id}\n"));
        a
    };
    let args: Vec<&str> = action.args.iter().map(String::as_str).collect();
    ip(&args).err()
}

/// The actions one part of the program registered; dropping it undoes those still pending.
#[derive(Debug, Default)]
pub struct Undo {
    ids: Vec<u64>,
}

impl Undo {
    /// An empty list.
    pub fn new() -> Undo {
        Undo::default()
    }

    /// Registers `ip ARGS` as the undoing of something about to be made (starting the
    /// watchdog if this is the first action); returns its id. Arguments may not hold tabs or
    /// newlines.
    pub fn register(&mut self, args: &[&str]) -> Result<u64, SetupError> {
        if args
            .iter()
            .any(|a| a.contains(['\t', '\n']) || a.is_empty())
        {
            return Err(SetupError::new("bad clean-up command"));
        }
        let mut st = state();
        start_watchdog(&mut st)?;
        let id = st.next_id;
        st.next_id += 1;
        tell_watchdog(&mut st, &format!("add {id} {}\n", args.join("\t")))?;
        st.actions.insert(
            id,
            Action {
                args: args.iter().map(|s| s.to_string()).collect(),
                thread: std::thread::current().id(),
            },
        );
        self.ids.push(id);
        Ok(id)
    }

    /// Forgets action `id` without running it (what it would undo was not made after all).
    pub fn forget(&mut self, id: u64) {
        self.ids.retain(|&i| i != id);
        let mut st = state();
        if st.actions.remove(&id).is_some() {
            let _ = tell_watchdog(&mut st, &format!("done {id}\n"));
        }
    }

    /// Pending actions, in the order they were registered (as `ip` argument lists).
    pub fn pending(&self) -> Vec<Vec<String>> {
        let st = state();
        self.ids
            .iter()
            .filter_map(|id| st.actions.get(id).map(|a| a.args.clone()))
            .collect()
    }

    /// Runs the pending actions, newest first; the errors of those that failed.
    pub fn run(&mut self) -> Vec<SetupError> {
        let mut errors = Vec::new();
        while let Some(id) = self.ids.pop() {
            if let Some(e) = run_one(id) {
                errors.push(e);
            }
        }
        errors
    }
}

impl Drop for Undo {
    fn drop(&mut self) {
        for e in self.run() {
            eprintln!("clean-up: {e}");
        }
    }
}

/// Ends the watchdog, if one runs and no action is pending: closes its pipe (it sees nothing
/// pending and exits) and reaps it (waiting at most 2 s). Call at the end of `main`.
pub fn finish() {
    let mut st = state();
    if !st.actions.is_empty() {
        return;
    }
    if let Some((mut child, stdin)) = st.watchdog.take() {
        drop(stdin);
        let until = Instant::now() + Duration::from_secs(2);
        while Instant::now() < until {
            if let Ok(Some(_)) = child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// The pid of the watchdog process, if one runs (for tests and diagnostics).
pub fn watchdog_pid() -> Option<u32> {
    state().watchdog.as_ref().map(|(c, _)| c.id())
}

/// The watchdog's body: reads the protocol from `input` until it closes, then runs the
/// actions still pending, newest first, printing each to standard error. Returns the exit
/// code (0, or 1 if an action failed). Ignores `SIGINT`, `SIGTERM`, `SIGHUP` and `SIGPIPE`.
pub fn watchdog_main(input: impl BufRead) -> i32 {
    sprout_os::signals::ignore(&[libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGPIPE]);
    let pending = read_protocol(input);
    let mut code = 0;
    for (_, args) in pending.into_iter().rev() {
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        match ip(&refs) {
            Ok(_) => eprintln!(
                "sprout tunnel watchdog: the tunnel process ended without cleaning up; ran `ip {}`",
                args.join(" ")
            ),
            Err(e) => {
                eprintln!("sprout tunnel watchdog: {e}");
                code = 1;
            }
        }
    }
    code
}

/// The actions still pending when `input` ends (by id).
fn read_protocol(input: impl BufRead) -> BTreeMap<u64, Vec<String>> {
    let mut pending = BTreeMap::new();
    for line in input.lines() {
        let Ok(line) = line else { break };
        let mut parts = line.splitn(3, ' ');
        match (
            parts.next(),
            parts.next().and_then(|i| i.parse::<u64>().ok()),
        ) {
            (Some("add"), Some(id)) => {
                let args: Vec<String> = parts
                    .next()
                    .unwrap_or("")
                    .split('\t')
                    .filter(|a| !a.is_empty())
                    .map(str::to_string)
                    .collect();
                if !args.is_empty() && pending.len() < 10_000 {
                    pending.insert(id, args);
                }
            }
            (Some("done"), Some(id)) => {
                pending.remove(&id);
            }
            _ => {}
        }
    }
    pending
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protocol_keeps_what_was_not_done() {
        let text = "add 1 route\tdel\t192.0.2.1/32\tvia\t10.0.0.1\nadd 2 route\tdel\t192.0.2.2/32\ndone 1\ngarbage\nadd x y\nadd 3 a\tb\n";
        let p = read_protocol(text.as_bytes());
        assert_eq!(p.len(), 2);
        assert_eq!(p[&2], vec!["route", "del", "192.0.2.2/32"]);
        assert_eq!(p[&3], vec!["a", "b"]);
    }

    #[test]
    fn undo_runs_newest_first_and_forget_skips() {
        // No watchdog command is set in unit tests, so nothing is spawned; the actions are `ip`
        // commands that fail harmlessly (`ip link show dev` of absent devices).
        let mut u = Undo::new();
        let a = u.register(&["link", "show", "dev", "nx-undo-a"]).unwrap();
        let b = u.register(&["link", "show", "dev", "nx-undo-b"]).unwrap();
        let _c = u.register(&["link", "show", "dev", "nx-undo-c"]).unwrap();
        assert!(u.register(&["bad\targ"]).is_err());
        u.forget(b);
        assert_eq!(u.pending().len(), 2);
        if crate::device::ip_path().is_err() {
            return;
        }
        let errors = u.run();
        assert_eq!(errors.len(), 2);
        assert!(errors[0].0.contains("nx-undo-c"), "{errors:?}");
        assert!(errors[1].0.contains("nx-undo-a"), "{errors:?}");
        assert!(u.pending().is_empty());
        let _ = a;
    }
}
