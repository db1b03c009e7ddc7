"""`vsim sweep SPEC.toml`: a grid or a random search over a simulation's parameters, run on
Ray (an embedded local Ray on every core by default, a cluster with --address), or with
--serial on one plain process per core (the baseline Ray is measured against).

A spec (docs/python.md) is a base configuration (`config = "run.toml"`, or a `[base]` table
of the same shape), fixed overrides (`[set]`), and axes: `[grid]` (every combination) and
`[search]` (`samples` random points from `[search.space]`, each axis a list to choose from
or `{min, max, log, int}`), crossed. An axis is a dotted path into the configuration
(`scheduler.read_expire`, `job.0.iodepth`, `seed`); `device` and `scheduler` also take spec
strings (`ssd:preset=mlc_16g`, `veloces:bundle_kb=256`).

Each point's result goes into OUT/results.sqlite as it arrives, keyed by the SHA-256 of the
point's full configuration: a rerun skips the points already done (and retries the failed
ones); a failed point is recorded with its error and the rest go on. At the end: one table
(OUT/results.csv, every point of the spec), OUT/summary.json and the HTML report.
"""

from __future__ import annotations

import argparse
import copy
import csv
import hashlib
import itertools
import json
import math
import multiprocessing as mp
import os
import queue
import random
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import time
import tomllib
import traceback
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import vsim

SUMMARY = "summary.json"
DB = "results.sqlite"
TABLE = "results.csv"
# The figures kept per point (the table's columns), as paths into vsim.figures()'s dict.
COLUMNS = ["iops", "read.iops", "read.bw_kib", "read.p50_ns", "read.p99_ns", "read.p99.9_ns", "write.iops",
           "write.bw_kib", "write.p50_ns", "write.p99_ns", "write.p99.9_ns", "write_amplification", "energy_j",
           "simulated_ns", "unfinished_bios", "wall_s"]  # fmt: skip


class SpecError(vsim.ConfigError):
    """The sweep's spec is not usable (named file: what is wrong)."""


@dataclass
class Dist:
    """A search axis: a list to choose from, or a range (log-uniform with log, whole with int)."""

    choices: list[Any] | None = None
    low: float = 0.0
    high: float = 0.0
    log: bool = False
    integer: bool = False

    def sample(self, rng: random.Random) -> Any:
        if self.choices is not None:
            return rng.choice(self.choices)
        if self.log:
            v = math.exp(rng.uniform(math.log(self.low), math.log(self.high)))
        else:
            v = rng.uniform(self.low, self.high)
        return round(v) if self.integer else v


@dataclass
class Spec:
    path: str
    name: str
    base: dict[str, Any]
    base_dir: str
    fixed: dict[str, Any] = field(default_factory=dict)
    grid: dict[str, list[Any]] = field(default_factory=dict)
    space: dict[str, Dist] = field(default_factory=dict)
    samples: int = 0
    search_seed: int = 1
    objective: str = "read.p99_ns"
    minimize: bool = True


@dataclass
class Point:
    key: str
    values: dict[str, Any]
    config: dict[str, Any]


def _dist(where: str, v: Any) -> Dist:
    if isinstance(v, list):
        if not v:
            raise SpecError(f"{where}: an empty list")
        return Dist(choices=v)
    if isinstance(v, dict):
        unknown = set(v) - {"min", "max", "log", "int"}
        if unknown or not {"min", "max"} <= set(v):
            raise SpecError(f"{where}: a range is {{min, max, log, int}} (got keys {sorted(v)})")
        lo, hi = v["min"], v["max"]
        if not all(isinstance(x, int | float) and not isinstance(x, bool) for x in (lo, hi)) or lo > hi:
            raise SpecError(f"{where}: min and max must be numbers with min <= max")
        if v.get("log") and lo <= 0:
            raise SpecError(f"{where}: a log range needs min > 0")
        return Dist(low=float(lo), high=float(hi), log=bool(v.get("log")), integer=bool(v.get("int")))
    raise SpecError(f"{where}: a list of values or a range {{min, max}}")


