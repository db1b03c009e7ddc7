//! Demand-loaded page mapping (DFTL, Gupta, Kim and Urgaonkar, ASPLOS '09;
//! and the chunked two-level map of the hints seed, Budilovsky, Toledo and
//! Zuck, SYSTOR '11): the page map lives in flash, in *chunks* of
//! `chunk_entries` entries reached through a root array in RAM (DFTL's
//! global translation directory); a cache of `cap` chunks (DFTL's cached
//! mapping table) holds the ones in use. No timing here: each access
//! returns the flash operations it costs ([`MapOps`]) for the device to
//! book.
//!
//! - Chunks are stored in translation pages of `page_bytes`: a page holds
//!   `page_bytes / chunk_bytes` chunks, or a chunk spans several pages.
//!   Translation pages live in a flash area of their own (a second [`Ftl`],
//!   `units` planes, separate from the data blocks, with its own greedy GC);
//!   every translation page exists from the start (the map of an empty
//!   device is written when it is formatted).
//! - A miss reads the chunk: one array read per page it spans and its bytes
//!   over the channel (the controller transfers only the chunk from the page
//!   register). DFTL caches single entries and reads the translation page
//!   for each: that is `chunk_entries = 1`.
//! - A write or a GC copy changes an entry: the chunk is loaded if it is not
//!   cached and becomes dirty, and its version goes up. Evicting a dirty
//!   chunk (least recently used first) writes it back: the translation page
//!   is read (unless every chunk of it is cached) and programmed anew, and
//!   every other dirty cached chunk of that page is written with it and
//!   becomes clean (DFTL's batch update).
//! - Data GC moves pages: the device passes the moved pages
//!   ([`MapCache::remap`]); cached chunks become dirty, the others are
//!   updated in flash, one read-modify-write per translation page and
//!   victim (DFTL's GC batching).
//! - Hints: a chunk the device read or changed may be sent to the host
//!   (`Access::send`), which may send it back with a later request; the
//!   device takes it instead of a flash read if its version is current
//!   ([`MapCache::access`] with `hint`); a stale hint is counted and ignored.
//!
//! - `log` (the seed's chunk store): a written-back chunk is appended to a
//!   log of chunks instead (a program per `page_bytes / chunk_bytes` chunks,
//!   no read first, no batch); the translation area's FTL then maps chunks
//!   to slots of a page, and its GC copies slots (a page read and program
//!   per page's worth). A chunk data GC changed that is not cached is read
//!   and appended.
//!
//! `cap = 0`: the whole map in RAM (every access a hit, nothing counted),
//! which is the SSD's behaviour without this option.

use super::ftl::{Ftl, GcPolicy, NONE};
use crate::types::{Ns, SECTOR};
use anyhow::{bail, Result};
use rustc_hash::FxHashMap;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

/// The side channel between a hint-capable device and the host's hint
/// agent (the seed's custom LUN): chunks the device sends up (with the
/// time they reach the host), hints the host attached for the device to
/// take, and the hint bytes waiting to cross the link down.
#[derive(Debug, Default)]
pub struct HintBox {
    /// A host agent listens (without one the device sends nothing).
    pub connected: bool,
    pub page_bytes: u64,
    pub logical_pages: u64,
    pub chunk_entries: u64,
    pub chunk_bytes: u64,
    pub chunks: u32,
    /// (arrives at the host, chunk, version), in sending order.
    pub sent: VecDeque<(Ns, u32, u32)>,
    /// Chunk -> version, attached by the host to requests not yet served.
    pub attached: FxHashMap<u32, u32>,
    /// Hint bytes attached and not yet moved over the link.
    pub pending_bytes: u64,
    /// The host asks for the whole map (UFS HPB's region activation with
    /// every region active): the device sends every chunk at its next
    /// request.
    pub preload: bool,
}

impl HintBox {
    /// The chunk holding the entry of the page at `sector`.
    pub fn chunk_of_sector(&self, sector: u64) -> u32 {
        let lpn = (sector * SECTOR / self.page_bytes) % self.logical_pages.max(1);
        (lpn / self.chunk_entries.max(1)) as u32
    }
}

/// A shared [`HintBox`].
pub type HintPort = Arc<Mutex<HintBox>>;

const CACHED: u8 = 1;
const DIRTY: u8 = 2;

