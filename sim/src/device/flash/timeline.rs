//! The page-timing model of the flash devices (ssd, cheapflash): next-free
//! times per die and per channel, and what one page read, page program,
//! page copy or block erase books on them (all ns, [`NandTiming`]).
//!
//! - Read page: die start s = max(now, die_free); the die is busy for the
//!   command and the array read, die_free = s + cmd + tR (the page register
//!   is then drained while the die may start its next read, like cache read);
//!   transfer x0 = max(s + cmd + tR, ch_free), done = ch_free = x0 + xfer.
//!   The command cycles are charged to the die, not booked on the channel: in
//!   a next-free-time model booking them would block the channel for the
//!   whole tR of other dies (FEMU does the same).
//! - Program page: channel x0 = max(now, ch_free), ch_free = x0 + cmd + xfer
//!   (into the die's cache register); program p0 = max(ch_free, die_free),
//!   done = die_free = p0 + tPROG.
//! - Copy of a valid page (GC, merges): 2·cmd + tR + tPROG on the die, plus
//!   2·xfer when the data goes through the controller (no copyback), which
//!   also books 2·xfer per copy on the channel. Erase: cmd + tBERS.
//! - Two ways to book garbage collection: on one die ([`Timeline::gc_on_die`],
//!   the SSD's per-plane GC) or on every die at once
//!   ([`Timeline::merge_on_all_dies`], cheapflash's merges of a superblock
//!   erase block that stripes over the dies).

use super::NandTiming;
use crate::types::Ns;
use std::collections::VecDeque;

/// Background work booked on one die (the SSD's background GC of one
/// victim: `copies` page copies, then erases). Its progress at time t is
/// t − `begin`; a read that preempts it moves `begin` and `end` later by
/// the time it takes from the job.
#[derive(Clone, Copy, Debug, Default)]
struct BgJob {
    begin: Ns,
    end: Ns,
    /// Copies are done in chunks of one program: its page reads, then the
    /// program. Duration of the copy phase and of one chunk; a page read.
    copy_phase: Ns,
    chunk_ns: Ns,
    read_op_ns: Ns,
    reads_per_chunk: u64,
    erase_ns: Ns,
}

impl BgJob {
    /// Offset in the job of the end of the NAND operation in progress at
    /// offset `o`: a page read of a copy chunk, its program, or an erase.
    fn boundary_after(&self, o: Ns) -> Ns {
        if o < self.copy_phase {
            let c0 = o / self.chunk_ns.max(1) * self.chunk_ns;
            let reads = self.reads_per_chunk * self.read_op_ns;
            let oc = o - c0;
            if oc < reads {
                c0 + (oc / self.read_op_ns.max(1) + 1) * self.read_op_ns
            } else {
                c0 + self.chunk_ns
            }
        } else {
            let e = self.erase_ns.max(1);
            self.copy_phase + ((o - self.copy_phase) / e + 1) * e
        }
    }
}

/// How reads preempt background work on a die: at the end of the copy or
/// erase in progress, or, with program/erase suspend, `latency_ns` after
/// they arrive, the suspended operation then taking `resume_ns` longer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Suspend {
    pub enabled: bool,
    pub latency_ns: Ns,
    pub resume_ns: Ns,
}

/// Next-free times of the dies and channels of one flash device.
#[derive(Clone, Debug)]
pub struct Timeline {
    /// The timing in use.
    pub t: NandTiming,
    /// Read preemption of background work.
    pub suspend: Suspend,
    /// Pages of the FTL that one array read senses together (a NAND page
    /// of several mapping units), and that one program writes (planes ×
    /// units per NAND page × pages of a one-shot program); 1 and 1: every
    /// page is its own read and program. Used by GC copies.
    pub read_units: u64,
    pub prog_units: u64,
    /// Reads go ahead of programs queued on the die and preempt the one in
    /// progress (suspending it when `suspend` is on, else at its end).
    pub read_priority: bool,
    die_free: Vec<Ns>,
    /// Per die: end of the work reads cannot preempt (reads included).
    hard_free: Vec<Ns>,
    /// Per die, with `read_priority`: the programs booked back to back,
    /// [begin, end) (moved later by the reads that preempt them), and the
    /// end of the last read that paused them.
    prog_begin: Vec<Ns>,
    prog_end: Vec<Ns>,
    /// Per die: duration of its last program (the window's operations).
    prog_op: Vec<Ns>,
    ch_free: Vec<Ns>,
    /// Per channel, with `read_priority`: the end of the program data
    /// transfers booked (see [`Timeline::ch_for_programs`]).
    ch_prog: Vec<Ns>,
    /// Per die: when its cache register can take the next program's data
    /// (the start of the last program booked there).
    reg_free: Vec<Ns>,
    /// Per die: background jobs booked, in time order, and the end of the last.
    bg: Vec<VecDeque<BgJob>>,
    bg_end: Vec<Ns>,
    /// Per die: end of the last read that paused booked work (reads back
    /// to back keep it paused: no new suspend).
    paused_to: Vec<Ns>,
    /// Reads that preempted background work, and of those the ones that
    /// suspended an operation.
    pub preemptions: u64,
    pub suspends: u64,
}

