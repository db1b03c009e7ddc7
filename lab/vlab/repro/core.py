"""The reproductions' shared core: the matrix of cells, the script job each cell runs, and
the figures (medians, ratios, AI) made from the cells' results.

A cell is one `vlab compare` in one boot: one device, one filesystem, one workload, every
scheduler in rotated order over the repetitions (so ratios between schedulers are within
one boot, as in every comparison of the lab). Its folder is a complete compare folder
(summary.json, raw/, report.html). A cell that fails is marked and the matrix goes on;
`--resume` skips cells whose summary is complete.
"""

from __future__ import annotations

import json
import math
import statistics
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vsim import verdict as rule

from vlab import verdict
from vlab.repro import stats
from vlab.stats import Metric, device_name, workload_in_model_time
from vlab.workloads import filebench
from vlab.workloads.filebench import Personality

LAB = Path(__file__).resolve().parents[2]  # the guest sees the host's files: the parser runs from here

# The seeds' schedulers (single-queue Linux) and their blk-mq heirs, as the reports state.
PAPER_TO_MQ = {"noop": "none", "deadline": "mq-deadline", "cfq": "bfq", "veloces": "veloces"}
SCHEDULERS = ("none", "mq-deadline", "kyber", "bfq", "veloces")


@dataclass(frozen=True)
class Workload:
    """A filebench personality or dbench with N clients; `metric` is the script's figure
    the tables use (IOPS for filebench, over its window and the sync after it; MB/s for
    dbench, as the seeds report them)."""

    name: str
    personality: Personality | None = None
    clients: int = 0
    # Guest sysctls the workload's cells run under (`vlab compare --sysctl`).
    sysctl: tuple[tuple[str, str], ...] = ()

    @property
    def metric(self) -> str:
        """The run's figure the tables and verdicts use. For filebench (since 2026-11-30) its
        operations over the window plus the `sync` after it: a run is charged for the writes
        it left in the page cache (on the SATA model in GC steady state fileserver's sync took
        3-17 times its 10-s window), so a scheduler that holds writes past the window's end does
        not count that as throughput (docs/notebooks/reproductions.md, "Charging the writeback")."""
        return "filebench_sustained_ops_per_s" if self.personality else "dbench_mb_s"

    @property
    def window_metric(self) -> str | None:
        """filebench's rate over its window alone (the `sync` after it not charged), shown
        beside the method's figure where the writeback is most of a run; None for dbench."""
        return "filebench_ops_per_s" if self.personality else None

    @property
    def unit(self) -> str:
        return "IOPS" if self.personality else "MB/s"

    @property
    def measured_share(self) -> float:
        """The share of the run's time limit its figure covers: filebench's whole window;
        dbench 4.0 warms up for a fifth of its time limit (`-t`) and reports the rest."""
        return 1.0 if self.personality else 0.8


@dataclass(frozen=True)
class Filesystem:
    """mkfs and mount of one filesystem, both without discard: a served device in GC
    steady state must stay in it (mkfs would trim every block; f2fs and btrfs would
    trim freed blocks on their own)."""

    name: str
    mkfs: str
    mount_options: str = ""


FILESYSTEMS = {
    f.name: f
    for f in (
        # Inode tables and journal not zeroed by mkfs (on a device in GC steady state that
        # is ~100 MB of writes, 100 s under emulation, per run), nor later by the kernel's
        # lazy-init thread during a measured run (noinit_itable).
        Filesystem("ext4", "mkfs.ext4 -q -F -E nodiscard,lazy_itable_init=1,lazy_journal_init=1", "noinit_itable"),
        # Seed 001's other "extended file systems". Without ext4's uninit_bg, mke2fs zeroes
        # their inode tables itself (lazy_itable_init does not apply); the kernel mounts
        # both with its ext4 driver (6.12 has no separate ext2 or ext3 driver).
        Filesystem("ext2", "mkfs.ext2 -q -F -E nodiscard"),
        Filesystem("ext3", "mkfs.ext3 -q -F -E nodiscard,lazy_journal_init=1"),
        Filesystem("xfs", "mkfs.xfs -q -f -K"),
        Filesystem("btrfs", "mkfs.btrfs -q -f -K", "nodiscard"),
        Filesystem("f2fs", "mkfs.f2fs -q -f -t 0", "nodiscard"),
        Filesystem("nilfs2", "mkfs.nilfs2 -q -f -K"),
    )
}

