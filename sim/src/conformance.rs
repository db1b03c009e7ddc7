//! Conformance scenarios: one behavioural spec (conformance/*.toml) that the
//! kernel module (in the lab) and this simulator's veloces model must both
//! pass. Format: conformance/README.md.
//!
//! The model runs each scenario on the `fixed` device with one server and
//! queue depth 1, block-layer plugging off (each request is submitted on its
//! own, as the lab's submitter does), and the scenario's tunables.

use crate::device;
use crate::engine::{BlockConfig, Issue, RunConfig, Sim};
use crate::params::Params;
use crate::sched;
use crate::types::{
    ioprio_value, BioSpec, Op, IOPRIO_CLASS_BE, IOPRIO_CLASS_IDLE, IOPRIO_CLASS_RT, US,
};
use crate::workload::script::Script;
use anyhow::{bail, Context, Result};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    pub name: String,
    /// The rule(s) of docs/policy.md it covers.
    pub rule: String,
    #[serde(default)]
    pub description: String,
    pub device: DeviceSpec,
    #[serde(default)]
    pub tunables: BTreeMap<String, toml::Value>,
    pub requests: Vec<ReqSpec>,
    pub expect: Vec<Expect>,
    #[serde(skip)]
    pub path: PathBuf,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeviceSpec {
    /// Service time of every request, in µs.
    pub service_us: u64,
    /// Requests the device serves at once, each in `service_us` (default 1).
    #[serde(default)]
    pub queue_depth: Option<u32>,
    /// Device size in MiB (default 1024).
    #[serde(default)]
    pub size_mb: Option<u64>,
}

#[derive(Debug, Deserialize, Clone)]
#[serde(deny_unknown_fields)]
pub struct ReqSpec {
    /// Arrival time in µs from the start.
    pub t: u64,
    /// R (read), W (asynchronous write) or WS (synchronous write).
    pub op: String,
    pub sector: u64,
    pub sectors: u32,
    pub id: String,
    /// I/O priority class: RT, BE or IDLE (level 4); unset is none (BE to
    /// veloces). Reads and sync writes only: the lab submits them with AIO's
    /// `IOCB_FLAG_IOPRIO`, and writeback does not carry a priority.
    #[serde(default)]
    pub prio: Option<String>,
    /// The thread that issues it: 1 or 2 (unset: reads 1, writes 2: a reader
    /// and a writer). veloces treats a write whose submitter reads as that
    /// reader's own.
    #[serde(default)]
    pub submitter: Option<u32>,
}

impl ReqSpec {
    /// The issuing thread (1 or 2; unset: reads 1, writes 2).
    pub fn submitter(&self) -> Result<u32> {
        match self.submitter {
            None if self.op == "R" => Ok(1),
            None => Ok(2),
            Some(n @ (1 | 2)) => Ok(n),
            Some(n) => bail!("request '{}': submitter {n} is not 1 or 2", self.id),
        }
    }

    /// The ioprio value (`IOPRIO_PRIO_VALUE(class, 4)`, 0 when unset).
    pub fn ioprio(&self) -> Result<u16> {
        let class = match self.prio.as_deref() {
            None => return Ok(0),
            Some("RT") => IOPRIO_CLASS_RT,
            Some("BE") => IOPRIO_CLASS_BE,
            Some("IDLE") => IOPRIO_CLASS_IDLE,
            Some(p) => bail!("request '{}': prio '{p}' is not RT, BE or IDLE", self.id),
        };
        if self.op == "W" {
            bail!(
                "request '{}': prio needs op R or WS (writeback carries no priority)",
                self.id
            );
        }
        Ok(ioprio_value(class, 4))
    }
}

