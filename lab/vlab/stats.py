"""Scheduler comparison: the run plan, and the statistics and table made from its results.

Everything here is pure and imports nothing of vlab but vlab.verdict (the lowest floor: vlab/__init__.py); the
guest executes the plan (vlab.machine.guest), the host reads the runs and summarises (vlab.app).
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from vlab import verdict


def rotation(schedulers: Sequence[str], repetition: int) -> list[str]:
    """Order of schedulers in `repetition` (0-based): rotated by one each time.

    Over len(schedulers) repetitions every scheduler runs once in every position,
    so drift in the emulated machine (warm caches, host load) does not favour one.
    """
    if not schedulers:
        return []
    k = repetition % len(schedulers)
    return list(schedulers[k:]) + list(schedulers[:k])


def raw_name(repetition: int, scheduler: str) -> str:
    return f"rep{repetition + 1}-{scheduler}.json"


def tunables_name(repetition: int, scheduler: str) -> str:
    """The scheduler's tunables as they were for that run (a variant's settings included)."""
    return f"rep{repetition + 1}-{scheduler}.tunables.json"


def device_name(repetition: int, scheduler: str) -> str:
    """A served vsim device's figures over that run (vlab.devices.vsimdev.delta)."""
    return f"rep{repetition + 1}-{scheduler}.device.json"


def median(values: Sequence[float]) -> float | None:
    return statistics.median(values) if values else None


@dataclass(frozen=True)
class Metric:
    """Median of one figure over the repetitions, with its spread."""

    median: float | None
    low: float | None
    high: float | None
    points: tuple[float, ...] = ()  # each repetition's value, in order

    @classmethod
    def of(cls, values: Sequence[float | None]) -> Metric:
        present = [v for v in values if v is not None]
        if not present:
            return cls(None, None, None)
        return cls(statistics.median(present), min(present), max(present), tuple(present))

    def as_json(self) -> dict[str, Any]:
        return {"median": self.median, "min": self.low, "max": self.high, "points": list(self.points)}


class OpFigures(Protocol):
    """What the statistics read of one direction of a run (vlab.workloads.fio.OpStats)."""

    @property
    def iops(self) -> float: ...
    @property
    def ios(self) -> int: ...
    @property
    def lat_p50_us(self) -> float | None: ...
    @property
    def lat_p99_us(self) -> float | None: ...
    @property
    def lat_p999_us(self) -> float | None: ...


class RunFigures(Protocol):
    """What the statistics read of one run (vlab.workloads.fio.RunResult)."""

    @property
    def read(self) -> OpFigures: ...
    @property
    def write(self) -> OpFigures: ...
    @property
    def errors(self) -> int: ...
    @property
    def iops(self) -> float: ...
    @property
    def bw_kib(self) -> float: ...


METRICS: dict[str, Callable[[RunFigures], float | None]] = {
    "iops": lambda r: r.iops,
    "bw_kib": lambda r: r.bw_kib,
    "read_iops": lambda r: r.read.iops,
    "read_ios": lambda r: r.read.ios,  # a count: the same in model time
    "write_iops": lambda r: r.write.iops,
    "read_p50_us": lambda r: r.read.lat_p50_us,
    "read_p99_us": lambda r: r.read.lat_p99_us,
    "read_p999_us": lambda r: r.read.lat_p999_us,
    "write_p50_us": lambda r: r.write.lat_p50_us,
    "write_p99_us": lambda r: r.write.lat_p99_us,
    "write_p999_us": lambda r: r.write.lat_p999_us,
}


# The served device's own figures per run (from rep*-*.device.json).
DEVICE_METRICS = ("wa", "copied_pages", "erases", "energy_j", "busy_s", "trimmed_pages")


def _in_model_time(name: str, v: float | None, dilation: float) -> float | None:
    """A fio figure measured in wall time, in the served model's time (rates times the
    dilation, latencies over it)."""
    if v is None or dilation == 1.0 or name.endswith("_ios"):
        return v
    return v / dilation if name.endswith("_us") else v * dilation


