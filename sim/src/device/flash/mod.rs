//! Shared pieces of the flash device models: NAND timing presets, the
//! page-timing model on dies and channels ([`timeline`]) and the page-mapped
//! FTL core ([`ftl`]).
//!
//! NAND timing presets (reference/simulators.md §4.3):
//! - `cell=slc`: tR 25 µs, tPROG 200 µs, tBERS 1.5 ms (Numonyx NAND02G-B2D datasheet, FlashSim).
//! - `cell=mlc`: tR 75 µs, tPROG 750 µs, tBERS 3.8 ms (MQSim defaults / fast18 config).
//! - `cell=tlc`: tR 90 µs, tPROG 2 ms, tBERS 5 ms (typical 3D TLC; *not* from one datasheet).
//!
//! Channel transfer of a page = page_bytes / (channel_mts × bus_bytes) (MT/s × bytes = MB/s,
//! §4.3: 8 KiB at 333 MB/s ≈ 24.6 µs). A command (opcode + 5 address cycles + confirm) is
//! 7 bus cycles: cmd_ns = 7 × 1000 / channel_mts unless `cmd_ns` is given.
//!
//! Options read here: `cell`, `read_us`, `prog_us`, `erase_us` (times; a bare number is µs,
//! units ns/us/ms/s accepted), `channel_mts`, `bus_bytes`, `cmd_ns` (bare number = ns).

pub mod ftl;
pub mod mapcache;
pub mod timeline;

use crate::params::{parse_time, Params};
use crate::types::Ns;
use anyhow::{bail, Context, Result};

/// NAND operation latencies and the per-page channel transfer time, in ns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NandTiming {
    /// Array read (page sense) time tR.
    pub read_ns: Ns,
    /// Page program time tPROG.
    pub prog_ns: Ns,
    /// Block erase time tBERS.
    pub erase_ns: Ns,
    /// Channel transfer of one page.
    pub xfer_ns: Ns,
    /// Command/address cycles of one operation.
    pub cmd_ns: Ns,
}

/// The cell-type presets [`cell_preset`] knows.
pub const CELLS: &[&str] = &["slc", "mlc", "tlc"];

/// (tR, tPROG, tBERS) in µs for a cell-type preset name.
pub fn cell_preset(name: &str) -> Option<(f64, f64, f64)> {
    match name {
        "slc" => Some((25.0, 200.0, 1500.0)),
        "mlc" => Some((75.0, 750.0, 3800.0)),
        "tlc" => Some((90.0, 2000.0, 5000.0)),
        _ => None,
    }
}

fn time_opt(p: &Params, key: &str, default_us: f64) -> Result<Ns> {
    match p.raw(key) {
        None => Ok((default_us * 1000.0).round() as Ns),
        Some(v) => parse_time(v, 1_000).with_context(|| format!("option '{key}'")),
    }
}

/// Parse the timing options with the given defaults (cell preset name, channel
/// MT/s, bus width in bytes) for a page of `page_bytes`.
pub fn nand_timing(
    p: &Params,
    default_cell: &str,
    default_mts: f64,
    default_bus: u64,
    page_bytes: u64,
) -> Result<NandTiming> {
    let times = cell_preset(default_cell).context("default cell preset")?;
    nand_timing_or(p, default_cell, times, default_mts, default_bus, page_bytes)
}

/// [`nand_timing`] with default times (tR, tPROG, tBERS in µs) of a device
/// preset; `cell=` (listed with default `what`: a cell name, or "-" when
/// the times are the device preset's) replaces them with a cell preset's.
pub fn nand_timing_or(
    p: &Params,
    what: &str,
    times: (f64, f64, f64),
    default_mts: f64,
    default_bus: u64,
    page_bytes: u64,
) -> Result<NandTiming> {
    let cell = p.str_of("cell", what, CELLS);
    let (r, w, e) = if p.contains("cell") {
        let Some(t) = cell_preset(&cell) else {
            bail!("option 'cell': '{cell}' is not slc, mlc or tlc");
        };
        t
    } else {
        times
    };
    let read_ns = time_opt(p, "read_us", r)?;
    let prog_ns = time_opt(p, "prog_us", w)?;
    let erase_ns = time_opt(p, "erase_us", e)?;
    let mts = p.f64_in("channel_mts", default_mts, 1.0, 100_000.0)?;
    let bus = p.u64_in("bus_bytes", default_bus, 1, 16)?;
    let xfer_ns = (page_bytes as f64 * 1000.0 / (mts * bus as f64)).ceil() as Ns;
    let cmd_ns = match p.raw("cmd_ns") {
        None => (7.0 * 1000.0 / mts).round() as Ns,
        Some(v) => parse_time(v, 1).context("option 'cmd_ns'")?,
    };
    Ok(NandTiming {
        read_ns,
        prog_ns,
        erase_ns,
        xfer_ns,
        cmd_ns,
    })
}

/// Page size option: a multiple of 512 bytes between 512 B and 1 MiB.
pub fn page_size(p: &Params, default: u64) -> Result<u64> {
    let v = p.size_or("page_size", default)?;
    if !(512..=(1 << 20)).contains(&v) || v % 512 != 0 {
        bail!("option 'page_size': {v} is not a multiple of 512 between 512 and 1m");
    }
    Ok(v)
}

/// The pages of `page_bytes` a discard of `sectors` from `sector` covers
/// whole (a page it covers in part keeps its data, as the kernel's discard
/// granularity would have rounded it away).
pub fn whole_pages(sector: u64, sectors: u64, page_bytes: u64) -> std::ops::Range<u64> {
    let start = (sector * crate::types::SECTOR).div_ceil(page_bytes);
    let end = (sector + sectors) * crate::types::SECTOR / page_bytes;
    start..end.max(start)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_and_overrides() {
        let p = Params::parse_kv("cell=slc,channel_mts=400,bus_bytes=1").unwrap();
        let t = nand_timing(&p, "mlc", 333.0, 1, 4096).unwrap();
        assert_eq!(
            (t.read_ns, t.prog_ns, t.erase_ns),
            (25_000, 200_000, 1_500_000)
        );
        assert_eq!(t.xfer_ns, 10_240); // 4096 B / 400 MB/s
        assert_eq!(t.cmd_ns, 18); // 7 cycles at 400 MT/s = 17.5 ns
        let p = Params::parse_kv("read_us=40,prog_us=0.5ms,cmd_ns=0").unwrap();
        let t = nand_timing(&p, "tlc", 333.0, 1, 8192).unwrap();
        assert_eq!(
            (t.read_ns, t.prog_ns, t.erase_ns, t.cmd_ns),
            (40_000, 500_000, 5_000_000, 0)
        );
        assert_eq!(t.xfer_ns, 24_601); // §4.3: 8 KiB @ 333 MB/s ≈ 24.6 µs
        let e = nand_timing(
            &Params::parse_kv("cell=qlc").unwrap(),
            "mlc",
            333.0,
            1,
            4096,
        )
        .unwrap_err();
        assert!(format!("{e:#}").contains("'cell'"));
        let e = nand_timing(
            &Params::parse_kv("read_us=fast").unwrap(),
            "mlc",
            333.0,
            1,
            4096,
        )
        .unwrap_err();
        assert!(format!("{e:#}").contains("'read_us'"));
    }
}
