"""`vsim tune SPEC.toml`: search a scheduler's tunables with Ray Tune for one device model and
workload (a fio job file, a run configuration or a trace) against an objective, e.g. the
read p99 subject to write throughput >= 0.9x that of `none` (the simulator's noop); then
write the settings to apply: a sysfs script and a udev rule (docs/python.md).

Spec keys: name; workload (path, relative to the spec); device (a spec string); runtime;
seeds (each point is the mean over them); scheduler (default veloces); samples and seed (the
random search); objective (a figure of vsim.figures, minimised; `maximize = true` to
maximise); constraint, min_ratio and baseline (the constraint's figure must reach min_ratio x
the baseline scheduler's); [space] (tunable = {min, max, log} or a list of values); udev_match
(the rule's KERNEL match: globs of letters, digits and _ - * ? [ ] separated by |); search
(`random`, Ray Tune's random search, or `tpe`, Optuna's Tree-structured Parzen Estimator
through Ray Tune: it models which settings score well and samples there). The strings that
reach the udev rule, the sysfs script or their comments are refused unless they keep to
their grammar: scheduler a name vsim knows; name, objective and device one line of printable
text without backslashes.

Outputs in OUT: tuned.json (the best setting, its figures beside the defaults' and the
baseline's, every trial in the order it ran; whether the best is told apart from the
defaults and from the other trials over the seeds, the flat optimum flagged with the range
each tunable spans among the trials as good as the best; the Pareto front of the objective
against the constraint's figure), veloces-tuned.sh (writes the settings into a device's sysfs),
61-veloces-tuned.rules (a udev rule applying them), and the lab variant to confirm them with
(`vlab compare --schedulers none,veloces,VARIANT`).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import vsim
from vsim.sweep import SpecError, cluster_info, figure, half_width, ray_init, read_spec

OUT_JSON = "tuned.json"
COMPARISON_JSON = "search-comparison.json"
SEARCHES = ("random", "tpe")


@dataclass
class TuneSpec:
    path: str
    name: str
    workload: str
    device: str
    runtime: str | None
    seeds: list[int]
    scheduler: str = "veloces"
    samples: int = 32
    seed: int = 1
    objective: str = "read.p99_ns"
    maximize: bool = False
    constraint: str | None = None
    min_ratio: float = 0.0
    baseline: str = "noop"
    space: dict[str, Any] = field(default_factory=dict)
    udev_match: str = "sd*|mmcblk[0-9]|mmcblk[0-9][0-9]"
    block: str | None = None
    dilation: float = 1.0
    search: str = "random"


KEYS = {"name", "workload", "device", "runtime", "seeds", "scheduler", "samples", "seed", "objective", "maximize",
        "constraint", "min_ratio", "baseline", "space", "udev_match", "block", "dilation", "search"}  # fmt: skip
# Tunables in units of time (their declared unit): on a served device, whose model time runs
# `dilation` times slower than the kernel's, the kernel's value is the model's times the dilation.
TIME_UNITS = ("ms", "us", "ns")

# What a spec puts into the udev rule (run as root), the sysfs script and their comments
# (issue 76): each string is held to a strict grammar when the spec loads and again before
# anything is written; one that breaks it is refused, never escaped.
UDEV_GLOB = re.compile(r"[A-Za-z0-9_*?\[\]-]+")
SCHEDULER_NAME = re.compile(r"[a-z][a-z0-9_-]{0,31}")
TUNABLE_NAME = re.compile(r"[a-z][a-z0-9_]{0,63}")
MAX_TEXT = 256
WRITTEN_TEXT = ("name", "objective", "device")  # free text in the comments of the rule and the script


def _refuse(path: str | os.PathLike[str], key: str, value: object, why: str) -> SpecError:
    shown = repr(value) if len(repr(value)) <= 60 else repr(value)[:57] + "..."
    return SpecError(f"{path}: {key}: {shown}: {why}")


def check_udev_match(path: str | os.PathLike[str], v: object) -> str:
    """The rule's KERNEL match: alternatives separated by `|`, each a glob of letters, digits
    and `_ - * ? [ ]`; no quotes, commas, spaces, `=`, `$`, `%`, backslashes or control
    characters, which would end the match and add keys (a RUN+= run as root) or substitute."""
    if not isinstance(v, str) or not 0 < len(v) <= MAX_TEXT:
        raise _refuse(path, "udev_match", v, f"a string of 1 to {MAX_TEXT} characters")
    if not all(UDEV_GLOB.fullmatch(alt) for alt in v.split("|")):
        raise _refuse(path, "udev_match", v, "globs of letters, digits and _ - * ? [ ] separated by |; "
                      "quotes, commas, spaces, =, $, %, backslashes and control characters not allowed")  # fmt: skip
    return v


def check_scheduler(path: str | os.PathLike[str], v: object) -> str:
    """A scheduler vsim knows, its name a plain word (it is written into the rule, the script
    and the files' names)."""
    if not isinstance(v, str) or not SCHEDULER_NAME.fullmatch(v):
        raise _refuse(path, "scheduler", v, "a name of lower-case letters, digits, - and _; nothing else allowed")
    if v not in vsim.schedulers():
        raise _refuse(path, "scheduler", v, f"not a scheduler vsim knows ({', '.join(vsim.schedulers())})")
    return v


def check_text(path: str | os.PathLike[str], key: str, v: object) -> str:
    """Free text that goes into a `#` comment of the rule and the script: one line of printable
    characters (a newline would end the comment and start a rule or a command), no backslash."""
    if not isinstance(v, str) or not 0 < len(v) <= MAX_TEXT:
        raise _refuse(path, key, v, f"a string of 1 to {MAX_TEXT} characters")
    if not v.isprintable() or "\\" in v:
        raise _refuse(path, key, v, "newlines, control characters and backslashes not allowed")
    return v


def check_dilation(path: str | os.PathLike[str], v: object) -> float:
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) or not v >= 1.0:
        raise _refuse(path, "dilation", v, "a number >= 1 (a served device's; 1 for a real one)")
    return float(v)


