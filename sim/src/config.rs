//! Run configuration: a TOML file (`vsim run`) or the pieces `vsim compare`
//! takes on its command line, and the construction of a [`Sim`] from it.
//!
//! One file format serves both commands ([`ConfigFile`]): `vsim run` takes
//! a workload-only file (or a `.fio` job file) with `--device`, and
//! `vsim compare --workload` takes a full run configuration (its device,
//! seed and `[block]` are the defaults of `--device`, `--seed`, `--block`;
//! its `[scheduler]` gives way to `--schedulers`).
//!
//! ```toml
//! seed = 1
//! runtime = "5s"          # stop here; omit to run until every job is done
//! ramp_time = "1s"        # as fio: run 1 s more first, leave it out of the figures
//! interval = "100ms"      # time-series interval
//! [block]                 # queue/ attributes
//! nr_requests = 0         # 0: as the kernel, queue depth under noop (none), 2 x min(the host's tags, 128) under an elevator (the tags: the device's depth, or its host driver's where more: an SD card's 64)
//! max_sectors_kb = 1280    # default: 1280, or the device's max_hw_sectors_kb if smaller
//! plug = true
//! queue_depth = 0         # 0 = the device's own
//! request_lists = false  # true: nr_requests sync and nr_requests async (single-queue Linux's request lists)
//! [device]
//! model = "ssd"           # fixed | ssd | cheapflash | hdd (vsim list)
//! cell = "mlc"            # model options
//! [scheduler]
//! name = "veloces"        # noop | deadline | cfq | veloces
//! bundle_kb = 512         # tunables
//! [[tier]]                # more devices (a hybrid store): each with its queue
//! model = "fixed"         # device model and options, as [device]
//! page_kb = 4
//! scheduler = "noop"      # its scheduler (spec string; default noop)
//! [placement]             # the stage routing bios between them (vsim list)
//! name = "vfs-ssd"
//! [[job]]                 # fio-like jobs (workload::job), or
//! rw = "randrw"
//! [[trace]]               # trace replay (workload::trace), or
//! [[mapreduce]]           # a generated MapReduce-like trace (workload::mapreduce), or
//! [[tpcc]]                # one stream of a generated TPC-C-like trace (workload::tpcc;
//!                         # options: the generator's, stream = K, and a trace's depth,
//!                         # weight, reservation, limit, offset_sectors), or
//! path = "t.blkparse"
//! fio = "job.fio"         # top-level: jobs from a fio job file
//! ```

use crate::device;
use crate::engine::{BlockConfig, Lane, RunConfig, Sim};
use crate::metrics::iolog::IoLog;
use crate::params::{parse_time, read_text, Params, MAX_TEXT_FILE};
use crate::sched;
use crate::stage;
use crate::types::{MS, SECTOR};
use crate::workload::{fiofile, job, mapreduce, tpcc, trace};
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};

/// A named component with its options (`ssd:cell=mlc,op=0.07`).
#[derive(Clone, Debug)]
pub struct Component {
    pub name: String,
    pub params: Params,
}

