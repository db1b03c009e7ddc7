"""`vsim compare --out DIR` results: summary.json (kind vsim-compare) and per scheduler
NAME.json (fio json+), NAME.csv (jobs' series), NAME.device.csv (device series)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from vlab.report import data, vsim_common
from vlab.report.model import Cell, Report, Spread, Table, pointer

KIND = "vsim compare"


def detect(folder: Path) -> bool:
    try:
        s = data.read_json(folder / "summary.json")
    except data.DataError:
        # No readable summary: the per-scheduler files say what it was.
        return any(folder.glob("*.device.csv")) and not (folder / "run.json").exists()
    return isinstance(s, dict) and (
        s.get("kind") == "vsim-compare" or (isinstance(s.get("schedulers"), list) and "workload" in s)
    )


def _name(label: str) -> str:
    return label.replace(":", "_").replace(",", "_").replace("=", "_")


def load(folder: Path) -> Report:
    rep = Report(KIND, "Simulated scheduler comparison", str(folder))
    summary = vsim_common.read_summary(folder, rep)
    entries: list[dict[str, Any]] = [e for e in summary.get("schedulers", []) if isinstance(e, dict)]
    if not summary:
        # Each scheduler's files, named after its label (":", ",", "=" read back as "_").
        entries = [{"scheduler": p.name.removesuffix(".device.csv")} for p in sorted(folder.glob("*.device.csv"))]
        rep.notes.append("summary.json was missing or unreadable: no table; the plots come from the runs' files")
    rep.labels = [str(e.get("scheduler")) for e in entries]
    rep.baseline = summary.get("baseline")
    rep.title = f"Simulated: {summary.get('workload', '?')} on {summary.get('device', '?')}"
    for e in entries:
        label = str(e.get("scheduler"))
        n = _name(label)
        files = e.get("files")
        if not isinstance(files, dict) and not summary:
            # No summary: the files the folder was recognised by, named as vsim names them.
            files = {"json": f"{n}.json", "csv": f"{n}.csv", "device_csv": f"{n}.device.csv"}
        elif not isinstance(files, dict):
            # Written by a vsim before time series were part of compare: its fio JSON only.
            files = {"json": f"{n}.json"}
            rep.notes.append(f"{label}: this summary names no time-series files (an older vsim): no time series")
        rep.runs.append(vsim_common.load_run(folder, label, files, rep))
    base = next((i for i, e in enumerate(entries) if e.get("scheduler") == rep.baseline), 0)
    _table(rep, entries, base)
    _bars(rep, entries, base)
    vsim_common.facts(
        rep,
        summary,
        [
            ("device", summary.get("device")),
            ("workload", summary.get("workload")),
            ("seed", summary.get("seed")),
            ("baseline", rep.baseline),
            (
                "simulated time",
                f"{entries[0]['simulated_ns'] / 1e9:g} s" if entries and entries[0].get("simulated_ns") else None,
            ),
        ],
    )
    vsim_common.counters_table(
        rep,
        [
            (str(e.get("scheduler")), pointer("schedulers", i, "device_counters"), e.get("device_counters"))
            for i, e in enumerate(entries)
        ],
    )
    for e in entries:
        if e.get("lost_io"):
            rep.notes.insert(
                0,
                f"{e.get('scheduler')}: the run LOST I/O ({e.get('lost_bios', '?')} bios can never complete): "
                "its figures are left out of every table, bar and ratio",
            )
    return rep


def _get(e: dict[str, Any], *path: str) -> float | None:
    v: Any = e
    for p in path:
        v = v.get(p) if isinstance(v, dict) else None
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


def _table(rep: Report, entries: list[dict[str, Any]], base: int) -> None:
    b = rep.baseline or "-"
    header = ["scheduler", "IOPS", "read MiB/s", "write MiB/s"]
    header += [f"{op} {p} us" for op in ("read", "write") for p in ("p50", "p99", "p99.9")]
    header += [f"IOPS/{b}", f"read p99/{b}", f"write p99/{b}", "WA", "energy J", "IOPS/W"]
    rows = []
    for i, e in enumerate(entries):

        def cell(*path: str, scale: float = 1.0, digits: int = 0, e: dict[str, Any] = e, i: int = i) -> Cell:
            v = _get(e, *path)
            if v is None:
                return Cell("-")
            return Cell(f"{v / scale:,.{digits}f}", v, pointer("schedulers", i, *path), doc="summary.json", scale=scale)

        def ratio(*path: str, e: dict[str, Any] = e, i: int = i) -> Cell:
            v, d = _get(e, *path), _get(entries[base], *path)
            if v is None or not d or _lost(e) or _lost(entries[base]):
                return Cell("-")
            return Cell(
                f"{v / d:.2f}",
                v / d,
                ratio=(pointer("schedulers", i, *path), pointer("schedulers", base, *path)),
                doc="summary.json",
            )

        if _lost(e):
            lost = f"LOST {e.get('lost_bios', '?')} bios"
            rows.append([Cell(f"{e.get('scheduler')}: LOST I/O"), Cell(lost)] + [Cell("-")] * (len(header) - 2))
            continue
        rows.append(
            [
                Cell(str(e.get("scheduler"))),
                cell("iops"),
                cell("read", "bw_kib", scale=1024, digits=1),
                cell("write", "bw_kib", scale=1024, digits=1),
                *(
                    cell(op, p, scale=1000, digits=1)
                    for op in ("read", "write")
                    for p in ("p50_ns", "p99_ns", "p99.9_ns")
                ),
                ratio("iops"),
                ratio("read", "p99_ns"),
                ratio("write", "p99_ns"),
                cell("write_amplification", digits=2),
                cell("energy_j", digits=2),
                cell("iops_per_watt", digits=1),
            ]
        )
    rep.tables.append(Table("The simulated runs", header, rows, f"Ratios: to {b}. Latencies: µs."))


def _lost(e: dict[str, Any]) -> bool:
    """A run that lost I/O: its figures are not ranked anywhere."""
    return bool(e.get("lost_io"))


def _bars(rep: Report, entries: list[dict[str, Any]], base: int) -> None:
    rep.bars = {"iops": {}, "bw_mib": {}}
    for e in entries:
        if _lost(e):
            continue
        label = str(e.get("scheduler"))
        iops = _get(e, "iops")
        bw = sum(v for v in (_get(e, "read", "bw_kib"), _get(e, "write", "bw_kib")) if v is not None) / 1024
        rep.bars["iops"][label] = Spread(iops, iops, iops, [iops] if iops is not None else [])
        rep.bars["bw_mib"][label] = Spread(bw, bw, bw, [bw])
    paths = {
        "iops": ("iops",),
        "read_p99": ("read", "p99_ns"),
        "write_p99": ("write", "p99_ns"),
        "write_amplification": ("write_amplification",),
    }
    for m, path in paths.items():
        d = _get(entries[base], *path) if entries and not _lost(entries[base]) else None
        rep.ratios[m] = {}
        for e in entries:
            if _lost(e):
                continue
            v = _get(e, *path)
            rep.ratios[m][str(e.get("scheduler"))] = v / d if v is not None and d else None
