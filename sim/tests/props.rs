//! Property tests over the input paths: the trace parsers (every format, with
//! and without `skip_bad`, through a replay and through the engine), the fio
//! job-file parser, the configuration loader and the option parsers.
//!
//! Inputs mix well-formed records with hostile fields (u64::MAX, 2^64-ish
//! sectors, 1.8e10 s, NaN, lists, signs, binary bytes). Properties: no panic;
//! no hang (no case of a test may run past a wall-clock limit, and replays
//! run under a bounded number of polls); memory proportional to the input (the trace
//! reader's footprint, records and time-series points bounded by the lines
//! read). Case counts keep the whole file at a few seconds in release mode;
//! `PROPTEST_CASES` raises them for a longer search; `PROPS_DEBUG=1` prints
//! what each generated run ended with (to see what the generators reach).

use proptest::prelude::*;
use proptest::test_runner::{Config as PtConfig, TestCaseError, TestRunner};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{mpsc, Arc};
use std::time::Duration;
use vsim::config::Config;
use vsim::engine::{BlockConfig, RunConfig, Sim};
use vsim::params::{parse_size, parse_time, parse_u64, Params};
use vsim::workload::job::{Job, JobSpec};
use vsim::workload::trace::{self, TraceSource};
use vsim::workload::{fiofile, Next, Source};
use vsim::{device, report, sched};

/// Wall-clock limit of one case of a property test: a property fails as a hang
/// when no case (shrinking's included) has finished for this long. Not a limit on
/// all its cases: on a loaded machine (make test's guests beside it) a 256-case
/// property once took over 120 s while every case finished, and was failed as hung.
const LIMIT_S: u64 = 120;

/// A counter shared with a property, to assert that the generated inputs
/// reach the code under test (not only its first error).
fn counter() -> (Arc<AtomicU64>, Arc<AtomicU64>) {
    let c = Arc::new(AtomicU64::new(0));
    (c.clone(), c)
}

/// At least `pct` % of `n` cases counted (at the default case count).
fn assert_reached(what: &str, got: &AtomicU64, n: u32, pct: u64) {
    let got = got.load(Relaxed);
    eprintln!("{what}: {got} of {} cases", cases(n));
    assert!(
        got * 100 >= cases(n) as u64 * pct,
        "{what}: only {got} of {} cases",
        cases(n)
    );
}

pub(crate) fn cases(n: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(n)
}

