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

/// Percentiles reported, as fio's defaults plus 99.99.
pub const PERCENTILES: &[f64] = &[
    1.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.95,
    99.99,
];

fn hist() -> Histogram<u64> {
    // 1 ns .. 1 hour at 3 significant digits; values above saturate.
    Histogram::new_with_bounds(1, 3_600_000_000_000, 3).expect("static histogram bounds are valid")
}

/// Exact count, min, max, mean and standard deviation of a series of values:
/// integer sums, so merging is exact and independent of order (fio's
/// `min`/`max`/`mean`/`stddev`/`N`; the stddev is the sample one, n - 1, as fio).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Moments {
    pub n: u64,
    pub min: u64,
    pub max: u64,
    sum: u128,
    sumsq: u128,
}

impl Moments {
    #[inline]
    pub fn add(&mut self, v: u64) {
        if self.n == 0 || v < self.min {
            self.min = v;
        }
        self.max = self.max.max(v);
        self.n += 1;
        self.sum += v as u128;
        self.sumsq = self.sumsq.saturating_add(v as u128 * v as u128);
    }

    /// `k` values of `v` at once.
    pub fn add_repeated(&mut self, v: u64, k: u64) {
        if k == 0 {
            return;
        }
        if self.n == 0 || v < self.min {
            self.min = v;
        }
        self.max = self.max.max(v);
        self.n += k;
        self.sum += v as u128 * k as u128;
        self.sumsq = self
            .sumsq
            .saturating_add((v as u128 * v as u128).saturating_mul(k as u128));
    }

    pub fn merge(&mut self, o: &Moments) {
        if o.n == 0 {
            return;
        }
        if self.n == 0 || o.min < self.min {
            self.min = o.min;
        }
        self.max = self.max.max(o.max);
        self.n += o.n;
        self.sum += o.sum;
        self.sumsq = self.sumsq.saturating_add(o.sumsq);
    }

    pub fn mean(&self) -> f64 {
        if self.n == 0 {
            0.0
        } else {
            self.sum as f64 / self.n as f64
        }
    }

    pub fn stddev(&self) -> f64 {
        if self.n < 2 {
            return 0.0;
        }
        let n = self.n as u128;
        // n·Σx² − (Σx)², exactly where it fits, else in floating point.
        let num = match (n.checked_mul(self.sumsq), self.sum.checked_mul(self.sum)) {
            (Some(a), Some(b)) => a.saturating_sub(b) as f64,
            _ => (self.sumsq as f64 * n as f64 - (self.sum as f64).powi(2)).max(0.0),
        };
        (num / (n as f64 * (n - 1) as f64)).sqrt()
    }
}

/// fio's latency histogram (stat.h, FIO_IO_U_PLAT_BITS = 6, 29 groups): the
/// bucket of a value in ns. Exact below 128 ns, then 64 buckets per power of two.
pub fn fio_plat_idx(v: u64) -> usize {
    const BITS: u32 = 6;
    const NR: usize = 29 << BITS;
    if v == 0 {
        return 0;
    }
    let msb = 63 - v.leading_zeros();
    if msb <= BITS {
        return v as usize;
    }
    let err = msb - BITS;
    let base = ((err + 1) << BITS) as usize;
    let off = ((v >> err) & ((1 << BITS) - 1)) as usize;
    (base + off).min(NR - 1)
}

/// The value fio writes for bucket `idx` (the middle of its range).
pub fn fio_plat_val(idx: usize) -> u64 {
    if idx < 128 {
        return idx as u64;
    }
    let err = (idx >> 6) - 1;
    let base = 1u64 << (err + 6);
    let k = (idx % 64) as u64;
    base + (k << err) + ((1u64 << err) >> 1)
}

/// A latency object as fio writes one (`slat_ns`, `clat_ns`, `lat_ns`):
/// min, max, mean, stddev, N; with `h`, the percentiles; with `bins` too,
/// json+'s `bins` (fio's bucket value -> count).
pub fn lat_json(m: &Moments, h: Option<&Histogram<u64>>, bins: bool) -> Value {
    let mut o = serde_json::Map::new();
    o.insert("min".into(), json!(m.min));
    o.insert("max".into(), json!(m.max));
    o.insert("mean".into(), json!(m.mean()));
    o.insert("stddev".into(), json!(m.stddev()));
    o.insert("N".into(), json!(m.n));
    if let (Some(h), true) = (h, m.n > 0) {
        let mut pct = serde_json::Map::new();
        for p in PERCENTILES {
            pct.insert(format!("{p:.6}"), json!(percentile(h, m, *p)));
        }
        o.insert("percentile".into(), Value::Object(pct));
        if bins {
            let mut b: std::collections::BTreeMap<usize, u64> = Default::default();
            for v in h.iter_recorded() {
                let x = h.median_equivalent(v.value_iterated_to());
                *b.entry(fio_plat_idx(x)).or_default() += v.count_at_value();
            }
            let b: serde_json::Map<String, Value> = b
                .into_iter()
                .map(|(i, c)| (fio_plat_val(i).to_string(), json!(c)))
                .collect();
            o.insert("bins".into(), Value::Object(b));
        }
    }
    Value::Object(o)
}

