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
        tiers: Vec::new(),
        placement: None,
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

/// A job's submission is one plug of `iodepth_batch_submit` I/Os (fio's,
/// default 1: each I/O its own io_submit, so nothing plug-merges).
#[test]
fn plug_merges_sequential_bios_of_one_submission() {
    let one = cfg(
        "fixed:service_us=100",
        "noop:merges=0",
        &["rw=write,bs=4k,iodepth=16,number_ios=1600"],
    );
    let r = report::run(&one).unwrap();
    assert_eq!(
        (r.outcome.merged_bios, r.outcome.requests),
        (0, 1600),
        "one I/O per submission: no plug merges"
    );
    let c = cfg(
        "fixed:service_us=100",
        "noop:merges=0",
        &["rw=write,bs=4k,iodepth=16,iodepth_batch_submit=8,number_ios=1600"],
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
        "ssd:preset=mlc_16g,cell=slc,blocks_per_plane=64",
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
        "ssd:preset=mlc_16g,cell=mlc,blocks_per_plane=64",
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
    // io_submit does in blk_mq_get_tag, and submits nothing else meanwhile;
    // with 256 requests it never does.
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
    // Past the first 8, each bio waits for the next completion, one service
    // time of 100 us (the rest of the 64 are not submitted yet).
    assert!(
        (90_000.0..=100_000.0).contains(&mean("slat_ns")),
        "slat {}",
        r["slat_ns"]
    );
    assert!(
        (mean("lat_ns") - mean("slat_ns") - mean("clat_ns")).abs() < 1e-6 * mean("lat_ns"),
        "lat = slat + clat: {r}"
    );
    // The device holds 1 and the scheduler 7, and the task reaps only once its
    // 64 are submitted (fio's `queue_full`): clat is at most 64 service times.
    assert!(
        r["clat_ns"]["max"].as_u64().unwrap() <= 6_400_000,
        "{}",
        r["clat_ns"]
    );
    c.block.nr_requests = 256;
    let j = report::run(&c).unwrap().to_json();
    let s = &j["jobs"][0]["read"]["slat_ns"];
    assert_eq!((s["max"].as_u64(), s["N"].as_u64()), (Some(0), Some(5000)));
}

/// A scheduler that forgets every third request it is given: what a model
/// that loses I/O looks like from the engine.
struct Leaky {
    q: std::collections::VecDeque<u32>,
    n: u32,
}

impl sched::Scheduler for Leaky {
    fn name(&self) -> &'static str {
        "leaky"
    }
    fn insert(&mut self, _ctx: &mut sched::Ctx, rq: u32) {
        self.n += 1;
        if !self.n.is_multiple_of(3) {
            self.q.push_back(rq);
        }
    }
    fn dispatch(&mut self, _ctx: &mut sched::Ctx) -> Option<u32> {
        self.q.pop_front()
    }
    fn has_work(&self) -> bool {
        !self.q.is_empty()
    }
}

fn scripted_sim(s: Box<dyn sched::Scheduler>, n: u64, gap_us: u64, runtime: u64) -> Sim {
    use vsim::types::{BioSpec, Op, US};
    let dev = device::make("fixed", &Params::parse_kv("service_us=100").unwrap(), 1).unwrap();
    // The leaked requests stay allocated: room for all of them.
    let block = BlockConfig {
        nr_requests: 256,
        ..BlockConfig::default()
    };
    let mut sim = Sim::new(
        block,
        RunConfig {
            runtime,
            interval: 0,
            log_issues: false,
        },
        s,
        dev,
    );
    let items = (0..n)
        .map(|i| {
            (
                i * gap_us * US,
                BioSpec::scripted(Op::Read, true, i * 1000, 8, i),
            )
        })
        .collect();
    sim.add_source(Box::new(vsim::workload::script::Script::new("s", items)), 0);
    sim
}

#[test]
fn a_run_that_loses_io_says_so() {
    let leaky = Box::new(Leaky {
        q: Default::default(),
        n: 0,
    });
    let o = scripted_sim(leaky, 9, 1000, 0).run().unwrap();
    assert_eq!(o.balance.submitted, 9);
    assert_eq!(o.balance.completed, 6);
    assert_eq!(o.balance.unfinished, 3);
    assert!(o.balance.lost, "no event left could complete them");
    let w = o.balance.warnings();
    assert_eq!(o.balance.lost_bios, 3);
    assert!(
        w[0].starts_with("ERROR: LOST I/O: 3 of 9 bios can never complete"),
        "{w:?}"
    );

    // The same source on noop: everything completes, nothing to say.
    let dev_info = device::make("fixed", &Params::new(), 1).unwrap().info();
    let noop = sched::make("noop", &Params::new(), &dev_info).unwrap();
    let o = scripted_sim(noop, 9, 1000, 0).run().unwrap();
    assert_eq!((o.balance.completed, o.balance.unfinished), (9, 0));
    assert!(!o.balance.lost && o.balance.overload.is_none());
    assert!(o.balance.warnings().is_empty());
}

#[test]
fn a_runtime_cut_leaves_unfinished_io_reported_not_lost() {
    let c = cfg("fixed:service_us=100", "noop", &["rw=randread,iodepth=4"]);
    let mut c = c;
    c.runtime = 10_000_000;
    let r = report::run(&c).unwrap();
    let b = &r.outcome.balance;
    // One request (queue_depth 1, noop's nr_requests 1) and the bio its task
    // sleeps on: the other two of iodepth 4 were never submitted.
    assert_eq!(b.unfinished, 2, "in flight when time ran out");
    assert_eq!(b.submitted, b.completed + 2);
    assert!(!b.lost && b.overload.is_none());
    assert!(r.table().contains("note: 2 of"), "{}", r.table());
    assert_eq!(r.to_json()["vsim"]["unfinished_bios"], 2);
    assert_eq!(r.to_json()["vsim"]["lost_io"], false);
}

