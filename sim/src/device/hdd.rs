//! Hard-disk model in the style of DiskSim's `dm_layout_g1` + `dm_mech_g1`
//! (reference notes /work/shared/reference/simulators.md §1.4 and §4.2).
//!
//! # Geometry
//! `heads` surfaces, `cylinders` cylinders grouped into zones; a zone has a
//! constant number of sectors per track (`spt`), outer zones (low cylinder
//! numbers) holding more. LBAs are laid out zone by zone, cylinder by cylinder,
//! and within a cylinder surface 0, 1, ..., heads-1 (DiskSim mapping scheme 0):
//!
//! ```text
//! rel = lba - zone.start_lba;  track = rel / spt;  sector = rel % spt
//! cylinder = zone.first_cyl + track / heads;       head = track % heads
//! ```
//!
//! Capacity = Σ_zones cyls·heads·spt. Spare sectors, slips, defects and the
//! "empty space at zone front" of DiskSim's layout are not modelled, so the
//! hp_c2247a preset holds 2 132 208 sectors where DiskSim's model reports
//! 2 054 864 usable blocks.
//!
//! Skew: the physical (angular) position of logical sector `s` on track
//! (c, h) of zone z is `(s + off) mod spt` sectors with
//! `off = z.offset + (c - z.first_cyl)·((heads-1)·track_skew + cyl_skew) + h·track_skew`,
//! i.e. each track switch in LBA order adds `track_skew` sectors and each
//! cylinder switch `cyl_skew`, as DiskSim's "Skew for track/cylinder switch".
//! `skew=auto` (the default for zones given with `zones=` or `spt=`) picks the
//! smallest skews that cover the head-switch and the single-cylinder seek
//! time; `skew=off` sets them (and zone offsets) to 0; `track_skew` and
//! `cyl_skew` (sectors) override every zone's values. At t = 0 the head is over
//! physical sector 0 of every track.
//!
//! # Mechanics (all times ms in the parameters, ns in the simulation)
//! * Seek (DiskSim "hplplus10"): d = 0 → 0; 1 ≤ d ≤ len(first10) → first10[d-1];
//!   d < boundary → a + b·√d; else c + e·d (d in cylinders).
//! * Head switch: when the cylinder stays and the head changes (overlapped with
//!   a seek when the cylinder changes, as DiskSim).
//! * Write settle: extra delay added to every positioning (seek or head switch)
//!   of a write, including the switches in the middle of a write.
//! * Rotation: the platter angle at time t is (t mod rev)/rev from t = 0 (rev =
//!   60/rpm s); after positioning the head waits until the target sector's start
//!   passes under it.
//! * Transfer: spt sectors per revolution; a request crossing a track boundary
//!   pays a head switch (or a single-cylinder seek at a cylinder boundary) and
//!   then the rotational wait for the next track's first sector (short when the
//!   skew covers the switch, nearly a revolution when `skew=off`).
//! * Constant controller overhead per request (`overhead_us`, default 0).
//!   Not modelled: bus transfer of media reads.
//!
//! # Read-ahead (`readahead_kb`, `segments`; default off)
//! After a read from the media the drive goes on reading the sectors that
//! follow it, `readahead_kb` of them or up to the end of the track, on the
//! arm's time (the next command waits for it: DiskSim's minimum read-ahead)
//! into one of `segments` read segments, the least recently used one
//! replaced. A read that lies inside a segment is answered from it over the
//! interface, once the read-ahead has reached its last sector; a write
//! that overlaps a segment drops it.
//!
//! # Write cache and NCQ
//! * Write cache (`write_cache`, bytes; 0 = off, the drive as before): a
//!   write that fits completes when it has crossed the interface
//!   (`interface_mbps`, serialised, plus `overhead_us`); the dirty extent is
//!   written to the media in the background: whenever the arm has nothing
//!   queued, it destages the next dirty extent in LBA order from its
//!   position (C-LOOK), accounted lazily on the next submit (a destage
//!   that started before a command arrived delays it). A write to the start
//!   of a dirty extent replaces it. A write that does not fit waits for
//!   destages (in arrival order); one larger than the cache goes to the media.
//!   A read inside one dirty extent is answered from the cache. `attrs.fua`
//!   writes go to the media before completing; `attrs.preflush` (with or
//!   without data: `sectors == 0` is an empty flush) destages every extent
//!   dirty when it arrived before it completes (then its data, if any, is
//!   written as any write); a flush is a barrier in the queue.
//! * Command queueing: the engine may dispatch `queue_depth` commands
//!   (default `ncq_depth`); the drive reorders the oldest `ncq_depth` it
//!   holds: each time the arm is free it serves the one with the shortest
//!   positioning time (seek or head switch, settle, rotational wait) from
//!   where the arm is (SPTF, as NCQ drives). A decision is made when the arm
//!   frees, among the commands that arrived by then; the engine learns the
//!   completion time through `Device::recheck`. `ncq_depth = 1` serves in
//!   arrival order (and `queue_depth` > 1 with it is FIFO tagged queueing).

