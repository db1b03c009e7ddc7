//! Fair queueing over flows: SFQ(D), RBFQ and mClock on one core.
//!
//! A flow is a workload source, a job or a trace ([`Request::job`]); its
//! weight, reservation and limit come from the job's options
//! ([`FlowQos`]). Each flow keeps its requests in arrival order: these
//! schedulers sit in front of the device and share it between flows, they
//! do not reorder a flow's own requests (the device, or a scheduler below,
//! does). At most `depth` requests are on the device at once: the D of
//! SFQ(D), the concurrency bound of the seed's §2.5-2.7.
//!
//! Tags, kept per flow for its head request (while a flow stays backlogged
//! they advance only with its service; when it turns backlogged again they
//! restart no earlier than now, so an idle flow banks nothing):
//! - P, the proportional-share tag: SFQ's start tag, max(v, F) when the flow
//!   turns backlogged, then F = P + cost / w per request served by weight,
//!   where v is the virtual time, the start tag of the request last
//!   dispatched by weight (Goyal, Vin and Cheng, SIGCOMM 1996;
//!   depth-controlled as SFQ(D) by Jin, Chase and Kaur, SIGMETRICS 2004).
//! - R, the reservation tag: the time the next reserved request is due,
//!   1/r later per request served by reservation (mClock's R: Gulati,
//!   Merchant and Varman, OSDI 2010; per flow rather than per request, so
//!   that a closed-loop flow's tags do not restart at each arrival).
//! - L, the limit tag: 1/l later per request served.
//!
//! Dispatch, while fewer than `depth` requests are on the device:
//! - **sfqd**: the head with the smallest P.
//! - **rbfq**, the two phases of the seed
//!   (/work/shared/seeds/qos-flash-hybrid-store.txt §1.3, §2.9: "a local
//!   phase which ensures the meeting of minimum resource requirements (if
//!   possible) and a global phase which allocates the remaining bandwidth
//!   according to the weight of each application"; "it does not need to
//!   know the capacity"; "it is work conserving"): a *local* dispatch while
//!   some flow is behind its reservation (a head with R <= now), the
//!   smallest R; otherwise a *global* dispatch, the smallest P. The two
//!   phases keep separate accounts: R advances only with service by
//!   reservation, P only with service by weight. A backlogged flow thus gets its
//!   reservation plus a weighted share of the rest, r_i + w_i/Σw·(C − Σr)
//!   of a capacity C: the seed's Tables 1-2 follow this to their rounding
//!   (`vsim repro qos` and tests/qos.rs check both). With `floor=1` P counts all service, as
//!   mClock's does, so a flow gets max(r_i, its weighted share of C): the
//!   seed's words "splits the bandwidth in the exact ratio of the desired
//!   weights" whenever that meets every minimum (its tables do not).
//! - **mclock**: rbfq with `floor=1` and limits: the global phase takes
//!   only heads with L <= now, and when none is eligible everything waits
//!   for the earliest L (not work-conserving, by design).

use super::tunable::{self, Tunable, TunableValues};
use super::{try_merge, Ctx, FlowQos, QueueMergeIndex, Scheduler};
use crate::params::Params;
use crate::types::DeviceInfo;
use crate::types::{Ns, ReqId};
use anyhow::Result;
use rustc_hash::FxHashMap as HashMap;
use std::collections::VecDeque;

const DEPTH: Tunable = Tunable {
    name: "depth",
    default: 1,
    min: 1,
    max: 4096,
    help: "requests on the device at once (SFQ(D)'s D); 1 issues the next only when the last completes",
};
const COST_SECTORS: Tunable = Tunable {
    name: "cost_sectors",
    default: 0,
    min: 0,
    max: 1,
    help: "a request's cost in the weighted share: 0 one per request (shares in requests/s, as the seed), 1 its size in sectors",
};
const MERGES: Tunable = Tunable {
    name: "merges",
    default: 1,
    min: 0,
    max: 1,
    help: "back/front merging of a flow's bios into its queued requests",
};
const FLOOR: Tunable = Tunable {
    name: "floor",
    default: 0,
    min: 0,
    max: 1,
    help: "1: service by weight also counts toward the reservation (a flow gets max(reservation, weighted share)); 0: reservation plus a weighted share of the rest",
};

pub const SFQD_TUNABLES: &[Tunable] = &[DEPTH, COST_SECTORS, MERGES];
pub const RBFQ_TUNABLES: &[Tunable] = &[DEPTH, COST_SECTORS, MERGES, FLOOR];
pub const MCLOCK_TUNABLES: &[Tunable] = &[DEPTH, COST_SECTORS, MERGES];

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Sfqd,
    Rbfq,
    Mclock,
}

#[derive(Default)]
struct Counts {
    local: u64,
    global: u64,
    sectors: u64,
}

