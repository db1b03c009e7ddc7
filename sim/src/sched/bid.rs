//! BID-HDD (Bulk I/O Dispatch) and the tier categorisation of BID-Hybrid,
//! after Mishra and Somani, "Host managed contention avoidance storage
//! solutions for Big Data" (/work/shared/seeds/bid-bulk-io-dispatch.txt,
//! Algorithms 1-3).
//!
//! * **Request queue RQ**: the block layer's merging (plug and this
//!   scheduler's `bio_merge`) is the RQ's coalescing; a request of a process
//!   whose staging queue is marked for flushing waits here (`pending`).
//! * **Staging queues SQ_p** (Algorithm 1), one per process (PID), created
//!   when a request of a process without one arrives, deleted after its
//!   flush. Each keeps TS_old, TS_new, a wait timer and a deadline timer.
//!   The wait timer is reset on every enqueue to the weighted mean of the
//!   `k` most recent gaps between TS_new(SQ_p) and the arriving set R_p
//!   (`wait_default_us` while the queue has no gap yet). The deadline timer
//!   starts at `write_deadline_ms` (5000 ms) and falls to
//!   `read_deadline_ms` (500 ms) from now when a read (a blocking I/O)
//!   arrives and more than that is left.
//! * **Marking**: a staging queue whose wait or deadline timer expired is
//!   marked for flushing; the order of marking is kept.
//! * **Flush pipeline** (Algorithm 2): the earliest-marked staging queue is
//!   flushed whole, in LBA order, to the dispatch queue (the device's queue,
//!   `queue_depth` deep) before the next marked one is considered; then it
//!   is deleted with its timers, and what its process queued meanwhile is
//!   staged into a new one.
//! * **Tier categorisation** (Algorithm 3, BID-Hybrid, `pf_threshold` > 0):
//!   when a marked queue is selected for flushing, its packing fraction
//!   PF = write sectors / write requests is computed; below the threshold
//!   its writes are SSD-favourable and are handed to the placement stage
//!   (`take_offloaded`; the engine moves them to the SSD's queue), its reads
//!   flush to the HDD. Without a placement stage that takes them they are
//!   refused and flushed to the HDD first.
//!
//! The paper leaves open the default wait, `k`, the weights of the mean and
//! the PF threshold: ours are tunables, their defaults explained in
//! docs/sim-bid.md.

use super::tunable::{self, Tunable, TunableValues};
use super::{try_merge, Ctx, Scheduler, SectorIndex};
use crate::params::Params;
use crate::types::DeviceInfo;
use crate::types::{Ns, Op, ReqId, MS, US};
use anyhow::Result;
use rustc_hash::FxHashMap as HashMap;
use std::collections::VecDeque;

pub const TUNABLES: &[Tunable] = &[
    Tunable {
        name: "write_deadline_ms",
        default: 5000,
        min: 1,
        max: 3_600_000,
        help: "ms: a staging queue's deadline while it holds only writes (Algorithm 1: 5000)",
    },
    Tunable {
        name: "read_deadline_ms",
        default: 500,
        min: 1,
        max: 3_600_000,
        help: "ms: the deadline once a read (blocking I/O) is staged (Algorithm 1: 500)",
    },
    Tunable {
        name: "wait_default_us",
        default: 10_000,
        min: 1,
        max: 3_600_000_000,
        help: "us: the wait timer of a staging queue without a gap history yet",
    },
    Tunable {
        name: "k",
        default: 4,
        min: 1,
        max: 1024,
        help: "gaps remembered for the wait timer's weighted mean",
    },
    Tunable {
        name: "recent_weighted",
        default: 1,
        min: 0,
        max: 1,
        help: "weight the i-th oldest of the k gaps by i (1) or all equally (0)",
    },
    Tunable {
        name: "pf_threshold",
        default: 0,
        min: 0,
        max: 1 << 20,
        help: "sectors/request: BID-Hybrid offloads a flushing queue's writes when PF is below it (0: BID-HDD)",
    },
];

struct Sq {
    /// Staged requests, in arrival order.
    reqs: Vec<ReqId>,
    /// TS_new (the paper's TS_old, the oldest request's time, drives no
    /// step of the algorithms and is not kept).
    ts_new: Ns,
    gaps: VecDeque<Ns>,
    wait_at: Ns,
    deadline_at: Ns,
    marked: bool,
    /// Creation order: breaks ties between timers expiring at one instant.
    seq: u64,
}