def read_spec(p: Path, known: set[str]) -> dict[str, Any]:
    """A spec file's TOML table (of sweep or tune), its keys among `known`."""
    try:
        t = tomllib.loads(p.read_text())
    except OSError as e:
        raise SpecError(f"{p}: {e.strerror}") from None
    except tomllib.TOMLDecodeError as e:
        raise SpecError(f"{p}: invalid TOML: {e}") from None
    if set(t) - known:
        raise SpecError(f"{p}: unknown key(s) {sorted(set(t) - known)} (known: {sorted(known)})")
    return t


def load_spec(path: str | os.PathLike[str]) -> Spec:
    p = Path(path)
    t = read_spec(p, {"name", "config", "base", "set", "grid", "search", "objective", "minimize"})
    if ("config" in t) == ("base" in t):
        raise SpecError(f'{p}: give the base configuration as config = "FILE.toml" or as a [base] table (one)')
    base_dir = p.parent.resolve()
    if "config" in t:
        cfg_path = (base_dir / str(t["config"])).resolve()
        try:
            base = tomllib.loads(cfg_path.read_text())
        except (OSError, tomllib.TOMLDecodeError) as e:
            raise SpecError(f"{p}: config {cfg_path}: {e}") from None
        base_dir = cfg_path.parent
    else:
        base = dict(t["base"])
    spec = Spec(str(p), str(t.get("name", p.stem)), base, str(base_dir))
    spec.fixed = dict(t.get("set", {}))
    for k, v in dict(t.get("grid", {})).items():
        if not isinstance(v, list) or not v:
            raise SpecError(f"{p}: [grid] {k}: a non-empty list of values")
        spec.grid[k] = v
    search = dict(t.get("search", {}))
    if search:
        if set(search) - {"samples", "seed", "space"}:
            raise SpecError(f"{p}: [search] takes samples, seed and [search.space]")
        spec.samples = int(search.get("samples", 0))
        spec.search_seed = int(search.get("seed", 1))
        spec.space = {k: _dist(f"{p}: [search.space] {k}", v) for k, v in dict(search.get("space", {})).items()}
        if spec.samples < 1 or not spec.space:
            raise SpecError(f"{p}: [search] needs samples >= 1 and a [search.space]")
    spec.objective = str(t.get("objective", spec.objective))
    spec.minimize = bool(t.get("minimize", True))
    if spec.objective not in COLUMNS:
        raise SpecError(f"{p}: objective {spec.objective!r} is not a figure (one of {', '.join(COLUMNS)})")
    return spec


def _component(spec: str, key: str) -> dict[str, Any]:
    """`ssd:preset=mlc_16g,op=0.07` as a [device] table (key `model`), or a [scheduler] one (`name`)."""
    name, _, opts = spec.partition(":")
    table: dict[str, Any] = {key: name}
    for kv in filter(None, opts.split(",")):
        k, sep, v = kv.partition("=")
        if not sep:
            raise SpecError(f"{spec!r}: option {kv!r} is not KEY=VALUE")
        table[k] = v
    return table


def set_path(config: dict[str, Any], path: str, value: Any) -> None:
    """Set a dotted path (`job.0.iodepth`) in a configuration; `device` and `scheduler` take
    spec strings too."""
    if path in ("device", "scheduler") and isinstance(value, str):
        config[path] = _component(value, "model" if path == "device" else "name")
        return
    node: Any = config
    parts = path.split(".")
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        if isinstance(node, list):
            if not part.isdigit() or int(part) >= len(node):
                raise SpecError(f"{path}: {part!r} is not an index of a list of {len(node)}")
            if last:
                node[int(part)] = value
            else:
                node = node[int(part)]
        elif isinstance(node, dict):
            if last:
                node[part] = value
            else:
                node = node.setdefault(part, {})
        else:
            raise SpecError(f"{path}: {'.'.join(parts[:i])} is a value, not a table or list")


