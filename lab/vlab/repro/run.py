"""Running a reproduction: every cell of its matrix as one `vlab compare`, going on past a
failed cell, then the paper's figures beside ours with a verdict per claim
(summary.json, report.md, report.html)."""

from __future__ import annotations

import contextlib
import json
import shlex
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vlab import app
from vlab.devices.spec import DeviceError, load_spec_args
from vlab.machine.kernels import KernelError, lookup
from vlab.repro.core import DEVICES, Analysis, Cell, Plan, cell_figures, job_script
from vlab.workloads import filebench

SUMMARY = "summary.json"


@dataclass(frozen=True)
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


def _complete(folder: Path) -> bool:
    try:
        meta = json.loads((folder / "summary.json").read_text()).get("meta", {})
        return bool(meta.get("complete")) and not meta.get("problems")
    except (OSError, ValueError, AttributeError):
        return False


def _failure(folder: Path, log: Path, status: int) -> str:
    """What failed in a cell, in one line: the guest's named step, else the log's end."""
    try:
        err = json.loads((folder / ".vlab" / "error.json").read_text())
        return f"exit {status}: step '{err['step']}': {err['message'][-300:]}"
    except (OSError, ValueError, KeyError, TypeError):
        pass
    try:
        tail = [ln for ln in log.read_text().splitlines() if ln.strip()][-3:]
    except OSError:
        tail = []
    return f"exit {status}: " + (" | ".join(tail)[-400:] or "no output")


def run_cell(cell: Cell, plan: Plan, out: Path, fb: Path | None) -> dict[str, Any]:
    folder = cell_folder(out, cell)
    folder.mkdir(parents=True, exist_ok=True)
    job = out / "jobs" / f"{cell.fs}-{cell.workload.name}.sh"
    job.parent.mkdir(exist_ok=True)
    job.write_text(job_script(cell, plan.runtime_s, fb))
    baseline = "mq-deadline" if "mq-deadline" in plan.schedulers else plan.schedulers[0]
    log = folder / "compare.log"
    t0 = time.monotonic()
    with open(log, "w") as f, contextlib.redirect_stdout(f), contextlib.redirect_stderr(f):
        try:
            comparison = app.Comparison(
                kernel=lookup(plan.kernel), devices=[str(d) for d in load_spec_args([DEVICES[cell.device]])],
                schedulers=plan.schedulers, jobs=[job], out=folder, baseline=baseline, repeat=plan.repeat,
                # filebench turns address-space randomisation off for its worker processes, or
                # says it cannot: do it once for the whole boot.
                sysctl={"kernel.randomize_va_space": "0"},
            )  # fmt: skip
            print("$ " + shlex.join(comparison.as_command()), flush=True)  # what would redo this cell
            status = app.compare(comparison).status
        except (app.RequestError, KernelError, DeviceError) as e:
            print(f"vlab: {e}")
            status = 2
    entry = {
        "status": "ok" if status == 0 else "failed",
        "exit": status,
        "wall_s": round(time.monotonic() - t0, 1),
    }
    if status != 0:
        entry["error"] = _failure(folder, log, status)
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
        "cells": len(plan.cells()),
    }


def write_summary(
    seed: Seed, plan: Plan, out: Path, cells: list[dict[str, Any]], meta: dict[str, Any]
) -> dict[str, Any]:
    a = seed.analyse(plan, cells)
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


def markdown(summary: dict[str, Any]) -> str:
    lines = [f"# {summary['title']}", "", f"Paper: `{summary['paper']}`. {summary['mapping']}", ""]
    meta = summary.get("meta", {})
    lines.append(
        f"Command: `{shlex.join(meta.get('command', []))}`; {meta.get('wall_s', '?')} s wall; the cells' "
        f"{meta.get('cells_wall_s', '?')} s (cells kept from earlier invocations included)."
    )
    lines.append("")
    failed = [c for c in summary["cells"] if c.get("status") == "failed"]
    if failed:
        lines += ["**Failed cells** (the rest of the matrix ran):", ""]
        lines += [f"- `{c['id']}`: {c.get('error', '')}" for c in failed]
        lines.append("")
    lines += ["## Verdicts", "", "| claim | where | verdict | evidence |", "|---|---|---|---|"]
    for v in summary["verdicts"]:
        lines.append(f"| {v['claim']} | {v['where']} | **{v['verdict']}** | {v['evidence']} |")
    for t in summary["tables"]:
        lines += ["", f"## {t['title']}", "", "| " + " | ".join(t["header"]) + " |"]
        lines.append("|" + "---|" * len(t["header"]))
        lines += ["| " + " | ".join(c["text"] for c in row) + " |" for row in t["rows"]]
        if t.get("note"):
            lines += ["", t["note"]]
    return "\n".join(lines) + "\n"


