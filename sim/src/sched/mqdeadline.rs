//! mq-deadline: the blk-mq deadline scheduler (`block/mq-deadline.c`) as the
//! lab's kernels have it: `mq-deadline` is Linux 6.12, `mq-deadline-6.1` is
//! Linux 6.1 (Debian's 6.1.y, with the async_depth fix backported). The
//! legacy single-queue elevator is `deadline` (the seeds' reproductions).
//!
//! Model (kernel names in brackets):
//! - Per priority class (RT, BE, IDLE; unset is BE) a FIFO and a sector-sorted
//!   tree per direction [`struct dd_per_prio`]; at insert `fifo_time = now +
//!   fifo_expire[dir]` [`dd_insert_request`]. The batch count, the direction
//!   of the running batch and the starvation count are the scheduler's, shared
//!   by the classes [`struct deadline_data`: `batching`, `last_dir`, `starved`].
//! - Dispatch [`dd_dispatch_request`]: first, where two or more classes have
//!   requests queued, a BE or IDLE request inserted more than
//!   `prio_aging_expire` ago [`dd_dispatch_prio_aged_requests`]; then the
//!   classes in order, a lower one only while the higher ones hold nothing.
//! - Within a class [`__dd_dispatch_request`]: a running batch goes on at the
//!   next request of `last_dir` while `batching < fifo_batch`; else reads,
//!   unless writes wait and `starved++ >= writes_starved`; a write batch sets
//!   `starved = 0`. The batch starts at the FIFO head when it has expired or
//!   there is no next request, else at the next request. The next request
//!   differs: 6.1 keeps `next_rq[dir]`, the request after the last dispatched
//!   one of that direction, which a dispatch in the other direction leaves as
//!   it was [`deadline_move_request`] (the legacy elevator cleared both); 6.12 keeps `latest_pos[dir]` per class and
//!   takes the first queued request at or after it [`deadline_from_pos`], so a
//!   request inserted ahead of the sweep joins it and a direction resumes where
//!   it stopped.
//! - `async_depth` [`dd_limit_depth`]: every request but a (sync) read takes
//!   its tag under a shallow depth of `async_depth` scaled to each sbitmap word
//!   (rounded up: 6.1's `dd_to_word_depth`, 6.12's whole-map
//!   `__map_depth_with_shallow`); the default is `nr_requests`
//!   [`dd_depth_updated`], which limits nothing.
//! - Merging: back merges and, with `front_merges`, front merges in the bio's
//!   class (`blk_rq_merge_ok` wants the same ioprio), as `deadline`.
//!
//! Not modelled: at-head and passthrough insertion (the per-class dispatch
//! list of 6.1), zoned write locking, request-to-request merging, jiffies
//! granularity.
//!
//! Tunables (sysfs `queue/iosched/`), defaults and ranges as the kernel's:
//! `read_expire` 500 ms, `write_expire` 5000 ms, `writes_starved` 2,
//! `front_merges` 1, `fifo_batch` 16, `async_depth` (0 here: as many as
//! nr_requests, the kernel's default, which its sysfs shows as that number;
//! the kernel takes 1 and up), `prio_aging_expire` 10000 ms.

use super::deadline::{
    FIFO_BATCH, FRONT_MERGES, INT_MAX, READ_EXPIRE, WRITES_STARVED, WRITE_EXPIRE,
};
use super::dlcore::{BatchRule, DeadlineCore, READ, WRITE};
use super::tunable::{self, Tunable, TunableValues};
use super::veloces::{class_of, BE, CLASS_NAMES, IDLE};
use super::{shallow_tags, try_merge, Ctx, Scheduler};
use crate::params::Params;
use crate::types::{BioSpec, DeviceInfo, Ns, Op, ReqId, MS};
use anyhow::Result;

/// mq-deadline's tunables (sysfs `queue/iosched/`), defaults and ranges.
pub const TUNABLES: &[Tunable] = &[
    READ_EXPIRE,
    WRITE_EXPIRE,
    WRITES_STARVED,
    FRONT_MERGES,
    FIFO_BATCH,
    Tunable {
        name: "async_depth",
        default: 0,
        min: 0,
        max: INT_MAX,
        help:
            "requests other than reads may hold at most this many tags (0: nr_requests, no limit)",
    },
    Tunable {
        name: "prio_aging_expire",
        default: 10_000,
        min: 0,
        max: INT_MAX,
        help: "ms: a lower class's request waiting this long goes before a higher class",
    },
];

