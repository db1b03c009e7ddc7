//! The SSD model's tests.

use super::*;

fn rq(op: Op, sector: u64, sectors: u32) -> Request {
    Request::standalone(op, true, sector, sectors)
}

fn small(extra: &str) -> Ssd {
    let s = format!("preset=mlc_16g,channels=2,dies_per_channel=2,planes_per_die=1,blocks_per_plane=32,pages_per_block=16,op=0.2{extra}");
    Ssd::from_params(&Params::parse_kv(&s).unwrap(), 1).unwrap()
}

/// Sector of a logical page.
fn sec(lpn: u64) -> u64 {
    lpn * 8
}

#[test]
fn the_demand_loaded_map_is_metered_and_discards_change_it() {
    let mut d = small(",map_cache_frac=0.01,map_chunk=512,write_buffer=0,slc_cache=0");
    let reads = |d: &Ssd| {
        d.meter(0)
            .report(1)
            .parts
            .iter()
            .find(|p| p.name == "page_read")
            .map_or(0, |p| p.count)
    };
    d.submit(&rq(Op::Read, 0, 8), 0);
    // A chunk read and the data read.
    assert_eq!(reads(&d), 2);
    let ms = |d: &Ssd| d.map.as_ref().unwrap().stats;
    let before = ms(&d).lookups;
    // A discard of 1 MiB (256 pages, 2 chunks of 128 entries) changes them.
    d.discard(2048, 2048, 1_000_000).unwrap();
    assert_eq!(ms(&d).lookups - before, 2);
    let v = d
        .map
        .as_ref()
        .unwrap()
        .version(d.map.as_ref().unwrap().chunk_of(256));
    assert_eq!(v, 1);
}

#[test]
fn single_read_on_idle_device() {
    let mut d = small(",cell=slc,channel_mts=400");
    let t = d.timing();
    assert_eq!((t.read_ns, t.xfer_ns, t.cmd_ns), (25_000, 10_240, 18));
    let done = d.submit(&rq(Op::Read, sec(5), 8), 1_000);
    assert_eq!(done, 1_000 + 18 + 25_000 + 10_240);
}

#[test]
fn reads_same_die_serialize_other_dies_overlap() {
    // After a sequential fill, lpn k sits on unit k mod 4; unit u is die u,
    // channel u mod 2. lpn 0 and 4: same die; 0 and 1: other channel;
    // 0 and 2: same channel, other die.
    let one = {
        let mut d = small("");
        d.submit(&rq(Op::Read, 0, 8), 0)
    };
    let t = small("").timing();
    assert_eq!(one, t.cmd_ns + t.read_ns + t.xfer_ns);
    let mut d = small("");
    d.submit(&rq(Op::Read, sec(0), 8), 0);
    let same_die = d.submit(&rq(Op::Read, sec(4), 8), 0);
    assert_eq!(same_die, 2 * (t.cmd_ns + t.read_ns) + t.xfer_ns);
    let mut d = small("");
    d.submit(&rq(Op::Read, sec(0), 8), 0);
    assert_eq!(
        d.submit(&rq(Op::Read, sec(1), 8), 0),
        one,
        "other channel: full overlap"
    );
    let mut d = small("");
    d.submit(&rq(Op::Read, sec(0), 8), 0);
    assert_eq!(
        d.submit(&rq(Op::Read, sec(2), 8), 0),
        one + t.xfer_ns,
        "same channel: only transfers serialize"
    );
    // One request over 4 pages on 4 dies/2 channels: two transfers per channel.
    let mut d = small("");
    assert_eq!(d.submit(&rq(Op::Read, 0, 32), 0), one + t.xfer_ns);
}

