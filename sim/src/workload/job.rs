//! fio-like synthetic jobs: closed loop at a queue depth (fio's model), or open
//! loop with constant-rate or Poisson arrivals.
//!
//! Options (fio names): rw, bs, iodepth, iodepth_batch_submit (iodepth_batch),
//! iodepth_batch_complete_min (iodepth_batch_complete), iodepth_batch_complete_max, numjobs, rwmixread, size, offset,
//! offset_increment, io_size, number_ios, random_distribution
//! (random | zipf:θ | pareto:h), percentage_random, thinktime, thinktime_blocks, rate_iops,
//! rate_process (linear | poisson), direct, sync, ioengine, prio, prioclass,
//! cgroup, cpus_allowed; vsim's own: open_loop, pid. `direct=1` makes
//! writes synchronous (REQ_SYNC), as O_DIRECT writes are in Linux;
//! `sync=1` (O_SYNC) makes them REQ_SYNC | REQ_FUA, as 6.1's block/fops.c
//! `dio_bio_write_op` does for a dsync write (buffered O_SYNC writes are
//! approximated the same way).
//!
//! Bio attributes: `prio` (0–7) and `prioclass` (1 realtime, 2 best effort,
//! 3 idle; best effort when only `prio` is given) give the ioprio as
//! `IOPRIO_PRIO_VALUE(class, level)` = class << 13 | level; `cgroup=NAME`
//! puts the job's bios in a cgroup whose id is a hash of the name (the
//! same name, the same cgroup; 0 is the root); the submitting CPU is the
//! first CPU of `cpus_allowed` (a list like `2`, `2-5` or `1,3`), else the
//! clone number (fio's clones run as processes the scheduler spreads).
//! fio's `fsync`, `fdatasync` and `end_fsync` are not supported (an error).
//! vsim's `weight`, `reservation` and `limit` (requests/s) set the job's flow
//! for the fair-queueing schedulers (`crate::sched::FlowQos`; each clone is a
//! flow with these settings).
//!
//! `ioengine`: a synchronous engine ([`SYNC_ENGINES`]) keeps one I/O in
//! flight per job whatever `iodepth` says, as fio does; an asynchronous one
//! ([`ASYNC_ENGINES`]) honours `iodepth`. Without `ioengine` a job honours
//! `iodepth` (a .fio file gets fio's default, psync, from
//! [`super::fiofile`]).
//!
//! Submissions: each poll submits one fio submission, one plug of the
//! engine: `iodepth_batch_submit` I/Os (default 1, as fio's, whose libaio
//! engine then calls io_submit for each I/O; 0 = iodepth). A larger batch is
//! one plug, so its sequential I/Os merge there (Linux plugs an io_submit of
//! more than 2 iocbs, AIO_PLUG_THRESHOLD; the engine plugs any batch).
//!
//! `rate_iops` is at most 1e9 (one I/O per nanosecond, the simulator's time
//! resolution); every option error names the option (and `file:line` for a
//! .fio file).

use super::{Next, Source};
use crate::params::Params;
use crate::types::{BioAttrs, BioSpec, Ns, Op, SEC, SECTOR};
use anyhow::{bail, Context, Result};
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Zipf};
use rand_pcg::Pcg64Mcg;

/// Every option a job understands; anything else in a job is an error.
pub const OPTIONS: &[&str] = &[
    "name",
    "rw",
    "readwrite",
    "bs",
    "blocksize",
    "iodepth",
    "iodepth_batch_submit",
    "iodepth_batch",
    "iodepth_batch_complete_min",
    "iodepth_batch_complete",
    "iodepth_batch_complete_max",
    "numjobs",
    "rwmixread",
    "rwmixwrite",
    "size",
    "offset",
    "offset_increment",
    "io_size",
    "number_ios",
    "random_distribution",
    "percentage_random",
    "norandommap",
    "thinktime",
    "thinktime_blocks",
    "rate_iops",
    "rate_process",
    "direct",
    "sync",
    "open_loop",
    "pid",
    "ioengine",
    "prio",
    "prioclass",
    "cgroup",
    "cpus_allowed",
    "weight",
    "reservation",
    "limit",
    "write_bw_log",
    "write_iops_log",
    "write_lat_log",
    "log_avg_msec",
    "log_offset",
];

/// fio engines whose `->queue` completes each I/O before the next is issued
/// (fio's `FIO_SYNCIO`): one I/O in flight per job, whatever `iodepth` says.
pub const SYNC_ENGINES: &[&str] = &[
    "sync", "psync", "vsync", "pvsync", "pvsync2", "mmap", "splice",
];

