//! The SSD model's speed (ignored by default).

use super::*;

/// Throughput of the device model alone (`cargo test --release -- --ignored ssd_speed --nocapture`).
#[test]
#[ignore]
fn ssd_speed() {
    for op in [Op::Read, Op::Write] {
        let mut d = Ssd::from_params(
            &Params::parse_kv("preset=mlc_16g,precondition=full").unwrap(),
            1,
        )
        .unwrap();
        let l = d.logical_pages;
        let mut rng = Pcg64Mcg::seed_from_u64(5);
        let n = 5_000_000u64;
        let mut r = tests_rq(op);
        let t0 = std::time::Instant::now();
        let mut now = 0;
        for i in 0..n {
            r.sector = rng.gen_range(0..l) * 8;
            let done = d.submit(&r, now);
            if i % 32 == 31 {
                now = done;
            }
        }
        let s = t0.elapsed().as_secs_f64();
        println!(
            "{op:?}: {:.2} M req/s, WA {}",
            n as f64 / s / 1e6,
            d.counters()["write_amplification"]
        );
    }
}

fn tests_rq(op: Op) -> Request {
    Request::standalone(op, true, 0, 8)
}
