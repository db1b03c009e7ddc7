//! The progress display: fed by the engine as the run advances, and never
//! written where results go (stdout, files) nor on a stderr that is not a
//! terminal.

use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use vsim::config::{Component, Config, Workload};
use vsim::engine::BlockConfig;
use vsim::params::Params;
use vsim::report;

#[test]
fn progress_follows_simulated_time() {
    let c = Config {
        seed: 1,
        runtime: 2_000_000_000,
        interval: 0,
        block: BlockConfig::default(),
        device: Component::parse("fixed:service_us=10,queue_depth=8").unwrap(),
        scheduler: Component::parse("noop").unwrap(),
        tiers: Vec::new(),
        placement: None,
        workload: Workload {
            jobs: vec![Params::parse_kv("rw=randread,iodepth=8").unwrap()],
            ..Workload::default()
        },
    };
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    let r = report::run_with_progress(
        &c,
        Some(Box::new(move |p| {
            s.lock().unwrap().push((p.now, p.runtime, p.bios))
        })),
    )
    .unwrap();
    let seen = seen.lock().unwrap();
    assert!(seen.len() > 10, "{} calls", seen.len());
    assert!(seen
        .windows(2)
        .all(|w| w[0].0 <= w[1].0 && w[0].2 <= w[1].2));
    assert!(seen.iter().all(|p| p.1 == 2_000_000_000 && p.0 <= p.1));
    assert!(seen.last().unwrap().2 <= r.outcome.bios);
}

#[test]
fn no_progress_on_a_pipe() {
    // Over a second of wall time, stderr a pipe: nothing but the results.
    let dir = std::env::temp_dir().join(format!("vsim-progress-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cfg = dir.join("long.toml");
    std::fs::write(
        &cfg,
        "[device]\nmodel = \"fixed\"\nservice_us = \"1\"\nqueue_depth = 32\n\
         [[job]]\nrw = \"randread\"\niodepth = 32\nnumber_ios = 8000000\n",
    )
    .unwrap();
    let t0 = std::time::Instant::now();
    let o = Command::new(env!("CARGO_BIN_EXE_vsim"))
        .arg("run")
        .arg(&cfg)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(o.status.success());
    let wall = t0.elapsed().as_secs_f64();
    assert_eq!(
        String::from_utf8_lossy(&o.stderr),
        "",
        "stderr after {wall:.1} s"
    );
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(!out.contains("I/Os") && !out.contains('\r'), "{out}");
    std::fs::remove_dir_all(&dir).ok();
}

/// Where the total is known without a runtime (a job's `number_ios`, a
/// trace file's size) the progress says the share done, for a percentage
/// and an ETA; it grows to at most 1.
#[test]
fn progress_knows_the_share_done_from_number_ios_and_trace_size() {
    let dir = std::env::temp_dir().join(format!("vsim-progress-frac-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let trace = dir.join("t.csv");
    let mut text = String::new();
    for i in 0..200_000u64 {
        text.push_str(&format!(
            "{},h,0,Read,{},4096,100\n",
            i * 100,
            (i % 1000) * 4096
        ));
    }
    std::fs::write(&trace, text).unwrap();
    let mut tp = Params::new();
    tp.set("path", trace.to_str().unwrap());
    tp.set("format", "msr");
    for workload in [
        Workload {
            jobs: vec![Params::parse_kv("rw=randread,iodepth=8,number_ios=200000").unwrap()],
            ..Workload::default()
        },
        Workload {
            traces: vec![tp],
            ..Workload::default()
        },
    ] {
        let c = Config {
            seed: 1,
            runtime: 0,
            interval: 0,
            block: BlockConfig::default(),
            device: Component::parse("fixed:service_us=1,queue_depth=8,servers=8").unwrap(),
            scheduler: Component::parse("noop").unwrap(),
            tiers: Vec::new(),
            placement: None,
            workload,
        };
        let seen = Arc::new(Mutex::new(Vec::new()));
        let s = seen.clone();
        report::run_with_progress(
            &c,
            Some(Box::new(move |p| s.lock().unwrap().push(p.fraction))),
        )
        .unwrap();
        let seen = seen.lock().unwrap();
        assert!(seen.len() > 5, "{} calls", seen.len());
        let f: Vec<f64> = seen.iter().map(|f| f.expect("share known")).collect();
        assert!(f.windows(2).all(|w| w[0] <= w[1]) && f.iter().all(|&x| (0.0..=1.0).contains(&x)));
        assert!(f[0] < 0.5 && *f.last().unwrap() > 0.5, "{f:?}");
    }
    std::fs::remove_dir_all(&dir).ok();
}
