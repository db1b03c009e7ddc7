"""The module suite's check `own_writes`: a write is its reader's own (docs/policy.md, "A
reader's own writes") only when its task read less than 10 ms before, and never a kernel
thread's. One thread reads a page (O_DIRECT) and then writes one through the page cache
(sync_file_range(WRITE): writeback in its own context): each such write is counted in
`own_writes` and opens no bundle. Another thread's page writes open bundles and count none.
Through a loop device, whose worker (a kernel thread) submits that same task's reads and
writes to the null_blk below, none is the reader's own.

The 10 ms are real time: a pair whose read and write took longer than 9 ms together (the
guest stalled: a loaded host) cannot be judged, and fewer than half the pairs judged makes
the check "not judged", never a false failure.
"""

from __future__ import annotations

import mmap
import os
import threading
import time

from vlab import schedulers
from vlab.checks.modsuite.common import (
    MODULE,
    NotJudged,
    Result,
    check_invariants,
    ensure_loaded,
    expect,
    held_write,
    make,
    needs_module,
    set_attr,
    sh,
    stats,
    wait_quiet,
)

PAIRS = 8
# A pair's read and write both inserted within this much of each other (of the 10 ms).
JUDGED_S = 0.009


def requires() -> str | None:
    return needs_module("loop")


def _pairs(rfd: int, wfd: int, base: int) -> int:
    """PAIRS times: read a page, then write one elsewhere through the page cache, from this
    thread. Returns how many pairs took under JUDGED_S from the read's start to the write's
    submission (their write is surely the reader's own)."""
    buf = mmap.mmap(-1, 4096)
    fast = 0
    for i in range(PAIRS):
        t0 = time.monotonic()
        os.preadv(rfd, [buf], i * 4096)
        held_write(wfd, base + i * (1 << 20))
        fast += time.monotonic() - t0 < JUDGED_S
    return fast


def _writes(fd: int, base: int, n: int) -> None:
    for i in range(n):
        held_write(fd, base + i * (1 << 20))


def check(r: Result) -> None:
    ensure_loaded()
    dev = make("null_blk:irqmode=2,completion_nsec=50000,hw_queue_depth=4,submit_queues=1,size=512")
    schedulers.select(dev.name, MODULE)
    (dev.queue / "nr_requests").write_text("128")
    # Held writes would wait 100 ms for their bundle, with or without an idle tag.
    set_attr(dev, "bundle_expire_us", 100_000)
    set_attr(dev, "hold_idle", 1)
    rfd = os.open(dev.path, os.O_RDONLY | os.O_DIRECT)
    wfd = os.open(dev.path, os.O_RDWR)
    try:
        s0 = stats(dev)
        fast = _pairs(rfd, wfd, 16 << 20)
        s1 = stats(dev)
        # Another thread writes, and reads nothing: its writes are held.
        other = threading.Thread(target=_writes, args=(wfd, 64 << 20, 4))
        other.start()
        other.join(timeout=30)
        s2 = stats(dev)
    finally:
        os.close(rfd)
        os.close(wfd)
    wait_quiet(dev)
    own = s1["own_writes"] - s0["own_writes"]
    opened = s1["bundles_opened"] - s0["bundles_opened"]
    r["figures"].update(pairs=PAIRS, judged=fast, own_writes=own, bundles_opened=opened)
    if fast < PAIRS // 2:
        raise NotJudged(f"only {fast} of {PAIRS} read-write pairs within {JUDGED_S * 1e3:.0f} ms: host loaded")
    expect(fast <= own <= PAIRS, f"{own} own writes for {PAIRS} read-write pairs, {fast} of them within 9 ms")
    expect(opened == PAIRS - own, f"{opened} bundles opened for {PAIRS - own} writes not the reader's own")
    expect(s2["own_writes"] == s1["own_writes"], "another thread's writes counted as the reader's own")
    expect(s2["bundles_opened"] - s1["bundles_opened"] == 4, "another thread's 4 writes did not open 4 bundles")
    check_invariants(dev, "own_writes")

    # The same task through a loop device: its worker, a kernel thread, submits both.
    sh("modprobe loop")
    loop = sh(f"losetup --find --show --direct-io=on {dev.path}")
    expect(loop.returncode == 0, f"losetup: {loop.stderr.strip()}")
    lpath = loop.stdout.strip()
    try:
        rfd = os.open(lpath, os.O_RDONLY | os.O_DIRECT)
        wfd = os.open(lpath, os.O_RDWR)
        try:
            s3 = stats(dev)
            _pairs(rfd, wfd, 32 << 20)
            os.fsync(wfd)
        finally:
            os.close(rfd)
            os.close(wfd)
        s4 = stats(dev)
    finally:
        sh(f"losetup --detach {lpath}")
    reads = s4["read_queued"] - s3["read_queued"]
    writes = s4["write_queued"] - s3["write_queued"]
    r["figures"].update(loop_reads=reads, loop_writes=writes, loop_own_writes=s4["own_writes"] - s3["own_writes"])
    expect(
        reads >= PAIRS and writes >= 1,
        f"the loop device's I/O did not reach {dev.name}: {reads} reads, {writes} writes",
    )
    expect(s4["own_writes"] == s3["own_writes"], "a loop worker's writes counted as a reader's own")
    check_invariants(dev, "own_writes through loop")
    schedulers.select(dev.name, "none")
    r["detail"] = (
        f"{own} of {PAIRS} writes right after the same thread's reads were its own ({fast} judged), "
        f"none of another thread's 4 nor of a loop worker's {writes}"
    )
