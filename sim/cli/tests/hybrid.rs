//! Several devices in one run (engine lanes), the placement stage, BID-HDD,
//! BID-Hybrid's offloads, the MapReduce generator and `vsim repro bid`.

use std::process::Command;
use vsim::config::{Component, Config, Tier, Workload};
use vsim::device;
use vsim::engine::{BlockConfig, Lane, RunConfig, Sim};
use vsim::params::Params;
use vsim::report;
use vsim::sched;
use vsim::stage::{Admit, Piece, Stage};
use vsim::types::{BioSpec, Ns, Op};
use vsim::workload::job::{Job, JobSpec};
use vsim_studies::repro;

fn lane(dev: &str, sched_name: &str) -> (Lane, vsim::types::DeviceInfo) {
    let c = Component::parse(dev).unwrap();
    let d = device::make(&c.name, &c.params, 1).unwrap();
    let info = d.info();
    let s = sched::make(sched_name, &Params::new(), &info).unwrap();
    (Lane::new(dev, BlockConfig::default(), s, d), info)
}

fn sim_with(stage: Box<dyn Stage>) -> (Sim, u64) {
    let (l0, info) = lane("fixed:service_us=100,size=1g", "noop");
    let (l1, _) = lane("fixed:service_us=20,size=1g", "noop");
    let mut sim = Sim::new(
        BlockConfig::default(),
        RunConfig {
            runtime: 0,
            interval: 0,
            log_issues: false,
        },
        l0.sched,
        l0.dev,
    );
    sim.add_lane(l1).unwrap();
    sim.stage = Some(stage);
    (sim, info.capacity_sectors)
}

fn add_job(sim: &mut Sim, job: &str, cap: u64) {
    let spec =
        JobSpec::from_params(&Params::parse_kv(job).unwrap(), "j", cap * 512, false).unwrap();
    sim.add_source(Box::new(Job::new(&spec, 0, 0, 1, cap * 512).unwrap()), 0);
}

/// Sectors below 1 GiB / 2 on lane 0, the rest on lane 1 at the same offset
/// minus the half; a bio crossing the middle is split.
struct Halves {
    half: u64,
    seen: [u64; 2],
}

impl Stage for Halves {
    fn name(&self) -> &str {
        "halves"
    }
    fn admit(&mut self, _bio: &mut BioSpec, _now: Ns) -> Admit {
        Admit::Now
    }
    fn place(&mut self, bio: &BioSpec, _now: Ns, out: &mut Vec<Piece>) {
        let end = bio.sector + bio.sectors as u64;
        if end <= self.half {
            return;
        }
        if bio.sector >= self.half {
            out.push(Piece {
                lane: 1,
                sector: bio.sector - self.half,
                sectors: bio.sectors,
            });
            return;
        }
        let first = (self.half - bio.sector) as u32;
        out.push(Piece {
            lane: 0,
            sector: bio.sector,
            sectors: first,
        });
        out.push(Piece {
            lane: 1,
            sector: 0,
            sectors: bio.sectors - first,
        });
    }
    fn completed(&mut self, lane: u8, bio: &BioSpec, _now: Ns) {
        self.seen[lane as usize] += bio.sectors as u64;
    }
}

#[test]
fn a_placement_routes_and_splits_bios_across_devices_and_every_bio_completes_once() {
    let half = (1u64 << 30) / 512 / 2;
    let (mut sim, cap) = sim_with(Box::new(Halves { half, seen: [0; 2] }));
    // Random 64 KiB reads over the whole device: about half on each lane,
    // some crossing the middle (split in two).
    add_job(
        &mut sim,
        "rw=randread,bs=64k,iodepth=4,number_ios=4000",
        cap,
    );
    let out = sim.run().unwrap();
    let b = &out.balance;
    assert_eq!(b.submitted, 4000);
    assert_eq!(b.completed, 4000);
    assert_eq!(b.unfinished, 0);
    assert_eq!(
        out.jobs[0].ops[0].ios, 4000,
        "one completion per source bio"
    );
    assert_eq!(out.lanes.len(), 2);
    let ios: Vec<u64> = out.lanes.iter().map(|l| l.disk.ios[0]).collect();
    assert!(ios[0] > 1500 && ios[1] > 1500, "{ios:?}");
    // Split bios add device requests on both sides.
    assert!(ios[0] + ios[1] >= 4000);
    let sectors: u64 = out.lanes.iter().map(|l| l.disk.sectors[0]).sum();
    assert_eq!(sectors, 4000 * 128, "every sector served once");
}

/// A stage that copies every completed read's sectors to lane 1 (a
/// migration): its own I/O, issued at the next poll.
struct Migrate {
    todo: Vec<(u64, u32)>,
    copied: u64,
}

