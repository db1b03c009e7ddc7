//! kyber: Linux 6.1's `block/kyber-iosched.c`, a token-based scheduler for
//! fast devices. Requests fall into scheduling domains (read, write,
//! discard, other) by operation; each domain holds a pool of tokens (its
//! depth, at most `kyber_depth`), and a request needs one of its domain's
//! tokens to go to the device. Dispatch goes round-robin over the domains,
//! up to `kyber_batch_size` requests from one before moving on, each in
//! FIFO order. Every completion adds two samples to its domain's latency
//! histograms (total: from the request's allocation; I/O: from its
//! dispatch), in buckets of a quarter of the domain's latency target; a
//! timer 100 ms after the first completion since it last ran reads their
//! percentiles and resizes the domains: when any domain's I/O p90 misses
//! its target, every domain's depth is scaled by (p99 bucket + 1) / 4 of
//! its total latency (throttling the domains that meet their targets,
//! deepening those that do not); otherwise a domain whose total p99 misses
//! its target gets deeper. Asynchronous requests may take only 75 % of the
//! scheduler's tags (`kyber_limit_depth`): of the whole map in 6.12 (`kyber`),
//! of each sbitmap word in 6.1 (`kyber-6.1`); the two differ on small maps.
//!
//! Kept to one hardware queue (one `kyber_hctx_data`); the per-CPU software
//! queues (`kyber_ctx_queue`) are modelled by the request's submitting CPU.
//! Line references in this file are to 6.1's kyber-iosched.c.

use super::tunable::{self, Tunable, TunableValues};
use super::{try_merge, Ctx, MergeIndex, MergeKind, Scheduler};
use crate::params::Params;
use crate::types::DeviceInfo;
use crate::types::{BioSpec, Ns, Op, ReqId, Request, NONE, SEC};
use anyhow::Result;
use std::collections::VecDeque;

/// kyber's tunables: the kernel's two sysfs attributes (lines 888-897).
pub const TUNABLES: &[Tunable] = &[
    Tunable {
        name: "read_lat_nsec",
        default: 2_000_000,
        min: 0,
        max: u64::MAX,
        help: "read latency target, ns (kyber_latency_targets[KYBER_READ])",
    },
    Tunable {
        name: "write_lat_nsec",
        default: 10_000_000,
        min: 0,
        max: u64::MAX,
        help: "write latency target, ns (kyber_latency_targets[KYBER_WRITE])",
    },
];

/// Scheduling domains (lines 31-37).
pub const READ: usize = 0;
pub const WRITE: usize = 1;
pub const DISCARD: usize = 2;
pub const OTHER: usize = 3;
const NUM_DOMAINS: usize = 4;
const DOMAIN_NAMES: [&str; NUM_DOMAINS] = ["READ", "WRITE", "DISCARD", "OTHER"];

/// Share of the scheduler tags asynchronous requests may use (line 52).
const ASYNC_PERCENT: u32 = 75;
/// Maximum (and initial) token depth per domain (lines 62-67).
pub const KYBER_DEPTH: [u32; NUM_DOMAINS] = [256, 128, 64, 16];
/// Discard's latency target (line 75); read and write are tunables.
const DISCARD_TARGET: Ns = 5 * SEC;
/// Requests dispatched from a domain before moving to the next (lines 82-87).
pub const KYBER_BATCH_SIZE: [u32; NUM_DOMAINS] = [16, 8, 1, 1];
/// Latency buckets: 4 at or under the target, 4 above it (lines 102-115).
const LATENCY_SHIFT: u32 = 2;
const GOOD_BUCKETS: i32 = 1 << LATENCY_SHIFT;
const LATENCY_BUCKETS: usize = 2 << LATENCY_SHIFT;
const TOTAL_LATENCY: usize = 0;
const IO_LATENCY: usize = 1;
/// The timer runs HZ/10 after the first completion since it last ran (line 659).
pub const TIMER_PERIOD: Ns = SEC / 10;
/// A percentile waits for 500 samples or one second (HZ), lines 245-251.
const MIN_SAMPLES: u32 = 500;
const SAMPLE_TIMEOUT: Ns = SEC;

