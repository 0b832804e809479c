//! `sprout._sprout`: the Python extension module of the Sprout simulator.

use pyo3::prelude::*;

/// The compiled core of the `sprout` Python package.
#[pymodule]
fn _sprout(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
