//! Inputs that were silently accepted or mis-reported (issue 38): duplicate
//! keys in a spec, trace times going backwards, an overload hidden by a
//! closed-loop job beside the open-loop one.

use std::path::PathBuf;
use vsim::config::{Component, Config};
use vsim::params::Params;
use vsim::report;

fn dir(test: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("vsim-inputs-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn write(d: &std::path::Path, name: &str, text: &str) -> PathBuf {
    let p = d.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn run(p: &std::path::Path) -> report::RunReport {
    report::run(&Config::load(p).unwrap()).unwrap()
}

#[test]
fn duplicate_key_in_a_spec_is_an_error() {
    let e = format!("{:#}", Component::parse("ssd:op=0.1,op=0.2").unwrap_err());
    assert!(
        e.contains("option 'op' is given twice (0.1 and 0.2)"),
        "{e}"
    );
    assert!(Params::parse_spec("a=1,b=1").is_ok());
    // Code composing defaults with options still overrides.
    assert_eq!(Params::parse_kv("a=1,a=2").unwrap().raw("a"), Some("2"));
}

const OPEN: &str = "runtime = \"1s\"\n[device]\nmodel = \"fixed\"\nservice_us = 100\n\
[[job]]\nname = \"open\"\nrw = \"randread\"\nrate_iops = 20000\nopen_loop = 1\nnumber_ios = 2000\n";

/// An open-loop burst at twice the device's rate is an overload, with or
/// without a closed-loop job running beside it.
#[test]
fn overload_is_reported_with_a_closed_loop_job_beside() {
    let d = dir("overload");
    let alone = run(&write(&d, "a.toml", OPEN));
    assert!(alone.outcome.balance.overload.is_some());
    let mixed = run(&write(
        &d,
        "m.toml",
        &format!("{OPEN}[[job]]\nname = \"closed\"\nrw = \"randread\"\niodepth = 1\n"),
    ));
    let o = mixed
        .outcome
        .balance
        .overload
        .as_ref()
        .expect("overload with the closed job");
    assert!(o.offered_iops > 1.5 * o.completed_iops, "{o:?}");
    assert!(mixed.table().contains("WARNING: overload"));
    // A closed-loop job alone is never an overload.
    let closed = run(&write(
        &d,
        "c.toml",
        "runtime = \"100ms\"\n[device]\nmodel = \"fixed\"\n[[job]]\nname = \"c\"\nrw = \"randread\"\niodepth = 64\n",
    ));
    assert!(closed.outcome.balance.overload.is_none());
}

/// Records timed before an earlier one are replayed at once: said after the
/// run with the first one's place, not silently.
#[test]
fn trace_times_going_backwards_are_a_warning() {
    let d = dir("backward");
    let t = write(
        &d,
        "t.csv",
        "300,h,0,Read,0,4096,100\n100,h,0,Read,8192,4096,100\n400,h,0,Read,16384,4096,100\n200,h,0,Read,0,4096,100\n",
    );
    let cfg = write(
        &d,
        "c.toml",
        &format!(
            "[device]\nmodel = \"fixed\"\n[[trace]]\npath = \"{}\"\nformat = \"msr\"\n",
            t.display()
        ),
    );
    let r = run(&cfg);
    let table = r.table();
    assert!(
        table.contains("2 record(s) go back in time")
            && table.contains("t.csv:2, at 0.000010 s after a record at 0.000030 s"),
        "{table}"
    );
    // In order: no warning.
    let t = write(
        &d,
        "u.csv",
        "100,h,0,Read,0,4096,100\n200,h,0,Read,8192,4096,100\n",
    );
    let cfg = write(
        &d,
        "u.toml",
        &format!(
            "[device]\nmodel = \"fixed\"\n[[trace]]\npath = \"{}\"\nformat = \"msr\"\n",
            t.display()
        ),
    );
    assert!(run(&cfg).outcome.source_warnings.is_empty());
}

/// fio's `size=N%`: that share of the device.
#[test]
fn size_as_a_percentage_of_the_device() {
    let spec = |kv: &str| {
        vsim::workload::job::JobSpec::from_params(
            &Params::parse_kv(kv).unwrap(),
            "j",
            1 << 30,
            false,
        )
    };
    assert_eq!(spec("rw=read,size=50%").unwrap().size, 1 << 29);
    assert_eq!(spec("rw=read,size=100%").unwrap().size, 1 << 30);
    for bad in ["size=0%", "size=150%", "size=x%"] {
        let e = format!("{:#}", spec(&format!("rw=read,{bad}")).unwrap_err());
        assert!(
            e.contains("option 'size'") && e.contains("not a percentage"),
            "{e}"
        );
    }
}

fn err_of<T>(r: anyhow::Result<T>) -> String {
    match r {
        Ok(_) => panic!("expected an error"),
        Err(e) => format!("{e:#}"),
    }
}

/// `rate_iops=inf` says it is not a finite number, not a 309-digit range.
#[test]
fn infinite_rate_is_said_in_few_words() {
    let p = Params::parse_kv("rw=read,rate_iops=inf").unwrap();
    let e = err_of(vsim::workload::job::JobSpec::from_params(
        &p,
        "j",
        1 << 30,
        true,
    ));
    assert!(
        e.contains("option 'rate_iops': 'inf' is not a finite number"),
        "{e}"
    );
    assert!(e.len() < 200, "{e}");
}

/// A bad RWBS field names the field, the value and the letter once.
#[test]
fn bad_rwbs_reads_as_one_sentence() {
    let d = dir("rwbs");
    let t = write(&d, "t.blk", "8,0 1 1 0.000 100 Q XYZ 0 + 8 [a]\n");
    let cfg = write(
        &d,
        "c.toml",
        &format!(
            "[device]\nmodel = \"fixed\"\n[[trace]]\npath = \"{}\"\nformat = \"blkparse\"\n",
            t.display()
        ),
    );
    let e = err_of(report::run(&Config::load(&cfg).unwrap()));
    assert!(
        e.contains("t.blk:1: field 7 (RWBS) 'XYZ': 'X' is not an operation"),
        "{e}"
    );
}

/// The *.fio hint is for files that read as fio job files, not for any
/// invalid TOML (a duplicate key).
#[test]
fn fio_hint_only_for_what_looks_like_a_job_file() {
    let d = dir("hint");
    let e = err_of(Config::load(&write(&d, "dup.toml", "seed = 1\nseed = 2\n")));
    assert!(e.contains("invalid TOML") && !e.contains("*.fio"), "{e}");
    let e = err_of(Config::load(&write(
        &d,
        "job.toml",
        "[global]\nrw=randread\n[a]\n",
    )));
    assert!(e.contains("a fio job file must be named *.fio"), "{e}");
}

/// rwmixread errors name file:line, as every other option's.
#[test]
fn rwmixread_errors_name_the_line() {
    let d = dir("rwmix");
    for (v, what) in [
        ("150", "150 is out of range 0..=100"),
        ("x", "'x' is not a non-negative integer"),
    ] {
        let f = write(
            &d,
            "m.fio",
            &format!("[global]\nrw=randrw\nrwmixread={v}\n[a]\n"),
        );
        let cfg = write(
            &d,
            "m.toml",
            "fio = \"m.fio\"\n[device]\nmodel = \"fixed\"\n",
        );
        let e = err_of(Config::load(&cfg).and_then(|c| report::run(&c)));
        assert!(
            e.contains(&format!("{}:3: option 'rwmixread': {what}", f.display())),
            "{e}"
        );
    }
}