/// fio engines that keep up to `iodepth` I/Os in flight.
pub const ASYNC_ENGINES: &[&str] = &[
    "libaio",
    "io_uring",
    "io_uring_cmd",
    "posixaio",
    "solarisaio",
    "windowsaio",
    "null",
    "sg",
    "xnvme",
];

/// fio's default engine on Linux.
pub const FIO_DEFAULT_ENGINE: &str = "psync";

/// Highest `rate_iops`: one I/O per nanosecond, the clock's resolution.
pub const MAX_RATE_IOPS: f64 = 1e9;

/// The warning for a job whose `iodepth` above 1 its synchronous `ioengine`
/// ignores; `None` when there is nothing to say (or the values are invalid:
/// [`JobSpec::from_params`] reports those).
pub fn ignored_depth(p: &Params) -> Option<String> {
    let engine = p.raw("ioengine")?;
    let depth = crate::params::parse_u64(p.raw("iodepth")?).ok()?;
    (SYNC_ENGINES.contains(&engine) && depth > 1).then(|| {
        format!(
            "iodepth={depth} is ignored with ioengine={engine}: a synchronous engine has one I/O in flight per job, as in fio (use libaio or io_uring for a queue depth)"
        )
    })
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Dist {
    Uniform,
    Zipf(f64),
    Pareto(f64),
}

#[derive(Clone, Debug)]
pub struct JobSpec {
    pub name: String,
    pub random: bool,
    /// Fraction of reads, 0..=100.
    pub read_pct: u32,
    pub bs: u64,
    pub iodepth: u32,
    /// I/Os submitted together, one plug (fio's `iodepth_batch_submit`, alias
    /// `iodepth_batch`: default 1, each I/O its own submission; 0 = iodepth).
    pub batch: u32,
    /// Completions its task reaps at once when its queue is full: at least
    /// `reap_min`, at most `reap_max` (fio's `iodepth_batch_complete_min`,
    /// alias `iodepth_batch_complete`, default 1, and `iodepth_batch_complete_max`,
    /// default and floor the min: one by default, so a job at depth 32 behind
    /// a slower device reaps one, submits one, and each of its I/Os waits its
    /// turn in the completion ring; fio times a completion when it reaps it).
    pub reap_min: u32,
    pub reap_max: u32,
    pub numjobs: u32,
    pub size: u64,
    pub offset: u64,
    pub offset_increment: u64,
    /// Stop after this many bytes (0 = run until the simulation's runtime).
    pub io_limit: u64,
    pub number_ios: u64,
    pub dist: Dist,
    /// fio's `percentage_random`: of a random job's I/Os, this percentage is
    /// random and the rest continue sequentially from the last one (100).
    pub pct_random: u32,
    pub thinktime: Ns,
    pub thinktime_blocks: u32,
    pub rate_iops: f64,
    pub poisson: bool,
    pub sync_writes: bool,
    pub open_loop: bool,
    pub pid: Option<u32>,
    /// REQ_FUA on writes (`sync=1`).
    pub fua_writes: bool,
    /// fio's random map: uniform random offsets cover every block once per
    /// pass (a block already done gives way to the next free one), unless
    /// `norandommap`.
    pub random_map: bool,
    pub ioprio: u16,
    pub cgroup: u32,
    /// First CPU of `cpus_allowed`.
    pub cpu: Option<u16>,
    /// fio's `write_bw_log`, `write_iops_log`, `write_lat_log`.
    pub logs: crate::metrics::iolog::LogSpec,
}

impl JobSpec {
    /// Build from options; `device_bytes` is the default size. `time_based`
    /// means the simulation has a runtime, so jobs do not stop after `size`.
    pub fn from_params(
        p: &Params,
        default_name: &str,
        device_bytes: u64,
        time_based: bool,
    ) -> Result<Self> {
        for (k, _) in p.iter() {
            if !OPTIONS.contains(&k.as_str()) {
                bail!(
                    "job '{}': unsupported option '{k}' (supported: {})",
                    default_name,
                    OPTIONS.join(", ")
                );
            }
        }
        let name = p.str_or("name", default_name);
        let rw = p
            .raw("rw")
            .or(p.raw("readwrite"))
            .unwrap_or("read")
            .to_string();
        let (random, read_default) = match rw.as_str() {
            "read" => (false, 100),
            "write" => (false, 0),
            "randread" => (true, 100),
            "randwrite" => (true, 0),
            "rw" | "readwrite" => (false, 50),
            "randrw" => (true, 50),
            other => bail!(
                "job '{name}': {}: '{other}' is not supported (read, write, randread, randwrite, rw, randrw)",
                p.what(if p.contains("rw") { "rw" } else { "readwrite" })
            ),
        };
        let mixed = matches!(rw.as_str(), "rw" | "readwrite" | "randrw");
        let mut read_pct = read_default;
        if mixed {
            if p.contains("rwmixread") {
                read_pct = p
                    .u64_in("rwmixread", 50, 0, 100)
                    .with_context(|| format!("job '{name}'"))? as u32;
            } else if p.contains("rwmixwrite") {
                read_pct = 100
                    - p.u64_in("rwmixwrite", 50, 0, 100)
                        .with_context(|| format!("job '{name}'"))? as u32;
            }
        } else {
            let _ = (p.raw("rwmixread"), p.raw("rwmixwrite"));
        }
        let ctx = || format!("job '{name}'");
        let bs_key = if p.contains("bs") { "bs" } else { "blocksize" };
        let _ = p.raw("blocksize");
        let bs = p.size_or(bs_key, 4096).with_context(ctx)?;
        if bs == 0 || bs % SECTOR != 0 || bs > u32::MAX as u64 * SECTOR {
            bail!(
                "job '{name}': {}: {bs} must be a non-zero multiple of 512 below 2 TiB",
                p.what(bs_key)
            );
        }
        let iodepth = p.u64_in("iodepth", 1, 1, 65536).with_context(ctx)? as u32;
        let batch_key = if p.contains("iodepth_batch_submit") {
            "iodepth_batch_submit"
        } else {
            "iodepth_batch"
        };
        let batch = p.u64_in(batch_key, 1, 0, 65536).with_context(ctx)? as u32;
        let reap_key = if p.contains("iodepth_batch_complete_min") {
            "iodepth_batch_complete_min"
        } else {
            "iodepth_batch_complete"
        };
        // fio: at least one event when the queue is full (wait_for_completions),
        // the max raised to the min (fixup_options), and to one (td_io_getevents).
        let reap_min = (p.u64_in(reap_key, 1, 0, 65536).with_context(ctx)? as u32).max(1);
        let reap_max = (p
            .u64_in("iodepth_batch_complete_max", 0, 0, 65536)
            .with_context(ctx)? as u32)
            .max(reap_min);
        let iodepth = match p.raw("ioengine") {
            None => iodepth,
            Some(e) if SYNC_ENGINES.contains(&e) => 1,
            Some(e) if ASYNC_ENGINES.contains(&e) => iodepth,
            Some(e) => bail!(
                "job '{name}': {}: '{e}' is not an engine vsim models (synchronous: {}; asynchronous: {})",
                p.what("ioengine"),
                SYNC_ENGINES.join(", "),
                ASYNC_ENGINES.join(", ")
            ),
        };
        let numjobs = p.u64_in("numjobs", 1, 1, 4096).with_context(ctx)? as u32;
        let offset = p.size_or("offset", 0).with_context(ctx)?;
        if offset >= device_bytes {
            bail!("job '{name}': offset {offset} is beyond the device ({device_bytes} bytes)");
        }
        // fio's `size=N%`: that share of the device.
        let size = match p.raw("size").and_then(|v| v.trim().strip_suffix('%')) {
            Some(pct) => {
                let f = pct
                    .trim()
                    .parse::<f64>()
                    .ok()
                    .filter(|f| *f > 0.0 && *f <= 100.0)
                    .with_context(|| {
                        format!(
                            "{}: '{pct}%' is not a percentage in (0, 100]",
                            p.what("size")
                        )
                    })
                    .with_context(ctx)?;
                (device_bytes as f64 * f / 100.0) as u64
            }
            None => p.size_or("size", device_bytes - offset).with_context(ctx)?,
        }
        .min(device_bytes - offset);
        if size < bs {
            bail!("job '{name}': size {size} is smaller than bs {bs}");
        }
        let offset_increment = p.size_or("offset_increment", 0).with_context(ctx)?;
        let number_ios = p.u64_in("number_ios", 0, 0, u64::MAX).with_context(ctx)?;
        let io_limit = match p.raw("io_size") {
            Some(_) => p.size_or("io_size", 0).with_context(ctx)?,
            None if time_based || number_ios > 0 => 0,
            None => size,
        };
        let dist = match p.raw("random_distribution") {
            None | Some("random") => Dist::Uniform,
            Some(d) => {
                let (kind, arg) = d.split_once(':').with_context(|| {
                    format!("job '{name}': {}: '{d}'", p.what("random_distribution"))
                })?;
                let v: f64 = arg.parse().with_context(|| {
                    format!("job '{name}': {}: '{d}'", p.what("random_distribution"))
                })?;
                match kind {
                    "zipf" if v > 0.0 && v != 1.0 => Dist::Zipf(v),
                    "pareto" if v > 0.0 && v < 1.0 => Dist::Pareto(v),
                    _ => bail!(
                        "job '{name}': {}: '{d}' (use random, zipf:θ with θ>0, θ≠1, or pareto:h with 0<h<1)",
                        p.what("random_distribution")
                    ),
                }
            }
        };
        let thinktime = p
            .time_in("thinktime", 0, 1_000, 0, 3600 * SEC)
            .with_context(ctx)?;
        let thinktime_blocks = p
            .u64_in("thinktime_blocks", 1, 1, 1 << 20)
            .with_context(ctx)? as u32;
        let rate_iops = p
            .f64_in("rate_iops", 0.0, 0.0, f64::MAX)
            .with_context(ctx)?;
        if rate_iops > MAX_RATE_IOPS {
            bail!(
                "job '{name}': {}: {rate_iops} is above 1e9, one I/O per nanosecond (the simulator's time resolution)",
                p.what("rate_iops")
            );
        }
        let poisson = match p.str_or("rate_process", "linear").as_str() {
            "linear" => false,
            "poisson" => true,
            other => bail!(
                "job '{name}': {}: '{other}' (linear or poisson)",
                p.what("rate_process")
            ),
        };
        let fua_writes = p.bool_or("sync", false)?;
        let sync_writes = p.bool_or("direct", false)? | fua_writes;
        let prio = p.u64_in("prio", 0, 0, 7).with_context(ctx)? as u16;
        let class = match p.raw("prioclass") {
            None if p.contains("prio") => 2,
            None => 0,
            Some(v) => match v {
                "1" | "rt" => 1,
                "2" | "be" => 2,
                "3" | "idle" => 3,
                other => bail!(
                    "job '{name}': {}: '{other}' is not 1 (realtime), 2 (best effort) or 3 (idle)",
                    p.what("prioclass")
                ),
            },
        };
        let ioprio = crate::types::ioprio_value(class, prio);
        let cgroup = match p.raw("cgroup") {
            None => 0,
            Some(n) => cgroup_id(n),
        };
        let cpu = match p.raw("cpus_allowed") {
            None => None,
            Some(v) => Some(
                first_cpu(v)
                    .with_context(|| format!("job '{name}': {}: '{v}'", p.what("cpus_allowed")))?,
            ),
        };
        let random_map = random && dist == Dist::Uniform && !p.bool_or("norandommap", false)?;
        let pct_random = p.u64_in("percentage_random", 100, 0, 100)? as u32;
        let open_loop = p.bool_or("open_loop", false)?;
        if open_loop && rate_iops <= 0.0 {
            bail!("job '{name}': open_loop=1 needs rate_iops");
        }
        let pid = p
            .raw("pid")
            .map(|v| v.parse::<u32>())
            .transpose()
            .with_context(|| format!("job '{name}': {}", p.what("pid")))?;
        let _ = p.raw("name");
        let logs = crate::metrics::iolog::LogSpec::from_params(p, &name).with_context(ctx)?;
        Ok(JobSpec {
            name,
            random,
            read_pct,
            bs,
            iodepth,
            batch: if batch == 0 {
                iodepth
            } else {
                batch.min(iodepth)
            },
            reap_min,
            reap_max,
            numjobs,
            size,
            offset,
            offset_increment,
            io_limit,
            number_ios,
            dist,
            pct_random,
            thinktime,
            thinktime_blocks,
            rate_iops,
            poisson,
            sync_writes,
            open_loop,
            pid,
            fua_writes,
            random_map,
            ioprio,
            cgroup,
            cpu,
            logs,
        })
    }
}

/// A cgroup's id from its name: FNV-1a, never 0 (the root).
pub fn cgroup_id(name: &str) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for b in name.bytes() {
        h = (h ^ b as u32).wrapping_mul(0x0100_0193);
    }
    h.max(1)
}

