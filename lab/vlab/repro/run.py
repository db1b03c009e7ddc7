"""Running a reproduction: every cell of its matrix as one `vlab compare`, going on past a
failed cell, then the paper's figures beside ours with a verdict per claim
(summary.json, report.md, report.html)."""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import io
import json
import os
import shlex
import shutil
import signal
import socket
import statistics
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from vlab import app, provenance, report, schedulers
from vlab.devices.spec import DeviceError, load_spec_args, parse_one
from vlab.machine.kernels import KernelError, lookup
from vlab.repro import core
from vlab.repro.core import DEVICES, LAB, MIN_PASSES, Analysis, Cell, Plan, cell_figures, job_script
from vlab.stats import dilation_for_busy
from vlab.workloads import filebench

SUMMARY = "summary.json"
# The busy share a calibration run must reach for its dilation to be kept: the runs of a
# cell vary about the calibration's share (seed 001's ext4-varmail: 86 % in calibration, 78 %
# in its 25 runs), so a share just over the 85 % target is raised to aim at 90 %.
CALIBRATION_AIM = 0.9
# A calibration run that completed no pass measured the flow's start, not its rate: it runs
# again at its dilation / STALL_STEP (down to 1, undilated) until one does.
STALL_STEP = 5.0
STALLED = "stalled_at.json"  # in a calibration's folder: the dilations its stalled runs had
# A raised dilation is checked by a run there (run._verify), lowered at most this many times.
VERIFY_TRIES = 3
VERIFIED = "tries.json"  # in FOLDER.verify/: [dilation, passes, busy share] of each try


@dataclasses.dataclass(frozen=True)
class Seed:
    """One reproduction: its paper, its default matrix (full and quick), and how its
    tables and verdicts are made from the cells' figures."""

    name: str
    title: str
    paper: str  # the seed's file in ../shared/seeds
    mapping: str  # how the paper's set-up maps to ours, in words
    plan: Callable[[bool], Plan]
    analyse: Callable[[Plan, list[dict[str, Any]]], Analysis]


def cell_folder(out: Path, cell: Cell) -> Path:
    return out / "cells" / cell.device / f"{cell.fs}-{cell.workload.name}"


def guest_sysctl(workload_sysctl: tuple[tuple[str, str], ...]) -> dict[str, str]:
    """The guest sysctls a cell runs under: its workload's, and address-space randomisation
    off (filebench turns it off for its worker processes, or says it cannot: once a boot)."""
    return {"kernel.randomize_va_space": "0", **dict(workload_sysctl)}


def _load_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _read_json(path: Path) -> dict[str, Any]:
    """A JSON object from path, or {} when it is missing, unreadable or not an object."""
    doc = _load_json(path)
    return doc if isinstance(doc, dict) else {}


def _read_json_list(path: Path) -> list[Any]:
    """A JSON array from path, or [] when it is missing, unreadable or not an array."""
    doc = _load_json(path)
    return doc if isinstance(doc, list) else []


def _stale(cell: Cell, meta: dict[str, Any], figure: bool = True) -> str | None:
    """Why a cell folder (its summary's `meta`, `_meta`) no longer counts, or None: its
    figures belong to another method. It ran under other guest sysctls than its workload
    sets now (fileserver and webserver gained the dirty limits on 2026-11-29), or on a
    dilated device with writeback throttling on (before 2026-11-29: its wall-time clock
    held none's, mq-deadline's and kyber's buffered writeback to one write in flight, where
    bfq and veloces turn it off; `schedulers.wbt_off`), or (`figure`: a cell, not its
    calibration, which reads its busy share and passes) without the figure its workload is judged
    by now (filebench's sustained rate, since 2026-11-30); or (a filebench calibration) without
    the passes of its flow, which the calibration's stall and pass rules read (a calibration
    kept from before them chose a dilation at which seed 001's varmail runs could not get
    through a pass: 65 operations of 16 threads in its 30-s run)."""
    ran, now = meta.get("sysctl"), guest_sysctl(cell.workload.sysctl)
    if ran is not None and ran != now:  # None: a folder that does not say (kept, as before)
        return f"it ran with sysctl {ran}, its workload now sets {now}"
    if meta and meta.get("dilation", 1.0) != 1.0 and meta.get("wbt") != "off":
        return "it ran at dilation {:g} with writeback throttling on".format(meta["dilation"])
    figures = meta.get("figures")
    if figures is None:
        return None
    if figure and f"workload_{cell.workload.metric}" not in figures:
        return f"it ran before its figure ({cell.workload.metric}) was recorded"
    if not figure and cell.workload.personality and f"workload_{filebench.PASSES}" not in figures:
        return f"it ran before its flow's passes ({filebench.PASSES}) were counted"
    return None


def _complete(meta: dict[str, Any]) -> bool:
    """Whether a cell folder (its summary's `meta`) finished every run without a problem."""
    return bool(meta.get("complete")) and not meta.get("problems")


def _meta(folder: Path) -> dict[str, Any]:
    """A comparison folder's summary `meta` (a cell's or its calibration's) with the
    summary's `dilation` beside it, or {}."""
    summary = _read_json(folder / SUMMARY)
    meta = summary.get("meta")
    if not isinstance(meta, dict):
        return {}
    # The figures its runs recorded: a metric with a median under any scheduler.
    scheds = summary.get("schedulers")
    figures = sorted(
        {k for f in scheds.values() if isinstance(f, dict) for k, v in f.items()
         if isinstance(v, dict) and v.get("median") is not None}
    ) if isinstance(scheds, dict) else None  # fmt: skip
    return {**meta, "dilation": summary.get("dilation") or 1.0, "figures": figures}


