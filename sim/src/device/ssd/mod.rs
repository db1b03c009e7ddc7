//! Flash SSD: channels × dies per channel × planes per die × blocks per plane
//! × pages per block, a page-mapped FTL with over-provisioning and greedy or
//! FIFO garbage collection (core in [`super::flash::ftl`]), and FEMU-style
//! timing with per-die and per-channel next-free times.
//!
//! Capacity: physical pages P = channels·dies·planes·blocks·pages; logical
//! pages L = floor(P / (1 + op)) (op = (P − L)/L, reference/simulators.md §4.1).
//!
//! Allocation: host pages are striped round-robin over the planes in
//! channel-first order (unit u → channel u mod C, die (u div C) mod D, plane
//! u div (C·D)); each plane has one active block shared by host writes and
//! GC copies. GC runs per plane when its free blocks drop below
//! `gc_threshold` (a count ≥ 1, or a fraction < 1 of the blocks per plane),
//! right after the plane opens a new block; valid pages are copied within the
//! plane. Victims: `gc=greedy` (fewest valid) or `gc=fifo` (oldest closed).
//!
//! Timing (all ns; one request = its pages, completion = max over pages): the
//! flash page-timing model shared with cheapflash ([`super::flash::timeline`]:
//! per-die and per-channel next-free times; a read senses on the die then
//! transfers, a program transfers then programs on the die; the die's cache
//! register holds one program's data, so the next program's transfer waits
//! for the previous program to start).
//! - Foreground GC: a host page write that leaves its plane below
//!   `gc_threshold` free blocks collects victims *before* that write's program
//!   (`Timeline::gc_on_die`): g0 = max(now, die ready), die busy for the
//!   copies (a read per NAND page of `nand_page / page_size` pages, a program
//!   per `program_pages` pages, 2·xfer per page through the controller when
//!   `copyback=0`, also booked on the channel) and the erases. With
//!   `read_priority` reads preempt it as they preempt background GC (the
//!   write still waits for it); without, it holds the die.
//! - Background GC (`gc_bg_threshold` > `gc_threshold`): a die with a plane
//!   below the background target collects one victim at a time, in its
//!   plane with the fewest free blocks, whenever it has no other work;
//!   idle-time GC collects up to `gc_idle_threshold` once the host has
//!   submitted nothing for `gc_idle_ms` (FEMU and MQSim book GC in the
//!   foreground only). Booked lazily at each
//!   submit (`Ssd::background_gc`). Reads preempt it (`Timeline::preempt`):
//!   at the end of the NAND operation in progress (a page read, the program,
//!   an erase), or with `suspend=1` after `suspend_us`, the suspended
//!   operation then taking `resume_us` longer (program/erase suspension, Wu
//!   and He, FAST '12); reads back to back keep it suspended. Programs and
//!   erases wait for it.
//! - Read priority (`read_priority`, default = `suspend`): reads pass the
//!   programs queued on their die and preempt the one in progress the same
//!   way, and foreground GC becomes preemptible too (the write still waits
//!   for it); everything booked on the die after the preemption point moves
//!   later by the read's time (a program's end already returned, e.g. a
//!   buffer slot's release, is not revised). On the channel, program data
//!   is booked apart from reads, so a read is not queued behind program
//!   data booked ahead of it; programs still wait for reads booked before
//!   them. Background jobs' copy transfers are counted in their die time,
//!   not on the channel.
//! - Multi-plane / one-shot programs: a buffer flush takes up to
//!   `program_pages` pages (planes × pages per NAND page × pages per
//!   one-shot program: 4 × 4 × 3 = 48 for 16 KiB TLC pages of 4 KiB mapping
//!   units) in one program of one tPROG; a flush starts when a whole program's
//!   worth is buffered or the oldest page waited `flush_ms`, or at once for a
//!   flush/FUA. `alloc=die`: the flush goes to the die that can take a
//!   program first (`Timeline::program_ready`: the data may cross the channel
//!   while the die still programs), each page to that die's next plane;
//!   `alloc=rr`: page by page round-robin over the planes, as before.
//! - A read of a never-written page is answered by the controller without a
//!   flash read (zeros): ready after cmd, then the host link; counted in
//!   `unmapped_page_reads`. With `unmapped_read=flash` (the `mqsim` preset,
//!   as MQSim, which maps such a page on its first read and reads it) it is
//!   a flash read on plane lpn mod planes, not mapped.
//!
//! DRAM write buffer (`write_buffer` bytes, 0 = none: every write completes
//! when programmed, as before): a write completes when its pages are in the
//! buffer (after the host transfer); a page waits for a slot when the buffer
//! is full. Buffered pages are flushed to flash in the background, oldest
//! first; a slot is held until its program ends. The device sees time only
//! through submits, so the flushes are booked lazily: each submit first
//! issues every flush that would have started by then (`Ssd::advance`).
//! Reads of buffered pages are served from DRAM (no flash time).
//! `REQ_PREFLUSH` drains the buffer (every page programmed) before the
//! request is serviced; an empty flush (`sectors == 0`) completes then.
//! `REQ_FUA` writes complete when they and everything buffered before them
//! are on flash (in-order flush). With `plp=1` (power-loss protection: the
//! buffer is backed by capacitors, as on enterprise drives) flushes and FUA
//! complete without waiting.
//!
//! SLC cache (`slc_cache` bytes; needs the write buffer and `alloc=die`):
//! while it has room, flushes program in SLC mode (`slc_prog_us`, one page
//! per NAND page per plane); when it is full, they go straight to TLC
//! (`slc_direct_pages`). In idle time (`gc_idle_ms` without a submit) it is
//! folded into TLC, a program's worth at a time, as preemptible background
//! work (page reads + one TLC program). It is an account of time and
//! capacity: the FTL places the pages at once; reads of cached pages take
//! the main area's tR.
//!
//! Host link (`interface=none|sata2|sata3|pcie3x4|pcie4x4|pcie5x4`, or `host_mbps`):
//! a serialised resource per direction with a next-free time (PCIe is full
//! duplex: reads and writes each have one; SATA is half duplex: one shared
//! by both, as `host_mbps` alone with `interface=sata2|sata3`); a write's bytes cross it
//! before the write is serviced, a read's pages cross it one by one as their
//! data is ready (rates in [`INTERFACES`]).
//! - Sub-page writes program a whole page (no read-modify-write: the
//!   controller is assumed to buffer the rest of the page).
//! - Sectors beyond the logical capacity wrap around (page number mod L).
//!
//! Energy per operation ([`Ssd::meter`]): idle_w over the run, controller_w
//! while requests are outstanding, nand_w (ESTIMATED 3.3 V × 20 mA, NAND
//! datasheets list 10–30 mA active current) over each array read, program
//! (a multi-plane program counts once), SLC program, erase and page
//! transfer, and link_pj_per_bit (ESTIMATED 5 pJ/bit, PCIe SerDes class)
//! per byte over the host link.
//!
//! # Presets (`preset=`; any other option overrides the preset's value)
//! Capacities (but `mqsim`'s) are scaled down (fewer blocks) to keep the map
//! small; die counts, geometry ratios, timings and spare are the class's.
//! Marks: [D] datasheet or spec, [R] reference/simulators.md, [E] ESTIMATED
//! (a typical value for the class, not from one document).
//! * `tlc_nvme` (default): consumer TLC NVMe, 1 TB class: 8 channels × 2
//!   dies (16 × 512 Gb dies = 1 TB [D: Micron/Samsung 512 Gb TLC dies]),
//!   4 planes, 16 KiB NAND pages of 4 KiB mapping units, one-shot TLC
//!   programs of 3 pages (program_pages 48) [R: "Typical TLC (3D)": 16 KiB
//!   pages, tR 50–90 µs, one-shot ~2 ms, tBERS 3–10 ms; ONFI 4 800 MT/s–1.6
//!   GT/s]: tR 60 µs, tPROG 2 ms, tBERS 5 ms, 1200 MT/s; op 0.0737 (GB sold
//!   on GiB of flash: 2^30/10^9 − 1); PCIe 4.0 x4 [D]; queue depth 1023 (the
//!   Linux nvme driver's io_queue_depth 1024, one slot kept free [D]);
//!   write buffer 16 MiB [E]; SLC cache 64 MiB (a static SLC region of
//!   ~0.6 % of capacity, scaled) [E]; suspend on, 20 µs / 20 µs [E];
//!   background/idle GC targets 1.5 % / 3 % of the blocks per plane [E];
//!   idle_w 0.05 [E: APST idle states are tens of mW], controller_w 3 [E].
//!   Sustained post-cache sequential write 16 · 48 · 4 KiB / 2 ms = 1.57 GB/s,
//!   SLC-cache writes 5.2 GB/s (validation group ssd).
//! * `qlc_nvme`: consumer QLC NVMe, 1 TB class: 4 × 2 dies of 1 Tb, one-shot
//!   QLC programs of 4 pages (program_pages 64), tR 140 µs, tPROG 4 ms,
//!   tBERS 10 ms, 800 MT/s [E], PCIe 3.0 x4, SLC cache 256 MiB [E].
//! * `tlc_enterprise`: enterprise TLC NVMe, mixed use: 16 × 4 dies, op 0.374
//!   (3.2 TB sold on 4 TiB of flash, the mixed-use capacity point of the
//!   read-intensive 3.84 TB drives [D]), write buffer 64 MiB with power-loss
//!   protection, no SLC cache, GC targets 3 % / 6.25 %, idle_w 5 [E: enterprise
//!   NVMe idle is 5–8 W], controller_w 6 [E].
//! * `mqsim`: MQSim's default `ssdconfig.xml` (CMU-SAFARI/MQSim 7ec40e3)
//!   [R]: 8 channels × 4 chips × 2 dies (8 dies per channel) × 2 planes ×
//!   2048 blocks × 256 pages of 8 KiB (512 GiB), MLC tR 75 µs, tPROG 750 µs,
//!   tBERS 3.8 ms, 333 MT/s × 8 bit, op 0.07, GC below 5 % free blocks
//!   (GC_Exec_Threshold), its 256 MiB DRAM data cache as the write buffer,
//!   NVMe over 4 lanes of 1 GB/s (`pcie3x4`, the nearest), IO_Queue_Depth
//!   65535, round-robin allocation. What still differs from MQSim
//!   (docs/notebooks/sim-measurements.md, "beside MQSim"): its randomised greedy victims and wear
//!   levelling, its mapping cache (CMT), its read cache, and reads of
//!   never-written pages (MQSim maps them and reads flash; here zeros).
//! * `mlc_16g`: the model before issue 11 (the `mqsim` preset until issue
//!   38): MQSim's MLC timings on 8 ch × 4 dies × 2 planes, 256 blocks × 256
//!   pages of 4 KiB (16 GiB), op 0.07, queue depth 32, no buffer, no link,
//!   foreground GC only, round-robin allocation; small and quick, for demos
//!   and tests.
//! * `mlc_sata`: a 2009-2011 SATA MLC SSD, seed 001's SSD-I (Table 2: Intel
//!   controller PC29AS21AA0, 80 GB MLC, 16 MB DRAM, 201.3 MB/s read, 73.8
//!   MB/s write, 2.6 W working, 0.15 W idle) and the class of seed 000's
//!   "SATA SSD": 10 channels × 2 dies of 32 Gb (80 GB sold on 20 × 4 GiB:
//!   op 0.0737) [D: the X25-M G2 class], one plane a unit, 128 pages of
//!   4 KiB a block [E], tR 50 µs [E: 34 nm MLC], tPROG 1,110 µs (20 units ×
//!   4 KiB / tPROG = Table 2's 73.8 MB/s; 34 nm MLC lists 0.9-2 ms) [D/E],
//!   tBERS 2 ms [E], 20 MT/s (10 channels × 4 KiB pages = Table 2's 201
//!   MB/s) [D/E], SATA 3 Gb/s half duplex [D], NCQ depth 32 [D], no user
//!   data in DRAM (it holds the map) [D], foreground GC only as `mlc_16g`,
//!   idle_w 0.15 [D: Table 2], controller_w 2.3 (with the NAND's share a
//!   busy drive draws about Table 2's 2.6 W) [E]. Scaled to 256 blocks a
//!   unit (2.5 GiB); `blocks_per_plane` sets the size.
//!
//! Options (defaults from the preset): preset, channels, dies_per_channel,
//! planes_per_die, blocks_per_plane, pages_per_block, page_size (4k; mqsim 8k),
//! nand_page, program_pages, op, gc greedy|fifo, gc_threshold 2 (mqsim 5 %),
//! gc_bg_threshold, gc_idle_threshold, gc_idle_ms 10, suspend, suspend_us,
//! resume_us, read_priority, alloc rr|die, flush_ms 1, cell (slc/mlc/tlc
//! times instead of the preset's), read_us/prog_us/erase_us overrides,
//! channel_mts, bus_bytes 1, cmd_ns (7 bus cycles), copyback 0, queue_depth,
//! write_buffer, plp, slc_cache, slc_prog_us 200 (the `slc` cell's tPROG),
//! interface, host_mbps, unmapped_read zero|flash, precondition seq (none |
//! seq | full: sequential fill of all logical pages, plus for `full` uniform random overwrites of
//! `precondition_overwrites` × L pages, default 2, with background GC
//! keeping its target between them, so GC is in steady state; done
//! instantly at construction, counters then reset and the preconditioning
//! totals reported separately), idle_w, controller_w, nand_w 0.066,
//! link_pj_per_bit 5.

