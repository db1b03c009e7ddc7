//! MapReduce-like generated block traces, after the I/O characterisation of
//! the BID paper's Table 2 (/work/shared/seeds/bid-bulk-io-dispatch.txt):
//! the paper's HiBench and TPCx-HS traces are not public, so these stand in
//! for them, parameter by parameter documented in docs/sim-bid.md.
//!
//! A workload is a set of tasks (processes, one PID each) of a few roles:
//! map tasks run in `slots` concurrent slots (a task starts when a slot
//! frees), reduce tasks start when the last map ends (slow-start 1.0). Each
//! task runs its phases in order; a phase is a stream of requests:
//!
//! * `SeqRead`: one 64 MB HDFS chunk read front to back in `req_kb`
//!   requests (the paper's bio: 128 × 4 KiB = 512 KiB), `burst` at a time
//!   (readahead), at the task's consumption rate;
//! * `SeqWrite`: an output file written front to back (HDFS block or
//!   reduce output), `burst` requests per writeback;
//! * `RandWrite`: spill/shuffle-sort output: `req_kb` = (min, max) sizes in
//!   4 KiB steps at random 4 KiB-aligned offsets of the task's spill area;
//! * `RandRead`: shuffle/merge reads of map outputs: random offsets of all
//!   the map tasks' spill areas.
//!
//! Placement on the disk (of `span_gb`, default 250: the paper's drive):
//! HDFS chunks in the first 60 % (a random 64 MB-aligned chunk per map),
//! spill areas (mapred.local.dir) in the next 20 %, outputs allocated
//! contiguously in the last 20 %. Arrivals are open loop (the trace's
//! timestamps), as the paper replayed its traces.
//!
//! The trace comes out as blkparse text (`Q` records with PID and command),
//! the format the paper captured and vsim replays ([`super::trace`]):
//! `vsim gen` writes it, and a `[[mapreduce]]` workload table replays it
//! without a file.

use crate::params::Params;
use crate::types::{Op, MS, SEC};
use anyhow::{bail, Result};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;
use std::fmt::Write as _;

const KB: u64 = 2; // sectors per KiB
const MB: u64 = 2048; // sectors per MiB

#[derive(Clone, Copy, Debug)]
pub enum Pattern {
    SeqRead,
    SeqWrite,
    RandWrite,
    RandRead,
}

/// One phase of a task: `mb` MiB in requests of `req_kb` KiB (a range for
/// random phases), `burst` requests submitted together, at `mbps` MB/s.
#[derive(Clone, Copy, Debug)]
pub struct Phase {
    pub pattern: Pattern,
    pub mb: f64,
    pub req_kb: (u64, u64),
    pub burst: u32,
    pub mbps: f64,
}

/// A role: `count` tasks of these phases (`map`: in slots; `reduce`: after
/// the maps).
#[derive(Clone, Debug)]
pub struct Role {
    pub name: &'static str,
    pub map: bool,
    pub count: u32,
    pub phases: Vec<Phase>,
}

const fn ph(pattern: Pattern, mb: f64, req_kb: (u64, u64), burst: u32, mbps: f64) -> Phase {
    Phase {
        pattern,
        mb,
        req_kb,
        burst,
        mbps,
    }
}

use Pattern::{RandRead, RandWrite, SeqRead, SeqWrite};

/// The 64 MB HDFS chunk a map task reads, in 512 KiB requests, two at a time.
const CHUNK: Phase = ph(SeqRead, 64.0, (512, 512), 2, 20.0);

/// The workloads of Table 2, each with its one-line characterisation.
pub const WORKLOADS: &[(&str, &str)] = &[
    ("grep", "mostly sequential reads with small writes"),
    (
        "randomtextwriter",
        "mostly sequential writes, mixed with random writes and negligible reads",
    ),
    (
        "sort",
        "more reads than writes: large sequential reads with random writes and later sequential writes",
    ),
    (
        "terasort",
        "good mix of sequential and random reads/writes, more reads than writes",
    ),
    (
        "wordcount",
        "mostly sequential reads, with many random writes followed by random reads and small sequential writes",
    ),
    (
        "wordstddev",
        "mostly sequential reads with small inter-phase writes, followed by small writes in the end",
    ),
];

