//! Engine-level behaviour: per-process figures, the QoS stage hook, nr_requests,
//! plug merging and determinism of whole runs.

use vsim::config::{Component, Config, Workload};
use vsim::device;
use vsim::engine::{BlockConfig, RunConfig, Sim};
use vsim::metrics::jain_index;
use vsim::params::Params;
use vsim::report;
use vsim::sched;
use vsim::stage::Throttle;
use vsim::workload::job::{Job, JobSpec};

fn cfg(dev: &str, sched: &str, jobs: &[&str]) -> Config {
    Config {
        seed: 5,
        runtime: 0,
        interval: 0,
        block: BlockConfig::default(),
        device: Component::parse(dev).unwrap(),
        scheduler: Component::parse(sched).unwrap(),
        workload: Workload {
            jobs: jobs.iter().map(|j| Params::parse_kv(j).unwrap()).collect(),
            ..Workload::default()
        },
    }
}

#[test]
fn per_process_figures_and_fairness() {
    let c = cfg(
        "fixed:service_us=50",
        "noop",
        &[
            "rw=randread,number_ios=2000,pid=7",
            "rw=randread,number_ios=2000,pid=9",
        ],
    );
    let r = report::run(&c).unwrap();
    let pids: Vec<u32> = r.outcome.processes.iter().map(|p| p.0).collect();
    assert_eq!(pids, vec![7, 9]);
    assert_eq!(r.outcome.processes[0].1.ios[0], 2000);
    let j = r.to_json();
    assert!((j["vsim"]["jain_fairness_iops"].as_f64().unwrap() - 1.0).abs() < 1e-9);
    assert!((jain_index(&[1.0, 0.0]) - 0.5).abs() < 1e-12);
    assert!((jain_index(&[3.0, 1.0]) - 0.8).abs() < 1e-12);
}

#[test]
fn throttle_stage_limits_iops() {
    let dev = device::make("fixed", &Params::parse_kv("service_us=10").unwrap(), 1).unwrap();
    let info = dev.info();
    let s = sched::make("noop", &Params::new(), &info).unwrap();
    let mut sim = Sim::new(
        BlockConfig::default(),
        RunConfig {
            runtime: 1_000_000_000,
            interval: 0,
            log_issues: false,
        },
        s,
        dev,
    );
    sim.stage = Some(Box::new(Throttle::new(1000.0)));
    let spec = JobSpec::from_params(
        &Params::parse_kv("rw=randread,iodepth=8").unwrap(),
        "j",
        info.capacity_sectors * 512,
        true,
    )
    .unwrap();
    sim.add_source(
        Box::new(Job::new(&spec, 0, 0, 1, info.capacity_sectors * 512).unwrap()),
        0,
    );
    let out = sim.run().unwrap();
    let ios = out.jobs[0].ops[0].ios;
    assert!(
        (990..=1001).contains(&ios),
        "throttled to 1000 IOPS for 1 s, got {ios}"
    );
}

#[test]
fn nr_requests_bounds_requests_held() {
    // veloces holds async writes; with nr_requests 8 no more than 8 requests exist at once.
    let mut c = cfg(
        "fixed:service_us=100",
        "veloces:bundle_expire_us=5000,hz=0",
        &["rw=randwrite,iodepth=64,number_ios=2000"],
    );
    c.block.nr_requests = 8;
    let r = report::run(&c).unwrap();
    assert!(
        r.outcome.peak_requests <= 8,
        "peak {}",
        r.outcome.peak_requests
    );
    assert_eq!(r.total(1).ios, 2000);
}

#[test]
fn plug_merges_sequential_bios_of_one_submission() {
    let c = cfg(
        "fixed:service_us=100",
        "noop:merges=0",
        &["rw=write,bs=4k,iodepth=16,number_ios=1600"],
    );
    let r = report::run(&c).unwrap();
    assert!(
        r.outcome.merged_bios > 0,
        "sequential bios submitted together merge in the plug"
    );
    assert!(r.outcome.requests < 1600);
    let mut c2 = c.clone();
    c2.block.plug = false;
    let r2 = report::run(&c2).unwrap();
    assert_eq!(
        r2.outcome.requests, 1600,
        "no plug and no scheduler merges: one request per bio"
    );
}

#[test]
fn same_seed_same_json() {
    let c = cfg(
        "ssd:cell=slc,blocks_per_plane=64",
        "veloces",
        &["rw=randrw,rwmixread=70,iodepth=16,number_ios=20000"],
    );
    let mut a = report::run(&c).unwrap().to_json();
    let mut b = report::run(&c).unwrap().to_json();
    for j in [&mut a, &mut b] {
        report::clear_wall_clock(j);
    }
    assert_eq!(a, b);
    let mut c3 = c.clone();
    c3.seed = 6;
    let mut d = report::run(&c3).unwrap().to_json();
    report::clear_wall_clock(&mut d);
    assert_ne!(a, d, "another seed gives another run");
}

#[test]
fn process_mean_latency_is_the_jobs_for_the_same_ios() {
    // One job, one PID: `vsim.processes[]` and the job describe the same I/Os.
    let c = cfg(
        "ssd:cell=mlc,blocks_per_plane=64",
        "noop",
        &["rw=randrw,iodepth=8,number_ios=20000,pid=42"],
    );
    let j = report::run(&c).unwrap().to_json();
    for d in ["read", "write"] {
        let job = &j["jobs"][0][d]["lat_ns"];
        let p = &j["vsim"]["processes"][0][d]["lat_ns"];
        assert!(job["N"].as_u64().unwrap() > 9000);
        assert_eq!(job["mean"], p["mean"], "{d}: job {job} process {p}");
        assert_eq!(job["max"], p["max"], "{d}");
    }
}

#[test]
fn slat_is_the_wait_for_a_request_and_lat_is_slat_plus_clat() {
    // 64 in flight, 8 requests: the submitting task sleeps for a request, as
    // io_submit does in blk_mq_get_tag; with 256 requests it never does.
    let mut c = cfg(
        "fixed:service_us=100",
        "noop:merges=0",
        &["rw=randread,iodepth=64,number_ios=5000"],
    );
    c.block.nr_requests = 8;
    let j = report::run(&c).unwrap().to_json();
    let r = &j["jobs"][0]["read"];
    let mean = |k: &str| r[k]["mean"].as_f64().unwrap();
    assert_eq!(r["slat_ns"]["N"], 5000);
    // 56 of 64 wait about 56/8 service times of 100 us for a request.
    assert!(mean("slat_ns") > 500_000.0, "slat {}", r["slat_ns"]);
    assert!(
        (mean("lat_ns") - mean("slat_ns") - mean("clat_ns")).abs() < 1e-6 * mean("lat_ns"),
        "lat = slat + clat: {r}"
    );
    // The device holds 1 and the scheduler 7: clat is at most 8 service times.
    assert!(
        r["clat_ns"]["max"].as_u64().unwrap() <= 800_000,
        "{}",
        r["clat_ns"]
    );
    c.block.nr_requests = 256;
    let j = report::run(&c).unwrap().to_json();
    let s = &j["jobs"][0]["read"]["slat_ns"];
    assert_eq!((s["max"].as_u64(), s["N"].as_u64()), (Some(0), Some(5000)));
}
