//! bfq: a model of the Budget Fair Queueing elevator (`block/bfq-iosched.c`,
//! Linux 4.12 and later; Valente and Checconi, "High Throughput Disk
//! Scheduling with Fair Bandwidth Distribution", IEEE ToC 59(9), 2010).
//!
//! What it keeps (kernel names in brackets):
//! - Queues [`bfq_queue`]: one per process for sync requests (reads, and
//!   writes flagged sync), keyed by `Request.pid`; one shared queue for async
//!   writes. A queue's weight is `weight` (io.bfq.weight, default 100) times
//!   its flow's weight (the job's `weight` option, [`FlowQos`]).
//! - Budgets in sectors: the queue in service may take requests until the
//!   next one would overrun its budget [`BFQQE_BUDGET_EXHAUSTED`], it has
//!   none left [`BFQQE_NO_MORE_REQUESTS`], or it has been in service
//!   `timeout_sync_ms` [`BFQQE_BUDGET_TIMEOUT`]. Within the queue, requests go
//!   in sector order from the head position (C-LOOK).
//! - B-WF2Q+ between queues [`bfq_lookup_next_entity`]: a queue turning busy
//!   gets start S = max(V, its last finish) and finish F = S + budget/weight;
//!   the next queue is the eligible one (S <= V) with the smallest F, V
//!   jumping to the smallest S when none is eligible; on expiry the queue is
//!   charged the sectors it was served (a timed-out queue its whole budget,
//!   as `bfq_bfqq_charge_time` charges a slow queue) and V advances by the
//!   charge over the busy weights.
//! - Budget feedback [`__bfq_bfqq_recalc_budget`]: exhausted, doubled (up to
//!   `max_budget`); emptied, the service it used (at least a quarter of
//!   `max_budget`); timed out, unchanged.
//! - Idling [`bfq_arm_slice_timer`]: on a rotational device, or on one that
//!   does not queue (at most `BFQ_HW_QUEUE_THRESHOLD`, 3, requests in the
//!   driver: `hw_tag` stays 0, as on a depth-1 SD card) while the async
//!   queue has writes, when the sync queue in service runs empty, bfq waits
//!   up to `slice_idle_us` for that process's next request before serving
//!   anyone else; a request of that process ends the wait. (The kernel's
//!   rule — I/O-bound sync queues with a short think time, service
//!   guarantees, weight raising — is richer; the lab showed its bfq idling
//!   for a reader beside writeback on a depth-1 card and not beside an
//!   O_DIRECT writer. Until 2026-11-27 the model idled on rotational
//!   devices only, and predicted read tails beside writeback on a depth-1
//!   card 100-300× the lab's bfq's; idling for every sync queue there gave
//!   a reader beside an O_DIRECT writer a 136 ms tail, the lab's 4.5.)
//! - Tags [`bfq_limit_depth`]: sync reads take any scheduler tag, sync
//!   writes 3/4 and async requests 1/2 of each sbitmap word
//!   (`bfq_update_depths` with no queue weight-raised).
//! - Preemption [`bfq_bfqq_handle_idle_busy_switch`]: a queue turning busy
//!   expires the queue in service [`BFQQE_PREEMPTED`] (charged what it was
//!   served, its budget kept) when idling for that queue buys nothing
//!   (`!bfq_better_to_idle`: here any queue but a sync one on a device that
//!   idles for it) or the new queue weighs more. So on queueing flash a reader is served
//!   at its next request, not after a writer's 125 ms budget timeout
//!   (issue 39: the model's read p99 beside a QD32 writer was 125 ms, the
//!   kernel's 3.7).
//!
//! Not modelled: cgroup hierarchies, the weight-raising of `low_latency`
//! (interactive and soft real-time boosts), queue merging of cooperating
//! processes, injection during idling, the I/O-priority classes (RT, IDLE),
//! `strict_guarantees`, the auto-tuned `max_budget` (here a tunable, the
//! kernel's default 16 384 sectors).

use super::tunable::{self, Tunable, TunableValues};
use super::{try_merge, Ctx, FlowQos, Scheduler, SectorIndex};
use crate::params::Params;
use crate::types::DeviceInfo;
use crate::types::{Ns, ReqId, MS};
use anyhow::Result;
use rustc_hash::FxHashMap as HashMap;

