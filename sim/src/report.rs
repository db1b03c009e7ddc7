//! Results of a run: fio's JSON (fio 3.42's `--output-format=json`/`json+`
//! layout, key for key, with vsim's own figures under `vsim` keys), a human
//! table, CSV time series (per job, and the device's), and the HTML report
//! (rendered by an external command, `vlab report`).

use crate::config::Config;
use crate::engine::{Outcome, ProgressFn};
use crate::metrics::{self, JobStats, OpStats};

/// The fio release whose JSON layout this matches (stat.c of fio-3.42):
/// `"fio version"` is `fio-3.42 (vsim-X.Y.Z)`.
pub const FIO_VERSION: &str = "fio-3.42";
use crate::types::Ns;
use anyhow::{bail, Context, Result};
use serde_json::{json, Value};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

pub struct RunReport {
    pub scheduler: String,
    pub device: String,
    pub seed: u64,
    pub tunables: Vec<(&'static str, String)>,
    pub outcome: Outcome,
    pub device_counters: Value,
    pub sched_stats: Value,
    pub energy_j: f64,
    /// Where the energy went (baseline, each kind of operation).
    pub energy: crate::device::energy::Energy,
    /// Wall time of the whole run, and of building it (device set-up, preconditioning).
    pub wall_s: f64,
    pub setup_s: f64,
    /// The run stopped at a runtime (every job ran for it).
    pub time_based: bool,
    /// Wall-clock start and end, in ms since the epoch (fio's `job_start`, `timestamp_ms`).
    pub started_ms: u64,
    pub finished_ms: u64,
    /// Every device beyond the primary one (a hybrid store's tiers).
    pub tiers: Vec<TierReport>,
    /// A job file's `[global]` options as written (fio's `global options`).
    pub global_options: Vec<(String, String)>,
    /// The placement stage and its counters, where the run had one.
    pub placement: Option<(String, Value)>,
}

/// A tier's own figures (lanes 1, 2, ... of the engine).
pub struct TierReport {
    pub device: String,
    pub scheduler: String,
    pub tunables: Vec<(&'static str, String)>,
    pub device_counters: Value,
    pub sched_stats: Value,
    pub energy_j: f64,
}

pub fn epoch_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// Zero the wall-clock fields of a [`RunReport::to_json`] document (when it
/// ran and how long it took), leaving what the seed and inputs determine.
pub fn clear_wall_clock(j: &mut Value) {
    for k in ["timestamp", "timestamp_ms"] {
        j[k] = 0.into();
    }
    j["time"] = "".into();
    if let Some(jobs) = j["jobs"].as_array_mut() {
        for job in jobs {
            job["job_start"] = 0.into();
        }
    }
    for k in ["wall_s", "setup_wall_s", "requests_per_wall_s"] {
        j["vsim"][k] = 0.into();
    }
}

/// `ctime()`'s format (`Thu Jan  1 00:00:00 1970`), in UTC: fio's `time`.
pub fn ctime_utc(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Civil date from days since 1970-01-01 (proleptic Gregorian).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    const WD: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MON: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    format!(
        "{} {} {:>2} {:02}:{:02}:{:02} {}",
        WD[(days.rem_euclid(7)) as usize],
        MON[(m - 1) as usize],
        d,
        rem / 3600,
        rem / 60 % 60,
        rem % 60,
        y
    )
}

/// Build and run one configuration.
pub fn run(cfg: &Config) -> Result<RunReport> {
    run_with_progress(cfg, None)
}

/// [`run`], calling `progress` as the simulation advances.
pub fn run_with_progress(cfg: &Config, progress: Option<ProgressFn>) -> Result<RunReport> {
    let (t0, started_ms) = (Instant::now(), epoch_ms());
    let sim = cfg.build()?;
    run_built(cfg, sim, progress, (t0, started_ms))
}

/// Run `sim`, built from `cfg` (by [`Config::build`]: its errors are the
/// configuration's, this function's the simulation's) since `started` (the
/// instant and the epoch ms the build began).
pub fn run_built(
    cfg: &Config,
    mut sim: crate::engine::Sim,
    progress: Option<ProgressFn>,
    (t0, started_ms): (Instant, u64),
) -> Result<RunReport> {
    sim.progress = progress;
    let setup_s = t0.elapsed().as_secs_f64();
    let outcome = sim
        .run()
        .with_context(|| format!("simulating with scheduler '{}'", cfg.scheduler.name))?;
    let wall_s = t0.elapsed().as_secs_f64();
    let energy = sim.lanes[0].dev.energy(outcome.elapsed, outcome.busy_ns);
    let tiers: Vec<TierReport> = sim.lanes[1..]
        .iter()
        .zip(&outcome.lanes[1..])
        .zip(&cfg.tiers)
        .map(|((l, o), t)| TierReport {
            device: t.device.spec(),
            scheduler: t.scheduler.spec(),
            tunables: l.sched.tunables(),
            device_counters: l.dev.counters(),
            sched_stats: l.sched.stats(),
            energy_j: l.dev.energy(outcome.elapsed, o.busy_ns).total_j,
        })
        .collect();
    // The energy of every device: a hybrid store's performance per watt is its whole.
    let energy_j = energy.total_j + tiers.iter().map(|t| t.energy_j).sum::<f64>();
    let placement = sim
        .stage
        .as_ref()
        .map(|s| (s.name().to_string(), s.stats()));
    Ok(RunReport {
        scheduler: cfg.scheduler.name.clone(),
        device: cfg.device.name.clone(),
        seed: cfg.seed,
        tunables: sim.lanes[0].sched.tunables(),
        device_counters: sim.lanes[0].dev.counters(),
        sched_stats: sim.lanes[0].sched.stats(),
        outcome,
        energy_j,
        energy,
        wall_s,
        setup_s,
        time_based: cfg.runtime > 0,
        started_ms,
        finished_ms: epoch_ms(),
        tiers,
        global_options: cfg
            .workload
            .global_options
            .iter()
            .map(|(k, v, _)| (k.clone(), v.clone()))
            .collect(),
        placement,
    })
}

impl RunReport {
    /// fio's log files the jobs asked for (`write_bw_log`, ...): (file
    /// name, text), to write in the current directory as fio does.
    pub fn fio_logs(&self) -> Vec<(String, String)> {
        self.outcome
            .jobs
            .iter()
            .filter_map(|j| j.log.as_ref())
            .flat_map(|l| l.files())
            .collect()
    }

