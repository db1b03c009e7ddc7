//! `vsim._vsim`: the simulator's library for Python (PyO3). The public API is
//! the pure-Python package around it (`python/vsim/__init__.py`): it turns
//! dicts into the JSON text these functions take and their JSON text back
//! into dicts, so the shapes are those of the command line's files.
//!
//! Errors are typed: `ConfigError` (the configuration cannot be read or
//! built: unknown keys, bad options, a missing file), `TraceError` (a trace
//! reader's input), `RunError` (the simulation failed, e.g. a bad trace line
//! met mid-run, named `file:line`), all `VsimError`s; the message is the
//! whole anyhow chain.

use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Instant;
use vsim::compare::{Ask, Plan};
use vsim::config::{Component, Config, ConfigFile};
use vsim::params::{parse_time, Params};
use vsim::report;
use vsim::workload::trace::{self, TraceSource};

// The exceptions live in module `vsim` (the package re-exports them there), so
// pickle finds them by their public names: `vsim.ConfigError` round-trips, and
// a Ray task's error is caught by `except vsim.ConfigError` on the driver.
create_exception!(vsim, VsimError, PyException, "Any error of the simulator.");
create_exception!(
    vsim,
    ConfigError,
    VsimError,
    "The configuration cannot be read or built."
);
create_exception!(vsim, TraceError, VsimError, "A trace cannot be read.");
create_exception!(vsim, RunError, VsimError, "The simulation failed.");
create_exception!(
    vsim,
    LostIOError,
    RunError,
    "A run lost I/O (bios that can never complete): args are the message and the results as JSON text."
);

/// The results of a run that lost I/O, as a `LostIOError` carrying them.
fn lost_io(what: String, json: String) -> PyErr {
    LostIOError::new_err((what, json))
}

/// Run `work` on a thread of its own, off the interpreter, and stop it on
/// Ctrl-C: every 100 ms the calling thread takes the GIL back and runs
/// Python's signal handlers (`check_signals`); when one raises
/// (KeyboardInterrupt), every run in the process is told to stop
/// (`vsim::engine::INTERRUPT`: each looks every ~1 ms of its own work), the
/// worker's end is awaited and the handler's exception raised. Without this a
/// long run ignores Ctrl-C until it ends: a thread inside Rust never returns
/// to the interpreter that would raise it.
fn interruptible<T: Send>(
    py: Python<'_>,
    work: impl FnOnce() -> PyResult<T> + Send,
) -> PyResult<T> {
    use std::sync::atomic::Ordering::Relaxed;
    use std::sync::mpsc::{channel, RecvTimeoutError};
    use vsim::engine::INTERRUPT;
    std::thread::scope(|s| {
        let (tx, mut rx) = channel();
        s.spawn(move || {
            // The receiver is gone only once the caller stopped waiting.
            let _ = tx.send(work());
        });
        loop {
            let (got, back) = py.detach(move || {
                let got = rx.recv_timeout(std::time::Duration::from_millis(100));
                (got, rx)
            });
            rx = back;
            match got {
                Ok(r) => return r,
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(RunError::new_err("the run's thread ended without a result"))
                }
                Err(RecvTimeoutError::Timeout) => {
                    if let Err(e) = py.check_signals() {
                        INTERRUPT.store(true, Relaxed);
                        let (_, back) = py.detach(move || (rx.recv(), rx));
                        drop(back);
                        INTERRUPT.store(false, Relaxed);
                        return Err(e);
                    }
                }
            }
        }
    })
}

fn config_err(e: anyhow::Error) -> PyErr {
    ConfigError::new_err(format!("{e:#}"))
}

/// The configuration file of `source`: a path (`kind` "path": TOML or
/// `.fio`) or JSON text of the TOML file's shape (`kind` "json", paths in it
/// relative to `base`).
fn config_file(source: &str, kind: &str, base: &str) -> anyhow::Result<ConfigFile> {
    match kind {
        "path" => ConfigFile::load(Path::new(source)),
        "json" => ConfigFile::from_json(source, Path::new(base), "config"),
        k => anyhow::bail!("internal: config kind '{k}' (path or json)"),
    }
}

