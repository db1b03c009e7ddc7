//! fio's JSON, key for key (fio-3.42's stat.c: show_thread_status_json,
//! add_ddir_status_json, add_ddir_lat_json, json_array_add_disk_util), read by
//! fio's own `fio_jsonplus_clat2csv` and by a pandas script as users write one.
//!
//! The Python checks need /usr/bin/python3 with pandas and fio's tools (Debian's
//! `fio` and `python3-pandas`, which `make deps` installs); without them they are
//! skipped with a message, unless VSIM_REQUIRE_FIO_TOOLS=1 (`make test-sim`).

use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("vsim-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// `vsim run` on `config` (TOML text) with `--json` (and `--json-plus`).
fn run_json(dir: &Path, config: &str, plus: bool) -> (PathBuf, Value) {
    let cfg = dir.join("run.toml");
    std::fs::write(&cfg, config).unwrap();
    let out = dir.join(if plus { "out.jsonplus" } else { "out.json" });
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_vsim"));
    cmd.arg("run")
        .arg(&cfg)
        .arg("--json")
        .arg(&out)
        .arg("--quiet");
    if plus {
        cmd.arg("--json-plus");
    }
    let o = cmd.output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    (out, v)
}

const MIXED: &str = r#"
seed = 2
[device]
model = "ssd"
preset = "mlc_16g"
cell = "mlc"
blocks_per_plane = 64
[[job]]
name = "mix"
rw = "randrw"
rwmixread = 70
iodepth = 16
number_ios = 30000
[[job]]
name = "seqw"
rw = "write"
bs = "64k"
iodepth = 4
number_ios = 2000
"#;

fn keys(v: &Value) -> BTreeSet<&str> {
    v.as_object()
        .unwrap_or_else(|| panic!("not an object: {v}"))
        .keys()
        .map(String::as_str)
        .collect()
}

fn set<'a>(k: &[&'a str]) -> BTreeSet<&'a str> {
    k.iter().copied().collect()
}

