"""The module suite's check `retune_spanning`: k. changing bundle_kb releases open bundles; an
async write across an erase-block boundary is not held.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from vlab import schedulers
from vlab.checks.modsuite.common import (
    MODULE,
    SLOW,
    Result,
    check_invariants,
    ensure_loaded,
    expect,
    held_write,
    make,
    needs_nothing,
    set_attr,
    stats,
    wait_quiet,
    wait_writes,
    writes_completed,
)


def _raised_expiry_keeps_ready() -> float:
    """A bundle marked ready by time while the one tag is busy stays ready when bundle_expire_us
    is raised before a tag frees (found by the stress check: its close was counted at index -1,
    which is bundles_opened). Returns the seconds from the raise to the write's completion."""
    dev = make("null_blk:irqmode=2,completion_nsec=400000000,hw_queue_depth=1,submit_queues=1,size=64")
    schedulers.select(dev.name, MODULE)
    (dev.queue / "nr_requests").write_text("32")
    set_attr(dev, "hold_idle", 1)  # held on an idle device: the holding rule itself
    set_attr(dev, "bundle_expire_us", 20_000)
    fd = os.open(dev.path, os.O_RDWR)
    try:
        # The page written below is in the page cache first: on 6.12 a write into a folio
        # that is not up to date reads it first, and that read would queue behind ours.
        os.pwrite(fd, os.urandom(4096), 1 << 20)
        os.fsync(fd)
        wait_quiet(dev)  # udev's probe reads and the priming write (400 ms each) are done
        before = stats(dev)
        done = writes_completed(dev)
        reader = subprocess.Popen(
            ["dd", f"if={dev.path}", "of=/dev/null", "bs=4k", "count=1", "skip=100", "iflag=direct", "status=none"]
        )
        try:
            t0 = time.monotonic()
            while Path(f"/sys/block/{dev.name}/inflight").read_text().split()[0] != "1":
                expect(time.monotonic() - t0 < 3, "the read did not reach the device")
                time.sleep(0.002)
            t_write = time.monotonic()
            held_write(fd, 1 << 20)  # the read holds the only tag for 400 ms
            write_s = time.monotonic() - t_write
            expect(write_s < 0.2, f"the buffered write took {write_s * 1000:.0f} ms: it waited for the read")
            time.sleep(0.1)  # the bundle's timer ran dispatch: ready, but no tag
            mid = stats(dev)
            expect(mid["bundles_ready"] == 1, f"the held bundle is not marked ready while the tag is busy: {mid}")
            set_attr(dev, "bundle_expire_us", 10_000_000)
            went_s = wait_writes(dev, done + 1, timeout=3)
        finally:
            reader.wait(timeout=10)
    finally:
        os.close(fd)
    after = check_invariants(dev, "raised bundle_expire_us")
    expect(
        after["bundles_closed_time"] == before["bundles_closed_time"] + 1,
        f"the ready bundle was not closed as time: {before} -> {after}",
    )
    schedulers.select(dev.name, "none")
    return went_s


requires = needs_nothing  # nothing beyond the lab's guest


def check(r: Result) -> None:
    ensure_loaded()
    dev = make(SLOW.format(depth=4))
    schedulers.select(dev.name, MODULE)
    set_attr(dev, "bundle_kb", 64)
    set_attr(dev, "hold_idle", 1)  # held on an idle device: the holding rule itself
    set_attr(dev, "bundle_expire_us", 5_000_000)
    fd = os.open(dev.path, os.O_RDWR)
    try:
        before = stats(dev)
        done = writes_completed(dev)
        held_write(fd, 60 * 1024, 8192)  # 60 KiB..68 KiB: crosses the 64 KiB boundary
        wait_writes(dev, done + 1, timeout=2)
        mid = stats(dev)
        expect(mid["bundles_spanning"] == before["bundles_spanning"] + 1, "the spanning write was not counted")
        expect(mid["bundles_opened"] == before["bundles_opened"], "the spanning write was held")
        done = writes_completed(dev)
        for page in (0, 2, 17):  # two bundles of 64 KiB
            held_write(fd, page * 4096)
        time.sleep(0.1)
        held = stats(dev)
        expect(held["bundles_open"] == 2, f"{held['bundles_open']} bundles open, wanted 2")
        t0 = time.monotonic()
        set_attr(dev, "bundle_kb", 128)
        released_s = wait_writes(dev, done + 3, timeout=3)
        after = stats(dev)
        expect(after["bundles_closed_retune"] - held["bundles_closed_retune"] == 2, "bundles not closed by the retune")
        # A write after the change is filed under the new size: one bundle for 0..128 KiB.
        for page in (1, 20):
            held_write(fd, page * 4096)
        time.sleep(0.1)
        expect(stats(dev)["bundles_open"] == 1, "writes 4 KiB and 80 KiB should share a 128 KiB bundle")
        set_attr(dev, "bundling", 0)
        wait_writes(dev, done + 5, timeout=3)
    finally:
        os.close(fd)
    check_invariants(dev, "retune")
    set_attr(dev, "bundling", 1)
    set_attr(dev, "hold_idle", 0)
    r["figures"].update(release_after_retune_ms=round(released_s * 1000, 1), elapsed_s=round(time.monotonic() - t0, 2))
    schedulers.select(dev.name, "none")
    ready_s = _raised_expiry_keeps_ready()
    r["figures"]["ready_bundle_after_raise_ms"] = round(ready_s * 1000, 1)
    r["detail"] = (
        f"spanning write not held; bundle_kb change released 2 bundles in {released_s * 1000:.0f} ms; "
        f"a ready bundle went {ready_s * 1000:.0f} ms after bundle_expire_us was raised, closed as time"
    )
