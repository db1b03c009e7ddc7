"""Conformance scenarios on the real module (guest side of `vlab conformance`).

    ./vlab conformance --kernel 6.1 conformance/

For each scenario (conformance/*.toml, format in conformance/README.md) this creates a
null_blk with one hardware queue of the scenario's depth (1 by default) whose completion
time is the scenario's service time times SCALE, selects veloces with the scenario's tunables (time tunables
times SCALE), and issues the requests at their times (times SCALE), in scenario order,
from two threads (a request's `submitter`: unset, reads from the first and writes from
the second, a reader and a writer; the main thread hands each of the second's requests to
it and waits until it is submitted, so the order holds): reads and synchronous writes with O_DIRECT through Linux AIO
(io_submit), asynchronous writes as buffered 4 KiB page writes started with
sync_file_range(SYNC_FILE_RANGE_WRITE), which is how writeback issues them. The issue
order comes from the block:block_rq_issue tracepoint (trace_clock=mono), mapped back to
request ids by sector range, with times divided by SCALE. It writes
$VLAB_OUT/kernel-log.json ({scenario file: [{"t_us", "ids"}]}) for `vsim conformance
--kernel-log` to check against the same expectations as the model, and
$VLAB_OUT/kernel-detail.json with every run of each scenario: raw events, submission lag,
the guest's stalls (vlab.checks.stall) and, where the guest checked the run itself, its
failures. A scenario is run again while its runs leave it undecided (assess()); the host
judges all its runs (judge(); docs/testing.md, "Timed checks on a loaded host").
"""

from __future__ import annotations

import argparse
import ctypes
import json
import mmap
import os
import queue
import re
import subprocess
import sys
import threading
import time
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vlab import schedulers
from vlab.checks import stall
from vlab.checks.modsuite.common import (
    SYNC_FILE_RANGE_WAIT_AFTER,
    SYNC_FILE_RANGE_WAIT_BEFORE,
    SYNC_FILE_RANGE_WRITE,
    sync_file_range,
    wait_quiet,
)
from vlab.devices.spec import Device, create_all, parse_specs
from vlab.paths import repo_root, sim_target_dir

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


class Submitter:
    """A second submitting thread (its own task, so the kernel sees another submitter):
    `run(f)` has it call `f` and returns when `f` returned, re-raising what `f` raised."""

    def __init__(self) -> None:
        self.jobs: queue.Queue[Callable[[], None] | None] = queue.Queue()
        self.done: queue.Queue[BaseException | None] = queue.Queue()
        self.thread = threading.Thread(target=self._loop, name="submitter-2", daemon=True)
        self.thread.start()

    def _loop(self) -> None:
        while (f := self.jobs.get()) is not None:
            try:
                f()
                self.done.put(None)
            except BaseException as e:  # handed back to run()'s caller
                self.done.put(e)

    def run(self, f: Callable[[], None]) -> None:
        self.jobs.put(f)
        if (e := self.done.get()) is not None:
            raise e

    def close(self) -> None:
        self.jobs.put(None)
        self.thread.join()


def submitter_of(r: dict[str, Any]) -> int:
    """The thread that issues request `r`: its `submitter`, else reads 1 and writes 2."""
    return int(r.get("submitter", 1 if r["op"] == "R" else 2))


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


