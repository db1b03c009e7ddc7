//! `vsim run`: one configuration, its table and files.

use crate::*;

#[derive(Args)]
pub(crate) struct RunArgs {
    /// The configuration: [device], [scheduler], [[job]] / [[trace]] / fio = "x.fio";
    /// or a workload file (TOML or .fio, as `compare --workload` takes) with --device.
    pub(crate) config: PathBuf,
    /// Use this device instead of the file's (needed when the file has none), e.g. `ssd:preset=mlc_16g`.
    #[arg(long)]
    pub(crate) device: Option<String>,
    /// Use this scheduler instead of the file's, e.g. `deadline` or `veloces:bundle_kb=256`.
    #[arg(long)]
    pub(crate) scheduler: Option<String>,
    /// Add a device with its own queue (a hybrid store's SSD), as `DEVICE[@SCHEDULER]`,
    /// e.g. `fixed:page_kb=4,read_us=25,write_us=500@noop`; repeatable (adds to the file's [[tier]]).
    #[arg(long = "tier", value_name = "DEVICE[@SCHED]")]
    pub(crate) tiers: Vec<String>,
    /// The stage placing bios on the devices, e.g. `vfs-ssd` (vsim list; replaces the file's [placement]).
    #[arg(long)]
    pub(crate) placement: Option<String>,
    /// Override the seed.
    #[arg(long)]
    pub(crate) seed: Option<u64>,
    /// Override the runtime (e.g. 5s, 500ms).
    #[arg(long)]
    pub(crate) runtime: Option<String>,
    /// Write fio's JSON here (fio's `--output-format=json` layout).
    #[arg(long)]
    pub(crate) json: Option<PathBuf>,
    /// With --json: fio's json+ (latency histograms as `bins`, for fio's tools).
    #[arg(long, requires = "json")]
    pub(crate) json_plus: bool,
    /// Write the jobs' time series (CSV) here, and the device's beside it
    /// (`x.csv` -> `x.device.csv`).
    #[arg(long)]
    pub(crate) csv: Option<PathBuf>,
    /// Write run.json (fio json+), run.csv, run.device.csv and summary.json
    /// into this directory, then the HTML report DIR/report.html (`vlab report`).
    #[arg(long, value_name = "DIR")]
    pub(crate) report: Option<PathBuf>,
    /// No progress display (it is shown on a terminal for runs over a second).
    #[arg(long, short)]
    pub(crate) quiet: bool,
}