/// One expectation; exactly one field set.
#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    /// The exact issue order of request ids (a merged request lists its ids in sector order).
    #[serde(default)]
    pub order: Option<Vec<String>>,
    /// `before = ["A", "B"]`: A is issued before B.
    #[serde(default)]
    pub before: Option<[String; 2]>,
    /// These ids are issued back to back (no other request between them), in any order.
    #[serde(default)]
    pub consecutive: Option<Vec<String>>,
    /// `issued_by = { id = "W1", t = 2500 }`: W1 is issued by t µs.
    #[serde(default)]
    pub issued_by: Option<IssuedBy>,
    /// `not_before = { id = "W1", t = 2000 }`: W1 is not issued before t µs.
    #[serde(default)]
    pub not_before: Option<IssuedBy>,
    /// These ids are issued as one request.
    #[serde(default)]
    pub merged: Option<Vec<String>>,
    /// These ids are issued as separate requests.
    #[serde(default)]
    pub separate: Option<Vec<String>>,
}

#[derive(Debug, Deserialize, Clone)]
#[serde(deny_unknown_fields)]
pub struct IssuedBy {
    pub id: String,
    pub t: u64,
}

/// One issued request as an implementation saw it: time (µs, unscaled) and ids.
#[derive(Clone, Debug, serde::Serialize, Deserialize)]
pub struct Issued {
    pub t_us: f64,
    pub ids: Vec<String>,
}

impl Scenario {
    pub fn load(path: &Path) -> Result<Self> {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let mut s: Scenario = toml::from_str(&text)
            .with_context(|| format!("{}: invalid scenario", path.display()))?;
        s.path = path.to_path_buf();
        s.check().with_context(|| path.display().to_string())?;
        Ok(s)
    }

    fn check(&self) -> Result<()> {
        if let Some(d) = self.device.queue_depth {
            if !(1..=128).contains(&d) {
                bail!("device.queue_depth {d} is not in 1..=128");
            }
        }
        let mut seen = std::collections::HashSet::new();
        for r in &self.requests {
            if !seen.insert(r.id.as_str()) {
                bail!("request id '{}' used twice", r.id);
            }
            if !["R", "W", "WS"].contains(&r.op.as_str()) {
                bail!("request '{}': op '{}' is not R, W or WS", r.id, r.op);
            }
            if r.sectors == 0 {
                bail!("request '{}': sectors must be > 0", r.id);
            }
            r.ioprio()?;
            r.submitter()?;
        }
        for (i, e) in self.expect.iter().enumerate() {
            let n = [
                e.order.is_some(),
                e.before.is_some(),
                e.consecutive.is_some(),
                e.issued_by.is_some(),
                e.not_before.is_some(),
                e.merged.is_some(),
                e.separate.is_some(),
            ]
            .iter()
            .filter(|x| **x)
            .count();
            if n != 1 {
                bail!("expect #{}: give exactly one of order, before, consecutive, issued_by, not_before, merged, separate", i + 1);
            }
            for id in e.ids() {
                if !seen.contains(id.as_str()) {
                    bail!("expect #{}: unknown request id '{id}'", i + 1);
                }
            }
        }
        if self.expect.is_empty() {
            bail!("no expectations");
        }
        Ok(())
    }

    /// Map an issued (sector, sectors) range back to the request ids it covers.
    pub fn ids_in(&self, sector: u64, sectors: u64, write: bool) -> Vec<String> {
        let mut v: Vec<&ReqSpec> = self
            .requests
            .iter()
            .filter(|r| {
                (r.op != "R") == write
                    && r.sector >= sector
                    && r.sector + r.sectors as u64 <= sector + sectors
            })
            .collect();
        v.sort_by_key(|r| r.sector);
        v.iter().map(|r| r.id.clone()).collect()
    }
}

impl Expect {
    fn ids(&self) -> Vec<String> {
        let mut v = Vec::new();
        for l in [&self.order, &self.consecutive, &self.merged, &self.separate]
            .into_iter()
            .flatten()
        {
            v.extend(l.iter().cloned());
        }
        if let Some(b) = &self.before {
            v.extend(b.iter().cloned());
        }
        for t in [&self.issued_by, &self.not_before].into_iter().flatten() {
            v.push(t.id.clone());
        }
        v
    }

