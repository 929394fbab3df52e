//! `phasecheck._native`: the Rust side of the Python package. Each function calls one function of
//! `phasecheck_api` and hands back the report as the JSON of `phasecheck lint --format json`
//! (one entry per file) plus its SARIF; `python/phasecheck/__init__.py` turns that into objects.
//! `mutate` hands back the JSON of `phasecheck_api::MutateReport`, `confirm_*` that of
//! `phasecheck_api`'s `ConfirmReport`. The check options travel as one [`CheckOptions`].
//! Bad input raises `phasecheck.InputError` (a `phasecheck.PhasecheckError`).

use clap::{Args, FromArgMatches};
use phasecheck_api::args::LintArgs;
use phasecheck_api::campaign::confirm::report::ConfirmReport;
use phasecheck_api::campaign::mutate::Operator;
use phasecheck_api::cmd::extract::PtxArgs;
use phasecheck_api::{
    Checked, ConfirmError, ConfirmOptions, FuzzOptions, MutateOptions, VerifyOptions,
};
use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use std::time::Duration;

create_exception!(
    _native,
    PhasecheckError,
    PyException,
    "Base class of the errors phasecheck raises."
);
create_exception!(
    _native,
    InputError,
    PhasecheckError,
    "Bad input: a protocol that does not load, a kernel the PTX front end cannot extract, an unreadable file or a bad option."
);

create_exception!(
    _native,
    NoGpuError,
    PhasecheckError,
    "No GPU can be used here: no CUDA driver, NVRTC or device (confirm runs on a GPU)."
);
create_exception!(
    _native,
    GpuError,
    PhasecheckError,
    "A GPU run failed: a kernel NVRTC rejects, a driver error."
);

fn input_error(e: impl std::fmt::Display) -> PyErr {
    InputError::new_err(e.to_string())
}

/// (lint JSON, SARIF) of a check, as strings.
fn rendered(checked: &Checked) -> (String, String) {
    (
        checked.to_json().to_string(),
        checked.to_sarif().to_string(),
    )
}

/// The options of a check (`verify_*`, `extract`, `confirm_*`): the keywords of the Python
/// functions, validated once here. The PTX ones (`kernel` to `launch`) matter for PTX input.
#[pyclass(frozen, module = "phasecheck._native")]
struct CheckOptions {
    inner: VerifyOptions,
}

#[pymethods]
impl CheckOptions {
    #[new]
    #[pyo3(signature = (*, params, max_states, max_time, exhaustive, kernel=None, block=None, cluster=None, args=vec![], assume=vec![], launch=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        params: Vec<(String, i64)>,
        max_states: u64,
        max_time: Option<f64>,
        exhaustive: bool,
        kernel: Option<String>,
        block: Option<[u32; 3]>,
        cluster: Option<u32>,
        args: Vec<(String, i64)>,
        assume: Vec<(String, i64)>,
        launch: Option<String>,
    ) -> PyResult<CheckOptions> {
        let max_time = match max_time {
            None => None,
            Some(t) if t.is_finite() && t > 0.0 => Some(Duration::from_secs_f64(t)),
            Some(t) => return Err(input_error(format!("max_time must be positive, not {t}"))),
        };
        if block.is_some_and(|b| b.contains(&0)) || cluster == Some(0) {
            return Err(input_error("block and cluster sizes must be at least 1"));
        }
        let inner = VerifyOptions {
            params,
            max_states,
            max_time,
            exhaustive,
            ptx: PtxArgs {
                kernel,
                block,
                cluster,
                args,
                assume,
                launch,
                ..PtxArgs::default()
            },
            ..VerifyOptions::default()
        };
        Ok(CheckOptions { inner })
    }
}

/// Check a `.phase` protocol given as text.
#[pyfunction]
fn verify_text(
    py: Python<'_>,
    name: &str,
    text: &str,
    options: &CheckOptions,
) -> PyResult<(String, String)> {
    py.detach(|| phasecheck_api::verify_text(name, text, &options.inner))
        .map(|c| rendered(&c))
        .map_err(input_error)
}

/// Check a `.phase` or `.ptx` file.
#[pyfunction]
fn verify_path(
    py: Python<'_>,
    path: std::path::PathBuf,
    options: &CheckOptions,
) -> PyResult<(String, String)> {
    py.detach(|| phasecheck_api::verify(&path, &options.inner))
        .map(|c| rendered(&c))
        .map_err(input_error)
}

/// Check a kernel given as PTX text.
#[pyfunction]
fn verify_ptx(
    py: Python<'_>,
    name: &str,
    ptx: &str,
    options: &CheckOptions,
) -> PyResult<(String, String)> {
    py.detach(|| phasecheck_api::verify_ptx(name, ptx, &options.inner))
        .map(|c| rendered(&c))
        .map_err(input_error)
}

/// The `.phase` protocol extracted from PTX text (the PTX options only).
#[pyfunction]
fn extract(name: &str, ptx: &str, options: &CheckOptions) -> PyResult<String> {
    phasecheck_api::extract(name, ptx, &options.inner.ptx)
        .map(|ex| ex.text)
        .map_err(input_error)
}