/// Run a property on its own thread, failing it as a hang when no case has
/// finished for [`LIMIT_S`]; the strategy is built there (strategies need not
/// be `Send`).
pub(crate) fn check<S, F>(n: u32, strat: impl FnOnce() -> S + Send + 'static, test: F)
where
    S: Strategy,
    S::Value: std::fmt::Debug,
    F: Fn(S::Value) -> Result<(), TestCaseError> + Send + 'static,
{
    let (tx, rx) = mpsc::channel();
    let (finished, beat) = counter();
    let test = move |v: S::Value| {
        let r = test(v);
        beat.fetch_add(1, Relaxed);
        r
    };
    std::thread::spawn(move || {
        let mut runner = TestRunner::new(PtConfig {
            cases: cases(n),
            failure_persistence: None,
            max_shrink_iters: 512,
            ..PtConfig::default()
        });
        let r = runner.run(&strat(), test).map_err(|e| e.to_string());
        let _ = tx.send(r);
    });
    let mut seen = 0;
    loop {
        match rx.recv_timeout(Duration::from_secs(LIMIT_S)) {
            Ok(Ok(())) => return,
            Ok(Err(e)) => panic!("{e}"),
            Err(mpsc::RecvTimeoutError::Timeout) => {
                let now = finished.load(Relaxed);
                assert!(
                    now > seen,
                    "no case finished within {LIMIT_S} s ({now} cases before it): a hang"
                );
                seen = now;
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => panic!("the property runner panicked"),
        }
    }
}

// ------------------------------------------------------------ generators

/// An unsigned number as text: mostly small, sometimes at the edges.
fn num() -> impl Strategy<Value = String> {
    prop_oneof![
        12 => (0u64..5000).prop_map(|n| n.to_string()),
        1 => any::<u64>().prop_map(|n| n.to_string()),
        1 => Just(u64::MAX.to_string()),
        1 => Just("18446744073709551612".to_string()),
        1 => Just("18446744073709551616".to_string()),
        1 => Just((1u64 << 63).to_string()),
    ]
}

/// A field that may be anything: mostly a number, else a float form or junk.
fn field() -> impl Strategy<Value = String> {
    prop_oneof![
        20 => num(),
        1 => Just("-1".to_string()),
        1 => Just("nan".to_string()),
        1 => Just("1e30".to_string()),
        1 => Just("".to_string()),
        1 => "[a-zA-Z+,.\\[\\]]{0,6}",
    ]
}

/// Seconds as blkparse/SPC write them, up to the 1.8e10 s limit and past it.
fn secs() -> impl Strategy<Value = String> {
    prop_oneof![
        10 => (0u64..100, 0u64..1_000_000_000).prop_map(|(s, n)| format!("{s}.{n:09}")),
        1 => Just("17999999999.999999999".to_string()),
        1 => Just("18446744073.709551615".to_string()),
        1 => Just("1e-3".to_string()),
        1 => Just("1.8e10".to_string()),
        1 => field(),
    ]
}

fn blkparse_line() -> impl Strategy<Value = String> {
    (
        prop_oneof![Just("8,0".to_string()), Just("8,16".to_string()), field()],
        num(),
        secs(),
        num(),
        prop_oneof![Just("Q"), Just("D"), Just("C"), Just("G"), Just("X")],
        prop_oneof![
            Just("R"),
            Just("WS"),
            Just("W"),
            Just("FWS"),
            Just("D"),
            Just("N"),
            Just("r")
        ],
        field(),
        prop_oneof![Just("+"), Just("-")],
        field(),
    )
        .prop_map(|(dev, seq, ts, pid, a, rwbs, sec, plus, n)| {
            format!("{dev} 0 {seq} {ts} {pid} {a} {rwbs} {sec} {plus} {n} [x]")
        })
}

fn iolog_line(v3: bool) -> impl Strategy<Value = String> {
    (
        num(),
        prop_oneof![
            4 => Just("read"),
            4 => Just("write"),
            1 => Just("trim"),
            1 => Just("sync"),
            1 => Just("wait"),
            1 => Just("open"),
            1 => Just("add"),
            1 => Just("bogus")
        ],
        field(),
        field(),
        prop_oneof![1 => 0usize..2, 6 => Just(2usize), 1 => Just(3usize)],
    )
        .prop_map(move |(t, a, off, len, n)| {
            let tail = [off.as_str(), len.as_str(), "9"][..n].join(" ");
            if v3 {
                format!("{t} /dev/sdb {a} {tail}")
            } else {
                format!("/dev/sdb {a} {tail}")
            }
        })
}

fn msr_line() -> impl Strategy<Value = String> {
    (
        num(),
        prop_oneof![Just("Read"), Just("Write"), Just("x")],
        field(),
        field(),
        5usize..9,
    )
        .prop_map(|(t, op, off, len, nf)| {
            let f = [
                t.as_str(),
                "hm",
                "0",
                op,
                off.as_str(),
                len.as_str(),
                "100",
                "9",
            ];
            f[..nf.min(f.len())].join(",")
        })
}

fn spc_line() -> impl Strategy<Value = String> {
    (
        field(),
        field(),
        field(),
        prop_oneof![Just("r"), Just("W"), Just("q")],
        secs(),
    )
        .prop_map(|(asu, lba, size, op, ts)| format!("{asu},{lba},{size},{op},{ts}"))
}

/// A trace: an optional header, lines of one format (or of all), possibly
/// some raw bytes (binary, overlong).
fn trace_input() -> impl Strategy<Value = Vec<u8>> {
    let lines = prop_oneof![
        prop::collection::vec(blkparse_line(), 0..40),
        prop::collection::vec(iolog_line(false), 0..40).prop_map(|mut v| {
            v.insert(0, "fio version 2 iolog".into());
            v
        }),
        prop::collection::vec(iolog_line(true), 0..40).prop_map(|mut v| {
            v.insert(0, "fio version 3 iolog".into());
            v
        }),
        prop::collection::vec(msr_line(), 0..40),
        prop::collection::vec(spc_line(), 0..40),
        prop::collection::vec(
            prop_oneof![blkparse_line(), iolog_line(true), msr_line(), spc_line()],
            0..40
        ),
    ];
    (
        lines,
        prop::collection::vec(any::<u8>(), 0..64),
        prop_oneof![6 => Just(0usize), 1 => Just(1usize), 1 => Just(2usize)],
        prop::bool::ANY,
    )
        .prop_map(|(lines, raw, where_, crlf)| {
            let mut text = lines.join(if crlf { "\r\n" } else { "\n" }).into_bytes();
            text.push(b'\n');
            match where_ {
                0 => {}
                1 => text.extend_from_slice(&raw),
                _ => {
                    let mut t = raw;
                    t.extend_from_slice(&text);
                    text = t;
                }
            }
            text
        })
}

// ------------------------------------------------------------ traces

const DEV: u64 = 1 << 21;
const FORMATS: &[&str] = &["auto", "blkparse", "iolog", "msr", "spc"];

fn source(input: &[u8], format: &str, extra: &str) -> anyhow::Result<TraceSource> {
    let mut p = Params::parse_kv(extra)?;
    p.set("format", format);
    TraceSource::from_reader(
        &p,
        "t",
        0,
        "t.trace",
        trace::reader_from_bytes(input.to_vec()),
        DEV,
        1,
    )
}

/// Replay on an ideal device; at most `limit` polls.
fn replay(s: &mut TraceSource, limit: usize) -> Result<anyhow::Result<u64>, TestCaseError> {
    let mut out = Vec::new();
    let mut now = 0;
    let mut n = 0u64;
    for _ in 0..limit {
        out.clear();
        let next = match s.poll(now, &mut out) {
            Ok(x) => x,
            Err(e) => return Ok(Err(e)),
        };
        for b in &out {
            let end = b.sector.checked_add(b.sectors as u64);
            prop_assert!(b.sectors > 0 && end.is_some_and(|e| e <= DEV), "{b:?}");
            s.complete(b, now);
        }
        n += out.len() as u64;
        match next {
            Next::At(t) => {
                prop_assert!(t >= now, "wake-up in the past");
                now = t;
            }
            Next::Wait => prop_assert!(!out.is_empty() || s.inflight() > 0, "waits on nothing"),
            Next::Done => return Ok(Ok(n)),
        }
    }
    Err(TestCaseError::fail(format!("not done after {limit} polls")))
}

#[test]
fn trace_parsers_never_panic_hang_or_grow() {
    let (replayed, seen) = counter();
    check(1024, trace_input, move |input| {
        let lines = input.iter().filter(|&&b| b == b'\n').count() as u64 + 1;
        for format in FORMATS {
            for extra in ["", "skip_bad=1", "skip_bad=1,wrap=1,mode=closed,depth=4"] {
                let mut s = match source(&input, format, extra) {
                    Ok(s) => s,
                    Err(e) => {
                        let m = format!("{e:#}");
                        prop_assert!(m.starts_with("t.trace"), "{m}");
                        continue;
                    }
                };
                let r = replay(&mut s, 4 * lines as usize + 16)?;
                let st = s.stats();
                prop_assert!(st.records <= lines && st.lines <= lines);
                if let Ok(n) = r {
                    prop_assert_eq!(n, st.records);
                    if n > 0 && *format == "auto" && extra == "skip_bad=1" {
                        replayed.fetch_add(1, Relaxed);
                    }
                } else if let Err(e) = r {
                    let m = format!("{e:#}");
                    prop_assert!(m.starts_with("t.trace:"), "error without file:line: {}", m);
                }
                // Memory: proportional to the input, not to the trace's span.
                let fp = s.footprint();
                prop_assert!(
                    fp <= 4096 + 8 * input.len(),
                    "{} bytes for {}",
                    fp,
                    input.len()
                );
            }
        }
        Ok(())
    });
    assert_reached("traces replayed with records", &seen, 1024, 10);
}

#[test]
fn traces_through_the_engine_end_and_stay_small() {
    let (ran, seen) = counter();
    check(256, trace_input, move |input| {
        let lines = input.iter().filter(|&&b| b == b'\n').count() + 1;
        let Ok(s) = source(&input, "auto", "skip_bad=1") else {
            return Ok(());
        };
        let dev = device::make("fixed", &Params::parse_kv("service_us=1").unwrap(), 1).unwrap();
        let sch = sched::make("deadline", &Params::new(), &dev.info()).unwrap();
        let mut sim = Sim::new(BlockConfig::default(), RunConfig::default(), sch, dev);
        sim.add_source(Box::new(s), 0);
        let r = sim.run();
        if std::env::var_os("PROPS_DEBUG").is_some() {
            eprintln!(
                "{:?}",
                r.as_ref().map(|o| o.bios).map_err(|e| format!("{e:#}"))
            );
        }
        if let Ok(o) = r {
            let ios: u64 = o.jobs.iter().map(|j| j.ops[0].ios + j.ops[1].ios).sum();
            prop_assert!(ios <= lines as u64);
            prop_assert!(o.jobs[0].series.len() <= lines);
            if ios > 0 {
                ran.fetch_add(1, Relaxed);
            }
        }
        Ok(())
    });
    assert_reached("traces simulated with I/O", &seen, 256, 10);
}

// ------------------------------------------------------------ fio files

fn fio_value() -> impl Strategy<Value = String> {
    prop_oneof![
        field(),
        Just("4k".into()),
        Just("4k,8k".into()),
        Just("-4k".into()),
        Just("1e30k".into()),
        Just("16p".into()),
        Just("randrw".into()),
        Just("psync".into()),
        Just("libaio".into()),
        Just("zipf:1.2".into()),
        Just("pareto:0.5".into()),
        Just("zipf:nan".into()),
        Just("poisson".into()),
        Just("1h".into()),
        Just("inf".into()),
        Just("3e9".into()),
    ]
}

fn fio_line() -> impl Strategy<Value = String> {
    let keys = prop_oneof![
        Just("rw"),
        Just("bs"),
        Just("iodepth"),
        Just("numjobs"),
        Just("rwmixread"),
        Just("size"),
        Just("offset"),
        Just("offset_increment"),
        Just("io_size"),
        Just("number_ios"),
        Just("random_distribution"),
        Just("thinktime"),
        Just("rate_iops"),
        Just("rate_process"),
        Just("ioengine"),
        Just("runtime"),
        Just("ramp_time"),
        Just("open_loop"),
        Just("direct"),
        Just("bogus"),
    ];
    prop_oneof![
        6 => (keys, fio_value()).prop_map(|(k, v)| format!("{k}={v}")),
        1 => Just("[global]".to_string()),
        1 => "\\[[a-z]{1,4}\\]",
        1 => Just("time_based".to_string()),
        1 => "[ -~]{0,20}",
    ]
}

#[test]
fn fio_files_never_panic_and_jobs_stay_bounded() {
    let strat = || {
        prop::collection::vec(fio_line(), 0..24).prop_map(|mut v| {
            v.insert(0, "[job]".into());
            v.join("\n")
        })
    };
    let (built, seen) = counter();
    check(1024, strat, move |text| {
        let Ok(f) = fiofile::parse_str(&text, "j.fio") else {
            return Ok(());
        };
        prop_assert!(f.jobs.len() <= text.lines().count());
        prop_assert!(f.warnings.len() <= 1);
        for (name, p) in &f.jobs {
            let Ok(spec) = JobSpec::from_params(p, name, 1 << 30, f.time_based) else {
                continue;
            };
            prop_assert!(spec.iodepth >= 1 && spec.bs >= 512);
            for clone in 0..spec.numjobs.min(4) {
                let Ok(mut j) = Job::new(&spec, clone, 0, 1, 1 << 30) else {
                    continue;
                };
                if clone == 0 {
                    built.fetch_add(1, Relaxed);
                }
                // A few polls on an ideal device: each returns, bounded output.
                let mut out = Vec::new();
                let mut now = 0;
                for _ in 0..64 {
                    out.clear();
                    let next = j
                        .poll(now, &mut out)
                        .map_err(|e| TestCaseError::fail(e.to_string()))?;
                    prop_assert!(out.len() as u64 <= spec.iodepth as u64 + 1_000_000);
                    for b in &out {
                        j.complete(b, now);
                    }
                    match next {
                        Next::At(t) => now = t.max(now),
                        Next::Wait => now += 1,
                        Next::Done => break,
                    }
                }
            }
        }
        Ok(())
    });
    assert_reached("fio jobs built and polled", &seen, 1024, 10);
}

// ------------------------------------------------------------ configurations

/// A TOML value: mostly valid for the key, sometimes hostile.
fn toml_value(valid: &'static [&'static str]) -> impl Strategy<Value = String> {
    prop_oneof![
        30 => prop::sample::select(valid).prop_map(str::to_string),
        1 => Just("nan".to_string()),
        1 => Just("inf".to_string()),
        1 => Just("-1".to_string()),
        1 => Just("1e30".to_string()),
        1 => Just("0".to_string()),
        1 => fio_value().prop_map(|v| format!("{v:?}")),
        1 => Just("[1, 2]".to_string()),
    ]
}

/// `key = value` lines with distinct keys from `keys` (key, valid values).
fn table(
    keys: &'static [(&'static str, &'static [&'static str])],
    max: usize,
) -> impl Strategy<Value = String> {
    prop::collection::vec(
        (0..keys.len())
            .prop_flat_map(move |i| toml_value(keys[i].1).prop_map(move |v| (keys[i].0, v))),
        0..max,
    )
    .prop_map(|kv| {
        let mut seen = std::collections::BTreeMap::new();
        for (k, v) in kv {
            seen.insert(k, v);
        }
        seen.iter()
            .map(|(k, v)| format!("{k} = {v}"))
            .collect::<Vec<_>>()
            .join("\n")
    })
}

