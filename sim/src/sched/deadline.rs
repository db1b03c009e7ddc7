//! deadline: the legacy single-queue deadline elevator (`block/deadline-iosched.c`,
//! Linux 2.6.x–4.x), reproduced decision for decision.
//!
//! Model (kernel names in brackets):
//! - Per direction a sector-sorted tree [`sort_list[dir]`] and a FIFO in insertion
//!   order [`fifo_list[dir]`]; at insert `fifo_time = now + fifo_expire[dir]`
//!   [`deadline_add_request`].
//! - Dispatch [`deadline_dispatch_requests`]: if a batch is running (`next_rq[WRITE]`,
//!   else `next_rq[READ]`, is set and `batching < fifo_batch`) continue it. Otherwise
//!   choose a direction: reads when there are reads, unless there are also writes and
//!   `starved++ >= writes_starved` (the post-increment is evaluated only when writes
//!   exist); writes otherwise (and `starved = 0`). In the chosen direction the batch
//!   starts at the FIFO head when that head has expired (`now >= fifo_time`,
//!   [`deadline_check_fifo`]) or when there is no `next_rq[dir]` (the last request went
//!   the other way or ran off the end of the tree); else it continues at
//!   `next_rq[dir]`. `batching` restarts at 0 and counts the request.
//! - Moving a request to the device [`deadline_move_request`] clears both `next_rq`
//!   and sets `next_rq[dir]` to the request after it in sector order
//!   [`deadline_latter_request`]: batches are one-way sweeps, they do not wrap.
//! - Merging: back merges (the elevator core's merge hash) and, when `front_merges`
//!   is set, front merges [`deadline_merge`], both through [`super::try_merge`]; a front
//!   merge changes the start sector, so the request is re-keyed in the sort tree
//!   [`deadline_merged_request`] (try_merge does that on the shared index). The FIFO
//!   position and `fifo_time` of a request do not change when a bio merges into it.
//!
//! The FIFOs, sort trees, `next_rq`, batching and the starvation count are the
//! deadline core shared with veloces ([`super::dlcore`], batch rule `Legacy`).
//!
//! Not modelled: request-to-request merging after a bio merge (`attempt_back_merge`/
//! `attempt_front_merge` and `deadline_merged_requests`), because the engine owns the
//! request accounting (nr_requests) and a scheduler must not free requests; jiffies
//! granularity (times are exact nanoseconds); zoned-device write locking.
//!
//! Tunables (sysfs `queue/iosched/`), legacy defaults and valid ranges:
//! `read_expire` 500 ms and `write_expire` 5000 ms (0..=2^31-1), `fifo_batch` 16
//! (1..=2^31-1; the kernel also accepts 0, which behaves as 1), `writes_starved` 2
//! (0..=2^31-1), `front_merges` 1 (0/1).
//!
//! Cost: O(log n) per insert, dispatch and merge (B-trees keyed by sector and by
//! fifo_time); no allocation in steady state except B-tree node churn.

use super::dlcore::{BatchRule, DeadlineCore, READ, WRITE};
use super::tunable::{self, Tunable, TunableValues};
use super::{try_merge, Ctx, MergeKind, Scheduler};
use crate::params::Params;
use crate::types::DeviceInfo;
use crate::types::{Ns, ReqId, MS};
use anyhow::Result;

/// One declaration of each tunable the deadline family shares (the legacy
/// elevator's and mq-deadline's sysfs files of the same names, defaults and ranges).
pub const READ_EXPIRE: Tunable = Tunable {
    name: "read_expire",
    default: 500,
    min: 0,
    max: INT_MAX,
    help: "ms: a read's FIFO deadline",
};
pub const WRITE_EXPIRE: Tunable = Tunable {
    name: "write_expire",
    default: 5000,
    min: 0,
    max: INT_MAX,
    help: "ms: a write's FIFO deadline",
};
pub const FIFO_BATCH: Tunable = Tunable {
    name: "fifo_batch",
    default: 16,
    min: 1,
    max: INT_MAX,
    help: "requests per sorted batch in one direction",
};
pub const WRITES_STARVED: Tunable = Tunable {
    name: "writes_starved",
    default: 2,
    min: 0,
    max: INT_MAX,
    help: "read batches that may pass waiting writes",
};
pub const FRONT_MERGES: Tunable = Tunable {
    name: "front_merges",
    default: 1,
    min: 0,
    max: 1,
    help: "also merge bios in front of queued requests",
};

