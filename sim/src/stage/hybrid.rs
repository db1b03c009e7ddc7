//! `hybrid-store`: the disk + flash hybrid store of the QoS seed
//! (/work/shared/seeds/qos-flash-hybrid-store.txt, chapters 3-5): the
//! logical address space in fixed clusters of sectors, statistics per
//! cluster, and a policy that says which data lives on the flash.
//!
//! Statistics (§3.3.1.1, §5.2), per cluster: reads, writes, and whether each
//! request was *sequential*: "made to a cluster which is the same as, or
//! adjoining, the cluster to which the previous request was made" (the
//! previous request of the same stream, a job or trace).
//!
//! * `mode=offline` (§3.3.1, §4.2): two passes. The first run
//!   (`mode=observe`, made by `Config::build` before the real one) only
//!   gathers the statistics; the second maps whole clusters to the flash
//!   before it starts: *random* clusters (sequential share below
//!   `seq_threshold`) by their expected saving, most first, while the flash
//!   has room. The saving is the seed's gain equation (§4.2, Table 4)
//!   summed over the cluster: reads·(t_disk_read − t_r) − writes·(t_w' −
//!   t_disk_write), with t_disk_read = α_r·β_r·t_r (`disk_read_us`), t_r
//!   (`flash_read_us`), t_w' = t_w + m·x at saturation (`flash_write_us`),
//!   and t_disk_write = α_w·β_w·t_w (`disk_write_us`); for reads only it
//!   orders clusters by their number of requests, as §3.3.1.1 says. Placing
//!   the data before the run costs nothing, as in the seed.
//! * `mode=online` (§5): one pass, everything starts on the disk; the data
//!   a request writes lives where that write went. A write goes to the flash
//!   when its cluster is *fit* (§5.3): its random reads exceed its
//!   sequential reads by `rand_margin`, its read/write ratio is at least the
//!   median over the clusters seen (higher than 50 % of them), and it is not
//!   a *victim* unless the flash is less than `victim_free` full, and the
//!   flash has room; otherwise it goes to the disk (and a copy of those
//!   pages on the flash is dropped). Victims (§5.4): of the fit clusters
//!   with data on the flash, the `victim_share` with the lowest read/write
//!   ratio, recomputed every `refresh` reads; with `migrate_victims=1` a
//!   victim's pages move back to the disk (a flash read and a disk write
//!   each, issued by the store and costed on both devices) once the flash
//!   is `victim_free` full: victims are there "to keep space available on
//!   the flash" (§5.4), so with room nothing moves. With
//!   `promote_reads=1` a read of a fit cluster served by the disk, once the
//!   cluster has been read `promote_after` times, is also written to the
//!   flash (a costed flash write): how a workload that never writes reaches
//!   the flash online (the seed's 100 %-read row of Table 7 serves 90 % from
//!   the flash; it does not say how). The store's own I/O is one flow of
//!   weight `own_weight` for schedulers that share by flow (background).
//!   With `placed=1` the online scheme starts with the data placed as the
//!   offline scheme would place it (a first pass, as `mode=offline`; its
//!   chosen clusters' pages mapped to the flash before the run, its
//!   statistics not kept): what the seed's Table 9 implies, whose online
//!   figure at 100 % reads equals its offline one exactly (848.21), which no
//!   scheme that starts empty and learns online can reach on first
//!   references. The online rules then move data as the run writes.
//! * `mode=observe`: statistics only, everything on the disk.
//!
//! Options: `flash` (lane, default 1), `cluster_kb` (default 64; the seed
//! gives no size), `page_kb` (online mapping unit, default 4),
//! `seq_threshold` (0.5), `rand_margin` (1), `victim_share` (0.1),
//! `victim_free` (0.7), `refresh` (1000), `migrate_victims` (1),
//! `promote_reads` (1), `promote_after` (2), `own_weight` (0.25),
//! `own_depth` (8: the store's own bios in flight at most; a promotion
//! due while they are is skipped, a migration waits), `disk_read_us` (5500), `disk_write_us` (5500),
//! `flash_read_us` (171), `flash_write_us` (1500).

use super::{Admit, Piece, Stage};
use crate::params::Params;
use crate::types::DeviceInfo;
use crate::types::{BioSpec, Ns, Op};
use anyhow::{bail, Context, Result};
use rustc_hash::FxHashMap as HashMap;
use serde::{Deserialize, Serialize};

