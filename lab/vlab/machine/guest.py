"""The guest side of vlab: runs as root inside the booted kernel.

Invoked by vlab.machine.vm as `python -m vlab.machine.guest OUT`. Reads OUT/.vlab/request.json,
creates the devices, does the action, and always leaves OUT/.vlab/exit behind.
A failure writes OUT/.vlab/error.json naming the step that failed.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from vlab import schedulers, stats, verdict
from vlab.devices import vsimdev
from vlab.devices.spec import Device, DeviceError, create_all, parse_specs, stop_all
from vlab.machine import request
from vlab.workloads.fio import FioError, parse_file, prepare_job

EXIT_STEP_FAILED = 3


class StepError(Exception):
    def __init__(self, step: str, message: str) -> None:
        super().__init__(f"{step}: {message}")
        self.step = step
        self.message = message


def _write(path: Path, text: str) -> None:
    with open(path, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())


def run_command(command: list[str], devices: list[Device], out: Path) -> int:
    env = dict(os.environ)
    env["VLAB_OUT"] = str(out)
    env["VLAB_DEVICES"] = " ".join(d.path for d in devices)
    env["VLAB_KERNEL"] = os.uname().release
    argv = ["bash", "-c", command[0]] if len(command) == 1 else command
    sys.stdout.flush()
    try:
        return subprocess.run(argv, env=env, check=False).returncode
    except OSError as e:
        print(f"vlab: cannot run {argv[0]}: {e}", flush=True)
        return 127


def _server_state(dev: Device) -> str:
    """For a failure on a served device: whether its server died (and where its log is)."""
    for server in vsimdev.SERVERS:
        if server.disk == dev.name and server.proc.poll() is not None:
            return (
                f" (the vsim server of {dev.name} had exited with status {server.proc.returncode}; "
                f"log {server.workdir / server.log.name})"
            )
    return ""


def _script_phase(job: Path, phase: str, dev: Device, step: str) -> str:
    """`bash JOB PHASE DEVICE` (setup, run, teardown); a failure names the step."""
    proc = subprocess.run(["bash", str(job), phase, dev.path], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        msg = (proc.stderr or proc.stdout).strip()[-800:] + _server_state(dev)
        raise StepError(f"{step}: {job.name} {phase}", msg)
    return proc.stdout


def _diskstats(dev: Device) -> list[int]:
    return [int(x) for x in (Path("/sys/block") / dev.name / "stat").read_text().split()]


def _run_script(job: Path, dev: Device, raw: Path, step: str) -> dict[str, float]:
    """The measured phase of a script job. What the device did over it, from the disk's
    /sys/block/DEV/stat, is written to `raw` in fio's JSON layout (IOPS, KiB/s and mean
    latency per direction; no percentiles: the kernel keeps none); the script's own
    figures are its stdout lines `vlab-metric NAME VALUE`."""
    s0, t0 = _diskstats(dev), time.monotonic()
    out = _script_phase(job, "run", dev, step)
    s1, wall = _diskstats(dev), time.monotonic() - t0
    d = [b - a for a, b in zip(s0, s1, strict=False)]

    def op(ios: int, sectors: int, ms: int) -> dict[str, Any]:
        return {
            "iops": ios / wall,
            "bw": sectors * 512 / 1024 / wall,
            "io_bytes": sectors * 512,
            "total_ios": ios,
            "clat_ns": {"mean": ms * 1e6 / ios if ios else 0},
        }

    doc = {
        "jobs": [{"jobname": job.name, "error": 0, "read": op(d[0], d[2], d[3]), "write": op(d[4], d[6], d[7])}],
        "vlab_script": {"wall_s": wall, "diskstats_delta": d},
    }
    _write(raw, json.dumps(doc, indent=2) + "\n")
    metrics: dict[str, float] = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[0] == "vlab-metric":
            try:
                metrics[parts[1]] = float(parts[2])
            except ValueError:
                raise StepError(f"{step}: {job.name} run", f"bad metric line {line!r}") from None
    return metrics


# fio's IOPS and latency logs: one averaged point per direction every LOG_MS (a 60 s run
# gives 600 lines per log, whatever the I/O rate). The sampler's period.
LOG_MS = 100


class Sampler(threading.Thread):
    """Samples the device every LOG_MS while a run goes, for the report's time series:
    requests in flight (the kernel's /sys/block/DEV/inflight: dispatched to the driver, not
    yet completed), requests the disk completed so far (`completed`: reads and writes of
    /sys/block/DEV/stat, cumulative) and, on a served vsim device, its counters (cumulative, vsim's names;
    written only when the server has rewritten them, other rows leave them empty)."""

    def __init__(self, dev: Device, path: Path) -> None:
        super().__init__(daemon=True)
        self.dev, self.path = dev, path
        self.halt = threading.Event()
        self.rows: list[dict[str, float]] = []
        self.t0_epoch = time.time()
        self.window: dict[str, float] | None = None  # the device's busy time over fio's window

    def run(self) -> None:
        self.t0_epoch = time.time()  # the wall clock, to meet fio's; intervals by the monotonic one
        t0 = time.monotonic()
        last_model = None
        inflight = Path("/sys/block") / self.dev.name / "inflight"
        stat = Path("/sys/block") / self.dev.name / "stat"
        while True:
            row: dict[str, float] = {"time_s": round(time.monotonic() - t0, 3)}
            try:
                r, w = (int(x) for x in inflight.read_text().split()[:2])
                row["in_flight"] = r + w
                fields = stat.read_text().split()
                row["completed"] = int(fields[0]) + int(fields[4])
            except (OSError, ValueError, IndexError):
                pass
            if self.dev.served:
                try:
                    c = json.loads(Path(self.dev.served["counters"]).read_text())
                    if c.get("model_time_s") != last_model:
                        last_model = c.get("model_time_s")
                        for k, v in (c.get("device") or {}).items():
                            if isinstance(v, int | float) and not isinstance(v, bool):
                                row[k] = float(v)
                        # The server's clock and busy time: the busy share of a window.
                        for k, key in (("model_s", "model_time_s"), ("busy_s", "busy_s")):
                            if isinstance(c.get(key), int | float):
                                row[k] = float(c[key])
                except (OSError, ValueError, AttributeError):
                    pass
            self.rows.append(row)
            if self.halt.wait(LOG_MS / 1000):
                return

    def finish(self, fio_json: Path | None = None) -> None:
        """Stop and write the samples; with fio's JSON, on fio's clock: time 0 is the
        job's start (fio's `timestamp_ms`, written as the run ends, less its runtime),
        as in fio's own logs, and samples before it or after its end are left out."""
        self.halt.set()
        self.join(timeout=5)
        try:
            doc: Any = json.loads(fio_json.read_text()) if fio_json else {}
            end_s = measured_s(doc)
            start_s = doc["timestamp_ms"] / 1000 - end_s
        except (OSError, ValueError, KeyError, IndexError, TypeError):
            start_s = end_s = None
        if start_s is not None and end_s is not None:
            shift = start_s - self.t0_epoch
            margin = LOG_MS / 1000
            shifted = [{**row, "time_s": round(row["time_s"] - shift, 3)} for row in self.rows]
            self.rows = [r for r in shifted if -margin <= r["time_s"] <= end_s + margin]
        self.window = window_busy(self.rows) if start_s is not None else None
        cols = list(dict.fromkeys(k for row in self.rows for k in row))
        lines = [",".join(cols)]
        lines += [",".join("" if k not in row else f"{row[k]:g}" for k in cols) for row in self.rows]
        _write(self.path, "\n".join(lines) + "\n")


