//! A device of `servers` identical servers fed in arrival order, each taking a
//! constant (`service=const`) or exponentially distributed (`service=exp`)
//! time with mean `service_us`. With one server and Poisson arrivals this is
//! the M/D/1 or M/M/1 queue of the validation suite; it is also the depth-1
//! "service time per op" device of the conformance scenarios.
//! `jitter_us` (default 0) makes a constant service time vary about the same
//! mean: each request takes `mean - jitter` plus an exponential time of mean
//! `jitter` (at most the whole mean, which is `service=exp`): a device whose
//! completions come late now and then, as a timer's under emulation do
//! (docs/notebooks/fidelity.md calibrates it from null_blk's).
//! `tail_p` and `tail_us` (default 0) give that lateness a rarer, longer part:
//! with probability `tail_p` a late completion is later by a second
//! exponential time of mean `tail_us`; the constant part is shortened by
//! `tail_p * tail_us` so the mean stays (null_blk's timer under emulation is
//! late by more than one exponential at its p99: the same notebook).
//! `coalesce=1` makes that lateness the timer interrupt's, not each
//! request's: a request whose constant part ends while an earlier one's
//! late interrupt is pending completes in that interrupt (one late timer
//! interrupt ends every request due by then, as null_blk's `irqmode=2`
//! hrtimers do under emulation: requests dispatched together complete
//! together, in clumps; docs/notebooks/fidelity.md, "6.1's four-tag reader").
//! `max_hw_sectors_kb` (default 0: none) caps the block layer's max_sectors_kb,
//! as a driver's queue limit does. With `page_kb` > 0, `read_us`/`write_us`
//! are per page: a request takes that time for each `page_kb` page it
//! touches (the SLC SSD of the BID paper's Table 3: `page_kb=4,read_us=25,
//! write_us=500`).
//!
//! The QoS seed's flash write model (qos-flash-hybrid-store.txt Table 4): once
//! random writes have been made, each write is slower than the last by
//! `write_slope_us` (m: the x-th write takes t_w + m·x), up to `write_max_us`
//! where the slow-down saturates; `warm=1` starts saturated (the seed
//! measures "at steady state", after warming the flash with random writes).

use super::{Device, Power};
use crate::params::Params;
use crate::types::DeviceInfo;
use crate::types::{Ns, Op, Request, SEC};
use anyhow::{bail, Result};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;

pub struct Fixed {
    read_ns: Ns,
    write_ns: Ns,
    per_sector_ns: Ns,
    /// Sectors per page when `read_us`/`write_us` are per page (`page_kb`):
    /// a request takes that time for every page it touches; 0 = per request.
    page_sectors: u64,
    exp: bool,
    /// The exponential part of each service time (the rest is constant).
    jitter_ns: Ns,
    /// The rarer, longer part of it: with probability `tail_p`, an exponential
    /// time of mean `tail_ns` more.
    tail_p: f64,
    tail_ns: Ns,
    /// Late completions come in one interrupt (`coalesce`): the interrupts
    /// pending, each as (the earliest due time it ends, when it fires).
    coalesce: bool,
    irqs: Vec<(Ns, Ns)>,
    /// Table 4's write slow-down: m per write made, saturating at `write_max_ns`.
    write_slope_ns: Ns,
    write_max_ns: Ns,
    writes: u64,
    free_at: Vec<Ns>,
    depth: u32,
    capacity: u64,
    max_hw_sectors: Option<u32>,
    rng: Pcg64Mcg,
    busy_ns: u128,
    served: u64,
    power: Power,
}

