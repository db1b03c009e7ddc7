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
//!   `unmapped_page_reads`.
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
//! Host link (`interface=none|sata3|pcie3x4|pcie4x4|pcie5x4`, or `host_mbps`):
//! a serialised resource per direction with a next-free time (PCIe is full
//! duplex: reads and writes each have one; SATA is half duplex: one shared
//! by both, as `host_mbps` alone with `interface=sata3`); a write's bytes cross it
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
//! Capacities are scaled down (fewer blocks) to keep the simulation's map
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
//! * `mqsim`: the model before issue 11, MQSim's defaults [R]: 8 ch × 4 dies
//!   × 2 planes, 256 blocks × 256 pages of 4 KiB (16 GiB), MLC tR 75 µs,
//!   tPROG 750 µs, tBERS 3.8 ms, 333 MT/s × 8 bit, op 0.07, queue depth 32,
//!   no buffer, no link, foreground GC only, round-robin allocation.
//!
//! Options (defaults from the preset): preset, channels, dies_per_channel,
//! planes_per_die, blocks_per_plane, pages_per_block, page_size 4k,
//! nand_page, program_pages, op, gc greedy|fifo, gc_threshold 2,
//! gc_bg_threshold, gc_idle_threshold, gc_idle_ms 10, suspend, suspend_us,
//! resume_us, read_priority, alloc rr|die, flush_ms 1, cell (slc/mlc/tlc
//! times instead of the preset's), read_us/prog_us/erase_us overrides,
//! channel_mts, bus_bytes 1, cmd_ns (7 bus cycles), copyback 0, queue_depth,
//! write_buffer, plp, slc_cache, slc_prog_us 200 (the `slc` cell's tPROG),
//! interface, host_mbps, precondition seq (none | seq | full: sequential
//! fill of all logical pages, plus for `full` uniform random overwrites of
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
use rustc_hash::FxHashMap;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

/// No unit.
const NONE_UNIT: u32 = u32::MAX;

/// Host interfaces (`interface=`) and their payload rates in MB/s (10^6 B/s)
/// after line coding, before protocol overhead: SATA 6 Gb/s with 8b/10b =
/// 600 MB/s (SATA 3.x spec); PCIe per lane 8 / 16 / 32 GT/s with 128b/130b =
/// 984.6 / 1969.2 / 3938.5 MB/s for gen 3 / 4 / 5 (PCI-SIG base specs 3.0,
/// 4.0, 5.0), times 4 lanes. `none`: no link (transfers take no time).
pub const INTERFACES: &[(&str, f64)] = &[
    ("none", 0.0),
    ("sata3", 6000.0 * 8.0 / 10.0 / 8.0),
    ("pcie3x4", 4.0 * 8000.0 * 128.0 / 130.0 / 8.0),
    ("pcie4x4", 4.0 * 16000.0 * 128.0 / 130.0 / 8.0),
    ("pcie5x4", 4.0 * 32000.0 * 128.0 / 130.0 / 8.0),
];

/// The host link: one serialised resource with a next-free time.
#[derive(Clone, Copy, Debug)]
struct Link {
    /// ns per byte (0: no link).
    ns_per_byte: f64,
    free: Ns,
}

impl Link {
    /// Move `bytes` over the link, starting when the data is `ready` and
    /// the link is free; returns when the transfer ends.
    #[inline]
    fn transfer(&mut self, ready: Ns, bytes: u64) -> Ns {
        if self.ns_per_byte == 0.0 {
            return ready;
        }
        let x0 = ready.max(self.free);
        self.free = x0 + (bytes as f64 * self.ns_per_byte).round() as Ns;
        self.free
    }
}

/// Energy figures (see [`Ssd::meter`]).
#[derive(Clone, Copy, Debug)]
struct SsdPower {
    idle_w: f64,
    controller_w: f64,
    nand_w: f64,
    link_pj_per_bit: f64,
}

/// The DRAM write buffer (write-back cache): pages accepted from the host
/// and not yet programmed.
#[derive(Default)]
struct WriteBuffer {
    /// Capacity in pages (0: no buffer).
    cap: usize,
    /// Accepted, not yet issued to flash: (lpn, time accepted), oldest first.
    pending: VecDeque<(u32, Ns)>,
    /// Issued to flash: (program done, lpn); the slot is held until done.
    inflight: BinaryHeap<Reverse<(Ns, u32)>>,
    /// Buffered copies per logical page (pending or in flight): reads of
    /// these pages are served from DRAM.
    held: FxHashMap<u32, u32>,
}

impl WriteBuffer {
    #[inline]
    fn len(&self) -> usize {
        self.pending.len() + self.inflight.len()
    }

    fn hold(&mut self, lpn: u32) {
        *self.held.entry(lpn).or_insert(0) += 1;
    }

    /// Free the slots of programs done by `now`.
    fn reap(&mut self, now: Ns) {
        while let Some(&Reverse((done, lpn))) = self.inflight.peek() {
            if done > now {
                break;
            }
            self.inflight.pop();
            if let Some(n) = self.held.get_mut(&lpn) {
                *n -= 1;
                if *n == 0 {
                    self.held.remove(&lpn);
                }
            }
        }
    }
}

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

/// A free-block threshold option: a count of blocks (≥ 1) or a fraction (< 1)
/// of the blocks per plane.
fn blocks_opt(p: &Params, key: &str, default: f64, bpp: u32) -> Result<u32> {
    let thr = p.f64_in(key, default, 0.0, bpp as f64)?;
    Ok(if thr < 1.0 {
        ((thr * bpp as f64).ceil() as u32).max(1)
    } else {
        thr.round() as u32
    })
}

/// One class of SSD: the defaults `preset=` sets (every other option
/// overrides its value). Sources in the module comment.
#[derive(Clone, Copy, Debug)]
struct Preset {
    channels: u64,
    dies_per_channel: u64,
    planes: u64,
    blocks_per_plane: u64,
    pages_per_block: u64,
    /// NAND page bytes (the FTL's page, `page_size`, is 4 KiB).
    nand_page: u64,
    program_pages: u64,
    op: f64,
    /// tR, tPROG, tBERS in µs.
    times: (f64, f64, f64),
    channel_mts: f64,
    queue_depth: u64,
    write_buffer: u64,
    plp: bool,
    interface: &'static str,
    gc_bg_threshold: f64,
    gc_idle_threshold: f64,
    suspend: bool,
    alloc: &'static str,
    idle_w: f64,
    controller_w: f64,
    slc_cache: u64,
    slc_prog_us: f64,
}

/// The presets [`preset`] knows; the first is the default.
pub const PRESETS: &[&str] = &["tlc_nvme", "qlc_nvme", "tlc_enterprise", "mqsim"];

