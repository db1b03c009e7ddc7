//! A device model served to a real kernel: the core every transport shares
//! (ublk through `sim/ublk`, NBD through the nbdkit plugin in `sim/nbdkit`;
//! see docs/lab.md).
//!
//! A transport hands each request to [`Served::io`] (blocking, on a thread
//! per request: NBD's), or to [`Served::try_start`] and [`Served::try_finish`]
//! (an event loop's pieces of the same: ublk's), which
//! - admits it when the model has a free tag (the model's queue depth;
//!   requests beyond it wait in arrival order, as in a device's submission
//!   queue; an event loop's are tried again, and start when a tag was
//!   freed), at model time `now` = wall time since start / `dilation`;
//! - submits it to the model ([`Device::submit_tagged`], or
//!   [`Device::discard`]), and waits until the model's completion time
//!   times `dilation` in wall time (asking [`Device::recheck`] for devices
//!   that reorder the commands they hold, as the engine does);
//! - keeps the data: writes land in a sparse store ([`Store`]: memory, or a
//!   backing file) and reads return what was written, zeros elsewhere.
//!
//! The guest runs under emulation, so a 60 µs flash read is below its own
//! per-I/O overhead; `dilation` stretches model time so that the model, not
//! the emulated machine, sets the pace. Every figure in [`Served::counters`]
//! is in model time.
//!
//! The dilation can change while the device serves ([`Served::set_dilation`];
//! a transport's control file, see [`CounterWriter::start`]): model time is
//! piecewise, each piece at its own dilation, and never steps back. An
//! experiment sets its device up (mkfs, file sets) at a low dilation, where
//! the device waits on the guest anyway, and measures at the one that keeps
//! the device busy.

use crate::config::Component;
use crate::device::{self, Device};
use crate::types::DeviceInfo;
use crate::types::{Ns, Op, ReqId, Request, SECTOR};
pub use anyhow::Error;
use anyhow::{bail, Context, Result};
use hdrhistogram::Histogram;
use rustc_hash::FxHashMap;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, RwLock};
use std::time::{Duration, Instant};

/// What a request asks of the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Read,
    Write,
    Discard,
    /// An empty flush (REQ_PREFLUSH without data: NBD_CMD_FLUSH).
    Flush,
}

const KINDS: [(Kind, &str); 4] = [
    (Kind::Read, "read"),
    (Kind::Write, "write"),
    (Kind::Discard, "discard"),
    (Kind::Flush, "flush"),
];

/// How the served device is built.
#[derive(Clone, Debug)]
pub struct Options {
    /// Model and options as vsim takes them: `ssd:preset=tlc_nvme,size=2g`.
    pub device: String,
    /// Wall time per unit of model time (>= 1 under emulation).
    pub dilation: f64,
    pub seed: u64,
    /// Keep the data in this file (sparse) instead of memory.
    pub backing: Option<PathBuf>,
}

/// The device's data: sparse, zeros where nothing was written.
pub enum Store {
    /// 64 KiB chunks allocated on first write (a map: a 4 TB disk model
    /// holds only what was written).
    Mem(Mutex<FxHashMap<u64, Box<[u8]>>>),
    File(File),
}

const CHUNK: u64 = 64 * 1024;

impl Store {
    fn mem() -> Store {
        Store::Mem(Mutex::new(FxHashMap::default()))
    }

    fn file(path: &Path, size: u64) -> Result<Store> {
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .with_context(|| format!("cannot open the backing file {}", path.display()))?;
        f.set_len(size)
            .with_context(|| format!("cannot size {} to {size} bytes", path.display()))?;
        Ok(Store::File(f))
    }

    /// Split `[off, off + len)` into (chunk, offset in chunk, bytes) pieces.
    fn pieces(off: u64, len: usize) -> impl Iterator<Item = (u64, usize, usize, usize)> {
        let mut done = 0usize;
        std::iter::from_fn(move || {
            if done >= len {
                return None;
            }
            let at = off + done as u64;
            let (c, o) = (at / CHUNK, (at % CHUNK) as usize);
            let n = (CHUNK as usize - o).min(len - done);
            let piece = (c, o, n, done);
            done += n;
            Some(piece)
        })
    }

    pub fn read(&self, buf: &mut [u8], off: u64) -> Result<()> {
        match self {
            Store::Mem(m) => {
                let chunks = lock(m);
                for (c, o, n, at) in Self::pieces(off, buf.len()) {
                    let dst = &mut buf[at..at + n];
                    match chunks.get(&c) {
                        Some(data) => dst.copy_from_slice(&data[o..o + n]),
                        None => dst.fill(0),
                    }
                }
                Ok(())
            }
            Store::File(f) => f.read_exact_at(buf, off).context("backing file read"),
        }
    }

    pub fn write(&self, buf: &[u8], off: u64) -> Result<()> {
        match self {
            Store::Mem(m) => {
                let mut chunks = lock(m);
                for (c, o, n, at) in Self::pieces(off, buf.len()) {
                    let data = chunks
                        .entry(c)
                        .or_insert_with(|| vec![0u8; CHUNK as usize].into());
                    data[o..o + n].copy_from_slice(&buf[at..at + n]);
                }
                Ok(())
            }
            Store::File(f) => f.write_all_at(buf, off).context("backing file write"),
        }
    }