def workload_in_model_time(name: str, v: float | None, dilation: float) -> float | None:
    """A script's figure in model time, by its name's unit: rates (`_mb_s`, `_per_s`,
    `_iops`) times the dilation, times (`_s`, `_ms`, `_us`) over it, counts as they are."""
    if v is None or dilation == 1.0:
        return v
    if name.endswith(("_mb_s", "_per_s", "_iops")):
        return v * dilation
    if name.endswith(("_s", "_ms", "_us")):
        return v / dilation
    return v


def summarize(
    results: Mapping[str, Sequence[RunFigures]],
    baseline: str,
    order: Sequence[str],
    device: dict[str, list[dict[str, Any]]] | None = None,
    dilation: float = 1.0,
) -> dict[str, Any]:
    """Per scheduler: median, min and max of every metric, and ratios of medians to `baseline`.

    With `dilation` (a served vsim device) fio's figures are turned into model time;
    `device` adds the device's own figures per run (WA, erases, energy...)."""
    out: dict[str, Any] = {"baseline": baseline, "schedulers": {}, "dilation": dilation}
    medians: dict[str, dict[str, Metric]] = {}
    for sched in order:
        runs = results.get(sched, [])
        medians[sched] = {
            name: Metric.of([_in_model_time(name, f(r), dilation) for r in runs]) for name, f in METRICS.items()
        }
        if device is not None:
            for name in DEVICE_METRICS:
                medians[sched][f"device_{name}"] = Metric.of([d.get(name) for d in device.get(sched, [])])
            medians[sched]["device_busy_share"] = Metric.of([busy_share(d) for d in device.get(sched, [])])
            # A script job's own figures (`vlab-metric NAME VALUE`), as workload_NAME.
            for key in sorted({k for d in device.get(sched, []) for k in d if k.startswith("workload_")}):
                medians[sched][key] = Metric.of(
                    [workload_in_model_time(key, d.get(key), dilation) for d in device.get(sched, [])]
                )
    base = medians.get(baseline)
    for sched in order:
        entry: dict[str, Any] = {
            "repetitions": len(results.get(sched, [])),
            "errors": sum(r.errors for r in results.get(sched, [])),
        }
        for name, m in medians[sched].items():
            entry[name] = m.as_json()
        ratios: dict[str, float | None] = {}
        for name, m in medians[sched].items():
            b = base[name].median if base and name in base else None
            ratios[name] = m.median / b if m.median is not None and b else None
        entry["ratio_to_baseline"] = ratios
        out["schedulers"][sched] = entry
    out["warnings"] = idle_device_warnings(out)
    return out


def busy_share(device: dict[str, Any]) -> float | None:
    """The share of a run's model time the served device had a request: over fio's measured
    window where the run's samples give it (`window_busy_s` / `window_model_s`: ramp and
    start-up left out), else between the counters read before and after the run."""
    busy, model = device.get("window_busy_s"), device.get("window_model_s")
    if not isinstance(busy, int | float) or not isinstance(model, int | float) or model <= 0:
        busy, model = device.get("busy_s"), device.get("model_s")
    if not isinstance(busy, int | float) or not isinstance(model, int | float) or model <= 0:
        return None
    return float(busy) / float(model)


def two_digits_up(d: float) -> float:
    """`d` (> 0) rounded up to two significant digits (exact values stay)."""
    digits = 1 - math.floor(math.log10(d))  # decimals that keep two significant digits
    return float(round(math.ceil(round(d * 10**digits, 9)) / 10**digits, max(digits, 0)))


def dilation_for_busy(dilation: float, share: float, target: float = 0.9) -> float:
    """The dilation at which a device busy `share` of model time at `dilation` would be busy
    `target`, if its idle time is the guest's turnaround (wall time, so it shrinks in model
    time as 1/dilation): idle/busy = (1 - share)/share now, (1 - target)/target wanted.
    Rounded up to two significant digits. (Served sd_a1 under a read-beside-writes flood,
    docs/notebooks/benchmarks.md section 7: 32 % at 15 suggests 290, 130 for 80 %; 200 gave 72-85 %.)"""
    if not 0 < share < 1:
        return dilation
    return two_digits_up(dilation * ((1 - share) / share) / ((1 - target) / target))


