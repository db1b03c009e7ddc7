"""What the simulator's result folders share: per-run files named in summary.json
(`files`: fio json+, the jobs' CSV series, the device's CSV series) and the facts."""

from __future__ import annotations

import shlex
from functools import partial
from pathlib import Path
from typing import Any

from vlab.report import data
from vlab.report.model import Cell, Report, Run, Table, pointer


def has_kind(folder: Path, kind: str, *files: str) -> bool:
    """Whether `folder` holds results of `kind` (summary.json's `kind`), or — without a
    readable summary — any of the files that kind writes."""
    try:
        s = data.read_json(folder / "summary.json")
        return isinstance(s, dict) and s.get("kind") == kind
    except data.DataError:
        return any((folder / f).exists() for f in files)


def read_summary(folder: Path, rep: Report) -> dict[str, Any]:
    """summary.json, or {} with the reason among the report's problems."""
    try:
        s = data.read_json(folder / "summary.json")
        rep.files.append("summary.json")
        if isinstance(s, dict):
            return s
        rep.problem("summary.json: not an object")
    except data.DataError as e:
        rep.problem(str(e) if (folder / "summary.json").exists() else "summary.json: missing")
    return {}


def load_run(folder: Path, label: str, files: dict[str, Any], rep: Report) -> Run:
    """One simulated run from its files; what is missing or unreadable is named."""
    run = Run(label, 1)
    name = files.get("json")
    if name:
        try:
            run.latency = data.fio_latency(data.read_json(folder / name), name)
            rep.files.append(name)
        except data.DataError as e:
            rep.problem(str(e) if (folder / name).exists() else f"{name}: missing")
    # The device CSV leaves idle intervals out (docs/sim.md): drawn as zero.
    readers = (("csv", data.vsim_job_series), ("device_csv", partial(data.device_series, idle_gaps=True)))
    for key, reader in readers:
        name = files.get(key)
        if not name:
            continue
        if not (folder / name).exists():
            rep.problem(f"{name}: missing (time series of {label})")
            continue
        try:
            run.series += reader(folder / name)
            rep.files.append(name)
        except data.DataError as e:
            rep.problem(str(e))
    return run


def facts(rep: Report, summary: dict[str, Any], extra: list[tuple[str, Any]]) -> None:
    cmd = summary.get("command")
    rows: list[tuple[str, Any]] = [("command", shlex.join(cmd) if isinstance(cmd, list) else cmd), *extra]
    version = summary.get("vsim_version")
    rows.append(("versions", f"vsim {version}" if version else None))
    if summary.get("interval_ns"):
        rows.append(("time-series interval", f"{summary['interval_ns'] / 1e6:g} ms"))
    for k, v in rows:
        rep.facts.append((k, "not recorded" if v in (None, "", []) else str(v)))
    rep.notes.append("a deterministic simulation: one run per scheduler, the same inputs give the same figures")


def counters_table(rep: Report, counters: list[tuple[str, str, Any]]) -> None:
    """The devices' final counters: one column per run (label, pointer prefix, counters)."""
    present = [(lb, at, c) for lb, at, c in counters if isinstance(c, dict) and c]
    if not present:
        return
    names = list(dict.fromkeys(k for _, _, c in present for k, v in c.items() if isinstance(v, int | float | str)))
    rows = []
    for n in names:
        row = [Cell(n)]
        for _, at, c in present:
            v = c.get(n)
            if isinstance(v, bool) or not isinstance(v, int | float):
                row.append(Cell("-" if v is None else str(v)))
            else:
                row.append(
                    Cell(
                        f"{v:,.4g}" if isinstance(v, float) else f"{v:,}", float(v), at + pointer(n), doc="summary.json"
                    )
                )
        rows.append(row)
    rep.tables.append(
        Table(
            "Device counters at the end of the run", ["counter", *(lb for lb, _, _ in present)], rows, after_plots=True
        )
    )


def yes_no(v: Any) -> Cell:
    """A verdict cell: yes (pass), no (fail), or - where it does not apply (None)."""
    if v is None:
        return Cell("-")
    return Cell("yes" if v else "no", css="pass" if v else "fail")


def summary_cells(folder: Path, rep: Report, empty: str) -> tuple[dict[str, Any], list[Any]]:
    """summary.json and its `cells[]` (a problem `empty` when a summary has none)."""
    s = read_summary(folder, rep)
    raw = s.get("cells")
    cells: list[Any] = raw if isinstance(raw, list) else []
    if s and not cells:
        rep.problem(empty)
    return s, cells
