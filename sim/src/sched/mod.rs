//! I/O schedulers. The [`Scheduler`] trait mirrors the blk-mq elevator hooks
//! (`insert_requests`, `dispatch_request`, `has_work`, `bio_merge`,
//! `finish_request`) plus a timer, so a policy reads like its kernel counterpart.
//!
//! Adding a scheduler: one new file implementing [`Scheduler`] and one line in
//! [`REGISTRY`].

use crate::params::{OptionDoc, Params};
use crate::types::{BioSpec, Ns, Op, ReqId, ReqTable, Request, NONE};
use anyhow::{Context, Result};
use rustc_hash::FxHashMap as HashMap;
use std::collections::BTreeSet;

pub mod bfq;
pub mod bid;
pub mod cfq;
pub mod deadline;
pub mod dlcore;
pub mod drive;
pub mod fairq;
pub mod kyber;
pub mod mqdeadline;
pub mod mqfifo;
pub mod noop;
pub mod tunable;
pub mod veloces;

pub use tunable::{Tunable, TunableValues};

use crate::types::DeviceInfo;

/// A flow's share of the device, for the schedulers that share it between
/// flows (sfqd, rbfq, mclock). A flow is a workload source, a job or a trace
/// ([`Request::job`]); its options `weight`, `reservation` and `limit` set
/// these ([`FlowQos::from_params`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FlowQos {
    /// Relative share of what is left after reservations (> 0).
    pub weight: f64,
    /// Minimum rate, requests per second (0: none).
    pub reservation: f64,
    /// Maximum rate, requests per second (0: none).
    pub limit: f64,
}

impl Default for FlowQos {
    fn default() -> Self {
        FlowQos {
            weight: 1.0,
            reservation: 0.0,
            limit: 0.0,
        }
    }
}

/// The options a job or trace takes for its flow.
pub const FLOW_OPTIONS: &[&str] = &["weight", "reservation", "limit"];

impl FlowQos {
    /// From a job's or trace's options `weight` (default 1), `reservation`
    /// and `limit` (requests per second; default 0, none).
    pub fn from_params(p: &Params) -> Result<Self> {
        let q = FlowQos {
            weight: p.f64_in("weight", 1.0, 1e-6, 1e9)?,
            reservation: p.f64_in("reservation", 0.0, 0.0, 1e9)?,
            limit: p.f64_in("limit", 0.0, 0.0, 1e9)?,
        };
        if q.limit > 0.0 && q.limit < q.reservation {
            anyhow::bail!(
                "limit {} is below reservation {} (requests per second)",
                q.limit,
                q.reservation
            );
        }
        Ok(q)
    }
    /// True when the options set nothing (every scheduler serves the flow alike).
    pub fn is_default(&self) -> bool {
        *self == FlowQos::default()
    }
}

/// Everything a scheduler hook may touch besides its own state.
pub struct Ctx<'a> {
    pub now: Ns,
    pub table: &'a mut ReqTable,
    /// Largest request the block layer may build by merging (max_sectors_kb).
    pub max_sectors: u32,
}

impl Ctx<'_> {
    pub fn rq(&self, id: ReqId) -> &Request {
        self.table.get(id)
    }
}