def _cell_meta(out: Path, cell: Cell) -> dict[str, Any]:
    return _meta(cell_folder(out, cell))


def _cell_commit(out: Path, cell: Cell) -> str | None:
    """The commit a cell's folder records (its summary's meta.versions.veloces), or None."""
    return provenance.recorded_commit(_read_json(cell_folder(out, cell) / SUMMARY))


# How `vlab compare` says a guest ended without a named step (vm.report_boot): a guest killed
# from outside, or one that timed out, crashed or made the kernel report a problem.
_ENDINGS = ("vlab: guest timed out", "vlab: guest crashed", "vlab: the kernel reported")


def _failure(folder: Path, log: Path, status: int) -> str:
    """What failed in a cell, in one line: the guest's named step, else how the guest ended,
    else the log's end."""
    try:
        err = json.loads((folder / ".vlab" / "error.json").read_text())
        return f"exit {status}: step '{err['step']}': {err['message'][-300:]}"
    except (OSError, ValueError, KeyError, TypeError):
        pass
    try:
        lines = [ln.strip() for ln in log.read_text().splitlines() if ln.strip()]
    except OSError:
        lines = []
    ended = [ln for ln in lines if ln.startswith(_ENDINGS)]
    return f"exit {status}: " + ((ended[-1] if ended else " | ".join(lines[-3:]))[-400:] or "no output")


def _compare(plan: Plan, folder: Path, job: Path, device: str, schedulers: list[str], repeat: int,
             sysctl: tuple[tuple[str, str], ...] = (), runtime_s: int | None = None) -> int:  # fmt: skip
    """One `vlab compare` of the cell's job into folder (its log there); its exit status.
    `runtime_s`: the job's measured window where it is not the plan's (core.window_s)."""
    folder.mkdir(parents=True, exist_ok=True)
    baseline = "mq-deadline" if "mq-deadline" in schedulers else schedulers[0]
    with open(folder / "compare.log", "w") as f, contextlib.redirect_stdout(f), contextlib.redirect_stderr(f):
        try:
            comparison = app.Comparison(
                kernel=lookup(plan.kernel), devices=[str(d) for d in load_spec_args([device])],
                schedulers=schedulers, jobs=[job], out=folder, baseline=baseline, repeat=repeat,
                sysctl=guest_sysctl(sysctl),
            )  # fmt: skip
            # the job is a script with the plan's runtime written in: compare's default for it
            comparison.timeout = app.default_timeout(comparison, runtime_s=runtime_s or plan.runtime_s)
            print("$ " + shlex.join(comparison.as_command()), flush=True)  # what would redo this cell
            return app.compare(comparison).status
        except (app.RequestError, KernelError, DeviceError) as e:
            print(f"vlab: {e}")
            return 2


def _per_scheduler(summary: dict[str, Any], metric: str, stat: str) -> list[float]:
    """One statistic of a metric under each scheduler of a comparison's summary."""
    return [
        m for e in (summary.get("schedulers") or {}).values()
        if isinstance(m := (e.get(metric) or {}).get(stat), int | float)
    ]  # fmt: skip


def busy_and_dilation(folder: Path) -> tuple[float | None, float]:
    """A finished comparison's device busy share (the median over its schedulers' medians)
    and the dilation it ran at."""
    summary = _read_json(folder / SUMMARY)
    shares = _per_scheduler(summary, "device_busy_share", "median")
    return (statistics.median(shares) if shares else None), float(summary.get("dilation") or 1.0)


def fewest_passes(folder: Path) -> float | None:
    """The fewest passes of its flow any run of a finished comparison completed (filebench's
    `filebench_passes`), or None where its runs do not count them (fio, older runs)."""
    least = _per_scheduler(_read_json(folder / SUMMARY), f"workload_{filebench.PASSES}", "min")
    return min(least) if least else None