#[test]
fn writes_program_timing_and_gc_counters() {
    let mut d = small(",precondition=none");
    let t = d.timing();
    let done = d.submit(&rq(Op::Write, 0, 8), 0);
    assert_eq!(done, t.cmd_ns + t.xfer_ns + t.prog_ns);
    // Unmapped read counted and answered without a flash read.
    let r = d.submit(&rq(Op::Read, sec(100), 8), 10 * crate::types::MS);
    assert_eq!(r, 10 * crate::types::MS + t.cmd_ns);
    assert_eq!(d.counters()["unmapped_page_reads"], 1);
    // Random overwrites in steady state: GC runs, WA > 1, gc time accrues.
    let mut d = small(",precondition=full,gc=fifo");
    let l = d.logical_pages;
    let mut rng = Pcg64Mcg::seed_from_u64(3);
    let mut now = 0;
    for _ in 0..4 * l {
        now = d.submit(&rq(Op::Write, sec(rng.gen_range(0..l)), 8), now);
    }
    let c = d.counters();
    let wa = c["write_amplification"].as_f64().unwrap();
    assert!(wa > 1.5, "WA {wa}");
    assert!(c["gc_time_ns"].as_u64().unwrap() > 0);
    assert_eq!(c["host_page_writes"].as_u64().unwrap(), 4 * l);
    assert!(c["precondition"]["host_page_writes"].as_u64().unwrap() == 3 * l);
    d.ftl().check_consistency().unwrap();
    assert_eq!(
        d.ftl().total_block_erases(),
        d.ftl().stats.erases + c["precondition"]["erases"].as_u64().unwrap()
    );
}

fn with(op: Op, sector: u64, sectors: u32, fua: bool, preflush: bool) -> Request {
    let mut r = rq(op, sector, sectors);
    r.attrs.fua = fua;
    r.attrs.preflush = preflush;
    r
}

#[test]
fn write_buffer_absorbs_then_waits_for_slots() {
    // 4 dies, buffer of 8 pages, no link: the first 8 writes complete
    // at once; the 9th waits for the first program to end.
    let mut d = small(",precondition=none,write_buffer=32k");
    let t = d.timing();
    for i in 0..8 {
        assert_eq!(d.submit(&rq(Op::Write, sec(i), 8), 0), 0, "write {i}");
    }
    let first_prog = t.cmd_ns + t.xfer_ns + t.prog_ns;
    assert_eq!(d.submit(&rq(Op::Write, sec(8), 8), 0), first_prog);
    assert_eq!(d.counters()["buffer_full_waits"], 1);
    // A read of a buffered page is served from DRAM; a flushed one from flash.
    assert_eq!(d.submit(&rq(Op::Read, sec(7), 8), first_prog), first_prog);
    assert_eq!(d.counters()["buffer_read_hits"], 1);
    // Long after, everything is on flash: a read costs a flash read
    // and an empty flush completes at once.
    let late = 100 * crate::types::MS;
    assert_eq!(
        d.submit(&rq(Op::Read, sec(7), 8), late),
        late + t.cmd_ns + t.read_ns + t.xfer_ns
    );
    assert_eq!(d.submit(&with(Op::Write, 0, 0, false, true), late), late);
    assert_eq!(d.ftl().stats.host_writes, 9);
}

#[test]
fn flush_and_fua_wait_for_flash() {
    let mut d = small(",precondition=none,write_buffer=1m");
    let t = d.timing();
    let prog = t.cmd_ns + t.xfer_ns + t.prog_ns;
    // 8 pages over 4 dies: two programs per die, the second die's
    // transfers queue behind the first on the shared channel.
    for i in 0..8 {
        assert_eq!(d.submit(&rq(Op::Write, sec(i), 8), 0), 0);
    }
    let flushed = d.submit(&with(Op::Write, 0, 0, false, true), 0);
    assert!(flushed >= 2 * prog, "flush {flushed} < two programs");
    assert_eq!(d.counters()["flushes"], 1);
    assert_eq!(d.ftl().stats.host_writes, 8);
    // FUA: the write completes when programmed, not when buffered.
    let now = flushed + crate::types::MS;
    let fua = d.submit(&with(Op::Write, sec(20), 8, true, false), now);
    assert_eq!(fua, now + prog);
    let plain = d.submit(&rq(Op::Write, sec(21), 8), fua);
    assert_eq!(plain, fua);
    // PREFLUSH on a write: the buffered page is programmed first.
    let pf = d.submit(&with(Op::Write, sec(22), 8, false, true), fua);
    assert!(pf >= fua + t.prog_ns, "preflush write {pf}");
    // write_buffer=0: every write costs its program, as before.
    let mut d = small(",precondition=none");
    assert_eq!(d.submit(&rq(Op::Write, 0, 8), 0), prog);
    assert_eq!(d.submit(&with(Op::Write, 0, 0, false, true), 5), 5);
}