impl Timeline {
    /// A device with `dies` dies and `channels` channels, all idle at 0.
    pub fn new(t: NandTiming, dies: usize, channels: usize) -> Self {
        Timeline {
            t,
            suspend: Suspend::default(),
            read_units: 1,
            prog_units: 1,
            read_priority: false,
            die_free: vec![0; dies],
            hard_free: vec![0; dies],
            prog_begin: vec![0; dies],
            prog_end: vec![0; dies],
            prog_op: vec![0; dies],
            ch_free: vec![0; channels],
            ch_prog: vec![0; channels],
            reg_free: vec![0; dies],
            bg: vec![VecDeque::new(); dies],
            bg_end: vec![0; dies],
            paused_to: vec![0; dies],
            preemptions: 0,
            suspends: 0,
        }
    }

    /// When die `d` is free of every booked operation, background work
    /// included (programs, erases and new background work start then).
    #[inline]
    pub fn die_ready(&self, d: usize) -> Ns {
        self.die_free[d].max(self.bg_end[d])
    }

    /// Book background work on die `d`: `copies` page copies
    /// then `erases` erases, from max(`start`, [`Timeline::die_ready`]).
    /// Reads preempt it ([`Timeline::read_page`]); programs and erases wait
    /// for its end. Its transfers (2·xfer per copy without copyback) count
    /// in its die time, not on the channel's next-free time. Returns (start,
    /// duration).
    pub fn book_background(
        &mut self,
        d: usize,
        copies: u64,
        erases: u64,
        copyback: bool,
        start: Ns,
    ) -> (Ns, Ns) {
        let begin = start.max(self.die_ready(d));
        let copy_phase = self.copies_ns(copies, copyback);
        let erase_ns = self.erase_op_ns();
        let dur = copy_phase + erases * erase_ns;
        // Its page transfers (without copyback) are in the die time; on the
        // channel they interleave with the host's, so the channel's
        // next-free time is not pushed by the whole job (that would make
        // every read on the channel wait for it).
        let chunks = copies.div_ceil(self.prog_units).max(1);
        let q = &mut self.bg[d];
        while q.front().is_some_and(|j| j.end <= start) {
            q.pop_front();
        }
        q.push_back(BgJob {
            begin,
            end: begin + dur,
            copy_phase,
            chunk_ns: copy_phase.div_ceil(chunks),
            read_op_ns: self.t.cmd_ns + self.t.read_ns,
            reads_per_chunk: self.prog_units.div_ceil(self.read_units),
            erase_ns,
        });
        self.bg_end[d] = begin + dur;
        (begin, dur)
    }

