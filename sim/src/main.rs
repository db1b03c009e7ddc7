//! `vsim`: the command line of the simulator.

use anyhow::{bail, Context, Result};
use clap::{Args, Parser, Subcommand};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde_json::json;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::Duration;
use vsim::config::{Component, Config, ConfigFile, Tier, Workload};
use vsim::params::parse_time;
use vsim::report::{self, RunReport};
use vsim::{bench, device, sched, validate};

#[derive(Parser)]
#[command(
    name = "vsim",
    version,
    about = "Deterministic, trace-driven simulator of the Linux block layer, I/O schedulers and flash/disk devices",
    long_about = "vsim answers \"which I/O scheduler for this workload and this device?\" in seconds.\n\
A run is: workload (fio-like jobs or a trace) -> block layer (plugging, merging, nr_requests) -> \
scheduler (noop, deadline, cfq, veloces, kyber) -> device model (ssd, cheapflash, hdd, fixed).\n\n\
Start with:\n  vsim list                                   # schedulers, devices: every option, default, range\n  \
vsim run sim/examples/ssd-mixed.toml        # one configuration, fio-style table\n  \
vsim compare --device ssd:preset=mqsim --workload sim/examples/mix70.toml --schedulers noop,deadline,cfq,veloces\n  \
vsim validate                               # the models against closed forms and published figures\n\n\
Same seed, same inputs: same results, byte for byte."
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Args)]
struct RunArgs {
    /// The configuration: [device], [scheduler], [[job]] / [[trace]] / fio = "x.fio";
    /// or a workload file (TOML or .fio, as `compare --workload` takes) with --device.
    config: PathBuf,
    /// Use this device instead of the file's (needed when the file has none), e.g. `ssd:preset=mqsim`.
    #[arg(long)]
    device: Option<String>,
    /// Use this scheduler instead of the file's, e.g. `deadline` or `veloces:bundle_kb=256`.
    #[arg(long)]
    scheduler: Option<String>,
    /// Add a device with its own queue (a hybrid store's SSD), as `DEVICE[@SCHEDULER]`,
    /// e.g. `fixed:page_kb=4,read_us=25,write_us=500@noop`; repeatable (adds to the file's [[tier]]).
    #[arg(long = "tier", value_name = "DEVICE[@SCHED]")]
    tiers: Vec<String>,
    /// The stage placing bios on the devices, e.g. `vfs-ssd` (vsim list; replaces the file's [placement]).
    #[arg(long)]
    placement: Option<String>,
    /// Override the seed.
    #[arg(long)]
    seed: Option<u64>,
    /// Override the runtime (e.g. 5s, 500ms).
    #[arg(long)]
    runtime: Option<String>,
    /// Write fio's JSON here (fio's `--output-format=json` layout).
    #[arg(long)]
    json: Option<PathBuf>,
    /// With --json: fio's json+ (latency histograms as `bins`, for fio's tools).
    #[arg(long, requires = "json")]
    json_plus: bool,
    /// Write the jobs' time series (CSV) here, and the device's beside it
    /// (`x.csv` -> `x.device.csv`).
    #[arg(long)]
    csv: Option<PathBuf>,
    /// Write run.json (fio json+), run.csv, run.device.csv and summary.json
    /// into this directory, then the HTML report DIR/report.html (`vlab report`).
    #[arg(long, value_name = "DIR")]
    report: Option<PathBuf>,
    /// No progress display (it is shown on a terminal for runs over a second).
    #[arg(long, short)]
    quiet: bool,
}

