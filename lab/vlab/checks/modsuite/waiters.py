"""The module suite's check `waiters`: i. fsync and sync_file_range(WAIT) on held writeback release
it: fsync latency with bundling on is close to that with bundling off, not bundle_expire_us.
"""

from __future__ import annotations

import os
import time

from vlab import schedulers
from vlab.checks.modsuite.common import (
    MODULE,
    SLOW,
    SYNC_FILE_RANGE_WAIT_BEFORE,
    Result,
    check_invariants,
    ensure_loaded,
    expect,
    held_write,
    make,
    needs_nothing,
    set_attr,
    stats,
    sync_file_range,
)

requires = needs_nothing  # nothing beyond the lab's guest


def check(r: Result) -> None:
    ensure_loaded()
    dev = make(SLOW.format(depth=4))
    schedulers.select(dev.name, MODULE)
    set_attr(dev, "hold_idle", 1)  # held on an idle device: the holding rule itself
    set_attr(dev, "bundle_expire_us", 2_000_000)
    lat: dict[str, list[float]] = {"bundling=1": [], "bundling=0": []}
    fd = os.open(dev.path, os.O_RDWR)
    try:
        for rep in range(3):
            for bundling in (1, 0) if rep % 2 == 0 else (0, 1):
                set_attr(dev, "bundling", bundling)
                before = stats(dev)
                base = (rep * 2 + bundling) * (1 << 20)
                for i in range(4):  # background writeback of 4 pages, then fsync waits on it
                    held_write(fd, base + i * 8192)
                t0 = time.monotonic()
                os.fsync(fd)
                lat[f"bundling={bundling}"].append((time.monotonic() - t0) * 1000)
                after = stats(dev)
                if bundling:
                    expect(after["bundles_opened"] > before["bundles_opened"], "the writes were not held")
                    released = after["bundles_closed_waiter"] - before["bundles_closed_waiter"]
                    expect(released > 0, "no bundle released by the waiter")
        # sync_file_range(WAIT_BEFORE) waits on writeback just as fsync does.
        set_attr(dev, "bundling", 1)
        held_write(fd, 32 << 20)
        t0 = time.monotonic()
        sync_file_range(fd, 32 << 20, 4096, SYNC_FILE_RANGE_WAIT_BEFORE)
        sfr_ms = (time.monotonic() - t0) * 1000
    finally:
        os.close(fd)
    med = {k: sorted(v)[1] for k, v in lat.items()}
    r["figures"].update(fsync_ms=lat, median_ms=med, sync_file_range_wait_ms=round(sfr_ms, 1), bundle_expire_ms=2000)
    expect(max(lat["bundling=1"]) < 500, f"fsync waited {max(lat['bundling=1']):.0f} ms for held writes (expire 2000)")
    expect(sfr_ms < 500, f"sync_file_range(WAIT) waited {sfr_ms:.0f} ms for a held write")
    check_invariants(dev, "waiters")
    set_attr(dev, "bundle_expire_us", 2000)
    set_attr(dev, "hold_idle", 0)
    schedulers.select(dev.name, "none")
    r["detail"] = (
        f"fsync median {med['bundling=1']:.1f} ms with bundling, {med['bundling=0']:.1f} ms without "
        f"(bundle_expire 2000 ms); sync_file_range(WAIT) {sfr_ms:.1f} ms"
    )
