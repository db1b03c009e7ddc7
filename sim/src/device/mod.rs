//! Device models. A device accepts a request at time `now` and answers when it
//! will complete; contention inside the device (dies, channels, the disk arm)
//! is modelled with per-resource next-free times, so a submission costs O(1)
//! events.
//!
//! Adding a device: one new file implementing [`Device`] and one line in
//! [`REGISTRY`].

use crate::params::{OptionDoc, Params};
use crate::types::DeviceInfo;
use crate::types::{Ns, ReqId, Request};
use anyhow::{Context, Result};

pub mod cheapflash;
pub mod energy;
pub mod fixed;
pub mod flash;
pub mod hdd;
pub mod ssd;

/// The one name of the write-amplification counter in every device's
/// `counters()` (flash devices report it; `vsim compare` reads it).
pub const WA_COUNTER: &str = "write_amplification";

/// Active and idle power, for the energy figures.
#[derive(Clone, Copy, Debug, serde::Serialize)]
pub struct Power {
    pub active_w: f64,
    pub idle_w: f64,
}

pub trait Device: Send {
    fn name(&self) -> &str;
    fn info(&self) -> DeviceInfo;
    /// Start servicing `rq` at `now`; returns its completion time (>= now).
    fn submit(&mut self, rq: &Request, now: Ns) -> Ns;
    /// [`Device::submit`] with the engine's tag for `rq`, for a device that
    /// reorders the commands it holds (command queueing): it may return a
    /// provisional time, at which the engine asks [`Device::recheck`].
    fn submit_tagged(&mut self, _tag: ReqId, rq: &Request, now: Ns) -> Ns {
        self.submit(rq, now)
    }
    /// The completion event of `tag` is due at `now`: `None` if it completes
    /// now, `Some(t)` (t > now) if the device now knows it completes at `t`
    /// or will decide by then.
    fn recheck(&mut self, _tag: ReqId, _now: Ns) -> Option<Ns> {
        None
    }
    /// `rq` entered the scheduler and will be submitted later: a device may
    /// start loading what `submit` will read (a cache hint; no effect on
    /// any result).
    fn prefetch(&self, _rq: &Request) {}
    /// Whether the device takes discards (REQ_OP_DISCARD; NBD_CMD_TRIM).
    fn supports_discard(&self) -> bool {
        false
    }
    /// Whether writes may complete from a volatile cache (the kernel then
    /// sends flushes and FUA writes: a served device's `write_cache` and
    /// `fua` in sysfs).
    fn volatile_cache(&self) -> bool {
        false
    }
    /// Discard `sectors` from `sector` at `now`: the pages it covers whole
    /// hold no data from then on (the FTL drops their mapping, so GC no
    /// longer copies them). Returns its completion time, or `None` where
    /// the device takes no discards ([`Device::supports_discard`]).
    fn discard(&mut self, _sector: u64, _sectors: u64, _now: Ns) -> Option<Ns> {
        None
    }
    /// The side channel of a device that sends map chunks to a host agent
    /// and takes them back as hints (`ssd` with `hints=1`).
    fn hint_port(&self) -> Option<flash::mapcache::HintPort> {
        None
    }
    /// Device counters (write amplification, erases, GC time, seeks, ...), as JSON.
    fn counters(&self) -> serde_json::Value {
        serde_json::Value::Null
    }
    /// The device's energy over a run of `elapsed`, `busy` of it with
    /// requests outstanding ([`energy`]: baseline power plus energy per
    /// operation).
    fn energy(&self, elapsed: Ns, busy: Ns) -> energy::Energy;
}

/// Refuse, before allocating, a model whose state would take `bytes` when
/// more than `available` (MemAvailable: [`flash::ftl::mem_available_bytes`])
/// is free, rather than an abort when the allocation fails or an OOM kill
/// later: the error (from [`flash::ftl::check_memory`], the one check)
/// names option `key` of `p` and its value and how the memory is taken
/// (`per`, e.g. "4 bytes per 4 KiB page").
pub fn check_state_memory(
    p: &Params,
    key: &str,
    bytes: u64,
    per: &str,
    available: Option<u64>,
) -> Result<()> {
    flash::ftl::check_memory(
        &format!(
            "{}: {} ({per})",
            p.what(key),
            p.raw(key).unwrap_or("the default")
        ),
        bytes,
        available,
        &format!("a smaller '{key}'"),
    )
}

pub type Factory = fn(&Params, u64) -> Result<Box<dyn Device>>;

/// Name, description, constructor (params, seed).
pub const REGISTRY: &[(&str, &str, Factory)] = &[
    (
        "fixed",
        "single-server device with constant or exponential service time (queueing checks)",
        fixed::new,
    ),
    (
        "ssd",
        "flash SSD: channels x dies x planes, page-mapped FTL, greedy/FIFO GC",
        ssd::new,
    ),
    (
        "cheapflash",
        "SD/eMMC/USB-class flash: hybrid log-block FTL with few open erase blocks",
        cheapflash::new,
    ),
    (
        "hdd",
        "hard disk: zones, seek curve, rotation, head switch, transfer",
        hdd::new,
    ),
];

/// The options model `kind` reads, with defaults and ranges, as its
/// constructor declares them (`vsim list`): the constructor run on a
/// describing [`Params`].
pub fn options(kind: &str) -> Result<Vec<OptionDoc>> {
    let (_, _, f) = REGISTRY
        .iter()
        .find(|r| r.0 == kind)
        .with_context(|| format!("unknown device model '{kind}'"))?;
    let p = Params::describing();
    f(&p, 1)?;
    Ok(p.described())
}

pub fn make(kind: &str, params: &Params, seed: u64) -> Result<Box<dyn Device>> {
    for (n, _, f) in REGISTRY {
        if *n == kind {
            let d = f(params, seed)?;
            params.check_all_used(&format!("device {kind}"))?;
            return Ok(d);
        }
    }
    let names: Vec<&str> = REGISTRY.iter().map(|r| r.0).collect();
    anyhow::bail!(
        "unknown device model '{kind}' (known: {})",
        names.join(", ")
    )
}

/// Drive `dev` as the engine does, through [`Device::submit_tagged`] and
/// [`Device::recheck`]: `depth` requests outstanding (closed loop), `n` in
/// all, each from `next`. Returns (submit time, completion time) per request
/// in completion order. For validation and tests of queueing devices.
pub fn closed_loop(
    dev: &mut dyn Device,
    depth: usize,
    n: usize,
    mut next: impl FnMut() -> Request,
) -> Vec<(Ns, Ns)> {
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;
    let mut heap = BinaryHeap::new();
    let mut submitted = vec![0; depth];
    let mut out = Vec::with_capacity(n);
    let mut issued = 0;
    let mut order = 0u64;
    for tag in 0..depth.min(n) {
        let t = dev.submit_tagged(tag as ReqId, &next(), 0);
        heap.push(Reverse((t, order, tag)));
        order += 1;
        issued += 1;
    }
    while let Some(Reverse((t, _, tag))) = heap.pop() {
        if let Some(t2) = dev.recheck(tag as ReqId, t) {
            heap.push(Reverse((t2.max(t + 1), order, tag)));
            order += 1;
            continue;
        }
        out.push((submitted[tag], t));
        if issued < n {
            submitted[tag] = t;
            let d = dev.submit_tagged(tag as ReqId, &next(), t).max(t);
            heap.push(Reverse((d, order, tag)));
            order += 1;
            issued += 1;
        }
    }
    out
}
