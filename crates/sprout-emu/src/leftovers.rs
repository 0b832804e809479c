//! What of an emulator is still visible on the host, for clean-up checks (the tests use it) and
//! diagnostics: devices, addresses, routes, named namespaces, processes.

use std::process::Command;

/// Output of `ip ARGS` (empty if `ip` cannot run).
fn ip(args: &[&str]) -> String {
    Command::new("ip")
        .args(args)
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default()
}

/// Names of the network interfaces of the calling thread's namespace.
pub fn interface_names() -> Vec<String> {
    std::fs::read_dir("/sys/class/net")
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// Whether process `pid` is gone, or a zombie (dead, waiting for a parent to reap it).
pub fn process_gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .map(|(_, rest)| rest.trim_start().starts_with('Z'))
            .unwrap_or(true),
    }
}

/// What remains of an emulator whose devices' names start with `iface_prefix` and whose
/// addresses are `addrs` (dotted IPv4): one line per device, address, route or named namespace
/// still there. Empty when nothing is left.
pub fn remains(iface_prefix: &str, addrs: &[String]) -> Vec<String> {
    let mut left: Vec<String> = interface_names()
        .into_iter()
        .filter(|n| n.starts_with(iface_prefix))
        .map(|n| format!("device {n}"))
        .collect();
    let routes = ip(&["route", "show", "table", "all"]);
    let addresses = ip(&["-o", "addr"]);
    for a in addrs {
        if routes.contains(a.as_str()) {
            left.push(format!("route to {a}"));
        }
        if addresses.contains(a.as_str()) {
            left.push(format!("address {a}"));
        }
    }
    // The emulator never names its namespace (no bind mount under /var/run/netns).
    let netns = ip(&["netns", "list"]);
    if netns.contains("sprout") || netns.contains(iface_prefix) {
        left.push(format!("named namespace in: {}", netns.trim()));
    }
    left
}

/// Polls `done` every 20 ms until it returns true (then true) or `limit` has passed (then
/// false): clean-up by the kernel and by killed processes takes a moment.
pub fn wait_until(limit: std::time::Duration, mut done: impl FnMut() -> bool) -> bool {
    let until = std::time::Instant::now() + limit;
    loop {
        if done() {
            return true;
        }
        if std::time::Instant::now() > until {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}