def point_key(config: dict[str, Any], base_dir: str) -> str:
    """The point's identity: its whole configuration and the directory its paths are against."""
    text = json.dumps({"config": config, "base": base_dir}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def points(spec: Spec) -> list[Point]:
    """Every point of the spec, in a fixed order: the grid's combinations crossed with the
    search's samples (sample i is drawn from its own seed: adding samples keeps the others)."""
    names = list(spec.grid)
    combos = list(itertools.product(*(spec.grid[n] for n in names))) or [()]
    samples: list[dict[str, Any]] = [{}]
    if spec.samples:
        samples = []
        for i in range(spec.samples):
            rng = random.Random(f"{spec.search_seed}:{i}")
            samples.append({k: d.sample(rng) for k, d in spec.space.items()})
    out = []
    for combo in combos:
        for s in samples:
            values = {**dict(zip(names, combo, strict=True)), **s}
            cfg = copy.deepcopy(spec.base)
            for k, v in {**spec.fixed, **values}.items():
                set_path(cfg, k, v)
            out.append(Point(point_key(cfg, spec.base_dir), values, cfg))
    return out


def figure(figs: dict[str, Any], path: str) -> Any:
    """`read.p99_ns` of a figures dict (the top level first: `read.p99.9_ns` has a dot)."""
    if path in figs:
        return figs[path]
    head, _, rest = path.partition(".")
    sub = figs.get(head)
    return sub.get(rest) if isinstance(sub, dict) else None


def check_keys(spec: Spec, pts: list[Point]) -> None:
    """Before any point runs: the first point's configuration names only what the simulator
    knows (a misspelled axis or [set] key fails every point the same way: say it once, as a
    spec error). A value out of range is the point's own failure, recorded when it runs."""
    if not pts:
        return
    try:
        vsim.run(pts[0].config, base=spec.base_dir, runtime="1us")
    except vsim.ConfigError as e:
        if "unknown option" in str(e) or "unsupported option" in str(e):
            raise SpecError(f"{spec.path}: {e} (a misspelled axis or [set] key? every point would fail so)") from None
    except vsim.VsimError:
        pass


def worker_name() -> str:
    """Where a point ran: host:pid, and in a Ray worker its node's id (12 digits) and IP."""
    name = f"{socket.gethostname()}:{os.getpid()}"
    ray = sys.modules.get("ray")
    if ray is not None and ray.is_initialized():
        try:
            node = ray.get_runtime_context().get_node_id()
            return f"{name} node {node[:12]} {ray.util.get_node_ip_address()}"
        except Exception:  # the name is informative only
            pass
    return name


def cluster_info(address: str | None) -> dict[str, Any]:
    """The Ray cluster a sweep ran on: its address (or "local") and every node's id, IP and
    CPUs."""
    ray = import_ray()
    nodes = [{"node": n["NodeID"][:12], "ip": n.get("NodeManagerAddress"), "cpus": n.get("Resources", {}).get("CPU", 0),
              "alive": n.get("Alive")} for n in ray.nodes()]  # fmt: skip
    return {"address": address or os.environ.get("RAY_ADDRESS") or "local", "nodes": nodes}


def run_point(key: str, config: dict[str, Any], base: str) -> dict[str, Any]:
    """One point, never raising: ok with its figures, or failed with the error."""
    t0 = time.perf_counter()
    res: dict[str, Any] = {"key": key, "worker": worker_name()}
    try:
        figs = vsim.figures(config, base=base)
        res.update(status="ok", error=None, figures={c: figure(figs, c) for c in COLUMNS})
    except Exception as e:
        res.update(status="failed", error=f"{type(e).__name__}: {e}", figures=None)
    res["wall_s"] = time.perf_counter() - t0
    return res


def run_batch(items: list[tuple[str, dict[str, Any], str]]) -> list[dict[str, Any]]:
    return [run_point(*it) for it in items]


class Store:
    """OUT/results.sqlite: one row per point, written as results arrive and committed at
    least every COMMIT_S seconds (WAL, no fsync per commit: a crash loses at most the last
    second's points, which a rerun computes again)."""

    COMMIT_S = 1.0

    def __init__(self, path: Path) -> None:
        self.db = sqlite3.connect(path)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.last_commit = time.monotonic()
        self.db.execute(
            "CREATE TABLE IF NOT EXISTS points (key TEXT PRIMARY KEY, sweep TEXT, point TEXT, config TEXT, "
            "status TEXT NOT NULL, error TEXT, figures TEXT, wall_s REAL, worker TEXT, finished REAL)"
        )
        self.db.commit()

    def done(self) -> set[str]:
        return {r[0] for r in self.db.execute("SELECT key FROM points WHERE status = 'ok'")}

    def record(self, sweep: str, pts: dict[str, Point], results: Iterable[dict[str, Any]]) -> None:
        rows = []
        for r in results:
            p = pts[r["key"]]
            rows.append((r["key"], sweep, json.dumps(p.values), json.dumps(p.config), r["status"], r["error"],
                         json.dumps(r["figures"]) if r["figures"] is not None else None, r["wall_s"], r["worker"],
                         time.time()))  # fmt: skip
        self.db.executemany("INSERT OR REPLACE INTO points VALUES (?,?,?,?,?,?,?,?,?,?)", rows)
        if time.monotonic() - self.last_commit >= self.COMMIT_S:
            self.commit()

    def commit(self) -> None:
        self.db.commit()
        self.last_commit = time.monotonic()

    def rows(self, keys: list[str]) -> dict[str, dict[str, Any]]:
        out = {}
        for key, status, error, figs, wall, worker in self.db.execute(
            "SELECT key, status, error, figures, wall_s, worker FROM points"
        ):
            out[key] = {"status": status, "error": error, "figures": json.loads(figs) if figs else None,
                        "wall_s": wall, "worker": worker}  # fmt: skip
        return {k: out[k] for k in keys if k in out}


class Progress:
    """tqdm on a terminal; otherwise a line every 10 s and at the end (for logs)."""

    def __init__(self, total: int, quiet: bool) -> None:
        self.total, self.quiet, self.n, self.failed = total, quiet, 0, 0
        self.t0 = self.last = time.monotonic()
        self.bar: Any = None
        if not quiet and sys.stderr.isatty():
            from tqdm import tqdm

            self.bar = tqdm(total=total, unit="point", file=sys.stderr, dynamic_ncols=True)

    def update(self, results: list[dict[str, Any]]) -> None:
        self.n += len(results)
        self.failed += sum(r["status"] != "ok" for r in results)
        if self.bar is not None:
            self.bar.update(len(results))
            self.bar.set_postfix(failed=self.failed)
        elif not self.quiet and time.monotonic() - self.last >= 10:
            self.last = time.monotonic()
            self.line()

    def line(self) -> None:
        el = time.monotonic() - self.t0
        rate = self.n / el if el > 0 else 0.0
        eta = (self.total - self.n) / rate if rate > 0 else float("nan")
        print(f"sweep: {self.n}/{self.total} points, {self.failed} failed, {rate:.1f} points/s, ETA {eta:.0f} s",
              file=sys.stderr, flush=True)  # fmt: skip

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
        elif not self.quiet:
            self.line()


Sink = Callable[[list[dict[str, Any]]], None]


def _serial_worker(todo: Any, q: Any) -> None:
    while (it := todo.get()) is not None:
        q.put(run_point(*it))
    q.put(None)


def run_serial(items: list[tuple[str, dict[str, Any], str]], cpus: int, sink: Sink) -> None:
    """The baseline: one plain process per core (no Ray), each taking the next point from a
    shared queue when it has finished one (so a slower core takes fewer); results stream back
    as each point ends."""
    # fork, as a process per core is usually started; but spawn (fresh interpreters) under a
    # Ray driver, whose threads a fork would copy. Measured: spawned workers ran this
    # simulator's points ~40 % slower than forked ones (docs/notebooks/python-measurements.md, "Scale").
    ray_mod = sys.modules.get("ray")
    under_ray = ray_mod is not None and bool(getattr(ray_mod, "is_initialized", lambda: False)())
    ctx: Any = mp.get_context("spawn" if under_ray else "fork")
    todo, q = ctx.Queue(), ctx.Queue()
    for it in items:
        todo.put(it)
    for _ in range(cpus):
        todo.put(None)
    procs = [ctx.Process(target=_serial_worker, args=(todo, q), daemon=True) for _ in range(cpus)]
    for p in procs:
        p.start()
    running = len(procs)
    while running:
        try:
            r = q.get(timeout=5)
        except queue.Empty:
            if not any(p.is_alive() for p in procs):
                raise RuntimeError("the serial workers exited without finishing (see their messages)") from None
            continue
        if r is None:
            running -= 1
        else:
            sink([r])
    for p in procs:
        p.join()


def import_ray() -> Any:
    """Ray, or a ConfigError that says how to get it (it is an extra of the package)."""
    try:
        import ray
    except ImportError:
        raise vsim.ConfigError(
            "Ray is not installed: sweeps and tuning on Ray need the package's `ray` extra "
            "(pip install 'veloces-vsim[ray]'); a sweep runs without it with --jobs 1"
        ) from None
    return ray


def ray_init(address: str | None, cpus: int | None) -> float:
    """Join the cluster at `address`, else at $RAY_ADDRESS (as `ray job submit` sets it), else
    start the embedded local Ray (all cores, or `cpus`; a new one even where a cluster runs on
    this machine); returns the seconds it took."""
    ray = import_ray()
    address = address or os.environ.get("RAY_ADDRESS") or None

    t0 = time.perf_counter()
    if not ray.is_initialized():
        kw: dict[str, Any] = {"include_dashboard": False, "logging_level": "WARNING", "log_to_driver": True}
        if address is None:
            kw["num_cpus"] = cpus or os.cpu_count()
        try:
            ray.init(address=address or "local", **kw)
        except ConnectionError as e:
            auth = os.environ.get("RAY_AUTH_MODE", "")
            raise vsim.ConfigError(
                f"cannot join the Ray cluster at {address}: {e}. A cluster whose nodes run with token "
                f"authentication (RAY_AUTH_MODE=token) takes drivers that set it too, with the cluster's token "
                f"(RAY_AUTH_TOKEN, or ~/.ray/auth_token as `ray get-auth-token --generate` writes it; "
                f"RAY_AUTH_MODE here: {auth or 'unset'}); docs/python.md, 'A cluster, step by step'"
            ) from None
    return time.perf_counter() - t0


def run_ray(items: list[tuple[str, dict[str, Any], str]], batch: int | None, sink: Sink) -> int:
    """The points in batches as Ray tasks (one CPU each), at most two per CPU in flight;
    results stream back as each batch ends. A batch whose worker died fails its points.
    Returns the batch size used."""
    import ray

    cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))  # type: ignore[no-untyped-call]
    size = batch or max(1, min(64, math.ceil(len(items) / (cpus * 16))))
    task = ray.remote(num_cpus=1, max_retries=0)(run_batch)
    batches = iter([items[i : i + size] for i in range(0, len(items), size)])
    pending: dict[Any, list[tuple[str, dict[str, Any], str]]] = {}

    def submit() -> None:
        while len(pending) < 2 * cpus:
            b = next(batches, None)
            if b is None:
                return
            pending[task.remote(b)] = b

    submit()
    while pending:
        ready, _ = ray.wait(list(pending), num_returns=1)
        for ref in ready:
            b = pending.pop(ref)
            try:
                sink(ray.get(ref))
            except Exception as e:
                sink([{"key": k, "status": "failed", "error": f"worker lost: {type(e).__name__}: {e}",
                       "figures": None, "wall_s": 0.0, "worker": None} for k, _, _ in b])  # fmt: skip
        submit()
    return size