    /// fio's `global options`: a job file's `[global]` options as written,
    /// and the scheduler as `ioscheduler`.
    fn global_options(&self) -> Value {
        let mut m: serde_json::Map<String, Value> = self
            .global_options
            .iter()
            .map(|(k, v)| (k.clone(), json!(v)))
            .collect();
        m.insert("ioscheduler".into(), json!(self.scheduler));
        Value::Object(m)
    }

    /// I/Os per joule of device energy (= IOPS per watt of mean power); 0
    /// without energy.
    pub fn iops_per_watt(&self) -> f64 {
        if self.energy_j > 0.0 {
            (self.total(0).ios + self.total(1).ios) as f64 / self.energy_j
        } else {
            0.0
        }
    }

    /// All jobs of one direction merged.
    pub fn total(&self, op: usize) -> OpStats {
        let mut t = OpStats::default();
        for j in &self.outcome.jobs {
            t.merge(&j.ops[op]);
        }
        t
    }

    /// A job's runtime (fio's `job_runtime`, and `runtime` of each
    /// direction it did I/O in), from the end of `ramp_time`: the whole run
    /// when time-based, else until its last completion.
    pub fn job_runtime(&self, j: &JobStats) -> Ns {
        if self.time_based {
            self.outcome.elapsed
        } else {
            j.end.saturating_sub(self.outcome.start)
        }
    }

    /// fio's `--output-format=json` document.
    pub fn to_json(&self) -> Value {
        self.to_json_format(false)
    }

