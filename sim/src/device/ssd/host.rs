//! The SSD's host side: its link (`interface=`), its DRAM write buffer, and its
//! power figures.

use crate::types::Ns;
use rustc_hash::FxHashMap;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

/// Host interfaces (`interface=`) and their payload rates in MB/s (10^6 B/s)
/// after line coding, before protocol overhead: SATA 6 Gb/s with 8b/10b =
/// 600 MB/s (SATA 3.x spec); PCIe per lane 8 / 16 / 32 GT/s with 128b/130b =
/// 984.6 / 1969.2 / 3938.5 MB/s for gen 3 / 4 / 5 (PCI-SIG base specs 3.0,
/// 4.0, 5.0), times 4 lanes. `none`: no link (transfers take no time).
pub const INTERFACES: &[(&str, f64)] = &[
    ("none", 0.0),
    ("sata2", 3000.0 * 8.0 / 10.0 / 8.0),
    ("sata3", 6000.0 * 8.0 / 10.0 / 8.0),
    ("pcie3x4", 4.0 * 8000.0 * 128.0 / 130.0 / 8.0),
    ("pcie4x4", 4.0 * 16000.0 * 128.0 / 130.0 / 8.0),
    ("pcie5x4", 4.0 * 32000.0 * 128.0 / 130.0 / 8.0),
];

/// The host link: one serialised resource with a next-free time.
#[derive(Clone, Copy, Debug)]
pub(super) struct Link {
    /// ns per byte (0: no link).
    pub(super) ns_per_byte: f64,
    pub(super) free: Ns,
}

impl Link {
    /// Move `bytes` over the link, starting when the data is `ready` and
    /// the link is free; returns when the transfer ends.
    #[inline]
    pub(super) fn transfer(&mut self, ready: Ns, bytes: u64) -> Ns {
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
pub(super) struct SsdPower {
    pub(super) idle_w: f64,
    pub(super) controller_w: f64,
    pub(super) nand_w: f64,
    pub(super) link_pj_per_bit: f64,
}

/// The DRAM write buffer (write-back cache): pages accepted from the host
/// and not yet programmed.
#[derive(Default)]
pub(super) struct WriteBuffer {
    /// Capacity in pages (0: no buffer).
    pub(super) cap: usize,
    /// Accepted, not yet issued to flash: (lpn, time accepted), oldest first.
    pub(super) pending: VecDeque<(u32, Ns)>,
    /// Issued to flash: (program done, lpn); the slot is held until done.
    pub(super) inflight: BinaryHeap<Reverse<(Ns, u32)>>,
    /// Buffered copies per logical page (pending or in flight): reads of
    /// these pages are served from DRAM.
    pub(super) held: FxHashMap<u32, u32>,
}

impl WriteBuffer {
    #[inline]
    pub(super) fn len(&self) -> usize {
        self.pending.len() + self.inflight.len()
    }

    pub(super) fn hold(&mut self, lpn: u32) {
        *self.held.entry(lpn).or_insert(0) += 1;
    }

    /// Free the slots of programs done by `now`.
    pub(super) fn reap(&mut self, now: Ns) {
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
