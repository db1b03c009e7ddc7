//! The demand-loaded map of the ssd model and the hints stage, through the
//! engine: validation (hit ratio = cache fraction on uniform random),
//! hints, accounting and errors.

use vsim::config::{Component, Config, Workload};
use vsim::engine::BlockConfig;
use vsim::params::Params;
use vsim::report::{self, RunReport};
use vsim::types::MS;
use vsim_studies::repro;

/// A small ssd: 2 channels x 2 dies, 64-page blocks, 256 MiB, 4-byte entries.
const DEV: &str = "ssd:channels=2,dies_per_channel=2,planes_per_die=1,pages_per_block=64,blocks_per_plane=256,op=0.25,write_buffer=0,slc_cache=0,read_priority=0,suspend=0,gc_bg_threshold=2,gc_idle_threshold=2,cell=slc,precondition=seq";

fn cfg(dev: &str, placement: Option<&str>, rw: &str, n: u64) -> Config {
    cfg_qd(dev, placement, rw, n, 4)
}

fn cfg_qd(dev: &str, placement: Option<&str>, rw: &str, n: u64, qd: u32) -> Config {
    let mut workload = Workload::default();
    workload.jobs.push(
        Params::parse_kv(&format!(
            "name=j,rw={rw},bs=4k,iodepth={qd},direct=1,number_ios={n},norandommap=1"
        ))
        .unwrap(),
    );
    Config {
        seed: 3,
        runtime: 0,
        interval: 100 * MS,
        block: BlockConfig::default(),
        device: Component::parse(&format!("{DEV},{dev}")).unwrap(),
        scheduler: Component::parse("noop").unwrap(),
        tiers: Vec::new(),
        placement: placement.map(|p| Component::parse(p).unwrap()),
        workload,
    }
}

fn map(r: &RunReport) -> &serde_json::Value {
    &r.device_counters["map"]
}

fn stat(r: &RunReport, k: &str) -> u64 {
    map(r)["stats"][k].as_u64().unwrap()
}

#[test]
fn the_hit_ratio_on_uniform_random_reads_is_the_cache_fraction() {
    // Entry-level cache (DFTL) and 512 B chunks: once the cache is full,
    // every replacement policy hits at the cached fraction of the map.
    for (chunk, frac) in [(4, 0.1), (4, 0.5), (512, 0.25), (512, 0.8)] {
        let dev = format!("map_cache_frac={frac},map_chunk={chunk}");
        let a = report::run(&cfg(&dev, None, "randread", 40_000)).unwrap();
        let b = report::run(&cfg(&dev, None, "randread", 80_000)).unwrap();
        let h = (stat(&b, "hits") - stat(&a, "hits")) as f64 / 40_000.0;
        assert!(
            (h - frac).abs() < 0.02,
            "chunk {chunk} B, cache {frac}: hit ratio {h}"
        );
        // Every request looked up once per page, and a miss read a chunk.
        assert_eq!(stat(&b, "lookups"), 80_000);
        assert_eq!(stat(&b, "hits") + stat(&b, "chunk_loads"), 80_000);
    }
}

#[test]
fn misses_cost_a_flash_read_before_the_data_read() {
    // One request at a time: each miss adds an array read (cmd + tR 25 µs)
    // and 4 bytes over the bus before the data read.
    let base = report::run(&cfg_qd("", None, "randread", 5_000, 1)).unwrap();
    let dftl = report::run(&cfg_qd("map_cache_frac=0.01", None, "randread", 5_000, 1)).unwrap();
    assert!(base.device_counters["map"].is_null());
    let t = |r: &RunReport| r.outcome.elapsed as f64;
    let extra = (t(&dftl) - t(&base)) / 5_000.0;
    assert!(
        extra > 0.95 * 25_000.0 && extra < 1.1 * 25_000.0,
        "extra {extra} ns per request"
    );
    assert!(map(&dftl)["wait_ns"].as_u64().unwrap() > 0);
}

