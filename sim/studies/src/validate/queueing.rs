//! Queueing checks: a single-server device fed by Poisson arrivals through the
//! whole pipeline (job -> block layer -> noop without merging -> `fixed`
//! device) must show the mean response time of M/M/1 (exponential service)
//! and M/D/1 (constant service):
//!   M/M/1: T = E[S] / (1 - ρ)         M/D/1: T = E[S] + ρ·E[S] / (2(1 - ρ))
//! (reference/simulators.md §4.4). Little's law is checked on the same runs.

use super::Case;
use vsim::config::{Component, Config, Workload};
use vsim::engine::BlockConfig;
use vsim::params::Params;
use vsim::report;

/// Mean response time (ns) and throughput of an open-loop Poisson run.
pub fn simulate(
    service: &str,
    mean_us: f64,
    rho: f64,
    n: u64,
    seed: u64,
) -> anyhow::Result<(f64, f64)> {
    let mut dev = Params::new();
    dev.set("service", service);
    dev.set("service_us", &mean_us.to_string());
    let mut sch = Params::new();
    sch.set("merges", "0");
    let mut job = Params::new();
    job.set("rw", "randread");
    job.set("bs", "4k");
    job.set("open_loop", "1");
    job.set("rate_process", "poisson");
    job.set("rate_iops", &(rho / (mean_us * 1e-6)).to_string());
    job.set("number_ios", &n.to_string());
    let cfg = Config {
        seed,
        runtime: 0,
        interval: 0,
        block: BlockConfig {
            nr_requests: 1 << 20,
            ..BlockConfig::default()
        },
        device: Component {
            name: "fixed".into(),
            params: dev,
        },
        scheduler: Component {
            name: "noop".into(),
            params: sch,
        },
        tiers: Vec::new(),
        placement: None,
        workload: Workload {
            jobs: vec![job],
            traces: vec![],
            ..Workload::default()
        },
    };
    let r = report::run(&cfg)?;
    let t = r.total(0);
    Ok((t.lat.mean(), t.iops(r.outcome.elapsed)))
}

pub fn cases(quick: bool) -> Vec<Case> {
    let n = if quick { 400_000 } else { 2_000_000 };
    let mut out = Vec::new();
    let s_us = 100.0;
    for (service, model) in [("exp", "M/M/1"), ("const", "M/D/1")] {
        for rho in [0.5, 0.8] {
            let expected = if service == "exp" {
                s_us / (1.0 - rho)
            } else {
                s_us + rho * s_us / (2.0 * (1.0 - rho))
            };
            let name = format!("{model} rho={rho} E[S]={s_us}us mean response (us), {n} requests");
            match simulate(service, s_us, rho, n, 42) {
                Ok((mean_ns, _)) => {
                    // A quick run has a wider confidence interval at high load.
                    let tol = if quick && rho > 0.7 && service == "exp" {
                        0.05
                    } else {
                        0.02
                    };
                    out.push(Case::rel("queueing", name, expected, mean_ns / 1e3, tol));
                }
                Err(e) => out.push(Case::check(
                    "queueing",
                    name,
                    format!("{expected:.3}"),
                    format!("error: {e:#}"),
                    "2%",
                    false,
                )),
            }
        }
    }
    out
}
