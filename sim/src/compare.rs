//! `vsim compare`: one workload on one device under several schedulers
//! ([`Plan`], [`Plan::run`]), and its table: one row per scheduler with
//! ratios to a baseline. The command line and the Python API share it.

use crate::config::{block_config, Component, Config, ConfigFile, Tier};
use crate::metrics::OpStats;
use crate::params::Params;
use crate::report::{self, format_table, RunReport};
use crate::types::Ns;
use anyhow::{bail, Context, Result};
use rayon::prelude::*;
use serde_json::{json, Value};
use std::fmt::Write as _;
use std::time::Instant;

/// What a comparison is asked for beside its workload file; every field
/// optional (the file's, else the defaults).
#[derive(Clone, Debug, Default)]
pub struct Ask {
    /// `--device` (default: the file's `[device]`).
    pub device: Option<String>,
    /// The schedulers with their options (`veloces:bundle_kb=256,read_expire=10`).
    pub schedulers: Vec<String>,
    /// Ratios against this one (default: the first).
    pub baseline: Option<String>,
    pub runtime: Option<String>,
    pub seed: Option<u64>,
    /// `--block` (`nr_requests=64,plug=0`).
    pub block: Option<String>,
    /// `--tier` specs, added to the file's.
    pub tiers: Vec<String>,
    pub placement: Option<String>,
}

/// A comparison ready to run: one configuration per scheduler.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The schedulers as asked (`veloces:bundle_kb=256`), one per config.
    pub labels: Vec<String>,
    pub configs: Vec<Config>,
    /// Index of the baseline in `labels`.
    pub base: usize,
    /// The device as asked (`--device`, else the file's model name).
    pub device: String,
    pub seed: u64,
    pub interval: Ns,
    /// The file's warnings (ignored options), for the caller to show.
    pub warnings: Vec<String>,
    /// A note that the file's `[scheduler]` is replaced, if it has one.
    pub note: Option<String>,
}

impl Plan {
    /// The comparison of `file`'s workload as `ask` says.
    pub fn new(file: ConfigFile, ask: &Ask) -> Result<Plan> {
        let what = file.what.clone();
        let (mut tiers, mut placement) = (file.tiers.clone(), file.placement.clone());
        for t in &ask.tiers {
            tiers.push(Tier::parse(t).context("--tier")?);
        }
        if let Some(p) = &ask.placement {
            placement = Some(Component::parse(p).context("--placement")?);
        }
        let dev = match (&ask.device, &file.device) {
            (Some(d), _) => Component::parse(d).context("--device")?,
            (None, Some(d)) => d.clone(),
            (None, None) => bail!(
                "--device is required: {what} has no [device] (e.g. --device ssd:preset=mlc_16g; models: vsim list)"
            ),
        };
        let device = ask.device.clone().unwrap_or_else(|| dev.name.clone());
        let note = file
            .scheduler
            .is_some()
            .then(|| format!("{what}'s [scheduler] is not used: compare runs --schedulers"));
        let seed = ask.seed.or(file.seed).unwrap_or(1);
        let wl = file.workload;
        if wl.is_empty() {
            bail!("{what}: no jobs or traces");
        }
        let block = match &ask.block {
            Some(b) => block_config(&Params::parse_spec(b)?).context("--block")?,
            None => file.block.unwrap_or_default(),
        };
        let interval = file.interval.unwrap_or(100_000_000);
        let runtime = match &ask.runtime {
            Some(r) => crate::params::parse_runtime_arg(r)?,
            None => wl.runtime.unwrap_or(0),
        };
        let labels: Vec<String> = ask
            .schedulers
            .iter()
            .map(|s| s.trim())
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect();
        if labels.is_empty() {
            bail!("--schedulers: none given");
        }
        let scheds: Vec<Component> = labels
            .iter()
            .map(|l| Component::parse(l))
            .collect::<Result<_>>()?;
        let base_name = ask.baseline.clone().unwrap_or_else(|| labels[0].clone());
        let base = labels
            .iter()
            .position(|l| *l == base_name || l.split(':').next() == Some(&base_name))
            .with_context(|| format!("--baseline {base_name} is not among --schedulers"))?;
        let warnings = wl.warnings.clone();
        let configs = scheds
            .into_iter()
            .map(|s| Config {
                seed,
                runtime,
                interval,
                block: block.clone(),
                device: dev.clone(),
                scheduler: s,
                tiers: tiers.clone(),
                placement: placement.clone(),
                workload: wl.clone(),
            })
            .collect();
        Ok(Plan {
            labels,
            configs,
            base,
            device,
            seed,
            interval,
            warnings,
            note,
        })
    }