/// Which kernel's mq-deadline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Series {
    /// 6.1: `next_rq[dir]`, set by a dispatch in `dir` only.
    V6_1,
    /// 6.12: `latest_pos[dir]`, the next request found by position.
    V6_12,
}

/// mq-deadline state (`struct deadline_data`).
pub struct MqDeadline {
    series: Series,
    /// FIFOs and sort trees per class (`dd_per_prio`); 6.1's `next_rq` too.
    cores: [DeadlineCore; 3],
    /// 6.12's `latest_pos[dir]` per class.
    latest_pos: [[u64; 2]; 3],
    queued: [usize; 3],
    last_dir: usize,
    batching: u64,
    starved: u64,
    // Tunables.
    fifo_expire: [Ns; 2],
    fifo_batch: u64,
    writes_starved: u64,
    front_merges: bool,
    async_depth: u64,
    prio_aging_expire: Ns,
    // Statistics.
    dispatched: [[u64; 2]; 3],
    aged: u64,
    merges: u64,
    tun: TunableValues,
}

/// mq-deadline as Linux 6.12 has it.
pub fn new(p: &Params, _dev: &DeviceInfo) -> Result<Box<dyn Scheduler>> {
    Ok(Box::new(MqDeadline::from_params(p, Series::V6_12)?))
}

/// mq-deadline as Linux 6.1 has it.
pub fn new_6_1(p: &Params, _dev: &DeviceInfo) -> Result<Box<dyn Scheduler>> {
    Ok(Box::new(MqDeadline::from_params(p, Series::V6_1)?))
}

impl MqDeadline {
    /// Parse and validate the tunables; an invalid value is an error naming it.
    pub fn from_params(p: &Params, series: Series) -> Result<Self> {
        let tun = tunable::parse(TUNABLES, p, &[])?;
        let core = || DeadlineCore::new(0, 0, BatchRule::Legacy);
        Ok(MqDeadline {
            series,
            cores: [core(), core(), core()],
            latest_pos: [[0; 2]; 3],
            queued: [0; 3],
            last_dir: READ,
            batching: 0,
            starved: 0,
            fifo_expire: [tun.get("read_expire") * MS, tun.get("write_expire") * MS],
            fifo_batch: tun.get("fifo_batch"),
            writes_starved: tun.get("writes_starved"),
            front_merges: tun.flag("front_merges"),
            async_depth: tun.get("async_depth"),
            prio_aging_expire: tun.get("prio_aging_expire") * MS,
            dispatched: [[0; 2]; 3],
            aged: 0,
            merges: 0,
            tun,
        })
    }

    /// `deadline_next_request`: the next request of `dir` in class `c`.
    fn next_request(&self, c: usize, dir: usize) -> Option<ReqId> {
        match self.series {
            Series::V6_1 => self.cores[c].next_rq[dir],
            Series::V6_12 => self.cores[c].sort[dir].at_or_after(self.latest_pos[c][dir]),
        }
    }

    /// `__dd_dispatch_request` for class `c`: only a request inserted at or
    /// before `latest_start` may go (`started_after`).
    fn dispatch_class(&mut self, ctx: &mut Ctx, c: usize, latest_start: Ns) -> Option<ReqId> {
        if let Some(rq) = self.next_request(c, self.last_dir) {
            if self.batching < self.fifo_batch {
                return self.start(ctx, c, rq, latest_start);
            }
        }
        let core = &self.cores[c];
        let dir = if core.has_queued(READ) {
            let starve = core.has_queued(WRITE) && {
                let s = self.starved;
                self.starved += 1;
                s >= self.writes_starved
            };
            if starve {
                WRITE
            } else {
                READ
            }
        } else if core.has_queued(WRITE) {
            WRITE
        } else {
            return None;
        };
        if dir == WRITE {
            self.starved = 0;
        }
        let core = &self.cores[c];
        let rq = match self.next_request(c, dir) {
            Some(n) if !core.fifo_expired(dir, ctx.now) => n,
            _ => core.fifo_head(dir)?.1,
        };
        self.last_dir = dir;
        self.batching = 0;
        self.start(ctx, c, rq, latest_start)
    }

    /// `dispatch_request:` onwards: the request leaves for the device.
    fn start(&mut self, ctx: &mut Ctx, c: usize, rq: ReqId, latest_start: Ns) -> Option<ReqId> {
        let r = ctx.rq(rq);
        let dir = r.op.idx();
        if r.fifo_time.saturating_sub(self.fifo_expire[dir]) > latest_start {
            return None;
        }
        self.batching += 1;
        self.latest_pos[c][dir] = r.sector;
        // 6.1's deadline_move_request sets next_rq of the request's direction only
        // (the legacy elevator cleared both); 6.12 does not read next_rq.
        self.cores[c].move_keeping_other(r, rq);
        self.queued[c] -= 1;
        self.dispatched[c][dir] += 1;
        Some(rq)
    }
}