#[derive(Args)]
struct CompareArgs {
    /// Device model and options, e.g. `ssd:preset=mqsim,op=0.07` or `hdd:preset=hp_c2247a`
    /// (default: the workload file's [device]).
    #[arg(long)]
    device: Option<String>,
    /// Workload: a .fio job file, or a TOML file with [[job]] / [[trace]] tables
    /// (a `vsim run` configuration works too: its [scheduler] is replaced by --schedulers).
    #[arg(long)]
    workload: PathBuf,
    /// Comma-separated schedulers; options after a colon, comma-separated too:
    /// `noop,veloces:bundle_kb=256,read_expire=10` (an item with `=` and no `:` is an
    /// option of the scheduler before it; default: every scheduler of `vsim list`).
    #[arg(long, conflicts_with = "scheduler")]
    schedulers: Option<String>,
    /// One scheduler spec, `NAME[:key=value,...]`; repeat for each (instead of --schedulers).
    #[arg(long)]
    scheduler: Vec<String>,
    /// Ratios are against this scheduler (default: the first).
    #[arg(long)]
    baseline: Option<String>,
    /// Stop at this simulated time (default: the workload's, else when jobs finish).
    #[arg(long)]
    runtime: Option<String>,
    /// Seed (default: the workload file's, else 1).
    #[arg(long)]
    seed: Option<u64>,
    /// Block-layer options: nr_requests, max_sectors_kb, plug, queue_depth
    /// (default: the workload file's [block]).
    #[arg(long)]
    block: Option<String>,
    /// Add a device with its own queue (a hybrid store's SSD), as `DEVICE[@SCHEDULER]`,
    /// e.g. `fixed:page_kb=4,read_us=25,write_us=500@noop`; repeatable (adds to the file's [[tier]]).
    #[arg(long = "tier", value_name = "DEVICE[@SCHED]")]
    tiers: Vec<String>,
    /// The stage placing bios on the devices, e.g. `vfs-ssd` (vsim list; replaces the file's [placement]).
    #[arg(long)]
    placement: Option<String>,
    /// Directory for, per scheduler, fio's json+ (NAME.json) and the jobs' and
    /// device's time series (NAME.csv, NAME.device.csv), plus summary.json;
    /// then the HTML report DIR/report.html (`vlab report`).
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// With --out: fio's json+ (now always written; accepted for compatibility).
    #[arg(long, requires = "out")]
    json_plus: bool,
    /// With --out: write the data files only, not the HTML report.
    #[arg(long)]
    no_report: bool,
    /// No progress display (it is shown on a terminal for runs over a second).
    #[arg(long, short)]
    quiet: bool,
}

#[derive(Args)]
struct ReproArgs {
    /// Which (vsim list): bid.
    name: String,
    /// Smaller traces, one seed (a check that it all runs).
    #[arg(long)]
    quick: bool,
    /// Generated traces per workload (default 5; --quick: 1).
    #[arg(long)]
    seeds: Option<u32>,
    /// Only these workloads, comma-separated.
    #[arg(long)]
    workloads: Option<String>,
    /// Multiply the generated traces' sizes (default 1; --quick: 0.25).
    #[arg(long)]
    scale: Option<f64>,
    /// Multiply the generated traces' arrival rates (offered load; default 1).
    #[arg(long)]
    load: Option<f64>,
    /// Write summary.json and report.md here, then DIR/report.html (default build/repro/NAME).
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// With the data files, no HTML report.
    #[arg(long)]
    no_report: bool,
}

