"""I/O schedulers in the guest: which a queue offers, loading their modules, selecting one."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from vlab.kernels import repo_root

# Scheduler name -> module that provides it (mq-deadline is built into Debian's kernels).
MODULES = {"mq-deadline": "mq-deadline", "kyber": "kyber-iosched", "bfq": "bfq"}
IN_TREE = ("none", "mq-deadline", "kyber", "bfq")


class SchedulerError(Exception):
    pass


def _queue_file(disk: str) -> Path:
    return Path("/sys/block") / disk / "queue" / "scheduler"


def offered(disk: str) -> list[str]:
    """Schedulers the queue offers, as listed in queue/scheduler."""
    return [s.strip("[]") for s in _queue_file(disk).read_text().split()]


def current(disk: str) -> str:
    for s in _queue_file(disk).read_text().split():
        if s.startswith("["):
            return s.strip("[]")
    return "none"


def module_path(name: str, release: str) -> Path:
    """Where an out-of-tree scheduler module built by `make -C kernel` lives: veloces, or a
    benchmark-only elevator such as vfifo (`make -C kernel bench-modules`, never installed)."""
    build = repo_root() / "kernel" / "build" / release
    bench = build / "bench" / f"{name}.ko"
    return bench if bench.exists() else build / f"{name}.ko"


def load(name: str) -> None:
    """Make `name` available: modprobe the in-tree module, or insmod our own build."""
    if name in MODULES:
        subprocess.run(["modprobe", MODULES[name]], capture_output=True, check=False)
        return
    ko = module_path(name, os.uname().release)
    if ko.exists() and not Path("/sys/module", name).exists():
        proc = subprocess.run(["insmod", str(ko)], capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise SchedulerError(f"insmod {ko} failed: {proc.stderr.strip()}")


def require(disk: str, names: list[str]) -> None:
    """Load every scheduler in `names`; raise with the offered list if one is missing."""
    for name in names:
        load(name)
    missing = [n for n in names if n not in offered(disk)]
    if missing:
        for name in MODULES:  # so the message lists every scheduler the kernel has
            load(name)
        have = offered(disk)
        raise SchedulerError(
            f"unknown scheduler {', '.join(repr(m) for m in missing)} for {disk}: it offers {', '.join(have)}"
        )


def select(disk: str, name: str) -> None:
    try:
        _queue_file(disk).write_text(name)
    except OSError as e:
        raise SchedulerError(f"writing {name!r} to {_queue_file(disk)} failed: {e.strerror}") from e
    now = current(disk)
    if now != name:
        raise SchedulerError(f"selected {name!r} but {_queue_file(disk)} shows {now!r}")