/// A run cut while the reader that won the race for a freed tag is still to
/// run (its CPU after the completion) leaves the writer asleep for that tag
/// with no request live on the device: not lost, for the reader's run would
/// hand it on (6.12's fidelity matrix, t1-1ms a-r1, reported one bio lost
/// under `noop:cpu_us=146.5,turnaround_us=0.3` at 5 s). Every cut point of a
/// one-tag reader beside a writer, the host's CPU in the model.
#[test]
fn a_run_cut_while_the_race_winner_is_still_to_run_loses_nothing() {
    let mut cuts = 0;
    for i in 0..400u64 {
        let mut c = cfg(
            "fixed:service_us=1375,jitter_us=213,servers=1,queue_depth=1,size=1g",
            "noop:cpu_us=146.5,turnaround_us=0.3",
            &[
                "rw=randread,direct=1,iodepth=1,size=512m",
                "rw=randwrite,direct=1,iodepth=32,offset=512m,size=512m",
            ],
        );
        c.runtime = 20_000_000 + i * 37_000;
        let r = report::run(&c).unwrap();
        let b = &r.outcome.balance;
        assert!(!b.lost, "cut at {} ns: {b:?}", c.runtime);
        assert_eq!(b.submitted, b.completed + b.unfinished);
        cuts += usize::from(b.unfinished > 0);
    }
    assert!(cuts > 0);
}

#[test]
fn an_open_loop_source_far_above_capacity_is_reported_as_overload() {
    // fixed 100 us, one server: 10 000 IOPS. Offered 10 M IOPS (1000x).
    let c = cfg(
        "fixed:service_us=100",
        "noop",
        &["rw=randread,open_loop=1,rate_iops=10000000,number_ios=20000"],
    );
    let r = report::run(&c).unwrap();
    let b = &r.outcome.balance;
    assert_eq!((b.completed, b.unfinished), (20000, 0));
    let o = b.overload.as_ref().expect("overload");
    assert!((o.offered_iops / 1e7 - 1.0).abs() < 0.01, "{o:?}");
    assert!((o.completed_iops / 1e4 - 1.0).abs() < 0.01, "{o:?}");
    assert!(o.peak_waiting_bios > 19000 && !o.stopped_early, "{o:?}");
    assert!(r.table().contains("WARNING: overload"), "{}", r.table());
    let j = r.to_json();
    assert!(j["vsim"]["overload"]["offered_iops"].as_f64().unwrap() > 9e6);

    // Time-based: the backlog would grow without bound; the run stops at the cap.
    let mut c = cfg(
        "fixed:service_us=100",
        "noop",
        &["rw=randread,open_loop=1,rate_iops=10000000"],
    );
    c.runtime = 1_000_000_000;
    let r = report::run(&c).unwrap();
    let o = r.outcome.balance.overload.as_ref().expect("overload");
    assert!(o.stopped_early, "{o:?}");
    assert_eq!(o.peak_waiting_bios, vsim::engine::MAX_WAITING_BIOS as u64);
    assert!(r.outcome.elapsed < 200_000_000, "stopped early");

    // Below capacity (half of it), and closed loop far deeper than nr_requests:
    // no overload.
    for job in [
        "rw=randread,open_loop=1,rate_iops=5000,number_ios=5000",
        "rw=randread,iodepth=2000,number_ios=8000",
    ] {
        let r = report::run(&cfg("fixed:service_us=100", "noop", &[job])).unwrap();
        assert!(r.outcome.balance.overload.is_none(), "{job}");
        assert_eq!(r.outcome.balance.unfinished, 0, "{job}");
    }
}

/// One 8 MiB write and a 4 KiB read after it, on `dev` under noop, issues logged.
fn big_bio_run(dev: &str, block: BlockConfig) -> vsim::engine::Outcome {
    use vsim::types::{BioSpec, Op, US};
    let dev = device::make("fixed", &Params::parse_kv(dev).unwrap(), 1).unwrap();
    let s = sched::make("noop", &Params::new(), &dev.info()).unwrap();
    let run = RunConfig {
        runtime: 0,
        interval: 0,
        log_issues: true,
    };
    let mut sim = Sim::new(block, run, s, dev);
    let items = vec![
        (0, BioSpec::scripted(Op::Write, true, 4096, 16384, 1)),
        (10 * US, BioSpec::scripted(Op::Read, true, 0, 8, 2)),
    ];
    sim.add_source(Box::new(vsim::workload::script::Script::new("s", items)), 0);
    sim.run().unwrap()
}

#[test]
fn a_bio_larger_than_max_sectors_is_split_and_completes_once() {
    // Kernel default max_sectors_kb 1280: 8 MiB = 16384 sectors = 6 x 2560 + 1024.
    let o = big_bio_run("service_us=100,per_sector_ns=10", BlockConfig::default());
    let writes: Vec<(u64, u32, u64)> = o
        .issues
        .iter()
        .filter(|i| i.op == vsim::types::Op::Write)
        .map(|i| (i.sector, i.sectors, i.tags[0]))
        .collect();
    let want: Vec<(u64, u32, u64)> = (0..7u64)
        .map(|k| (4096 + k * 2560, if k < 6 { 2560 } else { 1024 }, 1))
        .collect();
    assert_eq!(writes, want, "split at 1280 KiB, in sector order");
    let w = &o.jobs[0].ops[1];
    assert_eq!(
        (w.ios, w.bytes),
        (1, 8 << 20),
        "the source's bio completes once"
    );
    // It completes with its last part: 6 x (100 + 25.6) us + (100 + 10.24) us, plus
    // the read's 100.08 us: on this one-tag device the task sleeps for a tag for
    // each part in turn (the split's remainder is submitted after the part before
    // it has its tag), and the read, waiting since 10 us, gets the tag before the
    // third part, as sbitmap's FIFO wake-ups give it.
    let last = o
        .issues
        .iter()
        .filter(|i| i.op == vsim::types::Op::Write)
        .map(|i| i.complete_ns)
        .max()
        .unwrap();
    assert_eq!(last, 863_840 + 100_080);
    assert_eq!(w.lat.max(), w.lat.highest_equivalent(last));
    assert_eq!(o.jobs[0].ops[0].ios, 1);
}

