//! Latency: exact moments, HDR histograms, fio's latency bins and JSON, and the
//! statistics of one direction of I/O (`OpStats`).

use super::*;

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
pub(super) fn percentile<C: hdrhistogram::Counter>(h: &Histogram<C>, m: &Moments, p: f64) -> u64 {
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