/// Most requests in the driver of a device that does not queue (`hw_tag` 0).
const BFQ_HW_QUEUE_THRESHOLD: u32 = 3;

pub const TUNABLES: &[Tunable] = &[
    Tunable {
        name: "slice_idle_us",
        default: 8_000,
        min: 0,
        max: 1_000_000,
        help: "wait for the in-service sync queue's next request on a rotational or non-queueing device (us; 0: no idling)",
    },
    Tunable {
        name: "timeout_sync_ms",
        default: 125,
        min: 1,
        max: 100_000,
        help: "budget timeout: the longest a queue stays in service (ms)",
    },
    Tunable {
        name: "max_budget",
        default: 16_384,
        min: 8,
        max: 1 << 24,
        help: "largest budget a queue gets (sectors)",
    },
    Tunable {
        name: "weight",
        default: 100,
        min: 1,
        max: 1000,
        help: "a queue's weight (io.bfq.weight), times its flow's weight",
    },
];

/// The shared async queue's key (no process has this pid).
const ASYNC: u32 = u32::MAX;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Expiry {
    Exhausted,
    Emptied,
    Timeout,
    /// [`BFQQE_PREEMPTED`]: another queue turned busy and idling for this one
    /// buys nothing (`bfq_bfqq_handle_idle_busy_switch`).
    Preempted,
}

struct Queue {
    idx: SectorIndex,
    len: usize,
    sync: bool,
    weight: f64,
    budget: u64,
    /// Virtual start and finish (B-WF2Q+).
    s: f64,
    f: f64,
    in_flight: u32,
}

pub struct Bfq {
    queues: HashMap<u32, Queue>,
    /// Queues with requests, not in service (ascending key: a stable tie-break).
    busy: Vec<u32>,
    active: Option<u32>,
    /// Sectors served and when service began, for the queue in service.
    served: u64,
    started: Ns,
    /// The in-service queue ran empty at this time and waits for its process.
    idle_from: Option<Ns>,
    head: u64,
    v: f64,
    flows: HashMap<u32, f64>,
    rotational: bool,
    /// At most `BFQ_HW_QUEUE_THRESHOLD` requests in the driver (`!hw_tag`).
    non_queueing: bool,
    slice_idle: Ns,
    timeout: Ns,
    max_budget: u64,
    weight: f64,
    held: usize,
    expired: [u64; 4],
    idle_hits: u64,
    merged: u64,
    tun: TunableValues,
    /// The kernel whose tag depths it applies: 6.12's on the whole map
    /// (`bfq_update_depths` from `nr_requests`), or 6.1's per sbitmap word.
    per_word: bool,
}

/// The bfq model with Linux 6.12's tag depths (of the whole map); the model's
/// other simplifications are the same for both kernels.
pub fn new(p: &Params, dev: &DeviceInfo) -> Result<Box<dyn Scheduler>> {
    build(p, dev, false)
}

/// The bfq model with Linux 6.1's tag depths (per sbitmap word).
pub fn new_6_1(p: &Params, dev: &DeviceInfo) -> Result<Box<dyn Scheduler>> {
    build(p, dev, true)
}

fn build(p: &Params, dev: &DeviceInfo, per_word: bool) -> Result<Box<dyn Scheduler>> {
    let tun = tunable::parse(TUNABLES, p, &[])?;
    Ok(Box::new(Bfq {
        per_word,
        queues: HashMap::default(),
        busy: Vec::new(),
        active: None,
        served: 0,
        started: 0,
        idle_from: None,
        head: 0,
        v: 0.0,
        flows: HashMap::default(),
        rotational: dev.rotational,
        non_queueing: dev.queue_depth <= BFQ_HW_QUEUE_THRESHOLD,
        slice_idle: tun.get("slice_idle_us") * 1_000,
        timeout: tun.get("timeout_sync_ms") * MS,
        max_budget: tun.get("max_budget"),
        weight: tun.get("weight") as f64,
        held: 0,
        expired: [0; 4],
        idle_hits: 0,
        merged: 0,
        tun,
    }))
}

impl Bfq {
    fn key(sync: bool, pid: u32) -> u32 {
        if sync {
            pid
        } else {
            ASYNC
        }
    }