/// Run one configuration; returns as JSON text fio's JSON (`output` "fio"),
/// json+ ("fio+") or the run's figures as a comparison row has them
/// ("figures": `vsim::compare::figures`, with the scheduler's `tunables`).
#[pyfunction]
#[pyo3(signature = (source, kind, base, device=None, scheduler=None, seed=None, runtime=None, output="fio"))]
#[allow(clippy::too_many_arguments)]
fn run(
    py: Python<'_>,
    source: &str,
    kind: &str,
    base: &str,
    device: Option<String>,
    scheduler: Option<String>,
    seed: Option<u64>,
    runtime: Option<String>,
    output: &str,
) -> PyResult<String> {
    if !matches!(output, "fio" | "fio+" | "figures") {
        return Err(ConfigError::new_err(format!(
            "output '{output}' (fio, fio+ or figures)"
        )));
    }
    let output = output.to_string();
    let (t0, started) = (Instant::now(), report::epoch_ms());
    let cfg = (|| -> anyhow::Result<Config> {
        let device = device.as_deref().map(Component::parse).transpose()?;
        let mut cfg = Config::from_file(config_file(source, kind, base)?, device)?;
        if let Some(s) = &scheduler {
            cfg.scheduler = Component::parse(s)?;
        }
        if let Some(s) = seed {
            cfg.seed = s;
        }
        if let Some(r) = &runtime {
            cfg.runtime = parse_time(r, 1_000_000_000)?;
        }
        Ok(cfg)
    })()
    .map_err(config_err)?;
    interruptible(py, move || {
        let sim = cfg.build().map_err(config_err)?;
        let rep = report::run_built(&cfg, sim, None, (t0, started))
            .map_err(|e| RunError::new_err(format!("{e:#}")))?;
        let b = &rep.outcome.balance;
        let lost = b.lost.then(|| {
            format!(
                "the run lost I/O: {} of {} bios can never complete ({} on {})",
                b.lost_bios, b.submitted, rep.scheduler, rep.device
            )
        });
        let out = match output.as_str() {
            "figures" => {
                let mut f = vsim::compare::figures(&rep);
                if let Some(m) = f.as_object_mut() {
                    let t: serde_json::Map<String, serde_json::Value> = rep
                        .tunables
                        .iter()
                        .map(|(k, v)| (k.to_string(), v.clone().into()))
                        .collect();
                    m.insert("tunables".into(), t.into());
                    m.insert("scheduler".into(), cfg.scheduler.spec().into());
                    m.insert("device".into(), cfg.device.spec().into());
                    m.insert("seed".into(), cfg.seed.into());
                    m.insert("wall_s".into(), rep.wall_s.into());
                }
                f.to_string()
            }
            o => rep.to_json_format(o == "fio+").to_string(),
        };
        match lost {
            Some(what) => Err(lost_io(what, out)),
            None => Ok(out),
        }
    })
}

/// Run one workload under several schedulers (in parallel); returns the
/// `summary.json` of `vsim compare --out` as text, with the table as `table`.
#[pyfunction]
#[pyo3(signature = (source, kind, base, schedulers, device=None, baseline=None, seed=None, runtime=None, block=None))]
#[allow(clippy::too_many_arguments)]
fn compare(
    py: Python<'_>,
    source: &str,
    kind: &str,
    base: &str,
    schedulers: Vec<String>,
    device: Option<String>,
    baseline: Option<String>,
    seed: Option<u64>,
    runtime: Option<String>,
    block: Option<String>,
) -> PyResult<String> {
    let ask = Ask {
        device,
        schedulers,
        baseline,
        runtime,
        seed,
        block,
        ..Ask::default()
    };
    let file = config_file(source, kind, base).map_err(config_err)?;
    let what = file.what.clone();
    let plan = Plan::new(file, &ask).map_err(config_err)?;
    interruptible(py, move || {
        let built = plan.build().map_err(config_err)?;
        let reps = plan
            .run_built(built, &|| {})
            .map_err(|e| RunError::new_err(format!("{e:#}")))?;
        let names: Vec<String> = plan
            .labels
            .iter()
            .map(|l| l.replace([':', ',', '='], "_"))
            .collect();
        let mut summary = vsim::compare::summary(
            &plan.labels,
            &names,
            &reps,
            plan.base,
            &plan.device,
            &what,
            plan.seed,
            plan.interval,
        );
        if let Some(m) = summary.as_object_mut() {
            m.insert(
                "table".into(),
                vsim::compare::table(&plan.labels, &reps, plan.base).into(),
            );
            m.insert("warnings".into(), plan.warnings.clone().into());
            m.insert("note".into(), plan.note.clone().into());
        }
        let lossy = vsim::compare::lossy(&plan.labels, &reps);
        if !lossy.is_empty() {
            return Err(lost_io(
                format!(
                    "lost I/O under {}: those runs are not ranked",
                    lossy.join(", ")
                ),
                summary.to_string(),
            ));
        }
        Ok(summary.to_string())
    })
}