    /// Forget `[off, off + len)`: reads of it return zeros.
    pub fn discard(&self, off: u64, len: u64) -> Result<()> {
        match self {
            Store::Mem(m) => {
                let mut chunks = lock(m);
                for (c, o, n, _) in Self::pieces(off, len as usize) {
                    if n == CHUNK as usize {
                        chunks.remove(&c);
                    } else if let Some(data) = chunks.get_mut(&c) {
                        data[o..o + n].fill(0);
                    }
                }
                Ok(())
            }
            Store::File(f) => {
                use std::os::fd::AsRawFd;
                // SAFETY: fallocate on a file descriptor we own; no memory is passed.
                let r = unsafe {
                    libc::fallocate(
                        f.as_raw_fd(),
                        libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
                        off as libc::off_t,
                        len as libc::off_t,
                    )
                };
                if r != 0 {
                    let zeros = vec![0u8; len.min(1 << 20) as usize];
                    let mut at = 0;
                    while at < len {
                        let n = (len - at).min(zeros.len() as u64) as usize;
                        f.write_all_at(&zeros[..n], off + at)
                            .context("backing file discard")?;
                        at += n as u64;
                    }
                }
                Ok(())
            }
        }
    }

    /// Bytes of data held in memory (0 for a backing file).
    pub fn resident_bytes(&self) -> u64 {
        match self {
            Store::Mem(m) => lock(m).len() as u64 * CHUNK,
            Store::File(_) => 0,
        }
    }
}

fn check_dilation(d: f64) -> Result<()> {
    if !(d.is_finite() && d > 0.0) {
        bail!("dilation must be a positive number, not {d}");
    }
    Ok(())
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A transport thread that panicked must not take the device down with it.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Per kind of request: count, bytes and model-time latency.
struct KindStats {
    count: u64,
    bytes: u64,
    lat_ns: Histogram<u64>,
}

impl KindStats {
    fn new() -> KindStats {
        KindStats {
            count: 0,
            bytes: 0,
            lat_ns: Histogram::new_with_bounds(1, 3_600_000_000_000, 3)
                .unwrap_or_else(|_| Histogram::new(3).expect("histogram")),
        }
    }

    fn json(&self) -> serde_json::Value {
        let h = &self.lat_ns;
        let us = |q: f64| h.value_at_quantile(q) as f64 / 1e3;
        serde_json::json!({
            "count": self.count,
            "bytes": self.bytes,
            "lat_us": if self.count == 0 { serde_json::Value::Null } else { serde_json::json!({
                "mean": h.mean() / 1e3, "p50": us(0.5), "p99": us(0.99), "p999": us(0.999),
                "max": h.max() as f64 / 1e3,
            })},
        })
    }
}

struct State {
    dev: Box<dyn Device>,
    /// Latest model time handed to the device (kept monotonic).
    now: Ns,
    /// Free tags with the model time each was freed.
    free_tags: Vec<(ReqId, Ns)>,
    next_ticket: u64,
    serving: u64,
    /// Requests asleep on `admitted` (a wake-up with none costs a system call).
    waiting: u32,
    in_flight: u32,
    busy_ns: Ns,
    busy_since: Ns,
    kinds: [KindStats; 4],
    errors: u64,
}

const PAGE: u64 = 4096;
/// The largest request a served device takes where its model names none.
const DEFAULT_MAX_IO: u64 = 1 << 20;
const MULTI_QUEUE_DEPTH: u32 = 64;
const MAX_QUEUES: u32 = 16;
/// ublk's UBLK_MAX_QUEUE_DEPTH.
const MAX_QUEUE_DEPTH: u32 = 4096;

/// Queue limits of a served device, for a transport that carries them (ublk:
/// `ublk_param_basic` and `ublk_param_discard`); NBD carries none of them.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Limits {
    /// Hardware queues, and tags per queue.
    pub queues: u32,
    pub depth: u32,
    pub logical_block: u32,
    pub physical_block: u32,
    pub io_min: u32,
    /// A power of two: the model's optimal I/O size or erase block where
    /// that is one, else the page.
    pub io_opt: u32,
    pub max_io_bytes: u32,
    /// `None`: the model takes no discards.
    pub discard_granularity: Option<u32>,
    pub rotational: bool,
    pub volatile_cache: bool,
    pub fua: bool,
}

/// Model time against wall time since the last change of dilation: model
/// time `model` at wall instant `wall`, then `dilation` wall ns per model ns.
#[derive(Clone, Copy, Debug)]
struct Clock {
    wall: Instant,
    model: Ns,
    dilation: f64,
    switches: u64,
}

impl Clock {
    fn model_at(&self, t: Instant) -> Ns {
        self.model
            + (t.saturating_duration_since(self.wall).as_nanos() as f64 / self.dilation) as Ns
    }
}

/// The longest a request waits (a sleep here, a transport's timeout) before
/// it looks at the clock again (a change of dilation meanwhile moves its
/// wall-time completion).
pub const SLEEP_SLICE: Duration = Duration::from_millis(20);