pub(crate) fn cmd_run(a: RunArgs) -> Result<()> {
    let RunArgs {
        config: path,
        device,
        scheduler,
        tiers,
        placement,
        seed,
        runtime,
        json,
        json_plus,
        csv,
        report: report_dir,
        quiet,
    } = a;
    let device = device
        .map(|d| Component::parse(&d).context("--device"))
        .transpose()?;
    let mut cfg = Config::from_file(ConfigFile::load(&path)?, device)?;
    warn(&cfg.workload);
    if let Some(s) = scheduler {
        cfg.scheduler = Component::parse(&s)?;
    }
    apply_tiers(&mut cfg.tiers, &mut cfg.placement, tiers, placement)?;
    if let Some(s) = seed {
        cfg.seed = s;
    }
    if let Some(r) = runtime {
        cfg.runtime = parse_runtime_arg(&r)?;
    }
    // Where the results go, checked before the work.
    for p in json.iter() {
        check_output(p).context("--json")?;
    }
    for p in csv.iter() {
        check_output(p).context("--csv")?;
        check_output(&report::device_csv_path(p)).context("--csv")?;
    }
    for d in report_dir.iter() {
        check_output_dir(d).context("--report")?;
    }
    for name in cfg.fio_log_names() {
        check_output(Path::new(&name)).with_context(|| format!("a job's write_*_log: {name}"))?;
    }
    let pb = progress_bar(quiet, None, "{spinner} {msg} [{elapsed}]");
    let rep = report::run_with_progress(&cfg, Some(run_progress(&pb)));
    pb.finish_and_clear();
    let rep = rep?;
    println!("{} on {} (seed {})", rep.scheduler, rep.device, rep.seed);
    print!("{}", rep.table());
    if let Some(p) = json {
        write(
            &p,
            &serde_json::to_string_pretty(&rep.to_json_format(json_plus))?,
        )?;
        eprintln!(
            "fio JSON{}: {}",
            if json_plus { "+" } else { "" },
            p.display()
        );
    }
    let logs = rep.fio_logs();
    for (name, text) in &logs {
        write(Path::new(name), text)?;
    }
    if !logs.is_empty() {
        let names: Vec<&str> = logs.iter().map(|l| l.0.as_str()).collect();
        eprintln!("fio logs: {}", names.join(", "));
    }
    if let Some(p) = csv {
        write(&p, &rep.series_csv())?;
        eprintln!("time series: {}", p.display());
        let d = report::device_csv_path(&p);
        write(&d, &rep.device_series_csv())?;
        eprintln!("device time series: {}", d.display());
        let iv = rep
            .series_interval()
            .max(rep.outcome.device_series.interval());
        if iv > cfg.interval {
            eprintln!(
                "note: time-series interval widened to {} to bound memory",
                vsim::params::fmt_ns(iv)
            );
        }
    }
    if std::env::var_os("VSIM_PEAK_RSS").is_some() {
        println!("peak_rss_kib {}", bench::peak_rss_kib().unwrap_or(0));
    }
    if let Some(dir) = report_dir {
        write_run_files(&dir, "run", &rep)?;
        let mut summary = report::summary_header("vsim-run");
        for (k, v) in [
            ("config", json!(path.display().to_string())),
            ("device", json!(cfg.device.spec())),
            ("scheduler", json!(cfg.scheduler.spec())),
            ("seed", json!(rep.seed)),
            ("simulated_ns", json!(rep.outcome.elapsed)),
            ("interval_ns", json!(cfg.interval)),
            ("series_interval_ns", json!(rep.series_interval())),
            (
                "device_interval_ns",
                json!(rep.outcome.device_series.interval()),
            ),
            ("device_counters", rep.device_counters.clone()),
            ("files", vsim::compare::files_json("run")),
        ] {
            summary.insert(k.into(), v);
        }
        write_summary(&dir, summary)?;
        render(&dir)?;
    }
    let b = &rep.outcome.balance;
    if b.lost {
        return Err(vsim::engine::LostIo(format!(
            "the run lost I/O: {} of {} bios can never complete ({} on {}); its results are written but not valid",
            b.lost_bios, b.submitted, rep.scheduler, rep.device
        ))
        .into());
    }
    Ok(())
}

/// The data files of one run in `dir`: `NAME.json` (fio's json+),
/// `NAME.csv` (the jobs' time series), `NAME.device.csv` (the device's).
pub(crate) fn write_run_files(dir: &Path, name: &str, r: &RunReport) -> Result<()> {
    write(
        &dir.join(format!("{name}.json")),
        &serde_json::to_string_pretty(&r.to_json_format(true))?,
    )?;
    write(&dir.join(format!("{name}.csv")), &r.series_csv())?;
    write(
        &dir.join(format!("{name}.device.csv")),
        &r.device_series_csv(),
    )
}

/// `--tier` (added to the file's tiers) and `--placement` (replacing its own).
pub(crate) fn apply_tiers(
    tiers: &mut Vec<Tier>,
    placement: &mut Option<Component>,
    cli_tiers: Vec<String>,
    cli_placement: Option<String>,
) -> Result<()> {
    for t in cli_tiers {
        tiers.push(Tier::parse(&t).context("--tier")?);
    }
    if let Some(p) = cli_placement {
        *placement = Some(Component::parse(&p).context("--placement")?);
    }
    Ok(())
}