pub fn new(p: &Params, seed: u64) -> Result<Box<dyn Device>> {
    let us = 1_000;
    // A service time of 0 would let a closed loop run forever at one instant;
    // an hour per request is far beyond any device.
    let max = 3600 * SEC;
    let service = p.time_in("service_us", 100 * us, us, 0, max)?;
    let read_ns = p.time_in("read_us", service, us, 0, max)?;
    let write_ns = p.time_in("write_us", service, us, 0, max)?;
    let per_sector_ns = p.time_in("per_sector_ns", 0, 1, 0, SEC)?;
    for (k, t) in [("read_us", read_ns), ("write_us", write_ns)] {
        if t + per_sector_ns == 0 {
            let key = if p.contains(k) { k } else { "service_us" };
            bail!(
                "{}: a request must take at least 1 ns (a zero service time never lets simulated time advance); give a positive time such as 0.001 (1 ns) or per_sector_ns",
                p.what(key)
            );
        }
    }
    let exp = match p.str_of("service", "const", &["const", "exp"]).as_str() {
        "const" | "deterministic" => false,
        "exp" | "exponential" => true,
        other => bail!("option 'service': '{other}' is not const or exp"),
    };
    let jitter_ns = p.time_in("jitter_us", 0, us, 0, max)?;
    if exp && jitter_ns > 0 {
        bail!(
            "{}: service=exp is already all jitter (the whole service time is exponential); give one of them",
            p.what("jitter_us")
        );
    }
    let tail_p = p.f64_in("tail_p", 0.0, 0.0, 1.0)?;
    let tail_ns = p.time_in("tail_us", 0, us, 0, max)?;
    if (tail_p > 0.0) != (tail_ns > 0) || (tail_ns > 0 && jitter_ns == 0) {
        bail!(
            "{}: a tail is a rarer part of the jitter: give tail_p and tail_us together, with jitter_us",
            p.what(if p.contains("tail_us") { "tail_us" } else { "tail_p" })
        );
    }
    let coalesce = p.bool_or("coalesce", false)?;
    if coalesce && jitter_ns == 0 {
        bail!(
            "{}: coalesce=1 gathers late completions, and without jitter_us none is late; give jitter_us",
            p.what("coalesce")
        );
    }
    let page_sectors = p.u64_in("page_kb", 0, 0, 1 << 20)? * 2;
    let write_slope_ns = p.time_in("write_slope_us", 0, us, 0, max)?;
    let write_max_ns = p.time_in("write_max_us", 0, us, 0, max)?;
    if write_slope_ns > 0 && write_max_ns < write_ns {
        bail!(
            "{}: with write_slope_us the write time grows from write_us ({} us) and needs a saturation point write_max_us at or above it",
            p.what("write_max_us"),
            write_ns as f64 / 1e3
        );
    }
    let warm = p.bool_or("warm", false)?;
    let writes = match (warm, write_slope_ns) {
        (true, m) if m > 0 => (write_max_ns - write_ns).div_ceil(m),
        _ => 0,
    };
    let servers = p.u64_in("servers", 1, 1, 4096)? as usize;
    let depth = p.u64_in("queue_depth", servers as u64, 1, 65536)? as u32;
    let capacity = p.size_or("size", 1 << 30)? / 512;
    // queue/max_hw_sectors_kb (0: none below the block layer's default).
    let max_hw_kb = p.u64_in("max_hw_sectors_kb", 0, 0, 1 << 20)?;
    let max_hw_sectors = (max_hw_kb > 0).then_some(max_hw_kb as u32 * 2);
    let power = Power {
        active_w: p.f64_in("active_w", 2.0, 0.0, 1e4)?,
        idle_w: p.f64_in("idle_w", 0.5, 0.0, 1e4)?,
    };
    Ok(Box::new(Fixed {
        read_ns,
        write_ns,
        per_sector_ns,
        page_sectors,
        exp,
        jitter_ns,
        tail_p,
        tail_ns,
        coalesce,
        irqs: Vec::new(),
        write_slope_ns,
        write_max_ns,
        writes,
        free_at: vec![0; servers],
        depth,
        capacity,
        max_hw_sectors,
        rng: Pcg64Mcg::seed_from_u64(seed ^ 0xF1_0ED),
        busy_ns: 0,
        served: 0,
        power,
    }))
}

