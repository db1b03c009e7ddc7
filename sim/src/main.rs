//! `vsim`: the command line of the simulator.

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};
use rayon::prelude::*;
use std::path::PathBuf;
use vsim::config::{block_config, Component, Config, Workload};
use vsim::params::{parse_time, Params};
use vsim::report::{self, RunReport};
use vsim::{bench, device, sched, validate};

#[derive(Parser)]
#[command(
    name = "vsim",
    version,
    about = "Deterministic, trace-driven simulator of the Linux block layer, I/O schedulers and flash/disk devices",
    long_about = "vsim answers \"which I/O scheduler for this workload and this device?\" in seconds.\n\
A run is: workload (fio-like jobs or a trace) -> block layer (plugging, merging, nr_requests) -> \
scheduler (noop, deadline, cfq, veloces) -> device model (ssd, cheapflash, hdd, fixed).\n\n\
Start with:\n  vsim list                                   # schedulers, devices, validation groups\n  \
vsim run sim/examples/ssd-mixed.toml        # one configuration, fio-style table\n  \
vsim compare --device ssd:cell=mlc --workload sim/examples/mix70.toml --schedulers noop,deadline,cfq,veloces\n  \
vsim validate                               # the models against closed forms and published figures\n\n\
Same seed, same inputs: same results, byte for byte."
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run one configuration file (TOML; see sim/examples/) and print its table.
    Run {
        /// The configuration: [device], [scheduler], [[job]] / [[trace]] / fio = "x.fio".
        config: PathBuf,
        /// Use this scheduler instead of the file's, e.g. `deadline` or `veloces:bundle_kb=256`.
        #[arg(long)]
        scheduler: Option<String>,
        /// Override the seed.
        #[arg(long)]
        seed: Option<u64>,
        /// Override the runtime (e.g. 5s, 500ms).
        #[arg(long)]
        runtime: Option<String>,
        /// Write fio-style JSON here.
        #[arg(long)]
        json: Option<PathBuf>,
        /// Write the time series (CSV) here.
        #[arg(long)]
        csv: Option<PathBuf>,
    },
    /// Run one workload on one device under several schedulers (in parallel) and compare.
    Compare {
        /// Device model and options, e.g. `ssd:cell=mlc,op=0.07` or `hdd:preset=hp_c2247a`.
        #[arg(long)]
        device: String,
        /// Workload: a .fio job file, or a TOML file with [[job]] / [[trace]] tables.
        #[arg(long)]
        workload: PathBuf,
        /// Comma-separated schedulers; options after a colon: `noop,veloces:bundle_kb=256`
        /// (default: every scheduler of `vsim list`).
        #[arg(long)]
        schedulers: Option<String>,
        /// Ratios are against this scheduler (default: the first).
        #[arg(long)]
        baseline: Option<String>,
        /// Stop at this simulated time (default: the workload's, else when jobs finish).
        #[arg(long)]
        runtime: Option<String>,
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Block-layer options: nr_requests, max_sectors_kb, plug, queue_depth.
        #[arg(long, default_value = "")]
        block: String,
        /// Directory for one fio-style JSON per scheduler plus summary.json.
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
    Conformance {
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
    },
    /// List schedulers, device models and validation groups.
    List,
}

fn main() {
    let cli = Cli::parse();
    let r = match cli.cmd {
        Cmd::Run {
            config,
            scheduler,
            seed,
            runtime,
            json,
            csv,
        } => cmd_run(config, scheduler, seed, runtime, json, csv),
        Cmd::Compare {
            device,
            workload,
            schedulers,
            baseline,
            runtime,
            seed,
            block,
            out,
        } => cmd_compare(
            &device,
            &workload,
            &schedulers.unwrap_or_else(|| sched::names().join(",")),
            baseline,
            runtime,
            seed,
            &block,
            out,
        ),
        Cmd::Validate { quick, group, json } => cmd_validate(quick, group, json),
        Cmd::Bench {
            requests,
            trace_requests,
        } => bench::run(requests, trace_requests),
        Cmd::Conformance {
            dir,
            hz,
            only,
            json,
            kernel_log,
            kernel_name,
            slack_us,
        } => cmd_conformance(&dir, hz, only, json, kernel_log, &kernel_name, slack_us),
        Cmd::List => {
            cmd_list();
            Ok(())
        }
    };
    if let Err(e) = r {
        eprintln!("vsim: error: {e:#}");
        std::process::exit(1);
    }
}