fn preset(name: &str) -> Result<Preset> {
    let mqsim = Preset {
        channels: 8,
        dies_per_channel: 4,
        planes: 2,
        blocks_per_plane: 256,
        pages_per_block: 256,
        nand_page: 4096,
        program_pages: 1,
        op: 0.07,
        times: (75.0, 750.0, 3800.0),
        channel_mts: 333.0,
        queue_depth: 32,
        write_buffer: 0,
        plp: false,
        interface: "none",
        gc_bg_threshold: 2.0,
        gc_idle_threshold: 2.0,
        suspend: false,
        alloc: "rr",
        idle_w: 0.5,
        controller_w: 2.5,
        slc_cache: 0,
        slc_prog_us: 200.0,
    };
    let tlc = Preset {
        channels: 8,
        dies_per_channel: 2,
        planes: 4,
        blocks_per_plane: 256,
        pages_per_block: 192,
        nand_page: 16384,
        program_pages: 48,
        op: 0.0737,
        times: (60.0, 2000.0, 5000.0),
        channel_mts: 1200.0,
        queue_depth: 1023,
        write_buffer: 16 << 20,
        plp: false,
        interface: "pcie4x4",
        gc_bg_threshold: 0.015,
        gc_idle_threshold: 0.03,
        suspend: true,
        alloc: "die",
        idle_w: 0.05,
        controller_w: 3.0,
        slc_cache: 64 << 20,
        slc_prog_us: 200.0,
    };
    Ok(match name {
        "mqsim" => mqsim,
        "tlc_nvme" => tlc,
        "qlc_nvme" => Preset {
            channels: 4,
            dies_per_channel: 2,
            program_pages: 64,
            times: (140.0, 4000.0, 10000.0),
            channel_mts: 800.0,
            interface: "pcie3x4",
            slc_cache: 256 << 20,
            ..tlc
        },
        "tlc_enterprise" => Preset {
            channels: 16,
            dies_per_channel: 4,
            op: 0.374,
            write_buffer: 64 << 20,
            plp: true,
            gc_bg_threshold: 0.03,
            gc_idle_threshold: 0.0625,
            idle_w: 5.0,
            controller_w: 6.0,
            slc_cache: 0,
            ..tlc
        },
        other => bail!(
            "option 'preset': unknown ssd preset '{other}' (known: {})",
            PRESETS.join(", ")
        ),
    })
}

/// Build an SSD from options (see the module comment).
pub fn new(p: &Params, seed: u64) -> Result<Box<dyn Device>> {
    Ok(Box::new(Ssd::from_params(p, seed)?))
}