/// The tag bit of the store's own bios (migration, promotion).
const OWN: u64 = 1 << 63;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Mode {
    Observe,
    Offline,
    Online,
}

/// One cluster's statistics.
#[derive(Clone, Copy, Default, Debug, Serialize, Deserialize)]
pub struct ClusterStat {
    pub reads: u64,
    pub writes: u64,
    /// Requests (reads) that were sequential, and random ones.
    pub seq: u64,
    pub rand: u64,
    pub seq_reads: u64,
    pub rand_reads: u64,
}

impl ClusterStat {
    /// Reads per write, smoothed (reads / (writes + 1)): a cluster never
    /// written is not infinitely read-oriented after one read, and the
    /// median over clusters stays finite.
    fn rw_ratio(&self) -> f64 {
        self.reads as f64 / (self.writes + 1) as f64
    }
}

/// What the first pass saw: statistics per cluster.
#[derive(Serialize, Deserialize)]
struct Observation {
    cluster_sectors: u64,
    clusters: Vec<(u64, ClusterStat)>,
}

/// A fixed permutation of cluster numbers (splitmix64's finaliser).
fn scramble(c: u64) -> u64 {
    let mut z = c.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

pub struct HybridStore {
    mode: Mode,
    /// Online: start from the offline scheme's placement (`placed=1`).
    placed: bool,
    flash: u8,
    cluster: u64,
    page: u64,
    /// Flash capacity in pages (online) and in clusters (offline).
    flash_pages: u64,
    flash_clusters: u64,
    seq_threshold: f64,
    rand_margin: f64,
    victim_share: f64,
    victim_free: f64,
    refresh: u64,
    migrate_victims: bool,
    promote_reads: bool,
    /// Reads a cluster must have had before a read of it is promoted.
    promote_after: u64,
    own_weight: f64,
    /// The store's own bios in flight, and at most how many.
    own_inflight: u64,
    own_depth: u64,
    promotions_skipped: u64,
    gain: [f64; 4],
    stats: HashMap<u64, ClusterStat>,
    last_cluster: HashMap<u32, u64>,
    /// Offline: cluster -> flash cluster slot.
    on_flash: HashMap<u64, u64>,
    /// Online: disk page -> flash page, the free flash pages, and each
    /// cluster's pages on the flash.
    map: HashMap<u64, u64>,
    free: Vec<u64>,
    next_page: u64,
    pages_of: HashMap<u64, Vec<u64>>,
    median_rw: f64,
    victims: rustc_hash::FxHashSet<u64>,
    reads_since_refresh: u64,
    /// The store's own I/O waiting to be issued: (lane, bio).
    own: Vec<(u8, BioSpec)>,
    // Figures.
    served: [[u64; 2]; 2],
    /// Per stream (job): requests, and those the flash served.
    by_job: std::collections::BTreeMap<u32, [u64; 2]>,
    split: u64,
    to_flash_writes: u64,
    to_disk_writes: u64,
    refused_full: u64,
    promoted_pages: u64,
    /// placed=1: the pages on the flash before the run.
    placed_pages: u64,
    migrated_pages: u64,
    dropped_pages: u64,
    own_ios: [u64; 2],
}

pub fn new(p: &Params, lanes: &[DeviceInfo]) -> Result<Box<dyn Stage>> {
    let flash = p.u64_in("flash", 1, 1, 254)? as usize;
    if flash >= lanes.len() {
        bail!(
            "placement hybrid-store: option 'flash' = {flash}: the run has {} device(s); add the flash as a tier (--tier, or [[tier]] in the configuration)",
            lanes.len()
        );
    }
    let mode = match p
        .str_of("mode", "offline", &["offline", "online", "observe"])
        .as_str()
    {
        "online" => Mode::Online,
        "observe" => Mode::Observe,
        _ => Mode::Offline,
    };
    let cluster = p.u64_in("cluster_kb", 64, 1, 1 << 30)? * 2;
    let page = p.u64_in("page_kb", 4, 1, 1 << 20)? * 2;
    if cluster % page != 0 {
        bail!("placement hybrid-store: cluster_kb must be a multiple of page_kb");
    }
    let cap = lanes[flash].capacity_sectors;
    // (The first pass of placed=1 runs as mode=observe with it still set.)
    let placed = p.bool_or("placed", false)? && mode != Mode::Observe;
    if placed && mode == Mode::Offline {
        bail!("placement hybrid-store: placed=1 is for mode=online (offline always places before the run)");
    }
    Ok(Box::new(HybridStore {
        mode,
        placed,
        flash: flash as u8,
        cluster,
        page,
        flash_pages: cap / page,
        flash_clusters: cap / cluster,
        seq_threshold: p.f64_in("seq_threshold", 0.5, 0.0, 1.0)?,
        rand_margin: p.f64_in("rand_margin", 1.0, 0.0, 1e12)?,
        victim_share: p.f64_in("victim_share", 0.1, 0.0, 1.0)?,
        victim_free: p.f64_in("victim_free", 0.7, 0.0, 1.0)?,
        refresh: p.u64_in("refresh", 1000, 1, 1 << 40)?,
        migrate_victims: p.bool_or("migrate_victims", true)?,
        promote_reads: p.bool_or("promote_reads", true)?,
        promote_after: p.u64_in("promote_after", 2, 1, 1 << 40)?,
        own_weight: p.f64_in("own_weight", 0.25, 1e-6, 1e9)?,
        own_inflight: 0,
        own_depth: p.u64_in("own_depth", 8, 1, 1 << 20)?,
        promotions_skipped: 0,
        gain: [
            p.f64_in("disk_read_us", 5500.0, 0.0, 1e9)?,
            p.f64_in("disk_write_us", 5500.0, 0.0, 1e9)?,
            p.f64_in("flash_read_us", 171.0, 0.0, 1e9)?,
            p.f64_in("flash_write_us", 1500.0, 0.0, 1e9)?,
        ],
        stats: HashMap::default(),
        last_cluster: HashMap::default(),
        on_flash: HashMap::default(),
        map: HashMap::default(),
        free: Vec::new(),
        next_page: 0,
        pages_of: HashMap::default(),
        median_rw: 0.0,
        victims: Default::default(),
        reads_since_refresh: 0,
        own: Vec::new(),
        served: [[0; 2]; 2],
        by_job: Default::default(),
        split: 0,
        to_flash_writes: 0,
        to_disk_writes: 0,
        refused_full: 0,
        promoted_pages: 0,
        placed_pages: 0,
        migrated_pages: 0,
        dropped_pages: 0,
        own_ios: [0; 2],
    }))
}

impl HybridStore {
    /// Count a request of the stream `job` in its cluster's statistics.
    fn observe(&mut self, bio: &BioSpec) {
        let c = bio.sector / self.cluster;
        let seq = self
            .last_cluster
            .insert(bio.job, c)
            .is_some_and(|prev| prev.abs_diff(c) <= 1);
        let s = self.stats.entry(c).or_default();
        match bio.op {
            Op::Read => {
                s.reads += 1;
                if seq {
                    s.seq_reads += 1;
                } else {
                    s.rand_reads += 1;
                }
            }
            Op::Write => s.writes += 1,
        }
        if seq {
            s.seq += 1;
        } else {
            s.rand += 1;
        }
    }

    /// The offline saving of mapping a cluster to the flash (the gain
    /// equation summed over its requests), or `None` when it is not random.
    fn saving(&self, s: &ClusterStat) -> Option<f64> {
        let n = s.seq + s.rand;
        if n == 0 || s.seq as f64 / n as f64 >= self.seq_threshold {
            return None;
        }
        let [dr, dw, fr, fw] = self.gain;
        Some(s.reads as f64 * (dr - fr) - s.writes as f64 * (fw - dw))
    }

    fn fit(&self, c: u64) -> bool {
        let Some(s) = self.stats.get(&c) else {
            return false;
        };
        if (s.rand_reads as f64) - (s.seq_reads as f64) < self.rand_margin {
            return false;
        }
        if s.rw_ratio() < self.median_rw {
            return false;
        }
        let used =
            (self.next_page - self.free.len() as u64) as f64 / self.flash_pages.max(1) as f64;
        !(self.victims.contains(&c) && used >= self.victim_free)
    }

    /// Recompute the median read/write ratio and the victims (§5.3, §5.4).
    fn refresh_online(&mut self) {
        let mut ratios: Vec<f64> = self.stats.values().map(ClusterStat::rw_ratio).collect();
        if !ratios.is_empty() {
            let mid = ratios.len() / 2;
            ratios.select_nth_unstable_by(mid, f64::total_cmp);
            self.median_rw = ratios[mid];
        }
        let mut held: Vec<(f64, u64)> = self
            .pages_of
            .iter()
            .filter(|(_, v)| !v.is_empty())
            .map(|(c, _)| (self.stats.get(c).map_or(0.0, ClusterStat::rw_ratio), *c))
            .collect();
        held.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        let n = (held.len() as f64 * self.victim_share).floor() as usize;
        self.victims = held.iter().take(n).map(|&(_, c)| c).collect();
        // Victims exist "to keep space available on the flash" (§5.4): their
        // data moves only once the flash is victim_free full, as the rule that
        // keeps their writes off it.
        let used =
            (self.next_page - self.free.len() as u64) as f64 / self.flash_pages.max(1) as f64;
        if self.migrate_victims && used >= self.victim_free {
            let victims: Vec<u64> = held.iter().take(n).map(|&(_, c)| c).collect();
            for c in victims {
                let mut pages = self.pages_of.remove(&c).unwrap_or_default();
                pages.sort_unstable();
                let (mut from, mut to) = (Vec::new(), Vec::new());
                for dp in pages {
                    if let Some(fp) = self.map.remove(&dp) {
                        self.free.push(fp);
                        self.migrated_pages += 1;
                        from.push(fp);
                        to.push(dp);
                    }
                }
                from.sort_unstable();
                self.own_runs(self.flash, Op::Read, &from);
                self.own_runs(0, Op::Write, &to);
            }
        }
    }

    fn own_bio(&mut self, op: Op, sector: u64, pages: u64) -> BioSpec {
        self.own_ios[op.idx()] += 1;
        BioSpec::scripted(op, true, sector, (pages * self.page) as u32, OWN)
    }

    /// The store's own I/O on `lane` for pages `pages` (ascending): one
    /// bio per run of consecutive pages.
    fn own_runs(&mut self, lane: u8, op: Op, pages: &[u64]) {
        let mut i = 0;
        while i < pages.len() {
            let mut j = i + 1;
            while j < pages.len() && pages[j] == pages[j - 1] + 1 {
                j += 1;
            }
            let b = self.own_bio(op, pages[i] * self.page, (j - i) as u64);
            self.own.push((lane, b));
            i = j;
        }
    }

    fn alloc_page(&mut self) -> Option<u64> {
        if let Some(p) = self.free.pop() {
            return Some(p);
        }
        (self.next_page < self.flash_pages).then(|| {
            self.next_page += 1;
            self.next_page - 1
        })
    }

    /// Online: disk page `dp` of cluster `c` now lives on the flash.
    fn map_page(&mut self, c: u64, dp: u64) -> Option<u64> {
        if let Some(&fp) = self.map.get(&dp) {
            return Some(fp);
        }
        let fp = self.alloc_page()?;
        self.map.insert(dp, fp);
        self.pages_of.entry(c).or_default().push(dp);
        Some(fp)
    }

    fn unmap_page(&mut self, c: u64, dp: u64) {
        if let Some(fp) = self.map.remove(&dp) {
            self.free.push(fp);
            self.dropped_pages += 1;
            if let Some(v) = self.pages_of.get_mut(&c) {
                v.retain(|&p| p != dp);
            }
        }
    }

    fn push_piece(out: &mut Vec<Piece>, lane: u8, sector: u64, len: u32) {
        match out.last_mut() {
            Some(p) if p.lane == lane && p.sector + p.sectors as u64 == sector => p.sectors += len,
            _ => out.push(Piece {
                lane,
                sector,
                sectors: len,
            }),
        }
    }

    fn place_offline(&mut self, bio: &BioSpec, out: &mut Vec<Piece>) {
        let end = bio.sector + bio.sectors as u64;
        let mut s = bio.sector;
        while s < end {
            let c = s / self.cluster;
            let next = ((c + 1) * self.cluster).min(end);
            let (lane, sector) = match self.on_flash.get(&c) {
                Some(&slot) => (self.flash, slot * self.cluster + (s - c * self.cluster)),
                None => (0, s),
            };
            Self::push_piece(out, lane, sector, (next - s) as u32);
            s = next;
        }
    }

    fn place_online(&mut self, bio: &BioSpec, out: &mut Vec<Piece>) {
        let end = bio.sector + bio.sectors as u64;
        let c = bio.sector / self.cluster;
        let to_flash = bio.op == Op::Write && self.fit(c);
        let mut s = bio.sector;
        let mut refused = false;
        while s < end {
            let dp = s / self.page;
            let next = ((dp + 1) * self.page).min(end);
            let cc = s / self.cluster;
            let fp = match bio.op {
                Op::Read => self.map.get(&dp).copied(),
                Op::Write if to_flash => {
                    let fp = self.map_page(cc, dp);
                    refused |= fp.is_none();
                    fp
                }
                Op::Write => {
                    self.unmap_page(cc, dp);
                    None
                }
            };
            match fp {
                Some(fp) => Self::push_piece(
                    out,
                    self.flash,
                    fp * self.page + (s - dp * self.page),
                    (next - s) as u32,
                ),
                None => Self::push_piece(out, 0, s, (next - s) as u32),
            }
            s = next;
        }
        if bio.op == Op::Write {
            if to_flash && !refused {
                self.to_flash_writes += 1;
            } else {
                self.to_disk_writes += 1;
                self.refused_full += refused as u64;
            }
        }
    }
}

impl Stage for HybridStore {
    fn name(&self) -> &str {
        "hybrid-store"
    }
    fn admit(&mut self, _bio: &mut BioSpec, _now: Ns) -> Admit {
        Admit::Now
    }
    fn place(&mut self, bio: &BioSpec, _now: Ns, out: &mut Vec<Piece>) {
        if bio.sectors == 0 || bio.tag & OWN != 0 {
            return;
        }
        if self.mode == Mode::Online && bio.op == Op::Read {
            self.reads_since_refresh += 1;
            if self.reads_since_refresh >= self.refresh {
                self.reads_since_refresh = 0;
                self.refresh_online();
            }
        }
        // The decision sees the history before this request (§5.2).
        match self.mode {
            Mode::Observe => {}
            Mode::Offline => self.place_offline(bio, out),
            Mode::Online => self.place_online(bio, out),
        }
        self.observe(bio);
        if out.len() > 1 {
            self.split += 1;
        }
        let on_flash = out.iter().any(|p| p.lane == self.flash);
        self.served[bio.op.idx()][on_flash as usize] += 1;
        let j = self.by_job.entry(bio.job).or_default();
        j[0] += 1;
        j[1] += on_flash as u64;
        if out.iter().all(|p| p.lane == 0) {
            out.clear();
        }
    }
    fn completed(&mut self, lane: u8, bio: &BioSpec, _now: Ns) {
        if bio.tag & OWN != 0 {
            self.own_inflight = self.own_inflight.saturating_sub(1);
            return;
        }
        // A read the disk served, of a fit cluster: written to the flash too.
        if self.mode != Mode::Online
            || !self.promote_reads
            || lane != 0
            || bio.op != Op::Read
            || bio.tag & OWN != 0
        {
            return;
        }
        let c = bio.sector / self.cluster;
        // Promote where reads come back: the cluster's reads so far (this
        // one counted at submission) reach promote_after.
        if !self.fit(c) || self.stats.get(&c).map_or(0, |s| s.reads) < self.promote_after {
            return;
        }
        // Promotion is optional: skipped while the store's own I/O is at its depth.
        if self.own.len() as u64 + self.own_inflight >= self.own_depth {
            self.promotions_skipped += 1;
            return;
        }
        let first = bio.sector / self.page;
        let last = (bio.sector + bio.sectors.max(1) as u64 - 1) / self.page;
        let mut to = Vec::new();
        for dp in first..=last {
            if self.map.contains_key(&dp) {
                continue;
            }
            let Some(fp) = self.map_page(dp * self.page / self.cluster, dp) else {
                self.refused_full += 1;
                break;
            };
            self.promoted_pages += 1;
            to.push(fp);
        }
        to.sort_unstable();
        self.own_runs(self.flash, Op::Write, &to);
    }
    fn poll_io(&mut self, _now: Ns, out: &mut Vec<(u8, BioSpec)>) -> Option<Ns> {
        // At most own_depth of its own bios in flight (migrations wait their
        // turn): background I/O must not take every request of a device.
        let room = self.own_depth.saturating_sub(self.own_inflight) as usize;
        let n = room.min(self.own.len());
        self.own_inflight += n as u64;
        out.extend(self.own.drain(..n));
        None
    }
    fn own_qos(&self) -> crate::sched::FlowQos {
        crate::sched::FlowQos {
            weight: self.own_weight,
            ..Default::default()
        }
    }
    fn two_pass(&self) -> bool {
        self.mode == Mode::Offline || self.placed
    }
    fn observation(&self) -> serde_json::Value {
        let mut clusters: Vec<(u64, ClusterStat)> =
            self.stats.iter().map(|(c, s)| (*c, *s)).collect();
        clusters.sort_unstable_by_key(|x| x.0);
        serde_json::to_value(Observation {
            cluster_sectors: self.cluster,
            clusters,
        })
        .unwrap_or(serde_json::Value::Null)
    }
    fn learn(&mut self, seen: &serde_json::Value) -> Result<()> {
        let o: Observation = serde_json::from_value(seen.clone())
            .context("hybrid-store: the first pass's observation")?;
        if o.cluster_sectors != self.cluster {
            bail!(
                "hybrid-store: the first pass used {}-sector clusters, this one {}",
                o.cluster_sectors,
                self.cluster
            );
        }
        let mut ranked: Vec<(f64, u64)> = o
            .clusters
            .iter()
            .filter_map(|(c, s)| self.saving(s).filter(|g| *g > 0.0).map(|g| (g, *c)))
            .collect();
        // Equal savings (most clusters: one read each) in a scrambled but
        // fixed order: by address would favour the stream at the lower LBAs.
        ranked.sort_by(|a, b| b.0.total_cmp(&a.0).then(scramble(a.1).cmp(&scramble(b.1))));
        let chosen = ranked
            .iter()
            .take(self.flash_clusters as usize)
            .map(|&(_, c)| c);
        if self.mode == Mode::Online {
            // placed=1: the chosen clusters' pages on the flash before the run.
            let pages = self.cluster / self.page;
            for c in chosen {
                for dp in c * pages..(c + 1) * pages {
                    if self.map_page(c, dp).is_none() {
                        return Ok(());
                    }
                }
            }
            self.placed_pages = self.next_page - self.free.len() as u64;
        } else {
            self.on_flash = chosen
                .enumerate()
                .map(|(slot, c)| (c, slot as u64))
                .collect();
        }
        Ok(())
    }
    fn stats(&self) -> serde_json::Value {
        let total: u64 = self.served.iter().flatten().sum();
        let flash: u64 = self.served.iter().map(|x| x[1]).sum();
        serde_json::json!({
            "mode": match self.mode { Mode::Observe => "observe", Mode::Offline => "offline", Mode::Online => "online" },
            "cluster_kb": self.cluster / 2,
            "clusters_seen": self.stats.len(),
            "clusters_on_flash": self.on_flash.len(),
            "flash_clusters": self.flash_clusters,
            "flash_pages_used": self.next_page - self.free.len() as u64,
            "flash_pages": self.flash_pages,
            "requests": total,
            "requests_on_flash": flash,
            "flash_share": if total > 0 { flash as f64 / total as f64 } else { 0.0 },
            "reads_on_flash": self.served[0][1],
            "reads_on_disk": self.served[0][0],
            "writes_on_flash": self.served[1][1],
            "writes_on_disk": self.served[1][0],
            "split_bios": self.split,
            "writes_to_flash": self.to_flash_writes,
            "writes_to_disk": self.to_disk_writes,
            "refused_flash_full": self.refused_full,
            "promoted_pages": self.promoted_pages,
            "placed_pages": self.placed_pages,
            "promotions_skipped": self.promotions_skipped,
            "migrated_pages": self.migrated_pages,
            "dropped_pages": self.dropped_pages,
            "victims": self.victims.len(),
            "by_job": self.by_job.iter().map(|(j, n)| serde_json::json!({"job": j, "requests": n[0], "on_flash": n[1]})).collect::<Vec<_>>(),
            "own_reads": self.own_ios[0],
            "own_writes": self.own_ios[1],
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store(opts: &str) -> Box<dyn Stage> {
        let disk = DeviceInfo::flash(1 << 30, 1);
        let flash = DeviceInfo::flash(256, 1); // 128 KiB: two 64 KiB clusters
        new(&Params::parse_kv(opts).unwrap(), &[disk, flash]).unwrap()
    }

    fn bio(op: Op, sector: u64, sectors: u32, job: u32) -> BioSpec {
        let mut b = BioSpec::scripted(op, true, sector, sectors, 0);
        b.job = job;
        b
    }

    #[test]
    fn offline_maps_the_busiest_random_clusters_and_no_sequential_one() {
        let mut first = store("mode=observe");
        let mut out = Vec::new();
        // Stream 0 reads clusters 0,1,2,3 in order (sequential); stream 1
        // jumps between clusters 100, 300 (three times), 500 (twice).
        for c in 0..4u64 {
            for k in 0..4u64 {
                first.place(&bio(Op::Read, c * 128 + k, 1, 0), 0, &mut out);
            }
        }
        for c in [100u64, 300, 500, 300, 500, 300] {
            first.place(&bio(Op::Read, c * 128, 1, 1), 0, &mut out);
        }
        assert!(out.is_empty(), "the observing pass places nothing");
        let mut second = store("mode=offline");
        assert!(second.two_pass());
        second.learn(&first.observation()).unwrap();
        // The flash holds two clusters: 300 (3 reads) and 500 (2).
        second.place(&bio(Op::Read, 300 * 128 + 5, 1, 1), 0, &mut out);
        assert_eq!(out[0].lane, 1);
        out.clear();
        second.place(&bio(Op::Read, 100 * 128, 1, 1), 0, &mut out);
        assert!(out.is_empty(), "cluster 100 (one read) stays on the disk");
        second.place(&bio(Op::Read, 2 * 128, 1, 0), 0, &mut out);
        assert!(out.is_empty(), "a sequential cluster stays on the disk");
        // A bio across clusters 299|300 splits.
        second.place(&bio(Op::Read, 300 * 128 - 2, 4, 1), 0, &mut out);
        assert_eq!(out.len(), 2);
        assert_eq!(out.iter().map(|p| p.sectors).sum::<u32>(), 4);
    }

    #[test]
    fn online_placed_starts_from_the_offline_placement() {
        let mut first = store("mode=observe,placed=1");
        let mut out = Vec::new();
        for c in [100u64, 300, 500, 300, 500, 300] {
            first.place(&bio(Op::Read, c * 128, 1, 1), 0, &mut out);
        }
        assert!(out.is_empty());
        let mut empty = store("mode=online,promote_reads=0");
        assert!(!empty.two_pass(), "online starts empty unless placed=1");
        let mut placed = store("mode=online,placed=1,promote_reads=0");
        assert!(placed.two_pass());
        placed.learn(&first.observation()).unwrap();
        // Offline's choice (300, then 500) is on the flash before any write;
        // the online scheme that starts empty serves them from the disk.
        placed.place(&bio(Op::Read, 300 * 128 + 5, 1, 1), 0, &mut out);
        assert_eq!(out[0].lane, 1, "{out:?}");
        out.clear();
        empty.place(&bio(Op::Read, 300 * 128 + 5, 1, 1), 0, &mut out);
        assert!(out.is_empty(), "{out:?}");
        assert_eq!(
            placed.stats()["placed_pages"],
            32,
            "two 64 KiB clusters of 4 KiB pages"
        );
        // From there the online rules decide: cluster 300, read at random once
        // online, is fit, so its rewritten page stays on the flash; cluster
        // 500, never read online, is not, so its rewritten page leaves it.
        placed.place(&bio(Op::Write, 300 * 128, 8, 1), 0, &mut out);
        assert_eq!(out[0].lane, 1, "{out:?}");
        out.clear();
        placed.place(&bio(Op::Write, 500 * 128, 8, 1), 0, &mut out);
        assert!(out.is_empty(), "{out:?}");
        placed.place(&bio(Op::Read, 500 * 128, 8, 1), 0, &mut out);
        assert!(out.is_empty(), "rewritten to the disk: read from there");
        assert!(new(
            &Params::parse_kv("mode=offline,placed=1").unwrap(),
            &[DeviceInfo::flash(1 << 30, 1), DeviceInfo::flash(256, 1)]
        )
        .is_err());
    }

    #[test]
    fn online_writes_of_fit_clusters_go_to_flash_and_reads_follow() {
        let mut s = store("mode=online,promote_reads=0,refresh=1");
        let mut out = Vec::new();
        // Random reads to cluster 40 make it fit (two more random reads than sequential).
        for c in [40u64, 90, 40, 90, 40] {
            s.place(&bio(Op::Read, c * 128, 8, 0), 0, &mut out);
        }
        assert!(out.is_empty());
        s.place(&bio(Op::Write, 40 * 128, 8, 0), 0, &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].lane, 1, "{out:?}");
        out.clear();
        s.place(&bio(Op::Read, 40 * 128, 8, 0), 0, &mut out);
        assert_eq!(out[0].lane, 1, "the written pages are read from the flash");
    }
}
