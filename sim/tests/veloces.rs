//! The veloces model's policy, observed from the issue order (as the lab
//! observes the module through the block_rq_issue tracepoint).

use vsim::device;
use vsim::engine::{BlockConfig, Issue, RunConfig, Sim};
use vsim::params::Params;
use vsim::sched;
use vsim::types::{BioSpec, Ns, Op, MS, US};
use vsim::workload::script::Script;

struct Req(Ns, Op, bool, u64, u32, u64);

fn r(t_us: u64, tag: u64, sector: u64) -> Req {
    Req(t_us * US, Op::Read, true, sector, 8, tag)
}
fn w(t_us: u64, tag: u64, sector: u64) -> Req {
    Req(t_us * US, Op::Write, false, sector, 8, tag)
}
fn ws(t_us: u64, tag: u64, sector: u64) -> Req {
    Req(t_us * US, Op::Write, true, sector, 8, tag)
}

/// Run `reqs` on a depth-1 device with `service_us` per request under veloces with `tunables`.
fn run(tunables: &str, service_us: u64, reqs: Vec<Req>) -> Vec<Issue> {
    run_with(
        "veloces",
        tunables,
        service_us,
        reqs,
        // The scripts queue many requests behind a depth-1 device: room for
        // them all (the kernel's default would be 2 under an elevator).
        BlockConfig {
            plug: false,
            nr_requests: 256,
            ..BlockConfig::default()
        },
    )
}

fn run_with(
    name: &str,
    tunables: &str,
    service_us: u64,
    reqs: Vec<Req>,
    block: BlockConfig,
) -> Vec<Issue> {
    let dev = device::make(
        "fixed",
        &Params::parse_kv(&format!("service_us={service_us}")).unwrap(),
        1,
    )
    .unwrap();
    let mut p = Params::parse_kv(tunables).unwrap();
    if name == "veloces" && !p.contains("hz") {
        p.set("hz", "0");
    }
    let s = sched::make(name, &p, &dev.info()).unwrap();
    let run = RunConfig {
        runtime: 0,
        interval: 0,
        log_issues: true,
    };
    let mut sim = Sim::new(block, run, s, dev);
    let items = reqs
        .into_iter()
        .map(|Req(t, op, sync, sector, sectors, tag)| {
            (t, BioSpec::scripted(op, sync, sector, sectors, tag))
        })
        .collect();
    sim.add_source(Box::new(Script::new("s", items)), 0);
    sim.run().unwrap().issues
}

fn order(issues: &[Issue]) -> Vec<u64> {
    issues.iter().flat_map(|i| i.tags.clone()).collect()
}

#[test]
fn reads_go_before_queued_writes() {
    // W1 occupies the device; W2, W3 (held or not) and R4 wait: R4 goes first.
    let is = run(
        "bundling=0",
        1000,
        vec![
            w(0, 1, 0),
            w(10, 2, 1 << 20),
            w(20, 3, 2 << 20),
            r(30, 4, 3 << 20),
        ],
    );
    assert_eq!(order(&is), vec![1, 4, 2, 3]);
}

#[test]
fn writes_starved_bounds_read_preference() {
    // Many reads and one write: the write goes after writes_starved read batches
    // (fifo_batch=1 makes each read a batch).
    let mut v = vec![w(0, 100, 1 << 22)];
    for i in 0..10 {
        v.push(r(0, i, i * 1000));
    }
    let is = run("bundling=0,fifo_batch=1,writes_starved=2", 100, v);
    let pos = order(&is).iter().position(|&t| t == 100).unwrap();
    assert_eq!(
        pos,
        2,
        "write after exactly 2 read batches: {:?}",
        order(&is)
    );
}

#[test]
fn bundles_group_writes_by_erase_block() {
    // bundle_kb=64 => 128-sector blocks. Interleaved writes to blocks 0 and 1
    // leave grouped by block, oldest bundle first, each in sector order.
    let v = vec![
        w(0, 1, 8),
        w(1, 2, 128 + 16),
        w(2, 3, 0),
        w(3, 4, 128),
        w(4, 5, 24),
        w(5, 6, 128 + 40),
    ];
    let is = run("bundle_kb=64,bundle_expire_us=500,hold_idle=1", 10, v);
    assert_eq!(order(&is), vec![3, 1, 5, 4, 2, 6]);
    // Held until bundle_expire_us after the bundle opened.
    assert!(
        is[0].time_ns >= 500 * US,
        "first issue at {}",
        is[0].time_ns
    );
}

#[test]
fn bundling_off_does_not_group() {
    let v = vec![
        w(0, 1, 8),
        w(1, 2, 128 + 16),
        w(2, 3, 0),
        w(3, 4, 128),
        w(4, 5, 24),
        w(5, 6, 128 + 40),
    ];
    let is = run("bundle_kb=64,bundling=0", 10, v);
    assert_eq!(
        is[0].tags,
        vec![1],
        "no holding: the first write goes at once"
    );
    assert!(is[0].time_ns < 10 * US);
    assert_ne!(order(&is), vec![3, 1, 5, 4, 2, 6]);
}

