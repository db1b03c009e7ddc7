//! Conservation: under every scheduler, tunable and block setting, every bio
//! a run was given completes (issue 38: kyber lost the async writes at
//! nr_requests 4-7). One property over schedulers x `nr_requests` x device
//! queue depth x tunables (each at its minimum, maximum, default or a value
//! between) x workloads (reads and writes, buffered and direct, sequential
//! and random over one shared range, depths, several processes, sync
//! engines, I/O priorities, flows with weights, reservations and limits).
//! The run has no runtime, so it ends when every source is done: any bio
//! not completed is lost. `PROPTEST_CASES` raises the case count.

use crate::props::{cases, check};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use vsim::config::{Component, Config, Workload};
use vsim::engine::BlockConfig;
use vsim::params::Params;
use vsim::sched;

/// A value for tunable `t`: its bounds, its default, or one between
/// (`pick` in 0..1 places it; ranges over 10^6 are sampled near the ends).
fn tunable_value(t: &sched::tunable::Tunable, kind: u8, pick: f64) -> u64 {
    match kind % 4 {
        0 => t.min,
        1 => t.max,
        2 => t.default,
        _ => {
            let span = (t.max - t.min).min(1_000_000);
            t.min + (span as f64 * pick) as u64
        }
    }
}

fn job() -> impl Strategy<Value = String> {
    (
        prop_oneof![
            Just("read"),
            Just("write"),
            Just("randread"),
            Just("randwrite"),
            Just("randrw")
        ],
        prop_oneof![Just("4k"), Just("16k"), Just("128k")],
        0u8..2,
        1u32..17,
        20u32..120,
        1u32..4,
        prop_oneof![
            4 => Just(String::new()),
            1 => Just(",ioengine=psync".to_string()),
            1 => Just(",prioclass=1".to_string()),
            1 => Just(",prioclass=3".to_string()),
            1 => (1u32..1000).prop_map(|w| format!(",weight={w}")),
            1 => (1u32..500).prop_map(|r| format!(",reservation={r}")),
            1 => (200u32..5000).prop_map(|l| format!(",limit={l}")),
        ],
    )
        .prop_map(|(rw, bs, direct, depth, n, jobs, extra)| {
            format!(
                "rw={rw},bs={bs},direct={direct},iodepth={depth},number_ios={n},numjobs={jobs},size=8m{extra}"
            )
        })
}

#[derive(Debug, Clone)]
struct Case {
    sched: usize,
    tunables: Vec<(u8, f64)>,
    /// The host's CPU per I/O (`cpu_us`): with it, a freed request goes to whichever of the
    /// reaper and the waiter runs first (`Sim::runs_first`), not to the waiter.
    cpu_us: u32,
    /// With the host's CPU: the task an interrupt's first completion woke
    /// runs before the queue's restart (`Sim::set_reaper_first`).
    reaper_first: bool,
    nr_requests: u32,
    queue_depth: u32,
    device: &'static str,
    jobs: Vec<String>,
}

fn case() -> impl Strategy<Value = Case> {
    (
        (
            0..sched::REGISTRY.len(),
            prop_oneof![Just(0u32), Just(20), Just(150)],
            any::<bool>(),
        ),
        prop::collection::vec((0u8..6, 0.0f64..1.0), 16),
        prop_oneof![Just(0u32), 1u32..10, Just(16), Just(33), Just(256)],
        1u32..9,
        prop_oneof![
            Just("fixed:service_us=200,servers=2,size=64m"),
            Just("fixed:service_us=200,jitter_us=80,coalesce=1,servers=4,size=64m"),
            Just("cheapflash:preset=sd_a1,size=256m"),
            Just("hdd"),
            Just("ssd:channels=2,dies_per_channel=2,planes_per_die=1,blocks_per_plane=64,pages_per_block=96,op=0.25,precondition=none"),
        ],
        prop::collection::vec(job(), 1..4),
    )
        .prop_map(|((sched, cpu_us, reaper_first), tunables, nr_requests, queue_depth, device, jobs)| Case {
            sched,
            cpu_us,
            reaper_first,
            tunables,
            nr_requests,
            queue_depth,
            device,
            jobs,
        })
}

/// The scheduler spec of a case: each tunable, half the time, at a generated value.
fn sched_spec(c: &Case) -> String {
    let (name, _, _, decl) = sched::REGISTRY[c.sched];
    let set: Vec<String> = decl
        .iter()
        .zip(&c.tunables)
        .filter(|(_, (k, _))| *k < 4)
        .map(|(t, &(k, pick))| format!("{}={}", t.name, tunable_value(t, k, pick)))
        .chain((c.cpu_us > 0).then(|| format!("{}={}", sched::HOST_CPU.0, c.cpu_us)))
        .chain((c.reaper_first).then(|| format!("{}=1", sched::HOST_REAPER_FIRST.0)))
        .collect();
    if set.is_empty() {
        name.to_string()
    } else {
        format!("{name}:{}", set.join(","))
    }
}

#[test]
fn every_bio_completes_under_every_scheduler_tunable_and_block_setting() {
    check(cases(256), case, |c| {
        let spec = sched_spec(&c);
        let cfg = Config {
            seed: 7,
            runtime: 0,
            interval: 0,
            block: BlockConfig {
                nr_requests: c.nr_requests,
                queue_depth: c.queue_depth,
                ..BlockConfig::default()
            },
            device: Component::parse(c.device).map_err(|e| TestCaseError::fail(e.to_string()))?,
            scheduler: Component::parse(&spec).map_err(|e| TestCaseError::fail(e.to_string()))?,
            tiers: Vec::new(),
            placement: None,
            workload: Workload {
                jobs: c
                    .jobs
                    .iter()
                    .map(|j| Params::parse_kv(j).expect("generated job"))
                    .collect(),
                ..Workload::default()
            },
        };
        let mut sim = cfg
            .build()
            .map_err(|e| TestCaseError::fail(format!("{spec}: build: {e:#}")))?;
        let o = sim
            .run()
            .map_err(|e| TestCaseError::fail(format!("{spec}: run: {e:#}")))?;
        let b = &o.balance;
        prop_assert!(
            !b.lost && b.unfinished == 0 && b.completed == b.submitted && b.submitted > 0,
            "{} nr_requests={} queue_depth={} on {}: {:?}",
            spec,
            c.nr_requests,
            c.queue_depth,
            c.device,
            b
        );
        // Cut short (at a third of its length), the run loses nothing either: what is
        // unfinished is still queued, at the device, or waiting for a request that will come.
        let mut cut = cfg.clone();
        cut.runtime = (o.elapsed / 3).max(1);
        let o = cut
            .build()
            .and_then(|mut s| s.run())
            .map_err(|e| TestCaseError::fail(format!("{spec}: cut run: {e:#}")))?;
        prop_assert!(
            !o.balance.lost,
            "{} cut at {} ns, nr_requests={} queue_depth={} on {}: {:?}",
            spec,
            cut.runtime,
            c.nr_requests,
            c.queue_depth,
            c.device,
            o.balance
        );
        Ok(())
    });
}