    /// Run every scheduler (in parallel, on rayon's pool); `done` is called
    /// as each finishes. The first failure, named by its scheduler, is the
    /// error.
    pub fn run(&self, done: &(dyn Fn() + Sync + Send)) -> Result<Vec<RunReport>> {
        let built = self.build()?;
        self.run_built(built, done)
    }

    /// Build every scheduler's simulation (in parallel): the configuration's
    /// errors (an unknown scheduler, a tunable out of range), named by the
    /// scheduler, before anything runs.
    pub fn build(&self) -> Result<Vec<Built>> {
        self.configs
            .clone()
            .into_par_iter()
            .map(|c| {
                let started = (Instant::now(), report::epoch_ms());
                let sim = c
                    .build()
                    .with_context(|| format!("scheduler {}", c.scheduler.spec()))?;
                Ok(Built { sim, started })
            })
            .collect()
    }

    /// Run what [`Plan::build`] built, in parallel: the simulations' errors.
    pub fn run_built(
        &self,
        built: Vec<Built>,
        done: &(dyn Fn() + Sync + Send),
    ) -> Result<Vec<RunReport>> {
        let results: Vec<Result<RunReport>> = self
            .configs
            .clone()
            .into_par_iter()
            .zip(built)
            .map(|(c, b)| {
                let r = report::run_built(&c, b.sim, None, b.started)
                    .with_context(|| format!("scheduler {}", c.scheduler.spec()));
                done();
                r
            })
            .collect();
        results.into_iter().collect()
    }
}

/// One scheduler's simulation, built, with when its build began.
pub struct Built {
    sim: crate::engine::Sim,
    started: (Instant, u64),
}

/// Write amplification from a device's counters, where it reports one (under
/// `device::WA_COUNTER`, its one name).
pub fn write_amplification(counters: &Value) -> Option<f64> {
    counters
        .get(crate::device::WA_COUNTER)
        .and_then(Value::as_f64)
}

fn ratio(a: f64, b: f64) -> String {
    if b > 0.0 {
        format!("{:.2}", a / b)
    } else {
        "-".into()
    }
}

/// The labels of the runs that lost I/O.
pub fn lossy<'a>(labels: &'a [String], reps: &[RunReport]) -> Vec<&'a str> {
    labels
        .iter()
        .zip(reps)
        .filter(|(_, r)| r.outcome.balance.lost)
        .map(|(l, _)| l.as_str())
        .collect()
}

