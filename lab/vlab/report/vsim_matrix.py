"""The veloces matrix in vsim (`make bench-matrix-sim`, lab/vlab/experiments/matrix.py): one
row per (device, workload) cell of summary.json's `cells[]`, veloces against the best in-tree
scheduler and none, and the goals met (docs/benchmarks.md, section 8)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from vlab.report import vsim_common
from vlab.report.model import Cell, Report, Table, pointer

KIND = "vsim matrix"
DOC = "summary.json"


def detect(folder: Path) -> bool:
    return vsim_common.has_kind(folder, "vsim-matrix")


def _num(cells: list[Any], i: int, path: tuple[str, ...], scale: float = 1.0, digits: int = 2) -> Cell:
    v: Any = cells[i]
    for k in path:
        v = v.get(k) if isinstance(v, dict) else None
    if not isinstance(v, int | float):
        return Cell("-")
    return Cell(f"{v / scale:,.{digits}f}", v, key=pointer("cells", i, *path), doc=DOC, scale=scale)


def load(folder: Path) -> Report:
    rep = Report(KIND, "veloces against its goals, in vsim", str(folder))
    s, cells = vsim_common.summary_cells(folder, rep, "summary.json: no cells")
    rows = []
    for i, c in enumerate(cells):
        name = str(c.get("workload"))
        if c.get("buffered_modelled_as_direct"):
            name += " (buffered as direct)"
        if c.get("trusted"):
            name += " (trusted)"
        g = c.get("goals") or {}
        rows.append(
            [
                Cell(str(c.get("device"))),
                Cell(str(c.get("depth"))),
                Cell(name),
                _num(cells, i, ("figures", "veloces", "iops"), digits=0),
                _num(cells, i, ("veloces", "iops_to_best")),
                _num(cells, i, ("figures", "veloces", "read_p99_us"), 1000),
                _num(cells, i, ("veloces", "read_p99_to_best")),
                _num(cells, i, ("veloces", "writes_to_none")),
                _num(cells, i, ("veloces", "wa_to_none")),
                _num(cells, i, ("veloces", "energy_per_op_to_none")),
                vsim_common.yes_no(g.get("never_loses")),
                vsim_common.yes_no(g.get("wins")),
                vsim_common.yes_no(g.get("locality")),
            ]
        )
    goals = s.get("goals") or {}
    header = ["device", "depth", "workload", "veloces IOPS", "/ best in-tree", "read p99 ms", "/ best in-tree",
              "writes / none", "WA / none", "energy per op / none", "never loses", "wins", "locality"]  # fmt: skip
    rep.tables.append(
        Table(
            "Cells: veloces against the in-tree schedulers",
            header,
            rows,
            " ".join(f"{k}: {v}." for k, v in goals.items()),
        )
    )
    for goal, pair in (s.get("shares") or {}).items():
        if isinstance(pair, list) and len(pair) == 2:
            rep.facts.append((goal.replace("_", " "), f"{pair[0]} of {pair[1]} cells"))
    rep.facts.append(("veloces spec", str(s.get("scheduler") or "veloces")))
    for p in s.get("problems") or []:
        rep.problem(str(p))
    rep.comparison = False
    return rep