impl Device for Fixed {
    fn name(&self) -> &str {
        "fixed"
    }
    fn info(&self) -> DeviceInfo {
        DeviceInfo {
            capacity_sectors: self.capacity,
            queue_depth: self.depth,
            rotational: false,
            erase_block_sectors: None,
            optimal_io_sectors: None,
            max_hw_sectors: self.max_hw_sectors,
            host_tags: None,
        }
    }
    fn submit(&mut self, rq: &Request, now: Ns) -> Ns {
        let op_ns = match rq.op {
            Op::Read => self.read_ns,
            Op::Write if self.write_slope_ns > 0 => {
                let t = (self.write_ns + self.write_slope_ns.saturating_mul(self.writes))
                    .min(self.write_max_ns);
                self.writes += 1;
                t
            }
            Op::Write => self.write_ns,
        };
        let pages = match (
            rq.sector.checked_div(self.page_sectors),
            (rq.end().max(rq.sector + 1) - 1).checked_div(self.page_sectors),
        ) {
            (Some(first), Some(last)) => last - first + 1,
            _ => 1,
        };
        let mean = op_ns * pages + self.per_sector_ns * rq.sectors as u64;
        let jitter = if self.exp {
            mean
        } else {
            self.jitter_ns.min(mean)
        };
        // The tail's mean comes out of the constant part, as the jitter's does.
        let (tail_p, tail_ns) = (self.tail_p, self.tail_ns);
        let tail_mean = if jitter > 0 {
            ((tail_p * tail_ns as f64).round() as Ns).min(mean - jitter)
        } else {
            0
        };
        // Earliest-free server; ties go to the lowest index (deterministic).
        let (i, &free) = self
            .free_at
            .iter()
            .enumerate()
            .min_by_key(|&(_, t)| *t)
            .unwrap_or((0, &0));
        let start = free.max(now);
        let late = |rng: &mut Pcg64Mcg| {
            let u: f64 = rng.gen::<f64>();
            let mut t = -(1.0 - u).ln() * jitter as f64;
            if tail_ns > 0 && rng.gen::<f64>() < tail_p {
                let v: f64 = rng.gen::<f64>();
                t += -(1.0 - v).ln() * tail_ns as f64;
            }
            t.round() as Ns
        };
        let s = if jitter > 0 && self.coalesce {
            // Due at the constant part's end: in a pending interrupt that ends it,
            // else in one of its own, late by the exponential part.
            let due = start + mean - jitter - tail_mean;
            self.irqs.retain(|&(_, at)| at > now);
            let at = match self
                .irqs
                .iter()
                .find(|&&(from, at)| from <= due && due <= at)
            {
                Some(&(_, at)) => at,
                None => {
                    let at = due + late(&mut self.rng);
                    self.irqs.push((due, at));
                    at
                }
            };
            (at - start).max(1)
        } else if jitter > 0 {
            // At least 1 ns, as a constant service time (simulated time must advance).
            (mean - jitter - tail_mean + late(&mut self.rng)).max(1)
        } else {
            mean
        };
        self.free_at[i] = start + s;
        self.busy_ns += s as u128;
        self.served += 1;
        start + s
    }
    fn counters(&self) -> serde_json::Value {
        serde_json::json!({
            "served": self.served,
            "service_ns_total": self.busy_ns as u64,
            "writes_counted": self.writes,
        })
    }
    fn energy(&self, elapsed: Ns, busy: Ns) -> super::energy::Energy {
        super::energy::from_power(self.power.active_w, self.power.idle_w, elapsed, busy)
    }
}

#[cfg(test)]
mod tests {
    use crate::params::Params;
    use crate::types::{Op, Request};

    /// Completions of `opts`'s device for four requests submitted at once,
    /// then one more submitted at `later`.
    fn done_times(opts: &str, later: u64) -> Vec<u64> {
        let p = Params::parse_kv(opts).unwrap_or_else(|e| panic!("{e:#}"));
        let mut d = super::super::make("fixed", &p, 7).unwrap_or_else(|e| panic!("{e:#}"));
        let mut done: Vec<u64> = (0..4)
            .map(|i| d.submit(&Request::standalone(Op::Read, true, i * 8, 8), 0))
            .collect();
        done.push(d.submit(&Request::standalone(Op::Read, true, 64, 8), later));
        done
    }