    fn min_budget(&self) -> u64 {
        (self.max_budget / 4).max(8)
    }

    /// Queue `k` turns busy: its virtual start and finish.
    fn make_busy(&mut self, k: u32) {
        let v = self.v;
        let q = self.queues.get_mut(&k).expect("a queue");
        q.s = q.f.max(v);
        q.f = q.s + q.budget as f64 / q.weight;
        if let Err(i) = self.busy.binary_search(&k) {
            self.busy.insert(i, k);
        }
    }

    /// The next queue to serve (B-WF2Q+): eligible, smallest finish.
    fn select(&mut self) -> Option<u32> {
        if self.busy.is_empty() {
            return None;
        }
        let min_s = self
            .busy
            .iter()
            .map(|k| self.queues[k].s)
            .fold(f64::INFINITY, f64::min);
        if min_s > self.v {
            self.v = min_s;
        }
        let v = self.v;
        let k = self
            .busy
            .iter()
            .filter(|k| self.queues[k].s <= v)
            .min_by(|a, b| self.queues[a].f.total_cmp(&self.queues[b].f))
            .copied()?;
        if let Ok(i) = self.busy.binary_search(&k) {
            self.busy.remove(i);
        }
        Some(k)
    }

    /// The queue in service leaves it: charge, feed back its budget, and put
    /// it back among the busy ones if it has requests.
    fn expire(&mut self, why: Expiry) {
        let Some(k) = self.active.take() else {
            return;
        };
        self.idle_from = None;
        self.expired[why as usize] += 1;
        let (served, min_budget, max_budget) = (self.served, self.min_budget(), self.max_budget);
        let busy_w: f64 = self.busy.iter().map(|b| self.queues[b].weight).sum();
        let q = self.queues.get_mut(&k).expect("the queue in service");
        let charge = match why {
            Expiry::Timeout => served.max(q.budget),
            _ => served,
        };
        q.f = q.s + charge as f64 / q.weight;
        q.budget = match why {
            Expiry::Exhausted => (q.budget * 2).min(max_budget),
            Expiry::Emptied => served.clamp(min_budget, max_budget),
            // __bfq_bfqq_recalc_budget leaves a preempted queue's budget alone.
            Expiry::Timeout | Expiry::Preempted => q.budget,
        };
        let w = busy_w + q.weight;
        let has = q.len > 0;
        self.v += charge as f64 / w;
        if has {
            self.make_busy(k);
        }
    }

    /// Idle for sync queue `k`: on a rotational device always; on one that
    /// does not queue only while the async queue has writes (idling there
    /// protects sync I/O from writeback, as the kernel's does for a reader
    /// beside the flusher, and buys nothing between sync queues: the lab's
    /// bfq kept a QD1 reader beside an O_DIRECT writer at mq-deadline's tail).
    fn should_idle(&self, k: u32) -> bool {
        let writeback = || {
            self.queues
                .get(&ASYNC)
                .is_some_and(|q| q.len > 0 || q.in_flight > 0)
        };
        self.slice_idle > 0
            && self.queues.get(&k).is_some_and(|q| q.sync)
            && (self.rotational || (self.non_queueing && writeback()))
    }
}