@dataclass
class Outcome:
    out: Path
    points: int
    ran: int
    skipped: int
    ok: int
    failed: int
    wall_s: float
    init_s: float
    mode: str
    cpus: int
    batch: int | None
    cluster: dict[str, Any] | None = None

    @property
    def points_per_s(self) -> float:
        return self.ran / self.wall_s if self.wall_s > 0 else 0.0


def sweep(spec: Spec | str | os.PathLike[str], out: str | os.PathLike[str], *, address: str | None = None,
          cpus: int | None = None, serial: bool = False, batch: int | None = None, quiet: bool = False,
          report: bool = True, limit: int | None = None) -> Outcome:  # fmt: skip
    """Run the spec's points not yet done into `out` (see the module's docs); returns the
    outcome (points, skipped as done before, ok, failed, wall time, points per second)."""
    if not isinstance(spec, Spec):
        spec = load_spec(spec)
    outdir = Path(out)
    outdir.mkdir(parents=True, exist_ok=True)
    pts = points(spec)
    by_key = {p.key: p for p in pts}
    if len(by_key) != len(pts):
        print(f"sweep: {len(pts) - len(by_key)} points repeat others (the same configuration): run once",
              file=sys.stderr)  # fmt: skip
    check_keys(spec, pts)
    store = Store(outdir / DB)
    done = store.done()
    done_here = [k for k in by_key if k in done]
    todo = [p for p in by_key.values() if p.key not in done][: limit if limit is not None else None]
    items = [(p.key, p.config, spec.base_dir) for p in todo]
    ncpu = cpus or os.cpu_count() or 1
    prog = Progress(len(items), quiet)
    tally = {"ok": 0, "failed": 0}

    def sink(results: list[dict[str, Any]]) -> None:
        store.record(spec.name, by_key, results)
        for r in results:
            tally["ok" if r["status"] == "ok" else "failed"] += 1
        prog.update(results)

    init_s, used_batch, mode = 0.0, None, "serial" if serial else "ray"
    cluster: dict[str, Any] | None = None
    t0 = time.perf_counter()

    def outcome() -> Outcome:
        # ran: the points that finished this time (an interrupted run ran fewer than it planned);
        # skipped: those done before (not those left out by `limit`).
        return Outcome(outdir, len(by_key), tally["ok"] + tally["failed"], len(done_here), tally["ok"],
                       tally["failed"], time.perf_counter() - t0, init_s, mode, ncpu, used_batch, cluster)  # fmt: skip

    try:
        if items and serial:
            run_serial(items, ncpu, sink)
        elif items:
            init_s = ray_init(address, cpus)
            import ray

            cluster = cluster_info(address)
            ncpu = int(ray.cluster_resources().get("CPU", ncpu))  # type: ignore[no-untyped-call]
            t0 = time.perf_counter()
            prog.t0 = prog.last = time.monotonic()  # the rate from the first task, not Ray's start
            used_batch = run_ray(items, batch, sink)
        store.commit()
    except BaseException:
        # Interrupted or failed: what finished is kept, and the table says what did not run.
        store.commit()
        prog.close()
        write_results(spec, list(by_key.values()), store, outcome())
        print(f"sweep: stopped; {tally['ok'] + tally['failed']} points recorded in {outdir / DB} "
              "(a rerun goes on from there)", file=sys.stderr)  # fmt: skip
        raise
    res = outcome()
    prog.close()
    write_results(spec, list(by_key.values()), store, res)
    if report:
        render(outdir)
    return res


