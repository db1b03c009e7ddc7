"""The Veloces simulator from Python (docs/python.md).

    import vsim
    res = vsim.run({"device": {"model": "ssd", "preset": "mlc_16g"},
                    "scheduler": {"name": "veloces"},
                    "job": [{"rw": "randread", "bs": "4k", "iodepth": 32, "runtime": "50ms"}]})
    res["jobs"][0]["read"]["iops"]

A configuration is a dict of the TOML file's shape (`vsim run`'s files, docs/sim.md), or a
path to such a file (or a fio job file). `run` returns fio's JSON as `vsim run --json`
writes it; `compare` the `summary.json` of `vsim compare --out` (and the printed table as
`table`); `read_trace` iterates over a trace's records as a replay reads them. Errors are
`ConfigError`, `TraceError` and `RunError`, all `VsimError`; a run that lost I/O (bios that
can never complete) raises `LostIOError` (a `RunError`) with its results as `.result`. Sweeps and tuning on Ray:
`vsim.sweep` and `vsim.tune`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from vsim import _vsim
from vsim._vsim import ConfigError, LostIOError, RunError, TraceError, VsimError

__all__ = [
    "ConfigError",
    "LostIOError",
    "RunError",
    "TraceError",
    "TraceReader",
    "VsimError",
    "__version__",
    "compare",
    "figures",
    "read_trace",
    "run",
    "schedulers",
    "split_specs",
    "tunables",
]  # fmt: skip
__version__: str = _vsim.version()

Config = Mapping[str, Any] | str | os.PathLike[str]


def _source(config: Config, base: str | os.PathLike[str] | None) -> tuple[str, str, str]:
    """(source, kind, base) for the extension: a path, or the dict as JSON text."""
    if isinstance(config, str | os.PathLike):
        path = Path(config)
        if not path.is_file():
            raise ConfigError(f"{path}: no such configuration file")
        return str(path), "path", ""
    if not isinstance(config, Mapping):
        raise ConfigError(f"a configuration is a dict or a path, not {type(config).__name__}")
    try:
        text = json.dumps(config, allow_nan=False, default=_plain)
    except (TypeError, ValueError) as e:
        raise ConfigError(f"the configuration is not plain data (str, int, float, bool, list, dict): {e}") from e
    return text, "json", str(Path(base) if base is not None else Path.cwd())


def _plain(o: Any) -> Any:
    """json.dumps's fallback: any Mapping as a dict (a MappingProxyType, a ChainMap)."""
    if isinstance(o, Mapping):
        return dict(o)
    raise TypeError(f"{type(o).__name__} is not JSON serializable")


U64 = 1 << 64


def _u64(name: str, v: int | None, error: type[VsimError] = ConfigError) -> int | None:
    """A whole number in 0..2^64-1 (what the simulator takes), else a typed error."""
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v < U64:
        raise error(f"{name} = {v!r}: a whole number from 0 to 2^64-1")
    return v


def _lossless(f: Any, *args: Any) -> str:
    """`f(*args)`; a `LostIOError` it raises gets its results parsed as `.result`."""
    try:
        out: str = f(*args)
    except LostIOError as e:
        if len(e.args) == 2 and isinstance(e.args[1], str):
            e.result = json.loads(e.args[1])
            e.args = (e.args[0],)
        raise
    return out


def run(config: Config, *, device: str | None = None, scheduler: str | None = None, seed: int | None = None,
        runtime: str | None = None, plus: bool = False, base: str | os.PathLike[str] | None = None
        ) -> dict[str, Any]:  # fmt: skip
    """Simulate one configuration; fio's JSON (json+ with `plus`) as a dict.

    `device`, `scheduler` (spec strings, e.g. "ssd:preset=mlc_16g", "veloces:bundle_kb=256"),
    `seed` and `runtime` ("500ms") override the configuration's, as `vsim run`'s options do.
    A dict's relative paths (a trace, a fio file) are against `base` (default: the current
    directory). The simulation runs without the GIL: threads run simulations in parallel."""
    source, kind, b = _source(config, base)
    out: dict[str, Any] = json.loads(
        _lossless(_vsim.run, source, kind, b, device, scheduler, _u64("seed", seed), runtime, "fio+" if plus else "fio")
    )
    return out


