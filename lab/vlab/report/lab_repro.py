"""Reproduction results: summary.json (kind vlab-repro from `vlab repro SEED`, or
vsim-repro from `vsim repro NAME`) with the paper's tables beside ours, a verdict per claim
and numeric cases; a lab reproduction's cells are `vlab compare` folders under cells/, each
with its own report.html (a simulated one has none)."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

from vlab.report import data
from vlab.report.model import Breakdown, Case, Cell, Ranking, Report, Spread, Table, pointer

KIND = "reproduction (vlab repro, vsim repro)"
SUMMARY_KINDS = ("vlab-repro", "vsim-repro")
DOC = "summary.json"


def detect(folder: Path) -> bool:
    try:
        return bool(json.loads((folder / DOC).read_text()).get("kind") in SUMMARY_KINDS)
    except (OSError, ValueError, AttributeError):
        return False


def _cell(c: Any) -> Cell:
    if not isinstance(c, dict):
        return Cell(str(c))
    return Cell(
        str(c.get("text", "")),
        _num(c.get("value")),
        key=c.get("key"),
        doc=DOC if c.get("key") else None,
        scale=float(c["scale"]) if isinstance(c.get("scale"), int | float) else 1.0,
    )


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, int | float) else None


def load(folder: Path) -> Report:
    rep = Report(KIND, "Reproduction", str(folder))
    try:
        s = data.read_json(folder / DOC)
        rep.files.append(DOC)
    except data.DataError as e:
        rep.problem(str(e))
        return rep
    if not isinstance(s, dict):
        rep.problem(f"{DOC}: not a reproduction summary")
        return rep
    rep.title = str(s.get("title", rep.title))
    simulated = s.get("kind") == "vsim-repro"
    plan: dict[str, Any] = s.get("plan") or {}
    meta: dict[str, Any] = s.get("meta") or {}
    cells: list[Any] = s.get("cells") or []
    for c in cells:
        status = c.get("status") if isinstance(c, dict) else None
        if status == "failed":
            rep.problem(f"cell {c.get('id')} failed: {c.get('error', '')} (its folder: {c.get('folder')})")
        elif status == "not run":
            rep.problem(f"cell {c.get('id')} did not run (the matrix was interrupted)")
    # Verdicts first: the answer; then the paper's tables beside ours; then the cells.
    rows = []
    for i, v in enumerate(s.get("verdicts") or []):
        verdict = str(v.get("verdict", ""))
        css = {"holds": "pass", "does not hold": "fail", "partly": "warn", "inconclusive": "warn"}.get(verdict, "")
        rows.append(
            [
                Cell(str(v.get("claim", ""))),
                Cell(str(v.get("where", ""))),
                Cell(verdict, key=pointer("verdicts", i, "verdict"), doc=DOC, css=css),
                Cell(str(v.get("evidence", ""))),
                Cell(str(v.get("criterion", ""))),
            ]
        )
        rep.cases.append(
            Case(str(v.get("where", "")), str(v.get("claim", "")), "holds", verdict, "", verdict == "holds")
        )
    rep.tables.append(
        Table(
            "Verdicts: the paper's claims on our figures",
            ["claim", "where", "verdict", "evidence", "criterion"],
            rows,
            str(s.get("mapping", "")),
        )
    )
    for c in s.get("cases") or []:
        rep.cases.append(
            Case(
                str(c.get("group", "")),
                str(c.get("name", "")),
                str(c.get("expected", "")),
                str(c.get("got", "")),
                str(c.get("tolerance", "")),
                bool(c.get("pass")),
                c.get("expected_value"),
                c.get("got_value"),
            )
        )
    for r in s.get("rankings") or []:
        items = [i for i in r.get("items") or [] if isinstance(i, dict) and isinstance(i.get("median"), int | float)]
        if items:
            rep.rankings.append(
                Ranking(
                    str(r.get("title", "")),
                    str(r.get("unit", "")),
                    [str(i.get("label", "")) for i in items],
                    [str(i.get("group", "")) for i in items],
                    [
                        Spread(
                            float(i["median"]),
                            _num(i.get("min")),
                            _num(i.get("max")),
                            [float(x) for x in i.get("points") or [] if isinstance(x, int | float)],
                        )
                        for i in items
                    ],
                )
            )
    for b in s.get("breakdowns") or []:
        parts = [str(x) for x in b.get("parts") or []]
        items = [
            i
            for i in b.get("items") or []
            if isinstance(i, dict)
            and isinstance(i.get("values"), list)
            and len(i["values"]) == len(parts)
            and all(isinstance(v, int | float) for v in i["values"])
        ]
        if parts and items:
            rep.breakdowns.append(
                Breakdown(
                    str(b.get("title", "")),
                    str(b.get("unit", "")),
                    parts,
                    [str(i.get("label", "")) for i in items],
                    [[float(v) for v in i["values"]] for i in items],
                    [
                        (str(x.get("label", "")), float(x["value"]))
                        for x in b.get("lines") or []
                        if isinstance(x, dict) and isinstance(x.get("value"), int | float)
                    ],
                )
            )
    for t in s.get("tables") or []:
        rep.tables.append(
            Table(
                str(t.get("title", "")),
                [str(h) for h in t.get("header", [])],
                [[_cell(c) for c in row] for row in t.get("rows", [])],
                str(t.get("note", "")),
            )
        )
    cell_rows = []
    for i, c in enumerate(cells):
        if not isinstance(c, dict):
            continue
        state = str(c.get("status", ""))
        cell_rows.append(
            [
                Cell(str(c.get("id", ""))),
                Cell(state, key=pointer("cells", i, "status"), doc=DOC, css="fail" if state == "failed" else ""),
                Cell("-" if c.get("wall_s") is None else f"{c['wall_s']:,.0f}", c.get("wall_s")),
                Cell(str(c.get("folder", "")) + ("/report.html" if c.get("folder") else "")),
                Cell(str(c.get("error", ""))),
            ]
        )
    if cell_rows:
        rep.tables.append(
            Table(
                "Cells: one vlab compare each (its own report beside its results)",
                ["cell", "status", "wall s", "report", "error"],
                cell_rows,
                after_plots=True,
            )
        )
    cmd = meta.get("command")
    done = sum(1 for c in cells if isinstance(c, dict) and c.get("status") == "ok")
    for k, v in (
        ("command", shlex.join(cmd) if isinstance(cmd, list) else cmd),
        ("versions", ", ".join(f"{a} {b}" for a, b in (meta.get("versions") or {}).items()) or None),
        ("paper", s.get("paper")),
        ("kernel", plan.get("kernel")),
        ("devices", "; ".join(f"{a} = {b}" for a, b in (plan.get("devices") or {}).items()) or None),
        ("filesystems", ", ".join(plan.get("filesystems") or []) or None),
        ("workloads", ", ".join(plan.get("workloads") or []) or None),
        ("schedulers", ", ".join(plan.get("schedulers") or []) or None),
        ("repetitions", plan.get("repeat")),
        ("runtime per run", f"{plan['runtime_s']} s (wall)" if plan.get("runtime_s") else None),
        ("cells", f"{len(cells)}, {done} finished" if cells else None),
        (
            "this invocation's wall time",
            f"{meta['wall_s']:,.0f} s" if isinstance(meta.get("wall_s"), int | float) else None,
        ),
        (
            "cells' wall time",
            f"{meta['cells_wall_s']:,.0f} s (cells kept from earlier runs included)"
            if isinstance(meta.get("cells_wall_s"), int | float)
            else None,
        ),
        ("started", meta.get("started")),
        ("trace scale", plan.get("scale")),
        ("offered load", plan.get("load")),
    ):
        # A simulated reproduction has no kernel, filesystems or cells: say nothing of them.
        if v is None and (simulated or k in ("trace scale", "offered load")):
            continue
        rep.facts.append((k, "not recorded" if v is None else str(v)))
    return rep