#[test]
fn split_counts_follow_max_sectors_and_the_device_limit() {
    for (dev, max_kb, parts) in [
        ("service_us=10", 0, 7),                        // 1280 KiB default
        ("service_us=10", 512, 16),                     // [block] max_sectors_kb
        ("service_us=10,max_hw_sectors_kb=128", 0, 64), // the device's limit
        ("service_us=10", 8192, 1),                     // whole
    ] {
        let block = BlockConfig {
            max_sectors: max_kb * 2,
            ..BlockConfig::default()
        };
        let o = big_bio_run(dev, block);
        let writes = o.issues.iter().filter(|i| i.op == vsim::types::Op::Write);
        assert_eq!(writes.count(), parts, "{dev} max_sectors_kb={max_kb}");
        assert_eq!(o.split_bios, parts as u64 - 1);
        assert_eq!(o.bios, 2);
        assert_eq!((o.balance.completed, o.balance.unfinished), (2, 0));
        assert_eq!(o.jobs[0].ops[1].ios, 1);
    }
    // Through a closed-loop job: every part of every bio completes the bio once.
    let r = report::run(&cfg(
        "fixed:service_us=10",
        "deadline",
        &["rw=write,bs=8m,iodepth=2,number_ios=5"],
    ))
    .unwrap();
    assert_eq!(r.total(1).ios, 5);
    assert_eq!(r.total(1).bytes, 5 * (8 << 20));
    assert_eq!(r.outcome.split_bios, 5 * 6);
    assert_eq!(r.outcome.requests, 5 * 7, "no part merges past max_sectors");
}

#[test]
fn write_amplification_reaches_compare_under_one_name_from_every_flash_device() {
    for dev in [
        "ssd:preset=mlc_16g,cell=slc,blocks_per_plane=64",
        "cheapflash",
    ] {
        let r = report::run(&cfg(
            dev,
            "noop",
            &["rw=randwrite,bs=4k,iodepth=4,number_ios=3000"],
        ))
        .unwrap();
        let wa = r.device_counters[vsim::device::WA_COUNTER].as_f64();
        assert!(wa.is_some_and(|w| w >= 1.0), "{dev}: {}", r.device_counters);
        assert_eq!(vsim::compare::write_amplification(&r.device_counters), wa);
        let table = vsim::compare::table(&["noop".into()], &[r], 0);
        let row = table.lines().nth(1).unwrap();
        assert!(row.contains(&format!("{:.2}", wa.unwrap())), "{dev}: {row}");
    }
    // Another spelling is not read: there is one.
    let other = serde_json::json!({"wa": 2.0, "waf": 2.0});
    assert_eq!(vsim::compare::write_amplification(&other), None);
}

/// A bio split at max_sectors_kb completes once, with its last part: one
/// latency sample (lat, clat and slat), one I/O of its whole size in the job,
/// its process and the end-of-run account. Its slat runs until the task got
/// requests for all its parts: with 8 requests for 4 bios of 7 parts the task
/// sleeps, and lat = slat + clat still holds.
#[test]
fn a_split_bio_is_one_sample_in_every_statistic() {
    let mut c = cfg(
        "fixed:service_us=100",
        "noop:merges=0",
        &["rw=write,bs=8m,iodepth=4,number_ios=20,pid=7"],
    );
    c.block.nr_requests = 8;
    let r = report::run(&c).unwrap();
    let j = r.to_json_format(true);
    let w = &j["jobs"][0]["write"];
    assert_eq!(w["total_ios"], 20, "{w}");
    assert_eq!(w["io_bytes"], 20u64 * (8 << 20), "{w}");
    for k in ["lat_ns", "clat_ns", "slat_ns"] {
        assert_eq!(w[k]["N"], 20, "{k}: {}", w[k]);
    }
    let bins: u64 = w["clat_ns"]["bins"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_u64().unwrap())
        .sum();
    assert_eq!(bins, 20, "json+ bins: {}", w["clat_ns"]);
    let mean = |k: &str| w[k]["mean"].as_f64().unwrap();
    assert!(
        w["slat_ns"]["max"].as_u64().unwrap() > 0,
        "{}",
        w["slat_ns"]
    );
    assert!(
        (mean("lat_ns") - mean("slat_ns") - mean("clat_ns")).abs() < 1e-6 * mean("lat_ns"),
        "lat = slat + clat: {w}"
    );
    let p = &j["vsim"]["processes"][0];
    assert_eq!(p["pid"], 7);
    assert_eq!(p["write"]["total_ios"], 20, "{p}");
    assert_eq!(p["write"]["lat_ns"]["mean"], w["lat_ns"]["mean"], "{p}");
    let v = &j["vsim"];
    assert_eq!(v["bios"], 20);
    assert_eq!(v["split_bios"], 20 * 6);
    assert_eq!(v["completed_bios"], 20);
    assert_eq!(v["unfinished_bios"], 0);
    assert_eq!(v["lost_io"], false);
    // /proc/diskstats counts requests: every part is one.
    assert_eq!(j["disk_util"][0]["write_ios"], 20 * 7);
}