    /// Check against an issue log; `slack_us` is the timing tolerance for
    /// `issued_by`/`not_before` (emulation jitter in the lab, 0 in the model).
    pub fn check(&self, log: &[Issued], slack_us: f64) -> std::result::Result<(), String> {
        let flat: Vec<&str> = log
            .iter()
            .flat_map(|i| i.ids.iter().map(String::as_str))
            .collect();
        let pos = |id: &str| flat.iter().position(|x| *x == id);
        let group = |id: &str| log.iter().position(|i| i.ids.iter().any(|x| x == id));
        if let Some(o) = &self.order {
            let got: Vec<&str> = flat.clone();
            let want: Vec<&str> = o.iter().map(String::as_str).collect();
            if got != want {
                return Err(format!("order: expected {want:?}, got {got:?}"));
            }
        }
        if let Some([a, b]) = &self.before {
            match (pos(a), pos(b)) {
                (Some(x), Some(y)) if x < y => {}
                (x, y) => return Err(format!("{a} before {b}: positions {x:?} and {y:?}")),
            }
        }
        if let Some(ids) = &self.consecutive {
            let mut p: Vec<usize> = Vec::new();
            for id in ids {
                p.push(pos(id).ok_or_else(|| format!("{id} was never issued"))?);
            }
            p.sort_unstable();
            if p.last().copied().unwrap_or(0) - p.first().copied().unwrap_or(0) + 1 != p.len() {
                return Err(format!(
                    "{ids:?} not consecutive: positions {p:?} in {flat:?}"
                ));
            }
        }
        for (tb, by) in [(&self.issued_by, true), (&self.not_before, false)] {
            if let Some(t) = tb {
                let g = group(&t.id).ok_or_else(|| format!("{} was never issued", t.id))?;
                let at = log[g].t_us;
                if by && at > t.t as f64 + slack_us {
                    return Err(format!(
                        "{} issued at {at:.0} us, expected by {} us",
                        t.id, t.t
                    ));
                }
                if !by && at + slack_us < t.t as f64 {
                    return Err(format!(
                        "{} issued at {at:.0} us, expected not before {} us",
                        t.id, t.t
                    ));
                }
            }
        }
        if let Some(ids) = &self.merged {
            let gs: Vec<Option<usize>> = ids.iter().map(|i| group(i)).collect();
            if gs.iter().any(|g| g.is_none()) || gs.windows(2).any(|w| w[0] != w[1]) {
                return Err(format!(
                    "{ids:?} not issued as one request: {}",
                    render(log)
                ));
            }
        }
        if let Some(ids) = &self.separate {
            let mut gs: Vec<Option<usize>> = ids.iter().map(|i| group(i)).collect();
            gs.sort_unstable();
            if gs.iter().any(|g| g.is_none()) || gs.windows(2).any(|w| w[0] == w[1]) {
                return Err(format!(
                    "{ids:?} not issued as separate requests: {}",
                    render(log)
                ));
            }
        }
        Ok(())
    }
}

/// `t_us:ids` per issued request.
pub fn render(log: &[Issued]) -> String {
    log.iter()
        .map(|i| format!("{:.0}:{}", i.t_us, i.ids.join("+")))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Load every `*.toml` scenario in a directory, sorted by file name.
pub fn load_dir(dir: &Path) -> Result<Vec<Scenario>> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    paths.sort();
    if paths.is_empty() {
        bail!("{}: no *.toml scenarios", dir.display());
    }
    paths.iter().map(|p| Scenario::load(p)).collect()
}