impl Ssd {
    /// Build from options; `seed` drives the random preconditioning overwrites.
    pub fn from_params(p: &Params, seed: u64) -> Result<Ssd> {
        let preset_name = p.str_of("preset", PRESETS[0], PRESETS);
        let pr = preset(&preset_name)?;
        let channels = p.u64_in("channels", pr.channels, 1, 1024)? as u32;
        let dpc = p.u64_in("dies_per_channel", pr.dies_per_channel, 1, 1024)? as u32;
        let planes = p.u64_in("planes_per_die", pr.planes, 1, 16)? as u32;
        let bpp = p.u64_in("blocks_per_plane", pr.blocks_per_plane, 4, 1 << 20)? as u32;
        let np = p.u64_in("pages_per_block", pr.pages_per_block, 2, 65536)? as u32;
        let page_bytes = page_size(p, 4096)?;
        let nand_page = p.size_or("nand_page", pr.nand_page.max(page_bytes))?;
        if nand_page < page_bytes || nand_page % page_bytes != 0 {
            bail!(
                "{}: {nand_page} bytes is not a multiple of the page size ({page_bytes} bytes)",
                p.what("nand_page")
            );
        }
        let op = p.f64_in("op", pr.op, 0.0, 100.0)?;
        let gc_name = p.str_of("gc", "greedy", &["greedy", "fifo"]);
        let Some(policy) = GcPolicy::parse(&gc_name) else {
            bail!("option 'gc': '{gc_name}' is not greedy or fifo");
        };
        let gc_free = blocks_opt(p, "gc_threshold", 2.0, bpp)?;
        let gc_bg_free = blocks_opt(p, "gc_bg_threshold", pr.gc_bg_threshold, bpp)?.max(gc_free);
        let gc_idle_free =
            blocks_opt(p, "gc_idle_threshold", pr.gc_idle_threshold, bpp)?.max(gc_bg_free);
        let gc_idle_ns = (p.f64_in("gc_idle_ms", 10.0, 0.0, 1e6)? * 1e6).round() as Ns;
        let suspend = Suspend {
            enabled: p.bool_or("suspend", pr.suspend)?,
            latency_ns: (p.f64_in("suspend_us", 20.0, 0.0, 1e6)? * 1e3).round() as Ns,
            resume_ns: (p.f64_in("resume_us", 20.0, 0.0, 1e6)? * 1e3).round() as Ns,
        };
        let alloc = p.str_of("alloc", pr.alloc, &["rr", "die"]);
        if alloc != "rr" && alloc != "die" {
            bail!("{}: '{alloc}' is not rr or die", p.what("alloc"));
        }
        let program_pages = p.u64_in("program_pages", pr.program_pages, 1, 64)? as u32;
        let plp = p.bool_or("plp", pr.plp)?;
        let read_priority = p.bool_or("read_priority", pr.suspend)?;
        let flush_wait_ns = (p.f64_in("flush_ms", 1.0, 0.0, 1e6)? * 1e6).round() as Ns;
        let slc_prog_ns = (p.f64_in("slc_prog_us", pr.slc_prog_us, 1.0, 1e6)? * 1e3).round() as Ns;
        let t = nand_timing_or(p, "-", pr.times, pr.channel_mts, 1, page_bytes)?;
        let copyback = p.bool_or("copyback", false)?;
        let depth = p.u64_in("queue_depth", pr.queue_depth, 1, 65536)? as u32;
        let pre = p.str_of("precondition", "seq", &["seq", "full", "none"]);
        let overwrites = p.f64_in("precondition_overwrites", 2.0, 0.0, 100.0)?;
        let buf_bytes = p.size_or("write_buffer", pr.write_buffer)?;
        let slc_cache = p.size_or("slc_cache", pr.slc_cache)?;
        if slc_cache > 0 && (buf_bytes == 0 || alloc != "die") {
            bail!(
                "{}: the SLC cache takes the write buffer's flushes: it needs write_buffer > 0 and alloc=die",
                p.what("slc_cache")
            );
        }
        if buf_bytes > 0 && buf_bytes < page_bytes {
            bail!(
                "{}: {buf_bytes} bytes is less than one page ({page_bytes} bytes)",
                p.what("write_buffer")
            );
        }
        let names: Vec<&str> = INTERFACES.iter().map(|i| i.0).collect();
        let iface = p.str_of("interface", pr.interface, &names);
        let Some(&(_, iface_mbps)) = INTERFACES.iter().find(|i| i.0 == iface) else {
            bail!(
                "{}: '{iface}' is not one of {}",
                p.what("interface"),
                names.join(", ")
            );
        };
        let link_mbps = p.f64_in("host_mbps", iface_mbps, 0.0, 1e7)?;
        let map_bytes = p.size_or("map_cache", 0)?;
        let map_frac = p.f64_in("map_cache_frac", 0.0, 0.0, 1.0)?;
        let entry_bytes = p.u64_in("map_entry_bytes", 4, 1, 64)?;
        let chunk_bytes = p.size_or("map_chunk", entry_bytes)?;
        let hints = p.bool_or("hints", false)?;
        let map_layout = p.str_of("map_layout", "page", &["page", "log"]);
        if map_layout != "page" && map_layout != "log" {
            bail!(
                "{}: '{map_layout}' is not page or log",
                p.what("map_layout")
            );
        }
        if map_bytes > 0 && map_frac > 0.0 {
            bail!("options 'map_cache' and 'map_cache_frac' both set: give the mapping cache in bytes or as a fraction of the map, not both");
        }
        if chunk_bytes < entry_bytes || chunk_bytes % entry_bytes != 0 {
            bail!(
                "{}: {chunk_bytes} bytes is not a multiple of the entry size ({entry_bytes} bytes)",
                p.what("map_chunk")
            );
        }
        if hints && map_bytes == 0 && map_frac == 0.0 {
            bail!(
                "{}: hints need a demand-loaded map: set map_cache or map_cache_frac",
                p.what("hints")
            );
        }
        let power = SsdPower {
            idle_w: p.f64_in("idle_w", pr.idle_w, 0.0, 1e4)?,
            controller_w: p.f64_in("controller_w", pr.controller_w, 0.0, 1e4)?,
            nand_w: p.f64_in("nand_w", 0.066, 0.0, 1e3)?,
            link_pj_per_bit: p.f64_in("link_pj_per_bit", 5.0, 0.0, 1e6)?,
        };

        let dies = channels * dpc;
        let units = dies.checked_mul(planes).context("too many planes")?;
        let phys = units as u64 * bpp as u64 * np as u64;
        let logical = (phys as f64 / (1.0 + op)).floor() as u64;
        let ftl = Ftl::new(units, bpp, np, logical, policy, gc_free)
            .with_context(|| format!("ssd geometry with op={op}, gc_threshold={gc_free} blocks"))?;
        // The background targets must leave spare room for valid data, as
        // the FTL's check does for the foreground threshold.
        let room = units as u64 * (bpp as u64).saturating_sub(gc_idle_free as u64 + 1) * np as u64;
        if logical >= room {
            bail!(
                "options 'gc_bg_threshold'/'gc_idle_threshold' ({gc_bg_free}/{gc_idle_free} blocks per plane with {bpp} blocks): keeping {gc_idle_free} free blocks per plane leaves room for {room} pages, not the {logical} logical pages (op={op}); lower the background GC targets or raise 'op'"
            );
        }
        let mut s = Ssd {
            ftl,
            tl: {
                let mut tl = Timeline::new(t, dies as usize, channels as usize);
                tl.suspend = suspend;
                tl.read_priority = read_priority;
                tl.read_units = nand_page / page_bytes;
                tl.prog_units = program_pages as u64;
                tl
            },
            channels,
            dies,
            copyback,
            page_bytes,
            pages_per_block: np as u64,
            logical_pages: logical,
            depth,
            power,
            plp,
            gc_read_ops: 0,
            gc_prog_ops: 0,
            flash_reads: 0,
            link_bytes: 0,
            host_reads: 0,
            unmapped_reads: 0,
            full_rejects: 0,
            gc_time_ns: 0,
            requests: [0; 2],
            precondition: serde_json::Value::Null,
            buf: WriteBuffer {
                cap: (buf_bytes / page_bytes) as usize,
                ..WriteBuffer::default()
            },
            link: [Link {
                ns_per_byte: if link_mbps > 0.0 {
                    1e3 / link_mbps
                } else {
                    0.0
                },
                free: 0,
            }; 2],
            link_mbps,
            write_dir: usize::from(iface != "sata3"),
            buffer_read_hits: 0,
            buffer_full_waits: 0,
            flushes: 0,
            fua_writes: 0,
            discards: 0,
            planes,
            alloc_die: alloc == "die",
            program_pages,
            plane_rr: vec![0; dies as usize],
            gc_bg_free,
            gc_idle_free,
            gc_idle_ns,
            gc_want: Vec::new(),
            gc_wanted: vec![false; dies as usize],
            last_submit: 0,
            bg_gc_runs: 0,
            bg_gc_copies: 0,
            programs: 0,
            preset: preset_name,
            flush_wait_ns,
            draining: false,
            slc_pages: slc_cache / page_bytes,
            slc_used: 0,
            slc_prog_ns,
            slc_unit: (planes as u64 * (nand_page / page_bytes)).min(64) as u32,
            slc_programs: 0,
            slc_folds: 0,
            slc_direct_pages: 0,
            map: None,
            hint_port: None,
            hint_bytes_up: 0,
            hint_bytes_down: 0,
            map_wait_ns: 0,
        };
        match pre.as_str() {
            "none" => {}
            "seq" | "full" => {
                for lpn in 0..logical as u32 {
                    s.ftl.write(lpn).context("precondition: device full")?;
                }
                if pre == "full" {
                    let mut rng = Pcg64Mcg::seed_from_u64(seed ^ 0x55D_F111);
                    let n = (overwrites * logical as f64) as u64;
                    for _ in 0..n {
                        let lpn = rng.gen_range(0..logical as u32);
                        let out = s.ftl.write(lpn).context("precondition: device full")?;
                        // Background GC keeps its target, as it would have
                        // between these writes: start in its steady state.
                        while s.ftl.free_blocks(out.unit) < s.gc_bg_free {
                            if s.ftl.collect(out.unit).is_none() {
                                break;
                            }
                        }
                    }
                }
                s.precondition = serde_json::json!({
                    "mode": pre,
                    "host_page_writes": s.ftl.stats.host_writes,
                    "gc_page_copies": s.ftl.stats.gc_copies,
                    "erases": s.ftl.stats.erases,
                });
                s.ftl.reset_stats();
            }
            other => bail!("option 'precondition': '{other}' is not none, seq or full"),
        }
        if map_bytes > 0 || map_frac > 0.0 {
            let chunk_entries = chunk_bytes / entry_bytes;
            let chunks = logical.div_ceil(chunk_entries);
            let cap = if map_frac > 0.0 {
                ((chunks as f64 * map_frac).round() as u64).max(1)
            } else {
                (map_bytes / chunk_bytes).max(1)
            };
            s.map = MapCache::new(MapGeom {
                entries: logical,
                entry_bytes,
                chunk_entries,
                page_bytes,
                cap,
                units,
                pages_per_block: np,
                log: map_layout == "log",
            })
            .context("the demand-loaded map (map_cache)")?;
            // From here on GC's moves update the map; the precondition's did not.
            s.ftl.track_moves = true;
            if hints {
                s.hint_port = Some(std::sync::Arc::new(std::sync::Mutex::new(HintBox {
                    page_bytes,
                    logical_pages: logical,
                    chunk_entries,
                    chunk_bytes,
                    chunks: chunks as u32,
                    ..HintBox::default()
                })));
            }
        }
        Ok(s)
    }

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
    /// controller answers zeros without touching flash); else a flash read.
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