const TOP: &[(&str, &[&str])] = &[
    ("runtime", &["\"1ms\"", "\"100us\"", "0.001"]),
    ("ramp_time", &["\"50us\"", "0"]),
    ("interval", &["\"10us\"", "\"1ms\"", "0"]),
    ("seed", &["1", "7"]),
];

const DEV_OPTS: &[(&str, &[&str])] = &[
    ("service_us", &["10", "0.5", "\"20us\""]),
    ("read_us", &["5", "\"1ms\""]),
    ("per_sector_ns", &["1", "0"]),
    ("servers", &["1", "4"]),
    ("queue_depth", &["1", "8", "32"]),
    ("service", &["\"exp\"", "\"const\""]),
];

const JOB_OPTS: &[(&str, &[&str])] = &[
    (
        "rw",
        &["\"randrw\"", "\"read\"", "\"write\"", "\"randread\""],
    ),
    ("bs", &["\"4k\"", "\"64k\"", "512"]),
    ("iodepth", &["1", "8", "32"]),
    ("rate_iops", &["1000", "1e6"]),
    ("open_loop", &["1", "0"]),
    ("thinktime", &["\"10us\"", "0"]),
    ("size", &["\"64m\"", "\"1g\""]),
    ("offset", &["\"1m\"", "0"]),
    ("ioengine", &["\"psync\"", "\"libaio\""]),
    ("number_ios", &["100", "1000"]),
    ("random_distribution", &["\"zipf:1.2\"", "\"random\""]),
];

