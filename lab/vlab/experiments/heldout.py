"""The held-out verdict (issue 78): veloces on shapes of the random flood family
(vlab.experiments.family) it was never tuned on, in the model and in the lab, against the
best in-tree scheduler and none, shape by shape, with 95 % intervals.

    build/venv/bin/python -m vlab.experiments.heldout --model [--seeds heldout|A-B] [--reps 5]
        [--runtime 2] [--scheduler veloces[:k=v,...]] [--jobs 2] [--out DIR]
    build/venv/bin/python -m vlab.experiments.heldout --lab [--seeds lab-heldout|A-B] [--repeat 3]
        [--runtime 3] [--kernel 6.12] [--out DIR]        # one boot a shape, ~2 min each
    build/venv/bin/python -m vlab.experiments.heldout --table DIR    # judge finished shapes again

`--seeds A-B` draws tuning shapes (family.TUNING_SEEDS); the default is the held-out range,
which is only for this report. The model runs each shape `--reps` times (vsim's seed 1..N:
the workload's random offsets and the device's jitter), the lab `--repeat` times in one boot
with the schedulers' order rotated; runs last 2 s (the model) or 3 s (the lab: a slow
null_blk's reader needs them for MIN_READS) after a 1-s ramp. The judgement (`judge`), the
same for both:

- figures per repetition: read p99 (fio's, of the readers), total IOPS, write IOPS, and in
  the lab the device's busy share (the requests the disk completed a second, times its
  completion time, over its tags: the share of its tags in use, by Little's law);
- the best in-tree scheduler for a figure is the one with the best median; veloces's ratio to
  it (and to none) is the geometric mean of the per-repetition ratios with its 95 % Student t
  interval (vlab.verdict.paired_ratio); a **win** where the whole interval is
  on the good side of the goal's bound, a **loss** where it is all on the bad side, a **tie**
  where it straddles it;
- goals (GOALS): read p99 <= 1.0x the best in-tree's (not a loss on >= 90 % of shapes), total
  IOPS >= 0.95x the best in-tree's and writes >= 0.9x none's (not a loss on any shape);
- a read p99 is judged only where every scheduler's every run had MIN_READS reads;
- a lab shape is judged only where the device was busy >= BUSY_MIN under none (median): below
  that the guest, not the device, set the pace; such shapes are listed as excluded.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from vlab import app, provenance, verdict
from vlab.experiments import family, matrix
from vlab.machine.kernels import KernelError, lookup
from vlab.paths import repo_root
from vlab.verdict import Ratio, paired_ratio
from vlab.workloads import fio

IN_TREE = ["none", "mq-deadline", "kyber", "bfq"]  # the lab's names
SCHEDULERS = [*IN_TREE, "veloces"]
MIN_READS = verdict.MIN_READS  # with fewer reads a run's 99th percentile is its slowest read or near it
BUSY_MIN = verdict.BUSY_MIN  # the lab's one verdict rule (vlab.verdict)
# A loss is a trade only where veloces is better on another figure by more than this share.
TRADE_MIN = 0.02
# figure, the scheduler it is compared to ("best": the best in-tree median), bound, whether
# higher is better, and the share of shapes that must not lose
GOALS: dict[str, tuple[str, str, float, bool, float]] = {
    "read_p99": ("read_p99_us", "best", 1.0, False, 0.9),
    "iops": ("iops", "best", 0.95, True, 1.0),
    "writes": ("write_iops", "none", 0.9, True, 1.0),
}
# The fixed held-out ranges (vlab.experiments.family), by the name --seeds takes.
HELDOUT_RANGES = {
    "heldout": family.HELDOUT_SEEDS,
    "heldout2": family.HELDOUT2_SEEDS,
    "lab-heldout": family.LAB_HELDOUT_SEEDS,
    "lab-heldout2": family.LAB_HELDOUT2_SEEDS,
}
Figures = dict[str, dict[int, dict[str, float | None]]]  # scheduler -> repetition -> figure -> value


def parse_seeds(arg: str, default: range) -> list[int]:
    """A fixed held-out range by name (HELDOUT_RANGES) or `A-B` (tuning seeds, inclusive)."""
    if arg in HELDOUT_RANGES:
        return list(HELDOUT_RANGES[arg])
    if not arg:
        return list(default)
    try:
        a, b = (int(x) for x in arg.split("-", 1))
    except ValueError:
        raise SystemExit(f"heldout: --seeds {arg!r}: give {', '.join(HELDOUT_RANGES)} or A-B") from None
    if not (a in family.TUNING_SEEDS and b in family.TUNING_SEEDS and a <= b):
        raise SystemExit(f"heldout: --seeds {arg}: a range of tuning seeds ({family.TUNING_SEEDS}) is needed")
    return list(range(a, b + 1))


# -- the model ------------------------------------------------------------------------------


def _model_row(row: dict[str, Any]) -> dict[str, float | None]:
    f = matrix.figures(row)
    secs = (row.get("simulated_ns") or 0) / 1e9
    return {
        "iops": f["iops"],
        "write_iops": f["write_iops"],
        "read_p99_us": f["read_p99_us"],
        "reads": ((row.get("read") or {}).get("iops") or 0.0) * secs,
        "lost_io": 1.0 if f["lost_io"] else 0.0,
    }


def run_model_shape(seed: int, reps: int, runtime: float, veloces: str, out: Path) -> dict[str, Any]:
    """One shape in vsim, `reps` times; its record (written to out/model/SEED.json)."""
    sh = family.shape(seed)
    work = out / "model" / "work" / str(seed)
    work.mkdir(parents=True, exist_ok=True)
    job = work / "job.fio"
    job.write_text(family.job(sh, model=True))
    scheds = [*matrix.IN_TREE, veloces]
    figs: Figures = {s: {} for s in SCHEDULERS}
    problems = []
    for rep in range(1, reps + 1):
        rdir = work / f"rep{rep}"
        p = matrix.vsim("compare", "--device", family.model_device(sh), "--workload", str(job), "--schedulers",
                        ",".join(scheds), "--runtime", f"{runtime:g}", "--seed", str(rep), "--out", str(rdir),
                        "--no-report", "-q")  # fmt: skip
        if p.returncode != 0:
            problems.append(f"rep {rep}: vsim compare: {(p.stderr or p.stdout).strip()[-400:]}")
            continue
        doc = json.loads((rdir / "summary.json").read_text())
        for row in doc.get("schedulers", []):
            name = str(row.get("scheduler"))
            name = "veloces" if name == veloces else matrix.LAB_NAME.get(name, name)
            figs[name][rep] = _model_row(row)
        for f in rdir.iterdir():  # keep the summary only: the series are not judged
            if f.name != "summary.json":
                f.unlink()
    record = {"seed": seed, "shape": sh.text(), "kind": sh.kind, "device": family.model_device(sh),
              "served": sh.device.served, "modelled": sh.modelled, "figures": figs, "problems": problems}  # fmt: skip
    (out / "model" / f"{seed}.json").write_text(json.dumps(record) + "\n")
    return record


# -- the lab --------------------------------------------------------------------------------


def _busy(series: Path, tags: int, completion_us: int, runtime_s: float | None = None) -> float | None:
    """The device's busy share over a run, from its samples (vlab's Sampler): the requests it
    completed a second, times its completion time, over its tags (Little's law: the mean
    number of tags in use, as a share), at most 1. Over fio's measured window: the
    `runtime_s` before the last completion (the samples kept around a run also hold fio's
    setup and ramp); without it, from the first completion to the last. Samples without
    `completed` (runs before it was sampled): the mean of `in_flight` over the tags, which
    under-reads a one-tag device (the sampler runs when the one vCPU is free)."""
    try:
        lines = series.read_text().splitlines()
    except OSError:
        return None
    if len(lines) < 3:
        return None
    cols = lines[0].split(",")
    rows = [dict(zip(cols, x.split(","), strict=False)) for x in lines[1:]]
    done = [(float(r["time_s"]), float(r["completed"])) for r in rows if r.get("completed")]
    moved = [i for i in range(1, len(done)) if done[i][1] > done[i - 1][1]]
    if moved:
        t1, c1 = done[moved[-1]]
        first = done[moved[0] - 1]
        if runtime_s:  # the last sample at or before the window's start
            first = max((d for d in done if d[0] <= t1 - runtime_s), key=lambda d: d[0], default=first)
        t0, c0 = first
        if t1 > t0:
            return min(1.0, (c1 - c0) / (t1 - t0) * completion_us / 1e6 / tags)
    vals = [float(r["in_flight"]) for r in rows if r.get("in_flight")]
    return min(1.0, statistics.fmean(vals) / tags) if vals else None


def lab_figures(folder: Path, tags: int, completion_us: int) -> Figures:
    """Per scheduler and repetition, from a `vlab compare` folder's raw files."""
    figs: Figures = {s: {} for s in SCHEDULERS}
    for s in SCHEDULERS:
        for path in sorted((folder / "raw").glob(f"rep*-{s}.json")):
            rep = int(path.name[3:].split("-", 1)[0])
            try:
                doc = json.loads(path.read_text(errors="replace"))
                r = fio.parse_doc(doc, str(path))
            except (OSError, ValueError, fio.FioError):
                continue
            runtime_s = max(float(j.get("job_runtime") or 0) for j in doc["jobs"]) / 1000 or None
            series = path.with_name(path.name.replace(".json", ".series.csv"))
            figs[s][rep] = {
                "iops": r.iops,
                "write_iops": r.write.iops,
                "read_p99_us": r.read.lat_p99_us if r.read.ios else None,
                "reads": float(r.read.ios),
                "busy": _busy(series, tags, completion_us, runtime_s),
                "lost_io": 1.0 if r.errors else 0.0,
            }
    return figs


