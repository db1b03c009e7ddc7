//! The host's CPU (a scheduler spec's `cpu_us`, `Sim::set_host_cpu`): one CPU
//! every job shares, a fixed cost per completed I/O, processed in completion
//! order; a task sees its completion once its share is done.

use std::path::{Path, PathBuf};
use vsim::config::{Component, Config, ConfigFile};
use vsim::report;

fn job(test: &str, text: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("vsim-cpu-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    let p = d.join("j.fio");
    std::fs::write(&p, text).unwrap();
    p
}

fn run(p: &Path, device: &str, scheduler: &str) -> anyhow::Result<report::RunReport> {
    let dev = Component::parse(device)?;
    let mut cfg = Config::from_file(ConfigFile::load(p)?, Some(dev))?;
    cfg.scheduler = Component::parse(scheduler)?;
    report::run(&cfg)
}

fn iops(r: &report::RunReport) -> f64 {
    (r.total(0).ios + r.total(1).ios) as f64 / (r.outcome.elapsed as f64 / 1e9)
}

const DEEP: &str = "[global]\nioengine=libaio\ndirect=1\nbs=4k\nruntime=200ms\ntime_based\n\
                    [w]\nrw=randwrite\niodepth=32\n";

#[test]
fn a_busy_host_caps_iops_at_one_over_its_cost() {
    // 32 tags of 100 us allow 320,000 IOPS; a host spending 25 us per I/O, 40,000.
    let p = job("cap", DEEP);
    let dev = "fixed:service_us=100,servers=32,queue_depth=32";
    let free = run(&p, dev, "noop").unwrap();
    assert!((iops(&free) - 320_000.0).abs() < 3_200.0, "{}", iops(&free));
    assert_eq!(free.outcome.host_cpu_busy_ns, 0);
    let r = run(&p, dev, "noop:cpu_us=25").unwrap();
    assert!((iops(&r) - 40_000.0).abs() < 400.0, "{}", iops(&r));
    let busy = r.outcome.host_cpu_busy_ns as f64 / r.outcome.elapsed as f64;
    assert!(busy > 0.99, "the host is the bottleneck: busy {busy}");
    // Every I/O is accounted for: what was submitted completed or is named unfinished.
    let b = &r.outcome.balance;
    assert!(
        !b.lost && b.submitted == b.completed + b.unfinished,
        "{b:?}"
    );
}

#[test]
fn a_completion_is_seen_after_the_hosts_share() {
    // Depth 1, nothing else running: each I/O takes the device's 100 us and the host's 20 us.
    let p = job(
        "qd1",
        "[global]\nioengine=psync\ndirect=1\nbs=4k\nruntime=200ms\ntime_based\n[r]\nrw=randread\n",
    );
    let r = run(
        &p,
        "fixed:service_us=100,servers=1,queue_depth=1",
        "noop:cpu_us=20",
    )
    .unwrap();
    assert!((iops(&r) - 1e6 / 120.0).abs() < 20.0, "{}", iops(&r));
    let p50 = r.total(0).pct(50.0);
    assert!((119_000..=121_000).contains(&p50), "p50 {p50} ns");
}

#[test]
fn a_reader_waits_for_the_host_behind_a_deep_writer() {
    // A QD1 reader beside a QD32 writer on 32 tags of 1 ms, the host at 43.5 us an I/O
    // (the host, not the device, sets the pace): the reader's completions queue for the
    // host behind the writer's, so its latency is well over the device's 1 ms plus its
    // own share; without the host cost it is the device's.
    let text = "[global]\nioengine=libaio\ndirect=1\nbs=4k\nruntime=500ms\ntime_based\n\
                [r]\nrw=randread\niodepth=1\noffset=0\nsize=512m\n\
                [w]\nrw=randwrite\niodepth=32\noffset=512m\nsize=512m\n";
    let p = job("mix", text);
    let dev = "fixed:service_us=1000,servers=32,queue_depth=32,size=1g";
    let free = run(&p, dev, "noop").unwrap();
    assert!(
        free.total(0).pct(50.0) <= 1_001_000,
        "{}",
        free.total(0).pct(50.0)
    );
    let r = run(&p, dev, "noop:cpu_us=43.5").unwrap();
    let p50 = r.total(0).pct(50.0);
    assert!(p50 > 1_000_000 + 5 * 43_500, "reader p50 {p50} ns");
    // 33 I/Os in flight at 43.5 us each: at most ~23,000 IOPS.
    assert!(iops(&r) < 1e6 / 43.5 * 1.01, "{}", iops(&r));
}

#[test]
fn a_bad_host_cost_is_an_error_naming_it() {
    let p = job("bad", DEEP);
    for bad in ["noop:cpu_us=-1", "noop:cpu_us=fast", "bfq:cpu_us=2000000"] {
        let e = run(&p, "fixed:service_us=100", bad).err().expect(bad);
        assert!(format!("{e:#}").contains("cpu_us"), "{bad}: {e:#}");
    }
}