/// I/Os completing within `ramp_time` are left out of the figures but are
/// completed for the end-of-run account, split bios included: no unfinished,
/// lost or overload report.
#[test]
fn ramp_ios_are_completed_in_the_account_not_unfinished() {
    // Depth 1, 7 parts of 100 us: a bio every 700 us; 5 complete within 3.6 ms.
    let mut c = cfg(
        "fixed:service_us=100",
        "noop",
        &["rw=write,bs=8m,iodepth=1,number_ios=20"],
    );
    c.workload.ramp = Some(3_600_000);
    let r = report::run(&c).unwrap();
    assert_eq!(r.total(1).ios, 15);
    let b = &r.outcome.balance;
    assert_eq!((b.submitted, b.completed, b.unfinished), (20, 20, 0));
    assert!(!b.lost && b.overload.is_none(), "{b:?}");
    assert!(b.warnings().is_empty(), "{:?}", b.warnings());
    assert_eq!(r.to_json()["vsim"]["completed_bios"], 20);
    // Whole bios, fio's ramp semantics: 10 000 at 100 us, 2 500 in the ramp.
    let mut c = cfg(
        "fixed:service_us=100",
        "noop",
        &["rw=randread,iodepth=1,number_ios=10000"],
    );
    c.workload.ramp = Some(250_000_000);
    let r = report::run(&c).unwrap();
    assert_eq!(r.total(0).ios, 7_500);
    let b = &r.outcome.balance;
    assert_eq!(
        (b.submitted, b.completed, b.unfinished),
        (10_000, 10_000, 0)
    );
    assert!(b.warnings().is_empty(), "{:?}", b.warnings());
}

/// nr_requests as the kernel sets it: the device's queue depth under `none`
/// (noop), 2 x min(depth, 128) under an elevator (blk_mq_init_sched); an
/// explicit value wins. Was 256 for every scheduler.
#[test]
fn nr_requests_defaults_to_the_kernels_rule() {
    let peak = |sched: &str, nr: u32| {
        let mut c = cfg(
            "fixed:service_us=1000,servers=4,queue_depth=4",
            sched,
            &["rw=randread,iodepth=32,number_ios=2000"],
        );
        c.block.nr_requests = nr;
        let o = c.build().unwrap().run().unwrap();
        assert_eq!(o.balance.completed, 2000);
        o.peak_requests
    };
    assert_eq!(peak("noop", 0), 4);
    assert_eq!(peak("deadline", 0), 8);
    assert_eq!(peak("veloces", 0), 8);
    assert_eq!(peak("deadline", 20), 20);
}

/// An SD card on Linux's mmc driver: the host gives the block layer 64 tags
/// and the card takes one command at a time, so under an elevator
/// nr_requests is 128 (the requests wait in the scheduler), under none 1;
/// a command-queueing card's tags are its own depth (A2: 32, so 64).
#[test]
fn a_card_s_nr_requests_follows_its_host_s_tags() {
    let peak = |dev: &str, sched: &str| {
        let c = cfg(
            dev,
            sched,
            &["rw=randread,bs=4k,iodepth=256,number_ios=600"],
        );
        let o = c.build().unwrap().run().unwrap();
        assert_eq!(o.balance.completed, 600);
        o.peak_requests
    };
    let a1 = "cheapflash:preset=sd_a1,size=256m,precondition=none";
    assert_eq!(peak(a1, "deadline"), 128);
    assert_eq!(peak(a1, "veloces"), 128);
    assert_eq!(peak(a1, "noop"), 1);
    assert_eq!(peak(&format!("{a1},host_tags=0"), "deadline"), 2);
    assert_eq!(
        peak(
            "cheapflash:preset=sd_a2,size=1g,precondition=none",
            "deadline"
        ),
        64
    );
}

/// `limit_depth` (veloces's `vel_limit_depth`): writes take at most half of
/// the scheduler tags (`async_depth` 0), so a reader never sleeps for a
/// request behind a write flood; without a shallow depth (deadline) it does.
/// 16 writers and one reader, each at depth 1, on a depth-8 device
/// (nr_requests 16, writes 8).
#[test]
fn shallow_depth_keeps_tags_for_reads() {
    let reader_slat_max = |sched: &str| {
        let c = cfg(
            "fixed:service_us=4000,servers=8,queue_depth=8",
            sched,
            &[
                "rw=randwrite,direct=1,iodepth=1,numjobs=16,number_ios=200",
                "rw=randread,iodepth=1,number_ios=400",
            ],
        );
        let r = report::run(&c).unwrap();
        assert_eq!(r.outcome.balance.unfinished, 0);
        let reader = r.outcome.jobs.last().unwrap();
        assert_eq!(reader.ops[0].ios, 400);
        (reader.ops[0].slat_m.max, r.outcome.peak_requests)
    };
    let (v, v_peak) = reader_slat_max("veloces");
    let (d, d_peak) = reader_slat_max("deadline");
    assert_eq!(v, 0, "veloces: the reader never waits for a tag");
    assert!(d > 0, "deadline: the reader waits behind the writers");
    assert_eq!((v_peak, d_peak), (9, 16), "8 writes + 1 read; 16");
}