def figures(config: Config, *, device: str | None = None, scheduler: str | None = None, seed: int | None = None,
            runtime: str | None = None, base: str | os.PathLike[str] | None = None) -> dict[str, Any]:  # fmt: skip
    """Simulate one configuration (as `run`); its figures as a row of `compare`'s summary has
    them: iops; read/write iops, bw_kib, p50_ns, p99_ns, p99.9_ns; write_amplification;
    energy_j; simulated_ns; unfinished_bios, lost_io; device_counters; and the scheduler
    spec, its tunables as it ran, the device, seed and wall_s. What sweeps and tuning use."""
    source, kind, b = _source(config, base)
    out: dict[str, Any] = json.loads(
        _lossless(_vsim.run, source, kind, b, device, scheduler, _u64("seed", seed), runtime, "figures")
    )
    return out


def schedulers() -> list[str]:
    """The schedulers' names (`vsim list`)."""
    return _vsim.schedulers()


def tunables(scheduler: str) -> list[dict[str, Any]]:
    """A scheduler's tunables as declared: name, default, min, max, unit ("ms", "us", "ns",
    "KiB", "sectors" or ""), help, and `sysfs`: whether it is a file of the kernel's
    queue/iosched/ (veloces's are the module's table, kernel/veloces-tunables.h; the model's
    own `hz` is not)."""
    out: list[dict[str, Any]] = json.loads(_vsim.tunables(scheduler))
    return out


def split_specs(specs: str) -> list[str]:
    """A comma-separated list of `NAME[:key=value,...]` specs split as `vsim compare
    --schedulers` splits it: an item with `=` and no `:` before it is an option of the spec
    before it ("noop,veloces:bundle_kb=256,read_expire=10" is two specs). ConfigError for
    an option before any name or an empty item."""
    return _vsim.split_specs(specs)


def compare(config: Config, schedulers: str | list[str], *, device: str | None = None,
            baseline: str | None = None, seed: int | None = None, runtime: str | None = None,
            block: str | None = None, base: str | os.PathLike[str] | None = None) -> dict[str, Any]:  # fmt: skip
    """One workload under several schedulers (in parallel), as `vsim compare`: its
    summary.json (per scheduler IOPS, bandwidth, latency percentiles, write amplification,
    energy) with the printed table as `table`. `schedulers`: a list of specs ("noop",
    "veloces:bundle_kb=256,read_expire=10"), or one string of them separated by commas, as
    the command line takes them (split_specs); ratios are against `baseline` (default: the
    first)."""
    names = split_specs(schedulers) if isinstance(schedulers, str) else list(schedulers)
    source, kind, b = _source(config, base)
    out: dict[str, Any] = json.loads(
        _lossless(_vsim.compare, source, kind, b, names, device, baseline, _u64("seed", seed), runtime, block)
    )
    return out


class TraceReader:
    """The data records of a trace (blkparse text, fio iolog, MSR, SPC, or a `vlab trace`
    database), one dict each: line (or block_ops id), time_ns, op ("read"/"write"), sync,
    sector, sectors, pid, fua, preflush, cpu, ioprio, cgroup, file ("ino:gen" or None).
    Options are a `[[trace]]` table's (format, skip_bad, max_records, offset_sectors, wrap,
    sync_writes, action, time, pid, asu_pid); `stats` counts lines, records and skips."""

    def __init__(self, path: str | os.PathLike[str], device_sectors: int | None = None, **options: Any) -> None:
        opts = [(k, _option(v)) for k, v in options.items()]
        self.path = Path(path)
        self._r = _vsim.TraceReader(str(path), opts, _u64("device_sectors", device_sectors, TraceError))

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return self

    def __next__(self) -> dict[str, Any]:
        rec: dict[str, Any] = next(self._r)
        return rec

    @property
    def stats(self) -> dict[str, Any]:
        """Counters so far: file, format, mode, lines, records, skipped_bad,
        skipped_non_data, ignored_lines, wrapped, first_bad."""
        out: dict[str, Any] = json.loads(self._r.stats_json())
        return out

    def __repr__(self) -> str:
        return f"TraceReader({str(self.path)!r})"


def _option(v: Any) -> str:
    if isinstance(v, bool):
        return "1" if v else "0"
    if isinstance(v, int | float | str):
        return str(v)
    raise TraceError(f"trace option value {v!r}: a str, int, float or bool")


def read_trace(path: str | os.PathLike[str], device_sectors: int | None = None, **options: Any) -> TraceReader:
    """An iterator over the trace's data records (see TraceReader)."""
    return TraceReader(path, device_sectors, **options)
