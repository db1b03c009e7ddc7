//! The engine's work stays proportional to the I/O: for every scheduler on
//! every device preset, a 70/30 random mix (buffered writes, and direct ones)
//! run past the flash models' garbage-collection onset costs at most
//! [`EVENTS_PER_BIO`] events per completed bio.
//!
//! A scheduler that cannot dispatch and asks for a timer in the past (or
//! now) makes the engine step by a nanosecond: the run livelocks (veloces's
//! model once did, under its write backlog on an SSD past its first erases:
//! 587 M timer events for 808 k bios). Every such wait must instead end on
//! an event that changes something (a completion, an arrival, a timer in
//! the future).
//!
//! The flash models are made small and preconditioned full, so every write
//! is past GC onset from the first; the HDD presets are in for completeness
//! (no GC). A run that passes the bound is stopped there (the engine's
//! own interrupt flag, set from its progress callback), so a regression fails in
//! seconds rather than hanging.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use vsim::config::{Component, Config, ConfigFile};
use vsim::{device, report, sched};

/// The bound: a bio costs a submission (or its task's wake), a completion
/// and a reap, a few dispatch timers and device-internal events; measured at
/// most 4.0 across this matrix on the flash models (`PROPS_DEBUG=1` prints
/// each cell). The storm this guards against was ~700.
const EVENTS_PER_BIO: f64 = 16.0;

/// The bound on a device that reorders its queue (the HDD models' command
/// queueing): each decision looks again at every command it holds
/// (`Device::recheck`), so up to its queue depth more per bio; measured 24.8
/// for noop's buffered mix on `modern_7200` (depth 32).
fn bound(dev: &str) -> f64 {
    let c = Component::parse(dev).expect("device spec");
    let d = device::make(&c.name, &c.params, 1).expect("device");
    let reorders = c.name == "hdd";
    EVENTS_PER_BIO
        + if reorders {
            d.info().queue_depth as f64
        } else {
            0.0
        }
}

/// Bios per run: 4 jobs x this many I/Os.
const IOS_PER_JOB: u64 = 1000;

/// Every preset of a device model, as `model:preset=<p>` plus `extra`.
fn presets(model: &str, extra: &str) -> Vec<String> {
    let opts = device::options(model).expect("a registered model");
    let preset = opts
        .iter()
        .find(|o| o.name == "preset")
        .expect("the model has presets");
    preset
        .range
        .split('|')
        .map(|p| format!("{model}:preset={p}{extra}"))
        .collect()
}

fn devices() -> Vec<String> {
    let mut d = presets("ssd", ",blocks_per_plane=16,op=0.25,precondition=full");
    d.extend(presets(
        "cheapflash",
        ",size=256m,op=0.25,precondition=full",
    ));
    d.extend(presets("hdd", ""));
    d
}

fn workload(direct: bool) -> String {
    format!(
        "[[job]]\nname = \"mix\"\nrw = \"randrw\"\nrwmixread = 70\nbs = \"4k\"\niodepth = 16\n\
         numjobs = 4\nsize = \"32m\"\nnumber_ios = {IOS_PER_JOB}\ndirect = {}\n",
        u8::from(direct)
    )
}

/// Events per completed bio of one cell, or the error (a run stopped at the bound).
fn cell(dir: &std::path::Path, dev: &str, sched_name: &str, direct: bool) -> (f64, u64) {
    let limit = bound(dev);
    let path = dir.join(format!("mix-{}.toml", u8::from(direct)));
    std::fs::write(&path, workload(direct)).expect("temp file");
    let file = ConfigFile::load(&path).expect("the workload loads");
    let mut cfg =
        Config::from_file(file, Some(Component::parse(dev).expect("device spec"))).expect("config");
    cfg.scheduler = Component::parse(sched_name).expect("scheduler");
    let mut sim = cfg.build().expect("builds");
    let over = Arc::new(AtomicBool::new(false));
    sim.interrupt = Some(over.clone());
    // Stop a run whose events outgrow the bound well past any start-up
    // transient: it would otherwise run for hours.
    let seen = Arc::new(AtomicU64::new(0));
    let (o, s) = (over.clone(), seen.clone());
    let mut events = 0u64;
    let progress: vsim::engine::ProgressFn = Box::new(move |p| {
        events += 0x4000;
        s.store(events, Relaxed);
        if events as f64 > 4.0 * limit * (p.bios as f64 + 4096.0) {
            o.store(true, Relaxed);
        }
    });
    let r = report::run_built(&cfg, sim, Some(progress), (std::time::Instant::now(), 0));
    if over.load(Relaxed) {
        panic!(
            "{sched_name} on {dev} (direct={direct}): over {limit} events per bio \
             ({} events by the stop: {})",
            seen.load(Relaxed),
            r.err().map(|e| format!("{e:#}")).unwrap_or_default()
        );
    }
    let r = r.unwrap_or_else(|e| panic!("{sched_name} on {dev}: {e:#}"));
    let done = r.outcome.balance.completed;
    assert!(
        done >= 4 * IOS_PER_JOB,
        "{sched_name} on {dev} (direct={direct}): {done} bios completed"
    );
    (r.outcome.events as f64 / done as f64, done)
}

#[test]
fn events_per_bio_stay_bounded_for_every_scheduler_and_device() {
    let dir = std::env::temp_dir().join(format!("vsim-events-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let mut worst = (0.0, String::new());
    let mut cells = 0;
    for dev in devices() {
        for name in sched::names() {
            for direct in [false, true] {
                let (per_bio, done) = cell(&dir, &dev, name, direct);
                let limit = bound(&dev);
                cells += 1;
                if std::env::var_os("PROPS_DEBUG").is_some() {
                    eprintln!(
                        "{name:>16} {dev:<55} direct={direct:<5} {per_bio:6.2} ({done} bios)"
                    );
                }
                assert!(
                    per_bio <= limit,
                    "{name} on {dev} (direct={direct}): {per_bio:.1} events per bio (bound {limit})"
                );
                if per_bio > worst.0 {
                    worst = (per_bio, format!("{name} on {dev}, direct={direct}"));
                }
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    eprintln!(
        "{cells} cells; most events per bio {:.2} ({})",
        worst.0, worst.1
    );
}