/// The single-queue request lists (`request_lists`): sync and async requests
/// each up to nr_requests. Sixteen buffered writers fill blk-mq's 16 shared
/// requests and a reader waits behind them; with the lists each class has
/// 16, so the reader never waits, and no more than 16 writes are held.
#[test]
fn request_lists_count_reads_and_writes_apart() {
    let run = |lists: bool| {
        let mut c = cfg(
            "fixed:service_us=4000,servers=8,queue_depth=8",
            "deadline",
            &[
                "rw=randwrite,iodepth=1,numjobs=32,number_ios=100",
                "rw=randread,iodepth=1,number_ios=200",
            ],
        );
        c.block.nr_requests = 16;
        c.block.request_lists = lists;
        let r = report::run(&c).unwrap();
        let b = &r.outcome.balance;
        assert!(
            !b.lost && b.unfinished == 0 && b.completed == b.submitted,
            "{b:?}"
        );
        let reader = r.outcome.jobs.last().unwrap();
        assert_eq!(reader.ops[0].ios, 200);
        (reader.ops[0].slat_m.max, r.outcome.peak_requests)
    };
    let (shared_wait, shared_peak) = run(false);
    let (lists_wait, lists_peak) = run(true);
    assert!(
        shared_wait > 0,
        "blk-mq's shared requests: the reader waits"
    );
    assert_eq!(shared_peak, 16);
    assert_eq!(lists_wait, 0, "its own list: the reader never waits");
    assert_eq!(lists_peak, 17, "16 writes + 1 read");
}

/// kyber's async depth rounds to 0 at nr_requests 4-7 (one tag per sbitmap
/// word, 75 % of it is 0), which `__blk_mq_get_tag` takes as no shallow
/// limit: buffered writes complete. The model used to take 0 as "no tags"
/// and lost every async write (issue 38: 10,156 of 14,999 bios of a
/// buffered replay on a depth-2 card).
#[test]
fn kyber_async_depth_zero_is_no_limit_not_no_tags() {
    for nr in 1..=9 {
        let mut c = cfg(
            "fixed:service_us=100,servers=2,queue_depth=2",
            "kyber",
            &[
                "rw=randwrite,iodepth=8,number_ios=300",
                "rw=randread,iodepth=4,number_ios=300",
            ],
        );
        c.block.nr_requests = nr;
        let o = c.build().unwrap().run().unwrap();
        let b = &o.balance;
        assert!(
            !b.lost && b.completed == 600 && b.unfinished == 0,
            "nr_requests {nr}: {b:?}"
        );
    }
    assert_eq!(sched::kyber::async_tags(5), 0, "the kernel's own figure");
}

/// A run that lost I/O is never ranked: `compare`'s table marks its row LOST
/// (no figures, no ratios) and says so first; a lossy baseline leaves no
/// ratio at all; summary.json names the lossy runs (issue 38: kyber's write
/// p99 showed as 0.01x noop's when it had lost 10,156 of 14,999 bios).
#[test]
fn compare_marks_a_lossy_run_and_ranks_nothing_against_it() {
    let c = cfg(
        "fixed:service_us=100",
        "noop",
        &["rw=randread,iodepth=4,number_ios=100"],
    );
    let good = report::run(&c).unwrap();
    let mut bad = report::run(&c).unwrap();
    bad.outcome.balance.lost = true;
    bad.outcome.balance.lost_bios = 7;
    let labels = vec!["noop".to_string(), "kyber".to_string()];
    let reps = vec![good, bad];
    let t = vsim::compare::table(&labels, &reps, 0);
    let lines: Vec<&str> = t.lines().collect();
    assert!(lines[0].starts_with("ERROR: LOST I/O under kyber"), "{t}");
    let row = lines.iter().find(|l| l.starts_with("kyber")).unwrap();
    assert!(row.contains("LOST 7/100"), "{t}");
    assert!(!row.contains("1.00"), "no ratio for a lossy run: {t}");
    let noop = lines.iter().find(|l| l.starts_with("noop")).unwrap();
    assert!(noop.contains("1.00"), "{t}");
    // The lossy run as the baseline: no ratios anywhere.
    let t = vsim::compare::table(&labels, &reps, 1);
    assert!(t.contains("none shown: the baseline lost I/O"), "{t}");
    let noop = t.lines().find(|l| l.starts_with("noop")).unwrap();
    assert!(!noop.contains("1.00"), "{t}");
    let names = vec!["noop".to_string(), "kyber".to_string()];
    let s = vsim::compare::summary(&labels, &names, &reps, 0, "fixed", "w", 1, 0);
    assert_eq!(s["lost_io"], serde_json::json!(["kyber"]));
    assert_eq!(s["schedulers"][1]["lost_bios"], 7);
}

/// Per-process figures are bounded whatever the number of PIDs (issue 38: a
/// trace of 20,000 PIDs took 1.49 GB, 73 KB per PID): the first
/// `MAX_PROCESSES` PIDs have figures of their own, the rest are summed, and
/// every I/O is in one or the other.
#[test]
fn per_process_figures_are_bounded_and_account_for_every_io() {
    use vsim::metrics::MAX_PROCESSES;
    let n = MAX_PROCESSES as u64 + 500;
    let text: String = (0..n)
        .map(|i| {
            format!(
                "8,0 0 {} 0.{:09} {} Q R {} + 8 [p]\n",
                i + 1,
                i * 1000,
                5000 + i,
                i * 64
            )
        })
        .collect();
    for s in ["noop", "cfq", "bfq"] {
        let dev = device::make(
            "fixed",
            &Params::parse_kv("service_us=50,size=1g").unwrap(),
            1,
        )
        .unwrap();
        let info = dev.info();
        let sched = sched::make(s, &Params::new(), &info).unwrap();
        let rc = RunConfig {
            runtime: 0,
            interval: 0,
            log_issues: false,
        };
        let mut sim = Sim::new(BlockConfig::default(), rc, sched, dev);
        let src = vsim::workload::trace::TraceSource::from_reader(
            &Params::new(),
            "t",
            0,
            "pids.blkparse",
            vsim::workload::trace::reader_from_bytes(text.clone().into_bytes()),
            info.capacity_sectors,
            1,
        )
        .unwrap();
        sim.add_source(Box::new(src), 0);
        let o = sim.run().unwrap();
        assert_eq!(o.processes.len(), MAX_PROCESSES, "{s}");
        let other = o.other_processes.as_ref().expect("the rest, summed");
        let listed: u64 = o.processes.iter().map(|(_, p)| p.ios[0]).sum();
        assert_eq!((listed, other.ios[0]), (MAX_PROCESSES as u64, 500), "{s}");
        assert_eq!(o.balance.completed, n, "{s}");
        let per_pid = o
            .processes
            .iter()
            .map(|(_, p)| p.footprint())
            .max()
            .unwrap();
        assert!(per_pid < 16 << 10, "{s}: {per_pid} bytes for one PID");
    }
}

