//! vsim: a fast, deterministic, trace-driven simulator of the Linux block layer,
//! its I/O schedulers and flash, disk and hybrid devices.
//!
//! Pipeline: [`workload`] -> [`engine`] (block layer: plug, merge, nr_requests)
//! -> [`stage`] (optional QoS / placement) -> [`sched`] -> [`device`].
//!
//! This is the core: the command line (sim/cli, the `vsim` binary) and the studies
//! (sim/studies: repro, validate, bench) use it; it uses neither (tests/layers.rs).

pub mod compare;
pub mod config;
pub mod conformance;
pub mod device;
pub mod engine;
pub mod metrics;
pub mod params;
pub mod report;
pub mod sched;
pub mod serve;
pub mod stage;
pub mod types;
pub mod verdict;
pub mod workload;
