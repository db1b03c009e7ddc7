//! `vfs-ssd`: BID-Hybrid's data-location layer (the paper's "VFS-SSD"
//! sub-module, /work/shared/seeds/bid-bulk-io-dispatch.txt, §BID-hybrid):
//! a table of which HDD pages were tiered to the SSD and where.
//!
//! * **Tier placement**: the HDD's scheduler (BID with `pf_threshold`) hands
//!   over the writes of a non-bulky staging queue ([`Stage::offload`]); each
//!   gets SSD space, allocated log-structured (the next free pages, in
//!   order), and the table records every page. When the SSD is full the
//!   write is refused and stays on the HDD.
//! * **Data location filtering**: every later bio, read or write, is looked
//!   up page by page ([`Stage::place`]); pages on the SSD are served there
//!   (an update overwrites in place: the table is the SSD's FTL, as far as
//!   this layer sees), the rest on the HDD; a bio whose pages live on both
//!   is split at the page boundaries.
//!
//! Options: `ssd` (lane of the SSD, default 1), `page_kb` (mapping
//! granularity, default 4: Table 3's page).

use super::{Admit, Piece, Stage};
use crate::params::Params;
use crate::types::DeviceInfo;
use crate::types::{BioSpec, Ns, Op};
use anyhow::{bail, Result};
use rustc_hash::FxHashMap as HashMap;

pub struct VfsSsd {
    ssd: u8,
    page: u64,
    /// SSD capacity in pages.
    pages: u64,
    next_free: u64,
    /// HDD page -> SSD page.
    map: HashMap<u64, u64>,
    offloaded: [u64; 2],
    refused: u64,
    redirected: [u64; 2],
    split: u64,
    rewritten_pages: u64,
}

pub fn new(p: &Params, lanes: &[DeviceInfo]) -> Result<Box<dyn Stage>> {
    let ssd = p.u64_in("ssd", 1, 1, 254)? as usize;
    if ssd >= lanes.len() {
        bail!(
            "placement vfs-ssd: option 'ssd' = {ssd}: the run has {} device(s); add the SSD as a tier (--tier, or [[tier]] in the configuration)",
            lanes.len()
        );
    }
    let page = p.u64_in("page_kb", 4, 1, 1 << 20)? * 2;
    Ok(Box::new(VfsSsd::with(
        ssd as u8,
        page,
        lanes[ssd].capacity_sectors / page,
    )))
}

impl VfsSsd {
    /// The SSD on lane `ssd`, `pages` pages of `page` sectors.
    fn with(ssd: u8, page: u64, pages: u64) -> Self {
        VfsSsd {
            ssd,
            page,
            pages,
            next_free: 0,
            map: HashMap::default(),
            offloaded: [0; 2],
            refused: 0,
            redirected: [0; 2],
            split: 0,
            rewritten_pages: 0,
        }
    }
}

