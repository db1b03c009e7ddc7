"""The veloces matrix in vsim (`make bench-matrix-sim`, lab/vlab/experiments/matrix.py): one
row per (device, workload) cell of summary.json's `cells[]`, veloces against the best in-tree
scheduler and none, and the goals met (docs/notebooks/benchmarks.md, section 8); and where the lab's side
ran (`make bench-matrix-lab`, lab/summary.json), its cells beside the model's verdicts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from vlab.report import data, vsim_common
from vlab.report.model import Cell, Report, Table, pointer

KIND = "vsim matrix"
DOC = "summary.json"
LAB_DOC = "lab/summary.json"


def detect(folder: Path) -> bool:
    return vsim_common.has_kind(folder, "vsim-matrix")


def _num(cells: list[Any], i: int, path: tuple[str, ...], scale: float = 1.0, digits: int = 2, doc: str = DOC) -> Cell:
    v: Any = cells[i]
    for k in path:
        v = v.get(k) if isinstance(v, dict) else None
    if not isinstance(v, int | float):
        return Cell("-")
    return Cell(f"{v / scale:,.{digits}f}", v, key=pointer("cells", i, *path), doc=doc, scale=scale)


def _lab_table(folder: Path, rep: Report) -> None:
    """The lab's cells (lab/summary.json), each goal as the lab judged it (ranges apart)
    beside the model's verdict for the same cell."""
    try:
        lab = data.read_json(folder / LAB_DOC)
    except data.DataError as e:
        rep.problem(f"{LAB_DOC}: {e}")
        return
    raw = lab.get("cells") if isinstance(lab, dict) else None
    cells: list[Any] = raw if isinstance(raw, list) else []
    state = {"met": "pass", "not met": "fail"}
    rows = []
    for i, c in enumerate(cells):
        g, sg = c.get("goals") or {}, c.get("sim_goals") or {}
        v = c.get("veloces") or {}
        busy = c.get("device_busy_share")
        rows.append(
            [
                Cell(str(c.get("device"))),
                Cell(str(c.get("workload"))),
                _num(cells, i, ("veloces", "read_p99_to_best"), doc=LAB_DOC),
                Cell(str(v.get("best_read_p99") or "-")),
                _num(cells, i, ("veloces", "read_p99_to_none"), doc=LAB_DOC),
                _num(cells, i, ("veloces", "iops_to_best"), doc=LAB_DOC),
                _num(cells, i, ("veloces", "writes_to_none"), doc=LAB_DOC),
                Cell(f"{busy[0]:.0%}-{busy[1]:.0%}" if isinstance(busy, list) and len(busy) == 2 else "-"),
                *(Cell(str(g.get(k) or "-"), css=state.get(str(g.get(k)), "")) for k in ("never_loses", "wins")),
                Cell(str(g.get("locality") or "-")),
                *(vsim_common.yes_no(sg.get(k)) for k in ("never_loses", "wins")),
            ]
        )
    header = ["device", "workload", "read p99 / best in-tree", "best", "read p99 / none", "IOPS / best",
              "writes / none", "device busy", "never loses", "wins", "locality", "vsim: never loses",
              "vsim: wins"]  # fmt: skip
    rep.tables.append(Table("The lab's cells (medians of rotated runs; a difference counts where the ranges are "
                            "apart), beside the model's verdicts", header, rows,
                            "not shown: the medians meet the goal inside the spread; met within the spread: a "
                            "median misses it inside the spread."))  # fmt: skip


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
    if (folder / LAB_DOC).is_file():
        _lab_table(folder, rep)
    for p in s.get("problems") or []:
        rep.problem(str(p))
    rep.comparison = False
    return rep