/// A request the model has admitted ([`Served::try_start`]): its tag, its
/// start, and the model time it is due at.
#[derive(Debug)]
pub struct Started {
    tag: ReqId,
    kind: Kind,
    len: u64,
    start: Ns,
    /// When the model completes it (moved by [`Served::try_finish`] where the
    /// device reorders the commands it holds).
    pub due: Ns,
}

/// A device model served in real time (see the module comment).
pub struct Served {
    t0: Instant,
    clock: RwLock<Clock>,
    spec: String,
    name: String,
    info: DeviceInfo,
    discard: bool,
    volatile_cache: bool,
    state: Mutex<State>,
    admitted: Condvar,
    store: Store,
}

impl Served {
    pub fn new(o: &Options) -> Result<Served> {
        check_dilation(o.dilation)?;
        let c = Component::parse(&o.device)?;
        let dev = device::make(&c.name, &c.params, o.seed)
            .with_context(|| format!("device '{}'", o.device))?;
        let info = dev.info();
        let size = info.capacity_sectors * SECTOR;
        if size == 0 {
            bail!("device '{}' has no capacity", o.device);
        }
        let store = match &o.backing {
            Some(p) => Store::file(p, size)?,
            None => Store::mem(),
        };
        let depth = info.queue_depth.max(1);
        let t0 = Instant::now();
        Ok(Served {
            t0,
            clock: RwLock::new(Clock {
                wall: t0,
                model: 0,
                dilation: o.dilation,
                switches: 0,
            }),
            spec: o.device.clone(),
            name: dev.name().to_string(),
            discard: dev.supports_discard(),
            volatile_cache: dev.volatile_cache(),
            info,
            state: Mutex::new(State {
                dev,
                now: 0,
                free_tags: (0..depth).rev().map(|t| (t, 0)).collect(),
                next_ticket: 0,
                serving: 0,
                waiting: 0,
                in_flight: 0,
                busy_ns: 0,
                busy_since: 0,
                kinds: std::array::from_fn(|_| KindStats::new()),
                errors: 0,
            }),
            admitted: Condvar::new(),
            store,
        })
    }

    pub fn size_bytes(&self) -> u64 {
        self.info.capacity_sectors * SECTOR
    }

    pub fn info(&self) -> &DeviceInfo {
        &self.info
    }