#[test]
fn fio_json_key_for_key() {
    let d = tmpdir("keys");
    let (_, j) = run_json(&d, MIXED, false);
    assert_eq!(
        keys(&j),
        set(&[
            "fio version",
            "timestamp",
            "timestamp_ms",
            "time",
            "global options",
            "jobs",
            "disk_util",
            "vsim"
        ])
    );
    assert!(j["fio version"]
        .as_str()
        .unwrap()
        .starts_with("fio-3.42 (vsim-"));
    let ts = j["timestamp"].as_u64().unwrap();
    assert_eq!(j["timestamp_ms"].as_u64().unwrap() / 1000, ts);
    assert_eq!(
        j["time"].as_str().unwrap().len(),
        24,
        "ctime format: {}",
        j["time"]
    );
    assert_eq!(j["jobs"].as_array().unwrap().len(), 2);
    let job = &j["jobs"][0];
    assert_eq!(
        keys(job),
        set(&[
            "jobname",
            "groupid",
            "job_start",
            "error",
            "eta",
            "elapsed",
            "job options",
            "read",
            "write",
            "trim",
            "sync",
            "job_runtime",
            "usr_cpu",
            "sys_cpu",
            "ctx",
            "majf",
            "minf",
            "iodepth_level",
            "iodepth_submit",
            "iodepth_complete",
            "latency_ns",
            "latency_us",
            "latency_ms",
            "vsim",
        ])
    );
    assert_eq!(job["jobname"], "mix");
    assert_eq!(job["job options"]["rw"], "randrw");
    assert_eq!(job["job options"]["rwmixread"], "70");
    let rw = set(&[
        "io_bytes",
        "io_kbytes",
        "bw_bytes",
        "bw",
        "iops",
        "runtime",
        "total_ios",
        "short_ios",
        "drop_ios",
        "slat_ns",
        "clat_ns",
        "lat_ns",
        "bw_min",
        "bw_max",
        "bw_agg",
        "bw_mean",
        "bw_dev",
        "bw_samples",
        "iops_min",
        "iops_max",
        "iops_mean",
        "iops_stddev",
        "iops_samples",
    ]);
    for d in ["read", "write", "trim"] {
        assert_eq!(keys(&job[d]), rw, "{d}");
    }
    assert_eq!(keys(&job["sync"]), set(&["total_ios", "lat_ns"]));
    let lat = set(&["min", "max", "mean", "stddev", "N"]);
    let with_pct = set(&["min", "max", "mean", "stddev", "N", "percentile"]);
    // fio's defaults: no slat percentiles; clat (and lat, as lat_percentiles=1) have them.
    assert_eq!(keys(&job["read"]["slat_ns"]), lat);
    assert_eq!(keys(&job["read"]["clat_ns"]), with_pct);
    assert_eq!(keys(&job["read"]["lat_ns"]), with_pct);
    // A direction without I/O: fio's empty values, no percentiles.
    assert_eq!(keys(&job["trim"]["clat_ns"]), lat);
    assert_eq!(job["trim"]["runtime"], 0);
    assert_eq!(keys(&job["sync"]["lat_ns"]), lat);
    assert_eq!(keys(&j["jobs"][1]["read"]["clat_ns"]), lat);
    assert_eq!(j["jobs"][1]["read"]["bw_samples"], 0);
    let pct = keys(&job["read"]["clat_ns"]["percentile"]);
    for p in [
        "1.000000",
        "50.000000",
        "99.000000",
        "99.900000",
        "99.990000",
    ] {
        assert!(pct.contains(p), "{p} in {pct:?}");
    }
    assert_eq!(
        keys(&job["iodepth_level"]),
        set(&["1", "2", "4", "8", "16", "32", ">=64"])
    );
    for k in ["iodepth_submit", "iodepth_complete"] {
        assert_eq!(
            keys(&job[k]),
            set(&["0", "4", "8", "16", "32", "64", ">=64"]),
            "{k}"
        );
    }
    let lat10 = [
        "2", "4", "10", "20", "50", "100", "250", "500", "750", "1000",
    ];
    assert_eq!(keys(&job["latency_ns"]), set(&lat10));
    assert_eq!(keys(&job["latency_us"]), set(&lat10));
    let mut ms = lat10.to_vec();
    ms.extend(["2000", ">=2000"]);
    assert_eq!(keys(&job["latency_ms"]), set(&ms));
    assert_eq!(
        keys(&j["disk_util"][0]),
        set(&[
            "name",
            "read_ios",
            "write_ios",
            "read_sectors",
            "write_sectors",
            "read_merges",
            "write_merges",
            "read_ticks",
            "write_ticks",
            "in_queue",
            "util",
        ])
    );
    // Types as fio writes them: integers where fio writes integers.
    for k in [
        "bw",
        "bw_bytes",
        "runtime",
        "bw_min",
        "iops_max",
        "io_kbytes",
    ] {
        assert!(job["read"][k].is_u64(), "{k}: {}", job["read"][k]);
    }
    assert!(job["read"]["iops"].is_f64());
    std::fs::remove_dir_all(&d).ok();
}

