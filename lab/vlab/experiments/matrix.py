"""The veloces matrix (issue 40): device classes x workload families x the five schedulers,
judged against veloces's goals. This is the simulator's side (seconds a cell: `vsim compare`
under the models of none, mq-deadline, kyber, bfq and veloces); the lab's side is `vlab
compare` on the cells that decide (docs/benchmarks.md, "The veloces matrix").

    build/venv/bin/python -m vlab.experiments.matrix [--devices sd_a1,...|all] [--workloads a-r1,...|all]
        [--runtime 4] [--scheduler veloces[:k=v,...]] [--out DIR]
    build/venv/bin/python -m vlab.experiments.matrix --table DIR     # re-judge finished cells

Devices: the depth-1 SD card (sd_a1), the command-queued card and eMMC (sd_a2, emmc51), the
2008-class log-block card (sd2008), a consumer NVMe SSD fresh and in GC steady state, and
null_blk-like `fixed` shapes (4 tags of 1 ms and of 100 us, 32 tags of 1 ms). Workloads: the
flood family of vlab.experiments.floods (a reader beside O_DIRECT and buffered write floods,
on separate ranges and on one shared range; four interleaved sequential writers; the 70/30
mix) and `wal`, a SQLite-WAL-like pattern (a QD1 appender the application waits on, QD4
random checkpoint writes, a QD1 reader). dbench and a tree copy run on a file system: lab
only (`make bench-served`).

Goals, per cell (`goals` in summary.json; None where a goal does not apply):
- never_loses: veloces's IOPS >= 0.95x the best in-tree scheduler's, and its read p99 <=
  1.1x the best in-tree one's (where the cell has reads);
- wins: on devices of depth 1 to 4, in a cell with a reader beside writers, read p99 <= 0.5x
  the best in-tree scheduler's, with write IOPS >= 0.9x none's;
- locality: on the log-block card with interleaved sequential writers (e-r1), WA <= 0.7x
  none's and energy per operation <= 0.8x none's.
vsim has no page cache: a buffered writer (c-*) is modelled as its own writes at its depth,
not the flusher's; such cells are marked `buffered_modelled_as_direct`. A model figure is
trusted where docs/fidelity.md's matrix agrees; `trusted` names the cells it covers.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from vlab.experiments import floods
from vlab.paths import repo_root

IN_TREE = ["noop", "mq-deadline", "kyber", "bfq"]  # vsim's models of none, mq-deadline, kyber, bfq
LAB_NAME = {"noop": "none"}


# A `fixed` shape's service times vary by an exponential part of a tenth of the mean (the
# calibrated null_blk in the guest: 132 us of 1,233, docs/fidelity.md): a constant service
# runs the tags in lockstep and every tail falls on a multiple of the service time.
JITTER = 0.1


def _fixed(tags: int, us: int) -> str:
    return f"fixed:service_us={us},jitter_us={us * JITTER:g},servers={tags},queue_depth={tags},size=1g"


DEVICES: dict[str, str] = {
    "sd_a1": "cheapflash:preset=sd_a1,size=1g",
    "sd_a2": "cheapflash:preset=sd_a2,size=1g",
    "emmc51": "cheapflash:preset=emmc51,size=1g",
    "sd2008": "cheapflash:preset=sd2008,size=1g",
    "nvme-fresh": "ssd:preset=tlc_nvme,blocks_per_plane=64",
    "nvme-steady": "ssd:preset=tlc_nvme,blocks_per_plane=64,precondition=full",
    "t4-1ms": _fixed(4, 1000),
    "t4-100us": _fixed(4, 100),
    "t32-1ms": _fixed(32, 1000),
}

_WAL = """; vlab.experiments.matrix wal: a SQLite-WAL-like pattern; generated.
[global]
randrepeat=0
norandommap=1
ramp_time=1
direct=1
bs=4k

[wal]
offset=0
size=64m
rw=write
ioengine=psync

[checkpoint]
offset=512m
size=512m
rw=randwrite
ioengine=libaio
iodepth=4