//! # Counters
//! Head movements n (positionings with seek distance d > 0, including the
//! single-cylinder steps inside a request), total movement distance TMD (Σ d,
//! cylinders), and after the BID paper
//! (/work/shared/seeds/bid-bulk-io-dispatch.txt): AD_seek = TMD / n and
//! TD_sweep = TMD / number of cylinders; seek, head switch, settle, rotational
//! wait, transfer, overhead and busy time.
//!
//! # Presets (`preset=`; any other option overrides the preset's value)
//! * `hp_c2247a`: DiskSim's validated HP C2247A (the default before issue 11),
//!   `westerndigitalcorporation/DiskSim:EXPERIMENTAL/Linux_64bit_LBA_20130807_Generic/valid/hp_c2247a_validate.model`
//!   (cited in the notes §1.4/§4.2): 2051 cylinders, 13 surfaces, 5400 rpm,
//!   8 zones 96→56 sectors/track with the zone cylinder ranges, first-block
//!   offsets and track/cylinder skews from that file; HPL [300, 3.81, 0.33,
//!   7.75, 0.0059]; first-10 seeks 2.89 … 4.99 ms; head switch 0.89 ms; write
//!   settle 0.65 ms. Power: not in the model; the IBM Ultrastar 36Z15 figures of
//!   the notes are used (active 13.5 W for seek and transfer, idle 10.2 W,
//!   standby 2.5 W, spin-up 10.9 s at the active power). Queue depth 1, no write
//!   cache.
//! * `modern_7200` (default): a ≈4 TB 7200-rpm SATA drive after the WD
//!   Ultrastar DC HC310 OEM specification (HUS726T4TALA6L4, rev. 1.4, 2018,
//!   §4.5.1, Tables 5-7; notes §4.2): rev 8.33 ms, single-track seek 0.23 ms,
//!   average read seek 7.4 ms, write settle 0.8 ms (= average write 8.2 −
//!   read 7.4). Command queueing at the SATA NCQ maximum of 32 commands
//!   (`ncq_depth=32`), write cache on (ATA drives ship with it enabled) over a
//!   SATA 6 Gb/s link (600 MB/s after 8b/10b). ESTIMATED (the specification's
//!   pages for these were not available here): write cache 256 MiB (the
//!   drive's buffer), 8 heads, 400 000
//!   cylinders, 16 equal zones 3300→1650 sectors/track (≈203→101 MB/s), the
//!   HPL fit [119 000, 0.8, 0.01888, 4.055, 0.0000274] (smooth at the boundary,
//!   full stroke 15 ms, uniform mean 7.4 ms), head switch 0.3 ms. Power from
//!   a drive of the same class whose manual was available, the Seagate
//!   Constellation ES.3 4 TB 7200-rpm SATA (Product Manual 100671511 Rev. E,
//!   Table 2): idle 7.40 W, seeking (random read) 11.27 W, on track
//!   (sequential read) 9.87 W, standby 0.87 W; spin-up 10 s (ESTIMATED) at
//!   its peak start power 28.5 W.
//! * `bid_example`: the toy disk of the BID paper's Table 1: 1 surface, 100
//!   tracks of 100 sectors, so LBA = track·100 + sector. Its timing is
//!   ILLUSTRATIVE (the paper gives none): 7200 rpm, seek 1.0 + 0.5·√d ms,
//!   auto skew, power as modern_7200.
//!
//! * `sata_250g`: a 250 GB 7200-rpm SATA drive of the BID paper's Hadoop
//!   cluster (its Table 3 names only "250 GB Serial ATA"), after the Seagate
//!   Barracuda 7200.12 ST3250318AS data sheet (one platter, 125 MB/s
//!   sustained, average read seek 8.5 ms, average write 9.5 ms, 8 MB cache,
//!   SATA 3 Gb/s). ESTIMATED: 2 heads, 16 equal zones 2040 -> 1140
//!   sectors/track (250.1 GB), the HPL fit [46 000, 1.0, 0.0348, 4.8145,
//!   0.00007933] (single-track 1.0 ms, uniform mean 8.5 ms, full stroke
//!   17 ms), head switch 1.0 ms, write settle 1.0 ms, power idle 5.0 W,
//!   seek 7.0 W, transfer 6.5 W. NCQ 32 and the cache on, as shipped; the
//!   BID reproduction turns both off, as the paper's simulator models
//!   neither.
//!
//! * `ibm_36z15`: the IBM Ultrastar 36Z15 (36.7 GB, 15 000 rpm, Ultra160
//!   SCSI) of the QoS seed's DiskSim set-up ("IBM36Z15_15K",
//!   qos-flash-hybrid-store.txt §3.2), whose DiskSim parameter file is not
//!   available here. ESTIMATED from data-sheet figures: 12 heads, 8 zones
//!   440 -> 279 sectors/track (36.7 GB, 56 MB/s outer), the HPL fit
//!   [4 000, 0.4596, 0.04039, 1.7506, 0.00031592] (single cylinder 0.5 ms,
//!   uniform mean 3.4 ms, full stroke 7.0 ms), head switch and write
//!   settle 0.3 ms, power 10.2 W idle / 13.5 W active / 2.5 W standby,
//!   spin-up 10.9 s, 150 µs controller overhead per command (DiskSim's SCSI
//!   disk models carry 0.1-0.3 ms); a 32 KiB read-ahead into 4 segments
//!   (DiskSim's disk cache: the seed's sequential 512-byte stream runs from
//!   it), no write cache, no reordering.
//!
//! # Options
//! `preset`, `rpm`, `heads`, `zones` (`spt:cylinders/spt:cylinders/...`,
//! outermost first), `cylinders` (alone: the preset's zones spread evenly over
//! this many cylinders), `spt` (one zone), `seek_boundary`, `seek_a`,
//! `seek_b`, `seek_c`, `seek_e` (ms), `seek_first10` (`t1/t2/...` ms, up to
//! 10, or `none`), `head_switch_ms`, `write_settle_ms`, `overhead_us`, `skew`
//! (`on`/`auto`/`off`), `track_skew`, `cyl_skew`, `initial_cyl`,
//! `queue_depth` (default `ncq_depth`), `ncq_depth` (default 1),
//! `write_cache` (size), `readahead_kb`, `segments`, `interface_mbps`, `idle_w`, `seek_w`, `rw_w`,
//! `standby_w`, `spinup_s`, `spinup_j`, `standby_after` (time; default 0:
//! never spin down).
//!
//! # Energy (`Device::energy`, `device::energy::Meter`)
//! `idle_w` over the run (platters spinning) plus, above it, `seek_w` during
//! seek, head switch and settle time and `rw_w` during on-track transfer
//! (counted per µs: a scheduler that seeks less spends less), `spinup_j` per
//! spin-up, and `standby_w` instead of `idle_w` while spun down. Spin-down
//! (`standby_after` > 0): a command arriving after the drive idled that long
//! finds it spun down since then, and waits `spinup_s` for the spin-up
//! (accounted lazily at that command).
//!
//! The model is deterministic: the seed is not used.

use super::energy::{Energy, Meter};
use super::Device;
use crate::params::Params;
use crate::types::DeviceInfo;
use crate::types::{Ns, Op, ReqId, Request, SECTOR};
use anyhow::{bail, Context, Result};
use std::collections::{BTreeMap, VecDeque};

/// One zone: a run of cylinders with the same number of sectors per track.
#[derive(Clone, Debug, PartialEq)]
pub struct Zone {
    pub first_cyl: u32,
    pub cyls: u32,
    /// Sectors per track.
    pub spt: u32,
    /// Angular offset (sectors) of the zone's first LBA.
    pub offset: u32,
    pub track_skew: u32,
    pub cyl_skew: u32,
    /// First LBA of the zone.
    pub start_lba: u64,
    /// Sectors in the zone (cyls · heads · spt).
    pub sectors: u64,
}

/// Physical address of a sector.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Chs {
    pub zone: u32,
    pub cyl: u32,
    pub head: u32,
    /// Logical sector number on the track (before skew).
    pub sector: u32,
}

/// The DiskSim "hplplus10" seek curve, in milliseconds.
#[derive(Clone, Debug, PartialEq)]
pub struct SeekCurve {
    /// Distance (cylinders) from which the linear part applies.
    pub boundary: f64,
    pub a: f64,
    pub b: f64,
    pub c: f64,
    pub e: f64,
    /// Seek times for d = 1..=first_len (at most 10).
    pub first: [f64; 10],
    pub first_len: usize,
}

impl SeekCurve {
    /// Seek time in ms for a distance of `d` cylinders.
    #[inline]
    pub fn ms(&self, d: u64) -> f64 {
        if d == 0 {
            return 0.0;
        }
        if d as usize <= self.first_len {
            return self.first[d as usize - 1];
        }
        let df = d as f64;
        if df < self.boundary {
            self.a + self.b * df.sqrt()
        } else {
            self.c + self.e * df
        }
    }
}

/// Skew choice for the zones.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Skew {
    /// Keep the per-zone values given (preset or options).
    On,
    /// Compute the smallest skews covering the head switch / 1-cylinder seek.
    Auto,
    /// No skew, no zone offsets.
    Off,
}

/// Zone description before layout: (cylinders, spt, offset, track skew, cyl skew).
type ZoneSpec = (u32, u32, u32, u32, u32);

struct Preset {
    rpm: f64,
    heads: u32,
    zones: Vec<ZoneSpec>,
    seek: SeekCurve,
    head_switch_ms: f64,
    write_settle_ms: f64,
    skew: Skew,
    power: HddPower,
    /// NCQ reorder window (1: none).
    ncq_depth: u32,
    /// Write-cache bytes (0: off).
    cache_bytes: u64,
    /// Interface rate, MB/s (10^6 B/s).
    iface_mbps: f64,
    /// Read-ahead after a media read (KiB; 0: off) and read segments.
    readahead_kb: u64,
    segments: u32,
    /// Controller overhead per command, µs.
    overhead_us: f64,
}

/// Power of the drive's states and the cost of a spin-up.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HddPower {
    /// Spinning, heads on track, no command (the baseline).
    pub idle_w: f64,
    /// While the arm moves (seek, head switch, settle).
    pub seek_w: f64,
    /// While reading or writing on track.
    pub rw_w: f64,
    /// Spun down.
    pub standby_w: f64,
    /// Time and energy of one spin-up from standby.
    pub spinup_s: f64,
    pub spinup_j: f64,
}