/// A flow and its tags. Tags are kept per flow, for its head request: while
/// a flow stays backlogged its tags advance only by service; when it turns
/// backlogged again they restart no earlier than now (P: no earlier than v),
/// so an idle flow banks nothing.
struct Flow {
    qos: FlowQos,
    queue: VecDeque<ReqId>,
    /// The head's start tag (P), and the finish tag of its last service by weight.
    s: f64,
    f: f64,
    /// When its next request is due by reservation (R), and allowed by its limit (L).
    r: f64,
    l: f64,
    n: Counts,
}

impl Flow {
    fn new(qos: FlowQos) -> Self {
        Flow {
            qos,
            queue: VecDeque::new(),
            s: 0.0,
            f: 0.0,
            r: f64::NEG_INFINITY,
            l: f64::NEG_INFINITY,
            n: Counts::default(),
        }
    }
}

pub struct FairQueue {
    kind: Kind,
    depth: u32,
    cost_sectors: bool,
    merges: bool,
    floor: bool,
    flows: HashMap<u32, Flow>,
    /// Flows with queued requests (ascending job), for a stable tie-break.
    active: Vec<u32>,
    /// Virtual time: the P tag of the request last dispatched by weight.
    v: f64,
    in_flight: u32,
    held: usize,
    idx: QueueMergeIndex,
    merged: u64,
    held_by_limit: u64,
    tun: TunableValues,
}

fn build(kind: Kind, decl: &'static [Tunable], p: &Params) -> Result<Box<dyn Scheduler>> {
    let tun = tunable::parse(decl, p, &[])?;
    Ok(Box::new(FairQueue {
        kind,
        depth: tun.get("depth") as u32,
        cost_sectors: tun.flag("cost_sectors"),
        merges: tun.flag("merges"),
        floor: kind == Kind::Mclock || (kind == Kind::Rbfq && tun.flag("floor")),
        flows: HashMap::default(),
        active: Vec::new(),
        v: 0.0,
        in_flight: 0,
        held: 0,
        idx: QueueMergeIndex::by_flow(),
        merged: 0,
        held_by_limit: 0,
        tun,
    }))
}

pub fn new_sfqd(p: &Params, _dev: &DeviceInfo) -> Result<Box<dyn Scheduler>> {
    build(Kind::Sfqd, SFQD_TUNABLES, p)
}

pub fn new_rbfq(p: &Params, _dev: &DeviceInfo) -> Result<Box<dyn Scheduler>> {
    build(Kind::Rbfq, RBFQ_TUNABLES, p)
}

pub fn new_mclock(p: &Params, _dev: &DeviceInfo) -> Result<Box<dyn Scheduler>> {
    build(Kind::Mclock, MCLOCK_TUNABLES, p)
}

fn secs(t: Ns) -> f64 {
    t as f64 / 1e9
}

impl FairQueue {
    fn uses_reservations(&self) -> bool {
        // sfqd has no local phase: reservations and limits are not its.
        self.kind != Kind::Sfqd
    }

    /// The flow to serve next and whether by reservation (local phase);
    /// `None` when every backlogged flow waits for its limit.
    fn pick(&self, now: f64) -> Option<(u32, bool)> {
        if self.uses_reservations() {
            let local = self
                .active
                .iter()
                .map(|j| (*j, &self.flows[j]))
                .filter(|(_, f)| f.qos.reservation > 0.0 && f.r <= now)
                .min_by(|a, b| a.1.r.total_cmp(&b.1.r));
            if let Some((j, _)) = local {
                return Some((j, true));
            }
        }
        self.active
            .iter()
            .map(|j| (*j, &self.flows[j]))
            .filter(|(_, f)| self.kind != Kind::Mclock || f.qos.limit <= 0.0 || f.l <= now)
            .min_by(|a, b| a.1.s.total_cmp(&b.1.s))
            .map(|(j, _)| (j, false))
    }
}