pub(crate) const INT_MAX: u64 = i32::MAX as u64;

/// deadline's tunables (sysfs `queue/iosched/`), legacy defaults and ranges.
pub const TUNABLES: &[Tunable] = &[
    READ_EXPIRE,
    WRITE_EXPIRE,
    FIFO_BATCH,
    WRITES_STARVED,
    FRONT_MERGES,
];

/// Legacy deadline elevator state (`struct deadline_data`).
pub struct Deadline {
    /// FIFOs, sort trees, batching (the core shared with veloces). The FIFO
    /// order is the insertion order here: the expiry is constant per direction.
    core: DeadlineCore,
    queued: usize,
    // Tunables.
    fifo_expire: [Ns; 2],
    front_merges: bool,
    // Statistics.
    dispatched: [u64; 2],
    batches: [u64; 2],
    expired_starts: [u64; 2],
    starved_write_batches: u64,
    back_merges: u64,
    front_merged: u64,
    tun: TunableValues,
}

/// Build a deadline scheduler from its tunables (`read_expire`, `write_expire`,
/// `fifo_batch`, `writes_starved`, `front_merges`).
pub fn new(p: &Params, _dev: &DeviceInfo) -> Result<Box<dyn Scheduler>> {
    Ok(Box::new(Deadline::from_params(p)?))
}

impl Deadline {
    /// Parse and validate the tunables; an invalid value is an error naming it.
    pub fn from_params(p: &Params) -> Result<Self> {
        let tun = tunable::parse(TUNABLES, p, &[])?;
        let read_expire = tun.get("read_expire");
        let write_expire = tun.get("write_expire");
        let fifo_batch = tun.get("fifo_batch");
        let writes_starved = tun.get("writes_starved");
        let front_merges = tun.flag("front_merges");
        Ok(Deadline {
            core: DeadlineCore::new(fifo_batch, writes_starved, BatchRule::Legacy),
            queued: 0,
            fifo_expire: [read_expire * MS, write_expire * MS],
            front_merges,
            dispatched: [0; 2],
            batches: [0; 2],
            expired_starts: [0; 2],
            starved_write_batches: 0,
            back_merges: 0,
            front_merged: 0,
            tun,
        })
    }

    /// `deadline_move_request` + `deadline_move_to_dispatch`.
    fn move_request(&mut self, ctx: &mut Ctx, rq: ReqId) {
        let r = ctx.rq(rq);
        let dir = r.op.idx();
        self.core.move_to_dispatch(r, rq);
        self.queued -= 1;
        self.dispatched[dir] += 1;
    }
}