#[test]
fn host_link_serialises_transfers() {
    // SATA: 600 MB/s, 4 KiB in 6826.67 ns -> 6827 ns per page.
    let mut d = small(",precondition=none,write_buffer=1m,interface=sata3");
    let x = (4096.0 * 1e3 / 600.0f64).round() as Ns;
    assert_eq!(d.submit(&rq(Op::Write, 0, 8), 0), x);
    assert_eq!(d.submit(&rq(Op::Write, sec(1), 8), 0), 2 * x);
    // 64 KiB write: one transfer of 16 pages' bytes.
    let big = (65536.0 * 1e3 / 600.0f64).round() as Ns;
    assert_eq!(d.submit(&rq(Op::Write, sec(2), 128), 0), 2 * x + big);
    // Unmapped read: command, then the link.
    let late = crate::types::MS * 100;
    let t = d.timing();
    assert_eq!(
        d.submit(&rq(Op::Read, sec(500), 8), late),
        late + t.cmd_ns + x
    );
    // host_mbps overrides the interface's rate.
    let mut d = small(",precondition=none,interface=pcie4x4,host_mbps=1000");
    let c = d.timing().cmd_ns;
    assert_eq!(d.submit(&rq(Op::Read, sec(900), 8), 0), c + 4096);
    assert!(format!(
        "{:#}",
        crate::device::make("ssd", &Params::parse_kv("interface=usb").unwrap(), 0)
            .err()
            .unwrap()
    )
    .contains("'interface'"));
    assert!(format!(
        "{:#}",
        crate::device::make("ssd", &Params::parse_kv("write_buffer=100").unwrap(), 0)
            .err()
            .unwrap()
    )
    .contains("'write_buffer'"));
}

#[test]
fn gc_slows_writes() {
    // Same random write stream, QD1: the full (steady-state) device is
    // slower than the fresh one because GC work occupies the dies.
    let run = |pre: &str| {
        let mut d = small(&format!(",precondition={pre},op=0.25"));
        let l = d.logical_pages;
        let mut rng = Pcg64Mcg::seed_from_u64(9);
        let mut now = 0;
        for _ in 0..l / 2 {
            now = d.submit(&rq(Op::Write, sec(rng.gen_range(0..l)), 8), now);
        }
        now
    };
    let fresh = run("none");
    let full = run("full");
    assert!(
        full as f64 > 1.5 * fresh as f64,
        "fresh {fresh} full {full}"
    );
}