/// The first CPU of a cpus_allowed list (`2`, `2-5`, `1,3`, `0-3,8`).
fn first_cpu(v: &str) -> Result<u16> {
    let first = v
        .split(',')
        .next()
        .unwrap_or("")
        .split('-')
        .next()
        .unwrap_or("");
    first
        .trim()
        .parse::<u16>()
        .with_context(|| format!("'{first}' is not a CPU number"))
}

/// One clone of a job: a submitting process.
pub struct Job {
    spec: JobSpec,
    name: String,
    job_idx: u32,
    pid: u32,
    rng: Pcg64Mcg,
    zipf: Option<Zipf<f64>>,
    blocks: u64,
    base: u64,
    seq_next: u64,
    inflight: u32,
    issued: u64,
    issued_bytes: u64,
    next_at: Ns,
    since_think: u32,
    cpu: u16,
    /// The random map (`None` without one) and how many of its bits are set.
    map: Option<RandomMap>,
    map_used: u64,
    /// Uniform random offsets through the random map, nothing else drawing
    /// from `rng` ([`Job::draws_ahead`]): the next bio's draws (read?, raw
    /// block), taken one bio ahead in the same order from the same
    /// generator, so that its map word is prefetched. The map of a large
    /// device is far larger than the cache (8 MB for 512 GiB of 8 KiB
    /// blocks) and that word's load was a third of a run's time.
    ahead: Option<(bool, u64)>,
}