/// Split a comma-separated list of specs, `NAME[:key=value,...]` each, where
/// a spec's own options are comma-separated too: an item holding `=` with no
/// `:` before it is an option of the spec before it (a name holds no `=`), so
/// `noop,veloces:bundle_kb=256,read_expire=10` is `noop` and
/// `veloces:bundle_kb=256,read_expire=10`. The one reader of such lists
/// (`vsim compare --schedulers`, the Python API, `vlab compare --schedulers`
/// through it); a repeatable flag (`--scheduler`) needs none.
pub fn split_specs(list: &str) -> Result<Vec<String>> {
    let mut specs: Vec<String> = Vec::new();
    for item in list.split(',').map(str::trim) {
        if item.is_empty() {
            bail!("empty item in the list '{list}'");
        }
        let continues = match item.find('=') {
            Some(eq) => !item[..eq].contains(':'),
            None => false,
        };
        match specs.last_mut() {
            Some(last) if continues => {
                last.push(',');
                last.push_str(item);
            }
            None if continues => {
                bail!("'{item}' in '{list}' is an option before any name (want NAME[:key=value,...],...)")
            }
            _ => specs.push(item.to_string()),
        }
    }
    Ok(specs)
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
            params: Params::parse_spec(rest)?,
        })
    }

    /// The component as a command-line spec (`ssd:cell=mlc,op=0.07`; options
    /// sorted), for reports: what `--device`/`--scheduler` would take, also
    /// for one given as a TOML table.
    pub fn spec(&self) -> String {
        let opts: Vec<String> = self
            .params
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        if opts.is_empty() {
            self.name.clone()
        } else {
            format!("{}:{}", self.name, opts.join(","))
        }
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
    /// Generated MapReduce-like traces (`[[mapreduce]]`), replayed open loop.
    pub mapreduce: Vec<Params>,
    /// Streams of generated TPC-C-like traces (`[[tpcc]]`), replayed closed loop.
    pub tpcc: Vec<Params>,
    /// Runtime the workload itself asks for (fio `runtime` + `time_based`).
    pub runtime: Option<u64>,
    /// fio `ramp_time`: I/Os completing before it are left out of the
    /// statistics; a time-based run lasts `ramp_time + runtime`.
    pub ramp: Option<u64>,
    /// Said once to the user (e.g. an `iodepth` a synchronous engine ignores).
    pub warnings: Vec<String>,
    /// A fio job file's `[global]` options as written: (key, value, origin
    /// `file:line`). fio's JSON lists them as `global options`, and a job's
    /// `job options` only those of its own section.
    pub global_options: Vec<(String, String, String)>,
}

/// Top-level keys of a TOML configuration or workload file.
const FILE_KEYS: &[&str] = &[
    "seed",
    "runtime",
    "ramp_time",
    "interval",
    "block",
    "device",
    "scheduler",
    "tier",
    "placement",
    "job",
    "trace",
    "mapreduce",
    "tpcc",
    "fio",
];

/// A device beyond the primary one (a hybrid store's SSD) with its scheduler.
#[derive(Clone, Debug)]
pub struct Tier {
    pub device: Component,
    pub scheduler: Component,
}

impl Tier {
    /// `DEVICE[@SCHEDULER]`: `fixed:page_kb=4,read_us=25,write_us=500@noop`
    /// (scheduler default noop).
    pub fn parse(spec: &str) -> Result<Self> {
        let (dev, sched) = spec.split_once('@').unwrap_or((spec, "noop"));
        Ok(Tier {
            device: Component::parse(dev).with_context(|| format!("tier '{spec}'"))?,
            scheduler: Component::parse(sched).with_context(|| format!("tier '{spec}'"))?,
        })
    }

    /// The tier as `--tier` takes it.
    pub fn spec(&self) -> String {
        format!("{}@{}", self.device.spec(), self.scheduler.spec())
    }

    fn from_table(t: &toml::Table, what: &str) -> Result<Self> {
        let mut t = t.clone();
        let scheduler = match t.remove("scheduler") {
            Some(toml::Value::String(s)) => Component::parse(&s)?,
            Some(_) => bail!("[[tier]] scheduler must be a string such as \"noop\""),
            None => Component::parse("noop")?,
        };
        Ok(Tier {
            device: Component::from_table(&t, "model", what)?,
            scheduler,
        })
    }
}

impl Workload {
    /// The workload of a file `vsim run` or `vsim compare --workload` takes:
    /// a `.fio` job file, or a TOML file with `[[job]]`/`[[trace]]` tables
    /// (a run configuration's other tables are read and left aside).
    pub fn load(path: &Path) -> Result<Self> {
        Ok(ConfigFile::load(path)?.workload)
    }