def run_scenario(path: Path, scale: int, probe: stall.StallProbe | None = None) -> dict[str, Any]:
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
    second = Submitter()
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

            def issue(r: dict[str, Any] = r, i: int = i) -> None:
                off, n = r["sector"] * 512, r["sectors"] * 512
                prio = IOPRIO[r["prio"]] if "prio" in r else 0
                if r["op"] == "R":
                    aio.submit(dfd, IOCB_CMD_PREAD, addr, n, off, i, prio)
                elif r["op"] == "WS":
                    aio.submit(dfd, IOCB_CMD_PWRITE, addr, n, off, i, prio)
                else:
                    os.pwrite(bfd, buf[:n], off)
                    sync_file_range(bfd, off, n, SYNC_FILE_RANGE_WRITE)

            if submitter_of(r) == 1:
                issue()
            else:
                second.run(issue)
        results = aio.wait_all(timeout_s=60)
        # Poll, do not wait on writeback: a writeback waiter releases held bundles early.
        wait_quiet(dev, timeout=60)
        sync_file_range(bfd, 0, 0, SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER)
        events = stop_trace(devno)
        t_end = max((t for t, *_ in events), default=time.monotonic())
    finally:
        second.close()
        aio.close()
        os.close(dfd)
        os.close(bfd)
    bad = [x for x in results if x < 0]
    log = [{"t_us": round((t - t0) * 1e6 / scale, 1), "ids": map_ids(requests, rwbs, s, n)} for t, rwbs, s, n in events]
    return {
        "log": log,
        "events": [{"t": t, "rwbs": rwbs, "sector": s, "sectors": n} for t, rwbs, s, n in events],
        "submit_lag_us_max": round(max(lags, default=0.0), 1),
        "stall": stall_figures(probe, t0, t_end, scale),
        "io_errors": bad,
        "device": spec,
    }


def stall_figures(probe: stall.StallProbe | None, t0: float, t1: float, scale: int) -> dict[str, Any]:
    """The guest's stalls from the run's start to its last issue (vlab.checks.stall): real ms;
    `lost_us`, the time lost in scenario us (divided by the scale); and each stall in scenario
    us (`stalls_us`: start, end), which a late issue's miss is weighed against (run_state)."""
    if probe is None:
        return {}
    samples = probe.samples(t0, t1)
    fig = stall.summary(samples, t0, t1)
    fig["lost_us"] = round(fig["lost_ms"] * 1000 / scale, 1)
    us = 1e6 / scale
    fig["stalls_us"] = [[round((a - t0) * us, 1), round((b - t0) * us, 1)] for a, b in stall.stalls(samples)]
    return fig


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
    return [sys.executable, "-m", "vlab.checks.conformance", "--scale", str(scale), "--slack-us", str(slack_us), *rel]


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


# --- judging a scenario's runs (docs/testing.md, "Timed checks on a loaded host") ----------------
# Order expectations (order, before, consecutive, merged, separate, and a request never issued)
# are the policy's and never excused. Timing expectations (issued_by, not_before) miss by some
# us past the slack; a miss no larger than the time the run lost to the guest's stalls (or its
# submissions' lag) can be the host's, and is not judged. The guest runs a scenario again
# while its runs leave it undecided, at most `attempts` runs.
TIMING = ("issued_by", "not_before")
KERNEL_NAME = "kernel"  # the name the guest's own check gives vsim


def parse_report(stdout: str, kernel_name: str) -> dict[str, list[tuple[int | None, str]]]:
    """`vsim conformance --kernel-log`'s output: each scenario file's kernel failures as
    (expectation number or None, message); scenarios that passed map to [] (the model's
    verdicts: model_failures)."""
    verdict = re.compile(rf"^model (?:PASS|FAIL) {re.escape(kernel_name)} (PASS|FAIL)\s+(\S+)")
    failure = re.compile(rf"^\s+{re.escape(kernel_name)}: (?:expect #(\d+): )?(.*)$")
    out: dict[str, list[tuple[int | None, str]]] = {}
    current = None
    for line in stdout.splitlines():
        if m := verdict.match(line):
            current = m.group(2)
            out[current] = []
        elif current is not None and (m := failure.match(line)):
            out[current].append((int(m.group(1)) if m.group(1) else None, m.group(2)))
    return out


def model_failures(stdout: str) -> list[str]:
    """The scenario files on which `vsim conformance` failed the model itself."""
    return re.findall(r"^model FAIL \S+ (?:PASS|FAIL)\s+(\S+)", stdout, re.MULTILINE)