def check_tunable_name(path: str | os.PathLike[str], k: object) -> None:
    if not isinstance(k, str) or not TUNABLE_NAME.fullmatch(k):
        raise _refuse(path, "[space]", k, "a tunable's name: lower-case letters, digits and _; nothing else allowed")


def check_tunables(path: str | os.PathLike[str], tun: dict[str, Any]) -> None:
    """The settings written into sysfs: names as the kernel's files are named, whole numbers."""
    for k, v in tun.items():
        check_tunable_name(path, k)
        if isinstance(v, bool) or not isinstance(v, int):
            raise _refuse(path, f"[space] {k}", v, "a whole number")


def check_written(spec: TuneSpec) -> None:
    """Every string of the spec that write_settings writes, held to its grammar."""
    check_scheduler(spec.path, spec.scheduler)
    check_udev_match(spec.path, spec.udev_match)
    for k in WRITTEN_TEXT:
        check_text(spec.path, k, getattr(spec, k))
    check_dilation(spec.path, spec.dilation)


def load_spec(path: str | os.PathLike[str]) -> TuneSpec:
    p = Path(path)
    t = read_spec(p, KEYS)
    for k in ("workload", "device", "space"):
        if k not in t:
            raise SpecError(f"{p}: '{k}' is required")
    wl = (p.parent / str(t["workload"])).resolve()
    if not wl.is_file():
        raise SpecError(f"{p}: workload {wl}: no such file")
    # The strings written into the rule, the script and their comments, to their grammar.
    name, device = check_text(p, "name", t.get("name", p.stem)), check_text(p, "device", t["device"])
    spec = TuneSpec(str(p), name, str(wl), device, t.get("runtime"), [int(s) for s in t.get("seeds", [1])])
    spec.scheduler = check_scheduler(p, t.get("scheduler", spec.scheduler))
    spec.objective = check_text(p, "objective", t.get("objective", spec.objective))
    spec.udev_match = check_udev_match(p, t.get("udev_match", spec.udev_match))
    spec.dilation = check_dilation(p, t.get("dilation", 1.0))
    if "baseline" in t:
        spec.baseline = str(t["baseline"])
    spec.samples, spec.seed = int(t.get("samples", spec.samples)), int(t.get("seed", spec.seed))
    spec.maximize = bool(t.get("maximize", False))
    spec.constraint = str(t["constraint"]) if "constraint" in t else None
    spec.min_ratio = float(t.get("min_ratio", 0.0))
    spec.block = str(t["block"]) if "block" in t else None
    spec.search = str(t.get("search", spec.search))
    if spec.search not in SEARCHES:
        raise SpecError(f"{p}: search {spec.search!r}: one of {', '.join(SEARCHES)}")
    known = {x["name"]: x for x in vsim.tunables(spec.scheduler)}
    for k, v in dict(t["space"]).items():
        check_tunable_name(p, k)
        if k not in known or not known[k].get("sysfs", True):
            sysfs = [n for n, x in known.items() if x.get("sysfs", True)]
            what = "the simulator's own setting, not a sysfs file of the kernel's" if k in known else "not a tunable of"
            raise SpecError(f"{p}: [space] {k}: {what} {spec.scheduler} (its tunables: {', '.join(sysfs)})")
        lo, hi = known[k]["min"], known[k]["max"]
        vals = v if isinstance(v, list) else [v.get("min"), v.get("max")] if isinstance(v, dict) else None
        if not vals or not all(isinstance(x, int) and not isinstance(x, bool) and lo <= x <= hi for x in vals):
            raise SpecError(f"{p}: [space] {k}: whole numbers within the tunable's range {lo}..{hi}")
        spec.space[k] = v
    if not spec.space or spec.samples < 1 or not spec.seeds:
        raise SpecError(f"{p}: needs a [space], samples >= 1 and at least one seed")
    return spec