# The devices. `sata-*`: vsim's 2009-2011 SATA MLC SSD (`mlc_sata`: seed 001's SSD-I as Table 2
# gives it, rates and power; channels, dies and NCQ 32 are ours), served over ublk at its own
# depth, fresh and in GC steady state (`precondition=full`: every page written and overwritten
# at random before the first request); the seeds' full matrices run on these. `cheapflash-*`: the A1 SD card model
# (depth 1) over ublk, the second device. `ssd-*`: the consumer TLC NVMe model over NBD (the
# devices of the first reproductions, kept to compare with them). null_blk (memory-backed,
# 50 us, 32 tags) is the control without an FTL.
DEVICES = {
    "sata-fresh": "vsim:ssd:preset=mlc_sata,blocks_per_plane=64,precondition=none,transport=ublk,setup_dilation=1",
    "sata-steady": "vsim:ssd:preset=mlc_sata,blocks_per_plane=64,precondition=full,transport=ublk,setup_dilation=1",
    "cheapflash-fresh": "vsim:cheapflash:preset=sd_a1,size=512m,precondition=none,transport=ublk,setup_dilation=1",
    "cheapflash-steady": "vsim:cheapflash:preset=sd_a1,size=512m,precondition=full,transport=ublk,setup_dilation=1",
    "ssd-fresh": "vsim:ssd:blocks_per_plane=64,precondition=none,setup_dilation=1",
    "ssd-steady": "vsim:ssd:blocks_per_plane=64,precondition=full,setup_dilation=1",
    "nullblk": "null_blk:memory_backed=1,size=1024,irqmode=2,completion_nsec=50000,hw_queue_depth=32,submit_queues=1",
}
# A fresh device is made fresh again before every run (the whole device discarded: the
# FTL unmaps every page), or the runs before it would age it; one in steady state is not.
FRESH = {"sata-fresh", "cheapflash-fresh", "ssd-fresh"}
# The full matrices' share of model time the served device must be busy (issue 41: the
# device, not the emulated guest, sets the pace): run.calibrate raises the dilation below it.
BUSY_TARGET = verdict.BUSY_MIN

# How long a run must be in the device's own time for its figure to be judged: the one rule,
# used by the calibration (run.calibrate: MIN_PASSES), by a cell's measured window
# (`window_s`: MIN_DEVICE_S) and by the verdicts (`short_runs`: both).
#
# Passes of its flow a filebench run should complete for its operation count to be a rate.
# Where the device sets the pace, the passes a run of fixed wall time completes fall as
# 1/dilation: the calibration caps its dilation at dilation x passes / MIN_PASSES. Seed 000's
# SATA varmail asked 290 from a 10-s run that had measured the threads' first steps (61 %
# busy at 50); at 290 no run got past a first fsync. Ten, not one: runs at one dilation vary
# (the card's webserver at 120: 0-6 passes a run).
MIN_PASSES = 10
# Seconds of the device's (model) time a run must cover, the `sync` after a filebench window
# included (it is charged in the figure). The paper's runs were 600 s; ours are `runtime_s` of
# wall time at the cell's dilation D, runtime_s / D of the device's, and seed 000's card varmail
# cell at D 91 covered 0.21 s a run. One second is the floor at which the schedulers' own time
# scales are inside a run: the lab scales their time tunables with the dilation so that they
# hold in model time, and veloces's write deadline (write_expire) is 1,000 ms, mq-deadline's
# read deadline 500 ms — a run shorter than a second never lets veloces's deadline policy for
# writes act, and what it measures is the order of a few hundred requests, not a scheduler's
# steady state. It is a floor, not enough: the paper's 600 s were not attempted (a matrix of
# weeks under emulation).
MIN_DEVICE_S = 1.0


@dataclass(frozen=True)
class Cell:
    device: str
    fs: str
    workload: Workload

    @property
    def id(self) -> str:
        return f"{self.device}/{self.fs}-{self.workload.name}"