def measured_s(doc: dict[str, Any]) -> float:
    """The length of a fio run's measured window (seconds): the runtime the lab forced
    (`runtime` in its global options, time-based), else the first job's runtime. Not
    `job_runtime` of a group: with --group_reporting it is the sum over the group's jobs
    (a reader and four writers for 1.5 s: 12 s)."""
    forced = str((doc.get("global options") or {}).get("runtime") or "")
    if forced.endswith("s") and forced[:-1].replace(".", "", 1).isdigit():
        return float(forced[:-1])
    return float(doc["jobs"][0]["job_runtime"]) / 1000


def window_busy(rows: list[dict[str, float]]) -> dict[str, float] | None:
    """The served device's busy and model seconds over fio's measured window, from the
    samples on fio's clock (0 = the window's start): between the first counters rewritten
    in it and the last (the server rewrites them every COUNTERS_MS). None with fewer than
    two rewrites inside: too short a window to say."""
    inside = [r for r in rows if "model_s" in r and "busy_s" in r and r["time_s"] >= 0]
    if len(inside) < 2:
        return None
    first, last = inside[0], inside[-1]
    model = last["model_s"] - first["model_s"]
    if model <= 0:
        return None
    return {"window_busy_s": last["busy_s"] - first["busy_s"], "window_model_s": model}


