"""`vsim run --report DIR` results: summary.json (kind vsim-run), run.json (fio json+),
run.csv and run.device.csv."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from vlab.report import data, vsim_common
from vlab.report.model import Cell, Report, Spread, Table, pointer
from vlab.workloads.fio import latency_object

KIND = "vsim run"


def detect(folder: Path) -> bool:
    return vsim_common.has_kind(folder, "vsim-run", "run.json", "run.csv")


def load(folder: Path) -> Report:
    rep = Report(KIND, "Simulated run", str(folder))
    summary = vsim_common.read_summary(folder, rep)
    label = str(summary.get("scheduler") or "run")
    rep.labels = [label]
    rep.title = f"Simulated: {summary.get('config', '?')}, {label} on {summary.get('device', '?')}"
    files = summary.get("files") or {"json": "run.json", "csv": "run.csv", "device_csv": "run.device.csv"}
    run = vsim_common.load_run(folder, label, files, rep)
    rep.runs.append(run)
    try:
        doc = data.read_json(folder / files["json"])
        _table(rep, doc, files["json"], label)
        v = doc.get("vsim") or {}
        if v.get("lost_io"):
            rep.title = f"LOST I/O: {rep.title}"
            rep.notes.insert(
                0,
                f"the run LOST I/O: {v.get('lost_bios', '?')} of {v.get('bios', '?')} bios can never complete; "
                "its figures are not valid",
            )
    except (data.DataError, KeyError, TypeError):
        pass  # already named by load_run
    ns = summary.get("simulated_ns")
    vsim_common.facts(
        rep,
        summary,
        [
            ("configuration", summary.get("config")),
            ("device", summary.get("device")),
            ("scheduler", summary.get("scheduler")),
            ("seed", summary.get("seed")),
            ("simulated time", f"{ns / 1e9:g} s" if isinstance(ns, int | float) else None),
        ],
    )
    vsim_common.counters_table(rep, [(label, pointer("device_counters"), summary.get("device_counters"))])
    return rep


def _table(rep: Report, doc: dict[str, Any], name: str, label: str) -> None:
    header = ["job", "op", "IOPS", "MiB/s", "p50 us", "p99 us", "p99.9 us", "I/Os"]
    rows = []
    iops_total = bw_total = 0.0
    for j, job in enumerate(doc.get("jobs", [])):
        for op in ("read", "write"):
            o = job.get(op, {})
            if not o.get("total_ios"):
                continue
            lat = latency_object(o)
            pct = lat.get("percentile", {})
            key = "lat_ns" if lat is o.get("lat_ns") else "clat_ns"
            row = [Cell(str(job.get("jobname", j))), Cell(op)]
            row.append(Cell(f"{o['iops']:,.0f}", float(o["iops"]), pointer("jobs", j, op, "iops"), doc=name))
            row.append(
                Cell(f"{o['bw'] / 1024:,.1f}", float(o["bw"]), pointer("jobs", j, op, "bw"), doc=name, scale=1024)
            )
            for p in ("50.000000", "99.000000", "99.900000"):
                v = pct.get(p)
                row.append(
                    Cell(
                        f"{v / 1000:,.1f}", float(v), pointer("jobs", j, op, key, "percentile", p), doc=name, scale=1000
                    )
                    if isinstance(v, int | float)
                    else Cell("-")
                )
            row.append(
                Cell(f"{o['total_ios']:,}", float(o["total_ios"]), pointer("jobs", j, op, "total_ios"), doc=name)
            )
            rows.append(row)
            iops_total += float(o["iops"])
            bw_total += float(o["bw"]) / 1024
    rep.tables.append(Table("Per job and direction (fio's figures)", header, rows, f"From {name}; latencies µs."))
    rep.bars = {
        "iops": {label: Spread(iops_total, None, None, [iops_total])},
        "bw_mib": {label: Spread(bw_total, None, None, [bw_total])},
    }
