//! Choosing a unique address pair and interface names for one emulator instance.

use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicU32, Ordering};

use sprout_os::interfaces::ipv4_addresses_in_use as existing_ipv4_addresses;
use sprout_os::tun::{interface_exists, MAX_IFNAME_LEN};

/// Counts instances started by this process, so that several emulators in one process (tests,
/// the evaluation harness) get different addresses and names.
static INSTANCE: AtomicU32 = AtomicU32::new(0);

/// Addresses and interface names of one emulator instance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Addressing {
    /// The command's address, inside the mobile namespace (odd end of a /31).
    pub mobile: Ipv4Addr,
    /// The emulator side's address, in the emulator's own namespace (even end of the /31).
    pub outside: Ipv4Addr,
    /// TUN device in the emulator's namespace.
    pub outer_name: String,
    /// TUN device in the mobile namespace.
    pub inner_name: String,
}

/// Pairs per /24 used: fourth octets 2/3 up to 252/253 (no .0, .1, .254 or .255).
const PAIRS: u64 = 126;

/// Number of pairs in 10.100.0.0 - 10.255.255.255.
const SLOTS: u64 = 156 * 256 * PAIRS;

/// Picks a pair `10.a.b.c/31` (a in 100..=255, c even in 2..=252) and names `spo<pid hex>-<n>` (outside) and
/// `spi<pid hex>-<n>` (mobile, at most 15 bytes), derived from the process id and a per-process
/// counter, skipping addresses and names already present in the calling thread's namespace.
pub(crate) fn choose() -> Addressing {
    let pid = std::process::id();
    let taken = existing_ipv4_addresses();
    let mut attempts = 0;
    loop {
        attempts += 1;
        let n = INSTANCE.fetch_add(1, Ordering::Relaxed) % 100_000;
        let slot = (u64::from(pid).wrapping_mul(2_654_435_761) + u64::from(n) * 7_919) % SLOTS;
        let a = 100 + slot / (256 * PAIRS);
        let b = (slot / PAIRS) % 256;
        let c = 2 + (slot % PAIRS) * 2;
        let outside = Ipv4Addr::new(10, a as u8, b as u8, c as u8);
        let mobile = Ipv4Addr::new(10, a as u8, b as u8, c as u8 + 1);
        let outer_name = format!("spo{pid:x}-{n}");
        let inner_name = format!("spi{pid:x}-{n}");
        debug_assert!(outer_name.len() <= MAX_IFNAME_LEN);
        if attempts < 10_000
            && (taken.contains(&outside)
                || taken.contains(&mobile)
                || interface_exists(&outer_name))
        {
            continue;
        }
        return Addressing {
            mobile,
            outside,
            outer_name,
            inner_name,
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_and_names_are_distinct_and_valid() {
        let a = choose();
        let b = choose();
        assert_ne!(a.outside, b.outside);
        assert_ne!(a.outer_name, b.outer_name);
        for x in [&a, &b] {
            assert_eq!(u32::from(x.mobile), u32::from(x.outside) + 1);
            assert_eq!(x.outside.octets()[0], 10);
            assert!(x.outside.octets()[1] >= 100);
            let last = x.outside.octets()[3];
            assert!(last % 2 == 0 && (2..=252).contains(&last));
            assert!(x.outer_name.len() <= MAX_IFNAME_LEN);
            assert!(x.inner_name.len() <= MAX_IFNAME_LEN);
        }
    }
}
