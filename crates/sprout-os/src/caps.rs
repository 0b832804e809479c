//! Privileges: whether this process holds the capabilities that network set-up needs.

use rustix::thread::{capabilities, CapabilitySet};

/// Whether every capability of `needed` is in this thread's effective set (`capget`); if the
/// set cannot be read, whether the effective user is root.
fn has_effective(needed: CapabilitySet) -> bool {
    match capabilities(None) {
        Ok(sets) => sets.effective.contains(needed),
        Err(_) => rustix::process::geteuid().is_root(),
    }
}

/// Whether this process has `CAP_NET_ADMIN` (root has it): enough to create a TUN device in
/// its own namespace and set addresses and routes.
pub fn has_net_admin() -> bool {
    has_effective(CapabilitySet::NET_ADMIN)
}

/// Whether this process may create a network namespace and TUN devices: both `CAP_NET_ADMIN`
/// and `CAP_SYS_ADMIN` (root has them).
pub fn has_network_privileges() -> bool {
    has_effective(CapabilitySet::NET_ADMIN | CapabilitySet::SYS_ADMIN)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The effective set as `/proc/self/status` shows it (`CapEff`, hexadecimal).
    fn proc_cap_eff() -> u64 {
        let status = std::fs::read_to_string("/proc/self/status").unwrap();
        let hex = status
            .lines()
            .find_map(|l| l.strip_prefix("CapEff:"))
            .unwrap();
        u64::from_str_radix(hex.trim(), 16).unwrap()
    }

    #[test]
    fn agrees_with_proc_status() {
        let eff = proc_cap_eff();
        let net_admin = eff & (1 << 12) != 0;
        let sys_admin = eff & (1 << 21) != 0;
        assert_eq!(has_net_admin(), net_admin);
        assert_eq!(has_network_privileges(), net_admin && sys_admin);
    }
}
