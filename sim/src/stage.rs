//! The optional stage between the block layer and the scheduler: where a QoS
//! policy (throttling, reservations) or a tier-placement policy (hybrid
//! disk + flash) plugs in. It sees each bio as it is submitted and may rewrite
//! it (e.g. redirect it to another region) or hold it until a later time; time
//! held counts in the bio's latency (its queue part), as a throttled process
//! sees it.

use crate::types::{BioSpec, Ns};

pub enum Admit {
    /// Pass to the scheduler now.
    Now,
    /// Hold until this time, then pass (throttling).
    At(Ns),
}

pub trait Stage: Send {
    fn name(&self) -> &str;
    fn admit(&mut self, bio: &mut BioSpec, now: Ns) -> Admit;
}

/// A token-bucket rate limit on submitted bios (blk-throttle's `iops` limit):
/// the simplest QoS stage, and the template for others.
pub struct Throttle {
    pub iops: f64,
    next_free: Ns,
}

impl Throttle {
    pub fn new(iops: f64) -> Self {
        Throttle { iops, next_free: 0 }
    }
}

impl Stage for Throttle {
    fn name(&self) -> &str {
        "throttle"
    }
    fn admit(&mut self, _bio: &mut BioSpec, now: Ns) -> Admit {
        let gap = (1e9 / self.iops) as Ns;
        let t = self.next_free.max(now);
        self.next_free = t + gap;
        if t <= now {
            Admit::Now
        } else {
            Admit::At(t)
        }
    }
}