    fn from_fio(path: &Path) -> Result<Self> {
        let f = fiofile::parse_file(path)?;
        let label = path.display().to_string();
        let global_options = f
            .global
            .iter()
            .map(|(k, v, line)| (k.clone(), v.clone(), format!("{label}:{line}")))
            .collect();
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
            mapreduce: Vec::new(),
            tpcc: Vec::new(),
            runtime,
            ramp: f.ramp_ns,
            warnings: f.warnings,
            global_options,
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
            self.ramp = self.ramp.or(w.ramp);
            self.warnings.extend(w.warnings);
            self.global_options.extend(w.global_options);
        }
        for (key, list) in [
            ("job", &mut self.jobs),
            ("trace", &mut self.traces),
            ("mapreduce", &mut self.mapreduce),
            ("tpcc", &mut self.tpcc),
        ] {
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
                if key == "job" {
                    if let Some(w) = job::ignored_depth(&p) {
                        self.warnings
                            .push(format!("{what}: [[job]] #{}: {w}", i + 1));
                    }
                }
                list.push(p);
            }
        }
        Ok(())
    }

    pub fn is_empty(&self) -> bool {
        self.jobs.is_empty()
            && self.traces.is_empty()
            && self.mapreduce.is_empty()
            && self.tpcc.is_empty()
    }
}

/// A time given in TOML: a string with a unit ("10s"), or a number of seconds.
fn time_value(v: &toml::Value, what: &str) -> Result<u64> {
    let hint = "expected a time such as \"10s\" or \"250ms\"";
    match v {
        toml::Value::String(s) => {
            parse_time(s, 1_000_000_000).with_context(|| format!("option '{what}' = '{s}'"))
        }
        toml::Value::Integer(i) if *i >= 0 => (*i as u64)
            .checked_mul(1_000_000_000)
            .with_context(|| format!("option '{what}' = {i}: too large (at most 584 years)")),
        toml::Value::Float(f) => parse_time(&f.to_string(), 1_000_000_000)
            .with_context(|| format!("option '{what}' = {f}: {hint}")),
        _ => bail!("option '{what}': {hint}"),
    }
}

/// A TOML file as `vsim run` and `vsim compare --workload` read it, every
/// part optional (a `.fio` job file has only a workload): `run` needs a
/// device (the file's `[device]` or `--device`); `compare` takes the
/// device, seed and `[block]` from its options, else from the file, and
/// runs its `--schedulers` instead of the file's `[scheduler]`.
#[derive(Clone, Debug)]
pub struct ConfigFile {
    pub what: String,
    pub seed: Option<u64>,
    pub runtime: Option<u64>,
    pub interval: Option<u64>,
    pub block: Option<BlockConfig>,
    pub device: Option<Component>,
    pub scheduler: Option<Component>,
    pub tiers: Vec<Tier>,
    pub placement: Option<Component>,
    pub workload: Workload,
}

impl ConfigFile {
    pub fn load(path: &Path) -> Result<Self> {
        let what = path.display().to_string();
        if path.extension().is_some_and(|e| e == "fio") {
            let workload = Workload::from_fio(path)?;
            return Ok(ConfigFile {
                what,
                seed: None,
                runtime: workload.runtime,
                interval: None,
                block: None,
                device: None,
                scheduler: None,
                tiers: Vec::new(),
                placement: None,
                workload,
            });
        }
        let text = read_text(path, MAX_TEXT_FILE)?;
        let t: toml::Table = toml::from_str(&text).with_context(|| {
            if looks_like_fio(&text) {
                format!("{what}: invalid TOML (a fio job file must be named *.fio)")
            } else {
                format!("{what}: invalid TOML")
            }
        })?;
        Self::from_table(&t, path.parent().unwrap_or(Path::new(".")), &what)
    }

    /// A configuration given as JSON text of the TOML file's shape (the
    /// Python API's dicts): relative paths in it are against `base`, and
    /// `what` names it in messages.
    pub fn from_json(json: &str, base: &Path, what: &str) -> Result<Self> {
        let t: toml::Table = serde_json::from_str(json).with_context(|| {
            format!("{what}: not a configuration (a table of the TOML file's keys; null values are not allowed)")
        })?;
        Self::from_table(&t, base, what)
    }

