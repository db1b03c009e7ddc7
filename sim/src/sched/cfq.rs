//! cfq: the legacy Completely Fair Queuing elevator (`block/cfq-iosched.c`,
//! Linux 2.6.3x–4.x), simplified to one priority level (best effort, ioprio 4),
//! one cgroup and one service tree, but faithful in what decides dispatch order.
//!
//! Model (kernel names in brackets):
//! - Queues [`cfq_queue`]: one per process for sync requests (reads, and writes
//!   flagged sync), keyed by `Request.pid`; one shared queue for async writes.
//!   Each queue is sector-sorted (merge index) with a FIFO; `fifo_time = now +
//!   fifo_expire_{sync,async}` at insert.
//! - Service tree: busy queues (with queued requests) ordered by `rb_key = now +
//!   cfq_slice_offset`, where `cfq_slice_offset = (busy - 1) * (prio_slice(sync, 0) -
//!   prio_slice(own))` and `prio_slice(sync, 0) = slice_sync + slice_sync/5*4`
//!   [`cfq_service_tree_add`]; a queue gets a new key when it becomes busy and when
//!   its slice expires with requests left, so service is round robin.
//! - Slices: the active queue's slice starts at its first completion
//!   (`slice_new`) and lasts `slice_sync` or `slice_async`; a queue whose slice is
//!   used is expired at the next dispatch or completion [`cfq_select_queue`,
//!   `cfq_completed_request`]. An async queue is also expired after
//!   `2 * slice_async_rq * (8 - 4)` dispatches when other queues are busy
//!   [`cfq_prio_to_maxrq`].
//! - Request choice: the FIFO head if it has expired, checked once per slice
//!   [`cfq_check_fifo`]; else the first request at or after the head position
//!   (end of the last dispatched request), wrapping to the queue's lowest sector
//!   (one-way elevator: `back_seek_max`/`back_seek_penalty` are accepted and
//!   validated but backward seeks are not modelled).
//! - Depth [`cfq_may_dispatch`]: a sync queue waits while async requests are in
//!   flight (if it idles), an async queue waits while sync requests are in flight;
//!   a queue may have `max(quantum/2, 1)` requests in flight, up to `quantum` when
//!   its slice is not about to end, unlimited when it is the only busy queue.
//! - Idling [`cfq_arm_slice_timer`]: when the active sync queue has no queued and no
//!   in-flight requests at a completion and its slice is not used, CFQ waits up to
//!   `slice_idle` for that process's next request: `dispatch` returns `None` and
//!   `next_timer` gives the end of the wait. A request of that process ends the wait
//!   at once; another process's request waits. As the kernel does, idling is off on
//!   a non-rotational device with a queue depth above 1 (`nonrot && hw_tag`), and
//!   when `slice_idle` is 0. The wait is evaluated lazily at the next dispatch call,
//!   so `has_work()` stays "requests are held" (the engine only asks for the timer
//!   when it holds requests, and a process's new request ends the wait anyway).
//! - Preemption [`cfq_should_preempt`]: a sync request arriving while the active
//!   queue is async expires that queue and puts its queue first.
//!
//! - Dispatch-queue mode (`dispatch_sort=1`, not the kernel's behaviour; the model
//!   of the CFQ description in bid-bulk-io-dispatch.txt, Table 1 example): "CFQ
//!   inserts requests to the dispatch queue in a round robin fashion according to
//!   quantum, which are then sorted in the dispatch queue ... sorted according to
//!   their LBA values". When the dispatch queue is empty, one round-robin cycle
//!   visits every busy queue once, in service-tree order: the queue is activated
//!   (so its FIFO is checked once, as at the start of a slice), up to `quantum`
//!   requests are moved from it (chosen as above, each after the previous one),
//!   and it is put back at the end of the service tree (or leaves it when empty).
//!   The dispatch queue is sorted plainly by start LBA (ties: insertion order)
//!   and `dispatch` takes its head, with no depth limit, no slice timing and no
//!   idling (the paper's model has neither). Plain LBA, not the legacy
//!   `elv_dispatch_sort`: that one sorts a one-way sweep from `q->end_sector` and
//!   stops at a request of the other data direction, so a cycle mixing A's and
//!   C's reads with B's writes would stay in insertion order ({B1, B2, A1, A2, C1}
//!   for Table 1), which is not the order the paper derives. Requests in the
//!   dispatch queue no longer take merges (as in the kernel). Sorting costs
//!   O(log k) per request amortised over a cycle of k; the buffers are reused.
//!
//! Not modelled: think-time and seekiness heuristics (every sync queue idles),
//! close cooperators, workload types (sync/sync-noidle/async service trees),
//! groups, priorities other than BE 4, slice_resid carry-over, the async depth
//! ramp of low_latency, the small-request `must_dispatch` wait.
//!
//! Tunables (legacy defaults, ms unless noted): quantum 8 (requests), slice_sync 100,
//! slice_async 40, slice_async_rq 2 (requests), slice_idle 8, fifo_expire_sync 125,
//! fifo_expire_async 250, back_seek_max 16384 (KiB), back_seek_penalty 2;
//! dispatch_sort 0 (1 = the paper's dispatch-queue model above; not a kernel tunable).

