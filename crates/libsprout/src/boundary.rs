//! What every C entry point shares: the status codes, the thread's last error message, the
//! guard that turns a Rust panic into [`SproutStatus::Internal`], and the checked conversions
//! of the C caller's pointers (the only `unsafe` of the crate, each block with its SAFETY
//! comment).

use std::any::Any;
use std::cell::RefCell;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// The result of a call.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SproutStatus {
    /// Done as asked.
    Ok = 0,
    /// Nothing (more) right now: no datagram to send, no message to read, no event. Not an
    /// error; the last error message is left as it was.
    Done = 1,
    /// A pointer the call needs was NULL.
    NullPointer = -1,
    /// An argument is out of its range (a length too large, a key that is not 32 bytes).
    InvalidArgument = -2,
    /// The buffer given is too small; nothing was lost: the call tells the size needed and can
    /// be repeated with a larger buffer.
    BufferTooSmall = -3,
    /// The connection is closed (see `sprout_conn_end_reason`).
    Closed = -4,
    /// A message longer than `sprout_conn_max_message`.
    TooLong = -5,
    /// An internal error (a bug in libsprout, reported instead of unwinding into C); the
    /// connection it happened on refuses every later call but `sprout_conn_free`.
    Internal = -6,
    /// The operating system refused something (binding a UDP socket, resolving a name,
    /// starting a thread): see `sprout_last_error`. The socket layer's calls only.
    Io = -7,
}

/// A failed call: its status and the message `sprout_last_error` returns.
#[derive(Debug)]
pub(crate) struct Failure {
    pub status: SproutStatus,
    pub message: String,
}

impl Failure {
    pub(crate) fn new(status: SproutStatus, message: impl Into<String>) -> Failure {
        Failure {
            status,
            message: message.into(),
        }
    }

    pub(crate) fn invalid(message: impl Into<String>) -> Failure {
        Failure::new(SproutStatus::InvalidArgument, message)
    }
}

thread_local! {
    /// The message of the last call that failed on this thread.
    static LAST_ERROR: RefCell<String> = const { RefCell::new(String::new()) };
}

fn set_last_error(message: String) {
    LAST_ERROR.with(|e| *e.borrow_mut() = message);
}

/// The thread's last error message.
pub(crate) fn last_error() -> String {
    LAST_ERROR.with(|e| e.borrow().clone())
}

/// Runs `f`, turning its failure into a status (and the thread's last error message) and a
/// panic into [`SproutStatus::Internal`]: nothing unwinds into C.
pub(crate) fn guard(f: impl FnOnce() -> Result<SproutStatus, Failure>) -> SproutStatus {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(status)) => status,
        Ok(Err(failure)) => {
            set_last_error(failure.message);
            failure.status
        }
        Err(payload) => {
            set_last_error(format!(
                "internal error in libsprout (please report it): {}",
                panic_message(&*payload)
            ));
            SproutStatus::Internal
        }
    }
}

fn panic_message(payload: &(dyn Any + Send)) -> &str {
    if let Some(s) = payload.downcast_ref::<&str>() {
        s
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s
    } else {
        "a panic"
    }
}

/// Most bytes one buffer may span (Rust's slices are at most `isize::MAX` bytes).
const MAX_SPAN: usize = isize::MAX as usize;

/// The `len` bytes at `p` (NULL is fine when `len` is 0), named `what` in errors.
///
/// The caller of the C function promises that a non-NULL `p` points to `len` readable bytes
/// that stay unchanged during the call (the header says so of every such argument).
pub(crate) fn bytes<'a>(p: *const u8, len: usize, what: &str) -> Result<&'a [u8], Failure> {
    if len == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(Failure::new(
            SproutStatus::NullPointer,
            format!("{what} is NULL with a length of {len} bytes"),
        ));
    }
    if len > MAX_SPAN {
        return Err(Failure::invalid(format!(
            "{what}: a length of {len} bytes is impossible"
        )));
    }
    // SAFETY: `p` is not NULL, `len` is at most isize::MAX, and the C caller promises (as the
    // header documents) `len` readable bytes at `p`, unchanged during the call; a byte has no
    // alignment to respect.
    Ok(unsafe { std::slice::from_raw_parts(p, len) })
}

