//! The deadline core shared by `deadline` and `veloces`: per direction a FIFO
//! of queued requests by expiry (`fifo_list[dir]`) and a sector-sorted tree
//! (`sort_list[dir]`), the next request of a sorted batch (`next_rq[dir]`),
//! `fifo_batch` batching and the `writes_starved` count.
//!
//! What both follow (kernel names in brackets):
//! - Moving a request to the device [`DeadlineCore::move_to_dispatch`] clears
//!   both `next_rq` and sets `next_rq[dir]` to the request after it in sector
//!   order (`deadline_move_request`, `vel_start`): batches are one-way sweeps.
//! - A batch continues at `next_rq[last_dir]` while `batching < fifo_batch`
//!   [`DeadlineCore::continue_batch`]. [`BatchRule::Legacy`] (the legacy
//!   deadline elevator) stops only there; [`BatchRule::Yield`] (veloces's
//!   `__vel_dispatch`) also stops when that direction's FIFO head has expired
//!   or, for a write batch, when reads wait.
//! - Reads may pass waiting writes `writes_starved` times
//!   [`DeadlineCore::reads_go`]: `!writes || starved++ < writes_starved` (the
//!   count moves only while writes wait); a write batch resets it.
//! - A batch in `dir` starts at the FIFO head when it has expired or when
//!   there is no `next_rq[dir]`, else at `next_rq[dir]`
//!   [`DeadlineCore::start_batch`] (`deadline_check_fifo`,
//!   `vel_dispatch_reads`/`_writes`).
//!
//! Which direction to serve (and veloces's bundles on top) is the
//! scheduler's; the expiry time (`Request::fifo_time`) is set by the
//! scheduler before [`DeadlineCore::add`].

use super::SectorIndex;
use crate::types::{Ns, ReqId, Request};
use std::collections::BTreeMap;

pub const READ: usize = 0;
pub const WRITE: usize = 1;

/// When a running batch ends besides `fifo_batch`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BatchRule {
    /// Legacy deadline: only at `fifo_batch` (or the end of the tree).
    Legacy,
    /// veloces: also when the batch's FIFO head expired, or reads wait
    /// behind a write batch.
    Yield,
}

/// Per-direction FIFO + sort tree + batching state.
pub struct DeadlineCore {
    /// Sector-sorted queued requests per direction (also the merge index).
    pub sort: [SectorIndex; 2],
    /// (fifo_time, insertion seq) -> request: the kernel's FIFO list order
    /// (a merge may move a request to an older place).
    fifo: [BTreeMap<(Ns, u64), ReqId>; 2],
    /// FIFO seq of each request in a FIFO (0: in none), by ReqId.
    seq_of: Vec<u64>,
    seq: u64,
    pub next_rq: [Option<ReqId>; 2],
    /// Direction of the running batch.
    pub last_dir: usize,
    pub batching: u64,
    pub starved: u64,
    pub fifo_batch: u64,
    pub writes_starved: u64,
    rule: BatchRule,
}

impl DeadlineCore {
    pub fn new(fifo_batch: u64, writes_starved: u64, rule: BatchRule) -> Self {
        DeadlineCore {
            sort: [SectorIndex::default(), SectorIndex::default()],
            fifo: [BTreeMap::new(), BTreeMap::new()],
            seq_of: Vec::new(),
            seq: 0,
            next_rq: [None, None],
            last_dir: READ,
            batching: 0,
            starved: 0,
            fifo_batch,
            writes_starved,
            rule,
        }
    }

    /// Queue `rq` (described by `r`, its `fifo_time` set) at the FIFO tail
    /// and in the sort tree.
    pub fn add(&mut self, r: &Request, rq: ReqId) {
        let dir = r.op.idx();
        let i = rq as usize;
        if self.seq_of.len() <= i {
            self.seq_of.resize(i + 1, 0);
        }
        self.seq += 1;
        self.seq_of[i] = self.seq;
        self.sort[dir].add(r, rq);
        self.fifo[dir].insert((r.fifo_time, self.seq), rq);
    }

    /// Whether `rq` is in a FIFO.
    pub fn in_fifo(&self, rq: ReqId) -> bool {
        self.seq_of.get(rq as usize).is_some_and(|&s| s != 0)
    }

    /// Take `rq` (as `r` describes it now) off its FIFO and sort tree; a
    /// `next_rq` pointing at it moves to its successor (`vel_remove_request`).
    pub fn remove(&mut self, r: &Request, rq: ReqId) {
        let dir = r.op.idx();
        if self.next_rq[dir] == Some(rq) {
            self.next_rq[dir] = self.sort[dir].next_after(r.sector, rq);
        }
        if let Some(s) = self.seq_of.get_mut(rq as usize) {
            if *s != 0 {
                self.fifo[dir].remove(&(r.fifo_time, *s));
                *s = 0;
            }
        }
        self.sort[dir].remove(r, rq);
    }