def write_results(spec: Spec, pts: list[Point], store: Store, res: Outcome) -> None:
    """OUT/results.csv (every point of the spec: its axes, status and figures) and
    OUT/summary.json (kind vsim-sweep) for the report."""
    rows = store.rows([p.key for p in pts])
    axes = list(spec.grid) + list(spec.space)
    with open(res.out / TABLE, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["key", *axes, "status", "error", *COLUMNS])
        for p in pts:
            r = rows.get(p.key, {"status": "pending", "error": None, "figures": None})
            figs = r["figures"] or {}
            w.writerow([p.key[:16], *(_cell(p.values.get(a)) for a in axes), r["status"], r["error"] or "",
                        *(_cell(figs.get(c)) for c in COLUMNS)])  # fmt: skip
    doc = {
        "kind": "vsim-sweep", "vsim": vsim.__version__, "name": spec.name, "spec": spec.path,
        "axes": {**{k: v for k, v in spec.grid.items()},
                 **{k: (d.choices if d.choices is not None else {"min": d.low, "max": d.high, "log": d.log})
                    for k, d in spec.space.items()}},
        "objective": spec.objective, "minimize": spec.minimize,
        "run": {"mode": res.mode, "cpus": res.cpus, "batch": res.batch, "points": res.points, "ran": res.ran,
                "skipped_done": res.skipped, "ok": res.ok, "failed": res.failed, "wall_s": res.wall_s,
                "init_s": res.init_s, "points_per_s": res.points_per_s, "cluster": res.cluster,
                "points_by_node": _by_node(rows.values())},
        "rows": [{"key": p.key, "values": p.values, **rows.get(p.key, {"status": "pending"})} for p in pts],
        "settings": settings(spec, pts, rows),
        "files": {"table": TABLE, "db": DB},
    }  # fmt: skip
    (res.out / SUMMARY).write_text(json.dumps(doc, indent=1) + "\n")


