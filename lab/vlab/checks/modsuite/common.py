"""What the module suite's checks share: the harness's Result and expect, devices,
sysfs attributes, fio, the kernel log, tracing, writeback helpers."""

from __future__ import annotations

import ctypes
import json
import os
import re
import subprocess
import time
from pathlib import Path
from typing import Any, NamedTuple

from vlab import schedulers
from vlab.devices.spec import Device, create_all, parse_specs

MODULE = "veloces"


SLOW = "null_blk:irqmode=2,completion_nsec=1000000,hw_queue_depth={depth},submit_queues=1,size=256"


SYNC_FILE_RANGE_WAIT_BEFORE = 1


SYNC_FILE_RANGE_WRITE = 2


SYNC_FILE_RANGE_WAIT_AFTER = 4


Result = dict[str, Any]


class CheckFailed(Exception):
    pass


def expect(cond: bool, message: str) -> None:
    if not cond:
        raise CheckFailed(message)


class NotJudged(Exception):
    """The host was too loaded for a timed check to judge: recorded as a skip that gives the
    measured reason (docs/testing.md, "Timed checks on a loaded host")."""


def expect_in_time(value_ms: float, limit_ms: float, lost_ms: float, what: str) -> None:
    """A time bound: `what` took value_ms, at most limit_ms allowed. Missed by no more than
    the guest lost to stalls in that time (lost_ms, vlab.checks.stall), it is not judged;
    missed by more, the check fails."""
    if value_ms <= limit_ms:
        return
    message = f"{what} {value_ms:.0f} ms, limit {limit_ms:.0f} ms; the guest lost {lost_ms:.0f} ms to stalls"
    if value_ms - lost_ms <= limit_ms:
        raise NotJudged(f"{message}, more than the {value_ms - limit_ms:.0f} ms it is over")
    raise CheckFailed(message)


def sh(cmd: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, timeout=timeout, check=False)


def loaded() -> bool:
    return Path("/sys/module", MODULE).exists()


def ensure_loaded() -> None:
    if not loaded():
        schedulers.load(MODULE)


def needs_nothing() -> str | None:
    """A check's requirement when it needs nothing beyond the lab's guest (null_blk, fio)."""
    return None


def needs_module(name: str) -> str | None:
    """A check's requirement (its `requires()`): the kernel has module `name`, built in or loadable."""
    if Path("/sys/module", name).exists() or sh(f"modinfo {name}").returncode == 0:
        return None
    return f"this kernel has no {name} module"


def needs_param(module: str, param: str, config: str) -> str | None:
    """A check's requirement: `module` has parameter `param` (which `config` provides)."""
    missing = needs_module(module)
    params = [line.split(":", 1)[0] for line in sh(f"modinfo -F parm {module}").stdout.splitlines()]
    if missing or param in params:
        return missing
    return f"{module} has no {param}= (needs {config})"


def make(spec: str) -> Device:
    (dev,) = create_all(parse_specs(spec))
    return dev


class TraceEvent(NamedTuple):
    event: str  # e.g. block_rq_issue
    rwbs: str
    sector: int
    sectors: int


class Trace:
    """The block layer's request events (block_rq_issue by default) of one device, from tracefs."""

    ROOT = Path("/sys/kernel/tracing")
    # issue and insert: "8,0 W 4096 () 1234 + 8 [fio]"; requeue and complete: "8,0 W () 1234 + 8 [0]"
    PATTERN = re.compile(r"(block_rq_\w+): (\d+,\d+) (\S+) (?:\d+ )?\(.*?\) (\d+) \+ (\d+)")

    def __init__(self, dev: Device, events: tuple[str, ...] = ("block_rq_issue",)) -> None:
        major, minor = Path(f"/sys/block/{dev.name}/dev").read_text().strip().split(":")
        self.dev = f"{major},{minor}"
        self.events = events
        (self.ROOT / "tracing_on").write_text("0")
        (self.ROOT / "buffer_size_kb").write_text("8192")  # per CPU: seconds of fast I/O
        (self.ROOT / "trace").write_text("")
        for name in events:
            ev = self.ROOT / "events/block" / name
            (ev / "filter").write_text(f"dev == {(int(major) << 20) | int(minor)}")
            (ev / "enable").write_text("1")
        (self.ROOT / "tracing_on").write_text("1")

    def stop(self) -> list[TraceEvent]:
        """The events in the order they happened."""
        (self.ROOT / "tracing_on").write_text("0")
        for name in self.events:
            (self.ROOT / "events/block" / name / "enable").write_text("0")
        out = []
        for line in (self.ROOT / "trace").read_text().splitlines():
            m = self.PATTERN.search(line)
            if m and m.group(2) == self.dev and m.group(1) in self.events:
                out.append(TraceEvent(m.group(1), m.group(3), int(m.group(4)), int(m.group(5))))
        return out


def attr(dev: Device, name: str) -> Path:
    return dev.queue / "iosched" / name


def write_errno(path: Path, value: str) -> int:
    """Write `value` with one write(2); return 0 or the errno."""
    try:
        fd = os.open(path, os.O_WRONLY)
    except OSError as e:
        return e.errno or -1
    try:
        os.write(fd, value.encode())
        return 0
    except OSError as e:
        return e.errno or -1
    finally:
        os.close(fd)