/// fio's random map: one bit per block, in 64-bit words. Dense up to
/// [`RandomMap::DENSE_WORDS`] words; beyond, only the words with a bit set
/// are kept, so a petabyte device costs memory in proportion to the I/Os
/// made, not to its size.
enum RandomMap {
    Dense(Vec<u64>),
    Sparse(std::collections::HashMap<u64, u64>),
}

impl RandomMap {
    /// 8 MiB of dense map: 2^26 blocks (256 GiB of 4 KiB blocks).
    const DENSE_WORDS: u64 = 1 << 20;

    fn new(words: u64) -> RandomMap {
        if words <= Self::DENSE_WORDS {
            RandomMap::Dense(vec![0; words as usize])
        } else {
            RandomMap::Sparse(Default::default())
        }
    }
    fn word(&self, w: u64) -> u64 {
        match self {
            RandomMap::Dense(v) => v[w as usize],
            RandomMap::Sparse(m) => m.get(&w).copied().unwrap_or(0),
        }
    }
    fn set(&mut self, w: u64, bit: u64) {
        match self {
            RandomMap::Dense(v) => v[w as usize] |= 1 << bit,
            RandomMap::Sparse(m) => *m.entry(w).or_insert(0) |= 1 << bit,
        }
    }
    fn clear(&mut self) {
        match self {
            RandomMap::Dense(v) => v.fill(0),
            RandomMap::Sparse(m) => m.clear(),
        }
    }
}