#[test]
fn info_and_capacity() {
    let d = small("");
    let i = d.info();
    assert!(!i.rotational);
    assert_eq!(i.erase_block_sectors, Some(16 * 8));
    assert_eq!(i.queue_depth, 32);
    let phys = 4 * 32 * 16;
    assert_eq!(i.capacity_sectors, (phys as f64 / 1.2).floor() as u64 * 8);
    let mq = Ssd::from_params(&Params::parse_kv("preset=mlc_16g").unwrap(), 0).unwrap();
    assert_eq!(mq.info().erase_block_sectors, Some(2048));
    assert_eq!(mq.timing().read_ns, 75_000);
    // `mqsim`: MQSim's default ssdconfig.xml, 512 GiB of 8 KiB pages.
    let m = Ssd::from_params(
        &Params::parse_kv("preset=mqsim,precondition=none").unwrap(),
        0,
    )
    .unwrap();
    let phys: u64 = 8 * 8 * 2 * 2048 * 256;
    assert_eq!(
        m.info().capacity_sectors,
        (phys as f64 / 1.07).floor() as u64 * 16
    );
    assert_eq!(m.info().erase_block_sectors, Some(256 * 16));
    assert_eq!(m.info().queue_depth, 65535);
    assert_eq!(m.buf.cap, (256 << 20) / 8192);
    assert_eq!((m.timing().read_ns, m.timing().prog_ns), (75_000, 750_000));
    // Fresh, its state is per block: the page maps grow with the writes.
    assert!(m.ftl().map_bytes() < 64 << 20, "{}", m.ftl().map_bytes());
    // A fill of 2^34 pages (128 GiB of maps) is refused before allocating,
    // naming the option and the memory it would take.
    let e = Ssd::from_params(
        &Params::parse_kv("channels=64,dies_per_channel=8,planes_per_die=16,blocks_per_plane=8192,pages_per_block=256").unwrap(),
        0,
    )
    .err()
    .map(|e| format!("{e:#}"))
    .unwrap_or_default();
    assert!(
        e.contains("option 'precondition=seq'") && e.contains("GiB of model state"),
        "{e}"
    );
    // The default preset: consumer TLC NVMe (see the module comment).
    let dflt = Ssd::from_params(&Params::new(), 0).unwrap();
    assert_eq!(dflt.preset, "tlc_nvme");
    assert_eq!(dflt.info().queue_depth, 1023);
    assert_eq!(dflt.timing().read_ns, 60_000);
    assert_eq!(dflt.timing().prog_ns, 2_000_000);
    assert_eq!((dflt.tl.read_units, dflt.tl.prog_units), (4, 48));
}

#[test]
fn option_errors() {
    let err = |s: &str| match crate::device::make("ssd", &Params::parse_kv(s).unwrap(), 0) {
        Ok(_) => panic!("'{s}' accepted"),
        Err(e) => format!("{e:#}"),
    };
    assert!(
        err("preset=mlc_16g,blocks_per_plane=64,precondition=none,bogus_opt=1")
            .contains("bogus_opt")
    );
    assert!(err("op=lots").contains("'op'"));
    assert!(err("gc=random").contains("'gc'"));
    assert!(err("precondition=half").contains("'precondition'"));
    assert!(err("page_size=1000").contains("'page_size'"));
    assert!(err("preset=samsung").contains("tlc_nvme, qlc_nvme, tlc_enterprise, mqsim, mlc_16g"));
    assert!(err("alloc=random").contains("'alloc'"));
    assert!(err("nand_page=6k").contains("'nand_page'"));
    assert!(err("program_pages=65").contains("'program_pages'"));
    assert!(err("suspend=maybe").contains("'suspend'"));
    // Background targets that leave no spare room are refused.
    assert!(err("blocks_per_plane=64,gc_idle_threshold=8,op=0.07").contains("gc_idle_threshold"));
    // A fraction is converted to blocks per plane: ceil(0.9 x 64) = 58.
    assert!(err("preset=mlc_16g,blocks_per_plane=64,gc_threshold=0.9")
        .contains("gc_threshold=58 blocks"));
    assert!(err("blocks_per_plane=8,op=0.01").contains("op"));
    assert!(crate::device::make(
        "ssd",
        &Params::parse_kv("preset=mlc_16g,blocks_per_plane=8,op=1").unwrap(),
        0
    )
    .is_ok());
}

