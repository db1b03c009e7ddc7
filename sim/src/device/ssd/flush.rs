//! The write path behind the buffer: which die a page goes to, flushing the
//! buffer to flash, the SLC cache and its folding, and the device's event clock.

use super::*;

impl Ssd {
    /// Where the next buffer flush goes, and when it can start: (`alloc=rr`)
    /// the next unit (plane) round-robin, when its die and channel are free,
    /// or (`alloc=die`) the die among those with room that can take a
    /// program first ([`Timeline::program_ready`]: its data may cross the
    /// channel into the cache register while the die is still busy).
    #[inline]
    pub(super) fn flush_die(&self) -> (u32, Ns) {
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

    pub(super) fn die_has_room(&self, d: u32) -> bool {
        (0..self.planes).any(|p| self.ftl.has_room(p * self.dies + d))
    }

    /// Flush up to `program_pages` buffered pages to die `d` (`alloc=die`)
    /// in one program from `s`, each to the die's next plane with room;
    /// returns when they are programmed.
    pub(super) fn flush_to_die(&mut self, d: u32, s: Ns) -> Ns {
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
    pub(super) fn slc_room(&self) -> bool {
        self.slc_used + self.slc_unit as u64 <= self.slc_pages
    }

    /// Fold the SLC cache into TLC in idle time (no submit for
    /// `gc_idle_ms`): one program's worth (`program_pages`) at a time, on
    /// the die that is free first, as background work reads preempt: its
    /// page reads and one TLC program (the FTL already placed the pages:
    /// the cache is an account of time and capacity).
    pub(super) fn fold_slc(&mut self, now: Ns) {
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
    pub(super) fn flush_start(&self) -> Option<(u32, Ns)> {
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
    pub(super) fn advance(&mut self, now: Ns) -> Ns {
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
    pub(super) fn next_event(&self) -> Option<Ns> {
        let a = self.flush_start().map(|x| x.1);
        let b = self.buf.inflight.peek().map(|r| r.0 .0);
        match (a, b) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The first time from `t` on with a free buffer slot (the buffer is
    /// advanced to it).
    pub(super) fn slot_at(&mut self, t: Ns) -> Ns {
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
    pub(super) fn drain(&mut self, t: Ns) -> Ns {
        self.draining = true;
        let end = self.drain_all(t);
        self.draining = false;
        end
    }

    pub(super) fn drain_all(&mut self, t: Ns) -> Ns {
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