#[test]
fn sync_writes_are_not_held() {
    let is = run("bundle_expire_us=5000", 10, vec![ws(0, 1, 0)]);
    assert_eq!(is[0].time_ns, 0);
}

#[test]
fn liveness_timer_releases_a_lone_async_write() {
    let is = run("bundle_expire_us=2000,hold_idle=1", 10, vec![w(0, 1, 0)]);
    assert_eq!(is.len(), 1);
    assert_eq!(
        is[0].time_ns,
        2000 * US,
        "released exactly when the bundle is ready"
    );
}

#[test]
fn full_bundle_is_ready_at_once() {
    // 16 writes of 8 sectors fill a 64 KiB bundle: no wait for the expiry.
    let v: Vec<Req> = (0..16).map(|i| w(0, i, i * 8 + 100_000 * 128)).collect();
    let mut block = BlockConfig {
        plug: false,
        max_sectors: 8,
        ..BlockConfig::default()
    };
    block.nr_requests = 64;
    let is = run_with(
        "veloces",
        "bundle_kb=64,bundle_expire_us=100000,hz=0",
        10,
        v,
        block,
    );
    assert_eq!(is.len(), 16);
    assert_eq!(is[0].time_ns, 0);
}

#[test]
fn contiguous_async_writes_merge() {
    let is = run(
        "bundle_kb=64,bundle_expire_us=1000,hold_idle=1",
        10,
        vec![w(0, 1, 0), w(1, 2, 8), w(2, 3, 16)],
    );
    assert_eq!(is.len(), 1);
    assert_eq!(is[0].nr_bios, 3);
    assert_eq!(is[0].sectors, 24);
}

#[test]
fn front_merges_tunable() {
    let on = run(
        "bundling=0",
        1000,
        vec![r(0, 9, 1 << 20), r(1, 1, 8), r(2, 2, 0)],
    );
    assert_eq!(on.len(), 2);
    let off = run(
        "bundling=0,front_merges=0",
        1000,
        vec![r(0, 9, 1 << 20), r(1, 1, 8), r(2, 2, 0)],
    );
    assert_eq!(off.len(), 3);
}

#[test]
fn write_expiry_lets_a_write_past_reads() {
    // A steady stream of reads; the write expires after write_expire and goes
    // even though reads keep arriving.
    let mut v = vec![w(0, 1000, 1 << 22)];
    for i in 0..400u64 {
        v.push(r(i * 50, i, (i % 7) * 1000));
    }
    let is = run(
        "bundling=0,write_expire=5,writes_starved=1000,fifo_batch=1",
        100,
        v,
    );
    let t = is.iter().find(|i| i.tags == vec![1000]).unwrap().time_ns;
    assert!(
        (5 * MS..=5 * MS + 200 * US).contains(&t),
        "write issued at {t}"
    );
}

#[test]
fn deterministic() {
    let mk = || {
        let v: Vec<Req> = (0..200u64)
            .map(|i| {
                if i % 3 == 0 {
                    w(i * 7, i, (i * 7919) % 4096 * 8)
                } else {
                    r(i * 7, i, (i * 104729) % 4096 * 8)
                }
            })
            .collect();
        order(&run("bundle_kb=64", 50, v))
    };
    assert_eq!(mk(), mk());
}

/// Issue 10: a bio back-merged into a request whose successor is older
/// (request-to-request merge inheriting the older FIFO place) lost the merged
/// request's FIFO entry: 4 bios submitted, 1 completed. Every bio completes.
#[test]
fn a_request_merge_keeps_the_fifo_place_and_no_io_is_lost() {
    use vsim::config::{Component, Config, Workload};
    let trace = format!(
        "{}/tests/data/veloces-lost-io.blkparse",
        env!("CARGO_MANIFEST_DIR")
    );
    for dev in [
        "hdd:preset=hp_c2247a",
        "cheapflash",
        "fixed:service_us=50000",
    ] {
        let cfg = Config {
            seed: 1,
            runtime: 0,
            interval: 0,
            // The four requests queue together (the bug needs them there).
            block: BlockConfig {
                nr_requests: 256,
                ..BlockConfig::default()
            },
            device: Component::parse(dev).unwrap(),
            scheduler: Component::parse("veloces").unwrap(),
            tiers: Vec::new(),
            placement: None,
            workload: Workload {
                jobs: vec![],
                traces: vec![
                    Params::parse_kv(&format!("path={trace},format=blkparse,mode=open")).unwrap(),
                ],
                ..Workload::default()
            },
        };
        let r = vsim::report::run(&cfg).unwrap();
        assert_eq!(r.outcome.bios, 4, "{dev}");
        let b = &r.outcome.balance;
        assert!(!b.lost && b.unfinished == 0, "{dev}: {b:?}");
        let w = &r.outcome.jobs[0].ops[Op::Write.idx()];
        assert_eq!(w.ios, 4, "{dev}: every submitted bio completes");
        assert_eq!(w.bytes, (2048 + 3 * 8) * 512, "{dev}");
        assert_eq!(
            r.sched_stats["merged"]["write"], 2,
            "{dev}: bio and request merge"
        );
    }
}
