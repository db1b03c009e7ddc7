//! veloces: the simulator's model of the kernel module (kernel/veloces-iosched.c),
//! following the normative policy of docs/policy.md line by line:
//!
//! - Reads are preferred. Reads and dispatchable writes each have a FIFO
//!   (arrival order, with an expiry time) and a sector-sorted tree; requests
//!   are dispatched in sector order within a batch of `fifo_batch`.
//! - Asynchronous writes are bundled by logical erase block
//!   (`sector / (bundle_kb * 2)`). A bundle opens with its first write and is
//!   ready when `bundle_expire_us` has passed since it opened, when it holds an
//!   erase block's worth of sectors, or when its oldest write reaches
//!   `write_expire`. Ready bundles go whole, in sector order, oldest first.
//! - A write that spans an erase-block boundary is never held (stat
//!   `spanning`): it goes to the write FIFO like a sync write.
//! - Synchronous writes are never held.
//! - A reader's own writes (`vel_note_reader`, `vel_reader`): a write whose
//!   submitter (`Request::pid`; 0 is none) inserted a read less than 10 ms
//!   before is never held, counts as waited on and takes its tag without
//!   `async_depth`'s limit (`limit_depth`); where reads beside writes
//!   take over twice the fastest read's time (`writes_slow_reads`), waiting
//!   reads do not end a batch of them (`continue_batch_if`). The module also
//!   leaves kernel threads out; the model cannot tell them from tasks.
//! - While reads wait, writes go only after `writes_starved` read batches, or
//!   when a write or a bundle expired.
//! - Back merges and (with `front_merges`) front merges, then request-to-request
//!   merges with the sorted neighbour, never across bundles. A bundle's
//!   membership is its own sector range `[start, end)`, recorded when it opens
//!   (`vel_in_bundle`). An insert merge runs only if its whole back-merge chain
//!   is unheld, or held in one bundle whose range holds all its sectors.
//! - `has_work` is true while anything is held; `next_timer` is the module's
//!   hrtimer: the moment the next held bundle becomes ready.
//! - I/O priority classes (RT, BE, IDLE; unset is BE), as mq-deadline: each
//!   class has its own deadline core (FIFOs, sort trees, batches); the highest
//!   class with something to dispatch goes first unless a lower class has a
//!   request that waited `prio_aging_expire` (since its submission, the
//!   kernel's `start_time_ns`): that request alone goes (a bundle's writes each
//!   by their own age). Only BE async writes are held.
//! - Anticipation, the write share and the write backlog respect the classes:
//!   the reader they protect is the highest class whose reads are about
//!   (queued, on the device, or seen lately: `read_class`), and writes wait
//!   for it only when the highest class with writes to go (`write_class`) is
//!   no higher. An RT write never waits for a BE or IDLE reader, nor a BE
//!   write for an IDLE one.
//!
//! The FIFOs, sort trees, batching and starvation count are the deadline
//! core shared with `deadline` ([`super::dlcore`], batch rule `Yield`), one
//! per priority class; the
//! bundles, the held requests' tree and the merge rules are veloces's own.
//!
//! Expiry times follow the kernel's jiffies arithmetic when `hz` is non-zero
//! (Debian: 250), so conformance scenarios see the same rounding; `hz=0`
//! uses exact nanoseconds. The module's late binding (no dispatch without a
//! free driver tag) is implicit: the engine only asks when the device has room.
//!
//! Not modelled, for want of such events in the simulator: requests inserted at
//! the head (flush sequences) and requeued requests, which the module sends
//! first and never holds; writeback waiters, which release every bundle (close
//! reason `waiter`); and tunables changed mid-run — they are fixed for a run,
//! so the module's `retune` (a change of `bundle_kb` or `bundling` readies every
//! open bundle and takes it out of the lookup) never happens here. Both
//! reasons are still counted, as zero, so the close reasons line up with the
//! module's debugfs stats.

use super::dlcore::{BatchRule, DeadlineCore, READ, WRITE};
use super::tunable::{self, Tunable, TunableValues};
use super::{try_merge, Ctx, MergeIndex, MergeKind, Scheduler, SectorIndex};
use crate::params::Params;
use crate::types::DeviceInfo;
use crate::types::{
    ioprio_class, BioSpec, Ns, Op, ReqId, Request, IOPRIO_CLASS_IDLE, IOPRIO_CLASS_RT, NONE,
};
use anyhow::Result;
use rustc_hash::FxHashMap as HashMap;
use std::collections::{BTreeMap, BTreeSet};

/// Close reasons, in the module's order (`enum vel_close`). `waiter` (4) and
/// `retune` (5) have no events in the simulator and stay zero.
const CLOSE_NAMES: [&str; 8] = [
    "time", "size", "expire", "sync", "waiter", "retune", "merged", "idle",
];
const CLOSE_TIME: usize = 0;
const CLOSE_SIZE: usize = 1;
const CLOSE_EXPIRE: usize = 2;
const CLOSE_SYNC: usize = 3;
/// Emptied by merges before it was ready; the merge rules should prevent it.
const CLOSE_MERGED: usize = 6;
/// Released early: a tag was free and nothing else could go.
const CLOSE_IDLE: usize = 7;

// The module's tunables, generated from their one declaration,
// kernel/veloces-tunables.h (sim/build.rs): MODULE_TUNABLES.
include!(concat!(env!("OUT_DIR"), "/veloces_tunables.rs"));

/// The model's own setting, after the module's tunables: not a sysfs file.
const HZ: Tunable = Tunable {
    name: "hz",
    default: 250,
    min: 0,
    max: 10_000,
    help: "kernel HZ for jiffies rounding of expiry times (0: exact ns)",
};

/// veloces's tunables: the module's sysfs `queue/iosched/` files, in their
/// order, then the model's `hz`.
pub const TUNABLES: &[Tunable] = &{
    let mut all = [HZ; MODULE_TUNABLES.len() + 1];
    let mut i = 0;
    while i < MODULE_TUNABLES.len() {
        all[i] = MODULE_TUNABLES[i];
        i += 1;
    }
    all
};

#[derive(Clone, Copy, Default)]
struct Priv {
    bundle: u32,
    accounted: u32,
    /// A sync write on a FIFO, counted in `sync_writes` (the module: a sync
    /// write whose `queuelist` is not empty; one merged while being
    /// inserted was never counted).
    sync_queued: bool,
    /// A write its submitter waits on while it reads (a reader's own).
    own: bool,
}

/// A bundle's requests, sorted by (sector, id). Bundles hold few requests, so
/// a sorted vector (its capacity kept when the bundle slot is reused) is
/// cheaper than a tree.
#[derive(Default)]
struct RqList(Vec<(u64, ReqId)>);

impl RqList {
    fn insert(&mut self, k: (u64, ReqId)) {
        let i = self.0.partition_point(|x| *x < k);
        self.0.insert(i, k);
    }
    fn remove(&mut self, k: &(u64, ReqId)) {
        if let Ok(i) = self.0.binary_search(k) {
            self.0.remove(i);
        }
    }
    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    fn first(&self) -> Option<ReqId> {
        self.0.first().map(|&(_, id)| id)
    }
}

struct Bundle {
    block: u64,
    /// The erase block, `[start, end)`, as the bundle opened with it.
    start: u64,
    end: u64,
    opened: Ns,
    /// Its oldest write's `write_expire` (`expire_ns`): in ns, not rounded
    /// to ticks as the FIFOs' expiries are, since the module's bundle times
    /// have one base so that deciding to wait and arming the timer agree.
    expire: Ns,
    sectors: u64,
    sync: bool,
    rqs: RqList,
    open_seq: u64,
    open: bool,
}

#[derive(Default, serde::Serialize)]
struct Stats {
    queued: [u64; 2],
    dispatched: [u64; 2],
    merged: [u64; 2],
    expired: [u64; 2],
    bundles_opened: u64,
    bundles_closed: [u64; CLOSE_NAMES.len()],
    bundled_writes: u64,
    /// Async writes not held because they cross an erase-block boundary.
    spanning: u64,
    starved: u64,
    /// Times writes waited for `write_depth`.
    capped: u64,
    /// Dispatches per priority class (RT, BE, IDLE), and of a lower class for its age.
    class_dispatched: [u64; 3],
    aged: u64,
    /// Times writes waited for a reader's turn, and the turns a write ended.
    anticipated: u64,
    turns: u64,
    own_writes: u64,
}

/// Where an aged request comes from (`vel_aged_request`): a class's FIFO
/// head, the draining bundle, or a ready bundle (and why it is ready).
#[derive(Clone, Copy)]
enum AgedFrom {
    Fifo,
    Draining,
    Ready(u32, usize),
}

/// Priority classes, highest first (`enum vel_prio`).
pub(crate) const RT: usize = 0;
pub(crate) const BE: usize = 1;
pub(crate) const IDLE: usize = 2;
pub(crate) const CLASS_NAMES: [&str; 3] = ["rt", "be", "idle"];

/// The class of an I/O priority (`vel_ioprio_class`: none is BE).
pub(crate) fn class_of(ioprio: u16) -> usize {
    match ioprio_class(ioprio) {
        IOPRIO_CLASS_RT => RT,
        IOPRIO_CLASS_IDLE => IDLE,
        _ => BE,
    }
}

/// Read submitters remembered (`VEL_READERS`).
const READERS: usize = 8;

/// `VEL_THINK_TRUSTED`: the think time's weight (of 256) above which its mean
/// counts: three gaps.
const THINK_TRUSTED: u64 = 80;

/// `vel_mean8`: a mean that keeps 1/8 of each sample (0: none yet, the
/// first sample is the mean).
fn mean8(mean: u64, sample: u64) -> u64 {
    if mean > 0 {
        mean - (mean >> 3) + (sample >> 3)
    } else {
        sample
    }
}

/// `VEL_BACKLOG_MIN`: the fewest writes `write_backlog_us` leaves on the
/// device (two keep it busy).
const BACKLOG_MIN: u64 = 2;

pub struct Veloces {
    // tunables (names and units as the module's sysfs files)
    read_expire: u64,
    write_expire: u64,
    front_merges: bool,
    bundle_kb: u64,
    bundle_expire_us: u64,
    bundling: bool,
    write_depth: u64,
    async_depth: u64,
    prio_aging_expire: u64,
    anticipate_us: u64,
    hold_idle: bool,
    write_backlog_us: u64,
    /// Reads count as active, and a task as a reader, this long after one
    /// (`vel_read_active_ns`).
    read_active_us: u64,
    hz: u64,
    tun: TunableValues,
    /// The device's tags (`vel_device_depth`): write_depth at or above it is no limit.
    device_depth: u64,
    /// Requests on the device by direction, reads on it by class, and each
    /// class's last sign of a reader (a read inserted or completed).
    inflight: [u64; 2],
    reads_on: [u64; 3],
    last_read: [Option<Ns>; 3],
    /// Most reads on the device in this 10 ms window and the one before.
    read_peak: u64,
    read_peak_prev: u64,
    read_peak_at: Option<Ns>,
    /// Anticipation (`vel_anticipate`): the last read completion, the think
    /// time (`vel_think`: a decaying sum of the gaps from a completion to the
    /// next read, each at most twice the window, and its weight), when the
    /// reader's turn began,
    /// the writes' turn that ended the last one (its start; its length once
    /// over), when dispatch must look again while writes wait, and the sync
    /// writes queued.
    read_done: Option<Ns>,
    think_total: u64,
    think_samples: u64,
    turn: Option<Ns>,
    write_turn: Option<Ns>,
    write_turn_len: Ns,
    antic_until: Option<Ns>,
    sync_writes: u64,
    /// The last write completion (with no write on the device, the end of
    /// the writes' turn: `write_turn`) and whether it left writes on the
    /// device; the device's pace at writing (`vel_write_backlog`): the mean gap
    /// between write completions while writes were on it; the mean time
    /// on the device of a read that completed beside writes (1/8 a sample;
    /// 0: none); and the shortest time on it of any read (0: none yet).
    write_done: Option<Ns>,
    write_left: bool,
    write_gap: u64,
    read_wait: u64,
    read_fast: u64,
    /// The last submitters of reads and when each last read (inserted or
    /// completed), most recent first.
    readers: Vec<(u32, Ns)>,