/// bfq on flash beside a write flood (issue 39's cell: a QD1 reader and a
/// QD32 O_DIRECT writer on separate halves of a 4-tag device of 1 ms, nr_requests
/// 8): the kernel's bfq cuts the read tail below none's (6.1: 3.7 ms vs 6.5). The
/// models of 6.1's bfq and kyber, as that kernel was measured.
/// The model used to serve the reader only when the writer's budget timed out
/// (125 ms every read); now the reader preempts the writer
/// (`bfq_bfqq_handle_idle_busy_switch`) and finds a tag (`bfq_limit_depth`).
#[test]
fn bfq_serves_a_reader_beside_a_write_flood_as_the_kernel_does() {
    let p99 = |sched: &str| {
        let mut c = cfg(
            "fixed:service_us=1000,servers=4,queue_depth=4,size=8g",
            sched,
            &[
                "rw=randread,iodepth=1,size=4g,number_ios=500",
                "rw=randwrite,direct=1,iodepth=32,offset=4g,size=4g,number_ios=4000",
            ],
        );
        c.block.nr_requests = 8;
        let r = report::run(&c).unwrap();
        assert_eq!(r.outcome.balance.completed, 4500);
        (
            r.outcome.jobs[0].ops[0].lat.value_at_quantile(0.99),
            r.to_json(),
        )
    };
    let (noop, _) = p99("noop");
    let (bfq, j) = p99("bfq-6.1");
    // The kernel's ratio is 0.57; mq-deadline's and kyber's tails are above none's (5x there).
    // Since the writer reaps one completion at a time, as fio does, it no longer refills
    // in bursts ahead of the reader, and noop's reader waits at most one write too: the
    // model's none is better than the kernel's here (its tail is the guest's: clumped
    // completions and the kworker's order, docs/notebooks/fidelity.md), so bfq ties it.
    assert!(bfq <= noop, "bfq read p99 {bfq} ns, noop {noop}");
    for worse in ["mq-deadline-6.1", "kyber-6.1"] {
        let (p, _) = p99(worse);
        assert!(p >= noop, "{worse} read p99 {p} ns, noop {noop}");
    }
    assert!(bfq < 3_000_000, "{bfq}");
    assert!(
        j["vsim"]["scheduler_stats"]["expired_preempted"]
            .as_u64()
            .unwrap()
            > 100
    );
    let sync_write = vsim::types::BioSpec::scripted(vsim::types::Op::Write, true, 0, 8, 0);
    let depth = |name: &str| {
        sched::make(
            name,
            &Params::new(),
            &device::make("fixed", &Params::new(), 1).unwrap().info(),
        )
        .unwrap()
        .limit_depth(&sync_write, 0, 8)
    };
    assert_eq!(
        depth("bfq-6.1"),
        Some(4),
        "6.1: sync writes 3/4 of each 2-tag word"
    );
    assert_eq!(depth("bfq"), Some(6), "6.12: sync writes 3/4 of the 8 tags");
}

/// fio reaps only once its queue is full (`queue_full` in do_io), and its task
/// sleeps in io_submit for a tag: a QD32 job on a 4-tag device has far more
/// I/Os outstanding by its own count than the 5 that reach the block layer
/// (done, waiting to be reaped while it refills), so its latency is several
/// service times, at most Little's 32 / IOPS. (The lab, 6.1, null_blk 4 tags of
/// 1 ms, the 70/30 mix at QD32: clat mean 9.6 ms at 3,231 IOPS, slat 0.3 ms:
/// docs/notebooks/fidelity.md.)
#[test]
fn a_job_reaps_when_its_queue_is_full_as_fio_does() {
    let mut c = cfg(
        "fixed:service_us=1000,servers=4,queue_depth=4,size=1g",
        "noop",
        &["rw=randrw,rwmixread=70,direct=1,iodepth=32,number_ios=20000"],
    );
    c.block.nr_requests = 4;
    let r = report::run(&c).unwrap();
    let j = r.to_json();
    let rd = &j["jobs"][0]["read"];
    let iops = rd["iops"].as_f64().unwrap() + j["jobs"][0]["write"]["iops"].as_f64().unwrap();
    let mean = rd["lat_ns"]["mean"].as_f64().unwrap();
    assert!((iops - 4000.0).abs() < 40.0, "{iops}");
    // Reaped at once, it would be about 1.25 service times (5 in the block layer).
    assert!(mean > 3.0e6 && mean <= 32.0 / iops * 1e9, "mean {mean} ns");
    // The slat: a task waits for about one completion of four per submission.
    assert!(rd["slat_ns"]["mean"].as_f64().unwrap() < 400_000.0, "{rd}");
    assert_eq!(r.outcome.balance.completed, 20000);
}