impl Job {
    pub fn new(
        spec: &JobSpec,
        clone: u32,
        job_idx: u32,
        seed: u64,
        device_bytes: u64,
    ) -> Result<Self> {
        let base = (clone as u64)
            .checked_mul(spec.offset_increment)
            .and_then(|x| x.checked_add(spec.offset))
            .filter(|b| b.checked_add(spec.bs).is_some_and(|e| e <= device_bytes));
        let Some(base) = base else {
            bail!(
                "job '{}': clone {clone} starts beyond the device (offset + clone x offset_increment)",
                spec.name
            );
        };
        let size = spec.size.min(device_bytes - base);
        let blocks = size / spec.bs;
        let zipf = match spec.dist {
            Dist::Zipf(t) => Some(
                Zipf::new(blocks, t)
                    .map_err(|e| anyhow::anyhow!("job '{}': zipf: {e}", spec.name))?,
            ),
            _ => None,
        };
        let name = if spec.numjobs > 1 {
            format!("{}.{clone}", spec.name)
        } else {
            spec.name.clone()
        };
        Ok(Job {
            spec: spec.clone(),
            name,
            job_idx,
            pid: spec.pid.unwrap_or(1000 + job_idx),
            rng: Pcg64Mcg::seed_from_u64(
                seed ^ (job_idx as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15),
            ),
            zipf,
            blocks,
            base,
            seq_next: 0,
            inflight: 0,
            issued: 0,
            issued_bytes: 0,
            next_at: 0,
            since_think: 0,
            cpu: spec.cpu.unwrap_or(clone.min(u16::MAX as u32) as u16),
            map: (spec.random_map && blocks > 0).then(|| RandomMap::new(blocks.div_ceil(64))),
            map_used: 0,
            ahead: None,
        })
    }

