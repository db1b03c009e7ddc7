"""The module suite's check `load`: a. loads, is offered and selectable on 1-hwq, 2-hwq null_blk
and scsi_debug; rmmod busy; unload.
"""

from __future__ import annotations

import os
from pathlib import Path

from vlab import schedulers
from vlab.checks.modsuite.common import MODULE, Result, expect, loaded, make, needs_module, sh


def module_ko() -> Path:
    return schedulers.module_path(MODULE, os.uname().release)


def requires() -> str | None:
    """Why this kernel cannot run the check, or None."""
    return needs_module("scsi_debug") or needs_module("null_blk")


def check(r: Result) -> None:
    expect(module_ko().exists(), f"{module_ko()} not built: run make -C kernel")
    if loaded():
        sh(f"rmmod {MODULE}")
    schedulers.load(MODULE)
    expect(loaded(), "insmod left no /sys/module/veloces")
    one = make("null_blk:submit_queues=1,size=64")
    two = make("null_blk:submit_queues=2,size=64")
    sd = make("scsi_debug:dev_size_mb=32")
    r["figures"]["hw_queues"] = [one.describe()["nr_hw_queues"], two.describe()["nr_hw_queues"]]
    expect(r["figures"]["hw_queues"] == [1, 2], f"hardware queues {r['figures']['hw_queues']}, wanted [1, 2]")
    for dev in (one, two, sd):
        expect(MODULE in schedulers.offered(dev.name), f"{dev.name} does not offer veloces")
        schedulers.select(dev.name, MODULE)
        p = sh(f"dd if={dev.path} of=/dev/null bs=64k count=64 iflag=direct status=none")
        expect(p.returncode == 0, f"read through veloces on {dev.name} failed: {p.stderr}")
    p = sh(f"rmmod {MODULE}")
    expect(p.returncode != 0 and "in use" in p.stderr, f"rmmod while in use: rc {p.returncode} {p.stderr!r}")
    p = sh(f"dd if=/dev/zero of={one.path} bs=64k count=64 oflag=direct status=none")
    expect(p.returncode == 0 and schedulers.current(one.name) == MODULE, "queue unusable after failed rmmod")
    for dev in (one, two, sd):
        schedulers.select(dev.name, "none")
    p = sh(f"rmmod {MODULE}")
    expect(p.returncode == 0 and not loaded(), f"rmmod after switching away failed: {p.stderr}")
    schedulers.load(MODULE)
    expect(loaded(), "reload failed")
    sh("rmmod scsi_debug")
    r["detail"] = "selectable on 1-hwq and 2-hwq null_blk and scsi_debug; rmmod EBUSY in use; unloads"
