//! A non-persistent network namespace, held by a file descriptor only.
//!
//! The namespace is made with `unshare(CLONE_NEWNET)` on a thread of our own (network namespaces
//! are per thread), and no bind mount is made under `/var/run/netns`: the namespace lives exactly
//! as long as something references it (our descriptor, a thread or a process inside it), so it
//! cannot be left behind when the emulator dies, even by `SIGKILL`.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::mpsc;
use std::thread::JoinHandle;

use crate::sys::cvt;

/// A network namespace, referenced by an open `/proc/thread-self/ns/net` descriptor
/// (close-on-exec).
#[derive(Debug)]
pub struct NetNamespace {
    fd: OwnedFd,
}

impl NetNamespace {
    /// Moves the *calling thread* into a new, empty network namespace (only a down `lo` in it)
    /// and returns a handle to it. Call it on a thread dedicated to the namespace: the thread
    /// stays inside until it exits. Needs `CAP_SYS_ADMIN`.
    pub fn unshare_current_thread() -> io::Result<NetNamespace> {
        // SAFETY: unshare has no memory preconditions; CLONE_NEWNET affects only this thread.
        cvt(unsafe { libc::unshare(libc::CLONE_NEWNET) })?;
        Self::of_current_thread()
    }

    /// A handle to the calling thread's current network namespace.
    pub fn of_current_thread() -> io::Result<NetNamespace> {
        let path = c"/proc/thread-self/ns/net";
        // SAFETY: path is a valid C string; the returned fd is owned here.
        let fd = cvt(unsafe { libc::open(path.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) })?;
        // SAFETY: fd is a fresh descriptor nobody else owns.
        Ok(NetNamespace {
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
        })
    }

    /// Another handle to the same namespace (a duplicated descriptor).
    pub fn try_clone(&self) -> io::Result<NetNamespace> {
        Ok(NetNamespace {
            fd: self.fd.try_clone()?,
        })
    }

    /// Moves the calling thread into this namespace (`setns`). Needs `CAP_SYS_ADMIN`.
    pub fn enter(&self) -> io::Result<()> {
        // SAFETY: the fd is a valid namespace descriptor owned by self.
        cvt(unsafe { libc::setns(self.fd.as_raw_fd(), libc::CLONE_NEWNET) }).map(|_| ())
    }

    /// Spawns a thread that enters this namespace and then runs `f` there; sockets it creates
    /// belong to the namespace. Returns once the thread is inside (or the error of `setns`).
    pub fn spawn_thread<F, T>(&self, name: &str, f: F) -> io::Result<JoinHandle<T>>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        let ns = self.try_clone()?;
        let (tx, rx) = mpsc::channel::<io::Result<()>>();
        let handle = std::thread::Builder::new()
            .name(name.to_string())
            .spawn(move || {
                let entered = ns.enter();
                let ok = entered.is_ok();
                let _ = tx.send(entered);
                drop(ns);
                if !ok {
                    // The caller got the error; this thread's result is never looked at.
                    panic!("setns failed");
                }
                f()
            })?;
        match rx.recv() {
            Ok(Ok(())) => Ok(handle),
            Ok(Err(e)) => {
                let _ = handle.join();
                Err(e)
            }
            Err(_) => Err(io::Error::other("namespace thread died before entering")),
        }
    }
}
