//! Errors as Python exceptions, with the command line's messages: a file that cannot be found
//! is a `FileNotFoundError`, another I/O failure an `OSError`, anything else (bad options,
//! traces that do not parse, an unknown scheme) a `sprout.SproutError` (a `ValueError`).

use pyo3::create_exception;
use pyo3::exceptions::{PyFileNotFoundError, PyOSError, PyValueError};
use pyo3::prelude::*;

create_exception!(
    sprout,
    SproutError,
    PyValueError,
    "An error of the Sprout simulator (bad options, a trace that does not parse, an unknown \
     scheme), with the message the `sprout` command prints. A subclass of ValueError."
);

/// The error and its causes joined by ": ", each said once, exactly as the `sprout` command
/// prints it after "error: " (its `error_message`).
pub fn error_message(e: &anyhow::Error) -> String {
    let mut msg = e.to_string();
    for cause in e.chain().skip(1) {
        let text = cause.to_string();
        if !msg.contains(&text) {
            msg.push_str(": ");
            msg.push_str(&text);
        }
    }
    msg
}

/// The Python exception for an error of the simulator: `FileNotFoundError` or `OSError` when
/// an I/O error caused it, else `SproutError`; the message is the command line's.
pub fn to_py(e: anyhow::Error) -> PyErr {
    let msg = error_message(&e);
    match e.chain().find_map(|c| c.downcast_ref::<std::io::Error>()) {
        Some(io) if io.kind() == std::io::ErrorKind::NotFound => PyFileNotFoundError::new_err(msg),
        Some(_) => PyOSError::new_err(msg),
        None => SproutError::new_err(msg),
    }
}

/// A `SproutError` with this message.
pub fn sprout_error(msg: impl Into<String>) -> PyErr {
    SproutError::new_err(msg.into())
}

/// Adds `SproutError` to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("SproutError", m.py().get_type::<SproutError>())
}