impl Scheduler for Bfq {
    fn name(&self) -> &'static str {
        if self.per_word {
            "bfq-6.1"
        } else {
            "bfq"
        }
    }

    fn set_flow(&mut self, flow: u32, qos: FlowQos) -> bool {
        self.flows.insert(flow, qos.weight);
        true
    }

    fn insert(&mut self, ctx: &mut Ctx, rq: ReqId) {
        let r = ctx.rq(rq);
        let k = Self::key(r.sync, r.pid);
        let flow_w = self.flows.get(&r.job).copied().unwrap_or(1.0);
        let (weight, budget) = (self.weight * flow_w, self.max_budget);
        if self.queues.len() >= 2 * crate::sched::MAX_IDLE_QUEUES && !self.queues.contains_key(&k) {
            // Forget idle processes' queues, as if they had exited (memory
            // bounded by the processes with I/O outstanding).
            let active = self.active;
            self.queues
                .retain(|&k, q| q.len > 0 || q.in_flight > 0 || Some(k) == active || k == ASYNC);
        }
        let r = ctx.rq(rq);
        let q = self.queues.entry(k).or_insert_with(|| Queue {
            idx: SectorIndex::default(),
            len: 0,
            sync: k != ASYNC,
            weight,
            budget,
            s: 0.0,
            f: 0.0,
            in_flight: 0,
        });
        q.idx.add(r, rq);
        q.len += 1;
        let first = q.len == 1;
        self.held += 1;
        if self.active == Some(k) {
            if self.idle_from.take().is_some() {
                self.idle_hits += 1;
            }
        } else if first {
            self.make_busy(k);
            // bfq_bfqq_handle_idle_busy_switch: the queue in service is expired
            // for one turning busy when idling for it buys nothing
            // (!bfq_better_to_idle: here, anything but a sync queue on a
            // device that idles) or the new one weighs more.
            if let Some(a) = self.active.filter(|&a| a != k) {
                let heavier = self.queues[&k].weight > self.queues[&a].weight;
                if !self.should_idle(a) || heavier {
                    self.expire(Expiry::Preempted);
                }
            }
        }
    }

    fn dispatch(&mut self, ctx: &mut Ctx) -> Option<ReqId> {
        let now = ctx.now;
        loop {
            let k = match self.active {
                Some(k) => k,
                None => {
                    let k = self.select()?;
                    self.active = Some(k);
                    self.served = 0;
                    self.started = now;
                    k
                }
            };
            if now.saturating_sub(self.started) >= self.timeout {
                self.expire(Expiry::Timeout);
                continue;
            }
            let q = self.queues.get_mut(&k).expect("the queue in service");
            if q.len == 0 {
                if self.should_idle(k) {
                    let q = &self.queues[&k];
                    // Wait for its requests in flight, then slice_idle for a new one.
                    if q.in_flight > 0 {
                        return None;
                    }
                    let from = *self.idle_from.get_or_insert(now);
                    if now < from + self.slice_idle {
                        return None;
                    }
                }
                self.expire(Expiry::Emptied);
                continue;
            }
            let rq = q.idx.at_or_after(self.head).or_else(|| q.idx.first())?;
            let r = ctx.rq(rq).clone();
            let sectors = r.sectors as u64;
            if self.served > 0 && self.served + sectors > q.budget {
                self.expire(Expiry::Exhausted);
                continue;
            }
            q.idx.remove(&r, rq);
            q.len -= 1;
            q.in_flight += 1;
            q.budget = q.budget.max(sectors);
            self.served += sectors;
            self.head = r.end();
            self.held -= 1;
            return Some(rq);
        }
    }

    fn has_work(&self) -> bool {
        self.held > 0
    }

    /// `bfq_limit_depth` with `bfq_update_depths`'s depths (no queue
    /// weight-raised: the model has no weight raising): sync reads take any
    /// tag, async requests half of the tags, sync writes 3/4 (at least one),
    /// so a reader finds a tag beside a write flood. 6.12 takes the shares of
    /// `nr_requests`; 6.1 of each sbitmap word, which on a map of fewer than
    /// 4 tags (one 64-bit word) limits nothing: 2 tags give a sync write 1 on
    /// 6.12, 2 on 6.1.
    fn limit_depth(&self, bio: &crate::types::BioSpec, _now: Ns, nr_requests: u32) -> Option<u32> {
        let sync = bio.is_sync();
        if sync && bio.op == crate::types::Op::Read {
            return None;
        }
        let share = |n: u32| {
            if sync {
                ((n * 3) >> 2).max(1)
            } else {
                (n >> 1).max(1)
            }
        };
        Some(if self.per_word {
            super::shallow_tags(nr_requests, share)
        } else {
            share(nr_requests)
        })
    }

    fn completed(&mut self, ctx: &mut Ctx, rq: ReqId) {
        let r = ctx.rq(rq);
        if let Some(q) = self.queues.get_mut(&Self::key(r.sync, r.pid)) {
            q.in_flight = q.in_flight.saturating_sub(1);
        }
    }

    fn next_timer(&self, now: Ns) -> Option<Ns> {
        let k = self.active?;
        let q = self.queues.get(&k)?;
        if q.len > 0 || q.in_flight > 0 || !self.should_idle(k) {
            return None;
        }
        let from = self.idle_from.unwrap_or(now);
        Some((from + self.slice_idle).max(now + 1))
    }

    fn bio_merge(&mut self, ctx: &mut Ctx, bio: u32) -> bool {
        let spec = ctx.table.bio(bio).spec;
        let k = Self::key(spec.sync || spec.op == crate::types::Op::Read, spec.pid);
        let Some(q) = self.queues.get_mut(&k) else {
            return false;
        };
        let ok = try_merge(ctx, &mut q.idx, bio, true).is_some();
        self.merged += ok as u64;
        ok
    }

    fn tunables(&self) -> Vec<(&'static str, String)> {
        self.tun.report()
    }

    fn stats(&self) -> serde_json::Value {
        serde_json::json!({
            "expired_budget_exhausted": self.expired[0],
            "expired_no_more_requests": self.expired[1],
            "expired_budget_timeout": self.expired[2],
            "expired_preempted": self.expired[3],
            "idle_hits": self.idle_hits,
            "queues": self.queues.len(),
            "merged": self.merged,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{BioSpec, Op, ReqTable};

    fn ctx(t: &mut ReqTable, now: Ns) -> Ctx<'_> {
        Ctx {
            now,
            table: t,
            max_sectors: 1024,
        }
    }

    fn add(s: &mut Box<dyn Scheduler>, t: &mut ReqTable, pid: u32, job: u32, sector: u64, now: Ns) {
        let mut spec = BioSpec::scripted(Op::Read, true, sector, 8, 0);
        spec.pid = pid;
        spec.job = job;
        let b = t.alloc_bio(spec, now);
        let rq = t.alloc_req(b, now);
        s.insert(&mut ctx(t, now), rq);
    }

    #[test]
    fn tag_depths_are_of_the_whole_map_on_6_12_and_per_word_on_6_1() {
        let dev = DeviceInfo::flash(1 << 30, 1);
        let b612 = new(&Params::new(), &dev).unwrap_or_else(|e| panic!("{e:#}"));
        let b61 = new_6_1(&Params::new(), &dev).unwrap_or_else(|e| panic!("{e:#}"));
        assert_eq!((b612.name(), b61.name()), ("bfq", "bfq-6.1"));
        let (sync_w, async_w) = (
            BioSpec::scripted(Op::Write, true, 0, 8, 0),
            BioSpec::scripted(Op::Write, false, 0, 8, 0),
        );
        // (nr_requests, 6.12 sync write, 6.1 sync write, 6.12 async, 6.1 async): on 2 tags
        // 6.12 keeps one for reads and 6.1 none (a 64-bit word's 48 and 32 cover both); on 8
        // (4 words of 2 bits) 6.1's 1 per word; on 256 the same.
        for (nr, s612, s61, a612, a61) in
            [(2, 1, 2, 1, 2), (8, 6, 4, 4, 4), (256, 192, 192, 128, 128)]
        {
            assert_eq!(
                b612.limit_depth(&sync_w, 0, nr),
                Some(s612),
                "6.12 sync, {nr}"
            );
            assert_eq!(b61.limit_depth(&sync_w, 0, nr), Some(s61), "6.1 sync, {nr}");
            assert_eq!(
                b612.limit_depth(&async_w, 0, nr),
                Some(a612),
                "6.12 async, {nr}"
            );
            assert_eq!(
                b61.limit_depth(&async_w, 0, nr),
                Some(a61),
                "6.1 async, {nr}"
            );
        }
        let read = BioSpec::scripted(Op::Read, true, 0, 8, 0);
        assert_eq!(
            b612.limit_depth(&read, 0, 2),
            None,
            "sync reads take any tag"
        );
    }

    #[test]
    fn budgets_share_sectors_by_weight() {
        let p = Params::parse_kv("max_budget=64").unwrap();
        let mut s = new(&p, &DeviceInfo::flash(1 << 30, 1)).unwrap();
        s.set_flow(
            0,
            FlowQos {
                weight: 2.0,
                ..FlowQos::default()
            },
        );
        s.set_flow(1, FlowQos::default());
        let mut t = ReqTable::new();
        for i in 0..300u64 {
            add(&mut s, &mut t, 1, 0, i * 8, 0);
            add(&mut s, &mut t, 2, 1, (1 << 20) + i * 8, 0);
        }
        let mut first = 0;
        for n in 0..240 {
            let rq = s.dispatch(&mut ctx(&mut t, n)).expect("a request");
            first += (t.get(rq).pid == 1) as u32;
            s.completed(&mut ctx(&mut t, n), rq);
        }
        assert!(
            (150..=170).contains(&first),
            "weight 2:1 gave {first} of 240"
        );
    }

    #[test]
    fn a_rotational_device_idles_for_the_process_in_service() {
        let rot = DeviceInfo {
            rotational: true,
            ..DeviceInfo::flash(1 << 30, 1)
        };
        let mut s = new(&Params::new(), &rot).unwrap();
        let mut t = ReqTable::new();
        add(&mut s, &mut t, 1, 0, 0, 0);
        add(&mut s, &mut t, 2, 0, 1 << 20, 0);
        let a = s.dispatch(&mut ctx(&mut t, 0)).unwrap();
        assert_eq!(t.get(a).pid, 1);
        assert!(
            s.dispatch(&mut ctx(&mut t, 0)).is_none(),
            "waits for its request in flight"
        );
        s.completed(&mut ctx(&mut t, 1000), a);
        assert!(
            s.dispatch(&mut ctx(&mut t, 1000)).is_none(),
            "idles for process 1"
        );
        assert_eq!(s.next_timer(1000), Some(1000 + 8 * MS));
        // Process 1's next request ends the wait and is served before process 2.
        add(&mut s, &mut t, 1, 0, 8, 2000);
        let b = s.dispatch(&mut ctx(&mut t, 2000)).unwrap();
        assert_eq!(t.get(b).pid, 1);
        s.completed(&mut ctx(&mut t, 3000), b);
        // No request within slice_idle: process 2 is served.
        assert!(s.dispatch(&mut ctx(&mut t, 3000)).is_none());
        let c = s.dispatch(&mut ctx(&mut t, 3000 + 8 * MS)).unwrap();
        assert_eq!(t.get(c).pid, 2);
        // Flash idles only where it does not queue (at most 3 requests in
        // the driver: hw_tag 0, as on a depth-1 card), and only while
        // writeback waits (an async write queued).
        let idles_after_a_read = |depth: u32, writeback: bool| {
            let mut s = new(&Params::new(), &DeviceInfo::flash(1 << 30, depth)).unwrap();
            let mut t = ReqTable::new();
            add(&mut s, &mut t, 1, 0, 0, 0);
            add(&mut s, &mut t, 2, 0, 1 << 20, 0);
            if writeback {
                let b = t.alloc_bio(BioSpec::scripted(Op::Write, false, 1 << 21, 8, 0), 0);
                let rq = t.alloc_req(b, 0);
                s.insert(&mut ctx(&mut t, 0), rq);
            }
            let a = s.dispatch(&mut ctx(&mut t, 0)).unwrap();
            s.completed(&mut ctx(&mut t, 10), a);
            s.dispatch(&mut ctx(&mut t, 10)).is_none()
        };
        assert!(idles_after_a_read(1, true));
        assert!(idles_after_a_read(3, true));
        assert!(!idles_after_a_read(1, false));
        assert!(!idles_after_a_read(4, true));
    }

    #[test]
    fn a_queue_in_service_too_long_is_expired() {
        let p = Params::parse_kv("timeout_sync_ms=10").unwrap();
        let mut s = new(&p, &DeviceInfo::flash(1 << 30, 1)).unwrap();
        let mut t = ReqTable::new();
        for i in 0..10u64 {
            add(&mut s, &mut t, 1, 0, i * 8, 0);
        }
        add(&mut s, &mut t, 2, 0, 1 << 20, 0);
        let a = s.dispatch(&mut ctx(&mut t, 0)).unwrap();
        assert_eq!(t.get(a).pid, 1);
        s.completed(&mut ctx(&mut t, 11 * MS), a);
        let b = s.dispatch(&mut ctx(&mut t, 11 * MS)).unwrap();
        assert_eq!(t.get(b).pid, 2, "process 1's budget timed out");
    }
}
