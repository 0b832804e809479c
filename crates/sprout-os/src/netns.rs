//! A non-persistent network namespace, held by a file descriptor only.
//!
//! The namespace is made with `unshare(CLONE_NEWNET)` on a thread of our own (network namespaces
//! are per thread), and no bind mount is made under `/var/run/netns`: the namespace lives exactly
//! as long as something references it (our descriptor, a thread or a process inside it), so it
//! cannot be left behind when its owner dies, even by `SIGKILL`.

use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::mpsc;
use std::thread::JoinHandle;

use rustix::fs::{Mode, OFlags};
use rustix::thread::{LinkNameSpaceType, UnshareFlags};

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
        // SAFETY: `unshare_unsafe` is unsafe only for `CLONE_FILES` (a thread that stops
        // sharing its descriptor table); `CLONE_NEWNET` touches nothing but this thread's
        // network namespace.
        unsafe { rustix::thread::unshare_unsafe(UnshareFlags::NEWNET) }?;
        Self::of_current_thread()
    }

    /// A handle to the calling thread's current network namespace.
    pub fn of_current_thread() -> io::Result<NetNamespace> {
        let fd = rustix::fs::open(
            "/proc/thread-self/ns/net",
            OFlags::RDONLY | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        Ok(NetNamespace { fd })
    }

    /// Another handle to the same namespace (a duplicated descriptor).
    pub fn try_clone(&self) -> io::Result<NetNamespace> {
        Ok(NetNamespace {
            fd: self.fd.try_clone()?,
        })
    }

    /// Moves the calling thread into this namespace (`setns`). Needs `CAP_SYS_ADMIN`.
    pub fn enter(&self) -> io::Result<()> {
        rustix::thread::move_into_link_name_space(
            self.fd.as_fd(),
            Some(LinkNameSpaceType::Network),
        )?;
        Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_namespace_has_only_loopback_and_threads_can_enter_it() {
        if !crate::caps::has_network_privileges() {
            eprintln!("SKIPPED: needs CAP_SYS_ADMIN");
            return;
        }
        let ns = std::thread::spawn(NetNamespace::unshare_current_thread)
            .join()
            .unwrap()
            .unwrap();
        let names = ns
            .spawn_thread("netns-test", || {
                crate::interfaces::interface_addresses()
                    .into_iter()
                    .map(|a| a.interface)
                    .collect::<Vec<_>>()
            })
            .unwrap()
            .join()
            .unwrap();
        // `lo` is down and has no address in a fresh namespace.
        assert!(names.is_empty(), "{names:?}");
    }
}