#[derive(Args)]
struct ConformanceArgs {
    /// Directory of scenarios.
    dir: PathBuf,
    /// Model the kernel's jiffies at this HZ (Debian: 250); 0 = exact nanoseconds.
    #[arg(long, default_value_t = 0)]
    hz: u64,
    /// Only scenarios whose file name contains this.
    #[arg(long)]
    only: Option<String>,
    /// Write every issue log as JSON here.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Also check the kernel module's issue logs ({file: [{t_us, ids}]}, from `vlab conformance`).
    #[arg(long)]
    kernel_log: Option<PathBuf>,
    /// Name of the kernel for the report.
    #[arg(long, default_value = "kernel")]
    kernel_name: String,
    /// Timing tolerance (unscaled us) for the kernel's issued_by / not_before checks.
    #[arg(long, default_value_t = 500.0)]
    slack_us: f64,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run one configuration file (TOML; see sim/examples/) and print its table.
    Run(RunArgs),
    /// Run one workload on one device under several schedulers (in parallel) and compare.
    Compare(CompareArgs),
    /// Reproduce a seed paper's simulated experiment: its figures beside ours, a verdict per claim
    /// (`bid`: bid-bulk-io-dispatch.txt's BID-HDD and BID-Hybrid).
    Repro(ReproArgs),
    /// Simulate a workload generator's trace and print it as blkparse text
    /// (`mapreduce:workload=terasort,maps=8`: the MapReduce-like traces of the BID reproduction;
    /// `tpcc:requests=10000`: the TPC-C-like streams of the QoS reproduction, SPC format).
    Gen {
        /// Generator and options: `mapreduce:workload=NAME[,maps=,reduces=,slots=,scale=,load=,span_gb=,seed=]`
        /// or `tpcc[:requests=,streams=,span_mb=,reads=,page_kb=,ro_share=,append_share=,seed=]`.
        spec: String,
        /// Write the trace here instead of stdout.
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Check the models against closed forms, published parameters and the papers' worked examples.
    Validate {
        /// Fewer samples (faster, wider tolerances where noted).
        #[arg(long)]
        quick: bool,
        /// Only this group (see `vsim list`).
        #[arg(long)]
        group: Option<String>,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
        /// Write validate.json (the cases, as --json prints them) and summary.json
        /// into this directory, then the HTML report DIR/report.html (`vlab report`).
        #[arg(long, value_name = "DIR")]
        report: Option<PathBuf>,
    },
    /// Simulator speed: requests per second on one core, and memory for a long trace.
    Bench {
        /// Requests per speed case.
        #[arg(long, default_value_t = 2_000_000)]
        requests: u64,
        /// Trace length for the memory case (0 to skip).
        #[arg(long, default_value_t = 10_000_000)]
        trace_requests: u64,
    },
    /// Run the conformance scenarios (conformance/*.toml) on the veloces model.
    Conformance(ConformanceArgs),
    /// A parameter sweep on Ray: the Python package's (sim/py, docs/python.md), run as
    /// `$VSIM_PYTHON -m vsim.sweep ARGS` (./vsim sets VSIM_PYTHON to build/venv's Python).
    #[command(disable_help_flag = true)]
    Sweep {
        /// The arguments of `python -m vsim.sweep` (`vsim sweep --help` lists them).
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Ray Tune over a scheduler's tunables: the Python package's (sim/py, docs/python.md), run as
    /// `$VSIM_PYTHON -m vsim.tune ARGS` (./vsim sets VSIM_PYTHON to build/venv's Python).
    #[command(disable_help_flag = true)]
    Tune {
        /// The arguments of `python -m vsim.tune` (`vsim tune --help` lists them).
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// List schedulers and device models with every tunable/option (default, range, presets), and validation groups.
    List {
        /// Print the schedulers' tunables (declared default, range, unit, help) and the devices' options as JSON, for programs (the lab reads veloces's tunables from it).
        #[arg(long)]
        json: bool,
    },
    /// Build a device model and print, as JSON, what a served device shows the kernel (capacity, queue depth, erase block, discard): `vlab` checks its `vsim:` device specs with it before booting.
    Device {
        /// Device spec, e.g. cheapflash:preset=sd_a1,size=1g
        spec: String,
        #[arg(long, default_value_t = 1)]
        seed: u64,
    },
}

fn main() {
    // A reader that stops early (`vsim list | head`) ends vsim quietly, as it ends
    // other command-line tools, instead of making println! panic on EPIPE.
    #[cfg(unix)]
    // SAFETY: restoring a signal's default disposition before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let cli = Cli::parse();
    let r = match cli.cmd {
        Cmd::Run(a) => cmd_run(a),
        Cmd::Compare(a) => cmd_compare(a),
        Cmd::Validate {
            quick,
            group,
            json,
            report,
        } => cmd_validate(quick, group, json, report),
        Cmd::Repro(a) => cmd_repro(a),
        Cmd::Gen { spec, out } => cmd_gen(&spec, out),
        Cmd::Bench {
            requests,
            trace_requests,
        } => bench::run(requests, trace_requests),
        Cmd::Conformance(a) => cmd_conformance(a),
        Cmd::List { json } => cmd_list(json),
        Cmd::Sweep { args } => cmd_python("sweep", &args),
        Cmd::Tune { args } => cmd_python("tune", &args),
        Cmd::Device { spec, seed } => cmd_device(&spec, seed),
    };
    if let Err(e) = r {
        eprintln!("vsim: error: {e:#}");
        std::process::exit(1);
    }
}

/// `vsim sweep|tune`: the Python package's module of that name, run by the
/// interpreter VSIM_PYTHON names (the one `vsim` is installed into); exits
/// with its status.
fn cmd_python(module: &str, args: &[String]) -> Result<()> {
    let python = std::env::var_os("VSIM_PYTHON")
        .filter(|p| !p.is_empty())
        .with_context(|| {
            format!(
                "vsim {module} is the Python package's (sim/py): run it as ./vsim {module} (after make deps), or set VSIM_PYTHON to a Python with the package installed"
            )
        })?;
    let status = std::process::Command::new(&python)
        .args(["-m", &format!("vsim.{module}")])
        .args(args)
        .status()
        .with_context(|| format!("running {} -m vsim.{module}", python.to_string_lossy()))?;
    std::process::exit(status.code().unwrap_or(1));
}

fn cmd_device(spec: &str, seed: u64) -> Result<()> {
    let s = vsim::serve::Served::new(&vsim::serve::Options {
        device: spec.to_string(),
        dilation: 1.0,
        seed,
        backing: None,
    })?;
    println!("{}", serde_json::to_string_pretty(&s.info_json())?);
    Ok(())
}

/// Say the workload's warnings once, on stderr.
fn warn(w: &Workload) {
    for m in &w.warnings {
        eprintln!("vsim: warning: {m}");
    }
}

/// A progress display on stderr, only on a terminal, not with --quiet, and
/// only once the work has taken a second (short runs print nothing extra).
/// Never on stdout nor in any result file.
fn progress_bar(quiet: bool, len: Option<u64>, template: &str) -> ProgressBar {
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

/// What `vsim run` shows while it works: the device being built (a full
/// precondition takes seconds), then the simulated time and I/Os.
fn run_progress(pb: &ProgressBar) -> vsim::engine::ProgressFn {
    pb.set_message("building the device (preconditioning)");
    let pb = pb.clone();
    Box::new(move |p: &vsim::engine::Progress| {
        let t = p.now as f64 / 1e9;
        pb.set_message(if p.runtime > 0 {
            let rt = p.runtime as f64 / 1e9;
            format!(
                "simulated {t:.3} of {rt:.3} s ({:.0} %), {} I/Os",
                t / rt * 100.0,
                p.bios
            )
        } else {
            format!("simulated {t:.3} s, {} I/Os", p.bios)
        });
    })
}

fn cmd_run(a: RunArgs) -> Result<()> {
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
        cfg.runtime = parse_time(&r, 1_000_000_000).context("--runtime")?;
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
    Ok(())
}

/// The data files of one run in `dir`: `NAME.json` (fio's json+),
/// `NAME.csv` (the jobs' time series), `NAME.device.csv` (the device's).
fn write_run_files(dir: &Path, name: &str, r: &RunReport) -> Result<()> {
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

fn write_summary(dir: &Path, summary: serde_json::Map<String, serde_json::Value>) -> Result<()> {
    write(
        &dir.join("summary.json"),
        &serde_json::to_string_pretty(&serde_json::Value::Object(summary))?,
    )?;
    eprintln!("results: {}", dir.display());
    Ok(())
}

/// The HTML report of `dir` (its data files are written): its path on
/// stderr, or the error (which says the results are kept).
fn render(dir: &Path) -> Result<()> {
    let html = report::render_html(dir)?;
    eprintln!("report: {}", html.display());
    Ok(())
}

fn write(p: &std::path::Path, s: &str) -> Result<()> {
    if let Some(d) = p.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(d).with_context(|| format!("creating {}", d.display()))?;
    }
    std::fs::write(p, s).with_context(|| format!("writing {}", p.display()))
}

fn cmd_repro(a: ReproArgs) -> Result<()> {
    let ReproArgs {
        name,
        quick,
        seeds,
        workloads,
        scale,
        load,
        out,
        no_report,
    } = a;
    let name = name.as_str();
    for (k, v) in [("--scale", scale), ("--load", load)] {
        if let Some(s) = v {
            if !(s.is_finite() && s > 0.0 && s <= 1000.0) {
                bail!("{k} {s}: give a number in (0, 1000]");
            }
        }
    }
    if seeds == Some(0) {
        bail!("--seeds 0: give at least 1");
    }
    let opts = vsim::repro::Options {
        quick,
        seeds: seeds.unwrap_or(0),
        workloads: workloads
            .map(|w| {
                w.split(',')
                    .map(|x| x.trim().to_string())
                    .filter(|x| !x.is_empty())
                    .collect()
            })
            .unwrap_or_default(),
        scale: scale.unwrap_or(0.0),
        load: load.unwrap_or(0.0),
    };
    let r = vsim::repro::run(name, &opts)?;
    print!("{}", r.markdown);
    let dir = out.unwrap_or_else(|| PathBuf::from("build/repro").join(name));
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    write(&dir.join("report.md"), &r.markdown)?;
    let serde_json::Value::Object(m) = r.summary else {
        bail!("reproduction '{name}' returned no summary object");
    };
    write_summary(&dir, m)?;
    if !no_report {
        render(&dir)?;
    }
    Ok(())
}

fn cmd_gen(spec: &str, out: Option<PathBuf>) -> Result<()> {
    use vsim::workload::{mapreduce, tpcc};
    let c = Component::parse(spec)?;
    let text = match c.name.as_str() {
        "mapreduce" => {
            let s = mapreduce::Spec::from_params(&c.params, u64::MAX, 1)?;
            let recs = mapreduce::generate(&s)?;
            eprintln!("{}: {}", s.workload, mapreduce::summary(&recs));
            mapreduce::blkparse_text(&recs)
        }
        "tpcc" => {
            let s = tpcc::Spec::from_params(&c.params, 1)?;
            let recs = tpcc::generate(&s);
            eprintln!("tpcc: {}", tpcc::summary(&recs));
            tpcc::spc_text(&recs, None)
        }
        other => bail!("unknown generator '{other}' (known: mapreduce, tpcc)"),
    };
    match out {
        Some(p) => write(&p, &text),
        None => {
            use std::io::Write;
            std::io::stdout()
                .write_all(text.as_bytes())
                .context("writing the trace to stdout")
        }
    }
}

/// `--tier` (added to the file's tiers) and `--placement` (replacing its own).
fn apply_tiers(
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

fn cmd_compare(a: CompareArgs) -> Result<()> {
    let CompareArgs {
        device,
        workload,
        schedulers,
        scheduler,
        baseline,
        runtime,
        seed,
        block,
        tiers,
        placement,
        out,
        json_plus: _,
        no_report,
        quiet,
    } = a;
    let ask = &vsim::compare::Ask {
        device,
        schedulers: scheduler_list(schedulers, scheduler)?,
        baseline,
        runtime,
        seed,
        block,
        tiers,
        placement,
    };
    let plan = vsim::compare::Plan::new(ConfigFile::load(&workload)?, ask)?;
    if let Some(n) = &plan.note {
        eprintln!("vsim: note: {n}");
    }
    for w in &plan.warnings {
        eprintln!("vsim: warning: {w}");
    }
    let pb = progress_bar(
        quiet,
        Some(plan.configs.len() as u64),
        "{bar:30} {pos}/{len} schedulers simulated ({elapsed})",
    );
    let reps = plan.run(&|| pb.inc(1));
    pb.finish_and_clear();
    let reps = reps?;
    let (labels, base_idx, device, seed, interval) = (
        &plan.labels,
        plan.base,
        &plan.device,
        plan.seed,
        plan.interval,
    );
    println!(
        "device {device}; workload {}; seed {seed}; simulated {:.3} s",
        workload.display(),
        reps[0].outcome.elapsed as f64 / 1e9
    );
    print!("{}", vsim::compare::table(labels, &reps, base_idx));
    if let Some(dir) = out {
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        let names: Vec<String> = labels
            .iter()
            .map(|l| l.replace([':', ',', '='], "_"))
            .collect();
        for (name, r) in names.iter().zip(&reps) {
            write_run_files(&dir, name, r)?;
        }
        let summary = vsim::compare::summary(
            labels,
            &names,
            &reps,
            base_idx,
            device,
            &workload.display().to_string(),
            seed,
            interval,
        );
        let serde_json::Value::Object(summary) = summary else {
            bail!("internal: the compare summary is not a JSON object");
        };
        write_summary(&dir, summary)?;
        if !no_report {
            render(&dir)?;
        }
    }
    Ok(())
}

fn cmd_validate(
    quick: bool,
    group: Option<String>,
    json: bool,
    report_dir: Option<PathBuf>,
) -> Result<()> {
    if let Some(g) = &group {
        if !validate::GROUPS.iter().any(|x| x.0 == g) {
            let names: Vec<&str> = validate::GROUPS.iter().map(|x| x.0).collect();
            bail!(
                "unknown validation group '{g}' (known: {})",
                names.join(", ")
            );
        }
    }
    let cases = validate::run_all(quick, group.as_deref());
    if json {
        println!("{}", serde_json::to_string_pretty(&cases)?);
    } else {
        println!(
            "{:<9} {:<64} {:>22} {:>22} {:>10}  verdict",
            "group", "case", "expected", "got", "tolerance"
        );
        for c in &cases {
            println!(
                "{:<9} {:<64} {:>22} {:>22} {:>10}  {}",
                c.group,
                c.name,
                c.expected,
                c.got,
                c.tolerance,
                if c.pass { "PASS" } else { "FAIL" }
            );
        }
    }
    let failed = cases.iter().filter(|c| !c.pass).count();
    println!(
        "{} cases, {} passed, {} failed",
        cases.len(),
        cases.len() - failed,
        failed
    );
    // The report is written whatever the verdict (failures are what it is
    // read for); the exit status says both.
    let rendered = match report_dir {
        Some(dir) => {
            write(
                &dir.join("validate.json"),
                &serde_json::to_string_pretty(&cases)?,
            )?;
            let mut summary = report::summary_header("vsim-validate");
            for (k, v) in [
                ("quick", json!(quick)),
                ("group", json!(group)),
                ("cases", json!(cases.len())),
                ("failed", json!(failed)),
                ("files", json!({"json": "validate.json"})),
            ] {
                summary.insert(k.into(), v);
            }
            write_summary(&dir, summary)?;
            render(&dir)
        }
        None => Ok(()),
    };
    if failed > 0 {
        if let Err(e) = rendered {
            eprintln!("vsim: error: {e:#}");
        }
        bail!("{failed} validation case(s) failed");
    }
    rendered
}

fn cmd_conformance(a: ConformanceArgs) -> Result<()> {
    let ConformanceArgs {
        dir,
        hz,
        only,
        json,
        kernel_log,
        kernel_name,
        slack_us,
    } = a;
    let (dir, kernel_name) = (dir.as_path(), kernel_name.as_str());
    use vsim::conformance as c;
    let scenarios = c::load_dir(dir)?;
    let kernel: Option<std::collections::BTreeMap<String, Vec<c::Issued>>> = match &kernel_log {
        Some(p) => {
            let text =
                std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?;
            Some(
                serde_json::from_str(&text)
                    .with_context(|| format!("{}: not a kernel issue log", p.display()))?,
            )
        }
        None => None,
    };
    let (mut failed_model, mut failed_kernel, mut n) = (0, 0, 0);
    let mut logs = serde_json::Map::new();
    for s in &scenarios {
        let file = s
            .path
            .file_name()
            .map(|f| f.to_string_lossy().to_string())
            .unwrap_or_default();
        if only.as_ref().is_some_and(|o| !file.contains(o.as_str())) {
            continue;
        }
        n += 1;
        let log = c::run_model(s, hz)
            .with_context(|| format!("{}: running the model", s.path.display()))?;
        let errs = c::check(s, &log, 0.0);
        let kerr = kernel.as_ref().map(|k| match k.get(&file) {
            Some(klog) => (c::check(s, klog, slack_us), klog.clone()),
            None => (vec![format!("no kernel log for {file}")], Vec::new()),
        });
        let verdict = |e: &Vec<String>| if e.is_empty() { "PASS" } else { "FAIL" };
        match &kerr {
            Some((ke, _)) => println!(
                "model {} {} {}  {:<44} {}",
                verdict(&errs),
                kernel_name,
                verdict(ke),
                file,
                s.rule
            ),
            None => println!("{:<4} {:<44} {}", verdict(&errs), file, s.rule),
        }
        if !errs.is_empty() {
            failed_model += 1;
            for e in &errs {
                println!("    model: {e}");
            }
        }
        if let Some((ke, _)) = &kerr {
            if !ke.is_empty() {
                failed_kernel += 1;
                for e in ke {
                    println!("    {kernel_name}: {e}");
                }
            }
        }
        let kfail = kerr.as_ref().is_some_and(|(ke, _)| !ke.is_empty());
        if !errs.is_empty() || kfail {
            let klog = kerr.as_ref().map(|(_, l)| l.as_slice());
            print!("{}", c::side_by_side(s, &log, klog, kernel_name));
        }
        logs.insert(file, serde_json::to_value(&log)?);
    }
    print!(
        "{n} scenarios: model (hz={hz}) {} passed, {failed_model} failed",
        n - failed_model
    );
    if kernel.is_some() {
        print!(
            "; {kernel_name} {} passed, {failed_kernel} failed (slack {slack_us} us)",
            n - failed_kernel
        );
    }
    println!();
    if let Some(p) = json {
        write(&p, &serde_json::to_string_pretty(&logs)?)?;
    }
    if failed_model + failed_kernel > 0 {
        bail!("{} scenario failure(s)", failed_model + failed_kernel);
    }
    Ok(())
}

/// Options as `vsim list` prints them: name, default, range (and help where
/// the declarations have it: scheduler tunables), indented.
fn format_options(items: &[vsim::params::OptionDoc]) -> String {
    if items.is_empty() {
        return "      (no options)\n".into();
    }
    let help = items.iter().any(|d| !d.help.is_empty());
    let mut rows = vec![vec!["option".to_string(), "default".into(), "range".into()]];
    if help {
        rows[0].push("help".into());
    }
    rows.extend(items.iter().map(|d| {
        let mut r = vec![d.name.clone(), d.default.clone(), d.range.clone()];
        if help {
            r.push(d.help.clone());
        }
        r
    }));
    // Every column left-aligned (the help is text).
    report::format_table(&rows, rows[0].len())
        .lines()
        .map(|l| format!("      {l}\n"))
        .collect()
}

/// `vsim compare`'s schedulers: `--schedulers LIST`, else each `--scheduler`,
/// else every scheduler.
fn scheduler_list(list: Option<String>, each: Vec<String>) -> Result<Vec<String>> {
    match list {
        Some(list) => vsim::config::split_specs(&list),
        None if !each.is_empty() => Ok(each),
        None => Ok(sched::names().into_iter().map(str::to_string).collect()),
    }
}

fn cmd_list(as_json: bool) -> Result<()> {
    if as_json {
        return list_json();
    }
    // Scheduler defaults for a non-rotational device that reports no erase
    // block (some follow the device: `vsim run --json` shows the values used).
    let info = vsim::types::DeviceInfo::flash(1 << 31, 32);
    println!("schedulers (tunables as name:k=v,...; defaults for a non-rotational device without an erase-block size):");
    for (n, d, ..) in sched::REGISTRY {
        println!("  {n:<12} {d}");
        print!("{}", format_options(&sched::options(n, &info)?));
    }
    println!(
        "devices (options as name:k=v,...; a preset sets the defaults of the options after it):"
    );
    for (n, d, _) in device::REGISTRY {
        println!("  {n:<12} {d}");
        print!("{}", format_options(&device::options(n)?));
    }
    println!("placements (--placement or [placement] name = ..., with --tier devices):");
    for (n, d, _) in vsim::stage::REGISTRY {
        println!("  {n:<12} {d}");
    }
    println!(
        "generated workloads ([[mapreduce]] workload = ..., or vsim gen mapreduce:workload=...):"
    );
    for (n, d) in vsim::workload::mapreduce::WORKLOADS {
        println!("  {n:<16} {d}");
    }
    println!(
        "  {:<16} TPC-C-like streams, SPC format ([[tpcc]] stream = K, or vsim gen tpcc:requests=...; options: {})",
        "tpcc",
        vsim::workload::tpcc::OPTIONS.join(", ")
    );
    println!("reproductions (vsim repro NAME):");
    for (n, d, _) in vsim::repro::REGISTRY {
        println!("  {n:<12} {d}");
    }
    println!("validation groups:");
    for (n, d, _) in validate::GROUPS {
        println!("  {n:<12} {d}");
    }
    Ok(())
}

/// `vsim list --json`: each scheduler's tunables as declared (defaults that
/// follow the device are given as declared) and each device's options.
fn list_json() -> Result<()> {
    let schedulers: Vec<_> = sched::REGISTRY
        .iter()
        .map(|(n, d, ..)| json!({"name": n, "description": d, "tunables": sched::tunables_json(n)}))
        .collect();
    let mut devices = Vec::new();
    for (n, d, _) in device::REGISTRY {
        let options: Vec<_> = device::options(n)?
            .iter()
            .map(
                |o| json!({"name": o.name, "default": o.default, "range": o.range, "help": o.help}),
            )
            .collect();
        devices.push(json!({"name": n, "description": d, "options": options}));
    }
    println!(
        "{}",
        serde_json::to_string_pretty(&json!({"schedulers": schedulers, "devices": devices}))?
    );
    Ok(())
}