/// The elevator interface.
pub trait Scheduler: Send {
    fn name(&self) -> &'static str;
    /// False for blk-mq's `none` (the `noop` model): no scheduler tags, so
    /// the block layer holds at most the device's queue depth of requests
    /// (`nr_requests` = `queue_depth`); an elevator gets 2 × min(depth, 128)
    /// (`blk_mq_init_sched`).
    fn elevator(&self) -> bool {
        true
    }
    /// `limit_depth`: the shallow depth a request of this kind may take its
    /// tag under (`None`: any free tag). The engine lets at most that many
    /// such requests hold tags at once (the whole-map reading of
    /// `shallow_depth`, as 6.12.y and later apply it; 6.1 applies it per
    /// sbitmap word, which the module converts to the same share).
    /// `bio` is the one the request is allocated for (its op, `op_is_sync`
    /// and submitter), at `now`.
    fn limit_depth(&self, _bio: &BioSpec, _now: Ns, _nr_requests: u32) -> Option<u32> {
        None
    }
    /// A new request enters the scheduler (`insert_requests`).
    fn insert(&mut self, ctx: &mut Ctx, rq: ReqId);
    /// The device has a free slot: hand over the next request, or `None` to hold
    /// everything for now (`dispatch_request`).
    fn dispatch(&mut self, ctx: &mut Ctx) -> Option<ReqId>;
    /// True while the scheduler holds any request (`has_work`).
    fn has_work(&self) -> bool;
    /// Try to merge a bio (already in the table) into a queued request. Returns
    /// true when merged; the bio then belongs to that request (`bio_merge`).
    fn bio_merge(&mut self, _ctx: &mut Ctx, _bio: u32) -> bool {
        false
    }
    /// A dispatched request completed (`finish_request`/`completed_request`).
    fn completed(&mut self, _ctx: &mut Ctx, _rq: ReqId) {}
    /// When the scheduler holds requests back, the time at which dispatch should be
    /// retried even if nothing else happens (hrtimer / idle-slice timer).
    fn next_timer(&self, _now: Ns) -> Option<Ns> {
        None
    }
    /// Current tunables, as sysfs shows them.
    fn tunables(&self) -> Vec<(&'static str, String)> {
        Vec::new()
    }
    /// Scheduler statistics (debugfs), as JSON.
    fn stats(&self) -> serde_json::Value {
        serde_json::Value::Null
    }
    /// Whether this scheduler may give requests up to another device
    /// (asked once: the engine looks for offloads only where it may).
    fn offloads(&self) -> bool {
        false
    }
    /// Requests this scheduler gives up to another device (BID-Hybrid's
    /// tier placement), taken by the engine after each dispatch round; the
    /// placement stage decides where they go.
    fn take_offloaded(&mut self, _out: &mut Vec<ReqId>) {}
    /// The placement stage refused an offloaded request (no other device, or
    /// no room there): it stays with this scheduler, which must not offer it
    /// again.
    fn offload_refused(&mut self, ctx: &mut Ctx, rq: ReqId) {
        self.insert(ctx, rq);
    }
    /// Flow `flow`'s share (before the run). Returns false where the
    /// scheduler has no notion of flows and ignores it.
    fn set_flow(&mut self, _flow: u32, _qos: FlowQos) -> bool {
        false
    }
}

/// Idle per-process queues a scheduler keeps (cfq, bfq, bid): past twice as
/// many processes, the idle ones are forgotten as if their processes had
/// exited, so a trace of 200,000 PIDs costs what one of 2,000 does.
pub const MAX_IDLE_QUEUES: usize = 1024;

/// The tags a request under a shallow depth may take out of `nr_requests`:
/// `sbitmap_get_shallow` applies the depth per sbitmap word, `per_word(word
/// size)` of each (`sbitmap_calculate_shift`: 64-bit words, shrunk while 4
/// words would not fit). 0 where a word's depth rounds to 0, which the
/// engine reads as no limit, as `__blk_mq_get_tag` does.
pub fn shallow_tags(nr_requests: u32, per_word: impl Fn(u32) -> u32) -> u32 {
    let mut shift = 6u32;
    if nr_requests >= 4 {
        while (4u32 << shift) > nr_requests {
            shift -= 1;
        }
    }
    let word = 1u32 << shift;
    let d = per_word(word);
    (nr_requests / word) * d + (nr_requests % word).min(d)
}

/// Constructor of a scheduler from its tunables.
pub type Factory = fn(&Params, &DeviceInfo) -> Result<Box<dyn Scheduler>>;