    /// fio's JSON; `plus`: `json+` (latency `bins` as well).
    pub fn to_json_format(&self, plus: bool) -> Value {
        let o = &self.outcome;
        let el = o.elapsed;
        // Group aggregate bandwidth per direction, KiB/s (fio's rs->agg, for bw_agg).
        let max_run = o
            .jobs
            .iter()
            .map(|j| self.job_runtime(j))
            .max()
            .unwrap_or(0);
        let agg: Vec<f64> = (0..2)
            .map(|d| self.total(d).bytes as f64 / 1024.0 * 1e9 / max_run.max(1) as f64)
            .collect();
        let jobs: Vec<Value> = o
            .jobs
            .iter()
            .enumerate()
            .map(|(i, j)| {
                let rt = self.job_runtime(j);
                let mut m = serde_json::Map::new();
                m.insert("jobname".into(), json!(j.jobname));
                m.insert("groupid".into(), json!(0));
                m.insert("job_start".into(), json!(self.started_ms));
                m.insert("error".into(), json!(0));
                m.insert("eta".into(), json!(0));
                m.insert("elapsed".into(), json!(el.div_ceil(1_000_000_000)));
                let opts: serde_json::Map<String, Value> = j
                    .options
                    .iter()
                    .map(|(k, v)| (k.clone(), Value::String(v.clone())))
                    .collect();
                m.insert("job options".into(), Value::Object(opts));
                m.insert("read".into(), j.dir_json(0, o.start, rt, agg[0], plus));
                m.insert("write".into(), j.dir_json(1, o.start, rt, agg[1], plus));
                // No trims or syncs are simulated: fio's empty sections.
                m.insert("trim".into(), JobStats::new("").dir_json(0, 0, 0, 0.0, plus));
                m.insert(
                    "sync".into(),
                    json!({"total_ios": 0, "lat_ns": metrics::lat_json(&Default::default(), None, false)}),
                );
                m.insert("job_runtime".into(), json!(rt / 1_000_000));
                for k in ["usr_cpu", "sys_cpu"] {
                    m.insert(k.into(), json!(0.0));
                }
                for k in ["ctx", "majf", "minf"] {
                    m.insert(k.into(), json!(0));
                }
                m.extend(j.dist_json());
                m.insert(
                    "vsim".into(),
                    json!({
                        "job_index": i,
                        "input": o.source_stats.get(i).cloned().unwrap_or(Value::Null),
                        "read": j.ops[0].split_json(),
                        "write": j.ops[1].split_json(),
                    }),
                );
                Value::Object(m)
            })
            .collect();
        let tun: serde_json::Map<String, Value> = self
            .tunables
            .iter()
            .map(|(k, v)| ((*k).to_string(), Value::String(v.clone())))
            .collect();
        let secs = self.finished_ms / 1000;
        let mut disk_util = vec![o.disk.to_json(&self.device, o.busy_ns, el)];
        let mut devices = Vec::new();
        for (i, l) in o.lanes.iter().enumerate() {
            let lane = json!({
                "lane": i, "name": l.name, "busy_ns": l.busy_ns,
                "dispatches": l.dispatches, "dispatch_choices": l.dispatch_choices,
                "queue_depth": l.queue_depth, "peak_requests": l.peak_requests,
                "offloaded_requests": l.offloaded, "offload_refused": l.offload_refused,
                "ios": l.disk.ios, "sectors": l.disk.sectors,
            });
            let mut lane = lane;
            if i == 0 {
                lane["device"] = json!(self.device);
                lane["scheduler"] = json!(self.scheduler);
                lane["device_counters"] = self.device_counters.clone();
                lane["scheduler_stats"] = self.sched_stats.clone();
                lane["energy_j"] = json!(self.energy.total_j);
            } else if let Some(t) = self.tiers.get(i - 1) {
                disk_util.push(l.disk.to_json(&l.name, l.busy_ns, el));
                lane["device"] = json!(t.device);
                lane["scheduler"] = json!(t.scheduler);
                lane["tunables"] = t
                    .tunables
                    .iter()
                    .map(|(k, v)| ((*k).to_string(), Value::String(v.clone())))
                    .collect::<serde_json::Map<String, Value>>()
                    .into();
                lane["device_counters"] = t.device_counters.clone();
                lane["scheduler_stats"] = t.sched_stats.clone();
                lane["energy_j"] = json!(t.energy_j);
            }
            devices.push(lane);
        }
        let mut j = json!({
            "fio version": format!("{FIO_VERSION} (vsim-{})", env!("CARGO_PKG_VERSION")),
            "timestamp": secs,
            "timestamp_ms": self.finished_ms,
            "time": ctime_utc(secs),
            "global options": self.global_options(),
            "jobs": jobs,
            "disk_util": disk_util,
            "vsim": {
                "version": env!("CARGO_PKG_VERSION"),
                "scheduler": self.scheduler,
                "tunables": tun,
                "scheduler_stats": self.sched_stats,
                "device": self.device,
                "device_counters": self.device_counters,
                "seed": self.seed,
                "simulated_ns": el,
                "device_busy_ns": o.busy_ns,
                "energy_j": self.energy_j,
                "energy": self.energy,
                "iops_per_watt": self.iops_per_watt(),
                "bios": o.bios, "requests": o.requests, "merged_bios": o.merged_bios, "split_bios": o.split_bios,
                "events": o.events, "peak_requests": o.peak_requests,
                "tag_races": {"reaper_won": o.tag_races.0, "waiter_won": o.tag_races.1},
                "dispatches": o.dispatches, "dispatch_choices": o.dispatch_choices,
                "processes": o.processes.iter().map(|(pid, p)| p.to_json(Some(*pid), el)).collect::<Vec<_>>(),
                "other_processes": o.other_processes.as_ref().map(|p| p.to_json(None, el)),
                "completed_bios": o.balance.completed, "unfinished_bios": o.balance.unfinished,
                "lost_io": o.balance.lost, "lost_bios": o.balance.lost_bios, "overload": o.balance.overload,
                "jain_fairness_iops": crate::metrics::jain_index(
                    &o.processes.iter().map(|(_, p)| (p.ios[0] + p.ios[1]) as f64).collect::<Vec<_>>()),
                "wall_s": self.wall_s,
                "setup_wall_s": self.setup_s,
                "requests_per_wall_s": if self.wall_s > self.setup_s { o.bios as f64 / (self.wall_s - self.setup_s) } else { 0.0 },
            },
        });
        if o.lanes.len() > 1 {
            j["vsim"]["devices"] = devices.into();
        }
        if let Some((name, stats)) = &self.placement {
            j["vsim"]["placement"] = json!({"name": name, "stats": stats});
        }
        j
    }