@dataclass
class Plan:
    """What one reproduction run does; `cells()` is the matrix, in the order it runs."""

    seed: str
    devices: list[str]
    filesystems: list[str]
    workloads: list[Workload]
    schedulers: list[str]
    repeat: int
    runtime_s: int
    kernel: str = "6.12"
    quick: bool = False
    busy_target: float | None = None  # run.calibrate: None runs at the spec's dilation
    # Every served cell at this one dilation, not calibrated (`vlab repro --dilation`): ratios
    # between cells (seed 001's filesystems) are judged only at one dilation.
    dilation: float | None = None

    def cells(self) -> list[Cell]:
        return [Cell(d, f, w) for d in self.devices for f in self.filesystems for w in self.workloads]

    @classmethod
    def quick_variant(cls, seed: str, device: str, workloads: list[Workload]) -> Plan:
        """The variant `make test` runs: one device, ext4, mq-deadline against veloces,
        2 repetitions of 5 s."""
        return cls(seed, [device], ["ext4"], workloads, ["mq-deadline", "veloces"], 2, 5, quick=True)

    @classmethod
    def full_matrix(cls, seed: str, devices: list[str], filesystems: list[str], workloads: list[Workload],
                    runtime_s: int = 10) -> Plan:  # fmt: skip
        """The full matrix: every scheduler, 5 rotated repetitions of `runtime_s` (wall), each
        served device at a dilation that keeps it busy (BUSY_TARGET)."""
        return cls(seed, devices, filesystems, workloads, list(SCHEDULERS), 5, runtime_s, busy_target=BUSY_TARGET)


def window_s(runtime_s: int, dilation: float, workload: Workload) -> int:
    """The measured window (wall seconds) a cell's runs get at its dilation: the plan's
    `runtime_s`, lengthened where that would cover less than MIN_DEVICE_S of the device's time
    in the part the figure measures (dbench: after its warm-up). Seed 000's 10-s runs at
    dilation 91 become 91-s runs; seed 001's 30-s runs at 230 become 230-s ones; dbench at 50,
    whose 10-s runs completed no operation (0.16 s of the device's time measured), 63 s."""
    return max(runtime_s, math.ceil(MIN_DEVICE_S * dilation / workload.measured_share))


def job_script(cell: Cell, runtime_s: int, fb_binary: Path | None) -> str:
    """The cell's `vlab compare` script job (setup, run, teardown; docs/lab.md, "Script
    jobs"): a fresh filesystem for every run; filebench's file set created in setup (not
    measured), reused by the measured run; the figures as `vlab-metric` lines."""
    fs = FILESYSTEMS[cell.fs]
    w = cell.workload
    mnt = "/tmp/vlab-repro"
    opts = f"-o {fs.mount_options} " if fs.mount_options else ""
    lines = [
        "#!/bin/bash",
        f"# vlab repro: {w.name} on {fs.name} (generated by lab/vlab/repro/core.py; docs/notebooks/reproductions.md).",
        "set -euo pipefail",
        "phase=$1 dev=$2",
        f"mnt={mnt}",
        'fail() { echo "$1" | tail -20 >&2; exit 1; }',
        "case $phase in",
        "setup)",
        "    mkdir -p $mnt",
        *(['    blkdiscard -f "$dev"'] if cell.device in FRESH else []),
        f'    {fs.mkfs} "$dev" > /tmp/vlab-repro-mkfs.log 2>&1 || fail "$(cat /tmp/vlab-repro-mkfs.log)"',
        f'    mount -t {fs.name} {opts}"$dev" $mnt',
    ]
    if w.personality:
        if fb_binary is None:
            raise filebench.FilebenchError("filebench is needed for " + w.name)
        create = filebench.personality(w.personality, mnt, None)
        run = filebench.personality(w.personality, mnt, runtime_s)
        lines += [
            "    cat > /tmp/vlab-repro-create.f <<'VLAB_EOF'",
            create.rstrip("\n"),
            "VLAB_EOF",
            f'    out=$({fb_binary} -f /tmp/vlab-repro-create.f 2>&1) || fail "$out"',
        ]
    lines += [
        "    sync",
        "    echo 3 > /proc/sys/vm/drop_caches ;;",
        "run)",
    ]
    if w.personality:
        lines += [
            "    cat > /tmp/vlab-repro-run.f <<'VLAB_EOF'",
            run.rstrip("\n"),
            "VLAB_EOF",
            f'    out=$({fb_binary} -f /tmp/vlab-repro-run.f 2>&1) || fail "$out"',
            # What the run left in the page cache, written back at the run's dilation: its
            # time is charged in filebench_sustained_ops_per_s (a 10-s window otherwise
            # favours a scheduler that holds writes back past its end).
            "    s0=$(date +%s.%N); sync; s1=$(date +%s.%N)",
            '    sync_s=$(awk -v a="$s0" -v b="$s1" \'BEGIN { print b - a }\')',
            # Its IO Summary line as `vlab-metric` lines (vlab.workloads.filebench, one parser).
            f'    echo "$out" | PYTHONPATH={LAB} {sys.executable} -m vlab.workloads.filebench '
            f'--window-s {runtime_s} --sync-s "$sync_s" ;;',
        ]
    else:
        lines += [
            "    loadfile=$(ls /usr/share/dbench/client.txt* 2>/dev/null | head -1)",
            # No cleanup inside the measured phase (its unlinks at the run's dilation): the
            # filesystem is made anew for every run.
            f'    out=$(dbench -D $mnt -t {runtime_s} --skip-cleanup -c "$loadfile" {w.clients} 2>&1) || fail "$out"',
            '    t=$(echo "$out" | awk \'/^Throughput .* MB\\/sec/ { lat = $0; sub(/.*max_latency=/, "", lat);'
            ' sub(/ ms.*/, "", lat); print $2, lat }\' | tail -1)',
            '    [ -n "$t" ] || fail "dbench printed no Throughput line: $out"',
            '    read -r mb_s max_ms <<< "$t"',
            '    echo "vlab-metric dbench_mb_s $mb_s"',
            '    echo "vlab-metric dbench_max_lat_ms $max_ms" ;;',
        ]
    lines += [
        "teardown)",
        "    umount $mnt ;;",
        "*)",
        '    echo "usage: $0 setup|run|teardown DEVICE" >&2; exit 2 ;;',
        "esac",
    ]
    return "\n".join(lines) + "\n"


