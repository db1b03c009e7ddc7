//! Validation group 'ssd': the SSD's write buffer and host link against
//! closed forms, driven through `Device::submit` (no engine).
//!
//! * Burst below the buffer's size: N 4 KiB writes submitted at once on an
//!   empty buffer complete at the host-link rate, the last at N·4096 B / rate
//!   (SATA 6 Gb/s with 8b/10b = 600 MB/s); none waits for flash.
//! * Sustained writes converge to the flash program bandwidth: a closed loop
//!   of 4 KiB writes at QD32 through a 1 MiB buffer on a fresh device (no
//!   GC): each flush occupies its die for cmd + xfer + tPROG (a flush starts
//!   when die and channel are free), so with the channel not the bottleneck
//!   the rate is dies·page / (cmd + xfer + tPROG).
//! * Sequential 128 KiB reads at QD32 on a SATA link are capped at the link
//!   rate, 600 MB/s, below the flash's read bandwidth (SLC: 8 dies · 4 KiB / 25 µs
//!   ≈ 1.3 GB/s).
//! * The default preset (`tlc_nvme`): sequential 128 KiB writes at QD32 on a
//!   fresh device converge to the multi-plane program bandwidth,
//!   dies · program_pages · 4 KiB / tPROG (16 · 48 · 4 KiB / 2 ms = 1.57 GB/s;
//!   the next program's data moves into the die's cache register while the
//!   die programs, and the channels, 2 dies · 48 · 3.4 µs per 2 ms, are not
//!   the bottleneck): the post-SLC-cache write rate of a 1 TB TLC drive.
//!   With its SLC cache (64 MiB) writes go first at the SLC-mode rate,
//!   dies · planes · 4 pages · 4 KiB / 200 µs = 5.2 GB/s, below PCIe 4.0 x4.
//! * A read arriving at a uniformly random time during background GC copies
//!   (page reads of a = cmd + tR alternating with programs of b = cmd +
//!   tPROG + 2·xfer, one copy per program) waits for the operation in
//!   progress: the mean residual time of an alternating renewal process,
//!   (a² + b²) / (2(a + b)) (within 2 % over the trials); with suspend it
//!   waits `suspend_us` (within 0.1 %: a read within `suspend_us` of the
//!   job's end waits only for the end).
//! * Its QD1 4 KiB random read on an idle device: cmd + tR + the page over
//!   the channel + 4 KiB over PCIe 4.0 x4 (exact).
//! * Its energy for those reads: idle_w · T + controller_w · busy + per
//!   read nand_w · (cmd + tR + xfer) + 4096 · 8 · link_pj_per_bit (exact to
//!   1e-9).

use super::Case;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use vsim::device::ssd::Ssd;
use vsim::device::Device;
use vsim::params::Params;
use vsim::types::{Ns, Op, Request};

const G: &str = "ssd";

/// A fresh, small device (8 dies on 4 channels, no GC in these runs).
const BASE: &str = "preset=mlc_16g,channels=4,dies_per_channel=2,planes_per_die=1,blocks_per_plane=256,pages_per_block=64,precondition=none";

fn device(extra: &str) -> Option<Ssd> {
    let p = Params::parse_kv(&format!("{BASE},{extra}")).ok()?;
    Ssd::from_params(&p, 1).ok()
}

/// Closed loop at `qd`: `n` requests of `sectors` from `next(i)`; returns
/// (bytes per second over the run, end time).
fn closed_loop(
    d: &mut Ssd,
    op: Op,
    qd: usize,
    n: u64,
    sectors: u32,
    next: impl Fn(u64) -> u64,
) -> f64 {
    let mut done: BinaryHeap<Reverse<Ns>> = (0..qd).map(|_| Reverse(0)).collect();
    let mut end = 0;
    for i in 0..n {
        let Reverse(now) = done.pop().unwrap_or(Reverse(end));
        let t = d.submit(&Request::standalone(op, true, next(i), sectors), now);
        end = end.max(t);
        done.push(Reverse(t));
    }
    (n * sectors as u64 * 512) as f64 / (end as f64 / 1e9)
}

pub fn cases(quick: bool) -> Vec<Case> {
    let mut out = Vec::new();
    let built = (
        device("write_buffer=1m,interface=sata3"),
        device("write_buffer=1m"),
        device("interface=sata3,precondition=seq,cell=slc"),
    );
    let (Some(mut burst), Some(mut sustained), Some(mut seqread)) = built else {
        out.push(Case::check(
            G,
            "build devices",
            "ok".into(),
            "error".into(),
            "-",
            false,
        ));
        return out;
    };
    let sata = 600e6;

    // Burst of 200 pages (800 KiB < 1 MiB) at t = 0.
    let n = 200u64;
    let mut last = 0;
    for i in 0..n {
        last = last.max(burst.submit(&Request::standalone(Op::Write, true, i * 8, 8), 0));
    }
    out.push(Case::rel(
        G,
        "burst of 200 x 4 KiB below a 1 MiB buffer, SATA: last completion (us) = N*4096/600 MB/s",
        n as f64 * 4096.0 / sata * 1e6,
        last as f64 / 1e3,
        0.001,
    ));
    out.push(Case::exact(
        G,
        "burst below the buffer: writes that waited for a slot",
        "0".into(),
        burst.counters()["buffer_full_waits"].to_string(),
    ));

    // Sustained writes: program bandwidth of 8 dies.
    let t = sustained.timing();
    let dies = 8.0;
    let per_die = (t.cmd_ns + t.xfer_ns + t.prog_ns) as f64;
    let expected = dies * 4096.0 / (per_die / 1e9);
    let n = if quick { 20_000 } else { 60_000 };
    let got = closed_loop(&mut sustained, Op::Write, 32, n, 8, |i| i * 8);
    out.push(Case::rel(
        G,
        "sustained 4 KiB writes through the buffer (MB/s) = dies*page/(cmd+xfer+tPROG)",
        expected / 1e6,
        got / 1e6,
        0.03,
    ));

    tlc_cases(quick, &mut out);
    preemption_cases(quick, &mut out);

    // Sequential 128 KiB reads on SATA.
    let n = if quick { 2_000 } else { 6_000 };
    let got = closed_loop(&mut seqread, Op::Read, 32, n, 256, |i| i * 256);
    out.push(Case::rel(
        G,
        "sequential 128 KiB reads QD32 on SATA (MB/s) = link rate 600",
        sata / 1e6,
        got / 1e6,
        0.01,
    ));
    out
}