def _dilation(dev: Device, phase: str, step: str) -> None:
    """A served device with a `setup_dilation` serves a script job's setup, teardown and
    the sync after it at that dilation, and the measured phase ("run") at its own."""
    served = dev.served or {}
    setup, own = served.get("setup_dilation"), served.get("dilation")
    if not setup or not own or setup == own:
        return
    try:
        vsimdev.switch_dilation(
            Path(served["counters"]), Path(served["control"]), float(own if phase == "run" else setup)
        )
    except (vsimdev.VsimDeviceError, OSError) as e:
        raise StepError(f"{step}: dilation for {phase}", str(e) + _server_state(dev)) from e


def _served_counters(dev: Device) -> dict[str, Any] | None:
    """The served device's counters now: the server rewrites them every 500 ms (write and
    rename), so wait for the first rewrite after this call — it includes every I/O completed
    before it — at most 1.5 periods (250 ms on average, where a fixed wait cost 750)."""
    if not dev.served:
        return None
    path = Path(dev.served["counters"])
    called = time.time_ns()
    deadline = time.monotonic() + vsimdev.COUNTERS_MS / 1000 * 1.5
    while time.monotonic() < deadline:
        try:
            if path.stat().st_mtime_ns > called:
                break
        except OSError:
            pass
        time.sleep(0.02)
    try:
        data: dict[str, Any] = json.loads(path.read_text())
        return data
    except (OSError, ValueError):
        return None


_said_bundle: set[str] = set()


def _bundle_from_model(dev: Device) -> None:
    """NBD carries no io_opt or discard granularity, so veloces cannot see the model's
    erase block: set bundle_kb from it, and say so once. (Over ublk, whose devices carry
    the model's limits (`limits` in the server's info), veloces reads it itself.)"""
    eb = dev.served.get("erase_block_bytes")
    if not eb:
        return
    kb = int(eb) // 1024
    path = dev.queue / "iosched" / "bundle_kb"
    try:
        path.write_text(str(kb))
    except OSError as e:
        raise schedulers.SchedulerError(f"writing {kb} to {path} failed: {e.strerror}") from e
    if dev.name not in _said_bundle:
        _said_bundle.add(dev.name)
        print(f"vlab: veloces bundle_kb={kb} on {dev.name}: the model's erase block (NBD has no io_opt)", flush=True)


def time_scale(dev: Device) -> float:
    """What the schedulers' time tunables are multiplied by on `dev`: a served device's
    dilation (its wall time per unit of model time), else 1 (docs/lab.md, "Dilation")."""
    return float(dev.served.get("dilation") or 1.0) if dev.served else 1.0