    /// `deadline_move_request`: `next_rq` becomes the request after `rq` in
    /// its direction (the other direction's is cleared); `rq` leaves.
    pub fn move_to_dispatch(&mut self, r: &Request, rq: ReqId) {
        self.next_rq[1 - r.op.idx()] = None;
        self.move_keeping_other(r, rq);
    }

    /// 6.1's mq-deadline `deadline_move_request`: as [`Self::move_to_dispatch`],
    /// but the other direction's `next_rq` stays as it was.
    pub fn move_keeping_other(&mut self, r: &Request, rq: ReqId) {
        let dir = r.op.idx();
        self.next_rq[dir] = self.sort[dir].next_after(r.sector, rq);
        self.remove(r, rq);
    }

    /// Request-to-request merge where the merged request `rq` (expiry
    /// `rq_time`) takes the older FIFO place of `next` (`next_time`), both
    /// in the FIFO of `dir`: `rq` moves to `next`'s key and `next` leaves the
    /// FIFO (`list_move(&req->queuelist, &next->queuelist)`). The caller sets
    /// `rq`'s `fifo_time` to `next_time`.
    pub fn take_fifo_place(
        &mut self,
        dir: usize,
        rq: ReqId,
        rq_time: Ns,
        next: ReqId,
        next_time: Ns,
    ) {
        let rseq = self.seq_of[rq as usize];
        let nseq = self.seq_of[next as usize];
        self.fifo[dir].remove(&(rq_time, rseq));
        self.fifo[dir].insert((next_time, nseq), rq);
        self.seq_of[rq as usize] = nseq;
        self.seq_of[next as usize] = 0;
    }

    /// The oldest queued request of `dir` and its expiry.
    pub fn fifo_head(&self, dir: usize) -> Option<(Ns, ReqId)> {
        self.fifo[dir]
            .first_key_value()
            .map(|(&(t, _), &id)| (t, id))
    }

    /// `deadline_check_fifo`: has the oldest request of `dir` expired?
    pub fn fifo_expired(&self, dir: usize, now: Ns) -> bool {
        self.fifo_head(dir).is_some_and(|(t, _)| now >= t)
    }

