//! Waiting on descriptors with a nanosecond timeout (`ppoll`), and an `eventfd` to wake a
//! waiting thread.

use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use rustix::event::{EventfdFlags, PollFd, PollFlags, Timespec};

/// An `eventfd` used to wake a thread blocked in [`poll_readable`].
#[derive(Debug)]
pub struct EventFd(OwnedFd);

impl EventFd {
    /// A new, unsignalled eventfd (non-blocking, close-on-exec).
    pub fn new() -> io::Result<EventFd> {
        let fd = rustix::event::eventfd(0, EventfdFlags::CLOEXEC | EventfdFlags::NONBLOCK)?;
        Ok(EventFd(fd))
    }

    /// Makes the eventfd readable (adds 1 to its counter); it stays readable until read.
    pub fn notify(&self) {
        let _ = rustix::io::write(&self.0, &1u64.to_ne_bytes());
    }
}

impl AsFd for EventFd {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.0.as_fd()
    }
}

/// What [`poll_readable`] saw on one descriptor.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Readiness {
    /// Any event at all (readable, or one of the failures below).
    pub any: bool,
    /// An error, a hang-up or an invalid descriptor (`POLLERR`, `POLLHUP`, `POLLNVAL`).
    pub failed: bool,
}

fn timespec(ns: u64) -> Timespec {
    Timespec {
        tv_sec: (ns / 1_000_000_000) as _,
        tv_nsec: (ns % 1_000_000_000) as _,
    }
}

/// Waits until one of `fds` is readable or failed, or `timeout_ns` (ns; `None` = forever)
/// passes (`ppoll`, so the timeout is as fine as the thread's timer slack). Returns what each
/// descriptor showed; a signal interrupting the wait counts as a timeout (nothing ready).
pub fn poll_readable<const N: usize>(
    fds: [BorrowedFd<'_>; N],
    timeout_ns: Option<u64>,
) -> io::Result<[Readiness; N]> {
    let mut polled = fds.map(|fd| PollFd::from_borrowed_fd(fd, PollFlags::IN));
    poll_in(&mut polled, timeout_ns)?;
    Ok(polled.map(|p| readiness(&p)))
}

fn readiness(p: &PollFd<'_>) -> Readiness {
    let revents = p.revents();
    Readiness {
        any: !revents.is_empty(),
        failed: revents.intersects(PollFlags::ERR | PollFlags::HUP | PollFlags::NVAL),
    }
}

/// `ppoll` on `fds` with a timeout (ns; `None` = forever): the number of ready descriptors, 0
/// on a timeout or a signal.
pub(crate) fn poll_in(fds: &mut [PollFd<'_>], timeout_ns: Option<u64>) -> io::Result<usize> {
    let ts = timeout_ns.map(timespec);
    match rustix::event::poll(fds, ts.as_ref()) {
        Ok(n) => Ok(n),
        Err(rustix::io::Errno::INTR) => Ok(0),
        Err(e) => Err(e.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_eventfd_wakes_the_poll_and_a_timeout_ends_it() {
        let a = EventFd::new().unwrap();
        let b = EventFd::new().unwrap();
        let r = poll_readable([a.as_fd(), b.as_fd()], Some(1_000_000)).unwrap();
        assert_eq!(r, [Readiness::default(); 2]);
        b.notify();
        let r = poll_readable([a.as_fd(), b.as_fd()], None).unwrap();
        assert!(!r[0].any && r[1].any && !r[1].failed, "{r:?}");
    }
}