def run_lab_shape(seed: int, kernel: str, repeat: int, runtime: float, out: Path, scratch: bool) -> dict[str, Any]:
    """One lab shape: one boot, the five schedulers rotated, `repeat` times."""
    sh = family.lab_shape(seed)
    folder = out / "lab" / str(seed)
    folder.mkdir(parents=True, exist_ok=True)
    job = folder / "job.fio"
    job.write_text(family.job(sh))
    c = app.Comparison(kernel=lookup(kernel), devices=[family.lab_device(sh)], schedulers=SCHEDULERS, jobs=[job],
                       out=folder, repeat=repeat, runtime=runtime, cpus=1, sysctl=matrix.LAB_SYSCTL,
                       command=["make", "heldout-lab"], scratch=scratch)  # fmt: skip
    problems = []
    try:
        outcome = app.compare(c)
        problems += outcome.problems
    except app.RequestError as e:
        problems.append(str(e))
    record = lab_record(seed, folder)
    record["problems"] = problems + record["problems"]
    return record


def lab_record(seed: int, folder: Path) -> dict[str, Any]:
    sh = family.lab_shape(seed)
    figs = lab_figures(folder, sh.device.tags, sh.device.completion_us)
    rec = {"seed": seed, "shape": sh.text(), "kind": sh.kind, "device": family.lab_device(sh), "served": "",
           "modelled": [], "figures": figs, "problems": []}  # fmt: skip
    (folder.parent / f"{seed}.json").write_text(json.dumps(rec) + "\n")
    return rec