    /// FIFOs and sort trees of the dispatchable (unheld) requests, batching
    /// (the core shared with deadline), per priority class.
    cores: [DeadlineCore; 3],
    held_sort: SectorIndex,
    bundles: Vec<Bundle>,
    free_bundles: Vec<u32>,
    by_block: HashMap<u64, u32>,
    open: BTreeMap<u64, u32>,
    /// Open bundles that may be ready by size or sync (by open order).
    forced: BTreeSet<u64>,
    /// The head of the module's waiting list (`vd->open`): the first open
    /// bundle, by opening order, not yet due by time or expiry; those before
    /// it are due (`vel_mark_ready`). Readiness by time is monotone in
    /// opening order and time only moves on, so it only ever advances.
    waiting_from: u64,
    nr_held: u32,
    draining: Option<u32>,
    /// The draining bundle's writes since it started or since reads last
    /// interrupted it (`vd->drain_run`).
    drain_run: u64,
    /// Reads interrupted the draining bundle: their batch goes on before it
    /// resumes (`vd->drain_yield`).
    drain_yield: bool,
    seq: u64,
    privs: Vec<Priv>,
    stats: Stats,
}

/// Default bundle size, the module's rule (`vel_default_bundle_kb`): the
/// device's optimal I/O size, else its erase block (what a device reports as
/// its discard granularity), when it is at least 64 KiB and within
/// `bundle_kb`'s range; else `bundle_kb`'s declared default.
fn default_bundle_kb(dev: &DeviceInfo) -> u64 {
    let decl = TUNABLES
        .iter()
        .find(|t| t.name == "bundle_kb")
        .expect("bundle_kb is declared");
    [dev.optimal_io_sectors, dev.erase_block_sectors]
        .into_iter()
        .flatten()
        .map(|s| s as u64 / 2)
        .find(|&kb| kb >= 64 && kb <= decl.max)
        .unwrap_or(decl.default)
}

pub fn new(p: &Params, dev: &DeviceInfo) -> Result<Box<dyn Scheduler>> {
    Ok(Box::new(Veloces::from_params(p, dev)?))
}

impl Veloces {
    fn from_params(p: &Params, dev: &DeviceInfo) -> Result<Self> {
        let device_depth = (dev.queue_depth as u64).max(1);
        let tun = tunable::parse(
            TUNABLES,
            p,
            &[
                ("bundle_kb", default_bundle_kb(dev)),
                ("write_depth", device_depth),
            ],
        )?;
        let core = || {
            DeadlineCore::new(
                tun.get("fifo_batch"),
                tun.get("writes_starved"),
                BatchRule::Yield,
            )
        };
        let cores = [core(), core(), core()];
        Ok(Veloces {
            read_expire: tun.get("read_expire"),
            write_expire: tun.get("write_expire"),
            front_merges: tun.flag("front_merges"),
            bundle_kb: tun.get("bundle_kb"),
            bundle_expire_us: tun.get("bundle_expire_us"),
            bundling: tun.flag("bundling"),
            write_depth: tun.get("write_depth"),
            async_depth: tun.get("async_depth"),
            prio_aging_expire: tun.get("prio_aging_expire"),
            anticipate_us: tun.get("anticipate_us"),
            hold_idle: tun.flag("hold_idle"),
            write_backlog_us: tun.get("write_backlog_us"),
            read_active_us: tun.get("read_active_us"),
            hz: tun.get("hz"),
            tun,
            device_depth,
            inflight: [0; 2],
            reads_on: [0; 3],
            last_read: [None; 3],
            read_peak: 0,
            read_peak_prev: 0,
            read_peak_at: None,
            read_done: None,
            think_total: 0,
            think_samples: 0,
            turn: None,
            write_turn: None,
            write_turn_len: 0,
            antic_until: None,
            sync_writes: 0,
            write_done: None,
            write_left: false,
            write_gap: 0,
            read_wait: 0,
            read_fast: 0,
            readers: Vec::new(),
            cores,
            held_sort: SectorIndex::default(),
            bundles: Vec::new(),
            free_bundles: Vec::new(),
            by_block: HashMap::default(),
            open: BTreeMap::new(),
            forced: BTreeSet::new(),
            waiting_from: 0,
            nr_held: 0,
            draining: None,
            drain_run: 0,
            drain_yield: false,
            seq: 0,
            privs: Vec::new(),
            stats: Stats::default(),
        })
    }

    fn pv(&mut self, rq: ReqId) -> &mut Priv {
        let i = rq as usize;
        if self.privs.len() <= i {
            self.privs.resize(
                i + 1,
                Priv {
                    bundle: NONE,
                    ..Priv::default()
                },
            );
        }
        &mut self.privs[i]
    }

    /// `vel_note_reader`: `pid` read at `now`.
    fn note_reader(&mut self, pid: u32, now: Ns) {
        if let Some(i) = self.readers.iter().position(|&(p, _)| p == pid) {
            self.readers.remove(i);
        } else if self.readers.len() >= READERS {
            self.readers.pop();
        }
        self.readers.insert(0, (pid, now));
    }

    /// `vel_read_active_ns`: `read_active_us` in ns.
    fn read_active_ns(&self) -> Ns {
        self.read_active_us * 1000
    }

    /// `vel_reader`: `pid` read less than `read_active_us` ago.
    fn is_reader(&self, pid: u32, now: Ns) -> bool {
        let window = self.read_active_ns();
        self.readers
            .iter()
            .any(|&(p, t)| p == pid && now < t + window)
    }

    fn bundle_of(&self, rq: ReqId) -> Option<u32> {
        self.privs
            .get(rq as usize)
            .map(|p| p.bundle)
            .filter(|&b| b != NONE)
    }

    /// The class core of request `rq` (described by `r`).
    fn core_of(&mut self, r: &Request) -> &mut DeadlineCore {
        &mut self.cores[class_of(r.attrs.ioprio)]
    }

    fn queued(&self, dir: usize) -> bool {
        self.cores.iter().any(|c| c.has_queued(dir))
    }

    fn bundle_sectors(&self) -> u64 {
        self.bundle_kb * 2
    }

    /// `jiffies + msecs_to_jiffies(ms)` expressed as the first nanosecond at
    /// which `time_is_before_eq_jiffies` turns true.
    fn expiry(&self, now: Ns, ms: u64) -> Ns {
        if self.hz == 0 {
            return now + ms * 1_000_000;
        }
        let j = now as u128 * self.hz as u128 / 1_000_000_000;
        let dj = (ms as u128 * self.hz as u128).div_ceil(1000);
        let t = (j + dj) * 1_000_000_000;
        t.div_ceil(self.hz as u128) as Ns
    }

    fn ready(&self, b: &Bundle, now: Ns) -> Option<usize> {
        if b.sync {
            Some(CLOSE_SYNC)
        } else if b.sectors >= self.bundle_sectors() {
            Some(CLOSE_SIZE)
        } else if now >= b.expire {
            Some(CLOSE_EXPIRE)
        } else if now >= b.opened + self.bundle_expire_us * 1000 {
            Some(CLOSE_TIME)
        } else {
            None
        }
    }

    /// When bundle `b` becomes ready by time or by its oldest write's
    /// expiry (`vel_bundle_due_ns`).
    fn due(&self, b: &Bundle) -> Ns {
        (b.opened + self.bundle_expire_us * 1000).min(b.expire)
    }

    /// `vel_mark_ready`: move the head of the waiting list past the bundles
    /// due by `now`.
    fn mark_due(&mut self, now: Ns) {
        let mut from = self.waiting_from;
        for (&seq, &b) in self.open.range(self.waiting_from..) {
            if self.due(&self.bundles[b as usize]) > now {
                break;
            }
            from = seq + 1;
        }
        self.waiting_from = from;
    }

    fn note_forced(&mut self, b: u32) {
        let bb = &self.bundles[b as usize];
        if bb.open && (bb.sync || bb.sectors >= self.bundle_sectors()) {
            self.forced.insert(bb.open_seq);
        }
    }

    /// The oldest ready bundle and why it is ready (`vel_ready_bundle`).
    /// Readiness by time or expiry is monotone in opening order (both are
    /// fixed at opening, in ns, and a `write_expire` change releases every
    /// bundle), so only the oldest bundle, and those full or sync, can be.
    fn ready_bundle(&mut self, now: Ns) -> Option<(u32, usize)> {
        let (&seq0, &b0) = self.open.iter().next()?;
        if let Some(r) = self.ready(&self.bundles[b0 as usize], now) {
            return Some((b0, r));
        }
        while let Some(&seq) = self.forced.iter().next() {
            match self.open.get(&seq).copied() {
                Some(b) if seq > seq0 => {
                    if let Some(r) = self.ready(&self.bundles[b as usize], now) {
                        return Some((b, r));
                    }
                    self.forced.remove(&seq);
                }
                _ => {
                    self.forced.remove(&seq);
                }
            }
        }
        None
    }

    /// `vel_class_reading`: reads of class `c` are queued or on the device.
    fn class_reading(&self, c: usize) -> bool {
        self.cores[c].has_queued(READ) || self.reads_on[c] > 0
    }

    /// `vel_read_class`: the reader writes make way for, the highest class
    /// whose reads are queued, on the device, or were seen (inserted or
    /// completed) less than `window` ago; 3 (`VEL_CLASS_NR`) if none.
    fn read_class(&self, now: Ns, window: Ns) -> usize {
        (RT..=IDLE)
            .find(|&c| self.class_reading(c) || self.last_read[c].is_some_and(|t| now < t + window))
            .unwrap_or(CLASS_NAMES.len())
    }

    /// `vel_write_class`: the highest class with writes to dispatch (BE's
    /// draining or ready bundles too), 3 if none: the class of the write
    /// that would go.
    fn write_class(&mut self, now: Ns) -> usize {
        (RT..=IDLE)
            .find(|&c| {
                self.cores[c].has_queued(WRITE)
                    || (c == BE && (self.draining.is_some() || self.ready_bundle(now).is_some()))
            })
            .unwrap_or(CLASS_NAMES.len())
    }

    /// `vel_read_peak_window`: start a new window (`read_active_us`) of the
    /// read peak if this one is over.
    fn read_peak_window(&mut self, now: Ns) {
        let age = self.read_peak_at.map_or(Ns::MAX, |t| now.saturating_sub(t));
        let window = self.read_active_ns();
        if age >= window {
            self.read_peak_prev = if age < 2 * window { self.read_peak } else { 0 };
            self.read_peak = self.inflight[READ];
            self.read_peak_at = Some(now);
        }
    }

