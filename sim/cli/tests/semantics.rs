//! Workload semantics as fio has them: synchronous engines run at depth 1,
//! `ramp_time` leaves its I/Os out of the figures; and one file format for
//! `vsim run` and `vsim compare --workload`.

use std::path::{Path, PathBuf};
use std::process::Command;
use vsim::config::{Component, Config, ConfigFile, Workload};
use vsim::report;

fn dir(test: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("vsim-sem-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn write(d: &Path, name: &str, text: &str) -> PathBuf {
    let p = d.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

/// A workload file run on a fixed-latency device with 32 servers (so that
/// depth 32 would show 32x the IOPS of depth 1).
fn run_on_fixed(p: &Path) -> report::RunReport {
    let dev = Component::parse("fixed:service_us=100,servers=32,queue_depth=32").unwrap();
    let cfg = Config::from_file(ConfigFile::load(p).unwrap(), Some(dev)).unwrap();
    report::run(&cfg).unwrap()
}

fn iops(r: &report::RunReport) -> f64 {
    r.total(0).iops(r.outcome.elapsed)
}

#[test]
fn sync_engines_run_at_depth_one_as_fio() {
    let d = dir("psync");
    for engine in ["psync", "sync", "pvsync", "pvsync2", "vsync"] {
        let p = write(
            &d,
            "j.fio",
            &format!("[global]\nioengine={engine}\niodepth=32\nrw=randread\nruntime=100ms\ntime_based\n[a]\n[b]\n"),
        );
        let w = Workload::load(&p).unwrap();
        // Said once for the file, naming the line of iodepth and the jobs.
        assert_eq!(w.warnings.len(), 1, "{:?}", w.warnings);
        assert!(
            w.warnings[0].contains("j.fio:3: iodepth=32 is ignored")
                && w.warnings[0].contains("jobs a, b"),
            "{}",
            w.warnings[0]
        );
        let r = run_on_fixed(&p);
        // Depth 1 per job on a 100 us device: 1/S = 10,000 IOPS each.
        let per_job = iops(&r) / 2.0;
        assert!((per_job - 10_000.0).abs() < 20.0, "{engine}: {per_job}");
        assert!(r.total(0).pct(99.0) < 110_000, "{engine}: no queueing");
    }
    // fio's default engine is psync: no ioengine means depth 1 too.
    let p = write(
        &d,
        "j.fio",
        "[a]\niodepth=32\nrw=randread\nruntime=100ms\ntime_based\n",
    );
    assert!(Workload::load(&p).unwrap().warnings[0].contains("fio's default is psync"));
    assert!((iops(&run_on_fixed(&p)) - 10_000.0).abs() < 20.0);
    // An asynchronous engine keeps iodepth: 32 servers busy.
    let p = write(
        &d,
        "j.fio",
        "[a]\nioengine=libaio\niodepth=32\nrw=randread\nruntime=100ms\ntime_based\n",
    );
    assert!(Workload::load(&p).unwrap().warnings.is_empty());
    assert!((iops(&run_on_fixed(&p)) - 320_000.0).abs() < 700.0);
    // A vsim TOML job honours iodepth unless it names a synchronous engine.
    let p = write(
        &d,
        "w.toml",
        "runtime = \"100ms\"\n[[job]]\nrw = \"randread\"\niodepth = 32\n",
    );
    assert!((iops(&run_on_fixed(&p)) - 320_000.0).abs() < 700.0);
    let p = write(
        &d,
        "w.toml",
        "runtime = \"100ms\"\n[[job]]\nrw = \"randread\"\niodepth = 32\nioengine = \"psync\"\n",
    );
    assert_eq!(Workload::load(&p).unwrap().warnings.len(), 1);
    assert!((iops(&run_on_fixed(&p)) - 10_000.0).abs() < 20.0);
    // An engine vsim does not know is an error naming the line.
    let p = write(&d, "j.fio", "[a]\nioengine=rbd\n");
    let w = Workload::load(&p).unwrap();
    let e = vsim::workload::job::JobSpec::from_params(&w.jobs[0], "a", 1 << 30, false)
        .map(|_| ())
        .unwrap_err();
    assert!(
        format!("{e:#}").contains("j.fio:2: option 'ioengine'"),
        "{e:#}"
    );
}

#[test]
fn ramp_time_leaves_its_ios_out() {
    let d = dir("ramp");
    // Time based: the run lasts ramp + runtime; the figures cover runtime.
    let p = write(
        &d,
        "j.fio",
        "[a]\nioengine=psync\nrw=randread\nruntime=1\nramp_time=250ms\ntime_based\n",
    );
    let r = run_on_fixed(&p);
    assert_eq!(r.outcome.elapsed, 1_000_000_000);
    assert_eq!(r.total(0).ios, 10_000);
    assert!(r.outcome.bios >= 12_500, "{} bios", r.outcome.bios);
    assert_eq!(r.outcome.processes[0].1.ios[0], 10_000);
    assert!(
        (r.outcome.busy_ns as f64 - 1e9).abs() < 1e5,
        "{}",
        r.outcome.busy_ns
    );
    // A fixed number of I/Os: those completing within the ramp are left out.
    let p = write(
        &d,
        "j.fio",
        "[a]\nioengine=psync\nrw=randread\nnumber_ios=10000\nramp_time=250ms\n",
    );
    let r = run_on_fixed(&p);
    assert_eq!(r.total(0).ios, 7_500);
    assert_eq!(r.outcome.elapsed, 750_000_000);
    assert_eq!(r.outcome.bios, 10_000);
    // TOML: ramp_time at the top of a workload or run file.
    let p = write(
        &d,
        "w.toml",
        "runtime = \"1s\"\nramp_time = \"0.5s\"\n[[job]]\nrw = \"randread\"\n",
    );
    let r = run_on_fixed(&p);
    assert_eq!((r.total(0).ios, r.outcome.elapsed), (10_000, 1_000_000_000));
}

/// `ramp_time` applies to fio's JSON statistics too: the moments, the bw/iops
/// samples (whole intervals after the ramp only), `runtime`, `disk_util` and
/// `processes[]` count only the measured window.
#[test]
fn ramp_time_leaves_its_ios_out_of_the_fio_json() {
    let d = dir("ramp-json");
    // Time based, depth 1 on a 100 us device: 10 000 IOPS throughout; the
    // ramp covers 2.5 intervals of 100 ms.
    let p = write(
        &d,
        "j.fio",
        "[a]\nioengine=psync\nrw=randread\nruntime=1\nramp_time=250ms\ntime_based\n",
    );
    let r = run_on_fixed(&p);
    let j = r.to_json();
    let rd = &j["jobs"][0]["read"];
    assert_eq!(rd["total_ios"], 10_000);
    assert_eq!(rd["runtime"], 1_000);
    assert_eq!(rd["lat_ns"]["N"], 10_000);
    assert_eq!(rd["clat_ns"]["N"], 10_000);
    assert_eq!(rd["slat_ns"]["N"], 10_000);
    // The whole 100 ms intervals within 0.25 s ..= 1.25 s: 0.3 s .. 1.2 s.
    assert_eq!(rd["iops_samples"], 9, "{rd}");
    assert_eq!(rd["bw_samples"], 9, "{rd}");
    assert_eq!(
        (&rd["iops_min"], &rd["iops_max"]),
        (&10_000.into(), &10_000.into()),
        "{rd}"
    );
    assert_eq!(rd["bw_min"], 40_000, "{rd}");
    let disk = &j["disk_util"][0];
    assert_eq!(disk["read_ios"], 10_000, "{disk}");
    assert_eq!(disk["read_sectors"], 80_000, "{disk}");
    let util = disk["util"].as_f64().unwrap();
    assert!((util - 100.0).abs() < 0.01, "{disk}");
    assert_eq!(j["vsim"]["processes"][0]["read"]["total_ios"], 10_000);
    // A fixed number of I/Os: the runtime is from the end of the ramp to the
    // last completion, so the IOPS is the device's.
    let p = write(
        &d,
        "j.fio",
        "[a]\nioengine=psync\nrw=randread\nnumber_ios=10000\nramp_time=250ms\n",
    );
    let r = run_on_fixed(&p);
    let j = r.to_json();
    let rd = &j["jobs"][0]["read"];
    assert_eq!(rd["total_ios"], 7_500);
    assert_eq!(rd["runtime"], 750, "{rd}");
    assert_eq!(j["jobs"][0]["job_runtime"], 750);
    let iops = rd["iops"].as_f64().unwrap();
    assert!((iops - 10_000.0).abs() < 1.0, "{iops}");
    assert_eq!(j["disk_util"][0]["read_ios"], 7_500);
    // 0.3 s .. 1.0 s: 7 whole intervals, each at the device's rate.
    assert_eq!(rd["iops_samples"], 7, "{rd}");
    assert_eq!(rd["iops_min"], 10_000, "{rd}");
}

const RUN_CFG: &str = "seed = 3\nruntime = \"20ms\"\n[block]\nnr_requests = 64\n\
[device]\nmodel = \"fixed\"\nservice_us = 50\n[scheduler]\nname = \"deadline\"\n\
[[job]]\nrw = \"randread\"\niodepth = 4\n";

const WORKLOAD: &str = "runtime = \"20ms\"\n[[job]]\nrw = \"randread\"\niodepth = 4\n";

#[test]
fn run_config_serves_as_a_compare_workload_and_back() {
    let d = dir("files");
    let run = write(&d, "run.toml", RUN_CFG);
    let wl = write(&d, "wl.toml", WORKLOAD);
    // A run configuration is a workload file (its other tables aside).
    let w = Workload::load(&run).unwrap();
    assert_eq!((w.jobs.len(), w.runtime), (1, Some(20_000_000)));
    // A workload file under run: needs a device, and says how to give one.
    let e = format!("{:#}", Config::load(&wl).unwrap_err());
    assert!(e.contains("[device]") && e.contains("--device"), "{e}");
    let c = Config::from_file(
        ConfigFile::load(&wl).unwrap(),
        Some(Component::parse("fixed:service_us=50").unwrap()),
    )
    .unwrap();
    let r = report::run(&c).unwrap();
    // 4 in flight on one 50 us server for 20 ms: 400 I/Os.
    assert!((399..=401).contains(&r.total(0).ios), "{}", r.total(0).ios);
}

fn vsim(args: &[&str]) -> (bool, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_vsim"))
        .args(args)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout).to_string() + &String::from_utf8_lossy(&o.stderr);
    (o.status.success(), text)
}

#[test]
fn cli_run_takes_a_workload_and_compare_a_run_config() {
    let d = dir("cli");
    let run = write(&d, "run.toml", RUN_CFG);
    let wl = write(&d, "wl.toml", WORKLOAD);
    let (run, wl) = (run.to_str().unwrap(), wl.to_str().unwrap());
    // compare with a run configuration: device, seed from the file.
    let (ok, out) = vsim(&[
        "compare",
        "--workload",
        run,
        "--schedulers",
        "noop,deadline",
    ]);
    assert!(ok, "{out}");
    assert!(
        out.contains("device fixed") && out.contains("seed 3"),
        "{out}"
    );
    assert!(out.contains("[scheduler] is not used"), "{out}");
    // run with a workload file and --device.
    let (ok, out) = vsim(&["run", wl, "--device", "fixed:service_us=50"]);
    assert!(ok, "{out}");
    assert!(out.contains("noop on fixed"), "{out}");
    // Without a device anywhere, each says what to add.
    let (ok, out) = vsim(&["run", wl]);
    assert!(!ok && out.contains("--device"), "{out}");
    let (ok, out) = vsim(&["compare", "--workload", wl]);
    assert!(!ok && out.contains("--device is required"), "{out}");
}
