"""The module suite's check `hotplug`: h. CPU hotplug during I/O."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from vlab import schedulers
from vlab.checks.modsuite.common import MODULE, Result, ensure_loaded, expect, fio, make

CPU1_ONLINE = "/sys/devices/system/cpu/cpu1/online"


def requires() -> str | None:
    """Why this kernel cannot run the check, or None."""
    return None if Path(CPU1_ONLINE).exists() else "no hot-pluggable cpu1 (boot with --cpus 2)"


def check(r: Result) -> None:
    ensure_loaded()
    cpu1 = Path(CPU1_ONLINE)
    dev = make("null_blk:memory_backed=1,size=128,submit_queues=2,irqmode=1")
    schedulers.select(dev.name, MODULE)
    stop = threading.Event()
    flips = []

    def flipper() -> None:
        while not stop.is_set():
            for state in ("0", "1"):
                cpu1.write_text(state)
                flips.append(state)
                time.sleep(0.5)

    th = threading.Thread(target=flipper, daemon=True)
    th.start()
    try:
        doc = fio(
            dev,
            "--name=hp --ioengine=libaio --direct=1 --iodepth=8 --rw=randrw --bs=4k --size=64m "
            "--verify=crc32c --verify_fatal=1 --time_based --runtime=10",
            timeout=180,
        )
    finally:
        stop.set()
        th.join(timeout=30)
        cpu1.write_text("1")
    errors = sum(int(j.get("error", 0)) for j in doc["jobs"])
    r["figures"].update(cpu_flips=len(flips), errors=errors)
    expect(errors == 0 and len(flips) >= 4, f"{errors} errors over {len(flips)} hotplug events")
    schedulers.select(dev.name, "none")
    r["detail"] = f"{len(flips)} cpu1 offline/online events during verified I/O, 0 errors"