[reader]
offset=128m
size=384m
rw=randread
ioengine=psync
"""

FLOODS = ["a-r1", "a-r1-shared", "b-r1", "b-r1-shared", "c-r1", "c-r1-shared", "e-r1", "d"]
WORKLOADS = [*FLOODS, "wal"]
# Cells with a reader beside writers (the `wins` goal's).
READER_BESIDE_WRITERS = {w for w in WORKLOADS if w != "d"}
# Cells whose writers are buffered in the lab (vsim: their own writes at their depth).
BUFFERED = {"c-r1", "c-r1-shared"}
# Cells where docs/fidelity.md's matrix (6.1, 1 vCPU) agrees for all five schedulers without
# the guest's CPU in the model (this matrix models a host too fast to matter): the model's
# ranking there is the kernel's. (The 32-tag cells that agree need the guest's CPU.)
TRUSTED = {("t4-1ms", "d")}

WINS_MAX_DEPTH = 4
NEVER_LOSES_IOPS, NEVER_LOSES_P99 = 0.95, 1.1
WINS_P99, WINS_WRITES = 0.5, 0.9
LOCALITY_WA, LOCALITY_ENERGY = 0.7, 0.8


def jobs() -> dict[str, str]:
    """Workload name -> fio job text."""
    f = floods.floods()
    return {**{w: f[w] for w in FLOODS}, "wal": _WAL}


def vsim(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(repo_root() / "vsim"), *args], capture_output=True, text=True, check=False)


def depth_of(spec: str) -> int:
    """The model's queue depth (`vsim device`)."""
    p = vsim("device", spec)
    if p.returncode != 0:
        raise RuntimeError(f"vsim device {spec}: {p.stderr.strip()}")
    return int(json.loads(p.stdout)["queue_depth"])


def run_cell(device: str, workload: str, job: Path, scheds: list[str], runtime: float, out: Path) -> dict[str, Any]:
    """`vsim compare` of one cell; its summary.json (raises naming the cell on failure)."""
    out.mkdir(parents=True, exist_ok=True)
    p = vsim("compare", "--device", DEVICES[device], "--workload", str(job), "--schedulers", ",".join(scheds),
             "--runtime", f"{runtime:g}", "--out", str(out), "--no-report", "-q")  # fmt: skip
    if p.returncode != 0:
        raise RuntimeError(f"{device}/{workload}: vsim compare: {p.stderr.strip() or p.stdout.strip()}")
    doc: dict[str, Any] = json.loads((out / "summary.json").read_text())
    return doc


