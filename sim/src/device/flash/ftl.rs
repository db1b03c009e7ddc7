//! Page-mapped FTL core without timing: logical page -> physical page map,
//! per-unit write frontier, garbage collection with greedy or FIFO victims.
//!
//! Layout: `units` GC domains (planes, in the SSD model), each with
//! `blocks_per_unit` erase blocks of `pages_per_block` pages. Physical page
//! number = block × pages_per_block + offset, blocks numbered unit-major.
//! Each unit has one active (open) block; host writes and GC copies of that
//! unit share it (one write frontier per unit, as in the WA models of
//! reference/simulators.md §4.1). [`Ftl::write`] stripes host pages over the
//! units round-robin; [`Ftl::write_to`] writes into a given unit.
//!
//! GC: when a unit's active block is full a free block is opened; if the
//! unit then has fewer than `gc_free_blocks` free blocks, victims are
//! collected until it has that many again: valid pages are copied into the
//! unit's active block (within the unit) and the victim is erased. Victims:
//! - greedy: fewest valid pages. Closed blocks sit in per-unit buckets indexed
//!   by valid count (intrusive doubly-linked lists) with a lower bound on the
//!   smallest non-empty bucket, so an invalidation moves a block in O(1) and a
//!   victim search is amortised O(1) (the bound only rises while scanning).
//! - fifo: oldest closed block (a queue in closing order; Desnoyers'
//!   FIFO/LRU cleaning).
//!
//! Greedy never picks an entirely valid block (it would free nothing; GC then
//! stops, which the constructor's capacity check rules out for uniform use);
//! FIFO does collect one when it reaches the queue head (copying it whole),
//! as Desnoyers' FIFO model does, unless there is no room for the copies
//! (then it goes to the back of the queue). A victim is only taken when its
//! copies fit in the active block and free blocks with one page to spare for
//! the host write. Every operation is O(1) amortised per page written except the copy
//! loop of a GC, which is O(pages_per_block) per erase.
//!
//! Memory grows with the pages written, not with the raw size: the logical →
//! physical map is a hash map while at most an eighth of the logical pages
//! are mapped and an array of 4 bytes a page after ([`L2p`]); the physical →
//! logical map holds a slot of 4 bytes a page for each block that is not free
//! (taken when the block opens, given back when it is erased; slots are
//! allocated in chunks of about 64 K pages); a unit's free
//! blocks are its never-used tail (a counter) and a queue of erased blocks.
//! What is allocated up front is about 21 bytes a block ([`Ftl::memory`]).

use anyhow::{bail, Result};
use rustc_hash::FxHashMap;
use std::collections::VecDeque;

/// Marker for "no page / no block / unmapped".
pub const NONE: u32 = u32::MAX;

const FREE: u8 = 0;
const ACTIVE: u8 = 1;
const CLOSED: u8 = 2;
const VICTIM: u8 = 3;

/// Garbage-collection victim policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GcPolicy {
    /// Block with the fewest valid pages.
    Greedy,
    /// Oldest closed block.
    Fifo,
}

impl GcPolicy {
    /// Parse `greedy` or `fifo`.
    pub fn parse(s: &str) -> Option<GcPolicy> {
        match s {
            "greedy" => Some(GcPolicy::Greedy),
            "fifo" | "lru" => Some(GcPolicy::Fifo),
            _ => None,
        }
    }
}

/// Page and block counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct FtlStats {
    /// Pages written by the host.
    pub host_writes: u64,
    /// Valid pages copied by GC.
    pub gc_copies: u64,
    /// Blocks erased.
    pub erases: u64,
    /// GC victims collected (= erases, kept separately for clarity).
    pub gc_runs: u64,
    /// Mapped pages a discard unmapped.
    pub trims: u64,
}

impl FtlStats {
    /// (host + GC writes) / host writes; 1 when nothing was written.
    pub fn write_amplification(&self) -> f64 {
        if self.host_writes == 0 {
            1.0
        } else {
            (self.host_writes + self.gc_copies) as f64 / self.host_writes as f64
        }
    }
}

/// What one host page write did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WriteOutcome {
    /// Unit the page was written to (GC, if any, ran in the same unit).
    pub unit: u32,
    /// Pages copied by the GC this write triggered.
    pub gc_copies: u32,
    /// Blocks erased by that GC.
    pub gc_erases: u32,
}

/// The logical → physical page map, in chunks of 4,096 logical pages: a
/// chunk's mapped pages sit in one hash map until an eighth of the chunk is
/// mapped (hashbrown's 9 bytes a slot at a load of 7/16 to 7/8: at most
/// about 2.6 bytes a logical page), then in an array of its own (4 bytes a
/// page, `NONE` where unmapped). A fresh device touched on a small range
/// costs little; sequential writes fill arrays, not the hash map.
struct L2p {
    /// The chunks held as arrays of their own (runs of written pages, as
    /// sequential writes leave), by chunk number.
    dense: Vec<Option<Box<[u32]>>>,
    /// The entries of every other chunk.
    sparse: FxHashMap<u32, u32>,
    /// Entries in `sparse`, per chunk.
    count: Vec<u16>,
    logical: u32,
}

