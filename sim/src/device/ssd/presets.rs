//! The SSD classes `preset=` names: each sets the defaults of the options after
//! it (sources in the model's module comment).

use anyhow::{bail, Result};

/// One class of SSD: the defaults `preset=` sets (every other option
/// overrides its value). Sources in the module comment.
#[derive(Clone, Copy, Debug)]
pub(super) struct Preset {
    pub(super) channels: u64,
    pub(super) dies_per_channel: u64,
    pub(super) planes: u64,
    pub(super) blocks_per_plane: u64,
    pub(super) pages_per_block: u64,
    /// NAND page bytes (the FTL's page, `page_size`, is 4 KiB).
    pub(super) nand_page: u64,
    pub(super) program_pages: u64,
    pub(super) op: f64,
    /// tR, tPROG, tBERS in µs.
    pub(super) times: (f64, f64, f64),
    pub(super) channel_mts: f64,
    pub(super) queue_depth: u64,
    pub(super) write_buffer: u64,
    pub(super) plp: bool,
    pub(super) interface: &'static str,
    pub(super) gc_bg_threshold: f64,
    pub(super) gc_idle_threshold: f64,
    pub(super) suspend: bool,
    pub(super) alloc: &'static str,
    pub(super) idle_w: f64,
    pub(super) controller_w: f64,
    pub(super) slc_cache: u64,
    pub(super) slc_prog_us: f64,
}

/// The presets [`preset`] knows; the first is the default.
pub const PRESETS: &[&str] = &["tlc_nvme", "qlc_nvme", "tlc_enterprise", "mqsim"];

pub(super) fn preset(name: &str) -> Result<Preset> {
    let mqsim = Preset {
        channels: 8,
        dies_per_channel: 4,
        planes: 2,
        blocks_per_plane: 256,
        pages_per_block: 256,
        nand_page: 4096,
        program_pages: 1,
        op: 0.07,
        times: (75.0, 750.0, 3800.0),
        channel_mts: 333.0,
        queue_depth: 32,
        write_buffer: 0,
        plp: false,
        interface: "none",
        gc_bg_threshold: 2.0,
        gc_idle_threshold: 2.0,
        suspend: false,
        alloc: "rr",
        idle_w: 0.5,
        controller_w: 2.5,
        slc_cache: 0,
        slc_prog_us: 200.0,
    };
    let tlc = Preset {
        channels: 8,
        dies_per_channel: 2,
        planes: 4,
        blocks_per_plane: 256,
        pages_per_block: 192,
        nand_page: 16384,
        program_pages: 48,
        op: 0.0737,
        times: (60.0, 2000.0, 5000.0),
        channel_mts: 1200.0,
        queue_depth: 1023,
        write_buffer: 16 << 20,
        plp: false,
        interface: "pcie4x4",
        gc_bg_threshold: 0.015,
        gc_idle_threshold: 0.03,
        suspend: true,
        alloc: "die",
        idle_w: 0.05,
        controller_w: 3.0,
        slc_cache: 64 << 20,
        slc_prog_us: 200.0,
    };
    Ok(match name {
        "mqsim" => mqsim,
        "tlc_nvme" => tlc,
        "qlc_nvme" => Preset {
            channels: 4,
            dies_per_channel: 2,
            program_pages: 64,
            times: (140.0, 4000.0, 10000.0),
            channel_mts: 800.0,
            interface: "pcie3x4",
            slc_cache: 256 << 20,
            ..tlc
        },
        "tlc_enterprise" => Preset {
            channels: 16,
            dies_per_channel: 4,
            op: 0.374,
            write_buffer: 64 << 20,
            plp: true,
            gc_bg_threshold: 0.03,
            gc_idle_threshold: 0.0625,
            idle_w: 5.0,
            controller_w: 6.0,
            slc_cache: 0,
            ..tlc
        },
        other => bail!(
            "option 'preset': unknown ssd preset '{other}' (known: {})",
            PRESETS.join(", ")
        ),
    })
}