/// Geometry of the map.
#[derive(Clone, Copy, Debug)]
pub struct MapGeom {
    /// Logical pages mapped (entries).
    pub entries: u64,
    /// Bytes of one entry.
    pub entry_bytes: u64,
    /// Entries per chunk (the unit cached, read and sent as a hint).
    pub chunk_entries: u64,
    /// Bytes of a flash page.
    pub page_bytes: u64,
    /// Chunks the device's RAM caches (0: the whole map in RAM).
    pub cap: u64,
    /// Planes the translation area spreads over, and pages per block there.
    pub units: u32,
    pub pages_per_block: u32,
    /// The seed's layout: a written-back chunk is appended to a log of
    /// chunks (packed, `page_bytes / chunk_bytes` to a program; no
    /// read-modify-write, no batch), not rewritten in its translation page.
    pub log: bool,
}

/// Flash work of one access or remap: page reads of chunks (`reads` array
/// reads of `read_bytes` over the channel), of translation pages before
/// they are rewritten (`wb_reads`, whole pages), translation page programs,
/// and the translation area's GC (`gc_copies` pages, `gc_erases` blocks).
/// `die_unit` is the plane of the last page touched (where to book it).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MapOps {
    pub reads: u32,
    pub read_bytes: u64,
    pub wb_reads: u32,
    pub programs: u32,
    pub gc_copies: u32,
    pub gc_erases: u32,
    pub read_unit: u32,
    pub write_unit: u32,
}

impl MapOps {
    fn add(&mut self, o: MapOps) {
        self.reads += o.reads;
        self.read_bytes += o.read_bytes;
        self.wb_reads += o.wb_reads;
        self.programs += o.programs;
        self.gc_copies += o.gc_copies;
        self.gc_erases += o.gc_erases;
        if o.reads > 0 {
            self.read_unit = o.read_unit;
        }
        if o.programs > 0 {
            self.write_unit = o.write_unit;
        }
    }
}

/// What one access did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Access {
    /// The chunk: its index and version after the access.
    pub chunk: u32,
    pub version: u32,
    /// Found in the device's cache; or taken from a current hint.
    pub hit: bool,
    pub hinted: bool,
    /// A hint came and was stale (ignored).
    pub stale: bool,
    /// The chunk was read from flash or changed: the device may send it to
    /// the host.
    pub send: bool,
    /// Flash work: the load, before the data operation (`ops.reads`), and
    /// the write-backs it caused.
    pub ops: MapOps,
}

/// Counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct MapStats {
    pub lookups: u64,
    pub hits: u64,
    pub hint_hits: u64,
    pub hints_stale: u64,
    /// Chunks read from flash, their array reads and bytes.
    pub chunk_loads: u64,
    pub chunk_read_ops: u64,
    pub chunk_read_bytes: u64,
    /// Dirty chunks evicted; translation pages read before a rewrite and
    /// programmed; translation GC.
    pub writebacks: u64,
    pub tpage_reads: u64,
    pub tpage_programs: u64,
    pub tgc_copies: u64,
    pub tgc_erases: u64,
    /// Entries changed by data GC, and of them those not cached (updated in
    /// flash).
    pub gc_remaps: u64,
    pub gc_remaps_flash: u64,
}

/// The demand-loaded map.
pub struct MapCache {
    g: MapGeom,
    chunk_bytes: u64,
    chunks: u32,
    /// Chunks per translation page (≥ 1) and pages per chunk (≥ 1).
    per_page: u32,
    pages_per_chunk: u32,
    cap: u32,
    cached: u32,
    cached_in_page: Vec<u16>,
    flags: Vec<u8>,
    version: Vec<u32>,
    // LRU: intrusive doubly-linked list, head = most recent.
    prev: Vec<u32>,
    next: Vec<u32>,
    head: u32,
    tail: u32,
    tftl: Ftl,
    /// Translation pages (chunks, `log`) that data GC changed, not yet rewritten.
    pending: Vec<u32>,
    /// `log`: chunk slots appended since the last full page, and GC slot
    /// copies not yet a whole page.
    log_fill: u32,
    gc_slots: u32,
    pub stats: MapStats,
}

