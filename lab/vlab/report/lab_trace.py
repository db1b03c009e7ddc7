"""`vlab trace` results: queries.json (kind vlab-trace: the answers of `vlab query DB all`
on trace.db) — hot files, the hottest file's timeline, fragmentation, processes, request
sizes — drawn as tables, stacked bars and the file's offsets over time."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from vlab.etrace.query import ANSWERS
from vlab.report import data
from vlab.report.model import Breakdown, Cell, Report, Run, Series, Table, pointer

KIND = "vlab trace"
MIB = 1 << 20
KIB = 1 << 10


def detect(folder: Path) -> bool:
    try:
        doc = data.read_json(folder / ANSWERS)
    except data.DataError:
        return False
    return isinstance(doc, dict) and doc.get("kind") == "vlab-trace"


def _cells(rows: list[dict[str, Any]], section: str, columns: list[tuple[str, str, float]]) -> list[list[Cell]]:
    """One row per answer row; numbers carry their JSON pointer so the page can be checked."""
    out = []
    for i, r in enumerate(rows):
        row = []
        for key, _, scale in columns:
            v = r.get(key)
            if isinstance(v, int | float) and not isinstance(v, bool):
                if key in ("pid", "ino"):
                    text = str(v)
                elif scale != 1:
                    text = f"{v / scale:,.1f}" if (v / scale) % 1 else f"{v / scale:,.0f}"
                else:
                    text = f"{v:,}"
                row.append(Cell(text, float(v), key=pointer(section, i, key), doc=ANSWERS, scale=scale))
            else:
                row.append(Cell("" if v is None else str(v)))
        out.append(row)
    return out


def _table(rep: Report, doc: dict[str, Any], section: str, title: str, columns: list[tuple[str, str, float]],
           note: str = "") -> None:  # fmt: skip
    rows = doc.get(section) or []
    if rows:
        rep.tables.append(Table(title, [h for _, h, _ in columns], _cells(rows, section, columns), note))


def load(folder: Path) -> Report:
    rep = Report(KIND, "End-to-end trace", str(folder), comparison=False)
    try:
        doc = data.read_json(folder / ANSWERS)
        rep.files.append(ANSWERS)
    except data.DataError as e:
        rep.problem(str(e))
        return rep
    meta: dict[str, Any] = doc.get("meta") or {}
    rows: dict[str, Any] = doc.get("rows") or {}
    rep.facts = [
        ("database", str(doc.get("db"))),
        ("rows", ", ".join(f"{k} {v}" for k, v in rows.items())),
        ("bios", f"{meta.get('bios')} ({meta.get('merges')} merged, {meta.get('empty_bios')} empty flushes)"),
        ("events lost", str(meta.get("lost_events"))),
    ]
    if meta.get("lost_events") not in (None, "0"):
        rep.problem(f"bpftrace lost {meta.get('lost_events')} events: the tables are incomplete")
    _table(rep, doc, "hot_files", "Hot files by device bytes", [
        ("file", "file", 1), ("device_bytes", "device KiB", KIB), ("read_bytes", "read KiB", KIB),
        ("write_bytes", "written KiB", KIB), ("requests", "requests", 1), ("device_ms", "device ms", 1),
        ("mean_latency_us", "mean latency µs", 1)],
        "A request that carried several files' pages counts for each.")  # fmt: skip
    _table(rep, doc, "fragmentation", "Fragmentation: each file's extents on the device", [
        ("file", "file", 1), ("extents", "extents", 1), ("bytes", "KiB seen", KIB),
        ("largest_extent_bytes", "largest extent KiB", KIB)],
        "From the sector ranges of the file's bios in the trace (a file only partly read or written shows "
        "that part).")  # fmt: skip
    _table(rep, doc, "processes", "Reads and writes by process", [
        ("pid", "pid", 1), ("comm", "process", 1), ("vfs_read_bytes", "VFS read KiB", KIB),
        ("vfs_write_bytes", "VFS written KiB", KIB), ("device_read_bytes", "device read KiB", KIB),
        ("device_write_bytes", "device written KiB", KIB), ("bios", "bios", 1)],
        "VFS: what the process asked; device: the bios it submitted (write-back is submitted by kernel "
        "threads).")  # fmt: skip
    _table(rep, doc, "sizes", "Request sizes", [("size", "size", 1), ("read", "reads", 1), ("write", "writes", 1),
                                                ("other", "other", 1)])  # fmt: skip
    _table(rep, doc, "matches", "Requests and files without a match in the other level (the seed's Table 3.1)", [
        ("what", "", 1), ("without_match", "without match", 1), ("total", "total", 1), ("ratio", "ratio", 1)],
        "A block request matches when one of its files has a VFS read or write in the trace; a VFS read "
        "or write when its file is in a block request.")  # fmt: skip
    hot = doc.get("hot_files") or []
    if hot:
        rep.breakdowns.append(Breakdown("Device I/O by file", "MiB", ["read", "write"], [str(h["file"]) for h in hot],
                                        [[h["read_bytes"] / MIB, h["write_bytes"] / MIB] for h in hot]))  # fmt: skip
    procs = doc.get("processes") or []
    if procs:
        rep.breakdowns.append(Breakdown(
            "Device I/O by submitting process", "MiB", ["read", "write"],
            [f"{p['comm']} ({p['pid']})" for p in procs],
            [[p["device_read_bytes"] / MIB, p["device_write_bytes"] / MIB] for p in procs]))  # fmt: skip
    sizes = doc.get("sizes") or []
    if sizes:
        rep.breakdowns.append(Breakdown("Request size histogram", "requests", ["read", "write", "other"],
                                        [str(s["size"]) for s in sizes],
                                        [[s["read"], s["write"], s["other"]] for s in sizes]))  # fmt: skip
    tl = doc.get("timeline")
    if isinstance(tl, dict):
        label = str(tl.get("file"))
        rep.labels = [label]
        run = Run(label, 1)
        for op in ("read", "write"):
            v = [e for e in tl.get("vfs") or [] if e.get("op") == op]
            if v:
                run.series.append(Series("file_offset", op, np.array([e["t_s"] for e in v], dtype=float),
                                         np.array([e["offset"] / MIB for e in v], dtype=float)))  # fmt: skip
            d = [e for e in tl.get("device") or [] if e.get("op") == op]
            if d:
                run.series.append(Series("device_offset", op, np.array([e["t_s"] for e in d], dtype=float),
                                         np.array([e["sector"] * 512 / MIB for e in d], dtype=float)))  # fmt: skip
        rep.runs.append(run)
        rep.notes.append(
            f"{label}: {tl.get('vfs_ops')} VFS reads and writes, {tl.get('vfs_pattern')} (share that continues the "
            f"previous one: {tl.get('vfs_sequential_share')}); {tl.get('bios')} bios, {tl.get('device_pattern')} "
            f"on the device ({tl.get('device_sequential_share')})."
        )
    return rep