/// Seagate Constellation ES.3 SATA Product Manual (100671511 Rev. E, 2014),
/// Table 2, 4 TB drive, typical currents at 5 V / 12 V: average idle
/// 0.28 / 0.50 A = 7.40 W; random read 0.31 / 0.81 A = 11.27 W (the seeking
/// figure); sequential read 0.63 / 0.56 A = 9.87 W (on track); standby
/// 0.15 / 0.01 A = 0.87 W; maximum start current 0.52 / 2.16 A = 28.5 W,
/// for an ESTIMATED 10 s spin-up (285 J). A 7200-rpm 4 TB SATA drive of the
/// HC310's class: the HC310 specification's power page was not available.
const CONSTELLATION_ES3: HddPower = HddPower {
    idle_w: 7.40,
    seek_w: 11.27,
    rw_w: 9.87,
    standby_w: 0.87,
    spinup_s: 10.0,
    spinup_j: 285.0,
};

fn first10(v: &[f64]) -> ([f64; 10], usize) {
    let mut a = [0.0; 10];
    a[..v.len()].copy_from_slice(v);
    (a, v.len())
}

/// The presets [`preset`] knows.
pub const PRESETS: &[&str] = &[
    "hp_c2247a",
    "modern_7200",
    "bid_example",
    "sata_250g",
    "ibm_36z15",
];

fn preset(name: &str) -> Result<Preset> {
    Ok(match name {
        // DiskSim valid/hp_c2247a_validate.model (see the module comment).
        "hp_c2247a" => {
            let (first, first_len) =
                first10(&[2.89, 3.68, 3.81, 3.98, 4.27, 4.65, 4.52, 4.65, 4.82, 4.99]);
            Preset {
                rpm: 5400.0,
                heads: 13,
                // (first..=last cylinder, blocks/track, offset of first block, track skew, cylinder skew)
                zones: [
                    (0u32, 558u32, 96u32, 0u32, 14u32, 32u32),
                    (559, 760, 92, 14, 13, 30),
                    (761, 901, 88, 73, 13, 29),
                    (902, 1051, 84, 80, 12, 28),
                    (1052, 1193, 80, 52, 12, 27),
                    (1194, 1519, 72, 0, 11, 24),
                    (1520, 1793, 64, 32, 10, 22),
                    (1794, 2050, 56, 30, 9, 19),
                ]
                .iter()
                .map(|&(f, l, spt, off, ts, cs)| (l - f + 1, spt, off, ts, cs))
                .collect(),
                seek: SeekCurve {
                    boundary: 300.0,
                    a: 3.81,
                    b: 0.33,
                    c: 7.75,
                    e: 0.0059,
                    first,
                    first_len,
                },
                head_switch_ms: 0.89,
                write_settle_ms: 0.65,
                skew: Skew::On,
                power: HddPower {
                    idle_w: 10.2,
                    seek_w: 13.5,
                    rw_w: 13.5,
                    standby_w: 2.5,
                    spinup_s: 10.9,
                    spinup_j: 13.5 * 10.9,
                },
                // Queue depth 1 and no write cache: the model as validated.
                ncq_depth: 1,
                cache_bytes: 0,
                // SCSI-2 fast, 10 MB/s (used only if a cache is enabled).
                iface_mbps: 10.0,
                readahead_kb: 0,
                segments: 1,
                overhead_us: 0.0,
            }
        }
        "modern_7200" => {
            let (first, first_len) = first10(&[0.23]);
            Preset {
                rpm: 7200.0,
                heads: 8,
                zones: (0..16).map(|i| (25_000, 3300 - 110 * i, 0, 0, 0)).collect(),
                seek: SeekCurve {
                    boundary: 119_000.0,
                    a: 0.8,
                    b: 0.01888,
                    c: 4.055,
                    e: 0.0000274,
                    first,
                    first_len,
                },
                head_switch_ms: 0.3,
                write_settle_ms: 0.8,
                skew: Skew::Auto,
                power: CONSTELLATION_ES3,
                ncq_depth: 32,
                cache_bytes: 256 << 20,
                iface_mbps: 600.0,
                readahead_kb: 0,
                segments: 1,
                overhead_us: 0.0,
            }
        }
        "bid_example" => Preset {
            rpm: 7200.0,
            heads: 1,
            zones: vec![(100, 100, 0, 0, 0)],
            seek: SeekCurve {
                boundary: f64::INFINITY,
                a: 1.0,
                b: 0.5,
                c: 0.0,
                e: 0.0,
                first: [0.0; 10],
                first_len: 0,
            },
            head_switch_ms: 0.3,
            write_settle_ms: 0.3,
            skew: Skew::Auto,
            power: CONSTELLATION_ES3,
            ncq_depth: 1,
            cache_bytes: 0,
            iface_mbps: 600.0,
            readahead_kb: 0,
            segments: 1,
            overhead_us: 0.0,
        },
        "sata_250g" => {
            let (first, first_len) = first10(&[1.0]);
            Preset {
                rpm: 7200.0,
                heads: 2,
                // 16 zones of 9 600 cylinders, 2040 -> 1140 sectors/track:
                // 488 448 000 sectors (250.1 GB), 125 MB/s at the outer edge.
                zones: (0..16).map(|i| (9_600, 2040 - 60 * i, 0, 0, 0)).collect(),
                seek: SeekCurve {
                    boundary: 46_000.0,
                    a: 1.0,
                    b: 0.0348,
                    c: 4.8145,
                    e: 0.000_079_33,
                    first,
                    first_len,
                },
                head_switch_ms: 1.0,
                write_settle_ms: 1.0,
                skew: Skew::Auto,
                power: HddPower {
                    idle_w: 5.0,
                    seek_w: 7.0,
                    rw_w: 6.5,
                    standby_w: 0.8,
                    spinup_s: 8.0,
                    spinup_j: 20.0 * 8.0,
                },
                ncq_depth: 32,
                cache_bytes: 8 << 20,
                iface_mbps: 300.0,
                readahead_kb: 0,
                segments: 1,
                overhead_us: 0.0,
            }
        }
        "ibm_36z15" => {
            let (first, first_len) = first10(&[0.5]);
            Preset {
                rpm: 15_000.0,
                heads: 12,
                // 8 zones of 2 077 cylinders, 440 -> 279 sectors/track:
                // 71 681 424 sectors (36.7 GB), 56 MB/s at the outer edge.
                zones: (0..8).map(|i| (2_077, 440 - 23 * i, 0, 0, 0)).collect(),
                seek: SeekCurve {
                    boundary: 4_000.0,
                    a: 0.4596,
                    b: 0.04039,
                    c: 1.7506,
                    e: 0.000_315_92,
                    first,
                    first_len,
                },
                head_switch_ms: 0.3,
                write_settle_ms: 0.3,
                skew: Skew::Auto,
                power: HddPower {
                    idle_w: 10.2,
                    seek_w: 13.5,
                    rw_w: 13.5,
                    standby_w: 2.5,
                    spinup_s: 10.9,
                    spinup_j: 12.39 * 10.9,
                },
                ncq_depth: 1,
                cache_bytes: 0,
                iface_mbps: 160.0,
                readahead_kb: 32,
                segments: 4,
                overhead_us: 150.0,
            }
        }
        other => bail!(
            "option 'preset': unknown HDD preset '{other}' (known: {})",
            PRESETS.join(", ")
        ),
    })
}