# t(0.975, df) for df = 1..30 (beyond: 1.96): a 95 % interval of a mean over few seeds.
T975 = [
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
    2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
]  # fmt: skip


def half_width(xs: list[float]) -> float | None:
    """The half-width of the 95 % t interval of the mean of xs (None for fewer than two)."""
    n = len(xs)
    if n < 2:
        return None
    return (T975[n - 2] if n - 1 <= len(T975) else 1.96) * statistics.stdev(xs) / math.sqrt(n)


def settings(spec: Spec, pts: list[Point], rows: dict[str, dict[str, Any]]) -> dict[str, Any] | None:
    """Where the spec has a `seed` axis, the objective per setting (every other axis) over the
    seeds: n, mean, its 95 % t interval, min and max; ranked by the mean, each marked
    `indistinguishable` when its interval overlaps the best's (the seeds cannot tell them
    apart: the best setting is then not decided by this sweep). None without a seed axis."""
    if "seed" not in spec.grid and "seed" not in spec.space:
        return None
    groups: dict[str, dict[str, Any]] = {}
    for p in pts:
        values = {k: v for k, v in p.values.items() if k != "seed"}
        g = groups.setdefault(json.dumps(values, sort_keys=True), {"values": values, "scores": []})
        r = rows.get(p.key) or {}
        v = (r.get("figures") or {}).get(spec.objective) if r.get("status") == "ok" else None
        if isinstance(v, int | float):
            g["scores"].append(float(v))
    out = []
    for g in groups.values():
        xs = g["scores"]
        if not xs:
            continue
        n, mean = len(xs), statistics.fmean(xs)
        # One seed: no interval (unbounded: it cannot be told apart from anything).
        half = half_width(xs)
        out.append({"values": g["values"], "n": n, "mean": mean,
                    "ci_low": mean - half if half is not None else None,
                    "ci_high": mean + half if half is not None else None,
                    "min": min(xs), "max": max(xs)})  # fmt: skip
    out.sort(key=lambda s: s["mean"], reverse=not spec.minimize)

    def overlap(a: dict[str, Any], b: dict[str, Any]) -> bool:
        if None in (a["ci_low"], b["ci_low"]):
            return True
        return bool(a["ci_low"] <= b["ci_high"] and b["ci_low"] <= a["ci_high"])

    if out:
        best = out[0]
        for s in out:
            s["indistinguishable"] = s is best or overlap(s, best)
    tied = sum(bool(s.get("indistinguishable")) for s in out)
    return {"by": [a for a in [*spec.grid, *spec.space] if a != "seed"], "objective": spec.objective,
            "minimize": spec.minimize, "rows": out, "indistinguishable_from_best": tied}  # fmt: skip


