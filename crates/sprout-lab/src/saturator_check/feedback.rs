//! The Saturator's feedback path in the emulator: a veth pair between the mobile namespace and
//! the host, outside the emulated link.

use std::net::Ipv4Addr;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};

use super::process::normal_priority;
use crate::error::{Context, LabError, Result};

/// Counts feedback paths made by this process (names and addresses).
static FEEDBACK_PATHS: AtomicU32 = AtomicU32::new(0);

/// A veth pair between the emulator's mobile namespace and the host, outside the emulated link:
/// the Saturator's unloaded feedback path (the paper's second phone). Both ends disappear with
/// the namespace; dropping this also deletes them.
pub(super) struct FeedbackPath {
    /// The host's end of the pair.
    root_if: String,
    /// The host end's address (the client sends its feedback there).
    pub(super) root_addr: Ipv4Addr,
}

/// Runs `ip` on the host for `what`.
fn ip(cmd: &mut Command, what: &'static str) -> Result<()> {
    let out = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .with_context(|| format!("running `ip` to {what} (is iproute2 installed?)"))?;
    ip_status(&out, what)
}

/// Whether `ip` (its output `out`, run for `what`) succeeded; what it said when not.
fn ip_status(out: &std::process::Output, what: &'static str) -> Result<()> {
    if !out.status.success() {
        return Err(LabError::Failed(format!(
            "`ip` failed to {what}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(())
}

impl FeedbackPath {
    /// Makes the pair, addresses both ends and brings them up.
    pub(super) fn create(emu: &sprout_emu::Emulator) -> Result<FeedbackPath> {
        let pid = std::process::id();
        let taken = sprout_os::interfaces::ipv4_addresses_in_use();
        let (mut n, mut slot);
        let mut attempts = 0;
        loop {
            n = FEEDBACK_PATHS.fetch_add(1, Ordering::Relaxed) % 1000;
            slot = (u64::from(pid).wrapping_mul(2_654_435_761) + u64::from(n) * 7_919) % (256 * 64);
            let a = Ipv4Addr::new(172, 31, (slot / 64) as u8, ((slot % 64) * 4 + 1) as u8);
            attempts += 1;
            if !taken.contains(&a) || attempts > 1000 {
                break;
            }
        }
        let root_addr = Ipv4Addr::new(172, 31, (slot / 64) as u8, ((slot % 64) * 4 + 1) as u8);
        let ns_addr = Ipv4Addr::new(172, 31, (slot / 64) as u8, ((slot % 64) * 4 + 2) as u8);
        let root_if = format!("sfb{pid:x}-{n}");
        let ns_if = format!("sfn{pid:x}-{n}");
        let in_ns = |args: &[&str], what: &'static str| -> Result<()> {
            let mut c = Command::new("ip");
            c.args(args)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped());
            normal_priority(&mut c);
            let child = emu
                .spawn_in_namespace(&mut c)
                .with_context(|| format!("running `ip` in the namespace to {what}"))?;
            let out = child.wait_with_output()?;
            ip_status(&out, what)
        };
        let pid_s = pid.to_string();
        in_ns(
            &[
                "link", "add", &ns_if, "type", "veth", "peer", "name", &root_if, "netns", &pid_s,
            ],
            "create the feedback path (veth)",
        )?;
        let path = FeedbackPath {
            root_if: root_if.clone(),
            root_addr,
        };
        in_ns(
            &["addr", "add", &format!("{ns_addr}/30"), "dev", &ns_if],
            "address the feedback path",
        )?;
        in_ns(&["link", "set", &ns_if, "up"], "bring the feedback path up")?;
        ip(
            Command::new("ip").args(["addr", "add", &format!("{root_addr}/30"), "dev", &root_if]),
            "address the feedback path",
        )?;
        ip(
            Command::new("ip").args(["link", "set", &root_if, "up"]),
            "bring the feedback path up",
        )?;
        Ok(path)
    }
}

impl Drop for FeedbackPath {
    fn drop(&mut self) {
        if sprout_os::tun::interface_exists(&self.root_if) {
            let _ = Command::new("ip")
                .args(["link", "del", &self.root_if])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        }
    }
}
