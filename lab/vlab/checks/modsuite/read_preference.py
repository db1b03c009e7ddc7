"""The module suite's check `read_preference`: e1. under a write flood (16 writers) on a slow 8-tag
device, read p99 is lower than under none.

The device must be slow enough for the guest to fill it: under single-threaded TCG the guest
completed 800-1,500 4-KiB direct I/Os a second in these runs, so at 4 ms a request (2,000 a
second) the flood kept the device 25-74 % busy, the guest's CPU was the bottleneck (61-78 %
busy), and read p99 was its scheduling noise (veloces 53-108 ms in one 6.1 boot, none 96-122 ms).
At 12 ms (667 a second) none's flood keeps it 75-88 % busy with the guest's CPU at 58-71 %, and the check
measures the queue (2026-11-29, both kernels: docs/kernel.md, `read_preference`).
"""

from __future__ import annotations

from pathlib import Path

from vlab import schedulers
from vlab.checks.modsuite.common import MODULE, NotJudged, Result, ensure_loaded, expect, fio, make, needs_nothing
from vlab.devices.spec import Device

# The device: 8 tags completing after 12 ms each, at most 667 requests a second.
COMPLETION_MS = 12
DEVICE_IOPS = 8 / (COMPLETION_MS / 1000)


def _fio_read_p99(dev: Device, sched: str) -> tuple[float, float]:
    """The reader's total-latency p99 (us) and the requests a second the device completed."""
    schedulers.select(dev.name, sched)
    doc = fio(
        dev,
        "--ioengine=libaio --direct=1 --time_based --runtime=4 --ramp_time=1 --lat_percentiles=1 "
        "--name=flood --rw=randwrite --bs=4k --iodepth=1 --numjobs=16 "
        "--name=reader --numjobs=1 --rw=randread --bs=4k --iodepth=1",
    )
    reader = next(j for j in doc["jobs"] if j["jobname"] == "reader")
    done = sum(float(j["write"]["iops"]) + float(j["read"]["iops"]) for j in doc["jobs"])
    # Total latency: under none a read waits for a tag inside io_submit (slat).
    return float(reader["read"]["lat_ns"]["percentile"]["99.000000"]) / 1000.0, done


requires = needs_nothing  # nothing beyond the lab's guest

# Rotated repetitions of each scheduler, and the most veloces's median read p99 may be of
# none's. Until 2026-11-29 the device took 4 ms a request and the check varied on 6.1 (medians'
# ratios 0.76, 1.07 — a failure —, 0.65, 0.34 in four boots): the guest's CPU, not the device,
# set the pace (above). At 12 ms: 0.22 and 0.17 on 6.1, 0.23 on 6.12 (each run's figures in
# docs/kernel.md); with 4-s runs (since 2026-12-02, 8 s before) 0.17-0.22 in four boots.
# Each run's completions as a share of DEVICE_IOPS are recorded (device_busy):
# veloces's are 0.32-0.36 (0.36-0.42 in 4-s runs), its write backlog rule capping the flood
# (docs/kernel.md).
REPS = 3
MAX_RATIO = 0.8
# What the check measures is the queue at the device, so none's flood must fill it: 75-91 % of
# DEVICE_IOPS in every boot measured. A slower guest (a loaded host: its one TCG thread gets less
# than a core) issues less, read p99 becomes the guest's scheduling noise (as at 4 ms above, 25-74 %
# busy), and a ratio over MAX_RATIO with none's median under this is not judged.
MIN_NONE_BUSY = 0.6


def check(r: Result) -> None:
    ensure_loaded()
    # 8 tags: scheduler tags (2 x 8) come in words of 4, so 1/4 can be kept for reads.
    dev = make(
        f"null_blk:irqmode=2,completion_nsec={COMPLETION_MS * 1_000_000},hw_queue_depth=8,submit_queues=1,size=256"
    )
    p99: dict[str, list[float]] = {"none": [], MODULE: []}
    busy: dict[str, list[float]] = {"none": [], MODULE: []}
    for rep in range(REPS):
        for sched in [MODULE, "none"] if rep % 2 else ["none", MODULE]:
            lat, iops = _fio_read_p99(dev, sched)
            p99[sched].append(lat)
            busy[sched].append(round(iops / DEVICE_IOPS, 3))
    med = {s: sorted(v)[len(v) // 2] for s, v in p99.items()}
    r["figures"].update(read_total_latency_p99_us=p99, ratio=med[MODULE] / med["none"], device_busy=busy)
    schedulers.select(dev.name, "none")
    r["detail"] = f"read total-latency p99 veloces/none = {med[MODULE] / med['none']:.2f}"
    if Path("/proc/lockdep").exists():
        # The debug kernel (KASAN, lockdep) under TCG is CPU-bound here: read p99 was
        # 103-131 ms under veloces and 98-116 ms under none in its two runs (ratio 0.93,
        # then 1.26), against 30-36 ms under veloces on Debian's 6.1: the instrumented
        # CPU cost sets the floor, not queueing. Recorded, not asserted.
        r["detail"] = f"skipped: CPU-bound on a lock-debugging kernel ({r['detail']}, recorded only)"
        r["figures"]["skipped"] = True
        return
    if med[MODULE] > MAX_RATIO * med["none"]:
        message = (
            f"read p99 veloces {p99[MODULE]} us vs none {p99['none']} us: medians' ratio "
            f"{med[MODULE] / med['none']:.2f}, above {MAX_RATIO}"
        )
        none_busy = sorted(busy["none"])[len(busy["none"]) // 2]
        if none_busy < MIN_NONE_BUSY:
            raise NotJudged(
                f"{message}, but none's flood kept the device only {none_busy:.0%} busy (median; "
                f"{MIN_NONE_BUSY:.0%} needed): the guest's CPU, not the device, set the pace"
            )
        expect(False, message)
