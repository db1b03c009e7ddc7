"""Reading the raw data behind a report: fio JSON (json+ histograms), fio's logs, the
simulator's and the lab's CSV time series; and thinning long series for plotting.

Every reader raises `DataError` naming the file (and line, where it has one), so a report
can say what it could not read and go on with the rest.
"""

from __future__ import annotations

import csv
import json
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from vlab.report.model import OPS, Floats, Latency, Series
from vlab.workloads.fio import latency_object

# fio's log files are read in chunks of this many bytes (a 10 M-line log is ~300 MB).
CHUNK = 32 << 20


class DataError(Exception):
    pass


def read_json(path: Path) -> Any:
    try:
        text = path.read_text(errors="replace")
    except OSError as e:
        raise DataError(f"{path.name}: cannot read ({e.strerror})") from e
    start = text.find("{") if not text.lstrip().startswith("[") else text.find("[")
    if start < 0:
        raise DataError(f"{path.name}: no JSON document")
    try:
        # Text after the document (a tool's closing line) is not part of it.
        return json.JSONDecoder().raw_decode(text, start)[0]
    except ValueError as e:
        raise DataError(f"{path.name}: corrupt JSON ({e})") from e


def fio_latency(doc: Any, source: str) -> dict[str, Latency]:
    """Per direction, the latency distribution of a fio JSON document (all jobs merged:
    histograms add up; percentiles of several jobs cannot, the first job's are used)."""
    try:
        jobs = doc["jobs"]
        out: dict[str, Latency] = {}
        for op in OPS:
            parts: list[Latency] = []
            for job in jobs:
                o = job[op]
                ios = int(o.get("total_ios", 0) or 0)
                lat = latency_object(o)
                if ios <= 0 or not lat:
                    continue
                bins = lat.get("bins")
                if isinstance(bins, dict) and bins:
                    items = sorted((float(k), float(v)) for k, v in bins.items())
                    values = np.array([k for k, _ in items])
                    weights = np.array([v for _, v in items])
                    parts.append(Latency(values, weights, "histogram", ios))
                    continue
                pct = lat.get("percentile") or {}
                points = sorted((float(p), float(v)) for p, v in pct.items() if float(v) > 0)
                if points:
                    probs = np.array([p / 100.0 for p, _ in points])
                    values = np.array([v for _, v in points])
                    weights = np.diff(np.concatenate([[0.0], probs]))
                    parts.append(Latency(values, weights, "percentiles", ios))
            merged = Latency.merge(parts)
            if merged is not None:
                out[op] = merged
        return out
    except (KeyError, TypeError, ValueError) as e:
        raise DataError(f"{source}: not fio JSON output ({type(e).__name__}: {e})") from e


def _log_rows(path: Path) -> Iterator[Floats]:
    """fio log rows (time ms, value, direction, ...) as float arrays, a chunk at a time.

    The fast path parses a chunk with numpy; a chunk that does not parse as rows of equal
    width is read line by line, so the error names the line."""
    width = 0
    line_no = 0
    with path.open("rb") as f:
        rest = b""
        while True:
            chunk = f.read(CHUNK)
            data = rest + chunk
            if not data:
                break
            cut = data.rfind(b"\n") + 1 if chunk else len(data)
            block, rest = data[:cut], data[cut:]
            lines = block.count(b"\n") + (0 if block.endswith(b"\n") else 1)
            if not block.strip():
                line_no += lines
                if not chunk:
                    break
                continue
            if width == 0:
                width = len(block.split(b"\n", 1)[0].split(b","))
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # a malformed chunk: the slow path names the line
                    text = block.rstrip(b"\n").replace(b"\n", b",").decode("ascii", "replace")
                    flat = np.fromstring(text, sep=",")
            except ValueError:
                flat = np.empty(0)
            if len(flat) == lines * width:
                yield flat.reshape(-1, width)
            else:
                rows = []
                for i, raw in enumerate(block.split(b"\n")):
                    if not raw.strip():
                        continue
                    try:
                        fields = [float(x) for x in raw.split(b",")[:3]]
                    except ValueError:
                        raise DataError(f"{path.name}:{line_no + i + 1}: not a fio log line: {raw[:60]!r}") from None
                    if len(fields) < 3:
                        raise DataError(f"{path.name}:{line_no + i + 1}: not a fio log line: {raw[:60]!r}")
                    rows.append(fields)
                yield np.array(rows).reshape(-1, 3)
            line_no += lines
            if not chunk:
                break


def fio_log(path: Path, metric: str, scale: float = 1.0) -> list[Series]:
    """A fio log (write_lat_log / write_iops_log, one file for all jobs: per_job_logs=0) as
    one series per direction: time (s) and value times `scale`."""
    parts = list(_log_rows(path))
    if not parts:
        return []
    cols = min(p.shape[1] for p in parts)
    rows = np.concatenate([p[:, :cols] for p in parts])
    out = []
    for d, op in enumerate(OPS):
        sel = rows[rows[:, 2] == d]
        if len(sel):
            order = np.argsort(sel[:, 0], kind="stable")
            out.append(Series(metric, op, sel[order, 0] / 1000.0, sel[order, 1] * scale))
    return out


def read_csv(path: Path) -> tuple[list[str], list[list[str]]]:
    """Header and rows of a CSV file; a row of the wrong width names its line."""
    try:
        with path.open(newline="") as f:
            reader = csv.reader(f)
            header = next(reader, None)
            if not header:
                raise DataError(f"{path.name}: empty")
            rows = []
            for row in reader:
                if not row:
                    continue
                if len(row) != len(header):
                    raise DataError(f"{path.name}:{reader.line_num}: {len(row)} fields, the header has {len(header)}")
                rows.append(row)
            return header, rows
    except OSError as e:
        raise DataError(f"{path.name}: cannot read ({e.strerror})") from e
    except (csv.Error, UnicodeDecodeError) as e:
        raise DataError(f"{path.name}: not CSV ({e})") from e


