//! The optional stage between the block layer and the scheduler: where a QoS
//! policy (throttling, reservations) or a tier-placement policy (hybrid
//! disk + flash) plugs in. It sees each bio as it is submitted and may rewrite
//! it or hold it until a later time; time held counts in the bio's latency
//! (its queue part), as a throttled process sees it.
//!
//! On a run with several devices (engine lanes: a hybrid store's HDD and
//! SSD) the stage is also the placement layer, the "VFS-SSD" of the BID
//! paper or the cluster map of a hybrid store: it keeps its own mapping of
//! which sectors live on which device and says where each bio goes
//! ([`Stage::place`], splitting a bio whose sectors live on two); it decides
//! where requests a scheduler gives up go ([`Stage::offload`]: BID-Hybrid's
//! tier placement); it sees every completion ([`Stage::completed`]); and it
//! may issue I/O of its own ([`Stage::poll_io`]: migration, write-back),
//! accounted to a job of its own so that every run still accounts for every
//! bio.

use crate::params::Params;
use crate::types::DeviceInfo;
use crate::types::{BioSpec, Ns};
use anyhow::Result;

pub mod hints;
pub mod hybrid;
pub mod vfsssd;

/// Constructor of a stage from its options and the run's devices (lane 0 first).
pub type Factory = fn(&Params, &[DeviceInfo]) -> Result<Box<dyn Stage>>;

/// Name, one-line description, constructor. Adding a stage: one new file
/// implementing [`Stage`] and one line here.
pub const REGISTRY: &[(&str, &str, Factory)] = &[
    (
        "throttle",
        "token-bucket limit on submitted bios (blk-throttle's iops); option iops",
        throttle_new,
    ),
    (
        "hybrid-store",
        "the QoS seed's disk + flash hybrid store: clusters placed on the flash offline (two passes) or online (read/write ratio, read sequentiality, victims); options mode, flash, cluster_kb, ...",
        hybrid::new,
    ),
    (
        "hints",
        "the hints seed's host agent: keeps the map chunks a hint-capable ssd (map_cache, hints=1) sends and attaches them to later requests; options cache (fraction of the map), cache_kb, lane",
        hints::new,
    ),
    (
        "vfs-ssd",
        "BID-Hybrid's data-location layer: offloaded writes tiered to the SSD lane, later references served there; options ssd, page_kb",
        vfsssd::new,
    ),
];

/// Every stage's name, in registry order.
pub fn names() -> Vec<&'static str> {
    REGISTRY.iter().map(|r| r.0).collect()
}

/// Build a placement/QoS stage by name (unknown options are an error).
pub fn make(name: &str, params: &Params, lanes: &[DeviceInfo]) -> Result<Box<dyn Stage>> {
    for (n, _, f) in REGISTRY {
        if *n == name {
            let s = f(params, lanes)?;
            params.check_all_used(&format!("placement {name}"))?;
            return Ok(s);
        }
    }
    anyhow::bail!("unknown placement '{name}' (known: {})", names().join(", "))
}

fn throttle_new(p: &Params, _lanes: &[DeviceInfo]) -> Result<Box<dyn Stage>> {
    Ok(Box::new(Throttle::new(
        p.f64_in("iops", 1000.0, 1e-3, 1e12)?,
    )))
}

pub enum Admit {
    /// Pass to the scheduler now.
    Now,
    /// Hold until this time, then pass (throttling).
    At(Ns),
}

/// Where a piece of a bio lives: `sectors` sectors from `sector` of device
/// (lane) `lane`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Piece {
    pub lane: u8,
    pub sector: u64,
    pub sectors: u32,
}

pub trait Stage: Send {
    fn name(&self) -> &str;
    fn admit(&mut self, bio: &mut BioSpec, now: Ns) -> Admit;
    /// Where an admitted bio goes: pieces covering it in order (their sizes
    /// sum to the bio's), each on a lane at a sector; leave `out` empty for
    /// lane 0 at the bio's own sector (the single-device case).
    fn place(&mut self, _bio: &BioSpec, _now: Ns, _out: &mut Vec<Piece>) {}
    /// A scheduler on lane `from` gave up a request (`req` describes its
    /// extent): the lane and sector it moves to, or `None` to keep it there.
    fn offload(&mut self, _from: u8, _req: &BioSpec, _now: Ns) -> Option<(u8, u64)> {
        None
    }
    /// A bio (or a part of one) completed on lane `lane`.
    fn completed(&mut self, _lane: u8, _bio: &BioSpec, _now: Ns) {}
    /// I/O of the stage's own due by `now` (migration, write-back), each with
    /// its lane; returns when to be polled next (`None`: at the next
    /// completion only).
    fn poll_io(&mut self, _now: Ns, _out: &mut Vec<(u8, BioSpec)>) -> Option<Ns> {
        None
    }
    /// The share of the stage's own I/O where the schedulers share the
    /// device by flow ([`crate::sched::FlowQos`]; it is one flow).
    fn own_qos(&self) -> crate::sched::FlowQos {
        crate::sched::FlowQos::default()
    }
    /// An offline stage makes two passes (`Config::build`): a first run
    /// of the same configuration with the stage only observing (option
    /// `mode=observe`), then the real one, which learns from the first's
    /// [`Stage::observation`] before it starts ([`Stage::learn`]).
    fn two_pass(&self) -> bool {
        false
    }
    fn observation(&self) -> serde_json::Value {
        serde_json::Value::Null
    }
    fn learn(&mut self, _seen: &serde_json::Value) -> Result<()> {
        Ok(())
    }
    /// A device on lane `lane` has a hint side channel
    /// ([`crate::device::Device::hint_port`]); a stage that uses it connects.
    fn connect_hints(
        &mut self,
        _lane: u8,
        _port: crate::device::flash::mapcache::HintPort,
    ) -> Result<()> {
        Ok(())
    }
    /// Whether the stage has what it needs, once every device was offered
    /// ([`Stage::connect_hints`]).
    fn check(&self) -> Result<()> {
        Ok(())
    }
    /// The stage's counters, as JSON.
    fn stats(&self) -> serde_json::Value {
        serde_json::Value::Null
    }
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