/// The logical → physical map's chunk: 4,096 entries (16 KiB as an array).
const L2P_CHUNK_SHIFT: u32 = 12;

impl L2p {
    fn new(logical: u32) -> L2p {
        let chunks = (logical as usize).div_ceil(1 << L2P_CHUNK_SHIFT);
        L2p {
            dense: (0..chunks).map(|_| None).collect(),
            sparse: FxHashMap::default(),
            count: vec![0; chunks],
            logical,
        }
    }

    /// Entries in chunk `c` (the last one may be short).
    fn chunk_len(&self, c: usize) -> usize {
        let base = c << L2P_CHUNK_SHIFT;
        (self.logical as usize - base).min(1 << L2P_CHUNK_SHIFT)
    }

    #[inline]
    fn get(&self, lpn: u32) -> u32 {
        let c = (lpn >> L2P_CHUNK_SHIFT) as usize;
        match &self.dense[c] {
            Some(a) => a[(lpn as usize) & ((1 << L2P_CHUNK_SHIFT) - 1)],
            None => self.sparse.get(&lpn).copied().unwrap_or(NONE),
        }
    }

    #[inline]
    fn set(&mut self, lpn: u32, ppn: u32) {
        let c = (lpn >> L2P_CHUNK_SHIFT) as usize;
        if let Some(a) = &mut self.dense[c] {
            a[(lpn as usize) & ((1 << L2P_CHUNK_SHIFT) - 1)] = ppn;
            return;
        }
        if self.sparse.insert(lpn, ppn).is_none() {
            self.count[c] += 1;
            // An eighth of the chunk written: its array costs less than its entries.
            if self.count[c] as usize * 8 >= self.chunk_len(c) {
                self.promote(c);
            }
        }
    }

    /// Move chunk `c`'s entries from the hash map into an array of its own.
    fn promote(&mut self, c: usize) {
        let base = (c << L2P_CHUNK_SHIFT) as u32;
        let mut a = vec![NONE; self.chunk_len(c)].into_boxed_slice();
        if self.count[c] > 0 {
            for (i, e) in a.iter_mut().enumerate() {
                if let Some(p) = self.sparse.remove(&(base + i as u32)) {
                    *e = p;
                }
            }
        }
        self.count[c] = 0;
        self.dense[c] = Some(a);
    }

    /// Every chunk as an array (before a fill of every logical page).
    fn densify(&mut self) {
        for c in 0..self.dense.len() {
            if self.dense[c].is_none() {
                self.promote(c);
            }
        }
        self.sparse = FxHashMap::default();
    }

    #[inline]
    fn remove(&mut self, lpn: u32) {
        let c = (lpn >> L2P_CHUNK_SHIFT) as usize;
        if let Some(a) = &mut self.dense[c] {
            a[(lpn as usize) & ((1 << L2P_CHUNK_SHIFT) - 1)] = NONE;
        } else if self.sparse.remove(&lpn).is_some() {
            self.count[c] -= 1;
        }
    }

    /// The entry of `lpn` where it is in an array, to prefetch.
    fn slot(&self, lpn: u32) -> Option<&u32> {
        self.dense[(lpn >> L2P_CHUNK_SHIFT) as usize]
            .as_ref()
            .map(|a| &a[(lpn as usize) & ((1 << L2P_CHUNK_SHIFT) - 1)])
    }

    /// Chunks held as arrays.
    #[cfg(test)]
    fn dense_chunks(&self) -> usize {
        self.dense.iter().filter(|c| c.is_some()).count()
    }

    /// Bytes held (hash map entries estimated at 9 bytes of capacity).
    fn bytes(&self) -> u64 {
        let arrays: usize = self.dense.iter().flatten().map(|a| a.len() * 4).sum();
        (arrays + self.dense.len() * 8 + self.count.len() * 2) as u64
            + self.sparse.capacity() as u64 * 9
    }

    /// Every mapped (logical, physical) pair (tests).
    fn pairs(&self) -> Vec<(u32, u32)> {
        let mut v: Vec<(u32, u32)> = self.sparse.iter().map(|(&l, &p)| (l, p)).collect();
        for (c, a) in self.dense.iter().enumerate() {
            let base = (c << L2P_CHUNK_SHIFT) as u32;
            for (i, &p) in a.iter().flat_map(|a| a.iter()).enumerate() {
                if p != NONE {
                    v.push((base + i as u32, p));
                }
            }
        }
        v
    }
}

/// Entries of a p2l chunk: 2^`shift` slots of `np` pages.
fn np_chunk(np: u32, shift: u32) -> usize {
    (np as usize) << shift
}

/// Memory of an FTL's state, in bytes ([`Ftl::memory`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FtlMemory {
    /// Allocated at construction: per-block state and the GC buckets.
    pub fixed: u64,
    /// The page maps when every logical page is written and every block
    /// holds data: 4 bytes a logical page and 4 a physical page.
    pub maps_full: u64,
}