def _by_node(rows: Any) -> dict[str, int]:
    """Points recorded per Ray node (the worker's "node ID"), or per host where none."""
    out: dict[str, int] = {}
    for r in rows:
        w = str(r.get("worker") or "")
        key = w.split(" node ", 1)[1].split()[0] if " node " in w else w.split(":", 1)[0]
        if key:
            out[key] = out.get(key, 0) + 1
    return out


def _cell(v: Any) -> str:
    if v is None:
        return ""
    return json.dumps(v) if isinstance(v, dict | list) else str(v)


def render(outdir: Path) -> None:
    """The HTML report by `vlab report` (VSIM_REPORTER, as the simulator's commands do)."""
    reporter = os.environ.get("VSIM_REPORTER")
    if not reporter:
        print(f"sweep: no HTML report: VSIM_REPORTER is not set (./vsim sets it; or run `./vlab report {outdir}`)",
              file=sys.stderr)  # fmt: skip
        return
    r = subprocess.run([reporter, "report", str(outdir)], check=False)
    if r.returncode != 0:
        what = "says it is incomplete" if (outdir / "report.html").exists() else "was not written"
        print(f"sweep: the report {what} (vlab report exit {r.returncode}); the results are in {outdir}",
              file=sys.stderr)  # fmt: skip


