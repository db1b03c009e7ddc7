"""`vsim validate --report DIR`: the simulator's models against closed forms, published
parameters and the papers' worked examples (validate.json: one entry per case)."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from vlab.report import data, vsim_common
from vlab.report.model import Case, Cell, Report, Table, pointer

KIND = "reproduction (vsim validate)"


def detect(folder: Path) -> bool:
    return vsim_common.has_kind(folder, "vsim-validate", "validate.json")


def _number(text: str) -> float | None:
    try:
        return float(text.replace(",", "").strip())
    except ValueError:
        return None


def load(folder: Path) -> Report:
    rep = Report(KIND, "The simulator against the papers and closed forms", str(folder))
    summary = vsim_common.read_summary(folder, rep)
    cases: list[Any] = []
    try:
        doc = data.read_json(folder / "validate.json")
        cases = doc if isinstance(doc, list) else []
        if not isinstance(doc, list):
            rep.problem("validate.json: not a list of cases")
        rep.files.append("validate.json")
    except data.DataError as e:
        rep.problem(str(e) if (folder / "validate.json").exists() else "validate.json: missing")
    for i, c in enumerate(cases):
        if not isinstance(c, dict) or not {"group", "name", "expected", "got", "pass"} <= set(c):
            rep.problem(f"validate.json: case {i + 1} is not a validation case")
            continue
        rep.cases.append(
            Case(
                str(c["group"]),
                str(c["name"]),
                str(c["expected"]),
                str(c["got"]),
                str(c.get("tolerance", "")),
                bool(c["pass"]),
                _number(str(c["expected"])),
                _number(str(c["got"])),
            )
        )
    groups = list(dict.fromkeys(c.group for c in rep.cases))
    rows = []
    for g in groups:
        mine = [c for c in rep.cases if c.group == g]
        passed = sum(c.passed for c in mine)
        rows.append(
            [
                Cell(g),
                Cell(str(len(mine)), len(mine)),
                Cell(str(passed), passed),
                Cell(str(len(mine) - passed), len(mine) - passed, css="fail" if passed < len(mine) else ""),
            ]
        )
    rep.tables.append(Table("Groups", ["group", "cases", "passed", "failed"], rows))
    detail = []
    for i, c in enumerate(rep.cases):
        detail.append(
            [
                Cell(c.group),
                Cell(c.name),
                Cell(c.expected, key=pointer(i, "expected"), doc="validate.json"),
                Cell(c.got, key=pointer(i, "got"), doc="validate.json"),
                Cell(c.tolerance),
                Cell("PASS" if c.passed else "FAIL", css="pass" if c.passed else "fail"),
            ]
        )
    rep.tables.append(
        Table(
            "Every case",
            ["group", "case", "expected", "ours", "tolerance", "verdict"],
            detail,
            "Sources and assumptions of each group: docs/sim.md, docs/sim-table1.md.",
            after_plots=True,
        )
    )
    failed = sum(not c.passed for c in rep.cases)
    if failed:
        rep.notes.insert(0, f"{failed} case(s) FAILED: see the table")
    cmd = summary.get("command")
    for k, v in (
        ("command", shlex.join(cmd) if isinstance(cmd, list) else cmd),
        ("versions", f"vsim {summary['vsim_version']}" if summary.get("vsim_version") else None),
        ("group", summary.get("group") or "all"),
        ("quick", summary.get("quick")),
        ("cases", f"{len(rep.cases)}, {len(rep.cases) - failed} passed, {failed} failed"),
    ):
        rep.facts.append((k, "not recorded" if v is None else str(v)))
    return rep