/// The domain of an operation (`kyber_sched_domain`, lines 198-210). vsim's
/// requests are reads and writes; discards and flushes would be DISCARD and
/// OTHER.
pub fn sched_domain(op: Op) -> usize {
    match op {
        Op::Read => READ,
        Op::Write => WRITE,
    }
}

/// The bucket of one latency sample (`add_latency_sample`, lines 622-638).
pub fn latency_bucket(target: Ns, latency: Ns) -> usize {
    if latency == 0 {
        return 0;
    }
    let divisor = (target >> LATENCY_SHIFT).max(1);
    ((latency - 1) / divisor).min(LATENCY_BUCKETS as u64 - 1) as usize
}

/// The tags an asynchronous request may use out of `nr_requests` in 6.1
/// (`kyber_depth_updated`, lines 455-464, applied by `sbitmap_get_shallow`):
/// 75 % of each sbitmap word of the scheduler tags, so about 75 % overall.
pub fn async_tags(nr_requests: u32) -> u32 {
    super::shallow_tags(nr_requests, |word| word * ASYNC_PERCENT / 100)
}

/// The same in 6.12 (`kyber_depth_updated`: `nr_requests * KYBER_ASYNC_PERCENT
/// / 100`, on the whole map): 1 of 2 tags, 6 of 8, where 6.1 gives 2 and 4.
pub fn async_tags_6_12(nr_requests: u32) -> u32 {
    nr_requests * ASYNC_PERCENT / 100
}

/// A domain's token pool (`domain_tokens`, an `sbitmap_queue`): tokens are
/// numbered, a request takes the lowest free one below the current depth,
/// and a resize changes only the depth, so tokens held above a smaller depth
/// stay held (and do not count against it) until their requests finish.
#[derive(Clone, Debug)]
struct Tokens {
    depth: u32,
    used: Vec<u64>,
}

impl Tokens {
    fn new(max: u32) -> Tokens {
        Tokens {
            depth: max,
            used: vec![0; max.div_ceil(64) as usize],
        }
    }
    fn get(&mut self) -> Option<u32> {
        for (w, bits) in self.used.iter_mut().enumerate() {
            let free = !*bits;
            if free == 0 {
                continue;
            }
            let nr = w as u32 * 64 + free.trailing_zeros();
            if nr >= self.depth {
                return None;
            }
            *bits |= 1 << (nr % 64);
            return Some(nr);
        }
        None
    }
    fn put(&mut self, nr: u32) {
        self.used[(nr / 64) as usize] &= !(1u64 << (nr % 64));
    }
    fn in_use(&self) -> u32 {
        self.used.iter().map(|w| w.count_ones()).sum()
    }
}

/// A queued request as the software queue's merge scan sees it.
#[derive(Clone, Copy, Debug)]
struct Entry {
    id: ReqId,
    op: Op,
    sector: u64,
    end: u64,
}

/// How many of a software queue's newest requests a bio may merge with
/// (`blk_bio_list_merge`'s `checked = 8`, block/blk-merge.c line 1145).
const MERGE_CHECKED: usize = 8;

/// One per-CPU software queue's list for one domain, as [`try_merge`] sees it.
struct KcqList<'a>(&'a mut VecDeque<Entry>);

impl MergeIndex for KcqList<'_> {
    fn back_candidate(&self, op: Op, sector: u64) -> Option<ReqId> {
        self.0
            .iter()
            .rev()
            .take(MERGE_CHECKED)
            .find(|e| e.op == op && e.end == sector)
            .map(|e| e.id)
    }
    fn front_candidate(&self, op: Op, end: u64) -> Option<ReqId> {
        self.0
            .iter()
            .rev()
            .take(MERGE_CHECKED)
            .find(|e| e.op == op && e.sector == end)
            .map(|e| e.id)
    }
    fn unkey(&mut self, _r: &Request, _rq: ReqId, _kind: MergeKind) {}
    fn rekey(&mut self, r: &Request, rq: ReqId, _kind: MergeKind) {
        if let Some(e) = self.0.iter_mut().rev().find(|e| e.id == rq) {
            e.sector = r.sector;
            e.end = r.end();
        }
    }
}

