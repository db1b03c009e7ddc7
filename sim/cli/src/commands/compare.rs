//! `vsim compare`: one workload under several schedulers.

use crate::*;

#[derive(Args)]
pub(crate) struct CompareArgs {
    /// Device model and options, e.g. `ssd:preset=mlc_16g,op=0.07` or `hdd:preset=hp_c2247a`
    /// (default: the workload file's [device]).
    #[arg(long)]
    pub(crate) device: Option<String>,
    /// Workload: a .fio job file, or a TOML file with [[job]] / [[trace]] tables
    /// (a `vsim run` configuration works too: its [scheduler] is replaced by --schedulers).
    #[arg(long)]
    pub(crate) workload: PathBuf,
    /// Comma-separated schedulers; options after a colon, comma-separated too:
    /// `noop,veloces:bundle_kb=256,read_expire=10` (an item with `=` and no `:` is an
    /// option of the scheduler before it; default: every scheduler of `vsim list`).
    #[arg(long, conflicts_with = "scheduler")]
    pub(crate) schedulers: Option<String>,
    /// One scheduler spec, `NAME[:key=value,...]`; repeat for each (instead of --schedulers).
    #[arg(long)]
    pub(crate) scheduler: Vec<String>,
    /// Ratios are against this scheduler (default: the first).
    #[arg(long)]
    pub(crate) baseline: Option<String>,
    /// Stop at this simulated time (default: the workload's, else when jobs finish).
    #[arg(long)]
    pub(crate) runtime: Option<String>,
    /// Seed (default: the workload file's, else 1).
    #[arg(long)]
    pub(crate) seed: Option<u64>,
    /// Block-layer options: nr_requests, max_sectors_kb, plug, queue_depth
    /// (default: the workload file's [block]).
    #[arg(long)]
    pub(crate) block: Option<String>,
    /// Add a device with its own queue (a hybrid store's SSD), as `DEVICE[@SCHEDULER]`,
    /// e.g. `fixed:page_kb=4,read_us=25,write_us=500@noop`; repeatable (adds to the file's [[tier]]).
    #[arg(long = "tier", value_name = "DEVICE[@SCHED]")]
    pub(crate) tiers: Vec<String>,
    /// The stage placing bios on the devices, e.g. `vfs-ssd` (vsim list; replaces the file's [placement]).
    #[arg(long)]
    pub(crate) placement: Option<String>,
    /// Directory for, per scheduler, fio's json+ (NAME.json) and the jobs' and
    /// device's time series (NAME.csv, NAME.device.csv), plus summary.json;
    /// then the HTML report DIR/report.html (`vlab report`).
    #[arg(long, value_name = "DIR")]
    pub(crate) out: Option<PathBuf>,
    /// With --out: fio's json+ (now always written; accepted for compatibility).
    #[arg(long, requires = "out")]
    pub(crate) json_plus: bool,
    /// With --out: write the data files only, not the HTML report.
    #[arg(long)]
    pub(crate) no_report: bool,
    /// No progress display (it is shown on a terminal for runs over a second).
    #[arg(long, short)]
    pub(crate) quiet: bool,
}

pub(crate) fn cmd_compare(a: CompareArgs) -> Result<()> {
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
    if let Some(d) = &out {
        check_output_dir(d).context("--out")?;
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
    let lossy: Vec<String> = labels
        .iter()
        .zip(&reps)
        .filter(|(_, r)| r.outcome.balance.lost)
        .map(|(l, r)| {
            let b = &r.outcome.balance;
            format!("{l} ({} of {} bios)", b.lost_bios, b.submitted)
        })
        .collect();
    if !lossy.is_empty() {
        return Err(vsim::engine::LostIo(format!(
            "lost I/O under {}: those runs are not ranked; the results are written",
            lossy.join(", ")
        ))
        .into());
    }
    Ok(())
}

/// `vsim compare`'s schedulers: `--schedulers LIST`, else each `--scheduler`,
/// else every scheduler.
pub(crate) fn scheduler_list(list: Option<String>, each: Vec<String>) -> Result<Vec<String>> {
    match list {
        Some(list) => vsim::config::split_specs(&list),
        None if !each.is_empty() => Ok(each),
        None => Ok(sched::names().into_iter().map(str::to_string).collect()),
    }
}
