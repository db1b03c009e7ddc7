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

/// Next-free times of the dies and channels of one flash device.
#[derive(Clone, Debug)]
pub struct Timeline {
    /// The timing in use.
    pub t: NandTiming,
    die_free: Vec<Ns>,
    ch_free: Vec<Ns>,
}

impl Timeline {
    /// A device with `dies` dies and `channels` channels, all idle at 0.
    pub fn new(t: NandTiming, dies: usize, channels: usize) -> Self {
        Timeline {
            t,
            die_free: vec![0; dies],
            ch_free: vec![0; channels],
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

    /// Die time of erasing one block.
    #[inline]
    pub fn erase_op_ns(&self) -> Ns {
        self.t.cmd_ns + self.t.erase_ns
    }

    /// Read one page from die `d` over channel `c`; returns when its data is out.
    #[inline]
    pub fn read_page(&mut self, d: usize, c: usize, now: Ns) -> Ns {
        let s = now.max(self.die_free[d]);
        let sensed = s + self.t.cmd_ns + self.t.read_ns;
        self.die_free[d] = sensed;
        let x0 = sensed.max(self.ch_free[c]);
        let done = x0 + self.t.xfer_ns;
        self.ch_free[c] = done;
        done
    }

    /// Program one page on die `d` over channel `c`; returns when it is programmed.
    #[inline]
    pub fn program_page(&mut self, d: usize, c: usize, now: Ns) -> Ns {
        let x0 = now.max(self.ch_free[c]);
        let xe = x0 + self.t.cmd_ns + self.t.xfer_ns;
        self.ch_free[c] = xe;
        let done = xe.max(self.die_free[d]) + self.t.prog_ns;
        self.die_free[d] = done;
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
        let g0 = now.max(self.die_free[d]);
        let dur = copies * self.copy_ns(copyback) + erases * self.erase_op_ns();
        if !copyback && copies > 0 {
            self.ch_free[c] = self.ch_free[c].max(g0) + 2 * copies * self.t.xfer_ns;
        }
        self.die_free[d] = g0 + dur;
        dur
    }

    /// A merge of a block striped over every die (one channel, `0`): it starts
    /// when all dies are free; the copies (through the controller) split
    /// evenly over the dies, ceil(copies/dies)·copy_ns, but take at least the
    /// channel's 2·copies·xfer, and the channel is busy for that copy phase;
    /// then the dies erase in parallel, erases·(cmd + tBERS). Every die is
    /// busy until the end. Returns the duration.
    pub fn merge_on_all_dies(&mut self, copies: u64, erases: u64, now: Ns) -> Ns {
        let start = now.max(self.die_free.iter().copied().max().unwrap_or(0));
        let per_die = copies.div_ceil(self.die_free.len() as u64);
        let copy_ns = (per_die * self.copy_ns(false)).max(2 * copies * self.t.xfer_ns);
        let dur = copy_ns + erases * self.erase_op_ns();
        if copies > 0 {
            self.ch_free[0] = self.ch_free[0].max(start + copy_ns);
        }
        for f in &mut self.die_free {
            *f = start + dur;
        }
        dur
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