    /// `coalesce=1`: the lateness is the timer interrupt's, so requests due
    /// together complete together (null_blk's hrtimers under emulation), and a
    /// request due while that interrupt is pending joins it; one due after it
    /// fired gets its own. Without it each is late by its own draw.
    #[test]
    fn coalesced_completions_come_in_one_interrupt() {
        let plain = done_times(
            "service_us=1000,jitter_us=300,servers=8,queue_depth=8",
            50_000,
        );
        assert!(plain[..4].windows(2).any(|w| w[0] != w[1]), "{plain:?}");
        let irq = done_times(
            "service_us=1000,jitter_us=300,coalesce=1,servers=8,queue_depth=8",
            0,
        );
        assert!(irq.iter().all(|&t| t == irq[0]), "{irq:?}");
        assert!(irq[0] >= 700_000, "{irq:?}");
        // Due at 750 us (50 + 700), while the first interrupt (late past 700) may be pending.
        let joined = done_times(
            "service_us=1000,jitter_us=300,coalesce=1,servers=8,queue_depth=8",
            50_000,
        );
        let due = 750_000;
        if joined[0] >= due {
            assert_eq!(joined[4], joined[0], "{joined:?}");
        } else {
            assert!(joined[4] >= due, "{joined:?}");
        }
        // Due long after the first interrupt fired: an interrupt of its own.
        let alone = done_times(
            "service_us=1000,jitter_us=300,coalesce=1,servers=8,queue_depth=8",
            5_000_000,
        );
        assert!(alone[4] >= 5_700_000 && alone[4] != alone[0], "{alone:?}");
        let p = Params::parse_kv("coalesce=1").unwrap_or_else(|e| panic!("{e:#}"));
        let err = super::super::make("fixed", &p, 7)
            .err()
            .map(|e| format!("{e:#}"));
        assert!(
            err.is_some_and(|e| e.contains("jitter_us")),
            "coalesce without jitter accepted"
        );
    }

    fn service_times(opts: &str, n: usize) -> Vec<u64> {
        let p = Params::parse_kv(opts).unwrap_or_else(|e| panic!("{e:#}"));
        let mut d = super::super::make("fixed", &p, 7).unwrap_or_else(|e| panic!("{e:#}"));
        let mut now = 0;
        (0..n)
            .map(|i| {
                let done = d.submit(&Request::standalone(Op::Read, true, i as u64 * 8, 8), now);
                let s = done - now;
                now = done;
                s
            })
            .collect()
    }

    #[test]
    fn jitter_spreads_service_times_about_the_same_mean() {
        let s = service_times("service_us=1000,jitter_us=100", 20_000);
        let mean = s.iter().sum::<u64>() as f64 / s.len() as f64;
        assert!((mean - 1e6).abs() < 0.01e6, "mean {mean}");
        assert!(
            s.iter().all(|&t| t >= 900_000),
            "shorter than mean - jitter"
        );
        // Exponential part of mean 100 us: P(> 900 + 300 us) = e^-3 ~ 5 %.
        let over = s.iter().filter(|&&t| t > 1_200_000).count() as f64 / s.len() as f64;
        assert!((0.04..0.06).contains(&over), "{over}");
        // No jitter: constant, and no random numbers drawn (results as before).
        assert!(service_times("service_us=1000", 100)
            .iter()
            .all(|&t| t == 1_000_000));
    }

    #[test]
    fn a_tail_makes_rare_completions_later_and_keeps_the_mean() {
        let n = 100_000;
        let p99 = |mut s: Vec<u64>| {
            s.sort_unstable();
            s[n * 99 / 100]
        };
        let base = service_times("service_us=1000,jitter_us=100", n);
        let tail = service_times("service_us=1000,jitter_us=100,tail_p=0.02,tail_us=2000", n);
        let mean = tail.iter().sum::<u64>() as f64 / n as f64;
        assert!((mean - 1e6).abs() < 0.01e6, "mean {mean}");
        // The constant part is shorter by tail_p * tail_us = 40 us.
        assert!(
            tail.iter().all(|&t| t >= 860_000),
            "shorter than mean - jitter - 40 us"
        );
        // Without the tail p99 is 860 + 100 ln 100 = 1,360 us (900 + 460 us); with it the
        // top 1 % is mostly the 2 % that are later by a 2-ms exponential.
        let (b, t) = (p99(base), p99(tail));
        assert!((1_300_000..1_420_000).contains(&b), "{b}");
        assert!(t > 2_000_000, "{t}");
        // Either without the other, or without jitter, is refused.
        for bad in [
            "jitter_us=100,tail_p=0.02",
            "jitter_us=100,tail_us=10",
            "tail_p=0.1,tail_us=10",
        ] {
            let p = Params::parse_kv(bad).unwrap_or_else(|e| panic!("{e:#}"));
            assert!(
                super::super::make("fixed", &p, 1).is_err(),
                "{bad} accepted"
            );
        }
    }

    #[test]
    fn jitter_with_exponential_service_is_refused() {
        let p = Params::parse_kv("service=exp,jitter_us=10").unwrap_or_else(|e| panic!("{e:#}"));
        let err = super::super::make("fixed", &p, 1)
            .err()
            .map(|e| format!("{e:#}"));
        assert!(err.is_some_and(|e| e.contains("jitter_us")), "accepted");
    }
}