def figures(entry: dict[str, Any]) -> dict[str, Any]:
    """One scheduler's row of a vsim compare summary: IOPS, write IOPS, read p99 (us), WA,
    energy per operation (mJ), whether it lost I/O."""
    rd, wr = entry.get("read") or {}, entry.get("write") or {}
    iops = entry.get("iops") or 0.0
    secs = (entry.get("simulated_ns") or 0) / 1e9
    energy = entry.get("energy_j")
    ops = iops * secs
    return {
        "iops": iops,
        "write_iops": wr.get("iops") or 0.0,
        "read_p99_us": rd["p99_ns"] / 1000 if rd.get("iops") and rd.get("p99_ns") is not None else None,
        "wa": entry.get("write_amplification"),
        "energy_mj_per_op": energy * 1000 / ops if energy is not None and ops > 0 else None,
        "lost_io": bool(entry.get("lost_io")),
    }


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def judge(device: str, workload: str, depth: int, summary: dict[str, Any], veloces: str) -> dict[str, Any]:
    """One cell: each scheduler's figures, veloces's ratios to the best in-tree scheduler and
    to none, and the goals (True, False, or None where one does not apply)."""
    rows = {str(r.get("scheduler")): figures(r) for r in summary.get("schedulers", []) if isinstance(r, dict)}
    v, none = rows.get(veloces), rows.get("noop")
    # Figures by the lab's names; the judged spec (it may carry tunables) as `veloces`.
    named = {"veloces" if k == veloces else LAB_NAME.get(k, k): f for k, f in rows.items()}
    cell: dict[str, Any] = {"device": device, "workload": workload, "depth": depth, "figures": named,
                            "trusted": (device, workload) in TRUSTED,
                            "buffered_modelled_as_direct": workload in BUFFERED}  # fmt: skip
    tree = {s: rows[s] for s in IN_TREE if s in rows}
    if v is None or none is None or not tree or any(f["lost_io"] for f in rows.values()):
        cell["missing"] = "a scheduler is missing or lost I/O: not judged"
        cell["goals"] = {"never_loses": None, "wins": None, "locality": None}
        return cell
    best_iops = max(f["iops"] for f in tree.values())
    p99s = [f["read_p99_us"] for f in tree.values() if f["read_p99_us"] is not None]
    best_p99 = min(p99s) if p99s else None
    r = {
        "iops_to_best": _ratio(v["iops"], best_iops),
        "read_p99_to_best": _ratio(v["read_p99_us"], best_p99),
        "writes_to_none": _ratio(v["write_iops"], none["write_iops"]),
        "wa_to_none": _ratio(v["wa"], none["wa"]),
        "energy_per_op_to_none": _ratio(v["energy_mj_per_op"], none["energy_mj_per_op"]),
    }
    cell["veloces"] = r
    never = r["iops_to_best"] is not None and r["iops_to_best"] >= NEVER_LOSES_IOPS
    if r["read_p99_to_best"] is not None:
        never = never and r["read_p99_to_best"] <= NEVER_LOSES_P99
    wins = None
    if depth <= WINS_MAX_DEPTH and workload in READER_BESIDE_WRITERS and r["read_p99_to_best"] is not None:
        wins = r["read_p99_to_best"] <= WINS_P99 and (r["writes_to_none"] or 0.0) >= WINS_WRITES
    locality = None
    if device == "sd2008" and workload == "e-r1" and r["wa_to_none"] is not None:
        locality = r["wa_to_none"] <= LOCALITY_WA and (r["energy_per_op_to_none"] or 9.9) <= LOCALITY_ENERGY
    cell["goals"] = {"never_loses": never, "wins": wins, "locality": locality}
    return cell


def _f(v: float | None, digits: int = 2) -> str:
    return "-" if v is None else f"{v:,.{digits}f}"