pub struct Kyber {
    tun: TunableValues,
    /// latency_targets (read, write, discard).
    targets: [Ns; OTHER],
    tokens: [Tokens; NUM_DOMAINS],
    /// Per-CPU software queues (`kcqs`), one list per domain; index = CPU.
    kcqs: Vec<[VecDeque<Entry>; NUM_DOMAINS]>,
    /// Requests in the software queues, per domain (`kcq_map` set bits).
    kcq_len: [usize; NUM_DOMAINS],
    /// The hardware context's lists (`khd->rqs`), filled from the software
    /// queues when empty.
    rqs: [VecDeque<ReqId>; NUM_DOMAINS],
    cur_domain: usize,
    batching: u32,
    /// The token each dispatched request holds (`rq->elv.priv[0]`), by id.
    token_of: Vec<u32>,
    buckets: [[[u32; LATENCY_BUCKETS]; 2]; OTHER],
    latency_timeout: [Option<Ns>; OTHER],
    domain_p99: [i32; OTHER],
    /// When the timer is pending, its expiry.
    timer_at: Option<Ns>,
    // Statistics (debugfs and tracepoints).
    merged: u64,
    dispatched: [u64; NUM_DOMAINS],
    throttled: [u64; NUM_DOMAINS],
    adjustments: u64,
    timer_runs: u64,
    min_depth: [u32; NUM_DOMAINS],
    /// 6.1's async depth (per sbitmap word) rather than 6.12's (whole map).
    per_word: bool,
}

/// kyber as Linux 6.12 has it: the async depth on the whole map, the only
/// difference from 6.1's kyber-iosched.c besides API renames.
pub fn new(p: &Params, _dev: &DeviceInfo) -> Result<Box<dyn Scheduler>> {
    Ok(Box::new(Kyber::build(p)?))
}

/// kyber as Linux 6.1 has it (the async depth per sbitmap word).
pub fn new_6_1(p: &Params, _dev: &DeviceInfo) -> Result<Box<dyn Scheduler>> {
    Ok(Box::new(Kyber {
        per_word: true,
        ..Kyber::build(p)?
    }))
}

impl Kyber {
    pub fn build(p: &Params) -> Result<Kyber> {
        let tun = tunable::parse(TUNABLES, p, &[])?;
        Ok(Kyber {
            targets: [
                tun.get("read_lat_nsec"),
                tun.get("write_lat_nsec"),
                DISCARD_TARGET,
            ],
            tun,
            tokens: KYBER_DEPTH.map(Tokens::new),
            kcqs: Vec::new(),
            kcq_len: [0; NUM_DOMAINS],
            rqs: Default::default(),
            cur_domain: 0,
            batching: 0,
            token_of: Vec::new(),
            buckets: [[[0; LATENCY_BUCKETS]; 2]; OTHER],
            latency_timeout: [None; OTHER],
            domain_p99: [-1; OTHER],
            timer_at: None,
            merged: 0,
            dispatched: [0; NUM_DOMAINS],
            throttled: [0; NUM_DOMAINS],
            adjustments: 0,
            timer_runs: 0,
            min_depth: KYBER_DEPTH,
            per_word: false,
        })
    }

    /// A domain's current token depth.
    pub fn depth(&self, domain: usize) -> u32 {
        self.tokens[domain].depth
    }

    /// `calculate_percentile` (lines 228-266), with the timer's time `now`.
    /// Note the kernel's quirk kept here: the sample timeout is one per
    /// domain, shared by its I/O and total histograms.
    fn calculate_percentile(&mut self, domain: usize, kind: usize, pct: u32, now: Ns) -> i32 {
        let buckets = &mut self.buckets[domain][kind];
        let samples: u32 = buckets.iter().sum();
        if samples == 0 {
            return -1;
        }
        let timeout = *self.latency_timeout[domain].get_or_insert(now + SAMPLE_TIMEOUT);
        if samples < MIN_SAMPLES && timeout > now {
            return -1;
        }
        self.latency_timeout[domain] = None;
        let mut left = (samples as u64 * pct as u64).div_ceil(100) as u32;
        let mut bucket = 0;
        while bucket < LATENCY_BUCKETS - 1 {
            if buckets[bucket] >= left {
                break;
            }
            left -= buckets[bucket];
            bucket += 1;
        }
        *buckets = [0; LATENCY_BUCKETS];
        bucket as i32
    }