/// Name, one-line description, constructor, tunables (declared once, in the
/// scheduler's file: see [`tunable`]).
pub const REGISTRY: &[(&str, &str, Factory, &[Tunable])] = &[
    (
        "noop",
        "FIFO with back/front merging (blk-mq `none` plus merging)",
        noop::new,
        noop::TUNABLES,
    ),
    (
        "deadline",
        "legacy single-queue deadline (Linux 2.6-4.x, the seeds' kernels): read/write FIFOs with expiry, sorted batches",
        deadline::new,
        deadline::TUNABLES,
    ),
    (
        "mq-deadline",
        "mq-deadline as Linux 6.12 has it: per-class FIFOs and sorted batches, the sweep resumed by position",
        mqdeadline::new,
        mqdeadline::TUNABLES,
    ),
    (
        "mq-deadline-6.1",
        "mq-deadline as Linux 6.1 has it (next_rq: a sweep resumes after the last request it dispatched, missing those inserted ahead of it)",
        mqdeadline::new_6_1,
        mqdeadline::TUNABLES,
    ),
    (
        "cfq",
        "legacy CFQ: per-process sync queues, time slices, idling",
        cfq::new,
        cfq::TUNABLES,
    ),
    (
        "veloces",
        "flash-aware: read preference, erase-block write bundling",
        veloces::new,
        veloces::TUNABLES,
    ),
    (
        "bid",
        "BID-HDD: per-process staging queues, adaptive wait and deadline timers, one queue flushed at a time (BID-Hybrid with pf_threshold and a placement stage)",
        bid::new,
        bid::TUNABLES,
    ),
    (
        "mq-fifo",
        "one FIFO per process, round robin (BID-Hybrid's multi-queue FIFO for the SSD tier)",
        mqfifo::new,
        mqfifo::TUNABLES,
    ),
    (
        "sfqd",
        "SFQ(D): start-time fair queueing over flows (jobs), weights, at most D requests on the device",
        fairq::new_sfqd,
        fairq::SFQD_TUNABLES,
    ),
    (
        "rbfq",
        "RBFQ: reservation-based fair queueing (a local phase meets each flow's reservation, a global phase shares the rest by weight)",
        fairq::new_rbfq,
        fairq::RBFQ_TUNABLES,
    ),
    (
        "mclock",
        "mClock: reservation, weight and limit per flow with three tags (Gulati et al., OSDI 2010)",
        fairq::new_mclock,
        fairq::MCLOCK_TUNABLES,
    ),
    (
        "bfq",
        "BFQ model: per-process queues with budgets in sectors, B-WF2Q+ by weight, idling on rotational devices",
        bfq::new,
        bfq::TUNABLES,
    ),
    (
        "bfq-6.1",
        "bfq with Linux 6.1's tag depths (per sbitmap word: none on a map of fewer than 4 tags)",
        bfq::new_6_1,
        bfq::TUNABLES,
    ),
    (
        "kyber",
        "kyber: per-domain tokens sized by latency targets, FIFO per domain",
        kyber::new,
        kyber::TUNABLES,
    ),
    (
        "kyber-6.1",
        "kyber with Linux 6.1's async depth (75 % of each sbitmap word)",
        kyber::new_6_1,
        kyber::TUNABLES,
    ),
];

/// The tunables scheduler `name` declares (name, default, range, help), for
/// listing; `None` for an unknown scheduler.
pub fn tunables(name: &str) -> Option<&'static [Tunable]> {
    REGISTRY.iter().find(|r| r.0 == name).map(|r| r.3)
}

/// Scheduler `name`'s tunables as declared, as JSON: name, default, min, max,
/// unit and help each (`vsim list --json`, the Python API's `tunables`); `None`
/// for an unknown scheduler.
pub fn tunables_json(name: &str) -> Option<serde_json::Value> {
    let decl = tunables(name)?;
    Some(
        decl.iter()
            .map(|t| {
                serde_json::json!({"name": t.name, "default": t.default, "min": t.min,
                                   "max": t.max, "unit": t.unit(), "help": t.help,
                                   "sysfs": is_sysfs(name, t.name)})
            })
            .collect(),
    )
}

/// Whether tunable `tunable` of scheduler `name` is a file of the kernel's
/// `queue/iosched/` (what a tuned setting may be written to): veloces's are
/// the module's table (`kernel/veloces-tunables.h`), not the model's own
/// `hz`; the other models' are their kernel schedulers' sysfs names.
pub fn is_sysfs(name: &str, tunable: &str) -> bool {
    if name == "veloces" {
        return veloces::MODULE_TUNABLES.iter().any(|t| t.name == tunable);
    }
    tunables(name).is_some_and(|d| d.iter().any(|t| t.name == tunable))
}

/// Every scheduler's name, in registry order (`vsim compare`'s default list).
pub fn names() -> Vec<&'static str> {
    REGISTRY.iter().map(|r| r.0).collect()
}

/// Scheduler `name`'s tunables as `vsim list` shows them, from their one
/// declaration ([`tunables`]): range and help as declared; the default is
/// the value a scheduler built without options for a device like `dev`
/// reports (a few defaults follow the device, e.g. veloces's `bundle_kb`).
pub fn options(name: &str, dev: &DeviceInfo) -> Result<Vec<OptionDoc>> {
    let decl = tunables(name).with_context(|| format!("unknown scheduler '{name}'"))?;
    let in_effect = make(name, &Params::new(), dev)?.tunables();
    Ok(decl
        .iter()
        .map(|t| OptionDoc {
            name: t.name.to_string(),
            default: in_effect
                .iter()
                .find(|(n, _)| *n == t.name)
                .map_or_else(|| t.default.to_string(), |(_, v)| v.clone()),
            range: if t.is_switch() {
                "0|1".into()
            } else {
                format!("{}..={}", t.min, t.max)
            },
            help: t.help.to_string(),
        })
        .collect())
}

