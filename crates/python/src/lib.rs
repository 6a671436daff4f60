//! The `swaplab._core` extension module: the simulator, the workload parser and the host
//! worker, exposed to the Python lab. Every function takes and returns plain strings (TOML in,
//! JSON out) so that the Python side owns presentation and the Rust side owns the model.

// pyo3 0.22's create_exception! checks a `gil-refs` cfg this crate does not declare.
#![allow(unexpected_cfgs)]
// pyo3 0.22's #[pyfunction] expansion converts a PyResult's PyErr into PyErr; clippy since
// 1.8x reports that on every function's signature, where there is nothing to remove.
#![allow(clippy::useless_conversion)]

mod host;
mod trace;

use pyo3::create_exception;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use swaplab_core::config;

create_exception!(_core, ConfigError, PyValueError, "A workload file the simulator cannot accept.");

fn config_err(e: config::ConfigError) -> PyErr {
    ConfigError::new_err(e.to_string())
}

/// The swaplab version compiled into the extension.
#[pyfunction]
fn version() -> &'static str {
    swaplab_core::VERSION
}

/// Parse and validate a workload; returns the fully resolved configuration as JSON.
#[pyfunction]
#[pyo3(signature = (text, source, overrides=vec![]))]
fn resolve(text: &str, source: &str, overrides: Vec<String>) -> PyResult<String> {
    let r = config::load(text, source, &overrides).map_err(config_err)?;
    Ok(serde_json::to_string(&r).expect("a resolved config serializes"))
}

/// Run the simulator on a workload. `progress(virtual_ns, fraction)` is called about five
/// times a second of wall time; returning False stops the run (its partial result is marked
/// `"interrupted": true`). An exception raised by `progress` (or by a signal handler while it
/// is consulted) stops the run and propagates to the caller. Returns the result as JSON.
#[pyfunction]
#[pyo3(signature = (text, source, overrides=vec![], progress=None))]
fn simulate(py: Python<'_>, text: &str, source: &str, overrides: Vec<String>, progress: Option<PyObject>) -> PyResult<String> {
    let resolved = config::load(text, source, &overrides).map_err(config_err)?;
    let mut raised: Option<PyErr> = None;
    let result = py.allow_threads(|| {
        let mut report = |p: swaplab_core::Progress| -> bool {
            let Some(cb) = &progress else { return true };
            if raised.is_some() {
                return false;
            }
            Python::with_gil(|py| {
                let outcome = py.check_signals().and_then(|_| cb.call1(py, (p.virtual_ns, p.fraction))).and_then(|r| r.is_truthy(py));
                match outcome {
                    Ok(go_on) => go_on,
                    Err(e) => {
                        raised = Some(e);
                        false
                    }
                }
            })
        };
        swaplab_core::simulate(&resolved, &mut report)
    });
    if let Some(e) = raised {
        return Err(e);
    }
    Ok(result.to_json())
}

/// The speed benchmark (`swaplab bench`): returns its figures as JSON.
#[pyfunction]
#[pyo3(name = "bench", signature = (quick=false))]
fn run_bench(py: Python<'_>, quick: bool) -> String {
    py.allow_threads(|| serde_json::to_string(&swaplab_core::bench::run(quick)).expect("bench serializes"))
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("ConfigError", m.py().get_type_bound::<ConfigError>())?;
    m.add_function(wrap_pyfunction!(version, m)?)?;
    m.add_function(wrap_pyfunction!(resolve, m)?)?;
    m.add_function(wrap_pyfunction!(simulate, m)?)?;
    m.add_function(wrap_pyfunction!(run_bench, m)?)?;
    host::register(m)?;
    trace::register(m)?;
    Ok(())
}