pub struct Bid {
    write_deadline: Ns,
    read_deadline: Ns,
    wait_default: Ns,
    k: usize,
    recent_weighted: bool,
    pf_threshold: u64,
    /// Staging queues by PID.
    sqs: HashMap<u32, Sq>,
    /// Requests of a process whose staging queue is marked or flushing,
    /// waiting in RQ, with their arrival times.
    pending: HashMap<u32, Vec<(ReqId, Ns)>>,
    /// PIDs of marked staging queues, in marking order.
    marked: VecDeque<u32>,
    /// The staging queue being flushed: its PID and what is left of it, in
    /// LBA order.
    flushing: Option<(u32, VecDeque<ReqId>)>,
    /// Requests the placement stage refused: flushed first.
    refused: VecDeque<ReqId>,
    /// Offloaded writes not yet taken by the engine.
    offload: Vec<ReqId>,
    idx: SectorIndex,
    held: usize,
    // Statistics.
    created: u64,
    flushes: u64,
    marked_by_wait: u64,
    marked_by_deadline: u64,
    merged: u64,
    offloaded: u64,
    offloaded_sectors: u64,
    hdd_flushes_with_writes: u64,
    tun: TunableValues,
}

pub fn new(p: &Params, _dev: &DeviceInfo) -> Result<Box<dyn Scheduler>> {
    let tun = tunable::parse(TUNABLES, p, &[])?;
    Ok(Box::new(Bid {
        write_deadline: tun.get("write_deadline_ms") * MS,
        read_deadline: tun.get("read_deadline_ms") * MS,
        wait_default: tun.get("wait_default_us") * US,
        k: tun.get("k") as usize,
        recent_weighted: tun.flag("recent_weighted"),
        pf_threshold: tun.get("pf_threshold"),
        sqs: HashMap::default(),
        pending: HashMap::default(),
        marked: VecDeque::new(),
        flushing: None,
        refused: VecDeque::new(),
        offload: Vec::new(),
        idx: SectorIndex::merge_only(),
        held: 0,
        created: 0,
        flushes: 0,
        marked_by_wait: 0,
        marked_by_deadline: 0,
        merged: 0,
        offloaded: 0,
        offloaded_sectors: 0,
        hdd_flushes_with_writes: 0,
        tun,
    }))
}

/// The wait timer's value: the weighted mean of the remembered gaps (the
/// i-th oldest weighted i, or all equally), or `default` without any.
fn wait_value(gaps: &VecDeque<Ns>, default: Ns, recent_weighted: bool) -> Ns {
    if gaps.is_empty() {
        return default;
    }
    let (mut num, mut den) = (0u128, 0u128);
    for (i, &g) in gaps.iter().enumerate() {
        let w = if recent_weighted { i as u128 + 1 } else { 1 };
        num += w * g as u128;
        den += w;
    }
    (num / den) as Ns
}

impl Bid {
    /// Algorithm 1 for one request of process `p` arriving at `at` (the
    /// staging queue exists and is not marked). Requests staged at one
    /// instant are one set R_p: one gap.
    fn stage(&mut self, ctx: &Ctx, p: u32, rq: ReqId, at: Ns) {
        let read = ctx.rq(rq).op == Op::Read;
        let now = ctx.now;
        let (k, read_deadline) = (self.k, self.read_deadline);
        let Some(sq) = self.sqs.get_mut(&p) else {
            return;
        };
        if !sq.reqs.is_empty() && at > sq.ts_new {
            sq.gaps.push_back(at - sq.ts_new);
            while sq.gaps.len() > k {
                sq.gaps.pop_front();
            }
        }
        sq.ts_new = sq.ts_new.max(at);
        // Algorithm 1: "dequeue R_p from RQ and enqueue in SQ_p".
        sq.reqs.push(rq);
        // Algorithm 1: "reset wait timer wait(SQ_p)" (to the weighted mean
        // of the k most recent gaps, §Wait timer for staging queues).
        sq.wait_at = now + wait_value(&sq.gaps, self.wait_default, self.recent_weighted);
        // Algorithm 1: "if R_p contains a blocking I/O request then if
        // remaining time in deadline(SQ_p) > 500 ms then reset deadline(SQ_p)
        // = 500 ms".
        if read && sq.deadline_at.saturating_sub(now) > read_deadline {
            sq.deadline_at = now + read_deadline;
        }
    }

