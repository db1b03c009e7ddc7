"""`vlab fidelity`: the kernel's schedulers in the lab beside vsim's models of them, one row
per (device, workload, scheduler) cell of summary.json's `cells[]` (docs/notebooks/fidelity.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from vlab.report import vsim_common
from vlab.report.model import Cell, Report, Table, pointer

KIND = "vlab fidelity"
DOC = "summary.json"


def detect(folder: Path) -> bool:
    return vsim_common.has_kind(folder, "vlab-fidelity")


def _num(cells: list[Any], i: int, side: str, key: str, scale: float = 1.0, digits: int = 2) -> Cell:
    v = (cells[i].get(side) or {}).get(key)
    if not isinstance(v, int | float):
        return Cell("-")
    return Cell(f"{v / scale:,.{digits}f}", v, key=pointer("cells", i, side, key), doc=DOC, scale=scale)


def _ratio(cells: list[Any], i: int, fig: str, which: str) -> Cell:
    v = ((cells[i].get("figures") or {}).get(fig) or {}).get(which)
    if not isinstance(v, int | float):
        return Cell("-")
    return Cell(f"{v:.2f}", v, key=pointer("cells", i, "figures", fig, which), doc=DOC)


def load(folder: Path) -> Report:
    rep = Report(KIND, "Fidelity: the kernel's schedulers beside vsim's models", str(folder))
    s, cells = vsim_common.summary_cells(folder, rep, "summary.json: no cells (no lab cell finished)")
    rows = []
    for i, c in enumerate(cells):
        bound = c.get("device_bound")
        rows.append(
            [
                Cell(str(c.get("device")) + ("" if bound in (True, None) else " (guest-bound)")),
                Cell(str(c.get("workload"))),
                Cell(f"{c.get('scheduler')} / {c.get('model_scheduler')}"),
                _num(cells, i, "lab", "read_p99_us", 1000),
                _num(cells, i, "model", "read_p99_us", 1000),
                _ratio(cells, i, "read_p99_us", "lab_ratio"),
                _ratio(cells, i, "read_p99_us", "model_ratio"),
                _num(cells, i, "lab", "iops", digits=0),
                _num(cells, i, "model", "iops", digits=0),
                _ratio(cells, i, "iops", "lab_ratio"),
                _ratio(cells, i, "iops", "model_ratio"),
                vsim_common.yes_no(c.get("rank_agrees") if c.get("figures") else None),
                vsim_common.yes_no(c.get("ratio_agrees") if c.get("figures") else None),
            ]
        )
    crit = s.get("criteria") or {}
    rep.tables.append(
        Table(
            "Cells: lab and model",
            [
                "device",
                "workload",
                "scheduler (lab / model)",
                "lab read p99 ms",
                "model",
                "lab p99 / none",
                "model",
                "lab IOPS",
                "model",
                "lab IOPS / none",
                "model",
                "rank agrees",
                "ratios agree",
            ],
            rows,
            f"Rank: {crit.get('rank', '-')}. Ratios: {crit.get('ratio', '-')}. Device-bound: "
            f"{crit.get('device_bound', '-')}. What remains apart and why: docs/notebooks/fidelity.md.",
        )
    )
    sh = s.get("shares") or {}
    if sh:
        rep.facts.append(
            (
                "agreement",
                f"{sh.get('agrees')} of {sh.get('judged')} cells (rank {sh.get('rank_agrees')}, ratios "
                f"{sh.get('ratio_agrees')}); device-bound cells: {sh.get('device_bound_agrees')} of "
                f"{sh.get('device_bound')}",
            )
        )
    rep.facts.append(("kernel", str(s.get("kernel") or "not recorded")))
    names = s.get("model_names") or {}
    rep.facts.append(("models", ", ".join(f"{k} -> {v}" for k, v in names.items()) or "not recorded"))
    cal = s.get("calibration") or {}
    service = [f"{k} us: {v.get('service_us')} us, jitter {v.get('jitter_us')} us"
               for k, v in cal.items() if k.isdigit() and isinstance(v, dict)]  # fmt: skip
    if service:
        rep.facts.append(("null_blk as measured", "; ".join(service)))
    cpu = cal.get("cpu_us") or {}
    if isinstance(cpu, dict) and cpu:
        rep.facts.append(("guest CPU per I/O", ", ".join(f"{k} {v} us" for k, v in cpu.items())))
    for p in s.get("problems") or []:
        rep.problem(str(p))
    rep.comparison = False
    return rep