use super::energy::Meter;
use super::flash::ftl::{Ftl, GcPolicy, WriteOutcome};
use super::flash::mapcache::{HintBox, HintPort, MapCache, MapGeom, MapOps};
use super::flash::timeline::{Suspend, Timeline};
use super::flash::{nand_timing_or, page_size, NandTiming};
use super::Device;
use crate::params::Params;
use crate::types::DeviceInfo;
use crate::types::{Ns, Op, Request, SECTOR};
use anyhow::{bail, Context, Result};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;
use std::cmp::Reverse;

mod flush;
mod gc;
mod host;
mod options;
mod presets;

pub use host::INTERFACES;
use host::{Link, SsdPower, WriteBuffer};
pub use presets::PRESETS;

/// No unit.
const NONE_UNIT: u32 = u32::MAX;

/// The SSD model.
pub struct Ssd {
    ftl: Ftl,
    tl: Timeline,
    channels: u32,
    dies: u32,
    copyback: bool,
    page_bytes: u64,
    pages_per_block: u64,
    logical_pages: u64,
    depth: u32,
    power: SsdPower,
    plp: bool,
    gc_read_ops: u64,
    gc_prog_ops: u64,
    flash_reads: u64,
    link_bytes: u64,
    host_reads: u64,
    unmapped_reads: u64,
    /// Reads of never-written pages sense the flash (`unmapped_read=flash`).
    unmapped_flash: bool,
    full_rejects: u64,
    gc_time_ns: u64,
    requests: [u64; 2],
    precondition: serde_json::Value,
    buf: WriteBuffer,
    /// The host link: read data out on `link[0]`, write data in on
    /// `link[write_dir]` (1: PCIe is full duplex; 0: SATA is half duplex).
    link: [Link; 2],
    write_dir: usize,
    link_mbps: f64,
    buffer_read_hits: u64,
    buffer_full_waits: u64,
    flushes: u64,
    fua_writes: u64,
    /// Discard requests.
    discards: u64,
    planes: u32,
    /// Buffer flushes go to the die that is free first (`alloc=die`), not
    /// round-robin over the planes.
    alloc_die: bool,
    /// Pages one program operation takes from the buffer (multi-plane).
    program_pages: u32,
    /// Per die: the plane the next page goes to.
    plane_rr: Vec<u32>,
    /// Free-block targets (blocks per plane) of background and idle-time GC.
    gc_bg_free: u32,
    gc_idle_free: u32,
    gc_idle_ns: Ns,
    /// Dies with a plane below a background target, and the set as flags.
    gc_want: Vec<u32>,
    gc_wanted: Vec<bool>,
    last_submit: Ns,
    bg_gc_runs: u64,
    bg_gc_copies: u64,
    programs: u64,
    preset: String,
    /// SLC cache (timing and capacity): capacity and pages held (not yet
    /// folded), SLC-mode tPROG, pages per SLC-mode program, counters.
    slc_pages: u64,
    slc_used: u64,
    slc_prog_ns: Ns,
    slc_unit: u32,
    slc_programs: u64,
    slc_folds: u64,
    slc_direct_pages: u64,
    /// A partial program operation is flushed after this wait.
    flush_wait_ns: Ns,
    draining: bool,
    /// Demand-loaded map (`map_cache`), the hint side channel (`hints`),
    /// hint bytes up (chunks sent) and down (hints received), and the time
    /// data operations waited for chunk loads.
    map: Option<MapCache>,
    hint_port: Option<HintPort>,
    hint_bytes_up: u64,
    hint_bytes_down: u64,
    map_wait_ns: u64,
}

