//! Hostile input: each case ends quickly, in bounded memory, with an error
//! that names the option or `file:line` (or runs correctly where the input
//! is valid). Cases that used to hang run under a time limit.

use std::io::Write as _;
use std::path::PathBuf;
use std::sync::mpsc;
use std::time::Duration;
use vsim::config::{Config, Workload};
use vsim::params::{parse_size, parse_time, Params};
use vsim::report;
use vsim::workload::job::JobSpec;
use vsim::workload::trace;
use vsim::workload::{Next, Source};

/// Run `f` on a thread; fail if it takes longer than `secs` (a hang).
fn within<T: Send + 'static>(secs: u64, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(Duration::from_secs(secs)) {
        Ok(v) => v,
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("no result within {secs} s: a hang"),
        Err(mpsc::RecvTimeoutError::Disconnected) => panic!("the case panicked"),
    }
}

/// A fresh directory for one test's files.
fn dir(test: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("vsim-hostile-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn write(d: &std::path::Path, name: &str, text: &str) -> PathBuf {
    let p = d.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn err_text<T>(r: anyhow::Result<T>) -> String {
    match r {
        Ok(_) => panic!("expected an error"),
        Err(e) => format!("{e:#}"),
    }
}

/// Load and run a configuration file (under a time limit).
fn run_file(p: PathBuf) -> anyhow::Result<report::RunReport> {
    within(60, move || report::run(&Config::load(&p)?))
}

#[test]
fn open_loop_rate_beyond_the_clock_is_rejected() {
    let kv =
        |rate: &str| Params::parse_kv(&format!("rw=read,open_loop=1,rate_iops={rate}")).unwrap();
    for rate in ["3e9", "1e12", "inf"] {
        let e = err_text(JobSpec::from_params(&kv(rate), "j", 1 << 30, true));
        assert!(e.contains("option 'rate_iops'"), "{rate}: {e}");
    }
    // The highest rate accepted runs and ends: 1 I/O per ns for 2 us.
    let d = dir("rate");
    let p = write(
        &d,
        "c.toml",
        "runtime = \"2us\"\n[device]\nmodel = \"fixed\"\nservice_us = 0.001\nservers = 64\nqueue_depth = 64\n\
         [[job]]\nrw = \"read\"\nopen_loop = 1\nrate_iops = 1e9\n",
    );
    let r = run_file(p).unwrap();
    assert!(
        (1900..=2001).contains(&r.outcome.bios),
        "{}",
        r.outcome.bios
    );
}

#[test]
fn zero_service_time_is_rejected_and_one_ns_runs() {
    let d = dir("svc");
    for (opt, want) in [
        ("service_us = 0", "option 'service_us'"),
        ("read_us = 0", "option 'read_us'"),
        ("service_us = \"0ns\"\nwrite_us = 5", "option 'service_us'"),
    ] {
        let p = write(
            &d,
            "c.toml",
            &format!(
                "runtime = \"1ms\"\n[device]\nmodel = \"fixed\"\n{opt}\n[[job]]\nrw = \"read\"\n"
            ),
        );
        let e = err_text(run_file(p));
        assert!(
            e.contains(want) && e.contains("at least 1 ns"),
            "{opt}: {e}"
        );
    }
    let p = write(
        &d,
        "c.toml",
        "runtime = \"10us\"\n[device]\nmodel = \"fixed\"\nservice_us = 0.001\n[[job]]\nrw = \"read\"\n",
    );
    let r = run_file(p).unwrap();
    assert_eq!(r.total(0).ios, 10_000);
}

#[test]
fn runtime_nan_and_huge_are_errors_naming_the_option() {
    for bad in ["nan", "1e30s", "inf", "-1s", "1e30"] {
        assert!(parse_time(bad, 1_000_000_000).is_err(), "{bad}");
    }
    assert_eq!(parse_time("2h", 1).unwrap(), 7200 * 1_000_000_000);
    let d = dir("runtime");
    for (v, want) in [
        ("\"nan\"", "not a time"),
        ("\"1e30s\"", "too large"),
        ("nan", "not a time"),
        ("inf", "too large"),
        ("1e30", "too large"),
    ] {
        let p = write(
            &d,
            "c.toml",
            &format!("runtime = {v}\n[device]\nmodel = \"fixed\"\n[[job]]\nrw = \"read\"\n"),
        );
        let e = err_text(Config::load(&p));
        assert!(
            e.contains("option 'runtime'") && e.contains(want),
            "{v}: {e}"
        );
    }
    let p = write(&d, "w.fio", "[a]\nruntime=nan\ntime_based\n");
    let e = err_text(Workload::load(&p));
    assert!(e.contains("w.fio:2: option 'runtime'"), "{e}");
}

#[test]
fn dev_zero_trace_is_an_error_not_an_unbounded_read() {
    let e = within(20, || {
        let mut p = Params::new();
        p.set("path", "/dev/zero");
        err_text(trace::open(&p, "t", 0, 1 << 21, 1))
    });
    assert!(e.contains("/dev/zero: not a regular file"), "{e}");
    // The same for a configuration file.
    let e = within(20, || {
        err_text(Config::load(std::path::Path::new("/dev/zero")))
    });
    assert!(e.contains("/dev/zero: not a regular file"), "{e}");
}

#[test]
fn far_timestamps_keep_the_time_series_small() {
    let d = dir("far");
    write(
        &d,
        "t.blk",
        "8,0 0 1 0.000000000 1 Q R 0 + 8 [a]\n8,0 0 2 17999999999.000000000 1 Q R 8 + 8 [a]\n",
    );
    let p = write(
        &d,
        "c.toml",
        "[device]\nmodel = \"fixed\"\n[[trace]]\npath = \"t.blk\"\n",
    );
    let r = run_file(p).unwrap();
    assert_eq!(r.total(0).ios, 2);
    assert!(r.outcome.jobs[0].series.len() <= 2);
}

#[test]
fn month_long_msr_trace_keeps_the_time_series_bounded() {
    // 100,000 records, one every 26 s over a month: each in its own 100 ms
    // interval, as a dense series would hold 26 million.
    let d = dir("month");
    let mut f = std::io::BufWriter::new(std::fs::File::create(d.join("t.csv")).unwrap());
    let t0: u64 = 128_166_372_003_061_629;
    for i in 0..100_000u64 {
        writeln!(
            f,
            "{},h,0,Read,{},4096,100",
            t0 + i * 260_000_000,
            (i % 1000) * 4096
        )
        .unwrap();
    }
    drop(f);
    let p = write(
        &d,
        "c.toml",
        "[device]\nmodel = \"fixed\"\n[[trace]]\npath = \"t.csv\"\n",
    );
    let r = run_file(p).unwrap();
    assert_eq!(r.total(0).ios, 100_000);
    assert!(r.outcome.elapsed > 25 * 86_400 * 1_000_000_000);
    let n = r.outcome.jobs[0].series.len();
    assert!(n <= 1 << 15, "{n} points");
}

fn replay_err(text: &str) -> String {
    let src = trace::TraceSource::from_reader(
        &Params::new(),
        "t",
        0,
        "t.blk",
        trace::reader_from_bytes(text.as_bytes().to_vec()),
        1 << 21,
        1,
    );
    let mut s: Box<dyn Source> = match src {
        Ok(s) => Box::new(s),
        Err(e) => return format!("{e:#}"),
    };
    let mut out = Vec::new();
    let mut now = 0;
    for _ in 0..1000 {
        match s.poll(now, &mut out) {
            Err(e) => return format!("{e:#}"),
            Ok(Next::At(t)) => now = t,
            Ok(Next::Done) => break,
            Ok(Next::Wait) => {}
        }
    }
    panic!("no error; bios {:?}", out);
}

#[test]
fn sector_near_2_pow_64_is_an_error() {
    let e = replay_err("8,0 0 1 0.0 1 Q R 18446744073709551612 + 8 [a]\n");
    assert!(e.contains("t.blk:1:") && e.contains("overflows"), "{e}");
    // With wrap=1 too: the end of the request cannot be computed.
    let mut p = Params::new();
    p.set("wrap", "1");
    let mut s = trace::TraceSource::from_reader(
        &p,
        "t",
        0,
        "t.blk",
        trace::reader_from_bytes(b"8,0 0 1 0.0 1 Q R 18446744073709551612 + 8 [a]\n".to_vec()),
        1 << 21,
        1,
    )
    .unwrap();
    let e = err_text(s.poll(0, &mut Vec::new()));
    assert!(e.contains("overflows"), "{e}");
}

#[test]
fn random_binary_is_not_a_trace_of_any_known_format() {
    // Deterministic bytes with invalid UTF-8 on line 1.
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let bytes: Vec<u8> = (0..4000)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8 | 0x80
        })
        .collect();
    let d = dir("bin");
    std::fs::write(d.join("r.bin"), &bytes).unwrap();
    let mut p = Params::new();
    p.set("path", &d.join("r.bin").display().to_string());
    let e = err_text(trace::open(&p, "t", 0, 1 << 21, 1));
    assert!(
        e.contains("r.bin:1: not a trace of any known format"),
        "{e}"
    );
    // Text that fits no format: the first such line is named.
    let e = replay_err("\n\nhello world\n");
    assert!(
        e.contains("t.blk:3: not a trace of any known format"),
        "{e}"
    );
    assert!(replay_err("\n \n").contains("empty trace"));
}

