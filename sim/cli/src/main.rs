//! `vsim`: the command line of the simulator (crate vsim-cli), on the core library (`vsim`)
//! and the studies (`vsim_studies`); one module per subcommand in `commands/`.

use anyhow::{bail, Context, Result};
use clap::{Args, Parser, Subcommand};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde_json::json;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::Duration;
use vsim::config::{Component, Config, ConfigFile, Tier, Workload};
use vsim::params::parse_runtime_arg;
use vsim::report::{self, RunReport};
use vsim::{device, sched};
use vsim_studies::{bench, validate};

mod commands;
use commands::*;

#[derive(Parser)]
#[command(
    name = "vsim",
    version,
    about = "Deterministic, trace-driven simulator of the Linux block layer, I/O schedulers and flash/disk devices",
    long_about = long_about(),
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

/// The top-level help: the schedulers and device models as their registries
/// list them (so the help cannot fall behind a new one).
fn long_about() -> String {
    let scheds: Vec<&str> = sched::REGISTRY.iter().map(|r| r.0).collect();
    let devices: Vec<&str> = device::REGISTRY.iter().map(|r| r.0).collect();
    format!(
        "vsim answers \"which I/O scheduler for this workload and this device?\" in seconds.\n\
A run is: workload (fio-like jobs or a trace) -> block layer (plugging, merging, nr_requests) -> \
scheduler ({}) -> device model ({}).\n\n{START}",
        scheds.join(", "),
        devices.join(", ")
    )
}

const START: &str = "Start with:\n  vsim list                                   # schedulers, devices: every option, default, range\n  \
vsim run sim/examples/ssd-mixed.toml        # one configuration, fio-style table\n  \
vsim compare --device ssd:preset=mlc_16g --workload sim/examples/mix70.toml --schedulers noop,deadline,cfq,veloces\n  \
vsim validate                               # the models against closed forms and published figures\n\n\
Same seed, same inputs: same results, byte for byte.";