/// Percentile `p` of a histogram, kept within the exact [min, max].
fn percentile(h: &Histogram<u64>, m: &Moments, p: f64) -> u64 {
    if m.n == 0 {
        return 0;
    }
    h.value_at_quantile(p / 100.0).clamp(m.min, m.max)
}

#[derive(Clone)]
pub struct OpStats {
    pub ios: u64,
    pub bytes: u64,
    /// Total latency (fio's lat).
    pub lat: Histogram<u64>,
    /// Completion latency (fio's clat: lat minus slat), kept apart from `lat`
    /// only once some I/O had a slat (until then the two are the same).
    clat: Option<Histogram<u64>>,
    pub queue: Histogram<u64>,
    pub device: Histogram<u64>,
    pub lat_m: Moments,
    pub clat_m: Moments,
    pub slat_m: Moments,
}

impl Default for OpStats {
    fn default() -> Self {
        OpStats {
            ios: 0,
            bytes: 0,
            lat: hist(),
            clat: None,
            queue: hist(),
            device: hist(),
            lat_m: Moments::default(),
            clat_m: Moments::default(),
            slat_m: Moments::default(),
        }
    }
}

/// Latencies of one completed bio.
#[derive(Clone, Copy, Debug, Default)]
pub struct Lat {
    /// Submission -> completion (fio's lat).
    pub total: Ns,
    /// Submission -> in the scheduler (fio's slat).
    pub slat: Ns,
    /// Submission -> dispatch.
    pub queue: Ns,
    /// Dispatch -> completion.
    pub device: Ns,
}

impl OpStats {
    pub fn record(&mut self, bytes: u64, l: Lat) {
        self.ios += 1;
        self.bytes += bytes;
        let clat = l.total - l.slat.min(l.total);
        if clat != l.total && self.clat.is_none() {
            self.clat = Some(self.lat.clone());
        }
        self.lat.saturating_record(l.total.max(1));
        if let Some(h) = self.clat.as_mut() {
            h.saturating_record(clat.max(1));
        }
        self.queue.saturating_record(l.queue.max(1));
        self.device.saturating_record(l.device.max(1));
        self.lat_m.add(l.total);
        self.clat_m.add(clat);
        self.slat_m.add(l.slat);
    }