# -- the judgement --------------------------------------------------------------------------


def _median(xs: Sequence[float]) -> float | None:
    return statistics.median(xs) if xs else None


def _values(figs: Figures, sched: str, key: str) -> dict[int, float | None]:
    return {rep: f.get(key) for rep, f in figs.get(sched, {}).items()}


def outcome(r: Ratio | None, bound: float, higher: bool) -> str | None:
    """win / tie / loss of a ratio against a goal's bound (its interval; without one, the point)."""
    if r is None:
        return None
    lo = r.low if r.low is not None else r.value
    hi = r.high if r.high is not None else r.value
    good, bad = (lo >= bound, hi < bound) if higher else (hi <= bound, lo > bound)
    # a ratio exactly at the bound with no spread (identical runs) meets it: a tie, not a win
    if good and not (math.isclose(lo, bound) and math.isclose(hi, bound)):
        return "win"
    return "loss" if bad else "tie"


def judge(rec: dict[str, Any], lab: bool) -> dict[str, Any]:
    """One shape's verdict: per goal the best in-tree scheduler, veloces's ratio with its
    interval and the outcome; and why a goal or the shape is not judged."""
    figs: Figures = {s: {int(k): v for k, v in reps.items()} for s, reps in rec["figures"].items()}
    v: dict[str, Any] = {"seed": rec["seed"], "shape": rec["shape"], "kind": rec["kind"], "served": rec["served"],
                         "modelled": rec["modelled"], "goals": {}, "excluded": None,
                         "device_class": rec["served"] or ("null_blk" if lab else "fixed")}  # fmt: skip
    missing = [s for s in SCHEDULERS if not figs.get(s)]
    lost = [s for s in SCHEDULERS if any((f.get("lost_io") or 0) > 0 for f in figs.get(s, {}).values())]
    if missing or lost or rec.get("problems"):
        why = (f"no runs of {', '.join(missing)}" if missing else "") or (f"{', '.join(lost)} lost I/O" if lost else "")
        v["excluded"] = why or "; ".join(rec["problems"])[:300]
        return v
    busy = {s: _median([b for f in figs[s].values() if (b := f.get("busy")) is not None]) for s in SCHEDULERS}
    if lab:
        v["busy"] = busy
        if busy["none"] is None or busy["none"] < BUSY_MIN:
            share = "unknown" if busy["none"] is None else f"{busy['none']:.0%}"
            v["excluded"] = f"guest-bound: the device was busy {share} under none (< {BUSY_MIN:.0%})"
            return v
    for goal, (key, against, bound, higher, _share) in GOALS.items():
        vals = {s: _values(figs, s, key) for s in SCHEDULERS}
        eligible = list(IN_TREE)
        if key == "read_p99_us":
            # A p99 needs MIN_READS reads in every run: veloces's must have them, and the
            # best in-tree one is chosen among the schedulers whose runs have them.
            few = [s for s in SCHEDULERS if any((f.get("reads") or 0) < MIN_READS for f in figs[s].values())]
            if "veloces" in few or set(IN_TREE) <= set(few):
                has_reads = any((f.get("reads") or 0) > 0 for f in figs["none"].values())
                v["goals"][goal] = {"outcome": None, "why": f"fewer than {MIN_READS} reads a run ({', '.join(few)})"
                                    if has_reads else "no reads"}  # fmt: skip
                continue
            eligible = [s for s in IN_TREE if s not in few]
        if key == "write_iops" and not any((x or 0) > 0 for x in vals["none"].values()):
            v["goals"][goal] = {"outcome": None, "why": "no writes"}
            continue
        meds = {s: _median([x for x in vals[s].values() if x is not None]) for s in eligible}
        known = {s: m for s, m in meds.items() if m is not None}
        if not known:
            v["goals"][goal] = {"outcome": None, "why": f"no {key}"}
            continue
        ref = against if against != "best" else (max if higher else min)(known, key=lambda s: known[s])
        r = paired_ratio(vals["veloces"], vals[ref])
        v["goals"][goal] = {"against": ref, "outcome": outcome(r, bound, higher), **(r.as_json() if r else {})}
        if v["goals"][goal]["outcome"] == "loss":
            v["goals"][goal]["why_lost"] = _why_lost(figs, goal, eligible)
            if key == "read_p99_us":
                v["goals"][goal]["conflict"] = _conflict(figs, vals, eligible)
    p99_none = paired_ratio(_values(figs, "veloces", "read_p99_us"), _values(figs, "none", "read_p99_us"))
    v["read_p99_to_none"] = p99_none.as_json() if p99_none else None
    return v