impl Scheduler for MqDeadline {
    fn name(&self) -> &'static str {
        match self.series {
            Series::V6_1 => "mq-deadline-6.1",
            Series::V6_12 => "mq-deadline",
        }
    }

    fn limit_depth(&self, bio: &BioSpec, _now: Ns, nr_requests: u32) -> Option<u32> {
        let (op, sync) = (bio.op, bio.is_sync());
        let depth = if self.async_depth == 0 {
            nr_requests as u64
        } else {
            self.async_depth
        };
        if (op == Op::Read && sync) || depth >= nr_requests as u64 || nr_requests == 0 {
            return None;
        }
        let nr = nr_requests as u64;
        Some(shallow_tags(nr_requests, |word| {
            (depth * word as u64).div_ceil(nr) as u32
        }))
    }

    fn insert(&mut self, ctx: &mut Ctx, rq: ReqId) {
        let r = ctx.rq(rq);
        let (dir, c) = (r.op.idx(), class_of(r.attrs.ioprio));
        ctx.table.get_mut(rq).fifo_time = ctx.now + self.fifo_expire[dir];
        self.cores[c].add(ctx.rq(rq), rq);
        self.queued[c] += 1;
    }

    fn dispatch(&mut self, ctx: &mut Ctx) -> Option<ReqId> {
        // Before prio_aging_expire has passed since time 0 nothing can have aged.
        let aged_before = ctx.now.checked_sub(self.prio_aging_expire);
        if let (Some(latest), true) = (
            aged_before,
            self.queued.iter().filter(|&&q| q > 0).count() >= 2,
        ) {
            for c in BE..=IDLE {
                if let Some(rq) = self.dispatch_class(ctx, c, latest) {
                    self.aged += 1;
                    return Some(rq);
                }
            }
        }
        for c in 0..3 {
            let rq = self.dispatch_class(ctx, c, ctx.now);
            if rq.is_some() || self.queued[c] > 0 {
                return rq;
            }
        }
        None
    }

    fn has_work(&self) -> bool {
        self.queued.iter().any(|&q| q > 0)
    }

    fn bio_merge(&mut self, ctx: &mut Ctx, bio: u32) -> bool {
        let spec = ctx.table.bio(bio).spec;
        let c = class_of(spec.attrs.ioprio);
        let merged = try_merge(
            ctx,
            &mut self.cores[c].sort[spec.op.idx()],
            bio,
            self.front_merges,
        )
        .is_some();
        self.merges += merged as u64;
        merged
    }

    fn tunables(&self) -> Vec<(&'static str, String)> {
        self.tun.report()
    }

    fn stats(&self) -> serde_json::Value {
        let per_class: serde_json::Map<String, serde_json::Value> = CLASS_NAMES
            .iter()
            .zip(self.dispatched)
            .map(|(n, d)| {
                (
                    n.to_string(),
                    serde_json::json!({"read": d[READ], "write": d[WRITE]}),
                )
            })
            .collect();
        serde_json::json!({ "dispatched": per_class, "aged_dispatches": self.aged, "merges": self.merges })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{ioprio_value, BioSpec, ReqTable, IOPRIO_CLASS_RT};

    fn sched(series: Series, kv: &str) -> MqDeadline {
        MqDeadline::from_params(&Params::parse_kv(kv).unwrap(), series).unwrap()
    }

    fn add(
        d: &mut MqDeadline,
        t: &mut ReqTable,
        now: Ns,
        op: Op,
        sector: u64,
        ioprio: u16,
    ) -> ReqId {
        let mut spec = BioSpec {
            op,
            sync: op == Op::Read,
            sector,
            sectors: 8,
            pid: 1,
            job: 0,
            tag: sector,
            attrs: Default::default(),
        };
        spec.attrs.ioprio = ioprio;
        let bio = t.alloc_bio(spec, now);
        let rq = t.alloc_req(bio, now);
        let mut ctx = Ctx {
            now,
            table: t,
            max_sectors: 2560,
        };
        d.insert(&mut ctx, rq);
        rq
    }

    fn next(d: &mut MqDeadline, t: &mut ReqTable, now: Ns) -> Option<u64> {
        let mut ctx = Ctx {
            now,
            table: t,
            max_sectors: 2560,
        };
        let rq = d.dispatch(&mut ctx)?;
        Some(ctx.rq(rq).sector)
    }

    #[test]
    fn the_6_12_sweep_takes_a_request_inserted_ahead_of_it_and_6_1_does_not() {
        for (series, want) in [
            (Series::V6_1, vec![100, 300, 200]),
            (Series::V6_12, vec![100, 200, 300]),
        ] {
            let mut d = sched(series, "");
            let mut t = ReqTable::default();
            add(&mut d, &mut t, 0, Op::Write, 100, 0);
            add(&mut d, &mut t, 0, Op::Write, 300, 0);
            let mut got = vec![next(&mut d, &mut t, 1).unwrap()];
            // Inserted after the dispatch of 100, between it and 6.1's next_rq (300).
            add(&mut d, &mut t, 2, Op::Write, 200, 0);
            got.push(next(&mut d, &mut t, 3).unwrap());
            got.push(next(&mut d, &mut t, 4).unwrap());
            assert_eq!(got, want, "{series:?}");
        }
    }

    #[test]
    fn a_write_batch_resumes_its_sweep_after_reads_ran() {
        // 6.1's deadline_move_request keeps the other direction's next_rq: after the read,
        // the writes resume at 500 (the request after 300), not at the FIFO head (100), as
        // the legacy elevator, which cleared both, did. (6.12 starts a sweep by position.)
        let mut d = sched(Series::V6_1, "fifo_batch=1");
        let mut t = ReqTable::default();
        for sector in [300, 100, 500] {
            add(&mut d, &mut t, 0, Op::Write, sector, 0);
        }
        let mut got = vec![next(&mut d, &mut t, 1).unwrap()];
        add(&mut d, &mut t, 2, Op::Read, 50, 0);
        got.push(next(&mut d, &mut t, 3).unwrap());
        got.push(next(&mut d, &mut t, 4).unwrap());
        assert_eq!(got, vec![300, 50, 500]);
    }

    #[test]
    fn a_higher_class_goes_first_until_a_lower_one_has_aged() {
        let mut d = sched(Series::V6_12, "prio_aging_expire=10");
        let mut t = ReqTable::default();
        let rt = ioprio_value(IOPRIO_CLASS_RT, 0);
        add(&mut d, &mut t, 0, Op::Read, 500, 0);
        add(&mut d, &mut t, 1, Op::Read, 900, rt);
        add(&mut d, &mut t, 1, Op::Read, 901, rt);
        assert_eq!(next(&mut d, &mut t, 2), Some(900));
        // The BE read waited 10 ms: it goes before the RT one left.
        assert_eq!(next(&mut d, &mut t, 10 * MS), Some(500));
        assert_eq!(next(&mut d, &mut t, 10 * MS + 1), Some(901));
    }

    #[test]
    fn a_write_batch_goes_on_past_a_read_that_arrives_up_to_fifo_batch() {
        let mut d = sched(Series::V6_1, "fifo_batch=3");
        let mut t = ReqTable::default();
        for s in [10, 20, 30, 40] {
            add(&mut d, &mut t, 0, Op::Write, s, 0);
        }
        let mut order = vec![next(&mut d, &mut t, 1).unwrap()];
        add(&mut d, &mut t, 1, Op::Read, 1000, 0);
        order.extend((2..=5).map(|i| next(&mut d, &mut t, i).unwrap()));
        assert_eq!(order, vec![10, 20, 30, 1000, 40]);
    }

    #[test]
    fn async_depth_limits_writes_per_word_rounded_up_and_never_reads() {
        let d = sched(Series::V6_12, "async_depth=6");
        // nr_requests 8: four words of two tags; ceil(2 x 6 / 8) = 2 a word: every tag.
        let bio = |op, sync| BioSpec::scripted(op, sync, 0, 8, 0);
        assert_eq!(d.limit_depth(&bio(Op::Write, true), 0, 8), Some(8));
        let d = sched(Series::V6_12, "async_depth=3");
        // ceil(2 x 3 / 8) = 1 a word: 4 of 8.
        assert_eq!(d.limit_depth(&bio(Op::Write, true), 0, 8), Some(4));
        assert_eq!(d.limit_depth(&bio(Op::Read, true), 0, 8), None);
        // The default (nr_requests) limits nothing.
        assert_eq!(
            sched(Series::V6_1, "").limit_depth(&bio(Op::Write, false), 0, 64),
            None
        );
    }

    #[test]
    fn bad_tunables_name_the_option() {
        let e = MqDeadline::from_params(&Params::parse_kv("fifo_batch=0").unwrap(), Series::V6_1);
        assert!(format!("{:#}", e.err().unwrap()).contains("fifo_batch"));
    }
}
