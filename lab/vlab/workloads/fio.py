"""fio: preparing a job file for a device, validating it, and reading fio's JSON output."""

from __future__ import annotations

import json
import subprocess
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

# Keys the lab owns in a compared job: the device under test and, when asked, the run time.
_TARGET_KEYS = {"filename", "directory", "filename_format", "allow_file_create"}
_RUNTIME_KEYS = {"runtime", "time_based"}

PERCENTILES = ("50.000000", "99.000000", "99.900000")


class FioError(Exception):
    """fio rejected a job or produced output the lab cannot read."""


def prepare_job(text: str, filename: str, runtime_s: float | None = None) -> str:
    """Return `text` aimed at `filename`, with `runtime_s` forced if given.

    fio lets a job file override options given on its command line, so the lab
    rewrites the file: it drops the keys it owns from every section and states
    them in a leading [global] section.
    """
    owned = _TARGET_KEYS | (_RUNTIME_KEYS if runtime_s is not None else set())
    kept = []
    for line in text.splitlines():
        key = line.strip().split("=", 1)[0].strip().lower()
        if key in owned and not line.lstrip().startswith(("#", ";", "[")):
            continue
        kept.append(line)
    # lat_percentiles: report total latency (submission + completion) percentiles. A
    # request that waits for a tag waits inside io_submit, which clat leaves out.
    # allow_file_create=0: a device that has gone away (a served device whose server died
    # before fio opened it) is an error, not a regular file fio creates in /dev and measures
    # (seen in the served suite: a 120-s job ran on /dev's tmpfs and passed).
    head = ["; added by vlab", "[global]", f"filename={filename}", "allow_file_create=0", "lat_percentiles=1"]
    if runtime_s is not None:
        head += [f"runtime={runtime_s:g}s", "time_based=1"]
    return "\n".join([*head, "", *kept]) + "\n"


def validate_job(path: Path, fio: str = "fio") -> None:
    """Raise FioError with fio's own message if fio cannot parse the job file."""
    try:
        proc = subprocess.run([fio, "--parse-only", str(path)], capture_output=True, text=True, check=False)
    except FileNotFoundError as e:
        raise FioError(f"{fio} not found: install Debian's fio (`make deps` does it)") from e
    message = (proc.stderr + proc.stdout).strip()
    if proc.returncode != 0 or ("job" in message and "dropped" in message):
        raise FioError(f"fio rejected {path}:\n{message}")


@dataclass(frozen=True)
class OpStats:
    """One direction of one fio run."""

    iops: float
    bw_kib: float  # KiB/s, as fio reports `bw`
    ios: int
    # Total latency (fio's lat_ns: submission + completion) where fio reported its
    # percentiles (lat_percentiles=1), else completion latency (clat_ns).
    lat_p50_us: float | None
    lat_p99_us: float | None
    lat_p999_us: float | None


@dataclass(frozen=True)
class RunResult:
    """One fio run (all jobs of the file together)."""

    read: OpStats
    write: OpStats
    errors: int

    @property
    def iops(self) -> float:
        return self.read.iops + self.write.iops

    @property
    def bw_kib(self) -> float:
        return self.read.bw_kib + self.write.bw_kib

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def latency_object(op: dict[str, Any]) -> dict[str, Any]:
    """The latency fio measured percentiles (and json+ `bins`) of: total latency (lat_ns)
    where the job asked for lat_percentiles, else completion latency (clat_ns)."""
    for key in ("lat_ns", "clat_ns"):
        obj = op.get(key)
        if isinstance(obj, dict) and obj.get("percentile"):
            return obj
    return {}


def _latency(op: dict[str, Any]) -> dict[str, Any]:
    """Percentiles of total latency if fio gave them, else of completion latency."""
    pct: dict[str, Any] = latency_object(op).get("percentile", {})
    return pct


def _op_stats(jobs: list[dict[str, Any]], op: str) -> OpStats:
    iops = sum(float(j[op]["iops"]) for j in jobs)
    bw = sum(float(j[op]["bw"]) for j in jobs)
    ios = sum(int(j[op].get("total_ios", 0)) for j in jobs)
    pct: list[float | None] = []
    for key in PERCENTILES:
        # Percentiles cannot be merged across separately reported jobs; the lab runs
        # fio with --group_reporting so there is one, otherwise the worst is kept.
        values = [
            float(_latency(j[op])[key]) / 1000.0
            for j in jobs
            if int(j[op].get("total_ios", 0)) > 0 and key in _latency(j[op])
        ]
        pct.append(max(values) if values else None)
    return OpStats(iops, bw, ios, pct[0], pct[1], pct[2])


def parse_output(text: str, source: str = "fio output") -> RunResult:
    """Parse fio's `--output-format=json` text."""
    # fio may print warnings before the JSON document.
    start = text.find("{")
    if start < 0:
        raise FioError(f"{source}: no JSON document in fio output")
    try:
        doc = json.loads(text[start:])
    except ValueError as e:
        raise FioError(f"{source}: not fio JSON output ({type(e).__name__}: {e})") from e
    return parse_doc(doc, source)


def parse_doc(doc: Any, source: str = "fio output") -> RunResult:
    """A fio JSON document already read (json or json+)."""
    try:
        jobs = doc["jobs"]
        if not jobs:
            raise FioError(f"{source}: fio reported no jobs")
        return RunResult(
            read=_op_stats(jobs, "read"),
            write=_op_stats(jobs, "write"),
            errors=sum(int(j.get("error", 0)) for j in jobs),
        )
    except (ValueError, KeyError, TypeError) as e:
        raise FioError(f"{source}: not fio JSON output ({type(e).__name__}: {e})") from e


def parse_file(path: Path) -> RunResult:
    return parse_output(path.read_text(errors="replace"), str(path))
