//! What the subcommands share: progress display, warnings, and the files and HTML report they write.

use crate::*;

/// Say the workload's warnings once, on stderr.
pub(crate) fn warn(w: &Workload) {
    for m in &w.warnings {
        eprintln!("vsim: warning: {m}");
    }
}

/// A progress display on stderr, only on a terminal, not with --quiet, and
/// only once the work has taken a second (short runs print nothing extra).
/// Never on stdout nor in any result file.
pub(crate) fn progress_bar(quiet: bool, len: Option<u64>, template: &str) -> ProgressBar {
    if quiet || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let pb = ProgressBar::with_draw_target(len, ProgressDrawTarget::hidden());
    pb.set_style(
        ProgressStyle::with_template(template).unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    pb.enable_steady_tick(Duration::from_millis(150));
    let shown = pb.clone();
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_secs(1));
        if !shown.is_finished() {
            shown.set_draw_target(ProgressDrawTarget::stderr());
        }
    });
    pb
}

/// Steps of the progress bar where the run's share done is known.
const PROGRESS_STEPS: u64 = 1000;

/// What `vsim run` shows while it works: the device being built (a full
/// precondition takes seconds), then the simulated time and I/Os, with a
/// bar, percentage and ETA where the share done is known (a runtime, jobs
/// with `number_ios` or `io_size`, traces read from files).
pub(crate) fn run_progress(pb: &ProgressBar) -> vsim::engine::ProgressFn {
    pb.set_message("building the device (preconditioning)");
    let pb = pb.clone();
    let mut bar = false;
    Box::new(move |p: &vsim::engine::Progress| {
        let t = p.now as f64 / 1e9;
        pb.set_message(if p.runtime > 0 {
            format!(
                "simulated {t:.3} of {:.3} s, {} I/Os",
                p.runtime as f64 / 1e9,
                p.bios
            )
        } else {
            format!("simulated {t:.3} s, {} I/Os", p.bios)
        });
        if let Some(f) = p.fraction {
            if !bar {
                bar = true;
                pb.set_length(PROGRESS_STEPS);
                if let Ok(s) = ProgressStyle::with_template(
                    "{bar:30} {percent:>3}% {msg} [{elapsed}, ETA {eta}]",
                ) {
                    pb.set_style(s);
                }
            }
            pb.set_position((f * PROGRESS_STEPS as f64) as u64);
        }
    })
}

pub(crate) fn write_summary(
    dir: &Path,
    summary: serde_json::Map<String, serde_json::Value>,
) -> Result<()> {
    write(
        &dir.join("summary.json"),
        &serde_json::to_string_pretty(&serde_json::Value::Object(summary))?,
    )?;
    eprintln!("results: {}", dir.display());
    Ok(())
}

/// The HTML report of `dir` (its data files are written): its path on
/// stderr, or the error (which says the results are kept).
pub(crate) fn render(dir: &Path) -> Result<()> {
    let html = report::render_html(dir)?;
    eprintln!("report: {}", html.display());
    Ok(())
}

/// Check, before any work, that file `p` can be written: its directory is
/// created and the file opened for writing (and removed again if this made
/// it), so that a bad output path fails at once, not after the simulation.
pub(crate) fn check_output(p: &Path) -> Result<()> {
    if let Some(d) = p.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(d).with_context(|| format!("creating {}", d.display()))?;
    }
    let existed = p.symlink_metadata().is_ok();
    std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(p)
        .with_context(|| format!("cannot write {}", p.display()))?;
    if !existed {
        let _ = std::fs::remove_file(p);
    }
    Ok(())
}

/// [`check_output`] for a directory of results (`--report DIR`, `--out DIR`).
pub(crate) fn check_output_dir(d: &Path) -> Result<()> {
    std::fs::create_dir_all(d).with_context(|| format!("creating {}", d.display()))?;
    check_output(&d.join("summary.json"))
}

pub(crate) fn write(p: &std::path::Path, s: &str) -> Result<()> {
    if let Some(d) = p.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(d).with_context(|| format!("creating {}", d.display()))?;
    }
    std::fs::write(p, s).with_context(|| format!("writing {}", p.display()))
}
