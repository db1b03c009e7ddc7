"""`make demo`: what veloces is for, in about three and a half minutes. One boot of kernel 6.12
(one vCPU) with vsim's model of an A1 SD card (one tag, page-mapped FTL) served as a real
block device over ublk, and two jobs under none, mq-deadline, kyber, bfq and veloces, three
times each in rotated order, 2 s a run: a reader beside a write flood (one random 4 KiB reader
at depth 1 beside four interleaved sequential 128 KiB O_DIRECT writers: flood `e-r1` of
vlab.experiments.floods), where veloces is meant to win, and the 70/30 random mix from one
submitter at depth 32 (flood `d`), where there is nothing for a scheduler to win and it must
not lose. Then the simulator answers the same two questions on the same model (`vsim
compare`, seconds), and both are judged against veloces's goals as a lab cell of the matrix
is (vlab.experiments.matrix.judge_ranges: medians, a difference counting only where the
min-max ranges are apart; wins: read p99 <= 0.5x the best other scheduler's with writes >=
0.9x none's; never loses: IOPS >= 0.95x the best other's and read p99 <= 1.1x it).

    build/venv/bin/python -m vlab.experiments.demo [--kernel 6.12] [--device SPEC] [--repeat 3]
        [--runtime 2] [--cpus 1] [--out build/demo]
    build/venv/bin/python -m vlab.experiments.demo --table build/demo    # judge a finished demo again
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from vlab import app, provenance, schedulers
from vlab.devices.spec import load_spec_args
from vlab.experiments import floods, matrix
from vlab.machine.kernels import KernelError, lookup
from vlab.paths import repo_root

CARD = "sd_a1"  # the matrix's name for the card: its model is matrix.DEVICES[CARD]
DEVICE = matrix.LAB_DEVICES[CARD]
JOBS = {"flood": "e-r1", "mix": "d"}  # the demo's name -> the flood family's
SCHEDULERS = [*schedulers.IN_TREE, "veloces"]


Range = matrix.Range
STATES = {
    "met": "met",
    "not met": "NOT met",
    "not shown": "medians meet it, ranges overlap: not shown",
    "met within the spread": "met within the spread (a median misses it, ranges overlap)",
}


def verdict(job: str, figures: dict[str, dict[str, Range | None]], depth: int = 1) -> str:
    """One line: veloces against the best other scheduler (and none), and its goal — wins
    for the flood, never loses for the mix — as vlab.experiments.matrix.judge_ranges judges a
    lab cell (medians, and a difference counts only where the min-max ranges are apart).
    `figures`: scheduler -> {iops, read_p99_us, write_iops} as (median, min, max)."""
    cell = matrix.judge_ranges("demo", JOBS[job], depth, figures)
    r = cell.get("veloces")
    if r is None:
        return f"{job}: not judged (a scheduler's figures are missing)"
    parts = [f"IOPS {r['iops_to_best']:.2f}x {r['best_iops']}'s" if r["iops_to_best"] is not None else "IOPS -"]
    if r["read_p99_to_best"] is not None:
        parts.append(f"read p99 {r['read_p99_to_best']:.2f}x {r['best_read_p99']}'s")
        if r["best_read_p99"] != "none" and r["read_p99_to_none"] is not None:
            parts.append(f"{r['read_p99_to_none']:.2f}x none's")
    if r["writes_to_none"] is not None:
        parts.append(f"writes {r['writes_to_none']:.2f}x none's")
    if job == "flood":
        state = cell["goals"]["wins"]
        goal = f"wins (read p99 <= {matrix.WINS_P99}x the best other's, writes >= {matrix.WINS_WRITES}x none's)"
    else:
        state = cell["goals"]["never_loses"]
        goal = (
            f"never loses (IOPS >= {matrix.NEVER_LOSES_IOPS}x the best other's, read p99 <= {matrix.NEVER_LOSES_P99}x)"
        )
    said = STATES.get(state, state) if state else "does not apply"
    return f"{job}: veloces {', '.join(parts)}; {goal}: {said}"


def sim_figures(summary: Path) -> dict[str, dict[str, Range | None]]:
    """A vsim compare summary (one deterministic run: no spread), read as the matrix reads one
    (matrix.figures): scheduler (lab names) -> figures as (value, value, value)."""
    doc = json.loads(summary.read_text())
    figs: dict[str, dict[str, Range | None]] = {}
    for row in doc.get("schedulers", []):
        f = matrix.figures(row)
        one = {"iops": f["iops"], "write_iops": f["write_iops"], "read_p99_us": f["read_p99_us"]}
        name = str(row.get("scheduler"))
        figs[matrix.LAB_NAME.get(name, name)] = {
            k: None if x is None else (float(x), float(x), float(x)) for k, x in one.items()
        }
    return figs


def verdicts(out: Path, title: str) -> str:
    """veloces against its goals from the lab's summaries and vsim's under `out`, written to
    out/verdicts.md."""
    lines = [f"## veloces against its goals ({title})", ""]
    for name in JOBS:
        summary = out / name / "summary.json"
        lab = matrix.lab_figures(json.loads(summary.read_text())) if summary.is_file() else {}
        lines.append(f"- lab, {verdict(name, lab)}")
    for name, flood in JOBS.items():
        sim_summary = out / "sim" / name / "summary.json"
        if not sim_summary.is_file():
            continue
        trusted = (CARD, flood) in matrix.TRUSTED
        note = (
            "a cell docs/notebooks/fidelity.md trusts"
            if trusted
            else "a prediction: not a cell docs/notebooks/fidelity.md trusts"
        )
        lines.append(f"- vsim, same model ({note}), {verdict(name, sim_figures(sim_summary))}")
    text = "\n".join(lines) + "\n"
    (out / "verdicts.md").write_text(text)
    return text


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m vlab.experiments.demo", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    ap.add_argument("--kernel", default="6.12", help="kernel series (default 6.12: ublk serves the card at depth 1)")
    ap.add_argument("--device", default=DEVICE, help=f"device spec (default {DEVICE})")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--runtime", type=float, default=2.0, help="seconds per run (wall, in the guest; default 2)")
    ap.add_argument(
        "--cpus", type=int, default=1, help="guest CPUs (default 1, as vlab fidelity: docs/notebooks/fidelity.md)"
    )
    ap.add_argument("--sim-runtime", type=float, default=4.0, help="seconds of model time per scheduler in vsim")
    ap.add_argument("--out", type=Path, default=repo_root() / "build" / "demo")
    ap.add_argument("--table", type=Path, metavar="DIR", help="only judge the results in DIR again (no boot)")
    provenance.add_arguments(ap)
    args = ap.parse_args(argv)
    if args.table:
        print(verdicts(args.table.resolve(), f"results in {args.table}"), end="")
        return 0
    try:
        kernel = lookup(args.kernel)
        names = schedulers.parse_list(",".join(SCHEDULERS))
    except (KernelError, schedulers.SchedulerError) as e:
        print(f"demo: {e}", file=sys.stderr)
        return 2
    out: Path = args.out.resolve()
    if not provenance.may_write("demo", out, args.scratch):
        return 2
    jobs_dir = out / "jobs"
    jobs_dir.mkdir(parents=True, exist_ok=True)
    texts = floods.floods()
    jobs = []
    for name, flood in JOBS.items():
        path = jobs_dir / f"{name}.fio"
        path.write_text(texts[flood])
        jobs.append(path)
    comparison = app.Comparison(
        kernel=kernel, devices=[str(d) for d in load_spec_args([args.device])], schedulers=names, jobs=jobs,
        out=out, repeat=args.repeat, runtime=args.runtime, cpus=args.cpus,
        command=["make", "demo"], scratch=args.scratch,
    )  # fmt: skip
    try:
        outcome = app.compare(comparison)
    except app.RequestError as e:
        print(f"demo: {e}", file=sys.stderr)
        return 2
    in_vsim = [*matrix.IN_TREE, "veloces"]
    for (name, flood), path in zip(JOBS.items(), jobs, strict=True):
        try:
            matrix.run_cell(CARD, flood, path, in_vsim, args.sim_runtime, out / "sim" / name, page=True)
        except (RuntimeError, OSError, ValueError) as e:
            print(f"demo: the simulator's side: {e}", file=sys.stderr)
    provenance.write_manifest(out, kernels=[kernel.release], scratch=args.scratch, command=["make", "demo"])
    print(verdicts(out, f"{kernel.release}, {args.device}, {args.cpus} vCPU; medians of {args.repeat}"))
    print(f"demo: tables {out / 'overview.md'}, pages {out / 'flood' / 'report.html'}, {out / 'mix' / 'report.html'}; "
          f"vsim's in {out / 'sim'}")  # fmt: skip
    return outcome.status


if __name__ == "__main__":
    sys.exit(main())
