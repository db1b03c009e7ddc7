//! noop: one FIFO, with back and front merging of adjacent bios. This is the
//! legacy noop elevator (and blk-mq `none` with the plug and merge logic).

use super::{try_merge, Ctx, DeviceInfo, Scheduler, SectorIndex};
use crate::params::Params;
use crate::types::ReqId;
use anyhow::Result;
use std::collections::VecDeque;

pub struct Noop {
    fifo: VecDeque<ReqId>,
    idx: SectorIndex,
    merges: bool,
    merged: u64,
}

pub fn new(p: &Params, _dev: &DeviceInfo) -> Result<Box<dyn Scheduler>> {
    Ok(Box::new(Noop {
        fifo: VecDeque::new(),
        idx: SectorIndex::merge_only(),
        merges: p.bool_or("merges", true)?,
        merged: 0,
    }))
}

impl Scheduler for Noop {
    fn name(&self) -> &'static str {
        "noop"
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
        vec![("merges", (self.merges as u8).to_string())]
    }
    fn stats(&self) -> serde_json::Value {
        serde_json::json!({ "merged": self.merged })
    }
}
