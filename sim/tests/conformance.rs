//! Every conformance scenario (../conformance) passes on the veloces model,
//! and the checker itself rejects wrong logs.

use std::path::Path;
use vsim::conformance::{check, load_dir, run_model, Issued};

fn dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../conformance")
}

#[test]
fn every_scenario_passes_on_the_model() {
    let scenarios = load_dir(&dir()).expect("scenarios load");
    assert!(
        scenarios.len() >= 20,
        "at least 20 scenarios, found {}",
        scenarios.len()
    );
    let mut failures = Vec::new();
    for s in &scenarios {
        let log = run_model(s, 0).expect("model runs");
        for e in check(s, &log, 0.0) {
            failures.push(format!("{}: {e}", s.path.display()));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn the_checker_rejects_a_wrong_order_and_late_issue() {
    let scenarios = load_dir(&dir()).unwrap();
    let s = scenarios
        .iter()
        .find(|s| s.path.ends_with("01-read-preference.toml"))
        .unwrap();
    let mut log = run_model(s, 0).unwrap();
    assert!(check(s, &log, 0.0).is_empty());
    log.swap(1, 2);
    assert!(!check(s, &log, 0.0).is_empty(), "a swapped order must fail");
    let s = scenarios
        .iter()
        .find(|s| s.path.ends_with("19-liveness-idle-queue.toml"))
        .unwrap();
    let late = vec![Issued {
        t_us: 2600.0,
        ids: vec!["W1".into()],
    }];
    assert!(
        !check(s, &late, 300.0).is_empty(),
        "issued 600 us late must fail with 300 us slack"
    );
    assert!(check(s, &late, 700.0).is_empty());
}

#[test]
fn bad_scenarios_are_rejected_with_the_file_named() {
    let d = std::env::temp_dir().join(format!("vsim-conf-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    let p = d.join("bad.toml");
    std::fs::write(
        &p,
        "name='x'\nrule='y'\nrequests=[{t=0,op='Q',sector=0,sectors=8,id='A'}]\n[device]\nservice_us=1\n[[expect]]\norder=['A']\n",
    )
    .unwrap();
    let e = format!("{:#}", load_dir(&d).unwrap_err());
    assert!(e.contains("bad.toml") && e.contains("op 'Q'"), "{e}");
    std::fs::write(&p, "name='x'\nrule='y'\nrequests=[{t=0,op='R',sector=0,sectors=8,id='A'}]\n[device]\nservice_us=1\n[[expect]]\norder=['B']\n").unwrap();
    let e = format!("{:#}", load_dir(&d).unwrap_err());
    assert!(e.contains("unknown request id 'B'"), "{e}");
    let _ = std::fs::remove_dir_all(&d);
}
