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
    /// The FTL's mapping unit, `page_size`, in bytes.
    pub(super) page: u64,
    /// NAND page bytes (a multiple of `page`).
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
    pub(super) gc_threshold: f64,
    pub(super) gc_bg_threshold: f64,
    pub(super) gc_idle_threshold: f64,
    pub(super) suspend: bool,
    pub(super) alloc: &'static str,
    /// `unmapped_read`: zero | flash.
    pub(super) unmapped_read: &'static str,
    pub(super) idle_w: f64,
    pub(super) controller_w: f64,
    pub(super) slc_cache: u64,
    pub(super) slc_prog_us: f64,
}

/// The presets [`preset`] knows; the first is the default.
pub const PRESETS: &[&str] = &[
    "tlc_nvme",
    "qlc_nvme",
    "tlc_enterprise",
    "mqsim",
    "mlc_16g",
    "mlc_sata",
];

pub(super) fn preset(name: &str) -> Result<Preset> {
    let mlc_16g = Preset {
        channels: 8,
        dies_per_channel: 4,
        planes: 2,
        blocks_per_plane: 256,
        pages_per_block: 256,
        page: 4096,
        nand_page: 4096,
        program_pages: 1,
        op: 0.07,
        times: (75.0, 750.0, 3800.0),
        channel_mts: 333.0,
        queue_depth: 32,
        write_buffer: 0,
        plp: false,
        interface: "none",
        gc_threshold: 2.0,
        gc_bg_threshold: 2.0,
        gc_idle_threshold: 2.0,
        suspend: false,
        alloc: "rr",
        unmapped_read: "zero",
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
        page: 4096,
        nand_page: 16384,
        program_pages: 48,
        op: 0.0737,
        times: (60.0, 2000.0, 5000.0),
        channel_mts: 1200.0,
        queue_depth: 1023,
        write_buffer: 16 << 20,
        plp: false,
        interface: "pcie4x4",
        gc_threshold: 2.0,
        gc_bg_threshold: 0.015,
        gc_idle_threshold: 0.03,
        suspend: true,
        alloc: "die",
        unmapped_read: "zero",
        idle_w: 0.05,
        controller_w: 3.0,
        slc_cache: 64 << 20,
        slc_prog_us: 200.0,
    };
    // MQSim's default ssdconfig.xml (CMU-SAFARI/MQSim 7ec40e3): 8 channels ×
    // 4 chips × 2 dies × 2 planes × 2048 blocks × 256 pages of 8 KiB, its
    // 256 MiB DRAM data cache, NVMe over PCIe 4 lanes × 1 GB/s (pcie3x4 is
    // the nearest), IO_Queue_Depth 65535, GC below 5 % free blocks, reads
    // of never-written pages from flash (its online_create_entry_for_reads).
    let mqsim = Preset {
        dies_per_channel: 8,
        blocks_per_plane: 2048,
        page: 8192,
        nand_page: 8192,
        queue_depth: 65535,
        write_buffer: 256 << 20,
        interface: "pcie3x4",
        gc_threshold: 0.05,
        gc_bg_threshold: 0.05,
        gc_idle_threshold: 0.05,
        unmapped_read: "flash",
        ..mlc_16g
    };
    Ok(match name {
        "mqsim" => mqsim,
        "mlc_16g" => mlc_16g,
        // Seed 001's SSD-I (Table 2), the 2009-2011 SATA MLC class of seed 000.
        "mlc_sata" => Preset {
            channels: 10,
            dies_per_channel: 2,
            planes: 1,
            blocks_per_plane: 256,
            pages_per_block: 128,
            op: 0.0737,
            times: (50.0, 1110.0, 2000.0),
            channel_mts: 20.0,
            interface: "sata2",
            idle_w: 0.15,
            controller_w: 2.3,
            ..mlc_16g
        },
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
