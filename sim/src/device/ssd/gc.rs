//! Garbage collection's bookkeeping: its NAND operations, its time on the dies,
//! and background and idle collection.

use super::*;

impl Ssd {
    /// Count the NAND operations of `copies` GC copies.
    #[inline]
    pub(super) fn count_gc(&mut self, copies: u64) {
        self.gc_read_ops += copies.div_ceil(self.tl.read_units);
        self.gc_prog_ops += copies.div_ceil(self.tl.prog_units);
    }

    pub(super) fn book_gc(&mut self, unit: u32, copies: u64, erases: u64, now: Ns) {
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
    pub(super) fn background_gc(&mut self, now: Ns) {
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
    pub(super) fn collect_on_die(&mut self, d: u32, now: Ns) -> bool {
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
}
