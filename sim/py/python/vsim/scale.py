"""`python -m vsim.scale SPEC`: how well a sweep scales on Ray (make bench-sweep;
docs/python.md, "Scale"). The spec's points run, each time into a fresh directory, serially
with one process per core (--serial: the baseline) and on Ray, in rotated order, --repeat
times; the medians give points per second and Ray's efficiency (its throughput over the
baseline's). With --address, also on that Ray cluster. Ray's start-up is timed apart, and
the data moved per point (the configuration sent, the result returned) is measured.
Figures are printed, not asserted."""

from __future__ import annotations

import argparse
import json
import pickle
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from vsim import sweep


def serial_run(spec: str, out: Path, cpus: int | None) -> sweep.Outcome:
    """The baseline in a process of its own (`vsim sweep --serial`): its workers forked from
    a process that never started Ray."""
    cmd = [sys.executable, "-m", "vsim.sweep", spec, "--out", str(out), "--serial", "--no-report", "--quiet"]
    r = subprocess.run([*cmd, *(["--cpus", str(cpus)] if cpus else [])], capture_output=True, text=True, check=False)
    if r.returncode not in (0, 1):
        raise RuntimeError(f"{' '.join(cmd)}: exit {r.returncode}: {r.stderr.strip()}")
    run = json.loads((out / sweep.SUMMARY).read_text())["run"]
    return sweep.Outcome(out, run["points"], run["ran"], run["skipped_done"], run["ok"], run["failed"], run["wall_s"],
                         run["init_s"], run["mode"], run["cpus"], run["batch"])  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m vsim.scale", description=__doc__)
    ap.add_argument("spec")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--cpus", type=int, help="cores (default: all)")
    ap.add_argument("--address", help="also run on this Ray cluster (ray start --head ...)")
    ap.add_argument("--json", help="write the figures here")
    a = ap.parse_args(argv)
    spec = sweep.load_spec(a.spec)
    pts = sweep.points(spec)
    modes = ["serial", "ray"] + (["cluster"] if a.address else [])
    walls: dict[str, list[float]] = {m: [] for m in modes}
    init: dict[str, list[float]] = {m: [] for m in modes}
    cpus: dict[str, int] = {}
    tmp = Path(tempfile.mkdtemp(prefix="vsim-scale-"))
    import ray

    try:
        for rep in range(a.repeat):
            order = modes[rep % len(modes) :] + modes[: rep % len(modes)]
            for m in order:
                out = tmp / f"{m}-{rep}"
                if m != "ray" and ray.is_initialized():
                    # The baseline runs with no Ray in the background; each Ray run then
                    # starts its workers afresh, inside its timed wall (start-up apart).
                    ray.shutdown()
                if m == "serial":
                    res = serial_run(a.spec, out, a.cpus)
                else:
                    res = sweep.sweep(spec, out, cpus=a.cpus, address=a.address if m == "cluster" else None,
                                      quiet=True, report=False)  # fmt: skip
                if m == "cluster":
                    ray.shutdown()
                if res.failed or res.ran != len({p.key for p in pts}):
                    print(f"{m}: {res.failed} failed, {res.ran} ran of {len(pts)}: not a measurement")
                    return 1
                walls[m].append(res.wall_s)
                init[m].append(res.init_s)
                cpus[m] = res.cpus
                print(f"  rep {rep + 1} {m:<8} {res.wall_s:7.2f} s  {res.points_per_s:7.1f} points/s  "
                      f"(start-up {res.init_s:.1f} s, batch {res.batch})", flush=True)  # fmt: skip
                shutil.rmtree(out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    n = len({p.key for p in pts})
    base = statistics.median(walls["serial"])
    cfg_bytes = statistics.fmean(len(pickle.dumps((p.key, p.config, spec.base_dir))) for p in pts)
    one = sweep.run_point(pts[0].key, pts[0].config, spec.base_dir)
    res_bytes = len(pickle.dumps(one))
    print(f"{n} points of {spec.name}; medians of {a.repeat}")
    print(f"{'mode':<8} {'CPUs':>4} {'wall s':>8} {'points/s':>9} {'efficiency':>10} {'start-up s':>10}")
    figures: dict[str, Any] = {"points": n, "repeat": a.repeat, "spec": a.spec,
                               "bytes_per_point_sent": cfg_bytes, "bytes_per_point_returned": res_bytes}  # fmt: skip
    for m in modes:
        w = statistics.median(walls[m])
        eff = base / w
        print(f"{m:<8} {cpus[m]:>4} {w:8.2f} {n / w:9.1f} {eff:10.3f} {statistics.median(init[m]):10.1f}")
        figures[m] = {"cpus": cpus[m], "wall_s": walls[m], "median_wall_s": w, "points_per_s": n / w,
                      "efficiency": eff, "startup_s": init[m]}  # fmt: skip
    print(f"data per point: {cfg_bytes:.0f} B sent (key, configuration), {res_bytes} B returned (figures)")
    if a.json:
        Path(a.json).write_text(json.dumps(figures, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
