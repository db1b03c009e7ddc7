//! `vsim bench`: how fast the simulator is (simulated requests per second of
//! wall time on one core) and how much memory a long trace replay takes.
//! Figures are printed, not asserted.

use anyhow::{Context, Result};
use std::io::Write as _;
use std::time::Instant;
use vsim::config::{Component, Config, Workload};
use vsim::engine::BlockConfig;
use vsim::params::Params;
use vsim::report;

fn job(kv: &str) -> Result<Params> {
    Params::parse_kv(kv)
}

fn speed_case(name: &str, device: &str, sched: &str, job_kv: &str) -> Result<()> {
    let cfg = Config {
        seed: 1,
        runtime: 0,
        interval: 0,
        block: BlockConfig::default(),
        device: Component::parse(device)?,
        scheduler: Component::parse(sched)?,
        tiers: Vec::new(),
        placement: None,
        workload: Workload {
            jobs: vec![job(job_kv)?],
            traces: vec![],
            ..Workload::default()
        },
    };
    let r = report::run(&cfg).with_context(|| name.to_string())?;
    let wall = r.wall_s - r.setup_s;
    let n = r.outcome.bios;
    println!(
        "{name:<40} {n:>9} requests {wall:>6.2} s {:>6.2} M req/s  (set-up {:.2} s; simulated {:.1} s)",
        n as f64 / wall / 1e6,
        r.setup_s,
        r.outcome.elapsed as f64 / 1e9
    );
    Ok(())
}

/// Peak resident memory of this process so far (VmHWM), in KiB.
pub fn peak_rss_kib() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    s.lines()
        .find(|l| l.starts_with("VmHWM:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

pub fn run(requests: u64, trace_requests: u64) -> Result<()> {
    println!("vsim bench: one core (single-threaded engine), release build expected");
    let n = requests;
    let cases = [
        (
            "fixed + noop, 4 KiB randread QD32",
            "fixed:service_us=10,servers=32,queue_depth=32",
            "noop",
            format!("rw=randread,bs=4k,iodepth=32,number_ios={n}"),
        ),
        (
            "ssd(mlc) + noop, 4 KiB randread QD32",
            "ssd:preset=mlc_16g",
            "noop",
            format!("rw=randread,bs=4k,iodepth=32,number_ios={n}"),
        ),
        (
            "ssd(mlc) + veloces, 70/30 randrw QD32",
            "ssd:preset=mlc_16g",
            "veloces",
            format!("rw=randrw,rwmixread=70,bs=4k,iodepth=32,number_ios={n}"),
        ),
        (
            "ssd(tlc_nvme) + veloces, 70/30 randrw QD32",
            "ssd",
            "veloces",
            format!("rw=randrw,rwmixread=70,bs=4k,iodepth=32,number_ios={n}"),
        ),
    ];
    for (name, dev, sched, j) in cases {
        if let Err(e) = speed_case(name, dev, sched, &j) {
            println!("{name:<44} error: {e:#}");
        }
    }
    if trace_requests > 0 {
        memory_case(trace_requests)?;
    }
    Ok(())
}

/// Replay a generated SPC trace of `n` records in a child process and report
/// its peak memory: streaming keeps it bounded by requests in flight.
fn memory_case(n: u64) -> Result<()> {
    let dir = std::env::temp_dir().join(format!("vsim-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let trace = dir.join("bench.spc");
    {
        let f = std::fs::File::create(&trace)
            .with_context(|| format!("creating {}", trace.display()))?;
        let mut w = std::io::BufWriter::new(f);
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        for i in 0..n {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let lba = (x % (1 << 21)) * 8;
            let op = if x & 3 == 0 { 'w' } else { 'r' };
            writeln!(w, "0,{lba},4096,{op},{:.6}", i as f64 * 1e-5)?;
        }
    }
    let cfg = dir.join("bench.toml");
    std::fs::write(
        &cfg,
        format!(
            "[device]\nmodel = \"fixed\"\nservice_us = 5\nservers = 32\nqueue_depth = 32\nsize = \"8g\"\n[scheduler]\nname = \"noop\"\n[[trace]]\npath = \"{}\"\nformat = \"spc\"\nmode = \"closed\"\ndepth = 32\n",
            trace.display()
        ),
    )?;
    let exe = std::env::current_exe()?;
    let t0 = Instant::now();
    let out = std::process::Command::new(exe)
        .args(["run", &cfg.to_string_lossy()])
        .env("VSIM_PEAK_RSS", "1")
        .output()
        .context("running the trace replay child")?;
    let wall = t0.elapsed().as_secs_f64();
    let text = String::from_utf8_lossy(&out.stdout);
    let peak = text
        .lines()
        .find_map(|l| l.strip_prefix("peak_rss_kib "))
        .unwrap_or("?")
        .to_string();
    if out.status.success() {
        println!("trace replay, {n} SPC records (closed loop QD32)      peak RSS {peak} KiB, {wall:.2} s wall");
    } else {
        println!(
            "trace replay failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