#[test]
fn background_gc_runs_in_idle_time_and_reads_preempt_it() {
    // Steady state with background targets above the foreground one:
    // after preconditioning every plane is at the background target.
    let opts = ",op=0.5,precondition=full,gc_bg_threshold=4,gc_idle_threshold=8,gc_idle_ms=1";
    let mut d = small(opts);
    let free: Vec<u32> = (0..d.ftl().units())
        .map(|u| d.ftl().free_blocks(u))
        .collect();
    assert!(free.iter().all(|&f| f >= 4), "{free:?}");
    let l = d.logical_pages;
    let mut rng = Pcg64Mcg::seed_from_u64(4);
    let mut now = 0;
    for _ in 0..2 * l {
        now = d.submit(&rq(Op::Write, sec(rng.gen_range(0..l)), 8), now);
    }
    // A long idle gap, then reads: idle-time GC collected up to the
    // idle target, and the reads find it running or done.
    now += 2 * crate::types::MS;
    for _ in 0..200 {
        now = d.submit(&rq(Op::Read, sec(rng.gen_range(0..l)), 8), now);
    }
    let c = d.counters();
    assert!(c["background_gc_runs"].as_u64().unwrap() > 0, "{c}");
    assert!(c["read_preemptions"].as_u64().unwrap() > 0, "{c}");
    // After a long idle time every plane reached the idle target.
    d.submit(&rq(Op::Read, 0, 8), now + 2000 * crate::types::MS);
    let c = d.counters();
    for u in 0..d.ftl().units() {
        assert!(d.ftl().free_blocks(u) >= 4, "unit {u}: {c}");
    }
    assert!(
        (0..d.ftl().units()).all(|u| d.ftl().free_blocks(u) >= 8),
        "{c}"
    );
    d.ftl().check_consistency().unwrap();
    // Without background targets no GC runs in the background.
    let mut d = small(",precondition=full");
    let mut now = 0;
    for _ in 0..l {
        now = d.submit(&rq(Op::Write, sec(rng.gen_range(0..l)), 8), now);
    }
    assert_eq!(d.counters()["background_gc_runs"], 0);
}

#[test]
fn buffer_flushes_fill_program_operations_and_pick_free_dies() {
    // 4 dies, 4 pages per program, die-aware: 4 buffered writes make one
    // program on one die; 3 wait for more data or flush_ms (1 ms).
    let mut d = small(",precondition=none,write_buffer=1m,alloc=die,program_pages=4");
    let t = d.timing();
    for i in 0..3 {
        d.submit(&rq(Op::Write, sec(i), 8), 0);
    }
    d.submit(&rq(Op::Read, sec(100), 8), 10_000);
    assert_eq!(d.counters()["program_ops"], 0);
    d.submit(&rq(Op::Write, sec(3), 8), 20_000);
    d.submit(&rq(Op::Read, sec(100), 8), 30_000);
    assert_eq!(d.counters()["program_ops"], 1);
    // The die that took them is busy: the next full program goes to
    // another die and starts at once.
    for i in 4..8 {
        d.submit(&rq(Op::Write, sec(i), 8), 40_000);
    }
    d.submit(&rq(Op::Read, sec(100), 8), 50_000);
    assert_eq!(d.counters()["program_ops"], 2);
    let end = d.drain(50_000);
    assert_eq!(end, 40_000 + t.cmd_ns + 4 * t.xfer_ns + t.prog_ns);
    // A lone page is flushed after flush_ms.
    let mut d = small(",precondition=none,write_buffer=1m,alloc=die,program_pages=4");
    d.submit(&rq(Op::Write, 0, 8), 0);
    d.submit(&rq(Op::Read, sec(100), 8), 999_999);
    assert_eq!(d.counters()["program_ops"], 0);
    d.submit(&rq(Op::Read, sec(100), 8), 1_000_000);
    assert_eq!(d.counters()["program_ops"], 1);
}

#[test]
fn power_loss_protection_makes_flush_and_fua_cheap() {
    let mut d = small(",precondition=none,write_buffer=1m,plp=1");
    d.submit(&rq(Op::Write, 0, 8), 0);
    assert_eq!(d.submit(&with(Op::Write, 0, 0, false, true), 5), 5);
    assert_eq!(d.submit(&with(Op::Write, sec(1), 8, true, false), 6), 6);
    let mut d = small(",precondition=none,write_buffer=1m");
    d.submit(&rq(Op::Write, 0, 8), 0);
    assert!(d.submit(&with(Op::Write, 0, 0, false, true), 5) > 5);
}