def _why_lost(figs: Figures, goal: str, eligible: list[str]) -> dict[str, Any]:
    """Why a goal was lost, from the data: each in-tree scheduler whose median beats veloces's
    on the lost figure is either a **trade** (veloces is better than it on another of the three
    figures: its interval on veloces's good side of 1.0) or **dominates** veloces (no worse on
    any other figure). A loss where every better scheduler is a trade is a choice between
    goals that no scheduler here avoided; a dominated loss is a design miss."""
    key, _a, _b, higher, _s = GOALS[goal]
    few = {s for s in SCHEDULERS if any((f.get("reads") or 0) < MIN_READS for f in figs[s].values())}

    def med(s: str, k: str) -> float | None:
        return _median([x for x in _values(figs, s, k).values() if x is not None])

    mine = med("veloces", key)
    trades: dict[str, dict[str, float]] = {}
    dominated_by: list[str] = []
    for s in eligible:
        m = med(s, key)
        if m is None or mine is None or not (m > mine if higher else m < mine):
            continue
        gains: dict[str, float] = {}
        for other, (k, _a2, _b2, hi, _s2) in GOALS.items():
            if other == goal or (k == "read_p99_us" and ({"veloces", s} & few)):
                continue
            r = paired_ratio(_values(figs, "veloces", k), _values(figs, s, k))
            if r is not None and outcome(r, 1.0 + TRADE_MIN if hi else 1.0 - TRADE_MIN, hi) == "win":
                gains[other] = round(r.value, 3)
        if gains:
            trades[s] = gains
        else:
            dominated_by.append(s)
    return {"kind": "dominated" if dominated_by else "trade", "dominated_by": dominated_by, "trades": trades}