    /// One line per job and direction (directions without I/O left out).
    pub fn table(&self) -> String {
        let el = self.outcome.elapsed;
        let mut rows = vec![[
            "job",
            "op",
            "IOPS",
            "MiB/s",
            "p50 us",
            "p99 us",
            "p99.9 us",
            "queue us",
            "device us",
        ]
        .map(String::from)
        .to_vec()];
        let us = |ns: f64| format!("{:.1}", ns / 1e3);
        for j in &self.outcome.jobs {
            let rt = self.job_runtime(j);
            for (op, name) in [(0usize, "read"), (1, "write")] {
                let o = &j.ops[op];
                if o.ios == 0 {
                    continue;
                }
                rows.push(vec![
                    j.name.clone(),
                    name.into(),
                    format!("{:.0}", o.iops(rt)),
                    format!(
                        "{:.2}",
                        o.bytes as f64 / (1 << 20) as f64 * 1e9 / rt.max(1) as f64
                    ),
                    us(o.pct(50.0) as f64),
                    us(o.pct(99.0) as f64),
                    us(o.pct(99.9) as f64),
                    us(o.queue.mean()),
                    us(o.device.mean()),
                ]);
            }
        }
        let mut s = format_table(&rows, 2);
        let _ = writeln!(
            s,
            "simulated {:.3} s, {} bios ({} merged) in {:.2} s wall; energy {:.2} J",
            el as f64 / 1e9,
            self.outcome.bios,
            self.outcome.merged_bios,
            self.wall_s,
            self.energy_j
        );
        if let Some(k) = self.kernel_requests() {
            let o = &self.outcome;
            let _ = writeln!(
                s,
                "requests: the replay made {} ({} bios, {} merged, {} split); the traced kernel issued {k} (its D events): {:.2}x",
                o.requests,
                o.bios,
                o.merged_bios,
                o.split_bios,
                o.requests as f64 / k.max(1) as f64
            );
        }
        if !self.device_counters.is_null() {
            let _ = writeln!(s, "device: {}", self.device_counters);
        }
        for (t, l) in self.tiers.iter().zip(&self.outcome.lanes[1..]) {
            let _ = writeln!(
                s,
                "{} ({} under {}): busy {:.3} s, {} reads, {} writes; {}",
                l.name,
                t.device,
                t.scheduler,
                l.busy_ns as f64 / 1e9,
                l.disk.ios[0],
                l.disk.ios[1],
                t.device_counters
            );
        }
        if let Some((name, stats)) = self.placement.as_ref().filter(|p| !p.1.is_null()) {
            let _ = writeln!(s, "placement {name}: {stats}");
        }
        for w in self.outcome.warnings() {
            let _ = writeln!(s, "{w}");
        }
        s
    }