/// Build an SSD from options (see the module comment).
pub fn new(p: &Params, seed: u64) -> Result<Box<dyn Device>> {
    Ok(Box::new(Ssd::from_params(p, seed)?))
}

impl Ssd {
    /// (die, channel) of an FTL unit (plane).
    #[inline]
    fn die_ch(&self, unit: u32) -> (usize, usize) {
        let die = unit % self.dies;
        (die as usize, (die % self.channels) as usize)
    }

    /// The FTL (tests, counters).
    pub fn ftl(&self) -> &Ftl {
        &self.ftl
    }

    /// The timing in use.
    pub fn timing(&self) -> NandTiming {
        self.tl.t
    }

    /// When the data of page `lpn` is in the controller: from the write
    /// buffer at once; a never-written page at once after the command (the
    /// controller answers zeros without touching flash) or, with
    /// `unmapped_read=flash`, after a read on the plane the page's number
    /// stripes to (unit lpn mod units, MQSim's static CWDP placement); else
    /// a flash read.
    #[inline]
    fn read_page(&mut self, lpn: u32, now: Ns) -> Ns {
        self.host_reads += 1;
        if self.buf.cap > 0 && self.buf.held.contains_key(&lpn) {
            self.buffer_read_hits += 1;
            return now;
        }
        let now = self.map_access(lpn, false, now);
        match self.ftl.lookup(lpn) {
            Some(ppn) => {
                self.flash_reads += 1;
                let (d, c) = self.die_ch(self.ftl.unit_of_ppn(ppn));
                self.tl.read_page(d, c, now)
            }
            None if self.unmapped_flash => {
                self.unmapped_reads += 1;
                self.flash_reads += 1;
                let (d, c) = self.die_ch(lpn % self.ftl.units());
                self.tl.read_page(d, c, now)
            }
            None => {
                self.unmapped_reads += 1;
                now + self.tl.t.cmd_ns
            }
        }
    }