def set_attr(dev: Device, name: str, value: int | str) -> None:
    rc = write_errno(attr(dev, name), str(value))
    expect(rc == 0, f"writing {value} to {name} failed: {os.strerror(rc)}")


def stats(dev: Device) -> dict[str, int]:
    text = Path(f"/sys/kernel/debug/block/{dev.name}/sched/stats").read_text()
    out: dict[str, int] = {}
    for line in text.splitlines():
        words = line.split()
        if len(words) == 2:  # "starved 5"
            out[words[0]] = int(words[1])
            continue
        for k, v in zip(words[1::2], words[2::2], strict=False):
            out[f"{words[0]}_{k}"] = int(v)
    return out


def fio(dev: Device, args: str, timeout: float = 600, io_errors_expected: bool = False) -> dict[str, Any]:
    """Run fio on `dev` from /tmp (its state files need a writable directory); return its JSON.

    fio exits non-zero when I/O failed, even with continue_on_error: where errors are the
    point, `io_errors_expected` accepts that as long as its JSON came out.
    """
    p = sh(f"cd /tmp && fio --output-format=json --filename={dev.path} {args}", timeout)
    ok = p.returncode == 0 or (io_errors_expected and "{" in p.stdout)
    expect(ok, f"fio failed ({p.returncode}): {p.stderr.strip()[-800:]}")
    doc: dict[str, Any] = json.loads(p.stdout[p.stdout.find("{") :])
    return doc


def fio_no_errors(dev: Device, args: str, what: str, timeout: float = 600) -> dict[str, Any]:
    """Run fio (see fio()) and fail the check if any job reports an error."""
    doc = fio(dev, args, timeout=timeout)
    errors = sum(int(j.get("error", 0)) for j in doc["jobs"])
    expect(errors == 0, f"{what}: fio reported {errors} errors")
    return doc


def dmesg_problems(since: float) -> list[str]:
    bad = ("WARNING:", "BUG:", "Oops", "blocked for more than", "stall", "general protection")
    out = []
    for line in sh("dmesg").stdout.splitlines():
        m = re.match(r"\[\s*([0-9.]+)\]", line)
        if m and float(m.group(1)) >= since and any(b in line for b in bad):
            out.append(line)
    return out


def uptime() -> float:
    return float(Path("/proc/uptime").read_text().split()[0])


_libc = ctypes.CDLL(None, use_errno=True)


def sync_file_range(fd: int, offset: int, nbytes: int, flags: int) -> None:
    if _libc.sync_file_range(fd, ctypes.c_longlong(offset), ctypes.c_longlong(nbytes), flags) != 0:
        raise OSError(ctypes.get_errno(), "sync_file_range")


def writes_completed(dev: Device) -> int:
    """Writes the disk has completed (field 5 of /sys/block/<dev>/stat)."""
    return int(Path(f"/sys/block/{dev.name}/stat").read_text().split()[4])


def wait_writes(dev: Device, count: int, timeout: float) -> float:
    """Poll until the disk has completed `count` writes; return the seconds it took.

    Polling, not sync_file_range(WAIT) or fsync: a task waiting on writeback
    releases held bundles, which is what some checks measure and others must avoid.
    """
    t0 = time.monotonic()
    while writes_completed(dev) < count:
        expect(time.monotonic() - t0 < timeout, f"{count} writes not completed after {timeout} s")
        time.sleep(0.002)
    return time.monotonic() - t0


def wait_quiet(dev: Device, timeout: float = 60) -> None:
    """Wait until veloces holds nothing and the disk has nothing in flight."""
    t0 = time.monotonic()
    while True:
        st = stats(dev)
        inflight = Path(f"/sys/block/{dev.name}/inflight").read_text().split()
        if st["bundles_held"] == 0 and inflight == ["0", "0"]:
            return
        expect(time.monotonic() - t0 < timeout, f"{dev.name} not quiet after {timeout} s: {st} inflight {inflight}")
        time.sleep(0.005)


def check_invariants(dev: Device, what: str) -> dict[str, int]:
    """The statistics' invariants at rest: every request given to veloces went to the
    device exactly once (merged ones aside), and every bundle opened was closed."""
    wait_quiet(dev)
    st = stats(dev)
    closed = sum(v for k, v in st.items() if k.startswith("bundles_closed_"))
    queued = st["read_queued"] + st["write_queued"]
    absorbed = st["read_absorbed"] + st["write_absorbed"]
    dispatched = st["read_dispatched"] + st["write_dispatched"]
    expect(
        st["bundles_opened"] == closed + st["bundles_open"],
        f"{what}: bundles opened {st['bundles_opened']} != closed {closed} + open {st['bundles_open']}",
    )
    expect(st["bundles_open"] == 0 and st["bundles_ready"] == 0, f"{what}: bundles left at rest: {st}")
    expect(
        dispatched == queued - absorbed + st["requeued"],
        f"{what}: dispatched {dispatched} != queued {queued} - absorbed {absorbed} + requeued {st['requeued']}",
    )
    return st


def held_write(fd: int, offset: int, size: int = 4096) -> None:
    os.pwrite(fd, os.urandom(size), offset)
    sync_file_range(fd, offset, size, SYNC_FILE_RANGE_WRITE)