fn config_text() -> impl Strategy<Value = String> {
    let device = prop_oneof![
        4 => Just(("fixed", "")),
        2 => Just(("hdd", "")),
        2 => Just(("cheapflash", "size = \"64m\"\npages_per_block = 64")),
        2 => Just((
            "ssd",
            "channels = 1\ndies_per_channel = 1\nblocks_per_plane = 64\npages_per_block = 16"
        )),
        1 => Just(("bogus", "")),
    ];
    let sched = prop_oneof![
        3 => Just("noop"),
        3 => Just("deadline"),
        3 => Just("cfq"),
        3 => Just("veloces"),
        1 => Just("bogus")
    ];
    (
        table(TOP, 4),
        device,
        table(DEV_OPTS, 3),
        sched,
        prop::collection::vec(table(JOB_OPTS, 6), 0..3),
    )
        .prop_map(|(top, (model, fixed), dev_opts, sched, jobs)| {
            // Options of the fixed device only for it (others reject them).
            let dev_opts = if model == "fixed" {
                dev_opts
            } else {
                String::new()
            };
            let mut s = format!("{top}\n[device]\nmodel = \"{model}\"\n{fixed}\n{dev_opts}\n");
            s.push_str(&format!("[scheduler]\nname = \"{sched}\"\n"));
            for j in jobs {
                s.push_str(&format!("[[job]]\n{j}\n"));
            }
            s
        })
}

