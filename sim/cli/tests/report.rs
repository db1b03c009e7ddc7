//! What the HTML report is built from, and how it is built: the device time
//! series (`RunReport::device_series_csv`, `run --csv`'s `.device.csv`), the
//! files of `compare --out`, `run --report` and `validate --report`, and the
//! reporter they run (`VSIM_REPORTER report DIR`). No test here starts the
//! real reporter (`vlab`): each names a stub or /bin/false.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use vsim::config::{Component, Config, ConfigFile};
use vsim::metrics::MAX_SERIES_POINTS;
use vsim::report::{self, RunReport};

/// A test's own directory under the temporary one, removed when the test ends.
struct TmpDir(PathBuf);

impl std::ops::Deref for TmpDir {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl Drop for TmpDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn dir(test: &str) -> TmpDir {
    let d = std::env::temp_dir().join(format!("vsim-report-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    TmpDir(d)
}

fn write(d: &Path, name: &str, text: &str) -> PathBuf {
    let p = d.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

/// `vsim ARGS` with `VSIM_REPORTER=reporter`: (success, stdout + stderr).
fn vsim(args: &[&str], reporter: &Path) -> (bool, String) {
    for _ in 0..20 {
        let o = Command::new(env!("CARGO_BIN_EXE_vsim"))
            .args(args)
            .env("VSIM_REPORTER", reporter)
            .output()
            .unwrap();
        let text =
            String::from_utf8_lossy(&o.stdout).to_string() + &String::from_utf8_lossy(&o.stderr);
        // A stub just written may still be open in a child another test
        // thread forked (ETXTBSY): try again.
        if !o.status.success() && text.contains("Text file busy") {
            std::thread::sleep(std::time::Duration::from_millis(50));
            continue;
        }
        return (o.status.success(), text);
    }
    panic!("{} stayed busy", reporter.display());
}

/// A reporter that writes its arguments, one a line, to `d`/args and an
/// empty page to `$2/report.html`.
fn stub(d: &Path) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let p = write(
        d,
        "reporter.sh",
        &format!(
            "#!/bin/sh\nprintf '%s\\n' \"$@\" > '{}'\nprintf '<html></html>' > \"$2/report.html\"\n",
            d.join("args").display()
        ),
    );
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    p
}

fn json(p: &Path) -> Value {
    let text = std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// `job` on `device`, the file's top-level settings `head` (`interval`...).
fn run(device: &str, head: &str, job: &str) -> RunReport {
    let d = dir(&format!("run-{}", device.replace([':', ',', '='], "_")));
    let wl = write(
        &d,
        "wl.toml",
        &format!("seed = 1\n{head}\n[[job]]\n{job}\n"),
    );
    let c = Config::from_file(
        ConfigFile::load(&wl).unwrap(),
        Some(Component::parse(device).unwrap()),
    )
    .unwrap();
    report::run(&c).unwrap()
}

/// A device series as (header, rows of numbers).
fn parse(csv: &str) -> (Vec<String>, Vec<Vec<f64>>) {
    let mut lines = csv.lines();
    let header: Vec<String> = lines.next().unwrap().split(',').map(String::from).collect();
    let rows: Vec<Vec<f64>> = lines
        .map(|l| {
            let r: Vec<f64> = l.split(',').map(|x| x.parse().unwrap()).collect();
            assert_eq!(r.len(), header.len(), "{l}");
            r
        })
        .collect();
    (header, rows)
}

/// Counters that are not running totals (ratios, averages): they may fall.
const GAUGES: &[&str] = &["write_amplification", "ad_seek_cyl"];

#[test]
fn device_series_of_every_device_kind() {
    // A small SLC SSD (3828 logical pages) rewritten five times over: GC.
    let small_ssd = "ssd:preset=mlc_16g,cell=slc,channels=1,dies_per_channel=1,planes_per_die=1,\
                     blocks_per_plane=64,pages_per_block=64";
    let randwrite = "rw = \"randwrite\"\nbs = \"4k\"\niodepth = 4\nnumber_ios = 20000";
    let mixed = "rw = \"randrw\"\nbs = \"4k\"\niodepth = 64\nnumber_ios = 20000";
    for (dev, job) in [
        ("fixed:service_us=50,servers=4,queue_depth=4", mixed),
        (small_ssd, randwrite),
        ("ssd", mixed),
        ("cheapflash", randwrite),
        ("hdd", mixed),
    ] {
        let r = run(dev, "interval = \"10ms\"", job);
        let (header, rows) = parse(&r.device_series_csv());
        assert_eq!(header[..3], ["time_s", "in_flight", "queued"], "{dev}");
        // The columns: every numeric counter (bools too), sorted.
        let counters = r.device_counters.as_object().unwrap();
        let mut numeric: Vec<&String> = counters
            .iter()
            .filter(|(_, v)| v.is_number() || v.is_boolean())
            .map(|(k, _)| k)
            .collect();
        numeric.sort();
        assert_eq!(header[3..].iter().collect::<Vec<_>>(), numeric, "{dev}");
        assert!(!rows.is_empty() && rows.len() <= MAX_SERIES_POINTS, "{dev}");
        let depth = r.outcome.queue_depth as f64;
        for w in rows.windows(2) {
            assert!(w[0][0] < w[1][0], "{dev}: time goes back: {w:?}");
            for (c, name) in header.iter().enumerate().skip(3) {
                if !GAUGES.contains(&name.as_str()) {
                    assert!(w[0][c] <= w[1][c], "{dev}: {name} decreased: {w:?}");
                }
            }
        }
        for row in &rows {
            assert!(row[1] >= 0.0 && row[1] <= depth, "{dev}: in_flight {row:?}");
            assert!(row[2] >= 0.0, "{dev}: queued {row:?}");
        }
        assert!(rows.iter().any(|r| r[1] > 0.0), "{dev}: nothing in flight");
        // The last row holds the counters the run ended with.
        let last = rows.last().unwrap();
        for (c, name) in header.iter().enumerate().skip(3) {
            let v = &counters[name];
            let want = v
                .as_f64()
                .unwrap_or(if v == &Value::Bool(true) { 1.0 } else { 0.0 });
            assert!((last[c] - want).abs() <= 1e-9 * want.abs(), "{dev}: {name}");
        }
    }
    // A flash device: its GC and write amplification over time.
    let r = run(small_ssd, "interval = \"10ms\"", randwrite);
    let (header, rows) = parse(&r.device_series_csv());
    let col = |n: &str| header.iter().position(|h| h == n).unwrap();
    let (gc, wa) = (col("gc_page_copies"), col("write_amplification"));
    let last = rows.last().unwrap();
    assert!(last[gc] > 0.0 && last[wa] > 1.0, "{last:?}");
    assert_eq!(rows[0][gc], 0.0, "GC starts once the free blocks run out");
    let cf = run("cheapflash", "interval = \"10ms\"", randwrite);
    let (header, _) = parse(&cf.device_series_csv());
    for c in ["write_amplification", "erases", "merge_page_copies"] {
        assert!(header.iter().any(|h| h == c), "{header:?}");
    }
}

#[test]
fn device_series_is_bounded_and_keeps_the_time_average() {
    // 200 ms in 1 us intervals: 200000 intervals, far past the bound.
    let r = run(
        "fixed:service_us=10,servers=2,queue_depth=2",
        "interval = \"1us\"\nruntime = \"200ms\"",
        "rw = \"randread\"\niodepth = 2",
    );
    let s = &r.outcome.device_series;
    assert!(s.len() <= MAX_SERIES_POINTS, "{}", s.len());
    assert!(s.interval() > 1_000, "{}", s.interval());
    // Two I/Os always at the two servers: 2 in flight throughout.
    let (mut area, mut time) = (0.0, 0.0);
    for row in s.rows() {
        area += row.in_flight * row.width as f64;
        time += row.width as f64;
    }
    assert!((area / time - 2.0).abs() < 1e-3, "{}", area / time);
    let (_, rows) = parse(&r.device_series_csv());
    assert_eq!(rows.len(), s.len());
}

#[test]
fn run_csv_writes_the_device_series_beside_it() {
    let d = dir("csv");
    let cfg = write(
        &d,
        "run.toml",
        "runtime = \"20ms\"\n[device]\nmodel = \"ssd\"\n[[job]]\nrw = \"randrw\"\niodepth = 8\n",
    );
    let cfg = cfg.to_str().unwrap();
    let none = Path::new("/bin/false");
    for (given, device) in [("a.csv", "a.device.csv"), ("b.txt", "b.txt.device.csv")] {
        let p = d.join(given);
        let (ok, out) = vsim(&["run", cfg, "-q", "--csv", p.to_str().unwrap()], none);
        assert!(ok, "{out}");
        let dp = d.join(device);
        assert!(
            out.contains(&format!("device time series: {}", dp.display())),
            "{out}"
        );
        let text = std::fs::read_to_string(&dp).unwrap();
        assert!(text.starts_with("time_s,in_flight,queued,"), "{text}");
        let jobs = std::fs::read_to_string(&p).unwrap();
        assert!(
            jobs.starts_with("time_s,job,op,iops,mib_s,mean_lat_us\n"),
            "{jobs}"
        );
    }
}

const WORKLOAD: &str = "runtime = \"20ms\"\n[device]\nmodel = \"fixed\"\nservice_us = 50\n\
[[job]]\nrw = \"randread\"\niodepth = 8\n";

fn check_run_files(d: &Path, name: &str) {
    let j = json(&d.join(format!("{name}.json")));
    assert!(
        j["jobs"][0]["read"]["clat_ns"]["bins"].is_object(),
        "{name}.json is not json+"
    );
    let csv = std::fs::read_to_string(d.join(format!("{name}.csv"))).unwrap();
    assert!(csv.starts_with("time_s,job,op,"), "{csv}");
    let dev = std::fs::read_to_string(d.join(format!("{name}.device.csv"))).unwrap();
    assert!(dev.starts_with("time_s,in_flight,queued,"), "{dev}");
}

fn check_header(s: &Value, kind: &str, cmd: &str) {
    assert_eq!(s["kind"], kind);
    assert_eq!(s["vsim_version"], env!("CARGO_PKG_VERSION"));
    let c = s["command"].as_array().unwrap();
    assert_eq!(c[1], cmd, "{c:?}");
}

#[test]
fn compare_out_writes_the_files_and_summary() {
    let d = dir("compare");
    let wl = write(&d, "wl.toml", WORKLOAD);
    let out = d.join("out");
    // --no-report: the reporter (here one that fails) is not run.
    let (ok, text) = vsim(
        &[
            "compare",
            "--workload",
            wl.to_str().unwrap(),
            "--schedulers",
            "noop,deadline:fifo_batch=8",
            "--out",
            out.to_str().unwrap(),
            "--no-report",
            "-q",
        ],
        Path::new("/bin/false"),
    );
    assert!(ok, "{text}");
    assert!(!out.join("report.html").exists());
    let s = json(&out.join("summary.json"));
    check_header(&s, "vsim-compare", "compare");
    assert_eq!(s["interval_ns"], 100_000_000);
    let names = ["noop", "deadline_fifo_batch_8"];
    for (e, name) in s["schedulers"].as_array().unwrap().iter().zip(names) {
        check_run_files(&out, name);
        assert_eq!(
            e["files"],
            serde_json::json!({"json": format!("{name}.json"), "csv": format!("{name}.csv"),
                               "device_csv": format!("{name}.device.csv")})
        );
        assert!(e["device_counters"]["served"].as_u64().unwrap() > 0, "{e}");
    }
    assert_eq!(s["schedulers"].as_array().unwrap().len(), 2);
}

/// `vsim compare` of `wl` under noop into `out`, with `reporter`.
fn compare_noop(wl: &str, out: &Path, reporter: &Path) -> (bool, String) {
    let o = out.to_str().unwrap();
    let args = [
        "compare",
        "--workload",
        wl,
        "--schedulers",
        "noop",
        "--out",
        o,
        "-q",
    ];
    vsim(&args, reporter)
}

#[test]
fn commands_run_the_reporter_on_their_directory() {
    let d = dir("stub");
    let rep = stub(&d);
    let wl = write(&d, "wl.toml", WORKLOAD);
    let wl = wl.to_str().unwrap();
    let args = || std::fs::read_to_string(d.join("args")).unwrap();
    let reported = |text: &str, out: &Path| {
        assert_eq!(args(), format!("report\n{}\n", out.display()));
        assert!(out.join("report.html").is_file());
        let line = format!("report: {}", out.join("report.html").display());
        assert!(text.contains(&line), "{text}");
    };

    let out = d.join("compare");
    let (ok, text) = compare_noop(wl, &out, &rep);
    assert!(ok, "{text}");
    reported(&text, &out);

    let out = d.join("run");
    let o = out.to_str().unwrap();
    let (ok, text) = vsim(&["run", wl, "--report", o, "-q", "--seed", "5"], &rep);
    assert!(ok, "{text}");
    reported(&text, &out);
    check_run_files(&out, "run");
    let s = json(&out.join("summary.json"));
    check_header(&s, "vsim-run", "run");
    assert_eq!(s["config"], wl);
    assert_eq!(s["device"], "fixed:service_us=50");
    assert_eq!(s["scheduler"], "noop");
    assert_eq!(s["seed"], 5);
    assert_eq!(s["simulated_ns"], 20_000_000);
    assert_eq!(s["interval_ns"], 100_000_000);
    assert!(s["device_counters"]["served"].as_u64().unwrap() > 0);
    assert_eq!(
        s["files"],
        serde_json::json!({"json": "run.json", "csv": "run.csv", "device_csv": "run.device.csv"})
    );

    let out = d.join("validate");
    let o = out.to_str().unwrap();
    let (ok, text) = vsim(
        &["validate", "--quick", "--group", "fio", "--report", o],
        &rep,
    );
    assert!(ok, "{text}");
    reported(&text, &out);
    let s = json(&out.join("summary.json"));
    check_header(&s, "vsim-validate", "validate");
    assert_eq!(
        (&s["quick"], &s["group"]),
        (&Value::Bool(true), &"fio".into())
    );
    let cases = json(&out.join("validate.json"));
    // Exactly what --json prints (the JSON before the count line).
    let (ok, printed) = vsim(
        &["validate", "--quick", "--group", "fio", "--json"],
        Path::new("/bin/false"),
    );
    assert!(ok, "{printed}");
    let end = printed.rfind(']').unwrap() + 1;
    let printed: Value = serde_json::from_str(&printed[..end]).unwrap();
    assert_eq!(cases, printed);
    assert_eq!(s["cases"], cases.as_array().unwrap().len());
    assert_eq!(s["failed"], 0);
}

#[test]
fn a_failing_reporter_fails_the_command_and_keeps_the_results() {
    let d = dir("fail");
    let wl = write(&d, "wl.toml", WORKLOAD);
    let wl = wl.to_str().unwrap();
    for reporter in ["/bin/false", "/nonexistent/reporter"] {
        let r = Path::new(reporter);
        let failed = |text: &str, out: &Path| {
            assert!(
                text.contains(&format!("no HTML report in {}", out.display())),
                "{text}"
            );
            assert!(
                text.contains(&format!("vlab report {}", out.display())),
                "{text}"
            );
            assert!(text.contains("kept"), "{text}");
            assert!(out.join("summary.json").is_file());
        };
        let out = d.join("compare");
        let (ok, text) = compare_noop(wl, &out, r);
        assert!(!ok, "{text}");
        failed(&text, &out);
        check_run_files(&out, "noop");

        let out = d.join("run");
        let (ok, text) = vsim(&["run", wl, "--report", out.to_str().unwrap(), "-q"], r);
        assert!(!ok, "{text}");
        failed(&text, &out);
        check_run_files(&out, "run");

        let out = d.join("validate");
        let (ok, text) = vsim(
            &[
                "validate",
                "--quick",
                "--group",
                "fio",
                "--report",
                out.to_str().unwrap(),
            ],
            r,
        );
        assert!(!ok, "{text}");
        failed(&text, &out);
        assert!(out.join("validate.json").is_file());
    }
}
