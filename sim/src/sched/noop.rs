//! noop: one FIFO, with back and front merging of adjacent bios. This is the
//! legacy noop elevator (and blk-mq `none` with the plug and merge logic).

use super::tunable::{self, Tunable, TunableValues};
use super::{try_merge, Ctx, Scheduler, SectorIndex};
use crate::params::Params;
use crate::types::DeviceInfo;
use crate::types::ReqId;
use anyhow::Result;
use std::collections::VecDeque;

/// noop's tunables (not a kernel one: the kernel's switch is the queue's `nomerges`).
pub const TUNABLES: &[Tunable] = &[Tunable {
    name: "merges",
    default: 1,
    min: 0,
    max: 1,
    help: "back/front merging of bios into queued requests",
}];

pub struct Noop {
    fifo: VecDeque<ReqId>,
    idx: SectorIndex,
    merges: bool,
    merged: u64,
    tun: TunableValues,
}

pub fn new(p: &Params, _dev: &DeviceInfo) -> Result<Box<dyn Scheduler>> {
    let tun = tunable::parse(TUNABLES, p, &[])?;
    Ok(Box::new(Noop {
        fifo: VecDeque::new(),
        idx: SectorIndex::merge_only(),
        merges: tun.flag("merges"),
        merged: 0,
        tun,
    }))
}

impl Scheduler for Noop {
    fn name(&self) -> &'static str {
        "noop"
    }
    fn elevator(&self) -> bool {
        false
    }
    fn insert(&mut self, ctx: &mut Ctx, rq: ReqId) {
        if self.merges {
            self.idx.add(ctx.rq(rq), rq);
        }
        self.fifo.push_back(rq);
    }
    fn dispatch(&mut self, ctx: &mut Ctx) -> Option<ReqId> {
        let rq = self.fifo.pop_front()?;
        if self.merges {
            let r = ctx.rq(rq).clone();
            self.idx.remove(&r, rq);
        }
        Some(rq)
    }
    fn has_work(&self) -> bool {
        !self.fifo.is_empty()
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
        serde_json::json!({ "merged": self.merged })
    }
}
