//! Validation group 'cheapflash': the cheap-flash presets against the
//! published class minimums and against the closed form of their own timing.
//!
//! * `sd_a1`, `sd_a2`: 4 KiB random read and write IOPS at the preset's queue
//!   depth over a 1 GiB test area of a card preconditioned full, after a
//!   warm-up of one SLC cache plus 20 000 writes (steady state), against the
//!   SD Association's Application Performance Class minimums (SD 5.1 A1:
//!   1500 read / 500 write IOPS; SD 6.0 A2: 4000 / 2000; sdcard.org,
//!   "Application Performance Class"). The test area and warm-up are this
//!   file's choices (the class's measurement conditions are in the members'
//!   specification). Sustained sequential writes (512 KiB at QD1 on a fresh
//!   card, 256 MiB measured after filling any SLC cache) against the
//!   classes' 10 MB/s.
//! * `emmc51` (JEDEC JESD84-B51 sets no IOPS minimum): random 4 KiB reads at
//!   queue depth N = 32 against the exact mean value analysis of the closed
//!   network they cross (one of K dies at random, cmd + tR; then the channel,
//!   xfer), within 10 %: the page-timing model books the channel in submit
//!   order (a read whose sense ends first still waits for the transfer of
//!   one submitted before it), which MVA's work-conserving channel does
//!   not, so vsim is a few per cent below it (1 % at 4 dies, 7 % at 8); a
//!   random write burst smaller than the SLC cache (writes go to the
//!   dies round-robin) against min(K / tPROG_slc, 1 / (cmd + xfer));
//!   steady-state random writes reported against A1's 500 as a reference
//!   point.
//! * `sd2008`: the 2008-class card (BAST, 4 logs, depth 1): each random 4 KiB
//!   write into a full card forces a full merge of a one-page log: IOPS =
//!   1 / (np·copy + 2·erase + cmd + xfer + tPROG) (copy = 2·cmd + tR + tPROG +
//!   2·xfer) — the 13 IOPS.

use super::Case;
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;
use vsim::device::cheapflash::CheapFlash;
use vsim::device::{closed_loop, Device};
use vsim::params::Params;
use vsim::types::{Op, Request};

const G: &str = "cheapflash";
const AREA_PAGES: u64 = (1 << 30) / 4096;

fn device(opts: &str) -> Option<CheapFlash> {
    Params::parse_kv(opts)
        .ok()
        .and_then(|p| CheapFlash::from_params(&p).ok())
}

/// IOPS of `n` random 4 KiB `op`s over the test area at queue depth `depth`.
fn iops(d: &mut CheapFlash, op: Op, depth: usize, n: usize, rng: &mut Pcg64Mcg) -> f64 {
    let area = AREA_PAGES.min(d.info().capacity_sectors / 8);
    let start = d.busy_until();
    let done = closed_loop(d, depth, n, || {
        Request::standalone(op, true, rng.gen_range(0..area) * 8, 8)
    });
    // closed_loop starts at t = 0; the device's clock continues from its
    // last work, so measure from the first completion's submit.
    let first = done.iter().map(|x| x.0).min().unwrap_or(0).max(start);
    let end = done.iter().map(|x| x.1).max().unwrap_or(first);
    n as f64 / ((end - first).max(1) as f64 / 1e9)
}

/// Exact mean value analysis (Reiser & Lavenberg) of the closed network a
/// random read takes at queue depth `n`: one of `k` dies chosen uniformly
/// (service `die_ns`), then the one channel (`xfer_ns`). Reads per second.
fn mva_reads(k: usize, n: usize, die_ns: f64, xfer_ns: f64) -> f64 {
    let (mut q_die, mut q_ch, mut x) = (0.0, 0.0, 0.0);
    for m in 1..=n {
        let r_die = die_ns * (1.0 + q_die);
        let r_ch = xfer_ns * (1.0 + q_ch);
        x = m as f64 / (r_die + r_ch);
        q_die = x * r_die / k as f64;
        q_ch = x * r_ch;
    }
    x * 1e9
}

/// Sustained sequential writes on a fresh (preconditioned) card: 512 KiB at
/// QD1, first through any SLC cache, then 256 MiB more, measured.
fn sequential_case(name: &str) -> Case {
    let Some(mut d) = device(&format!("preset={name}")) else {
        return Case::check(
            G,
            format!("build {name}"),
            "ok".into(),
            "error".into(),
            "-",
            false,
        );
    };
    let warm = (d.slc_cache_pages() * 4096 / 524288) as usize;
    let mut pos = 0u64;
    let mut next = || {
        let r = Request::standalone(Op::Write, true, pos, 1024);
        pos += 1024;
        r
    };
    closed_loop(&mut d, 1, warm, &mut next);
    let t0 = d.busy_until();
    let done = closed_loop(&mut d, 1, 512, &mut next);
    let end = done.iter().map(|x| x.1).max().unwrap_or(t0);
    let mbs = 512.0 * 524288.0 / ((end - t0).max(1) as f64 / 1e9) / 1e6;
    Case::check(
        G,
        format!("{name}: sustained sequential write MB/s, 512 KiB at QD1 past the SLC cache, >= class minimum 10"),
        ">= 10".into(),
        format!("{mbs:.1}"),
        "bound",
        mbs >= 10.0,
    )
}

