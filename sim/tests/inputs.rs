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