#[test]
fn a_full_host_cache_removes_chunk_reads_and_every_hint_is_counted() {
    let dev = "map_cache_frac=0.01,map_chunk=512,map_layout=log,hints=1";
    let r = report::run(&cfg(dev, Some("hints:cache=1"), "randread", 60_000)).unwrap();
    let st = r.placement.as_ref().unwrap().1.clone();
    let loads = stat(&r, "chunk_loads");
    let chunks = map(&r)["chunks"].as_u64().unwrap();
    // Each chunk is read at most once (its first touch); the rest are hints.
    assert!(loads <= chunks, "{loads} loads, {chunks} chunks");
    assert_eq!(
        stat(&r, "hits") + stat(&r, "hint_hits") + loads,
        stat(&r, "lookups")
    );
    assert_eq!(st["chunks_received"].as_u64().unwrap(), loads);
    let attached = st["hints_attached"].as_u64().unwrap();
    assert!(attached >= stat(&r, "hint_hits"));
    assert_eq!(map(&r)["hint_bytes_down"].as_u64().unwrap(), attached * 512);
    assert_eq!(map(&r)["hint_bytes_up"].as_u64().unwrap(), loads * 512);
    // A host cache of half the map: about half the requests read a chunk.
    let a = report::run(&cfg(dev, Some("hints:cache=0.5"), "randread", 40_000)).unwrap();
    let b = report::run(&cfg(dev, Some("hints:cache=0.5"), "randread", 80_000)).unwrap();
    let share = (stat(&b, "chunk_loads") - stat(&a, "chunk_loads")) as f64 / 40_000.0;
    assert!((share - 0.495).abs() < 0.03, "share {share}");
}

#[test]
fn writes_make_hints_stale_and_the_device_ignores_them() {
    // Random writes with GC: chunks change on the device while the host
    // holds an older version; every stale hint is refused and counted,
    // and all requests complete.
    let dev = "map_cache_frac=0.01,map_chunk=512,hints=1";
    let r = report::run(&cfg(dev, Some("hints:cache=1"), "randrw", 60_000)).unwrap();
    assert_eq!(r.outcome.bios, 60_000);
    assert!(r.device_counters["gc_page_copies"].as_u64().unwrap() > 0);
    assert!(stat(&r, "gc_remaps") > 0 && stat(&r, "writebacks") > 0);
    assert!(stat(&r, "tpage_programs") > 0);
    assert!(stat(&r, "hints_stale") > 0, "{}", map(&r));
    assert_eq!(
        stat(&r, "hits") + stat(&r, "hint_hits") + stat(&r, "chunk_loads"),
        stat(&r, "lookups")
    );
}

#[test]
fn bad_options_are_refused_with_a_reason() {
    let err = |dev: &str, pl: Option<&str>| {
        format!("{:#}", cfg(dev, pl, "randread", 10).build().err().unwrap())
    };
    assert!(err("hints=1", None).contains("need a demand-loaded map"));
    assert!(err("map_cache=64k,map_cache_frac=0.1", None).contains("not both"));
    assert!(err("map_cache_frac=0.1,map_chunk=6", None).contains("not a multiple"));
    assert!(err("map_cache_frac=0.1,map_layout=tree", None).contains("map_layout"));
    assert!(err("map_cache_frac=0.1", Some("hints")).contains("sends no map chunks"));
    assert!(err("", Some("hints:cache=0.5,cache_kb=4")).contains("not both"));
}

#[test]
fn the_hints_reproduction_runs_and_judges_every_claim() {
    let r = repro::run(
        "hints",
        &repro::Options {
            quick: true,
            ..Default::default()
        },
    )
    .unwrap();
    let s = &r.summary;
    assert_eq!(repro::check_summary(s).unwrap(), 7);
    assert_eq!(s["breakdowns"].as_array().unwrap().len(), 4);
    assert!(r.markdown.contains("Fig. 2.5"));
    assert!(repro::run(
        "hints",
        &repro::Options {
            workloads: vec!["x".into()],
            ..Default::default()
        }
    )
    .is_err());
}