#[test]
fn size_errors_name_the_option_and_the_line() {
    for bad in ["4k,8k", "-4k", "1e30k", "4k-8k", "nan"] {
        assert!(parse_size(bad).is_err(), "{bad}");
    }
    assert_eq!(parse_size("1.5m").unwrap(), 3 << 19);
    let d = dir("bs");
    for (v, line) in [("4k,8k", 3), ("-4k", 3)] {
        let p = write(&d, "j.fio", &format!("[global]\nrw=read\nbs={v}\n[a]\n"));
        let w = Workload::load(&p).unwrap();
        let e = err_text(JobSpec::from_params(&w.jobs[0], "a", 1 << 30, false));
        assert!(
            e.contains(&format!("j.fio:{line}: option 'bs'")) && e.contains(v),
            "{v}: {e}"
        );
        let p = write(
            &d,
            "c.toml",
            &format!("[device]\nmodel = \"fixed\"\n[[job]]\nbs = \"{v}\"\n"),
        );
        let e = err_text(run_file(p));
        assert!(e.contains("option 'bs'"), "{v}: {e}");
    }
    // Offsets whose sum overflows 64 bits.
    let p = Params::parse_kv("rw=read,numjobs=3,offset_increment=8388608t").unwrap();
    let spec = JobSpec::from_params(&p, "j", 1 << 30, true).unwrap();
    let e = err_text(vsim::workload::job::Job::new(&spec, 2, 0, 1, 1 << 30));
    assert!(e.contains("beyond the device"), "{e}");
}