    /// The requests the traced kernel issued (blkparse `D` events of data),
    /// summed over the sources, when every source is such a trace.
    pub fn kernel_requests(&self) -> Option<u64> {
        let s = &self.outcome.source_stats;
        if s.is_empty() {
            return None;
        }
        s.iter()
            .map(|v| v.get("kernel_requests").and_then(Value::as_u64))
            .sum()
    }

    /// CSV time series: interval start, job, op, IOPS, MiB/s, mean latency
    /// (us); intervals without completions are left out. A job's interval is
    /// the run's, doubled as often as needed to bound the series
    /// ([`crate::metrics::Series`]).
    pub fn series_csv(&self) -> String {
        let mut s = String::from("time_s,job,op,iops,mib_s,mean_lat_us\n");
        for j in &self.outcome.jobs {
            series_rows(&mut s, j);
        }
        s
    }

    /// The device's time series as CSV, header
    /// `time_s,in_flight,queued,<counters...>`: per interval (the run's,
    /// doubled as often as needed to bound the series, as the jobs'), its
    /// start (s), the time-averaged requests at the device and waiting in
    /// the scheduler, and every numeric field of the device's counters
    /// (bools as 0/1) as it stood at the interval's end, sorted by name.
    /// Idle intervals (nothing held, no counter changed) are left out: a
    /// missing interval is zero requests and the previous row's counters
    /// ([`crate::metrics::DeviceSeries`]). The series starts at 0, the ramp
    /// included; the last row's averages are over the part of its interval
    /// the run covered.
    pub fn device_series_csv(&self) -> String {
        self.outcome.device_series.csv()
    }