/// Run a scenario on the model; `hz` as the module's jiffies (0 = exact).
pub fn run_model(s: &Scenario, hz: u64) -> Result<Vec<Issued>> {
    let mut dp = Params::new();
    dp.set("service_us", &s.device.service_us.to_string());
    dp.set("size", &format!("{}m", s.device.size_mb.unwrap_or(1024)));
    let depth = s.device.queue_depth.unwrap_or(1);
    dp.set("servers", &depth.to_string());
    let dev = device::make("fixed", &dp, 1)?;
    let t = toml::Table::from_iter(s.tunables.clone());
    let mut sp = Params::from_toml(&t)?;
    if !sp.contains("hz") {
        sp.set("hz", &hz.to_string());
    }
    let sch = sched::make("veloces", &sp, &dev.info()).context("tunables")?;
    let block = BlockConfig {
        plug: false,
        nr_requests: 256,
        max_sectors: 1024,
        queue_depth: depth,
        request_lists: false,
    };
    let mut sim = Sim::new(
        block,
        RunConfig {
            runtime: 0,
            interval: 0,
            log_issues: true,
        },
        sch,
        dev,
    );
    let items = s
        .requests
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let (op, sync) = match r.op.as_str() {
                "R" => (Op::Read, true),
                "WS" => (Op::Write, true),
                _ => (Op::Write, false),
            };
            (
                r.t * US,
                BioSpec {
                    op,
                    sync,
                    sector: r.sector,
                    sectors: r.sectors,
                    pid: r.submitter().unwrap_or(1),
                    job: 0,
                    tag: i as u64,
                    attrs: crate::types::BioAttrs {
                        ioprio: r.ioprio().unwrap_or(0),
                        ..Default::default()
                    },
                },
            )
        })
        .collect();
    sim.add_source(Box::new(Script::new(&s.name, items)), 0);
    let out = sim.run()?;
    Ok(out
        .issues
        .iter()
        .map(|i: &Issue| Issued {
            t_us: i.time_ns as f64 / 1e3,
            ids: i
                .tags
                .iter()
                .map(|&t| s.requests[t as usize].id.clone())
                .collect(),
        })
        .collect())
}

/// Check a log against every expectation; returns the failures.
pub fn check(s: &Scenario, log: &[Issued], slack_us: f64) -> Vec<String> {
    s.expect
        .iter()
        .enumerate()
        .filter_map(|(i, e)| {
            e.check(log, slack_us)
                .err()
                .map(|m| format!("expect #{}: {m}", i + 1))
        })
        .collect()
}

/// The expected order, where the scenario states one, for side-by-side output.
pub fn expected_order(s: &Scenario) -> Option<Vec<String>> {
    s.expect.iter().find_map(|e| e.order.clone())
}

/// Side-by-side report of a failed scenario: the expected order (where the
/// scenario states one), the model's issues and the kernel's, with times.
pub fn side_by_side(
    s: &Scenario,
    model: &[Issued],
    kernel: Option<&[Issued]>,
    kernel_name: &str,
) -> String {
    let mut out = String::new();
    let exp = expected_order(s).unwrap_or_default();
    let cell = |l: &[Issued], i: usize| {
        l.get(i)
            .map(|x| format!("{:>8.0} {}", x.t_us, x.ids.join("+")))
            .unwrap_or_default()
    };
    let _ = write!(
        out,
        "    {:<3} {:<10} | {:<26}",
        "#", "expected", "model (t us, ids)"
    );
    if kernel.is_some() {
        let _ = write!(out, " | {kernel_name} (t us, ids)");
    }
    out.push('\n');
    let rows = exp
        .len()
        .max(model.len())
        .max(kernel.map_or(0, <[Issued]>::len));
    for i in 0..rows {
        let _ = write!(
            out,
            "    {:<3} {:<10} | {:<26}",
            i + 1,
            exp.get(i).cloned().unwrap_or_default(),
            cell(model, i)
        );
        if let Some(k) = kernel {
            let _ = write!(out, " | {}", cell(k, i));
        }
        out.push('\n');
    }
    out
}