use super::tunable::{self, Tunable, TunableValues};
use super::{try_merge, Ctx, Scheduler, SectorIndex};
use crate::params::Params;
use crate::types::DeviceInfo;
use crate::types::{Ns, ReqId, MS};
use anyhow::Result;
use std::collections::{BTreeSet, HashMap};

const INT_MAX: u64 = i32::MAX as u64;

/// CFQ's tunables (sysfs `queue/iosched/`), legacy defaults and ranges.
pub const TUNABLES: &[Tunable] = &[
    Tunable {
        name: "quantum",
        default: 8,
        min: 1,
        max: INT_MAX,
        help: "requests a queue may have on the device in its slice",
    },
    Tunable {
        name: "slice_sync",
        default: 100,
        min: 1,
        max: INT_MAX,
        help: "ms: a sync queue's time slice",
    },
    Tunable {
        name: "slice_async",
        default: 40,
        min: 1,
        max: INT_MAX,
        help: "ms: the async queue's time slice",
    },
    Tunable {
        name: "slice_async_rq",
        default: 2,
        min: 1,
        max: INT_MAX,
        help: "requests the async queue dispatches per slice (scaled)",
    },
    Tunable {
        name: "slice_idle",
        default: 8,
        min: 0,
        max: INT_MAX,
        help: "ms: idle wait for the next request of a sync queue (0: none)",
    },
    Tunable {
        name: "fifo_expire_sync",
        default: 125,
        min: 1,
        max: INT_MAX,
        help: "ms: a sync request's FIFO deadline",
    },
    Tunable {
        name: "fifo_expire_async",
        default: 250,
        min: 1,
        max: INT_MAX,
        help: "ms: an async request's FIFO deadline",
    },
    Tunable {
        name: "back_seek_max",
        default: 16384,
        min: 0,
        max: INT_MAX,
        help: "KiB: the farthest backward seek treated as forward (accepted, not modelled)",
    },
    Tunable {
        name: "back_seek_penalty",
        default: 2,
        min: 1,
        max: INT_MAX,
        help: "cost factor of a backward seek (accepted, not modelled)",
    },
    Tunable {
        name: "dispatch_sort",
        default: 0,
        min: 0,
        max: 1,
        help: "the paper's sorted dispatch-queue model (not a kernel tunable)",
    },
];
const NONE: u32 = u32::MAX;
/// Added to service-tree keys so that "first key minus one second" (a preempting
/// queue put in front) never underflows.
const KEY_BASE: Ns = 1 << 50;

struct Queue {
    sync: bool,
    idx: SectorIndex,
    /// (fifo_time, insertion seq, id): insertion order (constant expiry per queue).
    fifo: BTreeSet<(Ns, u64, ReqId)>,
    /// Requests in flight on the device.
    dispatched: u32,
    /// Service-tree key while busy.
    key: Option<(Ns, u64)>,
    slice_end: Ns,
    slice_new: bool,
    slice_dispatch: u32,
    fifo_checked: bool,
}

impl Queue {
    fn new(sync: bool) -> Self {
        Queue {
            sync,
            idx: SectorIndex::default(),
            fifo: BTreeSet::new(),
            dispatched: 0,
            key: None,
            slice_end: 0,
            slice_new: true,
            slice_dispatch: 0,
            fifo_checked: false,
        }
    }
}

/// Per-request bookkeeping, indexed by ReqId.
#[derive(Clone, Copy)]
struct RqInfo {
    queue: u32,
    seq: u64,
}