    /// The widest time-series interval of the jobs (the run's, unless a
    /// long run made a series coarser).
    pub fn series_interval(&self) -> Ns {
        self.outcome
            .jobs
            .iter()
            .map(|j| j.series.interval())
            .max()
            .unwrap_or(0)
    }
}

/// Where the device series goes beside a job series written to `csv`:
/// `x.csv` -> `x.device.csv`, any other name -> `name.device.csv`.
pub fn device_csv_path(csv: &Path) -> PathBuf {
    let stem = csv
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| n.strip_suffix(".csv"))
        .filter(|s| !s.is_empty());
    if let Some(stem) = stem {
        return csv.with_file_name(format!("{stem}.device.csv"));
    }
    let mut p = csv.as_os_str().to_owned();
    p.push(".device.csv");
    PathBuf::from(p)
}

/// The keys every `summary.json` starts with: `kind` (`vsim-run`,
/// `vsim-compare`, `vsim-validate`: which command wrote it, for the
/// reporter), `command` (the command line, as a list) and `vsim_version`.
pub fn summary_header(kind: &str) -> serde_json::Map<String, Value> {
    let command: Vec<String> = std::env::args_os()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let mut m = serde_json::Map::new();
    m.insert("kind".into(), json!(kind));
    m.insert("command".into(), json!(command));
    m.insert("vsim_version".into(), json!(env!("CARGO_PKG_VERSION")));
    m
}

/// The command that renders the HTML report: `VSIM_REPORTER` if set (./vsim
/// sets it), else the `vlab` of the repository this binary was built from
/// (declared at build time: `CARGO_MANIFEST_DIR/../vlab`).
fn reporter() -> Result<PathBuf> {
    if let Some(r) = std::env::var_os("VSIM_REPORTER").filter(|r| !r.is_empty()) {
        return Ok(PathBuf::from(r));
    }
    let vlab = Path::new(env!("CARGO_MANIFEST_DIR")).join("../vlab");
    if vlab.is_file() {
        return Ok(std::fs::canonicalize(&vlab).unwrap_or(vlab));
    }
    bail!(
        "no reporter: VSIM_REPORTER is not set and {} (the repository vsim was built from) is missing",
        vlab.display()
    )
}

/// Render `dir`/report.html from the files a command wrote there
/// (summary.json and what it names) by running `REPORTER report DIR`
/// (output passed through). The data files are written first and stay
/// whatever happens here: an error says so, and that `vlab report DIR`
/// rebuilds the report from them.
pub fn render_html(dir: &Path) -> Result<PathBuf> {
    let html = dir.join("report.html");
    let r = (|| -> Result<()> {
        let exe = reporter()?;
        let status = std::process::Command::new(&exe)
            .arg("report")
            .arg(dir)
            .status()
            .with_context(|| format!("running the reporter {}", exe.display()))?;
        if !status.success() {
            anyhow::bail!(
                "{} report {} failed ({status})",
                exe.display(),
                dir.display()
            );
        }
        if !html.is_file() {
            anyhow::bail!(
                "{} report {} wrote no {}",
                exe.display(),
                dir.display(),
                html.display()
            );
        }
        Ok(())
    })();
    r.with_context(|| {
        format!(
            "no HTML report in {d} (its results are kept: `vlab report {d}` rebuilds the report)",
            d = dir.display()
        )
    })?;
    Ok(html)
}

fn series_rows(s: &mut String, j: &JobStats) {
    let secs = j.series.interval() as f64 / 1e9;
    for (start, iv) in j.series.points() {
        for (op, name) in [(0usize, "read"), (1, "write")] {
            if iv.ios[op] == 0 {
                continue;
            }
            let _ = writeln!(
                s,
                "{:.3},{},{},{:.1},{:.3},{:.2}",
                start as f64 / 1e9,
                j.name,
                name,
                iv.ios[op] as f64 / secs,
                iv.bytes[op] as f64 / (1 << 20) as f64 / secs,
                iv.lat_sum[op] as f64 / iv.ios[op] as f64 / 1e3
            );
        }
    }
}

/// A text table whose columns are as wide as their widest cell (the first
/// row is the header): the first `left` columns left-aligned, the rest
/// right-aligned, two spaces apart.
pub fn format_table(rows: &[Vec<String>], left: usize) -> String {
    let ncol = rows.iter().map(Vec::len).max().unwrap_or(0);
    let width: Vec<usize> = (0..ncol)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|x| x.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut s = String::new();
    for r in rows {
        let cells: Vec<String> = r
            .iter()
            .enumerate()
            .map(|(c, x)| {
                if c < left {
                    format!("{x:<w$}", w = width[c])
                } else {
                    format!("{x:>w$}", w = width[c])
                }
            })
            .collect();
        let _ = writeln!(s, "{}", cells.join("  ").trim_end());
    }
    s
}

#[cfg(test)]
mod tests {
    #[test]
    fn ctime_format() {
        assert_eq!(super::ctime_utc(0), "Thu Jan  1 00:00:00 1970");
        assert_eq!(super::ctime_utc(1_700_000_000), "Tue Nov 14 22:13:20 2023");
        assert_eq!(super::ctime_utc(951_782_400), "Tue Feb 29 00:00:00 2000");
    }
}
