"""The module suite's check `switching`: d. switch schedulers every 0.5 s during a 30 s verify run:
no errors, no hang.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

from vlab import schedulers
from vlab.checks.modsuite.common import (
    MODULE,
    Result,
    dmesg_problems,
    ensure_loaded,
    expect,
    fio,
    make,
    needs_nothing,
    uptime,
)

requires = needs_nothing  # nothing beyond the lab's guest


def check(r: Result) -> None:
    ensure_loaded()
    Path("/proc/sys/kernel/hung_task_timeout_secs").write_text("10")
    dev = make("null_blk:memory_backed=1,size=256,irqmode=2,completion_nsec=20000,hw_queue_depth=16")
    schedulers.require(dev.name, ["veloces", "mq-deadline", "kyber", "bfq"])
    stop = threading.Event()
    switches = []

    def switcher() -> None:
        others = ["mq-deadline", "kyber", "bfq", "none"]
        i = 0
        while not stop.is_set():
            name = MODULE if i % 2 == 0 else others[(i // 2) % len(others)]
            schedulers.select(dev.name, name)
            switches.append(name)
            i += 1
            time.sleep(0.5)

    t0 = uptime()
    th = threading.Thread(target=switcher, daemon=True)
    th.start()
    try:
        doc = fio(
            dev,
            "--name=sw --ioengine=libaio --direct=1 --iodepth=8 --numjobs=2 --size=64m --offset_increment=64m "
            "--rw=randrw --bsrange=4k-64k --verify=crc32c --verify_fatal=1 --serialize_overlap=1 "
            "--time_based --runtime=30 --group_reporting",
            timeout=240,
        )
    finally:
        stop.set()
        th.join(timeout=30)
    expect(not th.is_alive(), "the scheduler switcher hung")
    errors = sum(int(j.get("error", 0)) for j in doc["jobs"])
    problems = dmesg_problems(t0)
    r["figures"].update(switches=len(switches), errors=errors)
    expect(errors == 0, f"fio reported {errors} errors")
    expect(len(switches) >= 30, f"only {len(switches)} switches in 30 s")
    expect(not problems, "kernel log: " + " | ".join(problems[:3]))
    schedulers.select(dev.name, "none")
    r["detail"] = f"{len(switches)} switches during 30 s of verified I/O, 0 errors, no hung task"
