//! `vsim list` and `vsim device`: what can be named, and what a served device shows the kernel.

use crate::*;

pub(crate) fn cmd_list(as_json: bool) -> Result<()> {
    if as_json {
        return list_json();
    }
    // Scheduler defaults for a non-rotational device that reports no erase
    // block (some follow the device: `vsim run --json` shows the values used).
    let info = vsim::types::DeviceInfo::flash(1 << 31, 32);
    println!("schedulers (tunables as name:k=v,...; defaults for a non-rotational device without an erase-block size):");
    for (n, d, ..) in sched::REGISTRY {
        println!("  {n:<12} {d}");
        print!("{}", format_options(&sched::options(n, &info)?));
    }
    for (name, help) in sched::HOST_OPTIONS {
        println!("  every scheduler also takes {name}: {help}");
    }
    println!(
        "devices (options as name:k=v,...; a preset sets the defaults of the options after it):"
    );
    for (n, d, _) in device::REGISTRY {
        println!("  {n:<12} {d}");
        print!("{}", format_options(&device::options(n)?));
    }
    println!("placements (--placement or [placement] name = ..., with --tier devices):");
    for (n, d, _) in vsim::stage::REGISTRY {
        println!("  {n:<12} {d}");
    }
    println!(
        "generated workloads ([[mapreduce]] workload = ..., or vsim gen mapreduce:workload=...):"
    );
    for (n, d) in vsim::workload::mapreduce::WORKLOADS {
        println!("  {n:<16} {d}");
    }
    println!(
        "  {:<16} TPC-C-like streams, SPC format ([[tpcc]] stream = K, or vsim gen tpcc:requests=...; options: {})",
        "tpcc",
        vsim::workload::tpcc::OPTIONS.join(", ")
    );
    println!("reproductions (vsim repro NAME):");
    for (n, d, _, est) in vsim_studies::repro::REGISTRY {
        println!("  {n:<12} {d}");
        let keys: Vec<String> = est
            .iter()
            .map(|e| format!("{}={}", e.key, e.default))
            .collect();
        if !keys.is_empty() {
            println!(
                "  {:<12} estimated (--set, --sensitivity): {}",
                "",
                keys.join(", ")
            );
        }
    }
    println!("validation groups:");
    for (n, d, _) in validate::GROUPS {
        println!("  {n:<12} {d}");
    }
    Ok(())
}

/// `vsim list --json`: each scheduler's tunables as declared (defaults that
/// follow the device are given as declared) and each device's options.
pub(crate) fn list_json() -> Result<()> {
    let schedulers: Vec<_> = sched::REGISTRY
        .iter()
        .map(|(n, d, ..)| json!({"name": n, "description": d, "tunables": sched::tunables_json(n)}))
        .collect();
    let mut devices = Vec::new();
    for (n, d, _) in device::REGISTRY {
        let options: Vec<_> = device::options(n)?
            .iter()
            .map(
                |o| json!({"name": o.name, "default": o.default, "range": o.range, "help": o.help}),
            )
            .collect();
        devices.push(json!({"name": n, "description": d, "options": options}));
    }
    println!(
        "{}",
        serde_json::to_string_pretty(&json!({"schedulers": schedulers, "devices": devices}))?
    );
    Ok(())
}

/// Options as `vsim list` prints them: name, default, range (and help where
/// the declarations have it: scheduler tunables), indented.
pub(crate) fn format_options(items: &[vsim::params::OptionDoc]) -> String {
    if items.is_empty() {
        return "      (no options)\n".into();
    }
    let help = items.iter().any(|d| !d.help.is_empty());
    let mut rows = vec![vec!["option".to_string(), "default".into(), "range".into()]];
    if help {
        rows[0].push("help".into());
    }
    rows.extend(items.iter().map(|d| {
        let mut r = vec![d.name.clone(), d.default.clone(), d.range.clone()];
        if help {
            r.push(d.help.clone());
        }
        r
    }));
    // Every column left-aligned (the help is text).
    report::format_table(&rows, rows[0].len())
        .lines()
        .map(|l| format!("      {l}\n"))
        .collect()
}

pub(crate) fn cmd_device(spec: &str, seed: u64, probe: bool) -> Result<()> {
    let options = |dilation| vsim::serve::Options {
        device: spec.to_string(),
        dilation,
        seed,
        backing: None,
    };
    let s = vsim::serve::Served::new(&options(1.0))?;
    let mut info = s.info_json();
    if probe {
        // A fresh copy, its clock run a million times faster than wall time:
        // the requests find it idle and nothing sleeps.
        let p = vsim::serve::Served::new(&options(1e-6))?;
        let (write, read) = p.probe_4k()?;
        info["write_4k_ns"] = write.into();
        info["read_4k_ns"] = read.into();
    }
    println!("{}", serde_json::to_string_pretty(&info)?);
    Ok(())
}