fn cmd_run(
    path: PathBuf,
    scheduler: Option<String>,
    seed: Option<u64>,
    runtime: Option<String>,
    json: Option<PathBuf>,
    csv: Option<PathBuf>,
) -> Result<()> {
    let mut cfg = Config::load(&path)?;
    if let Some(s) = scheduler {
        cfg.scheduler = Component::parse(&s)?;
    }
    if let Some(s) = seed {
        cfg.seed = s;
    }
    if let Some(r) = runtime {
        cfg.runtime = parse_time(&r, 1_000_000_000).context("--runtime")?;
    }
    let rep = report::run(&cfg)?;
    println!("{} on {} (seed {})", rep.scheduler, rep.device, rep.seed);
    print!("{}", rep.table());
    if let Some(p) = json {
        write(&p, &serde_json::to_string_pretty(&rep.to_json())?)?;
        eprintln!("fio-style JSON: {}", p.display());
    }
    if let Some(p) = csv {
        write(&p, &rep.series_csv(cfg.interval))?;
        eprintln!("time series: {}", p.display());
    }
    if std::env::var_os("VSIM_PEAK_RSS").is_some() {
        println!("peak_rss_kib {}", bench::peak_rss_kib().unwrap_or(0));
    }
    Ok(())
}

fn write(p: &std::path::Path, s: &str) -> Result<()> {
    if let Some(d) = p.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(d).with_context(|| format!("creating {}", d.display()))?;
    }
    std::fs::write(p, s).with_context(|| format!("writing {}", p.display()))
}

#[allow(clippy::too_many_arguments)]
fn cmd_compare(
    device: &str,
    workload: &std::path::Path,
    schedulers: &str,
    baseline: Option<String>,
    runtime: Option<String>,
    seed: u64,
    block: &str,
    out: Option<PathBuf>,
) -> Result<()> {
    let dev = Component::parse(device).context("--device")?;
    let wl = Workload::load(workload)?;
    if wl.is_empty() {
        bail!("{}: no jobs or traces", workload.display());
    }
    let block = block_config(&Params::parse_kv(block)?).context("--block")?;
    let runtime = match runtime {
        Some(r) => parse_time(&r, 1_000_000_000).context("--runtime")?,
        None => wl.runtime.unwrap_or(0),
    };
    let scheds: Vec<Component> = schedulers
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(Component::parse)
        .collect::<Result<_>>()?;
    if scheds.is_empty() {
        bail!("--schedulers: none given");
    }
    let labels: Vec<String> = schedulers
        .split(',')
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect();
    let base = baseline.unwrap_or_else(|| labels[0].clone());
    let base_idx = labels
        .iter()
        .position(|l| *l == base || l.split(':').next() == Some(&base))
        .with_context(|| format!("--baseline {base} is not among --schedulers"))?;
    let cfgs: Vec<Config> = scheds
        .into_iter()
        .map(|s| Config {
            seed,
            runtime,
            interval: 100_000_000,
            block: block.clone(),
            device: dev.clone(),
            scheduler: s,
            workload: wl.clone(),
        })
        .collect();
    let pb = ProgressBar::new(cfgs.len() as u64);
    pb.set_style(
        ProgressStyle::with_template("{bar:30} {pos}/{len} schedulers simulated ({elapsed})")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let results: Vec<Result<RunReport>> = cfgs
        .into_par_iter()
        .map(|c| {
            let r = report::run(&c).with_context(|| format!("scheduler {}", c.scheduler.name));
            pb.inc(1);
            r
        })
        .collect();
    pb.finish_and_clear();
    let mut reps = Vec::new();
    for r in results {
        reps.push(r?);
    }
    println!(
        "device {device}; workload {}; seed {seed}; simulated {:.3} s",
        workload.display(),
        reps[0].outcome.elapsed as f64 / 1e9
    );
    print!("{}", vsim::compare::table(&labels, &reps, base_idx));
    if let Some(dir) = out {
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        for (l, r) in labels.iter().zip(&reps) {
            let name = l.replace([':', ',', '='], "_");
            write(
                &dir.join(format!("{name}.json")),
                &serde_json::to_string_pretty(&r.to_json())?,
            )?;
        }
        let summary = vsim::compare::summary(
            &labels,
            &reps,
            base_idx,
            device,
            &workload.display().to_string(),
            seed,
        );
        write(
            &dir.join("summary.json"),
            &serde_json::to_string_pretty(&summary)?,
        )?;
        eprintln!("report: {}", dir.display());
    }
    Ok(())
}

fn cmd_validate(quick: bool, group: Option<String>, json: bool) -> Result<()> {
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
    if failed > 0 {
        bail!("{failed} validation case(s) failed");
    }
    Ok(())
}

fn cmd_conformance(
    dir: &std::path::Path,
    hz: u64,
    only: Option<String>,
    json: Option<PathBuf>,
    kernel_log: Option<PathBuf>,
    kernel_name: &str,
    slack_us: f64,
) -> Result<()> {
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

fn cmd_list() {
    println!("schedulers:");
    for (n, d, ..) in sched::REGISTRY {
        println!("  {n:<12} {d}");
    }
    println!("devices:");
    for (n, d, _) in device::REGISTRY {
        println!("  {n:<12} {d}");
    }
    println!("validation groups:");
    for (n, d, _) in validate::GROUPS {
        println!("  {n:<12} {d}");
    }
}