def table(cells: list[dict[str, Any]]) -> str:
    """The matrix as markdown: veloces against the best in-tree scheduler and none, per cell."""
    yes = {True: "yes", False: "**no**", None: "-"}
    lines = [
        "| device | depth | workload | veloces IOPS | /best in-tree | read p99 ms | /best in-tree | writes/none "
        "| WA/none | energy/op /none | never loses | wins | locality |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for c in cells:
        v = c.get("veloces") or {}
        f = c["figures"].get("veloces") or {}
        name = c["workload"] + (" (buffered as direct)" if c["buffered_modelled_as_direct"] else "")
        name += " (trusted)" if c["trusted"] else ""
        g = c["goals"]
        p99 = f.get("read_p99_us")
        lines.append(
            f"| {c['device']} | {c['depth']} | {name} | {_f(f.get('iops'), 0)} | {_f(v.get('iops_to_best'))} "
            f"| {_f(None if p99 is None else p99 / 1000)} | {_f(v.get('read_p99_to_best'))} "
            f"| {_f(v.get('writes_to_none'))} | {_f(v.get('wa_to_none'))} | {_f(v.get('energy_per_op_to_none'))} "
            f"| {yes[g['never_loses']]} | {yes[g['wins']]} | {yes[g['locality']]} |"
        )
    return "\n".join(lines) + "\n"


def shares(cells: list[dict[str, Any]]) -> dict[str, list[int]]:
    """Per goal: [met, judged]."""
    out: dict[str, list[int]] = {}
    for goal in ("never_loses", "wins", "locality"):
        judged = [c["goals"][goal] for c in cells if c["goals"][goal] is not None]
        out[goal] = [sum(judged), len(judged)]
    return out


def tabulate(out: Path, veloces: str) -> dict[str, Any]:
    cells = []
    problems = []
    depths: dict[str, int] = {}
    for path in sorted((out / "cells").glob("*/*/summary.json")):
        dev, wl = path.parent.parent.name, path.parent.name
        if dev not in DEVICES:
            problems.append(f"{dev}: not a known device")
            continue
        if dev not in depths:
            depths[dev] = depth_of(DEVICES[dev])
        cells.append(judge(dev, wl, depths[dev], json.loads(path.read_text()), veloces))
    doc = {
        "kind": "vsim-matrix",
        "scheduler": veloces,
        "devices": {d: DEVICES[d] for d in depths},
        "goals": {
            "never_loses": f"IOPS >= {NEVER_LOSES_IOPS}x the best in-tree scheduler's and read p99 <= "
            f"{NEVER_LOSES_P99}x the best in-tree one's",
            "wins": f"depth <= {WINS_MAX_DEPTH}, a reader beside writers: read p99 <= {WINS_P99}x the best in-tree "
            f"scheduler's, writes >= {WINS_WRITES}x none's",
            "locality": f"sd2008, e-r1: WA <= {LOCALITY_WA}x none's, energy per operation <= {LOCALITY_ENERGY}x none's",
        },
        "shares": shares(cells),
        "cells": cells,
        "problems": problems,
    }
    (out / "summary.json").write_text(json.dumps(doc, indent=2) + "\n")
    (out / "matrix.md").write_text(table(cells))
    return doc


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="vlab.experiments.matrix", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    ap.add_argument("--devices", help=f"comma list or all (default all; known: {', '.join(DEVICES)})")
    ap.add_argument("--workloads", help=f"comma list or all (default all; known: {', '.join(WORKLOADS)})")
    ap.add_argument("--runtime", type=float, default=4.0, help="seconds of model time per scheduler (default 4)")
    ap.add_argument("--scheduler", default="veloces", help="the veloces spec judged (e.g. veloces:bundling=0)")
    ap.add_argument("--out", type=Path, default=repo_root() / "build" / "bench" / "matrix-sim")
    ap.add_argument("--table", type=Path, metavar="DIR", help="only re-judge the finished cells in DIR")
    args = ap.parse_args(argv)
    out: Path = (args.table or args.out).resolve()
    if args.table:
        doc = tabulate(out, args.scheduler)
    else:
        if args.runtime <= 0:
            print("matrix: --runtime must be positive", file=sys.stderr)
            return 2
        devices = floods.pick(args.devices, list(DEVICES), list(DEVICES), "device", "matrix")
        workloads = floods.pick(args.workloads, WORKLOADS, WORKLOADS, "workload", "matrix")
        texts = jobs()
        failed = []
        for dev in devices:
            for wl in workloads:
                cell = out / "cells" / dev / wl
                cell.mkdir(parents=True, exist_ok=True)
                job = cell / "workload.fio"
                job.write_text(texts[wl])
                try:
                    run_cell(dev, wl, job, [*IN_TREE, args.scheduler], args.runtime, cell)
                except RuntimeError as e:
                    print(f"matrix: {e}", file=sys.stderr)
                    failed.append(f"{dev}/{wl}")
        doc = tabulate(out, args.scheduler)
        if failed:
            doc["problems"] += [f"{c}: failed" for c in failed]
    print(table(doc["cells"]), end="")
    for goal, (met, judged) in doc["shares"].items():
        print(f"matrix: {goal}: {met} of {judged} cells")
    from vlab import report

    target, _ = report.build(out)
    print(f"matrix: {out / 'summary.json'}, {target}")
    for p in doc["problems"]:
        print(f"matrix: {p}", file=sys.stderr)
    return 1 if doc["problems"] else 0


if __name__ == "__main__":
    sys.exit(main())