    /// Count the NAND operations of `copies` GC copies.
    #[inline]
    fn count_gc(&mut self, copies: u64) {
        self.gc_read_ops += copies.div_ceil(self.tl.read_units);
        self.gc_prog_ops += copies.div_ceil(self.tl.prog_units);
    }

    fn book_gc(&mut self, unit: u32, copies: u64, erases: u64, now: Ns) {
        self.count_gc(copies);
        let (d, c) = self.die_ch(unit);
        self.gc_time_ns += if self.tl.read_priority {
            // The write waits for it; reads preempt it as background work.
            self.tl
                .book_background(d, copies, erases, self.copyback, now)
                .1
        } else {
            self.tl.gc_on_die(d, c, copies, erases, self.copyback, now)
        };
    }

    /// Background and idle-time GC up to `now` (lazily, on each submit): a
    /// die on the list collects one victim at a time, in the plane with the
    /// fewest free blocks, whenever it has no other work, while that plane
    /// is below the background target, or below the idle target once the
    /// host has submitted nothing for `gc_idle_ms`. Reads preempt it.
    fn background_gc(&mut self, now: Ns) {
        let mut i = 0;
        while i < self.gc_want.len() {
            let d = self.gc_want[i];
            if self.collect_on_die(d, now) {
                i += 1;
            } else {
                self.gc_wanted[d as usize] = false;
                self.gc_want.swap_remove(i);
            }
        }
    }

    /// [`Ssd::background_gc`] on die `d`; false once it needs no more.
    fn collect_on_die(&mut self, d: u32, now: Ns) -> bool {
        loop {
            let (u, free) = (0..self.planes)
                .map(|p| p * self.dies + d)
                .map(|u| (u, self.ftl.free_blocks(u)))
                .min_by_key(|x| x.1)
                .unwrap_or((d, u32::MAX));
            if free >= self.gc_idle_free {
                return false;
            }
            let mut s = self.tl.die_ready(d as usize).max(self.last_submit);
            if free >= self.gc_bg_free {
                // Only the idle target is missed: wait for idle time.
                s = s.max(self.last_submit + self.gc_idle_ns);
            }
            if s > now {
                return true;
            }
            let Some(copies) = self.ftl.collect(u) else {
                return false;
            };
            self.count_gc(copies as u64);
            let (_, dur) = self
                .tl
                .book_background(d as usize, copies as u64, 1, self.copyback, s);
            self.gc_time_ns += dur;
            self.map_moves(s + dur);
            self.bg_gc_runs += 1;
            self.bg_gc_copies += copies as u64;
        }
    }

    /// Where the next buffer flush goes, and when it can start: (`alloc=rr`)
    /// the next unit (plane) round-robin, when its die and channel are free,
    /// or (`alloc=die`) the die among those with room that can take a
    /// program first ([`Timeline::program_ready`]: its data may cross the
    /// channel into the cache register while the die is still busy).
    #[inline]
    fn flush_die(&self) -> (u32, Ns) {
        if !self.alloc_die {
            let u = self.ftl.next_unit();
            let (d, c) = self.die_ch(u);
            return (u, self.tl.die_ready(d).max(self.tl.ch_free(c)));
        }
        let mut best = (0, Ns::MAX);
        let n = (self.program_pages as usize).min(self.buf.pending.len()) as u64;
        for d in 0..self.dies {
            let (dd, c) = self.die_ch(d);
            let t = self.tl.program_ready(dd, c, n);
            if t < best.1 && self.die_has_room(d) {
                best = (d, t);
            }
        }
        best
    }

    fn die_has_room(&self, d: u32) -> bool {
        (0..self.planes).any(|p| self.ftl.has_room(p * self.dies + d))
    }

    /// Flush up to `program_pages` buffered pages to die `d` (`alloc=die`)
    /// in one program from `s`, each to the die's next plane with room;
    /// returns when they are programmed.
    fn flush_to_die(&mut self, d: u32, s: Ns) -> Ns {
        let slc = self.slc_room();
        let unit = if slc {
            self.slc_unit
        } else {
            self.program_pages
        };
        let n = (unit as usize).min(self.buf.pending.len());
        let mut lpns = [0u32; 64];
        let mut k = 0;
        let mut known = s;
        for _ in 0..n {
            let Some((lpn, _)) = self.buf.pending.pop_front() else {
                break;
            };
            let mut u = NONE_UNIT;
            for _ in 0..self.planes {
                let p = self.plane_rr[d as usize];
                self.plane_rr[d as usize] = (p + 1) % self.planes;
                if self.ftl.has_room(p * self.dies + d) {
                    u = p * self.dies + d;
                    break;
                }
            }
            let out = if u == NONE_UNIT {
                match self.ftl.write(lpn) {
                    Some(o) => o,
                    None => {
                        self.full_rejects += 1;
                        continue;
                    }
                }
            } else {
                self.ftl.write_to(lpn, u)
            };
            self.after_write(out, s);
            // The entry changes when the page is placed: its chunk is loaded
            // (booked on its die); the slot is held until both are done.
            known = known.max(self.map_access(lpn, true, s));
            if k < lpns.len() {
                lpns[k] = lpn;
            }
            k += 1;
            if k == lpns.len() {
                break;
            }
        }
        let (dd, c) = self.die_ch(d);
        let done = if slc {
            self.slc_programs += 1;
            self.slc_used += k as u64;
            self.tl
                .program_pages_in(dd, c, k as u64, s, self.slc_prog_ns)
        } else {
            self.programs += 1;
            if self.slc_pages > 0 {
                self.slc_direct_pages += k as u64;
            }
            self.tl.program_pages(dd, c, k as u64, s)
        };
        let done = done.max(known);
        for &lpn in &lpns[..k] {
            self.buf.inflight.push(Reverse((done, lpn)));
        }
        done
    }

