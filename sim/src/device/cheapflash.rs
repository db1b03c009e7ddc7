//! Cheap flash (SD card / eMMC / USB stick class): a page-mapped FTL with an
//! optional SLC cache (current classes, below), or a BAST hybrid log-block
//! FTL (the 2008 class; Kim et al., "A space-efficient flash translation layer for
//! CompactFlash systems", 2002; FlashSim's BAST FTL) on one channel with one
//! or two dies.
//!
//! FTL: data blocks are block-mapped (logical block lb = page / pages_per_block
//! has one data block). Writes go to a log block associated with exactly one
//! logical block (block-associative); at most `log_blocks` logs are open. A
//! write to a logical block whose log is full, or one that needs a log when
//! all are in use (victim: the oldest-opened log), first merges that log:
//! - switch merge: the log was written sequentially in full (page i at
//!   offset i) — it becomes the data block; cost: erase the old data block.
//!   Done eagerly as soon as such a log fills.
//! - partial merge: the log holds offsets 0..k written in order — the
//!   remaining pages k..N of the old data block that hold data are copied
//!   into it, it becomes the data block, the old one is erased.
//! - full merge: otherwise — every page of the logical block that holds data
//!   (latest copy, from log or data block) is read and programmed into a
//!   new block; the old data block and the log are erased.
//!
//! Timing (ns): the flash page-timing model shared with the SSD
//! ([`super::flash::timeline`]) on one channel and each die: a page read is
//! die cmd + tR then a channel transfer; a program is a channel cmd +
//! transfer then die tPROG; page offset o of a block lives on die o mod dies
//! (the erase block is a superblock over the dies). A merge
//! (`Timeline::merge_on_all_dies`) starts when all dies are free, copies go
//! through the controller (no copyback): per die
//! copies_d·(2·cmd + tR + tPROG + 2·xfer), at least the channel's
//! 2·copies·xfer, then erases·(cmd + tBERS)
//! with the dies erasing in parallel; it occupies every die (and the channel
//! during the copy phase) and is charged to the write that triggered it; the
//! total is `merge_time_ns`.
//! Sub-page writes program a whole page; sectors past the capacity wrap.
//!
//! Page-mapped mode (`ftl=page`, the current classes): the SSD's page-mapped
//! FTL core ([`super::flash::ftl::Ftl`], greedy GC, one GC domain per die,
//! host pages striped over the dies), `size` of raw flash of which the host
//! sees size / (1 + `op`); GC booked on its die before the write
//! (`Timeline::gc_on_die`). Optional SLC cache (`slc_cache` bytes): host
//! writes are programmed in SLC mode (tR 25 µs, tPROG 200 µs, the `slc` cell
//! preset) on the dies round-robin; the oldest cached page is folded into the
//! main area on the same die (SLC read, then a main-area write with its GC,
//! as on-die folding does) when a write
//! finds the cache full (the write waits for the read only) and while the
//! card is idle (accounted lazily on the next submit: folds start when the
//! previous work ended, if before it); every `pages_per_block` folds erase an
//! SLC block; a page written again while cached leaves a stale copy that
//! folds for free; reads of cached pages are SLC reads.
//!
//! Presets (`preset=`; other options override their values). The classes'
//! minimums are the SD Association's Application Performance Class (SD 5.1
//! A1: ≥ 1500 random read / ≥ 500 random write 4 KiB IOPS, 10 MB/s sustained
//! sequential; SD 6.0 A2: 4000 / 2000, with command queueing and a cache;
//! sdcard.org "Application Performance Class"); eMMC 5.1 (JEDEC JESD84-B51):
//! HS400, command queue of 32 tasks (the host bus is not modelled: the NAND
//! channel is the card's only bus). The geometry and timing below are
//! ESTIMATED (no vendor publishes them), chosen so a card meets its class;
//! `vsim validate` shows each preset's IOPS against the minimum:
//! * `sd2008`: the 2008-class card, BAST with 4 logs, one MLC die at
//!   50 MT/s × 8 bit, queue depth 1 (the default before issue 11; ≈ 4 random
//!   4 KiB write IOPS on a full card).
//! * `sd_a1` (default): page FTL, 7 % spare, 2 MLC dies at 100 MT/s, queue
//!   depth 1 (A1 has no command queue), no cache.
//! * `sd_a2`: page FTL, 4 MLC dies at 200 MT/s, queue depth 32, 256 MiB SLC
//!   cache.
//! * `emmc51`: page FTL, 8 TLC dies at 400 MT/s, queue depth 32 (CQ), 1 GiB
//!   SLC cache.
//!
//! Options (defaults from the preset): preset, ftl (bast | page), size 4g,
//! page_size 4k, pages_per_block 256 (1 MiB erase blocks), log_blocks (BAST),
//! op (page FTL), slc_cache, dies (1..=8), cell (slc/mlc/tlc), read_us/prog_us/erase_us
//! overrides, channel_mts and bus_bytes 1, cmd_ns (7 bus cycles),
//! queue_depth, host_tags (the block layer's tags from Linux's host driver:
//! 64 for the SD presets, whose cards take one command at a time; 0 = the
//! queue depth, as for the command-queueing presets), precondition full (every page holds data, as on a used card,
//! so merges copy whole blocks) or none, idle_w 0.1 (ESTIMATED), nand_w
//! 0.066 (energy per operation, see [`CheapFlash::meter`]).
//! Write amplification = (host page programs + merge copies) / host page programs.

