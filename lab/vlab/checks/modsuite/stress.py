"""The module suite's check `stress`: n. stress: buffered writers with fsync, O_DIRECT writers on
adjacent ranges, background writeback, scheduler switches and tunable changes under load, on
slow null_blk devices with 1, 4 and 32 tags and 1 and 4 hardware queues; then a fio verify and
the statistics' invariants. VLAB_STRESS_S sets the seconds per device (default 20).
"""

from __future__ import annotations

import os
import random
import threading
import time
from pathlib import Path
from typing import Any

from vlab import schedulers
from vlab.checks.modsuite.common import (
    MODULE,
    Result,
    attr,
    check_invariants,
    dmesg_problems,
    ensure_loaded,
    expect,
    fio,
    fio_no_errors,
    make,
    needs_nothing,
    set_attr,
    uptime,
    write_errno,
)
from vlab.devices.spec import Device


def stress_seconds() -> float:
    return float(os.environ.get("VLAB_STRESS_S", "20"))


CHURN_SETTINGS = [
    ("bundle_expire_us", ["200", "2000", "200000"]),
    ("bundle_kb", ["64", "512", "128"]),
    ("bundling", ["0", "1"]),
    ("fifo_batch", ["1", "16"]),
    ("front_merges", ["0", "1"]),
]


def _churn(dev: Device, stop: threading.Event, rng: random.Random, actions: list[str]) -> None:
    """Every 0.3 s: switch to another scheduler and back, or change a tunable."""
    while not stop.wait(0.3):
        if rng.random() < 0.15:
            other = rng.choice(["mq-deadline", "kyber", "none"])
            schedulers.select(dev.name, other)
            time.sleep(0.2)
            schedulers.select(dev.name, MODULE)
            actions.append(other)
        else:
            name, values = rng.choice(CHURN_SETTINGS)
            if write_errno(attr(dev, name), rng.choice(values)) == 0:
                actions.append(name)


def _stress_devices(r: Result, secs: float) -> None:
    figures: dict[str, Any] = {}
    for depth, queues in ((1, 1), (4, 1), (32, 4)):
        t_dev = time.monotonic()
        dev = make(
            f"null_blk:memory_backed=1,size=64,irqmode=2,completion_nsec=1000000,"
            f"hw_queue_depth={depth},submit_queues={queues}"
        )
        schedulers.select(dev.name, MODULE)
        stop = threading.Event()
        actions: list[str] = []
        rng = random.Random(depth)

        th = threading.Thread(target=_churn, args=(dev, stop, rng, actions), daemon=True)
        th.start()
        try:
            # One 8 MiB region: buffered writers with fsync and O_DIRECT writers interleave in it.
            # One 8 MiB region. Writeback starts with sync_file_range(WRITE) (async: held)
            # and from the flusher; fsync waits on it (a writeback waiter).
            doc = fio(
                dev,
                f"--time_based --runtime={secs:g} --size=8m --group_reporting "
                "--name=buffered --ioengine=psync --direct=0 --rw=randwrite --bsrange=4k-64k --numjobs=2 --fsync=8 "
                "--name=writeback --ioengine=psync --direct=0 --rw=randwrite --bsrange=4k-16k "
                "--sync_file_range=write:4 "
                "--name=direct --ioengine=libaio --direct=1 --rw=randwrite --bs=4k --iodepth=8 --numjobs=2 "
                "--name=reader --ioengine=libaio --direct=1 --rw=randread --bs=4k --iodepth=4",
                timeout=secs * 10 + 300,
            )
        finally:
            stop.set()
            th.join(timeout=30)
        expect(not th.is_alive(), "the churn thread hung")
        errors = sum(int(j.get("error", 0)) for j in doc["jobs"])
        expect(errors == 0, f"{depth} tags: fio reported {errors} errors")
        schedulers.select(dev.name, MODULE)
        set_attr(dev, "bundling", 1)
        set_attr(dev, "bundle_expire_us", 2000)
        # Held writes occupy scheduler requests: the default (2 x depth) would hold one.
        (dev.queue / "nr_requests").write_text("128")
        # Async writeback (held in bundles), then fsync, then every block read back.
        fio_no_errors(
            dev,
            "--name=v --ioengine=psync --direct=0 --rw=randwrite --bs=4k --size=32m --offset=16m "
            "--sync_file_range=write:8 --end_fsync=1 --verify=crc32c --verify_fatal=1 --do_verify=1",
            f"{depth} tags: verify",
            timeout=600,
        )
        st = check_invariants(dev, f"stress {depth} tags")
        expect(st["bundles_bundled_writes"] > 0, f"{depth} tags: the verify's async writeback was never bundled")
        figures[f"tags={depth},hwq={queues}"] = {
            "actions": len(actions),
            "switches": sum(1 for a in actions if a in ("mq-deadline", "kyber", "none")),
            "writes_dispatched": st["write_dispatched"],
            "runs": st["runs"],
            "deferred": st["deferred"],
            "bundles": st["bundles_opened"],
            "bundled_writes": st["bundles_bundled_writes"],
            "waiters": st["waiters"],
            "seconds": round(time.monotonic() - t_dev, 1),
        }
        schedulers.select(dev.name, "none")
        r["figures"] = figures


requires = needs_nothing  # nothing beyond the lab's guest


def check(r: Result) -> None:
    ensure_loaded()
    Path("/proc/sys/kernel/hung_task_timeout_secs").write_text("30")
    secs = stress_seconds()
    t_start = uptime()
    # Background writeback every 0.5 s for data dirty 1 s: the flusher's async writes too.
    vm = Path("/proc/sys/vm")
    saved = {k: (vm / k).read_text() for k in ("dirty_writeback_centisecs", "dirty_expire_centisecs")}
    (vm / "dirty_writeback_centisecs").write_text("50")
    (vm / "dirty_expire_centisecs").write_text("100")
    try:
        _stress_devices(r, secs)
    finally:
        for k, v in saved.items():
            (vm / k).write_text(v)
    problems = dmesg_problems(t_start)
    expect(not problems, "kernel log: " + " | ".join(problems[:3]))
    r["detail"] = f"{secs:g} s per device on 1/4/32 tags: no errors, verified, bundled, invariants hold"