# Exit status: 0 every point ok; 2 a bad spec or argument; 3 some points failed (recorded,
# the rest ran); 1 a crash (a traceback); 130 interrupted.
EXIT_POINTS_FAILED = 3


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="vsim sweep", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    ap.add_argument("spec", help="the sweep's TOML spec (docs/python.md)")
    ap.add_argument("--out", help="results directory (default build/sweeps/NAME)")
    ap.add_argument("--address", help="a Ray cluster's address (default: an embedded local Ray on every core)")
    ap.add_argument("--cpus", type=int, help="cores for the local Ray or --serial (default: all)")
    ap.add_argument("--serial", action="store_true", help="no Ray: one process per core, each taking the next point")
    ap.add_argument("--batch", type=int, help="points per Ray task (default: about 16 tasks per CPU, at most 64)")
    ap.add_argument("--limit", type=int, help="run at most this many of the points not done")
    ap.add_argument("--no-report", action="store_true", help="the data files only, not the HTML report")
    ap.add_argument("--quiet", "-q", action="store_true", help="no progress display")
    ap.add_argument("--list", action="store_true", help="print the points (key and axes) and exit")
    a = ap.parse_args(argv)
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `--list | head` ends quietly
    try:
        spec = load_spec(a.spec)
        if a.list:
            for p in points(spec):
                print(p.key[:16], json.dumps(p.values))
            return 0
        out = a.out or str(Path("build") / "sweeps" / spec.name)
        res = sweep(spec, out, address=a.address, cpus=a.cpus, serial=a.serial, batch=a.batch, quiet=a.quiet,
                    report=not a.no_report, limit=a.limit)  # fmt: skip
    except vsim.VsimError as e:
        print(f"vsim sweep: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except Exception:  # a crash, not a point that failed: its traceback, and status 1
        traceback.print_exc()
        print("vsim sweep: crashed (the points finished are kept; a rerun goes on from there)", file=sys.stderr)
        return 1
    print(f"{res.points} points: {res.ran} run ({res.ok} ok, {res.failed} failed), {res.skipped} already done; "
          f"{res.wall_s:.2f} s, {res.points_per_s:.1f} points/s on {res.cpus} CPUs ({res.mode}"
          f"{f', batch {res.batch}' if res.batch else ''}; start-up {res.init_s:.1f} s)")  # fmt: skip
    print(f"results: {res.out / TABLE}, {res.out / DB}, {res.out / SUMMARY}")
    return EXIT_POINTS_FAILED if res.failed else 0


def iter_rows(out: str | os.PathLike[str]) -> Iterator[dict[str, Any]]:
    """The rows of a sweep's summary.json (its points with values, status and figures)."""
    doc = json.loads((Path(out) / SUMMARY).read_text())
    yield from doc["rows"]


if __name__ == "__main__":
    sys.exit(main())
