//! fio workload semantics with closed forms, on a `fixed` device of
//! constant service time S with 32 servers (so a queue depth would show):
//! - a synchronous engine (`ioengine=psync`) ignores `iodepth=32`: one I/O in
//!   flight per job, IOPS = 1/S; an asynchronous one (`libaio`) keeps 32 in
//!   flight, IOPS = 32/S;
//! - `ramp_time` r with `number_ios` N at depth 1: the I/Os completing at
//!   k·S <= r are left out, so N - ⌊r/S⌋ are counted over N·S - r;
//! - time based with `ramp_time`: the run lasts r + runtime and counts
//!   runtime/S I/Os.

use super::Case;
use vsim::config::{Component, Config, Workload};
use vsim::engine::BlockConfig;
use vsim::params::Params;
use vsim::report;
use vsim::workload::fiofile;

const G: &str = "fio";
const S_US: f64 = 100.0;

/// Run a job file's text on the fixed device; (I/Os counted, elapsed ns).
fn run(text: &str) -> anyhow::Result<(u64, u64)> {
    let f = fiofile::parse_str(text, "validate.fio")?;
    let jobs = f
        .jobs
        .into_iter()
        .map(|(name, mut p)| {
            p.set("name", &name);
            p
        })
        .collect();
    let cfg = Config {
        seed: 1,
        runtime: if f.time_based {
            f.runtime_ns.unwrap_or(0)
        } else {
            0
        },
        interval: 0,
        block: BlockConfig::default(),
        device: Component {
            name: "fixed".into(),
            params: Params::parse_kv(&format!("service_us={S_US},servers=32,queue_depth=32"))?,
        },
        scheduler: Component {
            name: "noop".into(),
            params: Params::new(),
        },
        tiers: Vec::new(),
        placement: None,
        workload: Workload {
            jobs,
            ramp: f.ramp_ns,
            ..Workload::default()
        },
    };
    let r = report::run(&cfg)?;
    let t = r.total(0);
    Ok((t.ios, r.outcome.elapsed))
}

fn case(name: &str, expected: f64, got: anyhow::Result<f64>, rel: f64) -> Case {
    match got {
        Ok(g) if rel == 0.0 => Case::exact(G, name, format!("{expected:.0}"), format!("{g:.0}")),
        Ok(g) => Case::rel(G, name, expected, g, rel),
        Err(e) => Case::check(
            G,
            name,
            format!("{expected}"),
            format!("error: {e:#}"),
            "-",
            false,
        ),
    }
}

pub fn cases(_quick: bool) -> Vec<Case> {
    let s = S_US * 1e-6;
    let base = "[j]\nrw=randread\nbs=4k\niodepth=32\n";
    let iops = |engine: &str| {
        run(&format!("{base}ioengine={engine}\nruntime=1\ntime_based\n"))
            .map(|(n, el)| n as f64 * 1e9 / el as f64)
    };
    let n = 10_000u64;
    let ramp_s = 0.25;
    vec![
        case(
            "psync iodepth=32 runs at depth 1: IOPS = 1/S (S = 100 us)",
            1.0 / s,
            iops("psync"),
            1e-3,
        ),
        case(
            "libaio iodepth=32 on 32 servers: IOPS = 32/S",
            32.0 / s,
            iops("libaio"),
            1e-3,
        ),
        case(
            "ramp_time=0.25s, number_ios=10000, depth 1: counted = N - r/S",
            n as f64 - (ramp_s / s).floor(),
            run(&format!(
                "{base}ioengine=psync\nnumber_ios={n}\nramp_time={ramp_s}\n"
            ))
            .map(|(ios, _)| ios as f64),
            0.0,
        ),
        case(
            "ramp_time=0.25s, runtime=1s, time based: counted = runtime/S",
            1.0 / s,
            run(&format!(
                "{base}ioengine=psync\nruntime=1\nramp_time={ramp_s}\ntime_based\n"
            ))
            .map(|(ios, _)| ios as f64),
            0.0,
        ),
    ]
}

#[cfg(test)]
mod tests {
    #[test]
    fn fio_semantics_validation() {
        for c in super::cases(true) {
            assert!(c.pass, "{c:?}");
        }
    }
}