def evaluate(spec: TuneSpec, scheduler: str) -> dict[str, Any]:
    """The mean of the objective and constraint figures over the seeds, and each seed's."""
    per_seed = []
    for s in spec.seeds:
        c = vsim.compare(spec.workload, [scheduler], device=spec.device, seed=s, runtime=spec.runtime,
                         block=spec.block)  # fmt: skip
        per_seed.append(c["schedulers"][0])
    out: dict[str, Any] = {"scheduler": scheduler, "seeds": spec.seeds}
    for fig in filter(None, [spec.objective, spec.constraint]):
        vals = [figure(f, fig) for f in per_seed]
        out[fig] = statistics.fmean(v for v in vals if v is not None) if all(v is not None for v in vals) else None
        out[f"{fig}/seeds"] = vals
    out["unfinished_bios"] = sum(int(f.get("unfinished_bios") or 0) for f in per_seed)
    return out


def variant(spec: TuneSpec, tun: dict[str, int]) -> str:
    """The scheduler spec `NAME:k=v,...`, which `vsim compare` and `vlab compare` both take."""
    return spec.scheduler + (":" + ",".join(f"{k}={v}" for k, v in sorted(tun.items())) if tun else "")


def kernel_values(spec: TuneSpec, tun: dict[str, int]) -> dict[str, int]:
    """The settings for the kernel: time tunables (by their declared unit) times the served
    device's dilation."""
    times = {t["name"] for t in vsim.tunables(spec.scheduler) if t["unit"] in TIME_UNITS}
    return {k: round(v * spec.dilation) if k in times else v for k, v in tun.items()}


def score(spec: TuneSpec, ev: dict[str, Any], floor: float | None) -> tuple[float, bool]:
    """(the value minimised, whether the constraint holds); a point that breaks it, or has no
    figure, scores worse than any that keeps it."""
    obj = ev.get(spec.objective)
    feasible = obj is not None
    if spec.constraint and floor is not None:
        c = ev.get(spec.constraint)
        feasible = feasible and c is not None and c >= floor
    val = float(obj) if obj is not None else float("inf")
    val = -val if spec.maximize else val
    return (val if feasible else 1e18 + val), feasible


def searcher(search: str, seed: int) -> Any:
    """Ray Tune's search algorithm: random search, or Optuna's TPE (seeded either way)."""
    if search == "random":
        from ray.tune.search.basic_variant import BasicVariantGenerator

        return BasicVariantGenerator(random_state=seed)
    try:
        import optuna
        from ray.tune.search.optuna import OptunaSearch
    except ImportError as e:
        raise vsim.ConfigError(
            f"search 'tpe' needs Optuna ({e.name}): pip install 'veloces-vsim[ray]' (Ray Tune and Optuna)"
        ) from e
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    return OptunaSearch(sampler=optuna.samplers.TPESampler(seed=seed))