def run(seed: Seed, plan: Plan, out: Path, resume: bool, command: list[str], versions: dict[str, str]) -> int:
    """Run the matrix; 0 when every cell finished, 1 when one failed (the others ran and
    every result is kept), 2 when the matrix cannot start (no filebench, say)."""
    out.mkdir(parents=True, exist_ok=True)
    fb: Path | None = None
    if any(w.personality for w in plan.workloads):
        try:
            fb = filebench.require()
        except filebench.FilebenchError as e:
            print(f"vlab repro: {e}", file=sys.stderr)
            return 2
    cells = plan.cells()
    started = time.time()
    meta = {
        "command": command,
        "versions": versions,
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(started)),
        "complete": False,
    }
    done: list[dict[str, Any]] = []
    previous: dict[str, dict[str, Any]] = {}
    try:
        old = json.loads((out / SUMMARY).read_text())
        previous = {c["id"]: c for c in old.get("cells", [])}
    except (OSError, ValueError, AttributeError, KeyError, TypeError):
        pass
    print(
        f"vlab repro {seed.name}: {len(cells)} cells ({', '.join(plan.devices)} x {', '.join(plan.filesystems)} x "
        f"{', '.join(w.name for w in plan.workloads)}), schedulers {', '.join(plan.schedulers)}, "
        f"{plan.repeat} repetitions of {plan.runtime_s} s; results in {out}",
        file=sys.stderr,
    )
    for i, cell in enumerate(cells, 1):
        if resume and _complete(cell_folder(out, cell)):
            outcome = {k: previous.get(cell.id, {}).get(k) for k in ("exit", "wall_s")}
            outcome = {"status": "ok", **{k: v for k, v in outcome.items() if v is not None}, "kept": True}
            print(f"  [{i}/{len(cells)}] {cell.id}: kept (complete from an earlier run)", file=sys.stderr)
        else:
            outcome = run_cell(cell, plan, out, fb)
            said = "ok" if outcome["status"] == "ok" else f"FAILED ({outcome['error']})"
            print(f"  [{i}/{len(cells)}] {cell.id}: {said}, {outcome['wall_s']:.0f} s", file=sys.stderr)
        done.append(cell_entry(cell, plan, out, outcome))
        meta["wall_s"] = round(time.time() - started, 1)
        # The matrix's own time, cells kept from earlier invocations included.
        meta["cells_wall_s"] = round(sum(c.get("wall_s") or 0 for c in done), 1)
        # Rewritten after every cell: an interrupted matrix keeps what it measured.
        pending = [{"id": c.id, "status": "not run"} for c in cells[i:]]
        write_summary(seed, plan, out, done + pending, meta)
    meta["complete"] = all(c["status"] == "ok" for c in done)
    meta["wall_s"] = round(time.time() - started, 1)
    summary = write_summary(seed, plan, out, done, meta)
    try:
        from vlab import report

        target, _ = report.build(out)
        print(f"vlab repro: HTML report {target}", file=sys.stderr)
    except Exception as e:  # the results are written; a plotting failure must not hide them
        print(f"vlab repro: the HTML report failed ({type(e).__name__}: {e}); `./vlab report {out}`", file=sys.stderr)
    print(markdown(summary))
    failed = [c["id"] for c in done if c["status"] != "ok"]
    if failed:
        print(f"vlab repro: {len(failed)} cell(s) failed: {', '.join(failed)}; see each compare.log", file=sys.stderr)
    print(f"vlab repro: {meta['wall_s']:.0f} s; {out / 'report.md'}", file=sys.stderr)
    return 1 if failed else 0