    #[inline]
    fn write_page(&mut self, lpn: u32, now: Ns) -> Ns {
        let unit = match self.ftl.write(lpn) {
            Some(out) => {
                self.after_write(out, now);
                out.unit
            }
            None => {
                // Every plane is full (cannot happen with the capacity check);
                // time the program anyway so the request completes.
                self.full_rejects += 1;
                lpn % self.ftl.units()
            }
        };
        let (d, c) = self.die_ch(unit);
        self.programs += 1;
        let known = self.map_access(lpn, true, now);
        self.tl.program_page(d, c, now).max(known)
    }

    /// The entry of `lpn` through the demand-loaded map at `now`: a
    /// current hint from the host or the cache answers at once; else the
    /// chunk is read from its translation page (booked on that die). The
    /// write-backs the access caused are booked too, but not waited for
    /// (the evicted chunk is copied to a program buffer). A chunk read or
    /// changed goes up to a listening host. Returns when the entry is known.
    #[inline]
    fn map_access(&mut self, lpn: u32, write: bool, now: Ns) -> Ns {
        let Some(m) = self.map.as_mut() else {
            return now;
        };
        let c = m.chunk_of(lpn);
        // A hint is taken off the channel either way; used only on a miss.
        let hint = match &self.hint_port {
            Some(port) => port
                .lock()
                .ok()
                .and_then(|mut b| b.attached.remove(&c))
                .filter(|_| !m.is_cached(c)),
            None => None,
        };
        let a = m.access(lpn, write, hint);
        let known = self.book_map(a.ops, now);
        self.map_wait_ns += known - now;
        if a.send {
            self.send_chunk(a.chunk, a.version, known);
        }
        known
    }

