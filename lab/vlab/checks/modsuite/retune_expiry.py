"""The module suite's check `retune_expiry`: p. lowering bundle_expire_us re-arms the timer: a
write held under 10 s goes within the new 100 ms, not 10 s later (issue 36, finding 4).
"""

from __future__ import annotations

import os
import time

from vlab import schedulers
from vlab.checks.modsuite.common import (
    MODULE,
    Result,
    ensure_loaded,
    expect,
    held_write,
    make,
    needs_nothing,
    set_attr,
    stats,
    wait_writes,
    writes_completed,
)

requires = needs_nothing  # nothing beyond the lab's guest


def check(r: Result) -> None:
    ensure_loaded()
    dev = make("null_blk:size=64")
    schedulers.select(dev.name, MODULE)
    set_attr(dev, "write_expire", 60_000)  # neither its expiry nor
    set_attr(dev, "hold_idle", 1)  # held on an idle device: the holding rule itself
    set_attr(dev, "bundle_expire_us", 10_000_000)  # its bundle's age releases it for 10 s
    done = writes_completed(dev)
    fd = os.open(dev.path, os.O_RDWR)
    try:
        held_write(fd, 1 << 20)
        time.sleep(0.2)
        expect(stats(dev)["bundles_held"] == 1, f"the write was not held: {stats(dev)}")
        set_attr(dev, "bundle_expire_us", 100_000)
        waited = wait_writes(dev, done + 1, timeout=15)
    finally:
        os.close(fd)
    r["figures"].update(after_lowering_ms=round(waited * 1000, 1))
    # Opened 200 ms before the change: already past the new 100 ms, so it goes at once.
    expect(waited < 1.0, f"the held write went {waited:.1f} s after bundle_expire_us was lowered to 100 ms")
    set_attr(dev, "bundle_expire_us", 2000)
    set_attr(dev, "hold_idle", 0)
    set_attr(dev, "write_expire", 1000)
    schedulers.select(dev.name, "none")
    r["detail"] = f"held write went {waited * 1000:.0f} ms after bundle_expire_us fell from 10 s to 100 ms"
