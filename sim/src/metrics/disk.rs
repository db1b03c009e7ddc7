//! The device's /proc/diskstats figures, per-process figures, and Jain's index.

use super::*;

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
/// total-latency histogram per direction (2 significant digits: the
/// percentiles are within 1 %; the mean, min and max are exact, as the
/// job's). A histogram is made at a direction's first I/O and grows with the
/// largest latency it holds (about 4 KiB per binary order of magnitude above
/// 256 ns: ~9 KiB for latencies up to 10 ms), and the engine keeps at most
/// [`MAX_PROCESSES`] of them (the rest are summed as other processes), so
/// per-process memory is bounded whatever the number of PIDs.
#[derive(Clone, Default)]
pub struct ProcStats {
    pub ios: [u64; 2],
    pub bytes: [u64; 2],
    pub lat: [Option<Histogram<u32>>; 2],
    pub lat_m: [Moments; 2],
}

/// Most processes with figures of their own; I/O of further PIDs is summed
/// in one "other processes" entry.
pub const MAX_PROCESSES: usize = 1024;

impl ProcStats {
    pub fn record(&mut self, op: Op, bytes: u64, lat: Ns) {
        let i = op.idx();
        self.ios[i] += 1;
        self.bytes[i] += bytes;
        let h = self.lat[i].get_or_insert_with(|| {
            let mut h =
                Histogram::new_with_max(2048, 2).expect("static histogram bounds are valid");
            h.auto(true);
            h
        });
        // Beyond an hour (3.6e12 ns) the moments stay exact; the histogram saturates.
        let _ = h.record(lat.clamp(1, 3_600_000_000_000));
        self.lat_m[i].add(lat);
    }

    /// Bytes held by the histograms.
    pub fn footprint(&self) -> usize {
        std::mem::size_of::<Self>()
            + self
                .lat
                .iter()
                .flatten()
                .map(|h| h.distinct_values() * 4)
                .sum::<usize>()
    }

    /// `pid`: null for the other processes' sum.
    pub fn to_json(&self, pid: Option<u32>, elapsed: Ns) -> Value {
        let dir = |i: usize| {
            let m = &self.lat_m[i];
            let n = self.ios[i];
            let pct = |p: f64| self.lat[i].as_ref().map_or(0, |h| percentile(h, m, p));
            json!({
                "total_ios": n,
                "io_bytes": self.bytes[i],
                "iops": n as f64 * 1e9 / elapsed.max(1) as f64,
                "lat_ns": {
                    "mean": m.mean(),
                    "p50": pct(50.0),
                    "p99": pct(99.0),
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