def classify(
    scenario: dict[str, Any], log: list[dict[str, Any]], failures: list[tuple[int | None, str]], slack_us: float
) -> list[dict[str, Any]]:
    """Each failure as {"expect", "kind", "detail"}, kind "timing" (with `over_us`: how far past
    the slack the request went) or "order" (anything else, never excused)."""
    out = []
    for n, msg in failures:
        f: dict[str, Any] = {"expect": n, "kind": "order", "detail": msg}
        exp = scenario["expect"][n - 1] if n is not None and 0 < n <= len(scenario["expect"]) else {}
        key = next((k for k in TIMING if k in exp), None)
        if key is not None:
            rid, t = exp[key]["id"], float(exp[key]["t"])
            at = next((float(i["t_us"]) for i in log if rid in i["ids"]), None)
            if at is not None:  # a request never issued is not late: it is the policy's
                over = at - (t + slack_us) if key == "issued_by" else (t - slack_us) - at
                f.update(kind="timing", over_us=round(over, 1), at_us=at)
        out.append(f)
    return out


def run_state(run: dict[str, Any], max_lag_us: float) -> str:
    """One run: "error"; "unchecked" (not checked yet); "pass"; "order" (an order expectation
    missed in an undisturbed run); "order-disturbed" (missed in a run that lost more than
    max_lag_us, the slack, to the guest's stalls or its submissions' lag: the harness was
    observed); "timing-loaded" (timing missed, each miss within what the run lost);
    "timing-quiet" (a timing miss that the run's losses cannot explain)."""
    if run.get("error"):
        return "error"
    failures = run.get("failures")
    if failures is None:
        return "unchecked"
    if not failures:
        return "pass"
    lag = float(run.get("submit_lag_us_max", 0.0))
    if any(f["kind"] != "timing" for f in failures):
        return "order-disturbed" if max(lost_us(run), lag) > max_lag_us else "order"
    explained = all(f["over_us"] <= max(lost_us(run, f.get("at_us")), lag) for f in failures)
    return "timing-loaded" if explained else "timing-quiet"


def lost_us(run: dict[str, Any], before_us: float | None = None) -> float:
    """Scenario us the run lost to the guest's stalls: in all, or before a late issue (what
    can have delayed it, along whatever chain of completions it waited on)."""
    st = run.get("stall", {})
    if before_us is None or "stalls_us" not in st:
        return float(st.get("lost_us", 0.0))
    return sum(max(0.0, min(float(b), before_us) - max(float(a), 0.0)) for a, b in st["stalls_us"])


QUIET_FAILS = 2  # timing misses in quiet runs that fail a scenario


def assess(runs: list[dict[str, Any]], max_lag_us: float, attempts: int) -> tuple[str, str]:
    """A scenario's runs so far: ("pass" | "fail" | "not judged" | "again", why). "again": run it
    once more (only while fewer than `attempts` runs were made)."""
    states = [run_state(r, max_lag_us) for r in runs]
    last, quiet = states[-1], states.count("timing-quiet")
    if "error" in states:
        return "fail", runs[states.index("error")]["error"]
    if last == "unchecked":
        return "fail", "the checker gave no verdict on its last run"
    if "order" in states:
        return "fail", _misses(runs[states.index("order")], "an order expectation missed in an undisturbed run")
    if quiet >= min(QUIET_FAILS, attempts):
        return "fail", _misses(runs[-1], f"timing missed beyond the guest's stalls in {quiet} runs")
    if last == "pass":
        return "pass", f"passed in run {len(runs)}" if len(runs) > 1 else "passed"
    if len(runs) < attempts:
        return "again", last
    if last == "order-disturbed":
        return "fail", _misses(runs[-1], f"an order expectation missed in every run ({len(runs)})")
    losses = ", ".join(
        f"{s}: lost {r.get('stall', {}).get('lost_us', 0)} us, lag {r.get('submit_lag_us_max', 0)} us"
        for s, r in zip(states, runs, strict=True)
    )
    return "not judged", _misses(runs[-1], f"host loaded: timing only; runs: {losses}")