/// The JSON of a `ConfirmReport`, each finding with its `outcome_text` (the outcome and the
/// kernel it was seen on, as `phasecheck confirm` prints it).
fn confirm_json(report: Result<ConfirmReport, ConfirmError>) -> PyResult<String> {
    let report = report.map_err(|e| match e {
        ConfirmError::BadInput(_) => InputError::new_err(e.to_string()),
        ConfirmError::NoGpu(_) => NoGpuError::new_err(e.to_string()),
        ConfirmError::Gpu { .. } => GpuError::new_err(e.to_string()),
    })?;
    let mut v = serde_json::to_value(&report).map_err(input_error)?;
    if let Some(rows) = v["findings"].as_array_mut() {
        for (row, r) in rows.iter_mut().zip(&report.findings) {
            row["outcome_text"] = serde_json::Value::String(r.outcome_text());
        }
    }
    Ok(v.to_string())
}

fn confirm_options(
    options: &CheckOptions,
    seconds: f64,
    aim_seconds: f64,
    fuzz_seconds: f64,
) -> ConfirmOptions {
    let mut o = ConfirmOptions {
        params: options.inner.params.clone(),
        ptx: options.inner.ptx.clone(),
        ..ConfirmOptions::default()
    };
    o.settings.seconds = seconds;
    o.settings.aim_seconds = aim_seconds;
    o.settings.fuzz_seconds = fuzz_seconds;
    o
}

/// `confirm` of a `.phase` text on the GPU: the JSON of the report.
#[pyfunction]
fn confirm_text(
    py: Python<'_>,
    name: &str,
    text: &str,
    options: &CheckOptions,
    seconds: f64,
    aim_seconds: f64,
    fuzz_seconds: f64,
) -> PyResult<String> {
    let o = confirm_options(options, seconds, aim_seconds, fuzz_seconds);
    confirm_json(py.detach(|| phasecheck_api::confirm_text(name, text, &o)))
}

/// `confirm` of a `.phase` or `.ptx` file on the GPU: the JSON of the report.
#[pyfunction]
fn confirm_path(
    py: Python<'_>,
    path: std::path::PathBuf,
    options: &CheckOptions,
    seconds: f64,
    aim_seconds: f64,
    fuzz_seconds: f64,
) -> PyResult<String> {
    let o = confirm_options(options, seconds, aim_seconds, fuzz_seconds);
    confirm_json(py.detach(|| phasecheck_api::confirm(&path, &o)))
}

/// `phasecheck lint ARGV...`: the arguments as on the command line (paths and options).
#[pyfunction]
fn lint(py: Python<'_>, argv: Vec<String>) -> PyResult<(String, String)> {
    let command = LintArgs::augment_args(clap::Command::new("lint").no_binary_name(true));
    let matches = command
        .try_get_matches_from(&argv)
        .map_err(|e| input_error(e.render().to_string()))?;
    let args = LintArgs::from_arg_matches(&matches).map_err(|e| input_error(e.to_string()))?;
    py.detach(|| phasecheck_api::lint(&args))
        .map(|c| rendered(&c))
        .map_err(input_error)
}

/// The mutants of a `.phase` text (`phasecheck mutate`'s operators), each checked by the
/// checker when `check` (no GPU): the JSON of `phasecheck_api::MutateReport`, or of
/// `phasecheck_api::Mutants` without `check`.
#[pyfunction]
#[pyo3(signature = (name, text, params, operators, check, max_states, max_time))]
#[allow(clippy::too_many_arguments)]
fn mutate(
    py: Python<'_>,
    name: &str,
    text: &str,
    params: Vec<(String, i64)>,
    operators: Vec<String>,
    check: bool,
    max_states: u64,
    max_time: Option<f64>,
) -> PyResult<String> {
    let max_time = match max_time {
        None => None,
        Some(t) if t.is_finite() && t > 0.0 => Some(Duration::from_secs_f64(t)),
        Some(t) => return Err(input_error(format!("max_time must be positive, not {t}"))),
    };
    let operators = operators
        .iter()
        .map(|n| {
            Operator::parse(n).ok_or_else(|| {
                let names: Vec<&str> = Operator::ALL.iter().map(|o| o.name()).collect();
                input_error(format!(
                    "unknown operator {n:?} (operators: {})",
                    names.join(", ")
                ))
            })
        })
        .collect::<PyResult<Vec<_>>>()?;
    let o = MutateOptions {
        params,
        operators,
        max_states,
        max_time,
        ..MutateOptions::default()
    };
    if check {
        py.detach(|| phasecheck_api::mutate_text(name, text, &o))
            .map(|r| r.to_json().to_string())
            .map_err(input_error)
    } else {
        let m = phasecheck_api::mutants(name, text, &o).map_err(input_error)?;
        serde_json::to_string(&m).map_err(input_error)
    }
}

