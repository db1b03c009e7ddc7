//! `vsim list` shows every device option, preset and scheduler tunable with
//! its default and range, taken from the code that parses them.

use std::process::Command;
use vsim::params::Params;
use vsim::{device, sched};

fn info() -> vsim::types::DeviceInfo {
    vsim::types::DeviceInfo::flash(1 << 31, 32)
}

fn list() -> String {
    let o = Command::new(env!("CARGO_BIN_EXE_vsim"))
        .arg("list")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

/// The line of option `opt` in the section of component `name`.
fn line<'a>(text: &'a str, name: &str, opt: &str) -> &'a str {
    let mut lines = text.lines();
    lines
        .find(|l| l.starts_with(&format!("  {name} ")))
        .unwrap_or_else(|| panic!("no section {name}:\n{text}"));
    lines
        .take_while(|l| l.starts_with("      "))
        .find(|l| l.split_whitespace().next() == Some(opt))
        .unwrap_or_else(|| panic!("{name}: no option {opt} in\n{text}"))
}

#[test]
fn list_shows_every_tunable_with_default_and_range() {
    let text = list();
    for (n, ..) in sched::REGISTRY {
        // Everything the scheduler shows in sysfs is listed, with that value
        // as the default.
        let s = sched::make(n, &Params::new(), &info()).unwrap();
        for (k, v) in s.tunables() {
            let l = line(&text, n, k);
            let cols: Vec<&str> = l.split_whitespace().collect();
            assert_eq!(cols[1], v, "{n} {k}: {l}");
            assert!(cols[2].contains("..=") || cols[2] == "0|1", "{n} {k}: {l}");
        }
        // One declaration (const TUNABLES): each tunable's line ends with its
        // declared help, after the range.
        let decl = sched::tunables(n).unwrap();
        assert_eq!(decl.len(), s.tunables().len(), "{n}");
        for t in decl {
            let l = line(&text, n, t.name);
            assert!(l.trim_end().ends_with(t.help), "{n} {}: {l}", t.name);
            let range = l.split_whitespace().nth(2).unwrap();
            if t.is_switch() {
                assert_eq!(range, "0|1", "{n} {}", t.name);
            } else {
                assert_eq!(range, format!("{}..={}", t.min, t.max), "{n} {}", t.name);
            }
        }
    }
    assert!(line(&text, "deadline", "fifo_batch").contains("1..="));
}

#[test]
fn list_shows_device_options_and_presets() {
    let text = list();
    assert!(line(&text, "hdd", "preset").contains("hp_c2247a|modern_7200|bid_example"));
    assert!(line(&text, "ssd", "cell").contains("slc|mlc|tlc"));
    assert!(line(&text, "ssd", "gc").contains("greedy|fifo"));
    assert!(line(&text, "ssd", "channels").contains("8 "));
    assert!(line(&text, "cheapflash", "precondition").contains("full|none"));
    assert!(line(&text, "fixed", "service").contains("const|exp"));
    assert!(line(&text, "fixed", "size").contains("1g"));
    // Times read with a range (Params::time_in): the default in the option's
    // unit, the range as times.
    let cols = |opt| {
        line(&text, "fixed", opt)
            .split_whitespace()
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    assert_eq!(cols("service_us")[1..], ["100", "0ns..=3600s"]);
    assert_eq!(cols("read_us")[1..], ["100", "0ns..=3600s"]);
    assert_eq!(cols("per_sector_ns")[1..], ["0", "0ns..=1s"]);
}

/// The listed defaults are the parser's: given back explicitly they build the
/// same device or scheduler; one past a listed integer maximum is refused,
/// naming the option.
#[test]
fn listed_defaults_and_ranges_are_the_parsers() {
    let check = |what: &str,
                 docs: Vec<vsim::params::OptionDoc>,
                 build: &dyn Fn(&Params) -> anyhow::Result<()>| {
        assert!(!docs.is_empty(), "{what}");
        let mut all = Params::new();
        for d in &docs {
            if d.default != "-" && !d.default.is_empty() {
                all.set(&d.name, &d.default);
            }
            if let Some((_, max)) = d.range.split_once("..=") {
                if let Ok(max) = max.parse::<u64>() {
                    let mut p = Params::new();
                    p.set(&d.name, &(max as u128 + 1).to_string());
                    let e = build(&p).err().map(|e| format!("{e:#}"));
                    assert!(
                        e.as_deref().is_some_and(|e| e.contains(&d.name)),
                        "{what}: {}={} accepted or wrong error: {e:?}",
                        d.name,
                        max as u128 + 1
                    );
                }
            }
        }
        build(&all).unwrap_or_else(|e| panic!("{what} with its listed defaults: {e:#}"));
    };
    for (n, _, _) in device::REGISTRY {
        check(n, device::options(n).unwrap(), &|p| {
            device::make(n, p, 1).map(|_| ())
        });
    }
    for (n, ..) in sched::REGISTRY {
        check(n, sched::options(n, &info()).unwrap(), &|p| {
            sched::make(n, p, &info()).map(|_| ())
        });
    }
}

#[test]
fn a_reader_that_stops_early_ends_vsim_quietly() {
    use std::process::Stdio;
    let mut child = Command::new(env!("CARGO_BIN_EXE_vsim"))
        .arg("list")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("vsim starts");
    // The reader is gone before vsim writes (as with `vsim list | head` once head has
    // its lines): every write fails with EPIPE.
    drop(child.stdout.take());
    let out = child.wait_with_output().expect("vsim ends");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !err.contains("panicked"),
        "vsim panicked on a closed pipe: {err}"
    );
}