    /// Book map work from `now`: chunk reads (partial page transfers) one
    /// after another, returning when the last is out; translation-page
    /// reads and programs of write-backs and translation GC after them.
    fn book_map(&mut self, ops: MapOps, now: Ns) -> Ns {
        let mut t = now;
        if ops.reads > 0 {
            let (d, c) = self.die_ch(ops.read_unit);
            let per = ops.read_bytes / ops.reads as u64;
            let x =
                (self.tl.t.xfer_ns as u128 * per as u128).div_ceil(self.page_bytes as u128) as Ns;
            for _ in 0..ops.reads {
                t = self.tl.read_part(d, c, t, x);
            }
        }
        if ops.programs > 0 || ops.wb_reads > 0 {
            let (d, c) = self.die_ch(ops.write_unit);
            let mut w = t;
            for _ in 0..ops.wb_reads {
                w = self.tl.read_page(d, c, w);
            }
            for _ in 0..ops.programs {
                w = self.tl.program_page(d, c, w);
            }
            if ops.gc_erases > 0 {
                self.gc_time_ns += self.tl.gc_on_die(
                    d,
                    c,
                    ops.gc_copies as u64,
                    ops.gc_erases as u64,
                    self.copyback,
                    w,
                );
            }
        }
        t
    }

    /// Send chunk `c` (version `v`) to a listening host from `t`: its bytes
    /// go up the link (device to host).
    fn send_chunk(&mut self, c: u32, v: u32, t: Ns) {
        let Some(port) = &self.hint_port else {
            return;
        };
        let Ok(mut b) = port.lock() else {
            return;
        };
        if !b.connected {
            return;
        }
        let bytes = b.chunk_bytes;
        let at = self.link[0].transfer(t, bytes);
        b.sent.push_back((at, c, v));
        drop(b);
        self.hint_bytes_up += bytes;
    }