/// The data records of a trace, one dict each, read as a replay reads
/// them (the same formats, options and errors); `stats` are its counters.
#[pyclass(module = "vsim._vsim")]
struct TraceReader {
    /// The source, and the error that ended it: raised again by every later
    /// call (the reader never carries on past a line it could not read).
    state: Mutex<(TraceSource, Option<String>)>,
    path: PathBuf,
}

impl TraceReader {
    fn state(&self) -> PyResult<std::sync::MutexGuard<'_, (TraceSource, Option<String>)>> {
        self.state
            .lock()
            .map_err(|_| TraceError::new_err("the reader failed earlier (poisoned)"))
    }
}

#[pymethods]
impl TraceReader {
    /// `options`: the `[[trace]]` options as (key, value) strings; `path`
    /// is the trace; `device_sectors` bounds the sectors (for `wrap`).
    #[new]
    #[pyo3(signature = (path, options, device_sectors=None))]
    fn new(
        path: &str,
        options: Vec<(String, String)>,
        device_sectors: Option<u64>,
    ) -> PyResult<Self> {
        let mut p = Params::new();
        for (k, v) in &options {
            if k == "path" {
                return Err(TraceError::new_err(
                    "give the trace as the first argument, not as option 'path'",
                ));
            }
            p.set(k, v);
        }
        p.set("path", path);
        let cap = device_sectors.unwrap_or(u64::MAX / 4);
        let src = trace::open_trace(&p, "trace", 0, cap, 1)
            .map_err(|e| TraceError::new_err(format!("{e:#}")))?;
        Ok(TraceReader {
            state: Mutex::new((src, None)),
            path: PathBuf::from(path),
        })
    }

    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        let mut state = self.state()?;
        let (src, failed) = &mut *state;
        if let Some(msg) = failed.as_ref() {
            return Err(TraceError::new_err(msg.clone()));
        }
        let next = match src.next_record() {
            Ok(n) => n,
            Err(e) => {
                let msg = format!("{e:#}");
                *failed = Some(msg.clone());
                return Err(TraceError::new_err(msg));
            }
        };
        let Some((tag, r)) = next else {
            return Ok(None);
        };
        let d = PyDict::new(py);
        d.set_item("line", tag)?;
        d.set_item("time_ns", r.time_ns)?;
        d.set_item("op", r.op.name())?;
        d.set_item("sync", r.sync)?;
        d.set_item("sector", r.sector)?;
        d.set_item("sectors", r.sectors)?;
        d.set_item("pid", r.pid)?;
        d.set_item("fua", r.attrs.fua)?;
        d.set_item("preflush", r.attrs.preflush)?;
        d.set_item("cpu", r.attrs.cpu)?;
        d.set_item("ioprio", r.attrs.ioprio)?;
        d.set_item("cgroup", r.attrs.cgroup)?;
        let file =
            (r.file.ino != 0 || r.file.gen != 0).then(|| format!("{}:{}", r.file.ino, r.file.gen));
        d.set_item("file", file)?;
        Ok(Some(d))
    }

    /// The reader's counters so far (lines, records, skipped, the format),
    /// as JSON text.
    fn stats_json(&self) -> PyResult<String> {
        Ok(serde_json::to_string(self.state()?.0.stats()).unwrap_or_else(|_| "{}".into()))
    }

    fn __repr__(&self) -> String {
        format!("TraceReader({:?})", self.path.display().to_string())
    }
}

/// The schedulers (`vsim list`).
#[pyfunction]
fn schedulers() -> Vec<&'static str> {
    vsim::sched::names()
}

/// A scheduler's tunables as JSON text: name, default, min, max, unit, help.
#[pyfunction]
fn tunables(name: &str) -> PyResult<String> {
    let v = vsim::sched::tunables_json(name).ok_or_else(|| {
        ConfigError::new_err(format!(
            "unknown scheduler '{name}' (known: {})",
            vsim::sched::names().join(", ")
        ))
    })?;
    Ok(v.to_string())
}