#[test]
fn list_json_gives_each_tunable_as_declared_with_its_unit() {
    let o = Command::new(env!("CARGO_BIN_EXE_vsim"))
        .args(["list", "--json"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let scheds = v["schedulers"].as_array().unwrap();
    assert_eq!(scheds.len(), sched::REGISTRY.len());
    let veloces = scheds.iter().find(|s| s["name"] == "veloces").unwrap();
    let t = |n: &str| {
        veloces["tunables"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == n)
            .unwrap()
            .clone()
    };
    assert_eq!(t("read_expire")["unit"], "ms");
    assert_eq!(t("read_expire")["max"], 600_000);
    assert_eq!(t("bundle_kb")["unit"], "KiB");
    assert_eq!(t("write_depth")["default"], 65_536);
    assert!(v["devices"]
        .as_array()
        .unwrap()
        .iter()
        .any(|d| d["name"] == "ssd"));
}

#[test]
fn sweep_and_tune_are_listed_and_name_how_to_run_them_without_a_python() {
    let help = Command::new(env!("CARGO_BIN_EXE_vsim"))
        .arg("--help")
        .output()
        .unwrap();
    let help = String::from_utf8(help.stdout).unwrap();
    assert!(
        help.contains("\n  sweep ") && help.contains("\n  tune "),
        "{help}"
    );
    let o = Command::new(env!("CARGO_BIN_EXE_vsim"))
        .args(["tune", "x.toml"])
        .env_remove("VSIM_PYTHON")
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("./vsim tune"));
}

#[test]
fn a_scheduler_list_keeps_each_specs_comma_separated_options() {
    // Before, `--schedulers` split at every comma: "unknown scheduler 'read_expire=10'".
    let run = |args: &[&str]| {
        let o = Command::new(env!("CARGO_BIN_EXE_vsim"))
            .args([
                "compare",
                "--device",
                "ssd:preset=mlc_16g",
                "--workload",
                concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/mix70.toml"),
                "--runtime",
                "2ms",
                "--no-report",
            ])
            .args(args)
            .output()
            .unwrap();
        (
            o.status.success(),
            String::from_utf8_lossy(&o.stdout).to_string() + &String::from_utf8_lossy(&o.stderr),
        )
    };
    let spec = "veloces:bundle_kb=256,read_expire=10";
    let (ok, out) = run(&["--schedulers", &format!("noop,{spec}")]);
    assert!(ok && out.contains(spec), "{out}");
    let (ok, out2) = run(&["--scheduler", "noop", "--scheduler", spec]);
    assert!(ok && out2.contains(spec), "{out2}");
    let (ok, out) = run(&["--schedulers", "read_expire=10,noop"]);
    assert!(!ok && out.contains("before any name"), "{out}");
}
