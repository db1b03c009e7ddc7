"""The lab's application layer: what `vlab compare` does, as a function any caller uses —
the command line, the floods benchmark, the seeds' reproductions, the tests — with a typed
request and result, instead of running the lab's own command line as a subprocess.

    outcome = app.compare(app.Comparison(kernel=lookup("6.1"), devices=["null_blk:size=64"],
                                         schedulers=["none", "veloces"], jobs=[Path("j.fio")],
                                         out=Path("build/runs/x")))

`compare` checks the request (RequestError, before anything boots), boots the kernel once,
runs each job under each scheduler (rotated, repeated: vlab.machine.guest), summarises (vlab.stats),
writes summary.json, report.md and report.html into `out` (one job) or into one folder per
job, `out/<job's stem>/`, with `out/overview.md` (several jobs: one boot for all of them),
prints the tables, and returns the exit status a command would: 0 complete, else why not
(the step that failed is named, and the results so far are kept).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vlab import provenance, schedulers, stats, verdict
from vlab.devices import vsimdev
from vlab.devices.spec import parse_specs
from vlab.machine import guest, vm
from vlab.machine.kernels import Kernel
from vlab.machine.request import CompareRequest, Job
from vlab.workloads.fio import FioError, RunResult, parse_file, validate_job


class RequestError(ValueError):
    """A request that cannot run; nothing was booted."""


@dataclass
class Comparison:
    kernel: Kernel
    devices: list[str]  # device specs (vlab.devices.spec), the first one compared
    schedulers: list[str]  # scheduler specs, NAME[:TUNABLE=VALUE,...]
    jobs: list[Path]  # fio jobs, or script jobs (.sh); run one after the other in one boot
    out: Path
    baseline: str | None = None  # default: none if compared, else the first
    repeat: int = 3
    runtime: float | None = None  # seconds per run (fio jobs)
    sysctl: dict[str, str] = field(default_factory=dict)
    timeout: float | None = None  # default: default_timeout(self)
    memory: str = "2G"
    cpus: int = 2
    append: list[str] = field(default_factory=list)  # extra kernel command-line arguments
    command: list[str] = field(default_factory=list)  # what asked for it, kept in summary.json
    scratch: bool = False  # a scratch run (--scratch), as its manifest.json says
    # dilation=auto: stretch each fio job's runs for this many reads (vlab.verdict.MIN_READS)
    min_reads: int = 0
    max_runtime: float | None = None  # the longest a run is stretched to for them (default 20 s)

    def as_command(self) -> list[str]:
        """The `./vlab compare` command line that asks for the same comparison."""
        argv = ["./vlab", "compare", "--kernel", self.kernel.name]
        for d in self.devices:
            argv += ["--device", d]
        for job in self.jobs:
            argv += ["--job", str(job)]
        argv += ["--schedulers", ",".join(self.schedulers), "--repeat", str(self.repeat)]
        argv += ["--baseline", self.baseline] if self.baseline else []
        argv += ["--runtime", f"{self.runtime:g}"] if self.runtime is not None else []
        argv += ["--min-reads", str(self.min_reads)] if self.min_reads else []
        argv += ["--max-runtime", f"{self.max_runtime:g}"] if self.max_runtime else []
        for k, v in self.sysctl.items():
            argv += ["--sysctl", f"{k}={v}"]
        return [*argv, "--out", str(self.out)]


@dataclass
class Outcome:
    summaries: dict[str, dict[str, Any]]  # by job folder ("" for a comparison of one job)
    status: int  # 0: every run complete; else the command's exit status
    problems: list[str]
    wall_s: float


def folders(jobs: list[Path]) -> list[str]:
    """Where each job's results go, relative to `out`: `out` itself for one job, else one
    folder per job named by its stem (`-2`, `-3` for stems met before)."""
    if len(jobs) == 1:
        return [""]
    names: list[str] = []
    for job in jobs:
        name, n = job.stem, 1
        while name in names:
            n += 1
            name = f"{job.stem}-{n}"
        names.append(name)
    return names


def check(c: Comparison) -> CompareRequest:
    """The guest's request for `c`, or RequestError saying what is wrong."""
    if not c.devices:
        raise RequestError("a comparison needs a device")
    if not c.schedulers or len(set(c.schedulers)) != len(c.schedulers):
        raise RequestError(f"the schedulers must be distinct and at least one: {c.schedulers}")
    for spec in c.schedulers:
        try:
            schedulers.parse(spec)
        except schedulers.SchedulerError as e:
            raise RequestError(str(e)) from e
    if baseline(c) not in c.schedulers:
        raise RequestError(f"baseline {c.baseline!r} is not among --schedulers {','.join(c.schedulers)}")
    if c.repeat < 1:
        raise RequestError("--repeat must be at least 1")
    if c.runtime is not None and c.runtime <= 0:
        raise RequestError("--runtime must be positive")
    for key, value in c.sysctl.items():
        if not key or not value or not all(ch.isalnum() or ch in "._-" for ch in key):
            raise RequestError(f"--sysctl wants KEY=VALUE (e.g. vm.dirty_bytes=33554432), not {key}={value}")
    if not c.jobs:
        raise RequestError("a comparison needs a job")
    jobs = []
    for path, folder in zip(c.jobs, folders(c.jobs), strict=True):
        jobs.append(Job(text=_checked_job(path), kind="script" if path.suffix == ".sh" else "fio", folder=folder))
    if c.min_reads < 0:
        raise RequestError("--min-reads must be at least 0")
    return CompareRequest(
        devices=c.devices, schedulers=c.schedulers, jobs=jobs, repeat=c.repeat, runtime=c.runtime, sysctl=c.sysctl,
        min_reads=c.min_reads, max_runtime=c.max_runtime,
    )  # fmt: skip