    /// A read wants die `d` from `s` for `dur` while work it may preempt
    /// is booked there (background jobs; programs with `read_priority`):
    /// returns when it gets the die. Work in progress at `s` is preempted at
    /// the end of its NAND operation, or `suspend.latency_ns` after `s` (the
    /// suspended operation then takes `resume_ns` longer); everything booked
    /// on the die after that point moves later by the read's time (gaps
    /// between booked operations do not absorb it). Work not yet started
    /// moves only as far as the read overlaps it. Ends already returned to
    /// callers (a buffer slot's release) are not revised.
    #[cold]
    fn read_slot(&mut self, d: usize, s: Ns, dur: Ns) -> Ns {
        let sus = self.suspend;
        let mut s = s;
        for _ in 0..8 {
            let (pb, pe) = (self.prog_begin[d], self.prog_end[d]);
            let job = self.bg[d].iter().find(|j| j.end > s).copied();
            let in_prog = pb <= s && s < pe;
            let in_job = job.is_some_and(|j| j.begin <= s);
            if !in_prog && !in_job {
                // Nothing in progress: the read goes first; what starts
                // later moves by the overlap.
                let next = job.map_or(Ns::MAX, |j| j.begin);
                let next = if pe > s { next.min(pb) } else { next };
                let ov = (s + dur).saturating_sub(next);
                if ov > 0 && next != Ns::MAX {
                    self.insert_gap(d, s, ov);
                }
                return s;
            }
            let (point, extra) = if s <= self.paused_to[d] {
                (s, 0)
            } else if sus.enabled {
                (s + sus.latency_ns, sus.resume_ns)
            } else if in_prog {
                let op = self.prog_op[d].max(1);
                (pb + ((s - pb) / op + 1) * op, 0)
            } else {
                let j = job.unwrap_or_default();
                (j.begin + j.boundary_after(s - j.begin), 0)
            };
            let end = if in_prog {
                pe
            } else {
                job.map_or(s, |j| j.end)
            };
            if point >= end {
                // It ends first: look again from its end.
                s = end;
                continue;
            }
            self.insert_gap(d, point, dur + extra);
            self.paused_to[d] = point + dur;
            self.preemptions += 1;
            if extra > 0 {
                self.suspends += 1;
            }
            return point;
        }
        s
    }

    /// Move everything booked on die `d` that is in progress at `p` or
    /// later by `shift` (a read took the die at `p`).
    fn insert_gap(&mut self, d: usize, p: Ns, shift: Ns) {
        for j in self.bg[d].iter_mut() {
            if j.end > p {
                j.begin += shift;
                j.end += shift;
            }
        }
        self.bg_end[d] = self.bg[d].back().map_or(0, |j| j.end);
        if self.prog_end[d] > p {
            self.prog_begin[d] += shift;
            self.prog_end[d] += shift;
        }
        for f in [&mut self.die_free[d], &mut self.reg_free[d]] {
            if *f > p {
                *f += shift;
            }
        }
    }

    /// When die `d` is next free.
    #[inline]
    pub fn die_free(&self, d: usize) -> Ns {
        self.die_free[d]
    }

    /// When channel `c` is next free.
    #[inline]
    pub fn ch_free(&self, c: usize) -> Ns {
        self.ch_free[c]
    }

    /// Die time of copying one page (read + program, through the controller
    /// unless `copyback`).
    #[inline]
    pub fn copy_ns(&self, copyback: bool) -> Ns {
        let t = &self.t;
        let x = if copyback { 0 } else { 2 * t.xfer_ns };
        2 * t.cmd_ns + t.read_ns + t.prog_ns + x
    }

    /// Die time of copying `copies` pages (GC): a read per `read_units`
    /// pages, a program per `prog_units` pages, and 2·xfer per page through
    /// the controller unless `copyback`. With one unit each: copies × [`Timeline::copy_ns`].
    #[inline]
    pub fn copies_ns(&self, copies: u64, copyback: bool) -> Ns {
        if copies == 0 {
            return 0;
        }
        let t = &self.t;
        let x = if copyback { 0 } else { 2 * copies * t.xfer_ns };
        copies.div_ceil(self.read_units) * (t.cmd_ns + t.read_ns)
            + copies.div_ceil(self.prog_units) * (t.cmd_ns + t.prog_ns)
            + x
    }

    /// Die time of erasing one block.
    #[inline]
    pub fn erase_op_ns(&self) -> Ns {
        self.t.cmd_ns + self.t.erase_ns
    }

    /// Read one page from die `d` over channel `c`; returns when its data is out.
    #[inline]
    pub fn read_page(&mut self, d: usize, c: usize, now: Ns) -> Ns {
        self.read_part(d, c, now, self.t.xfer_ns)
    }