def calibrate(cell: Cell, plan: Plan, folder: Path, job: Path) -> tuple[str, dict[str, Any]]:
    """The device spec a served cell runs at. Where the plan asks for a busy share
    (`busy_target`), one run of the cell's own job under mq-deadline at the spec's dilation
    measures the device's busy share, and where it was below the aim (CALIBRATION_AIM, 90 %,
    above the 85 % target: a calibration at 86 % ran its cell at 78 %) the dilation becomes
    the one that would make the device busy 90 % (vlab.stats.dilation_for_busy). The run is
    kept beside the cell (FOLDER.calibration/; reused by --resume where the cells run in
    this process, --jobs 1: a Ray task starts in an empty folder; not where it ran under
    other guest sysctls than the cell's workload sets now, `_stale`).

    A filebench calibration run must also get through its flow: one that completed no pass
    measured the threads' first steps (a busy share that says nothing of the flow's) and runs
    again at a lower dilation (STALL_STEP); and the dilation chosen is capped where the cell's
    runs would complete fewer than MIN_PASSES passes (passes fall as 1/dilation where the
    device sets the pace), below the busy target if need be (`pass_capped_from`), and not
    past the dilation it got through at where it stalled higher. A dilation raised above the
    calibration's is checked by a run there (`_verify`)."""
    spec = DEVICES[cell.device]
    if plan.dilation is not None and spec.startswith("vsim:"):
        # One dilation for every cell (--dilation): not calibrated; a cell the guest keeps
        # below the busy target is excluded by the verdicts (vlab.verdict, rule 1).
        return _with_dilation(spec, plan.dilation), {"fixed_dilation": plan.dilation}
    if plan.busy_target is None or not spec.startswith("vsim:"):
        return spec, {}
    cal = folder.parent / f"{folder.name}.calibration"
    busy, dilation = busy_and_dilation(cal)
    stalled = _read_json_list(cal / STALLED)  # a kept calibration's history (--resume)

    def lower() -> str | None:
        """The spec to calibrate at again where the run kept measured the flow's start."""
        if fewest_passes(cal) != 0 or dilation <= 1:
            return None
        stalled.append(dilation)
        return _with_dilation(spec, max(1.0, round(dilation / STALL_STEP, 1)))

    if busy is None or _stale(cell, _meta(cal), figure=False):  # none kept, or another method's
        todo: str | None = spec
        stalled = []
    else:
        todo = lower()
    while todo is not None:
        shutil.rmtree(cal, ignore_errors=True)
        shutil.rmtree(folder.parent / f"{folder.name}.verify", ignore_errors=True)  # another calibration's
        status = _compare(plan, cal, job, todo, ["mq-deadline"], 1, cell.workload.sysctl)
        busy, dilation = busy_and_dilation(cal)
        if status != 0 or busy is None:
            return spec, {"status": "failed", "exit": status, "folder": cal.name}
        todo = lower()
        if todo is None and stalled:  # kept with the run that got through, for --resume
            (cal / STALLED).write_text(json.dumps(stalled))
    assert busy is not None
    info: dict[str, Any] = {"busy": busy, "dilation": dilation, "target": plan.busy_target}
    if stalled:
        info["stalled_at"] = stalled
    passes = fewest_passes(cal)
    if passes is not None:
        info["passes"] = passes
    chosen = dilation if busy >= max(plan.busy_target, CALIBRATION_AIM) else dilation_for_busy(dilation, busy)
    by_passes = max(1.0, float(int(dilation * passes / MIN_PASSES))) if passes is not None else chosen
    if stalled:
        # It got through here and not at the dilation above: its passes fell faster than
        # 1/dilation (the flow's start costs the device a fixed time; seed 000's SATA varmail:
        # 45 passes at 2, none at 10), so the dilation is not raised past this one.
        by_passes = min(by_passes, dilation)
    if chosen > by_passes:
        # Its runs would measure the flow's start, not its rate: more of the device's time
        # a run, at a busy share below the target (reported beside the cell's).
        info["pass_capped_from"] = chosen
        chosen = by_passes
    cap = schedulers.max_time_scale(plan.schedulers)
    if chosen > cap:
        # The schedulers' time tunables scale with the dilation (they hold in model time) and
        # would leave their sysfs range: the cell runs at the largest dilation they allow,
        # below its busy target (reported beside its busy share).
        info["capped_from"] = chosen
        chosen = float(int(cap))
    if passes is not None and chosen > dilation:
        outcome = _verify(cell, plan, folder, job, spec, dilation, chosen)
        if outcome is None:
            return spec, {"status": "failed", "exit": 1, "folder": f"{folder.name}.verify"}
        chosen, info["verified"] = outcome
    info["chosen_dilation"] = chosen
    return _with_dilation(spec, chosen), info


def _verify(cell: Cell, plan: Plan, folder: Path, job: Path, spec: str, dilation: float,
            chosen: float) -> tuple[float, list[list[float | None]]] | None:  # fmt: skip
    """The dilation a filebench cell runs at once a run there has got through MIN_PASSES
    passes of its flow: a calibration's passes and busy share are extrapolated (as
    1/dilation), and a run can fall out of the regime it was measured in — the card's
    webserver got through 899 passes at 10, reading a file set warmed into the page cache,
    and 0-6 a run at the 120 chosen, where the cache never warmed. One run at the chosen
    dilation (FOLDER.verify/, kept with its tries for --resume) checks it; short of
    MIN_PASSES it runs again lower (by its passes as 1/dilation, or half way in log terms
    after none), at most VERIFY_TRIES times, then at the calibration's own dilation. The
    tries, [dilation, passes, busy share] each; None where a run failed."""
    ver = folder.parent / f"{folder.name}.verify"
    tries = [t for t in _read_json_list(ver / VERIFIED) if isinstance(t, list) and len(t) == 3]
    if tries and tries[-1][1] is not None and tries[-1][1] >= MIN_PASSES:
        return float(tries[-1][0]), tries  # kept from an earlier invocation
    if tries:
        chosen = _lower(dilation, float(tries[-1][0]), tries[-1][1])
    while chosen > dilation and len(tries) < VERIFY_TRIES:
        shutil.rmtree(ver, ignore_errors=True)
        status = _compare(plan, ver, job, _with_dilation(spec, chosen), ["mq-deadline"], 1, cell.workload.sysctl)
        busy, _ = busy_and_dilation(ver)
        if status != 0 or busy is None:
            return None
        got = fewest_passes(ver)
        tries.append([chosen, got, round(busy, 3)])
        (ver / VERIFIED).write_text(json.dumps(tries))
        if got is None or got >= MIN_PASSES:
            return chosen, tries
        chosen = _lower(dilation, chosen, got)
    return (chosen if chosen <= dilation else dilation), tries


