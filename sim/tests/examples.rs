//! Every example under sim/examples/ loads and runs (shortened).

use std::path::Path;
use vsim::config::{Config, Workload};
use vsim::report;

#[test]
fn examples_load_and_run() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    let mut n = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_none_or(|x| x != "toml") {
            continue;
        }
        let text = std::fs::read_to_string(&p).unwrap();
        if text.contains("[device]") {
            let mut c = Config::load(&p).unwrap_or_else(|e| panic!("{}: {e:#}", p.display()));
            c.runtime = 20_000_000;
            let r = report::run(&c).unwrap_or_else(|e| panic!("{}: {e:#}", p.display()));
            assert!(r.outcome.bios > 0, "{}: no I/O", p.display());
        } else {
            let w = Workload::load(&p).unwrap_or_else(|e| panic!("{}: {e:#}", p.display()));
            assert!(!w.is_empty(), "{}", p.display());
        }
        n += 1;
    }
    assert!(n >= 4, "found {n} examples");
}