#[test]
fn config_loader_never_panics_and_runs_end() {
    let dir = std::env::temp_dir().join(format!("vsim-props-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (ran, seen) = counter();
    check(256, config_text, move |text| {
        let path = dir.join("c.toml");
        std::fs::write(&path, &text).unwrap();
        let mut cfg = match Config::load(&path) {
            Ok(c) => c,
            Err(e) => {
                if std::env::var_os("PROPS_DEBUG").is_some() {
                    eprintln!("load: {e:#}");
                }
                return Ok(());
            }
        };
        prop_assert!(cfg.workload.jobs.len() <= text.matches("[[job]]").count());
        // Short runs: what is tested is that a loaded configuration builds
        // and runs to an end (or an error), not the figures.
        cfg.runtime = 200_000;
        cfg.workload.ramp = cfg.workload.ramp.map(|r| r.min(100_000));
        for p in &mut cfg.workload.jobs {
            if !p.contains("number_ios") {
                p.set("number_ios", "2000");
            }
        }
        let r = report::run(&cfg);
        if std::env::var_os("PROPS_DEBUG").is_some() {
            eprintln!(
                "run: {:?}",
                r.as_ref()
                    .map(|r| r.outcome.bios)
                    .map_err(|e| format!("{e:#}"))
            );
        }
        if let Ok(r) = r {
            prop_assert!(r.outcome.elapsed <= 200_000);
            if r.outcome.bios > 0 {
                ran.fetch_add(1, Relaxed);
            }
        }
        Ok(())
    });
    assert_reached("configurations run with I/O", &seen, 256, 5);
}

// ------------------------------------------------------------ option parsers

#[test]
fn option_parsers_are_total_and_exact() {
    check(
        2048,
        || "[ -~]{0,12}",
        |s| {
            let _ = (parse_size(&s), parse_time(&s, 1000), parse_u64(&s));
            Ok(())
        },
    );
    check(
        1024,
        || (0u64..1 << 40, 0usize..5),
        |(n, unit)| {
            let (suf, mult) = [
                ("", 1u64),
                ("k", 1 << 10),
                ("m", 1 << 20),
                ("g", 1 << 30),
                ("t", 1 << 40),
            ][unit];
            let got = parse_size(&format!("{n}{suf}"));
            match n.checked_mul(mult) {
                Some(v) => prop_assert_eq!(got.ok(), Some(v)),
                None => prop_assert!(got.is_err()),
            }
            let (suf, mult) = [
                ("ns", 1u64),
                ("us", 1_000),
                ("ms", 1_000_000),
                ("s", 1_000_000_000),
                ("h", 3_600_000_000_000),
            ][unit];
            let got = parse_time(&format!("{n}{suf}"), 1);
            match n.checked_mul(mult) {
                // Exact below 2^53 ns (f64); beyond that, within one part in 2^52.
                Some(v) if v < 1 << 53 => prop_assert_eq!(got.ok(), Some(v)),
                Some(v) => {
                    let g = got.map_err(|e| TestCaseError::fail(e.to_string()))?;
                    prop_assert!((g as f64 - v as f64).abs() <= v as f64 / 4e15);
                }
                None => prop_assert!(got.is_err()),
            }
            Ok(())
        },
    );
}