def _lower(floor: float, tried: float, passes: float | None) -> float:
    """The next dilation to verify after one whose run got `passes` (fewer than MIN_PASSES):
    by the passes as 1/dilation, or half way to the floor in log terms after none."""
    step = tried * passes / MIN_PASSES if passes else (tried * floor) ** 0.5
    return max(floor, float(int(step)))


def _with_dilation(spec: str, dilation: float) -> str:
    parsed = parse_one(spec)
    parsed.options["dilation"] = f"{dilation:g}"
    return str(parsed)


def run_cell(cell: Cell, plan: Plan, out: Path, fb: Path | None) -> dict[str, Any]:
    folder = cell_folder(out, cell)
    if _stale(cell, _meta(folder)):  # another method's run: none of its files stay beside the new
        shutil.rmtree(folder)
    folder.mkdir(parents=True, exist_ok=True)
    job = out / "jobs" / f"{cell.fs}-{cell.workload.name}.sh"
    job.parent.mkdir(exist_ok=True)
    job.write_text(job_script(cell, plan.runtime_s, fb))
    t0 = time.monotonic()
    spec, cal = calibrate(cell, plan, folder, job)
    entry: dict[str, Any] = {"host": socket.gethostname()}
    if cal.get("status") == "failed":
        entry.update(status="failed", exit=cal["exit"], wall_s=round(time.monotonic() - t0, 1),
                     error=f"the busy-share calibration failed (see {cal['folder']}/compare.log)")  # fmt: skip
        return entry
    # The runs' window at the cell's dilation: long enough to cover core.MIN_DEVICE_S of the
    # device's time (the calibration ran the plan's).
    window = core.window_s(plan.runtime_s, float(parse_one(spec).options.get("dilation", 1.0)), cell.workload)
    if window != plan.runtime_s:
        job = job.with_name(f"{job.stem}.{window}s.sh")
        job.write_text(job_script(cell, window, fb))
    status = _compare(plan, folder, job, spec, plan.schedulers, plan.repeat, cell.workload.sysctl, window)
    entry.update(status="ok" if status == 0 else "failed", exit=status, wall_s=round(time.monotonic() - t0, 1))
    entry["window_s"] = window
    if cal:
        entry["calibration"] = cal
        entry["ran_spec"] = spec
    busy, _ = busy_and_dilation(folder)
    if busy is not None:
        entry["busy"] = busy
    if status != 0:
        entry["error"] = _failure(folder, folder / "compare.log", status)
    return entry


def cell_entry(cell: Cell, plan: Plan, out: Path, outcome: dict[str, Any]) -> dict[str, Any]:
    folder = cell_folder(out, cell)
    return {
        "id": cell.id,
        "device": cell.device,
        "spec": DEVICES[cell.device],
        "fs": cell.fs,
        "workload": cell.workload.name,
        "metric": cell.workload.metric,
        "unit": cell.workload.unit,
        "folder": str(folder.relative_to(out)),
        **outcome,
        "dilation": core.cell_dilation(folder),  # its runs' (the cross-filesystem ratios need one)
        "figures": cell_figures(folder, cell.workload, plan.schedulers, plan.repeat),
    }


def plan_json(plan: Plan) -> dict[str, Any]:
    return {
        "devices": {d: DEVICES[d] for d in plan.devices},
        "filesystems": plan.filesystems,
        "workloads": [w.name for w in plan.workloads],
        "schedulers": plan.schedulers,
        "repeat": plan.repeat,
        "runtime_s": plan.runtime_s,
        "kernel": plan.kernel,
        "quick": plan.quick,
        "busy_target": plan.busy_target,
        "dilation": plan.dilation,
        "cells": len(plan.cells()),
    }


def write_summary(
    seed: Seed, plan: Plan, out: Path, cells: list[dict[str, Any]], meta: dict[str, Any]
) -> dict[str, Any]:
    a = seed.analyse(plan, cells)
    for subject in (None, "veloces"):
        for what in ("perf", "window"):
            if (t := core.against_baseline(plan, cells, what, subject)) is not None:
                a.tables.append(t)
    summary = {
        "kind": "vlab-repro",
        "seed": seed.name,
        "title": seed.title,
        "paper": seed.paper,
        "mapping": seed.mapping,
        "plan": plan_json(plan),
        "meta": meta,
        "cells": cells,
        "tables": [t.as_json() for t in a.tables],
        "verdicts": [v.as_json() for v in a.verdicts],
        "cases": a.cases,
        "rankings": [r.as_json() for r in a.rankings],
    }
    tmp = out / (SUMMARY + ".tmp")
    tmp.write_text(json.dumps(summary, indent=2) + "\n")
    tmp.replace(out / SUMMARY)
    (out / "report.md").write_text(markdown(summary))
    return summary


def _named_workloads() -> dict[str, core.Workload]:
    return {w.name: w for w in [*core.FILEBENCH.values(), *core.DBENCH.values()]}


def widen(plan: Plan, old: Any) -> None:
    """Make `plan`'s matrix cover a results folder's too (its summary's `plan`): `--resume`
    with `--filesystems`, `--workloads` or `--devices` chooses which cells this invocation
    runs, not what the folder's summary covers, so a narrower invocation keeps the other
    cells' records. The folder's order first, then this invocation's additions."""
    if not isinstance(old, dict):
        return

    def union(before: Any, now: list[Any], key: Callable[[Any], str], lookup: dict[str, Any]) -> list[Any]:
        names = [n for n in (before if isinstance(before, list | dict) else []) if n in lookup]
        return [lookup[n] for n in names] + [x for x in now if key(x) not in names]

    plan.devices = union(old.get("devices"), plan.devices, str, {d: d for d in DEVICES})
    plan.filesystems = union(old.get("filesystems"), plan.filesystems, str, {f: f for f in core.FILESYSTEMS})
    plan.workloads = union(old.get("workloads"), plan.workloads, lambda w: w.name, _named_workloads())