    /// Create SQ_p with default timers.
    fn create(&mut self, p: u32, now: Ns) {
        self.sqs.insert(
            p,
            Sq {
                reqs: Vec::new(),
                ts_new: now,
                gaps: VecDeque::new(),
                wait_at: now + self.wait_default,
                deadline_at: now + self.write_deadline,
                marked: false,
                seq: self.created,
            },
        );
        self.created += 1;
    }

    /// Mark every unmarked staging queue whose wait or deadline timer has
    /// expired, in the order the timers expired (at one instant, in the
    /// order the queues were created).
    fn mark_expired(&mut self, now: Ns) {
        let mut due: Vec<(Ns, u64, u32, bool)> = self
            .sqs
            .iter()
            .filter(|(_, s)| !s.marked && !s.reqs.is_empty())
            .filter_map(|(&p, s)| {
                let t = s.wait_at.min(s.deadline_at);
                (t <= now).then_some((t, s.seq, p, s.deadline_at < s.wait_at))
            })
            .collect();
        due.sort_unstable();
        // §Marking staging queue for flushing: "whenever any of the timers
        // expires"; "BID keeps track of the order ... marked".
        for (_, _, p, by_deadline) in due {
            if by_deadline {
                self.marked_by_deadline += 1;
            } else {
                self.marked_by_wait += 1;
            }
            if let Some(s) = self.sqs.get_mut(&p) {
                s.marked = true;
            }
            self.marked.push_back(p);
        }
    }

    /// Algorithms 2 and 3: take the earliest-marked staging queue; under
    /// BID-Hybrid hand its writes over when its packing fraction is low;
    /// flush the rest in LBA order.
    fn start_flush(&mut self, ctx: &Ctx, p: u32) {
        let Some(sq) = self.sqs.get_mut(&p) else {
            return;
        };
        let mut reqs = std::mem::take(&mut sq.reqs);
        self.flushes += 1;
        let (mut ws, mut wn) = (0u64, 0u64);
        for &rq in &reqs {
            let r = ctx.rq(rq);
            if r.op == Op::Write {
                ws += r.sectors as u64;
                wn += 1;
            }
        }
        // Algorithm 3: "if PF(SQ_p) < PF(Threshold) then I/O requests in SQ_p
        // are SSD favorable; transfer write I/O requests to SSD I/O request
        // queue" (PF = write sectors / write requests; a read-only queue
        // by-passes the categorisation).
        if self.pf_threshold > 0 && wn > 0 && ws < self.pf_threshold * wn {
            let mut keep = Vec::with_capacity(reqs.len());
            for rq in reqs {
                let r = ctx.rq(rq);
                if r.op == Op::Write {
                    self.idx.remove(r, rq);
                    self.held -= 1;
                    self.offloaded += 1;
                    self.offloaded_sectors += r.sectors as u64;
                    self.offload.push(rq);
                } else {
                    keep.push(rq);
                }
            }
            reqs = keep;
        } else if wn > 0 {
            self.hdd_flushes_with_writes += 1;
        }
        // Algorithm 3: "mark SQ_p for flushing to HDD dispatch queue";
        // Algorithm 2: "dispatch all I/O requests from SQ_p to DQ" (the DQ
        // is sorted by LBA).
        reqs.sort_by_key(|&rq| (ctx.rq(rq).sector, rq));
        self.flushing = Some((p, reqs.into()));
    }

    /// The flush of `p`'s staging queue is over: delete it with its timers;
    /// what the process queued meanwhile forms a new staging queue.
    fn end_flush(&mut self, ctx: &Ctx, p: u32) {
        // Algorithm 2: "delete SQ_p; delete wait(SQ_p) and deadline(SQ_p)".
        self.sqs.remove(&p);
        let Some(waiting) = self.pending.remove(&p) else {
            return;
        };
        self.create(p, ctx.now);
        for (rq, at) in waiting {
            self.stage(ctx, p, rq, at);
        }
    }

