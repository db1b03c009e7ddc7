//! Run configuration: a TOML file (`vsim run`) or the pieces `vsim compare`
//! takes on its command line, and the construction of a [`Sim`] from it.
//!
//! ```toml
//! seed = 1
//! runtime = "5s"          # stop here; omit to run until every job is done
//! interval = "100ms"      # time-series interval
//! [block]                 # queue/ attributes
//! nr_requests = 256
//! max_sectors_kb = 1280    # default: 1280, or the device's max_hw_sectors_kb if smaller
//! plug = true
//! queue_depth = 0         # 0 = the device's own
//! [device]
//! model = "ssd"           # fixed | ssd | cheapflash | hdd (vsim list)
//! cell = "mlc"            # model options
//! [scheduler]
//! name = "veloces"        # noop | deadline | cfq | veloces
//! bundle_kb = 512         # tunables
//! [[job]]                 # fio-like jobs (workload::job), or
//! rw = "randrw"
//! [[trace]]               # trace replay (workload::trace), or
//! path = "t.blkparse"
//! fio = "job.fio"         # top-level: jobs from a fio job file
//! ```

use crate::device;
use crate::engine::{BlockConfig, RunConfig, Sim};
use crate::params::{parse_time, Params};
use crate::sched;
use crate::types::{MS, SECTOR};
use crate::workload::{fiofile, job, trace};
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};

/// A named component with its options (`ssd:cell=mlc,op=0.07`).
#[derive(Clone, Debug)]
pub struct Component {
    pub name: String,
    pub params: Params,
}

impl Component {
    /// Parse `name` or `name:k=v,k=v`.
    pub fn parse(spec: &str) -> Result<Self> {
        let (name, rest) = spec.split_once(':').unwrap_or((spec, ""));
        if name.trim().is_empty() {
            bail!("empty component name in '{spec}'");
        }
        Ok(Component {
            name: name.trim().to_string(),
            params: Params::parse_kv(rest)?,
        })
    }

    fn from_table(t: &toml::Table, key: &str, what: &str) -> Result<Self> {
        let mut t = t.clone();
        let name = match t.remove(key) {
            Some(toml::Value::String(s)) => s,
            Some(_) => bail!("[{what}] {key} must be a string"),
            None => bail!("[{what}] needs {key} = \"...\""),
        };
        Ok(Component {
            name,
            params: Params::from_toml(&t).with_context(|| format!("[{what}]"))?,
        })
    }
}

/// The workload: fio-like jobs and traces.
#[derive(Clone, Debug, Default)]
pub struct Workload {
    pub jobs: Vec<Params>,
    pub traces: Vec<Params>,
    /// Runtime the workload itself asks for (fio `runtime` + `time_based`).
    pub runtime: Option<u64>,
}

impl Workload {
    /// A `.fio` job file, or a TOML file with `[[job]]`/`[[trace]]` tables.
    pub fn load(path: &Path) -> Result<Self> {
        if path.extension().is_some_and(|e| e == "fio") {
            return Self::from_fio(path);
        }
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let t: toml::Table =
            toml::from_str(&text).with_context(|| format!("{}: invalid TOML", path.display()))?;
        let mut w = Workload::default();
        w.add_tables(
            &t,
            path.parent().unwrap_or(Path::new(".")),
            &path.display().to_string(),
        )?;
        for k in t.keys() {
            if !["job", "trace", "fio", "runtime"].contains(&k.as_str()) {
                bail!("{}: unknown key '{k}' (a workload file holds [[job]], [[trace]], fio, runtime)", path.display());
            }
        }
        if let Some(r) = t.get("runtime") {
            w.runtime = Some(time_value(r, "runtime")?);
        }
        Ok(w)
    }

    fn from_fio(path: &Path) -> Result<Self> {
        let f = fiofile::parse_file(path)?;
        let runtime = if f.time_based { f.runtime_ns } else { None };
        let jobs = f
            .jobs
            .into_iter()
            .map(|(name, mut p)| {
                if !p.contains("name") {
                    p.set("name", &name);
                }
                p
            })
            .collect();
        Ok(Workload {
            jobs,
            traces: Vec::new(),
            runtime,
        })
    }

    fn add_tables(&mut self, t: &toml::Table, base: &Path, what: &str) -> Result<()> {
        if let Some(v) = t.get("fio") {
            let s = v
                .as_str()
                .with_context(|| format!("{what}: fio must be a path string"))?;
            let w = Self::from_fio(&base.join(s))?;
            self.jobs.extend(w.jobs);
            self.runtime = self.runtime.or(w.runtime);
        }
        for (key, list) in [("job", &mut self.jobs), ("trace", &mut self.traces)] {
            let Some(v) = t.get(key) else { continue };
            let arr = v.as_array().with_context(|| {
                format!("{what}: '{key}' must be an array of tables ([[{key}]])")
            })?;
            for (i, item) in arr.iter().enumerate() {
                let tab = item
                    .as_table()
                    .with_context(|| format!("{what}: [[{key}]] #{}", i + 1))?;
                let mut p = Params::from_toml(tab)
                    .with_context(|| format!("{what}: [[{key}]] #{}", i + 1))?;
                if key == "trace" {
                    if let Some(path) = p.raw("path").map(str::to_string) {
                        let full: PathBuf = base.join(&path);
                        p.set("path", &full.to_string_lossy());
                    }
                }
                list.push(p);
            }
        }
        Ok(())
    }

