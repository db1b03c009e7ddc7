//! The host side of the hints seed (`placement hints`): the agent that
//! listens on a hint-capable SSD's side channel (`ssd:...,hints=1`), keeps
//! the map chunks it sends in a host cache of a set size (least recently
//! used out), and attaches the cached chunk of every page of a later request
//! as a hint, which the device takes instead of reading the chunk from
//! flash if its version is still current. The chunks reach the host when
//! the link has carried them (the device books them on its link, device to
//! host); the hints cross the link (host to device) ahead of their request.
//!
//! Options: `cache` (fraction of the full map the host keeps, default 1),
//! or `cache_kb`; `preload` (ask the device for the whole map before the
//! first request, as UFS HPB reads the map of its active regions; its
//! bytes cross the link, default 0); `lane` (the device, default 0).

use super::{Admit, Stage};
use crate::device::flash::mapcache::HintPort;
use crate::params::Params;
use crate::types::DeviceInfo;
use crate::types::{BioSpec, Ns, SECTOR};
use anyhow::{bail, Result};
use rustc_hash::FxHashMap;
use std::collections::BTreeMap;

#[derive(Debug, Default, Clone, Copy, serde::Serialize)]
struct HintStats {
    chunks_received: u64,
    hints_attached: u64,
    hint_bytes: u64,
    /// Pages of requests with no cached chunk (no hint sent).
    pages_without_hint: u64,
    evictions: u64,
}

pub struct Hints {
    frac: f64,
    cache_bytes: u64,
    lane: u8,
    preload: bool,
    port: Option<HintPort>,
    cap: usize,
    /// chunk -> (version, stamp); stamp -> chunk (LRU order).
    cache: FxHashMap<u32, (u32, u64)>,
    lru: BTreeMap<u64, u32>,
    stamp: u64,
    st: HintStats,
}

pub fn new(p: &Params, lanes: &[DeviceInfo]) -> Result<Box<dyn Stage>> {
    let frac = p.f64_in("cache", 1.0, 0.0, 1.0)?;
    let cache_bytes = p.size_or("cache_kb", 0)?.saturating_mul(1024);
    let lane = p.u64_in("lane", 0, 0, 255)? as u8;
    let preload = p.bool_or("preload", false)?;
    if p.contains("cache") && p.contains("cache_kb") {
        bail!("options 'cache' and 'cache_kb' both set: give the host's hint cache as a fraction of the map or in KiB, not both");
    }
    if lane as usize >= lanes.len().max(1) {
        bail!(
            "option 'lane': {lane} is not a device of this run ({} lane(s))",
            lanes.len()
        );
    }
    Ok(Box::new(Hints {
        frac,
        cache_bytes,
        lane,
        preload,
        port: None,
        cap: 0,
        cache: FxHashMap::default(),
        lru: BTreeMap::new(),
        stamp: 0,
        st: HintStats::default(),
    }))
}

impl Hints {
    fn touch(&mut self, c: u32, version: u32) {
        self.stamp += 1;
        if let Some((_, old)) = self.cache.insert(c, (version, self.stamp)) {
            self.lru.remove(&old);
        }
        self.lru.insert(self.stamp, c);
        while self.cache.len() > self.cap {
            let Some((_, v)) = self.lru.pop_first() else {
                break;
            };
            self.cache.remove(&v);
            self.st.evictions += 1;
        }
    }

    /// Take the chunks that reached the host by `now`.
    fn receive(&mut self, now: Ns) {
        let Some(port) = self.port.clone() else {
            return;
        };
        let Ok(mut b) = port.lock() else {
            return;
        };
        let mut got = Vec::new();
        while let Some(&(at, c, v)) = b.sent.front() {
            if at > now {
                break;
            }
            b.sent.pop_front();
            got.push((c, v));
        }
        drop(b);
        for (c, v) in got {
            self.st.chunks_received += 1;
            if self.cap > 0 {
                self.touch(c, v);
            }
        }
    }
}

impl Stage for Hints {
    fn name(&self) -> &str {
        "hints"
    }

    fn connect_hints(&mut self, lane: u8, port: HintPort) -> Result<()> {
        if lane != self.lane {
            return Ok(());
        }
        let Ok(mut b) = port.lock() else {
            bail!("the device's hint channel is poisoned");
        };
        b.connected = true;
        b.preload = self.preload;
        self.cap = if self.cache_bytes > 0 {
            (self.cache_bytes / b.chunk_bytes.max(1)) as usize
        } else {
            (b.chunks as f64 * self.frac).round() as usize
        };
        drop(b);
        self.port = Some(port);
        Ok(())
    }

    fn check(&self) -> Result<()> {
        if self.port.is_none() {
            bail!(
                "placement 'hints': device (lane {}) sends no map chunks: use an ssd with map_cache (or map_cache_frac) and hints=1",
                self.lane
            );
        }
        Ok(())
    }

    fn admit(&mut self, bio: &mut BioSpec, now: Ns) -> Admit {
        self.receive(now);
        let Some(port) = self.port.clone() else {
            return Admit::Now;
        };
        let Ok(mut b) = port.lock() else {
            return Admit::Now;
        };
        let first = bio.sector * SECTOR / b.page_bytes;
        let last = ((bio.sector + bio.sectors.max(1) as u64) * SECTOR - 1) / b.page_bytes;
        let mut prev = u32::MAX;
        let mut hits = Vec::new();
        for pg in first..=last {
            let c = b.chunk_of_sector(pg * b.page_bytes / SECTOR);
            if c == prev {
                continue;
            }
            prev = c;
            match self.cache.get(&c) {
                Some(&(v, _)) => {
                    b.attached.insert(c, v);
                    b.pending_bytes += b.chunk_bytes;
                    self.st.hints_attached += 1;
                    self.st.hint_bytes += b.chunk_bytes;
                    hits.push((c, v));
                }
                None => self.st.pages_without_hint += 1,
            }
        }
        drop(b);
        for (c, v) in hits {
            self.touch(c, v);
        }
        Admit::Now
    }

    fn completed(&mut self, _lane: u8, _bio: &BioSpec, now: Ns) {
        self.receive(now);
    }

    fn stats(&self) -> serde_json::Value {
        serde_json::json!({
            "cache_chunks": self.cap,
            "cached": self.cache.len(),
            "chunks_received": self.st.chunks_received,
            "hints_attached": self.st.hints_attached,
            "hint_bytes": self.st.hint_bytes,
            "pages_without_hint": self.st.pages_without_hint,
            "evictions": self.st.evictions,
        })
    }
}
