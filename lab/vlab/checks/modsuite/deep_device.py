"""The module suite's check `deep_device`: q. on a device with more driver tags than
write_depth's range (65,536), the default sysfs shows is one sysfs accepts: reading write_depth
and writing it back succeeds, and I/O runs (issue 36, finding 7).

Large NVMe reach this with queue depth x hardware queues, poll and read queues included; here
null_blk does, with hw_queue_depth at blk-mq's largest (10,240) on seven submission queues.
null_blk allows one submission queue per possible CPU: the lab boots this check's guest with
`--possible-cpus` (modsuite.POSSIBLE_CPUS), two of them present.
"""

from __future__ import annotations

import errno
import math
import os
from pathlib import Path

from vlab import schedulers
from vlab.checks.modsuite.common import (
    MODULE,
    Result,
    attr,
    ensure_loaded,
    expect,
    fio_no_errors,
    make,
    write_errno,
)

# blk-mq's largest queue depth per hardware queue (BLK_MQ_MAX_DEPTH): null_blk clamps to it.
QUEUE_DEPTH = 10_240


def queues_needed() -> int:
    """Hardware queues of QUEUE_DEPTH tags that pass write_depth's maximum."""
    return math.ceil((schedulers.declared_tunables(MODULE)["write_depth"].max + 1) / QUEUE_DEPTH)


def possible_cpus() -> int:
    """nr_cpu_ids: /sys/devices/system/cpu/possible is a range list, e.g. 0-7."""
    count = 0
    for part in Path("/sys/devices/system/cpu/possible").read_text().strip().split(","):
        lo, _, hi = part.partition("-")
        count += int(hi or lo) - int(lo) + 1
    return count


def requires() -> str | None:
    """Why this guest cannot run the check, or None."""
    need, have = queues_needed(), possible_cpus()
    if have < need:
        return (
            f"needs {need} possible CPUs for {need} null_blk queues, has {have} (vlab run --possible-cpus; "
            "6.12 under TCG counts no hot-pluggable CPU as possible)"
        )
    return None


def check(r: Result) -> None:
    ensure_loaded()
    declared = schedulers.declared_tunables(MODULE)["write_depth"]
    queues = queues_needed()
    tags = queues * QUEUE_DEPTH
    dev = make(f"null_blk:size=64,hw_queue_depth={QUEUE_DEPTH},submit_queues={queues}")
    mq = dev.queue.parent / "mq"
    per_queue = [int((q / "nr_tags").read_text()) for q in mq.iterdir() if q.name.isdigit()]
    expect(per_queue == [QUEUE_DEPTH] * queues, f"null_blk queues' tags {per_queue}, wanted {queues} x {QUEUE_DEPTH}")
    schedulers.select(dev.name, MODULE)
    shown = attr(dev, "write_depth").read_text().strip()
    r["figures"].update(tags=tags, write_depth=shown, max=declared.max)
    # Before the fix the default was the device's tags (71,680 here), which sysfs refuses.
    expect(shown == str(min(tags, declared.max)), f"write_depth {shown} on {tags} tags (max {declared.max})")
    rc = write_errno(attr(dev, "write_depth"), shown)
    expect(rc == 0, f"writing back write_depth's default {shown}: {os.strerror(rc)}")
    rc = write_errno(attr(dev, "write_depth"), str(declared.max + 1))
    expect(rc == errno.EINVAL, f"write_depth {declared.max + 1}: {os.strerror(rc) if rc else 'accepted'}")
    fio_no_errors(
        dev,
        "--name=w --ioengine=libaio --direct=1 --rw=randwrite --bs=4k --size=32m --iodepth=64 "
        "--time_based --runtime=3 --name=r --ioengine=libaio --direct=1 --rw=randread --bs=4k "
        "--size=32m --offset=32m --iodepth=64 --time_based --runtime=3",
        "deep_device",
    )
    schedulers.select(dev.name, "none")
    r["detail"] = f"{queues} queues x {QUEUE_DEPTH} tags: write_depth {shown}, written back, I/O ran"
