//! Per-job and per-operation statistics: exact moments and HDR histograms of
//! total latency and of its parts, throughput, fio's depth and latency
//! distributions, and time series (per job, and the device's: [`DeviceSeries`]).
//!
//! Latency parts (fio's names): slat = submission -> the bio is in the
//! scheduler (the submitting task sleeps for a request when `nr_requests` are
//! allocated); clat = the rest, to completion; lat = slat + clat. vsim's own
//! split: queue = submission -> dispatch, device = dispatch -> completion.
//!
//! The time series is sparse (only intervals with completions are held) and
//! bounded: past [`MAX_SERIES_POINTS`] points the interval doubles and
//! neighbouring points merge, so its memory does not grow with the simulated
//! time span (a trace spanning a month holds the same as one of a minute).

use crate::types::{Ns, Op};
use hdrhistogram::Histogram;
use serde_json::{json, Value};
use std::fmt::Write as _;

mod disk;
pub mod iolog;
mod job;
mod latency;
mod series;

use latency::percentile;

pub use disk::{jain_index, DiskStats, ProcStats, MAX_PROCESSES};
pub use job::JobStats;
pub use latency::{fio_plat_idx, fio_plat_val, lat_json, Lat, Moments, OpStats, PERCENTILES};
pub use series::{DeviceRow, DeviceSeries, Interval, Series, MAX_SERIES_POINTS};
#[cfg(test)]
mod tests;
