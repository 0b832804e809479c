//! What the bench reads of processes and sockets from `/proc`.

use std::collections::HashMap;

use sprout_os::clock::clock_ticks_per_second;

/// CPU seconds (user + system) of a process ("self" or a pid), from /proc/PID/stat.
pub(crate) fn cpu_seconds(pid: &str) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name (which may hold spaces) start after the last ')'.
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let utime: f64 = f.get(11)?.parse().ok()?;
    let stime: f64 = f.get(12)?.parse().ok()?;
    let hz = clock_ticks_per_second() as f64;
    Some((utime + stime) / hz.max(1.0))
}

/// A figure of a process from /proc/PID/status (`VmRSS`, `VmHWM` in KiB, `Threads`).
pub(crate) fn status_field(pid: u32, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find(|l| l.starts_with(field))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// The kernel's drop counter of every IPv4 UDP socket, by local port (/proc/net/udp).
pub(crate) fn udp_drops() -> HashMap<u16, u64> {
    let Ok(text) = std::fs::read_to_string("/proc/net/udp") else {
        return HashMap::new();
    };
    text.lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let port = u16::from_str_radix(f.get(1)?.rsplit(':').next()?, 16).ok()?;
            let drops: u64 = f.last()?.parse().ok()?;
            Some((port, drops))
        })
        .collect()
}
