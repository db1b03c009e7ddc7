"""The module suite's check `liveness`: f. one async write to an idle device completes within
bundle_expire plus a margin.
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
    make,
    needs_nothing,
    set_attr,
    stats,
    sync_file_range,
    wait_writes,
    writes_completed,
)

requires = needs_nothing  # nothing beyond the lab's guest


def check(r: Result) -> None:
    ensure_loaded()
    dev = make("null_blk:size=64")
    schedulers.select(dev.name, MODULE)
    expire_ms = 200
    set_attr(dev, "bundle_expire_us", expire_ms * 1000)
    before = stats(dev)
    done = writes_completed(dev)
    fd = os.open(dev.path, os.O_RDWR)
    try:
        os.pwrite(fd, os.urandom(4096), 1 << 20)
        t0 = time.monotonic()
        sync_file_range(fd, 1 << 20, 4096, SYNC_FILE_RANGE_WRITE)
        wait_writes(dev, done + 1, timeout=10)
        elapsed_ms = (time.monotonic() - t0) * 1000
    finally:
        os.close(fd)
    after = stats(dev)
    r["figures"].update(elapsed_ms=round(elapsed_ms, 1), bundle_expire_ms=expire_ms)
    expect(after["bundles_opened"] == before["bundles_opened"] + 1, "the write was not bundled")
    expect(after["bundles_closed_time"] == before["bundles_closed_time"] + 1, "the bundle did not close by time")
    expect(elapsed_ms >= expire_ms * 0.9, f"completed after {elapsed_ms:.0f} ms: not held for bundle_expire")
    expect(elapsed_ms <= expire_ms + 150, f"completed after {elapsed_ms:.0f} ms, limit {expire_ms + 150} ms")
    set_attr(dev, "bundle_expire_us", 2000)
    schedulers.select(dev.name, "none")
    r["detail"] = f"held write completed after {elapsed_ms:.0f} ms with bundle_expire {expire_ms} ms"