    /// [`Timeline::read_page`] transferring only `xfer_ns` of the page
    /// register (a map chunk smaller than a page).
    #[inline]
    pub fn read_part(&mut self, d: usize, c: usize, now: Ns, xfer_ns: Ns) -> Ns {
        let dur = self.t.cmd_ns + self.t.read_ns;
        let mut s = now.max(self.hard_free[d]);
        if self.prog_end[d] > s || self.bg_end[d] > s {
            s = self.read_slot(d, s, dur);
        }
        let sensed = s + dur;
        self.hard_free[d] = sensed;
        self.die_free[d] = self.die_free[d].max(sensed);
        let x0 = sensed.max(self.ch_free[c]);
        let done = x0 + xfer_ns;
        self.ch_free[c] = done;
        done
    }

    /// The earliest start of a program of `n` pages on die `d` (channel `c`)
    /// that keeps the die busy: its data transfer may begin once the
    /// channel and the cache register are free, and need not begin before
    /// it would end as the die becomes ready (cache program).
    #[inline]
    pub fn program_ready(&self, d: usize, c: usize, n: u64) -> Ns {
        let x = self.t.cmd_ns + n * self.t.xfer_ns;
        self.ch_for_programs(c)
            .max(self.reg_free[d])
            .max(self.die_ready(d).saturating_sub(x))
    }

    /// When channel `c` can take a program's data: after every transfer
    /// booked; with `read_priority`, program transfers are kept apart
    /// (`ch_prog`) so that reads are not queued behind program data booked
    /// ahead of them (a flush decided for a later time), while programs
    /// still wait for the reads booked before them.
    #[inline]
    fn ch_for_programs(&self, c: usize) -> Ns {
        self.ch_free[c].max(self.ch_prog[c])
    }

    /// Program one page on die `d` over channel `c`; returns when it is programmed.
    #[inline]
    pub fn program_page(&mut self, d: usize, c: usize, now: Ns) -> Ns {
        self.program_pages(d, c, 1, now)
    }

    /// Program `n` pages on die `d` in one operation (a multi-plane program:
    /// one page per plane, or the pages of a one-shot TLC program): their
    /// data crosses channel `c` one page after the other into the die's
    /// cache register, which holds one operation's data: the transfer waits
    /// until the die started its previous program. Then one tPROG. Returns
    /// when the pages are programmed.
    #[inline]
    pub fn program_pages(&mut self, d: usize, c: usize, n: u64, now: Ns) -> Ns {
        self.program_pages_in(d, c, n, now, self.t.prog_ns)
    }

    /// [`Timeline::program_pages`] with another program time (an SLC-mode
    /// program of a TLC die).
    #[inline]
    pub fn program_pages_in(&mut self, d: usize, c: usize, n: u64, now: Ns, prog_ns: Ns) -> Ns {
        let x0 = now.max(self.ch_for_programs(c)).max(self.reg_free[d]);
        let xe = x0 + self.t.cmd_ns + n * self.t.xfer_ns;
        if self.read_priority {
            self.ch_prog[c] = xe;
        } else {
            self.ch_free[c] = xe;
        }
        let p0 = xe.max(self.die_ready(d));
        self.reg_free[d] = p0;
        self.prog_op[d] = prog_ns;
        let done = p0 + prog_ns;
        self.die_free[d] = done;
        if self.read_priority {
            if p0 > self.prog_end[d] {
                self.prog_begin[d] = p0;
            }
            self.prog_end[d] = done;
        } else {
            self.hard_free[d] = done;
        }
        done
    }

    /// GC on die `d` (channel `c`): `copies` page copies then `erases` block
    /// erases, from g0 = max(now, die_free); without copyback the channel is
    /// booked for 2·xfer per copy from max(ch_free, g0). Returns the duration.
    pub fn gc_on_die(
        &mut self,
        d: usize,
        c: usize,
        copies: u64,
        erases: u64,
        copyback: bool,
        now: Ns,
    ) -> Ns {
        let g0 = now.max(self.die_ready(d));
        let dur = self.copies_ns(copies, copyback) + erases * self.erase_op_ns();
        if !copyback && copies > 0 {
            self.ch_free[c] = self.ch_free[c].max(g0) + 2 * copies * self.t.xfer_ns;
        }
        self.die_free[d] = g0 + dur;
        self.hard_free[d] = g0 + dur;
        dur
    }