    /// The configuration in a parsed TOML table; `base` is the directory
    /// relative paths (`fio`, a trace's `path`) are against.
    pub fn from_table(t: &toml::Table, base: &Path, what: &str) -> Result<Self> {
        let what = what.to_string();
        for k in t.keys() {
            if !FILE_KEYS.contains(&k.as_str()) {
                bail!(
                    "{what}: unknown key '{k}' (known: {}, and the tables [block], [device], [scheduler], [[tier]], [placement], [[job]], [[trace]], [[mapreduce]], [[tpcc]])",
                    FILE_KEYS.join(", ")
                );
            }
        }
        let seed = match t.get("seed") {
            Some(toml::Value::Integer(i)) if *i >= 0 => Some(*i as u64),
            Some(_) => bail!("{what}: seed must be a non-negative integer"),
            None => None,
        };
        let mut workload = Workload::default();
        workload.add_tables(t, base, &what)?;
        let get_time = |k: &str| -> Result<Option<u64>> {
            t.get(k)
                .map(|v| time_value(v, k).with_context(|| what.clone()))
                .transpose()
        };
        if let Some(r) = get_time("runtime")? {
            workload.runtime = Some(r);
        }
        if let Some(r) = get_time("ramp_time")? {
            workload.ramp = Some(r);
        }
        let interval = get_time("interval")?;
        let block = match t.get("block") {
            Some(v) => Some(
                block_config(&Params::from_toml(
                    v.as_table()
                        .with_context(|| format!("{what}: [block] must be a table"))?,
                )?)
                .with_context(|| what.clone())?,
            ),
            None => None,
        };
        let table = |k: &str| -> Result<Option<toml::Table>> {
            t.get(k)
                .map(|v| {
                    v.as_table()
                        .cloned()
                        .with_context(|| format!("{what}: [{k}] must be a table"))
                })
                .transpose()
        };
        let device = table("device")?
            .map(|t| Component::from_table(&t, "model", "device"))
            .transpose()
            .with_context(|| what.clone())?;
        let scheduler = table("scheduler")?
            .map(|t| Component::from_table(&t, "name", "scheduler"))
            .transpose()
            .with_context(|| what.clone())?;
        let mut tiers = Vec::new();
        if let Some(v) = t.get("tier") {
            let arr = v
                .as_array()
                .with_context(|| format!("{what}: 'tier' must be an array of tables ([[tier]])"))?;
            for (i, item) in arr.iter().enumerate() {
                let tab = item
                    .as_table()
                    .with_context(|| format!("{what}: [[tier]] #{}", i + 1))?;
                tiers.push(
                    Tier::from_table(tab, "tier")
                        .with_context(|| format!("{what}: [[tier]] #{}", i + 1))?,
                );
            }
        }
        let placement = table("placement")?
            .map(|t| Component::from_table(&t, "name", "placement"))
            .transpose()
            .with_context(|| what.clone())?;
        Ok(ConfigFile {
            what,
            seed,
            runtime: workload.runtime,
            interval,
            block,
            device,
            scheduler,
            tiers,
            placement,
            workload,
        })
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
    /// More devices, each with its own queue (lanes 1, 2, ...).
    pub tiers: Vec<Tier>,
    /// The stage placing bios on the devices (required with tiers).
    pub placement: Option<Component>,
    pub workload: Workload,
}

impl Config {
    /// The fio log files (`write_bw_log`, ...) the jobs will write, named as
    /// the run names them (each clone is a job numbered from 1, jobs before
    /// traces), so that a command can check them before the work. The device
    /// is not built: sizes are read against an ample capacity (names do not
    /// depend on it), and a job that does not parse is left to the build's error.
    pub fn fio_log_names(&self) -> Vec<String> {
        let mut out = Vec::new();
        let mut number = 0u32;
        for (i, p) in self.workload.jobs.iter().enumerate() {
            let Ok(spec) =
                job::JobSpec::from_params(p, &format!("job{i}"), 1 << 60, self.runtime > 0)
            else {
                return out;
            };
            for _ in 0..spec.numjobs {
                number += 1;
                out.extend(spec.logs.names(number).into_iter().map(|(_, n)| n));
            }
        }
        out
    }
    pub fn load(path: &Path) -> Result<Self> {
        Self::from_file(ConfigFile::load(path)?, None)
    }