#[test]
fn energy_counts_each_operation() {
    // Reads only, no link: E = idle_w*T + controller_w*busy + reads *
    // nand_w * (cmd + tR + xfer).
    let mut d = small(",idle_w=1,controller_w=2,nand_w=0.1");
    let t = d.timing();
    let mut now = 0;
    for i in 0..10 {
        now = d.submit(&rq(Op::Read, sec(i), 8), now);
    }
    let e = d.energy(1_000_000_000, 500_000_000);
    let per_read = 0.1e-9 * (t.cmd_ns + t.read_ns + t.xfer_ns) as f64;
    let want = 1.0 + 2.0 * 0.5 + 10.0 * per_read;
    assert!((e.total_j - want).abs() < 1e-9, "{e:?} vs {want}");
    // Writes with GC cost more than the same count of writes without.
    let run = |pre: &str| {
        let mut d = small(&format!(",precondition={pre}"));
        let l = d.logical_pages;
        let mut rng = Pcg64Mcg::seed_from_u64(2);
        for _ in 0..l {
            d.submit(&rq(Op::Write, sec(rng.gen_range(0..l)), 8), 0);
        }
        d.energy(1_000_000_000, 0).total_j
    };
    assert!(run("full") > 1.5 * run("none") - 0.5);
}

#[test]
fn slc_cache_fills_then_writes_go_direct_and_idle_time_folds_it() {
    let opts = ",precondition=none,write_buffer=1m,alloc=die,program_pages=4,nand_page=8k,slc_cache=64k,gc_idle_ms=1";
    let mut d = small(opts);
    // 16 SLC pages, 2 per SLC program (1 plane x 2 pages per NAND page).
    let mut now = 0;
    for i in 0..40 {
        now = d.submit(&rq(Op::Write, sec(i), 8), now + 1000);
    }
    d.drain(now);
    let c = d.counters();
    assert_eq!(c["slc_programs"], 8, "{c}");
    assert_eq!(c["slc_direct_pages"], 24, "{c}");
    // Writes kept coming (1 us apart): no idle time, nothing folded.
    assert_eq!(c["slc_folds"], 0, "{c}");
    // After idle time the cache is folded (4 pages per TLC program) and
    // takes writes again.
    now += 100 * crate::types::MS;
    d.submit(&rq(Op::Write, sec(100), 8), now);
    let c = d.counters();
    assert_eq!(c["slc_folds"], 4, "{c}");
    d.drain(now + 1);
    assert_eq!(d.counters()["slc_programs"], 9);
    let e = |s: &str| {
        crate::device::make("ssd", &Params::parse_kv(s).unwrap(), 0)
            .err()
            .map(|e| format!("{e:#}"))
            .unwrap_or_default()
    };
    assert!(e("preset=mlc_16g,slc_cache=1m").contains("'slc_cache'"));
}

#[test]
fn mlc_sata_moves_table_2s_megabytes_a_second() {
    // Seed 001's Table 2, SSD-I: 201.3 MB/s read, 73.8 MB/s write; 128 KiB requests
    // submitted together (the NCQ's 32 and more), sequential, timed to the last completion.
    let mb_s = |pre: &str, op: Op| {
        let spec = format!("preset=mlc_sata,blocks_per_plane=64,precondition={pre}");
        let mut d = Ssd::from_params(&Params::parse_kv(&spec).unwrap(), 0).unwrap();
        let n = 256u64;
        let end = (0..n)
            .map(|i| d.submit(&rq(op, i * 256, 256), 0))
            .max()
            .unwrap();
        (n * 128 * 1024) as f64 / (end as f64 / 1e9) / 1e6
    };
    let w = mb_s("none", Op::Write);
    assert!((66.0..82.0).contains(&w), "write {w:.1} MB/s");
    let r = mb_s("seq", Op::Read);
    assert!((180.0..222.0).contains(&r), "read {r:.1} MB/s");
    let d = Ssd::from_params(&Params::parse_kv("preset=mlc_sata").unwrap(), 0).unwrap();
    assert_eq!(d.info().queue_depth, 32);
}