/// Parse `spt:cyls/spt:cyls/...`.
fn parse_zones(v: &str) -> Result<Vec<(u32, u32)>> {
    let mut out = Vec::new();
    for part in v.split('/').map(str::trim).filter(|s| !s.is_empty()) {
        let (s, c) = part
            .split_once(':')
            .with_context(|| format!("option 'zones': '{part}' is not spt:cylinders"))?;
        let spt: u32 = s.trim().parse().with_context(|| {
            format!("option 'zones': '{s}' is not a number of sectors per track")
        })?;
        let cyls: u32 = c
            .trim()
            .parse()
            .with_context(|| format!("option 'zones': '{c}' is not a number of cylinders"))?;
        if spt == 0 || spt > 1_000_000 || cyls == 0 {
            bail!("option 'zones': '{part}' needs 1..=1000000 sectors per track and at least one cylinder");
        }
        out.push((spt, cyls));
    }
    if out.is_empty() {
        bail!("option 'zones': no zones in '{v}'");
    }
    Ok(out)
}

/// Parse the first-ten seek table `t1/t2/...` (ms) or `none`.
fn parse_first10(v: &str) -> Result<([f64; 10], usize)> {
    if v.trim() == "none" || v.trim().is_empty() {
        return Ok(([0.0; 10], 0));
    }
    let mut vals = Vec::new();
    for part in v.split('/').map(str::trim) {
        let x: f64 = part
            .parse()
            .with_context(|| format!("option 'seek_first10': '{part}' is not a number"))?;
        if !(0.0..=1000.0).contains(&x) {
            bail!("option 'seek_first10': {x} is out of range 0..=1000 ms");
        }
        vals.push(x);
    }
    if vals.len() > 10 {
        bail!(
            "option 'seek_first10': {} values given, at most 10",
            vals.len()
        );
    }
    Ok(first10(&vals))
}

/// Counters of the arm and time split, as reported by [`Device::counters`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HddStats {
    pub requests: u64,
    pub reads: u64,
    pub writes: u64,
    pub sectors: u64,
    /// Positionings with a seek distance d > 0 (BID's n).
    pub head_movements: u64,
    /// Total movement distance Σ d in cylinders (BID's TMD_seek).
    pub tmd_cyl: u64,
    /// Short strokes: seeks over less than 1 % of the cylinders (BID's Figs. 13-14, "short
    /// distance track changes").
    pub short_strokes: u64,
    /// Long strokes: seeks over at least 10 % of the cylinders.
    pub long_strokes: u64,
    /// Head switches without a seek (including track switches in a request).
    pub head_switches: u64,
    pub seek_ns: f64,
    pub switch_ns: f64,
    pub settle_ns: f64,
    pub rot_wait_ns: f64,
    pub xfer_ns: f64,
    pub overhead_ns: f64,
    /// Σ (completion − service start) over media accesses (host and destage).
    pub busy_ns: f64,
    /// Writes completed into the write cache (at interface speed).
    pub cached_writes: u64,
    /// Reads answered from dirty data in the write cache.
    pub cache_read_hits: u64,
    /// Dirty extents written to the media in the background.
    pub destages: u64,
    pub destage_sectors: u64,
    /// Flushes (empty or REQ_PREFLUSH) and FUA writes served.
    pub flushes: u64,
    pub fua_writes: u64,
    /// Decisions among two or more queued commands (NCQ reordering chances)
    /// and how many of them served a command other than the oldest.
    pub ncq_choices: u64,
    pub ncq_reorders: u64,
    /// Reads answered from a read-ahead segment, and sectors read ahead.
    pub readahead_hits: u64,
    pub readahead_sectors: u64,
    /// Spin-ups from standby, and the time spent spun down.
    pub spinups: u64,
    pub standby_ns: f64,
}

/// What a command held by the drive waits for.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    /// A read from the media.
    Read,
    /// A write to the media (FUA, write cache off, or larger than the cache).
    MediaWrite,
    /// A write waiting for room in the write cache.
    CacheWrite,
    /// Destage every dirty extent older than `target` (sequence number);
    /// `silent`: the data part of the same request follows (REQ_PREFLUSH
    /// with data), so the flush itself completes nothing.
    Flush { target: u64, silent: bool },
}

/// A command held by the drive (NCQ: up to `ncq_depth` of them are candidates).
#[derive(Clone, Copy, Debug)]
struct Cmd {
    tag: ReqId,
    lba: u64,
    sectors: u32,
    kind: Kind,
    /// Earliest start (exact ns).
    ready: f64,
}

/// One read segment: sectors [lo, hi) of which [lo, e) were the request
/// and [e, hi) read ahead from `t_e` on at `ns_per_sector`.
#[derive(Clone, Copy, Debug)]
struct Segment {
    lo: u64,
    e: u64,
    hi: u64,
    t_e: f64,
    ns_per_sector: f64,
}

impl Segment {
    /// When sectors [lba, lba + n) are all in the segment, if they lie inside it.
    fn ready(&self, lba: u64, n: u32) -> Option<f64> {
        let end = lba + n as u64;
        (lba >= self.lo && end <= self.hi)
            .then(|| self.t_e + end.saturating_sub(self.e) as f64 * self.ns_per_sector)
    }
}

/// One dirty extent of the write cache.
#[derive(Clone, Copy, Debug)]
struct Dirty {
    sectors: u32,
    seq: u64,
    /// In the cache from here (exact ns): no destage starts earlier.
    at: f64,
}

/// The HDD device.
pub struct Hdd {
    preset: String,
    heads: u32,
    cylinders: u32,
    zones: Vec<Zone>,
    capacity: u64,
    seek: SeekCurve,
    rev_ns: f64,
    inv_rev: f64,
    head_switch_ns: f64,
    write_settle_ns: f64,
    overhead_ns: f64,
    depth: u32,
    /// Commands the drive reorders among (1: arrival order).
    ncq_depth: u32,
    /// Write-cache size in sectors (0: write cache off).
    cache_sectors: u64,
    /// Interface time per sector (cached writes and cache-hit reads).
    iface_ns_per_sector: f64,
    /// Read-ahead after a media read, sectors (0: off), and the read
    /// segments (most recently used last).
    readahead_sectors: u64,
    max_segments: usize,
    segments: VecDeque<Segment>,
    power: HddPower,
    /// Spin down after this much idle time (0: never).
    standby_after_ns: f64,
    // Command queue and write cache.
    pending: VecDeque<Cmd>,
    /// Commands decided, with their completion time, until the engine's event.
    done: Vec<(ReqId, Ns)>,
    dirty: BTreeMap<u64, Dirty>,
    /// seq -> lba of the dirty extents (the oldest first, for flushes).
    dirty_by_seq: BTreeMap<u64, u64>,
    dirty_sectors: u64,
    /// Sectors of the extent the arm is destaging (until `busy_f`).
    destaging_sectors: u64,
    next_seq: u64,
    /// The interface is free from here (exact ns).
    bus_free: f64,
    // Arm and timing state.
    cur_cyl: u32,
    cur_head: u32,
    /// Exact (fractional) time the device becomes free.
    busy_f: f64,
    /// `busy_f` as returned to the engine (rounded).
    end_ns: Ns,
    stats: HddStats,
}

/// Registry constructor.
pub fn new(p: &Params, _seed: u64) -> Result<Box<dyn Device>> {
    Ok(Box::new(Hdd::from_params(p)?))
}