impl Stage for Migrate {
    fn name(&self) -> &str {
        "migrate"
    }
    fn admit(&mut self, _bio: &mut BioSpec, _now: Ns) -> Admit {
        Admit::Now
    }
    fn completed(&mut self, lane: u8, bio: &BioSpec, _now: Ns) {
        if lane == 0 && bio.op == Op::Read {
            self.todo.push((bio.sector, bio.sectors));
        }
    }
    fn poll_io(&mut self, now: Ns, out: &mut Vec<(u8, BioSpec)>) -> Option<Ns> {
        for (sector, sectors) in self.todo.drain(..) {
            self.copied += 1;
            out.push((1, BioSpec::scripted(Op::Write, false, sector, sectors, 0)));
        }
        Some(now + 1_000_000)
    }
}

#[test]
fn a_placement_stage_issues_its_own_io_and_it_is_accounted() {
    let (mut sim, cap) = sim_with(Box::new(Migrate {
        todo: Vec::new(),
        copied: 0,
    }));
    add_job(&mut sim, "rw=randread,bs=4k,iodepth=2,number_ios=500", cap);
    let out = sim.run().unwrap();
    let b = &out.balance;
    // 500 reads of the job, 500 copies of the stage.
    assert_eq!(b.submitted, 1000, "{b:?}");
    assert_eq!(b.completed, 1000);
    assert!(!b.lost);
    assert_eq!(out.jobs.len(), 2);
    assert_eq!(out.jobs[1].name, "placement:migrate");
    assert_eq!(out.jobs[1].ops[1].ios, 500);
    assert_eq!(out.lanes[1].disk.ios[1], 500);
    assert_eq!(out.lanes[0].disk.ios, [500, 0]);
}

fn bid_cfg(sched: &str, hybrid: bool, jobs: &[&str]) -> Config {
    Config {
        seed: 3,
        runtime: 0,
        interval: 0,
        // Table 3's 256 request structures (the kernel's default for a
        // depth-1 device under an elevator is 2: nothing to stage).
        block: BlockConfig {
            nr_requests: 256,
            ..BlockConfig::default()
        },
        device: Component::parse("hdd:preset=sata_250g,ncq_depth=1,write_cache=0").unwrap(),
        scheduler: Component::parse(sched).unwrap(),
        tiers: if hybrid {
            vec![Tier::parse("fixed:page_kb=4,read_us=25,write_us=500,size=8g@mq-fifo").unwrap()]
        } else {
            Vec::new()
        },
        placement: hybrid.then(|| Component::parse("vfs-ssd").unwrap()),
        workload: Workload {
            jobs: jobs.iter().map(|j| Params::parse_kv(j).unwrap()).collect(),
            ..Workload::default()
        },
    }
}

/// A bulky sequential writer beside a process of small random writes over a
/// 64 MiB area, which it then reads back.
const MIXED: &[&str] = &[
    "rw=write,bs=512k,size=256m,iodepth=8,pid=10",
    "rw=randwrite,bs=4k,offset=100g,size=4m,number_ios=400,iodepth=4,pid=20",
];

#[test]
fn bid_hybrid_offloads_the_non_bulky_writes_and_serves_their_reads_from_the_ssd() {
    let mut jobs = MIXED.to_vec();
    // Reads of the small writes' area, beside them: those of pages already
    // offloaded go to the SSD.
    jobs.push("rw=randread,bs=4k,offset=100g,size=4m,number_ios=2000,iodepth=1,pid=30");
    let r = report::run(&bid_cfg("bid:pf_threshold=256", true, &jobs)).unwrap();
    let o = &r.outcome;
    assert_eq!(o.balance.completed, o.balance.submitted);
    assert!(o.lanes[0].offloaded > 0, "offloads");
    assert_eq!(o.lanes[0].offload_refused, 0);
    let (name, stats) = r.placement.clone().unwrap();
    assert_eq!(name, "vfs-ssd");
    assert!(stats["offloaded_requests"].as_u64().unwrap() > 0);
    // The bulky writer stayed on the HDD: the SSD got only small writes.
    let ssd_w = o.lanes[1].disk.sectors[1];
    assert!(ssd_w < 64 * 2048, "{ssd_w} sectors written to the SSD");
    assert!(o.lanes[0].disk.sectors[1] >= 256 * 2048);
    // Reads of offloaded pages went to the SSD.
    assert!(stats["redirected_reads"].as_u64().unwrap() > 0, "{stats}");
    assert!(o.lanes[1].disk.ios[0] > 0);
    let j = r.to_json();
    assert_eq!(j["vsim"]["devices"].as_array().unwrap().len(), 2);
    assert_eq!(j["disk_util"].as_array().unwrap().len(), 2);
}