    pub fn merge(&mut self, o: &OpStats) {
        self.ios += o.ios;
        self.bytes += o.bytes;
        if self.clat.is_some() || o.clat.is_some() {
            let mut c = self.clat.take().unwrap_or_else(|| self.lat.clone());
            let _ = c.add(o.clat_hist());
            self.clat = Some(c);
        }
        let _ = self.lat.add(&o.lat);
        let _ = self.queue.add(&o.queue);
        let _ = self.device.add(&o.device);
        self.lat_m.merge(&o.lat_m);
        self.clat_m.merge(&o.clat_m);
        self.slat_m.merge(&o.slat_m);
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

    /// vsim's split of the latency (not fio's): `queue_ns` (submission ->
    /// dispatch) and `device_ns` (dispatch -> completion), from the histograms.
    pub fn split_json(&self) -> Value {
        let h = |h: &Histogram<u64>| {
            if self.ios == 0 {
                return json!({"min": 0, "max": 0, "mean": 0.0, "stddev": 0.0, "N": 0});
            }
            let mut pct = serde_json::Map::new();
            for p in PERCENTILES {
                pct.insert(format!("{p:.6}"), json!(h.value_at_quantile(p / 100.0)));
            }
            json!({"min": h.min(), "max": h.max(), "mean": h.mean(), "stddev": h.stdev(),
                   "N": self.ios, "percentile": pct})
        };
        json!({"queue_ns": h(&self.queue), "device_ns": h(&self.device)})
    }

    /// The completion-latency histogram.
    pub fn clat_hist(&self) -> &Histogram<u64> {
        self.clat.as_ref().unwrap_or(&self.lat)
    }

    /// Percentile of the total latency, in ns (0 without I/O).
    pub fn pct(&self, p: f64) -> u64 {
        percentile(&self.lat, &self.lat_m, p)
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
        // The common case: the completion falls in the newest interval.
        if self.points.last().is_some_and(|p| p.0 == i) {
            let k = self.points.len() - 1;
            return &mut self.points[k].1;
        }
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

/// The device's time series (`RunReport::device_series_csv`): per interval,
/// the time-averaged number of requests at the device and of requests held by
/// the scheduler (allocated, not yet dispatched), and the device's counters
/// at the interval's end.
///
/// The engine calls [`DeviceSeries::advance`] before each event with what was
/// held since the previous one: that is constant between events, so the
/// averages are exact integrals, and the per-event cost is a comparison and
/// two multiply-adds. The counters (`Device::counters`, which builds JSON) are
/// read only when an interval closes, at most once per interval that had an
/// event: between events the device is not called, so its counters cannot
/// change.
///
/// Bounded as [`Series`]: past [`MAX_SERIES_POINTS`] points the interval
/// doubles and neighbouring points merge (integrals add, the later counters
/// stay). Idle intervals (nothing at the device or in the scheduler, and no
/// counter changed) are left out, so a trace's quiet hours cost nothing: a
/// missing interval means zero requests and the previous row's counters.
#[derive(Clone, Debug)]
pub struct DeviceSeries {
    /// Interval width in ns (0 = no series).
    interval: Ns,
    /// The numeric counters (bools as 0/1) of the first sample, sorted.
    columns: Vec<String>,
    /// (interval index, [∫ requests at the device dt, ∫ requests in the
    /// scheduler dt] in request·ns), indexes increasing.
    points: Vec<(u64, [u128; 2])>,
    /// Counters at each point's end, `columns.len()` per point (NaN: not in
    /// that sample, or not a number there).
    values: Vec<f64>,
    /// The counters at the end of the interval being closed, and at the end
    /// of the one before it (an interval is idle only if they are the same).
    now: Vec<f64>,
    base: Vec<f64>,
    /// Time up to which `area` holds the current interval's integrals, and
    /// the end of that interval (`Ns::MAX` without a series: never reached).
    last_t: Ns,
    next: Ns,
    area: [u128; 2],
    /// The end of the series (the run's end): the last point may be shorter.
    end: Ns,
}

impl Default for DeviceSeries {
    fn default() -> Self {
        DeviceSeries {
            interval: 0,
            columns: Vec::new(),
            points: Vec::new(),
            values: Vec::new(),
            now: Vec::new(),
            base: Vec::new(),
            last_t: 0,
            next: Ns::MAX,
            area: [0; 2],
            end: 0,
        }
    }
}

/// One row of a [`DeviceSeries`].
#[derive(Clone, Copy, Debug)]
pub struct DeviceRow<'a> {
    /// Interval start, ns.
    pub start: Ns,
    /// Width of the interval within the run, ns (the last may be cut short).
    pub width: Ns,
    /// Time-averaged requests at the device, and in the scheduler.
    pub in_flight: f64,
    pub queued: f64,
    /// The counters at the interval's end, in [`DeviceSeries::columns`] order.
    pub counters: &'a [f64],
}

impl DeviceSeries {
    /// A series of width `interval` (0 = none) from time 0; `counters` are
    /// the device's at time 0 and fix the columns.
    pub fn new(interval: Ns, counters: &Value) -> Self {
        let mut s = DeviceSeries::default();
        if interval == 0 {
            return s;
        }
        s.interval = interval;
        s.next = interval;
        if let Value::Object(m) = counters {
            s.columns = m
                .iter()
                .filter(|(_, v)| v.is_number() || v.is_boolean())
                .map(|(k, _)| k.clone())
                .collect();
            s.columns.sort();
        }
        s.read(counters);
        s.base.clone_from(&s.now);
        s
    }

    /// The interval width in ns: the one asked for, doubled as often as
    /// needed to bound the number of points (0 = no series).
    pub fn interval(&self) -> Ns {
        self.interval
    }

    /// The counter columns, sorted.
    pub fn columns(&self) -> &[String] {
        &self.columns
    }

    pub fn len(&self) -> usize {
        self.points.len()
    }

    pub fn is_empty(&self) -> bool {
        self.points.is_empty()
    }

    /// The device held `held[0]` requests and the scheduler `held[1]` from
    /// the previous call until `t` (calls in time order); `counters` reads
    /// the device's counters, called only if an interval ends by `t`.
    #[inline]
    pub fn advance(&mut self, t: Ns, held: [u32; 2], counters: impl Fn() -> Value) {
        if t < self.next {
            self.add(t, held);
        } else {
            self.cross(t, held, &counters);
        }
    }

    /// The run ended at `end` (the state held until then as for
    /// [`DeviceSeries::advance`]): close the last, partial interval.
    pub fn finish(&mut self, end: Ns, held: [u32; 2], counters: impl Fn() -> Value) {
        if self.interval == 0 {
            return;
        }
        let end = end.max(self.last_t);
        self.advance(end, held, &counters);
        if self.last_t > self.next - self.interval {
            self.read(&counters());
            self.close();
        }
        self.end = end;
    }

    #[inline]
    fn add(&mut self, t: Ns, held: [u32; 2]) {
        let dt = t.saturating_sub(self.last_t) as u128;
        self.area[0] += held[0] as u128 * dt;
        self.area[1] += held[1] as u128 * dt;
        self.last_t = self.last_t.max(t);
    }

    /// `t` is at or past the end of the current interval: close it, and the
    /// whole intervals up to `t`'s (the state and counters did not change in
    /// them: all alike, or all idle and skipped at once).
    #[cold]
    #[inline(never)]
    fn cross(&mut self, t: Ns, held: [u32; 2], counters: &dyn Fn() -> Value) {
        let mut fresh = true;
        while t >= self.next {
            let b = self.next;
            self.add(b, held);
            if fresh {
                self.read(&counters());
                fresh = false;
            }
            self.close();
            if held == [0, 0] && t >= self.next {
                self.last_t = t / self.interval * self.interval;
                self.next = self.last_t.saturating_add(self.interval);
            }
        }
        self.add(t, held);
    }

    /// Counters into `self.now`, in column order.
    fn read(&mut self, counters: &Value) {
        self.now.clear();
        for k in &self.columns {
            self.now.push(match counters.get(k) {
                Some(Value::Bool(b)) => f64::from(u8::from(*b)),
                Some(v) => v.as_f64().unwrap_or(f64::NAN),
                None => f64::NAN,
            });
        }
    }

    /// Close the interval ending at `last_t` (a boundary, or the run's end),
    /// whose counters are in `now`: record it unless idle.
    fn close(&mut self) {
        let same = self
            .now
            .iter()
            .zip(&self.base)
            .all(|(a, b)| a.to_bits() == b.to_bits());
        if self.area != [0, 0] || !same {
            self.record();
        }
        self.area = [0; 2];
        self.base.clone_from(&self.now);
        self.next = (self.last_t / self.interval + 1).saturating_mul(self.interval);
    }

    fn record(&mut self) {
        let mut idx = (self.last_t - 1) / self.interval;
        if self.points.last().is_none_or(|p| p.0 != idx) && self.points.len() >= MAX_SERIES_POINTS {
            // Down to half, so that coarsening is amortised (as `Series`).
            while self.points.len() > MAX_SERIES_POINTS / 2 {
                self.coarsen();
            }
            idx = (self.last_t - 1) / self.interval;
        }
        let n = self.columns.len();
        match self.points.last_mut() {
            // The rest of a point that coarsening made longer.
            Some(p) if p.0 == idx => {
                p.1[0] += self.area[0];
                p.1[1] += self.area[1];
                let k = self.values.len() - n;
                self.values[k..].copy_from_slice(&self.now);
            }
            _ => {
                self.points.push((idx, self.area));
                self.values.extend_from_slice(&self.now);
            }
        }
    }

    /// Double the interval, merging pairs of neighbouring points (integrals
    /// add; the later point's counters are those at the pair's end).
    fn coarsen(&mut self) {
        self.interval = self.interval.saturating_mul(2);
        let n = self.columns.len();
        let mut k = 0;
        for r in 0..self.points.len() {
            let (i, a) = self.points[r];
            let j = i / 2;
            if k > 0 && self.points[k - 1].0 == j {
                self.points[k - 1].1[0] += a[0];
                self.points[k - 1].1[1] += a[1];
            } else {
                self.points[k] = (j, a);
                k += 1;
            }
            self.values.copy_within(r * n..(r + 1) * n, (k - 1) * n);
        }
        self.points.truncate(k);
        self.values.truncate(k * n);
        self.next = (self.last_t / self.interval + 1).saturating_mul(self.interval);
    }

    /// The rows, in time order.
    pub fn rows(&self) -> impl Iterator<Item = DeviceRow<'_>> + '_ {
        let n = self.columns.len();
        self.points.iter().enumerate().map(move |(k, (i, a))| {
            let start = i.saturating_mul(self.interval);
            let end = start.saturating_add(self.interval);
            let width = if self.end > start {
                end.min(self.end) - start
            } else {
                self.interval
            };
            let avg = |x: u128| x as f64 / width.max(1) as f64;
            DeviceRow {
                start,
                width,
                in_flight: avg(a[0]),
                queued: avg(a[1]),
                counters: &self.values[k * n..(k + 1) * n],
            }
        })
    }

    /// The series as CSV: `time_s,in_flight,queued,<counters...>`, one row
    /// per interval that was not idle; `time_s` (the interval's start) with as
    /// many decimals as the interval needs (at least 3), the averages with 3,
    /// counters as numbers (integers without a fraction; empty where a sample
    /// lacked one).
    pub fn csv(&self) -> String {
        let mut s = String::from("time_s,in_flight,queued");
        for c in &self.columns {
            s.push(',');
            s.push_str(c);
        }
        s.push('\n');
        let mut dec: u32 = 3;
        while dec < 9 && !self.interval.is_multiple_of(10u64.pow(9 - dec)) {
            dec += 1;
        }
        for r in self.rows() {
            let _ = write!(
                s,
                "{}.{:0dec$},{:.3},{:.3}",
                r.start / 1_000_000_000,
                r.start % 1_000_000_000 / 10u64.pow(9 - dec),
                r.in_flight,
                r.queued,
                dec = dec as usize
            );
            for v in r.counters {
                if v.is_finite() {
                    let _ = write!(s, ",{v}");
                } else {
                    s.push(',');
                }
            }
            s.push('\n');
        }
        s
    }
}

/// fio's depth buckets for `iodepth_level` (1, 2, 4, ..., >=64).
fn depth_idx(d: u32) -> usize {
    match d {
        0..=1 => 0,
        2..=3 => 1,
        4..=7 => 2,
        8..=15 => 3,
        16..=31 => 4,
        32..=63 => 5,
        _ => 6,
    }
}

/// fio's buckets for `iodepth_submit`/`iodepth_complete` (0, 4, 8, ..., >=64).
fn batch_idx(n: u32) -> usize {
    match n {
        0 => 0,
        1..=4 => 1,
        5..=8 => 2,
        9..=16 => 3,
        17..=32 => 4,
        33..=64 => 5,
        _ => 6,
    }
}

/// fio's latency distribution bucket (`latency_ns` 0..10, `latency_us` 10..20,
/// `latency_ms` 20..32) of a completion latency.
fn lat_dist_idx(ns: Ns) -> usize {
    const EDGES: [u64; 9] = [2, 4, 10, 20, 50, 100, 250, 500, 750];
    let within = |v: u64| EDGES.iter().take_while(|&&e| v >= e).count();
    if ns < 1_000 {
        within(ns)
    } else if ns < 1_000_000 {
        10 + within(ns / 1_000)
    } else {
        let ms = ns / 1_000_000;
        20 + if ms >= 2000 {
            11
        } else if ms >= 1000 {
            10
        } else {
            within(ms)
        }
    }
}

#[derive(Clone)]
pub struct JobStats {
    pub name: String,
    /// The job's options as given (fio's `job options`).
    pub options: Vec<(String, String)>,
    pub ops: [OpStats; 2],
    pub series: Series,
    /// Time of the job's last measured completion.
    pub end: Ns,
    inflight: u32,
    pending_reap: u32,
    depth_map: [u64; 7],
    submit_map: [u64; 7],
    complete_map: [u64; 7],
    total_submit: u64,
    total_complete: u64,
    lat_dist: [u64; 32],
}

impl JobStats {
    pub fn new(name: &str) -> Self {
        JobStats {
            name: name.to_string(),
            options: Vec::new(),
            ops: [OpStats::default(), OpStats::default()],
            series: Series::default(),
            end: 0,
            inflight: 0,
            pending_reap: 0,
            depth_map: [0; 7],
            submit_map: [0; 7],
            complete_map: [0; 7],
            total_submit: 0,
            total_complete: 0,
            lat_dist: [0; 32],
        }
    }

    /// The job submitted `n` bios at once (one io_submit): fio's depth and
    /// submit-batch distributions. `measured`: the submission falls in the
    /// measured window (after fio's `ramp_time`); before it only the depth is
    /// followed, as fio resets these distributions when the ramp ends.
    pub fn submitted(&mut self, n: usize, measured: bool) {
        if n == 0 {
            return;
        }
        for _ in 0..n {
            self.inflight += 1;
            if measured {
                self.depth_map[depth_idx(self.inflight)] += 1;
            }
        }
        if measured {
            self.submit_map[batch_idx(n as u32)] += 1;
            self.total_submit += 1;
        }
    }

    /// The bios of this job completed by one completion event have been
    /// recorded: one reap of that many (fio's `iodepth_complete`).
    pub fn reaped(&mut self) {
        if self.pending_reap > 0 {
            self.complete_map[batch_idx(self.pending_reap)] += 1;
            self.total_complete += 1;
            self.pending_reap = 0;
        }
    }

    /// A bio of this job completed outside the measured window (within fio's
    /// `ramp_time`): it leaves the depth count and no figure.
    pub fn completed_unmeasured(&mut self) {
        self.inflight = self.inflight.saturating_sub(1);
    }

    /// A bio of this job completed in the measured window: every figure.
    pub fn record(&mut self, op: Op, bytes: u64, l: Lat, now: Ns, interval: Ns) {
        self.ops[op.idx()].record(bytes, l);
        self.inflight = self.inflight.saturating_sub(1);
        self.pending_reap += 1;
        self.end = now;
        self.lat_dist[lat_dist_idx(l.total - l.slat.min(l.total))] += 1;
        if interval > 0 {
            let s = self.series.slot(now, interval);
            s.ios[op.idx()] += 1;
            s.bytes[op.idx()] += bytes;
            s.lat_sum[op.idx()] += l.total as u128;
        }
    }

    /// Per-interval samples of one direction (fio's bw and iops logs):
    /// (KiB/s, IOPS) of each whole time-series interval within `start ..
    /// start + runtime`, intervals without completions as 0. The series is
    /// sparse, so a long quiet span costs nothing.
    fn samples(&self, op: usize, start: Ns, runtime: Ns) -> (Moments, Moments) {
        let (mut bw, mut iops) = (Moments::default(), Moments::default());
        let interval = self.series.interval();
        if interval == 0 || self.ops[op].ios == 0 {
            return (bw, iops);
        }
        let end = start.saturating_add(runtime);
        let (lo, hi) = (start.div_ceil(interval), end / interval);
        if hi <= lo {
            return (bw, iops);
        }
        let mut held = 0;
        for (t, iv) in self.series.points() {
            let i = t / interval;
            if i < lo || i >= hi {
                continue;
            }
            held += 1;
            bw.add((iv.bytes[op] as u128 * 1_000_000_000 / 1024 / interval as u128) as u64);
            iops.add((iv.ios[op] as u128 * 1_000_000_000 / interval as u128) as u64);
        }
        bw.add_repeated(0, hi - lo - held);
        iops.add_repeated(0, hi - lo - held);
        (bw, iops)
    }

    /// fio's `read`/`write` object. `runtime` is the job's, from `start`
    /// (the end of fio's `ramp_time`, else 0), `agg_kib` the group's
    /// aggregate bandwidth of this direction (for `bw_agg`).
    pub fn dir_json(&self, op: usize, start: Ns, runtime: Ns, agg_kib: f64, plus: bool) -> Value {
        let o = &self.ops[op];
        let runtime = if o.ios > 0 { runtime } else { 0 };
        let per_s = |x: u64| {
            (x as u128 * 1_000_000_000)
                .checked_div(runtime as u128)
                .unwrap_or(0) as u64
        };
        let bw_bytes = per_s(o.bytes);
        let (bw, iops) = self.samples(op, start, runtime);
        let bw_agg = if bw.n == 0 {
            0.0
        } else if agg_kib > 0.0 {
            (bw.mean() * 100.0 / agg_kib).min(100.0)
        } else {
            100.0
        };
        json!({
            "io_bytes": o.bytes,
            "io_kbytes": o.bytes >> 10,
            "bw_bytes": bw_bytes,
            "bw": bw_bytes / 1024,
            "iops": if runtime > 0 { o.ios as f64 * 1e9 / runtime as f64 } else { 0.0 },
            "runtime": runtime / 1_000_000,
            "total_ios": o.ios,
            "short_ios": 0,
            "drop_ios": 0,
            "slat_ns": lat_json(&o.slat_m, None, false),
            "clat_ns": lat_json(&o.clat_m, Some(o.clat_hist()), plus),
            "lat_ns": lat_json(&o.lat_m, Some(&o.lat), plus),
            "bw_min": bw.min, "bw_max": bw.max, "bw_agg": bw_agg,
            "bw_mean": bw.mean(), "bw_dev": bw.stddev(), "bw_samples": bw.n,
            "iops_min": iops.min, "iops_max": iops.max, "iops_mean": iops.mean(),
            "iops_stddev": iops.stddev(), "iops_samples": iops.n,
        })
    }

    /// The job-level distributions fio writes: `iodepth_level`,
    /// `iodepth_submit`, `iodepth_complete`, `latency_ns`/`_us`/`_ms`.
    pub fn dist_json(&self) -> serde_json::Map<String, Value> {
        let total = self.ops[0].ios + self.ops[1].ios;
        let pct = |c: u64, t: u64| -> f64 {
            if t == 0 {
                return 0.0;
            }
            let p = c as f64 * 100.0 / t as f64;
            if p < 0.1 && c > 0 {
                0.1
            } else {
                p
            }
        };
        let obj = |keys: &[&str], counts: &[u64], t: u64| -> Value {
            Value::Object(
                keys.iter()
                    .zip(counts)
                    .map(|(k, c)| ((*k).to_string(), json!(pct(*c, t))))
                    .collect(),
            )
        };
        const LAT: [&str; 12] = [
            "2", "4", "10", "20", "50", "100", "250", "500", "750", "1000", "2000", ">=2000",
        ];
        let mut m = serde_json::Map::new();
        m.insert(
            "iodepth_level".into(),
            obj(
                &["1", "2", "4", "8", "16", "32", ">=64"],
                &self.depth_map,
                total,
            ),
        );
        let batch = ["0", "4", "8", "16", "32", "64", ">=64"];
        m.insert(
            "iodepth_submit".into(),
            obj(&batch, &self.submit_map, self.total_submit),
        );
        m.insert(
            "iodepth_complete".into(),
            obj(&batch, &self.complete_map, self.total_complete),
        );
        m.insert(
            "latency_ns".into(),
            obj(&LAT[..10], &self.lat_dist[..10], total),
        );
        m.insert(
            "latency_us".into(),
            obj(&LAT[..10], &self.lat_dist[10..20], total),
        );
        m.insert("latency_ms".into(), obj(&LAT, &self.lat_dist[20..], total));
        m
    }
}

/// What the kernel's /proc/diskstats counts for the device, per direction
/// (fio's `disk_util`): requests completed, sectors, bios merged into
/// requests, and the summed request lifetimes (insertion -> completion).
#[derive(Clone, Copy, Debug, Default)]
pub struct DiskStats {
    pub ios: [u64; 2],
    pub sectors: [u64; 2],
    pub merges: [u64; 2],
    pub ticks_ns: [u128; 2],
}

impl DiskStats {
    pub fn record(&mut self, op: Op, sectors: u32, nr_bios: u32, lifetime: Ns) {
        let i = op.idx();
        self.ios[i] += 1;
        self.sectors[i] += sectors as u64;
        self.merges[i] += nr_bios.saturating_sub(1) as u64;
        self.ticks_ns[i] += lifetime as u128;
    }

    /// One `disk_util[]` entry; `busy`/`elapsed` give `util` (percent of the
    /// time the device held at least one request).
    pub fn to_json(&self, name: &str, busy: Ns, elapsed: Ns) -> Value {
        let ms = |ns: u128| (ns / 1_000_000) as u64;
        let util = if elapsed > 0 {
            (busy as f64 * 100.0 / elapsed as f64).min(100.0)
        } else {
            0.0
        };
        json!({
            "name": name,
            "read_ios": self.ios[0], "write_ios": self.ios[1],
            "read_sectors": self.sectors[0], "write_sectors": self.sectors[1],
            "read_merges": self.merges[0], "write_merges": self.merges[1],
            "read_ticks": ms(self.ticks_ns[0]), "write_ticks": ms(self.ticks_ns[1]),
            "in_queue": ms(self.ticks_ns[0] + self.ticks_ns[1]),
            "util": util,
        })
    }
}

/// Per-process (PID) figures: I/Os, bytes, exact latency moments and a
/// total-latency histogram per direction (2 significant digits, so that traces
/// with many PIDs stay small: the percentiles are within 1 %; the mean, min
/// and max are exact, as the job's).
#[derive(Clone)]
pub struct ProcStats {
    pub ios: [u64; 2],
    pub bytes: [u64; 2],
    pub lat: [Histogram<u64>; 2],
    pub lat_m: [Moments; 2],
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
            lat_m: [Moments::default(); 2],
        }
    }
}

