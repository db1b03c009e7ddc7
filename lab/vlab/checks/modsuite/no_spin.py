"""The module suite's check `no_spin`: j. a ready bundle waiting for the device's only tag does not
spin: dispatch runs a few times, not thousands (the timer is never armed in the past).
"""

from __future__ import annotations

import mmap
import os
import threading
import time

from vlab import schedulers
from vlab.checks.modsuite.common import (
    MODULE,
    Result,
    check_invariants,
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
    dev = make("null_blk:irqmode=2,completion_nsec=400000000,hw_queue_depth=1,submit_queues=1,size=64")
    schedulers.select(dev.name, MODULE)
    (dev.queue / "nr_requests").write_text("32")
    set_attr(dev, "bundle_expire_us", 20_000)
    dfd = os.open(dev.path, os.O_RDONLY | os.O_DIRECT)
    fd = os.open(dev.path, os.O_RDWR)
    buf = mmap.mmap(-1, 4096)
    reader = threading.Thread(target=os.preadv, args=(dfd, [buf], 0), daemon=True)
    try:
        done = writes_completed(dev)
        reader.start()  # holds the only tag for 400 ms
        time.sleep(0.05)
        before = stats(dev)
        held_write(fd, 1 << 20)  # ready after 20 ms, waits ~330 ms for the tag
        time.sleep(0.3)
        during = stats(dev)
        wait_writes(dev, done + 1, timeout=10)
        reader.join(timeout=10)
    finally:
        os.close(fd)
        os.close(dfd)
    runs = during["runs"] - before["runs"]
    deferred = during["deferred"] - before["deferred"]
    r["figures"].update(runs_in_300ms=runs, deferred=deferred)
    expect(runs <= 20, f"dispatch ran {runs} times in 300 ms while waiting for the tag")
    check_invariants(dev, "no_spin")
    schedulers.select(dev.name, "none")
    r["detail"] = f"{runs} dispatch runs, {deferred} waits for a token in 300 ms with a ready bundle and no tag"