/// The page-mapped FTL state.
pub struct Ftl {
    np: u32,
    bpu: u32,
    units: u32,
    logical: u32,
    policy: GcPolicy,
    gc_free_blocks: u32,
    l2p: L2p,
    /// Per block: its slot in `p2l` + 1 (0: none, the block is free).
    p2l_slot: Vec<u32>,
    /// Slots of `np` entries: the logical page of each physical page of a
    /// block (`NONE`: invalid or not written), in chunks of 2^`chunk_shift`
    /// slots.
    p2l: Vec<Box<[u32]>>,
    chunk_shift: u32,
    /// Slots handed out, and those given back by erased blocks.
    p2l_slots: u32,
    p2l_free: Vec<u32>,
    valid: Vec<u32>,
    state: Vec<u8>,
    erase_count: Vec<u32>,
    // Greedy buckets: per unit, np+1 list heads; intrusive links per block.
    heads: Vec<u32>,
    bnext: Vec<u32>,
    bprev: Vec<u32>,
    min_bucket: Vec<u32>,
    fifo: Vec<VecDeque<u32>>,
    /// Per unit: erased blocks, oldest first, taken after the never-used ones
    /// (blocks `fresh[u]..` of the unit).
    free: Vec<VecDeque<u32>>,
    fresh: Vec<u32>,
    active: Vec<u32>,
    wp: Vec<u32>,
    rr: u32,
    lifetime_erases: u64,
    /// Counters since construction or the last [`Ftl::reset_stats`].
    pub stats: FtlStats,
    /// With `track_moves`, the logical pages GC copied (their mapping
    /// changed), in copy order, for the owner to drain (a demand-loaded
    /// map updates their translation entries).
    pub track_moves: bool,
    pub moved: Vec<u32>,
}

