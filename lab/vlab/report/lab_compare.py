"""`vlab compare` results: summary.json, raw/rep<N>-<scheduler>.json (fio json+), fio's logs
(raw/rep<N>-<scheduler>_lat.log, _iops.log) and the lab's sampler series
(raw/rep<N>-<scheduler>.series.csv)."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

from vlab import stats
from vlab.report import data
from vlab.report.model import Cell, Report, Run, Spread, Table, pointer
from vlab.workloads.fio import FioError, parse_doc

KIND = "vlab compare"
RAW = re.compile(r"rep(\d+)-(.+)\.json$")


def detect(folder: Path) -> bool:
    try:
        s = json.loads((folder / "summary.json").read_text())
        return isinstance(s.get("schedulers"), dict) or s.get("kind") == "vlab-compare"
    except (OSError, ValueError, AttributeError):
        return (folder / "raw").is_dir() and any(RAW.match(p.name) for p in (folder / "raw").glob("rep*-*.json"))


def _raw_runs(folder: Path) -> list[tuple[int, str, Path]]:
    out = []
    for p in sorted((folder / "raw").glob("rep*-*.json")):
        m = RAW.match(p.name)
        if m and not p.name.endswith((".tunables.json", ".device.json")):
            out.append((int(m.group(1)), m.group(2), p))
    return out


def load(folder: Path) -> Report:
    rep = Report(KIND, "Scheduler comparison", str(folder))
    summary: dict[str, Any] | None = None
    try:
        doc = data.read_json(folder / "summary.json")
        if isinstance(doc, dict) and isinstance(doc.get("schedulers"), dict) and "baseline" in doc:
            summary = doc
            rep.files.append("summary.json")
        else:
            rep.problem("summary.json: not a vlab compare summary")
    except data.DataError as e:
        rep.problem(str(e) if (folder / "summary.json").exists() else "summary.json: missing")
    meta: dict[str, Any] = (summary or {}).get("meta", {})
    runs = _raw_runs(folder)
    labels = list(summary["schedulers"]) if summary else list(dict.fromkeys(s for _, s, _ in runs))
    repeat = int(meta.get("repeat") or max((r for r, _, _ in runs), default=0))
    rep.labels = labels
    rep.baseline = summary["baseline"] if summary else ("none" if "none" in labels else (labels or [None])[0])

    # Every run the plan had: read what exists, name what does not.
    results: dict[str, list[Any]] = {s: [] for s in labels}
    for r in range(repeat):
        for sched in stats.rotation(labels, r):
            name = stats.raw_name(r, sched)
            path = folder / "raw" / name
            if not path.exists():
                rep.problem(f"raw/{name}: missing (repetition {r + 1} of {sched})")
                continue
            try:
                doc = data.read_json(path)
                res = parse_doc(doc, f"raw/{name}")
                run = Run(sched, r + 1, data.fio_latency(doc, f"raw/{name}"))
            except (data.DataError, FioError) as e:
                rep.problem(str(e) if str(e).startswith("raw/") else f"raw/{e}")
                continue
            rep.files.append(f"raw/{name}")
            results[sched].append(res)
            _series(folder, r, sched, run, rep)
            rep.runs.append(run)
    if summary is None and any(results.values()):
        # No summary: make one from the raw files, as `vlab compare` does.
        summary = stats.summarize(results, rep.baseline or labels[0], labels)
        rep.notes.append("summary.json was missing or unreadable: the table was computed from the raw fio files")
    if summary is not None:
        _tables(rep, summary)
        _bars(rep, summary, results)
    _facts(rep, meta, summary)
    if meta and not meta.get("complete", True):
        rep.problem("the comparison did not complete: " + ("; ".join(meta.get("problems", [])) or "see console.log"))
    script = (folder / "job.sh").exists()
    if script:
        rep.notes.append("a script job: fio did not run, so there are no latency distributions or fio time series")
    if summary and summary.get("dilation", 1.0) != 1.0:
        rep.notes.append(
            f"served vsim device at dilation {summary['dilation']:g}: the table's figures are in model time; "
            "the plots' latencies and time series are fio's wall-clock figures"
        )
    rep.notes.append("absolute figures come from an emulated machine (QEMU): compare ratios, not numbers")
    return rep


def _series(folder: Path, r: int, sched: str, run: Run, rep: Report) -> None:
    stem = stats.raw_name(r, sched).removesuffix(".json")
    for suffix, metric, scale in (("_iops.log", "iops", 1.0), ("_lat.log", "lat_us", 1e-3)):
        path = folder / "raw" / (stem + suffix)
        if not path.exists():
            continue
        try:
            run.series += data.fio_log(path, metric, scale)
            rep.files.append(f"raw/{path.name}")
        except (data.DataError, OSError) as e:
            rep.problem(f"raw/{e}")
    path = folder / "raw" / (stem + ".series.csv")
    if path.exists():
        try:
            run.series += data.device_series(path)
            rep.files.append(f"raw/{path.name}")
        except data.DataError as e:
            rep.problem(f"raw/{e}")


def _tables(rep: Report, summary: dict[str, Any]) -> None:
    header, rows = stats.table_cells(summary)
    cells = [
        [
            Cell(c.text, c.value, pointer(*c.path) if c.path else None, doc="summary.json", scale=c.scale)
            if c.value is not None
            else Cell(c.text)
            for c in row
        ]
        for row in rows
    ]
    rep.tables.append(
        Table(
            "Medians over the repetitions",
            header,
            cells,
            f"Spread: half the min-max range of IOPS over the repetitions. Ratios: medians over the baseline's "
            f"({summary['baseline']}). Latencies: fio's total latency percentiles, µs.",
        )
    )


def _bars(rep: Report, summary: dict[str, Any], results: dict[str, list[Any]]) -> None:
    rep.bars = {"iops": {}, "bw_mib": {}}
    for sched, e in summary["schedulers"].items():
        per = results.get(sched, [])
        rep.bars["iops"][sched] = Spread(e["iops"]["median"], e["iops"]["min"], e["iops"]["max"], [x.iops for x in per])
        mib = [v / 1024 if v is not None else None for v in (e["bw_kib"][k] for k in ("median", "min", "max"))]
        rep.bars["bw_mib"][sched] = Spread(mib[0], mib[1], mib[2], [x.bw_kib / 1024 for x in per])
    names = {"iops": "iops", "read_p99": "read_p99_us", "write_p99": "write_p99_us", "write_amplification": "device_wa"}
    rep.ratios = {
        m: {s: e["ratio_to_baseline"].get(k) for s, e in summary["schedulers"].items()} for m, k in names.items()
    }


def _facts(rep: Report, meta: dict[str, Any], summary: dict[str, Any] | None) -> None:
    def say(key: str, value: Any) -> None:
        rep.facts.append((key, "not recorded" if value in (None, "", []) else str(value)))

    cmd = meta.get("command")
    say("command", shlex.join(cmd) if isinstance(cmd, list) else cmd)
    say("kernel", meta.get("kernel"))
    say("device", meta.get("device"))
    say("job", meta.get("job"))
    say("baseline", summary.get("baseline") if summary else rep.baseline)
    say("repetitions", meta.get("repeat"))
    orders = meta.get("orders") or []
    say("orders (rotated)", "; ".join(", ".join(o) for o in orders))
    say("run time per run", f"{meta['runtime_s']} s" if meta.get("runtime_s") else "as in the job file")
    if meta.get("sysctl"):
        say("sysctl", ", ".join(f"{k}={v}" for k, v in meta["sysctl"].items()))
    say("started", meta.get("started"))
    say("wall time", f"{meta['wall_s']} s" if meta.get("wall_s") else None)
    versions = meta.get("versions") or {}
    say("versions", ", ".join(f"{k} {v}" for k, v in versions.items()))
    if rep.title == "Scheduler comparison" and meta.get("job"):
        rep.title = f"Scheduler comparison: {meta['job']} on {meta.get('kernel', '?')}"