    fn take(&mut self, ctx: &Ctx, rq: ReqId) -> ReqId {
        self.idx.remove(ctx.rq(rq), rq);
        self.held -= 1;
        rq
    }
}

impl Scheduler for Bid {
    fn name(&self) -> &'static str {
        "bid"
    }
    fn insert(&mut self, ctx: &mut Ctx, rq: ReqId) {
        // Timers that expired before this arrival fired then (hrtimers):
        // mark those queues before the arrival could reset a timer.
        self.mark_expired(ctx.now);
        let p = ctx.rq(rq).pid;
        self.idx.add(ctx.rq(rq), rq);
        self.held += 1;
        let busy = self.flushing.as_ref().is_some_and(|f| f.0 == p);
        // Algorithm 1: "for every process p in P do".
        match self.sqs.get(&p) {
            // "if SQ_p not marked for flushing then dequeue R_p ..." - it is
            // marked, so R_p stays in RQ.
            Some(s) if s.marked || busy => {
                // SQ_p is marked: R_p stays in the request queue.
                self.pending.entry(p).or_default().push((rq, ctx.now));
            }
            Some(_) => self.stage(ctx, p, rq, ctx.now),
            None if busy => self.pending.entry(p).or_default().push((rq, ctx.now)),
            None => {
                // "if SQ_p not present then create SQ_p; create and set
                // wait(SQ_p) and deadline(SQ_p) with default values".
                self.create(p, ctx.now);
                self.stage(ctx, p, rq, ctx.now);
            }
        }
    }
    fn dispatch(&mut self, ctx: &mut Ctx) -> Option<ReqId> {
        if let Some(rq) = self.refused.pop_front() {
            return Some(self.take(ctx, rq));
        }
        self.mark_expired(ctx.now);
        loop {
            if let Some((p, q)) = self.flushing.as_mut() {
                if let Some(rq) = q.pop_front() {
                    return Some(self.take(ctx, rq));
                }
                let p = *p;
                self.flushing = None;
                self.end_flush(ctx, p);
                continue;
            }
            // Algorithm 2: "for every staging queue marked for flushing,
            // select SQ_p which was marked earliest" - fully flushed before
            // the next is considered.
            let p = self.marked.pop_front()?;
            // Writes handed over here are moved by the engine after this round.
            self.start_flush(ctx, p);
        }
    }
    fn has_work(&self) -> bool {
        self.held > 0 || !self.offload.is_empty()
    }
    fn bio_merge(&mut self, ctx: &mut Ctx, bio: u32) -> bool {
        let ok = try_merge(ctx, &mut self.idx, bio, true).is_some();
        self.merged += ok as u64;
        ok
    }
    fn next_timer(&self, now: Ns) -> Option<Ns> {
        // Work ready to go (the engine retries at once).
        if !self.refused.is_empty()
            || !self.marked.is_empty()
            || self.flushing.as_ref().is_some_and(|f| !f.1.is_empty())
        {
            return Some(now);
        }
        self.sqs
            .values()
            .filter(|s| !s.marked && !s.reqs.is_empty())
            .map(|s| s.wait_at.min(s.deadline_at))
            .min()
    }
    fn offloads(&self) -> bool {
        self.pf_threshold > 0
    }
    fn take_offloaded(&mut self, out: &mut Vec<ReqId>) {
        out.append(&mut self.offload);
    }
    fn offload_refused(&mut self, ctx: &mut Ctx, rq: ReqId) {
        self.idx.add(ctx.rq(rq), rq);
        self.held += 1;
        self.offloaded -= 1;
        self.offloaded_sectors -= ctx.rq(rq).sectors as u64;
        self.refused.push_back(rq);
    }
    fn tunables(&self) -> Vec<(&'static str, String)> {
        self.tun.report()
    }
    fn stats(&self) -> serde_json::Value {
        serde_json::json!({
            "staging_queues_created": self.created,
            "flushes": self.flushes,
            "marked_by_wait": self.marked_by_wait,
            "marked_by_deadline": self.marked_by_deadline,
            "merged": self.merged,
            "offloaded_requests": self.offloaded,
            "offloaded_sectors": self.offloaded_sectors,
            "hdd_flushes_with_writes": self.hdd_flushes_with_writes,
        })
    }
}