impl Hdd {
    /// Build from options (see the module comment for names and presets).
    pub fn from_params(p: &Params) -> Result<Hdd> {
        let preset_name = p.str_of("preset", "modern_7200", PRESETS);
        let pr = preset(&preset_name)?;
        let rpm = p.f64_in("rpm", pr.rpm, 1.0, 100_000.0)?;
        let heads = p.u64_in("heads", pr.heads as u64, 1, 1024)? as u32;

        // Zones: explicit list, single zone, or the preset's (optionally
        // redistributed evenly over a new cylinder count).
        let mut specs: Vec<ZoneSpec> = if let Some(z) = p.raw("zones") {
            parse_zones(z)?
                .into_iter()
                .map(|(spt, c)| (c, spt, 0, 0, 0))
                .collect()
        } else {
            pr.zones.clone()
        };
        let given_cyls = match p.raw("cylinders") {
            Some(_) => Some(p.u64_in("cylinders", 0, 1, 100_000_000)? as u32),
            None => None,
        };
        let custom_zones = p.contains("zones") || p.contains("spt");
        if p.contains("spt") {
            let spt = p.u64_in("spt", 0, 1, 1_000_000)? as u32;
            let total: u32 = given_cyls.unwrap_or_else(|| specs.iter().map(|z| z.0).sum());
            specs = vec![(total, spt, 0, 0, 0)];
        } else if let Some(n) = given_cyls {
            if p.contains("zones") {
                bail!("option 'cylinders': give either 'zones' (which fixes the cylinder counts) or 'cylinders', not both");
            }
            let nz = specs.len() as u32;
            if n < nz {
                bail!("option 'cylinders': {n} is fewer than the preset's {nz} zones");
            }
            // Even distribution; the first n % nz zones get one cylinder more.
            for (i, z) in specs.iter_mut().enumerate() {
                z.0 = n / nz + u32::from((i as u32) < n % nz);
            }
        }

        let (first, first_len) = match p.raw("seek_first10") {
            Some(v) => parse_first10(v)?,
            None => (pr.seek.first, pr.seek.first_len),
        };
        let seek = SeekCurve {
            boundary: p.f64_in("seek_boundary", pr.seek.boundary, 0.0, f64::INFINITY)?,
            a: p.f64_in("seek_a", pr.seek.a, -1000.0, 1000.0)?,
            b: p.f64_in("seek_b", pr.seek.b, 0.0, 1000.0)?,
            c: p.f64_in("seek_c", pr.seek.c, -1000.0, 1000.0)?,
            e: p.f64_in("seek_e", pr.seek.e, 0.0, 1000.0)?,
            first,
            first_len,
        };
        let head_switch_ms = p.f64_in("head_switch_ms", pr.head_switch_ms, 0.0, 1000.0)?;
        let write_settle_ms = p.f64_in("write_settle_ms", pr.write_settle_ms, 0.0, 1000.0)?;
        let overhead_us = p.f64_in("overhead_us", pr.overhead_us, 0.0, 1e6)?;
        let skew = match p.str_or("skew", "").as_str() {
            "" if custom_zones => Skew::Auto,
            "" => pr.skew,
            "on" | "1" | "preset" => Skew::On,
            "auto" => Skew::Auto,
            "off" | "0" => Skew::Off,
            other => bail!("option 'skew': '{other}' is not on, auto or off"),
        };
        let ts_over = match p.raw("track_skew") {
            Some(_) => Some(p.u64_in("track_skew", 0, 0, 1_000_000)? as u32),
            None => None,
        };
        let cs_over = match p.raw("cyl_skew") {
            Some(_) => Some(p.u64_in("cyl_skew", 0, 0, 1_000_000)? as u32),
            None => None,
        };
        let ncq_depth = p.u64_in("ncq_depth", pr.ncq_depth as u64, 1, 1024)? as u32;
        let depth = p.u64_in("queue_depth", ncq_depth as u64, 1, 1024)? as u32;
        if ncq_depth > depth {
            bail!("option 'ncq_depth': {ncq_depth} is more than queue_depth {depth} (the drive reorders among the commands it holds)");
        }
        let cache_bytes = p.size_or("write_cache", pr.cache_bytes)?;
        let iface_mbps = p.f64_in("interface_mbps", pr.iface_mbps, 0.001, 1e6)?;
        let pp = pr.power;
        let power = HddPower {
            idle_w: p.f64_in("idle_w", pp.idle_w, 0.0, 1e4)?,
            seek_w: p.f64_in("seek_w", pp.seek_w, 0.0, 1e4)?,
            rw_w: p.f64_in("rw_w", pp.rw_w, 0.0, 1e4)?,
            standby_w: p.f64_in("standby_w", pp.standby_w, 0.0, 1e4)?,
            spinup_s: p.f64_in("spinup_s", pp.spinup_s, 0.0, 1e4)?,
            spinup_j: p.f64_in("spinup_j", pp.spinup_j, 0.0, 1e7)?,
        };
        let standby_after_ns =
            p.time_in("standby_after", 0, 1_000_000_000, 0, u64::MAX / 4)? as f64;

        let rev_ns = 60e9 / rpm;
        let head_switch_ns = head_switch_ms * 1e6;
        let one_cyl_ns = seek.ms(1) * 1e6;
        let mut zones = Vec::with_capacity(specs.len());
        let (mut cyl, mut lba) = (0u32, 0u64);
        for &(cyls, spt, off, ts, cs) in &specs {
            let sector_ns = rev_ns / spt as f64;
            let auto = |t: f64| ((t / sector_ns).ceil() as u64).min(spt as u64 - 1) as u32;
            let (mut off, mut ts, mut cs) = match skew {
                Skew::On => (off, ts, cs),
                Skew::Auto => (0, auto(head_switch_ns), auto(one_cyl_ns)),
                Skew::Off => (0, 0, 0),
            };
            if let Some(t) = ts_over {
                ts = t;
            }
            if let Some(c) = cs_over {
                cs = c;
            }
            off %= spt;
            ts %= spt;
            cs %= spt;
            let sectors = cyls as u64 * heads as u64 * spt as u64;
            zones.push(Zone {
                first_cyl: cyl,
                cyls,
                spt,
                offset: off,
                track_skew: ts,
                cyl_skew: cs,
                start_lba: lba,
                sectors,
            });
            cyl = cyl
                .checked_add(cyls)
                .context("option 'zones'/'cylinders': too many cylinders")?;
            lba += sectors;
        }
        let cylinders = cyl;
        let readahead_sectors = p.u64_in("readahead_kb", pr.readahead_kb, 0, 1 << 20)? * 2;
        let max_segments = p.u64_in("segments", pr.segments as u64, 1, 1024)? as usize;
        let initial_cyl = p.u64_in("initial_cyl", 0, 0, u32::MAX as u64)? as u32;
        if initial_cyl >= cylinders {
            bail!(
                "option 'initial_cyl': {initial_cyl} is beyond the last cylinder {}",
                cylinders - 1
            );
        }
        Ok(Hdd {
            preset: preset_name,
            heads,
            cylinders,
            zones,
            capacity: lba,
            seek,
            rev_ns,
            inv_rev: 1.0 / rev_ns,
            head_switch_ns,
            write_settle_ns: write_settle_ms * 1e6,
            overhead_ns: overhead_us * 1e3,
            depth,
            ncq_depth,
            cache_sectors: cache_bytes / SECTOR,
            iface_ns_per_sector: SECTOR as f64 / iface_mbps * 1e3,
            readahead_sectors,
            max_segments,
            segments: VecDeque::new(),
            power,
            standby_after_ns,
            pending: VecDeque::new(),
            done: Vec::new(),
            dirty: BTreeMap::new(),
            dirty_by_seq: BTreeMap::new(),
            dirty_sectors: 0,
            destaging_sectors: 0,
            next_seq: 0,
            bus_free: 0.0,
            cur_cyl: initial_cyl,
            cur_head: 0,
            busy_f: 0.0,
            end_ns: 0,
            stats: HddStats::default(),
        })
    }