def _conflict(figs: Figures, p99: dict[str, dict[int, float | None]], eligible: list[str]) -> dict[str, Any]:
    """For a read p99 loss: each in-tree scheduler whose median read p99 is below veloces's,
    with its writes to none's. Where every one of them gives writes < the writes goal's bound,
    the two goals conflict on this shape: a lower read tail was bought with the writers'
    throughput (a closed loop's reads go faster only by taking the device from the writes)."""
    mv = _median([x for x in p99["veloces"].values() if x is not None]) or 0.0
    wn = _median([x for f in figs["none"].values() if (x := f.get("write_iops")) is not None]) or 0.0
    better = {}
    for s in eligible:
        m = _median([x for x in p99[s].values() if x is not None])
        if m is not None and m < mv:
            w = _median([x for f in figs[s].values() if (x := f.get("write_iops")) is not None])
            better[s] = None if w is None or not wn else w / wn
    bound = GOALS["writes"][2]
    return {"writes_to_none_of_better": better,
            "goals_conflict": bool(better) and all(x is not None and x < bound for x in better.values())}  # fmt: skip


def summarize(verdicts: list[dict[str, Any]]) -> dict[str, Any]:
    """Counts per goal (win/tie/loss, not judged) and whether the goal is met."""
    out: dict[str, Any] = {"shapes": len(verdicts), "excluded": sum(1 for v in verdicts if v["excluded"])}
    for goal, (_k, _a, bound, _h, share) in GOALS.items():
        states = [v["goals"].get(goal, {}).get("outcome") for v in verdicts if not v["excluded"]]
        judged = [s for s in states if s is not None]
        counts = {s: judged.count(s) for s in ("win", "tie", "loss")}
        not_lost = counts["win"] + counts["tie"]
        out[goal] = {**counts, "judged": len(judged), "not_judged": len(states) - len(judged), "bound": bound,
                     "needed_share": share, "met": bool(judged) and not_lost >= share * len(judged)}  # fmt: skip
    p99s = [v["goals"].get("read_p99") or {} for v in verdicts if not v["excluded"]]
    out["read_p99"]["loss_goals_conflict"] = sum(1 for g in p99s if g.get("conflict", {}).get("goals_conflict"))
    for goal in GOALS:
        whys = [
            g["why_lost"] for v in verdicts if not v["excluded"] and (g := v["goals"].get(goal) or {}).get("why_lost")
        ]
        out[goal]["loss_trade"] = sum(1 for w in whys if w["kind"] == "trade")
        out[goal]["loss_dominated"] = sum(1 for w in whys if w["kind"] == "dominated")
        by: dict[str, int] = {}
        for w in whys:
            for s in w["dominated_by"]:
                by[s] = by.get(s, 0) + 1
        out[goal]["dominated_by"] = by
    # Losses by the device and the shape's kind (judged shapes; a served model by name, else
    # `fixed` in the model and null_blk in the lab): where the losses and the design misses are.
    groups: dict[str, dict[str, Any]] = {}
    for v in verdicts:
        if v["excluded"]:
            continue
        g = groups.setdefault(f"{v['device_class']} {v['kind']}", {"shapes": 0})
        g["shapes"] += 1
        for goal in GOALS:
            got = v["goals"].get(goal) or {}
            n = g.setdefault(goal, {"loss": 0, "dominated": 0})
            if got.get("outcome") == "loss":
                n["loss"] += 1
                n["dominated"] += got["why_lost"]["kind"] == "dominated"
    out["by_device"] = dict(sorted(groups.items(), key=lambda kv: -kv[1]["shapes"]))
    return out