impl Stage for VfsSsd {
    fn name(&self) -> &str {
        "vfs-ssd"
    }
    fn admit(&mut self, _bio: &mut BioSpec, _now: Ns) -> Admit {
        Admit::Now
    }
    fn place(&mut self, bio: &BioSpec, _now: Ns, out: &mut Vec<Piece>) {
        if self.map.is_empty() || bio.sectors == 0 {
            return;
        }
        let end = bio.sector + bio.sectors as u64;
        let mut s = bio.sector;
        while s < end {
            let pg = s / self.page;
            let next = ((pg + 1) * self.page).min(end);
            let len = (next - s) as u32;
            let (lane, sector) = match self.map.get(&pg) {
                Some(&sp) => (self.ssd, sp * self.page + (s - pg * self.page)),
                None => (0, s),
            };
            // Extend the previous piece when this one continues it.
            match out.last_mut() {
                Some(p) if p.lane == lane && p.sector + p.sectors as u64 == sector => {
                    p.sectors += len;
                }
                _ => out.push(Piece {
                    lane,
                    sector,
                    sectors: len,
                }),
            }
            s = next;
        }
        if out.iter().all(|p| p.lane == 0) {
            out.clear();
            return;
        }
        self.redirected[bio.op.idx()] += 1;
        if out.len() > 1 {
            self.split += 1;
        }
    }
    fn offload(&mut self, from: u8, req: &BioSpec, _now: Ns) -> Option<(u8, u64)> {
        if from == self.ssd || req.op != Op::Write || req.sectors == 0 {
            return None;
        }
        let first = req.sector / self.page;
        let last = (req.sector + req.sectors as u64 - 1) / self.page;
        let n = last - first + 1;
        if self.next_free + n > self.pages {
            self.refused += 1;
            return None;
        }
        let base = self.next_free;
        self.next_free += n;
        for i in 0..n {
            if self.map.insert(first + i, base + i).is_some() {
                self.rewritten_pages += 1;
            }
        }
        self.offloaded[0] += 1;
        self.offloaded[1] += req.sectors as u64;
        Some((
            self.ssd,
            base * self.page + (req.sector - first * self.page),
        ))
    }
    fn stats(&self) -> serde_json::Value {
        serde_json::json!({
            "offloaded_requests": self.offloaded[0],
            "offloaded_sectors": self.offloaded[1],
            "refused_ssd_full": self.refused,
            "ssd_pages_used": self.next_free,
            "ssd_pages": self.pages,
            "mapped_pages": self.map.len(),
            "rewritten_pages": self.rewritten_pages,
            "redirected_reads": self.redirected[0],
            "redirected_writes": self.redirected[1],
            "split_bios": self.split,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stage() -> VfsSsd {
        VfsSsd::with(1, 8, (1 << 20) / 8)
    }

    fn bio(op: Op, sector: u64, sectors: u32) -> BioSpec {
        BioSpec::scripted(op, false, sector, sectors, 0)
    }

    #[test]
    fn offloaded_pages_are_found_again_and_mixed_bios_split() {
        let mut s = stage();
        let mut out = Vec::new();
        s.place(&bio(Op::Read, 800, 16), 0, &mut out);
        assert!(out.is_empty(), "nothing tiered yet: the HDD");
        // A 16-sector write at 804 covers pages 100..=102 (3 pages).
        assert_eq!(s.offload(0, &bio(Op::Write, 804, 16), 0), Some((1, 4)));
        assert_eq!(s.offload(0, &bio(Op::Write, 8000, 8), 0), Some((1, 24)));
        // A read of exactly the offloaded sectors: one piece on the SSD.
        s.place(&bio(Op::Read, 804, 16), 0, &mut out);
        assert_eq!(
            out,
            vec![Piece {
                lane: 1,
                sector: 4,
                sectors: 16
            }]
        );
        // A read from 792 to 832 (pages 99..=103): HDD, SSD, HDD.
        out.clear();
        s.place(&bio(Op::Read, 792, 40), 0, &mut out);
        assert_eq!(
            out,
            vec![
                Piece {
                    lane: 0,
                    sector: 792,
                    sectors: 8
                },
                Piece {
                    lane: 1,
                    sector: 0,
                    sectors: 24
                },
                Piece {
                    lane: 0,
                    sector: 824,
                    sectors: 8
                },
            ]
        );
        assert_eq!(out.iter().map(|p| p.sectors).sum::<u32>(), 40);
        // Never offloads to itself, never reads.
        assert_eq!(s.offload(1, &bio(Op::Write, 0, 8), 0), None);
        assert_eq!(s.offload(0, &bio(Op::Read, 0, 8), 0), None);
    }

    #[test]
    fn a_full_ssd_refuses() {
        let mut s = stage();
        s.pages = 2;
        assert!(s.offload(0, &bio(Op::Write, 0, 16), 0).is_some());
        assert_eq!(s.offload(0, &bio(Op::Write, 64, 8), 0), None);
        assert_eq!(s.refused, 1);
    }

    #[test]
    fn the_ssd_lane_must_exist() {
        let hdd = DeviceInfo::flash(1 << 30, 1);
        let e = new(&Params::new(), &[hdd]).err().unwrap();
        assert!(format!("{e:#}").contains("--tier"), "{e:#}");
    }
}
