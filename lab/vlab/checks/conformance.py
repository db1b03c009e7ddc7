"""Conformance scenarios on the real module (guest side of `vlab conformance`).

    ./vlab conformance --kernel 6.1 conformance/

For each scenario (conformance/*.toml, format in conformance/README.md) this creates a
null_blk with one hardware queue of the scenario's depth (1 by default) whose completion
time is the scenario's service time times SCALE, selects veloces with the scenario's tunables (time tunables
times SCALE), and issues the requests at their times (times SCALE) from one thread, in
scenario order: reads and synchronous writes with O_DIRECT through Linux AIO
(io_submit), asynchronous writes as buffered 4 KiB page writes started with
sync_file_range(SYNC_FILE_RANGE_WRITE), which is how writeback issues them. The issue
order comes from the block:block_rq_issue tracepoint (trace_clock=mono), mapped back to
request ids by sector range, with times divided by SCALE. It writes
$VLAB_OUT/kernel-log.json ({scenario file: [{"t_us", "ids"}]}) for `vsim conformance
--kernel-log` to check against the same expectations as the model, and
$VLAB_OUT/kernel-detail.json with raw events and submission lag.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import mmap
import os
import re
import subprocess
import sys
import time
import tomllib
from pathlib import Path
from typing import Any

from vlab import schedulers
from vlab.checks.modsuite.common import (
    SYNC_FILE_RANGE_WAIT_AFTER,
    SYNC_FILE_RANGE_WAIT_BEFORE,
    SYNC_FILE_RANGE_WRITE,
    sync_file_range,
    wait_quiet,
)
from vlab.devices.spec import Device, create_all, parse_specs
from vlab.paths import repo_root

MODULE = "veloces"
# IOPRIO_PRIO_VALUE(class, 4) of a scenario's `prio`; AIO carries it with IOCB_FLAG_IOPRIO.
IOPRIO = {"RT": 1 << 13 | 4, "BE": 2 << 13 | 4, "IDLE": 3 << 13 | 4}
IOCB_FLAG_IOPRIO = 1 << 1
TRACE = Path("/sys/kernel/tracing")
ISSUE_RE = re.compile(r"\s(\d+\.\d+): block_rq_issue: (\d+,\d+) (\S+) \d+ \(.*?\) (\d+) \+ (\d+)")

# x86_64 system call numbers for Linux AIO.
SYS_IO_SETUP, SYS_IO_DESTROY, SYS_IO_GETEVENTS, SYS_IO_SUBMIT = 206, 207, 208, 209
IOCB_CMD_PREAD, IOCB_CMD_PWRITE = 0, 1

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


class Iocb(ctypes.Structure):
    _fields_ = [
        ("aio_data", ctypes.c_uint64),
        ("aio_key", ctypes.c_uint32),
        ("aio_rw_flags", ctypes.c_int32),
        ("aio_lio_opcode", ctypes.c_uint16),
        ("aio_reqprio", ctypes.c_int16),
        ("aio_fildes", ctypes.c_uint32),
        ("aio_buf", ctypes.c_uint64),
        ("aio_nbytes", ctypes.c_uint64),
        ("aio_offset", ctypes.c_int64),
        ("aio_reserved2", ctypes.c_uint64),
        ("aio_flags", ctypes.c_uint32),
        ("aio_resfd", ctypes.c_uint32),
    ]


class IoEvent(ctypes.Structure):
    _fields_ = [("data", ctypes.c_uint64), ("obj", ctypes.c_uint64), ("res", ctypes.c_int64), ("res2", ctypes.c_int64)]


class Aio:
    """Minimal Linux AIO (the kernel interface libaio wraps)."""

    def __init__(self, nr: int = 256) -> None:
        self.ctx = ctypes.c_ulong(0)
        if _libc.syscall(SYS_IO_SETUP, nr, ctypes.byref(self.ctx)) != 0:
            raise OSError(ctypes.get_errno(), "io_setup")
        self.pending: list[Iocb] = []

    def submit(self, fd: int, opcode: int, buf: int, nbytes: int, offset: int, data: int, ioprio: int = 0) -> None:
        cb = Iocb(
            aio_data=data,
            aio_lio_opcode=opcode,
            aio_fildes=fd,
            aio_buf=buf,
            aio_nbytes=nbytes,
            aio_offset=offset,
            aio_reqprio=ioprio,
            aio_flags=IOCB_FLAG_IOPRIO if ioprio else 0,
        )
        arr = (ctypes.POINTER(Iocb) * 1)(ctypes.pointer(cb))
        if _libc.syscall(SYS_IO_SUBMIT, self.ctx, 1, arr) != 1:
            raise OSError(ctypes.get_errno(), "io_submit")
        self.pending.append(cb)

    def wait_all(self, timeout_s: float) -> list[int]:
        """Wait for every submitted I/O; return their results (bytes or -errno)."""
        n = len(self.pending)
        events = (IoEvent * max(n, 1))()
        got: list[int] = []
        deadline = time.monotonic() + timeout_s
        while len(got) < n:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"{n - len(got)} of {n} AIO requests did not complete in {timeout_s:g} s")
            ts = (ctypes.c_long * 2)(int(left), int((left % 1) * 1e9))
            r = _libc.syscall(SYS_IO_GETEVENTS, self.ctx, 1, n - len(got), events, ts)
            if r < 0:
                raise OSError(ctypes.get_errno(), "io_getevents")
            got.extend(events[i].res for i in range(r))
        self.pending.clear()
        return got

    def close(self) -> None:
        _libc.syscall(SYS_IO_DESTROY, self.ctx)


def scaled_tunables(tunables: dict[str, Any], scale: int) -> dict[str, int]:
    """Every tunable set explicitly: the scenario's over the declared defaults
    (kernel/veloces-tunables.h; write_depth's, 65536, means no limit as the model's default,
    the device's depth, does), time ones (ms, us) scaled."""
    declared = schedulers.declared_tunables(MODULE)
    out = {k: t.default for k, t in declared.items()}
    for k, v in tunables.items():
        if k not in declared:
            raise ValueError(f"unknown tunable {k!r}")
        out[k] = int(v)
    times = schedulers.time_tunables(MODULE)
    return {k: v * scale if k in times else v for k, v in out.items()}


def map_ids(requests: list[dict[str, Any]], rwbs: str, sector: int, sectors: int) -> list[str]:
    """Request ids an issued (sector, sectors) range covers, in sector order."""
    write = rwbs.lstrip("F").startswith("W")
    hits = [
        r
        for r in requests
        if (r["op"] != "R") == write and r["sector"] >= sector and r["sector"] + r["sectors"] <= sector + sectors
    ]
    if not hits:
        return [f"?{rwbs}:{sector}+{sectors}"]
    return [r["id"] for r in sorted(hits, key=lambda r: r["sector"])]


def setup_trace() -> None:
    """Enable block:block_rq_issue once for the whole run: enabling a tracepoint patches
    kernel text, which under TCG with several vCPUs has crashed a guest when repeated
    per scenario; per scenario only the buffer is cleared and tracing switched on/off."""
    (TRACE / "tracing_on").write_text("0")
    (TRACE / "trace_clock").write_text("mono")
    (TRACE / "buffer_size_kb").write_text("4096")
    ev = TRACE / "events/block/block_rq_issue"
    (ev / "filter").write_text("0")
    (ev / "enable").write_text("1")


def start_trace(dev: Device) -> str:
    major, minor = Path(f"/sys/block/{dev.name}/dev").read_text().strip().split(":")
    (TRACE / "trace").write_text("")
    (TRACE / "tracing_on").write_text("1")
    return f"{major},{minor}"


def stop_trace(devno: str) -> list[tuple[float, str, int, int]]:
    (TRACE / "tracing_on").write_text("0")
    out = []
    for line in (TRACE / "trace").read_text().splitlines():
        m = ISSUE_RE.search(line)
        if m and m.group(2) == devno:
            out.append((float(m.group(1)), m.group(3), int(m.group(4)), int(m.group(5))))
    return out


def run_scenario(path: Path, scale: int) -> dict[str, Any]:
    sc = tomllib.loads(path.read_text())
    service_us = int(sc["device"]["service_us"])
    size_mb = int(sc["device"].get("size_mb", 1024))
    depth = int(sc["device"].get("queue_depth", 1))
    spec = (
        f"null_blk:irqmode=2,completion_nsec={service_us * scale * 1000},hw_queue_depth={depth},"
        f"submit_queues=1,size={size_mb}"
    )
    (dev,) = create_all(parse_specs(spec))
    schedulers.select(dev.name, MODULE)
    # Held writes occupy scheduler requests; the default (2 x depth) would block the submitter.
    (dev.queue / "nr_requests").write_text("128")
    for k, v in scaled_tunables(sc.get("tunables", {}), scale).items():
        try:
            (dev.queue / "iosched" / k).write_text(str(v))
        except OSError as e:
            raise OSError(e.errno, f"{k}={v} (scale {scale}) refused: {e.strerror}") from e
    requests: list[dict[str, Any]] = sc["requests"]
    order = sorted(range(len(requests)), key=lambda i: (requests[i]["t"], i))
    dfd = os.open(dev.path, os.O_RDWR | os.O_DIRECT)
    bfd = os.open(dev.path, os.O_RDWR)
    buf = mmap.mmap(-1, 1 << 20)
    addr = ctypes.addressof(ctypes.c_char.from_buffer(buf))
    aio = Aio()
    lags: list[float] = []
    try:
        devno = start_trace(dev)
        time.sleep(0.05)
        t0 = time.monotonic() + 0.02
        for i in order:
            r = requests[i]
            target = t0 + r["t"] * scale / 1e6
            while (left := target - time.monotonic()) > 0:
                time.sleep(left)
            lags.append((time.monotonic() - target) * 1e6 / scale)
            off, n = r["sector"] * 512, r["sectors"] * 512
            prio = IOPRIO[r["prio"]] if "prio" in r else 0
            if r["op"] == "R":
                aio.submit(dfd, IOCB_CMD_PREAD, addr, n, off, i, prio)
            elif r["op"] == "WS":
                aio.submit(dfd, IOCB_CMD_PWRITE, addr, n, off, i, prio)
            else:
                os.pwrite(bfd, buf[:n], off)
                sync_file_range(bfd, off, n, SYNC_FILE_RANGE_WRITE)
        results = aio.wait_all(timeout_s=60)
        # Poll, do not wait on writeback: a writeback waiter releases held bundles early.
        wait_quiet(dev, timeout=60)
        sync_file_range(bfd, 0, 0, SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER)
        events = stop_trace(devno)
    finally:
        aio.close()
        os.close(dfd)
        os.close(bfd)
    bad = [x for x in results if x < 0]
    log = [{"t_us": round((t - t0) * 1e6 / scale, 1), "ids": map_ids(requests, rwbs, s, n)} for t, rwbs, s, n in events]
    return {
        "log": log,
        "events": [{"t": t, "rwbs": rwbs, "sector": s, "sectors": n} for t, rwbs, s, n in events],
        "submit_lag_us_max": round(max(lags, default=0.0), 1),
        "io_errors": bad,
        "device": spec,
    }


SLACK_US = 500.0  # the kernel's timing tolerance in unscaled us (vlab conformance --slack-us)


def scenario_files(directory: Path) -> list[Path]:
    files = sorted(directory.glob("*.toml"))
    if not files:
        raise ValueError(f"{directory}: no *.toml scenarios")
    return files


def guest_command(files: list[Path], scale: int, slack_us: float = SLACK_US) -> list[str]:
    """Host side: the guest's command that runs these scenarios (this module's main), with
    the paths relative to the repository (the guest starts there) where they are inside it."""
    root = repo_root()
    rel = [str(f.resolve().relative_to(root)) if f.resolve().is_relative_to(root) else str(f.resolve()) for f in files]
    return [sys.executable, "-m", "vlab.checks.conformance", "--scale", str(scale), "--max-lag-us", str(slack_us), *rel]


def check(
    directory: Path, log: Path, kernel_release: str, slack_us: float = SLACK_US, *, capture: bool = False
) -> subprocess.CompletedProcess[str]:
    """Host side: the kernel's issue log checked against the scenarios' expectations, and the
    model against the same (./vsim conformance --kernel-log); its output goes to ours unless
    captured."""
    root = repo_root()
    argv = [str(root / "vsim"), "conformance", str(directory), "--kernel-log", str(log),
            "--kernel-name", kernel_release, "--slack-us", str(slack_us)]  # fmt: skip
    return subprocess.run(argv, capture_output=capture, text=True, check=False)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scale", type=int, default=60, help="time scale factor (default 60)")
    ap.add_argument(
        "--max-lag-us", type=float, default=SLACK_US,
        help="a run whose submissions fell further behind than this (unscaled us) observed the harness, not "
        "the policy: it is run again (default 500, vlab conformance's slack)",
    )  # fmt: skip
    ap.add_argument("--attempts", type=int, default=3, help="runs of a scenario at most (default 3)")
    ap.add_argument("scenarios", nargs="+", type=Path)
    args = ap.parse_args(argv)
    out = Path(os.environ.get("VLAB_OUT", "/tmp"))
    if not Path("/sys/module", MODULE).exists():
        schedulers.load(MODULE)
    setup_trace()
    logs: dict[str, Any] = {}
    detail: dict[str, Any] = {"kernel": os.uname().release, "scale": args.scale, "scenarios": {}}
    status = 0
    for p in args.scenarios:
        late: list[dict[str, Any]] = []  # runs set aside, kept in the detail file
        for attempt in range(1, max(1, args.attempts) + 1):
            try:
                r = run_scenario(p, args.scale)
            except Exception as e:  # recorded per scenario; the runner goes on
                r = {"log": [], "error": f"{type(e).__name__}: {e}"}
                status = 1
                break
            if r["submit_lag_us_max"] <= args.max_lag_us or attempt == args.attempts:
                break
            late.append({"submit_lag_us_max": r["submit_lag_us_max"], "log": r["log"]})
            print(f"conformance: {p.name}: submitted up to {r['submit_lag_us_max']} us late (over "
                  f"{args.max_lag_us:g} us): the harness, not the policy, was observed; run {attempt + 1}"
                  f" of at most {args.attempts}", flush=True)  # fmt: skip
        r["late_runs"] = late
        logs[p.name] = r["log"]
        detail["scenarios"][p.name] = r
        ids = " ".join("+".join(x["ids"]) for x in r["log"])
        print(f"conformance: {p.name}: {r.get('error') or ids} (lag {r.get('submit_lag_us_max', '-')} us)", flush=True)
        (out / "kernel-log.json").write_text(json.dumps(logs, indent=1) + "\n")
        (out / "kernel-detail.json").write_text(json.dumps(detail, indent=1) + "\n")
    return status


if __name__ == "__main__":
    sys.exit(main())