    /// `vel_write_share`: the tags writes may hold while reads are active —
    /// all but one per read the readers kept on the device in the last 10-20
    /// ms (at least one), never fewer than `write_depth`.
    fn write_share(&mut self, now: Ns) -> u64 {
        self.read_peak_window(now);
        let reserve = self.read_peak.max(self.read_peak_prev).max(1);
        if reserve >= self.device_depth {
            return self.write_depth;
        }
        self.write_depth.max(self.device_depth - reserve)
    }

    /// `vel_write_backlog`: the writes the device may hold while reads are
    /// active. Where reads beside writes spend longer on the device than the
    /// fastest read did, by more than `write_backlog_us` on average (the
    /// device serves reads behind its writes), as many as it completes in
    /// that long at its pace (at least `BACKLOG_MIN`); elsewhere (a slow
    /// device whose reads take as long whatever the writes do), before the
    /// means are known, or at 0, no limit.
    fn write_backlog(&self) -> u64 {
        let window = self.write_backlog_us * 1000;
        if window == 0
            || self.write_gap == 0
            || self.read_wait <= self.read_fast.saturating_add(window)
        {
            return self.device_depth;
        }
        (window / self.write_gap).clamp(BACKLOG_MIN.min(self.device_depth), self.device_depth)
    }

    /// `vel_writes_slow_reads`: reads beside writes spend on average more
    /// than twice as long on the device as the fastest read did (the device
    /// serves reads behind its writes, so switching between them costs);
    /// false until both are known.
    fn writes_slow_reads(&self) -> bool {
        self.read_fast > 0 && self.read_wait > 2 * self.read_fast
    }

    /// `vel_write_done`: a write left the device with `left` writes still on
    /// it; when the last one had left some too, the gap is the device's pace.
    fn write_done(&mut self, now: Ns, left: u64) {
        if let Some(last) = self.write_done.filter(|&t| self.write_left && now > t) {
            self.write_gap = mean8(self.write_gap, now - last);
        }
        self.write_done = Some(now);
        self.write_left = left > 0;
    }

    /// `vel_write_room`: a write of class `w` (`write_class`) may go: writes
    /// hold fewer tags than their share and their backlog, or no reader of
    /// class `w` or higher is about (reads in the last 10 ms count). Counted
    /// when it says no.
    fn write_room(&mut self, w: usize, now: Ns) -> bool {
        if w < self.read_class(now, self.read_active_ns()) {
            return true;
        }
        let share = self.write_share(now).min(self.write_backlog());
        if share >= self.device_depth || self.inflight[WRITE] < share {
            return true;
        }
        self.stats.capped += 1;
        false
    }

    /// A counted sync write leaves its FIFO.
    fn uncount_sync(&mut self, rq: ReqId) {
        let p = self.pv(rq);
        if std::mem::take(&mut p.sync_queued) {
            self.sync_writes -= 1;
        }
    }

    /// `vel_write_turn`: the writes' last turn, from the write that ended the
    /// reader's previous turn until no write was on the device, at most
    /// `write_expire`; until the one being measured is over, the one before.
    fn write_turn(&self) -> Ns {
        // With no write on the device, the last completion left none.
        let len = match (self.write_turn, self.write_done) {
            (Some(s), Some(idle)) if idle > s && self.inflight[WRITE] == 0 => idle - s,
            _ => self.write_turn_len,
        };
        len.min(self.write_expire * 1_000_000)
    }

    /// `vel_think`: the reader's mean think time, once three gaps are in it
    /// (weight above 80 of 256); until then unknown, and a reader with an
    /// unknown think time counts as one that comes back at once.
    fn think(&self) -> Option<Ns> {
        (self.think_samples > THINK_TRUSTED).then(|| (self.think_total + 128) / self.think_samples)
    }

    /// `vel_turn_end`: when the reader's turn (begun at `start`) ends.
    fn turn_end(&self, start: Ns) -> Ns {
        start + self.write_turn()
    }

    /// `vel_writes_waited_on`: a sync write is queued, a write FIFO expired,
    /// or the bundle that would go (draining, else the oldest ready) was
    /// released by a sync write or its oldest write expired.
    fn writes_waited_on(&mut self, now: Ns) -> bool {
        if self.sync_writes > 0 || self.cores.iter().any(|c| c.fifo_expired(WRITE, now)) {
            return true;
        }
        let b = match self.draining {
            Some(b) => Some(b),
            None => self.ready_bundle(now).map(|(b, _)| b),
        };
        b.is_some_and(|b| {
            let bb = &self.bundles[b as usize];
            bb.sync || now >= bb.expire
        })
    }

    /// `vel_anticipate`: the writes waiting, the highest of class `w`
    /// (`write_class`), stay off the device for a reader's turn (module
    /// header): the reader is the highest class with a read queued, on the
    /// device or seen less than `anticipate_us` ago, and no lower than `w`.
    /// Starts the turn; when it says yes, `antic_until` is when dispatch must
    /// look again.
    fn anticipate(&mut self, w: usize, now: Ns) -> bool {
        let window = self.anticipate_us * 1000;
        if window == 0 || self.think().is_some_and(|t| t >= window) {
            return false;
        }
        if self.inflight[READ] + self.inflight[WRITE] + 1 < self.device_depth {
            return false;
        }
        // No reader about, or the writes' class is higher than its.
        let r = self.read_class(now, window);
        if w < r {
            return false;
        }
        let reading = self.class_reading(r);
        let done = self.last_read[r];
        // No writes' turn measured yet: the first writes go and set it.
        if self.write_turn.is_none() || self.writes_waited_on(now) {
            return false;
        }
        let start = *self.turn.get_or_insert(now);
        let end = self.turn_end(start);
        if now >= end {
            return false;
        }
        self.antic_until = Some(match done {
            Some(d) if !reading => end.min(d + window),
            _ => end,
        });
        true
    }

    /// `vel_class_pending`: class `c` has something it may dispatch (held
    /// bundles wait; a draining or ready bundle is BE's).
    fn class_pending(&mut self, c: usize, now: Ns) -> bool {
        self.cores[c].has_queued(READ)
            || self.cores[c].has_queued(WRITE)
            || (c == BE && (self.draining.is_some() || self.ready_bundle(now).is_some()))
    }

    /// `vel_aged_request`: the request of class `c` that its age lets pass a
    /// higher class, and where it comes from. As mq-deadline, only a request
    /// that has itself waited `prio_aging_expire` (since its submission, the
    /// kernel's `start_time_ns`) passes: the older of the class's FIFO heads
    /// if it did; for BE, else the first write in sector order that did in
    /// the draining bundle, or (none draining) in the oldest ready one. A
    /// bundle opened less than `prio_aging_expire` ago is not searched.
    fn aged_request(&mut self, ctx: &Ctx, c: usize, now: Ns) -> Option<(ReqId, AgedFrom)> {
        let age = self.prio_aging_expire * 1_000_000;
        let old = |t: Ns| now >= t.saturating_add(age);
        let head = [READ, WRITE]
            .into_iter()
            .filter_map(|d| self.cores[c].fifo_head(d).map(|(_, rq)| rq))
            .filter(|&rq| old(ctx.rq(rq).submitted))
            .min_by_key(|&rq| ctx.rq(rq).submitted);
        if let Some(rq) = head {
            return Some((rq, AgedFrom::Fifo));
        }
        if c != BE {
            return None;
        }
        let (b, from) = match self.draining {
            Some(b) => (b, AgedFrom::Draining),
            None => {
                let (b, reason) = self.ready_bundle(now)?;
                (b, AgedFrom::Ready(b, reason))
            }
        };
        let bb = &self.bundles[b as usize];
        if !old(bb.opened) {
            return None;
        }
        let rq = bb
            .rqs
            .0
            .iter()
            .map(|&(_, rq)| rq)
            .find(|&rq| old(ctx.rq(rq).submitted))?;
        Some((rq, from))
    }

    /// `vel_pick_class`: a lower class with a request that aged (BE before
    /// IDLE), with that request, else the highest class with something to
    /// dispatch.
    fn pick_class(&mut self, ctx: &Ctx, now: Ns) -> Option<(usize, Option<(ReqId, AgedFrom)>)> {
        let mut first = None;
        for c in RT..=IDLE {
            if !self.class_pending(c, now) {
                continue;
            }
            if first.is_none() {
                first = Some(c);
            } else if let Some(aged) = self.aged_request(ctx, c, now) {
                return Some((c, Some(aged)));
            }
        }
        first.map(|c| (c, None))
    }

    /// `vel_dispatch_aged`: the aged request `rq` alone passes the higher
    /// class; from a ready bundle it starts the bundle draining.
    fn dispatch_aged(&mut self, ctx: &Ctx, rq: ReqId, from: AgedFrom) -> ReqId {
        self.stats.aged += 1;
        match from {
            AgedFrom::Ready(b, reason) => {
                self.start_bundle(b, reason);
            }
            AgedFrom::Draining => self.drain_run += 1,
            AgedFrom::Fifo => {
                let r = ctx.rq(rq);
                let dir = r.op.idx();
                let core = &mut self.cores[class_of(r.attrs.ioprio)];
                if dir == WRITE {
                    core.starved = 0;
                }
                core.last_dir = dir;
                core.batching = 1;
            }
        }
        self.start(ctx, rq)
    }

    /// Whether sectors `[start, end)` lie inside bundle `b`'s erase block
    /// (`vel_in_bundle`): the range it opened with, whatever `bundle_kb` is now.
    fn in_bundle(&self, b: u32, start: u64, end: u64) -> bool {
        let bb = &self.bundles[b as usize];
        start >= bb.start && end <= bb.end
    }

    /// Hold `rq` in its erase block's bundle (`vel_hold`); false if it spans
    /// two erase blocks (it then goes to the write FIFO like a sync write).
    fn hold(&mut self, ctx: &Ctx, rq: ReqId) -> bool {
        let r = ctx.rq(rq);
        let (sector, sectors) = (r.sector, r.sectors);
        let bs = self.bundle_sectors();
        let block = sector / bs;
        if (r.end() - 1) / bs != block {
            self.stats.spanning += 1;
            return false;
        }
        let b = match self.by_block.get(&block) {
            Some(&b) => b,
            None => {
                self.seq += 1;
                let nb = Bundle {
                    block,
                    start: block * bs,
                    end: (block + 1) * bs,
                    opened: ctx.now,
                    expire: ctx.now + self.write_expire * 1_000_000,
                    sectors: 0,
                    sync: false,
                    rqs: RqList::default(),
                    open_seq: self.seq,
                    open: true,
                };
                let id = if let Some(i) = self.free_bundles.pop() {
                    let mut rqs = std::mem::take(&mut self.bundles[i as usize].rqs);
                    rqs.0.clear();
                    self.bundles[i as usize] = Bundle { rqs, ..nb };
                    i
                } else {
                    self.bundles.push(nb);
                    (self.bundles.len() - 1) as u32
                };
                self.by_block.insert(block, id);
                self.open.insert(self.seq, id);
                self.stats.bundles_opened += 1;
                id
            }
        };
        let p = self.pv(rq);
        p.bundle = b;
        p.accounted = sectors;
        let bb = &mut self.bundles[b as usize];
        bb.sectors += sectors as u64;
        bb.rqs.insert((sector, rq));
        self.nr_held += 1;
        self.held_sort.add(ctx.rq(rq), rq);
        self.note_forced(b);
        true
    }