    pub fn supports_discard(&self) -> bool {
        self.discard
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    fn clock(&self) -> Clock {
        *self.clock.read().unwrap_or_else(|e| e.into_inner())
    }

    /// Model time now: the model time of the last change of dilation plus
    /// the wall time since, over the dilation.
    pub fn model_now(&self) -> Ns {
        self.clock().model_at(Instant::now())
    }

    /// The wall time per unit of model time now.
    pub fn dilation(&self) -> f64 {
        self.clock().dilation
    }

    /// Change the dilation from now on; model time goes on from where it is
    /// (requests in flight complete at their model times, at the new pace).
    pub fn set_dilation(&self, dilation: f64) -> Result<()> {
        check_dilation(dilation)?;
        let mut c = self.clock.write().unwrap_or_else(|e| e.into_inner());
        if c.dilation != dilation {
            let now = Instant::now();
            *c = Clock {
                wall: now,
                model: c.model_at(now),
                dilation,
                switches: c.switches + 1,
            };
        }
        Ok(())
    }

    /// Wall time until model time `t` at the dilation now (zero once it is
    /// reached).
    pub fn wall_until(&self, t: Ns) -> Duration {
        let c = self.clock();
        let m = c.model_at(Instant::now());
        if m >= t {
            Duration::ZERO
        } else {
            Duration::from_nanos(((t - m) as f64 * c.dilation) as u64)
        }
    }

    fn sleep_until(&self, t: Ns) {
        loop {
            let wall = self.wall_until(t);
            if wall.is_zero() {
                return;
            }
            std::thread::sleep(wall.min(SLEEP_SLICE));
        }
    }

    /// The sectors a request covers, checked against the device.
    fn sectors(&self, kind: Kind, offset: u64, len: u64) -> Result<(u64, u64)> {
        let end = offset
            .checked_add(len)
            .context("offset + length overflows")?;
        if end > self.size_bytes() {
            bail!(
                "request [{offset}, {end}) beyond the device's {} bytes",
                self.size_bytes()
            );
        }
        if kind == Kind::Discard && !self.discard {
            bail!("device {} takes no discards", self.name);
        }
        let sector = offset / SECTOR;
        Ok((sector, end.div_ceil(SECTOR) - sector))
    }

    /// Serve one request through the model: wait for a tag, submit, sleep
    /// until the model completes it. Returns its latency in model time.
    /// (Data is the transport's: [`Served::read`], [`Served::write`].)
    pub fn io(&self, kind: Kind, offset: u64, len: u64, fua: bool) -> Result<Ns> {
        let (sector, sectors) = self.sectors(kind, offset, len)?;
        let arrival = self.model_now();
        let mut st = lock(&self.state);
        let ticket = st.next_ticket;
        st.next_ticket += 1;
        let mut waited = false;
        while st.serving != ticket || st.free_tags.is_empty() {
            waited = true;
            st.waiting += 1;
            st = self.admitted.wait(st).unwrap_or_else(|e| e.into_inner());
            st.waiting -= 1;
        }
        let mut r = self.submit(
            &mut st,
            waited.then_some(arrival),
            kind,
            sector,
            sectors,
            len,
            fua,
        );
        drop(st);
        loop {
            self.sleep_until(r.due);
            if let Some(lat) = self.try_finish(&mut r) {
                return Ok(lat);
            }
        }
    }

    /// Admit and submit a request without waiting: `None` when the model has
    /// no free tag (or requests wait for one already), to be tried again.
    /// `waiting_since`: on a retry, the model time it first arrived
    /// ([`Served::model_now`]); it then starts when a tag was freed, as with
    /// [`Served::io`]. The transport waits [`Served::wall_until`] the
    /// request's `due` time and calls [`Served::try_finish`].
    pub fn try_start(
        &self,
        kind: Kind,
        offset: u64,
        len: u64,
        fua: bool,
        waiting_since: Option<Ns>,
    ) -> Result<Option<Started>> {
        let (sector, sectors) = self.sectors(kind, offset, len)?;
        let mut st = lock(&self.state);
        if st.serving != st.next_ticket || st.free_tags.is_empty() {
            return Ok(None);
        }
        st.next_ticket += 1;
        Ok(Some(self.submit(
            &mut st,
            waiting_since,
            kind,
            sector,
            sectors,
            len,
            fua,
        )))
    }

    /// Take the next free tag for the request holding the current ticket and
    /// submit it to the model.
    #[allow(clippy::too_many_arguments)]
    fn submit(
        &self,
        st: &mut State,
        waited_since: Option<Ns>,
        kind: Kind,
        sector: u64,
        sectors: u64,
        len: u64,
        fua: bool,
    ) -> Started {
        st.serving += 1;
        let (tag, freed) = st.free_tags.pop().expect("a free tag");
        if st.waiting > 0 {
            self.admitted.notify_all();
        }
        // A request that waited for a tag starts when the tag was freed, as the
        // device would start its next command: not when this thread woke up
        // (under emulation that is late, and the device would idle meanwhile).
        let now = match waited_since {
            Some(arrival) => arrival.max(freed).max(st.now),
            None => self.model_now().max(st.now),
        };
        st.now = now;
        if st.in_flight == 0 {
            st.busy_since = now;
        }
        st.in_flight += 1;
        let due = match kind {
            Kind::Discard => st.dev.discard(sector, sectors, now).unwrap_or(now),
            _ => {
                let (op, n) = match kind {
                    Kind::Read => (Op::Read, sectors),
                    Kind::Write => (Op::Write, sectors),
                    _ => (Op::Write, 0),
                };
                let mut rq = Request::standalone(op, op == Op::Read || fua, sector, n as u32);
                rq.attrs.fua = fua && kind == Kind::Write;
                rq.attrs.preflush = kind == Kind::Flush;
                st.dev.submit_tagged(tag, &rq, now)
            }
        };
        Started {
            tag,
            kind,
            len,
            start: now,
            due,
        }
    }

    /// Complete a started request if the model has reached its `due` time
    /// (and the device does not move it: [`Device::recheck`], which moves
    /// `due`). Returns its latency in model time, or `None` to wait more.
    pub fn try_finish(&self, r: &mut Started) -> Option<Ns> {
        if self.model_now() < r.due {
            return None;
        }
        let mut st = lock(&self.state);
        let at = r.due.max(st.now);
        st.now = at;
        if let Some(t2) = st.dev.recheck(r.tag, at) {
            r.due = t2.max(at + 1);
            return None;
        }
        st.free_tags.push((r.tag, at));
        st.in_flight -= 1;
        if st.in_flight == 0 {
            st.busy_ns += at - st.busy_since;
        }
        let k = &mut st.kinds[kind_index(r.kind)];
        k.count += 1;
        k.bytes += if r.kind == Kind::Flush { 0 } else { r.len };
        let _ = k.lat_ns.record((at - r.start).max(1));
        if st.waiting > 0 {
            self.admitted.notify_all();
        }
        Some(at - r.start)
    }

    /// A read: timed by the model, then the data.
    pub fn read(&self, buf: &mut [u8], offset: u64) -> Result<Ns> {
        let lat = self.io(Kind::Read, offset, buf.len() as u64, false)?;
        self.store.read(buf, offset)?;
        Ok(lat)
    }

    /// A write: the data lands, then the model times it.
    pub fn write(&self, buf: &[u8], offset: u64, fua: bool) -> Result<Ns> {
        self.write_data(buf, offset)?;
        self.io(Kind::Write, offset, buf.len() as u64, fua)
    }

    /// A write's data lands in the store (checked against the device's end),
    /// before the model times it.
    pub fn write_data(&self, buf: &[u8], offset: u64) -> Result<()> {
        self.check_range(offset, buf.len() as u64)?;
        self.store.write(buf, offset)
    }

    pub fn discard(&self, offset: u64, len: u64) -> Result<Ns> {
        let lat = self.io(Kind::Discard, offset, len, false)?;
        self.store.discard(offset, len)?;
        Ok(lat)
    }

    pub fn flush(&self) -> Result<Ns> {
        self.io(Kind::Flush, 0, 0, false)
    }

    fn check_range(&self, offset: u64, len: u64) -> Result<()> {
        match offset.checked_add(len) {
            Some(end) if end <= self.size_bytes() => Ok(()),
            _ => bail!("request at {offset} of {len} bytes beyond the device's end"),
        }
    }

    /// Count a request the transport failed (it is in no other figure).
    pub fn count_error(&self) {
        lock(&self.state).errors += 1;
    }

    /// One 4 KiB write in the middle of the device and its read-back, each
    /// on an idle device: their latencies in model time (write, read). The
    /// model's typical service time, for choosing a dilation.
    pub fn probe_4k(&self) -> Result<(Ns, Ns)> {
        let offset = (self.size_bytes() / 2) & !4095;
        let mut buf = vec![0x5au8; 4096];
        let write = self.write(&buf, offset, false)?;
        self.flush()?;
        let read = self.read(&mut buf, offset)?;
        Ok((write, read))
    }

    /// The queue limits a transport that carries them (ublk) gives the
    /// kernel for this model; `cpus`: the hardware queues a multi-queue
    /// device would have (one per CPU).
    pub fn limits(&self, cpus: u32) -> Limits {
        let i = &self.info;
        let depth = i.queue_depth.max(1);
        // A device of 64 tags or more is an NVMe-like one: a queue per CPU,
        // the model's tags shared among them (the model admits in arrival
        // order when more are in flight). Cards and disks have one queue.
        let queues = if depth >= MULTI_QUEUE_DEPTH {
            cpus.clamp(1, MAX_QUEUES)
        } else {
            1
        };
        let erase = i.erase_block_sectors.map(|s| s as u64 * SECTOR);
        let opt = i
            .optimal_io_sectors
            .map(|s| s as u64 * SECTOR)
            .or(erase)
            .filter(|b| b.is_power_of_two() && *b >= PAGE)
            .unwrap_or(PAGE);
        Limits {
            queues,
            depth: depth.div_ceil(queues).min(MAX_QUEUE_DEPTH),
            logical_block: SECTOR as u32,
            physical_block: PAGE as u32,
            io_min: PAGE as u32,
            io_opt: opt as u32,
            max_io_bytes: i
                .max_hw_sectors
                .map(|s| s as u64 * SECTOR)
                .unwrap_or(DEFAULT_MAX_IO)
                .clamp(PAGE, DEFAULT_MAX_IO) as u32,
            // The erase block where there is one (eMMC and SD cards report it so);
            // it need not be a power of two (an SSD's 768 KiB), io_opt must.
            discard_granularity: self
                .discard
                .then(|| erase.unwrap_or(PAGE).min(u32::MAX as u64) as u32),
            rotational: i.rotational,
            volatile_cache: self.volatile_cache,
            fua: self.volatile_cache,
        }
    }

    /// What the kernel side needs to know: size, depth, geometry.
    pub fn info_json(&self) -> serde_json::Value {
        let i = &self.info;
        let bytes = |s: Option<u32>| s.map(|s| s as u64 * SECTOR);
        serde_json::json!({
            "model": self.name,
            "spec": self.spec,
            "capacity_bytes": self.size_bytes(),
            "queue_depth": i.queue_depth,
            "host_tags": i.host_tags,
            "elevator_nr_requests": i.default_nr_requests(i.queue_depth.max(1), true),
            "rotational": i.rotational,
            "erase_block_bytes": bytes(i.erase_block_sectors),
            "optimal_io_bytes": bytes(i.optimal_io_sectors),
            "max_hw_bytes": bytes(i.max_hw_sectors),
            "discard": self.discard,
            "volatile_cache": self.volatile_cache,
            "dilation": self.dilation(),
        })
    }

    /// The live figures, all in model time: requests per kind with latency
    /// percentiles, the device's own counters (WA, GC, erases, merges...),
    /// energy, busy time.
    pub fn counters(&self) -> serde_json::Value {
        let st = lock(&self.state);
        let clock = self.clock();
        let now = clock.model_at(Instant::now()).max(st.now);
        let busy = st.busy_ns
            + if st.in_flight > 0 {
                now.saturating_sub(st.busy_since)
            } else {
                0
            };
        let mut kinds = serde_json::Map::new();
        for (k, name) in KINDS {
            kinds.insert(name.into(), st.kinds[kind_index(k)].json());
        }
        let done: u64 = st.kinds[..2].iter().map(|k| k.count).sum();
        let secs = now as f64 / 1e9;
        serde_json::json!({
            "model": self.name,
            "spec": self.spec,
            "dilation": clock.dilation,
            "dilation_switches": clock.switches,
            "model_time_s": secs,
            "wall_time_s": self.t0.elapsed().as_secs_f64(),
            "queue_depth": self.info.queue_depth,
            "in_flight": st.in_flight,
            "busy_s": busy as f64 / 1e9,
            "iops_model": if secs > 0.0 { done as f64 / secs } else { 0.0 },
            "errors": st.errors,
            "requests": kinds,
            "device": st.dev.counters(),
            "energy": serde_json::to_value(st.dev.energy(now, busy)).unwrap_or_default(),
            "resident_bytes": self.store.resident_bytes(),
        })
    }

    /// Write [`Served::counters`] to `path` (whole: a temporary file renamed).
    pub fn write_counters(&self, path: &Path) -> Result<()> {
        let tmp = path.with_extension("json.tmp");
        let text = serde_json::to_string_pretty(&self.counters())? + "\n";
        std::fs::write(&tmp, text).with_context(|| format!("cannot write {}", tmp.display()))?;
        std::fs::rename(&tmp, path).with_context(|| format!("cannot rename to {}", path.display()))
    }
}

fn kind_index(k: Kind) -> usize {
    KINDS.iter().position(|x| x.0 == k).unwrap_or(0)
}

/// Writes the counters every `period` until dropped (then once more), and
/// follows a control file where there is one.
pub struct CounterWriter {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
    served: Arc<Served>,
    path: PathBuf,
}

impl CounterWriter {
    /// `control`: a file holding a dilation (a number, e.g. `1` or `48.5`),
    /// read every 20 ms; when it names another dilation than the current one
    /// the device changes to it and the counters are written at once, so
    /// whoever wrote it knows the change took effect when the counters show
    /// it. A file that names no positive number is reported on stderr (once
    /// per content) and changes nothing.
    pub fn start(
        served: Arc<Served>,
        path: PathBuf,
        period: Duration,
        control: Option<PathBuf>,
    ) -> CounterWriter {
        let stop = Arc::new(AtomicBool::new(false));
        let (s, p, f) = (served.clone(), path.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            let mut refused = String::new();
            while !f.load(Ordering::Relaxed) {
                let _ = s.write_counters(&p);
                let until = Instant::now() + period;
                while !f.load(Ordering::Relaxed) && Instant::now() < until {
                    std::thread::sleep(Duration::from_millis(20).min(period));
                    if let Some(c) = &control {
                        if follow_control(&s, c, &mut refused) {
                            let _ = s.write_counters(&p);
                        }
                    }
                }
            }
        });
        CounterWriter {
            stop,
            thread: Some(thread),
            served,
            path,
        }
    }
}

