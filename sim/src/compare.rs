//! The comparison table of `vsim compare`: one row per scheduler with ratios to
//! a baseline.

use crate::metrics::OpStats;
use crate::report::{format_table, RunReport};
use crate::types::Ns;
use serde_json::{json, Value};
use std::fmt::Write as _;

/// Write amplification from a device's counters, where it reports one (under
/// `device::WA_COUNTER`, its one name).
pub fn write_amplification(counters: &Value) -> Option<f64> {
    counters
        .get(crate::device::WA_COUNTER)
        .and_then(Value::as_f64)
}

fn ratio(a: f64, b: f64) -> String {
    if b > 0.0 {
        format!("{:.2}", a / b)
    } else {
        "-".into()
    }
}

pub fn table(labels: &[String], reps: &[RunReport], base: usize) -> String {
    let mut rows = vec![[
        "scheduler",
        "IOPS",
        "x",
        "rd p50 us",
        "rd p99 us",
        "x",
        "wr p50 us",
        "wr p99 us",
        "x",
        "WA",
        "energy J",
        "IOPS/W",
    ]
    .map(String::from)
    .to_vec()];
    let b = &reps[base];
    let (br, bw) = (b.total(0), b.total(1));
    let biops = br.iops(b.outcome.elapsed) + bw.iops(b.outcome.elapsed);
    // A direction without I/O has no latency: "-", not 0.
    let lat = |o: &OpStats, p: f64| {
        if o.ios == 0 {
            "-".to_string()
        } else {
            format!("{:.1}", o.pct(p) as f64 / 1e3)
        }
    };
    let p99_ratio = |o: &OpStats, b: &OpStats| {
        if o.ios == 0 || b.ios == 0 {
            "-".to_string()
        } else {
            ratio(o.pct(99.0) as f64, b.pct(99.0) as f64)
        }
    };
    for (l, r) in labels.iter().zip(reps) {
        let (rd, wr) = (r.total(0), r.total(1));
        let el = r.outcome.elapsed;
        let iops = rd.iops(el) + wr.iops(el);
        let wa = write_amplification(&r.device_counters)
            .map(|w| format!("{w:.2}"))
            .unwrap_or_else(|| "-".into());
        rows.push(vec![
            l.clone(),
            format!("{iops:.0}"),
            ratio(iops, biops),
            lat(&rd, 50.0),
            lat(&rd, 99.0),
            p99_ratio(&rd, &br),
            lat(&wr, 50.0),
            lat(&wr, 99.0),
            p99_ratio(&wr, &bw),
            wa,
            format!("{:.2}", r.energy_j),
            format!("{:.1}", r.iops_per_watt()),
        ]);
    }
    let mut s = format_table(&rows, 1);
    let _ = writeln!(
        s,
        "x = ratio to {} (IOPS: higher is better; p99: lower is better)",
        labels[base]
    );
    if let Some(h) = no_choice_hint(reps) {
        let _ = writeln!(s, "{h}");
    }
    for (l, r) in labels.iter().zip(reps) {
        for w in r.outcome.balance.warnings() {
            let _ = writeln!(s, "{l}: {w}");
        }
    }
    s
}

/// Why the schedulers may all come out the same: when at most one request
/// in a hundred was dispatched with another waiting beside it in the
/// scheduler (the device took requests as they came: a closed loop at a depth
/// within the device's queue), no scheduler had an order to choose.
pub fn no_choice_hint(reps: &[RunReport]) -> Option<String> {
    let mut worst = 0.0f64;
    for r in reps {
        let o = &r.outcome;
        if o.dispatches == 0 || o.dispatch_choices * 100 > o.dispatches {
            return None;
        }
        worst = worst.max(o.dispatch_choices as f64 * 100.0 / o.dispatches as f64);
    }
    let depth = reps.iter().map(|r| r.outcome.queue_depth).min()?;
    Some(format!(
        "note: nothing queued in the scheduler: at most {worst:.2} % of requests were \
         dispatched with another one waiting, as the device (queue depth {depth}) took them \
         as they came; so the schedulers had no order to choose and differ only by holding \
         or merging. To compare them, keep more I/Os in flight than {depth} (iodepth, a \
         trace's depth) or lower the device's queue (--block queue_depth=N)."
    ))
}

/// `summary.json` of `vsim compare --out`: the header of
/// [`crate::report::summary_header`] (`kind` = `vsim-compare`), the
/// configured series `interval_ns`, and per scheduler its figures, its final
/// `device_counters`, the widened series intervals, and its `files` in the
/// directory (`NAME.json`, `NAME.csv`, `NAME.device.csv` for each of `names`).
#[allow(clippy::too_many_arguments)]
pub fn summary(
    labels: &[String],
    names: &[String],
    reps: &[RunReport],
    base: usize,
    device: &str,
    workload: &str,
    seed: u64,
    interval: Ns,
) -> Value {
    let rows: Vec<Value> = labels
        .iter()
        .zip(names)
        .zip(reps)
        .map(|((l, name), r)| {
            let (rd, wr) = (r.total(0), r.total(1));
            let el = r.outcome.elapsed;
            json!({
                "scheduler": l,
                "iops": rd.iops(el) + wr.iops(el),
                "read": {"iops": rd.iops(el), "bw_kib": rd.bw_kib(el), "p50_ns": rd.pct(50.0), "p99_ns": rd.pct(99.0), "p99.9_ns": rd.pct(99.9)},
                "write": {"iops": wr.iops(el), "bw_kib": wr.bw_kib(el), "p50_ns": wr.pct(50.0), "p99_ns": wr.pct(99.0), "p99.9_ns": wr.pct(99.9)},
                "write_amplification": write_amplification(&r.device_counters),
                "energy_j": r.energy_j,
                "iops_per_watt": r.iops_per_watt(),
                "simulated_ns": el,
                "unfinished_bios": r.outcome.balance.unfinished,
                "lost_io": r.outcome.balance.lost,
                "overload": r.outcome.balance.overload,
                "device_counters": r.device_counters,
                "series_interval_ns": r.series_interval(),
                "device_interval_ns": r.outcome.device_series.interval(),
                "files": files_json(name),
            })
        })
        .collect();
    let mut m = crate::report::summary_header("vsim-compare");
    for (k, v) in [
        ("device", json!(device)),
        ("workload", json!(workload)),
        ("seed", json!(seed)),
        ("interval_ns", json!(interval)),
        ("baseline", json!(labels[base])),
        ("schedulers", Value::Array(rows)),
    ] {
        m.insert(k.into(), v);
    }
    Value::Object(m)
}

/// The `files` object of a summary: the data files of one run named `name`.
pub fn files_json(name: &str) -> Value {
    json!({"json": format!("{name}.json"), "csv": format!("{name}.csv"),
           "device_csv": format!("{name}.device.csv")})
}