    fn close_bundle(&mut self, b: u32, reason: usize) {
        let bb = &mut self.bundles[b as usize];
        if bb.open {
            bb.open = false;
            self.by_block.remove(&bb.block);
            self.open.remove(&bb.open_seq);
            self.forced.remove(&bb.open_seq);
            self.stats.bundles_closed[reason] += 1;
        }
    }

    fn index_of_ref(&self, rq: ReqId, r: &Request) -> &SectorIndex {
        if self.bundle_of(rq).is_some() {
            &self.held_sort
        } else {
            &self.cores[class_of(r.attrs.ioprio)].sort[r.op.idx()]
        }
    }

    fn index_of(&mut self, rq: ReqId, r: &Request) -> &mut SectorIndex {
        if self.bundle_of(rq).is_some() {
            &mut self.held_sort
        } else {
            &mut self.cores[class_of(r.attrs.ioprio)].sort[r.op.idx()]
        }
    }

    /// Take `rq` off every list and tree; free its bundle if emptied.
    fn remove(&mut self, ctx: &Ctx, rq: ReqId) {
        let r = ctx.rq(rq);
        let Some(b) = self.bundle_of(rq) else {
            self.uncount_sync(rq);
            self.core_of(r).remove(r, rq);
            return;
        };
        let p = *self.pv(rq);
        self.held_sort.remove(r, rq);
        let bb = &mut self.bundles[b as usize];
        bb.rqs.remove(&(r.sector, rq));
        bb.sectors -= bb.sectors.min(p.accounted as u64);
        self.nr_held -= 1;
        self.pv(rq).bundle = NONE;
        if self.bundles[b as usize].rqs.is_empty() {
            // Emptied while still open (not drained): counted, so that
            // opened == sum(closed) + open holds.
            self.close_bundle(b, CLOSE_MERGED);
            if self.draining == Some(b) {
                self.draining = None;
            }
            self.free_bundles.push(b);
        }
    }

    fn start(&mut self, ctx: &Ctx, rq: ReqId) -> ReqId {
        let now = ctx.now;
        let r = ctx.rq(rq);
        let dir = r.op;
        let class = class_of(r.attrs.ioprio);
        if self.bundle_of(rq).is_some() {
            self.stats.bundled_writes += 1;
            self.remove(ctx, rq);
        } else {
            self.uncount_sync(rq);
            let r = ctx.rq(rq);
            self.cores[class].move_to_dispatch(r, rq);
        }
        self.stats.dispatched[dir.idx()] += 1;
        self.stats.class_dispatched[class] += 1;
        self.inflight[dir.idx()] += 1;
        if dir == Op::Read {
            self.reads_on[class] += 1;
            self.read_peak_window(now);
            self.read_peak = self.read_peak.max(self.inflight[READ]);
        } else if self.turn.is_some() || self.write_turn.is_none() {
            // The reader's turn ends (or the first write goes): the writes'
            // turn begins.
            self.write_turn_len = self.write_turn();
            self.write_turn = Some(now);
            self.stats.turns += u64::from(self.turn.take().is_some());
        }
        rq
    }

    /// `vel_drain`: the draining bundle's next write `next`, or a read. After
    /// `fifo_batch` of a bundle's writes, BE's queued reads get one read batch
    /// (up to `fifo_batch`, in sector order), then the bundle resumes: a read
    /// waits for at most `fifo_batch` of a bundle's writes, not all of them.
    fn drain(&mut self, next: ReqId, now: Ns) -> ReqId {
        let core = &mut self.cores[BE];
        if self.drain_yield {
            if let Some(rq) = core.continue_batch(now) {
                return rq;
            }
            self.drain_yield = false;
            core.next_rq[WRITE] = None;
            core.last_dir = WRITE;
            core.batching = 1;
            self.drain_run = 0;
        } else if self.drain_run >= core.fifo_batch && core.has_queued(READ) {
            if let Some((rq, expired)) = core.start_batch(READ, now) {
                self.stats.expired[READ] += expired as u64;
                self.drain_yield = true;
                return rq;
            }
        }
        self.drain_run += 1;
        next
    }

    /// `vel_release_idle`: a tag is free and nothing else may go: the oldest
    /// held bundle goes now rather than leave the device idle (`hold_idle`
    /// 0), as a ready BE bundle would: only where writes are within their
    /// share and no reader is anticipated.
    fn release_idle(&mut self, ctx: &Ctx, now: Ns) -> Option<ReqId> {
        if self.hold_idle {
            return None;
        }
        let (_, &b) = self.open.iter().next()?;
        if !self.write_room(BE, now) {
            return None;
        }
        if self.anticipate(BE, now) {
            self.stats.anticipated += 1;
            return None;
        }
        let rq = self.start_bundle(b, CLOSE_IDLE);
        Some(self.start(ctx, rq))
    }

    fn start_bundle(&mut self, b: u32, reason: usize) -> ReqId {
        self.close_bundle(b, reason);
        self.draining = Some(b);
        self.drain_run = 1;
        self.drain_yield = false;
        let c = &mut self.cores[BE];
        c.next_rq[WRITE] = None;
        c.starved = 0;
        c.last_dir = WRITE;
        c.batching = 1;
        self.bundles[b as usize].rqs.first().unwrap_or(NONE)
    }

    /// `vel_dispatch_writes`: in class `c`, a ready bundle (BE only) goes
    /// unless the write FIFO's head expires first; else a write batch.
    fn dispatch_writes(&mut self, c: usize, b: Option<(u32, usize)>, now: Ns) -> Option<ReqId> {
        let head = self.cores[c].fifo_head(WRITE);
        if let Some((b, reason)) = b {
            if head.is_none_or(|(t, _)| t >= self.bundles[b as usize].expire) {
                return Some(self.start_bundle(b, reason));
            }
        }
        let (rq, expired) = self.cores[c].start_batch(WRITE, now)?;
        self.stats.expired[WRITE] += expired as u64;
        Some(rq)
    }

    /// After a bio merged into `rq`: recount its bundle.
    fn merged(&mut self, ctx: &Ctx, rq: ReqId) {
        let sectors = ctx.rq(rq).sectors;
        if let Some(b) = self.bundle_of(rq) {
            let acc = self.pv(rq).accounted;
            self.bundles[b as usize].sectors += (sectors - acc) as u64;
            self.pv(rq).accounted = sectors;
            self.note_forced(b);
        }
    }

    /// Request-to-request merge: `next` (starting where `rq` ends) joins `rq`.
    fn merge_requests(&mut self, ctx: &mut Ctx, rq: ReqId, next: ReqId) {
        let op = ctx.rq(rq).op;
        self.stats.merged[op.idx()] += 1;
        let b = self.bundle_of(rq);
        let (nf, rf) = (ctx.rq(next).fifo_time, ctx.rq(rq).fifo_time);
        // Merges need the same I/O priority: one class core holds both.
        let c = class_of(ctx.rq(rq).attrs.ioprio);
        if b.is_none()
            && self.bundle_of(next).is_none()
            && nf < rf
            && self.cores[c].in_fifo(rq)
            && self.cores[c].in_fifo(next)
        {
            // The merged request inherits the earlier expiry and FIFO place
            // (`list_move(&req->queuelist, &next->queuelist)`): `rq` takes
            // `next`'s key, and `next` leaves the FIFO with it.
            self.cores[c].take_fifo_place(op.idx(), rq, rf, next, nf);
            ctx.table.get_mut(rq).fifo_time = nf;
        }
        // `next` expires no earlier than its bundle: held in it, or being
        // inserted, while the bundle's oldest write opened it.
        if let Some(b) = b {
            if ctx.rq(next).sync {
                self.bundles[b as usize].sync = true;
                self.note_forced(b);
            }
        }
        self.remove(ctx, next);
        let r = ctx.rq(rq).clone();
        self.index_of(rq, &r).remove(&r, rq);
        let keep_fifo = ctx.rq(rq).fifo_time;
        ctx.table.merge_requests(rq, next);
        ctx.table.get_mut(rq).fifo_time = keep_fifo;
        let r = ctx.rq(rq).clone();
        self.index_of(rq, &r).add(&r, rq);
        self.merged(ctx, rq);
    }

    /// The queued (or, for writes, held) request ending at `sector`, in any
    /// class (the kernel's merge hash holds them all; a merge then needs the
    /// same I/O priority).
    fn ending_at(&self, op: Op, sector: u64) -> Option<ReqId> {
        let queued = self
            .cores
            .iter()
            .find_map(|c| c.sort[op.idx()].ending_at(sector));
        queued.or_else(|| {
            if op == Op::Write {
                self.held_sort.ending_at(sector)
            } else {
                None
            }
        })
    }

    /// `vel_insert_merge_ok`: whether the insert merge of `rq` may run. Every
    /// request of its back-merge chain (the one ending where `rq` starts, the
    /// one ending where that starts, ...) must be unheld, or all held in one
    /// bundle whose erase block holds every sector from the chain's lowest
    /// start to `rq`'s end: a chain mixing held and unheld requests would put
    /// a held request's sectors in an unheld one, or the reverse. The module
    /// also checks `q->last_merge`, which the model does not track.
    fn insert_merge_ok(&self, ctx: &Ctx, rq: ReqId) -> bool {
        let r = ctx.rq(rq);
        let (op, end) = (r.op, r.end());
        let held = self.ending_at(op, r.sector).and_then(|i| self.bundle_of(i));
        let mut start = r.sector;
        // Each step starts lower (requests are not empty): the walk ends.
        while let Some(into) = self.ending_at(op, start) {
            start = ctx.rq(into).sector;
            if self.bundle_of(into) != held || held.is_some_and(|b| !self.in_bundle(b, start, end))
            {
                return false;
            }
        }
        true
    }

    /// `blk_mq_sched_try_insert_merge`: back-merge the new request into a
    /// queued request ending where it starts, then that one into its own
    /// predecessor, and so on. The kernel asks no allow_merge here, so a sync
    /// write may join a held request (its bundle then goes at once, reason
    /// sync); the module refuses the whole merge unless `insert_merge_ok`.
    fn insert_merge(&mut self, ctx: &mut Ctx, rq: ReqId) -> bool {
        if !self.insert_merge_ok(ctx, rq) {
            return false;
        }
        let op = ctx.rq(rq).op;
        let mut cur = rq;
        let mut merged = false;
        while let Some(into) = self.ending_at(op, ctx.rq(cur).sector) {
            if !super::requests_fit(ctx.rq(into), ctx.rq(cur), ctx.max_sectors) {
                break;
            }
            self.merge_requests(ctx, into, cur);
            merged = true;
            cur = into;
        }
        merged
    }

    /// `allow_merge`: nothing sync, and nothing from another erase block, into a held request.
    fn allow(&self, rq: ReqId, sector: u64, end: u64, sync: bool) -> bool {
        self.bundle_of(rq)
            .is_none_or(|b| !sync && self.in_bundle(b, sector, end))
    }

    fn neighbour_ok(&self, a: ReqId, b: ReqId, ctx: &Ctx) -> bool {
        let (ra, rb) = (ctx.rq(a), ctx.rq(b));
        self.bundle_of(a) == self.bundle_of(b) && super::requests_fit(ra, rb, ctx.max_sectors)
    }
}