def run_compare(req: request.CompareRequest, devices: list[Device], out: Path) -> int:
    dev = devices[0]
    wanted = req.schedulers
    try:
        schedulers.require(dev.name, wanted)
    except schedulers.SchedulerError as e:
        raise StepError("check schedulers", str(e)) from e
    for key, value in req.sysctl.items():
        path = Path("/proc/sys") / key.replace(".", "/")
        try:
            path.write_text(str(value))
        except OSError as e:
            raise StepError(f"sysctl {key}={value}", e.strerror or str(e)) from e
    scale = time_scale(dev)
    if scale != 1.0:
        print(
            f"vlab: schedulers' time tunables x {scale:g} (the dilation): they hold in model time;"
            " writeback throttling off for every scheduler (its clock cannot follow)",
            flush=True,
        )
    for spec in req.jobs:
        if len(req.jobs) > 1:
            print(f"vlab: job {spec.folder}", flush=True)
        _run_job(req, spec, dev, out / spec.folder)
    return 0


def _save_sched_stats(dev: Device, dest: Path) -> None:
    """The scheduler's own statistics after a run, where it keeps them in debugfs (veloces:
    docs/kernel.md; counted from the run's fresh elevator on)."""
    try:
        text = Path(f"/sys/kernel/debug/block/{dev.name}/sched/stats").read_text()
    except OSError:
        return
    _write(dest, text)


def _select(dev: Device, sched: str, step: str, tunables: Path | None) -> None:
    """Make `sched` the device's scheduler (its time tunables scaled by the dilation), and
    record its tunables in `tunables`."""
    try:
        schedulers.select(dev.name, sched, time_scale=time_scale(dev), nr_requests=dev.host_nr_requests())
        base, settings = schedulers.parse(sched)
        if base == "veloces" and dev.served and not dev.served.get("limits") and "bundle_kb" not in settings:
            _bundle_from_model(dev)
        if tunables is not None:
            _write(tunables, json.dumps(schedulers.tunables(dev.name), indent=2) + "\n")
    except schedulers.SchedulerError as e:
        raise StepError(f"{step}: select", str(e)) from e


