//! fio's per-job logs, `write_bw_log`, `write_iops_log` and `write_lat_log`,
//! in fio's format (fio's HOWTO, "Log File Formats"), for fio2gnuplot and
//! the other tools that read them.
//!
//! - Files: `PREFIX_bw.N.log`, `PREFIX_iops.N.log`, and for latency
//!   `PREFIX_lat.N.log`, `PREFIX_clat.N.log`, `PREFIX_slat.N.log`, where
//!   PREFIX is the option's value (the job's name when given bare or empty)
//!   and N the job's number, 1 to the number of jobs (clones counted), in
//!   the current directory as fio writes them.
//! - Lines: `time (ms), value, data direction (0 read, 1 write), block size
//!   (bytes), command priority (0)`; with `log_offset=1` the I/O's offset
//!   (bytes) comes before the priority. Values: latency in ns, bandwidth in
//!   KiB/s, IOPS.
//! - `log_avg_msec=0` (fio's default): a line per I/O in every log, at its
//!   completion, with its size (and offset): its latencies, IOPS 1, and
//!   bandwidth its size over its completion latency (clat), computed as
//!   fio 3.33 does (bytes × 10^6 / clat in ns).
//! - `log_avg_msec=N`: every log is averaged over windows of N ms, a line
//!   per data direction with I/O in the window, at the window's end (the run's
//!   end for the last one, averaged over the part it covered); block size
//!   and offset are 0, as fio writes windowed entries.
//!
//! Times are simulated time since the run's start.

use super::Lat;
use crate::params::Params;
use crate::types::{Ns, Op};
use anyhow::{Context, Result};
use std::fmt::Write as _;

/// The logs a job asks for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LogSpec {
    /// File name prefix of each log (`None`: not written).
    pub bw: Option<String>,
    pub iops: Option<String>,
    pub lat: Option<String>,
    /// `log_avg_msec` (0: a line per I/O).
    pub avg_ms: u64,
    /// `log_offset`: each line holds the I/O's offset.
    pub offset: bool,
}

/// The job options read here.
pub const LOG_OPTIONS: &[&str] = &[
    "write_bw_log",
    "write_iops_log",
    "write_lat_log",
    "log_avg_msec",
    "log_offset",
];

impl LogSpec {
    /// The files job number `number` (1-based) writes, as fio names them:
    /// (kind index into the bw, iops, lat, clat, slat logs, file name).
    pub fn names(&self, number: u32) -> Vec<(usize, String)> {
        let prefixes = [&self.bw, &self.iops, &self.lat, &self.lat, &self.lat];
        prefixes
            .iter()
            .enumerate()
            .filter_map(|(k, p)| {
                p.as_ref()
                    .map(|p| (k, format!("{p}_{}.{number}.log", KINDS[k])))
            })
            .collect()
    }

    /// From a job's options; `jobname` is the prefix of a log given bare.
    pub fn from_params(p: &Params, jobname: &str) -> Result<LogSpec> {
        let prefix = |k: &str| -> Result<Option<String>> {
            Ok(match p.raw(k).map(str::trim) {
                None => None,
                Some("") => Some(jobname.to_string()),
                Some(v) if v.contains('/') && v.ends_with('/') => {
                    anyhow::bail!(
                        "{}: '{v}' is a directory; give a file name prefix",
                        p.what(k)
                    )
                }
                Some(v) => Some(v.to_string()),
            })
        };
        Ok(LogSpec {
            bw: prefix("write_bw_log")?,
            iops: prefix("write_iops_log")?,
            lat: prefix("write_lat_log")?,
            avg_ms: p
                .u64_in("log_avg_msec", 0, 0, 3_600_000)
                .with_context(|| p.what("log_avg_msec"))?,
            offset: p.bool_or("log_offset", false)?,
        })
    }

    /// Whether any log is asked for.
    pub fn any(&self) -> bool {
        self.bw.is_some() || self.iops.is_some() || self.lat.is_some()
    }
}

/// One log line.
#[derive(Clone, Copy, Debug)]
struct Row {
    t_ms: u64,
    val: u64,
    ddir: u8,
    bs: u64,
    offset: u64,
}

/// What one data direction did in the current window.
#[derive(Clone, Copy, Debug, Default)]
struct Acc {
    ios: u64,
    bytes: u64,
    lat: u128,
    clat: u128,
    slat: u128,
}

/// The logs of one job, filled as its I/Os complete.
#[derive(Clone, Debug)]
pub struct IoLog {
    spec: LogSpec,
    /// The job's number in the file names (1-based).
    number: u32,
    window_ns: Ns,
    /// Index of the current window and its figures per direction.
    window: u64,
    acc: [Acc; 2],
    /// Lines of the bw, iops, lat, clat and slat logs.
    rows: [Vec<Row>; 5],
}

const KINDS: [&str; 5] = ["bw", "iops", "lat", "clat", "slat"];

impl IoLog {
    pub fn new(spec: LogSpec, number: u32) -> IoLog {
        IoLog {
            window_ns: spec.avg_ms.max(1) * 1_000_000,
            spec,
            number,
            window: 0,
            acc: [Acc::default(); 2],
            rows: Default::default(),
        }
    }