    /// A merge of a block striped over every die (one channel, `0`): it starts
    /// when all dies are free; the copies (through the controller) split
    /// evenly over the dies, ceil(copies/dies)·copy_ns, but take at least the
    /// channel's 2·copies·xfer, and the channel is busy for that copy phase;
    /// then the dies erase in parallel, erases·(cmd + tBERS). Every die is
    /// busy until the end. Returns the duration.
    pub fn merge_on_all_dies(&mut self, copies: u64, erases: u64, now: Ns) -> Ns {
        let start = (0..self.die_free.len())
            .map(|d| self.die_ready(d))
            .max()
            .unwrap_or(0)
            .max(now);
        let per_die = copies.div_ceil(self.die_free.len() as u64);
        let copy_ns = (per_die * self.copy_ns(false)).max(2 * copies * self.t.xfer_ns);
        let dur = copy_ns + erases * self.erase_op_ns();
        if copies > 0 {
            self.ch_free[0] = self.ch_free[0].max(start + copy_ns);
        }
        for f in &mut self.die_free {
            *f = start + dur;
        }
        for f in &mut self.hard_free {
            *f = start + dur;
        }
        dur
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Suspend in 30, resume costs 20.
    fn sus() -> Suspend {
        Suspend {
            enabled: true,
            latency_ns: 30,
            resume_ns: 20,
        }
    }

    fn t() -> NandTiming {
        NandTiming {
            read_ns: 50,
            prog_ns: 500,
            erase_ns: 3000,
            xfer_ns: 10,
            cmd_ns: 1,
        }
    }

    #[test]
    fn reads_overlap_on_dies_and_queue_on_the_channel() {
        let mut tl = Timeline::new(t(), 2, 1);
        // Die 0: sensed at 51, out at 61; die 1 senses in parallel, waits for the channel.
        assert_eq!(tl.read_page(0, 0, 0), 61);
        assert_eq!(tl.read_page(1, 0, 0), 71);
        // Die 0 may sense again from 51 (cache read): 102, then xfer to 112.
        assert_eq!(tl.read_page(0, 0, 0), 112);
    }

    #[test]
    fn programs_transfer_then_program_on_the_die() {
        let mut tl = Timeline::new(t(), 2, 1);
        assert_eq!(tl.program_page(0, 0, 0), 11 + 500);
        assert_eq!(tl.program_page(1, 0, 0), 22 + 500);
        // Die 0 is busy until 511: the next program there waits.
        assert_eq!(tl.program_page(0, 0, 0), 511 + 500);
    }

    #[test]
    fn gc_on_one_die_and_merges_on_all_dies() {
        let mut tl = Timeline::new(t(), 2, 2);
        assert_eq!(tl.copy_ns(true), 552);
        assert_eq!(tl.copy_ns(false), 572);
        assert_eq!(tl.gc_on_die(1, 1, 3, 1, false, 100), 3 * 572 + 3001);
        // The other die and channel are untouched.
        assert_eq!(tl.read_page(0, 0, 0), 61);
        // Die 1 is busy until 100 + 4717 = 4817.
        assert_eq!(tl.read_page(1, 1, 0), 4817 + 51 + 10);

        let mut tl = Timeline::new(t(), 2, 1);
        tl.program_page(1, 0, 0); // die 1 busy until 511
                                  // 5 copies over 2 dies: 3 x 572 = 1716 >= 2 x 5 x 10; 2 erases.
        assert_eq!(tl.merge_on_all_dies(5, 2, 0), 1716 + 6002);
        assert_eq!(tl.read_page(0, 0, 0), 511 + 1716 + 6002 + 51 + 10);
    }

    #[test]
    fn the_cache_register_holds_one_programs_data() {
        // Three programs to die 0 at t = 0: the second's data moves into the
        // register while the first programs (transfer 11..22, starts at
        // 511); the third's transfer waits until the second started (511).
        let mut tl = Timeline::new(t(), 2, 1);
        assert_eq!(tl.program_page(0, 0, 0), 511);
        assert_eq!(tl.program_page(0, 0, 0), 1011);
        assert_eq!(tl.program_page(0, 0, 0), 1511);
        // The channel is a next-free time: die 1's transfer follows the
        // third one's (511..522), no back-filling of the gap before it.
        assert_eq!(tl.program_page(1, 0, 0), 522 + 11 + 500);
        // One multi-plane program of 4 pages: 4 transfers, one tPROG.
        let mut tl = Timeline::new(t(), 1, 1);
        assert_eq!(tl.program_pages(0, 0, 4, 0), 1 + 40 + 500);
    }

    #[test]
    fn reads_preempt_background_work_at_op_ends_or_by_suspend() {
        // Background GC of 2 copies (551 + 20 each, copyback off) and one
        // erase (3001) on die 0 from 0; a read arrives at 100, inside copy 1.
        let job = |sus: Suspend| {
            let mut tl = Timeline::new(t(), 1, 1);
            tl.suspend = sus;
            let (b, dur) = tl.book_background(0, 2, 1, false, 0);
            assert_eq!((b, dur), (0, 2 * 572 + 3001));
            tl
        };
        // No suspend: the read waits for the end of the copy (572), senses
        // 51, and the job resumes after it: its end moves by 51.
        let mut tl = job(Suspend::default());
        assert_eq!(
            tl.ch_free(0),
            0,
            "background copies do not hold the channel"
        );
        assert_eq!(tl.read_page(0, 0, 100), 572 + 51 + 10);
        assert_eq!(tl.die_ready(0), 2 * 572 + 3001 + 51);
        assert_eq!(tl.preemptions, 1);
        // A read during the erase (at 2000) waits for the erase to end.
        assert_eq!(tl.read_page(0, 0, 2000), 2 * 572 + 3001 + 51 + 51 + 10);
        // Suspend: 30 to suspend, the job takes 20 longer to resume.
        let mut tl = job(sus());
        assert_eq!(tl.read_page(0, 0, 2000), 2030 + 51 + 10);
        assert_eq!(tl.die_ready(0), 2 * 572 + 3001 + 51 + 20);
        // A read right behind it finds the job still paused: no new suspend.
        assert_eq!(tl.read_page(0, 0, 2000), 2030 + 51 + 51 + 10);
        assert_eq!((tl.preemptions, tl.suspends), (2, 1));
        // Programs and foreground GC wait for background work to end.
        let end = tl.die_ready(0);
        assert_eq!(tl.program_page(0, 0, 0), end + 500);
    }

    #[test]
    fn with_read_priority_reads_pass_queued_programs() {
        let mut tl = Timeline::new(t(), 1, 1);
        tl.read_priority = true;
        // Two programs queued: 11..511 and 511..1011.
        assert_eq!(tl.program_page(0, 0, 0), 511);
        assert_eq!(tl.program_page(0, 0, 0), 1011);
        // A read at 200 without suspend waits for the program in progress
        // (to 511), not for the queued one; the queued one moves by 51.
        assert_eq!(tl.read_page(0, 0, 200), 511 + 51 + 10);
        assert_eq!(tl.die_ready(0), 1011 + 51);
        // Without read priority it waits for both.
        let mut tl = Timeline::new(t(), 1, 1);
        tl.program_page(0, 0, 0);
        tl.program_page(0, 0, 0);
        assert_eq!(tl.read_page(0, 0, 200), 1011 + 51 + 10);
        // With suspend the read starts 30 after it arrives.
        let mut tl = Timeline::new(t(), 1, 1);
        tl.read_priority = true;
        tl.suspend = sus();
        tl.program_page(0, 0, 0);
        assert_eq!(tl.read_page(0, 0, 200), 230 + 51 + 10);
        assert_eq!(tl.die_ready(0), 511 + 51 + 20);
        assert_eq!(tl.suspends, 1);
    }

    #[test]
    fn work_booked_after_preempted_work_moves_with_it() {
        // A GC job (one erase, 0..3001) then a program queued behind it
        // (3001..3501): a read at 100 suspends the erase at 130; the job
        // and the program behind it both move by the read's 51 + 20.
        let mut tl = Timeline::new(t(), 1, 1);
        tl.read_priority = true;
        tl.suspend = sus();
        tl.book_background(0, 0, 1, true, 0);
        let p = tl.program_page(0, 0, 0);
        assert_eq!(p, 3001 + 500);
        assert_eq!(tl.read_page(0, 0, 100), 130 + 51 + 10);
        assert_eq!(tl.die_ready(0), 3001 + 500 + 71);
        // The next program starts after the moved one.
        assert_eq!(tl.program_page(0, 0, 0), 3001 + 500 + 71 + 500);
    }
}
