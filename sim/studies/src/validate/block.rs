//! Block-layer accounting with closed forms:
//! - a bio larger than max_sectors_kb is split into ⌈S / max⌉ requests
//!   (`bio_split_to_limits`), so N sequential 8 MiB writes at 1280 KiB make
//!   7·N requests and 6·N added bios, and complete as N I/Os;
//! - conservation of I/O: every bio submitted completes (completed =
//!   submitted, total_ios = bios), under every scheduler, on every flash and
//!   disk model, including issue 10's trace that lost 3 of 4 bios under veloces.

use super::Case;
use vsim::config::{Component, Config, Workload};
use vsim::engine::{BlockConfig, RunConfig, Sim, DEFAULT_MAX_SECTORS};
use vsim::params::Params;
use vsim::report;
use vsim::types::{BioSpec, Op, MS, US};
use vsim::workload::script::Script;

const G: &str = "block";

fn cfg(dev: &str, sched: &str, job: &str, max_kb: u32) -> anyhow::Result<Config> {
    Ok(Config {
        seed: 1,
        runtime: 0,
        interval: 0,
        block: BlockConfig {
            max_sectors: max_kb * 2,
            ..BlockConfig::default()
        },
        device: Component::parse(dev)?,
        scheduler: Component::parse(sched)?,
        tiers: Vec::new(),
        placement: None,
        workload: Workload {
            jobs: vec![Params::parse_kv(job)?],
            ..Workload::default()
        },
    })
}

fn split_cases(n: u64) -> Vec<Case> {
    let mut out = Vec::new();
    for max_kb in [0u32, 512, 128] {
        let max = if max_kb == 0 {
            DEFAULT_MAX_SECTORS
        } else {
            max_kb * 2
        } as u64;
        let parts = 16384u64.div_ceil(max);
        let name = format!(
            "{n} x 8 MiB sequential writes at max_sectors_kb {}: requests N*ceil(16384/{max}), I/Os N",
            max / 2
        );
        let job = format!("rw=write,bs=8m,iodepth=4,number_ios={n}");
        let got = cfg("fixed:service_us=50", "deadline", &job, max_kb)
            .and_then(|c| report::run(&c))
            .map(|r| {
                format!(
                    "{} req, {} split, {} ios",
                    r.outcome.requests,
                    r.outcome.split_bios,
                    r.total(1).ios
                )
            })
            .unwrap_or_else(|e| format!("error: {e:#}"));
        out.push(Case::exact(
            G,
            name,
            format!("{} req, {} split, {n} ios", n * parts, n * (parts - 1)),
            got,
        ));
    }
    out
}

/// Issue 10's blkparse trace (4 sync writes) on `dev` under veloces: the
/// bios completed.
fn lost_io_trace(dev: &str) -> anyhow::Result<u64> {
    let d = vsim::device::make(dev, &Params::new(), 1)?;
    let s = vsim::sched::make("veloces", &Params::new(), &d.info())?;
    let mut sim = Sim::new(BlockConfig::default(), RunConfig::default(), s, d);
    let w = |t, sector, sectors, pid| {
        let mut b = BioSpec::scripted(Op::Write, true, sector, sectors, sector);
        b.pid = pid;
        (t, b)
    };
    let items = vec![
        w(0, 100_000, 2048, 100),
        w(US, 16, 8, 101),
        w(10 * MS, 0, 8, 102),
        w(20 * MS, 8, 8, 103),
    ];
    sim.add_source(Box::new(Script::new("trace", items)), 0);
    Ok(sim.run()?.balance.completed)
}

pub fn cases(quick: bool) -> Vec<Case> {
    let n = if quick { 8 } else { 32 };
    let mut out = split_cases(n);
    for dev in ["hdd", "cheapflash"] {
        let got = lost_io_trace(dev)
            .map(|c| c.to_string())
            .unwrap_or_else(|e| format!("error: {e:#}"));
        out.push(Case::exact(
            G,
            format!("issue 10 trace on {dev} under veloces: bios completed"),
            "4".into(),
            got,
        ));
    }
    let ios = if quick { 2000 } else { 10000 };
    let job = format!(
        "rw=randrw,rwmixread=50,bs=4k,iodepth=32,number_ios={ios},random_distribution=zipf:1.2"
    );
    for dev in [
        "ssd:preset=mlc_16g,cell=slc,blocks_per_plane=64",
        "cheapflash",
        "hdd",
    ] {
        for s in vsim::sched::names() {
            let got = cfg(dev, s, &job, 0)
                .and_then(|c| report::run(&c))
                .map(|r| {
                    let b = &r.outcome.balance;
                    format!(
                        "{} of {} ({} counted)",
                        b.completed,
                        b.submitted,
                        r.total(0).ios + r.total(1).ios
                    )
                })
                .unwrap_or_else(|e| format!("error: {e:#}"));
            out.push(Case::exact(
                G,
                format!("conservation: {s} on {dev}, zipf randrw QD32: completed = submitted"),
                format!("{ios} of {ios} ({ios} counted)"),
                got,
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn block_validation_cases_pass() {
        let cases = super::cases(true);
        assert_eq!(cases.len(), 3 + 2 + 3 * vsim::sched::names().len());
        for c in cases {
            assert!(c.pass, "{}: expected {}, got {}", c.name, c.expected, c.got);
        }
    }
}
