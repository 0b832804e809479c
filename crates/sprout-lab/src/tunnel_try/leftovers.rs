//! What a `sprout tunnel try` killed outright (SIGKILL) may leave, and its removal at the
//! next run's start.
//!
//! Its namespaces, devices, addresses and routes cannot outlive it (anonymous namespaces, see
//! the module above), and its tunnel ends get SIGKILL when the thread that started them ends.
//! What remains possible: a process of the run that escaped that (a tunnel end's clean-up
//! watchdog, a process in the middle of exec), and the folder with the run's keys. Every
//! process a run starts carries [`OWNER_ENV`] = the run's pid, and the key folder is
//! `sprout-tunnel-try-PID` in the temporary folder, so a later run finds both by a pid that is
//! no longer running.

use std::io;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

use sprout_emu::leftovers::process_gone;

/// The environment variable naming the run (its pid) that started a process.
pub const OWNER_ENV: &str = "SPROUT_TUNNEL_TRY_OWNER";
/// The key folder's name before the run's pid.
const DIR_PREFIX: &str = "sprout-tunnel-try-";

/// The key folder of the run with process id `pid`.
pub fn run_dir_path(pid: u32) -> PathBuf {
    std::env::temp_dir().join(format!("{DIR_PREFIX}{pid}"))
}

/// This run's key folder (mode 0700), removed with what it holds when dropped.
pub(super) struct RunDir {
    path: PathBuf,
}

impl RunDir {
    /// Makes `sprout-tunnel-try-PID` afresh.
    pub(super) fn create() -> io::Result<RunDir> {
        let path = run_dir_path(std::process::id());
        if path.exists() {
            std::fs::remove_dir_all(&path)?;
        }
        std::fs::DirBuilder::new().mode(0o700).create(&path)?;
        Ok(RunDir { path })
    }

    /// The folder.
    pub(super) fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for RunDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// The run that started process `pid`, from its environment's [`OWNER_ENV`].
fn owner_of(pid: u32) -> Option<u32> {
    let env = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
    let key = format!("{OWNER_ENV}=");
    env.split(|&b| b == 0)
        .find_map(|kv| kv.strip_prefix(key.as_bytes()))
        .and_then(|v| std::str::from_utf8(v).ok()?.parse().ok())
}

/// Kills (SIGKILL) every process started by a run that is no longer running and removes such
/// runs' key folders. Returns what it removed, one line each (empty when nothing was left).
pub fn sweep() -> Vec<String> {
    let mut removed = Vec::new();
    let pids: Vec<u32> = std::fs::read_dir("/proc")
        .map(|d| {
            d.flatten()
                .filter_map(|e| e.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    for pid in pids {
        let Some(owner) = owner_of(pid) else { continue };
        if owner == std::process::id() || !process_gone(owner) {
            continue;
        }
        if let Some(p) = rustix::process::Pid::from_raw(pid as i32) {
            if rustix::process::kill_process(p, rustix::process::Signal::KILL).is_ok() {
                removed.push(format!("process {pid} of the killed run {owner}"));
            }
        }
    }
    let dirs = std::fs::read_dir(std::env::temp_dir())
        .map(|d| d.flatten().map(|e| e.path()).collect::<Vec<_>>())
        .unwrap_or_default();
    for dir in dirs {
        let owner = dir
            .file_name()
            .and_then(|n| n.to_str()?.strip_prefix(DIR_PREFIX)?.parse::<u32>().ok());
        if let Some(owner) = owner {
            if owner != std::process::id()
                && process_gone(owner)
                && std::fs::remove_dir_all(&dir).is_ok()
            {
                removed.push(format!("folder {}", dir.display()));
            }
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A key folder whose run is gone is removed; this run's own is kept.
    #[test]
    fn the_folder_of_a_run_that_is_gone_is_removed() {
        // A pid above the kernel's largest (4194304) is never running.
        let dead = run_dir_path(4_194_305);
        std::fs::create_dir_all(&dead).unwrap();
        std::fs::write(dead.join("relay.key"), "x").unwrap();
        let own = RunDir::create().unwrap();
        let removed = sweep();
        assert!(!dead.exists(), "{removed:?}");
        assert!(removed.iter().any(|r| r.contains("4194305")), "{removed:?}");
        assert!(own.path().exists());
        let path = own.path().to_path_buf();
        drop(own);
        assert!(!path.exists());
    }
}