/// The one option every scheduler spec takes beside its tunables: the host's
/// CPU time per completed I/O under that scheduler (`Sim::set_host_cpu`), in
/// µs: what it costs to complete, reap and resubmit an I/O through it. It is
/// the host's, not the scheduler's, so a spec carries it (`vlab fidelity`
/// measures it per scheduler on an emulated guest); 0 by default.
pub const HOST_CPU: (&str, &str) = (
    "cpu_us",
    "host CPU per completed I/O under this scheduler, µs (one CPU for every job; 0 = free)",
);

/// [`HOST_CPU`] from a scheduler spec's options, in ns (read before [`make`],
/// which then does not count it as unknown).
pub fn host_cpu_ns(params: &Params) -> Result<crate::types::Ns> {
    host_ns(params, HOST_CPU.0)
}

/// A host option of a scheduler spec (µs, 0 by default) in ns.
fn host_ns(params: &Params, key: &str) -> Result<crate::types::Ns> {
    let us = params.f64_in(key, 0.0, 0.0, 1e6)?;
    Ok((us * 1e3).round() as crate::types::Ns)
}

/// The second host option every scheduler spec takes: the host's time from a
/// completion to the device's next request under that scheduler
/// (`Sim::set_host_turnaround`), in µs: the path on the host's CPU that frees
/// the tag and dispatches again (the restart's kworker under an elevator;
/// waking the task asleep for a tag and its submission under none). On a
/// device kept busy it is the device's idle time per request; `vlab fidelity`
/// measures it per scheduler on one busy tag. 0 by default.
pub const HOST_TURNAROUND: (&str, &str) = (
    "turnaround_us",
    "host time from a completion to the device's next request under this scheduler, µs (0 = at once)",
);

/// [`HOST_TURNAROUND`] from a scheduler spec's options, in ns (read before
/// [`make`], as [`host_cpu_ns`]).
pub fn host_turnaround_ns(params: &Params) -> Result<crate::types::Ns> {
    host_ns(params, HOST_TURNAROUND.0)
}

/// The third host option every scheduler spec takes: whether, after an
/// interrupt, the task its first completion woke to reap runs before the
/// queue's restart (`Sim::set_reaper_first`; 6.1's CFS order, traced in the
/// lab; 6.12's EEVDF runs kblockd's worker first). Only with `cpu_us` > 0.
pub const HOST_REAPER_FIRST: (&str, &str) = (
    "reaper_first",
    "after an interrupt, the task its first completion woke runs before the queue's restart (0|1; with cpu_us > 0)",
);

/// [`HOST_REAPER_FIRST`] from a scheduler spec's options (read before [`make`]).
pub fn host_reaper_first(params: &Params) -> Result<bool> {
    params.bool_or(HOST_REAPER_FIRST.0, false)
}

/// The fourth and fifth host options: a third task on the guest's CPU beside
/// the I/O's (fio's main process), runnable `lag_run_us` from every multiple
/// of `lag_every_us` of model time; a task that goes to sleep while it is
/// runnable keeps a positive lag and runs first at its next race for a freed
/// request (6.12's EEVDF; `Sim::set_lag_task`). 0 (the default): no lag kept
/// (6.1's CFS).
pub const HOST_LAG_EVERY: (&str, &str) = (
    "lag_every_us",
    "a third task (fio's main process) becomes runnable every this many µs; a task sleeping while it is runnable keeps a lag and wins its next race for a request (EEVDF; 0 = none)",
);
pub const HOST_LAG_RUN: (&str, &str) = (
    "lag_run_us",
    "how long that third task stays runnable each time, µs (with lag_every_us)",
);

/// [`HOST_LAG_EVERY`] and [`HOST_LAG_RUN`] from a scheduler spec's options, in
/// ns (read before [`make`]).
pub fn host_lag_ns(params: &Params) -> Result<(crate::types::Ns, crate::types::Ns)> {
    Ok((
        host_ns(params, HOST_LAG_EVERY.0)?,
        host_ns(params, HOST_LAG_RUN.0)?,
    ))
}