    pub fn is_empty(&self) -> bool {
        self.jobs.is_empty() && self.traces.is_empty()
    }
}

fn time_value(v: &toml::Value, what: &str) -> Result<u64> {
    match v {
        toml::Value::String(s) => {
            parse_time(s, 1_000_000_000).with_context(|| format!("{what} = '{s}'"))
        }
        toml::Value::Integer(i) if *i >= 0 => Ok(*i as u64 * 1_000_000_000),
        toml::Value::Float(f) if *f >= 0.0 => Ok((*f * 1e9) as u64),
        _ => bail!("{what}: expected a time such as \"10s\" or \"250ms\""),
    }
}

/// Everything one simulation needs.
#[derive(Clone, Debug)]
pub struct Config {
    pub seed: u64,
    pub runtime: u64,
    pub interval: u64,
    pub block: BlockConfig,
    pub device: Component,
    pub scheduler: Component,
    pub workload: Workload,
}

impl Config {
    pub fn load(path: &Path) -> Result<Self> {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let t: toml::Table =
            toml::from_str(&text).with_context(|| format!("{}: invalid TOML", path.display()))?;
        let what = path.display().to_string();
        let base = path.parent().unwrap_or(Path::new("."));
        for k in t.keys() {
            if ![
                "seed",
                "runtime",
                "interval",
                "block",
                "device",
                "scheduler",
                "job",
                "trace",
                "fio",
            ]
            .contains(&k.as_str())
            {
                bail!("{what}: unknown key '{k}'");
            }
        }
        let seed = match t.get("seed") {
            Some(toml::Value::Integer(i)) if *i >= 0 => *i as u64,
            Some(_) => bail!("{what}: seed must be a non-negative integer"),
            None => 1,
        };
        let mut workload = Workload::default();
        workload.add_tables(&t, base, &what)?;
        let runtime = match t.get("runtime") {
            Some(v) => time_value(v, "runtime")?,
            None => workload.runtime.unwrap_or(0),
        };
        let interval = match t.get("interval") {
            Some(v) => time_value(v, "interval")?,
            None => 100 * MS,
        };
        let block = match t.get("block") {
            Some(v) => block_config(&Params::from_toml(
                v.as_table().context("[block] must be a table")?,
            )?)?,
            None => BlockConfig::default(),
        };
        let table = |k: &str| -> Result<toml::Table> {
            Ok(t.get(k)
                .with_context(|| format!("{what}: missing [{k}]"))?
                .as_table()
                .with_context(|| format!("{what}: [{k}] must be a table"))?
                .clone())
        };
        let device = Component::from_table(&table("device")?, "model", "device")?;
        let scheduler = match t.get("scheduler") {
            Some(_) => Component::from_table(&table("scheduler")?, "name", "scheduler")?,
            None => Component {
                name: "noop".into(),
                params: Params::new(),
            },
        };
        if workload.is_empty() {
            bail!("{what}: no workload: add [[job]] or [[trace]] tables or fio = \"file.fio\"");
        }
        Ok(Config {
            seed,
            runtime,
            interval,
            block,
            device,
            scheduler,
            workload,
        })
    }

    /// Build the simulation: device, scheduler, sources.
    pub fn build(&self) -> Result<Sim> {
        let dev = device::make(&self.device.name, &self.device.params, self.seed)
            .with_context(|| format!("device '{}'", self.device.name))?;
        let info = dev.info();
        let sched = sched::make(&self.scheduler.name, &self.scheduler.params, &info)
            .with_context(|| format!("scheduler '{}'", self.scheduler.name))?;
        let run = RunConfig {
            runtime: self.runtime,
            interval: self.interval,
            log_issues: false,
        };
        let mut sim = Sim::new(self.block.clone(), run, sched, dev);
        let bytes = info.capacity_sectors * SECTOR;
        let time_based = self.runtime > 0;
        let mut idx = 0u32;
        for (i, p) in self.workload.jobs.iter().enumerate() {
            let spec = job::JobSpec::from_params(p, &format!("job{i}"), bytes, time_based)?;
            for clone in 0..spec.numjobs {
                let j = job::Job::new(&spec, clone, idx, self.seed, bytes)?;
                sim.add_source(Box::new(j), 0);
                idx += 1;
            }
        }
        for (i, p) in self.workload.traces.iter().enumerate() {
            let s = trace::open(
                p,
                &format!("trace{i}"),
                idx,
                info.capacity_sectors,
                self.seed,
            )?;
            sim.add_source(s, 0);
        }
        Ok(sim)
    }
}

/// `[block]` options.
pub fn block_config(p: &Params) -> Result<BlockConfig> {
    let d = BlockConfig::default();
    let b = BlockConfig {
        nr_requests: p.u64_in("nr_requests", d.nr_requests as u64, 1, 1 << 20)? as u32,
        max_sectors: (p.u64_in("max_sectors_kb", d.max_sectors as u64 / 2, 4, 1 << 20)? * 2) as u32,
        plug: p.bool_or("plug", d.plug)?,
        queue_depth: p.u64_in("queue_depth", 0, 0, 1 << 20)? as u32,
    };
    p.check_all_used("[block]")?;
    Ok(b)
}
