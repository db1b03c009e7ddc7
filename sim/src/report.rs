//! Results of a run: fio-style JSON (fio's field names where fio has them),
//! a human table, and CSV time series.

use crate::config::Config;
use crate::engine::Outcome;
use crate::metrics::{JobStats, OpStats};
use crate::types::Ns;
use anyhow::{Context, Result};
use serde_json::{json, Value};
use std::fmt::Write as _;
use std::time::Instant;

pub struct RunReport {
    pub scheduler: String,
    pub device: String,
    pub seed: u64,
    pub tunables: Vec<(&'static str, String)>,
    pub outcome: Outcome,
    pub device_counters: Value,
    pub sched_stats: Value,
    pub energy_j: f64,
    /// Wall time of the whole run, and of building it (device set-up, preconditioning).
    pub wall_s: f64,
    pub setup_s: f64,
}

/// Build and run one configuration.
pub fn run(cfg: &Config) -> Result<RunReport> {
    let t0 = Instant::now();
    let mut sim = cfg.build()?;
    let setup_s = t0.elapsed().as_secs_f64();
    let outcome = sim
        .run()
        .with_context(|| format!("simulating with scheduler '{}'", cfg.scheduler.name))?;
    let wall_s = t0.elapsed().as_secs_f64();
    let pw = sim.dev.power();
    let busy = outcome.busy_ns as f64 / 1e9;
    let total = outcome.elapsed as f64 / 1e9;
    let energy_j = pw.active_w * busy + pw.idle_w * (total - busy).max(0.0);
    Ok(RunReport {
        scheduler: cfg.scheduler.name.clone(),
        device: cfg.device.name.clone(),
        seed: cfg.seed,
        tunables: sim.sched.tunables(),
        device_counters: sim.dev.counters(),
        sched_stats: sim.sched.stats(),
        outcome,
        energy_j,
        wall_s,
        setup_s,
    })
}

impl RunReport {
    /// All jobs of one direction merged.
    pub fn total(&self, op: usize) -> OpStats {
        let mut t = OpStats::default();
        for j in &self.outcome.jobs {
            t.merge(&j.ops[op]);
        }
        t
    }

    pub fn to_json(&self) -> Value {
        let el = self.outcome.elapsed;
        let jobs: Vec<Value> = self
            .outcome
            .jobs
            .iter()
            .enumerate()
            .map(|(i, j)| {
                json!({
                    "jobname": j.name, "groupid": 0, "job_index": i,
                    "read": j.ops[0].to_json(el), "write": j.ops[1].to_json(el),
                    "job_runtime": el / 1_000_000,
                    "input": self.outcome.source_stats.get(i).cloned().unwrap_or(Value::Null),
                })
            })
            .collect();
        let tun: serde_json::Map<String, Value> = self
            .tunables
            .iter()
            .map(|(k, v)| ((*k).to_string(), Value::String(v.clone())))
            .collect();
        let o = &self.outcome;
        json!({
            "fio_version": format!("vsim-{}", env!("CARGO_PKG_VERSION")),
            "timestamp": 0,
            "global options": {"ioscheduler": self.scheduler},
            "jobs": jobs,
            "processes": self.outcome.processes.iter().map(|(pid, p)| p.to_json(*pid, el)).collect::<Vec<_>>(),
            "vsim": {
                "scheduler": self.scheduler,
                "tunables": tun,
                "scheduler_stats": self.sched_stats,
                "device": self.device,
                "device_counters": self.device_counters,
                "seed": self.seed,
                "simulated_ns": el,
                "device_busy_ns": o.busy_ns,
                "energy_j": self.energy_j,
                "iops_per_watt": if self.energy_j > 0.0 {
                    (self.total(0).ios + self.total(1).ios) as f64 / self.energy_j
                } else { 0.0 },
                "bios": o.bios, "requests": o.requests, "merged_bios": o.merged_bios, "split_bios": o.split_bios,
                "events": o.events, "peak_requests": o.peak_requests,
                "completed_bios": o.balance.completed, "unfinished_bios": o.balance.unfinished,
                "lost_io": o.balance.lost, "overload": o.balance.overload,
                "jain_fairness_iops": crate::metrics::jain_index(
                    &o.processes.iter().map(|(_, p)| (p.ios[0] + p.ios[1]) as f64).collect::<Vec<_>>()),
                "wall_s": self.wall_s,
                "setup_wall_s": self.setup_s,
                "requests_per_wall_s": if self.wall_s > self.setup_s { o.bios as f64 / (self.wall_s - self.setup_s) } else { 0.0 },
            },
        })
    }

    /// One line per job and direction.
    pub fn table(&self) -> String {
        let el = self.outcome.elapsed;
        let mut s = String::new();
        let _ = writeln!(
            s,
            "{:<16} {:<5} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10}",
            "job", "op", "IOPS", "MiB/s", "p50 us", "p99 us", "p99.9 us", "queue us", "device us"
        );
        for j in &self.outcome.jobs {
            for (op, name) in [(0usize, "read"), (1, "write")] {
                let o = &j.ops[op];
                if o.ios == 0 {
                    continue;
                }
                let _ = writeln!(
                    s,
                    "{:<16} {:<5} {:>10.0} {:>10.2} {:>10.1} {:>10.1} {:>10.1} {:>10.1} {:>10.1}",
                    truncate(&j.name, 16),
                    name,
                    o.iops(el),
                    o.bytes as f64 / (1 << 20) as f64 * 1e9 / el.max(1) as f64,
                    o.pct(50.0) as f64 / 1e3,
                    o.pct(99.0) as f64 / 1e3,
                    o.pct(99.9) as f64 / 1e3,
                    o.queue.mean() / 1e3,
                    o.device.mean() / 1e3,
                );
            }
        }
        let _ = writeln!(
            s,
            "simulated {:.3} s, {} bios ({} merged) in {:.2} s wall; energy {:.2} J",
            el as f64 / 1e9,
            self.outcome.bios,
            self.outcome.merged_bios,
            self.wall_s,
            self.energy_j
        );
        if !self.device_counters.is_null() {
            let _ = writeln!(s, "device: {}", self.device_counters);
        }
        for w in self.outcome.balance.warnings() {
            let _ = writeln!(s, "{w}");
        }
        s
    }

    /// CSV time series: interval start, job, op, IOPS, MiB/s, mean latency (us).
    pub fn series_csv(&self, interval: Ns) -> String {
        let mut s = String::from("time_s,job,op,iops,mib_s,mean_lat_us\n");
        let secs = interval as f64 / 1e9;
        for j in &self.outcome.jobs {
            series_rows(&mut s, j, secs, interval);
        }
        s
    }
}

fn series_rows(s: &mut String, j: &JobStats, secs: f64, interval: Ns) {
    for (i, iv) in j.series.iter().enumerate() {
        for (op, name) in [(0usize, "read"), (1, "write")] {
            if iv.ios[op] == 0 {
                continue;
            }
            let _ = writeln!(
                s,
                "{:.3},{},{},{:.1},{:.3},{:.2}",
                i as f64 * interval as f64 / 1e9,
                j.name,
                name,
                iv.ios[op] as f64 / secs,
                iv.bytes[op] as f64 / (1 << 20) as f64 / secs,
                iv.lat_sum[op] as f64 / iv.ios[op] as f64 / 1e3
            );
        }
    }
}

fn truncate(s: &str, n: usize) -> &str {
    match s.char_indices().nth(n) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}