    /// `kyber_resize_domain` (lines 268-277).
    fn resize_domain(&mut self, domain: usize, depth: u32) {
        let depth = depth.clamp(1, KYBER_DEPTH[domain]);
        if depth != self.tokens[domain].depth {
            self.tokens[domain].depth = depth;
            self.adjustments += 1;
            self.min_depth[domain] = self.min_depth[domain].min(depth);
        }
    }

    /// `kyber_timer_fn` (lines 279-357), run at `now`.
    pub fn timer_fn(&mut self, now: Ns) {
        self.timer_runs += 1;
        let mut bad = false;
        for d in 0..OTHER {
            let p90 = self.calculate_percentile(d, IO_LATENCY, 90, now);
            if p90 >= GOOD_BUCKETS {
                bad = true;
            }
        }
        for d in 0..OTHER {
            let mut p99 = self.calculate_percentile(d, TOTAL_LATENCY, 99, now);
            if bad {
                if p99 < 0 {
                    p99 = self.domain_p99[d];
                }
                self.domain_p99[d] = -1;
            } else if p99 >= 0 {
                self.domain_p99[d] = p99;
            }
            if p99 < 0 {
                continue;
            }
            if bad || p99 >= GOOD_BUCKETS {
                let orig = self.tokens[d].depth;
                let depth = (orig * (p99 as u32 + 1)) >> LATENCY_SHIFT;
                self.resize_domain(d, depth);
            }
        }
    }

    /// Run the timer if it expired by `now`: the kernel runs it at its
    /// expiry; nothing kyber does between then and its next hook depends on
    /// it, so running it at that hook (with the expiry's time) is the same.
    fn run_timer(&mut self, now: Ns) {
        if let Some(t) = self.timer_at {
            if t <= now {
                self.timer_at = None;
                self.timer_fn(t);
            }
        }
    }

    /// Record one completion's samples (`kyber_completed_request`, lines
    /// 635-656): `total` from allocation, `io` from dispatch.
    pub fn add_samples(&mut self, domain: usize, total: Ns, io: Ns, now: Ns) {
        if domain == OTHER {
            return;
        }
        let target = self.targets[domain];
        self.buckets[domain][TOTAL_LATENCY][latency_bucket(target, total)] += 1;
        self.buckets[domain][IO_LATENCY][latency_bucket(target, io)] += 1;
        // timer_reduce(jiffies + HZ / 10): arm it, or bring it forward.
        let t = now + TIMER_PERIOD;
        if self.timer_at.is_none_or(|x| x > t) {
            self.timer_at = Some(t);
        }
    }

    /// `kyber_dispatch_cur_domain` (lines 754-802).
    fn dispatch_cur_domain(&mut self) -> Option<ReqId> {
        let d = self.cur_domain;
        if self.rqs[d].is_empty() && self.kcq_len[d] == 0 {
            return None;
        }
        let Some(nr) = self.tokens[d].get() else {
            self.throttled[d] += 1;
            return None;
        };
        if self.rqs[d].is_empty() {
            // kyber_flush_busy_kcqs: every software queue's list, in CPU order.
            for kcq in &mut self.kcqs {
                self.rqs[d].extend(kcq[d].drain(..).map(|e| e.id));
            }
            self.kcq_len[d] = 0;
        }
        let rq = self.rqs[d].pop_front()?;
        self.batching += 1;
        let i = rq as usize;
        if self.token_of.len() <= i {
            self.token_of.resize(i + 1, NONE);
        }
        self.token_of[i] = nr;
        self.dispatched[d] += 1;
        Some(rq)
    }
}

