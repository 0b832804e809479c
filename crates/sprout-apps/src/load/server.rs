//! The server under test: `sprout server` as a process of its own (so that its CPU time and
//! memory are its own, read from `/proc`), started through the typed builder of its command
//! line, its JSON summaries collected from its stdout.

use std::io::{BufRead, BufReader};
use std::net::UdpSocket;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;
use sprout_net::secure::{PrivateKey, PublicKey};
use tempfile::TempDir;

use crate::load::error::LoadError;
use crate::load::shared::lock;
use crate::transfer::ServerOptions;

/// Longest wait for the server's summaries after the last client ended.
const SUMMARY_WAIT: Duration = Duration::from_secs(8);

/// A running `sprout server` on 127.0.0.1.
pub(crate) struct ServerProcess {
    child: Child,
    /// Its process id.
    pub(crate) pid: u32,
    /// Its UDP port.
    pub(crate) port: u16,
    /// Its public key.
    pub(crate) key: PublicKey,
    /// Its `"type":"summary"` lines so far.
    summaries: Arc<Mutex<Vec<Value>>>,
    /// The folder of its key file.
    _dir: TempDir,
}

/// A free UDP port on 127.0.0.1.
fn free_port() -> Result<u16, LoadError> {
    let s = UdpSocket::bind("127.0.0.1:0").map_err(LoadError::FreePort)?;
    Ok(s.local_addr()?.port())
}

/// Keeps a child's stdout lines of type "summary" (JSON) in a shared list, on a thread.
fn collect_summaries(child: &mut Child) -> Arc<Mutex<Vec<Value>>> {
    let lines = Arc::new(Mutex::new(Vec::new()));
    if let Some(out) = child.stdout.take() {
        let lines = lines.clone();
        thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(|l| l.ok()) {
                // Skip the per-second lines without parsing them.
                if !line.contains("\"summary\"") {
                    continue;
                }
                let Ok(v) = serde_json::from_str::<Value>(&line) else {
                    continue;
                };
                if v.get("type").and_then(Value::as_str) == Some("summary") {
                    lock(&lines).push(v);
                }
            }
        });
    }
    lines
}

impl ServerProcess {
    /// Starts `sprout_exe server` with a new key, for `sessions` sessions, and gives it half
    /// a second to start.
    pub(crate) fn start(sprout_exe: &Path, sessions: usize) -> Result<ServerProcess, LoadError> {
        let dir = tempfile::tempdir().map_err(LoadError::TempDir)?;
        let key_file = dir.path().join("server.key");
        let key = PrivateKey::generate();
        key.write_file(&key_file)?;
        let port = free_port()?;
        let options = ServerOptions {
            listen: format!("127.0.0.1:{port}"),
            key: Some(key_file),
            allow_any_client: true,
            max_sessions: sessions + 16,
            // Every load client comes from 127.0.0.1, each with its own key.
            max_sessions_per_source: sessions + 16,
            json: true,
            ..ServerOptions::default()
        };
        let mut child = Command::new(sprout_exe)
            .args(options.to_args())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(LoadError::StartServer)?;
        let summaries = collect_summaries(&mut child);
        let mut server = ServerProcess {
            pid: child.id(),
            child,
            port,
            key: key.public_key(),
            summaries,
            _dir: dir,
        };
        thread::sleep(Duration::from_millis(500));
        if let Some(s) = server.child.try_wait()? {
            return Err(LoadError::ServerExited(s));
        }
        Ok(server)
    }

    /// Waits (at most [`SUMMARY_WAIT`]) for the summaries of the sessions of the clients at
    /// `peers` ("address:port"), stops the server (SIGINT, then after 5 s SIGKILL) and
    /// returns every summary it printed.
    pub(crate) fn stop(mut self, peers: &[String]) -> Result<Vec<Value>, LoadError> {
        let deadline = Instant::now() + SUMMARY_WAIT;
        while Instant::now() < deadline {
            let have: Vec<String> = lock(&self.summaries)
                .iter()
                .filter_map(|v| Some(v.get("peer")?.as_str()?.to_string()))
                .collect();
            if peers.iter().all(|p| have.contains(p)) {
                break;
            }
            thread::sleep(Duration::from_millis(100));
        }
        let _ = sprout_os::child::interrupt(&self.child);
        let deadline = Instant::now() + Duration::from_secs(5);
        while self.child.try_wait()?.is_none() && Instant::now() < deadline {
            thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        let summaries = lock(&self.summaries).clone();
        Ok(summaries)
    }
}

impl Drop for ServerProcess {
    /// Ends the server if it still runs (on an error of the bench).
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
