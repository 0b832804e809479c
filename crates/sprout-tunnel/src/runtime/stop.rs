//! Stopping an end: [`StopHandle`] (from another thread or a signal), [`stop_on_signals`], and
//! why an end stopped ([`ExitReason`]).

use std::io;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::Arc;

use mio::Waker;

/// Stops a running end from another thread (or a signal-handling thread).
#[derive(Clone, Debug)]
pub struct StopHandle {
    pub(super) flag: Arc<AtomicBool>,
    pub(super) signal: Arc<AtomicI32>,
    pub(super) waker: Arc<Waker>,
}

impl StopHandle {
    /// Asks the end to stop (it removes what it made and returns).
    pub fn stop(&self) {
        self.flag.store(true, Ordering::SeqCst);
        let _ = self.waker.wake();
    }

    /// Asks the end to stop because of signal `sig` (named in the exit line).
    pub fn stop_for_signal(&self, sig: i32) {
        self.signal.store(sig, Ordering::SeqCst);
        self.stop();
    }
}

/// Catches `SIGINT`, `SIGTERM` and `SIGHUP` from now on, each stopping `handle`'s end (a
/// thread waits for them).
pub fn stop_on_signals(handle: StopHandle) -> io::Result<()> {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP])?;
    std::thread::Builder::new()
        .name("sprout-tunnel-signals".into())
        .spawn(move || {
            if let Some(sig) = signals.forever().next() {
                handle.stop_for_signal(sig);
            }
        })?;
    Ok(())
}

pub(super) fn signal_name(sig: i32) -> String {
    sprout_os::signals::name(sig)
}

/// Why an end stopped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ExitReason {
    /// A signal (`SIGINT`, ...) or [`StopHandle::stop`].
    Stopped(String),
    /// `--duration` passed.
    Duration,
}

impl ExitReason {
    pub(super) fn text(&self) -> String {
        match self {
            ExitReason::Stopped(s) => s.clone(),
            ExitReason::Duration => "duration".into(),
        }
    }
}
