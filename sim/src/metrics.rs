//! Per-job and per-operation statistics: HDR histograms of total latency and of
//! its queue (submit -> dispatch) and device (dispatch -> complete) parts,
//! throughput, and a time series.
//!
//! The time series is sparse (only intervals with completions are held) and
//! bounded: past [`MAX_SERIES_POINTS`] points the interval doubles and
//! neighbouring points merge, so its memory does not grow with the simulated
//! time span (a trace spanning a month holds the same as one of a minute).

use crate::types::{Ns, Op};
use hdrhistogram::Histogram;
use serde_json::{json, Value};

/// Percentiles reported, as fio's defaults plus 99.99.
pub const PERCENTILES: &[f64] = &[
    1.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.95,
    99.99,
];

fn hist() -> Histogram<u64> {
    // 1 ns .. 1 hour at 3 significant digits; values above saturate.
    Histogram::new_with_bounds(1, 3_600_000_000_000, 3).expect("static histogram bounds are valid")
}

#[derive(Clone)]
pub struct OpStats {
    pub ios: u64,
    pub bytes: u64,
    pub lat: Histogram<u64>,
    pub queue: Histogram<u64>,
    pub device: Histogram<u64>,
}

impl Default for OpStats {
    fn default() -> Self {
        OpStats {
            ios: 0,
            bytes: 0,
            lat: hist(),
            queue: hist(),
            device: hist(),
        }
    }
}

impl OpStats {
    pub fn record(&mut self, bytes: u64, lat: Ns, queue: Ns, device: Ns) {
        self.ios += 1;
        self.bytes += bytes;
        self.lat.saturating_record(lat.max(1));
        self.queue.saturating_record(queue.max(1));
        self.device.saturating_record(device.max(1));
    }

    pub fn merge(&mut self, o: &OpStats) {
        self.ios += o.ios;
        self.bytes += o.bytes;
        let _ = self.lat.add(&o.lat);
        let _ = self.queue.add(&o.queue);
        let _ = self.device.add(&o.device);
    }

    pub fn iops(&self, elapsed: Ns) -> f64 {
        if elapsed == 0 {
            0.0
        } else {
            self.ios as f64 * 1e9 / elapsed as f64
        }
    }

    /// Bandwidth in KiB/s, as fio's `bw`.
    pub fn bw_kib(&self, elapsed: Ns) -> f64 {
        if elapsed == 0 {
            0.0
        } else {
            self.bytes as f64 / 1024.0 * 1e9 / elapsed as f64
        }
    }

    pub fn pct(&self, p: f64) -> u64 {
        if self.ios == 0 {
            0
        } else {
            self.lat.value_at_quantile(p / 100.0)
        }
    }

    fn hist_json(h: &Histogram<u64>, n: u64) -> Value {
        if n == 0 {
            return json!({"min": 0, "max": 0, "mean": 0.0, "stddev": 0.0, "N": 0, "percentile": {}});
        }
        let mut pct = serde_json::Map::new();
        for p in PERCENTILES {
            pct.insert(format!("{p:.6}"), json!(h.value_at_quantile(p / 100.0)));
        }
        json!({
            "min": h.min(), "max": h.max(), "mean": h.mean(), "stddev": h.stdev(), "N": n,
            "percentile": pct,
        })
    }

    /// fio's per-direction object; `lat_ns`/`clat_ns` as fio, plus vsim's
    /// `queue_ns` and `device_ns` split of the latency.
    pub fn to_json(&self, elapsed: Ns) -> Value {
        json!({
            "io_bytes": self.bytes,
            "io_kbytes": self.bytes / 1024,
            "bw": self.bw_kib(elapsed),
            "bw_bytes": self.bytes as f64 * 1e9 / elapsed.max(1) as f64,
            "iops": self.iops(elapsed),
            "runtime": elapsed / 1_000_000,
            "total_ios": self.ios,
            "lat_ns": Self::hist_json(&self.lat, self.ios),
            "clat_ns": Self::hist_json(&self.lat, self.ios),
            "slat_ns": {"min": 0, "max": 0, "mean": 0.0, "stddev": 0.0, "N": self.ios},
            "queue_ns": Self::hist_json(&self.queue, self.ios),
            "device_ns": Self::hist_json(&self.device, self.ios),
        })
    }
}

/// One interval of the time series.
#[derive(Clone, Copy, Default, Debug)]
pub struct Interval {
    pub ios: [u64; 2],
    pub bytes: [u64; 2],
    pub lat_sum: [u128; 2],
}

/// Most points a job's time series holds before its interval doubles.
pub const MAX_SERIES_POINTS: usize = 1 << 15;

/// A sparse time series of fixed-width intervals whose width doubles (and
/// points merge) when it would exceed [`MAX_SERIES_POINTS`] points.
#[derive(Clone, Default, Debug)]
pub struct Series {
    /// Interval width in ns (0 = no series); set by the first record.
    interval: u64,
    /// (interval index, figures), indexes increasing.
    points: Vec<(u64, Interval)>,
}

impl Series {
    /// The interval width in ns: the one asked for, doubled as often as
    /// needed to bound the number of points.
    pub fn interval(&self) -> u64 {
        self.interval
    }