# ---- figures from a cell's folder ------------------------------------------------------


def cell_runs(folder: Path, schedulers: Sequence[str], repeat: int) -> dict[str, list[dict[str, Any]]]:
    """Each run's figures of a finished (or partly finished) cell: the script's metrics in
    model time, the device's energy and the run's model seconds, per scheduler."""
    try:
        summary = json.loads((folder / "summary.json").read_text())
        dilation = float(summary.get("dilation") or 1.0)
    except (OSError, ValueError, AttributeError):
        dilation = 1.0
    out: dict[str, list[dict[str, Any]]] = {s: [] for s in schedulers}
    for rep in range(repeat):
        for sched in schedulers:
            path = folder / "raw" / device_name(rep, sched)
            try:
                d = json.loads(path.read_text())
            except (OSError, ValueError):
                continue
            run = {
                k.removeprefix("workload_"): workload_in_model_time(k, v, dilation)
                for k, v in d.items()
                if k.startswith("workload_") and isinstance(v, int | float)
            }
            if d.get("model_s"):
                run["energy_j"] = d.get("energy_j")
                run["model_s"] = d.get("model_s")
                if isinstance(d.get("busy_s"), int | float):
                    # The device's utilisation: the share of the run's model time with a
                    # request outstanding (well under 1: the guest, not the device, set the pace).
                    run["busy"] = d["busy_s"] / d["model_s"]
            run["rep"] = rep + 1
            out[sched].append(run)
    return out


def ai(run: dict[str, Any], metric: str) -> float | None:
    """Seed 001's aggregative indicator of one run: performance per energy. The paper's
    runs all lasted 600 s, so performance / energy there orders pairs as performance / mean
    power does; ours is the latter (IOPS or MB/s per watt: operations or MB per joule),
    which does not depend on how long the measured phase's set-up took."""
    perf, e, t = run.get(metric), run.get("energy_j"), run.get("model_s")
    if isinstance(perf, int | float) and isinstance(e, int | float) and isinstance(t, int | float) and e > 0 < t:
        return perf / (e / t)
    return None


def cell_figures(folder: Path, workload: Workload, schedulers: Sequence[str], repeat: int) -> dict[str, dict[str, Any]]:
    """Per scheduler: the workload's figure, the device energy, the mean power, AI and the
    device's utilisation (busy)."""
    runs = cell_runs(folder, schedulers, repeat)
    stalled = stalled_runs(runs)
    short = short_runs(runs)
    # The lab's one verdict rule (vlab.verdict, rule 1): a cell whose device the guest kept
    # below BUSY_MIN under a scheduler is not judged (`guest_bound`); its figures are kept.
    shares = {s: Metric.of([r.get("busy") for r in runs[s]]).median for s in schedulers}
    bound = verdict.bound(shares)
    guest_bound = None if bound.judged else bound.why
    out = {}
    for s in schedulers:
        rs = runs[s]
        per_run = {
            "perf": [None if stalled else r.get(workload.metric) for r in rs],
            "energy_j": [r.get("energy_j") for r in rs],
            "power_w": [r["energy_j"] / r["model_s"] if r.get("energy_j") and r.get("model_s") else None for r in rs],
            "ai": [None if stalled else ai(r, workload.metric) for r in rs],
            "busy": [r.get("busy") for r in rs],
            "device_s": [r.get("model_s") for r in rs],  # the run's model time, the sync included
        }
        if w := workload.window_metric:
            per_run["window"] = [None if stalled else r.get(w) for r in rs]
            per_run["sync_share"] = [sync_share(r, workload.metric, w) for r in rs]
        fig: dict[str, Any] = {k: Metric.of(v).as_json() for k, v in per_run.items()}
        # Each repetition's figures by its number: the pairing the intervals use (a
        # scheduler's repetition i ran in the same rotation as the others' i).
        fig["by_rep"] = {
            k: {str(r["rep"]): x for r, x in zip(rs, v, strict=True) if x is not None} for k, v in per_run.items()
        }
        fig["runs"] = len(rs)
        if stalled:
            fig["stalled"] = stalled
        if guest_bound:
            fig["guest_bound"] = guest_bound
        if short:
            fig["short"] = short
        if alone := stalled_reps(rs):
            fig["stalled_reps"] = alone  # its own slowness where no other stalled with it
        out[s] = fig
    return out