    /// The preset the device was built from.
    pub fn preset_name(&self) -> &str {
        &self.preset
    }
    /// Number of cylinders.
    pub fn cylinders(&self) -> u32 {
        self.cylinders
    }
    /// Number of surfaces (heads).
    pub fn heads(&self) -> u32 {
        self.heads
    }
    /// Capacity in sectors (Σ over zones).
    pub fn capacity_sectors(&self) -> u64 {
        self.capacity
    }
    /// The zones, outermost first.
    pub fn zones(&self) -> &[Zone] {
        &self.zones
    }
    /// The seek curve.
    pub fn seek_curve(&self) -> &SeekCurve {
        &self.seek
    }
    /// Seek time in ms for `d` cylinders (the device's own seek function).
    pub fn seek_ms(&self, d: u64) -> f64 {
        self.seek.ms(d)
    }
    /// Write settle, in ms.
    pub fn write_settle_ms(&self) -> f64 {
        self.write_settle_ns / 1e6
    }
    /// One revolution, in ns.
    pub fn rev_ns(&self) -> f64 {
        self.rev_ns
    }
    /// Counters so far.
    pub fn stats(&self) -> &HddStats {
        &self.stats
    }
    /// Current arm position (cylinder, head).
    pub fn arm(&self) -> (u32, u32) {
        (self.cur_cyl, self.cur_head)
    }

    /// Map an LBA to its physical address (LBAs past the end wrap around).
    pub fn locate(&self, lba: u64) -> Chs {
        let lba = lba % self.capacity;
        let zi = self.zones.partition_point(|z| z.start_lba <= lba) - 1;
        let z = &self.zones[zi];
        let rel = lba - z.start_lba;
        let track = rel / z.spt as u64;
        Chs {
            zone: zi as u32,
            cyl: z.first_cyl + (track / self.heads as u64) as u32,
            head: (track % self.heads as u64) as u32,
            sector: (rel % z.spt as u64) as u32,
        }
    }

    /// Inverse of [`Hdd::locate`] (the `zone` field is ignored).
    pub fn lba_of(&self, chs: Chs) -> u64 {
        let zi = self.zones.partition_point(|z| z.first_cyl <= chs.cyl) - 1;
        let z = &self.zones[zi];
        z.start_lba
            + ((chs.cyl - z.first_cyl) as u64 * self.heads as u64 + chs.head as u64) * z.spt as u64
            + chs.sector as u64
    }

    /// Angular position (in sectors from the index) of the start of logical
    /// sector `sector` on track (cyl, head) of zone `z`.
    #[inline]
    fn phys_sector(&self, z: &Zone, cyl: u32, head: u32, sector: u32) -> u64 {
        let per_cyl = (self.heads as u64 - 1) * z.track_skew as u64 + z.cyl_skew as u64;
        (sector as u64
            + z.offset as u64
            + (cyl - z.first_cyl) as u64 * per_cyl
            + head as u64 * z.track_skew as u64)
            % z.spt as u64
    }

    /// Wait (ns) at time `t` until physical sector `target` of a track of `spt`
    /// sectors comes under the head.
    #[inline]
    fn rot_wait(&self, t: f64, target: u64, spt: u32) -> f64 {
        let spt_f = spt as f64;
        let sector_ns = self.rev_ns / spt_f;
        let pos = (t * self.inv_rev).fract() * spt_f;
        let mut w = target as f64 - pos;
        if w < 0.0 {
            w += spt_f;
        }
        // Round-off: arriving a hair (< 1 ns) after the sector start counts as on time.
        if w >= spt_f - 1.0 / sector_ns {
            w = 0.0;
        }
        w * sector_ns
    }

    /// Move the arm to (cyl, head) and return the positioning time in ns.
    #[inline]
    fn position(&mut self, cyl: u32, head: u32, write: bool) -> f64 {
        let d = cyl.abs_diff(self.cur_cyl) as u64;
        let mut t = 0.0;
        if d > 0 {
            let s = self.seek.ms(d) * 1e6;
            self.stats.head_movements += 1;
            self.stats.tmd_cyl += d;
            let cyls = self.cylinders as u64;
            self.stats.short_strokes += (d * 100 < cyls) as u64;
            self.stats.long_strokes += (d * 10 >= cyls) as u64;
            self.stats.seek_ns += s;
            t += s;
        } else if head != self.cur_head {
            self.stats.head_switches += 1;
            self.stats.switch_ns += self.head_switch_ns;
            t += self.head_switch_ns;
        } else {
            return 0.0;
        }
        if write {
            self.stats.settle_ns += self.write_settle_ns;
            t += self.write_settle_ns;
        }
        self.cur_cyl = cyl;
        self.cur_head = head;
        t
    }

    /// Serve `sectors` sectors from `lba` starting at exact time `start`;
    /// returns the exact end time. O(tracks spanned), no allocation.
    pub fn service(&mut self, lba: u64, sectors: u32, write: bool, start: f64) -> f64 {
        let mut t = start + self.overhead_ns;
        self.stats.overhead_ns += self.overhead_ns;
        let Chs {
            zone,
            mut cyl,
            mut head,
            mut sector,
        } = self.locate(lba);
        let mut zi = zone as usize;
        t += self.position(cyl, head, write);
        let mut remaining = sectors;
        while remaining > 0 {
            let z = &self.zones[zi];
            let spt = z.spt;
            let target = self.phys_sector(z, cyl, head, sector);
            let w = self.rot_wait(t, target, spt);
            let n = remaining.min(spt - sector);
            let x = n as f64 * self.rev_ns / spt as f64;
            self.stats.rot_wait_ns += w;
            self.stats.xfer_ns += x;
            t += w + x;
            remaining -= n;
            if remaining == 0 {
                break;
            }
            // Next track in LBA order.
            sector = 0;
            head += 1;
            if head == self.heads {
                head = 0;
                cyl += 1;
                if cyl == self.cylinders {
                    cyl = 0;
                }
                if cyl == 0 {
                    zi = 0;
                } else if cyl >= z.first_cyl + z.cyls {
                    zi += 1;
                }
            }
            t += self.position(cyl, head, write);
        }
        t
    }
}

/// Queueing and write cache (see the module comment, "Write cache and NCQ").
impl Hdd {
    /// The engine may dispatch `queue_depth` commands; the drive reorders
    /// among the oldest `ncq_depth` of those it holds.
    pub fn ncq_depth(&self) -> u32 {
        self.ncq_depth
    }
    /// Dirty sectors in the write cache.
    pub fn dirty_sectors(&self) -> u64 {
        self.dirty_sectors
    }

    /// Accept a request at `now`: count it, then answer it from the cache,
    /// or queue it for the arm. Returns its completion time, or a
    /// provisional one (the next decision point) while it waits in the queue.
    fn accept(&mut self, tag: ReqId, rq: &Request, now: Ns) -> Ns {
        let nowf = now as f64;
        self.advance(nowf);
        self.wake(nowf);
        let write = rq.op == Op::Write;
        let s = &mut self.stats;
        s.requests += 1;
        s.sectors += rq.sectors as u64;
        if write {
            s.writes += 1;
        } else {
            s.reads += 1;
        }
        // Back-to-back (or queued) requests start at the exact fractional end
        // of the previous one, so streaming keeps its rotational phase.
        let ready = if now <= self.end_ns {
            self.busy_f.min(nowf)
        } else {
            nowf
        };
        let cache_on = self.cache_sectors > 0;
        let mut cmd = Cmd {
            tag,
            lba: rq.sector,
            sectors: rq.sectors,
            kind: Kind::Read,
            ready,
        };
        if rq.attrs.preflush {
            self.stats.flushes += 1;
            if cache_on {
                self.pending.push_back(Cmd {
                    kind: Kind::Flush {
                        target: self.next_seq,
                        silent: rq.sectors > 0,
                    },
                    ..cmd
                });
            } else if rq.sectors == 0 {
                return Self::finish_now(nowf + self.overhead_ns, now);
            }
        }
        if rq.sectors == 0 {
            if !rq.attrs.preflush {
                return Self::finish_now(nowf + self.overhead_ns, now);
            }
        } else if write {
            self.drop_segments(rq.sector, rq.sectors);
            if rq.attrs.fua {
                self.stats.fua_writes += 1;
            }
            if !cache_on || rq.attrs.fua || rq.sectors as u64 > self.cache_sectors {
                cmd.kind = Kind::MediaWrite;
                self.pending.push_back(cmd);
            } else {
                let queued = self
                    .pending
                    .iter()
                    .any(|c| matches!(c.kind, Kind::CacheWrite | Kind::Flush { .. }));
                if !queued && self.fits(rq.sectors, nowf) {
                    let end = self.admit(rq.sector, rq.sectors, nowf);
                    return Self::finish_now(end, now);
                }
                cmd.kind = Kind::CacheWrite;
                self.pending.push_back(cmd);
            }
        } else if self.pending.is_empty() && self.cache_hit(rq.sector, rq.sectors) {
            self.stats.cache_read_hits += 1;
            let end = self.bus(nowf, rq.sectors);
            return Self::finish_now(end, now);
        } else if let Some(at) = self.segment_hit(rq.sector, rq.sectors) {
            self.stats.readahead_hits += 1;
            let end = self.bus(nowf.max(at), rq.sectors);
            return Self::finish_now(end, now);
        } else {
            self.pending.push_back(cmd);
        }
        self.advance(nowf);
        if let Some(i) = self.done.iter().position(|d| d.0 == tag) {
            return self.done.swap_remove(i).1.max(now);
        }
        self.next_decision(now)
    }