/// The `cap` writable bytes at `p` (NULL is fine when `cap` is 0), named `what` in errors.
pub(crate) fn bytes_mut<'a>(p: *mut u8, cap: usize, what: &str) -> Result<&'a mut [u8], Failure> {
    slice_mut(p, cap, what)
}

/// The `cap` writable `T`s at `p` (NULL is fine when `cap` is 0), named `what` in errors.
///
/// The caller of the C function promises that a non-NULL `p` points to `cap` valid, aligned
/// `T`s that nothing else touches during the call.
pub(crate) fn slice_mut<'a, T: Copy>(
    p: *mut T,
    cap: usize,
    what: &str,
) -> Result<&'a mut [T], Failure> {
    if cap == 0 {
        return Ok(Default::default());
    }
    if p.is_null() {
        return Err(Failure::new(
            SproutStatus::NullPointer,
            format!("{what} is NULL with a capacity of {cap}"),
        ));
    }
    if cap > MAX_SPAN / std::mem::size_of::<T>().max(1) {
        return Err(Failure::invalid(format!(
            "{what}: a capacity of {cap} is impossible"
        )));
    }
    // SAFETY: `p` is not NULL, the span is at most isize::MAX bytes, and the C caller
    // promises (as the header documents) `cap` valid, aligned `T`s at `p` that nothing else
    // reads or writes during the call.
    Ok(unsafe { std::slice::from_raw_parts_mut(p, cap) })
}

/// A 32-byte key at `p`.
pub(crate) fn key(p: *const u8, what: &str) -> Result<[u8; 32], Failure> {
    if p.is_null() {
        return Err(Failure::new(
            SproutStatus::NullPointer,
            format!("{what} is NULL"),
        ));
    }
    let mut k = [0u8; 32];
    k.copy_from_slice(bytes(p, 32, what)?);
    Ok(k)
}

/// The object at `p`, to read and write, named `what` in errors.
///
/// The caller of the C function promises that a non-NULL `p` points to a valid, aligned `T`
/// that nothing else touches during the call.
pub(crate) fn out<'a, T>(p: *mut T, what: &str) -> Result<&'a mut T, Failure> {
    // SAFETY: `as_mut` checks NULL; the C caller promises a non-NULL `p` is a valid, aligned
    // `T` (for a SproutConn: one made by `sprout_conn_new_*` and not freed) that no other
    // thread uses during the call.
    unsafe { p.as_mut() }
        .ok_or_else(|| Failure::new(SproutStatus::NullPointer, format!("{what} is NULL")))
}

/// Frees a handle the library handed out with `Box::into_raw` (NULL is ignored), inside
/// [`guard`] so that a panic in its destructor does not cross the boundary.
///
/// The caller of the C function promises that a non-NULL `p` came from `Box::into_raw` of a
/// `T`, is freed once, and has no call on it running or to come.
pub(crate) fn free_boxed<T>(p: *mut T) {
    guard(|| {
        if !p.is_null() {
            // SAFETY: the C caller promises `p` came from `Box::into_raw` and is freed once,
            // with no call on it running or to come.
            drop(unsafe { Box::from_raw(p) });
        }
        Ok(SproutStatus::Ok)
    });
}

/// The object at `p`, to read only, named `what` in errors.
///
/// The caller of the C function promises that a non-NULL `p` points to a valid, aligned `T`
/// that nothing writes during the call.
pub(crate) fn get<'a, T>(p: *const T, what: &str) -> Result<&'a T, Failure> {
    // SAFETY: `as_ref` checks NULL; the C caller promises a non-NULL `p` is a valid, aligned
    // `T` (a struct of plain integers and floats: every bit pattern is one) that nothing
    // writes during the call.
    unsafe { p.as_ref() }
        .ok_or_else(|| Failure::new(SproutStatus::NullPointer, format!("{what} is NULL")))
}