    /// Whether a bio's draws are exactly the op's (mixed jobs) then the
    /// block's, through the random map, so they can be taken a bio ahead.
    fn draws_ahead(&self) -> bool {
        self.spec.random
            && self.spec.pct_random >= 100
            && matches!(self.spec.dist, Dist::Uniform)
            && self.map.is_some()
            && !(self.spec.rate_iops > 0.0 && self.spec.poisson)
    }

    /// Whether the next bio reads (a draw only for a mixed job).
    fn draw_read(&mut self) -> bool {
        if self.spec.read_pct >= 100 {
            true
        } else if self.spec.read_pct == 0 {
            false
        } else {
            self.rng.gen_range(0..100) < self.spec.read_pct
        }
    }

    fn done(&self) -> bool {
        (self.spec.io_limit > 0 && self.issued_bytes >= self.spec.io_limit)
            || (self.spec.number_ios > 0 && self.issued >= self.spec.number_ios)
    }

    fn next_block(&mut self) -> u64 {
        let b = self.pick_block();
        self.seq_next = (b + 1) % self.blocks;
        b
    }

    fn pick_block(&mut self) -> u64 {
        if !self.spec.random
            || (self.spec.pct_random < 100 && self.rng.gen_range(0..100) >= self.spec.pct_random)
        {
            return self.seq_next;
        }
        match self.spec.dist {
            Dist::Uniform if self.map.is_some() => {
                let b = self.rng.gen_range(0..self.blocks);
                self.take_from_map(b)
            }
            Dist::Uniform => self.rng.gen_range(0..self.blocks),
            Dist::Zipf(_) => {
                let z = self
                    .zipf
                    .as_ref()
                    .map(|z| z.sample(&mut self.rng))
                    .unwrap_or(1.0);
                (z as u64).saturating_sub(1).min(self.blocks - 1)
            }
            Dist::Pareto(h) => {
                let u: f64 = self.rng.gen();
                ((self.blocks as f64 * u.powf(1.0 / (1.0 - h))) as u64).min(self.blocks - 1)
            }
        }
    }

    /// fio's random map (axmap): `b` if not yet done in this pass, else the
    /// next free block after it (wrapping); a full pass starts a new one.
    fn take_from_map(&mut self, b: u64) -> u64 {
        let blocks = self.blocks;
        let Some(map) = self.map.as_mut() else {
            return b;
        };
        if self.map_used >= blocks {
            map.clear();
            self.map_used = 0;
        }
        let words = blocks.div_ceil(64);
        let (mut w, bit) = (b / 64, b % 64);
        // Free bits of the first word at or after `b`, then whole words.
        let mut free = !map.word(w) & (u64::MAX << bit);
        let mut scanned = 0;
        loop {
            // Bits past the last block are never free.
            if w == words - 1 && !blocks.is_multiple_of(64) {
                free &= (1u64 << (blocks % 64)) - 1;
            }
            if free != 0 {
                let found = w * 64 + free.trailing_zeros() as u64;
                map.set(w, found % 64);
                self.map_used += 1;
                return found;
            }
            scanned += 1;
            w = (w + 1) % words;
            free = !map.word(w);
            if scanned > words {
                // Unreachable while map_used < blocks; stay total.
                return b;
            }
        }
    }

    fn make_bio(&mut self) -> BioSpec {
        let (read, block) = if self.draws_ahead() {
            let (read, b) = match self.ahead.take() {
                Some(d) => d,
                None => (self.draw_read(), self.rng.gen_range(0..self.blocks)),
            };
            let next = (self.draw_read(), self.rng.gen_range(0..self.blocks));
            if let Some(RandomMap::Dense(m)) = &self.map {
                crate::types::prefetch(&m[(next.1 / 64) as usize]);
            }
            self.ahead = Some(next);
            let block = self.take_from_map(b);
            self.seq_next = (block + 1) % self.blocks;
            (read, block)
        } else {
            (self.draw_read(), self.next_block())
        };
        let op = if read { Op::Read } else { Op::Write };
        let off = self.base + block * self.spec.bs;
        self.issued += 1;
        self.issued_bytes += self.spec.bs;
        BioSpec {
            op,
            sync: op == Op::Write && self.spec.sync_writes,
            sector: off / SECTOR,
            sectors: (self.spec.bs / SECTOR) as u32,
            pid: self.pid,
            job: self.job_idx,
            tag: 0,
            attrs: BioAttrs {
                fua: op == Op::Write && self.spec.fua_writes,
                preflush: false,
                cpu: self.cpu,
                ioprio: self.spec.ioprio,
                cgroup: self.spec.cgroup,
            },
        }
    }