#[test]
fn bid_offloads_without_a_placement_are_refused_and_served_on_the_hdd() {
    let r = report::run(&bid_cfg("bid:pf_threshold=256", false, MIXED)).unwrap();
    let o = &r.outcome;
    assert_eq!(o.balance.completed, o.balance.submitted);
    assert!(o.lanes[0].offload_refused > 0);
    assert_eq!(o.lanes[0].offloaded, 0);
    let st = &r.sched_stats;
    assert_eq!(st["offloaded_requests"].as_u64(), Some(0), "{st}");
}

#[test]
fn bid_hdd_moves_the_arm_less_than_noop_on_interleaved_bulky_streams() {
    // A generated Grep trace: eight map tasks reading 64 MB chunks in bursts,
    // open loop. Noop serves them as they interleave; BID-HDD flushes one
    // process's staging queue at a time.
    let run = |s: &str| {
        let mut c = bid_cfg(s, false, &[]);
        c.workload = Workload {
            mapreduce: vec![Params::parse_kv("workload=grep,scale=0.5").unwrap()],
            ..Workload::default()
        };
        let r = report::run(&c).unwrap();
        assert_eq!(r.outcome.balance.completed, r.outcome.balance.submitted);
        (
            r.device_counters["head_movements"].as_u64().unwrap(),
            r.outcome.busy_ns,
            r.sched_stats.clone(),
        )
    };
    let (noop, noop_busy, _) = run("noop");
    let (bid, bid_busy, st) = run("bid");
    assert!(
        bid * 10 < noop * 8,
        "bid {bid} vs noop {noop} head movements"
    );
    assert!(bid_busy < noop_busy);
    // Every staging queue was flushed (none left behind), marked by a timer.
    let flushes = st["flushes"].as_u64().unwrap();
    assert_eq!(flushes, st["staging_queues_created"].as_u64().unwrap());
    assert_eq!(
        flushes,
        st["marked_by_wait"].as_u64().unwrap() + st["marked_by_deadline"].as_u64().unwrap()
    );
}

#[test]
fn tiers_need_a_placement_and_placements_check_their_lanes() {
    let mut c = bid_cfg("bid", true, MIXED);
    c.placement = None;
    let e = format!("{:#}", c.build().err().unwrap());
    assert!(e.contains("--placement vfs-ssd"), "{e}");
    let mut c = bid_cfg("bid", false, MIXED);
    c.placement = Some(Component::parse("vfs-ssd").unwrap());
    let e = format!("{:#}", c.build().err().unwrap());
    assert!(e.contains("--tier"), "{e}");
    c.placement = Some(Component::parse("nope").unwrap());
    let e = format!("{:#}", c.build().err().unwrap());
    assert!(
        e.contains("unknown placement") && e.contains("vfs-ssd"),
        "{e}"
    );
    c.placement = Some(Component::parse("vfs-ssd:page_kb=0").unwrap());
    c.tiers = bid_cfg("bid", true, MIXED).tiers;
    assert!(c.build().is_err());
}