/// The host options every scheduler spec takes beside its tunables.
pub const HOST_OPTIONS: [(&str, &str); 5] = [
    HOST_CPU,
    HOST_TURNAROUND,
    HOST_REAPER_FIRST,
    HOST_LAG_EVERY,
    HOST_LAG_RUN,
];

/// Build a scheduler by name with tunables (unknown tunables are an error).
pub fn make(name: &str, params: &Params, dev: &DeviceInfo) -> Result<Box<dyn Scheduler>> {
    for (n, _, f, _) in REGISTRY {
        if *n == name {
            let s = f(params, dev)?;
            params.check_all_used(&format!("scheduler {name}"))?;
            return Ok(s);
        }
    }
    anyhow::bail!("unknown scheduler '{name}' (known: {})", names().join(", "))
}

/// Requests keyed by a sector, every one of them (the kernel's `elv_rqhash`):
/// a head per key and a doubly-linked list through the requests, the most
/// recently added first, as `hash_add` puts it at the bucket's head.
#[derive(Default)]
struct MultiKey {
    head: HashMap<u64, ReqId>,
    /// (prev, next) per request id; `NONE` ends a list.
    link: Vec<(ReqId, ReqId)>,
}

impl MultiKey {
    fn add(&mut self, key: u64, id: ReqId) {
        let i = id as usize;
        if self.link.len() <= i {
            self.link.resize(i + 1, (NONE, NONE));
        }
        let old = self.head.insert(key, id).unwrap_or(NONE);
        self.link[i] = (NONE, old);
        if old != NONE {
            self.link[old as usize].0 = id;
        }
    }
    /// Remove `id` from key `key`'s list; false (a no-op) when it is not there.
    fn remove(&mut self, key: u64, id: ReqId) -> bool {
        let Some(&(prev, next)) = self.link.get(id as usize) else {
            return false;
        };
        if prev == NONE {
            if self.head.get(&key) != Some(&id) {
                return false;
            }
            if next == NONE {
                self.head.remove(&key);
            } else {
                self.head.insert(key, next);
            }
        } else {
            self.link[prev as usize].1 = next;
        }
        if next != NONE {
            self.link[next as usize].0 = prev;
        }
        self.link[id as usize] = (NONE, NONE);
        true
    }
    /// The most recently added request under `key` (`elv_rqhash_find`).
    fn first(&self, key: u64) -> Option<ReqId> {
        self.head.get(&key).copied()
    }
    fn is_empty(&self) -> bool {
        self.head.is_empty()
    }
}

/// Sector-sorted index of queued requests with back/front merge lookup
/// (the elevator's rbtree plus its merge hash). Several requests may share an
/// end (or start) sector: each stays findable until it leaves.
#[derive(Default)]
pub struct SectorIndex {
    sorted: BTreeSet<(u64, ReqId)>,
    by_end: MultiKey,
    /// Start-sector lookup where there is no sorted tree (merge-only indices).
    by_start: MultiKey,
    len: usize,
    /// Merge lookups only (no sector order): what noop needs, and cheaper.
    unsorted: bool,
}

impl SectorIndex {
    /// An index for merge lookups only; the sector-order methods see nothing.
    pub fn merge_only() -> Self {
        SectorIndex {
            unsorted: true,
            ..Self::default()
        }
    }