use super::energy::Meter;
use super::flash::ftl::{mem_available_bytes, Ftl, GcPolicy, NONE};
use super::flash::timeline::Timeline;
use super::flash::{cell_preset, nand_timing, page_size, NandTiming};
use super::{check_state_memory, Device};
use crate::params::Params;
use crate::types::DeviceInfo;
use crate::types::{Ns, Op, Request, SECTOR};
use anyhow::{bail, Context, Result};
use std::collections::{HashMap, VecDeque};

/// One class of card: the defaults `preset=` sets (every other option
/// overrides its value).
struct Preset {
    /// Page-mapped FTL (`true`) or BAST log blocks.
    page_ftl: bool,
    log_blocks: u64,
    dies: u64,
    cell: &'static str,
    channel_mts: f64,
    bus_bytes: u64,
    queue_depth: u64,
    /// Tags Linux's host driver gives the block layer (0: the queue depth):
    /// the mmc driver's 64 for a card without a command queue; with one
    /// (eMMC CQE, SD A2), the card's depth.
    host_tags: u64,
    /// SLC cache bytes (page FTL only; 0 = none).
    slc_cache: u64,
    /// Over-provisioning of the page FTL (spare / logical).
    op: f64,
    idle_w: f64,
}

/// The presets [`preset`] knows.
pub const PRESETS: &[&str] = &["sd2008", "sd_a1", "sd_a2", "emmc51"];

fn preset(name: &str) -> Result<Preset> {
    let legacy = Preset {
        page_ftl: false,
        log_blocks: 4,
        dies: 1,
        cell: "mlc",
        channel_mts: 50.0,
        bus_bytes: 1,
        queue_depth: 1,
        host_tags: 64,
        slc_cache: 0,
        op: 0.07,
        idle_w: 0.1,
    };
    Ok(match name {
        "sd2008" => legacy,
        "sd_a1" => Preset {
            page_ftl: true,
            dies: 2,
            channel_mts: 100.0,
            ..legacy
        },
        "sd_a2" => Preset {
            page_ftl: true,
            dies: 4,
            channel_mts: 200.0,
            queue_depth: 32,
            host_tags: 0,
            slc_cache: 256 << 20,
            ..legacy
        },
        "emmc51" => Preset {
            page_ftl: true,
            dies: 8,
            cell: "tlc",
            channel_mts: 400.0,
            queue_depth: 32,
            host_tags: 0,
            slc_cache: 1 << 30,
            ..legacy
        },
        other => bail!(
            "option 'preset': unknown cheapflash preset '{other}' (known: {})",
            PRESETS.join(", ")
        ),
    })
}

/// The page-mapped mode: FTL, SLC cache, and its counters.
struct PageMode {
    ftl: Ftl,
    /// SLC program/read timing (the cell's own timing is the main area's).
    slc: NandTiming,
    /// SLC cache capacity in pages (0: none).
    slc_pages: u64,
    /// Logical pages in the SLC cache with the die holding each, oldest
    /// first (a page written again appears again; its older copy is stale
    /// and folds for free).
    slc_fifo: VecDeque<(u32, u32)>,
    /// Of each logical page in `slc_fifo`: its copies there and the die of
    /// the newest (kept only for the pages in the cache, not per logical
    /// page of the device).
    slc_held: HashMap<u32, (u32, u8)>,
    /// Die of the next SLC write (round-robin).
    next_die: u32,
    /// Folded SLC pages since the last SLC block erase.
    folded_in_block: u32,
}

