//! `sprout._sprout`: the Python extension module of the Sprout simulator (built by maturin;
//! the `sprout` package re-exports it). Each module registers its classes and functions.

use pyo3::prelude::*;

mod convert;
mod env;
mod errors;
mod evaluate;
mod link_options;
mod simulate;
mod sweep;
mod trace;
mod transport;

/// The compiled core of the `sprout` Python package: the simulator, traces, the evaluation,
/// the transport's sans-IO cores.
#[pymodule]
fn _sprout(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    errors::register(m)?;
    trace::register(m)?;
    simulate::register(m)?;
    evaluate::register(m)?;
    env::register(m)?;
    sweep::register(m)?;
    transport::register(m)?;
    Ok(())
}