impl MapCache {
    /// A map with every translation page written once and nothing cached;
    /// `None` for `cap = 0` (everything in RAM).
    pub fn new(g: MapGeom) -> Result<Option<MapCache>> {
        if g.cap == 0 {
            return Ok(None);
        }
        if g.entry_bytes == 0 || g.chunk_entries == 0 || g.entries == 0 {
            bail!("map entries, entry bytes and chunk entries must be at least 1");
        }
        let chunk_bytes = g.entry_bytes * g.chunk_entries;
        let chunks = g.entries.div_ceil(g.chunk_entries);
        if chunks >= NONE as u64 {
            bail!("{chunks} map chunks is too many");
        }
        let (per_page, pages_per_chunk) = if chunk_bytes <= g.page_bytes {
            ((g.page_bytes / chunk_bytes).min(u16::MAX as u64) as u32, 1)
        } else {
            (1, chunk_bytes.div_ceil(g.page_bytes) as u32)
        };
        let tpages = if g.log {
            // Slots: a chunk each (or a page each of a chunk that spans pages).
            chunks * pages_per_chunk as u64
        } else {
            chunks.div_ceil(per_page as u64) * pages_per_chunk as u64
        };
        // The translation area: twice its pages, at least 8 blocks a plane.
        let ppb = if g.log {
            g.pages_per_block.max(2) * per_page
        } else {
            g.pages_per_block.max(2)
        };
        let units = g.units.max(1);
        let bpu = (2 * tpages).div_ceil(units as u64 * ppb as u64).max(8) as u32;
        let mut tftl = Ftl::new(units, bpu, ppb, tpages, GcPolicy::Greedy, 2)?;
        for tp in 0..tpages as u32 {
            tftl.write(tp);
        }
        tftl.reset_stats();
        let n = chunks as usize;
        Ok(Some(MapCache {
            g,
            chunk_bytes,
            chunks: chunks as u32,
            per_page,
            pages_per_chunk,
            cap: g.cap.min(chunks) as u32,
            cached: 0,
            cached_in_page: vec![0; chunks.div_ceil(per_page as u64) as usize],
            flags: vec![0; n],
            version: vec![0; n],
            prev: vec![NONE; n],
            next: vec![NONE; n],
            head: NONE,
            tail: NONE,
            tftl,
            pending: Vec::new(),
            log_fill: 0,
            gc_slots: 0,
            stats: MapStats::default(),
        }))
    }

    /// Chunks in all, chunks cached at most, bytes of a chunk.
    pub fn chunks(&self) -> u32 {
        self.chunks
    }
    pub fn capacity(&self) -> u32 {
        self.cap
    }
    pub fn chunk_bytes(&self) -> u64 {
        self.chunk_bytes
    }
    /// Entries per chunk.
    pub fn chunk_entries(&self) -> u64 {
        self.g.chunk_entries
    }
    /// The chunk of logical page `lpn`.
    #[inline]
    pub fn chunk_of(&self, lpn: u32) -> u32 {
        (lpn as u64 / self.g.chunk_entries) as u32
    }
    /// The current version of chunk `c`.
    pub fn version(&self, c: u32) -> u32 {
        self.version[c as usize]
    }
    /// Whether chunk `c` is cached.
    pub fn is_cached(&self, c: u32) -> bool {
        self.flags[c as usize] & CACHED != 0
    }
    /// Chunks cached now.
    pub fn cached(&self) -> u32 {
        self.cached
    }

    fn unlink(&mut self, c: u32) {
        let (p, n) = (self.prev[c as usize], self.next[c as usize]);
        if p != NONE {
            self.next[p as usize] = n;
        } else {
            self.head = n;
        }
        if n != NONE {
            self.prev[n as usize] = p;
        } else {
            self.tail = p;
        }
        self.prev[c as usize] = NONE;
        self.next[c as usize] = NONE;
    }

    fn push_front(&mut self, c: u32) {
        self.prev[c as usize] = NONE;
        self.next[c as usize] = self.head;
        if self.head != NONE {
            self.prev[self.head as usize] = c;
        }
        self.head = c;
        if self.tail == NONE {
            self.tail = c;
        }
    }

    /// The translation page (first of its pages) of chunk `c`.
    #[inline]
    fn tpage(&self, c: u32) -> u32 {
        if self.g.log {
            c * self.pages_per_chunk
        } else {
            (c / self.per_page) * self.pages_per_chunk
        }
    }

    /// `log`: append chunk `c` to the chunk log: its slots are written; a
    /// page program each time a page's worth is appended; GC copies of
    /// slots counted in pages.
    fn append(&mut self, c: u32) -> MapOps {
        let mut ops = MapOps::default();
        self.gc_slots += self.write_slots(c * self.pages_per_chunk, &mut ops);
        self.log_fill += self.pages_per_chunk;
        ops.programs = self.log_fill / self.per_page;
        self.log_fill %= self.per_page;
        ops.gc_copies = self.gc_slots / self.per_page;
        self.gc_slots %= self.per_page;
        self.count(&ops);
        self.flags[c as usize] &= !DIRTY;
        ops
    }

