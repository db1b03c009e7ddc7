"""The module suite's check `read_preference`: e1. under a write flood (16 writers) on a slow 8-tag
device, read p99 is lower than under none.
"""

from __future__ import annotations

from pathlib import Path

from vlab import schedulers
from vlab.checks.modsuite.common import MODULE, Result, ensure_loaded, expect, fio, make, needs_nothing
from vlab.devices.spec import Device


def _fio_read_p99(dev: Device, sched: str) -> float:
    schedulers.select(dev.name, sched)
    doc = fio(
        dev,
        "--ioengine=libaio --direct=1 --time_based --runtime=8 --ramp_time=1 --lat_percentiles=1 "
        "--name=flood --rw=randwrite --bs=4k --iodepth=1 --numjobs=16 "
        "--name=reader --numjobs=1 --rw=randread --bs=4k --iodepth=1",
    )
    reader = next(j for j in doc["jobs"] if j["jobname"] == "reader")
    # Total latency: under none a read waits for a tag inside io_submit (slat).
    return float(reader["read"]["lat_ns"]["percentile"]["99.000000"]) / 1000.0


requires = needs_nothing  # nothing beyond the lab's guest


def check(r: Result) -> None:
    ensure_loaded()
    # 8 tags: scheduler tags (2 x 8) come in words of 4, so 1/4 can be kept for reads.
    dev = make("null_blk:irqmode=2,completion_nsec=4000000,hw_queue_depth=8,submit_queues=1,size=256")
    p99: dict[str, list[float]] = {"none": [], MODULE: []}
    for rep in range(2):
        for sched in [MODULE, "none"] if rep % 2 else ["none", MODULE]:
            p99[sched].append(_fio_read_p99(dev, sched))
    med = {s: sorted(v)[len(v) // 2] for s, v in p99.items()}
    r["figures"].update(read_total_latency_p99_us=p99, ratio=med[MODULE] / med["none"])
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
    expect(max(p99[MODULE]) < min(p99["none"]), f"read p99 veloces {p99[MODULE]} us vs none {p99['none']} us")