    pub fn add(&mut self, r: &Request, id: ReqId) {
        if self.unsorted {
            self.by_start.add(r.sector, id);
        } else {
            self.sorted.insert((r.sector, id));
        }
        self.by_end.add(r.end(), id);
        self.len += 1;
    }
    /// Take `id` (as `r` describes it now) out of the index; a no-op when it
    /// is not there.
    pub fn remove(&mut self, r: &Request, id: ReqId) {
        let present = if self.unsorted {
            self.by_start.remove(r.sector, id)
        } else {
            self.sorted.remove(&(r.sector, id))
        };
        let _ = self.by_end.remove(r.end(), id);
        if present {
            self.len -= 1;
        }
    }
    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.by_end.is_empty()
    }
    /// Request ending exactly at `sector` (back-merge candidate): the most
    /// recently queued of those that do.
    pub fn ending_at(&self, sector: u64) -> Option<ReqId> {
        self.by_end.first(sector)
    }
    /// Request starting exactly at `sector` (front-merge candidate): the
    /// first in sector order (`elv_rb_find`), or the most recent without a tree.
    pub fn starting_at(&self, sector: u64) -> Option<ReqId> {
        if self.unsorted {
            return self.by_start.first(sector);
        }
        self.sorted
            .range((sector, 0)..)
            .next()
            .filter(|&&(s, _)| s == sector)
            .map(|&(_, id)| id)
    }
    /// First request at or after `sector` in sector order.
    pub fn at_or_after(&self, sector: u64) -> Option<ReqId> {
        self.sorted.range((sector, 0)..).next().map(|&(_, id)| id)
    }
    /// Next request after `(sector, id)` in sector order.
    pub fn next_after(&self, sector: u64, id: ReqId) -> Option<ReqId> {
        use std::ops::Bound::{Excluded, Unbounded};
        self.sorted
            .range((Excluded((sector, id)), Unbounded))
            .next()
            .map(|&(_, i)| i)
    }
    pub fn first(&self) -> Option<ReqId> {
        self.sorted.iter().next().map(|&(_, id)| id)
    }
    pub fn iter(&self) -> impl Iterator<Item = ReqId> + '_ {
        self.sorted.iter().map(|&(_, id)| id)
    }
}

/// Which side a bio merged on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MergeKind {
    Back,
    Front,
}

/// A scheduler's queued requests as the merge code sees them: the merge hash
/// (back merges), the sort tree (front merges), the `allow_merge` hook, and
/// the structures to re-key when a merge changes a request's sectors.
pub trait MergeIndex {
    /// The request a bio starting at `sector` would back-merge into.
    fn back_candidate(&self, op: Op, sector: u64) -> Option<ReqId>;
    /// The request a bio ending at `end` would front-merge into.
    fn front_candidate(&self, op: Op, end: u64) -> Option<ReqId>;
    /// The scheduler's veto (`allow_merge`); `r` is request `rq`.
    fn allow_merge(&self, _rq: ReqId, _r: &Request, _bio: &BioSpec) -> bool {
        true
    }
    /// `rq` (still as `r`) is about to grow on side `kind`: take it out of
    /// what is keyed by that side's sector.
    fn unkey(&mut self, r: &Request, rq: ReqId, kind: MergeKind);
    /// ... and put it back, as `r` is now.
    fn rekey(&mut self, r: &Request, rq: ReqId, kind: MergeKind);
}

/// A merge index that merges a bio only into a request of its own queue:
/// the same process (mq-fifo, BID's staging queues) or the same flow (the
/// fair queueing schedulers).
pub struct QueueMergeIndex {
    pub idx: SectorIndex,
    pub by_flow: bool,
}

impl QueueMergeIndex {
    pub fn by_pid() -> Self {
        QueueMergeIndex {
            idx: SectorIndex::merge_only(),
            by_flow: false,
        }
    }
    pub fn by_flow() -> Self {
        QueueMergeIndex {
            idx: SectorIndex::merge_only(),
            by_flow: true,
        }
    }
}

impl MergeIndex for QueueMergeIndex {
    fn back_candidate(&self, op: Op, sector: u64) -> Option<ReqId> {
        self.idx.back_candidate(op, sector)
    }
    fn front_candidate(&self, op: Op, end: u64) -> Option<ReqId> {
        self.idx.front_candidate(op, end)
    }
    fn allow_merge(&self, _rq: ReqId, r: &Request, bio: &BioSpec) -> bool {
        if self.by_flow {
            r.job == bio.job
        } else {
            r.pid == bio.pid
        }
    }
    fn unkey(&mut self, r: &Request, rq: ReqId, kind: MergeKind) {
        self.idx.unkey(r, rq, kind)
    }
    fn rekey(&mut self, r: &Request, rq: ReqId, kind: MergeKind) {
        self.idx.rekey(r, rq, kind)
    }
}

impl MergeIndex for SectorIndex {
    fn back_candidate(&self, _op: Op, sector: u64) -> Option<ReqId> {
        self.ending_at(sector)
    }
    fn front_candidate(&self, _op: Op, end: u64) -> Option<ReqId> {
        self.starting_at(end)
    }
    fn unkey(&mut self, r: &Request, rq: ReqId, _kind: MergeKind) {
        self.remove(r, rq);
    }
    fn rekey(&mut self, r: &Request, rq: ReqId, _kind: MergeKind) {
        self.add(r, rq);
    }
}