    /// Write the `pages_per_chunk` translation slots from `first` in the
    /// translation area; its GC's erases and the unit written go to `ops`.
    /// Returns the slots its GC copied.
    fn write_slots(&mut self, first: u32, ops: &mut MapOps) -> u32 {
        let mut copies = 0;
        for k in 0..self.pages_per_chunk {
            if let Some(o) = self.tftl.write(first + k) {
                copies += o.gc_copies;
                ops.gc_erases += o.gc_erases;
                ops.write_unit = o.unit;
            }
        }
        copies
    }

    /// Count `ops`' translation programs and GC.
    fn count(&mut self, ops: &MapOps) {
        self.stats.tpage_programs += ops.programs as u64;
        self.stats.tgc_copies += ops.gc_copies as u64;
        self.stats.tgc_erases += ops.gc_erases as u64;
    }

    fn unit_of_tpage(&self, tp: u32) -> u32 {
        self.tftl
            .lookup(tp)
            .map(|p| self.tftl.unit_of_ppn(p))
            .unwrap_or(0)
    }

    /// Rewrite translation page group `grp` (chunks grp·per_page..): read
    /// it first unless `whole` (all its chunks known), then program its
    /// pages; the dirty cached chunks in it become clean.
    fn rewrite(&mut self, grp: u32, whole: bool) -> MapOps {
        let mut ops = MapOps::default();
        let tp = grp * self.pages_per_chunk;
        if !whole {
            ops.wb_reads += self.pages_per_chunk;
            self.stats.tpage_reads += self.pages_per_chunk as u64;
        }
        ops.gc_copies = self.write_slots(tp, &mut ops);
        ops.programs = self.pages_per_chunk;
        self.count(&ops);
        let lo = grp * self.per_page;
        let hi = (lo + self.per_page).min(self.chunks);
        for c in lo..hi {
            self.flags[c as usize] &= !DIRTY;
        }
        ops
    }

    /// Make room for one chunk: evict the least recently used, writing it
    /// back (with its page's other dirty chunks) if dirty.
    fn evict(&mut self) -> MapOps {
        let mut ops = MapOps::default();
        while self.cached >= self.cap && self.tail != NONE {
            let v = self.tail;
            self.unlink(v);
            let grp = v / self.per_page;
            if self.flags[v as usize] & DIRTY != 0 && self.g.log {
                self.stats.writebacks += 1;
                ops.add(self.append(v));
            } else if self.flags[v as usize] & DIRTY != 0 {
                self.stats.writebacks += 1;
                let whole = self.per_page == 1
                    || self.cached_in_page[grp as usize] as u32
                        == self.per_page.min(self.chunks - grp * self.per_page);
                ops.add(self.rewrite(grp, whole));
            }
            self.flags[v as usize] = 0;
            self.cached -= 1;
            self.cached_in_page[grp as usize] -= 1;
        }
        ops
    }

    fn insert(&mut self, c: u32) -> MapOps {
        let ops = self.evict();
        self.flags[c as usize] = CACHED;
        self.cached += 1;
        self.cached_in_page[(c / self.per_page) as usize] += 1;
        self.push_front(c);
        ops
    }

    /// Look up (or, `write`, change) the entry of `lpn`, with the host's
    /// hint for its chunk if one came (its version).
    pub fn access(&mut self, lpn: u32, write: bool, hint: Option<u32>) -> Access {
        let c = self.chunk_of(lpn);
        let ci = c as usize;
        self.stats.lookups += 1;
        let mut a = Access {
            chunk: c,
            ..Access::default()
        };
        if self.flags[ci] & CACHED != 0 {
            self.stats.hits += 1;
            a.hit = true;
            self.unlink(c);
            self.push_front(c);
        } else {
            match hint {
                Some(v) if v == self.version[ci] => {
                    self.stats.hint_hits += 1;
                    a.hinted = true;
                }
                Some(_) => {
                    self.stats.hints_stale += 1;
                    a.stale = true;
                }
                None => {}
            }
            if !a.hinted {
                let tp = self.tpage(c);
                a.ops.reads = self.pages_per_chunk;
                a.ops.read_bytes = self.chunk_bytes;
                a.ops.read_unit = self.unit_of_tpage(tp);
                self.stats.chunk_loads += 1;
                self.stats.chunk_read_ops += self.pages_per_chunk as u64;
                self.stats.chunk_read_bytes += self.chunk_bytes;
                a.send = true;
            }
            let w = self.insert(c);
            a.ops.add(w);
        }
        if write {
            self.flags[ci] |= DIRTY;
            self.version[ci] = self.version[ci].wrapping_add(1);
            a.send = true;
        }
        a.version = self.version[ci];
        a
    }

