//! The loop both ends run ([`run_loop`]) and what it checks besides the engine ([`Control`]:
//! stop requests, signals, `--duration`).

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::Arc;

use mio::Events;
use sprout_core::time::Instant;
use sprout_os::clock::MonotonicClock;

use super::io::{End, Io};
use super::output::StatusPrinter;
use super::stop::{signal_name, ExitReason};
use crate::device::SetupError;

/// What an end's loop checks besides the engine.
pub(super) struct Control {
    pub(super) stop: Arc<AtomicBool>,
    pub(super) signal: Arc<AtomicI32>,
    /// The protocol's clock (time 0 when the end started).
    pub(super) clock: MonotonicClock,
    /// When `--duration` ends the run.
    pub(super) end: Option<Instant>,
    pub(super) status_interval: sprout_core::Duration,
}

impl Control {
    pub(super) fn stopped(&self) -> Option<ExitReason> {
        if self.stop.load(Ordering::SeqCst) {
            let sig = self.signal.load(Ordering::SeqCst);
            return Some(ExitReason::Stopped(if sig == 0 {
                "stopped".into()
            } else {
                signal_name(sig)
            }));
        }
        None
    }
}

/// Runs the loop until stopped, `--duration`, or an error; `hook` runs after the inputs of
/// each round (events, device set-up).
pub(super) fn run_loop<E: End>(
    end: &mut E,
    io: &mut Io,
    ctl: &Control,
    printer: &mut StatusPrinter,
    mut hook: impl FnMut(&mut E, &mut Io, Instant) -> Result<(), SetupError>,
) -> Result<ExitReason, SetupError> {
    let mut events = Events::with_capacity(64);
    let mut next_status = Instant::ZERO + ctl.status_interval;
    loop {
        if let Some(r) = ctl.stopped() {
            return Ok(r);
        }
        let now = ctl.clock.now();
        if ctl.end.is_some_and(|e| now >= e) {
            return Ok(ExitReason::Duration);
        }
        let mut wake = next_status;
        if let Some(t) = end.poll_timeout() {
            wake = wake.min(t);
        }
        if let Some(e) = ctl.end {
            wake = wake.min(e);
        }
        let timeout = if io.udp_readable || io.tun_readable {
            sprout_core::Duration::ZERO
        } else {
            wake - now
        };
        io.wait(&mut events, timeout)?;
        let now = ctl.clock.now();
        if io.tun_readable {
            io.read_tun(end, now)?;
        }
        if io.udp_readable {
            io.read_udp(end, now);
        }
        if end.poll_timeout().is_some_and(|t| t <= now) {
            end.handle_timeout(now);
        }
        hook(end, io, now)?;
        io.drain_tun(end);
        io.drain_udp(end, now);
        if now >= next_status {
            let s = end.status(now);
            printer.print(s, &io.counters);
            next_status = (next_status + ctl.status_interval)
                .max(now + sprout_core::Duration::from_micros(1));
        }
    }
}
