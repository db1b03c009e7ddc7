//! The statistics' tests.

use super::job::{batch_idx, depth_idx, lat_dist_idx};
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