pub fn cases(quick: bool) -> Vec<Case> {
    let mut out = Vec::new();
    let n = if quick { 5_000 } else { 40_000 };
    let mut rng = Pcg64Mcg::seed_from_u64(0xC4EA9);
    // (preset, queue depth, read minimum (0: closed form), write minimum;
    // emmc51's 500 is A1's, as a reference point).
    for (name, qd, min_r, min_w) in [
        ("sd_a1", 1usize, 1500.0, 500.0),
        ("sd_a2", 32, 4000.0, 2000.0),
        ("emmc51", 32, 0.0, 500.0),
    ] {
        let Some(mut d) = device(&format!("preset={name}")) else {
            out.push(Case::check(
                G,
                format!("build {name}"),
                "ok".into(),
                "error".into(),
                "-",
                false,
            ));
            continue;
        };
        let r = iops(&mut d, Op::Read, qd, n, &mut rng);
        if min_r > 0.0 {
            out.push(Case::check(
                G,
                format!("{name}: 4 KiB random read IOPS at QD{qd} >= class minimum {min_r:.0}"),
                format!(">= {min_r:.0}"),
                format!("{r:.0}"),
                "bound",
                r >= min_r,
            ));
        } else {
            let t = d.timing();
            let k = d.info_dies() as usize;
            let closed = mva_reads(k, qd, (t.cmd_ns + t.read_ns) as f64, t.xfer_ns as f64);
            out.push(Case::rel(
                G,
                format!("{name}: 4 KiB random read IOPS at QD{qd} = MVA of {k} dies + 1 channel (vsim books the channel in submit order: below)"),
                closed,
                r,
                0.10,
            ));
            // SLC cache: a burst below its size programs at SLC speed.
            let slc = d.slc_timing();
            let burst = iops(&mut d, Op::Write, qd, n, &mut rng);
            out.push(Case::rel(
                G,
                format!("{name}: 4 KiB random write burst < SLC cache, IOPS at QD{qd} = min(K/tPROG_slc, 1/(cmd+xfer))"),
                (k as f64 * 1e9 / slc.prog_ns as f64).min(1e9 / (slc.cmd_ns + slc.xfer_ns) as f64),
                burst,
                0.03,
            ));
        }
        // Warm-up: fill the SLC cache and reach GC steady state.
        let warm = d.slc_cache_pages() as usize + n;
        iops(&mut d, Op::Write, qd, warm, &mut rng);
        let w = iops(&mut d, Op::Write, qd, n, &mut rng);
        if name != "emmc51" {
            out.push(sequential_case(name));
        }
        out.push(Case::check(
            G,
            format!("{name}: 4 KiB random write IOPS at QD{qd}, steady state, >= {min_w:.0}"),
            format!(">= {min_w:.0}"),
            format!("{w:.0}"),
            "bound",
            w >= min_w,
        ));
    }

    // The 2008 card: one full merge per random write.
    if let Some(mut d) = device("preset=sd2008") {
        let w = iops(
            &mut d,
            Op::Write,
            1,
            if quick { 200 } else { 2000 },
            &mut rng,
        );
        let t = d.timing();
        let np = 256.0;
        let copy = (2 * t.cmd_ns + t.read_ns + t.prog_ns + 2 * t.xfer_ns) as f64;
        let per = np * copy
            + 2.0 * (t.cmd_ns + t.erase_ns) as f64
            + (t.cmd_ns + t.xfer_ns + t.prog_ns) as f64;
        out.push(Case::rel(
            G,
            "sd2008: 4 KiB random write IOPS (BAST, 4 logs, 1 MiB blocks, QD1) = 1 / (full merge + program)",
            1e9 / per,
            w,
            0.05,
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn cheapflash_validation_cases_pass() {
        let cases = super::cases(true);
        for c in &cases {
            println!(
                "{:<95} expected {:>12} got {:>12} tol {}",
                c.name, c.expected, c.got, c.tolerance
            );
        }
        assert!(cases.len() >= 7);
        for c in &cases {
            assert!(c.pass, "{}: expected {} got {}", c.name, c.expected, c.got);
        }
    }
}