#[cfg(all(unix, feature = "sockets"))]
/// The object at `p`, shared: for the socket layer's handles, which lock what they change and
/// may be used from several threads at once (`T: Sync`).
///
/// The caller of the C function promises that a non-NULL `p` is a handle made by this library
/// and not yet freed, and that no call frees it while this call runs.
pub(crate) fn shared<'a, T: Sync>(p: *const T, what: &str) -> Result<&'a T, Failure> {
    // SAFETY: `as_ref` checks NULL; the C caller promises a non-NULL `p` came from
    // `Box::into_raw` in this library and is not freed during the call. `T` is `Sync`, so
    // calls from other threads on the same handle at the same time are sound.
    unsafe { p.as_ref() }
        .ok_or_else(|| Failure::new(SproutStatus::NullPointer, format!("{what} is NULL")))
}

#[cfg(all(unix, feature = "sockets"))]
/// The NUL-terminated string at `p`, which must be UTF-8, named `what` in errors.
///
/// The caller of the C function promises that a non-NULL `p` points to a NUL-terminated
/// string that stays unchanged during the call.
pub(crate) fn c_str<'a>(p: *const std::ffi::c_char, what: &str) -> Result<&'a str, Failure> {
    if p.is_null() {
        return Err(Failure::new(
            SproutStatus::NullPointer,
            format!("{what} is NULL"),
        ));
    }
    // SAFETY: `p` is not NULL and the C caller promises (as the header documents) a
    // NUL-terminated string at `p`, unchanged during the call.
    let s = unsafe { std::ffi::CStr::from_ptr(p) };
    s.to_str()
        .map_err(|_| Failure::invalid(format!("{what} is not UTF-8")))
}

/// Writes `s` into the C buffer `buf` of `cap` bytes, cut to fit, NUL-terminated (when `cap`
/// is at least 1); returns `s`'s length in bytes (without the NUL), as `snprintf` does.
pub(crate) fn write_c_string(s: &str, buf: *mut std::ffi::c_char, cap: usize) -> usize {
    let Ok(dst) = bytes_mut(buf.cast::<u8>(), cap, "buf") else {
        return s.len();
    };
    if let Some((last, body)) = dst.split_last_mut() {
        let n = s.len().min(body.len());
        body[..n].copy_from_slice(&s.as_bytes()[..n]);
        if n < body.len() {
            body[n] = 0;
        } else {
            *last = 0;
        }
    }
    s.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_becomes_an_internal_error_with_its_message() {
        let s = guard(|| panic!("boom"));
        assert_eq!(s, SproutStatus::Internal);
        assert!(last_error().contains("boom"), "{}", last_error());
    }

    #[test]
    fn null_and_impossible_lengths_are_errors() {
        assert_eq!(bytes(std::ptr::null(), 0, "x").unwrap(), &[] as &[u8]);
        let e = bytes(std::ptr::null(), 3, "data").unwrap_err();
        assert_eq!(e.status, SproutStatus::NullPointer);
        assert!(e.message.contains("data is NULL"));
        let b = [1u8];
        let e = bytes(b.as_ptr(), usize::MAX, "data").unwrap_err();
        assert_eq!(e.status, SproutStatus::InvalidArgument);
    }

    #[test]
    fn strings_are_cut_and_terminated() {
        let mut buf = [0x55 as std::ffi::c_char; 4];
        assert_eq!(write_c_string("hello", buf.as_mut_ptr(), 4), 5);
        assert_eq!(buf.map(|c| c as u8), *b"hel\0");
        assert_eq!(write_c_string("hi", buf.as_mut_ptr(), 4), 2);
        assert_eq!(buf.map(|c| c as u8)[..3], *b"hi\0");
        assert_eq!(write_c_string("hi", std::ptr::null_mut(), 0), 2);
    }
}