/// One SLC copy of `lpn` left the cache: whether copies of it remain.
fn drop_copy(held: &mut HashMap<u32, (u32, u8)>, lpn: u32) -> bool {
    match held.get_mut(&lpn) {
        Some((n, _)) if *n > 1 => {
            *n -= 1;
            true
        }
        _ => {
            held.remove(&lpn);
            false
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct LogSlot {
    /// Logical block it serves, or NONE when free.
    lb: u32,
    /// Pages written into it.
    written: u32,
    /// Page i was written at offset i for every page so far.
    seq: bool,
    /// Opening order (victim = oldest).
    born: u64,
}

/// Merge and page counters.
#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub struct CheapStats {
    /// Pages programmed for the host.
    pub host_page_writes: u64,
    /// Pages read for the host.
    pub host_page_reads: u64,
    /// Pages copied (read + programmed) by merges.
    pub merge_copies: u64,
    /// Merges where a sequentially filled log became the data block.
    pub switch_merges: u64,
    /// Merges completing a sequential prefix log from the data block.
    pub partial_merges: u64,
    /// Merges rewriting the whole logical block into a new block.
    pub full_merges: u64,
    /// Blocks erased.
    pub erases: u64,
    /// Device time spent merging (page FTL: garbage collection).
    pub merge_time_ns: u64,
    /// Host pages written into the SLC cache.
    pub slc_writes: u64,
    /// SLC pages folded into the main area (stale copies included).
    pub slc_folds: u64,
    /// Folds done while a host write waited for room.
    pub slc_foreground_folds: u64,
    /// Host page reads answered from the SLC cache.
    pub slc_read_hits: u64,
    /// Folds that read their page out (not stale).
    pub fold_reads: u64,
    /// Discard requests.
    pub discards: u64,
    /// Pages with data a discard dropped.
    pub trimmed_pages: u64,
}

/// The cheap-flash model.
pub struct CheapFlash {
    tl: Timeline,
    dies: u32,
    np: u32,
    page_bytes: u64,
    blocks: u32,
    words: usize,
    exists: Vec<u64>,
    data_present: Vec<bool>,
    log_of: Vec<u32>,
    slots: Vec<LogSlot>,
    born: u64,
    depth: u32,
    host_tags: u32,
    /// Baseline power (controller on, NAND idle).
    idle_w: f64,
    /// NAND active power V·I (energy per operation = nand_w × its time).
    nand_w: f64,
    /// Page-mapped mode (`ftl=page`), else BAST.
    page: Option<PageMode>,
    /// Latest completion booked (background folds start after it).
    busy_until: Ns,
    preset: String,
    /// Counters.
    pub stats: CheapStats,
    requests: [u64; 2],
}

/// Build from options (see the module comment).
pub fn new(p: &Params, _seed: u64) -> Result<Box<dyn Device>> {
    Ok(Box::new(CheapFlash::from_params(p)?))
}

impl CheapFlash {
    /// Build from options.
    pub fn from_params(p: &Params) -> Result<CheapFlash> {
        let preset_name = p.str_of("preset", "sd_a1", PRESETS);
        let pr = preset(&preset_name)?;
        let size = p.size_or("size", 4 << 30)?;
        let page_bytes = page_size(p, 4096)?;
        let np = p.u64_in("pages_per_block", 256, 2, 65536)? as u32;
        let ftl_kind = p.str_of(
            "ftl",
            if pr.page_ftl { "page" } else { "bast" },
            &["bast", "page"],
        );
        let page_ftl = match ftl_kind.as_str() {
            "page" => true,
            "bast" => false,
            other => bail!("option 'ftl': '{other}' is not bast or page"),
        };
        let log_blocks = p.u64_in("log_blocks", pr.log_blocks, 1, 4096)? as usize;
        let dies = p.u64_in("dies", pr.dies, 1, 8)? as u32;
        let t = nand_timing(p, pr.cell, pr.channel_mts, pr.bus_bytes, page_bytes)?;
        let depth = p.u64_in("queue_depth", pr.queue_depth, 1, 65536)? as u32;
        let host_tags = p.u64_in("host_tags", pr.host_tags, 0, 65536)? as u32;
        let slc_cache = p.size_or("slc_cache", pr.slc_cache)?;
        let op = p.f64_in("op", pr.op, 0.01, 4.0)?;
        let pre = p.str_of("precondition", "full", &["full", "none"]);
        let nand_w = p.f64_in("nand_w", 3.3 * 0.020, 0.0, 100.0)?;
        let idle_w = p.f64_in("idle_w", pr.idle_w, 0.0, 1e4)?;
        let blocks = size / (np as u64 * page_bytes);
        if blocks <= log_blocks as u64 || blocks >= NONE as u64 {
            bail!("option 'size': {size} bytes gives {blocks} erase blocks of {np} x {page_bytes} B; need more than log_blocks={log_blocks}");
        }
        let full = match pre.as_str() {
            "full" => true,
            "none" => false,
            other => bail!("option 'precondition': '{other}' is not full or none"),
        };
        if slc_cache > 0 && !page_ftl {
            bail!("option 'slc_cache': needs ftl=page (the BAST mode has no SLC cache)");
        }
        let mut page = None;
        let mut logical_blocks = blocks;
        let words = (np as usize).div_ceil(64);
        let page_kib = page_bytes >> 10;
        if page_ftl {
            // `size` is the raw flash; the host sees size / (1 + op).
            let bpu = (blocks / dies as u64) as u32;
            let phys = bpu as u64 * dies as u64 * np as u64;
            let logical = (phys as f64 / (1.0 + op)) as u64;
            check_state_memory(
                p,
                "size",
                {
                    let m = Ftl::memory(dies, bpu, np, logical);
                    m.fixed + m.maps_full
                },
                &format!("the page FTL's maps: about 8 bytes per {page_kib} KiB page"),
                mem_available_bytes(),
            )?;
            let mut ftl = Ftl::new(dies, bpu, np, logical, GcPolicy::Greedy, 2)
                .context("option 'op'/'size' (page FTL)")?;
            if full {
                for lpn in 0..logical as u32 {
                    ftl.write(lpn).context("precondition: device full")?;
                }
                ftl.reset_stats();
            }
            let (r, w, _) = cell_preset("slc").expect("slc is a cell preset");
            let slc = NandTiming {
                read_ns: (r * 1e3) as Ns,
                prog_ns: (w * 1e3) as Ns,
                ..t
            };
            logical_blocks = logical / np as u64;
            page = Some(PageMode {
                slc_pages: slc_cache / page_bytes,
                slc_fifo: VecDeque::new(),
                slc_held: HashMap::new(),
                slc,
                ftl,
                next_die: 0,
                folded_in_block: 0,
            });
        }
        let bast_blocks = if page_ftl { 0 } else { blocks as usize };
        check_state_memory(
            p,
            "size",
            (bast_blocks as u64).saturating_mul(words as u64 * 8 + 5),
            &format!("BAST: a bit per {page_kib} KiB page and 5 bytes per erase block"),
            mem_available_bytes(),
        )?;
        let mut exists = vec![0u64; bast_blocks * words];
        if full {
            for b in 0..bast_blocks {
                for w in 0..words {
                    let bits = (np as usize - w * 64).min(64);
                    exists[b * words + w] = if bits == 64 {
                        u64::MAX
                    } else {
                        (1u64 << bits) - 1
                    };
                }
            }
        }
        Ok(CheapFlash {
            tl: Timeline::new(t, dies as usize, 1),
            dies,
            np,
            page_bytes,
            blocks: logical_blocks as u32,
            words,
            exists,
            data_present: vec![full; bast_blocks],
            log_of: vec![NONE; bast_blocks],
            slots: vec![
                LogSlot {
                    lb: NONE,
                    written: 0,
                    seq: true,
                    born: 0
                };
                log_blocks
            ],
            born: 0,
            depth,
            host_tags,
            idle_w,
            nand_w,
            page,
            busy_until: 0,
            preset: preset_name,
            stats: CheapStats::default(),
            requests: [0; 2],
        })
    }

    /// The timing in use.
    pub fn timing(&self) -> NandTiming {
        self.tl.t
    }

    /// Pages of logical block `lb` holding data, among offsets `from..np`.
    fn count_from(&self, lb: u32, from: u32) -> u64 {
        let base = lb as usize * self.words;
        let mut n = 0u64;
        for w in (from as usize / 64)..self.words {
            let mut word = self.exists[base + w];
            if w == from as usize / 64 {
                word &= u64::MAX << (from % 64);
            }
            n += word.count_ones() as u64;
        }
        n
    }

    /// Merge log slot `si` into its logical block; book its time from `now`.
    fn merge(&mut self, si: usize, now: Ns) {
        let s = self.slots[si];
        let lb = s.lb;
        let old_data = self.data_present[lb as usize] as u64;
        let (copies, erases) = if s.seq && s.written == self.np {
            self.stats.switch_merges += 1;
            (0, old_data)
        } else if s.seq {
            self.stats.partial_merges += 1;
            (self.count_from(lb, s.written), old_data)
        } else {
            self.stats.full_merges += 1;
            (self.count_from(lb, 0), 1 + old_data)
        };
        self.stats.merge_copies += copies;
        self.stats.erases += erases;
        self.data_present[lb as usize] = true;
        self.log_of[lb as usize] = NONE;
        self.slots[si].lb = NONE;

        self.stats.merge_time_ns += self.tl.merge_on_all_dies(copies, erases, now);
    }

    /// A log slot for `lb`, merging the oldest log if none is free.
    fn alloc_log(&mut self, lb: u32, now: Ns) -> usize {
        let si = match self.slots.iter().position(|s| s.lb == NONE) {
            Some(i) => i,
            None => {
                let mut v = 0;
                for (i, s) in self.slots.iter().enumerate() {
                    if s.born < self.slots[v].born {
                        v = i;
                    }
                }
                self.merge(v, now);
                v
            }
        };
        self.born += 1;
        self.slots[si] = LogSlot {
            lb,
            written: 0,
            seq: true,
            born: self.born,
        };
        self.log_of[lb as usize] = si as u32;
        si
    }

    fn write_page(&mut self, pg: u64, now: Ns) -> Ns {
        let lb = (pg / self.np as u64) as u32;
        let off = (pg % self.np as u64) as u32;
        let mut si = self.log_of[lb as usize];
        if si != NONE && self.slots[si as usize].written == self.np {
            self.merge(si as usize, now);
            si = NONE;
        }
        let si = if si == NONE {
            self.alloc_log(lb, now)
        } else {
            si as usize
        };
        let s = &mut self.slots[si];
        s.seq &= off == s.written;
        s.written += 1;
        let (seq_full, np) = (s.seq && s.written == self.np, self.np);
        self.exists[lb as usize * self.words + off as usize / 64] |= 1u64 << (off % 64);
        self.stats.host_page_writes += 1;

        let d = (off % self.dies) as usize;
        let done = self.tl.program_page(d, 0, now);
        if seq_full {
            debug_assert!(np == self.slots[si].written);
            self.merge(si, now);
        }
        done
    }

    fn read_page(&mut self, pg: u64, now: Ns) -> Ns {
        self.stats.host_page_reads += 1;
        let d = ((pg % self.np as u64) % self.dies as u64) as usize;
        self.tl.read_page(d, 0, now)
    }

    /// Page FTL: write `lpn` into the main area from `now` (with the GC it
    /// triggers booked on its die first); returns when it is programmed.
    /// `die`: fold on that die (the SLC copy's: on-die folding), else the
    /// FTL's round-robin.
    fn main_write(&mut self, lpn: u32, now: Ns, die: Option<u32>) -> Ns {
        let pm = self.page.as_mut().expect("page mode");
        let out = match die {
            Some(d) => pm.ftl.write_to(lpn, d),
            None => pm
                .ftl
                .write(lpn)
                .expect("the page FTL's capacity check leaves room for every write"),
        };
        let d = out.unit as usize;
        if out.gc_copies > 0 || out.gc_erases > 0 {
            self.stats.merge_copies += out.gc_copies as u64;
            self.stats.erases += out.gc_erases as u64;
            self.stats.merge_time_ns +=
                self.tl
                    .gc_on_die(d, 0, out.gc_copies as u64, out.gc_erases as u64, false, now);
        }
        self.tl.program_page(d, 0, now)
    }

    /// An operation with the SLC timing.
    fn slc_op(&mut self, f: impl FnOnce(&mut Timeline) -> Ns) -> Ns {
        let slc = self.page.as_ref().expect("page mode").slc;
        let main = std::mem::replace(&mut self.tl.t, slc);
        let done = f(&mut self.tl);
        self.tl.t = main;
        done
    }

    /// Fold the oldest SLC page into the main area from `now` (a stale copy
    /// only frees its slot); every `pages_per_block` folds erase an SLC block.
    /// Returns (when its SLC slot is free: the page has been read out, when
    /// the fold is done).
    fn fold_one(&mut self, now: Ns) -> (Ns, Ns) {
        let pm = self.page.as_mut().expect("page mode");
        let Some((lpn, d)) = pm.slc_fifo.pop_front() else {
            return (now, now);
        };
        // A discarded copy (lpn NONE) is stale: it only frees its slot.
        let stale = lpn == NONE || drop_copy(&mut pm.slc_held, lpn);
        pm.folded_in_block += 1;
        let erase = pm.folded_in_block == self.np;
        if erase {
            pm.folded_in_block = 0;
        }
        self.stats.slc_folds += 1;
        let (mut free, mut done) = (now, now);
        if !stale {
            self.stats.fold_reads += 1;
            free = self.slc_op(|tl| tl.read_page(d as usize, 0, now));
            done = self.main_write(lpn, free, Some(d));
        }
        if erase {
            self.stats.erases += 1;
            done += self.tl.gc_on_die(d as usize, 0, 0, 1, false, done);
        }
        (free, done)
    }

    /// Page FTL host write of `lpn` at `now`.
    fn page_write(&mut self, lpn: u32, now: Ns) -> Ns {
        self.stats.host_page_writes += 1;
        let pm = self.page.as_ref().expect("page mode");
        if pm.slc_pages == 0 {
            return self.main_write(lpn, now, None);
        }
        let mut start = now;
        if pm.slc_fifo.len() as u64 >= pm.slc_pages {
            self.stats.slc_foreground_folds += 1;
            start = self.fold_one(now).0;
        }
        let pm = self.page.as_mut().expect("page mode");
        let d = pm.next_die;
        pm.next_die = (pm.next_die + 1) % self.dies;
        pm.slc_fifo.push_back((lpn, d));
        let held = pm.slc_held.entry(lpn).or_insert((0, 0));
        *held = (held.0 + 1, d as u8);
        let d = d as usize;
        self.stats.slc_writes += 1;
        self.slc_op(|tl| tl.program_page(d, 0, start))
    }

    /// Page FTL host read of `lpn` at `now`: from the SLC cache if it is there.
    fn page_read(&mut self, lpn: u32, now: Ns) -> Ns {
        self.stats.host_page_reads += 1;
        let pm = self.page.as_ref().expect("page mode");
        if let Some(&(_, d)) = pm.slc_held.get(&lpn) {
            self.stats.slc_read_hits += 1;
            let d = d as usize;
            return self.slc_op(|tl| tl.read_page(d, 0, now));
        }
        let d = match pm.ftl.lookup(lpn) {
            Some(ppn) => pm.ftl.unit_of_ppn(ppn),
            None => lpn % self.dies,
        } as usize;
        self.tl.read_page(d, 0, now)
    }

    /// Background folding while the card was idle before `now` (accounted
    /// lazily: each fold starts when the previous work ended, if before `now`).
    fn fold_idle(&mut self, now: Ns) {
        while self.page.as_ref().is_some_and(|pm| !pm.slc_fifo.is_empty()) && self.busy_until < now
        {
            let t = self.fold_one(self.busy_until).1;
            self.busy_until = t.max(self.busy_until + 1);
        }
    }

    /// Energy per operation: `idle_w` over the run, and for each NAND
    /// operation V·I·t with t its duration (cmd + tR, cmd + tPROG, cmd +
    /// tBERS, the SLC times for the SLC cache) and V·I = `nand_w` (ESTIMATED:
    /// 3.3 V × 20 mA, NAND datasheets list 10–30 mA active current), plus
    /// each page's transfer over the channel at the same power. Merge and GC
    /// copies count one read and one program each; folds an SLC read and a
    /// main-area program.
    pub fn meter(&self) -> Meter {
        let s = &self.stats;
        let (t, slc) = (self.tl.t, self.slc_timing());
        let w = self.nand_w * 1e-9;
        let mut m = Meter::new(self.idle_w);
        let (main_progs, slc_progs) = match &self.page {
            Some(pm) => (pm.ftl.stats.host_writes + s.merge_copies, s.slc_writes),
            None => (s.host_page_writes + s.merge_copies, 0),
        };
        let main_reads = s.host_page_reads - s.slc_read_hits + s.merge_copies;
        let slc_reads = s.slc_read_hits + s.fold_reads;
        for (name, ns, count) in [
            ("page_read", t.cmd_ns + t.read_ns, main_reads),
            ("page_program", t.cmd_ns + t.prog_ns, main_progs),
            ("block_erase", t.cmd_ns + t.erase_ns, s.erases),
            ("slc_read", slc.cmd_ns + slc.read_ns, slc_reads),
            ("slc_program", slc.cmd_ns + slc.prog_ns, slc_progs),
            (
                "page_transfer",
                t.xfer_ns,
                main_reads + main_progs + slc_reads + slc_progs,
            ),
        ] {
            let id = m.part(name, w * ns as f64);
            m.add(id, count);
        }
        m
    }

    /// The preset the device was built from.
    pub fn preset_name(&self) -> &str {
        &self.preset
    }
    /// The SLC cache's timing (page mode; else the cell's).
    pub fn slc_timing(&self) -> NandTiming {
        self.page.as_ref().map_or(self.tl.t, |p| p.slc)
    }
    /// Dies.
    pub fn info_dies(&self) -> u32 {
        self.dies
    }
    /// SLC cache capacity in pages (0: none).
    pub fn slc_cache_pages(&self) -> u64 {
        self.page.as_ref().map_or(0, |p| p.slc_pages)
    }
    /// Pages in the SLC cache (stale copies included).
    pub fn slc_cached_pages(&self) -> u64 {
        self.page.as_ref().map_or(0, |p| p.slc_fifo.len() as u64)
    }
    /// Pages the page FTL's main area took (folds and direct writes).
    pub fn page_ftl_host_writes(&self) -> u64 {
        self.page.as_ref().map_or(0, |p| p.ftl.stats.host_writes)
    }
    /// Latest completion booked so far.
    pub fn busy_until(&self) -> Ns {
        self.busy_until
    }

    fn write_amplification(&self) -> f64 {
        let h = self.stats.host_page_writes;
        if h == 0 {
            1.0
        } else {
            (h + self.stats.merge_copies) as f64 / h as f64
        }
    }
}

impl Device for CheapFlash {
    fn name(&self) -> &str {
        "cheapflash"
    }

    fn info(&self) -> DeviceInfo {
        DeviceInfo {
            capacity_sectors: self.blocks as u64 * self.np as u64 * self.page_bytes / SECTOR,
            queue_depth: self.depth,
            rotational: false,
            erase_block_sectors: Some((self.np as u64 * self.page_bytes / SECTOR) as u32),
            optimal_io_sectors: None,
            max_hw_sectors: None,
            host_tags: (self.host_tags > self.depth).then_some(self.host_tags),
        }
    }

    fn submit(&mut self, rq: &Request, now: Ns) -> Ns {
        if rq.sectors == 0 {
            return now;
        }
        self.fold_idle(now);
        self.requests[rq.op.idx()] += 1;
        let pages = self.blocks as u64 * self.np as u64;
        let first = rq.sector * SECTOR / self.page_bytes;
        let last = (rq.end() * SECTOR - 1) / self.page_bytes;
        let mut done = now;
        for pg in first..=last {
            let pg = pg % pages;
            let t = match (rq.op, self.page.is_some()) {
                (Op::Read, false) => self.read_page(pg, now),
                (Op::Write, false) => self.write_page(pg, now),
                (Op::Read, true) => self.page_read(pg as u32, now),
                (Op::Write, true) => self.page_write(pg as u32, now),
            };
            done = done.max(t);
        }
        self.busy_until = self.busy_until.max(done);
        done
    }

    fn supports_discard(&self) -> bool {
        true
    }

    /// The pages covered whole hold no data from then on: BAST merges no
    /// longer copy them; the page FTL unmaps them and their SLC copies fold
    /// as stale. A table update in the controller: one command time.
    fn discard(&mut self, sector: u64, sectors: u64, now: Ns) -> Option<Ns> {
        self.fold_idle(now);
        self.stats.discards += 1;
        let pages = self.blocks as u64 * self.np as u64;
        let r = super::flash::whole_pages(sector, sectors, self.page_bytes);
        let r = r.start.min(pages)..r.end.min(pages);
        match self.page.as_mut() {
            Some(pm) => {
                for (lpn, _) in pm.slc_fifo.iter_mut() {
                    if *lpn != NONE && r.contains(&(*lpn as u64)) {
                        let lpn = std::mem::replace(lpn, NONE);
                        drop_copy(&mut pm.slc_held, lpn);
                    }
                }
                for lpn in r {
                    if pm.ftl.trim(lpn as u32) {
                        self.stats.trimmed_pages += 1;
                    }
                }
            }
            None => {
                for pg in r {
                    let (lb, off) = (pg / self.np as u64, pg % self.np as u64);
                    let w = &mut self.exists[lb as usize * self.words + off as usize / 64];
                    let bit = 1u64 << (off % 64);
                    if *w & bit != 0 {
                        *w &= !bit;
                        self.stats.trimmed_pages += 1;
                    }
                }
            }
        }
        Some(now + self.tl.t.cmd_ns)
    }

    fn counters(&self) -> serde_json::Value {
        let s = self.stats;
        serde_json::json!({
            "read_requests": self.requests[0],
            "write_requests": self.requests[1],
            "host_page_reads": s.host_page_reads,
            "host_page_writes": s.host_page_writes,
            "merge_page_copies": s.merge_copies,
            "switch_merges": s.switch_merges,
            "partial_merges": s.partial_merges,
            "full_merges": s.full_merges,
            "erases": s.erases,
            (super::WA_COUNTER): self.write_amplification(),
            "merge_time_ns": s.merge_time_ns,
            "preset": self.preset,
            "ftl": if self.page.is_some() { "page" } else { "bast" },
            "slc_writes": s.slc_writes,
            "slc_folds": s.slc_folds,
            "slc_foreground_folds": s.slc_foreground_folds,
            "discards": s.discards,
            "trimmed_pages": s.trimmed_pages,
        })
    }

    fn energy(&self, elapsed: Ns, _busy: Ns) -> super::energy::Energy {
        self.meter().report(elapsed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_pcg::Pcg64Mcg;

    fn rq(op: Op, sector: u64, sectors: u32) -> Request {
        Request::standalone(op, true, sector, sectors)
    }

    fn dev(opts: &str) -> CheapFlash {
        CheapFlash::from_params(
            &Params::parse_kv(&format!("preset=sd2008,size=256m,pages_per_block=64{opts}"))
                .unwrap(),
        )
        .unwrap()
    }

    /// Closed loop at depth 1; returns elapsed ns.
    fn run(d: &mut CheapFlash, sectors: impl Iterator<Item = u64>) -> Ns {
        let mut now = 0;
        for s in sectors {
            now = d.submit(&rq(Op::Write, s, 8), now);
        }
        now
    }

    #[test]
    fn random_small_writes_much_slower_than_sequential() {
        let n = 512u64;
        let mut seq = dev("");
        let t_seq = run(&mut seq, (0..n).map(|i| i * 8));
        let mut rnd = dev("");
        let cap = rnd.info().capacity_sectors / 8;
        let mut rng = Pcg64Mcg::seed_from_u64(1);
        let t_rnd = run(&mut rnd, (0..n).map(|_| rng.gen_range(0..cap) * 8));
        assert!(
            t_rnd > 20 * t_seq,
            "random {t_rnd} ns vs sequential {t_seq} ns"
        );
        // Sequential: whole blocks switch-merged, nothing copied.
        assert_eq!(seq.stats.switch_merges, n / 64);
        assert_eq!((seq.stats.full_merges, seq.stats.merge_copies), (0, 0));
        assert_eq!(seq.write_amplification(), 1.0);
        assert_eq!(seq.stats.erases, n / 64);
        // Random: once the 4 logs are taken every write forces a merge of a
        // one-page log: full, or partial when that page was at offset 0.
        let st = rnd.stats;
        assert!(st.full_merges + st.partial_merges >= n - 10, "{st:?}");
        assert!(st.full_merges > 10 * st.partial_merges, "{st:?}");
        assert!(rnd.write_amplification() > 50.0);
        assert_eq!(st.erases, 2 * st.full_merges + st.partial_merges);
    }

    #[test]
    fn partial_and_full_merge_costs() {
        let mut d = dev(",log_blocks=1");
        let t = d.timing();
        // Half of block 0 sequentially, then block 1 evicts block 0's log:
        // partial merge copying the 32 remaining pages.
        let mut now = run(&mut d, (0..32).map(|i| i * 8));
        assert_eq!(d.stats.partial_merges, 0);
        let before = now;
        now = d.submit(&rq(Op::Write, 64 * 8, 8), now);
        assert_eq!(d.stats.partial_merges, 1);
        assert_eq!(d.stats.merge_copies, 32);
        assert_eq!(d.stats.erases, 1);
        let merge =
            32 * (2 * t.cmd_ns + t.read_ns + t.prog_ns + 2 * t.xfer_ns) + t.cmd_ns + t.erase_ns;
        assert_eq!(d.stats.merge_time_ns, merge);
        // The host page crosses the channel during the erase, then programs.
        assert_eq!(now - before, merge + t.prog_ns);
        // Out-of-order writes in block 1's log, then block 2 evicts it: full merge
        // of all 64 pages (the device is preconditioned full), two erases.
        run(&mut d, [64 * 8 + 16, 64 * 8 + 8, 128 * 8].into_iter());
        assert_eq!(d.stats.full_merges, 1);
        assert_eq!(d.stats.merge_copies, 32 + 64);
        assert_eq!(d.stats.erases, 3);
        // On an unpreconditioned device a full merge copies only written pages.
        let mut d = dev(",log_blocks=1,precondition=none");
        run(&mut d, [8, 0, 64 * 8].into_iter());
        assert_eq!(
            (d.stats.full_merges, d.stats.merge_copies, d.stats.erases),
            (1, 2, 1)
        );
    }

    #[test]
    fn read_timing_and_two_dies() {
        let mut d = dev(",dies=2");
        let t = d.timing();
        let one = t.cmd_ns + t.read_ns + t.xfer_ns;
        assert_eq!(d.submit(&rq(Op::Read, 0, 8), 0), one);
        // Pages 0 and 1 are on different dies: sensing overlaps, transfers serialize.
        let mut d = dev(",dies=2");
        assert_eq!(d.submit(&rq(Op::Read, 0, 16), 0), one + t.xfer_ns);
        let mut d = dev("");
        // One die: the second sense follows the first; transfers serialize.
        let sense = t.cmd_ns + t.read_ns;
        assert_eq!(
            d.submit(&rq(Op::Read, 0, 16), 0),
            (2 * sense).max(sense + t.xfer_ns) + t.xfer_ns
        );
        let i = d.info();
        assert_eq!(
            (i.erase_block_sectors, i.queue_depth, i.rotational),
            (Some(64 * 8), 1, false)
        );
        assert_eq!(i.capacity_sectors, 256 * 2048);
    }

    fn page_dev(opts: &str) -> CheapFlash {
        CheapFlash::from_params(
            &Params::parse_kv(&format!(
                "preset=emmc51,size=256m,pages_per_block=64,dies=1,queue_depth=1{opts}"
            ))
            .unwrap(),
        )
        .unwrap()
    }

    #[test]
    fn slc_cache_takes_writes_at_slc_speed_then_folds() {
        let mut d = page_dev(",slc_cache=1m");
        assert_eq!(d.slc_cache_pages(), 256);
        let slc = d.slc_timing();
        assert_eq!(slc.prog_ns, 200_000);
        // 256 writes at QD1 into the empty cache: cmd + xfer + tPROG(SLC) each.
        let t = run(&mut d, (0..256u64).map(|i| i * 8 * 3));
        assert_eq!(t, 256 * (slc.cmd_ns + slc.xfer_ns + slc.prog_ns));
        assert_eq!((d.stats.slc_writes, d.stats.slc_folds), (256, 0));
        // The cache is full: the next write first folds the oldest page
        // (SLC read, then the main-area program), waiting only for the read.
        let main = d.timing();
        let t2 = d.submit(&rq(Op::Write, 5000 * 8, 8), t);
        assert_eq!(d.stats.slc_foreground_folds, 1);
        assert_eq!(
            t2 - t,
            slc.cmd_ns
                + slc.read_ns
                + slc.xfer_ns
                + main.cmd_ns
                + main.xfer_ns
                + main.prog_ns
                + slc.prog_ns,
            "fold read, the fold's main program holds the one die, then the SLC program"
        );
        // A second of idle time folds the rest in the background.
        d.submit(&rq(Op::Read, 0, 8), t2 + 1_000_000_000);
        assert_eq!(d.stats.slc_folds, 257);
        assert_eq!(d.slc_cached_pages(), 0);
        // A page written twice: its older copy folds without a main write.
        let mut d = page_dev(",slc_cache=1m,precondition=none");
        let t = run(&mut d, [0u64, 0].into_iter());
        d.submit(&rq(Op::Read, 8, 8), t + 1_000_000_000);
        assert_eq!(d.stats.slc_folds, 2);
        assert_eq!(d.page_ftl_host_writes(), 1);
    }

    #[test]
    fn page_ftl_reads_from_the_slc_cache_and_the_main_area() {
        let mut d = page_dev(",slc_cache=1m");
        let (slc, main) = (d.slc_timing(), d.timing());
        assert_eq!(
            d.submit(&rq(Op::Read, 800, 8), 0),
            main.cmd_ns + main.read_ns + main.xfer_ns
        );
        let t = d.submit(&rq(Op::Write, 800, 8), 0);
        let r = d.submit(&rq(Op::Read, 800, 8), t);
        assert_eq!(r - t, slc.cmd_ns + slc.read_ns + slc.xfer_ns);
        assert_eq!(d.counters()["ftl"], "page");
        assert_eq!(d.counters()["preset"], "emmc51");
    }

    #[test]
    fn energy_counts_each_nand_operation() {
        // BAST: a full merge per random write copies a whole block; the
        // energy above idle is V·I × the operations' time.
        let mut d = dev(",log_blocks=1");
        let t = d.timing();
        let now = run(&mut d, [8u64, 0, 64 * 8].into_iter());
        let s = d.stats;
        let e = d.energy(now, now);
        let vi = 3.3 * 0.020 * 1e-9;
        let reads = s.merge_copies;
        let progs = s.host_page_writes + s.merge_copies;
        let expect = 0.1 * now as f64 / 1e9
            + vi * (reads * (t.cmd_ns + t.read_ns) + progs * (t.cmd_ns + t.prog_ns)) as f64
            + vi * (s.erases * (t.cmd_ns + t.erase_ns)) as f64
            + vi * ((reads + progs) * t.xfer_ns) as f64;
        assert!(
            (e.total_j - expect).abs() < 1e-12,
            "{} vs {expect}",
            e.total_j
        );
        assert_eq!((s.full_merges, e.parts[2].count), (1, s.erases));
        // Page mode: SLC writes and folds are counted as SLC programs and reads.
        let mut d = page_dev(",slc_cache=1m,precondition=none");
        let now = run(&mut d, (0..300u64).map(|i| i * 8));
        let e = d.energy(now, now);
        let by = |n: &str| e.parts.iter().find(|p| p.name == n).unwrap().count;
        assert_eq!(by("slc_program"), 300);
        assert_eq!(by("slc_read"), d.stats.fold_reads);
        assert_eq!(by("page_program"), d.page_ftl_host_writes());
        assert_eq!(d.page_ftl_host_writes(), 300 - 256);
    }

    #[test]
    fn option_errors() {
        let err =
            |s: &str| match crate::device::make("cheapflash", &Params::parse_kv(s).unwrap(), 0) {
                Ok(_) => panic!("'{s}' accepted"),
                Err(e) => format!("{e:#}"),
            };
        assert!(err("log_blocks=2,bogus_opt=1").contains("bogus_opt"));
        assert!(err("log_blocks=0").contains("'log_blocks'"));
        assert!(err("dies=9").contains("'dies'"));
        assert!(err("preset=sd3000").contains("'preset'"));
        assert!(err("ftl=fast").contains("'ftl'"));
        assert!(err("preset=sd2008,slc_cache=1m").contains("'slc_cache'"));
        // 64 erase blocks over 2 dies leave no GC reserve at 7 % spare.
        assert!(err("preset=sd_a1,size=64m,dies=2").contains("'op'"));
        assert!(err("size=1m").contains("'size'"));
        assert!(err("precondition=half").contains("'precondition'"));
        assert!(crate::device::make(
            "cheapflash",
            &Params::parse_kv("preset=sd2008,size=64m,dies=2").unwrap(),
            0
        )
        .is_ok());
    }
}
