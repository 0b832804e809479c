//! Sweeps from Python (`sprout.sweep`): the spec is expanded and each run is run by the same
//! Rust code as `sprout sweep` (`sprout_eval::sweep`), so a row is the same text whichever
//! executor ran it. The runs cross process boundaries (Ray tasks) as JSON strings.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use pyo3::prelude::*;
use sprout_eval::sweep::{self, RunSpec, SweepOutput, SweepPlan};

use crate::errors::{bad_parameter, eval_to_py, sprout_error};

/// A sweep's runs, expanded from its spec (see ``sprout.sweep``).
#[pyclass(name = "SweepPlan", module = "sprout._sprout", frozen)]
pub struct PySweepPlan {
    plan: SweepPlan,
}

#[pymethods]
impl PySweepPlan {
    /// Reads and expands the TOML spec at ``path`` (paths in it relative to its folder).
    #[staticmethod]
    fn load(py: Python<'_>, path: PathBuf) -> PyResult<PySweepPlan> {
        py.detach(|| SweepPlan::load(&path))
            .map(|plan| PySweepPlan { plan })
            .map_err(eval_to_py)
    }

    /// Expands a spec given as TOML text (paths relative to ``base_dir``).
    #[staticmethod]
    #[pyo3(signature = (text, base_dir = PathBuf::from("."), name = "sweep".to_string()))]
    fn from_toml(
        py: Python<'_>,
        text: &str,
        base_dir: PathBuf,
        name: String,
    ) -> PyResult<PySweepPlan> {
        py.detach(|| SweepPlan::from_toml(text, &base_dir, &name))
            .map(|plan| PySweepPlan { plan })
            .map_err(eval_to_py)
    }

    /// Expands a spec given as JSON text of the TOML's shape (what ``sprout.sweep`` sends for
    /// a dict; paths relative to ``base_dir``).
    #[staticmethod]
    #[pyo3(signature = (text, base_dir = PathBuf::from("."), name = "sweep".to_string()))]
    fn from_json(
        py: Python<'_>,
        text: &str,
        base_dir: PathBuf,
        name: String,
    ) -> PyResult<PySweepPlan> {
        let value: serde_json::Value = serde_json::from_str(text).map_err(bad_parameter)?;
        py.detach(|| SweepPlan::from_json(&value, &base_dir, &name))
            .map(|plan| PySweepPlan { plan })
            .map_err(eval_to_py)
    }

    /// The runs as JSON strings (the argument of ``sweep_run``), in expansion order.
    fn runs(&self) -> PyResult<Vec<String>> {
        self.plan
            .runs
            .iter()
            .map(|r| serde_json::to_string(r).map_err(|e| sprout_error(e.to_string())))
            .collect()
    }

    /// The runs' ids, in expansion order.
    fn ids(&self) -> Vec<String> {
        self.plan.runs.iter().map(|r| r.id.clone()).collect()
    }

    /// The output's columns.
    #[getter]
    fn header(&self) -> Vec<String> {
        self.plan.header()
    }

    /// The output the spec names (``out``), resolved against its folder, or None.
    #[getter]
    fn out(&self) -> Option<PathBuf> {
        self.plan.out.clone()
    }

    /// The sweep's name (the spec file's stem).
    #[getter]
    fn name(&self) -> String {
        self.plan.name.clone()
    }

    fn __len__(&self) -> usize {
        self.plan.runs.len()
    }
}

/// A run from its JSON; the error says it is not one, and why.
fn parse_run(run_json: &str) -> Result<RunSpec, NotARun> {
    serde_json::from_str(run_json).map_err(NotARun)
}

/// A string that is not a sweep run's JSON.
#[derive(Debug)]
struct NotARun(serde_json::Error);

impl std::fmt::Display for NotARun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "not a sweep run: {}", self.0)
    }
}

impl std::error::Error for NotARun {}

/// Runs one run (a JSON string from ``SweepPlan.runs()``) with the GIL released and returns
/// its row as a CSV line (no newline). SproutError if the run fails.
#[pyfunction]
fn sweep_run(py: Python<'_>, run_json: &str) -> PyResult<String> {
    let run = parse_run(run_json).map_err(bad_parameter)?;
    py.detach(|| sweep::run_line(&run)).map_err(eval_to_py)
}

/// Runs several runs one after another with the GIL released (one Ray task's chunk):
/// ``[(run_id, line or None, error or None), ...]`` in order; a failing run does not stop
/// the others.
#[pyfunction]
fn sweep_run_many(
    py: Python<'_>,
    runs: Vec<String>,
) -> Vec<(String, Option<String>, Option<String>)> {
    py.detach(|| {
        runs.iter()
            .map(|j| match parse_run(j) {
                Err(e) => (String::new(), None, Some(e.to_string())),
                Ok(run) => match sweep::run_line(&run) {
                    Ok(line) => (run.id, Some(line), None),
                    Err(e) => (
                        run.id.clone(),
                        None,
                        Some(format!(
                            "{}: {}",
                            run.describe(),
                            sweep::sim_error_message(&e)
                        )),
                    ),
                },
            })
            .collect()
    })
}

/// The sweep's output file: rows appended one whole line at a time, resumable, sorted by run
/// id by ``finish()`` (the same file handling as ``sprout sweep``).
#[pyclass(name = "SweepOutput", module = "sprout._sprout")]
pub struct PySweepOutput {
    inner: Option<SweepOutput>,
}

impl PySweepOutput {
    fn get(&mut self) -> PyResult<&mut SweepOutput> {
        self.inner
            .as_mut()
            .ok_or_else(|| sprout_error("this sweep output is finished"))
    }
}

#[pymethods]
impl PySweepOutput {
    /// Opens (or creates) the CSV at ``path`` for a sweep with these columns: a partial last
    /// line (a crash) is dropped, the header checked, finished runs noted.
    #[new]
    fn new(py: Python<'_>, path: PathBuf, header: Vec<String>) -> PyResult<PySweepOutput> {
        py.detach(|| SweepOutput::open(Path::new(&path), &header))
            .map(|o| PySweepOutput { inner: Some(o) })
            .map_err(eval_to_py)
    }

    /// Run ids whose rows are in the file.
    fn done(&mut self) -> PyResult<HashSet<String>> {
        Ok(self.get()?.done().clone())
    }

    /// Appends one row (a CSV line from ``sweep_run``).
    fn append(&mut self, line: &str) -> PyResult<()> {
        self.get()?.append(line).map_err(eval_to_py)
    }

    /// Rewrites the file sorted by run id; returns the number of rows.
    fn finish(&mut self, py: Python<'_>) -> PyResult<usize> {
        let out = self
            .inner
            .take()
            .ok_or_else(|| sprout_error("this sweep output is finished"))?;
        py.detach(|| out.finish()).map_err(eval_to_py)
    }
}

/// Adds the sweep classes and functions to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PySweepPlan>()?;
    m.add_class::<PySweepOutput>()?;
    m.add_function(wrap_pyfunction!(sweep_run, m)?)?;
    m.add_function(wrap_pyfunction!(sweep_run_many, m)?)?;
    Ok(())
}