/// Legacy CFQ state (`struct cfq_data`).
pub struct Cfq {
    queues: Vec<Queue>,
    by_pid: HashMap<u32, u32>,
    /// Queues of forgotten processes, for reuse ([`Cfq::forget_idle`]).
    free: Vec<u32>,
    tree: BTreeSet<(Ns, u64, u32)>,
    rq: Vec<RqInfo>,
    seq: u64,
    active: u32,
    idle_until: Option<Ns>,
    busy: u32,
    queued: usize,
    in_flight: [u32; 2],
    head: u64,
    idling_allowed: bool,
    // Tunables.
    quantum: u32,
    slice: [Ns; 2],
    slice_async_rq: u32,
    slice_idle: Ns,
    fifo_expire: [Ns; 2],
    /// `dispatch_sort=1`: the paper's sorted dispatch-queue model.
    dispatch_sort: bool,
    /// The dispatch queue of that mode: (sector, insertion seq, id), sorted, taken
    /// from `dq_pos` on.
    dq: Vec<(u64, u64, ReqId)>,
    dq_pos: usize,
    /// Scratch: the busy queues of one cycle, in service order.
    cycle_q: Vec<u32>,
    // Statistics.
    dispatched: [u64; 2],
    slices: u64,
    idle_waits: u64,
    idle_hits: u64,
    fifo_expired: u64,
    preemptions: u64,
    merges: u64,
    cycles: u64,
    tun: TunableValues,
}

/// Build a CFQ scheduler from its tunables.
pub fn new(p: &Params, dev: &DeviceInfo) -> Result<Box<dyn Scheduler>> {
    Ok(Box::new(Cfq::from_params(p, dev)?))
}

/// Index for per-sync arrays: async 0, sync 1 (the kernel's `cfq_slice[sync]`).
fn si(sync: bool) -> usize {
    sync as usize
}

impl Cfq {
    /// Parse and validate the tunables; an invalid value is an error naming it.
    pub fn from_params(p: &Params, dev: &DeviceInfo) -> Result<Self> {
        let tun = tunable::parse(TUNABLES, p, &[])?;
        let quantum = tun.get("quantum") as u32;
        let slice_sync = tun.get("slice_sync") * MS;
        let slice_async = tun.get("slice_async") * MS;
        let slice_async_rq = tun.get("slice_async_rq") as u32;
        let slice_idle = tun.get("slice_idle") * MS;
        let fifo_sync = tun.get("fifo_expire_sync") * MS;
        let fifo_async = tun.get("fifo_expire_async") * MS;
        let dispatch_sort = tun.flag("dispatch_sort");
        Ok(Cfq {
            queues: vec![Queue::new(false)],
            by_pid: HashMap::new(),
            free: Vec::new(),
            tree: BTreeSet::new(),
            rq: Vec::new(),
            seq: 0,
            active: NONE,
            idle_until: None,
            busy: 0,
            queued: 0,
            in_flight: [0; 2],
            head: 0,
            idling_allowed: slice_idle > 0 && (dev.rotational || dev.queue_depth <= 1),
            quantum,
            slice: [slice_async, slice_sync],
            slice_async_rq,
            slice_idle,
            fifo_expire: [fifo_async, fifo_sync],
            dispatch_sort,
            dq: Vec::new(),
            dq_pos: 0,
            cycle_q: Vec::new(),
            dispatched: [0; 2],
            slices: 0,
            idle_waits: 0,
            idle_hits: 0,
            fifo_expired: 0,
            preemptions: 0,
            merges: 0,
            cycles: 0,
            tun,
        })
    }

    fn queue_for(&mut self, sync: bool, pid: u32) -> u32 {
        if !sync {
            return 0;
        }
        if let Some(&q) = self.by_pid.get(&pid) {
            return q;
        }
        if self.by_pid.len() >= 2 * crate::sched::MAX_IDLE_QUEUES {
            self.forget_idle();
        }
        let q = match self.free.pop() {
            Some(q) => {
                self.queues[q as usize] = Queue::new(true);
                q
            }
            None => {
                self.queues.push(Queue::new(true));
                self.queues.len() as u32 - 1
            }
        };
        self.by_pid.insert(pid, q);
        q
    }

    /// Forget the processes whose queues are idle (nothing queued, nothing on
    /// the device, not on the service tree, not active), as if they had
    /// exited: their queues are reused. Run once the queues of twice
    /// `MAX_IDLE_QUEUES` processes exist, so memory stays bounded by the
    /// processes with I/O outstanding, whatever number of PIDs a trace has.
    fn forget_idle(&mut self) {
        let (queues, active, free) = (&self.queues, self.active, &mut self.free);
        self.by_pid.retain(|_, q| {
            let qq = &queues[*q as usize];
            let idle = qq.fifo.is_empty() && qq.dispatched == 0 && qq.key.is_none() && *q != active;
            if idle {
                free.push(*q);
            }
            !idle
        });
    }

    /// `cfq_slice_offset`: later start for queues with shorter slices, scaled by
    /// the number of busy queues.
    fn offset(&self, q: u32) -> Ns {
        let s = self.slice[1];
        let longest = s + s / 5 * 4;
        let own = self.slice[si(self.queues[q as usize].sync)];
        (self.busy.max(1) as Ns - 1) * longest.saturating_sub(own)
    }