#[test]
fn fio_json_values_are_consistent() {
    let d = tmpdir("values");
    let (_, j) = run_json(&d, MIXED, false);
    let mix = &j["jobs"][0];
    let r = &mix["read"];
    let n = r["total_ios"].as_u64().unwrap();
    assert!(n > 15_000, "{n}");
    assert_eq!(r["clat_ns"]["N"].as_u64(), Some(n));
    assert_eq!(r["io_kbytes"].as_u64(), Some(n * 4));
    // bw and iops over the job's runtime (ms, truncated as fio's).
    let rt = r["runtime"].as_u64().unwrap();
    assert_eq!(rt, mix["job_runtime"].as_u64().unwrap());
    let iops = r["iops"].as_f64().unwrap();
    assert!(
        (iops - n as f64 * 1000.0 / rt as f64).abs() / iops < 2e-3,
        "{iops}"
    );
    assert_eq!(
        r["bw"].as_u64().unwrap(),
        r["bw_bytes"].as_u64().unwrap() / 1024
    );
    // The samples (one per 100 ms interval) bracket and average to the rate.
    let (lo, hi) = (
        r["iops_min"].as_f64().unwrap(),
        r["iops_max"].as_f64().unwrap(),
    );
    let mean = r["iops_mean"].as_f64().unwrap();
    assert!(lo <= mean && mean <= hi && lo > 0.0, "{r}");
    assert!(
        (mean - iops).abs() / iops < 0.1,
        "iops_mean {mean} vs iops {iops}"
    );
    assert_eq!(r["iops_samples"].as_u64(), Some(rt / 100));
    let bw_mean = r["bw_mean"].as_f64().unwrap();
    assert!((bw_mean - r["bw"].as_f64().unwrap()).abs() / bw_mean < 0.1);
    // bw_agg: this job's share of the group's read bandwidth (the only reader).
    assert!(r["bw_agg"].as_f64().unwrap() > 90.0, "{}", r["bw_agg"]);
    // Distributions sum to 100 %.
    for k in ["iodepth_level", "iodepth_complete"] {
        let s: f64 = mix[k]
            .as_object()
            .unwrap()
            .values()
            .map(|v| v.as_f64().unwrap())
            .sum();
        assert!((s - 100.0).abs() < 0.5, "{k}: {s}");
    }
    assert!(
        mix["iodepth_level"]["16"].as_f64().unwrap() > 99.0,
        "{}",
        mix["iodepth_level"]
    );
    let lat: f64 = ["latency_ns", "latency_us", "latency_ms"]
        .iter()
        .flat_map(|k| mix[*k].as_object().unwrap().values())
        .map(|v| v.as_f64().unwrap())
        .sum();
    assert!((lat - 100.0).abs() < 0.5, "latency_*: {lat}");
    // disk_util: the device's requests; merges are the sequential job's bios
    // merged into requests; in_queue = read_ticks + write_ticks; util in %.
    let du = &j["disk_util"][0];
    assert_eq!(du["name"], "ssd");
    assert_eq!(du["read_ios"].as_u64(), Some(n));
    let writes = mix["write"]["total_ios"].as_u64().unwrap() + 2000;
    let (wios, wmerges) = (
        du["write_ios"].as_u64().unwrap(),
        du["write_merges"].as_u64().unwrap(),
    );
    assert_eq!(wios + wmerges, writes, "{du}");
    assert_eq!(
        du["write_sectors"].as_u64().unwrap() * 512,
        mix["write"]["io_bytes"].as_u64().unwrap() + 2000 * 65536
    );
    // (as the kernel's diskstats: the sum is taken in ns, then truncated to ms)
    let ticks = du["read_ticks"].as_u64().unwrap() + du["write_ticks"].as_u64().unwrap();
    let in_queue = du["in_queue"].as_u64().unwrap();
    assert!(in_queue == ticks || in_queue == ticks + 1, "{du}");
    let util = du["util"].as_f64().unwrap();
    assert!(util > 0.0 && util <= 100.0);
    std::fs::remove_dir_all(&d).ok();
}

/// /usr/bin/python3 with pandas, and fio's fio_jsonplus_clat2csv; None (and
/// a message) when absent and not required.
fn python_tools() -> Option<(PathBuf, PathBuf)> {
    let py = PathBuf::from(std::env::var("VSIM_PYTHON").unwrap_or("/usr/bin/python3".into()));
    let tool = PathBuf::from(
        std::env::var("FIO_JSONPLUS_CLAT2CSV").unwrap_or("/usr/bin/fio_jsonplus_clat2csv".into()),
    );
    let pandas = Command::new(&py)
        .args(["-c", "import pandas, six"])
        .output()
        .is_ok_and(|o| o.status.success());
    if pandas && tool.exists() {
        return Some((py, tool));
    }
    let why = format!(
        "needs {} with pandas and six (Debian: python3-pandas) and {} (Debian: fio); `make deps` installs both",
        py.display(),
        tool.display()
    );
    if std::env::var_os("VSIM_REQUIRE_FIO_TOOLS").is_some() {
        panic!("{why}");
    }
    eprintln!("SKIPPED: {why}");
    None
}

