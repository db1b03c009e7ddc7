//! One job's statistics (`JobStats`) and fio's depth and latency distributions.

use super::*;

/// fio's depth buckets for `iodepth_level` (1, 2, 4, ..., >=64).
pub(super) fn depth_idx(d: u32) -> usize {
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
pub(super) fn batch_idx(n: u32) -> usize {
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
pub(super) fn lat_dist_idx(ns: Ns) -> usize {
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
    /// fio's bw/iops/lat logs, when the job asks for them.
    pub log: Option<super::iolog::IoLog>,
    /// fio's `jobname`: the job's section name, which its clones
    /// (`numjobs`, named `NAME.N` in the tables) share.
    pub jobname: String,
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
            jobname: name.to_string(),
            log: None,
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
    pub(super) fn samples(&self, op: usize, start: Ns, runtime: Ns) -> (Moments, Moments) {
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