pub fn table(labels: &[String], reps: &[RunReport], base: usize) -> String {
    let mut rows = vec![[
        "scheduler",
        "IOPS",
        "x",
        "rd p50 us",
        "rd p99 us",
        "x",
        "wr p50 us",
        "wr p99 us",
        "x",
        "WA",
        "energy J",
        "IOPS/W",
    ]
    .map(String::from)
    .to_vec()];
    let b = &reps[base];
    let (br, bw) = (b.total(0), b.total(1));
    let biops = br.iops(b.outcome.elapsed) + bw.iops(b.outcome.elapsed);
    // A run that lost I/O has no figures to rank: its row says LOST and has
    // no ratios, and nothing is a ratio to a lossy baseline.
    let base_lost = b.outcome.balance.lost;
    // A direction without I/O has no latency: "-", not 0.
    let lat = |o: &OpStats, p: f64| {
        if o.ios == 0 {
            "-".to_string()
        } else {
            format!("{:.1}", o.pct(p) as f64 / 1e3)
        }
    };
    let p99_ratio = |o: &OpStats, b: &OpStats| {
        if o.ios == 0 || b.ios == 0 {
            "-".to_string()
        } else {
            ratio(o.pct(99.0) as f64, b.pct(99.0) as f64)
        }
    };
    for (l, r) in labels.iter().zip(reps) {
        let bal = &r.outcome.balance;
        if bal.lost {
            let mut row = vec![
                format!("{l} LOST I/O"),
                format!("LOST {}/{}", bal.lost_bios, bal.submitted),
            ];
            row.resize(rows[0].len(), "-".to_string());
            rows.push(row);
            continue;
        }
        let (rd, wr) = (r.total(0), r.total(1));
        let el = r.outcome.elapsed;
        let iops = rd.iops(el) + wr.iops(el);
        let wa = write_amplification(&r.device_counters)
            .map(|w| format!("{w:.2}"))
            .unwrap_or_else(|| "-".into());
        let or_lost = |s: String| if base_lost { "-".to_string() } else { s };
        rows.push(vec![
            l.clone(),
            format!("{iops:.0}"),
            or_lost(ratio(iops, biops)),
            lat(&rd, 50.0),
            lat(&rd, 99.0),
            or_lost(p99_ratio(&rd, &br)),
            lat(&wr, 50.0),
            lat(&wr, 99.0),
            or_lost(p99_ratio(&wr, &bw)),
            wa,
            format!("{:.2}", r.energy_j),
            format!("{:.1}", r.iops_per_watt()),
        ]);
    }
    let lossy = lossy(labels, reps);
    let mut s = String::new();
    if !lossy.is_empty() {
        let _ = writeln!(
            s,
            "ERROR: LOST I/O under {}: bios that can never complete; those runs are not ranked (details below)",
            lossy.join(", ")
        );
    }
    s.push_str(&format_table(&rows, 1));
    let _ = writeln!(
        s,
        "x = ratio to {} (IOPS: higher is better; p99: lower is better){}",
        labels[base],
        if base_lost {
            "; none shown: the baseline lost I/O"
        } else {
            ""
        }
    );
    if let Some(h) = no_choice_hint(reps) {
        let _ = writeln!(s, "{h}");
    }
    if let Some(k) = reps[0].kernel_requests() {
        let each: Vec<String> = labels
            .iter()
            .zip(reps)
            .map(|(l, r)| {
                let n = r.outcome.requests;
                format!("{l} {n} ({:.2}x)", n as f64 / k.max(1) as f64)
            })
            .collect();
        let _ = writeln!(
            s,
            "requests: the traced kernel issued {k} (its D events); the replays made {}",
            each.join(", ")
        );
    }
    for (l, r) in labels.iter().zip(reps) {
        for w in r.outcome.warnings() {
            let _ = writeln!(s, "{l}: {w}");
        }
    }
    s
}

/// Why the schedulers may all come out the same: when at most one request
/// in a hundred was dispatched with another waiting beside it in the
/// scheduler (the device took requests as they came: a closed loop at a depth
/// within the device's queue), no scheduler had an order to choose.
pub fn no_choice_hint(reps: &[RunReport]) -> Option<String> {
    let mut worst = 0.0f64;
    for r in reps {
        let o = &r.outcome;
        if o.dispatches == 0 || o.dispatch_choices * 100 > o.dispatches {
            return None;
        }
        worst = worst.max(o.dispatch_choices as f64 * 100.0 / o.dispatches as f64);
    }
    let depth = reps.iter().map(|r| r.outcome.queue_depth).min()?;
    Some(format!(
        "note: nothing queued in the scheduler: at most {worst:.2} % of requests were \
         dispatched with another one waiting, as the device (queue depth {depth}) took them \
         as they came; so the schedulers had no order to choose and differ only by holding \
         or merging. To compare them, keep more I/Os in flight than {depth} (iodepth, a \
         trace's depth) or lower the device's queue (--block queue_depth=N)."
    ))
}

