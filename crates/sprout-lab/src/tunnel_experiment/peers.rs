//! The peers of one run: processes with their output in files, waited for, interrupted and
//! killed by role.

use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;
use sprout_emu::Emulator;

use crate::error::{Context, LabError};

/// One spawned peer.
struct Peer {
    role: &'static str,
    child: Child,
    status: Option<ExitStatus>,
}

/// The peers of one run. Output of role ROLE goes to `PREFIX.ROLE.out` and `.err`. Dropping
/// it interrupts (SIGINT) every peer still running, waits a moment, then kills the rest.
pub(super) struct Peers {
    prefix: String,
    peers: Vec<Peer>,
}

impl Peers {
    /// No peers yet; their files will be `PREFIX.ROLE.out` and `.err`.
    pub(super) fn new(prefix: String) -> Peers {
        Peers {
            prefix,
            peers: Vec::new(),
        }
    }

    /// The standard output file of `role`.
    pub(super) fn out(&self, role: &str) -> PathBuf {
        PathBuf::from(format!("{}.{role}.out", self.prefix))
    }

    /// The per-packet CSV file of `role` (an interactive end's).
    pub(super) fn csv(&self, role: &str) -> PathBuf {
        csv_path(&self.prefix, role)
    }

    /// The standard error file of `role`.
    pub(super) fn err(&self, role: &str) -> PathBuf {
        PathBuf::from(format!("{}.{role}.err", self.prefix))
    }

    /// Spawns `cmd` as `role`, in the emulator's mobile namespace if `emu` is given.
    pub(super) fn spawn(
        &mut self,
        role: &'static str,
        cmd: &mut Command,
        emu: Option<&Emulator>,
    ) -> Result<usize, LabError> {
        let out = File::create(self.out(role))?;
        let err = File::create(self.err(role))?;
        cmd.stdin(Stdio::null()).stdout(out).stderr(err);
        let child = match emu {
            Some(e) => e.spawn_in_namespace(cmd),
            None => cmd.spawn(),
        }
        .with_context(|| format!("starting the {role} ({:?})", cmd.get_program()))?;
        self.peers.push(Peer {
            role,
            child,
            status: None,
        });
        Ok(self.peers.len() - 1)
    }

    /// The exit status of peer `k` if it has exited (reaped once).
    pub(super) fn poll(&mut self, k: usize) -> Option<ExitStatus> {
        let p = &mut self.peers[k];
        if p.status.is_none() {
            p.status = p.child.try_wait().ok().flatten();
        }
        p.status
    }

    /// Waits up to `limit` for peer `k` to exit.
    pub(super) fn wait(&mut self, k: usize, limit: Duration) -> Option<ExitStatus> {
        let until = Instant::now() + limit;
        loop {
            if let Some(s) = self.poll(k) {
                return Some(s);
            }
            if Instant::now() >= until {
                return None;
            }
            thread::sleep(Duration::from_millis(50));
        }
    }

    /// Sends SIGINT to peer `k` if it is still running.
    pub(super) fn interrupt(&mut self, k: usize) {
        if self.poll(k).is_none() {
            let _ = sprout_os::child::interrupt(&self.peers[k].child);
        }
    }

    /// Kills peer `k` if it is still running and reaps it.
    pub(super) fn kill(&mut self, k: usize) {
        if self.poll(k).is_none() {
            let _ = self.peers[k].child.kill();
            self.peers[k].status = self.peers[k].child.wait().ok();
        }
    }

    /// Waits for peer `k`'s stdout to hold a JSON line whose `event` is `event`, and returns
    /// it; fails, naming the peer's stderr file, if the peer exits first or `limit` passes.
    pub(super) fn wait_for_event(
        &mut self,
        k: usize,
        event: &str,
        limit: Duration,
    ) -> Result<Value, LabError> {
        let role = self.peers[k].role;
        let until = Instant::now() + limit;
        loop {
            if let Some(v) = json_lines(&self.out(role))
                .into_iter()
                .find(|v| v["event"] == event)
            {
                return Ok(v);
            }
            if let Some(status) = self.poll(k) {
                return Err(LabError::Failed(format!(
                    "the {role} exited ({status}) before saying \"{event}\"; see {}",
                    self.err(role).display()
                )));
            }
            if Instant::now() >= until {
                return Err(LabError::Failed(format!(
                    "the {role} did not say \"{event}\" within {:.0} s; see {} and {}",
                    limit.as_secs_f64(),
                    self.out(role).display(),
                    self.err(role).display()
                )));
            }
            thread::sleep(Duration::from_millis(50));
        }
    }

    /// Fails, naming the stderr file, unless peer `k` exited successfully.
    pub(super) fn check_success(&mut self, k: usize) -> Result<(), LabError> {
        let role = self.peers[k].role;
        match self.poll(k) {
            Some(s) if s.success() => Ok(()),
            Some(status) => Err(LabError::Failed(format!(
                "the {role} failed ({status}); see {}",
                self.err(role).display()
            ))),
            None => Err(LabError::Failed(format!(
                "the {role} did not exit in time; see {}",
                self.err(role).display()
            ))),
        }
    }

    /// CPU seconds (user + system, all its threads) peer `k` has used so far, from
    /// `/proc/PID/stat`; `None` once it has exited or if unreadable.
    pub(super) fn cpu_seconds(&mut self, k: usize) -> Option<f64> {
        if self.poll(k).is_some() {
            return None;
        }
        cpu_seconds(self.peers[k].child.id())
    }

    /// The role of peer `k`.
    pub(super) fn role(&self, k: usize) -> &'static str {
        self.peers[k].role
    }

    /// Interrupts peer `k` if it still runs, waits up to `limit` for it to exit, then kills it
    /// if it has not.
    pub(super) fn stop(&mut self, k: usize, limit: Duration) {
        self.interrupt(k);
        if self.wait(k, limit).is_none() {
            self.kill(k);
        }
    }
}

impl Drop for Peers {
    fn drop(&mut self) {
        let running: Vec<usize> = (0..self.peers.len())
            .filter(|&k| self.poll(k).is_none())
            .collect();
        for &k in &running {
            self.interrupt(k);
        }
        for &k in &running {
            if self.wait(k, Duration::from_secs(3)).is_none() {
                self.kill(k);
            }
        }
    }
}

/// The JSON objects among the lines of a file (other lines are skipped; none if unreadable).
pub(super) fn json_lines(path: &Path) -> Vec<Value> {
    fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter(|l| l.trim_start().starts_with('{'))
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// CPU seconds (user + system) of process `pid` from its `/proc/PID/stat`.
fn cpu_seconds(pid: u32) -> Option<f64> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The fields after the command name (which may hold spaces) start after the last ')':
    // utime and stime are the 12th and 13th of them, in clock ticks.
    let rest = stat.get(stat.rfind(')')? + 2..)?;
    let f: Vec<&str> = rest.split_whitespace().collect();
    let utime: f64 = f.get(11)?.parse().ok()?;
    let stime: f64 = f.get(12)?.parse().ok()?;
    let hz = sprout_os::clock::clock_ticks_per_second() as f64;
    Some((utime + stime) / hz.max(1.0))
}

/// The per-packet CSV file of `role` in the run with file prefix `prefix`: `PREFIX.ROLE.csv`.
pub(super) fn csv_path(prefix: &str, role: &str) -> PathBuf {
    PathBuf::from(format!("{prefix}.{role}.csv"))
}
