//! Errors as Python exceptions, with the command line's messages. Every error is a
//! `sprout.SproutError` (a `ValueError`); its class says its kind, chosen by the Rust error's
//! variant (never by its message):
//!
//! - `SproutFileNotFoundError` (also a `FileNotFoundError`): a file that does not exist;
//! - `SproutOSError` (also an `OSError`): another failure to read or write a file;
//! - `BadTraceError`: a trace that does not parse (a bad line, times going backwards, empty);
//! - `BadParameterError`: a bad option, parameter or configuration, an unknown name;
//! - `SproutError` itself for anything else.

use pyo3::create_exception;
use pyo3::exceptions::{PyFileNotFoundError, PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyTuple, PyType};
use sprout_eval::EvalError;
use sprout_link::TraceError;
use sprout_sim::error::chain_message;
use sprout_sim::SimError;

create_exception!(
    sprout,
    SproutError,
    PyValueError,
    "An error of the Sprout simulator, with the message the `sprout` command prints. A \
     subclass of ValueError; its subclasses say the kind (BadTraceError, BadParameterError, \
     SproutFileNotFoundError, SproutOSError)."
);

create_exception!(
    sprout,
    BadTraceError,
    SproutError,
    "A trace that does not parse: a line that is not a non-negative integer, times going \
     backwards, no opportunity at all."
);

create_exception!(
    sprout,
    BadParameterError,
    SproutError,
    "A bad option, parameter or configuration (out of range, unknown, options that do not go \
     together). A ValueError, as every SproutError."
);

/// `SproutFileNotFoundError(SproutError, FileNotFoundError)`, made at registration: pyo3's
/// `create_exception!` takes one base only.
static FILE_NOT_FOUND: PyOnceLock<Py<PyType>> = PyOnceLock::new();
/// `SproutOSError(SproutError, OSError)`, likewise.
static OS_ERROR: PyOnceLock<Py<PyType>> = PyOnceLock::new();

/// The kind of an error: which exception class it raises.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A file that does not exist.
    FileNotFound,
    /// Another I/O failure.
    Os,
    /// A trace that does not parse.
    BadTrace,
    /// A bad option, parameter or configuration.
    BadParameter,
    /// Anything else.
    Other,
}

impl Kind {
    /// The kind of an I/O error.
    pub fn of_io(e: &std::io::Error) -> Kind {
        if e.kind() == std::io::ErrorKind::NotFound {
            Kind::FileNotFound
        } else {
            Kind::Os
        }
    }

    /// The kind of a simulator error, by its variant.
    pub fn of_sim(e: &SimError) -> Kind {
        if let Some(io) = e.io_error() {
            Kind::of_io(io)
        } else if let SimError::Trace(_) = e {
            Kind::BadTrace
        } else if e.is_bad_parameter() {
            Kind::BadParameter
        } else {
            Kind::Other
        }
    }

    /// The kind of a trace error, by its variant.
    pub fn of_trace(e: &TraceError) -> Kind {
        match e {
            TraceError::Io { source, .. } => Kind::of_io(source),
            _ => Kind::BadTrace,
        }
    }

    /// The kind of an error of the evaluation or the sweeps, by its variant (the innermost
    /// one when it wraps another: a sweep spec's file, a sweep run).
    pub fn of_eval(e: &EvalError) -> Kind {
        if let Some(io) = e.io_error() {
            return Kind::of_io(io);
        }
        if e.is_bad_parameter() {
            return Kind::BadParameter;
        }
        match e.innermost() {
            EvalError::Sim(s) | EvalError::SimRun { source: s, .. } => Kind::of_sim(s),
            EvalError::BadTrace(_)
            | EvalError::NoTraces { .. }
            | EvalError::TraceChanged { .. }
            | EvalError::DownloadedBadTrace { .. } => Kind::BadTrace,
            _ => Kind::Other,
        }
    }

    /// The exception of this kind with `msg`.
    pub fn err(self, msg: String) -> PyErr {
        match self {
            Kind::FileNotFound => dynamic_err(&FILE_NOT_FOUND, msg),
            Kind::Os => dynamic_err(&OS_ERROR, msg),
            Kind::BadTrace => BadTraceError::new_err(msg),
            Kind::BadParameter => BadParameterError::new_err(msg),
            Kind::Other => SproutError::new_err(msg),
        }
    }
}

/// An exception of a class made at registration, with `msg`.
fn dynamic_err(class: &'static PyOnceLock<Py<PyType>>, msg: String) -> PyErr {
    Python::attach(|py| match class.get(py) {
        Some(t) => PyErr::from_type(t.bind(py).clone(), (msg,)),
        // Not registered (cannot happen once the module is imported): the base class.
        None => SproutError::new_err(msg),
    })
}

/// The Python exception for an error of the simulator, chosen by its variant; the message is
/// the command line's.
pub fn sim_to_py(e: SimError) -> PyErr {
    Kind::of_sim(&e).err(chain_message(&e))
}

/// The Python exception for a trace error, chosen by its variant.
pub fn trace_to_py(e: TraceError) -> PyErr {
    Kind::of_trace(&e).err(chain_message(&e))
}

/// The Python exception for an error of the evaluation or the sweeps, by its variant
/// ([`Kind::of_eval`]); the message is the command line's.
pub fn eval_to_py(e: EvalError) -> PyErr {
    Kind::of_eval(&e).err(chain_message(&e))
}

/// A `SproutError` with this message (errors of no particular kind).
pub fn sprout_error(msg: impl Into<String>) -> PyErr {
    SproutError::new_err(msg.into())
}

/// A `BadParameterError` with this message (a bad option or an unknown name).
pub fn bad_parameter(msg: impl ToString) -> PyErr {
    BadParameterError::new_err(msg.to_string())
}

/// A class `name(SproutError, base)` of the `sprout` module.
fn subclass<'py>(
    m: &Bound<'py, PyModule>,
    name: &str,
    base: Bound<'py, PyType>,
    doc: &str,
) -> PyResult<Bound<'py, PyType>> {
    let py = m.py();
    let bases = PyTuple::new(py, [py.get_type::<SproutError>(), base])?;
    let attrs = PyDict::new(py);
    attrs.set_item("__module__", "sprout")?;
    attrs.set_item("__doc__", doc)?;
    let class = py
        .get_type::<PyType>()
        .call1((name, bases, attrs))?
        .cast_into::<PyType>()?;
    m.add(name, &class)?;
    Ok(class)
}

/// Adds the exception classes to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("SproutError", py.get_type::<SproutError>())?;
    m.add("BadTraceError", py.get_type::<BadTraceError>())?;
    m.add("BadParameterError", py.get_type::<BadParameterError>())?;
    let not_found = subclass(
        m,
        "SproutFileNotFoundError",
        py.get_type::<PyFileNotFoundError>(),
        "A file that does not exist (a trace, a traces folder, a log's folder). Also a \
         FileNotFoundError.",
    )?;
    let _ = FILE_NOT_FOUND.set(py, not_found.unbind());
    let os = subclass(
        m,
        "SproutOSError",
        py.get_type::<PyOSError>(),
        "Another failure to read or write a file (a folder given as a trace, a permission). \
         Also an OSError.",
    )?;
    let _ = OS_ERROR.set(py, os.unbind());
    Ok(())
}
