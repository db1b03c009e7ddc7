"""The veloces matrix (issue 40): device classes x workload families x the five schedulers,
judged against veloces's goals. The simulator's side: seconds a cell, `vsim compare` under
the models of none, mq-deadline, kyber, bfq and veloces. The lab's side (`--lab`): the same
devices as real block devices in a 6.12 guest (the cards served over ublk at their own
depth, the `fixed` shapes as null_blk), one boot per device running every workload (`vlab
compare` with several jobs), medians of rotated repetitions, each goal judged with the
ranges apart (judge_ranges), beside the model's verdict for the same cell
(docs/notebooks/benchmarks.md, "The veloces matrix").

    build/venv/bin/python -m vlab.experiments.matrix [--devices sd_a1,...|all] [--workloads a-r1,...|all]
        [--runtime 4] [--scheduler veloces[:k=v,...]] [--out DIR]
    build/venv/bin/python -m vlab.experiments.matrix --lab [--devices sd_a1,sd2008] [--workloads ...]
        [--kernel 6.12] [--repeat 3] [--lab-runtime 2] [--cpus 1] [--out DIR]   # ~12 min a device
    build/venv/bin/python -m vlab.experiments.matrix --table DIR     # re-judge finished cells (both sides)

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
trusted where docs/notebooks/fidelity.md's matrix agrees; `trusted` names the cells it covers.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from vlab import app, provenance, report, schedulers
from vlab.experiments import floods
from vlab.machine.kernels import lookup
from vlab.paths import repo_root

IN_TREE = ["noop", "mq-deadline", "kyber", "bfq"]  # vsim's models of none, mq-deadline, kyber, bfq
LAB_NAME = {"noop": "none"}


# A `fixed` shape's service times vary by an exponential part of a tenth of the mean (the
# calibrated null_blk in the guest: 132 us of 1,233, docs/notebooks/fidelity.md): a constant service
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
# Cells where docs/notebooks/fidelity.md's matrix (6.1, 1 vCPU) agrees for all five schedulers without
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


def run_cell(device: str, workload: str, job: Path, scheds: list[str], runtime: float, out: Path,
             page: bool = False) -> dict[str, Any]:  # fmt: skip
    """`vsim compare` of one cell (with its HTML page if `page`); its summary.json (raises
    naming the cell on failure)."""
    out.mkdir(parents=True, exist_ok=True)
    p = vsim("compare", "--device", DEVICES[device], "--workload", str(job), "--schedulers", ",".join(scheds),
             "--runtime", f"{runtime:g}", "--out", str(out), *([] if page else ["--no-report"]), "-q")  # fmt: skip
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


Range = tuple[float, float, float]  # median, min, max over a lab cell's repetitions
LAB_IN_TREE = list(schedulers.IN_TREE)  # the lab's names


def judge_ranges(device: str, workload: str, depth: int, figures: dict[str, dict[str, Range | None]]) -> dict[str, Any]:
    """A lab cell (or the demo's): veloces's ratios of medians to the best in-tree scheduler
    and to none, and each goal as "met", "not met", "not shown" (the medians meet it but the
    min-max ranges overlap: a win must be beyond the spread), "met within the spread" (never
    loses: a median misses it but the ranges overlap: a loss must be beyond it too) or None
    (does not apply). `figures`: lab scheduler name -> {iops, read_p99_us, write_iops, wa,
    energy_j} as (median, min, max)."""
    v, none = figures.get("veloces"), figures.get("none")
    tree = {s: figures[s] for s in LAB_IN_TREE if s in figures}
    cell: dict[str, Any] = {"device": device, "workload": workload, "depth": depth}
    if not v or not none or not tree or not v.get("iops"):
        cell["missing"] = "a scheduler's figures are missing: not judged"
        cell["goals"] = {"never_loses": None, "wins": None, "locality": None}
        return cell
    iops = {s: x for s, f in tree.items() if (x := f.get("iops"))}
    p99s = {s: y for s, f in tree.items() if (y := f.get("read_p99_us"))}
    best_iops = max(iops, key=lambda s: iops[s][0]) if iops else None
    best_p99 = min(p99s, key=lambda s: p99s[s][0]) if p99s else None
    vi, vp = v.get("iops"), v.get("read_p99_us")

    def ratio(a: Range | None, b: Range | None) -> float | None:
        return a[0] / b[0] if a and b and b[0] else None

    def per_op(f: dict[str, Range | None]) -> Range | None:
        e, i = f.get("energy_j"), f.get("iops")
        return (e[0] / i[0], e[0] / i[0], e[0] / i[0]) if e and i and i[0] else None

    r: dict[str, float | None] = {
        "iops_to_best": ratio(vi, iops.get(best_iops) if best_iops else None),
        "read_p99_to_best": ratio(vp, p99s.get(best_p99) if best_p99 else None),
        "read_p99_to_none": ratio(vp, none.get("read_p99_us")),
        "writes_to_none": ratio(v.get("write_iops"), none.get("write_iops")),
        "wa_to_none": ratio(v.get("wa"), none.get("wa")),
        "energy_per_op_to_none": ratio(per_op(v), per_op(none)),
    }
    cell["veloces"] = {**r, "best_iops": best_iops, "best_read_p99": best_p99}
    low_iops = r["iops_to_best"] is not None and r["iops_to_best"] < NEVER_LOSES_IOPS
    high_p99 = r["read_p99_to_best"] is not None and r["read_p99_to_best"] > NEVER_LOSES_P99
    lost = (low_iops and vi and best_iops and vi[2] < iops[best_iops][1]) or (
        high_p99 and vp and best_p99 and vp[1] > p99s[best_p99][2]
    )
    never = "not met" if lost else "met within the spread" if low_iops or high_p99 else "met"
    wins = None
    if depth <= WINS_MAX_DEPTH and workload in READER_BESIDE_WRITERS and r["read_p99_to_best"] is not None:
        medians = r["read_p99_to_best"] <= WINS_P99 and (r["writes_to_none"] or 0.0) >= WINS_WRITES
        apart = bool(vp and best_p99 and vp[2] < p99s[best_p99][1])
        wins = "met" if medians and apart else "not shown" if medians else "not met"
    locality = None
    if device == "sd2008" and workload == "e-r1" and r["wa_to_none"] is not None:
        medians = r["wa_to_none"] <= LOCALITY_WA and (r["energy_per_op_to_none"] or 9.9) <= LOCALITY_ENERGY
        vw, nw = v.get("wa"), none.get("wa")
        apart = bool(vw and nw and vw[2] < nw[1])
        locality = "met" if medians and apart else "not shown" if medians else "not met"
    cell["goals"] = {"never_loses": never, "wins": wins, "locality": locality}
    return cell


def lab_figures(summary: dict[str, Any]) -> dict[str, dict[str, Range | None]]:
    """A `vlab compare` summary's figures for judge_ranges (served devices' WA and energy)."""

    def rng(e: dict[str, Any], key: str) -> Range | None:
        m = e.get(key)
        if not isinstance(m, dict) or m.get("median") is None:
            return None
        return (float(m["median"]), float(m["min"]), float(m["max"]))

    keys = {"iops": "iops", "read_p99_us": "read_p99_us", "write_iops": "write_iops", "wa": "device_wa",
            "energy_j": "device_energy_j"}  # fmt: skip
    return {s: {k: rng(e, src) for k, src in keys.items()} for s, e in summary.get("schedulers", {}).items()}


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


# The lab's side: the same device classes as real block devices in a 6.12 guest (the cards
# served over ublk at their own depth; the `fixed` shapes as null_blk), the same jobs.
LAB_DEVICES: dict[str, str] = {
    **{card: f"vsim:cheapflash:preset={card},size=1g,dilation=auto,transport=ublk"
       for card in ("sd_a1", "sd_a2", "emmc51", "sd2008")},
    **{name: f"vsim:{DEVICES[name]},dilation=auto,transport=ublk" for name in ("nvme-fresh", "nvme-steady")},
    "t4-1ms": floods._null_blk(4, 1000, 1),
    "t4-100us": floods._null_blk(4, 100, 1),
    "t32-1ms": floods._null_blk(32, 1000, 1),
}  # fmt: skip


# Dirty pages capped at 4 MiB (background writeback from 1 MiB): a buffered writer (c-*) is
# throttled to the card's pace instead of filling the guest's page cache, whose flush when fio
# closes the device took 7 minutes of one 2-s run on the SD card (dilation 16).
LAB_SYSCTL = {"vm.dirty_bytes": "4194304", "vm.dirty_background_bytes": "1048576"}


def run_lab(devices: list[str], workloads: list[str], out: Path, kernel: str, repeat: int, runtime: float,
            cpus: int) -> list[str]:  # fmt: skip
    """One boot per device, every workload in it (`vlab compare` with several jobs), the
    schedulers rotated and repeated; results in out/lab/<device>/<workload>/. Returns the
    devices whose comparison failed (their partial results are kept)."""
    texts = jobs()
    failed = []
    for dev in devices:
        base = out / "lab" / dev
        (base / "jobs").mkdir(parents=True, exist_ok=True)
        paths = []
        for wl in workloads:
            path = base / "jobs" / f"{wl}.fio"
            path.write_text(texts[wl])
            paths.append(path)
        print(f"== {dev}: {', '.join(workloads)}", flush=True)
        c = app.Comparison(kernel=lookup(kernel), devices=[LAB_DEVICES[dev]], schedulers=[*LAB_IN_TREE, "veloces"],
                           jobs=paths, out=base if len(paths) > 1 else base / workloads[0], repeat=repeat,
                           runtime=runtime, cpus=cpus, sysctl=LAB_SYSCTL)  # fmt: skip
        try:
            if app.compare(c).status != 0:
                failed.append(dev)
        except app.RequestError as e:
            print(f"matrix: {dev}: {e}", file=sys.stderr)
            failed.append(dev)
    return failed


def tabulate_lab(out: Path) -> dict[str, Any]:
    """Every finished lab cell under out/lab judged (judge_ranges), beside the simulator's
    verdict for the same cell where out/summary.json has it; out/lab/summary.json and
    out/lab/matrix.md."""
    sim_cells = {}
    if (out / "summary.json").is_file():
        doc = json.loads((out / "summary.json").read_text())
        sim_cells = {(c["device"], c["workload"]): c for c in doc.get("cells", [])}
    cells = []
    depths: dict[str, int] = {}
    for path in sorted((out / "lab").glob("*/*/summary.json")):
        dev, wl = path.parent.parent.name, path.parent.name
        if dev not in DEVICES or wl not in WORKLOADS:
            continue
        if dev not in depths:
            depths[dev] = depth_of(DEVICES[dev])
        summary = json.loads(path.read_text())
        cell = judge_ranges(dev, wl, depths[dev], lab_figures(summary))
        busy = [e.get("device_busy_share", {}).get("median") for e in summary.get("schedulers", {}).values()]
        busy = [b for b in busy if b is not None]
        cell["device_busy_share"] = [min(busy), max(busy)] if busy else None
        cell["sim_goals"] = (sim_cells.get((dev, wl)) or {}).get("goals")
        cells.append(cell)
    yes = {True: "yes", False: "no", None: "-"}
    lines = [
        "| device | workload | veloces read p99 /best in-tree | /none | IOPS /best | writes/none | WA/none "
        "| card busy | never loses | wins | locality | vsim: never loses / wins / locality |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for c in cells:
        r, g, sg = c.get("veloces") or {}, c["goals"], c.get("sim_goals") or {}
        b = c.get("device_busy_share")
        lines.append(
            f"| {c['device']} | {c['workload']} | {_f(r.get('read_p99_to_best'))} ({r.get('best_read_p99') or '-'}) "
            f"| {_f(r.get('read_p99_to_none'))} | {_f(r.get('iops_to_best'))} ({r.get('best_iops') or '-'}) "
            f"| {_f(r.get('writes_to_none'))} | {_f(r.get('wa_to_none'))} "
            f"| {'-' if not b else f'{b[0]:.0%}-{b[1]:.0%}'} | {g['never_loses'] or '-'} | {g['wins'] or '-'} "
            f"| {g['locality'] or '-'} | {' / '.join(yes[sg.get(k)] for k in ('never_loses', 'wins', 'locality'))} |"
        )
    shares: dict[str, dict[str, int]] = {}
    for goal in ("never_loses", "wins", "locality"):
        states = [c["goals"][goal] for c in cells if c["goals"][goal] is not None]
        shares[goal] = {s: states.count(s) for s in sorted(set(states))}
    doc = {"kind": "vlab-matrix", "cells": cells, "shares": shares}
    (out / "lab").mkdir(parents=True, exist_ok=True)
    (out / "lab" / "summary.json").write_text(json.dumps(doc, indent=2) + "\n")
    (out / "lab" / "matrix.md").write_text("\n".join(lines) + "\n")
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
    ap.add_argument("--lab", action="store_true", help="the lab's side: one boot per device (LAB_DEVICES), "
                    "every workload, medians of --repeat rotated runs; judged with ranges apart")  # fmt: skip
    ap.add_argument("--kernel", default="6.12", help="--lab: kernel series (default 6.12, ublk)")
    ap.add_argument("--repeat", type=int, default=3, help="--lab: repetitions (default 3)")
    ap.add_argument("--lab-runtime", type=float, default=2.0, help="--lab: seconds per run, wall (default 2)")
    ap.add_argument("--cpus", type=int, default=1, help="--lab: guest CPUs (default 1, as vlab fidelity)")
    provenance.add_arguments(ap)
    args = ap.parse_args(argv)
    out: Path = (args.table or args.out).resolve()
    if not provenance.may_write("matrix", out, args.scratch):
        return 2
    command = ["python", "-m", "vlab.experiments.matrix", *(sys.argv[1:] if argv is None else argv)]
    if args.lab or (args.table and (out / "lab").is_dir()):
        failed_lab: list[str] = []
        if args.lab and not args.table:
            devices = floods.pick(args.devices, list(LAB_DEVICES), list(LAB_DEVICES), "device", "matrix")
            workloads = floods.pick(args.workloads, WORKLOADS, WORKLOADS, "workload", "matrix")
            failed_lab = run_lab(devices, workloads, out, args.kernel, args.repeat, args.lab_runtime, args.cpus)
        lab_doc = tabulate_lab(out)
        print((out / "lab" / "matrix.md").read_text(), end="")
        for goal, counts in lab_doc["shares"].items():
            print(f"matrix (lab): {goal}: " + ", ".join(f"{k} {n}" for k, n in counts.items()))
        if failed_lab:
            print(f"matrix (lab): failed: {', '.join(failed_lab)} (partial results kept)", file=sys.stderr)
        if args.lab:
            provenance.write_manifest(out, scratch=args.scratch, command=command)
            return 1 if failed_lab else 0
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
    target, _ = report.build(out)
    provenance.write_manifest(out, scratch=args.scratch, command=command)
    print(f"matrix: {out / 'summary.json'}, {target}")
    for p in doc["problems"]:
        print(f"matrix: {p}", file=sys.stderr)
    return 1 if doc["problems"] else 0


if __name__ == "__main__":
    sys.exit(main())