    /// (interval start in ns, figures) of the intervals with completions.
    pub fn points(&self) -> impl Iterator<Item = (u64, &Interval)> + '_ {
        self.points
            .iter()
            .map(|(i, iv)| (i.saturating_mul(self.interval), iv))
    }

    pub fn len(&self) -> usize {
        self.points.len()
    }

    pub fn is_empty(&self) -> bool {
        self.points.is_empty()
    }

    /// The interval holding `now` (a series of width `interval` from the
    /// first call on), to add one completion to.
    fn slot(&mut self, now: Ns, interval: Ns) -> &mut Interval {
        if self.interval == 0 {
            self.interval = interval;
        }
        let mut i = now / self.interval;
        if self.points.last().is_none_or(|p| p.0 < i) {
            if self.points.len() >= MAX_SERIES_POINTS {
                // Down to half, so that coarsening is amortised; indexes halve
                // each round, so this ends (at worst with one point).
                while self.points.len() > MAX_SERIES_POINTS / 2 {
                    self.coarsen();
                }
                i = now / self.interval;
            }
            if self.points.last().is_none_or(|p| p.0 < i) {
                self.points.push((i, Interval::default()));
            }
        }
        // Completions come in time order: the slot is the last one, but an
        // earlier time (not produced by the engine) still lands in its own.
        let k = match self.points.binary_search_by_key(&i, |p| p.0) {
            Ok(k) => k,
            Err(k) => {
                self.points.insert(k, (i, Interval::default()));
                k
            }
        };
        &mut self.points[k].1
    }

    /// Double the interval, merging pairs of neighbouring points.
    fn coarsen(&mut self) {
        self.interval = self.interval.saturating_mul(2);
        let mut out: Vec<(u64, Interval)> = Vec::with_capacity(self.points.len());
        for (i, iv) in self.points.drain(..) {
            let j = i / 2;
            match out.last_mut() {
                Some(last) if last.0 == j => {
                    for op in 0..2 {
                        last.1.ios[op] += iv.ios[op];
                        last.1.bytes[op] += iv.bytes[op];
                        last.1.lat_sum[op] += iv.lat_sum[op];
                    }
                }
                _ => out.push((j, iv)),
            }
        }
        self.points = out;
    }
}

#[derive(Clone)]
pub struct JobStats {
    pub name: String,
    pub ops: [OpStats; 2],
    pub series: Series,
}

impl JobStats {
    pub fn new(name: &str) -> Self {
        JobStats {
            name: name.to_string(),
            ops: [OpStats::default(), OpStats::default()],
            series: Series::default(),
        }
    }

    #[allow(clippy::too_many_arguments)]
    pub fn record(
        &mut self,
        op: Op,
        bytes: u64,
        lat: Ns,
        queue: Ns,
        device: Ns,
        now: Ns,
        interval: Ns,
    ) {
        self.ops[op.idx()].record(bytes, lat, queue, device);
        if interval > 0 {
            let s = self.series.slot(now, interval);
            s.ios[op.idx()] += 1;
            s.bytes[op.idx()] += bytes;
            s.lat_sum[op.idx()] += lat as u128;
        }
    }
}

/// Per-process (PID) figures: I/Os, bytes and a total-latency histogram per
/// direction, at 2 significant digits so that traces with many PIDs stay small.
#[derive(Clone)]
pub struct ProcStats {
    pub ios: [u64; 2],
    pub bytes: [u64; 2],
    pub lat: [Histogram<u64>; 2],
}

impl Default for ProcStats {
    fn default() -> Self {
        let h = || {
            Histogram::new_with_bounds(1, 3_600_000_000_000, 2)
                .expect("static histogram bounds are valid")
        };
        ProcStats {
            ios: [0; 2],
            bytes: [0; 2],
            lat: [h(), h()],
        }
    }
}

impl ProcStats {
    pub fn record(&mut self, op: Op, bytes: u64, lat: Ns) {
        let i = op.idx();
        self.ios[i] += 1;
        self.bytes[i] += bytes;
        self.lat[i].saturating_record(lat.max(1));
    }

    pub fn to_json(&self, pid: u32, elapsed: Ns) -> Value {
        let dir = |i: usize| {
            let h = &self.lat[i];
            let n = self.ios[i];
            json!({
                "total_ios": n,
                "io_bytes": self.bytes[i],
                "iops": n as f64 * 1e9 / elapsed.max(1) as f64,
                "lat_ns": {
                    "mean": if n > 0 { h.mean() } else { 0.0 },
                    "p50": if n > 0 { h.value_at_quantile(0.5) } else { 0 },
                    "p99": if n > 0 { h.value_at_quantile(0.99) } else { 0 },
                    "max": if n > 0 { h.max() } else { 0 },
                },
            })
        };
        json!({"pid": pid, "read": dir(0), "write": dir(1)})
    }
}

/// Jain's fairness index of a set of throughputs: (Σx)² / (n·Σx²), 1 = equal.
pub fn jain_index(xs: &[f64]) -> f64 {
    let n = xs.len() as f64;
    let s: f64 = xs.iter().sum();
    let s2: f64 = xs.iter().map(|x| x * x).sum();
    if n == 0.0 || s2 == 0.0 {
        1.0
    } else {
        s * s / (n * s2)
    }
}