    /// The pages data GC just moved: their entries change in the map
    /// (cached chunks become dirty, the others are rewritten in flash, one
    /// read-modify-write per translation page), and the changed chunks go
    /// to a listening host.
    fn map_moves(&mut self, now: Ns) {
        let Some(m) = self.map.as_mut() else {
            return;
        };
        let mut moved = std::mem::take(&mut self.ftl.moved);
        let mut changed: Vec<u32> = moved.iter().map(|&l| m.remap(l)).collect();
        let ops = m.flush_remaps();
        moved.clear();
        self.ftl.moved = moved;
        let t = self.book_map(ops, now);
        changed.sort_unstable();
        changed.dedup();
        for c in changed {
            let v = self.map.as_ref().map_or(0, |m| m.version(c));
            self.send_chunk(c, v, t);
        }
    }

    /// Book the foreground GC a page write triggered, and put its die on the
    /// background GC list when the plane fell below a background target.
    #[inline]
    fn after_write(&mut self, out: WriteOutcome, now: Ns) {
        if out.gc_erases > 0 {
            self.book_gc(out.unit, out.gc_copies as u64, out.gc_erases as u64, now);
            self.map_moves(now);
        }
        if self.gc_idle_free > self.ftl.gc_free_blocks()
            && self.ftl.free_blocks(out.unit) < self.gc_idle_free
        {
            let d = (out.unit % self.dies) as usize;
            if !self.gc_wanted[d] {
                self.gc_wanted[d] = true;
                self.gc_want.push(d as u32);
            }
        }
    }
}

impl Ssd {
    /// Energy per operation: `idle_w` over the run; the controller at
    /// `controller_w` while requests are outstanding (`busy`); each NAND
    /// operation at `nand_w` (V·I, ESTIMATED 3.3 V × 20 mA as cheapflash's)
    /// for its duration: array reads (host and GC), programs (one per
    /// program operation: a multi-plane program counts once), erases, and
    /// every page over the channels; the host link at `link_pj_per_bit`.
    pub fn meter(&self, busy: Ns) -> Meter {
        let t = self.tl.t;
        let w = self.power.nand_w * 1e-9;
        let st = self.ftl.stats;
        let mut m = Meter::new(self.power.idle_w);
        let copies_x = if self.copyback { 0 } else { 2 * st.gc_copies };
        // The demand-loaded map's flash work: chunk and translation-page
        // reads, translation programs, its GC (copies as a read and a
        // program each) and erases; chunk bytes in whole-page transfers.
        let ms = self.map.as_ref().map(|m| m.stats).unwrap_or_default();
        let map_xfers = (ms.chunk_read_bytes).div_ceil(self.page_bytes)
            + ms.tpage_reads
            + ms.tpage_programs
            + 2 * ms.tgc_copies;
        let xfers = self.flash_reads + st.host_writes + copies_x + map_xfers;
        for (name, each, count) in [
            ("controller_busy_ns", self.power.controller_w * 1e-9, busy),
            (
                "page_read",
                w * (t.cmd_ns + t.read_ns) as f64,
                self.flash_reads
                    + self.gc_read_ops
                    + ms.chunk_read_ops
                    + ms.tpage_reads
                    + ms.tgc_copies,
            ),
            (
                "program",
                w * (t.cmd_ns + t.prog_ns) as f64,
                self.programs + self.gc_prog_ops + ms.tpage_programs + ms.tgc_copies,
            ),
            (
                "block_erase",
                w * (t.cmd_ns + t.erase_ns) as f64,
                st.erases + ms.tgc_erases,
            ),
            (
                "slc_program",
                w * (t.cmd_ns + self.slc_prog_ns) as f64,
                self.slc_programs,
            ),
            ("page_transfer", w * t.xfer_ns as f64, xfers),
            (
                "host_link_byte",
                self.power.link_pj_per_bit * 8e-12,
                self.link_bytes + self.hint_bytes_up + self.hint_bytes_down,
            ),
        ] {
            let id = m.part(name, each);
            m.add(id, count);
        }
        m
    }
}

