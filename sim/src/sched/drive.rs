//! Driving one scheduler alone, without the engine: requests from a hand-made list
//! arrive at given times and a device serves one at a time. The validation group
//! `table1` (vsim-studies) replays the BID paper's worked example with it; the
//! schedulers' unit tests use it for exact dispatch orders.

use super::{Ctx, Scheduler};
use crate::types::{BioSpec, Ns, Op, ReqId, ReqTable};

/// One request of a hand-made list: a row of a worked example (e.g. Table 1 of
/// bid-bulk-io-dispatch.txt in the `table1` validation group), as [`drive`] takes it.
#[derive(Clone, Copy, Debug)]
pub struct Row {
    pub name: &'static str,
    pub lba: u64,
    pub size: u32,
    pub write: bool,
    /// Process: A = 1, B = 2, C = 3.
    pub pid: u32,
    /// "Time to expire" in ms at system time k; `None` for the already expired ones
    /// (Exp#1..Exp#5, which expired in table order).
    pub tte_ms: Option<u64>,
}

/// Drive a scheduler with `rows[i]` inserted as a request at `arrive[i]`, through a
/// device serving one request at a time that takes `service(row)`. Events at one
/// instant run in the order: completion, arrivals (in table order), dispatch.
/// Returns the indices of the rows in dispatch order (shorter than `rows` if the
/// scheduler stalls).
pub fn drive(
    s: &mut dyn Scheduler,
    rows: &[Row],
    arrive: &[Ns],
    service: impl Fn(&Row) -> Ns,
    sync_writes: bool,
) -> Vec<usize> {
    drive_from(s, rows, arrive, service, sync_writes, 0)
}

/// [`drive`], with the device busy (no dispatch) before `start`.
pub fn drive_from(
    s: &mut dyn Scheduler,
    rows: &[Row],
    arrive: &[Ns],
    service: impl Fn(&Row) -> Ns,
    sync_writes: bool,
    start: Ns,
) -> Vec<usize> {
    let mut table = ReqTable::new();
    let mut order: Vec<(Ns, usize)> = arrive.iter().copied().zip(0..rows.len()).collect();
    order.sort_by_key(|&(t, i)| (t, i));
    let mut next_arrival = 0;
    let mut busy: Option<(Ns, ReqId)> = None;
    let mut out = Vec::new();
    let mut now: Ns = order.first().map_or(0, |a| a.0);
    let max_sectors = 1024;
    loop {
        if let Some((t, rq)) = busy {
            if t <= now {
                let mut ctx = Ctx {
                    now,
                    table: &mut table,
                    max_sectors,
                };
                s.completed(&mut ctx, rq);
                let bio = table.get(rq).first_bio;
                table.free_bio(bio);
                table.free_req(rq);
                busy = None;
            }
        }
        while next_arrival < order.len() && order[next_arrival].0 <= now {
            let i = order[next_arrival].1;
            let r = &rows[i];
            let spec = BioSpec {
                op: if r.write { Op::Write } else { Op::Read },
                sync: !r.write || sync_writes,
                sector: r.lba,
                sectors: r.size,
                pid: r.pid,
                job: 0,
                tag: i as u64,
                attrs: Default::default(),
            };
            let bio = table.alloc_bio(spec, now);
            let rq = table.alloc_req(bio, now);
            let mut ctx = Ctx {
                now,
                table: &mut table,
                max_sectors,
            };
            s.insert(&mut ctx, rq);
            next_arrival += 1;
        }
        if busy.is_none() && now >= start && s.has_work() {
            let mut ctx = Ctx {
                now,
                table: &mut table,
                max_sectors,
            };
            if let Some(rq) = s.dispatch(&mut ctx) {
                let i = table.bio(table.get(rq).first_bio).spec.tag as usize;
                out.push(i);
                busy = Some((now + service(&rows[i]).max(1), rq));
            }
        }
        let mut next = Ns::MAX;
        if let Some((t, _)) = busy {
            next = next.min(t);
        }
        if next_arrival < order.len() {
            next = next.min(order[next_arrival].0);
        }
        if busy.is_none() && s.has_work() {
            if now < start {
                next = next.min(start);
            } else if let Some(t) = s.next_timer(now) {
                next = next.min(t.max(now + 1));
            }
        }
        if next == Ns::MAX {
            break;
        }
        now = next;
    }
    out
}