def sync_share(run: dict[str, Any], metric: str, window: str) -> float | None:
    """The share of a run's charged time that was the `sync` after its window: 1 - the
    rate over window and sync / the rate over the window (the same operations), at least 0:
    filebench times its window itself, so a `sync` of a tenth of a second can leave the
    rate over both a hair above its own."""
    a, b = run.get(metric), run.get(window)
    if isinstance(a, int | float) and isinstance(b, int | float) and b > 0:
        return max(0.0, 1 - a / b)
    return None


def stalled_runs(runs: dict[str, list[dict[str, Any]]]) -> str | None:
    """Why a cell's operation counts measure no rate, or None. A filebench run in which no
    thread got through its flow once (`filebench_passes` 0: at a high dilation a 10-s run can
    end before any thread's first fsync returns) counts the threads' steps before their first
    wait. Where two or more schedulers stalled so in one repetition their counts are about
    the same whatever the schedulers do (seed 000's SATA varmail at dilation 290: 45
    operations under four schedulers), so a paired ratio between them measures nothing and
    the whole cell goes unjudged (leaving out only those repetitions would favour the
    schedulers that stalled less). One scheduler alone stalling in a repetition is its own
    slowness — the others got through the flow in the same rotation (the card's varmail,
    2026-11-30: bfq once, with 126 operations against 258-305 under the others) — and is
    counted as measured. Runs from before the count was recorded (2026-11-30) are not
    checked."""
    by_rep: dict[int, list[str]] = {}
    for sched, rs in runs.items():
        for rep in stalled_reps(rs):
            by_rep.setdefault(rep, []).append(sched)
    together = {rep: s for rep, s in sorted(by_rep.items()) if len(s) > 1}
    if not together:
        return None
    n = sum(len(s) for s in together.values())
    total = sum(len(rs) for rs in runs.values())
    where = "; ".join(f"repetition {rep}: {', '.join(s)}" for rep, s in together.items())
    return (
        f"{n} of {total} runs completed no pass of the workload's flow (dbench: no operation), two or more "
        "in one repetition "
        f"({where}): their operation counts measure the start, not a rate"
    )


def stalled_reps(runs: list[dict[str, Any]]) -> list[int]:
    """The repetitions in which a scheduler's run completed no pass of its flow (dbench: no
    operation, its figure 0 MB/s, as its 10-s runs on the SATA model at dilation 50 did)."""
    return [int(r.get("rep", 0)) for r in runs if r.get(filebench.PASSES) == 0 or r.get("dbench_mb_s") == 0]


def min_device_s(runs: dict[str, list[dict[str, Any]]]) -> tuple[float, str]:
    """The device time a cell's runs must each cover (`short_runs`) and why, in words: at least
    MIN_DEVICE_S, and MIN_PASSES passes of the flow at the cell's device time a pass (the median
    over its runs of a run's model time / its passes; runs without a pass counted: dbench,
    older runs, stalled ones, left out)."""
    per_pass = [r["model_s"] / r[filebench.PASSES] for rs in runs.values() for r in rs
                if _num(r.get("model_s")) and _num(r.get(filebench.PASSES))]  # fmt: skip
    floor = f"at least {MIN_DEVICE_S:g} s: veloces's write deadline is 1 s of model time"
    if not per_pass:
        return MIN_DEVICE_S, floor
    a_pass = statistics.median(per_pass)
    if MIN_PASSES * a_pass <= MIN_DEVICE_S:
        return MIN_DEVICE_S, floor
    return MIN_PASSES * a_pass, f"{MIN_PASSES} passes of the flow at {a_pass:.3g} s a pass"