    /// (Re)insert a busy queue into the service tree; `front` puts it first.
    fn tree_add(&mut self, q: u32, now: Ns, front: bool) {
        if let Some((k, s)) = self.queues[q as usize].key.take() {
            self.tree.remove(&(k, s, q));
        }
        let key = if front {
            self.tree.first().map_or(now + KEY_BASE, |f| f.0) - crate::types::SEC
        } else {
            now + KEY_BASE + self.offset(q)
        };
        self.seq += 1;
        self.queues[q as usize].key = Some((key, self.seq));
        self.tree.insert((key, self.seq, q));
    }

    fn tree_del(&mut self, q: u32) {
        if let Some((k, s)) = self.queues[q as usize].key.take() {
            self.tree.remove(&(k, s, q));
            self.busy -= 1;
        }
    }

    fn should_idle(&self, q: u32) -> bool {
        self.idling_allowed && self.queues[q as usize].sync
    }

    fn slice_used(&self, q: u32, now: Ns) -> bool {
        let qq = &self.queues[q as usize];
        !qq.slice_new && now >= qq.slice_end
    }

    /// `__cfq_slice_expired`: drop the active queue; re-key it if it still has work.
    fn expire(&mut self, now: Ns) {
        let q = self.active;
        if q == NONE {
            return;
        }
        self.active = NONE;
        self.idle_until = None;
        if !self.queues[q as usize].fifo.is_empty() {
            self.tree_add(q, now, false);
        }
    }

    /// `__cfq_set_active_queue`.
    fn activate(&mut self, q: u32) {
        self.active = q;
        self.idle_until = None;
        self.slices += 1;
        let qq = &mut self.queues[q as usize];
        qq.slice_new = true;
        qq.slice_end = 0;
        qq.slice_dispatch = 0;
        qq.fifo_checked = false;
    }

    /// `cfq_select_queue`: the queue to dispatch from now, or None to wait.
    fn select(&mut self, now: Ns) -> Option<u32> {
        if self.queued == 0 {
            return None;
        }
        let q = self.active;
        if q != NONE {
            let has_rq = !self.queues[q as usize].fifo.is_empty();
            if !self.slice_used(q, now) {
                if has_rq {
                    return Some(q);
                }
                match self.idle_until {
                    Some(t) if now < t => return None,
                    Some(_) => {}
                    None => {
                        if self.queues[q as usize].dispatched > 0 && self.should_idle(q) {
                            return None;
                        }
                    }
                }
            }
            self.expire(now);
        }
        let &(_, _, next) = self.tree.first()?;
        self.activate(next);
        Some(next)
    }

    /// `cfq_may_dispatch`.
    fn may_dispatch(&self, q: u32, now: Ns) -> bool {
        let qq = &self.queues[q as usize];
        if qq.sync && self.should_idle(q) && self.in_flight[0] > 0 {
            return false;
        }
        if !qq.sync && self.in_flight[1] > 0 {
            return false;
        }
        let mut max = (self.quantum / 2).max(1);
        if qq.dispatched >= max {
            let sync_queues = self.busy - (self.queues[0].key.is_some() as u32);
            let promote_sync = qq.sync && sync_queues == 1;
            let used_soon =
                qq.slice_new || now + self.slice_idle * qq.dispatched as Ns > qq.slice_end;
            if self.busy > 1 && used_soon && !promote_sync {
                return false;
            }
            if self.busy == 1 || promote_sync {
                max = u32::MAX;
            } else {
                max = self.quantum;
            }
        }
        qq.dispatched < max
    }

    /// Next request of queue `q`: expired FIFO head (once per slice), else the first
    /// at or after the head position, else the lowest sector.
    fn choose(&mut self, q: u32, now: Ns, head: u64) -> Option<ReqId> {
        let qq = &mut self.queues[q as usize];
        if !qq.fifo_checked {
            qq.fifo_checked = true;
            if let Some(&(t, _, id)) = qq.fifo.first() {
                if now >= t {
                    self.fifo_expired += 1;
                    return Some(id);
                }
            }
        }
        let qq = &self.queues[q as usize];
        qq.idx.at_or_after(head).or_else(|| qq.idx.first())
    }

