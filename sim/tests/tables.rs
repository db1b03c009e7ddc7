//! The text tables of `vsim run` and `vsim compare`: columns as wide as their
//! values, "-" for a direction without I/O, and the hint when no scheduler had
//! a choice to make.

use vsim::compare;
use vsim::config::{Component, Config, Workload};
use vsim::engine::BlockConfig;
use vsim::params::Params;
use vsim::report::{self, RunReport};

fn run(dev: &str, sched: &str, jobs: &[&str], traces: &[Params]) -> RunReport {
    let c = Config {
        seed: 1,
        runtime: 0,
        interval: 0,
        block: BlockConfig::default(),
        device: Component::parse(dev).unwrap(),
        scheduler: Component::parse(sched).unwrap(),
        tiers: Vec::new(),
        placement: None,
        workload: Workload {
            jobs: jobs.iter().map(|j| Params::parse_kv(j).unwrap()).collect(),
            traces: traces.to_vec(),
            ..Workload::default()
        },
    };
    report::run(&c).unwrap()
}

fn compare(
    dev: &str,
    scheds: &[&str],
    jobs: &[&str],
    traces: &[Params],
) -> (String, Vec<RunReport>) {
    let reps: Vec<RunReport> = scheds.iter().map(|s| run(dev, s, jobs, traces)).collect();
    let labels: Vec<String> = scheds.iter().map(|s| s.to_string()).collect();
    (compare::table(&labels, &reps, 0), reps)
}

/// The table's lines (header and rows, not the notes under it) all end at the
/// same column: every column has one width.
fn assert_aligned(table: &str, rows: usize) {
    let lines: Vec<&str> = table.lines().take(rows + 1).collect();
    let w = lines[0].chars().count();
    for l in &lines {
        assert_eq!(l.chars().count(), w, "misaligned:\n{table}");
    }
}

#[test]
fn compare_columns_hold_long_labels_and_large_values() {
    // A 33-character label, latencies of 1e6 us and a p99 ratio of 2.5e5.
    let (t, _) = compare(
        "fixed:service_us=1",
        &["noop", "veloces:bundle_expire_us=5000000"],
        &["rw=randwrite,iodepth=4,number_ios=3000"],
        &[],
    );
    assert_aligned(&t, 2);
    assert!(t.contains("veloces:bundle_expire_us=5000000"), "{t}");
}

#[test]
fn run_table_columns_hold_large_values() {
    // A long job name and an HDD's second-long latencies at depth 64.
    let r = run(
        "hdd",
        "noop",
        &["name=a-job-name-longer-than-sixteen,rw=randread,iodepth=64,number_ios=300"],
        &[],
    );
    let t = r.table();
    assert!(t.contains("a-job-name-longer-than-sixteen  read"), "{t}");
    assert_aligned(&t, 1);
}

#[test]
fn a_direction_without_io_has_no_latency() {
    let (t, _) = compare(
        "fixed:service_us=100",
        &["noop", "deadline"],
        &["rw=randwrite,iodepth=4,number_ios=500"],
        &[],
    );
    let row: Vec<&str> = t.lines().nth(1).unwrap().split_whitespace().collect();
    // scheduler IOPS x | rd p50, rd p99, x | wr p50, wr p99, x | WA energy
    assert_eq!(&row[3..6], ["-", "-", "-"], "{t}");
    assert_ne!(row[6], "-", "{t}");
    let (t, _) = compare(
        "fixed:service_us=100",
        &["noop", "deadline"],
        &["rw=randread,iodepth=4,number_ios=500"],
        &[],
    );
    let row: Vec<&str> = t.lines().nth(1).unwrap().split_whitespace().collect();
    assert_eq!(&row[6..9], ["-", "-", "-"], "{t}");
}

#[test]
fn hint_when_nothing_queues_in_the_scheduler() {
    // A closed-loop replay at depth 8 on an SSD with 32 tags: every request
    // goes to the device as it comes, so the schedulers have nothing to order.
    let dir = std::env::temp_dir().join(format!("vsim-tables-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("t.blkparse");
    let mut text = String::new();
    for i in 0..3000u64 {
        let sector = (i * 7_919 % 100_000) * 8;
        let op = if i % 3 == 0 { "W" } else { "R" };
        text += &format!(
            "8,0 0 {} {}.{:09} 100 Q {op} {sector} + 8 [fio]\n",
            i + 1,
            i / 1000,
            i % 1000 * 1000
        );
    }
    std::fs::write(&path, text).unwrap();
    let trace =
        |depth: u32| Params::parse_kv(&format!("path={},depth={depth}", path.display())).unwrap();
    // (Only the 8 requests of the first poll wait together, once.)
    let scheds = ["noop", "deadline", "deadline:fifo_batch=1"];
    let ssd = "ssd:preset=mlc_16g,cell=slc,blocks_per_plane=64";
    let (t, reps) = compare(ssd, &scheds, &[], &[trace(8)]);
    assert!(t.contains("note: nothing queued in the scheduler"), "{t}");
    assert!(t.contains("queue depth 32"), "{t}");
    let p99 = |r: &RunReport| r.total(0).pct(99.0) as f64;
    for r in &reps {
        assert_eq!(r.total(0).ios + r.total(1).ios, 3000);
        assert!((p99(r) / p99(&reps[0]) - 1.0).abs() < 0.01, "{t}");
    }
    // CFQ holds async writes behind the sync queue's slice: it has choices (so
    // has veloces, bundling writes).
    let (t, _) = compare(ssd, &["noop", "cfq"], &[], &[trace(8)]);
    assert!(!t.contains("note:"), "{t}");
    // At depth 128 requests wait and the schedulers have choices: no hint.
    let (t, _) = compare(
        "ssd:preset=mlc_16g,cell=slc,blocks_per_plane=64",
        &scheds,
        &[],
        &[trace(128)],
    );
    assert!(!t.contains("note:"), "{t}");
    std::fs::remove_dir_all(&dir).ok();
}