def floor_of(spec: TuneSpec, base: dict[str, Any]) -> float | None:
    """The constraint's floor: min_ratio x the baseline scheduler's figure."""
    if not spec.constraint:
        return None
    b = base.get(spec.constraint)
    if b is None:
        raise SpecError(f"{spec.path}: the baseline {spec.baseline} has no {spec.constraint}")
    return spec.min_ratio * float(b)


def search(spec: TuneSpec, out: Path, floor: float | None, search_alg: str, seed: int,
           name: str) -> list[dict[str, Any]]:  # fmt: skip
    """One Ray Tune run of spec.samples trials; the trials in the order they started, each with
    its setting, score, feasibility and the objective's and constraint's figures per seed."""
    from ray import tune as rtune

    def space(v: Any) -> Any:
        if isinstance(v, list):
            return rtune.choice(v)
        if v.get("log"):
            return rtune.lograndint(int(v["min"]), int(v["max"]) + 1)
        return rtune.randint(int(v["min"]), int(v["max"]) + 1)

    def trainable(config: dict[str, Any]) -> None:
        import ray

        started = time.time()
        node = ray.get_runtime_context().get_node_id()[:12]  # as cluster_info names nodes
        ev = evaluate(spec, variant(spec, {k: int(v) for k, v in config.items()}))
        s, ok = score(spec, ev, floor)
        rtune.report({"score": s, "feasible": ok, "objective": ev.get(spec.objective),
                      "objective_seeds": ev.get(f"{spec.objective}/seeds"),
                      "constraint": ev.get(spec.constraint) if spec.constraint else None,
                      "started": started, "node": node})  # fmt: skip

    tuner = rtune.Tuner(
        trainable,
        param_space={k: space(v) for k, v in spec.space.items()},
        tune_config=rtune.TuneConfig(
            metric="score", mode="min", num_samples=spec.samples, search_alg=searcher(search_alg, seed)
        ),
        run_config=rtune.RunConfig(name=name, storage_path=str((out / "ray").resolve()), verbose=0),
    )
    grid = tuner.fit()
    trials: list[dict[str, Any]] = []
    for r in (grid[i] for i in range(len(grid))):
        config = {k: int(v) for k, v in (r.config or {}).items()}
        if r.error is not None or not r.metrics:
            trials.append({"config": config, "error": str(r.error), "started": math.inf})
            continue
        m = r.metrics
        trials.append({"config": config, "score": m["score"], "feasible": m["feasible"], "objective": m["objective"],
                       "objective_seeds": m["objective_seeds"], "constraint": m["constraint"],
                       "started": m["started"], "node": m["node"]})  # fmt: skip
    trials.sort(key=lambda t: t["started"])
    for n, t in enumerate(trials, 1):
        t["trial"] = n
        t.pop("started")
        t.update(mean_interval(t.get("objective_seeds")))
    return trials


def mean_interval(xs: list[float | None] | None) -> dict[str, float | None]:
    """The objective's mean over the seeds with its 95 % t interval (`ci_low`, `ci_high`;
    None with one seed or a missing figure)."""
    vals = [float(x) for x in xs or [] if x is not None]
    half = half_width(vals) if len(vals) == len(xs or []) else None
    if half is None:
        return {"ci_low": None, "ci_high": None}
    mean = statistics.fmean(vals)
    return {"ci_low": mean - half, "ci_high": mean + half}


def paired(spec: TuneSpec, a: list[float | None] | None, b: list[float | None] | None) -> dict[str, Any] | None:
    """The mean over the seeds of a - b in the objective (the same seeds: paired), with its 95 %
    t interval, and whether the seeds tell a from b (the interval excludes 0). None when a
    seed has no figure; one seed: no interval, never told apart."""
    if not a or not b or len(a) != len(b) or None in a or None in b:
        return None
    d = [float(x) - float(y) for x, y in zip(a, b, strict=True) if x is not None and y is not None]
    n, mean, half = len(d), statistics.fmean(d), half_width(d)
    if half is None:
        return {"n": n, "mean": mean, "ci_low": None, "ci_high": None, "distinct": False}
    return {"n": n, "mean": mean, "ci_low": mean - half, "ci_high": mean + half,
            "distinct": bool(mean - half > 0 or mean + half < 0)}  # fmt: skip