impl ProcStats {
    pub fn record(&mut self, op: Op, bytes: u64, lat: Ns) {
        let i = op.idx();
        self.ios[i] += 1;
        self.bytes[i] += bytes;
        self.lat[i].saturating_record(lat.max(1));
        self.lat_m[i].add(lat);
    }

    pub fn to_json(&self, pid: u32, elapsed: Ns) -> Value {
        let dir = |i: usize| {
            let (h, m) = (&self.lat[i], &self.lat_m[i]);
            let n = self.ios[i];
            json!({
                "total_ios": n,
                "io_bytes": self.bytes[i],
                "iops": n as f64 * 1e9 / elapsed.max(1) as f64,
                "lat_ns": {
                    "mean": m.mean(),
                    "p50": percentile(h, m, 50.0),
                    "p99": percentile(h, m, 99.0),
                    "max": m.max,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fio_buckets() {
        // Exact below 128 ns; then 64 buckets per power of two, valued at their middle.
        for v in [0u64, 1, 63, 64, 127] {
            assert_eq!(fio_plat_val(fio_plat_idx(v)), v);
        }
        assert_eq!(fio_plat_idx(128), 128);
        assert_eq!(fio_plat_idx(129), 128);
        assert_eq!(fio_plat_val(128), 129);
        assert_eq!(fio_plat_idx(256), 192);
        assert_eq!(fio_plat_val(192), 258);
        // Every value falls in the bucket whose range holds it: within 1/128.
        for v in [1_000u64, 4_096, 99_999, 1_234_567, 10_000_000_000] {
            let b = fio_plat_val(fio_plat_idx(v));
            assert!(
                (b as f64 - v as f64).abs() <= v as f64 / 128.0,
                "{v} -> {b}"
            );
        }
        // The last bucket (17.1 s, fio's range: 2^34 ns) takes everything beyond.
        assert_eq!(fio_plat_val(29 * 64 - 1), 17_112_760_320);
        assert_eq!(fio_plat_idx(u64::MAX), 29 * 64 - 1);
    }

    #[test]
    fn fio_latency_distribution_buckets() {
        let idx = |v| lat_dist_idx(v);
        assert_eq!((idx(0), idx(1), idx(2), idx(999)), (0, 0, 1, 9));
        assert_eq!(
            (idx(1_000), idx(3_999), idx(4_000), idx(999_999)),
            (10, 11, 12, 19)
        );
        assert_eq!((idx(1_000_000), idx(1_999_999_999)), (20, 30));
        assert_eq!(idx(2_000_000_000), 31);
        assert_eq!((depth_idx(1), depth_idx(3), depth_idx(64)), (0, 1, 6));
        assert_eq!(
            (batch_idx(0), batch_idx(4), batch_idx(5), batch_idx(65)),
            (0, 1, 2, 6)
        );
    }

    /// Within fio's `ramp_time`, bios are followed for the in-flight count
    /// but left out of the depth and batch distributions.
    #[test]
    fn depth_distributions_leave_the_ramp_out() {
        let mut j = JobStats::new("a");
        j.submitted(4, false);
        for _ in 0..4 {
            j.completed_unmeasured();
        }
        j.submitted(2, true);
        let l = Lat {
            total: 1_000,
            ..Lat::default()
        };
        for t in [10, 11] {
            j.record(Op::Read, 4096, l, t, 0);
        }
        j.reaped();
        let d = j.dist_json();
        // Depths 1 and 2 (not 5 and 6), of the 2 measured submissions only.
        assert_eq!(d["iodepth_level"]["1"], 50.0, "{d:?}");
        assert_eq!(d["iodepth_level"]["2"], 50.0, "{d:?}");
        assert_eq!(d["iodepth_level"]["4"], 0.0, "{d:?}");
        assert_eq!(d["iodepth_submit"]["4"], 100.0, "{d:?}");
        assert_eq!(d["iodepth_complete"]["4"], 100.0, "{d:?}");
        assert_eq!(d["latency_us"]["2"], 100.0, "{d:?}");
    }

    #[test]
    fn samples_of_a_sparse_series_count_quiet_intervals_as_zero() {
        let mut j = JobStats::new("a");
        let l = Lat {
            total: 1_000,
            ..Lat::default()
        };
        // One completion at 0.15 s and one 10^6 intervals later: the samples
        // are computed from the two points, not by walking every interval.
        for t in [150_000_000, 100_000_000 * 1_000_000 + 50] {
            j.record(Op::Read, 1024, l, t, 100_000_000);
        }
        let (bw, iops) = j.samples(0, 100_000_000, 100_000_000 * 1_000_001);
        assert_eq!((iops.n, iops.min, iops.max), (1_000_001, 0, 10));
        assert_eq!(bw.max, 10);
        assert!((iops.mean() - 20.0 / 1_000_001.0).abs() < 1e-12);
        // From a start within an interval: only whole intervals after it.
        let (_, iops) = j.samples(0, 150_000_000, 100_000_000 * 2);
        assert_eq!((iops.n, iops.max), (1, 0));
    }

    #[test]
    fn moments_are_exact_and_merge_exactly() {
        let mut a = Moments::default();
        let mut b = Moments::default();
        for v in [2u64, 4, 4, 4] {
            a.add(v);
        }
        for v in [5u64, 5, 7, 9] {
            b.add(v);
        }
        let mut all = Moments::default();
        for v in [2u64, 4, 4, 4, 5, 5, 7, 9] {
            all.add(v);
        }
        a.merge(&b);
        assert_eq!(a, all);
        assert_eq!((a.min, a.max, a.mean()), (2, 9, 5.0));
        // Sample standard deviation (n - 1), as fio: sqrt(32 / 7).
        assert!((a.stddev() - (32.0f64 / 7.0).sqrt()).abs() < 1e-12);
        assert_eq!(Moments::default().stddev(), 0.0);
    }

    #[test]
    fn clat_is_lat_minus_slat_in_the_histograms_too() {
        let rec = |o: &mut OpStats, total, slat| {
            o.record(
                4096,
                Lat {
                    total,
                    slat,
                    queue: 0,
                    device: total - slat,
                },
            )
        };
        let mut a = OpStats::default();
        for _ in 0..10 {
            rec(&mut a, 100, 0);
        }
        assert_eq!(a.clat_hist().len(), 10, "no slat yet: clat is lat");
        for _ in 0..10 {
            rec(&mut a, 1000, 900);
        }
        let (c, l) = (a.clat_hist(), &a.lat);
        assert_eq!((c.len(), l.len()), (20, 20));
        assert_eq!(c.max(), 100, "every clat is 100");
        assert!(l.max() >= 1000);
        // Merging a histogram without a slat keeps both apart correctly.
        let mut b = OpStats::default();
        rec(&mut b, 50, 0);
        b.merge(&a);
        assert_eq!(b.clat_hist().len(), 21);
        assert_eq!((b.clat_hist().min(), b.clat_hist().max()), (50, 100));
        assert_eq!((b.clat_m.n, b.clat_m.max, b.slat_m.max), (21, 100, 900));
    }

    fn counters(n: u64) -> Value {
        json!({"b_count": n, "a_flag": n % 2 == 1, "ratio": 1.5, "name": "x", "nested": {"k": 1}})
    }

    #[test]
    fn device_series_averages_are_exact_and_counters_are_at_each_end() {
        let mut s = DeviceSeries::new(100, &counters(0));
        assert_eq!(s.columns(), ["a_flag", "b_count", "ratio"]);
        // 2 at the device, 1 queued over 0..150, then 4 and 0 to 250 (the end).
        s.advance(150, [2, 1], || counters(7));
        s.finish(250, [4, 0], || counters(9));
        let rows: Vec<_> = s.rows().collect();
        assert_eq!(rows.len(), 3);
        assert_eq!(
            (rows[0].start, rows[0].in_flight, rows[0].queued),
            (0, 2.0, 1.0)
        );
        assert_eq!((rows[1].in_flight, rows[1].queued), (3.0, 0.5));
        // The last interval covers 200..250 of the run: averaged over that.
        assert_eq!((rows[2].width, rows[2].in_flight), (50, 4.0));
        // Counters as they stood when each interval ended (read at the event after it).
        assert_eq!(rows[0].counters, [1.0, 7.0, 1.5]);
        assert_eq!(rows[2].counters, [1.0, 9.0, 1.5]);
        let csv = s.csv();
        let mut lines = csv.lines();
        assert_eq!(
            lines.next(),
            Some("time_s,in_flight,queued,a_flag,b_count,ratio")
        );
        // 100 ns intervals: times to the ns (7 decimals).
        assert_eq!(lines.next(), Some("0.0000000,2.000,1.000,1,7,1.5"));
        assert_eq!(lines.last(), Some("0.0000002,4.000,0.000,1,9,1.5"));
    }

    #[test]
    fn device_series_leaves_idle_stretches_out_and_fills_busy_ones() {
        let mut reads = 0;
        let mut s = DeviceSeries::new(1_000, &Value::Null);
        let n = std::cell::Cell::new(0);
        let c = || {
            n.set(n.get() + 1);
            Value::Null
        };
        // Idle to 500, one request to 600, then nothing until 1e9: one row,
        // one read of the counters.
        s.advance(500, [0, 0], c);
        s.advance(600, [1, 0], c);
        s.advance(1_000_000_000, [0, 0], c);
        reads += 1;
        assert_eq!((s.len(), n.get()), (1, reads));
        // One request held over 100 whole intervals: every one written, the
        // counters read once (the device is not called in between).
        s.advance(1_000_100_000, [0, 1], c);
        reads += 1;
        assert_eq!((s.len(), n.get()), (101, reads));
        assert!(s
            .rows()
            .skip(1)
            .all(|r| r.in_flight == 0.0 && r.queued == 1.0));
        assert_eq!(s.csv().lines().next(), Some("time_s,in_flight,queued"));
    }

    #[test]
    fn device_series_is_bounded_and_keeps_its_integrals() {
        let mut s = DeviceSeries::new(1, &counters(0));
        let end = 5 * MAX_SERIES_POINTS as u64 + 3;
        let mut k = 0;
        for t in (1..=end).step_by(7) {
            k += 1;
            s.advance(t, [3, 1], || counters(k));
        }
        s.finish(end, [3, 1], || counters(k));
        assert!(s.len() <= MAX_SERIES_POINTS, "{}", s.len());
        assert!(s.interval() >= 4, "{}", s.interval());
        let area: f64 = s.rows().map(|r| r.in_flight * r.width as f64).sum();
        assert!((area - 3.0 * end as f64).abs() < 1e-6 * area, "{area}");
        // Counters never go back, and the last row has the final ones.
        let b: Vec<f64> = s.rows().map(|r| r.counters[1]).collect();
        assert!(b.windows(2).all(|w| w[0] <= w[1]));
        assert_eq!(b.last().copied(), Some(k as f64));
    }
}