def _fio(job: Path, dev: Device, output: Path, step: str) -> dict[str, float] | None:
    """One fio run of `job` to `output` (JSON+, with its latency and IOPS logs and the
    device's samples beside it); the served device's busy time over the measured window."""
    stem = output.with_name(output.name.removesuffix(".json"))
    sampler = Sampler(dev, stem.with_name(stem.name + ".series.csv"))
    sampler.start()
    # json+: the latency histograms (the report's CDFs); the logs: its time series.
    proc = subprocess.run(
        [
            "fio",
            "--output-format=json+",
            f"--output={output}",
            "--group_reporting",
            f"--write_lat_log={stem}",
            f"--write_iops_log={stem}",
            f"--log_avg_msec={LOG_MS}",
            "--per_job_logs=0",
            str(job),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    sampler.finish(output)
    if proc.stderr.strip():
        _write(stem.with_name(stem.name + ".stderr"), proc.stderr)
    if proc.returncode != 0:
        msg = (proc.stderr or proc.stdout).strip() or f"exit {proc.returncode}"
        raise StepError(f"{step}: fio", msg + _server_state(dev))
    return sampler.window


# dilation=auto's closed loop (closed_loop). Each scheduler runs the job for LOOP_RUNTIME_S
# (wall) after a LOOP_RAMP_S ramp at the dilation being tried, and the device's busy share is
# measured over that window. The loop looks for the lowest dilation at which every
# scheduler keeps the device busy at least vlab.verdict.BUSY_MIN: the lower the dilation, the
# more I/Os a second of wall time gives (a p99 needs vlab.verdict.MIN_READS reads). A dilation
# passes where every scheduler's 1-s run kept the device busy LOOP_ACCEPT, above the verdicts'
# 85 %: the measured runs vary by a few points (make demo's mix, 2026-12-06: 85-94 % in the
# loop at dilation 22, then 82-87 % in its runs, none's median 84 %). Each step aims at
# LOOP_AIM by vlab.stats.dilation_for_busy, up by at most LOOP_MAX_STEP, down by at most
# LOOP_MAX_STEP as well and never below 1; the search stops where a step would change the
# dilation by less than LOOP_MIN_CHANGE, or at the budget.
LOOP_RUNTIME_S = 1.0
# A 1-s window holds two of the server's counter rewrites (every COUNTERS_MS, on the host's
# clock) only when they fall right: where it held fewer, that scheduler's run is repeated once
# this much longer (make demo, 2026-12-07: veloces's run at dilation 80 gave no share, the
# other four 95-98 %, and the loop gave up and left the job guest-bound).
LOOP_RETRY_FACTOR = 2.0
LOOP_RAMP_S = 0.5
LOOP_ACCEPT = 0.88
LOOP_AIM = 0.92
LOOP_MAX_STEP = 4.0
LOOP_MIN_CHANGE = 0.2
# The longest a run is stretched to for the request's `min_reads` (its `max_runtime`
# unless given): beyond it a run keeps what it has, and a p99 from too few reads is not judged.
LOOP_RUNTIME_MAX_S = 20.0
# Reads a second from the loop's 1-s runs overestimate the measured runs' (make demo's mix at
# dilation 99, 2026-12-06: a 5-s stretch from x1.25 gave mq-deadline and bfq 88-99 reads).
LOOP_READS_MARGIN = 1.5


def stretched_runtime(
    base: float, reads_per_s: dict[str, float], min_reads: int, longest: float
) -> tuple[float, list[str]]:
    """The measured runs' runtime for `min_reads` reads a run, from each scheduler's reads a
    second in the loop (LOOP_READS_MARGIN over them, whole seconds): the shortest that gives
    them to every scheduler that can have them within `longest`, never below `base`. A
    scheduler that cannot, even at `longest`, is left out of the stretch (its read p99 is not
    judged however long the runs: vlab.verdict's rule 2), so a run is not stretched for reads
    it cannot have. Returns the runtime and those schedulers."""
    need = {s: math.ceil(min_reads / r * LOOP_READS_MARGIN) if r > 0 else math.inf for s, r in reads_per_s.items()}
    cap = max(longest, base)
    reach = [n for n in need.values() if n <= cap]
    return max(base, float(max(reach, default=base))), sorted(s for s, n in need.items() if n > cap)


def next_dilation(d: float, tried: dict[float, float]) -> float | None:
    """The closed loop's next dilation after measuring `d` (`tried`: every dilation measured
    -> its lowest busy share under any scheduler), or None where the search is done: the
    formula's aim (LOOP_AIM, within LOOP_MAX_STEP either way, at least 1), kept above every
    dilation found too low and below the lowest found busy enough (bisecting between them
    where the aim falls outside, or would not go down from a dilation that passed), and at
    least LOOP_MIN_CHANGE away from `d` and from the lowest that passed."""
    low = tried[d]
    ok = [x for x, v in tried.items() if v >= LOOP_ACCEPT]
    bad = [x for x, v in tried.items() if v < LOOP_ACCEPT]
    aim = stats.dilation_for_busy(d, low, LOOP_AIM) if low < 1 else d / LOOP_MAX_STEP
    nxt = max(1.0, min(max(aim, d / LOOP_MAX_STEP), d * LOOP_MAX_STEP))
    lo, hi = (max(bad) if bad else None), (min(ok) if ok else None)
    if hi is not None and lo is not None and (not lo < nxt < hi or nxt >= d):
        nxt = (lo + hi) / 2  # between the highest too low and the lowest that passed
    elif hi is not None and nxt >= hi:
        return None  # the lowest dilation known to keep the device busy, and the aim is above it
    elif lo is not None and nxt <= lo:
        nxt = lo * 1.5
    nxt = stats.two_digits_up(nxt)
    if nxt in tried or abs(nxt - d) < LOOP_MIN_CHANGE * d or (hi is not None and abs(hi - nxt) < LOOP_MIN_CHANGE * hi):
        return None
    return nxt


def closed_loop(req: request.CompareRequest, spec: request.Job, dev: Device, out: Path, within: str) -> float | None:
    """dilation=auto under the job's own load: from the dilation the probe chose (the guest
    idle), run the job briefly under every scheduler, measure the device's busy share over
    each run's window, and move the dilation (LOOP_* above) to the lowest one found at which
    every scheduler keeps the device busy at least vlab.verdict.BUSY_MIN, within the device's
    `auto_budget_s` of wall time. Where the request asks for `min_reads`, the runtime is
    stretched (up to its `max_runtime`) for that many reads under the slowest scheduler at the
    chosen dilation. Writes out/dilation.json (every step, the chosen dilation, whether it
    reached the target, and why not); returns the runtime for the measured runs."""
    auto = dev.served["dilation_auto"]
    budget = float(auto.get("budget_s") or 0)
    start = float(auto["dilation"])
    loop = out / "dilation-loop"
    loop.mkdir(parents=True, exist_ok=True)
    cal_job = loop / "job.fio"
    text = "\n".join(ln for ln in spec.text.splitlines() if ln.strip().split("=", 1)[0].strip() != "ramp_time")
    retry_job = loop / "job-longer.fio"
    for path, secs in ((cal_job, LOOP_RUNTIME_S), (retry_job, LOOP_RUNTIME_S * LOOP_RETRY_FACTOR)):
        _write(path, prepare_job(text, dev.path, secs).replace(
            "time_based=1", f"time_based=1\nramp_time={LOOP_RAMP_S:g}s", 1))  # fmt: skip
    began = time.monotonic()
    cap = schedulers.max_time_scale(req.schedulers)  # inf where no scheduler has time tunables
    steps: list[dict[str, Any]] = []
    tried: dict[float, float] = {}  # dilation -> the lowest busy share under any scheduler
    d, why = start, ""
    good: dict[str, Any] | None = None  # the step at the lowest dilation that kept the device busy
    while True:
        _switch(dev, d, f"{within}dilation loop")
        shares: dict[str, float | None] = {}
        reads: dict[str, float] = {}
        t0 = time.monotonic()
        for sched in req.schedulers:
            step = f"{within}dilation loop at {d:g}, scheduler {sched}"
            _select(dev, sched, step, None)
            output = loop / f"d{d:g}-{sched}.json"
            window, secs = _fio(cal_job, dev, output, step), LOOP_RUNTIME_S
            subprocess.run(["sync"], check=False)
            if window is None:  # fewer than two counter rewrites in the window: once, longer
                secs = LOOP_RUNTIME_S * LOOP_RETRY_FACTOR
                window = _fio(retry_job, dev, output, f"{step}, again for {secs:g} s")
                subprocess.run(["sync"], check=False)
            shares[sched] = stats.busy_share(window) if window else None
            try:
                reads[sched] = parse_file(output).read.ios / secs
            except FioError as e:
                raise StepError(f"{step}: fio output", str(e)) from e
        took = time.monotonic() - t0
        here = {"dilation": d, "busy_share": shares, "reads_per_s": reads, "wall_s": round(took, 1)}
        steps.append(here)
        said = ", ".join(f"{s} {'-' if v is None else f'{100 * v:.0f} %'}" for s, v in shares.items())
        print(f"vlab: {within}dilation {d:g}: device busy {said}", flush=True)
        known = [v for v in shares.values() if v is not None]
        if len(known) < len(shares):
            why = "a run too short for two counter rewrites: no busy share"
            break
        tried[d] = min(known)
        if tried[d] >= LOOP_ACCEPT and (good is None or d < good["dilation"]):
            good = here
        nxt = next_dilation(d, tried)
        if nxt is None:
            break
        if nxt > cap:  # a scheduler's scaled time tunable would pass its sysfs maximum (-EINVAL)
            if math.floor(cap) <= d:
                why = f"dilation {nxt:g} is past the schedulers' largest time scale, {cap:g}"
                break
            nxt = float(math.floor(cap))
        if time.monotonic() - began + took * 1.1 > budget:
            why = f"the next step (dilation {nxt:g}) would pass auto_budget_s={budget:g}"
            break
        d = nxt
    reached = good is not None
    chosen = good if good is not None else steps[-1]
    if not reached and not why:
        why = "no dilation tried kept every scheduler's device busy"
    _switch(dev, float(chosen["dilation"]), f"{within}dilation loop")
    runtime, out_of_reach = req.runtime, list[str]()
    if req.min_reads and runtime is not None:
        longest = req.max_runtime or LOOP_RUNTIME_MAX_S
        runtime, out_of_reach = stretched_runtime(runtime, chosen["reads_per_s"], req.min_reads, longest)
    record = {"start": start, "dilation": chosen["dilation"], "target": verdict.BUSY_MIN, "accept": LOOP_ACCEPT,
              "aim": LOOP_AIM,
              "budget_s": budget, "reached": reached, "why": why, "wall_s": round(time.monotonic() - began, 1),
              "steps": steps, "runtime_s": runtime, "min_reads": req.min_reads,
              "min_reads_out_of_reach": out_of_reach}  # fmt: skip
    _write(out / "dilation.json", json.dumps(record, indent=2) + "\n")
    if not reached:
        print(f"vlab: {within}dilation loop ended at {chosen['dilation']:g} below {100 * LOOP_ACCEPT:.0f} % "
              f"busy: {why}; the cells it leaves guest-bound are excluded from verdicts", flush=True)  # fmt: skip
    else:
        runs = f", runs of {runtime:g} s" if runtime is not None else ""
        print(f"vlab: {within}dilation {chosen['dilation']:g} (busy >= {100 * LOOP_ACCEPT:.0f} % under every "
              f"scheduler){runs}", flush=True)  # fmt: skip
    return runtime


def _switch(dev: Device, d: float, step: str) -> None:
    """Serve at dilation `d` from now on; the schedulers' time tunables follow (time_scale)."""
    served = dev.served
    if float(served.get("dilation") or 0) == d:
        return
    try:
        vsimdev.switch_dilation(Path(served["counters"]), Path(served["control"]), d)
    except (vsimdev.VsimDeviceError, OSError) as e:
        raise StepError(f"{step}: dilation {d:g}", str(e) + _server_state(dev)) from e
    served["dilation"] = d


def _run_job(req: request.CompareRequest, spec: request.Job, dev: Device, out: Path) -> None:
    """One job under every scheduler, rotated and repeated; its results in out/raw."""
    wanted = req.schedulers
    raw = out / "raw"
    raw.mkdir(parents=True, exist_ok=True)
    script = spec.kind == "script"
    job = out / ("job.sh" if script else "job.fio")
    within = f"job {spec.folder}, " if spec.folder else ""
    runtime = req.runtime
    auto = dev.served.get("dilation_auto") if dev.served else None
    if auto and not script:
        runtime = closed_loop(req, spec, dev, out, within)
    elif auto:
        # A script job has no loop: it runs at the probe's dilation, the one the host
        # converts its figures with (devices.json), not at a fio job's before it.
        _switch(dev, float(auto["dilation"]), f"{within}dilation")
    _write(job, spec.text if script else prepare_job(spec.text, dev.path, runtime))
    repeat = req.repeat
    for rep in range(repeat):
        for sched in stats.rotation(wanted, rep):
            step = f"{within}repetition {rep + 1}/{repeat}, scheduler {sched}"
            _select(dev, sched, step, raw / stats.tunables_name(rep, sched))
            name = stats.raw_name(rep, sched)
            stem = raw / name.removesuffix(".json")
            workload: dict[str, float] = {}
            window: dict[str, float] | None = None
            if script:
                _dilation(dev, "setup", step)
                _script_phase(job, "setup", dev, step)
                # The elevator counts from its selection, set-up included: the counts at the
                # run's start beside those at its end give the run's own.
                _save_sched_stats(dev, stem.with_name(stem.name + ".sched-stats-setup.txt"))
                _dilation(dev, "run", step)
                before = _served_counters(dev)
                workload = _run_script(job, dev, raw / name, step)
                after = _served_counters(dev)
                _save_sched_stats(dev, stem.with_name(stem.name + ".sched-stats.txt"))
                _dilation(dev, "setup", step)
                _script_phase(job, "teardown", dev, step)
            else:
                before = _served_counters(dev)
                window = _fio(job, dev, raw / name, step)
                _save_sched_stats(dev, stem.with_name(stem.name + ".sched-stats.txt"))
                after = _served_counters(dev)
            # Whatever the run left in the page cache is written now, before the next
            # scheduler's run (a buffered job's dirty pages would land in it).
            subprocess.run(["sync"], check=False)
            if dev.served or workload:
                d = {**vsimdev.delta(before, after), **{f"workload_{k}": v for k, v in workload.items()}}
                d.update(window or {})
                _write(raw / stats.device_name(rep, sched), json.dumps(d, indent=2) + "\n")
            try:
                r = parse_file(raw / name)
            except FioError as e:
                raise StepError(f"{step}: fio output", str(e)) from e
            p99 = r.read.lat_p99_us if r.read.ios else r.write.lat_p99_us
            print(
                f"  rep {rep + 1}/{repeat}  {sched:<12} {r.iops:>12,.0f} IOPS"
                f"  p99 {p99 or 0:>10,.0f} us  errors {r.errors}",
                flush=True,
            )
    if script:
        # Back to the measured dilation once, after every run (the next run's setup would
        # switch away from it again): a fio job after this one runs at it.
        _dilation(dev, "run", f"{within}after the runs")


def main(out: Path) -> int:
    ctl = out / ".vlab"
    status = 1
    try:
        try:
            req = request.from_json((ctl / "request.json").read_text())
        except ValueError as e:
            raise StepError("request", str(e)) from e
        try:
            devices = create_all(parse_specs("\n".join(req.devices)), out)
        except (DeviceError, OSError) as e:
            raise StepError("create devices", str(e)) from e
        for d in devices:
            if (n := d.host_nr_requests()) and schedulers.current(d.name) != "none":
                try:
                    schedulers.set_nr_requests(d.name, n)
                except schedulers.SchedulerError as e:
                    raise StepError("create devices", str(e)) from e
        _write(out / "devices.json", json.dumps([d.describe() for d in devices], indent=2) + "\n")
        for d in devices:
            print(f"vlab: {d.path}: {d.spec}", flush=True)
            if n := d.host_nr_requests():
                depth = d.served.get("limits", {}).get("depth")
                print(f"vlab: {d.name}: nr_requests {n} under an elevator, from its real host's "
                      f"{d.served.get('host_tags')} tags (the device takes {depth} at once)", flush=True)  # fmt: skip
        if isinstance(req, request.RunRequest):
            status = run_command(req.command, devices, out)
        else:
            if not devices:
                raise StepError("create devices", "compare needs a device")
            status = run_compare(req, devices, out)
    except StepError as e:
        _write(ctl / "error.json", json.dumps({"step": e.step, "message": e.message}) + "\n")
        print(f"vlab: step failed: {e.step}: {e.message}", flush=True)
        status = EXIT_STEP_FAILED
    finally:
        for problem in stop_all():
            print(f"vlab: stopping a served device: {problem}", flush=True)
        sys.stdout.flush()
        _write(ctl / "exit", f"{status}\n")
    return status


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
