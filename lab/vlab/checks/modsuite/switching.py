"""The module suite's check `switching`: d. switch schedulers every 0.5 s during a 30 s verify run:
no errors, no hang.

The floor is coverage, not a rate: each switch waits for the queue to freeze (in-flight I/O
drains), which under TCG on a loaded host takes ~0.1 s or more, so 30 s holds between ~27 and
60 switches. The check asks for two full cycles (veloces into and out of each of the four
others twice, `CYCLE` switches each) and reports the slowest switch with its pair (which
elevator's exit or init took the time), and each pair's slowest; a hang is the hung-task
timeout's and the switcher's join's to catch.
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


OTHERS = ["mq-deadline", "kyber", "bfq", "none"]
CYCLE = 2 * len(OTHERS)  # veloces -> each other -> veloces


def check(r: Result) -> None:
    ensure_loaded()
    Path("/proc/sys/kernel/hung_task_timeout_secs").write_text("10")
    dev = make("null_blk:memory_backed=1,size=256,irqmode=2,completion_nsec=20000,hw_queue_depth=16")
    schedulers.require(dev.name, ["veloces", "mq-deadline", "kyber", "bfq"])
    stop = threading.Event()
    switches: list[tuple[str, float]] = []  # each switch's "from->to" and seconds

    def switcher() -> None:
        i = 0
        current = schedulers.current(dev.name)
        while not stop.is_set():
            name = MODULE if i % 2 == 0 else OTHERS[(i // 2) % len(OTHERS)]
            began = time.monotonic()
            schedulers.select(dev.name, name)
            switches.append((f"{current}->{name}", time.monotonic() - began))
            current = name
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
    by_pair: dict[str, float] = {}
    for pair, seconds in switches:
        by_pair[pair] = max(by_pair.get(pair, 0.0), seconds)
    worst_pair, slowest = max(by_pair.items(), key=lambda kv: kv[1], default=("-", 0.0))
    r["figures"].update(
        switches=len(switches),
        slowest_switch_s=round(slowest, 3),
        slowest_switch=worst_pair,
        slowest_by_switch_s={pair: round(s, 3) for pair, s in sorted(by_pair.items())},
        errors=errors,
    )
    expect(errors == 0, f"fio reported {errors} errors")
    expect(
        len(switches) >= 2 * CYCLE,
        f"only {len(switches)} switches in 30 s (two full cycles are {2 * CYCLE}); "
        f"slowest {slowest:.2f} s ({worst_pair})",
    )
    expect(not problems, "kernel log: " + " | ".join(problems[:3]))
    schedulers.select(dev.name, "none")
    r["detail"] = (
        f"{len(switches)} switches during 30 s of verified I/O (slowest {slowest:.2f} s, {worst_pair}), "
        "0 errors, no hung task"
    )