/// `summary.json` of `vsim compare --out`: the header of
/// [`crate::report::summary_header`] (`kind` = `vsim-compare`), the
/// configured series `interval_ns`, and per scheduler its figures, its final
/// `device_counters`, the widened series intervals, and its `files` in the
/// directory (`NAME.json`, `NAME.csv`, `NAME.device.csv` for each of `names`).
#[allow(clippy::too_many_arguments)]
pub fn summary(
    labels: &[String],
    names: &[String],
    reps: &[RunReport],
    base: usize,
    device: &str,
    workload: &str,
    seed: u64,
    interval: Ns,
) -> Value {
    let rows: Vec<Value> = labels
        .iter()
        .zip(names)
        .zip(reps)
        .map(|((l, name), r)| {
            let mut row = figures(r);
            if let Some(m) = row.as_object_mut() {
                m.insert("scheduler".into(), json!(l));
                m.insert("files".into(), files_json(name));
            }
            row
        })
        .collect();
    let mut m = crate::report::summary_header("vsim-compare");
    for (k, v) in [
        ("device", json!(device)),
        ("workload", json!(workload)),
        ("seed", json!(seed)),
        ("interval_ns", json!(interval)),
        ("baseline", json!(labels[base])),
        ("lost_io", json!(lossy(labels, reps))),
        ("schedulers", Value::Array(rows)),
    ] {
        m.insert(k.into(), v);
    }
    Value::Object(m)
}

/// One run's figures, as a row of [`summary`] has them (without its
/// `scheduler` and `files`): IOPS, per direction IOPS, KiB/s and latency
/// percentiles, write amplification, energy, the I/O balance, the final
/// device counters. The Python API's `figures` and sweeps read these.
pub fn figures(r: &RunReport) -> Value {
    let (rd, wr) = (r.total(0), r.total(1));
    let el = r.outcome.elapsed;
    let mut v = json!({
        "iops": rd.iops(el) + wr.iops(el),
        "read": {"iops": rd.iops(el), "bw_kib": rd.bw_kib(el), "p50_ns": rd.pct(50.0), "p99_ns": rd.pct(99.0), "p99.9_ns": rd.pct(99.9)},
        "write": {"iops": wr.iops(el), "bw_kib": wr.bw_kib(el), "p50_ns": wr.pct(50.0), "p99_ns": wr.pct(99.0), "p99.9_ns": wr.pct(99.9)},
        "write_amplification": write_amplification(&r.device_counters),
        "energy_j": r.energy_j,
        "iops_per_watt": r.iops_per_watt(),
        "simulated_ns": el,
        "unfinished_bios": r.outcome.balance.unfinished,
        "lost_io": r.outcome.balance.lost,
        "lost_bios": r.outcome.balance.lost_bios,
        "overload": r.outcome.balance.overload,
        "device_counters": r.device_counters,
        "series_interval_ns": r.series_interval(),
        "device_interval_ns": r.outcome.device_series.interval(),
    });
    if r.outcome.host_cpu_busy_ns > 0 {
        // The host's CPU (a scheduler's `cpu_us`): its busy share of the measured time.
        v["host_cpu_busy_share"] = json!(r.outcome.host_cpu_busy_ns as f64 / el.max(1) as f64);
    }
    v
}

/// The `files` object of a summary: the data files of one run named `name`.
pub fn files_json(name: &str) -> Value {
    json!({"json": format!("{name}.json"), "csv": format!("{name}.csv"),
           "device_csv": format!("{name}.device.csv")})
}