def rejudge(seed: Seed, plan: Plan, out: Path, command: list[str] | None = None, scratch: bool = False) -> int:
    """Judge an existing results folder again (`vlab repro SEED --table --out DIR`): every
    cell's figures re-read from its folder, the tables and verdicts made by this code; the
    measurements are not touched. The plan's matrix is the folder's own (its summary's
    devices, filesystems, workloads, schedulers and repetitions). Its manifest.json is
    written again: this commit made the tables."""
    try:
        summary = judge_again(seed, plan, out)
    except (OSError, ValueError) as e:
        print(f"vlab repro: {out / SUMMARY}: {e}", file=sys.stderr)
        return 2
    html_report(out)  # the page shows the summary's tables: remade with them
    provenance.write_manifest(out, scratch=scratch, command=command)
    print(markdown(summary))
    return 0


def judge_again(seed: Seed, plan: Plan, out: Path) -> dict[str, Any]:
    """The summary `rejudge` writes (summary.json in `out`, returned), without its page,
    manifest or printout: what `make scorecards` needs of a stored folder. OSError or
    ValueError where the folder has no readable summary."""
    old = json.loads((out / SUMMARY).read_text())
    p = old.get("plan") or {}
    plan.devices = [d for d in p.get("devices", plan.devices) if d in DEVICES]
    plan.filesystems = list(p.get("filesystems", plan.filesystems))
    named = _named_workloads()
    plan.workloads = [named[w] for w in p.get("workloads", []) if w in named] or plan.workloads
    plan.schedulers = list(p.get("schedulers", plan.schedulers))
    plan.repeat = int(p.get("repeat", plan.repeat))
    plan.runtime_s = int(p.get("runtime_s", plan.runtime_s))
    plan.kernel = str(p.get("kernel", plan.kernel))
    plan.busy_target = p.get("busy_target")
    plan.dilation = p.get("dilation")
    previous = _cells_of(old)
    cells = []
    for cell in plan.cells():
        before = previous.get(cell.id, {"status": "not run"})
        if before.get("status") == "not run":
            cells.append({"id": cell.id, "status": "not run"})
            continue
        ran = _cell_meta(out, cell)
        why = _stale(cell, ran) or (
            None if before.get("status") != "ok" or _complete(ran) else "its folder is gone or incomplete"
        )
        if why:  # another method's figures, or none: not judged with these
            print(f"vlab repro: {cell.id}: left out ({why}); `--resume` runs it again", file=sys.stderr)
            cells.append({"id": cell.id, "status": "not run"})
            continue
        outcome = {k: v for k, v in before.items() if k not in ("id", "figures", "device", "spec", "fs", "workload",
                                                               "metric", "unit", "folder")}  # fmt: skip
        cells.append(cell_entry(cell, plan, out, outcome))
    meta = dict(old.get("meta") or {})
    meta["rejudged"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    return write_summary(seed, plan, out, cells, meta)


def html_report(out: Path) -> None:
    """report.html from the folder's summary; a failure is printed, not raised: the results
    are written, and a plotting failure must not hide them."""
    try:
        target, _ = report.build(out)
        print(f"vlab repro: HTML report {target}", file=sys.stderr)
    except Exception as e:
        print(f"vlab repro: the HTML report failed ({type(e).__name__}: {e}); `./vlab report {out}`", file=sys.stderr)


def markdown(summary: dict[str, Any]) -> str:
    lines = [f"# {summary['title']}", "", f"Paper: `{summary['paper']}`. {summary['mapping']}", ""]
    meta = summary.get("meta", {})
    lines.append(
        f"Command: `{shlex.join(meta.get('command', []))}`; {meta.get('wall_s', '?')} s wall; the cells' "
        f"{meta.get('cells_wall_s', '?')} s (cells kept from earlier invocations included)."
    )
    if plan := summary.get("plan"):
        lines += ["", f"Runs: {plan.get('repeat', '?')} rotated repetitions of {plan.get('runtime_s', '?')} s "
                      f"(wall) per scheduler, Linux {plan.get('kernel', '?')}."]  # fmt: skip
    lines.append("")
    failed = [c for c in summary["cells"] if c.get("status") == "failed"]
    if failed:
        lines += ["**Failed cells** (the rest of the matrix ran):", ""]
        lines += [f"- `{c['id']}`: {c.get('error', '')}" for c in failed]
        lines.append("")
    lines += ["## Verdicts", "", "| claim | where | verdict | evidence | criterion |", "|---|---|---|---|---|"]
    for v in summary["verdicts"]:
        lines.append(
            f"| {v['claim']} | {v['where']} | **{v['verdict']}** | {v['evidence']} | {v.get('criterion', '')} |"
        )
    lines += [
        "",
        "## Cells",
        "",
        "| cell | status | wall s | ran on | device busy | dilation | device s a run |",
        "|---|---|---|---|---|---|---|",
    ]
    for c in summary["cells"]:
        busy = f"{100 * c['busy']:.0f} %" if isinstance(c.get("busy"), int | float) else "-"
        cal = c.get("calibration") or {}
        dil = _dilation_text(cal)
        if dil == "-" and isinstance(c.get("dilation"), int | float):
            dil = f"{c['dilation']:g}"
        node = c.get("node") or c.get("host") or "-"
        figs = c.get("figures") or {}
        dt = core.device_time(figs)
        window = f" (window {c['window_s']} s)" if c.get("window_s") else ""
        dev = f"{dt[0]:.2f} ({dt[1]:.2f}-{dt[2]:.2f}){window}" if dt else "-"
        lines.append(f"| {c['id']} | {c.get('status', '')} | {c.get('wall_s', '-')} | {node} | {busy} | {dil} | "
                     f"{dev} |")  # fmt: skip
    lines += [
        "",
        "Device s a run: the device's (model) time a run covered, the `sync` after a filebench window "
        "included, the median (least-most) over the cell's runs; the window in wall seconds where the cell "
        "ran a longer one than the plan's. A cell is judged only where every scheduler's median run covered "
        f"at least {core.MIN_DEVICE_S:g} s of it and the time of {core.MIN_PASSES} passes of its flow "
        "(`core.short_runs`).",
    ]
    for t in summary["tables"]:
        lines += ["", f"## {t['title']}", "", "| " + " | ".join(t["header"]) + " |"]
        lines.append("|" + "---|" * len(t["header"]))
        lines += ["| " + " | ".join(c["text"] for c in row) + " |" for row in t["rows"]]
        if t.get("note"):
            lines += ["", t["note"]]
    return "\n".join(lines) + "\n"


def _dilation_text(cal: dict[str, Any]) -> str:
    """A cell's dilation and how its calibration chose it, for the cells table."""
    if "fixed_dilation" in cal:
        return f"{cal['fixed_dilation']:g} (--dilation: every cell at one, not calibrated)"
    if "chosen_dilation" not in cal:
        return "-"
    how = [f"{100 * cal['busy']:.0f} % at {cal['dilation']:g}"]
    if "passes" in cal:
        how.append(f"{cal['passes']:g} passes")
    if cal.get("stalled_at"):
        how.append("no pass at " + ", ".join(f"{d:g}" for d in cal["stalled_at"]))
    if "pass_capped_from" in cal and cal.get("stalled_at") and cal["chosen_dilation"] == cal["dilation"]:
        how.append(f"{cal['pass_capped_from']:g} asked, not raised past the one it got through at")
    elif "pass_capped_from" in cal:
        how.append(f"{cal['pass_capped_from']:g} would leave fewer than {MIN_PASSES} passes a run")
    for d, passes, busy in cal.get("verified") or []:
        got = "?" if passes is None else f"{passes:g}"
        how.append(f"at {d:g}: {got} passes, {100 * busy:.0f} %")
    return f"{cal['chosen_dilation']:g} (calibration: {'; '.join(how)})"


Outcome = tuple[int, dict[str, Any]]


class Drain:
    """SIGUSR1 asks a running matrix to start no further cell: the cells already running
    finish and are kept, the rest stay "not run" for a later `--resume` (to free the machine
    without losing the hours a running cell has put in)."""

    def __init__(self) -> None:
        self.requested = False

    def __call__(self, signum: int, frame: object) -> None:
        self.requested = True
        # To the process's own stderr: a serial cell's run redirects sys.stderr into its
        # compare.log (buffered there until the cell ends), where nobody waits for this.
        print(
            "vlab repro: SIGUSR1: starting no further cell; the running ones finish",
            file=sys.__stderr__ or sys.stderr,
            flush=True,
        )

    @contextlib.contextmanager
    def installed(self) -> Iterator[Drain]:
        try:
            old = signal.signal(signal.SIGUSR1, self)
        except ValueError:  # not the main thread: no draining, the matrix runs as before
            yield self
            return
        try:
            yield self
        finally:
            signal.signal(signal.SIGUSR1, old)


def run_serial(todo: list[tuple[int, Cell]], plan: Plan, out: Path, fb: Path | None,
               drain: Drain) -> Iterator[Outcome]:  # fmt: skip
    """The cells one after another in this process (`--jobs 1`): one guest at a time."""
    for i, cell in todo:
        if drain.requested:
            return
        yield i, run_cell(cell, plan, out, fb)


def cell_on_node(cell: Cell, plan: Plan) -> tuple[dict[str, Any], bytes]:
    """A Ray task: one cell in a temporary folder on whichever node runs it; returns its
    entry (with the node) and the folder as a tar, which the driver unpacks under --out (the
    nodes need not share a filesystem, only this checkout with `make deps` done at the same
    path)."""
    import ray

    node = f"{socket.gethostname()}/{ray.get_runtime_context().get_node_id()[:8]}"
    try:
        fb = filebench.require() if cell.workload.personality else None
    except filebench.FilebenchError as e:
        return {"status": "failed", "exit": 2, "wall_s": 0.0, "error": str(e), "node": node}, b""
    with tempfile.TemporaryDirectory(prefix="vlab-repro-") as tmp:
        entry = run_cell(cell, plan, Path(tmp), fb)
        entry["node"] = node
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w:gz") as tar:
            tar.add(Path(tmp) / "cells", arcname="cells")
        return entry, buf.getvalue()


def run_ray(todo: list[tuple[int, Cell]], plan: Plan, out: Path, address: str | None,
            jobs: int | None, drain: Drain) -> Iterator[Outcome]:  # fmt: skip
    """The cells as Ray tasks, one CPU each (single-threaded TCG: one guest a core), on the
    cluster at `address` or an embedded local Ray with `jobs` CPUs (default: every core).
    Results arrive as cells finish; a task whose node or worker died fails its cell only.
    Cells are submitted as the cluster has CPUs for them (its size read again after each
    cell, so nodes that join are used), which lets a drain stop before the next one."""
    import ray
    from vsim.sweep import ray_init  # the Python API's one way to start or join Ray

    ray_init(address, jobs)
    task = ray.remote(num_cpus=1, max_retries=0)(cell_on_node).options(
        runtime_env={"env_vars": {"PYTHONPATH": str(LAB)}}
    )
    nodes = {n["NodeID"][:8] for n in ray.nodes() if n.get("Alive")}  # type: ignore[no-untyped-call]
    cpus = int(ray.cluster_resources().get("CPU", 0))  # type: ignore[no-untyped-call]
    print(f"vlab repro: {len(todo)} cell(s) on Ray: {len(nodes)} node(s), {cpus} guest(s) at a time", file=sys.stderr)
    waiting = list(todo)
    pending: dict[Any, tuple[int, Cell]] = {}

    def submit() -> None:
        room = max(1, int(ray.cluster_resources().get("CPU", 0)))  # type: ignore[no-untyped-call]
        while waiting and len(pending) < room and not drain.requested:
            i, cell = waiting.pop(0)
            pending[task.remote(cell, plan)] = (i, cell)

    submit()
    while pending:
        ready, _ = ray.wait(list(pending), num_returns=1)
        i, cell = pending.pop(ready[0])
        try:
            entry, tar = ray.get(ready[0])
        except ray.exceptions.RayError as e:
            why = str(e).splitlines()[0][:300] if str(e) else type(e).__name__
            yield i, {"status": "failed", "exit": 3, "wall_s": 0.0,
                      "error": f"the Ray task failed (its node or worker died?): {why}"}  # fmt: skip
            submit()
            continue
        if tar:
            folder = cell_folder(out, cell)
            shutil.rmtree(folder, ignore_errors=True)
            shutil.rmtree(folder.parent / f"{folder.name}.calibration", ignore_errors=True)
            with tarfile.open(fileobj=io.BytesIO(tar), mode="r:gz") as t:
                t.extractall(out, filter="data")
        yield i, entry
        submit()


def plan_differs(old: Any, plan: Plan) -> str:
    """How a results folder's plan (its summary's `plan`) differs from this one in what makes
    its cells' figures comparable (runs' length, repetitions, schedulers, kernel, busy
    target), in words; "" when it does not (or the folder has no plan)."""
    if not isinstance(old, dict):
        return ""
    now = plan_json(plan)
    keys = ("runtime_s", "repeat", "schedulers", "kernel", "busy_target", "dilation")
    diffs = [f"{k} {old[k]} (this run: {now[k]})" for k in keys if k in old and old[k] != now[k]]
    return ", ".join(diffs)


def _cells_of(summary: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The cells a results folder's summary records, by id."""
    cells = summary.get("cells")
    return {c["id"]: c for c in cells if isinstance(c, dict) and "id" in c} if isinstance(cells, list) else {}


def _recorded(cell: Cell, plan: Plan, out: Path, records: dict[str, dict[str, Any]]) -> dict[str, Any] | None:
    """The cell's entry from what the folder holds: complete, with what the summary recorded
    of the run that completed it (a failed run's record — wall time, calibration — is not
    the folder's now; the busy share is read from the folder itself); else a failure on
    record; else None."""
    before = records.get(cell.id, {})
    meta = _cell_meta(out, cell)
    if _complete(meta) and not _stale(cell, meta):
        fields = ("exit", "wall_s", "host", "node", "calibration", "ran_spec", "window_s")
        kept = {k: v for k, v in before.items() if k in fields and before.get("status") == "ok"}
        if (busy := busy_and_dilation(cell_folder(out, cell))[0]) is not None:
            kept["busy"] = busy
        return cell_entry(cell, plan, out, {"status": "ok", **kept, "kept": True})
    if before.get("status") == "failed":
        failure = ("exit", "wall_s", "host", "node", "error")
        return cell_entry(cell, plan, out, {"status": "failed", **{k: before[k] for k in failure if k in before}})
    return None


@contextlib.contextmanager
def _summary_lock(out: Path) -> Iterator[None]:
    """One invocation at a time reads, merges and writes the folder's summary (two on one
    folder each run their own cells: `--filesystems ext2` beside `--filesystems ext3`)."""
    with open(out / ".summary.lock", "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def run(seed: Seed, plan: Plan, out: Path, resume: bool, command: list[str], versions: dict[str, str],
        address: str | None = None, jobs: int | None = 1, mix_commits: bool = False,
        scratch: bool = False) -> int:  # fmt: skip
    """Run the matrix; 0 when every cell finished, 1 when one failed (the others ran and
    every result is kept), 2 when the matrix cannot start (no filebench, say; with `resume`,
    cells kept from another commit than HEAD without `mix_commits`: vlab.provenance). `jobs` 1
    with no `address` runs the cells here one at a time; otherwise they are Ray tasks
    (run_ray). The folder's manifest.json is written at the end."""
    out.mkdir(parents=True, exist_ok=True)
    fb: Path | None = None
    if any(w.personality for w in plan.workloads):
        try:
            fb = filebench.require()
        except filebench.FilebenchError as e:
            print(f"vlab repro: {e}", file=sys.stderr)
            return 2
    cells = plan.cells()
    serial = jobs == 1 and not address
    started = time.time()
    meta: dict[str, Any] = {
        "command": command,
        "versions": versions,
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(started)),
        "complete": False,
        "executor": "serial"
        if jobs == 1 and not address
        else f"ray ({address or f'local, {jobs or os.cpu_count()} cores'})",
    }
    old = _read_json(out / SUMMARY)
    previous = _cells_of(old)
    if resume and (differs := plan_differs(old.get("plan"), plan)):
        print(f"vlab repro: --resume: the cells in {out} ran with {differs}: one matrix cannot mix them; "
              "give the same settings or a new --out (nothing was changed)", file=sys.stderr)  # fmt: skip
        return 2
    print(
        f"vlab repro {seed.name}: {len(cells)} cells ({', '.join(plan.devices)} x {', '.join(plan.filesystems)} x "
        f"{', '.join(w.name for w in plan.workloads)}), schedulers {', '.join(plan.schedulers)}, "
        f"{plan.repeat} repetitions of {plan.runtime_s} s; results in {out}",
        file=sys.stderr,
    )
    # The cells this invocation may run; with --resume the summary covers the folder's matrix too.
    wanted = {c.id for c in cells}
    if resume:
        widen(plan, old.get("plan"))
        cells = plan.cells()
        if len(cells) > len(wanted):
            print(f"vlab repro: the summary covers the folder's {len(cells)} cells (--resume)", file=sys.stderr)
    done: dict[str, dict[str, Any]] = {}  # by cell id
    todo: list[tuple[int, Cell]] = []
    for i, cell in enumerate(cells):
        if resume and (entry := _recorded(cell, plan, out, previous)) and entry["status"] == "ok":
            done[cell.id] = entry
            if cell.id in wanted:
                print(f"  [{i + 1}/{len(cells)}] {cell.id}: kept (complete from an earlier run)", file=sys.stderr)
        elif cell.id in wanted:
            if resume and (why := _stale(cell, _cell_meta(out, cell))):
                print(f"  [{i + 1}/{len(cells)}] {cell.id}: run again ({why})", file=sys.stderr)
            todo.append((i, cell))
        elif entry := _recorded(cell, plan, out, previous):
            done[cell.id] = entry  # outside this invocation and not complete: its failure stays on record
    if resume:
        kept = {c.id: _cell_commit(out, c) for c in cells if done.get(c.id, {}).get("status") == "ok"}
        try:
            provenance.check_resume(kept, mix_commits)
        except provenance.Refused as e:
            print(f"vlab repro: {e} (nothing was run)", file=sys.stderr)
            return 2

    def summarise(final: bool = False) -> dict[str, Any]:
        with _summary_lock(out):
            # Another invocation on this folder (`--filesystems ext3` beside this one's ext2, say)
            # may have widened its matrix or finished a cell outside this one's since this one
            # began: the summary keeps both, never a stale copy of the other's cells.
            on_disk = _read_json(out / SUMMARY)
            now = _cells_of(on_disk)
            view = dataclasses.replace(plan)  # the cells' own plan stays as they were given it
            if resume:
                widen(view, on_disk.get("plan"))
            matrix = view.cells()
            for cell in matrix:
                if cell.id not in wanted and (entry := _recorded(cell, view, out, now)):
                    done[cell.id] = entry
            meta["wall_s"] = round(time.time() - started, 1)
            # The matrix's own time, cells kept from earlier invocations included.
            meta["cells_wall_s"] = round(sum(c.get("wall_s") or 0 for c in done.values()), 1)
            if final:
                meta["complete"] = all(done.get(c.id, {}).get("status") == "ok" for c in matrix)
            entries = [done.get(c.id) or {"id": c.id, "status": "not run"} for c in matrix]
            return write_summary(seed, view, out, entries, meta)

    with Drain().installed() as drain:
        executor = run_serial(todo, plan, out, fb, drain) if serial else run_ray(todo, plan, out, address, jobs, drain)
        for i, outcome in executor:
            cell = cells[i]
            said = "ok" if outcome["status"] == "ok" else f"FAILED ({outcome['error']})"
            where = f" on {outcome['node']}" if outcome.get("node") else ""
            print(f"  [{i + 1}/{len(cells)}] {cell.id}: {said}, {outcome['wall_s']:.0f} s{where}", file=sys.stderr)
            done[cell.id] = cell_entry(cell, plan, out, outcome)
            summarise()  # after every cell: an interrupted matrix keeps what it measured
    if drain.requested:
        meta["drained"] = True
    summary = summarise(final=True)
    html_report(out)
    provenance.write_manifest(out, scratch=scratch, command=command)
    print(markdown(summary))
    failed = [k for k, c in done.items() if c["status"] != "ok" and k in wanted]
    if failed:
        print(f"vlab repro: {len(failed)} cell(s) failed: {', '.join(failed)}; see each compare.log", file=sys.stderr)
    unrun = len(wanted - set(done))
    if unrun:
        print(f"vlab repro: drained: {unrun} cell(s) not run; `--resume` runs them", file=sys.stderr)
    print(f"vlab repro: {meta['wall_s']:.0f} s; {out / 'report.md'}", file=sys.stderr)
    return 1 if failed or unrun else 0