    /// The requests of `dir` in the FIFO, oldest first (for tests).
    #[cfg(test)]
    pub fn fifo_ids(&self, dir: usize) -> impl Iterator<Item = ReqId> + '_ {
        self.fifo[dir].values().copied()
    }

    /// Whether requests of `dir` wait in the FIFO.
    pub fn has_queued(&self, dir: usize) -> bool {
        !self.fifo[dir].is_empty()
    }

    /// The next request of the running batch, if it goes on (counted).
    pub fn continue_batch(&mut self, now: Ns) -> Option<ReqId> {
        self.continue_batch_if(now, |_| false)
    }

    /// [`DeadlineCore::continue_batch`]; under `Yield`, waiting reads do not
    /// end a write batch whose next write `own` says is a reader's own.
    pub fn continue_batch_if(&mut self, now: Ns, own: impl Fn(ReqId) -> bool) -> Option<ReqId> {
        let last = self.last_dir;
        let rq = self.next_rq[last]?;
        let more = self.batching < self.fifo_batch
            && match self.rule {
                BatchRule::Legacy => true,
                BatchRule::Yield => {
                    !self.fifo_expired(last, now)
                        && (last == READ || self.fifo[READ].is_empty() || own(rq))
                }
            };
        if more {
            self.batching += 1;
            Some(rq)
        } else {
            None
        }
    }

    /// With reads waiting: may they go again? `!writes || starved++ <
    /// writes_starved`.
    pub fn reads_go(&mut self, writes: bool) -> bool {
        !writes || {
            let s = self.starved;
            self.starved += 1;
            s < self.writes_starved
        }
    }

    /// A new batch in `dir` (counted as its first request): the FIFO head if
    /// it has expired or there is no `next_rq[dir]`, else `next_rq[dir]`.
    /// A write batch resets `starved`. Returns the request and whether the
    /// head had expired; `None` when `dir` has nothing queued.
    pub fn start_batch(&mut self, dir: usize, now: Ns) -> Option<(ReqId, bool)> {
        let expired = self.fifo_expired(dir, now);
        let rq = match self.next_rq[dir] {
            Some(n) if !expired => n,
            _ => self.fifo_head(dir)?.1,
        };
        if dir == WRITE {
            self.starved = 0;
        }
        self.last_dir = dir;
        self.batching = 1;
        Some((rq, expired))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::Op;

    /// Requests 0.. as given: (op, sector, fifo_time).
    fn reqs(v: &[(Op, u64, Ns)]) -> Vec<Request> {
        v.iter()
            .map(|&(op, s, t)| {
                let mut r = Request::standalone(op, false, s, 8);
                r.fifo_time = t;
                r
            })
            .collect()
    }

    /// Dispatch everything the way deadline does (reads first, writes_starved).
    fn drain(c: &mut DeadlineCore, rs: &[Request], now: Ns) -> Vec<ReqId> {
        let mut out = Vec::new();
        loop {
            let rq = match c.continue_batch(now) {
                Some(rq) => rq,
                None => {
                    let (reads, writes) = (c.has_queued(READ), c.has_queued(WRITE));
                    let dir = if reads && c.reads_go(writes) {
                        READ
                    } else if writes {
                        WRITE
                    } else {
                        break;
                    };
                    c.start_batch(dir, now).unwrap().0
                }
            };
            c.move_to_dispatch(&rs[rq as usize], rq);
            out.push(rq);
        }
        out
    }

    #[test]
    fn batches_sweep_in_sector_order_and_the_rule_decides_expiry() {
        // Reads at sectors 30, 10, 20 (FIFO order 0, 1, 2); 0 expires at 5.
        let rs = reqs(&[(Op::Read, 30, 5), (Op::Read, 10, 50), (Op::Read, 20, 60)]);
        for (rule, want) in [
            // Legacy: the first batch starts at the expired head (30) and
            // sweeps up; then 10 (head, no next_rq), 20 in order.
            (BatchRule::Legacy, vec![0, 1, 2]),
            (BatchRule::Yield, vec![0, 1, 2]),
        ] {
            let mut c = DeadlineCore::new(16, 2, rule);
            for (i, r) in rs.iter().enumerate() {
                c.add(r, i as ReqId);
            }
            assert_eq!(drain(&mut c, &rs, 10), want, "{rule:?}");
            assert!(!c.has_queued(READ) && c.sort[READ].is_empty());
        }
        // A batch at 10 -> 20 -> 30 while 30's FIFO head (expiry 5) is due:
        // Legacy runs on; Yield stops and restarts at the head.
        let rs = reqs(&[(Op::Read, 30, 5), (Op::Read, 10, 50), (Op::Read, 20, 60)]);
        for (rule, want) in [
            (BatchRule::Legacy, vec![1, 2, 0]),
            (BatchRule::Yield, vec![1, 0, 2]),
        ] {
            let mut c = DeadlineCore::new(16, 2, rule);
            for (i, r) in rs.iter().enumerate() {
                c.add(r, i as ReqId);
            }
            // Start a batch at 10 before anything expired.
            let (rq, expired) = c.start_batch(READ, 0).unwrap();
            assert_eq!((rq, expired), (0, false), "no next_rq: the head");
            c.next_rq[READ] = Some(1);
            c.batching = 1;
            c.move_to_dispatch(&rs[1], 1);
            let mut got = vec![1];
            got.extend(drain(&mut c, &rs, 10));
            assert_eq!(got, want, "{rule:?}");
        }
    }

    #[test]
    fn writes_starved_counts_only_while_writes_wait_and_a_write_batch_resets_it() {
        let mut c = DeadlineCore::new(1, 2, BatchRule::Legacy);
        assert!(c.reads_go(false) && c.reads_go(false));
        assert_eq!(c.starved, 0);
        assert!(c.reads_go(true) && c.reads_go(true));
        assert!(!c.reads_go(true), "the third read batch yields");
        let w = reqs(&[(Op::Write, 0, 0)]);
        c.add(&w[0], 0);
        assert_eq!(c.start_batch(WRITE, 0), Some((0, true)));
        assert_eq!((c.starved, c.last_dir, c.batching), (0, WRITE, 1));
    }

    #[test]
    fn a_merged_request_takes_the_older_fifo_place_and_the_other_leaves() {
        let rs = reqs(&[(Op::Write, 8, 100), (Op::Write, 16, 50), (Op::Write, 0, 70)]);
        let mut c = DeadlineCore::new(16, 2, BatchRule::Yield);
        for (i, r) in rs.iter().enumerate() {
            c.add(r, i as ReqId);
        }
        assert_eq!(c.fifo_head(WRITE), Some((50, 1)));
        c.take_fifo_place(WRITE, 0, 100, 1, 50);
        assert!(c.in_fifo(0) && !c.in_fifo(1));
        assert_eq!(c.fifo_head(WRITE), Some((50, 0)));
        c.remove(&rs[1], 1);
        assert_eq!(
            c.fifo_head(WRITE),
            Some((50, 0)),
            "removing 1 leaves 0's place"
        );
        let mut r0 = rs[0].clone();
        r0.fifo_time = 50;
        c.remove(&r0, 0);
        assert_eq!(c.fifo_head(WRITE), Some((70, 2)));
        c.remove(&rs[2], 2);
        assert!(!c.has_queued(WRITE) && c.sort[WRITE].is_empty());
    }
}
