"""The module suite's check `own_writes`: a write is its reader's own (docs/policy.md, "A
reader's own writes") only when its task read less than 10 ms before, and never a kernel
thread's. One thread reads a page (O_DIRECT) and then writes one through the page cache
(sync_file_range(WRITE): writeback in its own context): each such write is counted in
`own_writes` and opens no bundle. Another thread's page writes open bundles and count none.
Through a loop device, whose worker (a kernel thread) submits that same task's reads and
writes to the null_blk below, none is the reader's own.

A reader's own writes are also not limited to `async_depth` of the scheduler tags: with
`async_depth` 1 on a slow null_blk, one fio job that reads and writes at depth 8 keeps more
writes on the device at once than a job that only writes does (the tag limit's cap, read
from the block layer's issue and complete events).

The 10 ms are real time: a pair whose read and write took longer than 9 ms together (the
guest stalled: a loaded host) cannot be judged, and fewer than half the pairs judged makes
the check "not judged", never a false failure; so does a guest stall of more than 9 ms
while the reading job ran (its writes may then be limited: their read is too old).
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
    Trace,
    TraceEvent,
    check_invariants,
    ensure_loaded,
    expect,
    fio_no_errors,
    held_write,
    make,
    needs_module,
    set_attr,
    sh,
    stats,
    wait_quiet,
)
from vlab.checks.stall import StallProbe, stalls

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


def _most_writes(events: list[TraceEvent]) -> int:
    """The most writes on the device at once, from its issue and complete events."""
    on = most = 0
    for e in events:
        if "W" in e.rwbs:
            on += 1 if e.event == "block_rq_issue" else -1
            most = max(most, on)
    return most


def _tags(r: Result) -> None:
    """async_depth 1: a writer's writes are capped; a reader's own are not."""
    dev = make("null_blk:irqmode=2,completion_nsec=5000000,hw_queue_depth=8,submit_queues=1,size=256")
    schedulers.select(dev.name, MODULE)
    (dev.queue / "nr_requests").write_text("16")
    set_attr(dev, "async_depth", 1)
    job = ("--name=tags --ioengine=libaio --direct=1 --bs=4k --iodepth=8 --time_based --runtime=1 "
           "--norandommap --randrepeat=0")  # fmt: skip
    most = {}
    with StallProbe() as probe:
        for name, rw in (("writer", "--rw=randwrite"), ("reader", "--rw=randrw --rwmixread=50")):
            trace = Trace(dev, ("block_rq_issue", "block_rq_complete"))
            t0 = time.monotonic()
            fio_no_errors(dev, f"{job} {rw}", f"the {name}'s job")
            t1 = time.monotonic()
            most[name] = _most_writes(trace.stop())
        worst = max((b - a for a, b in stalls(probe.samples(t0, t1))), default=0.0)  # the reading job's
    wait_quiet(dev)
    schedulers.select(dev.name, "none")
    r["figures"].update(writer_most_writes=most["writer"], reader_most_writes=most["reader"])
    expect(most["writer"] >= 1, "the writer's job issued no writes")
    if most["reader"] <= most["writer"] and worst > JUDGED_S:
        raise NotJudged(f"the reading job's writes were capped, but the guest stalled {worst * 1e3:.0f} ms")
    expect(
        most["reader"] > most["writer"],
        f"a reader's own writes were capped with another writer's: at most {most['reader']} on the device "
        f"at once, the writer's {most['writer']} (async_depth 1)",
    )


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
    _tags(r)
    r["detail"] = (
        f"{own} of {PAIRS} writes right after the same thread's reads were its own ({fast} judged), "
        f"none of another thread's 4 nor of a loop worker's {writes}; with async_depth 1, a reading "
        f"job's writes {r['figures']['reader_most_writes']} on the device at once, a writer's "
        f"{r['figures']['writer_most_writes']}"
    )
