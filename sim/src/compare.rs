//! The comparison table of `vsim compare`: one row per scheduler with ratios to
//! a baseline.

use crate::report::RunReport;
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
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{:<24} {:>10} {:>6} {:>10} {:>10} {:>6} {:>10} {:>10} {:>6} {:>6} {:>9}",
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
        "energy J"
    );
    let b = &reps[base];
    let (br, bw) = (b.total(0), b.total(1));
    let biops = br.iops(b.outcome.elapsed) + bw.iops(b.outcome.elapsed);
    for (l, r) in labels.iter().zip(reps) {
        let (rd, wr) = (r.total(0), r.total(1));
        let el = r.outcome.elapsed;
        let iops = rd.iops(el) + wr.iops(el);
        let wa = write_amplification(&r.device_counters)
            .map(|w| format!("{w:.2}"))
            .unwrap_or_else(|| "-".into());
        let _ = writeln!(
            s,
            "{:<24} {:>10.0} {:>6} {:>10.1} {:>10.1} {:>6} {:>10.1} {:>10.1} {:>6} {:>6} {:>9.2}",
            l,
            iops,
            ratio(iops, biops),
            rd.pct(50.0) as f64 / 1e3,
            rd.pct(99.0) as f64 / 1e3,
            ratio(rd.pct(99.0) as f64, br.pct(99.0) as f64),
            wr.pct(50.0) as f64 / 1e3,
            wr.pct(99.0) as f64 / 1e3,
            ratio(wr.pct(99.0) as f64, bw.pct(99.0) as f64),
            wa,
            r.energy_j
        );
    }
    let _ = writeln!(
        s,
        "x = ratio to {} (IOPS: higher is better; p99: lower is better)",
        labels[base]
    );
    for (l, r) in labels.iter().zip(reps) {
        for w in r.outcome.balance.warnings() {
            let _ = writeln!(s, "{l}: {w}");
        }
    }
    s
}

pub fn summary(
    labels: &[String],
    reps: &[RunReport],
    base: usize,
    device: &str,
    workload: &str,
    seed: u64,
) -> Value {
    let rows: Vec<Value> = labels
        .iter()
        .zip(reps)
        .map(|(l, r)| {
            let (rd, wr) = (r.total(0), r.total(1));
            let el = r.outcome.elapsed;
            json!({
                "scheduler": l,
                "iops": rd.iops(el) + wr.iops(el),
                "read": {"iops": rd.iops(el), "bw_kib": rd.bw_kib(el), "p50_ns": rd.pct(50.0), "p99_ns": rd.pct(99.0), "p99.9_ns": rd.pct(99.9)},
                "write": {"iops": wr.iops(el), "bw_kib": wr.bw_kib(el), "p50_ns": wr.pct(50.0), "p99_ns": wr.pct(99.0), "p99.9_ns": wr.pct(99.9)},
                "write_amplification": write_amplification(&r.device_counters),
                "energy_j": r.energy_j,
                "simulated_ns": el,
                "unfinished_bios": r.outcome.balance.unfinished,
                "lost_io": r.outcome.balance.lost,
                "overload": r.outcome.balance.overload,
            })
        })
        .collect();
    json!({"device": device, "workload": workload, "seed": seed, "baseline": labels[base], "schedulers": rows})
}