    /// A command at `now` after the drive idled past `standby_after`: it had
    /// spun down then; it spins up now (the arm is busy `spinup_s`).
    fn wake(&mut self, now: f64) {
        if self.standby_after_ns <= 0.0 || !self.pending.is_empty() {
            return;
        }
        let down_at = self.busy_f + self.standby_after_ns;
        if now > down_at {
            self.stats.standby_ns += now - down_at;
            self.stats.spinups += 1;
            self.busy_f = now + self.power.spinup_s * 1e9;
            self.end_ns = self.busy_f.round() as Ns;
        }
    }

    /// The drive's energy meter over a run: idle power as the baseline;
    /// seek, head switch and settle time at `seek_w`, on-track transfer at
    /// `rw_w` (each above idle, per µs); spin-ups; standby time at `standby_w`.
    pub fn meter(&self) -> Meter {
        let (p, s) = (&self.power, &self.stats);
        let mut m = Meter::new(p.idle_w);
        m.set_standby_w(p.standby_w);
        let seek = m.part("seek_us", (p.seek_w - p.idle_w).max(0.0) * 1e-6);
        m.add(
            seek,
            ((s.seek_ns + s.switch_ns + s.settle_ns) / 1e3).round() as u64,
        );
        let rw = m.part("transfer_us", (p.rw_w - p.idle_w).max(0.0) * 1e-6);
        m.add(rw, (s.xfer_ns / 1e3).round() as u64);
        let up = m.part("spin_up", p.spinup_j);
        m.add(up, s.spinups);
        m.add_standby(s.standby_ns as Ns);
        m
    }

    /// A command answered without the queue: completes at `end`.
    fn finish_now(end: f64, now: Ns) -> Ns {
        (end.round() as Ns).max(now)
    }

    /// When a queued command should be asked about again: the arm's next
    /// decision point.
    fn next_decision(&self, now: Ns) -> Ns {
        (self.busy_f.ceil() as Ns).max(now + 1)
    }

    /// Transfer `sectors` over the interface from `t` on; returns the end.
    fn bus(&mut self, t: f64, sectors: u32) -> f64 {
        let start = self.bus_free.max(t) + self.overhead_ns;
        self.bus_free = start + sectors as f64 * self.iface_ns_per_sector;
        self.bus_free
    }

    /// `sectors` more fit in the cache at `t` (an extent being destaged
    /// holds its room until the arm is done with it).
    fn fits(&self, sectors: u32, t: f64) -> bool {
        let busy = if t < self.busy_f {
            self.destaging_sectors
        } else {
            0
        };
        self.dirty_sectors + busy + sectors as u64 <= self.cache_sectors
    }

    /// A write enters the cache at `t`: returns when it has crossed the
    /// interface. A write to the start of a dirty extent replaces it (keeping
    /// the older sequence number, so a flush still waits for it).
    fn admit(&mut self, lba: u64, sectors: u32, t: f64) -> f64 {
        self.stats.cached_writes += 1;
        let at = self.bus(t, sectors);
        let seq = self.next_seq;
        self.next_seq += 1;
        let e = match self.dirty.remove(&lba) {
            Some(old) => {
                self.dirty_sectors -= old.sectors as u64;
                Dirty {
                    sectors: old.sectors.max(sectors),
                    seq: old.seq,
                    at,
                }
            }
            None => {
                self.dirty_by_seq.insert(seq, lba);
                Dirty { sectors, seq, at }
            }
        };
        self.dirty_sectors += e.sectors as u64;
        self.dirty.insert(lba, e);
        at
    }

    /// The read lies inside one dirty extent.
    fn cache_hit(&self, lba: u64, sectors: u32) -> bool {
        self.dirty
            .range(..=lba)
            .next_back()
            .is_some_and(|(&l, e)| l + e.sectors as u64 >= lba + sectors as u64)
    }

    /// Positioning plus rotational wait (ns) to start `lba` at time `t`, from
    /// the arm's position, without moving it (the SPTF estimate).
    fn access_ns(&self, t: f64, lba: u64, write: bool) -> f64 {
        let c = self.locate(lba);
        let d = c.cyl.abs_diff(self.cur_cyl) as u64;
        let mut p = self.overhead_ns;
        let moved = if d > 0 {
            p += self.seek.ms(d) * 1e6;
            true
        } else if c.head != self.cur_head {
            p += self.head_switch_ns;
            true
        } else {
            false
        };
        if moved && write {
            p += self.write_settle_ns;
        }
        let z = &self.zones[c.zone as usize];
        p + self.rot_wait(t + p, self.phys_sector(z, c.cyl, c.head, c.sector), z.spt)
    }

    /// Serve `sectors` at `lba` on the media from `t`; the arm is busy until the end.
    fn serve(&mut self, lba: u64, sectors: u32, write: bool, t: f64) -> f64 {
        let end = self.service(lba, sectors, write, t);
        self.stats.busy_ns += end - t;
        self.busy_f = end;
        self.end_ns = end.round() as Ns;
        end
    }

    /// The dirty extent to destage next: the next one at or after the arm's
    /// position in LBA order, wrapping around (C-LOOK).
    fn destage_next(&self) -> Option<(u64, Dirty)> {
        let arm = self.lba_of(Chs {
            zone: 0,
            cyl: self.cur_cyl,
            head: self.cur_head,
            sector: 0,
        });
        self.dirty
            .range(arm..)
            .next()
            .or_else(|| self.dirty.iter().next())
            .map(|(&l, &e)| (l, e))
    }

    /// Write dirty extent (`lba`, `e`) to the media from `t` (not before it
    /// entered the cache).
    fn destage(&mut self, lba: u64, e: Dirty, t: f64) {
        self.dirty.remove(&lba);
        self.dirty_by_seq.remove(&e.seq);
        self.dirty_sectors -= e.sectors as u64;
        self.stats.destages += 1;
        self.stats.destage_sectors += e.sectors as u64;
        self.serve(lba, e.sectors, true, t.max(e.at));
        self.destaging_sectors = e.sectors as u64;
    }

    /// Destage the next extent from `t` (a flush or a full cache waits for it).
    fn destage_one(&mut self, t: f64) {
        if let Some((lba, e)) = self.destage_next() {
            self.destage(lba, e, t);
        }
    }