def idle_device_warnings(summary: dict[str, Any]) -> list[str]:
    """Where a served device was busy less than verdict.BUSY_MIN of the model time (median over the
    runs): the guest set the pace there, and no scheduler could matter much. Each says the
    dilation that would make the device the bottleneck (dilation_for_busy)."""
    out = []
    dilation = float(summary.get("dilation") or 1.0)
    for sched, entry in summary.get("schedulers", {}).items():
        share = (entry.get("device_busy_share") or {}).get("median")
        if share is not None and share < verdict.BUSY_MIN:
            out.append(
                f"{sched}: the served device was busy {100 * share:.0f} % of model time (below "
                f"{100 * verdict.BUSY_MIN:.0f} %): the guest, not the device, set the pace; at dilation {dilation:g} "
                f"try dilation={dilation_for_busy(dilation, share):g} (or dilation=auto, which raises it "
                "under the job's own load within auto_budget_s), or a lighter load; verdicts exclude this cell"
            )
    return out


def _fmt(v: float | None, scale: float = 1.0, digits: int = 0) -> str:
    return "-" if v is None else f"{v / scale:,.{digits}f}"


def _spread(m: dict[str, float | None]) -> str:
    lo, hi, med = m["min"], m["max"], m["median"]
    if lo is None or hi is None or not med:
        return "-"
    return f"±{(hi - lo) / 2 / med * 100:.0f}%"


@dataclass(frozen=True)
class TableCell:
    """One cell of the comparison table: its text and, for a figure, where it is in
    summary.json (a path of keys) and the scale its text is shown at (value / scale)."""

    text: str
    value: float | None = None
    path: tuple[str, ...] | None = None
    scale: float = 1.0


LATENCY_COLUMNS = [(op, p) for op in ("read", "write") for p in ("p50", "p99", "p999")]


def table_cells(summary: dict[str, Any]) -> tuple[list[str], list[list[TableCell]]]:
    """Header and one row per scheduler: medians over repetitions, spread as half the
    min-max range, ratios to the baseline; every figure with its place in `summary`."""
    base = summary["baseline"]
    header = [
        "scheduler",
        "IOPS",
        "spread",
        "MiB/s",
        *(f"{op} lat {p.replace('p999', 'p99.9')} us" for op, p in LATENCY_COLUMNS),
        f"IOPS/{base}",
        f"read p99/{base}",
        f"write p99/{base}",
        "errors",
    ]
    has_dev = any(e.get("device_wa", {}).get("median") is not None for e in summary["schedulers"].values())
    if has_dev:
        header += ["device WA", f"WA/{base}", "erases", "energy J"]
    work = sorted({k for e in summary["schedulers"].values() for k in e if k.startswith("workload_")})
    header += [k.removeprefix("workload_") for k in work]
    rows = []
    for sched, e in summary["schedulers"].items():
        r = e["ratio_to_baseline"]

        def med(name: str, scale: float = 1.0, digits: int = 0, e: dict[str, Any] = e, s: str = sched) -> TableCell:
            v = e[name]["median"] if name in e else None
            return TableCell(_fmt(v, scale, digits), v, ("schedulers", s, name, "median"), scale)

        def ratio(name: str, r: dict[str, Any] = r, s: str = sched) -> TableCell:
            v = r.get(name)
            return TableCell(_fmt(v, digits=2), v, ("schedulers", s, "ratio_to_baseline", name))

        row = [
            TableCell(sched),
            med("iops"),
            TableCell(_spread(e["iops"])),
            med("bw_kib", 1024, 1),
            *(med(f"{op}_{p}_us") for op, p in LATENCY_COLUMNS),
            ratio("iops"),
            ratio("read_p99_us"),
            ratio("write_p99_us"),
            TableCell(str(e["errors"]), e["errors"], ("schedulers", sched, "errors")),
        ]
        if has_dev:
            row += [
                med("device_wa", digits=2),
                ratio("device_wa"),
                med("device_erases"),
                med("device_energy_j", digits=2),
            ]
        row += [med(k, digits=2) if k in e else TableCell("-") for k in work]
        rows.append(row)
    return header, rows