    /// Data GC moved `lpn`: its entry changes. A cached chunk becomes
    /// dirty; others are updated in flash at [`MapCache::flush_remaps`].
    /// Returns the chunk if it changed in the cache (the device may send it).
    pub fn remap(&mut self, lpn: u32) -> u32 {
        let c = self.chunk_of(lpn);
        self.stats.gc_remaps += 1;
        self.version[c as usize] = self.version[c as usize].wrapping_add(1);
        if self.flags[c as usize] & CACHED != 0 {
            self.flags[c as usize] |= DIRTY;
        } else {
            self.stats.gc_remaps_flash += 1;
            self.pending
                .push(if self.g.log { c } else { c / self.per_page });
        }
        c
    }

    /// Rewrite the translation pages data GC changed since the last call:
    /// one read-modify-write per page (not per entry).
    pub fn flush_remaps(&mut self) -> MapOps {
        let mut ops = MapOps::default();
        if self.pending.is_empty() {
            return ops;
        }
        let mut p = std::mem::take(&mut self.pending);
        p.sort_unstable();
        p.dedup();
        for &x in &p {
            if self.g.log {
                // Read the chunk, change it, append it.
                let mut r = MapOps {
                    reads: self.pages_per_chunk,
                    read_bytes: self.chunk_bytes,
                    read_unit: self.unit_of_tpage(self.tpage(x)),
                    ..MapOps::default()
                };
                self.stats.chunk_read_ops += self.pages_per_chunk as u64;
                self.stats.chunk_read_bytes += self.chunk_bytes;
                r.add(self.append(x));
                ops.add(r);
            } else {
                ops.add(self.rewrite(x, false));
            }
        }
        p.clear();
        self.pending = p;
        ops
    }

    /// Translation area's FTL (tests).
    pub fn translation_ftl(&self) -> &Ftl {
        &self.tftl
    }