/// The default preset's program bandwidth, QD1 read latency and energy.
fn tlc_cases(quick: bool, out: &mut Vec<Case>) {
    let build = |extra: &str| {
        Params::parse_kv(&format!("precondition=none{extra}"))
            .ok()
            .and_then(|p| Ssd::from_params(&p, 1).ok())
    };
    let (Some(mut w), Some(mut r), Some(mut slc)) = (
        build(",slc_cache=0"),
        build(",precondition=seq"),
        build(",write_buffer=1m"),
    ) else {
        out.push(Case::check(
            G,
            "build tlc_nvme",
            "ok".into(),
            "error".into(),
            "-",
            false,
        ));
        return;
    };
    let t = w.timing();
    let info = w.info();
    let prog_rate = 16.0 * 48.0 * 4096.0 / (t.prog_ns as f64 / 1e9);
    let n = if quick { 6_000 } else { 20_000 };
    let got = closed_loop(&mut w, Op::Write, 32, n, 256, |i| {
        i * 256 % info.capacity_sectors
    });
    out.push(Case::rel(
        G,
        "tlc_nvme: sequential 128 KiB writes QD32, fresh (MB/s) = dies*program_pages*4 KiB/tPROG",
        prog_rate / 1e6,
        got / 1e6,
        0.03,
    ));
    // Inside the SLC cache (64 MiB): SLC-mode programs of planes x 4 pages.
    let slc_rate = 16.0 * 16.0 * 4096.0 / 200e-6;
    let got = closed_loop(&mut slc, Op::Write, 32, 400, 256, |i| i * 256);
    out.push(Case::rel(
        G,
        "tlc_nvme: 50 MiB sequential writes into the SLC cache (MB/s) = dies*planes*4 pages*4 KiB/tPROG(SLC 200 us)",
        slc_rate / 1e6,
        got / 1e6,
        0.03,
    ));
    let link_ns = (4096.0_f64 * 1e3 / (4.0 * 16000.0 * 128.0 / 130.0 / 8.0)).round() as Ns;
    let now = 1_000_000;
    let done = r.submit(&Request::standalone(Op::Read, true, 8 * 1000, 8), now);
    out.push(Case::exact(
        G,
        "tlc_nvme: QD1 4 KiB read on an idle device (ns) = cmd + tR + xfer + 4 KiB over PCIe 4.0 x4",
        (t.cmd_ns + t.read_ns + t.xfer_ns + link_ns).to_string(),
        (done - now).to_string(),
    ));
    let e = r.energy(1_000_000_000, done - now);
    let want = 0.05
        + 3.0 * (done - now) as f64 / 1e9
        + 0.066e-9 * (t.cmd_ns + t.read_ns + t.xfer_ns) as f64
        + 4096.0 * 8.0 * 5e-12;
    out.push(Case::rel(
        G,
        "tlc_nvme: energy of that read over 1 s (J) = idle_w*T + controller_w*busy + nand_w*(cmd+tR+xfer) + link",
        want,
        e.total_j,
        1e-9,
    ));
}

/// Reads preempting background GC: mean wait against the residual-life
/// closed form, and the suspend latency.
fn preemption_cases(quick: bool, out: &mut Vec<Case>) {
    use rand::{Rng, SeedableRng};
    use vsim::device::flash::timeline::{Suspend, Timeline};
    use vsim::device::flash::NandTiming;
    let t = NandTiming {
        read_ns: 60_000,
        prog_ns: 2_000_000,
        erase_ns: 5_000_000,
        xfer_ns: 3_414,
        cmd_ns: 6,
    };
    let copies = 100;
    let trials = if quick { 4_000 } else { 20_000 };
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(11);
    let mut waits = [0u64; 2];
    let mut phase = 0;
    for _ in 0..trials {
        for (k, sus) in [false, true].into_iter().enumerate() {
            let mut tl = Timeline::new(t, 1, 1);
            tl.suspend = Suspend {
                enabled: sus,
                latency_ns: 20_000,
                resume_ns: 20_000,
            };
            let (b, _) = tl.book_background(0, copies, 0, false, 0);
            phase = tl.copies_ns(copies, false);
            let at = b + rng.gen_range(0..phase);
            let done = tl.read_page(0, 0, at);
            waits[k] += done - (t.cmd_ns + t.read_ns + t.xfer_ns) - at;
        }
    }
    let a = (t.cmd_ns + t.read_ns) as f64;
    let bb = phase as f64 / copies as f64 - a;
    let residual = (a * a + bb * bb) / (2.0 * (a + bb));
    out.push(Case::rel(
        G,
        "read during background GC copies, no suspend: mean wait (us) = (a^2+b^2)/(2(a+b))",
        residual / 1e3,
        waits[0] as f64 / trials as f64 / 1e3,
        0.02,
    ));
    out.push(Case::rel(
        G,
        "read during background GC copies, suspend: mean wait (us) = suspend_us",
        20.0,
        waits[1] as f64 / trials as f64 / 1e3,
        1e-3,
    ));
}