    /// An I/O of `bytes` at byte `offset` completed at `now` after `l`.
    pub fn record(&mut self, op: Op, bytes: u64, offset: u64, l: Lat, now: Ns) {
        let d = op.idx();
        let clat = l.total - l.slat.min(l.total);
        if self.spec.avg_ms == 0 {
            let t_ms = now / 1_000_000;
            // fio's per-I/O figure: bytes x 10^6 / clat in ns.
            let bw = bytes as u128 * 1_000_000 / clat.max(1) as u128;
            for (k, val) in [(0, bw as u64), (1, 1), (2, l.total), (3, clat), (4, l.slat)] {
                self.rows[k].push(Row {
                    t_ms,
                    val,
                    ddir: d as u8,
                    bs: bytes,
                    offset,
                });
            }
            return;
        }
        let w = now / self.window_ns;
        if w != self.window {
            let end = (self.window + 1) * self.window_ns;
            self.flush(end, self.window_ns);
            self.window = w;
        }
        let a = &mut self.acc[d];
        a.ios += 1;
        a.bytes += bytes;
        a.lat += l.total as u128;
        a.clat += clat as u128;
        a.slat += l.slat as u128;
    }

    /// The run ended at `end`: the last window's lines.
    pub fn finish(&mut self, end: Ns) {
        if self.spec.avg_ms == 0 {
            return;
        }
        let start = self.window * self.window_ns;
        let full = start + self.window_ns;
        if end >= full {
            self.flush(full, self.window_ns);
        } else if end > start {
            self.flush(end, end - start);
        }
    }

    /// The window's lines at `end`, rates over `width`.
    fn flush(&mut self, end: Ns, width: Ns) {
        let t_ms = end / 1_000_000;
        let width = width.max(1) as u128;
        for d in 0..2 {
            let a = std::mem::take(&mut self.acc[d]);
            if a.ios == 0 {
                continue;
            }
            let n = a.ios as u128;
            let mut put = |k: usize, val: u128| {
                self.rows[k].push(Row {
                    t_ms,
                    val: val.min(u64::MAX as u128) as u64,
                    ddir: d as u8,
                    bs: 0,
                    offset: 0,
                })
            };
            put(0, a.bytes as u128 * 1_000_000_000 / 1024 / width);
            put(1, a.ios as u128 * 1_000_000_000 / width);
            put(2, a.lat / n);
            put(3, a.clat / n);
            put(4, a.slat / n);
        }
    }

    /// The log files: (name, text).
    pub fn files(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        for (k, name) in self.spec.names(self.number) {
            let mut s = String::new();
            for r in &self.rows[k] {
                let _ = write!(s, "{}, {}, {}, {}, ", r.t_ms, r.val, r.ddir, r.bs);
                if self.spec.offset {
                    let _ = write!(s, "{}, ", r.offset);
                }
                s.push_str("0\n");
            }
            out.push((name, s));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lat(total: Ns, slat: Ns) -> Lat {
        Lat {
            total,
            slat,
            queue: 0,
            device: total - slat,
        }
    }

    #[test]
    fn windowed_logs_average_per_direction_and_per_io_latency_lines() {
        let spec = LogSpec {
            bw: Some("j".into()),
            iops: Some("j".into()),
            lat: Some("j".into()),
            avg_ms: 100,
            offset: false,
        };
        let mut log = IoLog::new(spec, 3);
        // 10 reads of 4 KiB in the first 100 ms, 1 write in the second window.
        for i in 0..10 {
            log.record(Op::Read, 4096, 0, lat(1000 + i * 100, 100), i * 5_000_000);
        }
        log.record(Op::Write, 8192, 4096, lat(2000, 0), 150_000_000);
        log.finish(200_000_000);
        let files = log.files();
        let names: Vec<&str> = files.iter().map(|f| f.0.as_str()).collect();
        assert_eq!(
            names,
            [
                "j_bw.3.log",
                "j_iops.3.log",
                "j_lat.3.log",
                "j_clat.3.log",
                "j_slat.3.log"
            ]
        );
        // 40 KiB in 100 ms: 400 KiB/s; 10 I/Os: 100 IOPS.
        assert_eq!(files[0].1, "100, 400, 0, 0, 0\n200, 80, 1, 0, 0\n");
        assert_eq!(files[1].1, "100, 100, 0, 0, 0\n200, 10, 1, 0, 0\n");
        assert_eq!(files[2].1, "100, 1450, 0, 0, 0\n200, 2000, 1, 0, 0\n");
        assert_eq!(files[4].1, "100, 100, 0, 0, 0\n200, 0, 1, 0, 0\n");

        // Without log_avg_msec: a line per I/O with its size (and offset
        // with log_offset): IOPS 1, bandwidth its size over its clat.
        let spec = LogSpec {
            lat: Some("p".into()),
            iops: Some("p".into()),
            offset: true,
            ..LogSpec::default()
        };
        let mut log = IoLog::new(spec, 1);
        log.record(Op::Write, 4096, 8192, lat(3000, 500), 1_500_000);
        log.finish(1_000_000_000);
        let files = log.files();
        assert_eq!(
            files[0],
            ("p_iops.1.log".into(), "1, 1, 1, 4096, 8192, 0\n".into())
        );
        assert_eq!(files[1].1, "1, 3000, 1, 4096, 8192, 0\n");
        assert_eq!(files[2].1, "1, 2500, 1, 4096, 8192, 0\n");
        let spec = LogSpec {
            bw: Some("q".into()),
            ..LogSpec::default()
        };
        let mut log = IoLog::new(spec, 1);
        log.record(Op::Read, 4096, 0, lat(10_000, 0), 0);
        // fio's figure for 4096 bytes in 10 us: 4096 x 10^6 / 10^4.
        assert_eq!(log.files()[0].1, "0, 409600, 0, 4096, 0\n");
    }
}
