"""The module suite's check `tag_reserve`: on a device of queue depth 1 the block layer gives an
elevator 2 scheduler tags (2 x depth), and writes may take only `async_depth` of them (by default
half: 1), so a read that arrives behind a flood of sync writes gets the other tag and goes at the
first write's completion, before the writes that wait for a tag.

On 6.1 a shallow depth limits each sbitmap word, and a map of fewer than 4 tags is one word of
that many bits: the module converts its share to the word's own size, not the 64-bit word's
(which let writes take both tags; found by tracing the fidelity matrix's one-tag reader, whose
reads then waited for a tag in 5 % of cases). 6.12 applies the depth to the whole map.

Three threads each write a page (O_DIRECT: sync writes), 0.3 s apart, on a null_blk whose every
request takes 2 s; then a fourth thread reads one. The block layer's issue events give the
order: a write, the read, then the other two writes. Without the reserved tag the second
write holds the other tag and goes before the read. Only the order is judged, and only where the
read was called while the first write was still in service (1.1 s to spare, unless the guest
stalled): a read called after it completed finds the waiting write served first whatever the
limit, and the check is then not judged (host loaded), never failed. (With 1 s of service the
spare 0.1 s was lost in a shared boot on 6.12, and the check failed falsely.)
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
    check_invariants,
    ensure_loaded,
    expect,
    make,
    needs_nothing,
    wait_quiet,
)

requires = needs_nothing  # nothing beyond the lab's guest

SERVICE_NS = 2_000_000_000
# A read called later than this after the first write may have missed it in service.
LATEST_S = SERVICE_NS / 1e9 - 0.5
GAP_S = 0.3
PAGE = 4096


def check(r: Result) -> None:
    ensure_loaded()
    dev = make(f"null_blk:irqmode=2,completion_nsec={SERVICE_NS},hw_queue_depth=1,submit_queues=1,size=64")
    schedulers.select(dev.name, MODULE)
    nr_requests = int((dev.queue / "nr_requests").read_text())
    async_depth = (dev.queue / "iosched" / "async_depth").read_text().strip()
    fd = os.open(dev.path, os.O_RDWR | os.O_DIRECT)
    buf = mmap.mmap(-1, PAGE)
    errors: list[BaseException] = []
    called: dict[str, float] = {}

    def io(name: str, offset: int) -> None:
        called[name] = time.monotonic()
        try:
            if name.startswith("W"):
                os.pwrite(fd, buf, offset)
            else:
                os.preadv(fd, [buf], offset)
        except BaseException as e:  # re-raised by the main thread
            errors.append(e)

    # Writes at 1, 2 and 3 MiB, the read at 8 MiB: sectors tell them apart in the trace.
    plan = {"W1": 1 << 20, "W2": 2 << 20, "W3": 3 << 20, "R": 8 << 20}
    trace = Trace(dev)
    threads = []
    try:
        for name, offset in plan.items():
            t = threading.Thread(target=io, args=(name, offset))
            t.start()
            threads.append(t)
            time.sleep(GAP_S)
        for t in threads:
            t.join(timeout=60)
        events = trace.stop()
    finally:
        os.close(fd)
    expect(not errors, f"I/O failed: {errors}")
    expect(all(not t.is_alive() for t in threads), "an I/O did not finish in 60 s")
    names = {offset // 512: name for name, offset in plan.items()}
    order = [names.get(e.sector, f"?{e.sector}") for e in events]
    wait_quiet(dev)
    check_invariants(dev, "tag_reserve")
    schedulers.select(dev.name, "none")
    late_s = called["R"] - called["W1"]
    r["figures"].update(
        order=order, nr_requests=nr_requests, async_depth=async_depth, read_called_after_s=round(late_s, 3)
    )
    if late_s > LATEST_S:
        raise NotJudged(
            f"the read was called {late_s:.2f} s after the first write (service {SERVICE_NS / 1e9:g} s): host loaded"
        )
    # The read second, after whichever write got the device first (a loaded guest may start
    # the writers' threads out of order; the read's place is what the reserved tag decides).
    expect(
        len(order) == 4 and order[1] == "R" and sorted(order) == sorted(plan),
        f"issue order {order} (nr_requests {nr_requests}, async_depth {async_depth}): the read waited "
        "for a tag behind the writes",
    )
    r["detail"] = f"issue order {' '.join(order)} with {nr_requests} scheduler tags: the read had the reserved one"