    fn gap(&mut self) -> Ns {
        if self.spec.rate_iops <= 0.0 {
            return 0;
        }
        let mean = SEC as f64 / self.spec.rate_iops;
        if self.spec.poisson {
            let u: f64 = self.rng.gen();
            (-(1.0 - u).ln() * mean).round() as Ns
        } else {
            mean.round() as Ns
        }
    }
}

impl Source for Job {
    fn name(&self) -> &str {
        &self.name
    }

    fn progress(&self) -> Option<(u64, u64)> {
        if self.spec.number_ios > 0 {
            Some((self.issued, self.spec.number_ios))
        } else if self.spec.io_limit > 0 {
            Some((self.issued_bytes, self.spec.io_limit))
        } else {
            None
        }
    }

    fn poll(&mut self, now: Ns, out: &mut Vec<BioSpec>) -> Result<Next> {
        // One submission (one plug) at a time, of at most `batch` I/Os.
        let mut n = 0;
        if self.spec.open_loop {
            while self.next_at <= now {
                if self.done() {
                    return Ok(Next::Done);
                }
                if n >= self.spec.batch {
                    return Ok(Next::At(now));
                }
                n += 1;
                let b = self.make_bio();
                out.push(b);
                self.inflight += 1;
                self.next_at += self.gap();
            }
            return Ok(Next::At(self.next_at));
        }
        loop {
            if self.done() {
                return Ok(if self.inflight == 0 {
                    Next::Done
                } else {
                    Next::Wait
                });
            }
            if self.inflight >= self.spec.iodepth {
                return Ok(Next::Wait);
            }
            if self.next_at > now {
                return Ok(Next::At(self.next_at));
            }
            if n >= self.spec.batch {
                return Ok(Next::At(now));
            }
            n += 1;
            let b = self.make_bio();
            out.push(b);
            self.inflight += 1;
            self.since_think += 1;
            let mut next = now;
            if self.spec.rate_iops > 0.0 {
                next = self.next_at.max(now.saturating_sub(SEC)) + self.gap();
            }
            if self.spec.thinktime > 0 && self.since_think >= self.spec.thinktime_blocks {
                self.since_think = 0;
                next = next.max(now + self.spec.thinktime);
            }
            self.next_at = next;
        }
    }

    fn one_task(&self) -> bool {
        // An open-loop job stands for arrivals from many clients, not one task.
        !self.spec.open_loop
    }

    fn reap_batch(&self) -> (u32, u32) {
        (self.spec.reap_min, self.spec.reap_max)
    }