    /// Dispatch-queue mode: one round-robin cycle of up to `quantum` requests from
    /// every busy queue (service order) into the dispatch queue, sorted by LBA.
    fn fill_cycle(&mut self, ctx: &mut Ctx) {
        self.dq.clear();
        self.dq_pos = 0;
        self.cycle_q.clear();
        self.cycle_q.extend(self.tree.iter().map(|&(_, _, q)| q));
        if self.cycle_q.is_empty() {
            return;
        }
        self.cycles += 1;
        let now = ctx.now;
        for k in 0..self.cycle_q.len() {
            let q = self.cycle_q[k];
            self.activate(q);
            let mut cursor = self.head;
            for _ in 0..self.quantum {
                let Some(rq) = self.choose(q, now, cursor) else {
                    break;
                };
                let seq = self.rq[rq as usize].seq;
                let r = ctx.rq(rq);
                let (sector, end, fifo_time) = (r.sector, r.end(), r.fifo_time);
                let qq = &mut self.queues[q as usize];
                qq.idx.remove(r, rq);
                qq.fifo.remove(&(fifo_time, seq, rq));
                self.dq.push((sector, seq, rq));
                cursor = end;
            }
            self.active = NONE;
            if self.queues[q as usize].fifo.is_empty() {
                self.tree_del(q);
            } else {
                self.tree_add(q, now, false);
            }
        }
        self.dq.sort_unstable();
    }

    /// `dispatch` in the dispatch-queue mode: the head of the sorted dispatch
    /// queue, refilled by one cycle when empty.
    fn dispatch_sorted(&mut self, ctx: &mut Ctx) -> Option<ReqId> {
        if self.dq_pos == self.dq.len() {
            self.fill_cycle(ctx);
        }
        let &(_, _, rq) = self.dq.get(self.dq_pos)?;
        self.dq_pos += 1;
        let q = self.rq[rq as usize].queue;
        let r = ctx.rq(rq);
        let (sync, end) = (r.sync, r.end());
        let qq = &mut self.queues[q as usize];
        qq.dispatched += 1;
        qq.slice_dispatch += 1;
        self.queued -= 1;
        self.in_flight[si(sync)] += 1;
        self.dispatched[si(sync)] += 1;
        self.head = end;
        Some(rq)
    }
}

