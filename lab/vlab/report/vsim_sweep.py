"""`vsim sweep` results: summary.json (kind vsim-sweep: the spec's axes, how the run went,
and every point with its values, status and figures) — the run's facts, the failed points
with their errors, the best points by the spec's objective, and per axis the objective's
spread over each of its values (the other axes varying)."""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

from vlab.report import vsim_common
from vlab.report.model import Cell, Ranking, Report, Spread, Table, pointer

KIND = "vsim sweep"
BEST = 20
SHOWN_FIGURES = [("iops", "IOPS", 1.0), ("read.p99_ns", "read p99 µs", 1e3), ("write.bw_kib", "write MiB/s", 1024.0),
                 ("write_amplification", "WA", 1.0)]  # fmt: skip


def detect(folder: Path) -> bool:
    return vsim_common.has_kind(folder, "vsim-sweep")


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


def _fmt(v: float, scale: float) -> str:
    x = v / scale
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:,.3g}"


def _unit(objective: str) -> tuple[str, float]:
    return next(((h, s) for k, h, s in SHOWN_FIGURES if k == objective), (objective, 1.0))


def load(folder: Path) -> Report:
    rep = Report(KIND, "Sweep", str(folder), comparison=False)
    doc = vsim_common.read_summary(folder, rep)
    if not doc:
        return rep
    run: dict[str, Any] = doc.get("run") or {}
    rows: list[dict[str, Any]] = [r for r in doc.get("rows") or [] if isinstance(r, dict)]
    axes: dict[str, Any] = doc.get("axes") or {}
    objective = str(doc.get("objective", "read.p99_ns"))
    minimize = bool(doc.get("minimize", True))
    status = [r.get("status") for r in rows]
    rep.title = f"Sweep {doc.get('name', '')}"
    rep.facts = [
        ("spec", str(doc.get("spec"))),
        ("points", f"{len(rows)}: {status.count('ok')} ok, {status.count('failed')} failed, "
                   f"{status.count('pending')} not run"),
        ("axes", "; ".join(f"{k} = {json.dumps(v)}" for k, v in axes.items())),
        ("objective", f"{objective} ({'lower' if minimize else 'higher'} is better)"),
        ("last run", f"{run.get('ran')} points in {_num(run.get('wall_s')) or 0:.2f} s "
                     f"({_num(run.get('points_per_s')) or 0:.1f} points/s) on {run.get('cpus')} CPUs, "
                     f"{run.get('mode')}; {run.get('skipped_done')} done before"),
        ("simulator", str(doc.get("vsim"))),
    ]  # fmt: skip
    names = list(axes)
    failed = [(i, r) for i, r in enumerate(rows) if r.get("status") == "failed"]
    if failed:
        rep.notes.append(f"{len(failed)} of {len(rows)} points failed: the table below gives their errors")
        rep.tables.append(Table("Failed points", [*names, "error"], [
            [*(Cell(json.dumps((r.get("values") or {}).get(n))) for n in names), Cell(str(r.get("error")))]
            for _, r in failed[:100]]))  # fmt: skip
    unit, scale = _unit(objective)

    def obj(r: dict[str, Any]) -> float | None:
        figs = r.get("figures") or {}
        return _num(figs.get(objective))

    scored = [(i, r, v) for i, r in enumerate(rows) if (v := obj(r)) is not None]
    scored.sort(key=lambda t: t[2], reverse=not minimize)
    agg = doc.get("settings") if isinstance(doc.get("settings"), dict) else None
    if agg and agg.get("rows"):
        # A seed axis: rank settings by their mean over the seeds, not points (a lucky seed).
        by = list(agg.get("by") or [])
        srows = agg["rows"]
        tied = int(agg.get("indistinguishable_from_best") or 0)
        if tied > 1:
            rep.notes.append(
                f"{tied} settings are indistinguishable from the best by {objective} (their 95 % intervals over "
                "the seeds overlap the best's): this sweep does not decide among them"
            )
        body = []
        for i, r in enumerate(srows[:BEST]):
            m, lo, hi = _num(r.get("mean")), _num(r.get("ci_low")), _num(r.get("ci_high"))
            cells = [Cell(json.dumps((r.get("values") or {}).get(n))) for n in by]
            cells.append(Cell(str(r.get("n"))))
            cells.append(Cell(_fmt(m, scale), m, key=pointer("settings", "rows", i, "mean"), doc="summary.json",
                              scale=scale) if m is not None else Cell(""))  # fmt: skip
            cells.append(Cell(f"{_fmt(lo, scale)} - {_fmt(hi, scale)}" if lo is not None and hi is not None else "-"))
            cells.append(Cell("yes" if r.get("indistinguishable") else "no"))
            body.append(cells)
        rep.tables.append(Table(f"The best {min(BEST, len(srows))} settings by mean {objective} over the seeds",
                                [*by, "seeds", f"mean {unit}", "95 % interval", "indistinguishable from the best"],
                                body))  # fmt: skip
    elif scored:
        header = [*names, *(h for _, h, _ in SHOWN_FIGURES)]
        body = []
        for i, r, _ in scored[:BEST]:
            figs = r.get("figures") or {}
            cells = [Cell(json.dumps((r.get("values") or {}).get(n))) for n in names]
            for k, _, s in SHOWN_FIGURES:
                v = _num(figs.get(k))
                cells.append(Cell("" if v is None else _fmt(v, s), v, key=pointer("rows", i, "figures", k),
                                  doc="summary.json", scale=s) if v is not None else Cell(""))  # fmt: skip
            body.append(cells)
        rep.tables.append(Table(f"The best {min(BEST, len(scored))} points by {objective}", header, body))
    for n in names:
        by_value: dict[str, list[float]] = {}
        for _, r, v in scored:
            by_value.setdefault(json.dumps((r.get("values") or {}).get(n)), []).append(v / scale)
        if len(by_value) < 2:
            continue
        labels = list(by_value)
        spreads = [Spread(statistics.median(vs), min(vs), max(vs), vs) for vs in by_value.values()]
        rep.rankings.append(Ranking(f"{objective} by {n}", unit, [f"{n} = {lab}" for lab in labels], [n] * len(labels),
                                    spreads))  # fmt: skip
    if not scored and failed and len(failed) == len(rows):
        # Every point failed: the report says so and shows their errors (it is complete).
        rep.notes.append(f"every point failed: no figure of {objective} to rank (the errors are above)")
    elif not scored:
        rep.problem(f"no point has the objective {objective}")
    return rep