impl Scheduler for Deadline {
    fn name(&self) -> &'static str {
        "deadline"
    }

    fn insert(&mut self, ctx: &mut Ctx, rq: ReqId) {
        let dir = ctx.rq(rq).op.idx();
        let fifo_time = ctx.now + self.fifo_expire[dir];
        ctx.table.get_mut(rq).fifo_time = fifo_time;
        self.core.add(ctx.rq(rq), rq);
        self.queued += 1;
    }

    fn dispatch(&mut self, ctx: &mut Ctx) -> Option<ReqId> {
        // Batches are reads XOR writes: at most one next_rq is set, the
        // running batch's.
        if let Some(rq) = self.core.continue_batch(ctx.now) {
            self.move_request(ctx, rq);
            return Some(rq);
        }
        let reads = self.core.has_queued(READ);
        let writes = self.core.has_queued(WRITE);
        let dir = if reads {
            if self.core.reads_go(writes) {
                READ
            } else {
                self.starved_write_batches += 1;
                WRITE
            }
        } else if writes {
            WRITE
        } else {
            return None;
        };
        let (rq, expired) = self.core.start_batch(dir, ctx.now)?;
        self.expired_starts[dir] += expired as u64;
        self.batches[dir] += 1;
        self.move_request(ctx, rq);
        Some(rq)
    }

    fn has_work(&self) -> bool {
        self.queued > 0
    }

    fn bio_merge(&mut self, ctx: &mut Ctx, bio: u32) -> bool {
        let dir = ctx.table.bio(bio).spec.op.idx();
        match try_merge(ctx, &mut self.core.sort[dir], bio, self.front_merges) {
            // A front merge moved the start sector: try_merge re-keyed the shared sort
            // index (`deadline_merged_request`); next_rq and the FIFO hold ids, which stay valid.
            Some((_, MergeKind::Front)) => {
                self.front_merged += 1;
                true
            }
            Some((_, MergeKind::Back)) => {
                self.back_merges += 1;
                true
            }
            None => false,
        }
    }

    fn tunables(&self) -> Vec<(&'static str, String)> {
        self.tun.report()
    }

    fn stats(&self) -> serde_json::Value {
        serde_json::json!({
            "dispatched": { "read": self.dispatched[READ], "write": self.dispatched[WRITE] },
            "batches": { "read": self.batches[READ], "write": self.batches[WRITE] },
            "expired_dispatches": { "read": self.expired_starts[READ], "write": self.expired_starts[WRITE] },
            "starved_write_batches": self.starved_write_batches,
            "merges": { "back": self.back_merges, "front": self.front_merged },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{BioSpec, Op, ReqTable};

    fn sched(kv: &str) -> Deadline {
        Deadline::from_params(&Params::parse_kv(kv).unwrap()).unwrap()
    }

    fn spec(op: Op, sector: u64, sectors: u32) -> BioSpec {
        BioSpec {
            op,
            sync: false,
            sector,
            sectors,
            pid: 1,
            job: 0,
            tag: sector,
            attrs: Default::default(),
        }
    }

    /// Insert requests (op, sector) at `now`.
    fn add(d: &mut Deadline, t: &mut ReqTable, now: Ns, reqs: &[(Op, u64)]) {
        for &(op, sector) in reqs {
            let b = t.alloc_bio(spec(op, sector, 8), now);
            let rq = t.alloc_req(b, now);
            d.insert(
                &mut Ctx {
                    now,
                    table: t,
                    max_sectors: 1024,
                },
                rq,
            );
        }
    }

    /// Dispatch everything at `now`; the sectors in dispatch order.
    fn drain(d: &mut Deadline, t: &mut ReqTable, now: Ns) -> Vec<u64> {
        let mut out = Vec::new();
        while let Some(rq) = d.dispatch(&mut Ctx {
            now,
            table: t,
            max_sectors: 1024,
        }) {
            out.push(t.get(rq).sector);
            t.free_req(rq);
        }
        assert!(!d.has_work());
        out
    }

    #[test]
    fn reads_are_preferred_over_older_writes() {
        let (mut d, mut t) = (sched(""), ReqTable::new());
        add(&mut d, &mut t, 0, &[(Op::Write, 10), (Op::Read, 500)]);
        assert_eq!(drain(&mut d, &mut t, 0), vec![500, 10]);
        assert_eq!(d.stats()["dispatched"]["write"], 1);
    }

    #[test]
    fn writes_starved_bounds_the_read_batches_before_a_write() {
        for ws in [0u64, 1, 2, 3] {
            let (mut d, mut t) = (
                sched(&format!("fifo_batch=1,writes_starved={ws}")),
                ReqTable::new(),
            );
            add(&mut d, &mut t, 0, &[(Op::Write, 9000)]);
            add(
                &mut d,
                &mut t,
                0,
                &[
                    (Op::Read, 100),
                    (Op::Read, 200),
                    (Op::Read, 300),
                    (Op::Read, 400),
                    (Op::Read, 500),
                ],
            );
            let order = drain(&mut d, &mut t, 0);
            let pos = order.iter().position(|&s| s == 9000).unwrap();
            assert_eq!(pos as u64, ws, "writes_starved={ws}: {order:?}");
        }
    }

    #[test]
    fn an_expired_fifo_head_restarts_the_batch_there() {
        for (now, want) in [(MS, 200), (20 * MS, 5000)] {
            let (mut d, mut t) = (sched("fifo_batch=1,read_expire=10"), ReqTable::new());
            add(
                &mut d,
                &mut t,
                0,
                &[(Op::Read, 100), (Op::Read, 5000), (Op::Read, 200)],
            );
            let first = d
                .dispatch(&mut Ctx {
                    now: 0,
                    table: &mut t,
                    max_sectors: 1024,
                })
                .unwrap();
            assert_eq!(t.get(first).sector, 100);
            // A new batch (fifo_batch=1): sorted continuation unless the FIFO head expired.
            let next = d
                .dispatch(&mut Ctx {
                    now,
                    table: &mut t,
                    max_sectors: 1024,
                })
                .unwrap();
            assert_eq!(t.get(next).sector, want, "at {now} ns");
            assert_eq!(
                d.stats()["expired_dispatches"]["read"],
                (want == 5000) as u64
            );
        }
    }

    #[test]
    fn fifo_batch_limits_a_sorted_batch() {
        let reads = [
            (Op::Read, 100),
            (Op::Read, 400),
            (Op::Read, 300),
            (Op::Read, 200),
        ];
        // With fifo_batch=2 the write batch clears next_rq[READ], so reads restart at
        // the FIFO head (400, inserted second) and 300 comes last: no wrap-around.
        for (fb, want) in [
            (16, vec![100, 200, 300, 400, 9000]),
            (2, vec![100, 200, 9000, 400, 300]),
        ] {
            let (mut d, mut t) = (
                sched(&format!("fifo_batch={fb},writes_starved=1")),
                ReqTable::new(),
            );
            add(&mut d, &mut t, 0, &reads);
            add(&mut d, &mut t, 0, &[(Op::Write, 9000)]);
            assert_eq!(drain(&mut d, &mut t, 0), want, "fifo_batch={fb}");
        }
    }

    #[test]
    fn batches_sweep_upward_without_wrapping() {
        let (mut d, mut t) = (sched(""), ReqTable::new());
        add(
            &mut d,
            &mut t,
            0,
            &[(Op::Read, 300), (Op::Read, 100), (Op::Read, 400)],
        );
        // FIFO head 300, then 400 in sector order; 100 starts a new batch from the FIFO.
        assert_eq!(drain(&mut d, &mut t, 0), vec![300, 400, 100]);
    }

    fn merge(d: &mut Deadline, t: &mut ReqTable, sector: u64) -> bool {
        let b = t.alloc_bio(spec(Op::Read, sector, 8), 0);
        d.bio_merge(
            &mut Ctx {
                now: 0,
                table: t,
                max_sectors: 1024,
            },
            b,
        )
    }

    #[test]
    fn front_merges_follow_the_tunable_back_merges_always_happen() {
        for fm in [true, false] {
            let (mut d, mut t) = (
                sched(&format!("front_merges={}", fm as u8)),
                ReqTable::new(),
            );
            add(&mut d, &mut t, 0, &[(Op::Read, 100)]);
            assert!(merge(&mut d, &mut t, 108), "back merge");
            assert_eq!(
                merge(&mut d, &mut t, 92),
                fm,
                "front merge with front_merges={fm}"
            );
            assert!(!merge(&mut d, &mut t, 300), "no neighbour");
            let s = d.stats();
            assert_eq!(
                (s["merges"]["back"].as_u64(), s["merges"]["front"].as_u64()),
                (Some(1), Some(fm as u64))
            );
        }
    }

    #[test]
    fn a_front_merged_request_is_rekeyed_by_its_new_start() {
        let (mut d, mut t) = (sched(""), ReqTable::new());
        add(&mut d, &mut t, 0, &[(Op::Read, 100), (Op::Read, 50)]);
        assert!(merge(&mut d, &mut t, 92));
        // Found again at its new start (92): a second front merge at 84.
        assert!(merge(&mut d, &mut t, 84));
        let rq = d
            .dispatch(&mut Ctx {
                now: 0,
                table: &mut t,
                max_sectors: 1024,
            })
            .unwrap();
        let r = t.get(rq);
        assert_eq!((r.sector, r.sectors, r.nr_bios), (84, 24, 3));
        assert_eq!(
            t.bios_of(rq)
                .map(|b| t.bio(b).spec.sector)
                .collect::<Vec<_>>(),
            vec![84, 92, 100]
        );
        // The FIFO still holds the other request under its own key.
        let rq = d
            .dispatch(&mut Ctx {
                now: 0,
                table: &mut t,
                max_sectors: 1024,
            })
            .unwrap();
        assert_eq!(t.get(rq).sector, 50);
        assert!(!d.has_work());
    }

    #[test]
    fn invalid_tunables_name_the_option() {
        for (kv, name) in [
            ("fifo_batch=0", "fifo_batch"),
            ("read_expire=x", "read_expire"),
            ("front_merges=2", "front_merges"),
        ] {
            let err = Deadline::from_params(&Params::parse_kv(kv).unwrap())
                .err()
                .unwrap();
            assert!(format!("{err:#}").contains(name), "{kv}: {err:#}");
        }
        let d = sched("");
        let tun: Vec<String> = d
            .tunables()
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        assert_eq!(
            tun,
            [
                "read_expire=500",
                "write_expire=5000",
                "fifo_batch=16",
                "writes_starved=2",
                "front_merges=1"
            ]
        );
    }
}
