//! The tunnel's two processes: started with their standard output read line by line, waited
//! for by JSON event, interrupted (SIGINT) at the end, killed if they do not exit.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::error::{Context, LabError};

/// One tunnel end.
pub(super) struct Peer {
    /// "relay" or "client".
    role: &'static str,
    child: Child,
    lines: Receiver<String>,
    /// The JSON lines read so far.
    seen: Vec<Value>,
    /// Its standard error, once it has exited.
    stderr: Option<String>,
}

impl Peer {
    /// Starts `cmd` (already prepared to run where it should) with `spawn`, its standard
    /// output piped, its standard error collected.
    pub(super) fn start(
        role: &'static str,
        cmd: &mut Command,
        spawn: impl FnOnce(&mut Command) -> std::io::Result<Child>,
    ) -> Result<Peer, LabError> {
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = spawn(cmd).with_context(|| format!("starting the tunnel's {role}"))?;
        let out = child.stdout.take();
        let (tx, rx) = mpsc::channel();
        if let Some(out) = out {
            thread::spawn(move || {
                for line in BufReader::new(out).lines().map_while(Result::ok) {
                    if tx.send(line).is_err() {
                        break;
                    }
                }
            });
        }
        Ok(Peer {
            role,
            child,
            lines: rx,
            seen: Vec::new(),
            stderr: None,
        })
    }

    /// Its process id.
    pub(super) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The JSON line whose `event` is `event`, waiting up to `limit` for it; fails with the
    /// peer's standard error if it exits first or the time passes, or at once when `stop`.
    pub(super) fn wait_event(
        &mut self,
        event: &str,
        limit: Duration,
        stop: &AtomicBool,
    ) -> Result<Value, LabError> {
        if let Some(v) = self.seen.iter().find(|v| v["event"] == event) {
            return Ok(v.clone());
        }
        let until = Instant::now() + limit;
        loop {
            if stop.load(Ordering::Relaxed) {
                return Err(LabError::Failed("stopped".into()));
            }
            match self.lines.recv_timeout(Duration::from_millis(50)) {
                Ok(line) => {
                    if let Ok(v) = serde_json::from_str::<Value>(&line) {
                        let hit = v["event"] == event;
                        self.seen.push(v);
                        if hit {
                            return Ok(self.seen[self.seen.len() - 1].clone());
                        }
                    }
                }
                Err(RecvTimeoutError::Disconnected) => {
                    let status = self.child.wait().ok();
                    let stderr = self.stderr_text();
                    return Err(LabError::Failed(format!(
                        "the tunnel's {} exited ({}) before saying \"{event}\": {}",
                        self.role,
                        status.map(|s| s.to_string()).unwrap_or_default(),
                        stderr.trim()
                    )));
                }
                Err(RecvTimeoutError::Timeout) if Instant::now() >= until => {
                    return Err(LabError::Failed(format!(
                        "the tunnel's {} did not say \"{event}\" within {:.0} s",
                        self.role,
                        limit.as_secs_f64()
                    )));
                }
                Err(RecvTimeoutError::Timeout) => {}
            }
        }
    }

    /// Its standard error (read once it has exited; empty before).
    fn stderr_text(&mut self) -> String {
        if self.stderr.is_none() {
            if let Ok(Some(_)) = self.child.try_wait() {
                let mut s = String::new();
                if let Some(mut e) = self.child.stderr.take() {
                    let _ = std::io::Read::read_to_string(&mut e, &mut s);
                }
                self.stderr = Some(s);
            }
        }
        self.stderr.clone().unwrap_or_default()
    }

    /// SIGINT, then up to `limit` for it to exit (killed after that); its `exit` line if it
    /// printed one.
    pub(super) fn stop(&mut self, limit: Duration) -> Option<Value> {
        if let Ok(None) = self.child.try_wait() {
            let _ = sprout_os::child::interrupt(&self.child);
        }
        let until = Instant::now() + limit;
        while let Ok(None) = self.child.try_wait() {
            if Instant::now() >= until {
                let _ = self.child.kill();
                break;
            }
            thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.wait();
        // The reader thread sends the last lines and then ends: the channel drains.
        let drain_until = Instant::now() + Duration::from_secs(1);
        while let Ok(line) = self
            .lines
            .recv_timeout(drain_until.saturating_duration_since(Instant::now()))
        {
            if let Ok(v) = serde_json::from_str::<Value>(&line) {
                self.seen.push(v);
            }
        }
        self.seen
            .iter()
            .rev()
            .find(|v| v["event"] == "exit")
            .cloned()
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            self.stop(Duration::from_secs(3));
        }
    }
}