    /// Check the cache's invariants (tests): list and flags agree, counts
    /// per page sum to the cached count, never over capacity.
    pub fn check(&self) -> std::result::Result<(), String> {
        let mut n = 0;
        let mut c = self.head;
        let mut last = NONE;
        while c != NONE {
            if self.flags[c as usize] & CACHED == 0 {
                return Err(format!("chunk {c} listed but not cached"));
            }
            if self.prev[c as usize] != last {
                return Err(format!("chunk {c}: broken back link"));
            }
            last = c;
            n += 1;
            c = self.next[c as usize];
        }
        if last != self.tail || n != self.cached {
            return Err(format!("{n} listed, {} counted", self.cached));
        }
        if n > self.cap {
            return Err(format!("{n} cached over capacity {}", self.cap));
        }
        let per: u32 = self.cached_in_page.iter().map(|&x| x as u32).sum();
        if per != n {
            return Err(format!("per-page counts sum to {per}, cached {n}"));
        }
        self.tftl.check_consistency()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_pcg::Pcg64Mcg;

    fn geom(entries: u64, chunk: u64, cap: u64) -> MapGeom {
        MapGeom {
            entries,
            entry_bytes: 4,
            chunk_entries: chunk,
            page_bytes: 4096,
            cap,
            units: 4,
            pages_per_block: 64,
            log: false,
        }
    }

    #[test]
    fn hit_ratio_on_uniform_random_equals_the_cache_fraction() {
        // DFTL's entry-level cache (1 entry a chunk) and the seed's chunks:
        // under uniform random access the steady-state hit ratio of any
        // replacement policy is the fraction of the map cached.
        for (chunk, frac) in [(1u64, 0.25), (1, 0.5), (128, 0.1), (128, 0.75)] {
            let entries = 1 << 18;
            let chunks = entries / chunk;
            let cap = (chunks as f64 * frac) as u64;
            let mut m = MapCache::new(geom(entries, chunk, cap)).unwrap().unwrap();
            let mut rng = Pcg64Mcg::seed_from_u64(7);
            let n = 400_000;
            for i in 0..2 * n {
                if i == n {
                    m.stats = MapStats::default();
                }
                let lpn = rng.gen_range(0..entries as u32);
                m.access(lpn, rng.gen_bool(0.5), None);
            }
            let h = m.stats.hits as f64 / m.stats.lookups as f64;
            assert!(
                (h - frac).abs() < 0.01,
                "chunk {chunk} frac {frac}: hit {h}"
            );
            m.check().unwrap();
        }
    }

    #[test]
    fn dirty_evictions_write_back_and_batch_their_page() {
        // 1024 entries of 4 B = one 4 KiB translation page per 8 chunks of 128.
        let mut m = MapCache::new(geom(8192, 128, 2)).unwrap().unwrap();
        let a = m.access(0, true, None); // chunk 0, page 0: load, dirty
        assert_eq!((a.ops.reads, a.ops.read_bytes, a.hit), (1, 512, false));
        m.access(128, true, None); // chunk 1, same page: load, dirty
        let b = m.access(1024, false, None); // chunk 8, page 1: evicts chunk 0
                                             // Chunk 0 dirty: its page is read (not all 8 chunks cached) and
                                             // programmed; chunk 1 goes with it and is clean now.
        assert_eq!((b.ops.wb_reads, b.ops.programs), (1, 1));
        let c = m.access(2048, false, None); // evicts chunk 1: clean, free
        assert_eq!((c.ops.wb_reads, c.ops.programs), (0, 0));
        assert_eq!(m.stats.writebacks, 1);
        m.check().unwrap();
    }

    #[test]
    fn hints_skip_the_load_only_when_current() {
        let mut m = MapCache::new(geom(8192, 128, 1)).unwrap().unwrap();
        let a = m.access(5, true, None);
        assert!(a.send && a.ops.reads == 1);
        let v = a.version;
        m.access(4096, false, None); // evict chunk 0
        let b = m.access(6, false, Some(v));
        assert!(b.hinted && b.ops.reads == 0, "{b:?}");
        m.access(4096, false, None);
        // Changed by GC while not cached: the old version is stale.
        m.remap(7);
        let ops = m.flush_remaps();
        assert_eq!((ops.wb_reads, ops.programs), (1, 1));
        let c = m.access(8, false, Some(v));
        assert!(c.stale && !c.hinted && c.ops.reads == 1, "{c:?}");
        assert_eq!((m.stats.hint_hits, m.stats.hints_stale), (1, 1));
    }

    #[test]
    fn large_chunks_span_pages_and_translation_gc_runs() {
        // 16 KiB chunks: 4 pages each, written whole.
        let mut m = MapCache::new(geom(1 << 16, 4096, 1)).unwrap().unwrap();
        let mut rng = Pcg64Mcg::seed_from_u64(3);
        for _ in 0..20_000 {
            let a = m.access(rng.gen_range(0..1 << 16), true, None);
            assert!(a.ops.reads == 0 || a.ops.reads == 4);
            assert_eq!(a.ops.wb_reads, 0);
        }
        assert!(m.stats.tgc_erases > 0 && m.stats.tpage_programs > 0);
        m.check().unwrap();
    }

    #[test]
    fn the_chunk_log_packs_write_backs_without_reading() {
        // 512 B chunks, 8 to a page: eight dirty evictions make one program.
        let mut g = geom(1 << 16, 128, 1);
        g.log = true;
        let mut m = MapCache::new(g).unwrap().unwrap();
        let mut programs = 0;
        for i in 0..17u32 {
            let a = m.access(i * 128, true, None);
            assert_eq!(a.ops.wb_reads, 0);
            programs += a.ops.programs;
        }
        // 16 evictions (the 17th access evicted the 16th chunk).
        assert_eq!((m.stats.writebacks, programs), (16, 2));
        let mut rng = Pcg64Mcg::seed_from_u64(5);
        for _ in 0..50_000 {
            m.access(rng.gen_range(0..1 << 16), true, None);
        }
        assert!(m.stats.tgc_erases > 0);
        m.check().unwrap();
    }

    #[test]
    fn cap_zero_means_the_map_is_in_ram() {
        assert!(MapCache::new(geom(100, 1, 0)).unwrap().is_none());
        assert!(MapCache::new(geom(100, 0, 1)).is_err());
    }
}
