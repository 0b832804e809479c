//! Signals raised at this test process (a binary of its own, so that no other test's wait
//! sees them).
#![cfg(target_os = "linux")]

use sprout_os::signals::{self, SignalWatcher};

#[test]
fn a_raised_signal_is_taken_once() {
    let w = SignalWatcher::new().unwrap();
    assert_eq!(w.take(), None);
    assert_eq!(w.fds().count(), 3);
    signal_hook::low_level::raise(libc::SIGHUP).unwrap();
    assert_eq!(w.take(), Some(libc::SIGHUP));
    assert_eq!(w.take(), None);
    assert_eq!(signals::name(libc::SIGHUP), "SIGHUP");
    assert_eq!(signals::name(9), "signal 9");
}