impl Scheduler for Cfq {
    fn name(&self) -> &'static str {
        "cfq"
    }

    fn insert(&mut self, ctx: &mut Ctx, rq: ReqId) {
        let (sync, pid) = {
            let r = ctx.rq(rq);
            (r.sync, r.pid)
        };
        let q = self.queue_for(sync, pid);
        let fifo_time = ctx.now + self.fifo_expire[si(sync)];
        ctx.table.get_mut(rq).fifo_time = fifo_time;
        self.seq += 1;
        let i = rq as usize;
        if self.rq.len() <= i {
            self.rq.resize(i + 1, RqInfo { queue: 0, seq: 0 });
        }
        self.rq[i] = RqInfo {
            queue: q,
            seq: self.seq,
        };
        let qq = &mut self.queues[q as usize];
        qq.idx.add(ctx.rq(rq), rq);
        qq.fifo.insert((fifo_time, self.seq, rq));
        self.queued += 1;
        if qq.key.is_none() {
            self.busy += 1;
            self.tree_add(q, ctx.now, false);
        }
        // cfq_rq_enqueued: a request of the queue we idle for ends the wait; a sync
        // request preempts an async active queue.
        if q == self.active {
            if self.idle_until.take().is_some() {
                self.idle_hits += 1;
            }
        } else if self.active != NONE && sync && !self.queues[self.active as usize].sync {
            self.preemptions += 1;
            self.expire(ctx.now);
            self.tree_add(q, ctx.now, true);
        }
    }

    fn dispatch(&mut self, ctx: &mut Ctx) -> Option<ReqId> {
        if self.dispatch_sort {
            return self.dispatch_sorted(ctx);
        }
        let q = self.select(ctx.now)?;
        if !self.may_dispatch(q, ctx.now) {
            return None;
        }
        let rq = self.choose(q, ctx.now, self.head)?;
        let info = self.rq[rq as usize];
        let r = ctx.rq(rq);
        let (sync, end) = (r.sync, r.end());
        let qq = &mut self.queues[q as usize];
        qq.idx.remove(r, rq);
        qq.fifo.remove(&(r.fifo_time, info.seq, rq));
        qq.dispatched += 1;
        qq.slice_dispatch += 1;
        let empty = qq.fifo.is_empty();
        let async_done = !qq.sync && qq.slice_dispatch >= 2 * self.slice_async_rq * 4;
        self.queued -= 1;
        self.in_flight[si(sync)] += 1;
        self.dispatched[si(sync)] += 1;
        self.head = end;
        if empty {
            self.tree_del(q);
        }
        if async_done && self.busy > 1 {
            self.expire(ctx.now);
        }
        Some(rq)
    }

    fn has_work(&self) -> bool {
        self.queued > 0
    }

    fn bio_merge(&mut self, ctx: &mut Ctx, bio: u32) -> bool {
        let spec = ctx.table.bio(bio).spec;
        let sync = spec.sync || spec.op == crate::types::Op::Read;
        let q = match (sync, self.by_pid.get(&spec.pid)) {
            (false, _) => 0,
            (true, Some(&q)) => q,
            (true, None) => return false,
        };
        let ok = try_merge(ctx, &mut self.queues[q as usize].idx, bio, true).is_some();
        self.merges += ok as u64;
        ok
    }

    fn completed(&mut self, ctx: &mut Ctx, rq: ReqId) {
        let q = self.rq[rq as usize].queue;
        let sync = ctx.rq(rq).sync;
        self.in_flight[si(sync)] = self.in_flight[si(sync)].saturating_sub(1);
        let now = ctx.now;
        let slice = self.slice[si(self.queues[q as usize].sync)];
        let qq = &mut self.queues[q as usize];
        qq.dispatched = qq.dispatched.saturating_sub(1);
        if q != self.active {
            return;
        }
        if qq.slice_new {
            qq.slice_new = false;
            qq.slice_end = now + slice;
        }
        if self.slice_used(q, now) {
            self.expire(now);
        } else {
            let qq = &self.queues[q as usize];
            if qq.fifo.is_empty() && qq.dispatched == 0 && self.should_idle(q) {
                self.idle_until = Some(now + self.slice_idle);
                self.idle_waits += 1;
            }
        }
    }

    fn next_timer(&self, now: Ns) -> Option<Ns> {
        self.idle_until.filter(|&t| t > now)
    }

    fn tunables(&self) -> Vec<(&'static str, String)> {
        self.tun.report()
    }

    fn stats(&self) -> serde_json::Value {
        serde_json::json!({
            "dispatched": { "sync": self.dispatched[1], "async": self.dispatched[0] },
            "slices": self.slices,
            "idle_waits": self.idle_waits,
            "idle_hits": self.idle_hits,
            "fifo_expired": self.fifo_expired,
            "preemptions": self.preemptions,
            "merges": self.merges,
            "dispatch_cycles": self.cycles,
            "queues": self.queues.len(),
            "idling": self.idling_allowed,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sched::drive::{drive, Row};
    use crate::types::{BioSpec, Op, ReqTable};

    fn dev(rotational: bool, queue_depth: u32) -> DeviceInfo {
        DeviceInfo {
            capacity_sectors: 1 << 30,
            queue_depth,
            rotational,
            erase_block_sectors: None,
            optimal_io_sectors: None,
            max_hw_sectors: None,
            host_tags: None,
        }
    }

    fn cfq(kv: &str, rotational: bool, depth: u32) -> Cfq {
        Cfq::from_params(&Params::parse_kv(kv).unwrap(), &dev(rotational, depth)).unwrap()
    }

    fn rd(pid: u32, lba: u64) -> Row {
        Row {
            name: "",
            lba,
            size: 8,
            write: false,
            pid,
            tte_ms: None,
        }
    }

    fn wr(pid: u32, lba: u64) -> Row {
        Row {
            name: "",
            lba,
            size: 8,
            write: true,
            pid,
            tte_ms: None,
        }
    }

    /// Dispatch order as "pid:lba" through a one-at-a-time device of `service`.
    fn order(
        s: &mut Cfq,
        rows: &[Row],
        arrive: &[Ns],
        service: Ns,
        sync_writes: bool,
    ) -> Vec<String> {
        drive(s, rows, arrive, |_| service, sync_writes)
            .iter()
            .map(|&i| format!("{}:{}", rows[i].pid, rows[i].lba))
            .collect()
    }

    #[test]
    fn sync_queues_are_served_round_robin_in_slices() {
        let rows: Vec<Row> = [0, 8, 16, 24]
            .iter()
            .map(|&l| rd(1, l))
            .chain([1000, 1008, 1016, 1024].iter().map(|&l| rd(2, l)))
            .collect();
        let at = vec![0; 8];
        // Slice (from the first completion) of one service time: two requests per turn.
        let got = order(
            &mut cfq("slice_sync=10", true, 1),
            &rows,
            &at,
            10 * MS,
            false,
        );
        assert_eq!(
            got,
            ["1:0", "1:8", "2:1000", "2:1008", "1:16", "1:24", "2:1016", "2:1024"]
        );
        // Default 100 ms slice: each process's whole queue in one turn.
        let got = order(&mut cfq("", true, 1), &rows, &at, 10 * MS, false);
        assert_eq!(
            got,
            ["1:0", "1:8", "1:16", "1:24", "2:1000", "2:1008", "2:1016", "2:1024"]
        );
    }

    #[test]
    fn async_writes_of_all_processes_share_one_sorted_queue() {
        let rows = [wr(1, 300), wr(2, 100), wr(3, 200), wr(1, 308)];
        let at = [0; 4];
        let got = order(&mut cfq("", true, 1), &rows, &at, MS, false);
        assert_eq!(got, ["2:100", "3:200", "1:300", "1:308"]);
        // The same writes flagged sync get one queue per process.
        let got = order(&mut cfq("", true, 1), &rows, &at, MS, true);
        assert_eq!(got, ["1:300", "1:308", "2:100", "3:200"]);
    }

    #[test]
    fn a_rotational_device_idles_for_the_active_process() {
        // Process 1 thinks 2 ms between its reads; process 2's read waits meanwhile.
        let rows = [rd(1, 0), rd(2, 5000), rd(1, 8)];
        let at = [0, MS, 12 * MS];
        let idle = ["1:0", "1:8", "2:5000"];
        let no_idle = ["1:0", "2:5000", "1:8"];
        assert_eq!(
            order(&mut cfq("", true, 1), &rows, &at, 10 * MS, false),
            idle
        );
        assert_eq!(
            order(
                &mut cfq("slice_idle=0", true, 1),
                &rows,
                &at,
                10 * MS,
                false
            ),
            no_idle
        );
        // Non-rotational with a queue depth above 1 (NCQ): no idling, as CFQ.
        assert_eq!(
            order(&mut cfq("", false, 32), &rows, &at, 10 * MS, false),
            no_idle
        );
        // The wait is bounded by slice_idle: a read 20 ms later does not get it.
        let late = [0, MS, 30 * MS];
        assert_eq!(
            order(&mut cfq("", true, 1), &rows, &late, 10 * MS, false),
            no_idle
        );
        let mut s = cfq("", true, 1);
        let _ = order(&mut s, &rows, &at, 10 * MS, false);
        assert_eq!(
            (
                s.stats()["idle_waits"].as_u64(),
                s.stats()["idle_hits"].as_u64()
            ),
            (Some(3), Some(1)),
            "after 1:0 (hit), 1:8 and 2:5000"
        );
    }

    fn add(s: &mut Cfq, t: &mut ReqTable, pid: u32, n: u64) {
        for i in 0..n {
            let spec = BioSpec {
                op: Op::Read,
                sync: true,
                sector: pid as u64 * 10_000 + i * 8,
                sectors: 8,
                pid,
                job: 0,
                tag: 0,
                attrs: Default::default(),
            };
            let b = t.alloc_bio(spec, 0);
            let rq = t.alloc_req(b, 0);
            s.insert(
                &mut Ctx {
                    now: 0,
                    table: t,
                    max_sectors: 1024,
                },
                rq,
            );
        }
    }

    fn dispatch_all(s: &mut Cfq, t: &mut ReqTable, now: Ns) -> Vec<ReqId> {
        let mut v = Vec::new();
        while let Some(rq) = s.dispatch(&mut Ctx {
            now,
            table: t,
            max_sectors: 1024,
        }) {
            v.push(rq);
        }
        v
    }

    #[test]
    fn quantum_limits_requests_in_flight_from_a_queue() {
        let mut t = ReqTable::new();
        let mut s = cfq("", false, 64);
        add(&mut s, &mut t, 1, 10);
        add(&mut s, &mut t, 2, 10);
        // New slice with another busy queue: quantum/2 in flight.
        let first = dispatch_all(&mut s, &mut t, 0);
        assert_eq!(first.len(), 4);
        assert!(first.iter().all(|&r| t.get(r).pid == 1));
        // After the first completion the slice runs: up to quantum in flight.
        s.completed(
            &mut Ctx {
                now: MS,
                table: &mut t,
                max_sectors: 1024,
            },
            first[0],
        );
        let more = dispatch_all(&mut s, &mut t, MS);
        assert_eq!(more.len(), 5, "8 in flight again");
        let mut s = cfq("quantum=2", false, 64);
        add(&mut s, &mut t, 1, 10);
        add(&mut s, &mut t, 2, 10);
        assert_eq!(dispatch_all(&mut s, &mut t, 0).len(), 1);
        // The only busy queue has no limit.
        let mut s = cfq("", false, 64);
        add(&mut s, &mut t, 3, 10);
        assert_eq!(dispatch_all(&mut s, &mut t, 0).len(), 10);
    }

    #[test]
    fn a_sync_request_preempts_an_async_slice() {
        let rows = [wr(1, 100), wr(1, 108), wr(1, 116), rd(2, 5000)];
        let at = [0, 0, 0, MS];
        // Async write at 100 is on the device when the read arrives; the read goes next.
        let got = order(&mut cfq("", true, 1), &rows, &at, 10 * MS, false);
        assert_eq!(got, ["1:100", "2:5000", "1:108", "1:116"]);
    }

    #[test]
    fn dispatch_sort_moves_quantum_per_queue_per_cycle_sorted_by_lba() {
        // Queued at once: process 1 (busy first) high, process 2 low, process 3 between.
        let rows = [
            rd(1, 5000),
            rd(1, 5008),
            rd(1, 5016),
            rd(2, 100),
            rd(2, 108),
            rd(2, 116),
            wr(3, 3000),
        ];
        let at = [0; 7];
        // Cycle 1: {1:5000, 1:5008}, {2:100, 2:108}, {3:3000}, sorted; cycle 2: the rest.
        let mut s = cfq("quantum=2,dispatch_sort=1", true, 1);
        assert_eq!(
            order(&mut s, &rows, &at, 10 * MS, true),
            ["2:100", "2:108", "3:3000", "1:5000", "1:5008", "2:116", "1:5016"]
        );
        assert_eq!(s.stats()["dispatch_cycles"].as_u64(), Some(2));
        assert_eq!(s.stats()["idle_waits"].as_u64(), Some(0), "no idling");
        // quantum=3: one cycle, the whole of every queue, sorted.
        assert_eq!(
            order(
                &mut cfq("quantum=3,dispatch_sort=1", true, 1),
                &rows,
                &at,
                10 * MS,
                true
            ),
            ["2:100", "2:108", "2:116", "3:3000", "1:5000", "1:5008", "1:5016"]
        );
        // The default (one request per call, 100 ms slices) serves whole queues in turn.
        assert_eq!(
            order(&mut cfq("quantum=2", true, 1), &rows, &at, 10 * MS, true),
            ["1:5000", "1:5008", "1:5016", "2:100", "2:108", "2:116", "3:3000"]
        );
    }

    #[test]
    fn dispatch_sort_refills_only_when_the_dispatch_queue_is_empty() {
        // Process 2's low read arrives while process 1's cycle is still queued: it
        // waits for the next cycle instead of being sorted in front.
        let rows = [rd(1, 1000), rd(1, 1008), rd(2, 10), rd(1, 1016)];
        let at = [0, 0, MS, MS];
        let mut s = cfq("quantum=2,dispatch_sort=1", true, 1);
        assert_eq!(
            order(&mut s, &rows, &at, 10 * MS, false),
            ["1:1000", "1:1008", "2:10", "1:1016"]
        );
        // A request moved to the dispatch queue takes no more merges.
        let mut t = ReqTable::new();
        let mut s = cfq("quantum=2,dispatch_sort=1", true, 1);
        add(&mut s, &mut t, 1, 3);
        let ctx = &mut Ctx {
            now: 0,
            table: &mut t,
            max_sectors: 1024,
        };
        let first = s.dispatch(ctx).unwrap();
        assert_eq!(ctx.table.get(first).sector, 10_000);
        let spec = |sector| BioSpec {
            op: Op::Read,
            sync: true,
            sector,
            sectors: 8,
            pid: 1,
            job: 0,
            tag: 0,
            attrs: Default::default(),
        };
        // 10_008 is in the dispatch queue (no merge); 10_016 is still in process 1's queue.
        let b = ctx.table.alloc_bio(spec(10_016), 0);
        assert!(!s.bio_merge(ctx, b), "behind 10_008, in the dispatch queue");
        let b = ctx.table.alloc_bio(spec(10_024), 0);
        assert!(s.bio_merge(ctx, b), "behind 10_016, still queued");
    }

    #[test]
    fn tunables_have_legacy_defaults_and_are_validated() {
        let s = cfq("", true, 1);
        let tun: Vec<String> = s
            .tunables()
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        assert_eq!(
            tun,
            [
                "quantum=8",
                "slice_sync=100",
                "slice_async=40",
                "slice_async_rq=2",
                "slice_idle=8",
                "fifo_expire_sync=125",
                "fifo_expire_async=250",
                "back_seek_max=16384",
                "back_seek_penalty=2",
                "dispatch_sort=0"
            ]
        );
        for (kv, name) in [
            ("quantum=0", "quantum"),
            ("slice_sync=x", "slice_sync"),
            ("back_seek_penalty=0", "back_seek_penalty"),
            ("dispatch_sort=2", "dispatch_sort"),
        ] {
            let err = Cfq::from_params(&Params::parse_kv(kv).unwrap(), &dev(true, 1))
                .err()
                .unwrap();
            assert!(format!("{err:#}").contains(name), "{kv}: {err:#}");
        }
    }
}