impl Device for Ssd {
    fn name(&self) -> &str {
        "ssd"
    }

    fn info(&self) -> DeviceInfo {
        DeviceInfo {
            capacity_sectors: self.logical_pages * (self.page_bytes / SECTOR),
            queue_depth: self.depth,
            rotational: false,
            erase_block_sectors: Some((self.pages_per_block * self.page_bytes / SECTOR) as u32),
            optimal_io_sectors: None,
            max_hw_sectors: None,
            host_tags: None,
        }
    }

    fn submit(&mut self, rq: &Request, now: Ns) -> Ns {
        let buffered = self.buf.cap > 0;
        if buffered {
            self.advance(now);
        }
        if !self.gc_want.is_empty() {
            self.background_gc(now);
        }
        if self.slc_used > 0 {
            self.fold_slc(now);
        }
        self.last_submit = now;
        // REQ_PREFLUSH: the buffer is drained before the request is serviced;
        // an empty flush completes then.
        let now = if rq.attrs.preflush {
            self.flushes += 1;
            if self.plp {
                now
            } else {
                self.drain(now)
            }
        } else {
            now
        };
        if rq.sectors == 0 {
            return now;
        }
        self.requests[rq.op.idx()] += 1;
        // Hints the host attached cross the link ahead of the request.
        let now = match self.hint_port.clone() {
            Some(port) => {
                let (bytes, preload) = port
                    .lock()
                    .map(|mut b| {
                        let pre = b.connected && std::mem::take(&mut b.preload);
                        (std::mem::take(&mut b.pending_bytes), pre)
                    })
                    .unwrap_or((0, false));
                if preload {
                    let n = self.map.as_ref().map_or(0, |m| m.chunks());
                    for c in 0..n {
                        let v = self.map.as_ref().map_or(0, |m| m.version(c));
                        self.send_chunk(c, v, now);
                    }
                }
                if bytes > 0 {
                    self.hint_bytes_down += bytes;
                    self.link[self.write_dir].transfer(now, bytes)
                } else {
                    now
                }
            }
            None => now,
        };
        let first = rq.sector * SECTOR / self.page_bytes;
        let last = (rq.end() * SECTOR - 1) / self.page_bytes;
        let bytes = rq.sectors as u64 * SECTOR;
        if self.link_mbps > 0.0 {
            self.link_bytes += bytes;
        }
        let mut done = now;
        match rq.op {
            Op::Read => {
                // Each page crosses the host link once its data is in the controller.
                let mut left = bytes;
                for pg in first..=last {
                    let lpn = (pg % self.logical_pages) as u32;
                    let ready = self.read_page(lpn, now);
                    let chunk = left.min(self.page_bytes);
                    left -= chunk;
                    done = done.max(self.link[0].transfer(ready, chunk));
                }
            }
            Op::Write => {
                let t_in = self.link[self.write_dir].transfer(now, bytes);
                done = t_in;
                for pg in first..=last {
                    let lpn = (pg % self.logical_pages) as u32;
                    let t = if buffered {
                        let s = self.slot_at(t_in);
                        self.buf.pending.push_back((lpn, s));
                        self.buf.hold(lpn);
                        s
                    } else {
                        self.write_page(lpn, t_in)
                    };
                    done = done.max(t);
                }
                // REQ_FUA: complete once on flash, with everything buffered
                // before it (the controller flushes in order).
                if rq.attrs.fua && buffered && !self.plp {
                    self.fua_writes += 1;
                    done = self.drain(done);
                }
            }
        }
        done
    }

    fn supports_discard(&self) -> bool {
        true
    }

    fn volatile_cache(&self) -> bool {
        self.buf.cap > 0 && !self.plp
    }