#[test]
fn fio_jsonplus_clat2csv_reads_vsim_json_plus() {
    let Some((py, tool)) = python_tools() else {
        return;
    };
    let d = tmpdir("clat2csv");
    let (out, j) = run_json(&d, MIXED, true);
    // json+ bins: fio's bucket values, counts summing to N.
    for (job, dir) in [(0, "read"), (0, "write"), (1, "write")] {
        for lat in ["clat_ns", "lat_ns"] {
            let l = &j["jobs"][job][dir][lat];
            let bins = l["bins"]
                .as_object()
                .unwrap_or_else(|| panic!("{lat}: {l}"));
            let sum: u64 = bins.values().map(|v| v.as_u64().unwrap()).sum();
            assert_eq!(sum, l["N"].as_u64().unwrap(), "{job} {dir} {lat}");
        }
    }
    let csv = d.join("lat.csv");
    for extra in [None, Some("--validate")] {
        let mut c = Command::new(&py);
        c.arg(&tool).arg(&out).arg(&csv);
        if let Some(e) = extra {
            c.arg(e);
        }
        let o = c.output().unwrap();
        assert!(
            o.status.success(),
            "fio_jsonplus_clat2csv {extra:?}: {}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
    }
    // One CSV per job; the last row of read clat is the 100th percentile.
    let text = std::fs::read_to_string(d.join("lat_job0.csv")).unwrap();
    let header: Vec<&str> = text
        .lines()
        .next()
        .unwrap()
        .split(',')
        .map(str::trim)
        .collect();
    let col = header
        .iter()
        .position(|h| *h == "read_clat_ns_cumulative")
        .unwrap();
    let last = text
        .lines()
        .skip(1)
        .filter_map(|l| {
            l.split(',')
                .nth(col)
                .map(str::trim)
                .filter(|v| !v.is_empty())
        })
        .last()
        .unwrap();
    assert_eq!(last, j["jobs"][0]["read"]["total_ios"].to_string());
    std::fs::remove_dir_all(&d).ok();
}

#[test]
fn pandas_reads_vsim_json_as_fio_json() {
    let Some((py, _)) = python_tools() else {
        return;
    };
    let d = tmpdir("pandas");
    let (out, j) = run_json(&d, MIXED, false);
    let script = r#"
import json, sys
import pandas as pd
d = json.load(open(sys.argv[1]))
print(d['fio version'].split()[0])
print(d['jobs'][0]['job options']['rw'])
df = pd.json_normalize(d['jobs'])
print(df.loc[0, 'read.iops_mean'] > 0)
print(int(df.loc[0, 'read.clat_ns.percentile.99.000000']))
print(len(df), df.loc[1, 'jobname'])
print(d['disk_util'][0]['util'] > 0)
print(pd.DataFrame(d['disk_util']).loc[0, 'read_ios'])
"#;
    let o = Command::new(&py)
        .arg("-c")
        .arg(script)
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let lines: Vec<String> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(String::from)
        .collect();
    let r = &j["jobs"][0]["read"];
    assert_eq!(
        lines,
        vec![
            "fio-3.42".to_string(),
            "randrw".into(),
            "True".into(),
            r["clat_ns"]["percentile"]["99.000000"].to_string(),
            "2 seqw".into(),
            "True".into(),
            r["total_ios"].to_string(),
        ]
    );
    std::fs::remove_dir_all(&d).ok();
}

/// As fio: `[global]`'s options are `global options` (not copied into each
/// job's `job options`), and a job's clones (`numjobs`) all bear its name.
#[test]
fn global_options_and_clone_names_as_fio_writes_them() {
    let d = tmpdir("fio-global");
    std::fs::write(
        d.join("j.fio"),
        "[global]\nrw=randread\nbs=8k\nruntime=50ms\ntime_based\n[a]\nnumjobs=2\n[b]\nbs=4k\n",
    )
    .unwrap();
    let (_, v) = run_json(&d, "fio = \"j.fio\"\n[device]\nmodel = \"fixed\"\n", false);
    let g = &v["global options"];
    assert_eq!(g["rw"], "randread", "{g}");
    assert_eq!(g["bs"], "8k", "{g}");
    assert_eq!(g["runtime"], "50ms", "{g}");
    assert!(g["ioscheduler"].is_string(), "{g}");
    let jobs = v["jobs"].as_array().unwrap();
    let names: Vec<&str> = jobs
        .iter()
        .map(|j| j["jobname"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["a", "a", "b"]);
    let a = &jobs[0]["job options"];
    assert_eq!(a["numjobs"], "2", "{a}");
    assert!(a.get("rw").is_none() && a.get("bs").is_none(), "{a}");
    assert_eq!(jobs[2]["job options"]["bs"], "4k", "the job's own bs");
}

/// fio's logs (`write_bw_log`, `write_iops_log`, `write_lat_log`), in the
/// current directory under fio's names and in fio's line format, averaged
/// over `log_avg_msec` or a latency line per I/O.
#[test]
fn bw_iops_and_lat_logs_as_fio_writes_them() {
    let d = tmpdir("fio-logs");
    std::fs::write(
        d.join("j.fio"),
        "[global]\nrw=randread\nruntime=1s\ntime_based\n\
         [a]\nwrite_bw_log=a\nwrite_iops_log=a\nwrite_lat_log=a\nlog_avg_msec=100\n\
         [b]\nrw=randwrite\nnumber_ios=5\nwrite_lat_log\n",
    )
    .unwrap();
    std::fs::write(
        d.join("run.toml"),
        "fio = \"j.fio\"\n[device]\nmodel = \"fixed\"\nservice_us = 100\n",
    )
    .unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_vsim"))
        .current_dir(&d)
        .args(["run", "run.toml", "--quiet"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let read = |n: &str| std::fs::read_to_string(d.join(n)).unwrap_or_else(|e| panic!("{n}: {e}"));
    let rows = |n: &str| -> Vec<Vec<u64>> {
        read(n)
            .lines()
            .map(|l| l.split(", ").map(|x| x.parse().unwrap()).collect())
            .collect()
    };
    // Job a: 10 windows of 100 ms, reads, block size and offset 0.
    let iops = rows("a_iops.1.log");
    assert_eq!(iops.len(), 10, "{iops:?}");
    for (i, r) in iops.iter().enumerate() {
        assert_eq!(r.len(), 5);
        assert_eq!(r[0], 100 * (i as u64 + 1));
        assert_eq!(&r[2..], [0, 0, 0]);
        // One server of 100 us, two jobs: about 10000 IOPS between them.
        assert!((4000..=10_000).contains(&r[1]), "{r:?}");
    }
    let bw = rows("a_bw.1.log");
    assert_eq!(bw[0][1], iops[0][1] * 4, "4 KiB reads: KiB/s = 4 x IOPS");
    for k in ["lat", "clat", "slat"] {
        assert_eq!(rows(&format!("a_{k}.1.log")).len(), 10, "{k}");
    }
    let lat = rows("a_lat.1.log");
    assert!(lat[0][1] >= 100_000, "at least the 100 us service: {lat:?}");
    // Job b: a line per I/O, each with its size; it is job 2.
    let b = rows("b_lat.2.log");
    assert_eq!(b.len(), 5, "{b:?}");
    assert!(
        b.iter().all(|r| r[2] == 1 && r[3] == 4096 && r.len() == 5),
        "{b:?}"
    );
    // fio2gnuplot (Debian's fio package) reads them, where installed.
    if Path::new("/usr/bin/fio2gnuplot").exists() {
        let o = Command::new("/usr/bin/fio2gnuplot")
            .current_dir(&d)
            .args(["-p", "a_bw.1.log", "-g"])
            .output()
            .unwrap();
        let (out, err) = (
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr),
        );
        assert!(
            o.status.success() && out.contains("a_bw.1.log") && !err.contains("Traceback"),
            "{out}{err}"
        );
    }
}

/// A log that cannot be written fails before the simulation (issue 38: output
/// paths were checked only after the work), naming the file.
#[test]
fn an_unwritable_log_fails_before_the_run() {
    let d = tmpdir("fio-log-unwritable");
    std::fs::write(
        d.join("j.fio"),
        "[a]\nrw=randread\nnumber_ios=100\nwrite_lat_log=/proc/vsim-no-such/a\n",
    )
    .unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_vsim"))
        .current_dir(&d)
        .args([
            "run",
            "j.fio",
            "--device",
            "fixed:service_us=100",
            "--quiet",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(
        err.contains("write_*_log") && err.contains("/proc/vsim-no-such/a_lat.1.log"),
        "{err}"
    );
    assert!(o.stdout.is_empty(), "no table: the run never started");
}