def _checked_job(job: Path) -> str:
    """The job's text, or RequestError: missing, a script bash will not parse, a bad fio job."""
    if not job.is_file():
        raise RequestError(f"job file {job} not found")
    if job.suffix == ".sh":
        syntax = subprocess.run(["bash", "-n", str(job)], capture_output=True, text=True, check=False)
        if syntax.returncode != 0:
            raise RequestError(f"{job}: {syntax.stderr.strip()}")
    else:
        try:
            validate_job(job)
        except FioError as e:
            raise RequestError(str(e)) from e
    return job.read_text()


def baseline(c: Comparison) -> str:
    return c.baseline or ("none" if "none" in c.schedulers else c.schedulers[0])


# Wall seconds a script job's run may spend outside its measured phase (mkfs, the file set,
# sync, teardown). At the measured phase's dilation one varmail set-up on the SATA model in GC
# steady state took about 9.5 min (dilation 50, WA 11.5); served with setup_dilation=1 the
# same set-up and teardown take ~12 s (2026-11-28). The seeds' filebench runs time a sync
# after their window at the run's dilation: up to 167 s on that model (fileserver, 2026-11-30).
SCRIPT_SETUP_ALLOWANCE_S = 450


def default_timeout(c: Comparison, runtime_s: float | None = None) -> float:
    """The wall seconds `compare` allows the guest unless told: the boot's allowance and, for
    every run, twice its runtime (`runtime_s`, else c.runtime, else fio's 60) plus 15 s (TCG
    slows fio's set-up and ramp), plus SCRIPT_SETUP_ALLOWANCE_S for a script job's run."""
    stretched = (c.max_runtime or guest.LOOP_RUNTIME_MAX_S) if c.min_reads and _auto(c) else 0.0
    per_fio = max(runtime_s or c.runtime or 60, stretched) * 2 + 15
    per_job = [per_fio + (SCRIPT_SETUP_ALLOWANCE_S if job.suffix == ".sh" else 0) for job in c.jobs]
    loop = _auto(c) * sum(job.suffix != ".sh" for job in c.jobs) * 2  # the closed loop may overrun by a step
    return vm.BOOT_ALLOWANCE_S + c.repeat * len(c.schedulers) * sum(per_job) + loop