/// The roles of workload `name` (`maps` map tasks, `reduces` reduce tasks).
pub fn roles(name: &str, maps: u32, reduces: u32) -> Result<Vec<Role>> {
    let map = |phases: Vec<Phase>| Role {
        name: "map",
        map: true,
        count: maps,
        phases,
    };
    let reduce = |phases: Vec<Phase>| Role {
        name: "reduce",
        map: false,
        count: reduces,
        phases,
    };
    Ok(match name {
        // A few matches per chunk: a small spill of 4-8 KiB writes; one
        // reducer writes the few results.
        "grep" => vec![
            map(vec![CHUNK, ph(RandWrite, 0.125, (4, 8), 4, 5.0)]),
            reduce(vec![ph(SeqWrite, 0.5, (4, 4), 8, 1.0)]),
        ],
        // Each map writes 128 MB of text (512 KiB writeback), with a
        // random 4-16 KiB write (its metadata, logs) per 1 MB; a few reads.
        "randomtextwriter" => vec![
            map(vec![
                ph(RandRead, 0.0625, (4, 4), 1, 1.0),
                ph(SeqWrite, 128.0, (512, 512), 4, 20.0),
            ]),
            Role {
                name: "meta",
                map: true,
                count: maps,
                phases: vec![ph(RandWrite, 1.5, (4, 16), 1, 0.25)],
            },
        ],
        // Read the chunk, spill it sorted in 4-64 KiB random writes; the
        // reducers merge-read it and write the sorted output sequentially.
        "sort" => vec![
            map(vec![CHUNK, ph(RandWrite, 32.0, (4, 64), 8, 10.0)]),
            reduce(vec![
                ph(RandRead, 16.0, (16, 64), 2, 10.0),
                ph(SeqWrite, 64.0, (512, 512), 4, 20.0),
            ]),
        ],
        // The chunk, a 16 MB spill; reducers: shuffle reads (random), then
        // the output (sequential). Reads > writes.
        "terasort" => vec![
            map(vec![CHUNK, ph(RandWrite, 16.0, (4, 64), 8, 10.0)]),
            reduce(vec![
                ph(RandRead, 32.0, (4, 64), 2, 10.0),
                ph(SeqWrite, 32.0, (512, 512), 4, 20.0),
            ]),
        ],
        // The chunk with many small random writes (combiner spills) at the
        // same time, then random reads of them and small sequential writes.
        "wordcount" => vec![
            map(vec![CHUNK, ph(RandRead, 4.0, (4, 16), 1, 4.0)]),
            Role {
                name: "spill",
                map: true,
                count: maps,
                phases: vec![ph(RandWrite, 8.0, (4, 16), 4, 3.0)],
            },
            reduce(vec![
                ph(RandRead, 8.0, (4, 16), 1, 4.0),
                ph(SeqWrite, 4.0, (16, 16), 4, 4.0),
            ]),
        ],
        // The chunk, with a small write between the passes; small writes
        // at the end.
        "wordstddev" => vec![
            map(vec![
                ph(SeqRead, 32.0, (512, 512), 2, 20.0),
                ph(RandWrite, 0.0625, (4, 4), 1, 1.0),
                ph(SeqRead, 32.0, (512, 512), 2, 20.0),
            ]),
            reduce(vec![ph(SeqWrite, 1.0, (4, 4), 4, 0.5)]),
        ],
        other => bail!(
            "unknown MapReduce workload '{other}' (known: {})",
            names().join(", ")
        ),
    })
}

pub fn names() -> Vec<&'static str> {
    WORKLOADS.iter().map(|w| w.0).collect()
}

/// Every option a `[[mapreduce]]` table (or `vsim gen`) takes.
pub const OPTIONS: &[&str] = &[
    "workload", "maps", "reduces", "slots", "scale", "load", "burst", "span_gb", "seed", "name",
];

/// One generated request.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rec {
    pub t: u64,
    pub pid: u32,
    pub op: Op,
    pub sector: u64,
    pub sectors: u32,
    pub role: &'static str,
}

/// The generator's settings.
#[derive(Clone, Debug)]
pub struct Spec {
    pub workload: String,
    pub maps: u32,
    pub reduces: u32,
    pub slots: u32,
    /// Multiplies every phase's size.
    pub scale: f64,
    /// Multiplies every phase's rate (offered load).
    pub load: f64,
    /// Multiplies every phase's burst (requests submitted together: readahead
    /// and writeback batches; rounded, at least 1), at the same rate.
    pub burst: f64,
    pub span_sectors: u64,
    pub seed: u64,
}

