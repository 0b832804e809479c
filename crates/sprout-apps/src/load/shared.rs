//! Small helpers shared by the bench's modules.

use std::sync::{Mutex, MutexGuard};

/// Locks `m`, taking the data of a poisoned lock (a panicked thread's counts are still
/// counts).
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