impl Scheduler for Veloces {
    fn name(&self) -> &'static str {
        "veloces"
    }

    fn insert(&mut self, ctx: &mut Ctx, rq: ReqId) {
        let r = ctx.rq(rq);
        let dir = r.op;
        let ms = if dir == Op::Read {
            self.read_expire
        } else {
            self.write_expire
        };
        let fifo_time = self.expiry(ctx.now, ms);
        if dir == Op::Read {
            // The reader's think time: from a completion to its next read.
            if let Some(done) = self.read_done {
                if !self.queued(READ) && self.inflight[READ] == 0 {
                    let gap = (ctx.now - done).min(2 * self.anticipate_us * 1000);
                    self.think_samples = (7 * self.think_samples + 256) / 8;
                    self.think_total = (7 * self.think_total + 256 * gap) / 8;
                }
            }
            self.last_read[class_of(r.attrs.ioprio)] = Some(ctx.now);
            if r.pid != 0 {
                self.note_reader(r.pid, ctx.now);
            }
        }
        // A write from a task that reads is that reader's own: it waits on
        // it as on its reads, so it is neither held nor passed by them.
        let r = ctx.rq(rq);
        let own = dir == Op::Write && r.pid != 0 && self.is_reader(r.pid, ctx.now);
        let holdable = dir == Op::Write && !r.sync && !own && class_of(r.attrs.ioprio) == BE;
        ctx.table.get_mut(rq).fifo_time = fifo_time;
        *self.pv(rq) = Priv {
            bundle: NONE,
            own,
            ..Priv::default()
        };
        // Before queueing: blk_mq_sched_try_insert_merge (fifo_time is set
        // first, as a merge passes the expiry on).
        if self.insert_merge(ctx, rq) {
            return;
        }
        self.stats.queued[dir.idx()] += 1;
        self.stats.own_writes += u64::from(own);
        if self.bundling && holdable && self.hold(ctx, rq) {
            return;
        }
        let r = ctx.rq(rq);
        if r.op == Op::Write && (r.sync || own) {
            self.sync_writes += 1;
            self.pv(rq).sync_queued = true;
        }
        let r = ctx.rq(rq);
        self.cores[class_of(r.attrs.ioprio)].add(r, rq);
    }

    fn dispatch(&mut self, ctx: &mut Ctx) -> Option<ReqId> {
        let now = ctx.now;
        self.antic_until = None;
        self.mark_due(now);
        // At write_depth, or in a reader's turn, only reads go (the highest
        // class's), even inside a draining bundle. Writes of a higher class
        // than the reader's are neither capped nor held.
        let w = self.write_class(now);
        let mut hold = w < CLASS_NAMES.len();
        let mut antic = false;
        if hold && self.write_room(w, now) {
            antic = self.anticipate(w, now);
            hold = antic;
        }
        if hold {
            let Some(c) = (RT..=IDLE).find(|&c| self.cores[c].has_queued(READ)) else {
                // The reader's read, its completion or the timer.
                if antic {
                    self.stats.anticipated += 1;
                }
                return None;
            };
            self.antic_until = None;
            let (rq, expired) = self.cores[c].start_batch(READ, now)?;
            self.stats.expired[READ] += expired as u64;
            return Some(self.start(ctx, rq));
        }
        let Some((c, aged)) = self.pick_class(ctx, now) else {
            return self.release_idle(ctx, now);
        };
        if let Some((rq, from)) = aged {
            return Some(self.dispatch_aged(ctx, rq, from));
        }
        if c == BE {
            if let Some(b) = self.draining {
                let first = self.bundles[b as usize].rqs.first();
                if let Some(rq) = first {
                    let rq = self.drain(rq, now);
                    return Some(self.start(ctx, rq));
                }
                self.draining = None;
            }
        }
        // Continue the batch in sector order (waiting reads end a write
        // batch, unless its next write is a reader's own on a device where
        // writes slow reads).
        let privs = &self.privs;
        let batch_own = self.writes_slow_reads();
        let own = |rq: ReqId| batch_own && privs.get(rq as usize).is_some_and(|p| p.own);
        if let Some(rq) = self.cores[c].continue_batch_if(now, own) {
            return Some(self.start(ctx, rq));
        }
        let b = if c == BE {
            self.ready_bundle(now)
        } else {
            None
        };
        // A reader's turn that is over gives the writes theirs.
        let turn_over = self.turn.is_some_and(|t| now >= self.turn_end(t));
        let core = &self.cores[c];
        let reads = core.has_queued(READ);
        let writes = b.is_some() || core.has_queued(WRITE);
        let write_due =
            core.fifo_expired(WRITE, now) || b.is_some_and(|(_, r)| r == CLOSE_EXPIRE) || turn_over;
        if reads && !(writes && write_due) {
            // `!writes || starved++ < writes_starved`: counted only when writes wait.
            if self.cores[c].reads_go(writes) {
                // vel_dispatch_reads: reads are queued, so there is a head.
                let (rq, expired) = self.cores[c].start_batch(READ, now)?;
                self.stats.expired[READ] += expired as u64;
                return Some(self.start(ctx, rq));
            }
            self.stats.starved += 1;
        }
        if !writes {
            return None;
        }
        let rq = self.dispatch_writes(c, b, now)?;
        Some(self.start(ctx, rq))
    }

    fn has_work(&self) -> bool {
        self.queued(READ) || self.queued(WRITE) || self.nr_held > 0
    }

    /// `vel_limit_depth`: writes (sync ones too) and async reads may take
    /// only `async_depth` of the scheduler tags (0: half), so a reader always
    /// finds one; a reader's own write (`vel_reader`) is not limited: its
    /// task would wait for the tag before it submits its next read.
    fn limit_depth(&self, bio: &BioSpec, now: Ns, nr_requests: u32) -> Option<u32> {
        let op = bio.op;
        if op == Op::Write && bio.pid != 0 && self.is_reader(bio.pid, now) {
            return None;
        }
        (op == Op::Write || !bio.is_sync()).then(|| match self.async_depth {
            0 => (nr_requests / 2).max(1),
            d => (d as u32).min(nr_requests),
        })
    }

    /// `vel_finish_request`: the request left the device.
    fn completed(&mut self, ctx: &mut Ctx, rq: ReqId) {
        let d = ctx.rq(rq).op.idx();
        self.inflight[d] = self.inflight[d].saturating_sub(1);
        if d == READ {
            // The class it was dispatched with (the module keeps it with the
            // token: on 6.12 `req_get_ioprio` reads the bio, gone by finish).
            let c = class_of(ctx.rq(rq).attrs.ioprio);
            self.reads_on[c] = self.reads_on[c].saturating_sub(1);
            self.last_read[c] = Some(ctx.now);
            // `vel_read_wait`: its time on the device, if writes were there;
            // and the fastest read's.
            let start = ctx.rq(rq).dispatched;
            if ctx.now > start {
                let t = ctx.now - start;
                if self.inflight[WRITE] > 0 {
                    self.read_wait = mean8(self.read_wait, t);
                }
                self.read_fast = if self.read_fast == 0 {
                    t
                } else {
                    self.read_fast.min(t)
                };
            }
            self.read_done = Some(ctx.now);
        } else {
            self.write_done(ctx.now, self.inflight[WRITE]);
        }
    }

    fn bio_merge(&mut self, ctx: &mut Ctx, bio: u32) -> bool {
        let Some((id, kind)) = try_merge(ctx, self, bio, self.front_merges) else {
            return false;
        };
        let op = ctx.rq(id).op;
        self.stats.merged[op.idx()] += 1;
        self.merged(ctx, id);
        // elv_merged_request: attempt_back_merge with the next request in
        // sector order, or attempt_front_merge with the previous one.
        let r = ctx.rq(id);
        let (start, end) = (r.sector, r.end());
        let idx = self.index_of_ref(id, r);
        let (a, b) = match kind {
            MergeKind::Back => (Some(id), idx.starting_at(end)),
            MergeKind::Front => (idx.ending_at(start), Some(id)),
        };
        if let (Some(a), Some(b)) = (a, b) {
            if a != b && self.neighbour_ok(a, b, ctx) {
                self.merge_requests(ctx, a, b);
            }
        }
        true
    }

    /// The held bundles' timer (`vel_arm_timer`): the moment the head of the
    /// waiting list becomes ready, the bundles already due skipped (they wait
    /// for a tag, a write completion or a reader's turn, all of which run the
    /// queue, never for a timer); or the end of writes' wait for a reader.
    /// Always in the future, so a queue that cannot dispatch never spins.
    fn next_timer(&self, now: Ns) -> Option<Ns> {
        let held = self
            .open
            .range(self.waiting_from..)
            .map(|(_, &b)| self.due(&self.bundles[b as usize]))
            .find(|&t| t > now);
        [held, self.antic_until.filter(|&t| t > now)]
            .into_iter()
            .flatten()
            .min()
    }

    fn tunables(&self) -> Vec<(&'static str, String)> {
        self.tun.report()
    }

    fn stats(&self) -> serde_json::Value {
        let mut closed = serde_json::Map::new();
        for (i, n) in CLOSE_NAMES.iter().enumerate() {
            closed.insert((*n).to_string(), self.stats.bundles_closed[i].into());
        }
        serde_json::json!({
            "queued": {"read": self.stats.queued[0], "write": self.stats.queued[1]},
            "dispatched": {"read": self.stats.dispatched[0], "write": self.stats.dispatched[1]},
            "merged": {"read": self.stats.merged[0], "write": self.stats.merged[1]},
            "expired": {"read": self.stats.expired[0], "write": self.stats.expired[1]},
            "bundles_opened": self.stats.bundles_opened,
            "bundles_closed": closed,
            "bundled_writes": self.stats.bundled_writes,
            "held": self.nr_held,
            "open": self.open.len(),
            "spanning": self.stats.spanning,
            "starved": self.stats.starved,
            "capped": self.stats.capped,
            "class_dispatched": {
                CLASS_NAMES[RT]: self.stats.class_dispatched[RT],
                CLASS_NAMES[BE]: self.stats.class_dispatched[BE],
                CLASS_NAMES[IDLE]: self.stats.class_dispatched[IDLE],
            },
            "aged": self.stats.aged,
            "anticipated": self.stats.anticipated,
            "turns": self.stats.turns,
            "own_writes": self.stats.own_writes,
            "think_us": self.think().map(|t| t / 1000),
            "write_gap_us": self.write_gap / 1000,
            "read_wait_us": self.read_wait / 1000,
            "read_fast_us": self.read_fast / 1000,
            "backlog": self.write_backlog(),
        })
    }
}