#[derive(Subcommand)]
enum Cmd {
    /// Run one configuration file (TOML; see sim/examples/) and print its table.
    Run(RunArgs),
    /// Run one workload on one device under several schedulers (in parallel) and compare.
    Compare(CompareArgs),
    /// Reproduce a seed paper's simulated experiment: its figures beside ours, a verdict per claim
    /// (`bid`: bid-bulk-io-dispatch.txt's BID-HDD and BID-Hybrid).
    Repro(ReproArgs),
    /// Simulate a workload generator's trace and print it as blkparse text
    /// (`mapreduce:workload=terasort,maps=8`: the MapReduce-like traces of the BID reproduction;
    /// `tpcc:requests=10000`: the TPC-C-like streams of the QoS reproduction, SPC format).
    Gen {
        /// Generator and options: `mapreduce:workload=NAME[,maps=,reduces=,slots=,scale=,load=,span_gb=,seed=]`
        /// or `tpcc[:requests=,streams=,span_mb=,reads=,page_kb=,ro_share=,append_share=,seed=]`.
        spec: String,
        /// Write the trace here instead of stdout.
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Check the models against closed forms, published parameters and the papers' worked examples.
    Validate {
        /// Fewer samples (faster, wider tolerances where noted).
        #[arg(long)]
        quick: bool,
        /// Only this group (see `vsim list`).
        #[arg(long)]
        group: Option<String>,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
        /// Write validate.json (the cases, as --json prints them) and summary.json
        /// into this directory, then the HTML report DIR/report.html (`vlab report`).
        #[arg(long, value_name = "DIR")]
        report: Option<PathBuf>,
    },
    /// Simulator speed: requests per second on one core, and memory for a long trace.
    Bench {
        /// Requests per speed case (at least 1).
        #[arg(long, default_value_t = 2_000_000, value_parser = clap::value_parser!(u64).range(1..))]
        requests: u64,
        /// Trace length for the memory case (0 to skip).
        #[arg(long, default_value_t = 10_000_000)]
        trace_requests: u64,
    },
    /// Run the conformance scenarios (conformance/*.toml) on the veloces model.
    Conformance(ConformanceArgs),
    /// A parameter sweep on Ray: the Python package's (sim/py, docs/python.md), run as
    /// `$VSIM_PYTHON -m vsim.sweep ARGS` (./vsim sets VSIM_PYTHON to build/venv's Python).
    #[command(disable_help_flag = true)]
    Sweep {
        /// The arguments of `python -m vsim.sweep` (`vsim sweep --help` lists them).
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Ray Tune over a scheduler's tunables: the Python package's (sim/py, docs/python.md), run as
    /// `$VSIM_PYTHON -m vsim.tune ARGS` (./vsim sets VSIM_PYTHON to build/venv's Python).
    #[command(disable_help_flag = true)]
    Tune {
        /// The arguments of `python -m vsim.tune` (`vsim tune --help` lists them).
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// List schedulers and device models with every tunable/option (default, range, presets), and validation groups.
    List {
        /// Print the schedulers' tunables (declared default, range, unit, help) and the devices' options as JSON, for programs (the lab reads veloces's tunables from it).
        #[arg(long)]
        json: bool,
    },
    /// Build a device model and print, as JSON, what a served device shows the kernel (capacity, queue depth, erase block, discard): `vlab` checks its `vsim:` device specs with it before booting.
    Device {
        /// Device spec, e.g. cheapflash:preset=sd_a1,size=1g
        spec: String,
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Also time one 4 KiB write and its read-back on a fresh copy of the model, idle (`write_4k_ns`, `read_4k_ns`, model time): what `dilation=auto` divides the guest's per-I/O cost by.
        #[arg(long)]
        probe: bool,
    },
}

fn main() {
    // A reader that stops early (`vsim list | head`) ends vsim quietly, as it ends
    // other command-line tools, instead of making println! panic on EPIPE.
    #[cfg(unix)]
    // SAFETY: restoring a signal's default disposition before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let cli = Cli::parse();
    let r = match cli.cmd {
        Cmd::Run(a) => cmd_run(a),
        Cmd::Compare(a) => cmd_compare(a),
        Cmd::Validate {
            quick,
            group,
            json,
            report,
        } => cmd_validate(quick, group, json, report),
        Cmd::Repro(a) => cmd_repro(a),
        Cmd::Gen { spec, out } => cmd_gen(&spec, out),
        Cmd::Bench {
            requests,
            trace_requests,
        } => bench::run(requests, trace_requests),
        Cmd::Conformance(a) => cmd_conformance(a),
        Cmd::List { json } => cmd_list(json),
        Cmd::Sweep { args } => cmd_python("sweep", &args),
        Cmd::Tune { args } => cmd_python("tune", &args),
        Cmd::Device { spec, seed, probe } => cmd_device(&spec, seed, probe),
    };
    if let Err(e) = r {
        eprintln!("vsim: error: {e:#}");
        let lost = e.downcast_ref::<vsim::engine::LostIo>().is_some();
        std::process::exit(if lost { vsim::engine::LostIo::EXIT } else { 1 });
    }
}

/// `vsim sweep|tune`: the Python package's module of that name, run by the
/// interpreter VSIM_PYTHON names (the one `vsim` is installed into); exits
/// with its status.
fn cmd_python(module: &str, args: &[String]) -> Result<()> {
    let python = std::env::var_os("VSIM_PYTHON")
        .filter(|p| !p.is_empty())
        .with_context(|| {
            format!(
                "vsim {module} is the Python package's (sim/py): run it as ./vsim {module} (after make deps), or set VSIM_PYTHON to a Python with the package installed"
            )
        })?;
    let status = std::process::Command::new(&python)
        .args(["-m", &format!("vsim.{module}")])
        .args(args)
        .status()
        .with_context(|| format!("running {} -m vsim.{module}", python.to_string_lossy()))?;
    std::process::exit(status.code().unwrap_or(1));
}