/// A comma-separated list of `NAME[:key=value,...]` specs, split as the
/// command line splits it (`vsim::config::split_specs`).
#[pyfunction]
fn split_specs(list: &str) -> PyResult<Vec<String>> {
    vsim::config::split_specs(list).map_err(|e| ConfigError::new_err(format!("{e:#}")))
}

fn claim_of(claim: &str) -> PyResult<vsim::verdict::Claim> {
    serde_json::from_str(claim).map_err(|e| ConfigError::new_err(format!("bad claim {claim}: {e}")))
}

/// The verdict rule (`vsim::verdict`): a claim (JSON) graded on our figure
/// `(value, low, high)`, or None where it is missing.
#[pyfunction]
#[pyo3(signature = (claim, ours=None))]
fn verdict_grade(claim: &str, ours: Option<(f64, f64, f64)>) -> PyResult<&'static str> {
    let c = claim_of(claim)?;
    let o = ours.map(|(v, l, h)| vsim::verdict::Ours::interval(v, l, h));
    Ok(vsim::verdict::grade(&c, o.as_ref()).as_str())
}

/// A choice claim (JSON) graded on our outcome.
#[pyfunction]
#[pyo3(signature = (claim, ours=None))]
fn verdict_grade_choice(claim: &str, ours: Option<&str>) -> PyResult<&'static str> {
    Ok(vsim::verdict::grade_choice(&claim_of(claim)?, ours).as_str())
}

/// The rule for a claim (JSON), in words.
#[pyfunction]
fn verdict_criterion(claim: &str) -> PyResult<String> {
    Ok(claim_of(claim)?.criterion())
}

/// A claim of parts graded from theirs; `most`: more than half must hold.
#[pyfunction]
#[pyo3(signature = (grades, most=false))]
fn verdict_combine(grades: Vec<String>, most: bool) -> PyResult<&'static str> {
    let parts = grades
        .iter()
        .map(|g| {
            vsim::verdict::Grade::parse(g)
                .ok_or_else(|| ConfigError::new_err(format!("unknown grade '{g}'")))
        })
        .collect::<PyResult<Vec<_>>>()?;
    let q = if most {
        vsim::verdict::Quantifier::Most
    } else {
        vsim::verdict::Quantifier::All
    };
    Ok(vsim::verdict::combine(&parts, q).as_str())
}

/// The rule for combining parts, in words.
#[pyfunction]
#[pyo3(signature = (most=false))]
fn verdict_combine_criterion(most: bool) -> &'static str {
    vsim::verdict::combine_criterion(if most {
        vsim::verdict::Quantifier::Most
    } else {
        vsim::verdict::Quantifier::All
    })
}

/// Every grade, in the words the reports print.
#[pyfunction]
fn verdict_grades() -> Vec<&'static str> {
    vsim::verdict::Grade::ALL
        .iter()
        .map(|g| g.as_str())
        .collect()
}

/// The simulator's version.
#[pyfunction]
fn version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

#[pymodule]
fn _vsim(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(compare, m)?)?;
    m.add_function(wrap_pyfunction!(version, m)?)?;
    m.add_function(wrap_pyfunction!(schedulers, m)?)?;
    m.add_function(wrap_pyfunction!(tunables, m)?)?;
    m.add_function(wrap_pyfunction!(split_specs, m)?)?;
    m.add_function(wrap_pyfunction!(verdict_grade, m)?)?;
    m.add_function(wrap_pyfunction!(verdict_grade_choice, m)?)?;
    m.add_function(wrap_pyfunction!(verdict_criterion, m)?)?;
    m.add_function(wrap_pyfunction!(verdict_combine, m)?)?;
    m.add_function(wrap_pyfunction!(verdict_combine_criterion, m)?)?;
    m.add_function(wrap_pyfunction!(verdict_grades, m)?)?;
    m.add_class::<TraceReader>()?;
    let py = m.py();
    m.add("VsimError", py.get_type::<VsimError>())?;
    m.add("ConfigError", py.get_type::<ConfigError>())?;
    m.add("TraceError", py.get_type::<TraceError>())?;
    m.add("RunError", py.get_type::<RunError>())?;
    m.add("LostIOError", py.get_type::<LostIOError>())?;
    Ok(())
}