/// The model's merge lookups for the shared merge path: the merge hash covers
/// queued and held requests (writes are looked up among the held ones when no
/// queued one matches); a front merge re-keys a held request on its bundle's list.
impl MergeIndex for Veloces {
    fn back_candidate(&self, op: Op, sector: u64) -> Option<ReqId> {
        self.ending_at(op, sector)
    }
    fn front_candidate(&self, op: Op, end: u64) -> Option<ReqId> {
        // Any class (the module looks in the bio's class only; the merge then
        // needs the same I/O priority, so only two queued requests of
        // different classes starting at one sector could tell them apart).
        let queued = self
            .cores
            .iter()
            .find_map(|c| c.sort[op.idx()].starting_at(end));
        queued.or_else(|| {
            if op == Op::Write {
                self.held_sort.starting_at(end)
            } else {
                None
            }
        })
    }
    fn allow_merge(&self, rq: ReqId, _r: &Request, bio: &BioSpec) -> bool {
        let end = bio.sector + bio.sectors as u64;
        self.allow(rq, bio.sector, end, bio.sync || bio.op == Op::Read)
    }
    fn unkey(&mut self, r: &Request, rq: ReqId, kind: MergeKind) {
        self.index_of(rq, r).remove(r, rq);
        if kind == MergeKind::Front {
            if let Some(b) = self.bundle_of(rq) {
                self.bundles[b as usize].rqs.remove(&(r.sector, rq));
            }
        }
    }
    fn rekey(&mut self, r: &Request, rq: ReqId, kind: MergeKind) {
        self.index_of(rq, r).add(r, rq);
        if kind == MergeKind::Front {
            if let Some(b) = self.bundle_of(rq) {
                self.bundles[b as usize].rqs.insert((r.sector, rq));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{ioprio_value, BioSpec, ReqTable, MS, US};
    use rand::{Rng, SeedableRng};
    use rand_pcg::Pcg64Mcg;

    fn sched(kv: &str) -> Veloces {
        let dev = DeviceInfo::flash(1 << 30, 1);
        Veloces::from_params(&Params::parse_kv(&format!("hz=0,{kv}")).unwrap(), &dev).unwrap()
    }

    fn ctx(t: &mut ReqTable, now: Ns) -> Ctx<'_> {
        Ctx {
            now,
            table: t,
            max_sectors: 1024,
        }
    }

    /// Submit one bio as the engine does (plugging off): merged into a queued
    /// request if the scheduler takes it, else inserted as a new request.
    fn submit_spec(v: &mut Veloces, t: &mut ReqTable, now: Ns, spec: BioSpec) {
        let bio = t.alloc_bio(spec, now);
        if !v.bio_merge(&mut ctx(t, now), bio) {
            let rq = t.alloc_req(bio, now);
            v.insert(&mut ctx(t, now), rq);
        }
    }

    /// A reader (pid 1) submits the reads, a writer (pid 2) the writes.
    fn pid_of(op: Op) -> u32 {
        if op == Op::Read {
            1
        } else {
            2
        }
    }

    fn submit(
        v: &mut Veloces,
        t: &mut ReqTable,
        now: Ns,
        op: Op,
        sync: bool,
        sector: u64,
        sectors: u32,
    ) {
        submit_as(v, t, now, pid_of(op), op, sync, sector, sectors);
    }

    #[allow(clippy::too_many_arguments)]
    fn submit_as(
        v: &mut Veloces,
        t: &mut ReqTable,
        now: Ns,
        pid: u32,
        op: Op,
        sync: bool,
        sector: u64,
        sectors: u32,
    ) {
        let mut spec = BioSpec::scripted(op, sync, sector, sectors, sector);
        spec.pid = pid;
        submit_spec(v, t, now, spec);
    }

    /// Dispatch one request at `now`: its (sector, sectors); the request is freed.
    fn next(v: &mut Veloces, t: &mut ReqTable, now: Ns) -> Option<(u64, u32)> {
        let rq = v.dispatch(&mut ctx(t, now))?;
        let r = t.get(rq);
        let out = (r.sector, r.sectors);
        t.free_req(rq);
        Some(out)
    }

    /// opened == sum(closed) + open, and every held request lies in its
    /// bundle's erase block and on its bundle's list.
    fn check_bundles(v: &Veloces, t: &ReqTable) {
        let closed: u64 = v.stats.bundles_closed.iter().sum();
        assert_eq!(
            v.stats.bundles_opened,
            closed + v.open.len() as u64,
            "opened == closed + open"
        );
        let mut held = 0;
        for &b in v.open.values().chain(v.draining.iter()) {
            let bb = &v.bundles[b as usize];
            assert!(
                !bb.rqs.is_empty(),
                "an open or draining bundle holds requests"
            );
            for &(sector, rq) in &bb.rqs.0 {
                let r = t.get(rq);
                assert_eq!(v.bundle_of(rq), Some(b));
                assert_eq!(r.sector, sector);
                assert!(
                    v.in_bundle(b, r.sector, r.end()),
                    "held request outside its block"
                );
                held += 1;
            }
        }
        assert_eq!(held, v.nr_held);
    }

    #[test]
    fn the_table_is_the_modules_then_hz() {
        // kernel/veloces-tunables.h, through sim/build.rs: the module's sysfs
        // files in their order, with their ranges, then the model's hz.
        let names: Vec<_> = TUNABLES.iter().map(|t| t.name).collect();
        assert_eq!(
            names,
            [
                "read_expire",
                "write_expire",
                "fifo_batch",
                "writes_starved",
                "front_merges",
                "bundle_kb",
                "bundle_expire_us",
                "bundling",
                "write_depth",
                "write_backlog_us",
                "async_depth",
                "anticipate_us",
                "hold_idle",
                "prio_aging_expire",
                "read_active_us",
                "hz"
            ]
        );
        let t = |n: &str| *TUNABLES.iter().find(|t| t.name == n).unwrap();
        assert_eq!(
            (t("read_expire").default, t("read_expire").max),
            (100, 600_000)
        );
        assert_eq!(t("read_expire").unit(), "ms");
        assert_eq!(t("bundle_expire_us").unit(), "us");
        assert_eq!((t("bundle_kb").min, t("bundle_kb").max), (4, 1 << 20));
        assert!(TUNABLES
            .iter()
            .all(|t| t.min <= t.default && t.default <= t.max));
    }

    #[test]
    fn default_bundle_is_io_opt_then_erase_block_within_range_as_the_module() {
        let d = |erase: Option<u32>, io_opt: Option<u32>| DeviceInfo {
            erase_block_sectors: erase,
            optimal_io_sectors: io_opt,
            ..DeviceInfo::flash(1 << 31, 32)
        };
        // The optimal I/O size goes first (queue_io_opt), then the erase block
        // (the discard granularity a device reports); each only from 64 KiB and
        // up to bundle_kb's maximum; else the declared default.
        assert_eq!(default_bundle_kb(&d(Some(4096), Some(1024))), 512);
        assert_eq!(default_bundle_kb(&d(Some(4096), Some(64))), 2048);
        assert_eq!(default_bundle_kb(&d(Some(4096), None)), 2048);
        assert_eq!(default_bundle_kb(&d(Some(1 << 22), None)), 512);
        assert_eq!(default_bundle_kb(&d(Some(2048), Some(1 << 23))), 1024);
        assert_eq!(default_bundle_kb(&d(Some(1 << 21), None)), 1 << 20);
        assert_eq!(default_bundle_kb(&d(None, None)), 512);
    }

    #[test]
    fn an_insert_merge_chain_mixing_held_and_unheld_requests_is_refused() {
        // Conformance 24: H held; U (sync, ending where H starts) unheld; R
        // (sync, starting where H ends) would merge into H and H into U.
        let (mut v, mut t) = (sched("bundle_expire_us=3000,hold_idle=1"), ReqTable::new());
        submit(&mut v, &mut t, 0, Op::Write, false, 8, 8); // H
        submit(&mut v, &mut t, 0, Op::Write, true, 0, 8); // U
        submit(&mut v, &mut t, 0, Op::Write, true, 16, 8); // R
        assert_eq!(v.stats.merged[1], 0, "no merge at all");
        assert_eq!(v.stats.queued[1], 3);
        assert_eq!(v.nr_held, 1, "H stays held");
        check_bundles(&v, &t);
        assert_eq!(next(&mut v, &mut t, 0), Some((0, 8)), "U");
        assert_eq!(next(&mut v, &mut t, 0), Some((16, 8)), "R");
        assert_eq!(next(&mut v, &mut t, 0), None, "H is held");
        assert_eq!(next(&mut v, &mut t, 3000 * US), Some((8, 8)), "H, by time");
        assert_eq!(v.stats.bundles_closed[CLOSE_TIME], 1);
        check_bundles(&v, &t);

        // A chain held in one bundle merges, and the sync write releases it.
        let (mut v, mut t) = (sched(""), ReqTable::new());
        submit(&mut v, &mut t, 0, Op::Write, false, 8, 8);
        submit(&mut v, &mut t, 0, Op::Write, true, 16, 8);
        assert_eq!(next(&mut v, &mut t, 0), Some((8, 16)));
        assert_eq!(v.stats.bundles_closed[CLOSE_SYNC], 1);
        check_bundles(&v, &t);
        // One whose sectors would leave the bundle's erase block does not merge
        // (bundle_kb=8: blocks of 16 sectors; 16..24 is the next one).
        let (mut v, mut t) = (sched("bundle_kb=8"), ReqTable::new());
        submit(&mut v, &mut t, 0, Op::Write, false, 8, 8);
        submit(&mut v, &mut t, 0, Op::Write, true, 16, 8);
        assert_eq!(
            next(&mut v, &mut t, 0),
            Some((16, 8)),
            "the sync write alone"
        );
        assert_eq!(v.nr_held, 1);
        check_bundles(&v, &t);
    }

    #[test]
    fn writes_leave_a_tag_per_read_in_flight_while_a_reader_was_seen_in_the_last_10_ms() {
        // A device of 4 tags, write_depth 1: two reads were on the device at
        // once and completed at 0; sync writes then hold 4 - 2 = 2 tags until
        // 10 ms have passed without a read.
        let dev = DeviceInfo::flash(1 << 30, 4);
        let p = Params::parse_kv("hz=0,write_depth=1").unwrap();
        let mut v = Veloces::from_params(&p, &dev).unwrap();
        let mut t = ReqTable::new();
        submit(&mut v, &mut t, 0, Op::Read, true, 9000, 8);
        submit(&mut v, &mut t, 0, Op::Read, true, 9500, 8);
        let r1 = v.dispatch(&mut ctx(&mut t, 0)).expect("a read goes");
        let r2 = v.dispatch(&mut ctx(&mut t, 0)).expect("a read goes");
        for rq in [r1, r2] {
            v.completed(&mut ctx(&mut t, 0), rq);
            t.free_req(rq);
        }
        for i in 0..4 {
            submit(&mut v, &mut t, US, Op::Write, true, i * 1000, 8);
        }
        let mut w = Vec::new();
        for _ in 0..2 {
            w.push(
                v.dispatch(&mut ctx(&mut t, 2 * US))
                    .expect("within the share"),
            );
        }
        assert_eq!(
            v.dispatch(&mut ctx(&mut t, 2 * US)),
            None,
            "third write waits"
        );
        assert_eq!(v.stats.capped, 1);
        // A read arriving now goes at once, past the waiting writes.
        submit(&mut v, &mut t, 3 * US, Op::Read, true, 9100, 8);
        let r3 = v.dispatch(&mut ctx(&mut t, 3 * US)).expect("the read goes");
        assert_eq!(t.get(r3).sector, 9100);
        v.completed(&mut ctx(&mut t, 3 * US), r3);
        t.free_req(r3);
        // A write completes: one more may go; the fourth waits again.
        v.completed(&mut ctx(&mut t, 4 * US), w[0]);
        assert!(v.dispatch(&mut ctx(&mut t, 4 * US)).is_some());
        assert_eq!(v.dispatch(&mut ctx(&mut t, 4 * US)), None);
        // 10 ms after the last read completed, writes take every tag.
        assert_eq!(v.dispatch(&mut ctx(&mut t, 3 * US + 10 * MS - 1)), None);
        assert!(v.dispatch(&mut ctx(&mut t, 3 * US + 10 * MS)).is_some());
    }

    #[test]
    fn one_reader_at_depth_one_leaves_writes_all_tags_but_one() {
        // write_depth 2 on 4 tags: a reader keeping one read on the device
        // leaves writes 3 tags (more than write_depth).
        let dev = DeviceInfo::flash(1 << 30, 4);
        let p = Params::parse_kv("hz=0,write_depth=2").unwrap();
        let mut v = Veloces::from_params(&p, &dev).unwrap();
        let mut t = ReqTable::new();
        submit(&mut v, &mut t, 0, Op::Read, true, 9000, 8);
        assert!(v.dispatch(&mut ctx(&mut t, 0)).is_some());
        for i in 0..4 {
            submit(&mut v, &mut t, US, Op::Write, true, i * 1000, 8);
        }
        for _ in 0..3 {
            assert!(v.dispatch(&mut ctx(&mut t, US)).is_some());
        }
        assert_eq!(v.dispatch(&mut ctx(&mut t, US)), None);
    }

    #[test]
    fn slow_writes_keep_a_short_backlog_on_the_device_while_a_reader_is_about() {
        // 32 tags. A read alone spends `alone_ns` on the device; a read then
        // spends `read_ns` beside four writes, which complete one every `gap`
        // with others still on it: the pace. With a reader about, writes on
        // the device are then at most write_backlog_us / gap (at least
        // BACKLOG_MIN, 2) where reads beside writes took longer than the
        // fastest read by more than write_backlog_us; else every queued
        // write goes (the model's unit has no driver tags to run out of).
        let run = |params: &str, gap: Ns, alone_ns: Ns, read_ns: Ns| -> (usize, u64) {
            let dev = DeviceInfo::flash(1 << 30, 32);
            let p = Params::parse_kv(&format!("hz=0,{params}")).unwrap();
            let mut v = Veloces::from_params(&p, &dev).unwrap();
            let mut t = ReqTable::new();
            submit(&mut v, &mut t, 0, Op::Read, true, 70_000, 8);
            let ra = v.dispatch(&mut ctx(&mut t, 0)).expect("the lone read goes");
            v.completed(&mut ctx(&mut t, alone_ns), ra);
            t.free_req(ra);
            let t0 = alone_ns;
            for i in 0..4 {
                submit(&mut v, &mut t, t0, Op::Write, true, i * 1000, 8);
            }
            let mut w = Vec::new();
            for _ in 0..4 {
                w.push(v.dispatch(&mut ctx(&mut t, t0)).expect("writes go"));
            }
            submit(&mut v, &mut t, t0, Op::Read, true, 80_000, 8);
            let r0 = v.dispatch(&mut ctx(&mut t, t0)).expect("the read goes");
            t.get_mut(r0).dispatched = t0;
            v.completed(&mut ctx(&mut t, t0 + read_ns), r0);
            t.free_req(r0);
            for (i, rq) in w.into_iter().enumerate() {
                v.completed(&mut ctx(&mut t, t0 + read_ns + (i as u64 + 1) * gap), rq);
                t.free_req(rq);
            }
            let now = t0 + read_ns + 5 * gap;
            submit(&mut v, &mut t, now, Op::Read, true, 90_000, 8);
            let r = v.dispatch(&mut ctx(&mut t, now)).expect("the read goes");
            assert_eq!(t.get(r).op, Op::Read);
            for i in 0..40 {
                submit(&mut v, &mut t, now, Op::Write, true, 10_000 + i * 1000, 8);
            }
            let mut n = 0;
            while v.dispatch(&mut ctx(&mut t, now)).is_some() {
                n += 1;
            }
            (n, v.write_gap)
        };
        // Three gaps of 5 ms (the fourth completion left none on the device);
        // a read alone took 0.1 ms, beside the writes 3 ms: 2.9 ms more,
        // more than write_backlog_us's 2.
        assert_eq!(run("", 5 * MS, 100 * US, 3 * MS), (2, 5 * MS));
        // (params, gap, a read alone, a read beside writes, writes that go, why)
        for (params, gap, alone, read, want, why) in [
            ("write_backlog_us=0", 5 * MS, 100 * US, 3 * MS, 40, "off"),
            ("", 10 * US, 100 * US, 3 * MS, 40, "fast writes: no limit"),
            ("", 5 * MS, 100 * US, MS, 40, "reads that pass the writes"),
            // A slow device: reads take 3 ms alone as beside writes (null_blk
            // at 3 ms, a network volume): the writes cost the reader nothing.
            ("", 5 * MS, 3 * MS, 3 * MS, 40, "slow, not behind writes"),
            // 20 ms at 5 ms a write: 4 (the read is 29.9 ms longer than alone).
            (
                "write_backlog_us=20000",
                5 * MS,
                100 * US,
                30 * MS,
                4,
                "a longer window",
            ),
        ] {
            assert_eq!(run(params, gap, alone, read).0, want, "{why}");
        }
    }

    /// One 8-sector bio of I/O priority `ioprio`.
    fn prio_bio(op: Op, sync: bool, sector: u64, ioprio: u16) -> BioSpec {
        let mut spec = BioSpec::scripted(op, sync, sector, 8, sector);
        spec.pid = pid_of(op);
        spec.attrs.ioprio = ioprio;
        spec
    }

    #[test]
    fn rt_goes_first_and_idle_goes_once_it_waited_prio_aging_expire() {
        const RT_PRIO: u16 = ioprio_value(IOPRIO_CLASS_RT, 4);
        const IDLE_PRIO: u16 = ioprio_value(IOPRIO_CLASS_IDLE, 4);
        let mut v = sched("prio_aging_expire=50");
        let mut t = ReqTable::new();
        submit_spec(
            &mut v,
            &mut t,
            0,
            prio_bio(Op::Read, true, 500_000, IDLE_PRIO),
        );
        submit_spec(&mut v, &mut t, 0, prio_bio(Op::Read, true, 600_000, 0));
        // An RT read every millisecond: RT goes first, BE and IDLE wait ...
        let mut got = Vec::new();
        for ms in 0..60u64 {
            submit_spec(
                &mut v,
                &mut t,
                ms * MS,
                prio_bio(Op::Read, true, ms * 16, RT_PRIO),
            );
            got.push((ms, next(&mut v, &mut t, ms * MS).expect("something goes").0));
        }
        let idle = got.iter().find(|(_, s)| *s == 500_000).expect("IDLE went");
        let be = got.iter().find(|(_, s)| *s == 600_000).expect("BE went");
        // ... until each has waited 50 ms: BE (aged first) at 50, IDLE at 51.
        assert_eq!((be.0, idle.0), (50, 51), "{got:?}");
        assert_eq!((v.stats.aged, v.stats.class_dispatched), (2, [58, 1, 1]));
    }

    #[test]
    fn only_best_effort_async_writes_are_held() {
        let mut v = sched("hold_idle=1");
        let mut t = ReqTable::new();
        submit_spec(
            &mut v,
            &mut t,
            0,
            prio_bio(
                Op::Write,
                false,
                0,
                ioprio_value(crate::types::IOPRIO_CLASS_BE, 4),
            ),
        );
        submit_spec(
            &mut v,
            &mut t,
            0,
            prio_bio(Op::Write, false, 4096, ioprio_value(IOPRIO_CLASS_RT, 0)),
        );
        submit_spec(
            &mut v,
            &mut t,
            0,
            prio_bio(Op::Write, false, 8192, ioprio_value(IOPRIO_CLASS_IDLE, 0)),
        );
        assert_eq!(v.nr_held, 1, "the BE write is held");
        assert_eq!(next(&mut v, &mut t, 0), Some((4096, 8)), "RT first");
        assert_eq!(
            next(&mut v, &mut t, 0),
            Some((8192, 8)),
            "then IDLE, the bundle waits"
        );
        assert_eq!(next(&mut v, &mut t, 0), None);
    }

    /// Insert `spec` at `now` (no bio merge) and return its request.
    /// [`insert_rq`] of one 8-sector bio of I/O priority `ioprio` ([`prio_bio`]).
    fn insert_prio(
        v: &mut Veloces,
        t: &mut ReqTable,
        now: Ns,
        op: Op,
        sync: bool,
        sector: u64,
        ioprio: u16,
    ) -> ReqId {
        insert_rq(v, t, now, prio_bio(op, sync, sector, ioprio))
    }

    fn insert_rq(v: &mut Veloces, t: &mut ReqTable, now: Ns, spec: BioSpec) -> ReqId {
        let bio = t.alloc_bio(spec, now);
        let rq = t.alloc_req(bio, now);
        v.insert(&mut ctx(t, now), rq);
        rq
    }

    #[test]
    fn a_reader_holds_back_only_writes_of_its_class_or_lower() {
        const RT_PRIO: u16 = ioprio_value(IOPRIO_CLASS_RT, 4);
        const BE_PRIO: u16 = ioprio_value(crate::types::IOPRIO_CLASS_BE, 4);
        const IDLE_PRIO: u16 = ioprio_value(IOPRIO_CLASS_IDLE, 4);
        // Anticipation on a depth-1 device (as conformance 33): a reader's
        // read completes, the first write goes and measures the writes'
        // turn; when it completes, does the second write wait for the
        // reader's next read? Only if it is of the reader's class or lower.
        // (Async writes with a priority cannot be made in the lab: no
        // conformance scenario can give an RT async write.)
        for (reader, writer, waits) in [
            (BE_PRIO, 0, true),
            (RT_PRIO, IDLE_PRIO, true),
            (BE_PRIO, RT_PRIO, false),
            (IDLE_PRIO, 0, false),
            (IDLE_PRIO, RT_PRIO, false),
        ] {
            let mut v = sched("bundling=0");
            let mut t = ReqTable::new();
            let r1 = insert_prio(&mut v, &mut t, 0, Op::Read, true, 90_000, reader);
            assert_eq!(v.dispatch(&mut ctx(&mut t, 0)), Some(r1));
            v.completed(&mut ctx(&mut t, 1000 * US), r1);
            let r2 = insert_prio(&mut v, &mut t, 1100 * US, Op::Read, true, 91_000, reader);
            assert_eq!(v.dispatch(&mut ctx(&mut t, 1100 * US)), Some(r2));
            let w1 = insert_prio(&mut v, &mut t, 1200 * US, Op::Write, false, 0, writer);
            let w2 = insert_prio(&mut v, &mut t, 1210 * US, Op::Write, false, 1000, writer);
            v.completed(&mut ctx(&mut t, 2100 * US), r2);
            assert_eq!(
                v.dispatch(&mut ctx(&mut t, 2100 * US)),
                Some(w1),
                "the first write goes"
            );
            v.completed(&mut ctx(&mut t, 3100 * US), w1);
            let got = v.dispatch(&mut ctx(&mut t, 3100 * US));
            let case = format!("reader {reader:#x}, writer {writer:#x}");
            if waits {
                assert_eq!(got, None, "{case}: the write waits for the reader");
                assert_eq!(v.stats.anticipated, 1, "{case}");
            } else {
                assert_eq!(got, Some(w2), "{case}: the write goes at once");
                assert_eq!(v.stats.anticipated, 0, "{case}");
            }
        }
    }

    #[test]
    fn the_write_share_applies_only_to_writes_of_the_readers_class_or_lower() {
        const RT_PRIO: u16 = ioprio_value(IOPRIO_CLASS_RT, 4);
        const IDLE_PRIO: u16 = ioprio_value(IOPRIO_CLASS_IDLE, 4);
        let dev = DeviceInfo::flash(1 << 30, 4);
        let p = Params::parse_kv("hz=0,write_depth=1,anticipate_us=0").unwrap();
        // Three reads on a 4-tag device: BE writes may hold 4 - 3 = 1 tag.
        for (reader, writer, capped) in [
            (0, 0, true),
            (RT_PRIO, 0, true),
            (0, RT_PRIO, false),
            (IDLE_PRIO, 0, false),
            (IDLE_PRIO, IDLE_PRIO, true),
        ] {
            let mut v = Veloces::from_params(&p, &dev).unwrap();
            let mut t = ReqTable::new();
            for s in 0..3 {
                let r = insert_prio(&mut v, &mut t, 0, Op::Read, true, 90_000 + s * 1000, reader);
                assert_eq!(v.dispatch(&mut ctx(&mut t, 0)), Some(r));
            }
            let w1 = insert_prio(&mut v, &mut t, 100 * US, Op::Write, true, 0, writer);
            assert_eq!(v.dispatch(&mut ctx(&mut t, 100 * US)), Some(w1));
            let w2 = insert_prio(&mut v, &mut t, 200 * US, Op::Write, true, 1000, writer);
            let got = v.dispatch(&mut ctx(&mut t, 200 * US));
            let case = format!("reader {reader:#x}, writer {writer:#x}");
            if capped {
                assert_eq!((got, v.stats.capped), (None, 1), "{case}");
            } else {
                assert_eq!((got, v.stats.capped), (Some(w2), 0), "{case}");
            }
        }
    }

    #[test]
    fn async_depth_limits_every_write_and_defaults_to_half() {
        let bio = |op, sync| BioSpec::scripted(op, sync, 0, 8, 0);
        let v = sched("");
        assert_eq!(v.limit_depth(&bio(Op::Write, true), 0, 64), Some(32));
        assert_eq!(v.limit_depth(&bio(Op::Read, true), 0, 64), None);
        // A depth-1 device's 2 scheduler tags: one for writes, one kept for a reader (the
        // module on 6.1 takes this share of the map's single word: modsuite tag_reserve).
        assert_eq!(v.limit_depth(&bio(Op::Write, true), 0, 2), Some(1));
        let mut v = sched("async_depth=8");
        assert_eq!(v.limit_depth(&bio(Op::Write, true), 0, 64), Some(8));
        assert_eq!(v.limit_depth(&bio(Op::Write, false), 0, 4), Some(4));
        // A reader's own write (its task read less than 10 ms ago) is not
        // limited; another task's, or the same task's 10 ms later, is.
        v.note_reader(1, 0);
        assert_eq!(v.limit_depth(&bio(Op::Write, true), MS, 64), None);
        assert_eq!(v.limit_depth(&bio(Op::Write, false), MS, 64), None);
        let mut other = bio(Op::Write, true);
        other.pid = 2;
        assert_eq!(v.limit_depth(&other, MS, 64), Some(8));
        assert_eq!(v.limit_depth(&bio(Op::Write, true), 10 * MS, 64), Some(8));
    }

    #[test]
    fn an_async_write_spanning_erase_blocks_is_not_held() {
        // bundle_kb=64: erase blocks of 128 sectors; 120..136 crosses one.
        let (mut v, mut t) = (sched("bundle_kb=64,hold_idle=1"), ReqTable::new());
        submit(&mut v, &mut t, 0, Op::Write, false, 120, 16);
        submit(&mut v, &mut t, 0, Op::Write, false, 256, 8);
        submit(&mut v, &mut t, 0, Op::Write, true, 1016, 16);
        assert_eq!(v.stats.spanning, 1, "only async writes count");
        assert_eq!(v.stats.bundles_opened, 1, "256 is held, 120 is not");
        assert_eq!(v.stats()["spanning"], 1);
        assert_eq!(next(&mut v, &mut t, 0), Some((120, 16)));
        assert_eq!(next(&mut v, &mut t, 0), Some((1016, 16)));
        assert_eq!(next(&mut v, &mut t, 0), None, "256 is held");
        check_bundles(&v, &t);
    }

    #[test]
    fn a_write_from_a_task_that_read_in_the_last_10_ms_is_its_own() {
        let mut v = sched("");
        let mut t = ReqTable::new();
        // Nine tasks read, pid 1 first: the table keeps the last eight.
        for pid in 1..=9u32 {
            let at = u64::from(pid) * US;
            submit_as(
                &mut v,
                &mut t,
                at,
                pid,
                Op::Read,
                true,
                u64::from(pid) * 64,
                8,
            );
        }
        assert!(!v.is_reader(1, 10 * US), "pushed out");
        assert!(v.is_reader(2, 10 * US) && v.is_reader(9, 10 * US));
        assert!(!v.is_reader(9, 9 * US + 10 * MS), "10 ms on");
        // Reading again moves a task to the front: 2 stays, 3 goes.
        submit_as(&mut v, &mut t, 11 * US, 2, Op::Read, true, 2048, 8);
        submit_as(&mut v, &mut t, 12 * US, 10, Op::Read, true, 4096, 8);
        assert!(v.is_reader(2, 13 * US) && !v.is_reader(3, 13 * US));
        // Task 2's async write is its own: not held, a write someone waits on.
        submit_as(&mut v, &mut t, 20 * US, 2, Op::Write, false, 10_000, 8);
        assert_eq!((v.nr_held, v.sync_writes, v.stats.own_writes), (0, 1, 1));
        // Task 42 never read: its write is held; so is task 0's (unknown).
        submit_as(&mut v, &mut t, 20 * US, 42, Op::Write, false, 20_000, 8);
        submit_as(&mut v, &mut t, 20 * US, 0, Op::Write, false, 30_000, 8);
        assert_eq!((v.nr_held, v.stats.own_writes), (2, 1));
    }

    #[test]
    fn a_write_is_its_tasks_own_only_within_read_active_us() {
        // 1 ms instead of 10: the lab's dilated devices scale it as every time tunable.
        let mut v = sched("read_active_us=1000");
        let mut t = ReqTable::new();
        submit_as(&mut v, &mut t, 0, 2, Op::Read, true, 64, 8);
        assert!(v.is_reader(2, MS - 1) && !v.is_reader(2, MS));
        submit_as(&mut v, &mut t, MS / 2, 2, Op::Write, false, 10_000, 8);
        submit_as(&mut v, &mut t, 2 * MS, 2, Op::Write, false, 20_000, 8);
        assert_eq!(
            (v.nr_held, v.stats.own_writes),
            (1, 1),
            "the second is held"
        );
    }

    #[test]
    fn reads_end_a_batch_of_a_readers_own_writes_only_where_writes_do_not_slow_reads() {
        // (the writes' task, reads' mean time beside writes in us, WS2 before R1)
        for (writer, wait_us, want_write) in [
            (1, 201, true),
            (1, 200, false),
            (1, 0, false),
            (2, 300, false),
        ] {
            let case = format!("writer task {writer}, reads beside writes {wait_us} us");
            let mut v = sched("bundling=0");
            let mut t = ReqTable::new();
            let ins = |v: &mut Veloces, t: &mut ReqTable, now: Ns, pid: u32, op: Op, sector| {
                let mut spec = BioSpec::scripted(op, true, sector, 8, sector);
                spec.pid = pid;
                let bio = t.alloc_bio(spec, now);
                let rq = t.alloc_req(bio, now);
                v.insert(&mut ctx(t, now), rq);
                rq
            };
            let r0 = ins(&mut v, &mut t, 0, 1, Op::Read, 90_000);
            assert_eq!(v.dispatch(&mut ctx(&mut t, 0)), Some(r0));
            let ws1 = ins(&mut v, &mut t, 10 * US, writer, Op::Write, 0);
            let ws2 = ins(&mut v, &mut t, 20 * US, writer, Op::Write, 64);
            // The fastest read took 100 us; reads beside writes `wait_us` on average.
            (v.read_fast, v.read_wait) = (100 * US, wait_us * US);
            v.completed(&mut ctx(&mut t, 1000 * US), r0);
            assert_eq!(v.dispatch(&mut ctx(&mut t, 1000 * US)), Some(ws1), "{case}");
            let r1 = ins(&mut v, &mut t, 1500 * US, 1, Op::Read, 91_000);
            v.completed(&mut ctx(&mut t, 2000 * US), ws1);
            let want = if want_write { ws2 } else { r1 };
            assert_eq!(
                v.dispatch(&mut ctx(&mut t, 2000 * US)),
                Some(want),
                "{case}"
            );
        }
    }

    #[test]
    fn close_reasons_balance_the_bundles_opened_after_a_random_run() {
        for seed in 0..20 {
            let mut rng = Pcg64Mcg::seed_from_u64(seed);
            let (mut v, mut t) = (
                sched("bundle_kb=8,bundle_expire_us=300,write_expire=2,read_expire=1"),
                ReqTable::new(),
            );
            let mut now = 0;
            for _ in 0..400 {
                now += rng.gen_range(0..100) * US;
                let (op, sync) = match rng.gen_range(0..10) {
                    0..=2 => (Op::Read, true),
                    3..=7 => (Op::Write, false),
                    _ => (Op::Write, true),
                };
                let sector = rng.gen_range(0..64) * 4;
                let sectors = rng.gen_range(1..=4) * 4;
                // A fifth of the writes are the reader's own.
                let pid = if rng.gen_bool(0.2) { 1 } else { pid_of(op) };
                submit_as(&mut v, &mut t, now, pid, op, sync, sector, sectors);
                if rng.gen_bool(0.4) {
                    next(&mut v, &mut t, now);
                }
                check_bundles(&v, &t);
                // Anticipation's count of queued sync writes: those queued as
                // sync (the module's REQ_SYNC; a merge keeps the survivor's
                // own flag), merges included (one merged while being
                // inserted was never queued).
                let queued_sync = v
                    .cores
                    .iter()
                    .flat_map(|c| c.fifo_ids(WRITE))
                    .filter(|&id| v.privs[id as usize].sync_queued)
                    .count();
                assert_eq!(v.sync_writes, queued_sync as u64, "seed {seed}");
            }
            while v.has_work() {
                now += MS;
                while next(&mut v, &mut t, now).is_some() {}
            }
            check_bundles(&v, &t);
            assert!(v.open.is_empty(), "seed {seed}");
            assert_eq!(v.sync_writes, 0, "seed {seed}");
            assert!(v.stats.bundles_opened > 0, "seed {seed}");
            assert_eq!(v.stats.bundles_closed[CLOSE_MERGED], 0, "seed {seed}");
            let s = v.stats();
            let closed: u64 = CLOSE_NAMES
                .iter()
                .map(|n| s["bundles_closed"][n].as_u64().unwrap())
                .sum();
            assert_eq!(s["bundles_opened"].as_u64(), Some(closed), "seed {seed}");
        }
    }
}