/// Whether a bio may join request `r` at all (`blk_rq_merge_ok` plus the
/// size limit of `ll_back_merge_fn`): neither carries REQ_NOMERGE_FLAGS
/// (PREFLUSH, FUA: `rq_mergeable`, `bio_mergeable`), same operation, same
/// cgroup (`blk_cgroup_mergeable`) and I/O priority, and the result within
/// max_sectors. Sync-ness does not matter to the block layer (schedulers that
/// care say so in `allow_merge`). The plug merge and every scheduler use it.
pub fn bio_fits(r: &Request, spec: &BioSpec, max_sectors: u32) -> bool {
    r.op == spec.op && r.sectors + spec.sectors <= max_sectors && attrs_merge(&r.attrs, &spec.attrs)
}

/// Whether two requests may merge (`attempt_merge`, `ll_merge_requests_fn`):
/// neither carries REQ_NOMERGE_FLAGS, same operation, I/O priority and
/// cgroup, the result within max_sectors.
pub fn requests_fit(a: &Request, b: &Request, max_sectors: u32) -> bool {
    a.op == b.op && a.sectors + b.sectors <= max_sectors && attrs_merge(&a.attrs, &b.attrs)
}

/// The attribute rules both merges share: neither side carries
/// REQ_NOMERGE_FLAGS (PREFLUSH, FUA), same I/O priority and cgroup.
#[inline]
fn attrs_merge(a: &crate::types::BioAttrs, b: &crate::types::BioAttrs) -> bool {
    !(a.fua || a.preflush || b.fua || b.preflush) && a.ioprio == b.ioprio && a.cgroup == b.cgroup
}