def _f(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"


def report(title: str, verdicts: list[dict[str, Any]], lab: bool) -> str:
    s = summarize(verdicts)
    conflict = s["read_p99"]["loss_goals_conflict"]
    lines = [f"## {title}", "", f"{s['shapes']} shapes, {s['excluded']} excluded. Read p99 losses where every "
             f"in-tree scheduler with a lower read tail gives writes < {GOALS['writes'][2]}x none's (the two "
             f"goals conflict): {conflict}.", "",
             "A loss is a **trade** where every in-tree scheduler better on that figure is worse than veloces on "
             "another (the choice between goals no scheduler here avoided), **dominated** where one is no worse on "
             "any (a design miss); each loss below names them.", "",
             "| goal | bound | judged | win | tie | loss (trade / dominated) | not judged | goal met |",
             "|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for goal, (_k, against, bound, higher, share) in GOALS.items():
        g = s[goal]
        what = f"{'>=' if higher else '<='} {bound}x {'the best in-tree' if against == 'best' else against}"
        need = "every shape" if share == 1.0 else f"{share:.0%} of shapes"
        lines.append(f"| {goal} | {what} (not a loss on {need}) | {g['judged']} | {g['win']} | {g['tie']} "
                     f"| {g['loss']} ({g['loss_trade']} / {g['loss_dominated']}) | {g['not_judged']} "
                     f"| {'yes' if g['met'] else '**no**'} |")  # fmt: skip
    doms = {goal: s[goal]["dominated_by"] for goal in GOALS if s[goal]["dominated_by"]}
    if doms:
        lines += ["", "Dominated losses by the scheduler that dominates (a shape may count under several): "
                  + "; ".join(f"{goal}: " + ", ".join(f"{k} {n}" for k, n in sorted(d.items()))
                              for goal, d in doms.items())
                  + "."]  # fmt: skip
    lines += ["", "Losses (of them dominated) by device and kind, judged shapes:", "",
              "| device, kind | shapes | read p99 | IOPS | writes |", "|---|---|---|---|---|"]  # fmt: skip
    for name, g in s["by_device"].items():
        cells = [f"{g[goal]['loss']} ({g[goal]['dominated']})" for goal in GOALS]
        lines.append(f"| {name} | {g['shapes']} | {' | '.join(cells)} |")
    lines += ["", "| seed | shape | read p99 / best [95 %] | IOPS / best | writes / none | excluded |",
              "|---|---|---|---|---|---|"]  # fmt: skip
    for v in verdicts:
        cells = []
        for goal in GOALS:
            g = v["goals"].get(goal) or {}
            if g.get("outcome") is None:
                cells.append(g.get("why", "-") if not v["excluded"] else "-")
                continue
            iv = f" [{_f(g.get('ci_low'))}, {_f(g.get('ci_high'))}]" if g.get("ci_low") is not None else ""
            mark = {"loss": " **loss**", "win": " win", "tie": ""}[g["outcome"]]
            if g.get("conflict", {}).get("goals_conflict"):
                mark += " (every lower tail: writes < 0.9x none)"
            if w := g.get("why_lost"):
                mark += (f" dominated by {', '.join(w['dominated_by'])}" if w["dominated_by"] else
                         " trade: " + "; ".join(f"{b} " + ", ".join(f"{k} {x:.2f}x" for k, x in t.items())
                                                for b, t in w["trades"].items()))  # fmt: skip
            cells.append(f"{_f(g['value'])}{iv} ({g['against']}){mark}")
        extra = (" (" + ", ".join(v["modelled"]) + ")") if v["modelled"] else ""
        lines.append(f"| {v['seed']} | {v['shape']}{extra} | {' | '.join(cells)} | {v['excluded'] or ''} |")
    return "\n".join(lines) + "\n"


def tabulate(out: Path) -> dict[str, Any]:
    doc: dict[str, Any] = {"kind": "vlab-heldout", "goals": {g: list(x) for g, x in GOALS.items()},
                           "min_reads": MIN_READS, "busy_min": BUSY_MIN}  # fmt: skip
    md = []
    for side in ("model", "lab"):
        recs = [json.loads(p.read_text()) for p in sorted((out / side).glob("*.json"), key=lambda p: int(p.stem))]
        if not recs:
            continue
        verdicts = [judge(r, lab=side == "lab") for r in recs]
        doc[side] = {"summary": summarize(verdicts), "shapes": verdicts}
        seeds = f"seeds {recs[0]['seed']}-{recs[-1]['seed']}"
        where = "vlab (null_blk, one vCPU)" if side == "lab" else "vsim"
        md.append(report(f"{where}: {seeds}", verdicts, side == "lab"))
    (out / "summary.json").write_text(json.dumps(doc, indent=1) + "\n")
    (out / "heldout.md").write_text("\n".join(md))
    return doc


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m vlab.experiments.heldout", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    side = ap.add_mutually_exclusive_group(required=True)
    side.add_argument("--model", action="store_true")
    side.add_argument("--lab", action="store_true")
    side.add_argument("--table", type=Path, metavar="DIR")
    ap.add_argument("--seeds", default="", help="heldout[2] (model; default heldout), lab-heldout[2] (lab; "
                    "default lab-heldout), or A-B: tuning seeds")  # fmt: skip
    ap.add_argument("--reps", type=int, default=5, help="model: runs a shape, vsim seeds 1..N (default 5)")
    ap.add_argument("--repeat", type=int, default=3, help="lab: rotated repetitions (default 3)")
    ap.add_argument("--runtime", type=float, help="seconds a run after a 1-s ramp (default: model 2, lab 3)")
    ap.add_argument("--scheduler", default="veloces", help="model: veloces's spec, e.g. veloces:anticipate_us=0")
    ap.add_argument("--kernel", default="6.12")
    ap.add_argument("--jobs", type=int, default=2, help="model: shapes at once (default 2)")
    ap.add_argument("--out", type=Path, default=repo_root() / "build" / "heldout")
    provenance.add_arguments(ap)
    args = ap.parse_args(argv)
    if args.table:
        # A judgement is a result too: the rules on where it may be written, and a manifest that
        # records this commit beside the commits its shapes ran at (`summaries_commits`).
        table = args.table.resolve()
        if not provenance.may_write("heldout", table, args.scratch):
            return 2
        doc = tabulate(table)
        earlier = provenance.read_manifest(table) or {}
        command = ["python", "-m", "vlab.experiments.heldout", "--table", str(args.table)]
        provenance.write_manifest(table, kernels=earlier.get("kernels"), scratch=args.scratch, command=command)
        print((table / "heldout.md").read_text().split("\n\n| seed")[0])
        return 0 if doc else 1
    if args.seeds in HELDOUT_RANGES and args.seeds.startswith("lab-") != args.lab:
        print(f"heldout: --seeds {args.seeds} is the {'lab' if args.model else 'model'}'s range", file=sys.stderr)
        return 2
    out: Path = args.out.resolve()
    if not provenance.may_write("heldout", out, args.scratch):
        return 2
    if args.model:
        seeds = parse_seeds(args.seeds or "heldout", family.HELDOUT_SEEDS)
        (out / "model").mkdir(parents=True, exist_ok=True)
        done = [0]

        def one(seed: int) -> None:
            run_model_shape(seed, args.reps, args.runtime or 2.0, args.scheduler, out)
            done[0] += 1
            if done[0] % 20 == 0 or done[0] == len(seeds):
                print(f"heldout: {done[0]} of {len(seeds)} model shapes", flush=True)

        with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            list(pool.map(one, seeds))
        provenance.write_manifest(out, scratch=args.scratch, command=["make", "heldout-sim"])
    else:
        try:
            lookup(args.kernel)
        except KernelError as e:
            print(f"heldout: {e}", file=sys.stderr)
            return 2
        seeds = parse_seeds(args.seeds or "lab-heldout", family.LAB_HELDOUT_SEEDS)
        for i, seed in enumerate(seeds, 1):
            if (out / "lab" / f"{seed}.json").is_file():
                continue  # a finished shape (rerun into a fresh --out to run it again)
            print(f"== heldout: lab shape {seed} ({i} of {len(seeds)}): {family.lab_shape(seed).text()}", flush=True)
            run_lab_shape(seed, args.kernel, args.repeat, args.runtime or 3.0, out, args.scratch)
        provenance.write_manifest(out, kernels=[lookup(args.kernel).release], scratch=args.scratch,
                                  command=["make", "heldout-lab"])  # fmt: skip
    doc = tabulate(out)
    print((out / "heldout.md").read_text().split("\n\n| seed")[0])
    return 0 if doc else 1


if __name__ == "__main__":
    sys.exit(main())