def _num(v: Any) -> bool:
    return isinstance(v, int | float) and v > 0


def short_runs(runs: dict[str, list[dict[str, Any]]]) -> str | None:
    """Why a cell's runs are too short to judge, or None: a scheduler's median run covered less
    of the device's time than `min_device_s` (the cell's shortest, by scheduler). Runs that
    report no model time (null_blk, a real disk) are not checked."""
    medians = {s: statistics.median(t) for s, rs in runs.items() if (t := [r["model_s"] for r in rs
               if _num(r.get("model_s"))])}  # fmt: skip
    if not medians:
        return None
    need, why = min_device_s(runs)
    shortest = min(medians, key=lambda s: medians[s])
    if medians[shortest] >= need:
        return None
    return (
        f"runs of {medians[shortest]:.2f} s of device time ({shortest}'s median run; the paper's runs were 600 s), "
        f"below the minimum {need:.2f} s ({why})"
    )


def unjudged(figs: dict[str, Any]) -> str | None:
    """Why a cell's figures (`cell_figures`) are not judged, every reason in one line, or None:
    its runs stalled (`stalled_runs`), the guest kept its device below BUSY_MIN (vlab.verdict,
    rule 1), its runs were too short (`short_runs`)."""
    reasons: list[str] = []
    for key in ("stalled", "guest_bound", "short"):
        why = next((f[key] for f in figs.values() if isinstance(f, dict) and f.get(key)), None)
        if why:
            reasons.append(why)
    return "; ".join(reasons) or None


def cell_dilation(folder: Path) -> float | None:
    """The dilation a cell's runs ran at (its compare summary's; 1 where it records none: an
    undilated device), or None where the folder has no summary."""
    try:
        summary = json.loads((folder / "summary.json").read_text())
    except (OSError, ValueError):
        return None
    return float(summary.get("dilation") or 1.0) if isinstance(summary, dict) else None


def device_time(figs: dict[str, Any]) -> tuple[float, float, float] | None:
    """The device (model) time a cell's runs covered, over every scheduler's runs: (median,
    least, most), for the cells table; None where its runs report none."""
    t = [x for f in figs.values() if isinstance(f, dict) for x in (f.get("device_s") or {}).get("points") or []]
    return (statistics.median(t), min(t), max(t)) if t else None


def by_rep(figs: dict[str, Any], scheduler: str, what: str) -> dict[int, float | None]:
    """One scheduler's figure per repetition number, from a cell's `figures`."""
    d = ((figs.get(scheduler) or {}).get("by_rep") or {}).get(what) or {}
    return {int(k): v for k, v in d.items()}


def points(figs: dict[str, Any], scheduler: str, what: str) -> list[float]:
    return list(((figs.get(scheduler) or {}).get(what) or {}).get("points") or [])


# ---- verdicts --------------------------------------------------------------------------


@dataclass
class Verdict:
    """One claim of a paper, judged on our figures: "holds", "does not hold",
    "inconclusive" (vlab.repro.stats: the interval straddles the claim) or "not judged"
    (the figures it needs are missing), with the evidence in words, the criterion that
    decided it, and the ratios with their intervals (`intervals`: name -> Ratio.as_json
    plus the paper's figure and whether the interval is narrower than its effect)."""

    claim: str
    where: str
    verdict: str
    evidence: str
    criterion: str = ""
    intervals: dict[str, dict[str, Any]] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"claim": self.claim, "where": self.where, "verdict": self.verdict,
                               "evidence": self.evidence}  # fmt: skip
        if self.criterion:
            out["criterion"] = self.criterion
        if self.intervals:
            out["intervals"] = self.intervals
        return out


HOLDS, PARTLY, FAILS, INCONCLUSIVE = stats.HOLDS, stats.PARTLY, stats.FAILS, stats.INCONCLUSIVE
NOT_REPRODUCIBLE, NOT_JUDGED = stats.NOT_REPRODUCIBLE, stats.NOT_JUDGED
GRADES = rule.GRADES


def combine(grades: Sequence[str], most: bool = False) -> str:
    """A claim made of several parts (veloces above each rival; a claim "in most cases",
    `most`), graded by the verdict rule (vsim.verdict.combine: its words are
    `combine_criterion`'s). Parts that are not judged are left out by the caller, with why."""
    return rule.combine(grades, most)


def combine_criterion(most: bool = False) -> str:
    return rule.combine_criterion(most)