    /// Bring the arm up to `now`: serve queued commands whose decision point
    /// has come, and destage dirty data while idle (the background work a
    /// drive does between commands, accounted lazily). In arrival order
    /// (`ncq_depth` 1) nothing later can change a decision, so the queue is
    /// served at once, as the drive without queueing always did.
    fn advance(&mut self, now: f64) {
        let eager = self.ncq_depth == 1;
        loop {
            if let Some(front) = self.pending.front() {
                let t = self.busy_f.max(front.ready);
                if t <= now || eager {
                    self.decide(t);
                    continue;
                }
            } else if let Some((lba, e)) = self.destage_next() {
                // Idle: destage if it would have started before `now`.
                if self.busy_f.max(e.at) < now {
                    self.destage(lba, e, self.busy_f);
                    continue;
                }
            }
            break;
        }
    }

    /// The arm is free at `t` with commands queued: take one step.
    fn decide(&mut self, t: f64) {
        let front = self.pending[0];
        if let Kind::Flush { target, silent } = front.kind {
            if self
                .dirty_by_seq
                .first_key_value()
                .is_some_and(|(&s, _)| s < target)
            {
                self.destage_one(t);
                return;
            }
            self.pending.pop_front();
            if !silent {
                let end = (t + self.overhead_ns).round() as Ns;
                self.done.push((front.tag, end));
            }
            return;
        }
        // The window: the oldest ncq_depth commands up to a flush (a barrier).
        let n = self
            .pending
            .iter()
            .take(self.ncq_depth as usize)
            .take_while(|c| !matches!(c.kind, Kind::Flush { .. }))
            .count();
        if let Some(i) = (0..n).find(|&i| self.pending[i].kind == Kind::CacheWrite) {
            let c = self.pending[i];
            if self.fits(c.sectors, t) {
                self.pending.remove(i);
                let end = self.admit(c.lba, c.sectors, t.max(c.ready));
                self.done.push((c.tag, end.round() as Ns));
            } else {
                self.destage_one(t);
            }
            return;
        }
        // Shortest positioning time first among the window's ready commands.
        let mut best = 0;
        if n > 1 {
            let mut best_ns = f64::INFINITY;
            let mut cands = 0;
            for i in 0..n {
                let c = &self.pending[i];
                if c.ready > t {
                    continue;
                }
                cands += 1;
                let a = self.access_ns(t, c.lba, c.kind == Kind::MediaWrite);
                if a < best_ns {
                    best_ns = a;
                    best = i;
                }
            }
            if cands > 1 {
                self.stats.ncq_choices += 1;
                if best != 0 {
                    self.stats.ncq_reorders += 1;
                }
            }
        }
        let c = self.pending.remove(best).expect("window index");
        let end = self.serve(c.lba, c.sectors, c.kind == Kind::MediaWrite, t.max(c.ready));
        self.done.push((c.tag, end.round() as Ns));
        if c.kind == Kind::Read {
            self.read_ahead(c.lba, c.sectors, end);
        }
    }

    /// A read of [lba, lba + n) left the media at `end`: read on to
    /// `readahead_sectors` more or the end of the track (the arm stays busy
    /// meanwhile), into a segment.
    fn read_ahead(&mut self, lba: u64, n: u32, end: f64) {
        if self.readahead_sectors == 0 || n == 0 {
            return;
        }
        let e = lba + n as u64;
        let last = self.locate(e - 1);
        let spt = self.zones[last.zone as usize].spt;
        let left_on_track = (spt - 1 - last.sector) as u64;
        let ahead = self.readahead_sectors.min(left_on_track);
        let ns_per_sector = self.rev_ns / spt as f64;
        let t_ahead = ahead as f64 * ns_per_sector;
        self.stats.readahead_sectors += ahead;
        self.stats.xfer_ns += t_ahead;
        self.stats.busy_ns += t_ahead;
        self.busy_f = end + t_ahead;
        self.end_ns = self.busy_f.round() as Ns;
        self.drop_segments(lba, n + ahead as u32);
        if self.segments.len() >= self.max_segments {
            self.segments.pop_front();
        }
        self.segments.push_back(Segment {
            lo: lba,
            e,
            hi: e + ahead,
            t_e: end,
            ns_per_sector,
        });
    }

    /// When [lba, lba + n) can be answered from a read segment, if it can
    /// (the segment becomes the most recently used).
    fn segment_hit(&mut self, lba: u64, n: u32) -> Option<f64> {
        let i = self
            .segments
            .iter()
            .rposition(|g| g.ready(lba, n).is_some())?;
        let g = self.segments.remove(i)?;
        let at = g.ready(lba, n);
        self.segments.push_back(g);
        at
    }

    /// A write of [lba, lba + n): segments holding any of it are stale.
    fn drop_segments(&mut self, lba: u64, n: u32) {
        let e = lba + n as u64;
        self.segments.retain(|g| g.hi <= lba || g.lo >= e);
    }
}

impl Device for Hdd {
    fn name(&self) -> &str {
        "hdd"
    }
    fn info(&self) -> DeviceInfo {
        DeviceInfo {
            capacity_sectors: self.capacity,
            queue_depth: self.depth,
            rotational: true,
            erase_block_sectors: None,
            optimal_io_sectors: None,
            max_hw_sectors: None,
            host_tags: None,
        }
    }
    fn volatile_cache(&self) -> bool {
        self.cache_sectors > 0
    }
    fn submit(&mut self, rq: &Request, now: Ns) -> Ns {
        self.submit_tagged(ReqId::MAX, rq, now)
    }
    fn submit_tagged(&mut self, tag: ReqId, rq: &Request, now: Ns) -> Ns {
        self.accept(tag, rq, now)
    }
    fn recheck(&mut self, tag: ReqId, now: Ns) -> Option<Ns> {
        self.advance(now as f64);
        if let Some(i) = self.done.iter().position(|d| d.0 == tag) {
            let t = self.done[i].1;
            if t <= now {
                self.done.swap_remove(i);
                return None;
            }
            return Some(t);
        }
        if self.pending.iter().any(|c| c.tag == tag) {
            return Some(self.next_decision(now));
        }
        None
    }
    fn counters(&self) -> serde_json::Value {
        let s = &self.stats;
        let ad_seek = if s.head_movements > 0 {
            s.tmd_cyl as f64 / s.head_movements as f64
        } else {
            0.0
        };
        serde_json::json!({
            "preset": self.preset,
            "requests": s.requests,
            "reads": s.reads,
            "writes": s.writes,
            "sectors": s.sectors,
            "head_movements": s.head_movements,
            "tmd_cyl": s.tmd_cyl,
            "ad_seek_cyl": ad_seek,
            "td_sweep": s.tmd_cyl as f64 / self.cylinders as f64,
            "short_strokes": s.short_strokes,
            "long_strokes": s.long_strokes,
            "head_switches": s.head_switches,
            "seek_ns": s.seek_ns as u64,
            "head_switch_ns": s.switch_ns as u64,
            "write_settle_ns": s.settle_ns as u64,
            "rot_wait_ns": s.rot_wait_ns as u64,
            "xfer_ns": s.xfer_ns as u64,
            "overhead_ns": s.overhead_ns as u64,
            "busy_ns": s.busy_ns as u64,
            "cached_writes": s.cached_writes,
            "cache_read_hits": s.cache_read_hits,
            "readahead_hits": s.readahead_hits,
            "readahead_sectors": s.readahead_sectors,
            "destages": s.destages,
            "destage_sectors": s.destage_sectors,
            "flushes": s.flushes,
            "fua_writes": s.fua_writes,
            "ncq_choices": s.ncq_choices,
            "ncq_reorders": s.ncq_reorders,
            "spinups": s.spinups,
            "standby_ns": s.standby_ns as u64,
        })
    }
    fn energy(&self, elapsed: Ns, _busy: Ns) -> Energy {
        self.meter().report(elapsed)
    }
}

#[cfg(test)]
mod tests;