impl Spec {
    pub fn from_params(p: &Params, device_sectors: u64, seed: u64) -> Result<Self> {
        for (k, _) in p.iter() {
            if !OPTIONS.contains(&k.as_str()) {
                bail!(
                    "mapreduce: unknown option '{k}' (known: {})",
                    OPTIONS.join(", ")
                );
            }
        }
        let Some(w) = p.raw("workload") else {
            bail!(
                "mapreduce: option 'workload' is required ({})",
                names().join(", ")
            );
        };
        let span_gb = p.f64_in("span_gb", 250.0, 0.001, 1e6)?;
        let span = ((span_gb * 1e9 / 512.0) as u64).min(device_sectors);
        if span < 8 * 1024 * MB {
            bail!(
                "mapreduce: the span ({span_gb} GB, or the device's {} sectors) is below 8 GiB: too small for HDFS chunks, spill areas and outputs",
                device_sectors
            );
        }
        let _ = p.raw("name");
        Ok(Spec {
            workload: w.to_string(),
            maps: p.u64_in("maps", 8, 1, 4096)? as u32,
            reduces: p.u64_in("reduces", 2, 0, 4096)? as u32,
            slots: p.u64_in("slots", 4, 1, 4096)? as u32,
            scale: p.f64_in("scale", 1.0, 1e-3, 1e3)?,
            load: p.f64_in("load", 1.0, 1e-3, 1e3)?,
            burst: p.f64_in("burst", 1.0, 1e-3, 1e3)?,
            span_sectors: span,
            seed: p.u64_in("seed", seed, 0, u64::MAX)?,
        })
    }
}

/// Generate the requests of `spec`, in time order (ties: PID, then order).
pub fn generate(spec: &Spec) -> Result<Vec<Rec>> {
    let roles = roles(&spec.workload, spec.maps, spec.reduces)?;
    let mut rng = Pcg64Mcg::seed_from_u64(spec.seed ^ 0x4D52_0000);
    let span = spec.span_sectors;
    let hdfs = (0, span * 6 / 10);
    let local = (hdfs.1, span * 8 / 10);
    let mut out_next = local.1;
    let chunk = 64 * MB;
    let spill_area = 128 * MB;
    let n_chunks = (hdfs.1 - hdfs.0) / chunk;
    let n_spills = (local.1 - local.0) / spill_area;
    let mut recs = Vec::new();
    let mut pid = 2000u32;
    // Map slots: when each frees.
    let mut slot_free = vec![0u64; spec.slots as usize];
    let mut maps_end = 0u64;
    let mut spill_areas: Vec<u64> = Vec::new();
    let mut map_starts: Vec<u64> = Vec::new();
    // Map-side roles first: the first runs in the slots, the others (a map
    // task's other threads: its own PIDs in blktrace) start with it; then
    // the reduce side.
    for pass in [true, false] {
        for (ri, role) in roles.iter().filter(|r| r.map == pass).enumerate() {
            for k in 0..role.count {
                pid += 1;
                let jitter = rng.gen_range(0..200 * MS);
                let primary = pass && ri == 0;
                let start = if primary {
                    let free = slot_free.iter().copied().min().unwrap_or(0);
                    map_starts.push(free + jitter);
                    free + jitter
                } else if pass {
                    map_starts.get(k as usize).copied().unwrap_or(0) + jitter
                } else {
                    maps_end + jitter
                };
                let spill = local.0 + rng.gen_range(0..n_spills.max(1)) * spill_area;
                spill_areas.push(spill);
                let mut t = start;
                for ph in &role.phases {
                    let total = (ph.mb * spec.scale * MB as f64) as u64;
                    let rate = ph.mbps * spec.load * 1e6 / 512.0; // sectors per second
                    let burst = ((ph.burst as f64 * spec.burst).round() as u32).max(1);
                    let mut done = 0u64;
                    let mut off = match ph.pattern {
                        SeqRead => hdfs.0 + rng.gen_range(0..n_chunks.max(1)) * chunk,
                        SeqWrite => {
                            let o = out_next;
                            out_next += total.div_ceil(8) * 8;
                            if out_next > span {
                                out_next = local.1;
                            }
                            o
                        }
                        _ => 0,
                    };
                    while done < total {
                        for _ in 0..burst {
                            if done >= total {
                                break;
                            }
                            let size = if ph.req_kb.0 == ph.req_kb.1 {
                                ph.req_kb.0 * KB
                            } else {
                                rng.gen_range(ph.req_kb.0 / 4..=ph.req_kb.1 / 4) * 4 * KB
                            };
                            let size = size.min(total - done).max(1);
                            let (op, sector) = match ph.pattern {
                                SeqRead | SeqWrite => {
                                    let s = off;
                                    off += size;
                                    (
                                        if matches!(ph.pattern, SeqRead) {
                                            Op::Read
                                        } else {
                                            Op::Write
                                        },
                                        s,
                                    )
                                }
                                RandWrite => (
                                    Op::Write,
                                    spill + rng.gen_range(0..(spill_area - size) / 8) * 8,
                                ),
                                RandRead => {
                                    let area = if spill_areas.is_empty() {
                                        spill
                                    } else {
                                        spill_areas[rng.gen_range(0..spill_areas.len())]
                                    };
                                    (
                                        Op::Read,
                                        area + rng.gen_range(0..(spill_area - size) / 8) * 8,
                                    )
                                }
                            };
                            recs.push(Rec {
                                t,
                                pid,
                                op,
                                sector: sector.min(span - size),
                                sectors: size as u32,
                                role: role.name,
                            });
                            done += size;
                        }
                        let burst_sectors = burst as f64 * ph.req_kb.1 as f64 * KB as f64;
                        t += (burst_sectors / rate * SEC as f64) as u64;
                    }
                }
                if primary {
                    if let Some(f) = slot_free.iter_mut().min() {
                        *f = t;
                    }
                }
                if pass {
                    maps_end = maps_end.max(t);
                }
            }
        }
    }
    recs.sort_by_key(|r| (r.t, r.pid));
    Ok(recs)
}