def flatness(spec: TuneSpec, trials: list[dict[str, Any]], best: dict[str, Any]) -> dict[str, Any]:
    """The trials the seeds cannot tell from the best (feasible ones whose paired difference in
    the objective has an interval that includes 0), and per tunable the range their settings
    span: a tunable spanning most of its space among them does not matter here. `flat` when
    several such trials differ in every tunable."""
    ties = [t for t in trials if t.get("feasible") and t is not best
            and not (paired(spec, t.get("objective_seeds"), best.get("objective_seeds")) or {"distinct": True})[
                "distinct"]]  # fmt: skip
    group = [best, *ties]
    spans = {}
    for k in spec.space:
        vals = sorted({t["config"][k] for t in group})
        spans[k] = {"min": vals[0], "max": vals[-1], "distinct_values": len(vals)}
    differ_everywhere = bool(ties) and all(all(t["config"][k] != best["config"][k] for k in spec.space) for t in ties)
    return {"ties": [t["trial"] for t in ties], "spans": spans,
            "flat": bool((len(ties) >= 2 and differ_everywhere) or len(ties) >= max(3, len(trials) // 4))}  # fmt: skip


def pareto(spec: TuneSpec, trials: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The trials no other trial beats on both the objective (in its direction) and the
    constraint's figure (higher is better), ordered by the objective; the front is what one
    trades between the two; trials with the same figures counted as one point (`same`: how many
    others). Empty without a constraint."""
    if not spec.constraint:
        return []
    sign = -1.0 if spec.maximize else 1.0
    pts = [t for t in trials if t.get("objective") is not None and t.get("constraint") is not None]

    def beats(a: dict[str, Any], b: dict[str, Any]) -> bool:
        ao, bo = sign * float(a["objective"]), sign * float(b["objective"])
        ac, bc = float(a["constraint"]), float(b["constraint"])
        return ao <= bo and ac >= bc and (ao < bo or ac > bc)

    front = [t for t in pts if not any(beats(o, t) for o in pts if o is not t)]
    # Trials with the same two figures are one point of the front: the first stands for them.
    points: dict[tuple[float, float], dict[str, Any]] = {}
    for t in front:
        key = (float(t["objective"]), float(t["constraint"]))
        if key in points:
            points[key]["same"] += 1
        else:
            points[key] = {"trial": t["trial"], "config": t["config"], "objective": t["objective"],
                           "constraint": t["constraint"], "feasible": t["feasible"], "same": 0}  # fmt: skip
    return sorted(points.values(), key=lambda t: sign * t["objective"])


def tune(spec: TuneSpec, out: Path, *, address: str | None = None, cpus: int | None = None) -> dict[str, Any]:
    out.mkdir(parents=True, exist_ok=True)
    base = evaluate(spec, spec.baseline)
    default = evaluate(spec, spec.scheduler)
    floor = floor_of(spec, base)
    d_score, d_ok = score(spec, default, floor)
    ray_init(address, cpus)
    trials = search(spec, out, floor, spec.search, spec.seed, spec.name)
    cluster = cluster_info(address)
    ok = [t for t in trials if "score" in t]
    if not ok:
        raise vsim.RunError(f"every trial failed; the first: {trials[0].get('error') if trials else 'none ran'}")
    best_trial = min(ok, key=lambda t: t["score"])
    best_tun = dict(best_trial["config"])
    best = evaluate(spec, variant(spec, best_tun))
    b_score, b_ok = score(spec, best, floor)
    if b_score >= d_score:
        best_tun, best, b_score, b_ok = {}, default, d_score, d_ok
    obj_b, obj_d = best.get(spec.objective), default.get(spec.objective)
    vs_default = paired(spec, best.get(f"{spec.objective}/seeds"), default.get(f"{spec.objective}/seeds"))
    doc = {
        "kind": "vsim-tune", "vsim": vsim.__version__, "name": spec.name, "spec": spec.path,
        "workload": spec.workload, "device": spec.device, "runtime": spec.runtime, "seeds": spec.seeds,
        "scheduler": spec.scheduler, "objective": spec.objective, "maximize": spec.maximize,
        "constraint": spec.constraint, "min_ratio": spec.min_ratio, "baseline": base, "floor": floor,
        "default": {**default, "feasible": d_ok}, "best": {**best, "feasible": b_ok, "tunables": best_tun},
        "objective_ratio": (obj_b / obj_d) if obj_b and obj_d else None,
        # best - defaults over the seeds: does tuning change anything the seeds can see?
        "vs_default": vs_default,
        "flatness": flatness(spec, ok, best_trial),
        "pareto": pareto(spec, ok),
        "block": spec.block, "dilation": spec.dilation, "kernel_tunables": kernel_values(spec, best_tun),
        "variant": variant(spec, best_tun), "lab_variant": variant(spec, kernel_values(spec, best_tun)),
        "search": spec.search, "samples": spec.samples,
        # The cluster and the node of every trial (node ids as in cluster.nodes).
        "cluster": cluster, "trials_by_node": _by_node(trials), "trials": trials,
    }  # fmt: skip
    (out / OUT_JSON).write_text(json.dumps(doc, indent=1) + "\n")
    write_settings(spec, kernel_values(spec, best_tun), out)
    return doc


def _by_node(trials: list[dict[str, Any]]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for t in trials:
        if t.get("node"):
            counts[t["node"]] = counts.get(t["node"], 0) + 1
    return counts


def incumbent(trials: list[dict[str, Any]]) -> list[float]:
    """The best score found after each trial (lower is better; a failed trial changes nothing)."""
    best, curve = math.inf, []
    for t in trials:
        best = min(best, t.get("score", math.inf))
        curve.append(best)
    return curve


def compare_searches(spec: TuneSpec, out: Path, searches: list[str], search_seeds: list[int], *,
                     tolerance: float = 0.01, address: str | None = None,
                     cpus: int | None = None) -> dict[str, Any]:  # fmt: skip
    """Each search algorithm run once per search seed on the same problem (spec.samples
    trials each): the trials each needed to come within `tolerance` of the best score any run
    found (none: never), and the best each ended with. The scores are means over the spec's
    seeds, so every run is judged on the same figures."""
    out.mkdir(parents=True, exist_ok=True)
    base = evaluate(spec, spec.baseline)
    floor = floor_of(spec, base)
    ray_init(address, cpus)
    runs: list[dict[str, Any]] = []
    for alg in searches:
        for s in search_seeds:
            trials = search(spec, out, floor, alg, s, f"{spec.name}-{alg}-{s}")
            runs.append({"search": alg, "seed": s, "curve": incumbent(trials)})
    target = min(r["curve"][-1] for r in runs if r["curve"])
    reach = target + tolerance * abs(target)
    table = []
    for alg in searches:
        mine = [r for r in runs if r["search"] == alg]
        for r in mine:
            r["trials_to_reach"] = next((n for n, v in enumerate(r["curve"], 1) if v <= reach), None)
        reached = sorted(r["trials_to_reach"] for r in mine if r["trials_to_reach"] is not None)
        finals = [r["curve"][-1] for r in mine]
        table.append({"search": alg, "runs": len(mine), "reached": len(reached),
                      "trials_to_reach_median": statistics.median(reached) if reached else None,
                      "trials_to_reach": [r["trials_to_reach"] for r in mine],
                      "final_best_median": statistics.median(finals), "final_best": finals})  # fmt: skip
    doc = {"kind": "vsim-tune-search-comparison", "vsim": vsim.__version__, "name": spec.name, "spec": spec.path,
           "objective": spec.objective, "maximize": spec.maximize, "constraint": spec.constraint, "floor": floor,
           "samples": spec.samples, "search_seeds": search_seeds, "tolerance": tolerance, "best_score": target,
           "cluster": cluster_info(address), "table": table, "runs": runs}  # fmt: skip
    (out / COMPARISON_JSON).write_text(json.dumps(doc, indent=1) + "\n")
    return doc


def write_settings(spec: TuneSpec, tun: dict[str, int], out: Path) -> None:
    """SCHED-tuned.sh (sysfs writes for one device) and 61-SCHED-tuned.rules (udev), with the
    kernel's values (`kernel_values`). The spec's strings and the settings are checked again
    here (`check_written`): one outside its grammar is refused and nothing is written."""
    check_written(spec)
    check_tunables(spec.path, tun)
    sched = spec.scheduler
    dil = f"; time tunables x{spec.dilation:g}, the served device's dilation" if spec.dilation != 1 else ""
    lines = [
        "#!/bin/sh",
        f"# {sched} tuned by vsim tune ({spec.name}: {spec.objective} on {spec.device}{dil})",
        "# usage: $0 DEVICE (e.g. sdb)",
        "set -e",
        'dev=${1:?usage: $0 DEVICE, e.g. sdb}',
        f"echo {sched} > /sys/block/$dev/queue/scheduler",
        *(f"echo {v} > /sys/block/$dev/queue/iosched/{k}" for k, v in sorted(tun.items())),
    ]  # fmt: skip
    sh = out / f"{sched}-tuned.sh"
    sh.write_text("\n".join(lines) + "\n")
    sh.chmod(0o755)
    attrs = "".join(f', ATTR{{queue/iosched/{k}}}="{v}"' for k, v in sorted(tun.items()))
    # The project's rule's guards (kernel/udev/60-veloces.rules) on every rule, whatever the
    # scheduler: flash only, not zoned, and a device opted out with VELOCES_SKIP=1 is left
    # alone. The tunables are written only where the scheduler in effect is the one tuned: if
    # it failed to load, another scheduler's same-named files (mq-deadline's read_expire, say)
    # are never written. With the defaults (no tunables) there is no second rule.
    guards = 'ENV{VELOCES_SKIP}!="1", ATTR{queue/rotational}=="0", ATTR{queue/zoned}=="none"'
    match = f'ACTION=="add|change", SUBSYSTEM=="block", ENV{{DEVTYPE}}=="disk", KERNEL=="{spec.udev_match}", {guards}'
    second = (
        f"# A second rule writes the tunables only where {sched} is the scheduler in effect\n"
        "# (queue/scheduler reads \"... [name] ...\": only the one in effect is followed by ']').\n"
        if tun else "# The defaults: no tunables to write.\n"
    )  # fmt: skip
    rule = (
        f"# {sched} with the settings vsim tune found ({spec.name}: {spec.objective} on {spec.device}{dil}).\n"
        "# The first rule sets the scheduler on flash disks (not rotational, not zoned, not opted out\n"
        "# with VELOCES_SKIP=1), the guards of the project's own rule (kernel/udev/60-veloces.rules).\n"
        f"{second}"
        f"# Install as /etc/udev/rules.d/61-{sched}-tuned.rules; udevadm control --reload && udevadm trigger\n"
        "# --subsystem-match=block.\n"
        f'{match}, ATTR{{queue/scheduler}}="{sched}"\n'
        + (f'{match}, ATTR{{queue/scheduler}}=="*{sched}]*"{attrs}\n' if tun else "")
    )
    (out / f"61-{sched}-tuned.rules").write_text(rule)


def _fmt(v: Any) -> str:
    return "-" if v is None else f"{v:.6g}" if isinstance(v, float) else str(v)


def print_tuned(spec: TuneSpec, doc: dict[str, Any], out: Path) -> None:
    o = spec.objective
    print(f"{spec.name}: {o} on {spec.device}, seeds {spec.seeds}, {spec.samples} trials ({spec.search} search)")
    for label, ev in (("baseline " + spec.baseline, doc["baseline"]), ("defaults", doc["default"]),
                      ("tuned", doc["best"])):  # fmt: skip
        c = f", {spec.constraint} {_fmt(ev.get(spec.constraint))}" if spec.constraint else ""
        print(f"  {label:<18} {o} {_fmt(ev.get(o))}{c}")
    if doc["floor"] is not None:
        print(f"  constraint: {spec.constraint} >= {doc['floor']:.6g} ({spec.min_ratio} x {spec.baseline})")
    ratio = doc["objective_ratio"]
    print(f"  tuned / defaults: {_fmt(ratio)}; setting: {doc['variant'] or 'the defaults'}")
    d = doc["vs_default"]
    if d and d["ci_low"] is not None:
        told = "told apart from" if d["distinct"] else "NOT told apart from"
        print(f"  tuned - defaults over {d['n']} seeds: {d['mean']:.6g} [{d['ci_low']:.6g}, {d['ci_high']:.6g}] "
              f"(95 %): {told} the defaults")  # fmt: skip
    elif d:
        print("  one seed: the tuned setting cannot be told apart from the defaults (give `seeds` several)")
    f = doc["flatness"]
    if f["flat"]:
        spans = ", ".join(f"{k} {v['min']}..{v['max']}" for k, v in f["spans"].items())
        print(f"  FLAT OPTIMUM: {len(f['ties'])} other trials score the same as the best within the seeds' noise; "
              f"their settings span {spans}: the region is decided, not the point (a tunable spanning most of "
              "its range among them does not matter here)")  # fmt: skip
    elif f["ties"]:
        print(f"  {len(f['ties'])} other trial(s) score the same as the best within the seeds' noise")
    if doc["pareto"]:
        print(f"  Pareto front ({o} vs {spec.constraint}): {len(doc['pareto'])} trial(s)")
        for t in doc["pareto"][:10]:
            mark = ("" if t["feasible"] else "  (below the floor)") + (f"  (+{t['same']} same)" if t["same"] else "")
            print(f"    #{t['trial']:<4} {o} {_fmt(t['objective'])}  {spec.constraint} {_fmt(t['constraint'])}  "
                  f"{variant(spec, t['config'])}{mark}")  # fmt: skip
    print(f"  trials by node ({doc['cluster']['address']}): "
          + ", ".join(f"{n} {c}" for n, c in doc["trials_by_node"].items()))  # fmt: skip
    print(f"  confirm in the lab: --schedulers none,{spec.scheduler},{doc['lab_variant']}")
    print(f"  wrote {out}/{{{OUT_JSON}, {spec.scheduler}-tuned.sh, 61-{spec.scheduler}-tuned.rules}}")


def print_comparison(doc: dict[str, Any], out: Path) -> None:
    print(f"{doc['name']}: search algorithms, {doc['samples']} trials a run, search seeds {doc['search_seeds']}; "
          f"best score any run found {doc['best_score']:.6g} ({doc['objective']}, lower is better)")  # fmt: skip
    print(f"  {'search':<8} {'reached':>8} {'trials to within ' + format(doc['tolerance'], '.0%'):>22} "
          f"{'per run':<30} final best (median)")  # fmt: skip
    for r in doc["table"]:
        per = ",".join("-" if n is None else str(n) for n in r["trials_to_reach"])
        print(f"  {r['search']:<8} {r['reached']:>3}/{r['runs']:<4} {_fmt(r['trials_to_reach_median']):>22} "
              f"{per:<30} {r['final_best_median']:.6g}")  # fmt: skip
    print(f"  wrote {out / COMPARISON_JSON}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="vsim tune", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    ap.add_argument("spec", help="the tuning spec (TOML)")
    ap.add_argument("--out", help="output directory (default build/tune/NAME)")
    ap.add_argument("--address", help="a Ray cluster's address (default: $RAY_ADDRESS, else an embedded local Ray)")
    ap.add_argument("--cpus", type=int, help="cores for the local Ray (default: all)")
    ap.add_argument("--samples", type=int, help="override the spec's samples")
    ap.add_argument("--search", choices=SEARCHES, help="override the spec's search algorithm")
    ap.add_argument(
        "--compare-searches",
        metavar="A,B",
        help="instead of tuning: run each search algorithm "
        "(e.g. random,tpe) once per search seed and compare the trials each needs to reach the best",
    )
    ap.add_argument("--search-seeds", type=int, default=5, metavar="N", help="search seeds for --compare-searches")
    a = ap.parse_args(argv)
    try:
        spec = load_spec(a.spec)
        if a.samples:
            spec.samples = a.samples
        if a.search:
            spec.search = a.search
        out = Path(a.out or Path("build") / "tune" / spec.name)
        if a.compare_searches:
            algs = [x.strip() for x in a.compare_searches.split(",") if x.strip()]
            bad = [x for x in algs if x not in SEARCHES]
            if bad or not algs or a.search_seeds < 1:
                raise SpecError(f"--compare-searches {a.compare_searches}: names from {', '.join(SEARCHES)}, "
                                "and --search-seeds >= 1")  # fmt: skip
            seeds = [spec.seed + i for i in range(a.search_seeds)]
            print_comparison(compare_searches(spec, out, algs, seeds, address=a.address, cpus=a.cpus), out)
            return 0
        print_tuned(spec, tune(spec, out, address=a.address, cpus=a.cpus), out)
    except vsim.VsimError as e:
        print(f"vsim tune: error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