def table_rows(summary: dict[str, Any]) -> list[list[str]]:
    """The table as text, each direction's latency percentiles in one column (p50/p99/p99.9)."""
    header, rows = table_cells(summary)
    first = header.index("read lat p50 us")

    def join(cells: list[str]) -> list[str]:
        lat = [cells[first + i : first + i + 3] for i in (0, 3)]
        return [*cells[:first], *("/".join(x) for x in lat), *cells[first + 6 :]]

    head = join(header)
    head[first : first + 2] = ["read lat p50/p99/p99.9 us", "write lat p50/p99/p99.9 us"]
    return [head, *(join([c.text for c in row]) for row in rows)]


def format_table(summary: dict[str, Any]) -> str:
    """The table for a terminal."""
    rows = table_rows(summary)
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = []
    for n, row in enumerate(rows):
        cells = [c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths, strict=True))]
        lines.append("  ".join(cells))
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def format_report(summary: dict[str, Any]) -> str:
    """A Markdown report of one comparison: what ran, the table, and where the raw data is."""
    meta = summary.get("meta", {})
    rows = table_rows(summary)
    lines = [
        f"# Scheduler comparison: {meta.get('job', '?')} on {meta.get('kernel', '?')}",
        "",
        f"- device: `{meta.get('device', '?')}`",
        f"- repetitions: {meta.get('repeat', '?')} (order rotated each time: "
        + "; ".join(", ".join(o) for o in meta.get("orders", []))
        + ")",
        f"- run time per run: {str(meta['runtime_s']) + ' s' if meta.get('runtime_s') else 'as in the job file'}; "
        f"started {meta.get('started', '?')}",
        f"- figures are medians over repetitions; spread is half the min-max range of IOPS; "
        f"ratios are medians divided by the baseline's ({summary['baseline']})",
        "- absolute figures come from an emulated machine (QEMU): compare ratios, not numbers",
    ]
    if summary.get("dilation", 1.0) != 1.0:
        lines.append(
            f"- served vsim device, dilation {summary['dilation']:g}: IOPS, MiB/s and latencies are in model "
            "time (wall-time figures times or over the dilation); device WA, erases and energy are the "
            "model's counters over each run (`raw/*.device.json`)"
        )
    if not meta.get("complete", True):
        lines.append(f"- **incomplete run**: {'; '.join(meta.get('problems', [])) or 'see console.log'}")
    lines += ["", "| " + " | ".join(rows[0]) + " |", "|" + "---|" * len(rows[0])]
    lines += ["| " + " | ".join(r) + " |" for r in rows[1:]]
    lines += ["", "Raw fio JSON: `raw/`; summary: `summary.json`; fio job as run: `job.fio`.", ""]
    return "\n".join(lines)


def write_summary(path: Path, summary: dict[str, Any]) -> None:
    path.write_text(json.dumps(summary, indent=2, sort_keys=False) + "\n")


def format_overview(summaries: dict[str, dict[str, Any]], baseline: str) -> str:
    """Several jobs' comparisons from one boot side by side, as Markdown: per job and
    scheduler, the median IOPS and read p99 with their min-max range, and the ratios of
    medians (IOPS, read p99, write IOPS) to `baseline`'s."""

    def fig(entry: dict[str, Any], key: str, scale: float, digits: int) -> str:
        m = entry.get(key) or {}
        if m.get("median") is None:
            return "-"
        return f"{m['median'] / scale:,.{digits}f} ({m['min'] / scale:,.{digits}f}-{m['max'] / scale:,.{digits}f})"

    def ratio(entry: dict[str, Any], key: str) -> str:
        r = (entry.get("ratio_to_baseline") or {}).get(key)
        return "-" if r is None else f"{r:.2f}"

    names = list(summaries)
    order: list[str] = []
    for s in summaries.values():
        order += [k for k in s.get("schedulers", {}) if k not in order]
    head = ["scheduler"]
    for name in names:
        head += [f"{name}: IOPS (range)", f"IOPS/{baseline}", "read p99 ms (range)", f"p99/{baseline}",
                 f"writes/{baseline}"]  # fmt: skip
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for sched in order:
        row = [sched]
        for name in names:
            e = summaries[name].get("schedulers", {}).get(sched, {})
            row += [fig(e, "iops", 1, 0), ratio(e, "iops"), fig(e, "read_p99_us", 1000, 2), ratio(e, "read_p99_us"),
                    ratio(e, "write_iops")]  # fmt: skip
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines) + "\n"
