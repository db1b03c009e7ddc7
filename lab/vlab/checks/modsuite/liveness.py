"""The module suite's check `liveness`: f. one async write to an idle device completes within
bundle_expire plus a margin (150 ms; past it by no more than the guest lost to stalls, not
judged: vlab.checks.stall).
"""

from __future__ import annotations

import os
import time

from vlab import schedulers
from vlab.checks.modsuite.common import (
    MODULE,
    SYNC_FILE_RANGE_WRITE,
    Result,
    ensure_loaded,
    expect,
    expect_in_time,
    make,
    needs_nothing,
    set_attr,
    stats,
    sync_file_range,
    wait_writes,
    writes_completed,
)
from vlab.checks.stall import StallProbe, summary

requires = needs_nothing  # nothing beyond the lab's guest


def check(r: Result) -> None:
    ensure_loaded()
    dev = make("null_blk:size=64")
    schedulers.select(dev.name, MODULE)
    expire_ms = 200
    set_attr(dev, "hold_idle", 1)  # held on an idle device: the holding rule itself
    set_attr(dev, "bundle_expire_us", expire_ms * 1000)
    before = stats(dev)
    done = writes_completed(dev)
    fd = os.open(dev.path, os.O_RDWR)
    try:
        with StallProbe() as probe:
            os.pwrite(fd, os.urandom(4096), 1 << 20)
            t0 = time.monotonic()
            sync_file_range(fd, 1 << 20, 4096, SYNC_FILE_RANGE_WRITE)
            wait_writes(dev, done + 1, timeout=10)
            t1 = time.monotonic()
            samples = probe.samples(t0, t1)
    finally:
        os.close(fd)
    elapsed_ms = (t1 - t0) * 1000
    after = stats(dev)
    stalls = summary(samples, t0, t1)
    r["figures"].update(elapsed_ms=round(elapsed_ms, 1), bundle_expire_ms=expire_ms, stalls=stalls)
    expect(after["bundles_opened"] == before["bundles_opened"] + 1, "the write was not bundled")
    expect(after["bundles_closed_time"] == before["bundles_closed_time"] + 1, "the bundle did not close by time")
    expect(elapsed_ms >= expire_ms * 0.9, f"completed after {elapsed_ms:.0f} ms: not held for bundle_expire")
    expect_in_time(elapsed_ms, expire_ms + 150, stalls["lost_ms"], "the held write completed after")
    set_attr(dev, "bundle_expire_us", 2000)
    set_attr(dev, "hold_idle", 0)
    schedulers.select(dev.name, "none")
    r["detail"] = f"held write completed after {elapsed_ms:.0f} ms with bundle_expire {expire_ms} ms"