    /// A run configuration from a file; `device` (`--device`) replaces the
    /// file's `[device]`, or supplies it (a workload file has none).
    pub fn from_file(f: ConfigFile, device: Option<Component>) -> Result<Self> {
        let what = &f.what;
        let Some(device) = device.or(f.device) else {
            bail!(
                "{what}: no device: add a [device] table (model = \"ssd\"; models: vsim list) or give one with --device, e.g. vsim run --device ssd {what}"
            );
        };
        if f.workload.is_empty() {
            bail!("{what}: no workload: add [[job]], [[trace]], [[mapreduce]] or [[tpcc]] tables or fio = \"file.fio\"");
        }
        Ok(Config {
            seed: f.seed.unwrap_or(1),
            runtime: f.runtime.unwrap_or(0),
            interval: f.interval.unwrap_or(100 * MS),
            block: f.block.unwrap_or_default(),
            device,
            scheduler: f.scheduler.unwrap_or(Component {
                name: "noop".into(),
                params: Params::new(),
            }),
            tiers: f.tiers,
            placement: f.placement,
            workload: f.workload,
        })
    }

    /// Build the simulation: device, scheduler, sources.
    pub fn build(&self) -> Result<Sim> {
        let dev = device::make(&self.device.name, &self.device.params, self.seed)
            .with_context(|| format!("device '{}'", self.device.name))?;
        let info = dev.info();
        let mut ports = Vec::new();
        if let Some(port) = dev.hint_port() {
            ports.push((0u8, port));
        }
        let cpu_ns = sched::host_cpu_ns(&self.scheduler.params)
            .with_context(|| format!("scheduler '{}'", self.scheduler.name))?;
        let turnaround_ns = sched::host_turnaround_ns(&self.scheduler.params)
            .with_context(|| format!("scheduler '{}'", self.scheduler.name))?;
        let reaper_first = sched::host_reaper_first(&self.scheduler.params)
            .with_context(|| format!("scheduler '{}'", self.scheduler.name))?;
        let (lag_every, lag_run) = sched::host_lag_ns(&self.scheduler.params)
            .with_context(|| format!("scheduler '{}'", self.scheduler.name))?;
        let sched = sched::make(&self.scheduler.name, &self.scheduler.params, &info)
            .with_context(|| format!("scheduler '{}'", self.scheduler.name))?;
        let ramp = self.workload.ramp.unwrap_or(0);
        let run = RunConfig {
            // As fio: a time-based run lasts ramp_time + runtime.
            runtime: if self.runtime > 0 {
                self.runtime
                    .checked_add(ramp)
                    .context("runtime + ramp_time is too large")?
            } else {
                0
            },
            interval: self.interval,
            log_issues: false,
        };
        let mut sim = Sim::new(self.block.clone(), run, sched, dev);
        sim.set_ramp(ramp);
        sim.set_host_cpu(cpu_ns);
        sim.set_host_turnaround(turnaround_ns);
        sim.set_reaper_first(reaper_first);
        sim.set_lag_task(lag_every, lag_run);
        let mut infos = vec![info];
        for (i, t) in self.tiers.iter().enumerate() {
            let what = format!("tier {} '{}'", i + 1, t.spec());
            let dev = device::make(
                &t.device.name,
                &t.device.params,
                self.seed.wrapping_add(i as u64 + 1),
            )
            .with_context(|| what.clone())?;
            let tinfo = dev.info();
            if let Some(port) = dev.hint_port() {
                ports.push((i as u8 + 1, port));
            }
            // `shared`: this device's requests queue in the primary's scheduler.
            let shared = t.scheduler.name == "shared";
            let sched = if shared {
                if t.scheduler.params.iter().next().is_some() {
                    bail!("{what}: the scheduler 'shared' takes no options (it is the primary device's)");
                }
                sched::make("noop", &Params::new(), &tinfo)?
            } else {
                sched::make(&t.scheduler.name, &t.scheduler.params, &tinfo)
                    .with_context(|| what.clone())?
            };
            infos.push(tinfo);
            // A device sharing the primary's scheduler takes its block settings too.
            let block = if shared {
                self.block.clone()
            } else {
                BlockConfig::default()
            };
            let lane = sim.add_lane(Lane::new(
                &format!("tier{}:{}", i + 1, t.device.name),
                block,
                sched,
                dev,
            ))?;
            if shared {
                sim.share_scheduler(lane, 0)?;
            }
        }
        match &self.placement {
            Some(p) => {
                let mut st = stage::make(&p.name, &p.params, &infos)
                    .with_context(|| format!("placement '{}'", p.spec()))?;
                for (lane, port) in ports {
                    st.connect_hints(lane, port)?;
                }
                st.check()?;
                if st.two_pass() {
                    // The first pass: the same run with the stage observing only.
                    let mut first = self.clone();
                    if let Some(fp) = first.placement.as_mut() {
                        fp.params.set("mode", "observe");
                    }
                    let mut pass = first.build().context("the placement's first pass")?;
                    pass.run().context("the placement's first pass")?;
                    let seen = pass.stage.as_ref().map(|s| s.observation());
                    st.learn(&seen.unwrap_or_default())
                        .with_context(|| format!("placement '{}'", p.spec()))?;
                }
                sim.stage = Some(st);
            }
            None if !self.tiers.is_empty() => bail!(
                "{} tier(s) but no placement to route bios to them: add [placement] name = \"vfs-ssd\" or --placement vfs-ssd (vsim list)",
                self.tiers.len()
            ),
            None => {}
        }
        let bytes = info.capacity_sectors * SECTOR;
        let time_based = self.runtime > 0;
        let mut idx = 0u32;
        for (i, p) in self.workload.jobs.iter().enumerate() {
            let spec = job::JobSpec::from_params(p, &format!("job{i}"), bytes, time_based)?;
            let qos =
                sched::FlowQos::from_params(p).with_context(|| format!("job '{}'", spec.name))?;
            for clone in 0..spec.numjobs {
                let j = job::Job::new(&spec, clone, idx, self.seed, bytes)?;
                let s = sim.add_source(Box::new(j), 0);
                sim.set_job_options(s, self.workload.job_options(p));
                sim.set_jobname(s, &spec.name);
                if spec.logs.any() {
                    sim.set_job_log(s, IoLog::new(spec.logs.clone(), s + 1));
                }
                sim.set_flow(s, qos);
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
            let qos = sched::FlowQos::from_params(p).with_context(|| format!("trace{i}"))?;
            let s = sim.add_source(s, 0);
            sim.set_job_options(s, self.workload.job_options(p));
            sim.set_flow(s, qos);
            idx += 1;
        }
        for (i, p) in self.workload.mapreduce.iter().enumerate() {
            let name = format!("mapreduce{i}");
            let spec = mapreduce::Spec::from_params(p, info.capacity_sectors, self.seed)
                .with_context(|| format!("[[mapreduce]] #{}", i + 1))?;
            let text = mapreduce::blkparse_text(&mapreduce::generate(&spec)?);
            let label = format!("{name} ({})", spec.workload);
            let opts = Params::parse_kv(&format!(
                "format=blkparse,mode=open,name={}",
                p.raw("name").unwrap_or(&spec.workload)
            ))?;
            let s = trace::TraceSource::from_reader(
                &opts,
                &name,
                idx,
                &label,
                Box::new(std::io::Cursor::new(text.into_bytes())),
                info.capacity_sectors,
                self.seed,
            )?;
            let s = sim.add_source(Box::new(s), 0);
            sim.set_job_options(s, self.workload.job_options(p));
            idx += 1;
        }
        for (i, p) in self.workload.tpcc.iter().enumerate() {
            let what = format!("[[tpcc]] #{}", i + 1);
            // The generator's options apart; the rest are the replay's.
            let mut gen = Params::new();
            let mut replay = Params::parse_kv("format=spc,mode=closed,depth=4")?;
            let mut stream = 0u32;
            for (k, v) in p.iter() {
                if k == "stream" {
                    stream = p.u64_in("stream", 0, 0, 63).with_context(|| what.clone())? as u32;
                } else if tpcc::OPTIONS.contains(&k.as_str()) {
                    gen.set(k, v);
                } else {
                    replay.set(k, v);
                }
            }
            let spec = tpcc::Spec::from_params(&gen, self.seed).with_context(|| what.clone())?;
            if stream >= spec.streams {
                bail!(
                    "{what}: stream {stream} of {} (streams = ...)",
                    spec.streams
                );
            }
            let text = tpcc::spc_text(&tpcc::generate(&spec), Some(stream));
            let name = replay
                .raw("name")
                .map_or_else(|| format!("tpcc{}", stream + 1), str::to_string);
            replay.set("name", &name);
            let qos = sched::FlowQos::from_params(&replay).with_context(|| what.clone())?;
            let s = trace::TraceSource::from_reader(
                &replay,
                &format!("tpcc{i}"),
                idx,
                &format!("{name} (generated TPC-C)"),
                Box::new(std::io::Cursor::new(text.into_bytes())),
                info.capacity_sectors,
                self.seed,
            )
            .with_context(|| what.clone())?;
            let s = sim.add_source(Box::new(s), 0);
            sim.set_job_options(s, self.workload.job_options(p));
            sim.set_flow(s, qos);
            idx += 1;
        }
        Ok(sim)
    }
}

impl Workload {
    /// A job's or trace's options as strings, for the report (fio's `job
    /// options`): those of its own section, not those from `[global]`.
    pub fn job_options(&self, p: &Params) -> Vec<(String, String)> {
        let from_global = |k: &str| {
            self.global_options
                .iter()
                .any(|(g, _, origin)| g == k && p.origin(k) == Some(origin.as_str()))
        };
        p.iter()
            .filter(|(k, _)| k.as_str() != "name" && !from_global(k))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }
}

/// Whether text that is not valid TOML reads as a fio job file: some line
/// is a bare flag (`time_based`) or a `key=value` whose value is a bare word
/// (`rw=randread`), which TOML would quote. Only then is the reader told
/// that a job file must be named *.fio.
fn looks_like_fio(text: &str) -> bool {
    text.lines().map(str::trim).any(|l| {
        if l.is_empty() || l.starts_with(['#', ';', '[']) {
            return false;
        }
        match l.split_once('=') {
            None => l.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'),
            Some((_, v)) => {
                let v = v.trim();
                v.starts_with(|c: char| c.is_ascii_alphabetic()) && !matches!(v, "true" | "false")
            }
        }
    })
}

/// `[block]` options.
pub fn block_config(p: &Params) -> Result<BlockConfig> {
    let d = BlockConfig::default();
    let b = BlockConfig {
        nr_requests: p.u64_in("nr_requests", d.nr_requests as u64, 0, 1 << 20)? as u32,
        max_sectors: (p.u64_in("max_sectors_kb", d.max_sectors as u64 / 2, 4, 1 << 20)? * 2) as u32,
        plug: p.bool_or("plug", d.plug)?,
        queue_depth: p.u64_in("queue_depth", 0, 0, 1 << 20)? as u32,
        request_lists: p.bool_or("request_lists", d.request_lists)?,
    };
    p.check_all_used("[block]")?;
    Ok(b)
}

#[cfg(test)]
mod spec_list_tests {
    use super::split_specs;

    #[test]
    fn a_specs_comma_separated_options_stay_with_it() {
        let s = |l: &str| split_specs(l).unwrap();
        assert_eq!(
            s("noop,veloces:bundle_kb=256,read_expire=10"),
            ["noop", "veloces:bundle_kb=256,read_expire=10"]
        );
        assert_eq!(
            s("veloces:bundle_kb=64,deadline:fifo_batch=4,writes_starved=1,noop"),
            [
                "veloces:bundle_kb=64",
                "deadline:fifo_batch=4,writes_starved=1",
                "noop"
            ]
        );
        // A value may hold a colon: only a `:` before the `=` starts a spec.
        assert_eq!(s("a:k=1:2,b"), ["a:k=1:2", "b"]);
        assert_eq!(s(" noop , deadline "), ["noop", "deadline"]);
    }

    #[test]
    fn an_option_before_any_name_or_an_empty_item_is_an_error() {
        for bad in ["read_expire=10,noop", "noop,,deadline", ""] {
            assert!(split_specs(bad).is_err(), "{bad}");
        }
    }
}