    /// Whether the SLC cache can take a whole SLC-mode program.
    #[inline]
    fn slc_room(&self) -> bool {
        self.slc_used + self.slc_unit as u64 <= self.slc_pages
    }

    /// Fold the SLC cache into TLC in idle time (no submit for
    /// `gc_idle_ms`): one program's worth (`program_pages`) at a time, on
    /// the die that is free first, as background work reads preempt: its
    /// page reads and one TLC program (the FTL already placed the pages:
    /// the cache is an account of time and capacity).
    fn fold_slc(&mut self, now: Ns) {
        let p = self.program_pages as u64;
        let idle_from = self.last_submit + self.gc_idle_ns;
        while self.slc_used > 0 {
            let (d, t) = (0..self.dies)
                .map(|d| (d, self.tl.die_ready(d as usize)))
                .min_by_key(|x| x.1)
                .unwrap_or((0, Ns::MAX));
            let s = t.max(idle_from);
            if s > now {
                return;
            }
            let n = p.min(self.slc_used);
            let (_, dur) = self.tl.book_background(d as usize, n, 0, true, s);
            self.gc_time_ns += dur;
            self.gc_read_ops += n.div_ceil(self.tl.read_units);
            self.gc_prog_ops += 1;
            self.slc_used -= n;
            self.slc_folds += 1;
        }
    }

    /// Earliest start of the next flush: once the die it goes to and its
    /// channel are free, and the buffer holds a whole program operation
    /// (`program_pages`, when the last of them was accepted) or its oldest
    /// page has waited `flush_ms`; while draining (flush, FUA), at once.
    #[inline]
    fn flush_start(&self) -> Option<(u32, Ns)> {
        let &(_, oldest) = self.buf.pending.front()?;
        let p = if self.slc_room() {
            self.slc_unit
        } else {
            self.program_pages
        } as usize;
        let at = if p <= 1 || self.draining {
            oldest
        } else if let Some(&(_, full)) = self.buf.pending.get(p - 1) {
            full.min(oldest + self.flush_wait_ns)
        } else {
            oldest + self.flush_wait_ns
        };
        let (d, t) = self.flush_die();
        Some((d, at.max(t)))
    }

    /// Bring the write buffer up to `now` (lazily, on each submit): issue
    /// every background flush that starts by then, oldest first, each when
    /// its die and channel are free, and free the slots of programs done by
    /// then. Returns the latest program end among the flushes issued (0 if none).
    fn advance(&mut self, now: Ns) -> Ns {
        let mut last = 0;
        while let Some((d, s)) = self.flush_start() {
            if s > now {
                break;
            }
            let done = if self.alloc_die {
                self.flush_to_die(d, s)
            } else {
                let Some((lpn, _)) = self.buf.pending.pop_front() else {
                    break;
                };
                let done = self.write_page(lpn, s);
                self.buf.inflight.push(Reverse((done, lpn)));
                done
            };
            last = last.max(done);
        }
        self.buf.reap(now);
        last
    }