/// Apply the control file's dilation if it names a new one; whether it did.
fn follow_control(s: &Served, control: &Path, refused: &mut String) -> bool {
    let Ok(text) = std::fs::read_to_string(control) else {
        return false;
    };
    let text = text.trim();
    let wanted = text.parse::<f64>().map_err(anyhow::Error::from);
    match wanted.and_then(|d| check_dilation(d).map(|()| d)) {
        Ok(d) if d != s.dilation() => s.set_dilation(d).is_ok(),
        Ok(_) => false,
        Err(e) => {
            if refused != text {
                eprintln!("vsim serve: {}: '{text}' ignored: {e:#}", control.display());
                text.clone_into(refused);
            }
            false
        }
    }
}

impl Drop for CounterWriter {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        let _ = self.served.write_counters(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn served(dev: &str, dilation: f64) -> Served {
        Served::new(&Options {
            device: dev.into(),
            dilation,
            seed: 1,
            backing: None,
        })
        .unwrap_or_else(|e| panic!("{e:#}"))
    }

    #[test]
    fn reads_return_what_was_written_and_zeros_elsewhere() {
        let s = served("fixed:service_us=1,size=8m", 1.0);
        let data: Vec<u8> = (0..200_000u32).map(|i| (i * 7 + 3) as u8).collect();
        s.write(&data, 65_000, false).unwrap();
        let mut back = vec![0u8; data.len()];
        s.read(&mut back, 65_000).unwrap();
        assert_eq!(back, data);
        let mut around = vec![1u8; 1000];
        s.read(&mut around, 64_000).unwrap();
        assert!(around.iter().all(|&b| b == 0));
        assert!(s.write(&data, 8 * 1024 * 1024 - 10, false).is_err());
    }

    #[test]
    fn a_backing_file_keeps_the_data_and_discard_punches_it_out() {
        let dir = std::env::temp_dir().join(format!("vsim-backing-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("data");
        let s = Served::new(&Options {
            device: "cheapflash:size=256m".into(),
            dilation: 1.0,
            seed: 1,
            backing: Some(file.clone()),
        })
        .unwrap();
        assert_eq!(std::fs::metadata(&file).unwrap().len(), s.size_bytes());
        let data = vec![0x5au8; 3 * 65536];
        s.write(&data, 65536, false).unwrap();
        let mut back = vec![0u8; data.len()];
        s.read(&mut back, 65536).unwrap();
        assert_eq!(back, data);
        s.discard(65536, 65536).unwrap();
        s.read(&mut back, 65536).unwrap();
        assert!(back[..65536].iter().all(|&b| b == 0));
        assert!(back[65536..].iter().all(|&b| b == 0x5a));
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn a_request_takes_the_models_time_times_the_dilation() {
        // fixed: 2 ms service; dilation 3: 6 ms of wall time.
        let s = served("fixed:service_us=2000,size=8m", 3.0);
        let t = Instant::now();
        let lat = s.io(Kind::Read, 0, 4096, false).unwrap();
        let wall = t.elapsed();
        assert!((2_000_000..2_600_000).contains(&lat), "model latency {lat}");
        assert!(wall >= Duration::from_millis(6), "wall {wall:?}");
        let c = s.counters();
        assert_eq!(c["requests"]["read"]["count"], 1);
    }

    #[test]
    fn a_change_of_dilation_sets_the_pace_and_model_time_goes_on() {
        let s = served("fixed:service_us=2000,size=8m", 1.0);
        s.io(Kind::Read, 0, 4096, false).unwrap();
        let before = s.model_now();
        s.set_dilation(5.0).unwrap();
        let after = s.model_now();
        assert!(
            after >= before && after - before < 1_000_000,
            "{before} -> {after}"
        );
        let t = Instant::now();
        let lat = s.io(Kind::Read, 0, 4096, false).unwrap();
        assert!(
            t.elapsed() >= Duration::from_millis(10),
            "{:?}",
            t.elapsed()
        );
        assert!((2_000_000..2_600_000).contains(&lat), "model latency {lat}");
        // Refused, and nothing changes.
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert!(s.set_dilation(bad).is_err());
        }
        assert_eq!(s.dilation(), 5.0);
        let c = s.counters();
        assert_eq!(
            (c["dilation"].as_f64(), c["dilation_switches"].as_u64()),
            (Some(5.0), Some(1))
        );
    }

    #[test]
    fn a_request_in_flight_finishes_at_the_new_pace() {
        // 200 ms of model time at dilation 10 is 2 s of wall time; dropped to
        // 1 after 50 ms (5 ms of model time), the rest takes ~195 ms.
        let s = Arc::new(served("fixed:service_us=200000,size=8m", 10.0));
        let t = Instant::now();
        let s2 = s.clone();
        let h = std::thread::spawn(move || s2.io(Kind::Read, 0, 4096, false).unwrap());
        std::thread::sleep(Duration::from_millis(50));
        s.set_dilation(1.0).unwrap();
        let lat = h.join().unwrap();
        let wall = t.elapsed();
        assert!(wall < Duration::from_millis(1_000), "wall {wall:?}");
        assert!(
            (200_000_000..220_000_000).contains(&lat),
            "model latency {lat}"
        );
    }

    #[test]
    fn a_control_file_changes_the_dilation_and_a_bad_one_changes_nothing() {
        let s = Arc::new(served("fixed:service_us=10,size=8m", 1.0));
        let dir = std::env::temp_dir().join(format!("vsim-control-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (path, control) = (dir.join("counters.json"), dir.join("dilation"));
        let counters = || -> serde_json::Value {
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap_or_default())
                .unwrap_or_default()
        };
        let wait_for = |want: f64| {
            let until = Instant::now() + Duration::from_secs(5);
            while counters()["dilation"].as_f64() != Some(want) && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(5));
            }
            counters()["dilation"].as_f64()
        };
        let _w = CounterWriter::start(
            s.clone(),
            path.clone(),
            Duration::from_secs(60),
            Some(control.clone()),
        );
        std::fs::write(&control, "4\n").unwrap();
        assert_eq!(wait_for(4.0), Some(4.0));
        for bad in ["fast", "0", "-2", ""] {
            std::fs::write(&control, bad).unwrap();
            std::thread::sleep(Duration::from_millis(60));
            assert_eq!(s.dilation(), 4.0, "after '{bad}'");
        }
        std::fs::write(&control, "1.5").unwrap();
        assert_eq!(wait_for(1.5), Some(1.5));
        assert_eq!(counters()["dilation_switches"], 2);
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn requests_beyond_the_queue_depth_wait_for_a_tag() {
        // Depth 1, 5 ms each: 4 concurrent requests finish ~5, 10, 15, 20 ms.
        // Each one's latency at the device is its own 5 ms.
        let s = Arc::new(served("fixed:service_us=5000,size=8m,queue_depth=1", 1.0));
        let start = Instant::now();
        let hs: Vec<_> = (0..4)
            .map(|i| {
                let s = s.clone();
                std::thread::spawn(move || {
                    let lat = s.io(Kind::Read, i * 4096, 4096, false).unwrap();
                    (start.elapsed(), lat)
                })
            })
            .collect();
        let mut done: Vec<_> = hs.into_iter().map(|h| h.join().unwrap()).collect();
        done.sort();
        for (i, (wall, lat)) in done.iter().enumerate() {
            let want = Duration::from_millis(5 * (i as u64 + 1));
            assert!(*wall >= want, "request {i} done after {wall:?} < {want:?}");
            assert!((5_000_000..5_500_000).contains(lat), "request {i}: {lat}");
        }
        assert_eq!(s.counters()["in_flight"], 0);
    }

    #[test]
    fn a_request_started_without_waiting_is_due_at_the_models_time_and_frees_its_tag() {
        // Depth 1, 5 ms each, served without blocking (as vsim-ublk does): the
        // second request finds no tag, and once the first completes it starts
        // when that tag was freed, not when it was tried again.
        let s = served("fixed:service_us=5000,size=8m,queue_depth=1", 1.0);
        let mut first = s
            .try_start(Kind::Read, 0, 4096, false, None)
            .unwrap()
            .expect("an idle device admits");
        assert_eq!(s.try_finish(&mut first), None, "finished before it was due");
        assert!(s.wall_until(first.due) > Duration::from_millis(3));
        let arrived = s.model_now();
        assert!(
            s.try_start(Kind::Read, 4096, 4096, false, Some(arrived))
                .unwrap()
                .is_none(),
            "a second request admitted on a device of one tag"
        );
        std::thread::sleep(s.wall_until(first.due));
        let lat = s.try_finish(&mut first).expect("due, so done");
        assert!((5_000_000..5_500_000).contains(&lat), "{lat}");
        // Tried again well after the tag was freed: it started at the free.
        std::thread::sleep(Duration::from_millis(3));
        let mut second = s
            .try_start(Kind::Read, 4096, 4096, false, Some(arrived))
            .unwrap()
            .expect("the freed tag");
        assert_eq!(second.due, first.due + 5_000_000);
        std::thread::sleep(s.wall_until(second.due));
        let lat2 = s.try_finish(&mut second).expect("due, so done");
        assert_eq!(lat2, 5_000_000);
        assert_eq!(s.counters()["in_flight"], 0);
        assert_eq!(s.counters()["requests"]["read"]["count"], 2);
        // Out of range: an error, and nothing admitted.
        assert!(s.try_start(Kind::Read, 8 << 20, 4096, false, None).is_err());
        assert_eq!(s.counters()["in_flight"], 0);
    }

    #[test]
    fn discard_reaches_the_ftl_and_zeroes_the_data() {
        let s = served(
            "ssd:preset=mlc_16g,blocks_per_plane=64,precondition=none",
            1.0,
        );
        let data = vec![0xabu8; 1 << 20];
        s.write(&data, 0, false).unwrap();
        s.flush().unwrap();
        s.discard(0, 1 << 20).unwrap();
        let mut back = vec![1u8; 4096];
        s.read(&mut back, 8192).unwrap();
        assert!(back.iter().all(|&b| b == 0));
        let c = s.counters();
        assert_eq!(c["device"]["trimmed_pages"], 256, "{c}");
        assert_eq!(c["requests"]["discard"]["count"], 1);
        assert!(!served("hdd", 1.0).supports_discard());
    }

    #[test]
    fn a_disk_that_reorders_its_queue_completes_every_request() {
        // NCQ: completions come through Device::recheck, as in the engine.
        let s = Arc::new(served("hdd", 1.0));
        assert!(
            s.size_bytes() > 1 << 40,
            "the default 4 TB disk, memory only for data"
        );
        let hs: Vec<_> = (0..8u64)
            .map(|i| {
                let s = s.clone();
                std::thread::spawn(move || {
                    let mut buf = vec![0u8; 4096];
                    s.read(&mut buf, i * 97_000_000_000).unwrap()
                })
            })
            .collect();
        for h in hs {
            let lat = h.join().unwrap();
            assert!(lat > 100_000, "a disk read takes more than 0.1 ms: {lat}");
        }
        let c = s.counters();
        assert_eq!(c["requests"]["read"]["count"], 8);
        assert_eq!(c["in_flight"], 0);
    }

    #[test]
    fn counters_are_written_live_and_at_the_end() {
        let s = Arc::new(served("cheapflash:size=256m", 1.0));
        let dir = std::env::temp_dir().join(format!("vsim-serve-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("counters.json");
        {
            let _w = CounterWriter::start(s.clone(), path.clone(), Duration::from_millis(10), None);
            s.write(&[7u8; 8192], 0, true).unwrap();
        }
        let c: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(c["requests"]["write"]["count"], 1);
        assert_eq!(c["device"]["host_page_writes"], 2);
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn limits_carry_the_models_depth_erase_block_and_caches() {
        // An SD card without command queueing: one queue of one tag; its
        // 1 MiB erase block as io_opt and discard granularity; no cache.
        let sd = served("cheapflash:preset=sd_a1,size=256m", 1.0).limits(4);
        assert_eq!((sd.queues, sd.depth), (1, 1));
        assert_eq!(
            (sd.io_opt, sd.discard_granularity),
            (1 << 20, Some(1 << 20))
        );
        assert!(!sd.rotational && !sd.volatile_cache && !sd.fua);
        // The NVMe model: its 1,023 tags over a queue per CPU; the 768 KiB
        // erase block is no power of two, so it travels as the discard
        // granularity alone; a volatile write buffer takes FUA.
        let ssd = served("ssd:blocks_per_plane=64", 1.0);
        let l = ssd.limits(2);
        assert_eq!((l.queues, l.depth), (2, 512));
        assert_eq!((l.io_opt, l.discard_granularity), (4096, Some(768 * 1024)));
        assert!(l.volatile_cache && l.fua);
        assert_eq!(ssd.limits(64).queues, 16);
        assert_eq!(ssd.limits(0).queues, 1);
        // With power-loss protection the buffer is not volatile.
        assert!(
            !served("ssd:blocks_per_plane=64,plp=1", 1.0)
                .limits(1)
                .volatile_cache
        );
        // The disk: rotational, takes no discards, caches writes.
        let hdd = served("hdd:preset=sata_250g", 1.0).limits(2);
        assert_eq!((hdd.queues, hdd.depth), (1, 32));
        assert!(hdd.rotational && hdd.volatile_cache && hdd.discard_granularity.is_none());
    }
}