def _auto(c: Comparison) -> float:
    """The closed loop's budget per fio job where the compared device is served with
    dilation=auto (vlab.machine.guest.closed_loop), else 0."""
    parsed = parse_specs(c.devices[0]) if c.devices else []
    if not parsed or parsed[0].driver != "vsim":
        return 0.0
    s = vsimdev.served(parsed[0].options)
    return s.auto_budget_s if s.dilation is None else 0.0


def compare(c: Comparison) -> Outcome:
    """Run the comparison `c` (module docstring); RequestError before booting if it cannot."""
    req = check(c)
    c.out.mkdir(parents=True, exist_ok=True)
    timeout = c.timeout or default_timeout(c)
    jobs = ", ".join(str(j) for j in c.jobs)
    print(
        f"vlab: comparing {', '.join(c.schedulers)} on {c.devices[0]} under {c.kernel.release}, "
        f"{c.repeat} repetition(s), job{'s' if len(c.jobs) > 1 else ''} {jobs}",
        file=sys.stderr,
    )
    started = time.time()
    result = vm.boot(c.kernel, c.out, req, timeout_s=timeout, memory=c.memory, cpus=c.cpus, append=c.append)
    status = vm.report_boot(result, c.out, timeout, c.kernel)
    summaries: dict[str, dict[str, Any]] = {}
    problems: list[str] = []
    dil = dilation(c.devices[0], c.out / "devices.json")
    for job, folder in zip(c.jobs, folders(c.jobs), strict=True):
        summary, missing = _summarize(c, job, c.out / folder, status, started, result.wall_s, dil)
        summaries[folder] = summary
        problems += [f"{job.name}: {p}" if folder else p for p in missing]
    if len(c.jobs) > 1:
        text = stats.format_overview(summaries, baseline(c))
        (c.out / "overview.md").write_text(text)
        print(f"{c.kernel.release}  {c.devices[0]}  each job: medians of {c.repeat} (min-max), ratios to {baseline(c)}")
        print(text)
    provenance.write_manifest(c.out, kernels=[c.kernel.release], scratch=c.scratch, command=c.command or c.as_command())
    reports = ", ".join(str(c.out / f / "report.md") for f in summaries)
    print(f"vlab: {result.wall_s:.0f} s; report{'s' if len(summaries) > 1 else ''} {reports}; raw fio JSON beside each")
    if status is None and problems:
        print("vlab: incomplete results: " + "; ".join(problems), file=sys.stderr)
        status = 1
    return Outcome(summaries, 0 if status is None else (status or 1), problems, result.wall_s)


# The figures `vlab compare` sets against its baseline (vlab.verdict.against).
VERDICT_FIGURES = ("iops", "read_p99_us", "write_iops")


def _loop(folder: Path) -> dict[str, Any] | None:
    """dilation=auto's closed loop for the job in `folder` (its dilation.json), if it ran."""
    try:
        doc = json.loads((folder / "dilation.json").read_text())
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) and isinstance(doc.get("dilation"), int | float) else None