/// fio reaps one completion at a time by default (`iodepth_batch_complete_max`
/// defaults to `_min`, 1: td_io_getevents gets at most one event when the queue
/// is full), then submits one: a QD32 job behind one tag of 1 ms finds its
/// completions waiting in the ring in the order they came, and every I/O waits
/// its turn, about 32 service times. (The lab, 6.1, null_blk one tag of 1 ms,
/// the 70/30 mix at QD32 under none: clat p1 35.9 ms, p50 38.5, p99 42.7, slat
/// 1.2 ms; the model reaping all it found: p50 22 ms, p99 40.)
/// `iodepth_batch_complete_max=32` reaps every one ready at once, and the
/// latencies spread from one service time to the whole ring.
#[test]
fn a_job_reaps_one_completion_at_a_time_as_fio_does_by_default() {
    let lat = |extra: &str| {
        let mut c = cfg(
            "fixed:service_us=1000,servers=1,queue_depth=1,size=1g",
            "noop",
            &[&format!(
                "rw=randrw,rwmixread=70,direct=1,iodepth=32,number_ios=6000{extra}"
            )],
        );
        c.block.nr_requests = 1;
        let r = report::run(&c).unwrap();
        assert_eq!(r.outcome.balance.completed, 6000);
        let h = &r.outcome.jobs[0].ops[0].lat;
        (h.value_at_quantile(0.01), h.value_at_quantile(0.99))
    };
    let (p1, p99) = lat("");
    assert!(
        p1 >= 30_000_000 && p99 <= 34_000_000,
        "one at a time: p1 {p1}, p99 {p99} ns"
    );
    let (p1, p99) = lat(",iodepth_batch_complete_max=32");
    assert!(
        p1 < 10_000_000 && p99 >= 30_000_000,
        "all at once: p1 {p1}, p99 {p99} ns"
    );
    // fio raises the max to the min: a min of 32 reaps as a max of 32 does, and no
    // sooner than 32 are done.
    let (p1, _) = lat(",iodepth_batch_complete_min=32,iodepth_batch_complete_max=1");
    assert!(p1 < 10_000_000, "min 32: p1 {p1} ns");
}

/// A completion restarts the queue before the task it woke for a request runs
/// (blk_mq_sched_restart in the completion's context; the woken task inserts
/// later): on one tag of 1 ms (nr_requests 2) kyber dispatches the waiting
/// read, not a write the woken writer has not inserted yet. Before, the model
/// inserted first and kyber's write batch of 8 (`kyber_batch_size`) ran ahead
/// of every read: read p50 9 ms, against the lab's read p99 4.5 ms (6.1, 1 vCPU,
/// docs/notebooks/fidelity.md).
#[test]
fn a_completion_dispatches_before_the_woken_task_inserts() {
    let mut c = cfg(
        "fixed:service_us=1000,servers=1,queue_depth=1,size=1g",
        "kyber",
        &[
            "rw=randread,direct=1,iodepth=1,size=512m,number_ios=300",
            "rw=randwrite,direct=1,iodepth=32,offset=512m,size=512m,number_ios=3000",
        ],
    );
    c.block.nr_requests = 2;
    let r = report::run(&c).unwrap();
    let p99 = r.outcome.jobs[0].ops[0].lat.value_at_quantile(0.99);
    assert!(p99 <= 3_100_000, "read p99 {p99} ns");
}

/// The host's turnaround (`turnaround_us`, sched::HOST_TURNAROUND): after a
/// completion the device takes its next request that much later, so a tag
/// kept busy serves one request per service time plus the turnaround, under
/// any scheduler. (The lab's one busy tag of 1 ms under 6.1, one vCPU, on this
/// machine: 1,441 us per request under kyber, 1,555 under bfq; vlab fidelity's
/// calibration gives each scheduler its excess over the quickest.) A request
/// arriving at an idle device long after the last completion starts at once.
#[test]
fn the_hosts_turnaround_idles_the_device_between_a_completion_and_the_next_request() {
    let run = |sched: &str, job: &str| {
        let c = cfg(
            "fixed:service_us=1000,servers=1,queue_depth=1,size=1g",
            sched,
            &[job],
        );
        let r = report::run(&c).unwrap();
        assert_eq!(r.outcome.balance.completed, 2000);
        (
            r.outcome.elapsed,
            r.outcome.jobs[0].ops[0].lat.value_at_quantile(0.5),
        )
    };
    let busy = "rw=randread,direct=1,iodepth=4,number_ios=2000";
    for sched in ["noop", "mq-deadline", "bfq"] {
        let (plain, _) = run(sched, busy);
        let (turned, _) = run(&format!("{sched}:turnaround_us=100"), busy);
        let per = |ns: u64| ns as f64 / 2000.0;
        assert!(
            (per(plain) - 1_000_000.0).abs() < 2_000.0,
            "{sched}: {} ns a request",
            per(plain)
        );
        assert!(
            (per(turned) - 1_100_000.0).abs() < 2_000.0,
            "{sched} with 100 us: {} ns a request",
            per(turned)
        );
    }
    // One read at a time, 5 ms apart (thinktime): the device is idle when each comes.
    let sparse = "rw=randread,direct=1,iodepth=1,thinktime=5000,number_ios=2000";
    let (_, p50) = run("noop:turnaround_us=100", sparse);
    assert!(
        (1_000_000..1_010_000).contains(&p50),
        "an idle device's read: {p50} ns"
    );
}