/// The CUDA stress kernel `phasecheck fuzz` launches for a `.phase` text (no GPU):
/// (source, kernel name, threads per block, cluster size).
#[pyfunction]
#[pyo3(signature = (name, text, params, proxy_window))]
fn fuzz_kernel(
    name: &str,
    text: &str,
    params: Vec<(String, i64)>,
    proxy_window: bool,
) -> PyResult<(String, String, u32, u32)> {
    let o = FuzzOptions {
        params,
        proxy_window,
        ..FuzzOptions::default()
    };
    phasecheck_api::fuzz_kernel(name, text, &o)
        .map(|k| (k.source, k.kernel_name, k.block, k.cluster))
        .map_err(input_error)
}

/// An instrumented copy of a real kernel (`phasecheck_api::RealKernel`): what
/// `phasecheck fuzz --app` swaps in, for a launcher in Python (`phasecheck.triton.fuzz`).
#[pyclass(frozen, module = "phasecheck._native")]
struct InstrumentedKernel {
    inner: phasecheck_api::RealKernel,
}

#[pymethods]
impl InstrumentedKernel {
    #[new]
    #[pyo3(signature = (ptx, *, kernel=None, delay_chance=48, delay_max_ns=2047, wait_bound_us=200_000, max_ptx_version=None))]
    fn new(
        ptx: &str,
        kernel: Option<&str>,
        delay_chance: u32,
        delay_max_ns: u32,
        wait_bound_us: u32,
        max_ptx_version: Option<&str>,
    ) -> PyResult<Self> {
        let max = max_ptx_version
            .map(str::parse::<phasecheck_api::instrument::PtxVersion>)
            .transpose()
            .map_err(input_error)?;
        let options = phasecheck_api::instrument::Options {
            delay_chance,
            delay_max_ns,
            wait_bound_us,
        };
        phasecheck_api::instrument_real_kernel(ptx, &options, kernel, max)
            .map(|inner| InstrumentedKernel { inner })
            .map_err(input_error)
    }

    /// The instrumented PTX.
    #[getter]
    fn ptx(&self) -> &str {
        &self.inner.instrumented.ptx
    }

    /// The kernel's `.entry` name.
    #[getter]
    fn kernel(&self) -> &str {
        &self.inner.kernel
    }

    /// The `.version` the PTX had when it was lowered (`None`: kept).
    #[getter]
    fn lowered_from(&self) -> Option<String> {
        self.inner.lowered_from.map(|v| v.to_string())
    }

    /// Instrumented points, and how many of them are bounded waits.
    #[getter]
    fn points(&self) -> usize {
        self.inner.instrumented.points.len()
    }

    #[getter]
    fn bounded_waits(&self) -> usize {
        self.inner.instrumented.bounded_waits()
    }

    /// The ids (in stuck records) of the bounded waits.
    #[getter]
    fn bounded_wait_ids(&self) -> Vec<u32> {
        use phasecheck_api::instrument::PointKind;
        let points = &self.inner.instrumented.points;
        points
            .iter()
            .filter(|p| p.kind == PointKind::BoundedWait)
            .map(|p| p.id)
            .collect()
    }

    /// `fuzz --app`'s JSON report of `events` (the injection library's report lines).
    #[pyo3(signature = (events, *, file, command=vec![], seconds=0.0))]
    fn report(
        &self,
        events: &str,
        file: String,
        command: Vec<String>,
        seconds: f64,
    ) -> PyResult<String> {
        let r = self
            .inner
            .report_from_events(file, command, events, seconds)
            .map_err(input_error)?;
        serde_json::to_string(&r).map_err(input_error)
    }
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("PhasecheckError", m.py().get_type::<PhasecheckError>())?;
    m.add("InputError", m.py().get_type::<InputError>())?;
    m.add("NoGpuError", m.py().get_type::<NoGpuError>())?;
    m.add("GpuError", m.py().get_type::<GpuError>())?;
    m.add_class::<CheckOptions>()?;
    m.add_class::<InstrumentedKernel>()?;
    {
        use phasecheck_api::real_kernel as rk;
        m.add("CFG_SYMBOL", rk::CFG_SYMBOL)?;
        m.add("STUCK_COUNT_SYMBOL", rk::STUCK_COUNT_SYMBOL)?;
        m.add("STUCK_SYMBOL", rk::STUCK_SYMBOL)?;
        m.add("RECORD_WORDS", rk::RECORD_WORDS)?;
        m.add("STUCK_CAPACITY", rk::STUCK_CAPACITY)?;
    }
    m.add_function(wrap_pyfunction!(verify_text, m)?)?;
    m.add_function(wrap_pyfunction!(verify_path, m)?)?;
    m.add_function(wrap_pyfunction!(verify_ptx, m)?)?;
    m.add_function(wrap_pyfunction!(extract, m)?)?;
    m.add_function(wrap_pyfunction!(confirm_text, m)?)?;
    m.add_function(wrap_pyfunction!(confirm_path, m)?)?;
    m.add_function(wrap_pyfunction!(mutate, m)?)?;
    m.add_function(wrap_pyfunction!(fuzz_kernel, m)?)?;
    m.add_function(wrap_pyfunction!(lint, m)?)?;
    Ok(())
}