def interval_json(r: stats.Ratio | None, claim: stats.Claim) -> dict[str, Any]:
    out: dict[str, Any] = r.as_json() if r else {}
    out["paper"] = claim.paper
    out["grade"] = stats.grade(r, claim)
    if methods := stats.methods_json(r, claim):
        out["methods"] = methods  # t, BCa and percentile: the grade is theirs where they agree
    out["narrower_than_effect"] = stats.decisive(r, claim)
    out["reps_to_decide"] = stats.reps_to_decide(r, claim)
    return out


@dataclass
class Analysis:
    """What a seed makes of the cells: tables beside the paper's, a verdict per claim, and
    numeric cases (the paper's figure and ours, e.g. a ratio to the baseline) for the plot."""

    tables: list[TableOut] = field(default_factory=list)
    verdicts: list[Verdict] = field(default_factory=list)
    cases: list[dict[str, Any]] = field(default_factory=list)
    rankings: list[Ranking] = field(default_factory=list)


def best_of(values: dict[str, dict[str, Any]]) -> str | None:
    """The name with the highest median (None when none has one)."""
    present = {k: v["median"] for k, v in values.items() if v.get("median") is not None}
    return max(present, key=lambda x: present[x]) if present else None


# The seeds' filebench personalities: filebench's own defaults, which are also seed 001's
# Table 1 (file size, files, threads, I/O sizes). fileserver's file set is scaled 1/10
# (1,000 files of 128 KB mean, 128 MB) so that it fits the 512 MB cheap card with room to
# age; varmail's and webserver's (16 MB) are the paper's.
FILESERVER_SCALE = 10
# Small dirty limits make writers wait for the device inside the measured phase, as on a
# machine whose page cache is small beside its device's pace, and keep the backlog a run
# leaves to ~4 MiB. Without them a served device at its dilation sees a run's writes only
# when the kernel's wall-clock timers push them: dbench's backlog of 10 s took the SATA model
# at dilation 50 over 120 s of wall time per fsync (hung-task reports, the cell killed at
# 515 s; 2026-11-28), and a 30-s fileserver run left most of its data in the page cache,
# more of it on a filesystem without a journal to commit it every 5 s (ext2 wrote 0.11
# device pages per operation, ext4 1.08; with the limits 1.2-2.4 and 1.9-6.6, and ext2's
# operations a second of model time fell 36- to 78-fold: 2026-11-29, docs/notebooks/reproductions.md).
# varmail fsyncs after every append: its writes reach the device within the run either way.
DIRTY_LIMITS = (("vm.dirty_bytes", "4194304"), ("vm.dirty_background_bytes", "1048576"))
FILEBENCH = {
    w.name: w
    for w in (
        Workload("varmail", Personality("varmail", nfiles=1000, mean_file_kb=16, threads=16)),
        Workload(
            "fileserver",
            Personality("fileserver", nfiles=10000 // FILESERVER_SCALE, mean_file_kb=128, threads=50),
            sysctl=DIRTY_LIMITS,
        ),
        Workload("webserver", Personality("webserver", nfiles=1000, mean_file_kb=16, threads=100), sysctl=DIRTY_LIMITS),
    )
}
DBENCH = {f"dbench-{n}": Workload(f"dbench-{n}", clients=n, sysctl=DIRTY_LIMITS) for n in (8, 16, 32)}


# ---- the tables beside the paper's -----------------------------------------------------


@dataclass
class Ranking:
    """One figure over many pairs (e.g. AI per filesystem x scheduler), for the report's
    ranking plot: each item {"label", "group" (the colour), "key" (a JSON Pointer to the
    figure in summary.json), "median", "min", "max", "points"}."""

    title: str
    unit: str
    items: list[dict[str, Any]]

    def as_json(self) -> dict[str, Any]:
        return {"title": self.title, "unit": self.unit, "items": self.items}


@dataclass
class TableOut:
    """A table of a reproduction's summary: each cell {"text", "value"?, "key"?} where
    `key` is a JSON Pointer into summary.json (the HTML report's numbers are checked
    against it)."""

    title: str
    header: list[str]
    rows: list[list[dict[str, Any]]]
    note: str = ""

    def as_json(self) -> dict[str, Any]:
        return {"title": self.title, "header": self.header, "rows": self.rows, "note": self.note}


def text(s: str) -> dict[str, Any]:
    return {"text": s}


def number(v: float | None, digits: int = 0, key: str | None = None, suffix: str = "") -> dict[str, Any]:
    if v is None:
        return {"text": "-"}
    out: dict[str, Any] = {"text": f"{v:,.{digits}f}{suffix}", "value": v}
    if key:
        out["key"] = key
    return out


def against_baseline(
    plan: Plan, cells: list[dict[str, Any]], what: str = "perf", subject: str | None = None
) -> TableOut | None:
    """Every scheduler against the baseline (mq-deadline, or the plan's first) in each cell
    that ran: the cell's figure, paired by repetition, with its 95 % interval; and how many
    intervals lie wholly off 1, beside how many would by chance at that level. `what`
    "window": filebench's rate over its window alone, with the `sync`'s share of the runs
    (the method charges the sync; this shows how much of a figure it is). `subject` (a
    scheduler of the plan): that scheduler / each of the others instead, with its wins and
    losses beyond the interval counted."""
    if subject is not None and subject not in plan.schedulers:
        return None
    base = subject or ("mq-deadline" if "mq-deadline" in plan.schedulers else plan.schedulers[0])
    others = [s for s in plan.schedulers if s != base]
    window = what == "window"
    rows: list[list[dict[str, Any]]] = []
    off = total = 0
    wins: dict[str, list[str]] = {}
    losses: dict[str, list[str]] = {}
    for c in cells:
        figs = c.get("figures") or {}
        if c.get("status") != "ok" or base not in figs or (window and not by_rep(figs, base, what)):
            continue
        row = [text(c["id"])]
        mdes = []
        for s in others:
            num, den = (s, base) if subject is None else (base, s)
            r = ratio_of(figs, num, den, what) if s in figs else None
            if r is not None and r.low is not None and r.high is not None:
                total += 1
                off += r.high < 1 or r.low > 1
                if r.low > 1:
                    wins.setdefault(c["id"], []).append(s)
                elif r.high < 1:
                    losses.setdefault(c["id"], []).append(s)
            if r is not None and r.mde is not None:
                mdes.append(100 * r.mde)
            row.append(text(r.text() if r else "-"))
        row.append(text(f"{min(mdes):.0f}-{max(mdes):.0f} %" if mdes else "-"))
        if window:
            shares = [x for s in plan.schedulers for x in points(figs, s, "sync_share")]
            row.append(
                text(
                    f"{100 * statistics.median(shares):.0f} % ({100 * min(shares):.0f}-{100 * max(shares):.0f})"
                    if shares
                    else "-"
                )
            )
        rows.append(row)
    if not rows or not others:
        return None
    chance = (1 - stats.LEVEL) * total
    figure = (
        "filebench's operations a second over its window alone (not charged for the sync after it)"
        if window
        else "Each cell's figure (IOPS for filebench, over the window and the sync after it; MB/s for dbench)"
    )
    ratio = f"under {base} / under each other scheduler" if subject else f"under a scheduler / under {base}"
    note = (
        f"{figure} {ratio}, "
        f"paired by repetition (one boot, the order rotated): the geometric mean of the pairs' ratios "
        f"and its {100 * stats.LEVEL:.0f} % t interval. {off} of {total} intervals lie wholly "
        f"above or below 1; at {100 * stats.LEVEL:.0f} % about {chance:.1f} of {total} would by chance "
        "alone, so one such cell is a lead to measure again, not a finding. MDE: the smallest effect "
        "the cell's repetitions would detect (two-sided 5 %, power 80 %), the least and the most over "
        "the row's ratios."
    )
    if subject:

        def where(by_cell: dict[str, list[str]]) -> str:
            return "; ".join(f"{cell} (vs {', '.join(v)})" for cell, v in by_cell.items()) or "nowhere"

        note += f" {base} ahead beyond the interval: {where(wins)}. Behind beyond it: {where(losses)}."
    title = f"{base} / each other scheduler" if subject else f"Each scheduler / {base}"
    if window:
        note += (
            " Beside the method's table, not instead of it: a scheduler that holds writes back while reads "
            "wait leaves more to the sync. The last column: the sync's share of the charged time, the "
            "median (range) over the cell's runs."
        )
        return TableOut(f"{title}, the window alone, per cell", ["cell", *others, "MDE", "sync share"], rows, note)
    return TableOut(f"{title}, per cell", ["cell", *others, "MDE"], rows, note)


def ratio_of(figs: dict[str, Any], a: str, b: str, what: str = "perf") -> stats.Ratio | None:
    """a / b in one cell: paired by repetition (one boot, rotated), or, for figures saved
    before the repetitions were numbered, as two independent samples."""
    ra, rb = by_rep(figs, a, what), by_rep(figs, b, what)
    if ra and rb:
        return stats.paired_ratio(ra, rb)
    return stats.independent_ratio(points(figs, a, what), points(figs, b, what))