    /// The next time the buffer's state changes: a flush can start or a
    /// program ends.
    fn next_event(&self) -> Option<Ns> {
        let a = self.flush_start().map(|x| x.1);
        let b = self.buf.inflight.peek().map(|r| r.0 .0);
        match (a, b) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The first time from `t` on with a free buffer slot (the buffer is
    /// advanced to it).
    fn slot_at(&mut self, t: Ns) -> Ns {
        let mut t = t;
        self.advance(t);
        if self.buf.len() >= self.buf.cap {
            self.buffer_full_waits += 1;
        }
        while self.buf.len() >= self.buf.cap {
            let Some(n) = self.next_event() else { break };
            t = t.max(n);
            self.advance(t);
        }
        t
    }

    /// Drain the buffer from `t`: issue every pending page and wait for all
    /// programs; returns when the last is on flash (`t` if the buffer is empty).
    fn drain(&mut self, t: Ns) -> Ns {
        self.draining = true;
        let end = self.drain_all(t);
        self.draining = false;
        end
    }

    fn drain_all(&mut self, t: Ns) -> Ns {
        let mut t = t;
        self.advance(t);
        while !self.buf.pending.is_empty() {
            let Some((_, s)) = self.flush_start() else {
                break;
            };
            t = t.max(s);
            self.advance(t);
        }
        let end = self
            .buf
            .inflight
            .iter()
            .map(|r| r.0 .0)
            .max()
            .unwrap_or(t)
            .max(t);
        self.advance(end);
        end
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
mod tests {
    use super::*;

    fn rq(op: Op, sector: u64, sectors: u32) -> Request {
        Request::standalone(op, true, sector, sectors)
    }

    fn small(extra: &str) -> Ssd {
        let s = format!("preset=mqsim,channels=2,dies_per_channel=2,planes_per_die=1,blocks_per_plane=32,pages_per_block=16,op=0.2{extra}");
        Ssd::from_params(&Params::parse_kv(&s).unwrap(), 1).unwrap()
    }

    /// Sector of a logical page.
    fn sec(lpn: u64) -> u64 {
        lpn * 8
    }

    #[test]
    fn the_demand_loaded_map_is_metered_and_discards_change_it() {
        let mut d = small(",map_cache_frac=0.01,map_chunk=512,write_buffer=0,slc_cache=0");
        let reads = |d: &Ssd| {
            d.meter(0)
                .report(1)
                .parts
                .iter()
                .find(|p| p.name == "page_read")
                .map_or(0, |p| p.count)
        };
        d.submit(&rq(Op::Read, 0, 8), 0);
        // A chunk read and the data read.
        assert_eq!(reads(&d), 2);
        let ms = |d: &Ssd| d.map.as_ref().unwrap().stats;
        let before = ms(&d).lookups;
        // A discard of 1 MiB (256 pages, 2 chunks of 128 entries) changes them.
        d.discard(2048, 2048, 1_000_000).unwrap();
        assert_eq!(ms(&d).lookups - before, 2);
        let v = d
            .map
            .as_ref()
            .unwrap()
            .version(d.map.as_ref().unwrap().chunk_of(256));
        assert_eq!(v, 1);
    }

    #[test]
    fn single_read_on_idle_device() {
        let mut d = small(",cell=slc,channel_mts=400");
        let t = d.timing();
        assert_eq!((t.read_ns, t.xfer_ns, t.cmd_ns), (25_000, 10_240, 18));
        let done = d.submit(&rq(Op::Read, sec(5), 8), 1_000);
        assert_eq!(done, 1_000 + 18 + 25_000 + 10_240);
    }

    #[test]
    fn reads_same_die_serialize_other_dies_overlap() {
        // After a sequential fill, lpn k sits on unit k mod 4; unit u is die u,
        // channel u mod 2. lpn 0 and 4: same die; 0 and 1: other channel;
        // 0 and 2: same channel, other die.
        let one = {
            let mut d = small("");
            d.submit(&rq(Op::Read, 0, 8), 0)
        };
        let t = small("").timing();
        assert_eq!(one, t.cmd_ns + t.read_ns + t.xfer_ns);
        let mut d = small("");
        d.submit(&rq(Op::Read, sec(0), 8), 0);
        let same_die = d.submit(&rq(Op::Read, sec(4), 8), 0);
        assert_eq!(same_die, 2 * (t.cmd_ns + t.read_ns) + t.xfer_ns);
        let mut d = small("");
        d.submit(&rq(Op::Read, sec(0), 8), 0);
        assert_eq!(
            d.submit(&rq(Op::Read, sec(1), 8), 0),
            one,
            "other channel: full overlap"
        );
        let mut d = small("");
        d.submit(&rq(Op::Read, sec(0), 8), 0);
        assert_eq!(
            d.submit(&rq(Op::Read, sec(2), 8), 0),
            one + t.xfer_ns,
            "same channel: only transfers serialize"
        );
        // One request over 4 pages on 4 dies/2 channels: two transfers per channel.
        let mut d = small("");
        assert_eq!(d.submit(&rq(Op::Read, 0, 32), 0), one + t.xfer_ns);
    }

    #[test]
    fn writes_program_timing_and_gc_counters() {
        let mut d = small(",precondition=none");
        let t = d.timing();
        let done = d.submit(&rq(Op::Write, 0, 8), 0);
        assert_eq!(done, t.cmd_ns + t.xfer_ns + t.prog_ns);
        // Unmapped read counted and answered without a flash read.
        let r = d.submit(&rq(Op::Read, sec(100), 8), 10 * crate::types::MS);
        assert_eq!(r, 10 * crate::types::MS + t.cmd_ns);
        assert_eq!(d.counters()["unmapped_page_reads"], 1);
        // Random overwrites in steady state: GC runs, WA > 1, gc time accrues.
        let mut d = small(",precondition=full,gc=fifo");
        let l = d.logical_pages;
        let mut rng = Pcg64Mcg::seed_from_u64(3);
        let mut now = 0;
        for _ in 0..4 * l {
            now = d.submit(&rq(Op::Write, sec(rng.gen_range(0..l)), 8), now);
        }
        let c = d.counters();
        let wa = c["write_amplification"].as_f64().unwrap();
        assert!(wa > 1.5, "WA {wa}");
        assert!(c["gc_time_ns"].as_u64().unwrap() > 0);
        assert_eq!(c["host_page_writes"].as_u64().unwrap(), 4 * l);
        assert!(c["precondition"]["host_page_writes"].as_u64().unwrap() == 3 * l);
        d.ftl().check_consistency().unwrap();
        assert_eq!(
            d.ftl().total_block_erases(),
            d.ftl().stats.erases + c["precondition"]["erases"].as_u64().unwrap()
        );
    }

    fn with(op: Op, sector: u64, sectors: u32, fua: bool, preflush: bool) -> Request {
        let mut r = rq(op, sector, sectors);
        r.attrs.fua = fua;
        r.attrs.preflush = preflush;
        r
    }

    #[test]
    fn write_buffer_absorbs_then_waits_for_slots() {
        // 4 dies, buffer of 8 pages, no link: the first 8 writes complete
        // at once; the 9th waits for the first program to end.
        let mut d = small(",precondition=none,write_buffer=32k");
        let t = d.timing();
        for i in 0..8 {
            assert_eq!(d.submit(&rq(Op::Write, sec(i), 8), 0), 0, "write {i}");
        }
        let first_prog = t.cmd_ns + t.xfer_ns + t.prog_ns;
        assert_eq!(d.submit(&rq(Op::Write, sec(8), 8), 0), first_prog);
        assert_eq!(d.counters()["buffer_full_waits"], 1);
        // A read of a buffered page is served from DRAM; a flushed one from flash.
        assert_eq!(d.submit(&rq(Op::Read, sec(7), 8), first_prog), first_prog);
        assert_eq!(d.counters()["buffer_read_hits"], 1);
        // Long after, everything is on flash: a read costs a flash read
        // and an empty flush completes at once.
        let late = 100 * crate::types::MS;
        assert_eq!(
            d.submit(&rq(Op::Read, sec(7), 8), late),
            late + t.cmd_ns + t.read_ns + t.xfer_ns
        );
        assert_eq!(d.submit(&with(Op::Write, 0, 0, false, true), late), late);
        assert_eq!(d.ftl().stats.host_writes, 9);
    }

    #[test]
    fn flush_and_fua_wait_for_flash() {
        let mut d = small(",precondition=none,write_buffer=1m");
        let t = d.timing();
        let prog = t.cmd_ns + t.xfer_ns + t.prog_ns;
        // 8 pages over 4 dies: two programs per die, the second die's
        // transfers queue behind the first on the shared channel.
        for i in 0..8 {
            assert_eq!(d.submit(&rq(Op::Write, sec(i), 8), 0), 0);
        }
        let flushed = d.submit(&with(Op::Write, 0, 0, false, true), 0);
        assert!(flushed >= 2 * prog, "flush {flushed} < two programs");
        assert_eq!(d.counters()["flushes"], 1);
        assert_eq!(d.ftl().stats.host_writes, 8);
        // FUA: the write completes when programmed, not when buffered.
        let now = flushed + crate::types::MS;
        let fua = d.submit(&with(Op::Write, sec(20), 8, true, false), now);
        assert_eq!(fua, now + prog);
        let plain = d.submit(&rq(Op::Write, sec(21), 8), fua);
        assert_eq!(plain, fua);
        // PREFLUSH on a write: the buffered page is programmed first.
        let pf = d.submit(&with(Op::Write, sec(22), 8, false, true), fua);
        assert!(pf >= fua + t.prog_ns, "preflush write {pf}");
        // write_buffer=0: every write costs its program, as before.
        let mut d = small(",precondition=none");
        assert_eq!(d.submit(&rq(Op::Write, 0, 8), 0), prog);
        assert_eq!(d.submit(&with(Op::Write, 0, 0, false, true), 5), 5);
    }

    #[test]
    fn host_link_serialises_transfers() {
        // SATA: 600 MB/s, 4 KiB in 6826.67 ns -> 6827 ns per page.
        let mut d = small(",precondition=none,write_buffer=1m,interface=sata3");
        let x = (4096.0 * 1e3 / 600.0f64).round() as Ns;
        assert_eq!(d.submit(&rq(Op::Write, 0, 8), 0), x);
        assert_eq!(d.submit(&rq(Op::Write, sec(1), 8), 0), 2 * x);
        // 64 KiB write: one transfer of 16 pages' bytes.
        let big = (65536.0 * 1e3 / 600.0f64).round() as Ns;
        assert_eq!(d.submit(&rq(Op::Write, sec(2), 128), 0), 2 * x + big);
        // Unmapped read: command, then the link.
        let late = crate::types::MS * 100;
        let t = d.timing();
        assert_eq!(
            d.submit(&rq(Op::Read, sec(500), 8), late),
            late + t.cmd_ns + x
        );
        // host_mbps overrides the interface's rate.
        let mut d = small(",precondition=none,interface=pcie4x4,host_mbps=1000");
        let c = d.timing().cmd_ns;
        assert_eq!(d.submit(&rq(Op::Read, sec(900), 8), 0), c + 4096);
        assert!(format!(
            "{:#}",
            crate::device::make("ssd", &Params::parse_kv("interface=usb").unwrap(), 0)
                .err()
                .unwrap()
        )
        .contains("'interface'"));
        assert!(format!(
            "{:#}",
            crate::device::make("ssd", &Params::parse_kv("write_buffer=100").unwrap(), 0)
                .err()
                .unwrap()
        )
        .contains("'write_buffer'"));
    }

    #[test]
    fn gc_slows_writes() {
        // Same random write stream, QD1: the full (steady-state) device is
        // slower than the fresh one because GC work occupies the dies.
        let run = |pre: &str| {
            let mut d = small(&format!(",precondition={pre},op=0.25"));
            let l = d.logical_pages;
            let mut rng = Pcg64Mcg::seed_from_u64(9);
            let mut now = 0;
            for _ in 0..l / 2 {
                now = d.submit(&rq(Op::Write, sec(rng.gen_range(0..l)), 8), now);
            }
            now
        };
        let fresh = run("none");
        let full = run("full");
        assert!(
            full as f64 > 1.5 * fresh as f64,
            "fresh {fresh} full {full}"
        );
    }

    #[test]
    fn info_and_capacity() {
        let d = small("");
        let i = d.info();
        assert!(!i.rotational);
        assert_eq!(i.erase_block_sectors, Some(16 * 8));
        assert_eq!(i.queue_depth, 32);
        let phys = 4 * 32 * 16;
        assert_eq!(i.capacity_sectors, (phys as f64 / 1.2).floor() as u64 * 8);
        let mq = Ssd::from_params(&Params::parse_kv("preset=mqsim").unwrap(), 0).unwrap();
        assert_eq!(mq.info().erase_block_sectors, Some(2048));
        assert_eq!(mq.timing().read_ns, 75_000);
        // The default preset: consumer TLC NVMe (see the module comment).
        let dflt = Ssd::from_params(&Params::new(), 0).unwrap();
        assert_eq!(dflt.preset, "tlc_nvme");
        assert_eq!(dflt.info().queue_depth, 1023);
        assert_eq!(dflt.timing().read_ns, 60_000);
        assert_eq!(dflt.timing().prog_ns, 2_000_000);
        assert_eq!((dflt.tl.read_units, dflt.tl.prog_units), (4, 48));
    }

    #[test]
    fn option_errors() {
        let err = |s: &str| match crate::device::make("ssd", &Params::parse_kv(s).unwrap(), 0) {
            Ok(_) => panic!("'{s}' accepted"),
            Err(e) => format!("{e:#}"),
        };
        assert!(
            err("preset=mqsim,blocks_per_plane=64,precondition=none,bogus_opt=1")
                .contains("bogus_opt")
        );
        assert!(err("op=lots").contains("'op'"));
        assert!(err("gc=random").contains("'gc'"));
        assert!(err("precondition=half").contains("'precondition'"));
        assert!(err("page_size=1000").contains("'page_size'"));
        assert!(err("preset=samsung").contains("tlc_nvme, qlc_nvme, tlc_enterprise, mqsim"));
        assert!(err("alloc=random").contains("'alloc'"));
        assert!(err("nand_page=6k").contains("'nand_page'"));
        assert!(err("program_pages=65").contains("'program_pages'"));
        assert!(err("suspend=maybe").contains("'suspend'"));
        // Background targets that leave no spare room are refused.
        assert!(
            err("blocks_per_plane=64,gc_idle_threshold=8,op=0.07").contains("gc_idle_threshold")
        );
        // A fraction is converted to blocks per plane: ceil(0.9 x 64) = 58.
        assert!(err("preset=mqsim,blocks_per_plane=64,gc_threshold=0.9")
            .contains("gc_threshold=58 blocks"));
        assert!(err("blocks_per_plane=8,op=0.01").contains("op"));
        assert!(crate::device::make(
            "ssd",
            &Params::parse_kv("preset=mqsim,blocks_per_plane=8,op=1").unwrap(),
            0
        )
        .is_ok());
    }

    #[test]
    fn background_gc_runs_in_idle_time_and_reads_preempt_it() {
        // Steady state with background targets above the foreground one:
        // after preconditioning every plane is at the background target.
        let opts = ",op=0.5,precondition=full,gc_bg_threshold=4,gc_idle_threshold=8,gc_idle_ms=1";
        let mut d = small(opts);
        let free: Vec<u32> = (0..d.ftl().units())
            .map(|u| d.ftl().free_blocks(u))
            .collect();
        assert!(free.iter().all(|&f| f >= 4), "{free:?}");
        let l = d.logical_pages;
        let mut rng = Pcg64Mcg::seed_from_u64(4);
        let mut now = 0;
        for _ in 0..2 * l {
            now = d.submit(&rq(Op::Write, sec(rng.gen_range(0..l)), 8), now);
        }
        // A long idle gap, then reads: idle-time GC collected up to the
        // idle target, and the reads find it running or done.
        now += 2 * crate::types::MS;
        for _ in 0..200 {
            now = d.submit(&rq(Op::Read, sec(rng.gen_range(0..l)), 8), now);
        }
        let c = d.counters();
        assert!(c["background_gc_runs"].as_u64().unwrap() > 0, "{c}");
        assert!(c["read_preemptions"].as_u64().unwrap() > 0, "{c}");
        // After a long idle time every plane reached the idle target.
        d.submit(&rq(Op::Read, 0, 8), now + 2000 * crate::types::MS);
        let c = d.counters();
        for u in 0..d.ftl().units() {
            assert!(d.ftl().free_blocks(u) >= 4, "unit {u}: {c}");
        }
        assert!(
            (0..d.ftl().units()).all(|u| d.ftl().free_blocks(u) >= 8),
            "{c}"
        );
        d.ftl().check_consistency().unwrap();
        // Without background targets no GC runs in the background.
        let mut d = small(",precondition=full");
        let mut now = 0;
        for _ in 0..l {
            now = d.submit(&rq(Op::Write, sec(rng.gen_range(0..l)), 8), now);
        }
        assert_eq!(d.counters()["background_gc_runs"], 0);
    }

    #[test]
    fn buffer_flushes_fill_program_operations_and_pick_free_dies() {
        // 4 dies, 4 pages per program, die-aware: 4 buffered writes make one
        // program on one die; 3 wait for more data or flush_ms (1 ms).
        let mut d = small(",precondition=none,write_buffer=1m,alloc=die,program_pages=4");
        let t = d.timing();
        for i in 0..3 {
            d.submit(&rq(Op::Write, sec(i), 8), 0);
        }
        d.submit(&rq(Op::Read, sec(100), 8), 10_000);
        assert_eq!(d.counters()["program_ops"], 0);
        d.submit(&rq(Op::Write, sec(3), 8), 20_000);
        d.submit(&rq(Op::Read, sec(100), 8), 30_000);
        assert_eq!(d.counters()["program_ops"], 1);
        // The die that took them is busy: the next full program goes to
        // another die and starts at once.
        for i in 4..8 {
            d.submit(&rq(Op::Write, sec(i), 8), 40_000);
        }
        d.submit(&rq(Op::Read, sec(100), 8), 50_000);
        assert_eq!(d.counters()["program_ops"], 2);
        let end = d.drain(50_000);
        assert_eq!(end, 40_000 + t.cmd_ns + 4 * t.xfer_ns + t.prog_ns);
        // A lone page is flushed after flush_ms.
        let mut d = small(",precondition=none,write_buffer=1m,alloc=die,program_pages=4");
        d.submit(&rq(Op::Write, 0, 8), 0);
        d.submit(&rq(Op::Read, sec(100), 8), 999_999);
        assert_eq!(d.counters()["program_ops"], 0);
        d.submit(&rq(Op::Read, sec(100), 8), 1_000_000);
        assert_eq!(d.counters()["program_ops"], 1);
    }

    #[test]
    fn power_loss_protection_makes_flush_and_fua_cheap() {
        let mut d = small(",precondition=none,write_buffer=1m,plp=1");
        d.submit(&rq(Op::Write, 0, 8), 0);
        assert_eq!(d.submit(&with(Op::Write, 0, 0, false, true), 5), 5);
        assert_eq!(d.submit(&with(Op::Write, sec(1), 8, true, false), 6), 6);
        let mut d = small(",precondition=none,write_buffer=1m");
        d.submit(&rq(Op::Write, 0, 8), 0);
        assert!(d.submit(&with(Op::Write, 0, 0, false, true), 5) > 5);
    }

    #[test]
    fn energy_counts_each_operation() {
        // Reads only, no link: E = idle_w*T + controller_w*busy + reads *
        // nand_w * (cmd + tR + xfer).
        let mut d = small(",idle_w=1,controller_w=2,nand_w=0.1");
        let t = d.timing();
        let mut now = 0;
        for i in 0..10 {
            now = d.submit(&rq(Op::Read, sec(i), 8), now);
        }
        let e = d.energy(1_000_000_000, 500_000_000);
        let per_read = 0.1e-9 * (t.cmd_ns + t.read_ns + t.xfer_ns) as f64;
        let want = 1.0 + 2.0 * 0.5 + 10.0 * per_read;
        assert!((e.total_j - want).abs() < 1e-9, "{e:?} vs {want}");
        // Writes with GC cost more than the same count of writes without.
        let run = |pre: &str| {
            let mut d = small(&format!(",precondition={pre}"));
            let l = d.logical_pages;
            let mut rng = Pcg64Mcg::seed_from_u64(2);
            for _ in 0..l {
                d.submit(&rq(Op::Write, sec(rng.gen_range(0..l)), 8), 0);
            }
            d.energy(1_000_000_000, 0).total_j
        };
        assert!(run("full") > 1.5 * run("none") - 0.5);
    }

    #[test]
    fn slc_cache_fills_then_writes_go_direct_and_idle_time_folds_it() {
        let opts = ",precondition=none,write_buffer=1m,alloc=die,program_pages=4,nand_page=8k,slc_cache=64k,gc_idle_ms=1";
        let mut d = small(opts);
        // 16 SLC pages, 2 per SLC program (1 plane x 2 pages per NAND page).
        let mut now = 0;
        for i in 0..40 {
            now = d.submit(&rq(Op::Write, sec(i), 8), now + 1000);
        }
        d.drain(now);
        let c = d.counters();
        assert_eq!(c["slc_programs"], 8, "{c}");
        assert_eq!(c["slc_direct_pages"], 24, "{c}");
        // Writes kept coming (1 us apart): no idle time, nothing folded.
        assert_eq!(c["slc_folds"], 0, "{c}");
        // After idle time the cache is folded (4 pages per TLC program) and
        // takes writes again.
        now += 100 * crate::types::MS;
        d.submit(&rq(Op::Write, sec(100), 8), now);
        let c = d.counters();
        assert_eq!(c["slc_folds"], 4, "{c}");
        d.drain(now + 1);
        assert_eq!(d.counters()["slc_programs"], 9);
        let e = |s: &str| {
            crate::device::make("ssd", &Params::parse_kv(s).unwrap(), 0)
                .err()
                .map(|e| format!("{e:#}"))
                .unwrap_or_default()
        };
        assert!(e("preset=mqsim,slc_cache=1m").contains("'slc_cache'"));
    }
}

#[cfg(test)]
mod bench {
    use super::*;

    /// Throughput of the device model alone (`cargo test --release -- --ignored ssd_speed --nocapture`).
    #[test]
    #[ignore]
    fn ssd_speed() {
        for op in [Op::Read, Op::Write] {
            let mut d = Ssd::from_params(
                &Params::parse_kv("preset=mqsim,precondition=full").unwrap(),
                1,
            )
            .unwrap();
            let l = d.logical_pages;
            let mut rng = Pcg64Mcg::seed_from_u64(5);
            let n = 5_000_000u64;
            let mut r = tests_rq(op);
            let t0 = std::time::Instant::now();
            let mut now = 0;
            for i in 0..n {
                r.sector = rng.gen_range(0..l) * 8;
                let done = d.submit(&r, now);
                if i % 32 == 31 {
                    now = done;
                }
            }
            let s = t0.elapsed().as_secs_f64();
            println!(
                "{op:?}: {:.2} M req/s, WA {}",
                n as f64 / s / 1e6,
                d.counters()["write_amplification"]
            );
        }
    }

    fn tests_rq(op: Op) -> Request {
        Request::standalone(op, true, 0, 8)
    }
}