/// The guest's run order after an interrupt (`reaper_first`, with the host's
/// CPU modelled), traced on 6.1 with four tags (docs/notebooks/fidelity.md,
/// "6.1's four-tag reader"): null_blk's requests dispatched together complete
/// together (`coalesce`), and where the reader's read led the interrupt the
/// reader submits its next read before kblockd's worker dispatches into the
/// freed slots, so the read goes in the same round; else after it, and waits
/// a round. Without it the worker always goes first and mq-deadline's write
/// sweep runs on between the rounds: the reader waits longer, the device is
/// as busy (the reader's run falls in the host's turnaround, which the
/// calibrated device time holds).
#[test]
fn the_reader_that_led_the_interrupt_submits_before_the_queue_restarts() {
    let run = |host: &str| {
        let mut c = cfg(
            "fixed:service_us=1400,jitter_us=250,coalesce=1,servers=4,queue_depth=4,size=1g",
            &format!("mq-deadline-6.1:cpu_us=300{host}"),
            &[
                "rw=randread,direct=1,iodepth=1,size=512m,number_ios=1500",
                "rw=randwrite,direct=1,iodepth=32,offset=512m,size=512m,number_ios=100000",
            ],
        );
        c.runtime = 3_000_000_000;
        c.block.nr_requests = 8;
        let r = report::run(&c).unwrap();
        let read = &r.outcome.jobs[0].ops[0];
        let busy = r.outcome.busy_ns as f64 / r.outcome.elapsed as f64;
        (
            read.queue.value_at_quantile(0.5),
            read.lat.value_at_quantile(0.5),
            busy,
        )
    };
    let (q_worker, p50_worker, busy_worker) = run("");
    let (q_reader, p50_reader, busy_reader) = run(",reaper_first=1");
    assert!(
        q_reader * 2 < q_worker,
        "read queue p50 {q_reader} ns with the reader first, {q_worker} ns without"
    );
    assert!(
        (p50_reader as f64) < 0.85 * p50_worker as f64,
        "read p50 {p50_reader} ns with the reader first, {p50_worker} ns without"
    );
    assert!(
        busy_reader > 0.95 && busy_worker > 0.95,
        "device busy {busy_reader:.3} / {busy_worker:.3}"
    );
}

/// With an ideal host (no `cpu_us`) `reaper_first` changes nothing: the task
/// runs at its completion's instant, and each completion restarts the queue
/// at once (the conformance scenarios' reference).
#[test]
fn reaper_first_needs_the_hosts_cpu() {
    let run = |sched: &str| {
        let c = cfg(
            "fixed:service_us=1000,servers=4,queue_depth=4,size=1g",
            sched,
            &[
                "rw=randread,direct=1,iodepth=1,size=512m,number_ios=400",
                "rw=randwrite,direct=1,iodepth=32,offset=512m,size=512m,number_ios=4000",
            ],
        );
        let r = report::run(&c).unwrap();
        (
            r.outcome.elapsed,
            r.outcome.jobs[0].ops[0].lat.value_at_quantile(0.99),
        )
    };
    assert_eq!(
        run("mq-deadline-6.1"),
        run("mq-deadline-6.1:reaper_first=1")
    );
}

/// 6.12's guest scheduler (EEVDF, `Sim::set_lag_task`): a task that went to
/// sleep while fio's main process was runnable keeps a lag and wins its next
/// race for a freed request. Without the third task the one-tag reader beside
/// a QD32 writer under mq-deadline (the lab's t1-1ms a-r1 job) wins every race
/// (the task woken to reap runs first); with it the writer wins about the
/// share of time the third task is runnable (400 us of every 8.3 ms: 4.8 %),
/// and takes both scheduler tags, so each such read waits for two writes and
/// the read tail (submission and completion: a lost race is time asleep for
/// a tag) grows; a window of zero is no lag kept.
#[test]
fn a_sleeper_beside_a_third_task_keeps_a_lag_and_wins_its_next_race() {
    let dir = std::env::temp_dir().join(format!("vsim-lag-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let job = dir.join("a-r1.fio");
    std::fs::write(
        &job,
        "[global]\nrandrepeat=0\nnorandommap=1\nramp_time=1\n\
         [reader]\noffset=0\nsize=512m\nrw=randread\ndirect=1\nbs=4k\nioengine=libaio\niodepth=1\n\
         [writer]\noffset=512m\nsize=512m\nrw=randwrite\ndirect=1\nbs=4k\nioengine=libaio\niodepth=32\n",
    )
    .unwrap();
    let run = |lag: &str| {
        let mut c = cfg(
            "fixed:service_us=1428,jitter_us=260,servers=1,queue_depth=1,size=1g",
            &format!("mq-deadline:cpu_us=155{lag}"),
            &[],
        );
        (c.seed, c.runtime) = (1, 5_000_000_000);
        c.workload = Workload::load(&job).unwrap();
        let r = report::run(&c).unwrap();
        assert!(!r.outcome.balance.lost);
        let p99 = r.to_json()["jobs"][0]["read"]["lat_ns"]["percentile"]["99.000000"]
            .as_f64()
            .unwrap();
        (r.outcome.tag_races, p99)
    };
    let ((reaper, waiter), p99) = run("");
    assert!(
        reaper > 1000 && waiter <= 2,
        "without a lag: {reaper}, {waiter}"
    );
    let ((reaper_l, waiter_l), p99_l) = run(",lag_every_us=8300,lag_run_us=400");
    let share = waiter_l as f64 / (reaper_l + waiter_l) as f64;
    assert!(
        (0.02..0.09).contains(&share),
        "{waiter_l} of {}",
        reaper_l + waiter_l
    );
    assert!(
        p99_l > 1.2 * p99,
        "read p99 {p99_l} with the lag, {p99} without"
    );
    assert_eq!(
        run(",lag_every_us=8300,lag_run_us=0"),
        ((reaper, waiter), p99)
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