    fn complete(&mut self, _spec: &BioSpec, _now: Ns) {
        self.inflight = self.inflight.saturating_sub(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn first_bio(kv: &str, clone: u32) -> BioSpec {
        let p = Params::parse_kv(kv).unwrap();
        let spec = JobSpec::from_params(&p, "j", 1 << 30, false).unwrap();
        let mut job = Job::new(&spec, clone, 0, 1, 1 << 30).unwrap();
        let mut out = Vec::new();
        job.poll(0, &mut out).unwrap();
        out[0]
    }

    #[test]
    fn priority_cgroup_cpu_and_o_sync_reach_the_bios() {
        let b = first_bio("rw=write,prio=3", 0);
        assert_eq!(b.attrs.ioprio, 2 << 13 | 3, "best effort when only prio");
        assert!(!b.attrs.fua);
        let b = first_bio("rw=write,prioclass=rt,prio=1,sync=1,cgroup=db", 2);
        assert_eq!(b.attrs.ioprio, 1 << 13 | 1);
        assert!(b.attrs.fua && b.sync);
        assert_eq!(b.attrs.cgroup, cgroup_id("db"));
        assert_ne!(b.attrs.cgroup, cgroup_id("web"));
        assert_eq!(b.attrs.cpu, 2, "clone number");
        let b = first_bio("rw=write,direct=1,cpus_allowed=4-7", 2);
        assert!(b.sync && !b.attrs.fua && b.attrs.ioprio == 0 && b.attrs.cgroup == 0);
        assert_eq!(b.attrs.cpu, 4);
        // Reads never carry FUA.
        assert!(!first_bio("rw=read,sync=1", 0).attrs.fua);
        let err = |kv: &str| {
            let p = Params::parse_kv(kv).unwrap();
            format!(
                "{:#}",
                JobSpec::from_params(&p, "j", 1 << 30, false).unwrap_err()
            )
        };
        assert!(err("prio=8").contains("'prio'"));
        assert!(err("prioclass=4").contains("'prioclass'"));
        assert!(err("cpus_allowed=x").contains("'cpus_allowed'"));
        assert!(err("fsync=1").contains("unsupported option 'fsync'"));
    }

    /// fio's `percentage_random`: that share of a random job's blocks is
    /// drawn at random, the rest continue from the previous block.
    #[test]
    fn percentage_random_mixes_random_and_sequential_blocks() {
        let follows = |kv: &str| {
            let p = Params::parse_kv(kv).unwrap();
            let spec = JobSpec::from_params(&p, "j", 1 << 30, false).unwrap();
            let mut job = Job::new(&spec, 0, 0, 7, 1 << 30).unwrap();
            let mut prev = job.next_block();
            let mut seq = 0;
            for _ in 0..10_000 {
                let b = job.next_block();
                seq += usize::from(b == prev + 1);
                prev = b;
            }
            seq as f64 / 10_000.0
        };
        assert!(follows("rw=randwrite,bs=4k,norandommap=1") < 0.01);
        let half = follows("rw=randwrite,bs=4k,norandommap=1,percentage_random=50");
        assert!((half - 0.5).abs() < 0.03, "{half}");
        assert!(follows("rw=randread,bs=4k,percentage_random=0") > 0.99);
        let p = Params::parse_kv("rw=randread,percentage_random=101").unwrap();
        assert!(JobSpec::from_params(&p, "j", 1 << 30, false).is_err());
    }

    /// fio's random map: each pass covers every block once; `norandommap`
    /// draws with replacement.
    #[test]
    fn random_offsets_cover_every_block_once_per_pass_unless_norandommap() {
        let blocks = 1000u64; // not a multiple of 64: the last word is partial
        let distinct = |kv: &str, n: u64| {
            let p = Params::parse_kv(kv).unwrap();
            let spec = JobSpec::from_params(&p, "j", 1 << 30, false).unwrap();
            let mut job = Job::new(&spec, 0, 0, 7, 1 << 30).unwrap();
            let mut seen = std::collections::HashMap::new();
            for _ in 0..n {
                let b = job.next_block();
                assert!(b < blocks);
                *seen.entry(b).or_insert(0u32) += 1;
            }
            seen
        };
        let map = distinct("rw=randwrite,bs=4k,size=4000k", blocks);
        assert_eq!(map.len() as u64, blocks, "one pass: every block once");
        let two = distinct("rw=randwrite,bs=4k,size=4000k", 2 * blocks);
        assert!(
            two.values().all(|&n| n == 2),
            "two passes: every block twice"
        );
        let free = distinct("rw=randwrite,bs=4k,size=4000k,norandommap=1", blocks);
        // Drawing with replacement leaves about 1/e of the blocks out.
        assert!(
            (300..450).contains(&(blocks - free.len() as u64)),
            "{}",
            free.len()
        );
    }

    /// The sparse random map (a petabyte device's) draws the same blocks as
    /// the dense one, pass after pass.
    #[test]
    fn sparse_random_map_draws_as_the_dense_one() {
        let p = Params::parse_kv("rw=randwrite,bs=4k,size=4000k").unwrap();
        let spec = JobSpec::from_params(&p, "j", 1 << 30, false).unwrap();
        let mut dense = Job::new(&spec, 0, 0, 7, 1 << 30).unwrap();
        let mut sparse = Job::new(&spec, 0, 0, 7, 1 << 30).unwrap();
        assert!(matches!(dense.map, Some(RandomMap::Dense(_))));
        sparse.map = Some(RandomMap::Sparse(Default::default()));
        for _ in 0..2500 {
            assert_eq!(dense.next_block(), sparse.next_block());
        }
        // A petabyte of 4 KiB blocks: 2^38 bits would be 32 GiB dense.
        let p = Params::parse_kv("rw=randread,bs=4k").unwrap();
        let spec = JobSpec::from_params(&p, "j", 1 << 50, false).unwrap();
        let job = Job::new(&spec, 0, 0, 7, 1 << 50).unwrap();
        assert!(matches!(job.map, Some(RandomMap::Sparse(_))));
    }
}