/// Find a request a bio can merge into and merge it: the one merge path of
/// every scheduler (`blk_mq_sched_try_merge`: `elv_merge` looks up a back
/// merge in the merge hash, then a front merge in the sort tree when
/// `front_merges`; `bio_attempt_back_merge`/`_front_merge` join the bio).
/// `idx` is re-keyed here; what follows a merge (`elv_merged_request`, the
/// request-to-request merges) is the caller's.
pub fn try_merge(
    ctx: &mut Ctx,
    idx: &mut impl MergeIndex,
    bio: u32,
    front_merges: bool,
) -> Option<(ReqId, MergeKind)> {
    let spec = ctx.table.bio(bio).spec;
    let end = spec.sector + spec.sectors as u64;
    let mut cands = [
        (idx.back_candidate(spec.op, spec.sector), MergeKind::Back),
        (None, MergeKind::Front),
    ];
    if front_merges {
        cands[1].0 = idx.front_candidate(spec.op, end);
    }
    for (cand, kind) in cands {
        let Some(id) = cand else { continue };
        let r = ctx.table.get(id);
        if !bio_fits(r, &spec, ctx.max_sectors) || !idx.allow_merge(id, r, &spec) {
            continue;
        }
        let r = r.clone();
        idx.unkey(&r, id, kind);
        match kind {
            MergeKind::Back => ctx.table.back_merge_bio(id, bio),
            MergeKind::Front => ctx.table.front_merge_bio(id, bio),
        }
        idx.rekey(ctx.table.get(id), id, kind);
        return Some((id, kind));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{BioAttrs, BioSpec};

    fn dev() -> DeviceInfo {
        DeviceInfo::flash(1 << 30, 1)
    }

    /// Submit one bio to `s`: merged (true) or inserted as a new request.
    fn submit_bio(s: &mut Box<dyn Scheduler>, t: &mut ReqTable, spec: BioSpec) -> bool {
        let bio = t.alloc_bio(spec, 0);
        let mut ctx = Ctx {
            now: 0,
            table: t,
            max_sectors: 1024,
        };
        if s.bio_merge(&mut ctx, bio) {
            return true;
        }
        let rq = ctx.table.alloc_req(bio, 0);
        s.insert(&mut ctx, rq);
        false
    }

    #[test]
    fn every_registered_scheduler_is_in_the_default_list_and_builds() {
        let n = names();
        assert_eq!(n.len(), REGISTRY.len());
        for name in n {
            assert_eq!(make(name, &Params::new(), &dev()).unwrap().name(), name);
        }
    }

    #[test]
    fn the_merge_hash_holds_every_request_ending_at_a_sector() {
        for sorted in [true, false] {
            let mut t = ReqTable::new();
            let mut idx = if sorted {
                SectorIndex::default()
            } else {
                SectorIndex::merge_only()
            };
            let mut add = |t: &mut ReqTable, sector, sectors| {
                let b = t.alloc_bio(BioSpec::scripted(Op::Write, false, sector, sectors, 0), 0);
                let rq = t.alloc_req(b, 0);
                idx.add(t.get(rq), rq);
                rq
            };
            let a = add(&mut t, 0, 16);
            let b = add(&mut t, 8, 8);
            let c = add(&mut t, 12, 4);
            assert_eq!(idx.ending_at(16), Some(c), "the most recent first");
            idx.remove(&t.get(c).clone(), c);
            assert_eq!(idx.ending_at(16), Some(b));
            idx.remove(&t.get(b).clone(), b);
            assert_eq!(idx.ending_at(16), Some(a), "a is still there");
            assert_eq!(idx.len(), 1);
            // Removing what is not there changes nothing.
            idx.remove(&t.get(b).clone(), b);
            assert_eq!((idx.ending_at(16), idx.len()), (Some(a), 1));
            assert_eq!(idx.starting_at(0), Some(a));
            idx.remove(&t.get(a).clone(), a);
            assert!(idx.is_empty() && idx.ending_at(16).is_none());
        }
    }

    #[test]
    fn fua_preflush_and_another_priority_or_cgroup_do_not_merge() {
        // blk_rq_merge_ok: REQ_NOMERGE_FLAGS on either side, a different
        // ioprio or cgroup: no merge; the same attributes merge. Every
        // scheduler goes through bio_fits.
        for name in ["noop", "deadline", "veloces", "kyber", "cfq"] {
            let mut s = make(name, &Params::new(), &dev()).unwrap();
            let mut t = ReqTable::new();
            let mut submit = |s: &mut Box<dyn Scheduler>, sector, attrs: BioAttrs| {
                let mut spec = BioSpec::scripted(Op::Write, false, sector, 8, 0);
                spec.attrs = attrs;
                submit_bio(s, &mut t, spec)
            };
            let plain = BioAttrs::default();
            let fua = BioAttrs { fua: true, ..plain };
            let flush = BioAttrs {
                preflush: true,
                ..plain
            };
            let rt = BioAttrs {
                ioprio: 1 << 13,
                ..plain
            };
            let cg = BioAttrs { cgroup: 7, ..plain };
            assert!(!submit(&mut s, 0, plain));
            assert!(!submit(&mut s, 8, fua), "{name}: FUA bio");
            assert!(!submit(&mut s, 16, plain), "{name}: into a FUA request");
            assert!(!submit(&mut s, 24, flush), "{name}: PREFLUSH bio");
            assert!(!submit(&mut s, 100, plain));
            assert!(!submit(&mut s, 108, rt), "{name}: another ioprio");
            assert!(!submit(&mut s, 200, plain));
            assert!(!submit(&mut s, 208, cg), "{name}: another cgroup");
            assert!(submit(&mut s, 216, cg), "{name}: same cgroup and ioprio");
        }
    }

    #[test]
    fn a_bio_merges_into_an_older_request_sharing_the_end_sector() {
        // A = [0, 16) and B = [8, 16) both end at 16. A bio at 16 back-merges
        // into B (the most recent); B now ends at 24, and the next bio at 16
        // still finds A. With one request per key A was gone from the hash.
        let mut s = make("noop", &Params::new(), &dev()).unwrap();
        let mut t = ReqTable::new();
        let mut submit = |s: &mut Box<dyn Scheduler>, sector, sectors| {
            submit_bio(
                s,
                &mut t,
                BioSpec::scripted(Op::Write, false, sector, sectors, 0),
            )
        };
        assert!(!submit(&mut s, 0, 16));
        assert!(!submit(&mut s, 8, 8));
        assert!(submit(&mut s, 16, 8), "into B");
        assert!(submit(&mut s, 16, 8), "into A");
        assert_eq!(s.stats()["merged"], 2);
        let mut out = Vec::new();
        while let Some(rq) = s.dispatch(&mut Ctx {
            now: 0,
            table: &mut t,
            max_sectors: 1024,
        }) {
            let r = t.get(rq);
            out.push((r.sector, r.sectors, r.nr_bios));
        }
        assert_eq!(out, vec![(0, 24, 2), (8, 16, 2)]);
    }
}