def numeric_columns(path: Path) -> dict[str, Floats]:
    """A CSV of numbers (a header, then one row per interval) as columns; an empty field
    (a figure not sampled in that row) is NaN."""
    header, rows = read_csv(path)
    values = np.full((len(rows), len(header)), np.nan)
    for i, r in enumerate(rows):
        for j, x in enumerate(r):
            if x.strip():
                try:
                    values[i, j] = float(x)
                except ValueError:
                    raise DataError(
                        f"{path.name}:{i + 2}: field {j + 1} ({header[j]}) is not a number: {x!r}"
                    ) from None
    return {name: values[:, i] for i, name in enumerate(header)}


def vsim_job_series(path: Path) -> list[Series]:
    """vsim's `--csv` (time_s,job,op,iops,mib_s,mean_lat_us): all jobs added per interval
    and direction (latency: the IOPS-weighted mean)."""
    header, rows = read_csv(path)
    need = ("time_s", "op", "iops", "mean_lat_us")
    if any(n not in header for n in need):
        raise DataError(f"{path.name}: not vsim's time series (columns {','.join(header)})")
    ix = {n: header.index(n) for n in header}
    acc: dict[str, dict[float, list[float]]] = {op: {} for op in OPS}
    for n, r in enumerate(rows, start=2):
        op = r[ix["op"]]
        if op not in acc:
            continue
        try:
            t, iops, lat = float(r[ix["time_s"]]), float(r[ix["iops"]]), float(r[ix["mean_lat_us"]])
        except ValueError:
            raise DataError(f"{path.name}:{n}: a field is not a number") from None
        slot = acc[op].setdefault(t, [0.0, 0.0])
        slot[0] += iops
        slot[1] += iops * lat
    out = []
    for op in OPS:
        if not acc[op]:
            continue
        ts = sorted(acc[op])
        when = np.array(ts)
        rate = np.array([acc[op][x][0] for x in ts])
        mean = np.array([acc[op][x][1] / acc[op][x][0] if acc[op][x][0] else 0.0 for x in ts])
        out += [Series("iops", op, when, rate), Series("lat_us", op, when, mean)]
    return out


# Device series: the columns both the simulator's device CSV and the lab's sampler write,
# read as levels (as sampled) or as rates (per-second differences of cumulative counters).
LEVELS = ("in_flight", "queued", "write_amplification")
RATES = ("gc_page_copies", "merge_page_copies", "erases")


def _fill_gaps(t: Floats, v: Floats, step: float) -> tuple[Floats, Floats]:
    """Zeros where rows are missing: a gap longer than 1.5 steps gets a 0 one step after
    the row before it and one step before the row after it."""
    gaps = np.flatnonzero(np.diff(t) > 1.5 * step)
    if not len(gaps):
        return t, v
    zeros = np.zeros(2 * len(gaps))
    tt = np.concatenate([t, t[gaps] + step, t[gaps + 1] - step])
    vv = np.concatenate([v, zeros])
    order = np.argsort(tt, kind="stable")
    return tt[order], vv[order]


def device_series(path: Path, idle_gaps: bool = False) -> list[Series]:
    """A device series: levels as they are, cumulative counters as per-second rates.

    With `idle_gaps` (the simulator's device CSV, which leaves idle intervals out: nothing
    held, no counter changed), a missing interval is drawn as zero, and a counter's change
    after a gap is the last interval's alone, not spread over the gap."""
    cols = numeric_columns(path)
    t = cols.get("time_s")
    if t is None:
        raise DataError(f"{path.name}: no time_s column")
    dts = np.diff(t)
    step = float(dts[dts > 0].min()) if idle_gaps and (dts > 0).any() else 0.0
    out = []
    for name in LEVELS:
        if name in cols:
            ok = ~np.isnan(cols[name])
            ts, vs = t[ok], cols[name][ok]
            if step and name != "write_amplification":
                ts, vs = _fill_gaps(ts, vs, step)
            out.append(Series(name, "", ts, vs))
    for name in RATES:
        if name not in cols:
            continue
        ok = ~np.isnan(cols[name])
        ts, vs = t[ok], cols[name][ok]
        if len(ts) > 1:
            dt = np.diff(ts)
            if step:
                dt = np.where(dt > 1.5 * step, step, dt)
            rate = np.divide(np.diff(vs), dt, out=np.zeros(len(dt)), where=dt > 0)
            rt, rv = ts[1:], rate
            if step:
                rt, rv = _fill_gaps(rt, rv, step)
            out.append(Series(name, "", rt, rv))
    return [s for s in out if len(s.t_s)]


def downsample(t: Floats, v: Floats, points: int) -> tuple[Floats, Floats]:
    """At most about `points` points that keep every spike: the series is cut into
    points/2 buckets, and each gives its lowest and highest value, in time order."""
    n = len(t)
    if n <= points or points < 4:
        return t, v
    buckets = points // 2
    edges = np.linspace(0, n, buckets + 1).astype(np.int64)
    idx_lo = np.empty(buckets, dtype=np.int64)
    idx_hi = np.empty(buckets, dtype=np.int64)
    # Where in each bucket the extremes are, to keep them in time order.
    for b in range(buckets):
        seg = v[edges[b] : edges[b + 1]]
        idx_lo[b] = edges[b] + int(np.argmin(seg))
        idx_hi[b] = edges[b] + int(np.argmax(seg))
    idx = np.sort(np.unique(np.concatenate([idx_lo, idx_hi])))
    return t[idx], v[idx]
