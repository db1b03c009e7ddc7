//! Building an SSD from its options (`vsim list` shows them; presets in presets.rs).

use super::presets::{preset, PRESETS};
use super::*;
use crate::device::flash::ftl::{check_memory, mem_available_bytes};

impl Ssd {
    /// Build from options; `seed` drives the random preconditioning overwrites.
    pub fn from_params(p: &Params, seed: u64) -> Result<Ssd> {
        let preset_name = p.str_of("preset", PRESETS[0], PRESETS);
        let pr = preset(&preset_name)?;
        let channels = p.u64_in("channels", pr.channels, 1, 1024)? as u32;
        let dpc = p.u64_in("dies_per_channel", pr.dies_per_channel, 1, 1024)? as u32;
        let planes = p.u64_in("planes_per_die", pr.planes, 1, 16)? as u32;
        let bpp = p.u64_in("blocks_per_plane", pr.blocks_per_plane, 4, 1 << 20)? as u32;
        let np = p.u64_in("pages_per_block", pr.pages_per_block, 2, 65536)? as u32;
        let page_bytes = page_size(p, pr.page)?;
        let nand_page = p.size_or("nand_page", pr.nand_page.max(page_bytes))?;
        if nand_page < page_bytes || nand_page % page_bytes != 0 {
            bail!(
                "{}: {nand_page} bytes is not a multiple of the page size ({page_bytes} bytes)",
                p.what("nand_page")
            );
        }
        let op = p.f64_in("op", pr.op, 0.0, 100.0)?;
        let gc_name = p.str_of("gc", "greedy", &["greedy", "fifo"]);
        let Some(policy) = GcPolicy::parse(&gc_name) else {
            bail!("option 'gc': '{gc_name}' is not greedy or fifo");
        };
        let gc_free = blocks_opt(p, "gc_threshold", pr.gc_threshold, bpp)?;
        let gc_bg_free = blocks_opt(p, "gc_bg_threshold", pr.gc_bg_threshold, bpp)?.max(gc_free);
        let gc_idle_free =
            blocks_opt(p, "gc_idle_threshold", pr.gc_idle_threshold, bpp)?.max(gc_bg_free);
        let gc_idle_ns = (p.f64_in("gc_idle_ms", 10.0, 0.0, 1e6)? * 1e6).round() as Ns;
        let suspend = Suspend {
            enabled: p.bool_or("suspend", pr.suspend)?,
            latency_ns: (p.f64_in("suspend_us", 20.0, 0.0, 1e6)? * 1e3).round() as Ns,
            resume_ns: (p.f64_in("resume_us", 20.0, 0.0, 1e6)? * 1e3).round() as Ns,
        };
        let alloc = p.str_of("alloc", pr.alloc, &["rr", "die"]);
        if alloc != "rr" && alloc != "die" {
            bail!("{}: '{alloc}' is not rr or die", p.what("alloc"));
        }
        let unmapped = p.str_of("unmapped_read", pr.unmapped_read, &["zero", "flash"]);
        if unmapped != "zero" && unmapped != "flash" {
            bail!(
                "{}: '{unmapped}' is not zero or flash",
                p.what("unmapped_read")
            );
        }
        let program_pages = p.u64_in("program_pages", pr.program_pages, 1, 64)? as u32;
        let plp = p.bool_or("plp", pr.plp)?;
        let read_priority = p.bool_or("read_priority", pr.suspend)?;
        let flush_wait_ns = (p.f64_in("flush_ms", 1.0, 0.0, 1e6)? * 1e6).round() as Ns;
        let slc_prog_ns = (p.f64_in("slc_prog_us", pr.slc_prog_us, 1.0, 1e6)? * 1e3).round() as Ns;
        let t = nand_timing_or(p, "-", pr.times, pr.channel_mts, 1, page_bytes)?;
        let copyback = p.bool_or("copyback", false)?;
        let depth = p.u64_in("queue_depth", pr.queue_depth, 1, 65536)? as u32;
        let pre = p.str_of("precondition", "seq", &["seq", "full", "none"]);
        let overwrites = p.f64_in("precondition_overwrites", 2.0, 0.0, 100.0)?;
        let buf_bytes = p.size_or("write_buffer", pr.write_buffer)?;
        let slc_cache = p.size_or("slc_cache", pr.slc_cache)?;
        if slc_cache > 0 && (buf_bytes == 0 || alloc != "die") {
            bail!(
                "{}: the SLC cache takes the write buffer's flushes: it needs write_buffer > 0 and alloc=die",
                p.what("slc_cache")
            );
        }
        if buf_bytes > 0 && buf_bytes < page_bytes {
            bail!(
                "{}: {buf_bytes} bytes is less than one page ({page_bytes} bytes)",
                p.what("write_buffer")
            );
        }
        let names: Vec<&str> = INTERFACES.iter().map(|i| i.0).collect();
        let iface = p.str_of("interface", pr.interface, &names);
        let Some(&(_, iface_mbps)) = INTERFACES.iter().find(|i| i.0 == iface) else {
            bail!(
                "{}: '{iface}' is not one of {}",
                p.what("interface"),
                names.join(", ")
            );
        };
        let link_mbps = p.f64_in("host_mbps", iface_mbps, 0.0, 1e7)?;
        let map_bytes = p.size_or("map_cache", 0)?;
        let map_frac = p.f64_in("map_cache_frac", 0.0, 0.0, 1.0)?;
        let entry_bytes = p.u64_in("map_entry_bytes", 4, 1, 64)?;
        let chunk_bytes = p.size_or("map_chunk", entry_bytes)?;
        let hints = p.bool_or("hints", false)?;
        let map_layout = p.str_of("map_layout", "page", &["page", "log"]);
        if map_layout != "page" && map_layout != "log" {
            bail!(
                "{}: '{map_layout}' is not page or log",
                p.what("map_layout")
            );
        }
        if map_bytes > 0 && map_frac > 0.0 {
            bail!("options 'map_cache' and 'map_cache_frac' both set: give the mapping cache in bytes or as a fraction of the map, not both");
        }
        if chunk_bytes < entry_bytes || chunk_bytes % entry_bytes != 0 {
            bail!(
                "{}: {chunk_bytes} bytes is not a multiple of the entry size ({entry_bytes} bytes)",
                p.what("map_chunk")
            );
        }
        if hints && map_bytes == 0 && map_frac == 0.0 {
            bail!(
                "{}: hints need a demand-loaded map: set map_cache or map_cache_frac",
                p.what("hints")
            );
        }
        let power = SsdPower {
            idle_w: p.f64_in("idle_w", pr.idle_w, 0.0, 1e4)?,
            controller_w: p.f64_in("controller_w", pr.controller_w, 0.0, 1e4)?,
            nand_w: p.f64_in("nand_w", 0.066, 0.0, 1e3)?,
            link_pj_per_bit: p.f64_in("link_pj_per_bit", 5.0, 0.0, 1e6)?,
        };

        let dies = channels * dpc;
        let units = dies.checked_mul(planes).context("too many planes")?;
        let phys = units as u64 * bpp as u64 * np as u64;
        let logical = (phys as f64 / (1.0 + op)).floor() as u64;
        if pre != "none" {
            // The fill maps every logical page: the page maps at full size.
            let mem = Ftl::memory(units, bpp, np, logical);
            check_memory(
                &format!(
                    "option 'precondition={pre}' on {phys} pages of {page_bytes} bytes (channels × dies_per_channel × planes_per_die × blocks_per_plane × pages_per_block)"
                ),
                mem.fixed + mem.maps_full,
                mem_available_bytes(),
                "fewer blocks, a larger page_size, or precondition=none (the page maps then grow with the pages written)",
            )?;
        }
        let ftl = Ftl::new(units, bpp, np, logical, policy, gc_free)
            .with_context(|| format!("ssd geometry with op={op}, gc_threshold={gc_free} blocks"))?;
        // The background targets must leave spare room for valid data, as
        // the FTL's check does for the foreground threshold.
        let room = units as u64 * (bpp as u64).saturating_sub(gc_idle_free as u64 + 1) * np as u64;
        if logical >= room {
            bail!(
                "options 'gc_bg_threshold'/'gc_idle_threshold' ({gc_bg_free}/{gc_idle_free} blocks per plane with {bpp} blocks): keeping {gc_idle_free} free blocks per plane leaves room for {room} pages, not the {logical} logical pages (op={op}); lower the background GC targets or raise 'op'"
            );
        }
        let mut s = Ssd {
            ftl,
            tl: {
                let mut tl = Timeline::new(t, dies as usize, channels as usize);
                tl.suspend = suspend;
                tl.read_priority = read_priority;
                tl.read_units = nand_page / page_bytes;
                tl.prog_units = program_pages as u64;
                tl
            },
            channels,
            dies,
            copyback,
            page_bytes,
            pages_per_block: np as u64,
            logical_pages: logical,
            depth,
            power,
            plp,
            gc_read_ops: 0,
            gc_prog_ops: 0,
            flash_reads: 0,
            link_bytes: 0,
            host_reads: 0,
            unmapped_reads: 0,
            unmapped_flash: unmapped == "flash",
            full_rejects: 0,
            gc_time_ns: 0,
            requests: [0; 2],
            precondition: serde_json::Value::Null,
            buf: WriteBuffer {
                cap: (buf_bytes / page_bytes) as usize,
                ..WriteBuffer::default()
            },
            link: [Link {
                ns_per_byte: if link_mbps > 0.0 {
                    1e3 / link_mbps
                } else {
                    0.0
                },
                free: 0,
            }; 2],
            link_mbps,
            write_dir: usize::from(!iface.starts_with("sata")),
            buffer_read_hits: 0,
            buffer_full_waits: 0,
            flushes: 0,
            fua_writes: 0,
            discards: 0,
            planes,
            alloc_die: alloc == "die",
            program_pages,
            plane_rr: vec![0; dies as usize],
            gc_bg_free,
            gc_idle_free,
            gc_idle_ns,
            gc_want: Vec::new(),
            gc_wanted: vec![false; dies as usize],
            last_submit: 0,
            bg_gc_runs: 0,
            bg_gc_copies: 0,
            programs: 0,
            preset: preset_name,
            flush_wait_ns,
            draining: false,
            slc_pages: slc_cache / page_bytes,
            slc_used: 0,
            slc_prog_ns,
            slc_unit: (planes as u64 * (nand_page / page_bytes)).min(64) as u32,
            slc_programs: 0,
            slc_folds: 0,
            slc_direct_pages: 0,
            map: None,
            hint_port: None,
            hint_bytes_up: 0,
            hint_bytes_down: 0,
            map_wait_ns: 0,
        };
        match pre.as_str() {
            "none" => {}
            "seq" | "full" => {
                s.ftl.densify();
                for lpn in 0..logical as u32 {
                    s.ftl.write(lpn).context("precondition: device full")?;
                }
                if pre == "full" {
                    let mut rng = Pcg64Mcg::seed_from_u64(seed ^ 0x55D_F111);
                    let n = (overwrites * logical as f64) as u64;
                    for _ in 0..n {
                        let lpn = rng.gen_range(0..logical as u32);
                        let out = s.ftl.write(lpn).context("precondition: device full")?;
                        // Background GC keeps its target, as it would have
                        // between these writes: start in its steady state.
                        while s.ftl.free_blocks(out.unit) < s.gc_bg_free {
                            if s.ftl.collect(out.unit).is_none() {
                                break;
                            }
                        }
                    }
                }
                s.precondition = serde_json::json!({
                    "mode": pre,
                    "host_page_writes": s.ftl.stats.host_writes,
                    "gc_page_copies": s.ftl.stats.gc_copies,
                    "erases": s.ftl.stats.erases,
                });
                s.ftl.reset_stats();
            }
            other => bail!("option 'precondition': '{other}' is not none, seq or full"),
        }
        if map_bytes > 0 || map_frac > 0.0 {
            let chunk_entries = chunk_bytes / entry_bytes;
            let chunks = logical.div_ceil(chunk_entries);
            let cap = if map_frac > 0.0 {
                ((chunks as f64 * map_frac).round() as u64).max(1)
            } else {
                (map_bytes / chunk_bytes).max(1)
            };
            s.map = MapCache::new(MapGeom {
                entries: logical,
                entry_bytes,
                chunk_entries,
                page_bytes,
                cap,
                units,
                pages_per_block: np,
                log: map_layout == "log",
            })
            .context("the demand-loaded map (map_cache)")?;
            // From here on GC's moves update the map; the precondition's did not.
            s.ftl.track_moves = true;
            if hints {
                s.hint_port = Some(std::sync::Arc::new(std::sync::Mutex::new(HintBox {
                    page_bytes,
                    logical_pages: logical,
                    chunk_entries,
                    chunk_bytes,
                    chunks: chunks as u32,
                    ..HintBox::default()
                })));
            }
        }
        Ok(s)
    }
}

/// A free-block threshold option: a count of blocks (≥ 1) or a fraction (< 1)
/// of the blocks per plane.
fn blocks_opt(p: &Params, key: &str, default: f64, bpp: u32) -> Result<u32> {
    let thr = p.f64_in(key, default, 0.0, bpp as f64)?;
    Ok(if thr < 1.0 {
        ((thr * bpp as f64).ceil() as u32).max(1)
    } else {
        thr.round() as u32
    })
}