impl Scheduler for Kyber {
    fn name(&self) -> &'static str {
        if self.per_word {
            "kyber-6.1"
        } else {
            "kyber"
        }
    }

    /// `kyber_insert_requests` (lines 592-613), at the tail.
    fn insert(&mut self, ctx: &mut Ctx, rq: ReqId) {
        let r = ctx.rq(rq);
        let d = sched_domain(r.op);
        let cpu = r.attrs.cpu as usize;
        if self.kcqs.len() <= cpu {
            self.kcqs.resize_with(cpu + 1, Default::default);
        }
        self.kcqs[cpu][d].push_back(Entry {
            id: rq,
            op: r.op,
            sector: r.sector,
            end: r.end(),
        });
        self.kcq_len[d] += 1;
    }

    /// `kyber_dispatch_request` (lines 804-848).
    fn dispatch(&mut self, ctx: &mut Ctx) -> Option<ReqId> {
        self.run_timer(ctx.now);
        if self.batching < KYBER_BATCH_SIZE[self.cur_domain] {
            if let Some(rq) = self.dispatch_cur_domain() {
                return Some(rq);
            }
        }
        self.batching = 0;
        for _ in 0..NUM_DOMAINS {
            self.cur_domain = (self.cur_domain + 1) % NUM_DOMAINS;
            if let Some(rq) = self.dispatch_cur_domain() {
                return Some(rq);
            }
        }
        None
    }

    fn has_work(&self) -> bool {
        self.kcq_len.iter().any(|&n| n > 0) || self.rqs.iter().any(|q| !q.is_empty())
    }

    /// `kyber_bio_merge` (lines 569-585): the newest requests of the
    /// submitting CPU's software queue for the bio's domain.
    fn bio_merge(&mut self, ctx: &mut Ctx, bio: u32) -> bool {
        let spec = ctx.table.bio(bio).spec;
        let d = sched_domain(spec.op);
        let Some(kcq) = self.kcqs.get_mut(spec.attrs.cpu as usize) else {
            return false;
        };
        let ok = try_merge(ctx, &mut KcqList(&mut kcq[d]), bio, true).is_some();
        self.merged += ok as u64;
        ok
    }

    /// `kyber_completed_request` and `kyber_finish_request` (lines 615-620, 640-660).
    fn completed(&mut self, ctx: &mut Ctx, rq: ReqId) {
        self.run_timer(ctx.now);
        let r = ctx.rq(rq);
        let d = sched_domain(r.op);
        let now = ctx.now;
        // start_time_ns is the request's allocation, which vsim's plug
        // flushes at the same instant as the insert.
        self.add_samples(
            d,
            now.saturating_sub(r.inserted),
            now.saturating_sub(r.dispatched),
            now,
        );
        if let Some(nr) = self.token_of.get_mut(rq as usize) {
            if *nr != NONE {
                self.tokens[d].put(*nr);
                *nr = NONE;
            }
        }
    }

    /// The depth timer: dispatch is retried when it may have resized a domain.
    fn next_timer(&self, _now: Ns) -> Option<Ns> {
        self.timer_at
    }

    /// `kyber_limit_depth` (lines 556-567).
    fn limit_depth(&self, bio: &BioSpec, _now: Ns, nr_requests: u32) -> Option<u32> {
        (!bio.is_sync()).then(|| {
            if self.per_word {
                async_tags(nr_requests)
            } else {
                async_tags_6_12(nr_requests)
            }
        })
    }

    fn tunables(&self) -> Vec<(&'static str, String)> {
        self.tun.report()
    }

    fn stats(&self) -> serde_json::Value {
        let per_domain = |f: &dyn Fn(usize) -> serde_json::Value| {
            let mut m = serde_json::Map::new();
            for (d, name) in DOMAIN_NAMES.iter().enumerate() {
                m.insert(name.to_string(), f(d));
            }
            serde_json::Value::Object(m)
        };
        serde_json::json!({
            "merged": self.merged,
            "depth": per_domain(&|d| self.tokens[d].depth.into()),
            "min_depth": per_domain(&|d| self.min_depth[d].into()),
            "tokens_in_use": per_domain(&|d| self.tokens[d].in_use().into()),
            "dispatched": per_domain(&|d| self.dispatched[d].into()),
            "throttled": per_domain(&|d| self.throttled[d].into()),
            "adjustments": self.adjustments,
            "timer_runs": self.timer_runs,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{BioSpec, ReqTable};

    const MS: Ns = 1_000_000;

    fn kyber() -> Kyber {
        Kyber::build(&Params::new()).unwrap()
    }

    fn ctx(t: &mut ReqTable, now: Ns) -> Ctx<'_> {
        Ctx {
            now,
            table: t,
            max_sectors: 1024,
        }
    }

    /// Queue one request of `op` (no merging: sectors far apart).
    fn queue(k: &mut Kyber, t: &mut ReqTable, op: Op, n: u64) -> ReqId {
        let b = t.alloc_bio(BioSpec::scripted(op, false, n * 1000, 8, n), 0);
        let rq = t.alloc_req(b, 0);
        k.insert(&mut ctx(t, 0), rq);
        rq
    }

    fn dispatch_all(k: &mut Kyber, t: &mut ReqTable, now: Ns) -> Vec<ReqId> {
        let mut out = Vec::new();
        while let Some(rq) = k.dispatch(&mut ctx(t, now)) {
            out.push(rq);
        }
        out
    }

    /// `n` completions of domain `d`, each with total and I/O latency.
    fn samples(k: &mut Kyber, d: usize, n: u32, total: Ns, io: Ns) {
        for _ in 0..n {
            k.add_samples(d, total, io, 0);
        }
    }

    #[test]
    fn samples_fall_in_quarter_target_buckets() {
        // add_latency_sample: bucket = min((lat - 1) / (target >> 2), 7).
        let t = 2 * MS;
        assert_eq!(latency_bucket(t, 0), 0);
        assert_eq!(latency_bucket(t, 500_000), 0);
        assert_eq!(latency_bucket(t, 500_001), 1);
        assert_eq!(latency_bucket(t, 2 * MS), 3, "the target is still good");
        assert_eq!(latency_bucket(t, 2 * MS + 1), 4, "just over it is bad");
        assert_eq!(latency_bucket(t, 100 * MS), 7);
        // A target under 4 ns divides by 1.
        assert_eq!(latency_bucket(0, 5), 4);
    }

    #[test]
    fn async_requests_get_three_quarters_of_each_sbitmap_word() {
        // 256 tags: 4 words of 64, 48 each; 64 tags: 4 words of 16, 12 each;
        // 100 tags: 6 words of 16 (72) and 4 bits (all 4 usable).
        assert_eq!(async_tags(256), 192);
        assert_eq!(async_tags(64), 48);
        assert_eq!(async_tags(100), 76);
        assert_eq!(async_tags(2), 2);
        let k = kyber();
        let bio = |op, sync| BioSpec::scripted(op, sync, 0, 8, 0);
        assert_eq!(k.limit_depth(&bio(Op::Write, false), 0, 256), Some(192));
        assert_eq!(k.limit_depth(&bio(Op::Read, true), 0, 256), None);
    }

    #[test]
    fn the_async_depth_is_of_the_whole_map_on_6_12_and_per_word_on_6_1() {
        let bio = |op, sync| BioSpec::scripted(op, sync, 0, 8, 0);
        let k612 = kyber();
        let k61 = new_6_1(&Params::new(), &DeviceInfo::flash(1 << 30, 1))
            .unwrap_or_else(|e| panic!("{e:#}"));
        assert_eq!((k612.name(), k61.name()), ("kyber", "kyber-6.1"));
        // (nr_requests, 6.12, 6.1): 2 tags (one word of 2 bits: 6.1 limits nothing),
        // 8 (4 words of 2 bits: one each), 256 (the same 192).
        for (nr, whole, word) in [(2, 1, 2), (8, 6, 4), (256, 192, 192)] {
            let w = bio(Op::Write, false);
            assert_eq!(k612.limit_depth(&w, 0, nr), Some(whole), "6.12, {nr} tags");
            assert_eq!(k61.limit_depth(&w, 0, nr), Some(word), "6.1, {nr} tags");
        }
        // O_DIRECT writes are sync: neither limits them.
        assert_eq!(k612.limit_depth(&bio(Op::Write, true), 0, 2), None);
        assert_eq!(k61.limit_depth(&bio(Op::Write, true), 0, 2), None);
    }

    #[test]
    fn a_missed_io_target_throttles_the_domains_that_meet_theirs() {
        let mut k = kyber();
        // Reads: I/O and total latency 3 ms against 2 ms (bucket 5): bad.
        // p99 of 1000 samples is the 990th: 985 in bucket 0, 15 in bucket 5.
        samples(&mut k, READ, 985, 100_000, 100_000);
        samples(&mut k, READ, 15, 3 * MS, 3 * MS);
        // Writes: 1 ms against 10 ms, bucket 0 of 2.5 ms buckets.
        samples(&mut k, WRITE, 1000, MS, MS);
        // Read p90 (the 900th sample) is in bucket 0: not bad by itself...
        k.timer_fn(100 * MS);
        assert_eq!((k.depth(READ), k.depth(WRITE)), (256, 128), "all good");
        // ... but with 200 of 1000 at 3 ms it is bucket 5: bad. Every domain
        // is scaled by (p99 bucket + 1) / 4: reads x 6/4 (capped at 256),
        // writes x 1/4.
        samples(&mut k, READ, 800, 100_000, 100_000);
        samples(&mut k, READ, 200, 3 * MS, 3 * MS);
        samples(&mut k, WRITE, 1000, MS, MS);
        k.timer_fn(200 * MS);
        assert_eq!((k.depth(READ), k.depth(WRITE)), (256, 32));
        // Still bad; writes' total p99 now 6 ms (bucket 2): 32 * 3 / 4 = 24.
        samples(&mut k, READ, 1000, 3 * MS, 3 * MS);
        samples(&mut k, WRITE, 1000, 6 * MS, MS);
        k.timer_fn(300 * MS);
        assert_eq!(k.depth(WRITE), 24);
        // Reads meet their target again: no domain is resized while its own
        // total p99 meets its target (writes stay throttled at 24)...
        samples(&mut k, READ, 1000, MS, MS);
        samples(&mut k, WRITE, 1000, 6 * MS, MS);
        k.timer_fn(400 * MS);
        assert_eq!((k.depth(READ), k.depth(WRITE)), (256, 24));
        // ... and one that misses it (12 ms: bucket 4) grows by 5/4: 30.
        samples(&mut k, READ, 1000, MS, MS);
        samples(&mut k, WRITE, 1000, 12 * MS, MS);
        k.timer_fn(500 * MS);
        assert_eq!(k.depth(WRITE), 30);
        // Throttling never goes below one token.
        for i in 0..6 {
            samples(&mut k, READ, 1000, 3 * MS, 3 * MS);
            samples(&mut k, WRITE, 1000, MS, MS);
            k.timer_fn((600 + 100 * i) * MS);
        }
        assert_eq!(k.depth(WRITE), 1);
    }

    #[test]
    fn a_domain_with_few_samples_waits_a_second_sharing_the_timeout() {
        let mut k = kyber();
        // 100 bad read samples (< 500): nothing until a second has passed.
        samples(&mut k, READ, 100, 3 * MS, 3 * MS);
        samples(&mut k, WRITE, 1000, MS, MS);
        k.timer_fn(100 * MS);
        assert_eq!(k.depth(WRITE), 128, "reads not yet counted: not bad");
        assert_eq!(k.buckets[READ][IO_LATENCY][5], 100, "kept for later");
        samples(&mut k, WRITE, 1000, MS, MS);
        k.timer_fn(1100 * MS);
        // The read I/O p90 is taken (bad): writes x 1/4. The total p99 of
        // reads restarts the shared timeout and waits (kernel quirk): its
        // samples stay, and reads are not resized.
        assert_eq!((k.depth(READ), k.depth(WRITE)), (256, 32));
        assert_eq!(k.buckets[READ][IO_LATENCY].iter().sum::<u32>(), 0);
        assert_eq!(k.buckets[READ][TOTAL_LATENCY][5], 100);
        assert_eq!(k.latency_timeout[READ], Some(2100 * MS));
    }

    #[test]
    fn dispatch_takes_batches_round_robin_over_domains() {
        let mut k = kyber();
        let mut t = ReqTable::new();
        let r: Vec<_> = (0..20)
            .map(|i| queue(&mut k, &mut t, Op::Read, i))
            .collect();
        let w: Vec<_> = (0..20)
            .map(|i| queue(&mut k, &mut t, Op::Write, 100 + i))
            .collect();
        let got = dispatch_all(&mut k, &mut t, 0);
        // 16 reads, 8 writes, the 4 reads left, then writes in batches of 8.
        let want: Vec<_> = [&r[..16], &w[..8], &r[16..], &w[8..]].concat();
        assert_eq!(got, want);
        assert!(!k.has_work());
    }

    #[test]
    fn a_domain_has_at_most_its_depth_of_tokens_at_the_device() {
        let mut k = kyber();
        let mut t = ReqTable::new();
        for i in 0..300 {
            queue(&mut k, &mut t, Op::Read, i);
        }
        let first = dispatch_all(&mut k, &mut t, 0);
        assert_eq!(first.len(), KYBER_DEPTH[READ] as usize);
        assert_eq!(k.tokens[READ].in_use(), 256);
        // A completion returns its token: one more read goes.
        k.completed(&mut ctx(&mut t, 10), first[0]);
        assert_eq!(dispatch_all(&mut k, &mut t, 10).len(), 1);
        assert!(k.throttled[READ] > 0);
        assert_eq!(k.tokens[READ].in_use(), 256);
    }

    #[test]
    fn a_shrunk_domain_dispatches_only_below_its_new_depth() {
        let mut k = kyber();
        let mut t = ReqTable::new();
        let mut w: Vec<_> = (0..10)
            .map(|i| queue(&mut k, &mut t, Op::Write, i))
            .collect();
        // Alone in the queue, writes go batch after batch: tokens 0-9 held.
        assert_eq!(dispatch_all(&mut k, &mut t, 0), w);
        // Throttle writes to 2 tokens (bad reads, good writes: 128/4 = 32,
        // then 8, then 2).
        for i in 0..3 {
            samples(&mut k, READ, 1000, 3 * MS, 3 * MS);
            samples(&mut k, WRITE, 1000, MS, MS);
            k.timer_fn((i + 1) * 100 * MS);
        }
        assert_eq!(k.depth(WRITE), 2);
        w.push(queue(&mut k, &mut t, Op::Write, 10));
        w.push(queue(&mut k, &mut t, Op::Write, 11));
        // None of tokens 0 and 1 is free: nothing goes, and freeing tokens
        // above the new depth does not help.
        assert!(k.dispatch(&mut ctx(&mut t, 0)).is_none());
        for &rq in &w[2..10] {
            k.completed(&mut ctx(&mut t, 1), rq);
        }
        assert!(
            k.dispatch(&mut ctx(&mut t, 1)).is_none(),
            "tokens 2-9 freed"
        );
        assert_eq!(k.tokens[WRITE].in_use(), 2);
        k.completed(&mut ctx(&mut t, 2), w[0]);
        assert_eq!(dispatch_all(&mut k, &mut t, 2), vec![w[10]]);
    }

    #[test]
    fn the_timer_runs_a_tenth_of_a_second_after_the_first_completion() {
        let mut k = kyber();
        let mut t = ReqTable::new();
        let a = queue(&mut k, &mut t, Op::Read, 0);
        let b = queue(&mut k, &mut t, Op::Read, 1);
        dispatch_all(&mut k, &mut t, 0);
        assert_eq!(k.next_timer(0), None);
        k.completed(&mut ctx(&mut t, 5 * MS), a);
        k.completed(&mut ctx(&mut t, 50 * MS), b);
        assert_eq!(k.next_timer(50 * MS), Some(105 * MS), "timer_reduce");
        // The next hook after the expiry runs it.
        k.dispatch(&mut ctx(&mut t, 106 * MS));
        assert_eq!((k.timer_runs, k.next_timer(106 * MS)), (1, None));
    }

    #[test]
    fn bios_merge_into_the_newest_requests_of_their_cpu_and_domain() {
        let mut k = kyber();
        let mut t = ReqTable::new();
        let a = queue(&mut k, &mut t, Op::Write, 0); // [0, 8)
        let merge = |k: &mut Kyber, t: &mut ReqTable, op, sector, cpu| {
            let mut spec = BioSpec::scripted(op, false, sector, 8, 0);
            spec.attrs.cpu = cpu;
            let b = t.alloc_bio(spec, 0);
            k.bio_merge(&mut ctx(t, 0), b)
        };
        assert!(!merge(&mut k, &mut t, Op::Read, 8, 0), "another domain");
        assert!(!merge(&mut k, &mut t, Op::Write, 8, 1), "another CPU");
        assert!(merge(&mut k, &mut t, Op::Write, 8, 0), "back merge");
        assert!(merge(&mut k, &mut t, Op::Write, 16, 0), "re-keyed end");
        assert_eq!((t.get(a).sector, t.get(a).sectors), (0, 24));
        // Only the 8 newest are looked at: 8 more requests hide `a`.
        for i in 1..=8 {
            queue(&mut k, &mut t, Op::Write, i);
        }
        assert!(!merge(&mut k, &mut t, Op::Write, 24, 0));
        assert_eq!(k.merged, 2);
    }
}
