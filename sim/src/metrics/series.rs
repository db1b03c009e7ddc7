//! Time series: per job ([`Series`]) and the device's ([`DeviceSeries`]), sparse
//! and bounded.

use super::*;

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
    pub(super) fn slot(&mut self, now: Ns, interval: Ns) -> &mut Interval {
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