def _summarize(
    c: Comparison, job: Path, out: Path, status: int | None, started: float, wall_s: float, dil: float
) -> tuple[dict[str, Any], list[str]]:
    """One job's summary.json, report.md and report.html in `out`, its table printed; the
    summary and the runs missing from it. `dil`: the device's dilation, unless dilation=auto's
    closed loop chose the job's own (its dilation.json)."""
    base = baseline(c)
    results, problems = load_results(out / "raw", c.schedulers, c.repeat)
    device = load_device(out / "raw", c.schedulers, c.repeat)
    loop = _loop(out)
    summary = stats.summarize(results, base, c.schedulers, device, float(loop["dilation"]) if loop else dil)
    summary["kind"] = "vlab-compare"
    if loop:
        summary["dilation_loop"] = loop
    judged = verdict.bound(verdict.busy_shares(summary))
    summary["device_bound"] = {"judged": judged.judged, "why": judged.why, "lowest_busy_share": judged.lowest,
                               "busy_min": verdict.BUSY_MIN}  # fmt: skip
    summary["against_baseline"] = verdict.against(summary, base, VERDICT_FIGURES) if judged.judged else {}
    for warning in summary["warnings"]:
        print(f"vlab: warning: {job.name}: {warning}", file=sys.stderr)
    summary["meta"] = {
        "command": c.command or c.as_command(),
        "versions": versions(),
        "kernel": c.kernel.release,
        "device": c.devices[0],
        "devices": c.devices,
        "job": str(job),
        "repeat": c.repeat,
        "runtime_s": c.runtime,
        "sysctl": c.sysctl,
        # Writeback throttling: off for every scheduler on a dilated device (its clock cannot
        # follow; vlab.schedulers.wbt_off, since 2026-11-29), else the kernel's own.
        "wbt": "off" if dil != 1.0 else "kernel",
        "orders": [stats.rotation(c.schedulers, r) for r in range(c.repeat)],
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(started)),
        "wall_s": round(wall_s, 1),
        "complete": status is None,
        "problems": problems if status is not None else [],
    }
    out.mkdir(parents=True, exist_ok=True)
    stats.write_summary(out / "summary.json", summary)
    (out / "report.md").write_text(stats.format_report(summary) + "\n" + verdict.against_text(summary))
    write_html_report(out)
    if any(results.values()):
        print()
        print(f"{c.kernel.release}  {c.devices[0]}  {job.name}  median of {c.repeat}, baseline {base}")
        print(stats.format_table(summary))
        print(verdict.against_text(summary), end="")
        print()
    return summary, problems


def load_device(raw_dir: Path, schedulers: Sequence[str], repeat: int) -> dict[str, list[dict[str, Any]]] | None:
    """The served device's figures per run, or None if the runs have none."""
    found: dict[str, list[dict[str, Any]]] = {s: [] for s in schedulers}
    for rep in range(repeat):
        for sched in schedulers:
            path = raw_dir / stats.device_name(rep, sched)
            try:
                found[sched].append(json.loads(path.read_text()))
            except (OSError, ValueError):
                continue
    return found if any(found.values()) else None


def load_results(raw_dir: Path, schedulers: Sequence[str], repeat: int) -> tuple[dict[str, list[RunResult]], list[str]]:
    """Read every raw fio JSON that exists; return results and problems (missing or unreadable)."""
    results: dict[str, list[RunResult]] = {s: [] for s in schedulers}
    problems = []
    for rep in range(repeat):
        for sched in stats.rotation(schedulers, rep):
            path = raw_dir / stats.raw_name(rep, sched)
            if not path.exists():
                problems.append(f"missing {path.name}")
                continue
            try:
                results[sched].append(parse_file(path))
            except FioError as e:
                problems.append(str(e))
    return results, problems


def dilation(spec: str, devices_json: Path) -> float:
    """The time dilation of a served vsim device (1 for any other device); with
    dilation=auto, what the guest chose, from the run's devices.json."""
    parsed = parse_specs(spec)
    if not parsed or parsed[0].driver != "vsim":
        return 1.0
    return vsimdev.run_dilation(parsed[0].options, devices_json)


def _first_line(argv: list[str]) -> str | None:
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = (proc.stdout or proc.stderr).strip().splitlines()
    return lines[0].strip() if proc.returncode == 0 and lines else None


def versions() -> dict[str, str]:
    """What produced a result: this repository's commit (`-dirty` when the tree was:
    vlab.provenance), fio's and QEMU's versions."""
    found = {
        "veloces": provenance.describe(),
        "fio": _first_line(["fio", "--version"]),
        "qemu": _first_line(["qemu-system-x86_64", "--version"]),
    }
    return {k: v for k, v in found.items() if v}


def write_html_report(out: Path) -> None:
    """out/report.html; a failure is said, and the results stay (`vlab report` rebuilds it)."""
    try:
        from vlab import report  # numpy: not for every `vlab` command (the CLI imports app)

        target, _ = report.build(out)
        print(f"vlab: HTML report {target} ({target.stat().st_size / 1e6:.2f} MB)", file=sys.stderr)
    except Exception as e:  # the results are written; a plotting failure must not hide them
        print(
            f"vlab: the HTML report failed ({type(e).__name__}: {e}); results kept in {out}; "
            f"`./vlab report {out}` rebuilds it",
            file=sys.stderr,
        )