impl Scheduler for FairQueue {
    fn name(&self) -> &'static str {
        match self.kind {
            Kind::Sfqd => "sfqd",
            Kind::Rbfq => "rbfq",
            Kind::Mclock => "mclock",
        }
    }

    fn set_flow(&mut self, flow: u32, qos: FlowQos) -> bool {
        self.flows
            .entry(flow)
            .and_modify(|f| f.qos = qos)
            .or_insert_with(|| Flow::new(qos));
        true
    }

    fn insert(&mut self, ctx: &mut Ctx, rq: ReqId) {
        let r = ctx.rq(rq);
        let job = r.job;
        let now = secs(ctx.now);
        if self.merges {
            self.idx.idx.add(r, rq);
        }
        let v = self.v;
        let f = self
            .flows
            .entry(job)
            .or_insert_with(|| Flow::new(FlowQos::default()));
        if f.queue.is_empty() {
            // Backlogged again: SFQ's start tag max(v, F); R and L no earlier than now.
            f.s = f.f.max(v);
            f.r = f.r.max(now);
            f.l = f.l.max(now);
            if let Err(i) = self.active.binary_search(&job) {
                self.active.insert(i, job);
            }
        }
        f.queue.push_back(rq);
        self.held += 1;
    }

    fn dispatch(&mut self, ctx: &mut Ctx) -> Option<ReqId> {
        if self.held == 0 || self.in_flight >= self.depth {
            return None;
        }
        let Some((job, local)) = self.pick(secs(ctx.now)) else {
            self.held_by_limit += 1;
            return None;
        };
        let (floor, cost_sectors, mclock) =
            (self.floor, self.cost_sectors, self.kind == Kind::Mclock);
        let f = self.flows.get_mut(&job)?;
        let rq = f.queue.pop_front()?;
        let r = ctx.rq(rq);
        let sectors = r.sectors;
        let step = if cost_sectors { sectors as f64 } else { 1.0 } / f.qos.weight;
        if local {
            f.n.local += 1;
            f.r += 1.0 / f.qos.reservation;
            if floor {
                // P counts all service (mClock): this one too.
                f.f = f.s + step;
                f.s = f.f;
            }
        } else {
            f.n.global += 1;
            self.v = f.s;
            f.f = f.s + step;
            f.s = f.f;
            if floor && f.qos.reservation > 0.0 {
                // Service by weight counts toward the reservation too.
                f.r += 1.0 / f.qos.reservation;
            }
        }
        if mclock && f.qos.limit > 0.0 {
            f.l += 1.0 / f.qos.limit;
        }
        f.n.sectors += sectors as u64;
        if f.queue.is_empty() {
            if let Ok(i) = self.active.binary_search(&job) {
                self.active.remove(i);
            }
        }
        if self.merges {
            let r = r.clone();
            self.idx.idx.remove(&r, rq);
        }
        self.held -= 1;
        self.in_flight += 1;
        Some(rq)
    }

    fn has_work(&self) -> bool {
        self.held > 0
    }

    fn completed(&mut self, _ctx: &mut Ctx, _rq: ReqId) {
        self.in_flight = self.in_flight.saturating_sub(1);
    }

    fn next_timer(&self, now: Ns) -> Option<Ns> {
        if self.kind != Kind::Mclock || self.held == 0 || self.in_flight >= self.depth {
            return None;
        }
        let t = secs(now);
        let earliest = self
            .active
            .iter()
            .map(|j| &self.flows[j])
            .filter(|f| f.qos.limit > 0.0)
            .map(|f| f.l)
            .fold(f64::INFINITY, f64::min);
        (earliest.is_finite() && earliest > t).then(|| (earliest * 1e9).ceil() as Ns)
    }

    fn bio_merge(&mut self, ctx: &mut Ctx, bio: u32) -> bool {
        if !self.merges {
            return false;
        }
        let ok = try_merge(ctx, &mut self.idx, bio, true).is_some();
        self.merged += ok as u64;
        ok
    }

    fn tunables(&self) -> Vec<(&'static str, String)> {
        self.tun.report()
    }

    fn stats(&self) -> serde_json::Value {
        let mut jobs: Vec<_> = self.flows.keys().copied().collect();
        jobs.sort_unstable();
        let flows: Vec<_> = jobs
            .iter()
            .map(|j| {
                let f = &self.flows[j];
                serde_json::json!({
                    "job": j,
                    "weight": f.qos.weight,
                    "reservation": f.qos.reservation,
                    "limit": f.qos.limit,
                    "dispatched_by_reservation": f.n.local,
                    "dispatched_by_weight": f.n.global,
                    "sectors": f.n.sectors,
                })
            })
            .collect();
        serde_json::json!({
            "flows": flows,
            "merged": self.merged,
            "held_by_limit": self.held_by_limit,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{BioSpec, Op, ReqTable};

    /// Two backlogged flows (jobs 0 and 1), each with `n` requests queued at
    /// time 0; dispatch `take` of them one at a time, completing each before
    /// the next, `gap_ns` apart. Returns the jobs in dispatch order.
    fn serve(s: &mut Box<dyn Scheduler>, n: usize, take: usize, gap_ns: Ns) -> Vec<u32> {
        let mut t = ReqTable::new();
        for i in 0..n {
            for job in 0..2u32 {
                let mut spec =
                    BioSpec::scripted(Op::Read, true, (job as u64) << 30 | (i as u64 * 64), 1, 0);
                spec.job = job;
                let b = t.alloc_bio(spec, 0);
                let rq = t.alloc_req(b, 0);
                let mut ctx = Ctx {
                    now: 0,
                    table: &mut t,
                    max_sectors: 1024,
                };
                s.insert(&mut ctx, rq);
            }
        }
        let mut order = Vec::new();
        for k in 0..take {
            let mut ctx = Ctx {
                now: k as Ns * gap_ns,
                table: &mut t,
                max_sectors: 1024,
            };
            let rq = s.dispatch(&mut ctx).expect("a request");
            order.push(t.get(rq).job);
            let mut ctx = Ctx {
                now: k as Ns * gap_ns,
                table: &mut t,
                max_sectors: 1024,
            };
            s.completed(&mut ctx, rq);
        }
        order
    }

    /// `n` one-sector reads of job 0 queued at time 0.
    fn queue_reads(s: &mut Box<dyn Scheduler>, t: &mut ReqTable, n: u64) {
        for i in 0..n {
            let b = t.alloc_bio(BioSpec::scripted(Op::Read, true, i * 64, 1, 0), 0);
            let rq = t.alloc_req(b, 0);
            let mut ctx = Ctx {
                now: 0,
                table: t,
                max_sectors: 1024,
            };
            s.insert(&mut ctx, rq);
        }
    }

    fn qos(w: f64, r: f64, l: f64) -> FlowQos {
        FlowQos {
            weight: w,
            reservation: r,
            limit: l,
        }
    }

    #[test]
    fn sfqd_shares_by_weight() {
        let mut s = new_sfqd(&Params::new(), &DeviceInfo::flash(1 << 30, 1)).unwrap();
        s.set_flow(0, qos(3.0, 0.0, 0.0));
        s.set_flow(1, qos(1.0, 0.0, 0.0));
        let order = serve(&mut s, 400, 400, 1000);
        let first = order.iter().filter(|&&j| j == 0).count();
        assert_eq!(first, 300, "3:1 weights give 300 of 400 to flow 0");
    }

    #[test]
    fn sfqd_keeps_depth_d_on_the_device() {
        let p = Params::parse_kv("depth=2").unwrap();
        let mut s = new_sfqd(&p, &DeviceInfo::flash(1 << 30, 1)).unwrap();
        let mut t = ReqTable::new();
        queue_reads(&mut s, &mut t, 4);
        let mut ctx = Ctx {
            now: 0,
            table: &mut t,
            max_sectors: 1024,
        };
        let a = s.dispatch(&mut ctx).unwrap();
        assert!(s.dispatch(&mut ctx).is_some());
        assert!(
            s.dispatch(&mut ctx).is_none(),
            "a third while two are on the device"
        );
        s.completed(&mut ctx, a);
        assert!(s.dispatch(&mut ctx).is_some());
    }

    /// 100:1 weights, 30 req/s reserved each, 1000 req/s served: the local
    /// phase gives the light flow its 30/s on top of its 1/101 of the other
    /// 940/s (rbfq), or only max(30, 1000/101) (floor=1).
    #[test]
    fn rbfq_adds_the_reservation_unless_floor() {
        for (opts, want) in [("", 30.0 + 940.0 / 101.0), ("floor=1", 30.0)] {
            let p = Params::parse_kv(opts).unwrap();
            let mut s = new_rbfq(&p, &DeviceInfo::flash(1 << 30, 1)).unwrap();
            s.set_flow(0, qos(100.0, 30.0, 0.0));
            s.set_flow(1, qos(1.0, 30.0, 0.0));
            // 1 ms per request for 4 s.
            let order = serve(&mut s, 4000, 4000, 1_000_000);
            let light = order.iter().filter(|&&j| j == 1).count() as f64 / 4.0;
            assert!(
                (light - want).abs() < 2.0,
                "{opts}: light flow {light}/s, want {want}"
            );
        }
    }

    #[test]
    fn mclock_holds_a_flow_at_its_limit() {
        let mut s = new_mclock(&Params::new(), &DeviceInfo::flash(1 << 30, 1)).unwrap();
        s.set_flow(0, qos(1.0, 0.0, 100.0));
        s.set_flow(1, qos(1.0, 0.0, 100.0));
        let mut t = ReqTable::new();
        queue_reads(&mut s, &mut t, 10);
        // Job 0 alone, limit 100/s: one now, the next 10 ms later.
        let mut ctx = Ctx {
            now: 0,
            table: &mut t,
            max_sectors: 1024,
        };
        let a = s.dispatch(&mut ctx).unwrap();
        s.completed(&mut ctx, a);
        assert!(s.dispatch(&mut ctx).is_none(), "the limit holds the second");
        assert_eq!(s.next_timer(0), Some(10_000_000));
        let mut ctx = Ctx {
            now: 10_000_000,
            table: &mut t,
            max_sectors: 1024,
        };
        assert!(s.dispatch(&mut ctx).is_some());
    }
}
