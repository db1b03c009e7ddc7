//! Cheap flash (SD card / eMMC / USB stick class): a BAST hybrid log-block
//! FTL (Kim et al., "A space-efficient flash translation layer for
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
//! Options (defaults): size 4g, page_size 4k, pages_per_block 256 (1 MiB erase
//! blocks), log_blocks 4, dies 1 (1..=2), cell mlc (tR 75 µs, tPROG 750 µs,
//! tBERS 3.8 ms), read_us/prog_us/erase_us overrides, channel_mts 50 and
//! bus_bytes 1 (ONFI 1.0-class), cmd_ns (7 bus cycles), queue_depth 1,
//! precondition full (every page holds data, as on a used card, so merges copy
//! whole blocks) or none, active_w 1.0, idle_w 0.1.
//! Write amplification = (host page programs + merge copies) / host page programs.

use super::flash::ftl::NONE;
use super::flash::timeline::Timeline;
use super::flash::{nand_timing, page_size, NandTiming};
use super::{Device, Power};
use crate::params::Params;
use crate::sched::DeviceInfo;
use crate::types::{Ns, Op, Request, SECTOR};
use anyhow::{bail, Result};

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
    /// Device time spent merging.
    pub merge_time_ns: u64,
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
    power: Power,
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
        let size = p.size_or("size", 4 << 30)?;
        let page_bytes = page_size(p, 4096)?;
        let np = p.u64_in("pages_per_block", 256, 2, 65536)? as u32;
        let log_blocks = p.u64_in("log_blocks", 4, 1, 4096)? as usize;
        let dies = p.u64_in("dies", 1, 1, 2)? as u32;
        let t = nand_timing(p, "mlc", 50.0, 1, page_bytes)?;
        let depth = p.u64_in("queue_depth", 1, 1, 65536)? as u32;
        let pre = p.str_of("precondition", "full", &["full", "none"]);
        let power = Power {
            active_w: p.f64_in("active_w", 1.0, 0.0, 1e4)?,
            idle_w: p.f64_in("idle_w", 0.1, 0.0, 1e4)?,
        };
        let blocks = size / (np as u64 * page_bytes);
        if blocks <= log_blocks as u64 || blocks >= NONE as u64 {
            bail!("option 'size': {size} bytes gives {blocks} erase blocks of {np} x {page_bytes} B; need more than log_blocks={log_blocks}");
        }
        let full = match pre.as_str() {
            "full" => true,
            "none" => false,
            other => bail!("option 'precondition': '{other}' is not full or none"),
        };
        let words = (np as usize).div_ceil(64);
        let mut exists = vec![0u64; blocks as usize * words];
        if full {
            for b in 0..blocks as usize {
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
            blocks: blocks as u32,
            words,
            exists,
            data_present: vec![full; blocks as usize],
            log_of: vec![NONE; blocks as usize],
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
            power,
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
        }
    }

    fn submit(&mut self, rq: &Request, now: Ns) -> Ns {
        if rq.sectors == 0 {
            return now;
        }
        self.requests[rq.op.idx()] += 1;
        let pages = self.blocks as u64 * self.np as u64;
        let first = rq.sector * SECTOR / self.page_bytes;
        let last = (rq.end() * SECTOR - 1) / self.page_bytes;
        let mut done = now;
        for pg in first..=last {
            let pg = pg % pages;
            let t = match rq.op {
                Op::Read => self.read_page(pg, now),
                Op::Write => self.write_page(pg, now),
            };
            done = done.max(t);
        }
        done
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
        })
    }

    fn energy(&self, elapsed: Ns, busy: Ns) -> super::energy::Energy {
        super::energy::from_power(self.power.active_w, self.power.idle_w, elapsed, busy)
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
            &Params::parse_kv(&format!("size=256m,pages_per_block=64{opts}")).unwrap(),
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

    #[test]
    fn option_errors() {
        let err =
            |s: &str| match crate::device::make("cheapflash", &Params::parse_kv(s).unwrap(), 0) {
                Ok(_) => panic!("'{s}' accepted"),
                Err(e) => format!("{e:#}"),
            };
        assert!(err("log_blocks=2,bogus_opt=1").contains("bogus_opt"));
        assert!(err("log_blocks=0").contains("'log_blocks'"));
        assert!(err("dies=3").contains("'dies'"));
        assert!(err("size=1m").contains("'size'"));
        assert!(err("precondition=half").contains("'precondition'"));
        assert!(crate::device::make(
            "cheapflash",
            &Params::parse_kv("size=64m,dies=2").unwrap(),
            0
        )
        .is_ok());
    }
}