fn vsim(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_vsim"))
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn a_generated_trace_replays_the_same_from_a_blkparse_file() {
    let dir = std::env::temp_dir().join(format!("vsim-gen-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let trace = dir.join("grep.blkparse");
    let o = vsim(&[
        "gen",
        "mapreduce:workload=grep,scale=0.25,seed=4",
        "--out",
        trace.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = std::fs::read_to_string(&trace).unwrap();
    assert!(text.lines().all(|l| l.contains(" Q ")), "only Q records");
    let mut file_cfg = bid_cfg("bid", false, &[]);
    file_cfg.workload = Workload {
        traces: vec![Params::parse_kv(&format!(
            "path={},format=blkparse,mode=open",
            trace.display()
        ))
        .unwrap()],
        ..Workload::default()
    };
    let mut gen_cfg = file_cfg.clone();
    gen_cfg.workload = Workload {
        mapreduce: vec![Params::parse_kv("workload=grep,scale=0.25,seed=4").unwrap()],
        ..Workload::default()
    };
    let a = report::run(&file_cfg).unwrap();
    let b = report::run(&gen_cfg).unwrap();
    assert_eq!(a.outcome.bios, b.outcome.bios);
    assert_eq!(a.outcome.busy_ns, b.outcome.busy_ns);
    assert_eq!(a.device_counters, b.device_counters);
    // The trace keeps the PIDs: map tasks and reducers are processes.
    assert!(
        a.outcome.processes.len() >= 9,
        "{}",
        a.outcome.processes.len()
    );
    let _ = std::fs::remove_dir_all(&dir);
    let o = vsim(&["gen", "mapreduce:workload=nope"]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("terasort"));
    let o = vsim(&["gen", "other:workload=grep"]);
    assert!(String::from_utf8_lossy(&o.stderr).contains("known: mapreduce, tpcc"));
}

#[test]
fn the_bid_reproduction_runs_and_judges_every_claim() {
    let r = repro::run(
        "bid",
        &repro::Options {
            quick: true,
            workloads: vec!["terasort".into(), "grep".into()],
            ..Default::default()
        },
    )
    .unwrap();
    let s = &r.summary;
    assert!(repro::check_summary(s).unwrap() >= 10);
    assert_eq!(s["tables"].as_array().unwrap().len(), 4);
    assert_eq!(s["rankings"].as_array().unwrap().len(), 2);
    for c in s["cases"].as_array().unwrap() {
        assert_eq!(c["pass"], true, "{c}");
    }
    assert!(r.markdown.contains("| TeraSort |"));
    // The command line refuses what it cannot run.
    let e = repro::run("nope", &repro::Options::default())
        .err()
        .unwrap();
    assert!(format!("{e:#}").contains("known: bid"));
    let e = repro::run(
        "bid",
        &repro::Options {
            workloads: vec!["x".into()],
            ..Default::default()
        },
    )
    .err()
    .unwrap();
    assert!(format!("{e:#}").contains("unknown workload 'x'"));
    let o = vsim(&["repro", "bid", "--seeds", "0"]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("--seeds 0"));
}

/// The estimated parameters: `--set` runs with another value (an unknown key
/// or a bad value is refused, naming the estimates), and `--sensitivity`
/// runs every plausible value of each and lists the verdicts it changes.
#[test]
fn estimates_are_set_and_swept() {
    let quick = |set: Vec<(String, f64)>| repro::Options {
        quick: true,
        workloads: vec!["grep".into()],
        set,
        ..Default::default()
    };
    let r = repro::run("bid", &quick(vec![("burst".into(), 2.0)])).unwrap();
    assert_eq!(r.summary["estimates_set"][0], "burst=2");
    for (set, msg) in [
        (
            vec![("bogus".to_string(), 1.0)],
            "estimates no 'bogus' (its estimates: pf_threshold, load, burst, maps, reduces, slots)",
        ),
        (vec![("load".to_string(), -1.0)], "give a positive number"),
    ] {
        let e = repro::run("bid", &quick(set)).err().unwrap();
        assert!(format!("{e:#}").contains(msg), "{e:#}");
    }
    let s = repro::sensitivity("bid", &quick(Vec::new())).unwrap();
    let rows = s.summary["sensitivity"].as_array().unwrap();
    // Every plausible value but the default, of each estimate.
    let want: usize = repro::bid::ESTIMATES
        .iter()
        .map(|e| e.plausible.iter().filter(|&&v| v != e.default).count())
        .sum();
    assert_eq!(rows.len(), want);
    assert!(rows.iter().all(|r| r["changed"].is_array()));
    assert!(s
        .markdown
        .contains("## Sensitivity to the estimated parameters"));
    // Graded over the estimates: a verdict keeps the default run's grade
    // unless a plausible value changed it (then not judged, or inconclusive
    // where the others were only inconclusive).
    assert_eq!(s.summary["graded_over_estimates"], true);
    let base = repro::run("bid", &quick(Vec::new())).unwrap();
    assert_eq!(base.summary["graded_over_estimates"], false);
    let changed: std::collections::BTreeSet<String> = rows
        .iter()
        .flat_map(|r| r["changed"].as_array().unwrap().iter())
        .map(|c| format!("{})", c.as_str().unwrap().rsplit_once("): ").unwrap().0))
        .collect();
    let pairs = base.summary["verdicts"].as_array().unwrap().iter();
    for (a, b) in pairs.zip(s.summary["verdicts"].as_array().unwrap()) {
        let key = format!(
            "{} ({})",
            a["claim"].as_str().unwrap(),
            a["where"].as_str().unwrap()
        );
        if changed.contains(&key) {
            assert!(
                b["verdict"] == "not judged" || b["verdict"] == "inconclusive",
                "{b}"
            );
            assert_eq!(b["graded_at_defaults"], a["verdict"]);
        } else {
            assert_eq!(b["verdict"], a["verdict"], "{b}");
        }
    }
    assert!(repro::sensitivity("bid", &quick(vec![("burst".into(), 2.0)])).is_err());
    // The command line: --set and --load are one setting.
    let o = vsim(&["repro", "bid", "--set", "nope"]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("--set nope: give KEY=VALUE"));
}