def _misses(run: dict[str, Any], why: str) -> str:
    fails = run.get("failures") or []
    st = run.get("stall", {})
    figures = "; ".join(
        f"expect #{f['expect']}: {f['detail']}"
        + (
            f" ({f['over_us']:g} us past the slack, {lost_us(run, f.get('at_us')):.0f} us lost before it)"
            if "over_us" in f
            else ""
        )
        for f in fails
    )
    stalls = (
        f"; that run lost {st['lost_us']:g} us ({st['lost_ms']:g} ms real in {st['stalls']} stalls, worst "
        f"{st['worst_ms']:g} ms), submissions up to {run.get('submit_lag_us_max', 0):g} us late"
        if st
        else ""
    )
    return f"{why}: {figures}{stalls}"


def check_runs(files: list[Path], runs: dict[str, list[dict[str, Any]]], slack_us: float, out: Path) -> bool:
    """Guest side: each scenario's latest run checked by the simulator's own checker (its
    binary; the guest sees the repository), each failure classified into the run's
    `failures`. False when the checker cannot run (the host still checks the last runs)."""
    vsim = sim_target_dir() / "vsim"
    if not vsim.exists():
        print(f"conformance: {vsim} missing: runs are not checked in the guest", flush=True)
        return False
    by_dir: dict[Path, list[Path]] = {}
    for f in files:
        by_dir.setdefault(f.parent, []).append(f)
    for directory, group in by_dir.items():
        log = out / "kernel-log-check.json"
        log.write_text(json.dumps({f.name: runs[f.name][-1]["log"] for f in group}))
        only = ["--only", group[0].name] if len(group) == 1 else []
        p = subprocess.run(
            [str(vsim), "conformance", str(directory), "--kernel-log", str(log), "--kernel-name", KERNEL_NAME,
             "--slack-us", str(slack_us), *only],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        verdicts = parse_report(p.stdout, KERNEL_NAME)
        for f in group:
            run = runs[f.name][-1]
            if f.name not in verdicts:
                print(f"conformance: {f.name}: not in the checker's output: {p.stderr[-300:]}", flush=True)
                return False
            if not run.get("error"):
                run["failures"] = classify(tomllib.loads(f.read_text()), run["log"], verdicts[f.name], slack_us)
    return True


@dataclass
class Judgement:
    """A boot's scenarios judged on the host: vsim's report over each scenario's last run and
    each scenario's verdict over all its runs ("pass", "fail" or "not judged", and why)."""

    report: subprocess.CompletedProcess[str]
    verdicts: dict[str, tuple[str, str]]

    def named(self, verdict: str) -> dict[str, str]:
        return {f: why for f, (v, why) in self.verdicts.items() if v == verdict}

    def counts(self) -> dict[str, int]:
        return {v: sum(1 for x, _ in self.verdicts.values() if x == v) for v in ("pass", "fail", "not judged")}

    def summary(self) -> str:
        return ", ".join(f"{n} {v}" for v, n in self.counts().items()) + f" of {len(self.verdicts)} scenarios"


def judge(directory: Path, out: Path, kernel_release: str, slack_us: float = SLACK_US) -> Judgement:
    """Host side: the last run of each scenario (out/kernel-log.json) checked by vsim
    (check()), and each scenario judged over all its runs (out/kernel-detail.json, assess()),
    as if no run were left: a run the guest could not check and run again is judged alone."""
    report = check(directory, out / "kernel-log.json", kernel_release, slack_us, capture=True)
    kernel = parse_report(report.stdout, kernel_release)
    model = set(model_failures(report.stdout))
    path = out / "kernel-detail.json"
    detail: dict[str, Any] = json.loads(path.read_text()) if path.exists() else {}
    max_lag = float(detail.get("max_lag_us", slack_us))
    verdicts: dict[str, tuple[str, str]] = {}
    for f in scenario_files(directory):
        runs = detail.get("scenarios", {}).get(f.name, {}).get("runs") or [{"log": []}]
        if f.name in model:
            verdicts[f.name] = ("fail", "the model fails it (vsim conformance)")
        elif f.name not in kernel:
            verdicts[f.name] = ("fail", f"no verdict from vsim conformance: {report.stderr[-300:]}")
        else:
            runs[-1]["failures"] = classify(tomllib.loads(f.read_text()), runs[-1]["log"], kernel[f.name], slack_us)
            verdicts[f.name] = assess(runs, max_lag, len(runs))
    return Judgement(report, verdicts)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scale", type=int, default=60, help="time scale factor (default 60)")
    ap.add_argument(
        "--slack-us", type=float, default=SLACK_US,
        help="the timing tolerance (unscaled us) the runs are checked with (default 500, vlab conformance's)",
    )  # fmt: skip
    ap.add_argument(
        "--max-lag-us", type=float, default=None,
        help="a run that missed an order expectation and lost more than this (unscaled us: its submissions' "
        "lag or the guest's stalls) observed the harness, not the policy: it is run again (default: the slack)",
    )  # fmt: skip
    ap.add_argument(
        "--attempts", type=int, default=3,
        help="runs of a scenario at most (default 3): an order missed in a run that lost more than --max-lag-us, "
        "timing missed by no more than the run lost, and a first timing miss in a quiet run are run again",
    )  # fmt: skip
    ap.add_argument("scenarios", nargs="+", type=Path)
    args = ap.parse_args(argv)
    max_lag = args.slack_us if args.max_lag_us is None else args.max_lag_us
    attempts = max(1, args.attempts)
    out = Path(os.environ.get("VLAB_OUT", "/tmp"))
    if not Path("/sys/module", MODULE).exists():
        schedulers.load(MODULE)
    setup_trace()
    runs: dict[str, list[dict[str, Any]]] = {p.name: [] for p in args.scenarios}
    detail: dict[str, Any] = {
        "kernel": os.uname().release, "scale": args.scale, "slack_us": args.slack_us, "max_lag_us": max_lag,
        "attempts": attempts, "stall_probe": {"period_ms": stall.PERIOD_S * 1e3, "stall_ms": stall.STALL_S * 1e3},
        "scenarios": {},
    }  # fmt: skip
    status = 0
    pending = list(args.scenarios)
    with stall.StallProbe() as probe:
        for attempt in range(1, attempts + 1):
            for p in pending:
                try:
                    r = run_scenario(p, args.scale, probe)
                except Exception as e:  # recorded per scenario; the runner goes on
                    r = {"log": [], "error": f"{type(e).__name__}: {e}"}
                    status = 1
                runs[p.name].append(r)
                ids = " ".join("+".join(x["ids"]) for x in r["log"])
                lost = r.get("stall", {}).get("lost_us", "-")
                print(f"conformance: {p.name}: {r.get('error') or ids} (lag {r.get('submit_lag_us_max', '-')} us, "
                      f"lost {lost} us){f', run {attempt}' if attempt > 1 else ''}", flush=True)  # fmt: skip
                _write(out, runs, detail)
            if attempt == attempts or not check_runs(pending, runs, args.slack_us, out):
                break
            again = []
            for p in pending:
                verdict, why = assess(runs[p.name], max_lag, attempts)
                if verdict == "again":
                    again.append(p)
                    print(f"conformance: {p.name}: {why}; run {attempt + 1} of at most {attempts}", flush=True)
            _write(out, runs, detail)
            pending = again
            if not pending:
                break
    _write(out, runs, detail)
    return status


def _write(out: Path, runs: dict[str, list[dict[str, Any]]], detail: dict[str, Any]) -> None:
    """kernel-log.json: each scenario's last run (what the host checks); kernel-detail.json:
    every run, with its events, lag, stalls and (when checked in the guest) failures."""
    logs = {name: rs[-1]["log"] for name, rs in runs.items() if rs}
    detail["scenarios"] = {name: {"runs": rs} for name, rs in runs.items() if rs}
    (out / "kernel-log.json").write_text(json.dumps(logs, indent=1) + "\n")
    (out / "kernel-detail.json").write_text(json.dumps(detail, indent=1) + "\n")


if __name__ == "__main__":
    sys.exit(main())
