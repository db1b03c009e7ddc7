"""The module suite's check `bundling`: e2. with bundling, each erase block's async writes are
issued back to back; without, not.
"""

from __future__ import annotations

import os
import random
import time
from typing import Any

from vlab import schedulers
from vlab.checks.modsuite.common import (
    MODULE,
    SLOW,
    SYNC_FILE_RANGE_WAIT_AFTER,
    SYNC_FILE_RANGE_WAIT_BEFORE,
    SYNC_FILE_RANGE_WRITE,
    Result,
    Trace,
    TraceEvent,
    ensure_loaded,
    expect,
    expect_in_time,
    make,
    needs_nothing,
    set_attr,
    stats,
    sync_file_range,
)
from vlab.checks.stall import StallProbe, lost_s
from vlab.devices.spec import Device


def _async_writes(dev: Device, pages: list[int]) -> float:
    """Buffered 4 KiB writes, each started at once as asynchronous writeback, then waited
    for; returns the seconds it took to issue them (before waiting)."""
    fd = os.open(dev.path, os.O_RDWR)
    t0 = time.monotonic()
    try:
        buf = os.urandom(4096)
        for page in pages:
            os.pwrite(fd, buf, page * 4096)
            sync_file_range(fd, page * 4096, 4096, SYNC_FILE_RANGE_WRITE)
            time.sleep(0.002)  # paced: without bundling, each write goes out before the next
        issued = time.monotonic() - t0
        sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER)
    finally:
        os.close(fd)
    return issued


def runs_per_block(events: list[TraceEvent], block_sectors: int) -> tuple[int, int]:
    """(number of runs of consecutive same-block writes, number of distinct blocks)."""
    blocks = [e.sector // block_sectors for e in events if e.rwbs.startswith("W")]
    runs = sum(1 for i, b in enumerate(blocks) if i == 0 or blocks[i - 1] != b)
    return runs, len(set(blocks))


requires = needs_nothing  # nothing beyond the lab's guest


def check(r: Result) -> None:
    ensure_loaded()
    dev = make(SLOW.format(depth=1))
    schedulers.select(dev.name, MODULE)
    # Held writes occupy scheduler requests: the default (2 x device depth = 2) holds one.
    (dev.queue / "nr_requests").write_text("128")
    set_attr(dev, "bundle_kb", 64)  # 16 pages per block
    # Long enough that every write is issued before the first bundle is due, even
    # under slow emulation (the issuing time is checked below).
    set_attr(dev, "hold_idle", 1)  # held on an idle device: the holding rule itself
    set_attr(dev, "bundle_expire_us", 4_000_000)
    set_attr(dev, "write_expire", 10_000)
    rng = random.Random(7)
    figures: dict[str, dict[str, Any]] = {}
    for bundling in (1, 0):
        set_attr(dev, "bundling", bundling)
        pages = [b * 16 + p for b in range(8) for p in rng.sample(range(16), 6)]
        rng.shuffle(pages)
        before = stats(dev)
        trace = Trace(dev)
        with StallProbe() as probe:
            t0 = time.monotonic()
            issued_s = _async_writes(dev, pages)
            lost_ms = lost_s(probe.samples(t0, t0 + issued_s), t0, t0 + issued_s) * 1000
        events = trace.stop()
        after = stats(dev)
        writes = [e for e in events if e.rwbs.startswith("W")]
        kinds = sorted({e.rwbs for e in writes})
        expect(all("S" not in e.rwbs for e in writes), f"writes were not asynchronous: {kinds}")
        runs, blocks = runs_per_block(writes, 128)
        figures[f"bundling={bundling}"] = {
            "writes": len(writes),
            "runs": runs,
            "blocks": blocks,
            "bundles_opened": after["bundles_opened"] - before["bundles_opened"],
            "closed": {k: after[k] - before[k] for k in after if k.startswith("bundles_closed")},
            "order": [e.sector // 128 for e in writes],
            "issue_s": round(issued_s, 2),
            "issue_lost_ms": round(lost_ms, 1),
        }
    on, off = figures["bundling=1"], figures["bundling=0"]
    r["figures"] = figures
    # Every write must be issued before the first bundle is due (bundle_expire_us, 4 s).
    expect_in_time(on["issue_s"] * 1000, 3500, on["issue_lost_ms"], "issuing the writes (bundle_expire 4 s) took")
    expect(on["blocks"] == 8 and on["runs"] == 8, f"bundling on: {on['runs']} runs over {on['blocks']} blocks")
    expect(on["bundles_opened"] == 8, f"bundling on opened {on['bundles_opened']} bundles, wanted 8")
    expect(off["runs"] > off["blocks"], f"bundling off still grouped: {off['runs']} runs over {off['blocks']} blocks")
    expect(off["bundles_opened"] == 0, "bundling off opened bundles")
    set_attr(dev, "bundling", 1)
    set_attr(dev, "write_expire", 1000)
    set_attr(dev, "hold_idle", 0)
    schedulers.select(dev.name, "none")
    r["detail"] = f"runs/blocks with bundling {on['runs']}/{on['blocks']}, without {off['runs']}/{off['blocks']}"