/// The memory a model may take, in bytes: `MemAvailable` of /proc/meminfo,
/// or less where the process's address space is limited (`ulimit -v`:
/// `Max address space` of /proc/self/limits); `None` where unreadable.
pub fn mem_available_bytes() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kib: u64 = s
        .lines()
        .find(|l| l.starts_with("MemAvailable:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()?;
    let avail = kib.saturating_mul(1024);
    let limit = std::fs::read_to_string("/proc/self/limits")
        .ok()
        .and_then(|l| {
            l.lines()
                .find(|l| l.starts_with("Max address space"))?
                .split_whitespace()
                .nth(3)?
                .parse::<u64>()
                .ok()
        });
    Some(limit.map_or(avail, |l| l.min(avail)))
}

/// Refuse to allocate `bytes` for `what` when more than `available` memory
/// (an OOM kill or an allocation abort later tells nothing); `what` names
/// the options that set it and `fix` says what lowers it.
pub fn check_memory(what: &str, bytes: u64, available: Option<u64>, fix: &str) -> Result<()> {
    if let Some(avail) = available {
        if bytes > avail {
            bail!(
                "{what} needs {:.1} GiB of model state and this machine has {:.1} GiB available: {fix}",
                bytes as f64 / (1u64 << 30) as f64,
                avail as f64 / (1u64 << 30) as f64
            );
        }
    }
    Ok(())
}

impl Ftl {
    /// An empty FTL. `logical` pages must fit with room to spare:
    /// logical < units × (blocks_per_unit − gc_free_blocks − 1) × pages_per_block.
    pub fn new(
        units: u32,
        blocks_per_unit: u32,
        pages_per_block: u32,
        logical: u64,
        policy: GcPolicy,
        gc_free_blocks: u32,
    ) -> Result<Ftl> {
        let (np, bpu) = (pages_per_block, blocks_per_unit);
        if np < 2 {
            bail!("pages per block must be at least 2 (got {np})");
        }
        if units == 0 {
            bail!("need at least one unit (plane)");
        }
        if gc_free_blocks < 1 || bpu < gc_free_blocks + 2 {
            bail!("{bpu} blocks per plane leave no room for a GC reserve of {gc_free_blocks} free blocks plus an active block");
        }
        let blocks = units as u64 * bpu as u64;
        let phys = blocks * np as u64;
        if phys >= NONE as u64 {
            bail!("{phys} physical pages is too many (at most {})", NONE - 1);
        }
        let room = units as u64 * (bpu - gc_free_blocks - 1) as u64 * np as u64;
        if logical == 0 || logical >= room {
            bail!(
                "{logical} logical pages do not fit: at most {} with {units} plane(s) x ({bpu} blocks - {gc_free_blocks} GC reserve - 1 active) x {np} pages; raise 'op' or the block count",
                room.saturating_sub(1)
            );
        }
        let mem = Ftl::memory(units, bpu, np, logical);
        check_memory(
            &format!("the FTL's per-block state ({blocks} blocks)"),
            mem.fixed,
            mem_available_bytes(),
            "fewer blocks (channels, dies_per_channel, planes_per_die, blocks_per_plane)",
        )?;
        let nb = blocks as usize;
        let mut f = Ftl {
            np,
            bpu,
            units,
            logical: logical as u32,
            policy,
            gc_free_blocks,
            l2p: L2p::new(logical as u32),
            p2l_slot: vec![0; nb],
            p2l: Vec::new(),
            // About 64 K entries (256 KiB) a chunk.
            chunk_shift: (65536 / np).max(1).ilog2(),
            p2l_slots: 0,
            p2l_free: Vec::new(),
            valid: vec![0; nb],
            state: vec![FREE; nb],
            erase_count: vec![0; nb],
            heads: if policy == GcPolicy::Greedy {
                vec![NONE; units as usize * (np as usize + 1)]
            } else {
                Vec::new()
            },
            bnext: if policy == GcPolicy::Greedy {
                vec![NONE; nb]
            } else {
                Vec::new()
            },
            bprev: if policy == GcPolicy::Greedy {
                vec![NONE; nb]
            } else {
                Vec::new()
            },
            min_bucket: vec![0; units as usize],
            fifo: (0..units).map(|_| VecDeque::new()).collect(),
            free: (0..units).map(|_| VecDeque::new()).collect(),
            fresh: vec![0; units as usize],
            active: vec![NONE; units as usize],
            wp: vec![0; units as usize],
            rr: 0,
            lifetime_erases: 0,
            stats: FtlStats::default(),
            track_moves: false,
            moved: Vec::new(),
        };
        for u in 0..units {
            f.open_free(u);
        }
        Ok(f)
    }

    /// The memory of an FTL of this geometry: allocated at construction
    /// (about 21 bytes a block: valid count, state, erase count, greedy
    /// bucket links, p2l slot; the buckets' heads) and the page maps when
    /// full (they grow with the pages written).
    pub fn memory(
        units: u32,
        blocks_per_unit: u32,
        pages_per_block: u32,
        logical: u64,
    ) -> FtlMemory {
        let blocks = units as u64 * blocks_per_unit as u64;
        FtlMemory {
            fixed: blocks * 21
                + units as u64 * (pages_per_block as u64 + 1) * 4
                + units as u64 * 64,
            maps_full: (logical + blocks * pages_per_block as u64) * 4,
        }
    }

    /// Bytes the page maps hold now (hash map entries estimated at
    /// `SPARSE_ENTRY_BYTES`).
    pub fn map_bytes(&self) -> u64 {
        self.l2p.bytes()
            + self.p2l.len() as u64 * ((np_chunk(self.np, self.chunk_shift)) as u64 * 4)
    }

    /// Make the logical → physical map the array now (before a fill of
    /// every logical page, which would pass through the hash map).
    pub fn densify(&mut self) {
        self.l2p.densify();
    }

    /// Take a free block of unit `u` (a never-used one first, then the
    /// oldest erased one), give it a p2l slot and make it the active block.
    fn open_free(&mut self, u: u32) {
        let ui = u as usize;
        let b = if self.fresh[ui] < self.bpu {
            self.fresh[ui] += 1;
            u * self.bpu + self.fresh[ui] - 1
        } else {
            let b = self.free[ui].pop_front().unwrap_or(NONE);
            debug_assert!(b != NONE, "open_free without a free block");
            b
        };
        let slot = match self.p2l_free.pop() {
            Some(s) => s,
            None => {
                let s = self.p2l_slots;
                self.p2l_slots += 1;
                if (s >> self.chunk_shift) as usize == self.p2l.len() {
                    let n = np_chunk(self.np, self.chunk_shift);
                    self.p2l.push(vec![NONE; n].into_boxed_slice());
                }
                s
            }
        };
        self.p2l_slot[b as usize] = slot + 1;
        self.active[ui] = b;
        self.wp[ui] = 0;
        self.state[b as usize] = ACTIVE;
    }

    /// (chunk, index) in `p2l` of page `off` of slot `slot`.
    #[inline]
    fn slot_at(&self, slot: u32, off: u32) -> (usize, usize) {
        let mask = (1u32 << self.chunk_shift) - 1;
        (
            (slot >> self.chunk_shift) as usize,
            (slot & mask) as usize * self.np as usize + off as usize,
        )
    }

    /// (chunk, index) in `p2l` of physical page `ppn`, whose block is not free.
    #[inline]
    fn p2l_at(&self, ppn: u32) -> (usize, usize) {
        let b = (ppn / self.np) as usize;
        let slot = self.p2l_slot[b];
        debug_assert!(slot != 0, "p2l of a free block");
        self.slot_at(slot - 1, ppn % self.np)
    }

    /// Logical pages.
    pub fn logical_pages(&self) -> u64 {
        self.logical as u64
    }

    /// Pages per erase block.
    pub fn pages_per_block(&self) -> u32 {
        self.np
    }

    /// Number of units (GC domains).
    pub fn units(&self) -> u32 {
        self.units
    }

    /// Start loading the mapping entry of `lpn` into the cache (the table
    /// is far larger than the cache and a host access to it is random).
    #[inline]
    pub fn prefetch(&self, lpn: u32) {
        if let Some(e) = self.l2p.slot(lpn) {
            crate::types::prefetch(e);
        }
    }

    /// Physical page holding `lpn`, if it was ever written.
    #[inline]
    pub fn lookup(&self, lpn: u32) -> Option<u32> {
        if lpn >= self.logical {
            return None;
        }
        match self.l2p.get(lpn) {
            NONE => None,
            p => Some(p),
        }
    }

    /// Unit of a physical page.
    #[inline]
    pub fn unit_of_ppn(&self, ppn: u32) -> u32 {
        ppn / self.np / self.bpu
    }

    /// Zero the counters (after preconditioning or warm-up).
    pub fn reset_stats(&mut self) {
        self.stats = FtlStats::default();
    }

    /// The unit the next [`Ftl::write`] goes to if it has room (round-robin).
    #[inline]
    pub fn next_unit(&self) -> u32 {
        self.rr
    }

    /// Host write of logical page `lpn` (< logical pages) to the next unit in
    /// round-robin order that has room. `None` only if no unit has a free
    /// page (cannot happen when the capacity check of [`Ftl::new`] holds and
    /// writes are spread evenly).
    pub fn write(&mut self, lpn: u32) -> Option<WriteOutcome> {
        for _ in 0..self.units {
            let u = self.rr;
            self.rr += 1;
            if self.rr == self.units {
                self.rr = 0;
            }
            if self.has_room(u) {
                return Some(self.write_to(lpn, u));
            }
        }
        None
    }

    /// The foreground GC's free-block threshold per unit.
    #[inline]
    pub fn gc_free_blocks(&self) -> u32 {
        self.gc_free_blocks
    }

    /// Free (erased) blocks of unit `u`, its active block not counted.
    #[inline]
    pub fn free_blocks(&self, u: u32) -> u32 {
        self.free[u as usize].len() as u32 + self.bpu - self.fresh[u as usize]
    }

    /// Collect one victim in unit `u` now (background GC): its valid pages
    /// are copied into the unit's active block and it is erased. Returns the
    /// pages copied, or `None` when no victim would free space.
    pub fn collect(&mut self, u: u32) -> Option<u32> {
        self.gc_one(u)
    }

    /// Whether unit `u` can take a host page ([`Ftl::write_to`]).
    #[inline]
    pub fn has_room(&self, u: u32) -> bool {
        self.wp[u as usize] < self.np || self.free_blocks(u) > 0
    }

    /// Host write of `lpn` into unit `u`, which must have room (see
    /// [`Ftl::write`]); returns what GC it triggered.
    pub fn write_to(&mut self, lpn: u32, u: u32) -> WriteOutcome {
        debug_assert!(lpn < self.logical && u < self.units && self.has_room(u));
        self.invalidate(lpn);
        let mut out = WriteOutcome {
            unit: u,
            gc_copies: 0,
            gc_erases: 0,
        };
        if self.wp[u as usize] == self.np {
            self.open_new(u);
            // Bounded: each victim frees a block unless it was fully valid
            // (FIFO), and not every block can be (logical < physical).
            let mut tries = 0;
            while self.free_blocks(u) < self.gc_free_blocks && tries < self.bpu {
                tries += 1;
                match self.gc_one(u) {
                    Some(c) => {
                        out.gc_copies += c;
                        out.gc_erases += 1;
                    }
                    None => break,
                }
            }
        }
        if self.wp[u as usize] == self.np {
            // GC copies filled the active block; the room check left a free one.
            self.open_new(u);
        }
        self.program(lpn, u);
        self.stats.host_writes += 1;
        out
    }

    /// Discard `lpn`: its page becomes invalid (GC no longer copies it) and
    /// reads of it are unmapped. Returns whether it was mapped.
    pub fn trim(&mut self, lpn: u32) -> bool {
        if self.l2p.get(lpn) == NONE {
            return false;
        }
        self.invalidate(lpn);
        self.l2p.remove(lpn);
        self.stats.trims += 1;
        true
    }

    #[inline]
    fn invalidate(&mut self, lpn: u32) {
        let ppn = self.l2p.get(lpn);
        if ppn == NONE {
            return;
        }
        let (c, i) = self.p2l_at(ppn);
        self.p2l[c][i] = NONE;
        let b = (ppn / self.np) as usize;
        let v = self.valid[b];
        self.valid[b] = v - 1;
        if self.policy == GcPolicy::Greedy && self.state[b] == CLOSED {
            let u = b as u32 / self.bpu;
            self.unlink(b as u32, u, v);
            self.link(b as u32, u, v - 1);
            let m = &mut self.min_bucket[u as usize];
            if *m > v - 1 {
                *m = v - 1;
            }
        }
    }

    #[inline]
    fn bucket(&self, u: u32, v: u32) -> usize {
        u as usize * (self.np as usize + 1) + v as usize
    }

    #[inline]
    fn link(&mut self, b: u32, u: u32, v: u32) {
        let h = self.bucket(u, v);
        let old = self.heads[h];
        self.bnext[b as usize] = old;
        self.bprev[b as usize] = NONE;
        if old != NONE {
            self.bprev[old as usize] = b;
        }
        self.heads[h] = b;
    }

    #[inline]
    fn unlink(&mut self, b: u32, u: u32, v: u32) {
        let (p, n) = (self.bprev[b as usize], self.bnext[b as usize]);
        if p == NONE {
            let h = self.bucket(u, v);
            self.heads[h] = n;
        } else {
            self.bnext[p as usize] = n;
        }
        if n != NONE {
            self.bprev[n as usize] = p;
        }
    }

    /// Close the full active block of `u` and open a free one (which exists).
    fn open_new(&mut self, u: u32) {
        let ui = u as usize;
        let b = self.active[ui];
        self.state[b as usize] = CLOSED;
        match self.policy {
            GcPolicy::Greedy => {
                let v = self.valid[b as usize];
                self.link(b, u, v);
                if self.min_bucket[ui] > v {
                    self.min_bucket[ui] = v;
                }
            }
            GcPolicy::Fifo => self.fifo[ui].push_back(b),
        }
        self.open_free(u);
    }

    #[inline]
    fn program(&mut self, lpn: u32, u: u32) {
        let ui = u as usize;
        let b = self.active[ui];
        let ppn = b * self.np + self.wp[ui];
        self.wp[ui] += 1;
        self.l2p.set(lpn, ppn);
        let (c, i) = self.p2l_at(ppn);
        self.p2l[c][i] = lpn;
        self.valid[b as usize] += 1;
    }

    /// Collect one victim in unit `u`; returns the pages copied, or `None`
    /// when no victim would free space.
    fn gc_one(&mut self, u: u32) -> Option<u32> {
        let ui = u as usize;
        let np = self.np;
        // The copies must fit in the active block plus the free blocks and
        // leave a slot for the host page that triggered the GC.
        let room = (np - self.wp[ui]) as u64 + self.free_blocks(u) as u64 * np as u64;
        let victim = match self.policy {
            GcPolicy::Greedy => {
                let mut k = self.min_bucket[ui];
                while k < np && self.heads[self.bucket(u, k)] == NONE {
                    k += 1;
                }
                self.min_bucket[ui] = k;
                if k >= np || k as u64 >= room {
                    return None;
                }
                let b = self.heads[self.bucket(u, k)];
                self.unlink(b, u, k);
                b
            }
            GcPolicy::Fifo => {
                // FIFO collects a fully valid head too (Desnoyers' model); only
                // when there is no room to copy it, it moves to the back.
                let mut found = None;
                for _ in 0..self.fifo[ui].len() {
                    let b = *self.fifo[ui].front()?;
                    if (self.valid[b as usize] as u64) < room {
                        found = Some(b);
                        break;
                    }
                    self.fifo[ui].rotate_left(1);
                }
                let b = found?;
                self.fifo[ui].pop_front();
                b
            }
        };
        self.state[victim as usize] = VICTIM;
        let slot = self.p2l_slot[victim as usize] - 1;
        let (c, base) = self.slot_at(slot, 0);
        let mut copied = 0;
        let mut off = 0;
        while self.valid[victim as usize] > 0 && off < np {
            let at = base + off as usize;
            let l = self.p2l[c][at];
            if l != NONE {
                self.p2l[c][at] = NONE;
                self.valid[victim as usize] -= 1;
                if self.wp[ui] == np {
                    self.open_new(u);
                }
                self.program(l, u);
                if self.track_moves {
                    self.moved.push(l);
                }
                copied += 1;
            }
            off += 1;
        }
        // The slot is all NONE again (its valid pages were moved, the
        // others invalidated): free for the next block that opens.
        self.p2l_slot[victim as usize] = 0;
        self.p2l_free.push(slot);
        self.state[victim as usize] = FREE;
        self.erase_count[victim as usize] += 1;
        self.free[ui].push_back(victim);
        self.stats.gc_copies += copied as u64;
        self.stats.erases += 1;
        self.stats.gc_runs += 1;
        self.lifetime_erases += 1;
        Some(copied)
    }

    /// Check every invariant (tests): the maps are inverse bijections on
    /// valid pages, valid counts match, block states and GC structures agree,
    /// per-block erase counts sum to the lifetime erase counter.
    pub fn check_consistency(&self) -> std::result::Result<(), String> {
        let np = self.np as usize;
        let pairs = self.l2p.pairs();
        for &(l, p) in &pairs {
            let b = (p / self.np) as usize;
            if self.p2l_slot[b] == 0 {
                return Err(format!("l2p[{l}] = {p} in free block {b}"));
            }
            let (c, i) = self.p2l_at(p);
            if self.p2l[c][i] != l {
                return Err(format!("l2p[{l}] = {p} but p2l[{p}] = {}", self.p2l[c][i]));
            }
        }
        // Each slot belongs to one block; the free ones are all NONE.
        let mut owner = vec![NONE; self.p2l_slots as usize];
        for (b, &slot) in self.p2l_slot.iter().enumerate() {
            if slot == 0 {
                continue;
            }
            if (self.state[b] == FREE) || owner[slot as usize - 1] != NONE {
                return Err(format!("block {b}: p2l slot {} free or shared", slot - 1));
            }
            owner[slot as usize - 1] = b as u32;
        }
        let mut mapped = 0u64;
        for (slot, &b) in owner.iter().enumerate() {
            for off in 0..np {
                let (c, i) = self.slot_at(slot as u32, off as u32);
                let l = self.p2l[c][i];
                if l == NONE {
                    continue;
                }
                if b == NONE {
                    return Err(format!("free p2l slot {slot} maps {l}"));
                }
                mapped += 1;
                let p = b * self.np + off as u32;
                if self.lookup(l) != Some(p) {
                    return Err(format!(
                        "p2l[{p}] = {l} but l2p[{l}] = {:?}",
                        self.lookup(l)
                    ));
                }
            }
        }
        let written = pairs.len() as u64;
        if mapped != written {
            return Err(format!(
                "{mapped} valid physical pages for {written} mapped logical pages"
            ));
        }
        let mut in_struct = vec![false; self.valid.len()];
        for u in 0..self.units {
            match self.policy {
                GcPolicy::Greedy => {
                    for v in 0..=self.np {
                        let mut b = self.heads[self.bucket(u, v)];
                        let mut prev = NONE;
                        while b != NONE {
                            if self.valid[b as usize] != v || self.state[b as usize] != CLOSED {
                                return Err(format!(
                                    "block {b} in bucket {v} has {} valid",
                                    self.valid[b as usize]
                                ));
                            }
                            if v < self.min_bucket[u as usize] {
                                return Err(format!("bucket {v} below the min bound of unit {u}"));
                            }
                            if self.bprev[b as usize] != prev {
                                return Err(format!("bad back link at block {b}"));
                            }
                            in_struct[b as usize] = true;
                            prev = b;
                            b = self.bnext[b as usize];
                        }
                    }
                }
                GcPolicy::Fifo => {
                    for &b in &self.fifo[u as usize] {
                        in_struct[b as usize] = true;
                    }
                }
            }
            let fresh = u * self.bpu + self.fresh[u as usize]..(u + 1) * self.bpu;
            for b in self.free[u as usize].iter().copied().chain(fresh) {
                if self.state[b as usize] != FREE || self.valid[b as usize] != 0 {
                    return Err(format!("free block {b} is not empty"));
                }
            }
            if self.state[self.active[u as usize] as usize] != ACTIVE {
                return Err(format!("active block of unit {u} not marked active"));
            }
        }
        let mut erases = 0u64;
        for (b, &listed) in in_struct.iter().enumerate() {
            let n = match self.p2l_slot[b] {
                0 => 0,
                slot => {
                    let (c, i) = self.slot_at(slot - 1, 0);
                    self.p2l[c][i..i + np]
                        .iter()
                        .filter(|&&l| l != NONE)
                        .count() as u32
                }
            };
            if n != self.valid[b] {
                return Err(format!(
                    "block {b}: valid count {} but {n} valid pages",
                    self.valid[b]
                ));
            }
            if (self.state[b] == CLOSED) != listed {
                return Err(format!(
                    "block {b}: closed={} but in GC structure={}",
                    self.state[b] == CLOSED,
                    listed
                ));
            }
            erases += self.erase_count[b] as u64;
        }
        if erases != self.lifetime_erases {
            return Err(format!(
                "per-block erases sum to {erases}, counter says {}",
                self.lifetime_erases
            ));
        }
        Ok(())
    }

    /// Erases since construction (not reset by [`Ftl::reset_stats`]).
    pub fn lifetime_erases(&self) -> u64 {
        self.lifetime_erases
    }

    /// Sum of per-block erase counts.
    pub fn total_block_erases(&self) -> u64 {
        self.erase_count.iter().map(|&e| e as u64).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_pcg::Pcg64Mcg;

    fn churn(policy: GcPolicy, units: u32) -> Ftl {
        let mut f = Ftl::new(units, 40, 16, (units * 34 * 16) as u64, policy, 2).unwrap();
        let l = f.logical_pages() as u32;
        for lpn in 0..l {
            f.write(lpn).unwrap();
        }
        assert_eq!(f.stats.gc_copies, 0, "sequential fill needs no GC");
        let mut rng = Pcg64Mcg::seed_from_u64(7);
        for i in 0..20 * l {
            let out = f.write(rng.gen_range(0..l)).unwrap();
            assert!(out.unit < units);
            if i % 997 == 0 {
                f.check_consistency().unwrap();
            }
        }
        f.check_consistency().unwrap();
        f
    }

    #[test]
    fn mapping_consistent_after_random_writes_and_gc() {
        for policy in [GcPolicy::Greedy, GcPolicy::Fifo] {
            for units in [1, 3] {
                let f = churn(policy, units);
                assert!(f.stats.erases > 100, "GC must have run");
                // Every logical page maps to exactly one valid physical page.
                let mut seen = vec![false; (f.units * f.bpu * f.np) as usize];
                for l in 0..f.logical_pages() as u32 {
                    let p = f.lookup(l).expect("written");
                    assert!(!seen[p as usize]);
                    seen[p as usize] = true;
                }
                let valid: u32 = f.valid.iter().sum();
                assert_eq!(valid as u64, f.logical_pages());
                let wa = f.stats.write_amplification();
                assert!(wa > 1.0 && wa < 20.0, "{policy:?}: WA {wa}");
                assert_eq!(f.total_block_erases(), f.stats.erases);
                assert_eq!(f.stats.gc_runs, f.stats.erases);
            }
        }
    }

    #[test]
    fn trimmed_pages_are_unmapped_and_not_copied_by_gc() {
        // The same random overwrites of the first half, with the second half
        // trimmed or not: trimmed, GC finds emptier victims.
        let run = |trim: bool| {
            let mut f = Ftl::new(1, 40, 16, 34 * 16, GcPolicy::Greedy, 2).unwrap();
            let l = f.logical_pages() as u32;
            for lpn in 0..l {
                f.write(lpn).unwrap();
            }
            if trim {
                for lpn in l / 2..l {
                    assert!(f.trim(lpn));
                }
                assert!(!f.trim(l - 1), "a second trim finds nothing mapped");
                assert_eq!(f.lookup(l - 1), None);
            }
            let mut rng = Pcg64Mcg::seed_from_u64(3);
            for _ in 0..10 * l {
                f.write(rng.gen_range(0..l / 2)).unwrap();
            }
            f.check_consistency().unwrap();
            f.stats
        };
        let (kept, trimmed) = (run(false), run(true));
        assert_eq!(trimmed.trims, (34 * 16 - 34 * 16 / 2) as u64);
        assert!(
            trimmed.gc_copies * 2 < kept.gc_copies,
            "trimmed {} vs kept {}",
            trimmed.gc_copies,
            kept.gc_copies
        );
    }

    #[test]
    fn erases_account_for_all_written_pages() {
        // Every page ever programmed either still sits in a non-free block or
        // was in an erased block: programs = erases*np + pages in used blocks.
        let f = churn(GcPolicy::Greedy, 2);
        let programs = f.stats.host_writes + f.stats.gc_copies;
        let np = f.np as u64;
        let mut used = 0u64;
        for u in 0..f.units as usize {
            let full_blocks = f.bpu as u64 - f.free_blocks(u as u32) as u64 - 1;
            used += full_blocks * np + f.wp[u] as u64;
        }
        assert_eq!(programs, f.stats.erases * np + used);
    }

    #[test]
    fn greedy_beats_fifo_and_round_robin_is_even() {
        let g = churn(GcPolicy::Greedy, 1).stats.write_amplification();
        let fi = churn(GcPolicy::Fifo, 1).stats.write_amplification();
        assert!(g < fi, "greedy {g} should be below fifo {fi}");
        let mut f = Ftl::new(4, 8, 4, 64, GcPolicy::Greedy, 1).unwrap();
        let mut per = [0; 4];
        for l in 0..64 {
            per[f.write(l).unwrap().unit as usize] += 1;
        }
        assert_eq!(per, [16; 4]);
    }

    #[test]
    fn tables_larger_than_free_memory_are_refused() {
        let e = check_memory("x", 10 << 30, Some(1 << 30), "less").unwrap_err();
        assert!(e.to_string().contains("x needs 10.0 GiB"), "{e}");
        assert!(check_memory("x", 1 << 30, Some(10 << 30), "").is_ok());
        assert!(check_memory("x", u64::MAX, None, "").is_ok());
        // A geometry of 2^31 pages: 16 GiB of maps when full, 0.3 GiB of
        // per-block state up front.
        let m = Ftl::memory(2048, 8192, 128, 2_000_000_000);
        assert!(m.maps_full > 15 << 30 && m.fixed < 400 << 20, "{m:?}");
    }

    #[test]
    fn maps_grow_with_the_pages_written() {
        // 64 units x 1024 blocks x 256 pages (16 M pages): a few thousand
        // random writes keep the hash map and a few p2l slots per unit.
        let mut f = Ftl::new(64, 1024, 256, 15_000_000, GcPolicy::Greedy, 2).unwrap();
        assert!(f.map_bytes() < 1 << 20, "{}", f.map_bytes());
        let mut rng = Pcg64Mcg::seed_from_u64(5);
        for _ in 0..50_000 {
            f.write(rng.gen_range(0..15_000_000)).unwrap();
        }
        assert_eq!(f.l2p.dense_chunks(), 0);
        assert!(f.map_bytes() < 4 << 20, "{}", f.map_bytes());
        f.check_consistency().unwrap();
        // Past an eighth of a chunk's pages (here the whole map's) the chunk is an array.
        let mut f = Ftl::new(2, 64, 16, 1500, GcPolicy::Greedy, 2).unwrap();
        for lpn in 0..180 {
            f.write(lpn).unwrap();
        }
        assert_eq!(f.l2p.dense_chunks(), 0);
        for lpn in 180..200 {
            f.write(lpn).unwrap();
        }
        assert_eq!(f.l2p.dense_chunks(), 1);
        for lpn in 0..1500 {
            f.write(lpn).unwrap();
        }
        for lpn in (0..1500).step_by(3) {
            f.trim(lpn);
        }
        f.check_consistency().unwrap();
        assert_eq!(f.lookup(3), None);
        assert!(f.lookup(4).is_some());
    }

    #[test]
    fn capacity_check() {
        assert!(Ftl::new(1, 10, 8, 7 * 8, GcPolicy::Greedy, 2).is_err());
        assert!(Ftl::new(1, 10, 8, 7 * 8 - 1, GcPolicy::Greedy, 2).is_ok());
        assert!(Ftl::new(1, 3, 8, 4, GcPolicy::Greedy, 2).is_err());
        assert!(Ftl::new(1, 10, 1, 4, GcPolicy::Greedy, 2).is_err());
    }
}