    /// The FTL unmaps the pages covered whole; their data still waiting in
    /// the write buffer is dropped (never programmed). A mapping update in
    /// the controller: it costs one command time.
    fn discard(&mut self, sector: u64, sectors: u64, now: Ns) -> Option<Ns> {
        if self.buf.cap > 0 {
            self.advance(now);
        }
        self.discards += 1;
        let r = super::flash::whole_pages(sector, sectors, self.page_bytes);
        let r = r.start.min(self.logical_pages)..r.end.min(self.logical_pages);
        if !r.is_empty() {
            let WriteBuffer { pending, held, .. } = &mut self.buf;
            pending.retain(|&(lpn, _)| {
                if !r.contains(&(lpn as u64)) {
                    return true;
                }
                if let Some(n) = held.get_mut(&lpn) {
                    *n -= 1;
                    if *n == 0 {
                        held.remove(&lpn);
                    }
                }
                false
            });
            for lpn in r.clone() {
                self.ftl.trim(lpn as u32);
            }
            // The trimmed entries change: each chunk they fall in is loaded
            // and dirtied once (booked; the discard does not wait for it).
            if let Some(ce) = self.map.as_ref().map(|m| m.chunk_entries()) {
                let mut lpn = r.start;
                while lpn < r.end {
                    self.map_access(lpn as u32, true, now);
                    lpn = (lpn / ce + 1) * ce;
                }
            }
        }
        Some(now + self.tl.t.cmd_ns)
    }

    fn prefetch(&self, rq: &Request) {
        let pg = rq.sector * SECTOR / self.page_bytes;
        self.ftl.prefetch((pg % self.logical_pages) as u32);
    }

    fn counters(&self) -> serde_json::Value {
        let st = self.ftl.stats;
        serde_json::json!({
            "read_requests": self.requests[0],
            "write_requests": self.requests[1],
            "host_page_reads": self.host_reads,
            "unmapped_page_reads": self.unmapped_reads,
            "host_page_writes": st.host_writes,
            "gc_page_copies": st.gc_copies,
            "erases": st.erases,
            (super::WA_COUNTER): st.write_amplification(),
            "gc_time_ns": self.gc_time_ns,
            "background_gc_runs": self.bg_gc_runs,
            "background_gc_copies": self.bg_gc_copies,
            "read_preemptions": self.tl.preemptions,
            "suspends": self.tl.suspends,
            "program_ops": self.programs,
            "gc_read_ops": self.gc_read_ops,
            "slc_cache_pages": self.slc_pages,
            "slc_programs": self.slc_programs,
            "slc_folds": self.slc_folds,
            "slc_direct_pages": self.slc_direct_pages,
            "gc_program_ops": self.gc_prog_ops,
            "preset": self.preset,
            "full_rejects": self.full_rejects,
            "write_buffer_pages": self.buf.cap,
            "buffer_read_hits": self.buffer_read_hits,
            "buffer_full_waits": self.buffer_full_waits,
            "flushes": self.flushes,
            "fua_writes": self.fua_writes,
            "discards": self.discards,
            "trimmed_pages": st.trims,
            "host_link_mbps": self.link_mbps,
            "logical_pages": self.logical_pages,
            "precondition": self.precondition,
            "map": self.map_counters(),
        })
    }

    fn hint_port(&self) -> Option<HintPort> {
        self.hint_port.clone()
    }
    fn energy(&self, elapsed: Ns, busy: Ns) -> super::energy::Energy {
        self.meter(busy).report(elapsed)
    }
}

impl Ssd {
    /// The demand-loaded map's counters (null without one).
    fn map_counters(&self) -> serde_json::Value {
        let Some(m) = self.map.as_ref() else {
            return serde_json::Value::Null;
        };
        let hit = if m.stats.lookups > 0 {
            (m.stats.hits + m.stats.hint_hits) as f64 / m.stats.lookups as f64
        } else {
            1.0
        };
        serde_json::json!({
            "chunks": m.chunks(),
            "cache_chunks": m.capacity(),
            "chunk_bytes": m.chunk_bytes(),
            "stats": m.stats,
            "hit_ratio": hit,
            "wait_ns": self.map_wait_ns,
            "hint_bytes_up": self.hint_bytes_up,
            "hint_bytes_down": self.hint_bytes_down,
        })
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod bench;
