"""`vsim tune SPEC.toml`: search a scheduler's tunables with Ray Tune for one device model and
workload (a fio job file, a run configuration or a trace) against an objective, e.g. the
read p99 subject to write throughput >= 0.9x that of `none` (the simulator's noop); then
write the settings to apply: a sysfs script and a udev rule (docs/python.md).

Spec keys: name; workload (path, relative to the spec); device (a spec string); runtime;
seeds (each point is the mean over them); scheduler (default veloces); samples and seed (the
random search); objective (a figure of vsim.figures, minimised; `maximize = true` to
maximise); constraint, min_ratio and baseline (the constraint's figure must reach min_ratio x
the baseline scheduler's); [space] (tunable = {min, max, log} or a list of values); udev_match
(the rule's KERNEL match).

Outputs in OUT: tuned.json (the best setting, its figures beside the defaults' and the
baseline's, every trial), veloces-tuned.sh (writes the settings into a device's sysfs),
61-veloces-tuned.rules (a udev rule applying them), and the lab variant to confirm them with
(`vlab compare --schedulers none,veloces,VARIANT`).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import vsim
from vsim.sweep import SpecError, figure, ray_init, read_spec

OUT_JSON = "tuned.json"


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


KEYS = {"name", "workload", "device", "runtime", "seeds", "scheduler", "samples", "seed", "objective", "maximize",
        "constraint", "min_ratio", "baseline", "space", "udev_match", "block", "dilation"}  # fmt: skip
# Tunables in units of time (their declared unit): on a served device, whose model time runs
# `dilation` times slower than the kernel's, the kernel's value is the model's times the dilation.
TIME_UNITS = ("ms", "us", "ns")


def load_spec(path: str | os.PathLike[str]) -> TuneSpec:
    p = Path(path)
    t = read_spec(p, KEYS)
    for k in ("workload", "device", "space"):
        if k not in t:
            raise SpecError(f"{p}: '{k}' is required")
    wl = (p.parent / str(t["workload"])).resolve()
    if not wl.is_file():
        raise SpecError(f"{p}: workload {wl}: no such file")
    spec = TuneSpec(str(p), str(t.get("name", p.stem)), str(wl), str(t["device"]), t.get("runtime"),
                    [int(s) for s in t.get("seeds", [1])])  # fmt: skip
    for k in ("scheduler", "objective", "baseline", "udev_match"):
        if k in t:
            setattr(spec, k, str(t[k]))
    spec.samples, spec.seed = int(t.get("samples", spec.samples)), int(t.get("seed", spec.seed))
    spec.maximize = bool(t.get("maximize", False))
    spec.constraint = str(t["constraint"]) if "constraint" in t else None
    spec.min_ratio = float(t.get("min_ratio", 0.0))
    spec.block = str(t["block"]) if "block" in t else None
    spec.dilation = float(t.get("dilation", 1.0))
    if not spec.dilation >= 1.0:
        raise SpecError(f"{p}: dilation must be >= 1 (a served device's; 1 for a real one)")
    known = {x["name"]: x for x in vsim.tunables(spec.scheduler)}
    for k, v in dict(t["space"]).items():
        if k not in known or not known[k].get("sysfs", True):
            sysfs = [n for n, x in known.items() if x.get("sysfs", True)]
            what = "the simulator's own setting, not a sysfs file of the kernel's" if k in known else "not a tunable of"
            raise SpecError(f"{p}: [space] {k}: {what} {spec.scheduler} (its tunables: {', '.join(sysfs)})")
        lo, hi = known[k]["min"], known[k]["max"]
        vals = v if isinstance(v, list) else [v.get("min"), v.get("max")] if isinstance(v, dict) else None
        if not vals or not all(isinstance(x, int) and lo <= x <= hi for x in vals):
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


def tune(spec: TuneSpec, out: Path, *, address: str | None = None, cpus: int | None = None) -> dict[str, Any]:
    from ray import tune as rtune
    from ray.tune.search.basic_variant import BasicVariantGenerator

    out.mkdir(parents=True, exist_ok=True)
    base = evaluate(spec, spec.baseline)
    default = evaluate(spec, spec.scheduler)
    floor = None
    if spec.constraint:
        b = base.get(spec.constraint)
        if b is None:
            raise SpecError(f"{spec.path}: the baseline {spec.baseline} has no {spec.constraint}")
        floor = spec.min_ratio * float(b)
    d_score, d_ok = score(spec, default, floor)

    def space(v: Any) -> Any:
        if isinstance(v, list):
            return rtune.choice(v)
        if v.get("log"):
            return rtune.lograndint(int(v["min"]), int(v["max"]) + 1)
        return rtune.randint(int(v["min"]), int(v["max"]) + 1)

    def trainable(config: dict[str, Any]) -> None:
        ev = evaluate(spec, variant(spec, {k: int(v) for k, v in config.items()}))
        s, ok = score(spec, ev, floor)
        rtune.report({"score": s, "feasible": ok, "objective": ev.get(spec.objective),
                      "constraint": ev.get(spec.constraint) if spec.constraint else None})  # fmt: skip

    ray_init(address, cpus)
    tuner = rtune.Tuner(
        trainable,
        param_space={k: space(v) for k, v in spec.space.items()},
        tune_config=rtune.TuneConfig(
            metric="score",
            mode="min",
            num_samples=spec.samples,
            search_alg=BasicVariantGenerator(random_state=spec.seed),
        ),
        run_config=rtune.RunConfig(name=spec.name, storage_path=str((out / "ray").resolve()), verbose=0),
    )
    grid = tuner.fit()
    trials: list[dict[str, Any]] = []
    for r in (grid[i] for i in range(len(grid))):
        if r.error is not None or not r.metrics:
            trials.append({"config": r.config, "error": str(r.error)})
            continue
        trials.append({"config": r.config, "score": r.metrics["score"], "feasible": r.metrics["feasible"],
                       "objective": r.metrics["objective"], "constraint": r.metrics["constraint"]})  # fmt: skip
    ok = [t for t in trials if "score" in t]
    if not ok:
        raise vsim.RunError(f"every trial failed; the first: {trials[0].get('error') if trials else 'none ran'}")
    best_trial = min(ok, key=lambda t: t["score"])
    best_tun = {k: int(v) for k, v in best_trial["config"].items()}
    best = evaluate(spec, variant(spec, best_tun))
    b_score, b_ok = score(spec, best, floor)
    if b_score >= d_score:
        best_tun, best, b_score, b_ok = {}, default, d_score, d_ok
    obj_b, obj_d = best.get(spec.objective), default.get(spec.objective)
    doc = {
        "kind": "vsim-tune", "vsim": vsim.__version__, "name": spec.name, "spec": spec.path,
        "workload": spec.workload, "device": spec.device, "runtime": spec.runtime, "seeds": spec.seeds,
        "scheduler": spec.scheduler, "objective": spec.objective, "maximize": spec.maximize,
        "constraint": spec.constraint, "min_ratio": spec.min_ratio, "baseline": base, "floor": floor,
        "default": {**default, "feasible": d_ok}, "best": {**best, "feasible": b_ok, "tunables": best_tun},
        "objective_ratio": (obj_b / obj_d) if obj_b and obj_d else None,
        "block": spec.block, "dilation": spec.dilation, "kernel_tunables": kernel_values(spec, best_tun),
        "variant": variant(spec, best_tun), "lab_variant": variant(spec, kernel_values(spec, best_tun)),
        "samples": spec.samples, "trials": trials,
    }  # fmt: skip
    (out / OUT_JSON).write_text(json.dumps(doc, indent=1) + "\n")
    write_settings(spec, kernel_values(spec, best_tun), out)
    return doc


def write_settings(spec: TuneSpec, tun: dict[str, int], out: Path) -> None:
    """veloces-tuned.sh (sysfs writes for one device) and 61-veloces-tuned.rules (udev), with
    the kernel's values (`kernel_values`)."""
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
    # The project's rule's guards (kernel/udev/60-veloces.rules): flash only, not zoned, and a
    # device opted out with VELOCES_SKIP=1 is left alone. The tunables are written only where
    # the scheduler in effect is the one tuned: if it failed to load, another scheduler's
    # same-named files (mq-deadline's read_expire, say) are never written.
    guards = (
        'ENV{VELOCES_SKIP}!="1", ATTR{queue/rotational}=="0", ATTR{queue/zoned}=="none"'
        if sched == "veloces" else 'ENV{VELOCES_SKIP}!="1"'
    )  # fmt: skip
    match = f'ACTION=="add|change", SUBSYSTEM=="block", ENV{{DEVTYPE}}=="disk", KERNEL=="{spec.udev_match}", {guards}'
    rule = (
        f"# {sched} with the settings vsim tune found ({spec.name}: {spec.objective} on {spec.device}{dil}).\n"
        "# The first rule sets the scheduler, with the guards of the project's own rule; the second\n"
        f"# writes the tunables only where {sched} is the scheduler in effect (queue/scheduler reads\n"
        "# \"... [name] ...\": only the one in effect is followed by ']'). Install as\n"
        "# /etc/udev/rules.d/61-veloces-tuned.rules; udevadm control --reload && udevadm trigger\n"
        "# --subsystem-match=block.\n"
        f'{match}, ATTR{{queue/scheduler}}="{sched}"\n'
        f'{match}, ATTR{{queue/scheduler}}=="*{sched}]*"{attrs}\n'
    )
    (out / f"61-{sched}-tuned.rules").write_text(rule)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="vsim tune", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    ap.add_argument("spec", help="the tuning spec (TOML)")
    ap.add_argument("--out", help="output directory (default build/tune/NAME)")
    ap.add_argument("--address", help="a Ray cluster's address (default: an embedded local Ray on every core)")
    ap.add_argument("--cpus", type=int, help="cores for the local Ray (default: all)")
    ap.add_argument("--samples", type=int, help="override the spec's samples")
    a = ap.parse_args(argv)
    try:
        spec = load_spec(a.spec)
        if a.samples:
            spec.samples = a.samples
        doc = tune(spec, Path(a.out or Path("build") / "tune" / spec.name), address=a.address, cpus=a.cpus)
    except vsim.VsimError as e:
        print(f"vsim tune: error: {e}", file=sys.stderr)
        return 2
    o = spec.objective
    print(f"{spec.name}: {o} on {spec.device}, seeds {spec.seeds}, {spec.samples} trials")
    for label, ev in (("baseline " + spec.baseline, doc["baseline"]), ("defaults", doc["default"]),
                      ("tuned", doc["best"])):  # fmt: skip
        c = f", {spec.constraint} {ev.get(spec.constraint):.6g}" if spec.constraint else ""
        print(f"  {label:<18} {o} {ev.get(o):.6g}{c}")
    if doc["floor"] is not None:
        print(f"  constraint: {spec.constraint} >= {doc['floor']:.6g} ({spec.min_ratio} x {spec.baseline})")
    print(f"  tuned / defaults: {doc['objective_ratio']:.3f}; setting: {doc['variant'] or 'the defaults'}")
    print(f"  confirm in the lab: --schedulers none,{spec.scheduler},{doc['lab_variant']}")
    print(f"  wrote {a.out or Path('build') / 'tune' / spec.name}/{{{OUT_JSON}, {spec.scheduler}-tuned.sh, "
          f"61-{spec.scheduler}-tuned.rules}}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