/// The trace as blkparse's default text: one `Q` line per request, with the
/// task's PID and its role as the command.
pub fn blkparse_text(recs: &[Rec]) -> String {
    let mut s = String::with_capacity(recs.len() * 64);
    for (i, r) in recs.iter().enumerate() {
        let _ = writeln!(
            s,
            "  8,0    0 {:>8} {:>5}.{:09} {:>5}  Q {:>3} {} + {} [{}]",
            i + 1,
            r.t / SEC,
            r.t % SEC,
            r.pid,
            if r.op == Op::Read { "R" } else { "W" },
            r.sector,
            r.sectors,
            r.role
        );
    }
    s
}

/// What a generated trace holds, for the report: requests and MiB by
/// direction, processes, and the span of arrival times.
pub fn summary(recs: &[Rec]) -> serde_json::Value {
    let mut n = [0u64; 2];
    let mut sectors = [0u64; 2];
    let mut pids = std::collections::BTreeSet::new();
    for r in recs {
        n[r.op.idx()] += 1;
        sectors[r.op.idx()] += r.sectors as u64;
        pids.insert(r.pid);
    }
    serde_json::json!({
        "requests": n[0] + n[1],
        "reads": n[0], "writes": n[1],
        "read_mib": sectors[0] as f64 / MB as f64,
        "write_mib": sectors[1] as f64 / MB as f64,
        "processes": pids.len(),
        "arrival_span_s": recs.last().map_or(0.0, |r| r.t as f64 / 1e9),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(w: &str) -> Spec {
        Spec::from_params(
            &Params::parse_kv(&format!("workload={w}")).unwrap(),
            488_448_000,
            1,
        )
        .unwrap()
    }

    #[test]
    fn every_workload_generates_in_time_order_within_the_span() {
        for w in names() {
            let s = spec(w);
            let r = generate(&s).unwrap();
            assert!(!r.is_empty(), "{w}");
            assert!(r.windows(2).all(|p| p[0].t <= p[1].t), "{w}");
            assert!(
                r.iter()
                    .all(|x| x.sector + x.sectors as u64 <= s.span_sectors),
                "{w}"
            );
            // Deterministic.
            assert_eq!(r, generate(&s).unwrap(), "{w}");
        }
    }

    #[test]
    fn table2_characterisations_hold() {
        let mib = |w: &str| {
            let r = generate(&spec(w)).unwrap();
            let s = summary(&r);
            (
                s["read_mib"].as_f64().unwrap(),
                s["write_mib"].as_f64().unwrap(),
            )
        };
        let (r, w) = mib("grep");
        assert!(r > 50.0 * w, "grep: mostly reads ({r} / {w})");
        let (r, w) = mib("randomtextwriter");
        assert!(w > 100.0 * r, "rtw: negligible reads ({r} / {w})");
        let (r, w) = mib("sort");
        assert!(r > w, "sort: more reads than writes ({r} / {w})");
        let (r, w) = mib("terasort");
        assert!(r > w, "terasort: more reads than writes ({r} / {w})");
        let (r, w) = mib("wordstddev");
        assert!(r > 50.0 * w, "wordstddev: mostly reads ({r} / {w})");
    }

    #[test]
    fn bad_options_are_named() {
        let e = Spec::from_params(&Params::parse_kv("workload=x,bogus=1").unwrap(), 1 << 30, 1)
            .err()
            .unwrap();
        assert!(format!("{e:#}").contains("bogus"));
        let s = Spec::from_params(&Params::parse_kv("workload=nope").unwrap(), 1 << 30, 1);
        assert!(s.is_ok());
        let e = generate(&s.unwrap()).err().unwrap();
        assert!(format!("{e:#}").contains("terasort"), "{e:#}");
        let e = Spec::from_params(&Params::parse_kv("maps=2").unwrap(), 1 << 30, 1)
            .err()
            .unwrap();
        assert!(format!("{e:#}").contains("workload"));
    }
}
