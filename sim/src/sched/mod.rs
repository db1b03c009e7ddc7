//! I/O schedulers. The [`Scheduler`] trait mirrors the blk-mq elevator hooks
//! (`insert_requests`, `dispatch_request`, `has_work`, `bio_merge`,
//! `finish_request`) plus a timer, so a policy reads like its kernel counterpart.
//!
//! Adding a scheduler: one new file implementing [`Scheduler`] and one line in
//! [`REGISTRY`].

use crate::params::Params;
use crate::types::{Ns, Op, ReqId, ReqTable, Request};
use anyhow::Result;
use rustc_hash::FxHashMap as HashMap;
use std::collections::BTreeSet;

pub mod cfq;
pub mod deadline;
pub mod noop;
pub mod veloces;

/// What the device tells the scheduler about itself (queue/ attributes in sysfs).
#[derive(Clone, Copy, Debug)]
pub struct DeviceInfo {
    pub capacity_sectors: u64,
    pub queue_depth: u32,
    pub rotational: bool,
    /// Erase block (or preferred erase size) in sectors, where the device reports one.
    pub erase_block_sectors: Option<u32>,
    /// Optimal I/O size in sectors, where the device reports one.
    pub optimal_io_sectors: Option<u32>,
    /// Largest request the device accepts (queue/max_hw_sectors_kb * 2), where
    /// it is below the block layer's default max_sectors_kb (1280 KiB).
    pub max_hw_sectors: Option<u32>,
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
}

/// Constructor of a scheduler from its tunables.
pub type Factory = fn(&Params, &DeviceInfo) -> Result<Box<dyn Scheduler>>;

/// Name, one-line description, constructor.
pub const REGISTRY: &[(&str, &str, Factory)] = &[
    (
        "noop",
        "FIFO with back/front merging (blk-mq `none` plus merging)",
        noop::new,
    ),
    (
        "deadline",
        "legacy deadline: read/write FIFOs with expiry, sorted batches",
        deadline::new,
    ),
    (
        "cfq",
        "legacy CFQ: per-process sync queues, time slices, idling",
        cfq::new,
    ),
    (
        "veloces",
        "flash-aware: read preference, erase-block write bundling",
        veloces::new,
    ),
];

/// Build a scheduler by name with tunables (unknown tunables are an error).
pub fn make(name: &str, params: &Params, dev: &DeviceInfo) -> Result<Box<dyn Scheduler>> {
    for (n, _, f) in REGISTRY {
        if *n == name {
            let s = f(params, dev)?;
            params.check_all_used(&format!("scheduler {name}"))?;
            return Ok(s);
        }
    }
    let names: Vec<&str> = REGISTRY.iter().map(|r| r.0).collect();
    anyhow::bail!("unknown scheduler '{name}' (known: {})", names.join(", "))
}

/// Sector-sorted index of queued requests with back/front merge lookup
/// (the elevator's rbtree plus its merge hash).
#[derive(Default)]
pub struct SectorIndex {
    sorted: BTreeSet<(u64, ReqId)>,
    by_end: HashMap<u64, ReqId>,
    by_start: HashMap<u64, ReqId>,
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
        if !self.unsorted {
            self.sorted.insert((r.sector, id));
        }
        self.by_end.insert(r.end(), id);
        self.by_start.insert(r.sector, id);
    }
    pub fn remove(&mut self, r: &Request, id: ReqId) {
        if !self.unsorted {
            self.sorted.remove(&(r.sector, id));
        }
        if self.by_end.get(&r.end()) == Some(&id) {
            self.by_end.remove(&r.end());
        }
        if self.by_start.get(&r.sector) == Some(&id) {
            self.by_start.remove(&r.sector);
        }
    }
    pub fn len(&self) -> usize {
        self.by_start.len()
    }
    pub fn is_empty(&self) -> bool {
        self.by_start.is_empty()
    }
    /// Request ending exactly at `sector` (back-merge candidate).
    pub fn ending_at(&self, sector: u64) -> Option<ReqId> {
        self.by_end.get(&sector).copied()
    }
    /// Request starting exactly at `sector` (front-merge candidate).
    pub fn starting_at(&self, sector: u64) -> Option<ReqId> {
        self.by_start.get(&sector).copied()
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

/// Find a request a bio can merge into, using `idx`, and merge it: the shared
/// logic of `blk_mq_sched_try_merge`. `allow` is the scheduler's
/// `allow_merge` veto. The caller must re-key the request in its own
/// structures for a front merge (its start sector changes); `idx` is updated here.
pub fn try_merge(
    ctx: &mut Ctx,
    idx: &mut SectorIndex,
    bio: u32,
    front_merges: bool,
    allow: impl Fn(&Request, &crate::types::BioSpec) -> bool,
) -> Option<(ReqId, MergeKind)> {
    let spec = ctx.table.bio(bio).spec;
    let sync = spec.sync || spec.op == Op::Read;
    let fits = |r: &Request| {
        r.op == spec.op && r.sync == sync && r.sectors + spec.sectors <= ctx.max_sectors
    };
    if let Some(id) = idx.ending_at(spec.sector) {
        let r = ctx.table.get(id);
        if fits(r) && allow(r, &spec) {
            let r = r.clone();
            idx.remove(&r, id);
            ctx.table.back_merge_bio(id, bio);
            idx.add(ctx.table.get(id), id);
            return Some((id, MergeKind::Back));
        }
    }
    if front_merges {
        if let Some(id) = idx.starting_at(spec.sector + spec.sectors as u64) {
            let r = ctx.table.get(id);
            if fits(r) && allow(r, &spec) {
                let r = r.clone();
                idx.remove(&r, id);
                ctx.table.front_merge_bio(id, bio);
                idx.add(ctx.table.get(id), id);
                return Some((id, MergeKind::Front));
            }
        }
    }
    None
}
