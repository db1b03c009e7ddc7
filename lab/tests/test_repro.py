"""`vlab repro`: the seeds' reproductions. Host tests of the cells' script jobs (run against
stand-in filebench and dbench binaries), the verdicts on made-up figures, a matrix that goes
on past a failed cell and resumes; then both seeds' --quick variants booted for real."""

import contextlib
import io
import json
import os
import shutil
import signal
import socket
import stat
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO

from vlab import app, provenance
from vlab.cli import main
from vlab.devices.spec import parse_one
from vlab.report import browser, plots
from vlab.report import load as load_report
from vlab.repro import SEEDS, core, run, seed001, stats
from vlab.repro.core import FAILS, GRADES, HOLDS, INCONCLUSIVE, NOT_JUDGED, PARTLY, Cell, Plan
from vlab.workloads import filebench

FILEBENCH_OUT = """Filebench Version 1.5-alpha3
0.000: Allocated 173MB of shared memory
11.614: Per-Operation Breakdown
11.614: IO Summary: 51061 ops 5093.864 ops/s 783/785 rd/wr  17.9mb/s 2.796ms/op
11.614: Shutting down processes
"""
DBENCH_OUT = "Operation Count\n...\nThroughput 315.203 MB/sec  8 clients  8 procs  max_latency=12.345 ms\n"


@pytest.fixture(autouse=True)
def _any_commit(monkeypatch: pytest.MonkeyPatch) -> None:
    """The made-up cells here record no commit, and --resume keeps them: its check of the cells'
    commits against HEAD (vlab.provenance.check_resume) is test_provenance.py's."""
    monkeypatch.setattr(provenance, "check_resume", lambda recorded, mix=False, repo=None: None)


def _fake(path: Path, output: str, rc: int = 0) -> Path:
    path.write_text(f"#!/bin/bash\ncat <<'EOF'\n{output}EOF\nexit {rc}\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return path


def _phase(script: str, phase: str, tmp: Path, env_path: Path | None = None) -> subprocess.CompletedProcess[str]:
    job = tmp / "job.sh"
    job.write_text(script)
    env = dict(os.environ)
    if env_path:
        env["PATH"] = f"{env_path}:{env['PATH']}"
    return subprocess.run(["bash", str(job), phase, "/dev/null"], capture_output=True, text=True, env=env, check=False)


@pytest.mark.parametrize("fs", list(core.FILESYSTEMS))
@pytest.mark.parametrize("workload", [*core.FILEBENCH, *core.DBENCH])
def test_every_cell_job_is_valid_bash_without_discard(fs: str, workload: str, tmp_path: Path) -> None:
    w = {**core.FILEBENCH, **core.DBENCH}[workload]
    script = core.job_script(Cell("ssd-steady", fs, w), 10, Path("/opt/fb/bin/filebench"))
    job = tmp_path / "job.sh"
    job.write_text(script)
    check = subprocess.run(["bash", "-n", str(job)], capture_output=True, text=True, check=False)
    assert check.returncode == 0, check.stderr
    f = core.FILESYSTEMS[fs]
    assert f.mkfs in script and f"mount -t {fs} " in script
    # A device in GC steady state stays in it: no mkfs trims, no online discard.
    assert any(flag in f.mkfs for flag in ("nodiscard", " -K", "-t 0"))
    assert "blkdiscard" not in script
    # A fresh device is discarded whole before every run (its FTL starts empty again).
    fresh = core.job_script(Cell("cheapflash-fresh", fs, w), 10, Path("/opt/fb/bin/filebench"))
    assert fresh.index('blkdiscard -f "$dev"') < fresh.index(f.mkfs)
    if w.personality:
        assert "create files" in script and "run 10" in script and ",reuse" in script
    else:
        assert " 10 -c " in script or "-t 10 " in script


def test_filebench_run_phase_prints_its_figures(tmp_path: Path) -> None:
    fb = _fake(tmp_path / "filebench", FILEBENCH_OUT)
    script = core.job_script(Cell("nullblk", "ext4", core.FILEBENCH["varmail"]), 5, fb)
    p = _phase(script, "run", tmp_path)
    assert p.returncode == 0, p.stderr
    got = {ln.split()[1]: float(ln.split()[2]) for ln in p.stdout.splitlines() if ln.startswith("vlab-metric")}
    sync_s = got.pop("filebench_sync_s")  # the sync after the run: charged in the sustained rate
    assert 0 <= sync_s < 60 and got.pop("filebench_sustained_ops_per_s") == pytest.approx(51061 / (5 + sync_s))
    assert got == {
        "filebench_ops": 51061,
        "filebench_ops_per_s": 5093.864,
        "filebench_reads_per_s": 783,
        "filebench_writes_per_s": 785,
        "filebench_mb_s": 17.9,
        "filebench_lat_ms": 2.796,
    }


def test_a_filebench_failure_or_missing_summary_fails_the_run_with_its_output(tmp_path: Path) -> None:
    for output, rc in (("Failed to open cvar directory\n", 1), ("no summary here\n", 0)):
        fb = _fake(tmp_path / "filebench", output, rc)
        p = _phase(core.job_script(Cell("nullblk", "ext4", core.FILEBENCH["webserver"]), 5, fb), "run", tmp_path)
        assert p.returncode == 1
        assert output.strip() in p.stderr
        assert "vlab-metric" not in p.stdout


@pytest.mark.skipif(not list(Path("/usr/share/dbench").glob("client.txt*")), reason="dbench not installed")
def test_dbench_run_phase_prints_its_figures(tmp_path: Path) -> None:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    _fake(bindir / "dbench", DBENCH_OUT)
    p = _phase(core.job_script(Cell("nullblk", "xfs", core.DBENCH["dbench-16"]), 5, None), "run", tmp_path, bindir)
    assert p.returncode == 0, p.stderr
    assert "vlab-metric dbench_mb_s 315.203" in p.stdout and "vlab-metric dbench_max_lat_ms 12.345" in p.stdout


def test_personality_creates_then_reuses_its_file_set() -> None:
    p = core.FILEBENCH["fileserver"].personality
    assert p is not None and p.nfiles == 1000 and p.threads == 50 and p.mean_file_kb == 128
    create = filebench.personality(p, "/mnt", None)
    run_ = filebench.personality(p, "/mnt", 30)
    assert create.rstrip().endswith("create files") and ",reuse" not in create
    assert run_.rstrip().endswith("run 30") and ",reuse" in run_
    assert "mean:131072" in create and "set $nthreads=50" in create
    web = filebench.personality(core.FILEBENCH["webserver"].personality, "/mnt", 5)  # type: ignore[arg-type]
    assert web.count("readwholefile") == 10 and "name=logfiles" in web
    with pytest.raises(filebench.FilebenchError, match="unknown personality"):
        filebench.personality(filebench.Personality("oltp", 1, 1, 1), "/mnt", 5)


def test_filebench_summary_parse_and_error() -> None:
    s = filebench.parse_summary(FILEBENCH_OUT)
    assert (s.ops, s.ops_per_s, s.mb_s, s.ms_per_op) == (51061, 5093.864, 17.9, 2.796)
    with pytest.raises(filebench.FilebenchError, match="no IO Summary"):
        filebench.parse_summary("Allocated\nerror\n")


def test_filebench_passes_are_the_fewest_runs_of_any_flowop(tmp_path: Path) -> None:
    """Filebench's per-operation breakdown gives how many passes of the flow the threads
    completed: 0 where none got past its first fsync (the count is then no rate)."""
    breakdown = (
        "10.5: Per-Operation Breakdown\n"
        "closefile4           0ops        0ops/s   0.0mb/s    0.000ms/op [0.000ms - 0.000ms]\n"
        "fsyncfile2           3ops        0ops/s   0.0mb/s  900.123ms/op [1.000ms - 2000.000ms]\n"
        "deletefile1          16ops        2ops/s   0.0mb/s    0.004ms/op [0.001ms - 0.254ms]\n"
    )
    out = FILEBENCH_OUT.replace("11.614: Per-Operation Breakdown\n", breakdown)
    assert filebench.parse_summary(out).passes == 0
    assert filebench.parse_summary(out.replace("closefile4           0ops", "closefile4           7ops")).passes == 3
    assert filebench.parse_summary(FILEBENCH_OUT).passes is None  # no breakdown lines: not known
    p = _phase(core.job_script(Cell("nullblk", "ext4", core.FILEBENCH["varmail"]), 5, _fake(tmp_path / "fb", out)),
               "run", tmp_path)  # fmt: skip
    assert p.returncode == 0 and "vlab-metric filebench_passes 0" in p.stdout


def test_a_cell_with_a_run_that_completed_no_pass_is_not_judged(tmp_path: Path) -> None:
    """At a high dilation a short run can end before any thread's first fsync returns: every
    scheduler then counts the threads' first steps (45 of varmail's 16 threads), ratios near
    1 with a narrow interval that would read as "does not hold". A cell in which two
    schedulers stalled in one repetition is not judged; one scheduler stalling alone (the
    others got through the flow in the same rotation) is its own slowness, and counts."""
    seed, w = SEEDS["seed000"], core.FILEBENCH["varmail"]
    scheds = ["none", "mq-deadline", "bfq", "veloces"]
    (tmp_path / "raw").mkdir()

    def write(rep: int, s: str, value: float, passes: int) -> None:
        d = {"workload_filebench_sustained_ops_per_s": value, "workload_filebench_passes": passes, "model_s": 1.0}
        (tmp_path / "raw" / f"rep{rep}-{s}.device.json").write_text(json.dumps(d))

    for rep in range(1, 6):
        for s in scheds:
            write(rep, s, 4.5 + rep, 0 if (rep, s) in ((4, "none"), (4, "bfq")) else 20)
    figs = core.cell_figures(tmp_path, w, scheds, 5)
    assert all(f["perf"]["median"] is None and f["ai"]["median"] is None for f in figs.values())
    assert figs["veloces"]["stalled"].startswith("2 of 20 runs completed no pass")
    assert "repetition 4: none, bfq" in figs["veloces"]["stalled"]
    plan = Plan("seed000", ["nullblk"], ["ext4"], [w], scheds, 5, 10)
    cell = {"id": "nullblk/ext4-varmail", "device": "nullblk", "fs": "ext4", "workload": "varmail", "figures": figs}
    v = seed.analyse(plan, [cell]).verdicts[0]
    assert v.verdict == NOT_JUDGED and "measure the start, not a rate" in v.evidence
    # bfq alone stalled in repetition 4, with fewer operations: measured, and judged.
    write(4, "none", 8.5, 20)
    write(4, "bfq", 3.0, 0)
    figs = core.cell_figures(tmp_path, w, scheds, 5)
    assert all("stalled" not in f for f in figs.values()) and figs["bfq"]["stalled_reps"] == [4]
    assert figs["none"]["perf"]["median"] == 7.5 and core.by_rep(figs, "bfq", "perf")[4] == 3.0
    assert seed.analyse(plan, [{**cell, "figures": figs}]).verdicts[0].verdict != NOT_JUDGED


def test_without_filebench_the_repro_says_what_to_provide(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VELOCES_BUILD", str(tmp_path / "build"))
    monkeypatch.setenv(filebench.ENV_VAR, str(tmp_path / "nowhere"))
    with pytest.raises(filebench.FilebenchError, match=f"set {filebench.ENV_VAR}"):
        filebench.require()
    seed = SEEDS["seed000"]
    assert run.run(seed, seed.plan(True), tmp_path / "out", False, ["test"], {}) == 2


# --- verdicts on made-up figures -------------------------------------------------------------


JITTER = (0.0, 0.01, -0.01, 0.005, -0.005)  # five rotated repetitions, +-1 %


def _figs(values: list[float | None]) -> dict[str, Any]:
    present = [v for v in values if v is not None]
    if not present:
        return {"median": None, "min": None, "max": None, "points": []}
    return {"median": sorted(present)[len(present) // 2], "min": min(present), "max": max(present), "points": present}


def _cell(device: str, fs: str, workload: str, perf: dict[str, float], power: dict[str, float] | None = None) -> dict:
    """A cell's figures as core.cell_figures writes them: five repetitions around each value,
    each scheduler's jitter rotated (the pairs differ by up to 2 %)."""
    figs = {}
    for k, (s, v) in enumerate(perf.items()):
        w = (power or {}).get(s)
        reps = [v * (1 + JITTER[(i + k) % 5]) for i in range(5)]
        per = {"perf": reps, "power_w": [w] * 5 if w else [None] * 5, "ai": [x / w for x in reps] if w else [None] * 5,
               "energy_j": [None] * 5}  # fmt: skip
        figs[s] = {name: _figs(vals) for name, vals in per.items()}
        figs[s]["by_rep"] = {name: {str(i + 1): x for i, x in enumerate(vals) if x is not None}
                             for name, vals in per.items()}  # fmt: skip
    return {"id": f"{device}/{fs}-{workload}", "device": device, "fs": fs, "workload": workload, "figures": figs}


def test_seed000_verdicts_follow_the_figures() -> None:
    seed = SEEDS["seed000"]
    plan = Plan("seed000", ["nullblk"], ["ext4"], [core.FILEBENCH["varmail"], core.DBENCH["dbench-8"]],
                ["none", "mq-deadline", "bfq", "veloces"], 3, 10)  # fmt: skip
    cells = [
        _cell("nullblk", "ext4", "varmail", {"none": 100, "mq-deadline": 98, "bfq": 90, "veloces": 120}),
        _cell("nullblk", "ext4", "dbench-8", {"none": 100, "mq-deadline": 130, "bfq": 90, "veloces": 120}),
        # veloces 0.5 % above none: inside the +-1 % repetitions, so not decided either way.
        _cell("nullblk", "ext4", "dbench-16", {"none": 100, "mq-deadline": 90, "bfq": 90, "veloces": 100.5}),
    ]
    plan.workloads.append(core.DBENCH["dbench-16"])
    a = seed.analyse(plan, cells)
    by = {v.claim: v for v in a.verdicts}
    won = by["veloces beats mq-deadline, none, bfq (varmail)"]
    assert won.verdict == HOLDS and "lies wholly above 1" in won.criterion and "95% t interval" in won.criterion
    iv = won.intervals["mq-deadline"]
    assert iv["paired"] and iv["n"] == 5 and 1 < iv["ci_low"] < 120 / 98 < iv["ci_high"]
    assert iv["paper"] == pytest.approx(8763 / 8622) and iv["grade"] == HOLDS and iv["narrower_than_effect"] is True
    lost = by["veloces beats mq-deadline, none, bfq (dbench-8)"]
    # Above none and bfq, below mq-deadline: some parts hold and one does not (the rule's partly).
    assert lost.verdict == PARTLY and "highest median: mq-deadline" in lost.evidence
    assert lost.intervals["mq-deadline"]["ci_high"] < 1 and lost.intervals["none"]["grade"] == HOLDS
    tie = by["veloces beats mq-deadline, none, bfq (dbench-16)"]
    assert tie.verdict == INCONCLUSIVE and tie.intervals["none"]["grade"] == INCONCLUSIVE
    assert "detects" in tie.evidence
    # The repetitions an interval narrower than the paper's effect needs at the spread
    # measured: the 5 run were enough (+-1 %), though ours straddles 1.
    need = tie.intervals["none"]["reps_to_decide"]
    assert isinstance(need, int) and need <= 5 and tie.intervals["none"]["narrower_than_effect"] is True
    # veloces / mq-deadline (1.117 against the paper's 1.016) needs more.
    more = tie.intervals["mq-deadline"]["reps_to_decide"]
    assert more > 5 and f"narrower than the paper's effect at ~{more} repetitions" in tie.evidence
    # The paper's figures beside ours: Table 10.3's varmail deadline IOPS, and our ratio.
    row = a.tables[0].rows[0]
    assert row[1]["text"] == "8,622" and row[2]["value"] == 98
    assert row[2]["key"] == "/cells/0/figures/mq-deadline/perf/median"
    # Direction cases: paper's noop > deadline (8614 < 8622: no), ours none > mq-deadline.
    case = next(c for c in a.cases if c["name"].startswith("varmail: none"))
    assert case["pass"] is False and case["expected_value"] == pytest.approx(8614 / 8622)
    # A cell with no figures is not judged.
    a2 = seed.analyse(plan, [cells[0], {"id": "nullblk/ext4-dbench-8", "status": "failed"}])
    assert {v.claim: v for v in a2.verdicts}["veloces beats mq-deadline, none, bfq (dbench-8)"].verdict == NOT_JUDGED


def test_repetitions_to_decide_follow_the_spread_and_the_effect() -> None:
    r = stats.Ratio(1.0, 0.9, 1.1, 5, True, 0.2, sd=0.1)
    small, large = stats.Claim(1.0, True, 1.03), stats.Claim(1.0, True, 1.5)
    n_small, n_large = stats.reps_to_decide(r, small), stats.reps_to_decide(r, large)
    assert n_small is not None and n_large is not None and n_large < n_small
    # t(n-1) x 0.1 / sqrt(n) first below log(1.03) = 0.0296 at n = 47 (t = 2.013).
    assert n_small == 47
    assert stats.reps_to_decide(r, stats.Claim(1.0, True, None)) is None  # no paper figure
    assert stats.reps_to_decide(stats.Ratio(1.0, 1.0, 1.0, 5, True, 0.0, sd=0.0), small) == stats.MIN_POINTS
    assert stats.reps_to_decide(stats.Ratio(1.0, 0.1, 9.0, 5, True, 9.0, sd=5.0), small) is None  # > MAX_REPS


def _cell001(device: str, fs: str, workload: str, perf: float, busy: tuple[float, float],
             dilation: float = 50.0) -> dict:  # fmt: skip
    """A seed-001 cell under mq-deadline and veloces: IOPS (+-1 % over five repetitions) and
    each scheduler's device busy share, from which the power splits make watts; run at
    `dilation` (the cells of one matrix compared across filesystems at one)."""
    cell = _cell(device, fs, workload, {"mq-deadline": perf, "veloces": perf})
    cell["dilation"] = dilation
    for s, b in zip(("mq-deadline", "veloces"), busy, strict=True):
        cell["figures"][s]["busy"] = _figs([b] * 5)
        cell["figures"][s]["by_rep"]["busy"] = {str(i + 1): b for i in range(5)}
    return cell


def test_seed001_judges_the_quoted_claims_with_intervals() -> None:
    seed = SEEDS["seed001"]
    fss = ["ext4", "ext2", "xfs", "nilfs2"]
    plan = Plan("seed001", ["sata-steady"], fss, [core.FILEBENCH["varmail"], core.FILEBENCH["fileserver"]],
                ["mq-deadline", "veloces"], 5, 10)  # fmt: skip
    perf = {"ext4": 300.0, "ext2": 280.0, "xfs": 200.0, "nilfs2": 250.0}
    # nilfs2 keeps the device idle most of the time (lowest power, best AI) and alike under
    # both schedulers; the others are busy, veloces a little less.
    busy = {"ext4": (0.9, 0.8), "ext2": (0.9, 0.8), "xfs": (0.9, 0.85), "nilfs2": (0.3, 0.3)}
    cells = [_cell001("sata-steady", fs, w, perf[fs], busy[fs]) for fs in fss for w in ("varmail", "fileserver")]
    a = seed.analyse(plan, cells)
    by = {v.claim: v for v in a.verdicts}
    assert set(by) == {seed001.CLAIM_DEPEND, seed001.CLAIM_VARMAIL, seed001.CLAIM_FILESERVER,
                       seed001.CLAIM_EXT_PERF, seed001.CLAIM_NILFS}  # fmt: skip
    # The paper's words, exactly (its Conclusions).
    assert seed001.CLAIM_EXT_PERF.endswith("delivers high performance at low energy efficiency in most cases")
    assert seed001.CLAIM_NILFS.endswith("lower energy consumption and smoother changes in energy consumption")
    # SSD-I's split (2.6 W / 0.15 W): nilfs2 0.885 W, ext4 2.355 W under mq-deadline.
    assert by[seed001.CLAIM_VARMAIL].verdict == FAILS and "under mq-deadline" in by[seed001.CLAIM_VARMAIL].evidence
    assert by[seed001.CLAIM_FILESERVER].verdict == HOLDS
    ext = by[seed001.CLAIM_EXT_PERF]
    assert ext.verdict == HOLDS and "more than half the parts hold" in ext.criterion
    assert by[seed001.CLAIM_NILFS].verdict == HOLDS
    dep = by[seed001.CLAIM_DEPEND]
    assert dep.verdict == HOLDS and all(iv["ci_low"] > seed001.MATTERS for iv in dep.intervals.values())
    assert all("provisional" not in v.evidence for v in a.verdicts)  # every planned cell has figures
    # A partial matrix: verdicts over the cells that ran say which are missing, per claim's workloads.
    part = {v.claim: v for v in seed.analyse(plan, [c for c in cells if c["fs"] != "xfs" or c["workload"] != "varmail"]
                                               ).verdicts}  # fmt: skip
    assert part[seed001.CLAIM_VARMAIL].evidence.endswith("; provisional, no figures yet for xfs (varmail)")
    # A cell whose runs did not get through the flow (core.stalled_runs) is named as such.
    stalled = [
        {**c, "figures": {s: {**f, "by_rep": {}, "stalled": "1 of 10 runs ..."} for s, f in c["figures"].items()}}
        if (c["fs"], c["workload"]) == ("xfs", "varmail") else c
        for c in cells
    ]  # fmt: skip
    ev = {v.claim: v for v in seed.analyse(plan, stalled).verdicts}[seed001.CLAIM_VARMAIL].evidence
    assert ev.endswith("; provisional, no figures yet for xfs (varmail, its runs did not get through the flow)")
    assert "provisional" not in part[seed001.CLAIM_FILESERVER].evidence
    # A workload with one filesystem measured so far leaves claim 5 to the others, saying what
    # is missing (it made the whole claim "not judged" until 2026-12-02: seed 001's webserver).
    early = [c for c in cells if c["workload"] == "varmail" or c["fs"] == "ext2"]
    by_early = {v.claim: v for v in seed.analyse(plan, early).verdicts}
    nilfs, depend = by_early[seed001.CLAIM_NILFS], by_early[seed001.CLAIM_DEPEND]
    # Claim 1 too: fileserver's one filesystem would make "the pair" the scheduler alone.
    assert depend.verdict == HOLDS and "fileserver" not in depend.evidence.partition("; provisional")[0]
    assert nilfs.verdict == HOLDS and nilfs.evidence.startswith("varmail: ") and "fileserver:" not in nilfs.evidence
    assert nilfs.evidence.endswith("no figures yet for ext4 (fileserver), xfs (fileserver), nilfs2 (fileserver)")
    ivs = by[seed001.CLAIM_FILESERVER].intervals
    assert all(not iv["paired"] and iv["n"] == 5 for iv in ivs.values())  # two cells: two boots
    # Cemp and the sensitivity to the power split.
    cemp = next(t for t in a.tables if t.title.startswith("Cemp"))
    assert [r[1]["text"] for r in cemp.rows[:3]] == ["largest AI", "lowest power", "highest performance"]
    assert cemp.rows[0][2]["text"].startswith("nilfs2") and cemp.rows[2][2]["text"].startswith("ext4")
    sens = next(t for t in a.tables if t.title.startswith("Sensitivity"))
    assert sens.header[1] == "SSD-I (paper) 2.6/0.15" and sens.header[-1] == "device model's account"
    row = next(r for r in sens.rows if r[0]["text"] == seed001.CLAIM_VARMAIL)
    # With an idle that costs as much as work (SSD-K: 3.3 of 5.9 W) busy matters less, yet
    # nilfs2 still leads; the model's own account has no energy here: not judged.
    assert row[1]["text"] == FAILS and row[-1]["text"] == NOT_JUDGED
    # One filesystem: the filesystem claims are said not judged, with why.
    one = Plan("seed001", ["sata-steady"], ["ext4"], plan.workloads, plan.schedulers, 5, 10)
    vs = {v.claim: v for v in seed.analyse(one, cells[:2]).verdicts}
    assert vs[seed001.CLAIM_NILFS].verdict == NOT_JUDGED and "needs nilfs2" in vs[seed001.CLAIM_NILFS].evidence
    # Fewer than three repetitions: no interval, inconclusive.
    few = [_cell001("sata-steady", fs, "fileserver", perf[fs], busy[fs]) for fs in fss]
    for c in few:
        for f in c["figures"].values():
            f["by_rep"] = {k: {r: x for r, x in v.items() if r in ("1", "2")} for k, v in f["by_rep"].items()}
    p2 = Plan("seed001", ["sata-steady"], fss, [core.FILEBENCH["fileserver"]], ["mq-deadline", "veloces"], 2, 10)
    assert {v.claim: v for v in seed.analyse(p2, few).verdicts}[seed001.CLAIM_FILESERVER].verdict == INCONCLUSIVE


def test_seed001_rankings_reach_the_report_plot(tmp_path: Path) -> None:
    seed = SEEDS["seed001"]
    fss = ["ext4", "nilfs2"]
    plan = Plan("seed001", ["sata-fresh", "nullblk"], fss, [core.FILEBENCH["varmail"]], ["mq-deadline", "veloces"],
                5, 10)  # fmt: skip
    cells = [
        _cell001("sata-fresh", "ext4", "varmail", 300, (0.9, 0.9)),
        _cell001("sata-fresh", "nilfs2", "varmail", 250, (0.3, 0.3)),
        _cell("nullblk", "ext4", "varmail", {"mq-deadline": 900, "veloces": 800}),  # no busy share: no AI
    ]
    a = seed.analyse(plan, cells)
    (ssd,) = a.rankings
    assert "AI" in ssd.title and ssd.unit == "AI (IOPS per watt)" and len(ssd.items) == 4
    top = max(ssd.items, key=lambda i: i["median"])
    assert top["label"] == "nilfs2 + mq-deadline" and top["group"] == "mq-deadline"
    assert top["median"] == pytest.approx(250 / (0.15 + 2.45 * 0.3))
    out = tmp_path / "r"
    out.mkdir()
    run.write_summary(seed, plan, out, cells, {"command": ["vlab", "repro", "seed001"]})
    rep = load_report(out)
    assert [r.title for r in rep.rankings] == [ssd.title]
    assert "<svg" in plots.ranking(rep, 0) and "nilfs2 + mq-deadline" in plots.ranking(rep, 0)
    with pytest.raises(plots.NoData):
        plots.ranking(rep, 1)
    md = (out / "report.md").read_text()
    assert "| criterion |" in md and "## Cells" in md
    assert "Runs: 5 rotated repetitions of 10 s (wall) per scheduler" in md  # the plan's, not a fixed text


# --- the matrix: goes on past a failed cell, keeps everything, resumes ------------------------


def test_dbench_cells_run_with_small_dirty_limits_and_no_cleanup(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """dbench's backlog at a served device's pace hung a cell (fsyncs blocked > 120 s): its
    cells run with small dirty limits, and its cleanup is skipped (a new filesystem each run)."""
    seen: list[dict[str, str]] = []

    def fake_compare(c: Any) -> Any:
        seen.append(dict(c.sysctl))
        raise app.RequestError("stop here")

    monkeypatch.setattr(app, "compare", fake_compare)
    cell = Cell("nullblk", "ext4", core.DBENCH["dbench-8"])
    assert "--skip-cleanup" in core.job_script(cell, 10, None)
    plan = Plan("seed000", ["nullblk"], ["ext4"], [cell.workload], ["mq-deadline"], 1, 10)
    run.run_cell(cell, plan, tmp_path, None)
    assert seen == [{"kernel.randomize_va_space": "0", "vm.dirty_bytes": "4194304",
                     "vm.dirty_background_bytes": "1048576"}]  # fmt: skip
    seen.clear()
    run.run_cell(Cell("nullblk", "ext4", core.FILEBENCH["varmail"]), plan, tmp_path, Path("/bin/true"))
    assert seen == [{"kernel.randomize_va_space": "0"}]
    # fileserver and webserver do not fsync: without the limits a 30-s run's writes stayed
    # in the page cache (docs/notebooks/reproductions.md); with them the device sets the pace.
    for name in ("fileserver", "webserver"):
        seen.clear()
        run.run_cell(Cell("nullblk", "ext4", core.FILEBENCH[name]), plan, tmp_path, Path("/bin/true"))
        assert seen[0]["vm.dirty_bytes"] == "4194304", (name, seen)


def test_a_cell_that_ran_under_other_sysctls_runs_again_on_resume(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A complete cell whose guest ran under other sysctls than its workload sets now (a
    fileserver cell from before the dirty limits) belongs to another method: `--resume` runs
    it again and says why; one that ran as its workload says is kept."""
    seed = SEEDS["seed001"]
    plan = seed.plan(True)
    plan.workloads = [core.FILEBENCH["varmail"], core.FILEBENCH["fileserver"]]
    out = tmp_path / "r"
    calls: list[str] = []
    for cell in plan.cells():
        folder = run.cell_folder(out, cell)
        folder.mkdir(parents=True)
        ran = {"kernel.randomize_va_space": "0"}  # both as varmail runs
        (folder / "summary.json").write_text(
            json.dumps({"dilation": 1.0, "meta": {"complete": True, "problems": [], "sysctl": ran}})
        )

    def fake_cell(cell: Cell, p: Plan, where: Path, fb: Path | None) -> dict[str, Any]:
        calls.append(cell.id)
        (run.cell_folder(where, cell) / "summary.json").write_text(json.dumps({
            "dilation": 1.0,
            "meta": {"complete": True, "problems": [], "sysctl": run.guest_sysctl(cell.workload.sysctl)},
        }))  # fmt: skip
        return {"status": "ok", "exit": 0, "wall_s": 1.0}

    fake_cells(monkeypatch, fake_cell)
    assert run.run(seed, plan, out, True, ["vlab", "repro"], {}) == 0
    assert [c.split("/")[1].split("-")[1] for c in calls] == ["fileserver"] * len(plan.filesystems)
    assert "run again (it ran with sysctl" in capsys.readouterr().err
    calls.clear()
    assert run.run(seed, plan, out, True, ["vlab", "repro"], {}) == 0 and calls == []
    # --table leaves such a cell out of the verdicts rather than judge two methods together.
    fileserver = next(c for c in plan.cells() if c.workload.name == "fileserver")
    (run.cell_folder(out, fileserver) / "summary.json").write_text(
        json.dumps({"dilation": 1.0, "meta": {"complete": True, "problems": [], "sysctl": {}}})
    )
    assert run.rejudge(seed, seed.plan(True), out) == 0
    status = {c["id"]: c["status"] for c in json.loads((out / "summary.json").read_text())["cells"]}
    assert status[fileserver.id] == "not run" and list(status.values()).count("ok") == len(status) - 1


def complete_cell(folder: Path) -> None:
    """What a finished cell leaves for --resume to keep it (run._complete)."""
    (folder / "summary.json").write_text(json.dumps({"dilation": 1.0, "meta": {"complete": True, "problems": []}}))


def fake_cells(monkeypatch: pytest.MonkeyPatch, fake_cell: Callable[..., dict[str, Any]]) -> None:
    """Run a matrix's cells with fake_cell instead of booting, filebench taken as present."""
    monkeypatch.setattr(run, "run_cell", fake_cell)
    monkeypatch.setattr(filebench, "require", lambda: Path("/bin/true"))


def test_a_failed_cell_is_marked_the_rest_runs_and_resume_keeps_finished_cells(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    seed = SEEDS["seed000"]
    plan = seed.plan(True)
    calls: list[str] = []

    def fake_cell(cell: Cell, p: Plan, out: Path, fb: Path | None) -> dict[str, Any]:
        calls.append(cell.id)
        folder = run.cell_folder(out, cell)
        (folder / "raw").mkdir(parents=True, exist_ok=True)
        if cell.workload.name == "varmail":
            return {"status": "failed", "exit": 3, "wall_s": 1.0, "error": "exit 3: step 'setup': mkfs failed"}
        for rep in range(p.repeat):
            for s in p.schedulers:
                d = {"workload_dbench_mb_s": 50.0 + (s == "veloces") * 10 + rep, "model_s": 2.0, "busy_s": 0.5 + rep}
                (folder / "raw" / f"rep{rep + 1}-{s}.device.json").write_text(json.dumps(d))
        complete_cell(folder)
        return {"status": "ok", "exit": 0, "wall_s": 2.0}

    fake_cells(monkeypatch, fake_cell)
    out = tmp_path / "r"
    assert run.run(seed, plan, out, False, ["vlab", "repro"], {}) == 1
    s = json.loads((out / "summary.json").read_text())
    status = {c["id"]: c["status"] for c in s["cells"]}
    assert status == {"nullblk/ext4-varmail": "failed", "nullblk/ext4-dbench-8": "ok"}
    dbench = next(c for c in s["cells"] if c["workload"] == "dbench-8")
    assert dbench["figures"]["veloces"]["perf"]["median"] == 60.5 and dbench["figures"]["veloces"]["runs"] == 2
    # The device's utilisation per run (busy / model time), and seed 000's table shows it.
    assert dbench["figures"]["mq-deadline"]["busy"] == {"median": 0.5, "min": 0.25, "max": 0.75, "points": [0.25, 0.75]}
    busy = next(t for t in s["tables"] if "10.3" in t["title"])["rows"][1][-1]
    assert busy["text"] == "50 %" and busy["key"].endswith("/mq-deadline/busy/median") and busy["scale"] == 0.01
    assert "mkfs failed" in (out / "report.md").read_text()
    assert s["meta"]["cells_wall_s"] == 3.0 and s["meta"]["complete"] is False
    rep = load_report(out)
    assert rep.kind == "reproduction (vlab repro, vsim repro)"
    assert any("varmail failed" in p for p in rep.problems)
    # --resume with runs of another length would mix two matrices: refused, nothing run or changed.
    calls.clear()
    longer = seed.plan(True)
    longer.runtime_s = plan.runtime_s * 3
    before = (out / "summary.json").read_text()
    assert run.run(seed, longer, out, True, ["vlab", "repro"], {}) == 2
    assert calls == [] and (out / "summary.json").read_text() == before
    assert "runtime_s" in capsys.readouterr().err
    # --resume runs only the failed cell again.
    assert run.run(seed, plan, out, True, ["vlab", "repro"], {}) == 1
    assert calls == ["nullblk/ext4-varmail"]
    # A folder completed by another run (copied in) is kept, without the failed run's
    # record (its wall time was the failure's).
    varmail = next(c for c in plan.cells() if c.workload.name == "varmail")
    folder = run.cell_folder(out, varmail)
    for rep in range(plan.repeat):
        for sched in plan.schedulers:
            d = {"workload_dbench_mb_s": 40.0, "model_s": 2.0, "busy_s": 1.0}
            (folder / "raw" / f"rep{rep + 1}-{sched}.device.json").write_text(json.dumps(d))
    complete_cell(folder)
    calls.clear()
    assert run.run(seed, plan, out, True, ["vlab", "repro"], {}) == 0 and calls == []
    kept = next(c for c in json.loads((out / "summary.json").read_text())["cells"] if c["workload"] == "varmail")
    assert kept["status"] == "ok" and kept.get("wall_s") is None, kept
    # --table judges the folder again without running anything: the same cells and figures.
    calls.clear()
    before = json.loads((out / "summary.json").read_text())
    assert run.rejudge(seed, seed.plan(True), out) == 0 and calls == []
    after = json.loads((out / "summary.json").read_text())
    assert [c["status"] for c in after["cells"]] == [c["status"] for c in before["cells"]]
    assert after["cells"][1]["figures"] == before["cells"][1]["figures"] and after["meta"]["rejudged"]
    assert after["verdicts"] == before["verdicts"]


def test_a_cells_failure_names_its_step_else_how_its_guest_ended(tmp_path: Path) -> None:
    log = tmp_path / "compare.log"
    table = "mq-deadline    44     ±0%    0.5    -/-/-    -/-/-    1.00"
    log.write_text(f"vlab: guest crashed: it stopped without reporting an exit status (no panic message)\n{table}\n"
                   "vlab: 881 s; report r.md\n")  # fmt: skip
    assert run._failure(tmp_path, log, 125) == (
        "exit 125: vlab: guest crashed: it stopped without reporting an exit status (no panic message)"
    )
    log.write_text(f"{table}\nvlab: 881 s\n")  # nothing said how it ended: the log's end
    assert run._failure(tmp_path, log, 1) == f"exit 1: {table} | vlab: 881 s"
    (tmp_path / ".vlab").mkdir()
    (tmp_path / ".vlab" / "error.json").write_text(json.dumps({"step": "repetition 2/5: fio", "message": "EIO"}))
    assert run._failure(tmp_path, log, 3) == "exit 3: step 'repetition 2/5: fio': EIO"
    assert run._failure(tmp_path / "gone", tmp_path / "gone.log", 125) == "exit 125: no output"


def test_sigusr1_drains_the_matrix_and_resume_runs_the_rest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    """A drain (SIGUSR1) during a cell lets it finish and be kept, starts no further cell,
    exits 1 with the rest "not run", and --resume runs only those. The drain is acknowledged
    on the process's stderr, not in the running cell's log (which a serial cell's run
    redirects sys.stderr to)."""
    seed = SEEDS["seed000"]
    plan = seed.plan(True)
    calls: list[str] = []
    cell_log = io.StringIO()

    def fake_cell(cell: Cell, p: Plan, out: Path, fb: Path | None) -> dict[str, Any]:
        calls.append(cell.id)
        if len(calls) == 1:
            with contextlib.redirect_stderr(cell_log):
                os.kill(os.getpid(), signal.SIGUSR1)
        folder = run.cell_folder(out, cell)
        folder.mkdir(parents=True, exist_ok=True)
        complete_cell(folder)
        return {"status": "ok", "exit": 0, "wall_s": 1.0}

    fake_cells(monkeypatch, fake_cell)
    out = tmp_path / "r"
    assert run.run(seed, plan, out, False, ["vlab", "repro"], {}) == 1
    s = json.loads((out / "summary.json").read_text())
    assert [c["status"] for c in s["cells"]] == ["ok", "not run"] and s["meta"]["drained"] is True
    assert signal.getsignal(signal.SIGUSR1) == signal.SIG_DFL  # the handler is removed afterwards
    assert "SIGUSR1: starting no further cell" in capfd.readouterr().err and not cell_log.getvalue()
    calls.clear()
    assert run.run(seed, plan, out, True, ["vlab", "repro"], {}) == 0
    assert calls == [plan.cells()[1].id]


def test_a_narrower_resume_runs_its_cells_and_keeps_the_folders_others(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--resume --workloads X` chooses the cells to run, not what the summary covers: a
    narrower invocation keeps the other cells' records (wall time, node), and a cell of the
    folder's matrix that never ran stays "not run" without failing the narrower one."""
    seed = SEEDS["seed000"]
    calls: list[str] = []

    def fake_cell(cell: Cell, p: Plan, out: Path, fb: Path | None) -> dict[str, Any]:
        calls.append(cell.id)
        folder = run.cell_folder(out, cell)
        folder.mkdir(parents=True, exist_ok=True)
        complete_cell(folder)
        return {"status": "ok", "exit": 0, "wall_s": 7.0, "node": f"n/{cell.workload.name}"}

    def only(name: str) -> Plan:
        p = seed.plan(True)
        p.workloads = [w for w in p.workloads if w.name == name]
        return p

    fake_cells(monkeypatch, fake_cell)
    out = tmp_path / "r"
    assert run.run(seed, only("varmail"), out, False, ["vlab", "repro"], {}) == 0
    assert calls == ["nullblk/ext4-varmail"]
    calls.clear()
    assert run.run(seed, only("dbench-8"), out, True, ["vlab", "repro"], {}) == 0
    assert calls == ["nullblk/ext4-dbench-8"]
    s = json.loads((out / "summary.json").read_text())
    cells = {c["id"]: c for c in s["cells"]}
    assert set(cells) == {"nullblk/ext4-varmail", "nullblk/ext4-dbench-8"}
    assert cells["nullblk/ext4-varmail"]["node"] == "n/varmail" and cells["nullblk/ext4-varmail"]["wall_s"] == 7.0
    assert s["plan"]["workloads"] == ["varmail", "dbench-8"] and s["meta"]["complete"] is True
    # Again narrower, after the other cell's folder is gone: it is "not run", this one kept.
    calls.clear()
    shutil.rmtree(run.cell_folder(out, next(c for c in seed.plan(True).cells() if c.workload.name == "dbench-8")))
    assert run.run(seed, only("varmail"), out, True, ["vlab", "repro"], {}) == 0 and calls == []
    s = json.loads((out / "summary.json").read_text())
    assert {c["id"]: c["status"] for c in s["cells"]} == {
        "nullblk/ext4-varmail": "ok",
        "nullblk/ext4-dbench-8": "not run",
    }
    assert s["meta"]["complete"] is False
    # A cell that failed keeps its failure on record through a narrower invocation, which
    # does not fail for it.
    s["cells"][1] = {**s["cells"][1], "status": "failed", "error": "exit 3: step 'setup': mkfs failed", "wall_s": 2.0}
    (out / "summary.json").write_text(json.dumps(s))
    assert run.run(seed, only("varmail"), out, True, ["vlab", "repro"], {}) == 0 and calls == []
    dbench = json.loads((out / "summary.json").read_text())["cells"][1]
    assert dbench["status"] == "failed" and "mkfs failed" in dbench["error"] and dbench["wall_s"] == 2.0


def test_two_invocations_on_one_folder_keep_each_others_cells(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two narrower `--resume` invocations at once on one folder (varmail's beside dbench-8's,
    the second begun and finished while the first's cell runs, on a folder whose matrix had
    only varmail): the first's summary keeps the second's cell and its record, and the
    widened matrix, rather than its stale copy from when it began."""
    seed = SEEDS["seed000"]
    out = tmp_path / "r"

    def only(name: str) -> Plan:
        p = seed.plan(True)
        p.workloads = [w for w in p.workloads if w.name == name]
        return p

    def fake_cell(cell: Cell, p: Plan, where: Path, fb: Path | None) -> dict[str, Any]:
        name = cell.workload.name
        if name == "varmail":  # meanwhile, another invocation runs dbench-8's cell to the end
            assert run.run(seed, only("dbench-8"), out, True, ["vlab", "repro"], {}) == 0
        folder = run.cell_folder(where, cell)
        folder.mkdir(parents=True, exist_ok=True)
        complete_cell(folder)
        return {"status": "ok", "exit": 0, "wall_s": 7.0 if name == "varmail" else 9.0, "node": f"n/{name}"}

    fake_cells(monkeypatch, fake_cell)
    out.mkdir()
    run.write_summary(seed, only("varmail"), out, [{"id": "nullblk/ext4-varmail", "status": "not run"}], {})
    assert run.run(seed, only("varmail"), out, True, ["vlab", "repro"], {}) == 0
    s = json.loads((out / "summary.json").read_text())
    cells = {c["id"]: c for c in s["cells"]}
    assert {k: (c["status"], c.get("wall_s"), c.get("node")) for k, c in cells.items()} == {
        "nullblk/ext4-varmail": ("ok", 7.0, "n/varmail"),
        "nullblk/ext4-dbench-8": ("ok", 9.0, "n/dbench-8"),
    }
    assert s["plan"]["workloads"] == ["varmail", "dbench-8"] and s["meta"]["complete"] is True
    assert s["meta"]["cells_wall_s"] == 16.0


def test_cells_run_as_ray_tasks_and_come_back_with_their_node(tmp_path: Path) -> None:
    """Each cell a Ray task on an embedded local Ray: its folder comes back under --out, the
    node that ran it is named, and a cell that fails there (here: no such kernel, before any
    boot) is marked while the others go on."""
    seed = SEEDS["seed000"]
    plan = seed.plan(True)
    plan.kernel = "0.1"
    out = tmp_path / "r"
    assert run.run(seed, plan, out, False, ["vlab", "repro"], {}, jobs=2) == 1
    s = json.loads((out / "summary.json").read_text())
    assert s["meta"]["executor"] == "ray (local, 2 cores)"
    assert len(s["cells"]) == 2 and all(c["status"] == "failed" for c in s["cells"])
    for c in s["cells"]:
        assert "/" in c["node"] and c["node"].split("/")[0] == socket.gethostname()
        assert "kernel" in (out / c["folder"] / "compare.log").read_text()
    assert "| ran on |" in (out / "report.md").read_text()


def test_cells_go_to_a_two_node_cluster_given_its_address(tmp_path: Path, two_node_ray: str) -> None:
    """`--address`: the cells are tasks on that cluster, each naming the node that ran it (here
    they fail before any boot: no such kernel, and may both land on one node). The same matrix
    booted for real, a cell on each node at once, is make test-full's seed000 test."""
    seed = SEEDS["seed000"]
    plan = seed.plan(True)
    plan.kernel = "0.1"
    out = tmp_path / "r"
    import ray

    try:
        assert run.run(seed, plan, out, False, ["vlab", "repro"], {}, address=two_node_ray, jobs=None) == 1
    finally:
        ray.shutdown()  # this process joined the cluster: leave it before the fixture stops it
    s = json.loads((out / "summary.json").read_text())
    assert s["meta"]["executor"] == f"ray ({two_node_ray})"
    assert [c["status"] for c in s["cells"]] == ["failed", "failed"]
    assert all("/" in c["node"] and "kernel" in (out / c["folder"] / "compare.log").read_text() for c in s["cells"])


def test_every_scheduler_against_the_baseline_per_cell_with_the_chance_count() -> None:
    """The report's per-cell table: each scheduler's figure / mq-deadline's, paired by
    repetition, with its interval; cells that did not run are left out; the note counts the
    intervals off 1 beside how many would be at 95 % by chance."""
    plan = SEEDS["seed001"].plan(True)
    plan.schedulers = ["mq-deadline", "none", "veloces"]

    def figs(**per: list[float]) -> dict[str, Any]:
        return {s: {"by_rep": {"perf": {str(i + 1): x for i, x in enumerate(v)}}} for s, v in per.items()}

    base = [100.0, 104.0, 98.0, 101.0, 99.0]
    cells = [
        {"id": "a", "status": "ok", "figures": figs(**{"mq-deadline": base, "none": [x * 0.8 for x in base],
                                                       "veloces": [101.0, 99.0, 103.0, 97.0, 100.0]})},
        {"id": "b", "status": "ok", "figures": figs(**{"mq-deadline": base, "none": base[:2]})},
        {"id": "c", "status": "not run"},
    ]  # fmt: skip
    t = core.against_baseline(plan, cells)
    assert t is not None and t.title == "Each scheduler / mq-deadline, per cell"
    assert t.header == ["cell", "none", "veloces", "MDE"]
    assert [[c["text"] for c in r] for r in t.rows][1] == ["b", "1.000 (n=2, no interval)", "-", "-"]
    a = t.rows[0]
    assert (a[1]["text"], a[2]["text"]) == ("0.800 [0.800, 0.800]", "0.996 [0.947, 1.048]")
    v = stats.paired_ratio(dict(enumerate([101.0, 99.0, 103.0, 97.0, 100.0])), dict(enumerate(base)))
    assert v is not None and v.mde is not None and a[3]["text"] == f"0-{100 * v.mde:.0f} %"  # none's pairs all 0.8
    assert "1 of 2 intervals lie wholly above or below 1" in t.note and "about 0.1 of 2" in t.note
    assert core.against_baseline(plan, cells[2:]) is None
    assert core.against_baseline(plan, cells, "window") is None  # no window figures: no table
    # veloces / each other scheduler: its wins and losses beyond the interval named.
    v = core.against_baseline(plan, cells, subject="veloces")
    assert v is not None and v.title == "veloces / each other scheduler, per cell"
    assert v.header == ["cell", "mq-deadline", "none", "MDE"]
    # the same pairs as veloces's column above; over none's (0.8 x mq-deadline's) 1 / 0.8 as much
    assert v.rows[0][1]["text"] == "0.996 [0.947, 1.048]" and v.rows[0][2]["text"].startswith("1.245 [")
    assert "ahead beyond the interval: a (vs none). Behind beyond it: nowhere." in v.note
    assert len(v.rows) == 1  # b: veloces did not run there
    assert core.against_baseline(plan, cells, subject="cfq") is None


def test_the_window_alone_beside_the_method_figure_with_the_syncs_share() -> None:
    """Where the `sync` after filebench's window is most of a run the report shows each
    scheduler / mq-deadline over the window alone too, with the sync's share of the charged
    time; cells without window figures (dbench) are left out of that table."""
    plan = SEEDS["seed001"].plan(True)
    plan.schedulers = ["mq-deadline", "veloces"]
    wl = core.FILEBENCH["webserver"]
    assert wl.window_metric == "filebench_ops_per_s" and core.DBENCH["dbench-8"].window_metric is None
    run = {wl.metric: 25.0, "filebench_ops_per_s": 100.0}
    assert core.sync_share(run, wl.metric, "filebench_ops_per_s") == pytest.approx(0.75)
    assert core.sync_share({wl.metric: 25.0}, wl.metric, "filebench_ops_per_s") is None
    # A 0.1-s sync after filebench's own window (xfs-webserver, 2026-12-02) is no share.
    assert core.sync_share({wl.metric: 100.3, "filebench_ops_per_s": 100.0}, wl.metric, "filebench_ops_per_s") == 0.0

    def figs(window: dict[str, list[float]], share: float) -> dict[str, Any]:
        return {
            s: {"by_rep": {"perf": {"1": 1.0}, "window": {str(i + 1): x for i, x in enumerate(v)}},
                "sync_share": {"points": [share, share + 0.1]}}
            for s, v in window.items()
        }  # fmt: skip

    cells = [
        {"id": "ws", "status": "ok", "figures": figs({"mq-deadline": [100.0] * 5, "veloces": [92.0] * 5}, 0.6)},
        {"id": "db", "status": "ok", "figures": {"mq-deadline": {"by_rep": {"perf": {"1": 1.0}}}}},
    ]
    t = core.against_baseline(plan, cells, "window")
    assert t is not None and t.title == "Each scheduler / mq-deadline, the window alone, per cell"
    assert t.header == ["cell", "veloces", "MDE", "sync share"]
    assert [[c["text"] for c in r] for r in t.rows] == [["ws", "0.920 [0.920, 0.920]", "0-0 %", "65 % (60-70)"]]
    assert "1 of 1 intervals lie wholly" in t.note and "not instead of it" in t.note


def test_cli_rejects_unknown_names(tmp_path: Path) -> None:
    for args in (["nosuchseed"], ["seed000", "--devices", "floppy"], ["seed001", "--filesystems", "fat"],
                 ["seed000", "--workloads", "oltp"], ["seed000", "--repeat", "0"],
                 ["seed000", "--schedulers", "veloces,veloces"]):  # fmt: skip
        # --out apart and a time limit: a case that slipped through must not touch real results.
        cmd = [str(REPO / "vlab"), "repro", *args, "--out", str(tmp_path / "out")]
        p = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=60)
        assert p.returncode == 2 and "error" in p.stderr, (args, p.stderr)


# --- both seeds' quick variants, booted ---------------------------------------------------------


@pytest.fixture
def two_node_ray() -> Iterator[str]:
    """A Ray cluster of two nodes on this machine (two raylets, one CPU each: one guest
    each); its address."""
    from ray.cluster_utils import Cluster

    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
    cluster.add_node(num_cpus=1)
    cluster.wait_for_nodes()
    try:
        yield str(cluster.address)
    finally:
        cluster.shutdown()


def _stalled(cell: dict[str, Any], plan: Plan) -> bool:
    return any((cell["figures"].get(sched) or {}).get("stalled") for sched in plan.schedulers)


def _passes(folder: Path, plan: Plan) -> dict[str, list[Any]]:
    """Each scheduler's runs' passes of their filebench flow (core.cell_runs)."""
    runs = core.cell_runs(folder, plan.schedulers, plan.repeat)
    return {s: [r.get(filebench.PASSES) for r in rs] for s, rs in runs.items()}


def _dispatched(stats: Path) -> int:
    """Requests veloces dispatched, both directions, from its debugfs `stats` as saved."""
    words = [ln.split() for ln in stats.read_text().splitlines() if ln.split()[:1] in (["read"], ["write"])]
    return sum(int(w[w.index("dispatched") + 1]) for w in words)


@pytest.mark.boot
@pytest.mark.parametrize("seed", [pytest.param("seed000", marks=pytest.mark.full), "seed001"])
def test_quick_reproduction_boots_and_judges(seed: str, request: pytest.FixtureRequest,
                                             chromium: browser.Browser | None) -> None:  # fmt: skip
    """seed000's two cells on a two-node Ray cluster (one on each node, at once: two guests
    beside the suite's others, make test-full); seed001's one cell in this process (--jobs 1),
    the reproductions' whole path (plan, served device, calibration, verdicts, report)."""
    if not filebench.installed():
        pytest.fail(f"filebench is not installed at {filebench.binary()}: `make deps` builds it")
    out = REPO / "build" / "repro" / f"{seed}-quick-test"  # kept: a failing run's logs stay
    where = ["--address", request.getfixturevalue("two_node_ray")] if seed == "seed000" else ["--jobs", "1"]
    plan = SEEDS[seed].plan(True)
    for attempt in (1, 2):
        shutil.rmtree(out, ignore_errors=True)
        p = subprocess.run([str(REPO / "vlab"), "repro", seed, "--quick", "--out", str(out), *where],
                           capture_output=True, text=True, cwd=REPO, check=False)  # fmt: skip
        print(p.stdout[-3000:], p.stderr[-3000:])
        assert p.returncode == 0, p.stderr[-2000:]
        s = json.loads((out / "summary.json").read_text())
        assert len(s["cells"]) == len(plan.cells()) and all(c["status"] == "ok" for c in s["cells"])
        stalls = [f"{c['id']}: {_passes(out / c['folder'], plan)}" for c in s["cells"] if _stalled(c, plan)]
        if not stalls:
            break
        # A repetition whose runs all got through no pass of the flow measures the host's
        # starving of the guest, not the schedulers: the cell goes unjudged, as it should
        # (core.stalled_runs). 5-s runs beside make test's compilers got 0-27 passes a run in
        # a clean-clone .ci/run (2026-12-02; a stall failed CI that day), 95-215 on a quiet
        # machine. Once more; stalled again, the test is skipped with the passes, never passed.
        assert all(
            "completed no pass" in c["figures"][sched]["stalled"] and c["figures"][sched]["perf"]["median"] is None
            for c in s["cells"] if _stalled(c, plan) for sched in plan.schedulers
        ), f"a stalled cell not reported as such (passes a run): {stalls}"  # fmt: skip
        if attempt == 2:
            pytest.skip(f"the host starved the guest's 5-s runs twice (passes a run): {stalls}")
        print(f"stalled, run again: {stalls}")
    if seed == "seed000":  # spread over both nodes, each named in the summary and the report
        assert len({c["node"] for c in s["cells"]}) == 2, [c.get("node") for c in s["cells"]]
        assert s["meta"]["executor"].startswith("ray (") and "on Ray: 2 node(s), 2 guest(s)" in p.stderr
        assert all(c["node"] in (out / "report.md").read_text() for c in s["cells"])
    for c in s["cells"]:
        for sched in plan.schedulers:
            f = c["figures"][sched]
            assert f["runs"] == plan.repeat and (f["perf"]["median"] or 0) > 0, (c["id"], sched, f)
            if seed == "seed001":  # a served device: energy, power and AI from its model
                assert all((f[k]["median"] or 0) > 0 for k in ("energy_j", "power_w", "ai")), (c["id"], sched, f)
        cell = out / c["folder"]
        if seed == "seed001":  # set up at dilation 1, measured at the spec's: two switches a run
            counters = json.loads((cell / "vsim0" / "counters.json").read_text())
            assert counters["dilation_switches"] >= 2 * plan.repeat * len(plan.schedulers), counters
            cs = json.loads((cell / "summary.json").read_text())
            assert cs["dilation"] > 1 and cs["meta"]["wbt"] == "off"
            # Writeback throttling off under every scheduler (its clock cannot follow the
            # dilation), mq-deadline's included, which keeps it on where undilated.
            for rep in range(1, plan.repeat + 1):
                for sched in plan.schedulers:
                    t = json.loads((cell / "raw" / f"rep{rep}-{sched}.tunables.json").read_text())
                    assert t["queue/wbt_lat_usec"] == "0", (rep, sched, t)
            # veloces's own counts at the run's start and end (a script job's set-up runs under
            # the same elevator): the run dispatched more than the set-up had.
            for rep in range(1, plan.repeat + 1):
                setup, run = (
                    _dispatched(cell / "raw" / f"rep{rep}-veloces.{n}.txt")
                    for n in ("sched-stats-setup", "sched-stats")
                )
                assert run > setup > 0, (rep, setup, run)
        assert (cell / "report.html").exists() and (cell / "compare.log").exists()
    assert s["verdicts"] and all(v["verdict"] in GRADES for v in s["verdicts"])
    assert "## Verdicts" in p.stdout
    if chromium is not None:
        page = chromium.load(out / "report.html")
        assert not browser.console_errors(page) and not browser.blank_plots(page)
        assert page.cells and not browser.numbers_mismatched(page, out)


def test_calibration_raises_the_dilation_to_the_busy_target_within_the_tunables_range(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One calibration run's busy share sets the cell's dilation (vlab.stats.dilation_for_busy),
    capped where the schedulers' time tunables, scaled by it, would leave their sysfs range
    (veloces: prio_aging_expire's 3,600,000 / 10,000 = 360; a card cell asked 770 and its
    veloces runs failed with -EINVAL)."""
    busy = {"share": 0.5}

    def fake_compare(plan: Plan, folder: Path, *a: Any, **k: Any) -> int:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "summary.json").write_text(
            json.dumps(
                {"dilation": 10.0, "schedulers": {"mq-deadline": {"device_busy_share": {"median": busy["share"]}}}}
            )
        )
        return 0

    monkeypatch.setattr(run, "_compare", fake_compare)
    cell = Cell("cheapflash-steady", "ext4", core.FILEBENCH["webserver"])
    plan = SEEDS["seed000"].plan(False)
    spec, info = run.calibrate(cell, plan, tmp_path / "a" / "cell", tmp_path / "job.sh")
    assert info["busy"] == 0.5 and info["chosen_dilation"] == 90 and "dilation=90" in spec
    # Over the 85 % target but under the 90 % aim: raised (86 % at 10 asks 15); at the aim, kept.
    busy["share"] = 0.86
    spec, info = run.calibrate(cell, plan, tmp_path / "c" / "cell", tmp_path / "job.sh")
    assert info["chosen_dilation"] == 15 and "dilation=15" in spec
    busy["share"] = 0.9
    spec, info = run.calibrate(cell, plan, tmp_path / "d" / "cell", tmp_path / "job.sh")
    assert info["chosen_dilation"] == 10
    busy["share"] = 0.1  # would ask 810
    spec, info = run.calibrate(cell, plan, tmp_path / "b" / "cell", tmp_path / "job.sh")
    assert info["capped_from"] == 810 and info["chosen_dilation"] == 360 and "dilation=360" in spec


def _fake_calibrations(
    ran: list[float], by_dilation: dict[float, tuple[float, float]], own: float
) -> Callable[..., int]:
    """A stand-in for run._compare: one mq-deadline run's summary at the device's dilation
    (`own` where the spec names none), its busy share and passes from `by_dilation`."""

    def fake_compare(plan: Plan, folder: Path, job: Path, device: str, *a: Any, **k: Any) -> int:
        dilation = float(parse_one(device).options.get("dilation", own))
        ran.append(dilation)
        busy, passes = by_dilation[dilation]
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "summary.json").write_text(json.dumps({
            "dilation": dilation, "schedulers": {"mq-deadline": {
                "device_busy_share": {"median": busy}, "workload_filebench_passes": {"min": passes}}},
        }))  # fmt: skip
        return 0

    return fake_compare


def test_a_calibration_that_measured_the_flows_start_runs_lower_and_caps_the_dilation_by_passes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Seed 000's SATA varmail: its calibration run at 50 completed no pass of varmail's flow
    (the threads' first steps, 61 % busy) and asked 290, where no run got past a first fsync.
    A stalled calibration runs again at a fifth of its dilation until a run gets through;
    the dilation chosen keeps MIN_PASSES passes a run (passes fall as 1/dilation), below the
    busy aim if need be; a calibration that got through enough passes is not capped."""
    ran: list[float] = []
    by_dilation: dict[float, tuple[float, float]] = {50.0: (0.61, 0.0), 10.0: (0.5, 6.0), 2.0: (0.3, 9.0)}
    fake_compare = _fake_calibrations(ran, by_dilation, 50)  # the SATA model's own dilation: 50
    monkeypatch.setattr(run, "_compare", fake_compare)
    cell = Cell("sata-steady", "ext4", core.FILEBENCH["varmail"])
    plan = SEEDS["seed000"].plan(False)
    sata_at_50 = core.DEVICES["sata-steady"]
    spec, info = run.calibrate(cell, plan, tmp_path / "a" / "cell", tmp_path / "job.sh")
    assert ran == [50.0, 10.0] and info["stalled_at"] == [50.0] and info["passes"] == 6
    # 50 % at 10 asks 90 for the busy aim; six passes at 10 allow 6 for ten a run
    assert info["pass_capped_from"] == 90 and info["chosen_dilation"] == 6 and "dilation=6" in spec
    assert run._dilation_text(info) == (
        "6 (calibration: 50 % at 10; 6 passes; no pass at 50; 90 would leave fewer than 10 passes a run)"
    )
    # Many passes where it got through, none a step above: not raised past where it got
    # through (the SATA varmail: 45 passes at 2, none at 10; 1/dilation would allow 9)
    by_dilation[10.0] = (0.5, 60.0)
    spec_f, info_f = run.calibrate(cell, plan, tmp_path / "f" / "cell", tmp_path / "job.sh")
    assert info_f["pass_capped_from"] == 90 and info_f["chosen_dilation"] == 10 and "dilation=10" in spec_f
    assert run._dilation_text(info_f) == (
        "10 (calibration: 50 % at 10; 60 passes; no pass at 50; 90 asked, not raised past the one it got through at)"
    )
    by_dilation[10.0] = (0.5, 6.0)
    ran.clear()
    # --resume reuses the calibration that got through (no run again)
    ran.clear()
    assert run.calibrate(cell, plan, tmp_path / "a" / "cell", tmp_path / "job.sh")[1] == info and ran == []
    # Stalled at every dilation: down to 1, where the cell runs (and its runs are judged by
    # core.stalled_runs)
    by_dilation.update({10.0: (0.5, 0.0), 2.0: (0.4, 0.0), 1.0: (0.2, 0.0)})
    spec, info = run.calibrate(cell, plan, tmp_path / "b" / "cell", tmp_path / "job.sh")
    assert ran == [50.0, 10.0, 2.0, 1.0] and info["chosen_dilation"] == 1 and "dilation=1" in spec
    # A stalled calibration kept from before (no history beside it): --resume goes on lower
    by_dilation.update({10.0: (0.5, 6.0)})
    kept = tmp_path / "e" / "cell.calibration"
    fake_compare(plan, kept, tmp_path / "job.sh", sata_at_50)
    ran.clear()
    spec, info = run.calibrate(cell, plan, tmp_path / "e" / "cell", tmp_path / "job.sh")
    assert ran == [10.0] and info["stalled_at"] == [50.0] and info["chosen_dilation"] == 6
    # Enough passes: the busy aim decides (95 % and 12 passes at 50 keep 50)
    by_dilation[50.0] = (0.95, 12.0)
    ran.clear()
    spec, info = run.calibrate(cell, plan, tmp_path / "c" / "cell", tmp_path / "job.sh")
    assert ran == [50.0] and info["chosen_dilation"] == 50 and "pass_capped_from" not in info


def test_a_raised_dilation_is_verified_by_a_run_there_and_lowered_until_one_gets_through(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The card's webserver: 899 passes at 10 (the file set warmed into the page cache),
    44 % busy, asked 120 — where its runs got through 0-6 passes (the cache never warmed).
    A run at the raised dilation checks it; short of ten passes it runs lower (by its
    passes as 1/dilation; half way in log terms after none), at most three tries, then at
    the calibration's own dilation. --resume reuses the tries."""
    ran: list[float] = []
    by_dilation = {10.0: (0.44, 899.0), 120.0: (0.8, 3.0), 36.0: (0.7, 12.0)}
    monkeypatch.setattr(run, "_compare", _fake_calibrations(ran, by_dilation, 10))  # the card's own: 10
    cell = Cell("cheapflash-steady", "ext4", core.FILEBENCH["webserver"])
    plan = SEEDS["seed000"].plan(False)
    spec, info = run.calibrate(cell, plan, tmp_path / "a" / "cell", tmp_path / "job.sh")
    assert ran == [10.0, 120.0, 36.0] and info["chosen_dilation"] == 36 and "dilation=36" in spec
    assert info["verified"] == [[120.0, 3.0, 0.8], [36.0, 12.0, 0.7]]
    assert run._dilation_text(info).endswith("at 120: 3 passes, 80 %; at 36: 12 passes, 70 %)")
    ran.clear()
    assert run.calibrate(cell, plan, tmp_path / "a" / "cell", tmp_path / "job.sh")[1] == info and ran == []
    # A calibration run again (here: none kept) is checked afresh, not by another's tries.
    shutil.rmtree(tmp_path / "a" / "cell.calibration")
    assert run.calibrate(cell, plan, tmp_path / "a" / "cell", tmp_path / "job.sh")[1] == info
    assert ran == [10.0, 120.0, 36.0]
    # No pass anywhere above the calibration: three tries, then its own dilation.
    by_dilation.update({120.0: (0.8, 0.0), 34.0: (0.7, 0.0), 18.0: (0.6, 0.0)})
    ran.clear()
    spec, info = run.calibrate(cell, plan, tmp_path / "b" / "cell", tmp_path / "job.sh")
    assert ran == [10.0, 120.0, 34.0, 18.0] and info["chosen_dilation"] == 10 and "dilation=10" in spec


def test_one_dilation_for_every_cell_skips_the_calibration(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`vlab repro --dilation D`: every served cell runs at D, none calibrated (seed 001's
    cross-filesystem ratios are judged only between cells at one dilation); the plan records
    it, so --resume refuses a folder run at another; null_blk is not dilated."""
    ran: list[float] = []
    monkeypatch.setattr(run, "_compare", _fake_calibrations(ran, {50.0: (0.95, 12.0)}, 50))
    plan = SEEDS["seed001"].plan(False)
    plan.dilation = 40.0
    cell = Cell("sata-steady", "xfs", core.FILEBENCH["varmail"])
    spec, info = run.calibrate(cell, plan, tmp_path / "cell", tmp_path / "job.sh")
    assert ran == [] and "dilation=40" in spec and info == {"fixed_dilation": 40.0}
    assert run._dilation_text(info).startswith("40 (--dilation")
    assert run.plan_json(plan)["dilation"] == 40.0
    other = run.plan_json(plan) | {"dilation": None}
    assert "dilation None (this run: 40.0)" in run.plan_differs(other, plan)
    assert (
        run.calibrate(Cell("nullblk", "ext4", core.FILEBENCH["varmail"]), plan, tmp_path / "n", tmp_path / "j")[1] == {}
    )
    for bad in ("0", "20000"):
        assert main(["repro", "seed001", "--dilation", bad, "--table", "--out", str(tmp_path)]) == 2


def test_a_stale_cell_runs_again_from_an_empty_folder_and_a_fresh_calibration(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cell and its calibration that ran under other guest sysctls (before fileserver's
    dirty limits) are not reused: the calibration runs again, and none of the old run's
    files stay beside the new run's (a scheduler dropped since would otherwise linger)."""
    ran: list[str] = []
    now = run.guest_sysctl(core.FILEBENCH["fileserver"].sysctl)

    def fake_compare(plan: Plan, folder: Path, *a: Any, **k: Any) -> int:
        ran.append(folder.name)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "summary.json").write_text(json.dumps({
            "dilation": 50.0, "meta": {"complete": True, "problems": [], "sysctl": now, "wbt": "off"},
            "schedulers": {"mq-deadline": {"device_busy_share": {"median": 0.95},
                                           "workload_filebench_sustained_ops_per_s": {"median": 9.0},
                                           "workload_filebench_passes": {"median": 40.0, "min": 40.0}}},
        }))  # fmt: skip
        return 0

    monkeypatch.setattr(run, "_compare", fake_compare)
    seed = SEEDS["seed001"]
    plan = seed.plan(True)
    plan.busy_target = 0.85
    cell = Cell("sata-steady", "ext4", core.FILEBENCH["fileserver"])
    out = tmp_path / "r"
    folder = run.cell_folder(out, cell)
    cal = folder.parent / f"{folder.name}.calibration"
    for f, busy in ((folder, 0.5), (cal, 0.5)):  # as they ran before: no dirty limits
        (f / "raw").mkdir(parents=True)
        (f / "raw" / "rep1-cfq.json").write_text("{}")
        (f / "summary.json").write_text(json.dumps({
            "dilation": 50.0, "meta": {"complete": True, "problems": [], "sysctl": run.guest_sysctl(())},
            "schedulers": {"mq-deadline": {"device_busy_share": {"median": busy}}},
        }))  # fmt: skip
    entry = run.run_cell(cell, plan, out, Path("/bin/true"))
    assert entry["status"] == "ok" and ran == [cal.name, folder.name]
    assert entry["calibration"]["busy"] == 0.95 and entry["calibration"]["chosen_dilation"] == 50.0
    assert not (folder / "raw" / "rep1-cfq.json").exists() and run._stale(cell, run._meta(folder)) is None
    # Run again as it is now, both are what they should be: the calibration is reused.
    ran.clear()
    run.run_cell(cell, plan, out, Path("/bin/true"))
    assert ran == [folder.name]


def test_a_dilated_cell_run_with_writeback_throttling_on_is_stale() -> None:
    """Before 2026-11-29 the guest left wbt on under none, mq-deadline and kyber on a
    dilated device, where its wall-time clock throttled their buffered writeback (bfq and
    veloces turn it off). Such a cell (its summary says nothing of wbt) runs again; an
    undilated one (the kernel's wbt was right there) and one with wbt off count."""
    cell = Cell("sata-steady", "ext4", core.FILEBENCH["varmail"])
    now = run.guest_sysctl(cell.workload.sysctl)
    old = {"complete": True, "problems": [], "sysctl": now, "dilation": 90.0}
    assert "writeback throttling on" in (run._stale(cell, old) or "")
    assert run._stale(cell, {**old, "wbt": "off"}) is None
    assert run._stale(cell, {**old, "dilation": 1.0}) is None
    assert run._stale(cell, {}) is None, "no summary: nothing to call stale"


def test_a_filebench_cell_without_its_sustained_figure_or_calibration_without_passes_is_stale() -> None:
    """Since 2026-11-30 filebench cells are judged by their sustained rate (the window and the
    sync after it); a cell whose runs did not record it ran another method. A calibration
    reads its run's busy share and passes (not the sustained rate): one without passes ran
    before the stall and pass rules could act on it."""
    cell = Cell("sata-steady", "ext4", core.FILEBENCH["fileserver"])
    assert cell.workload.metric == "filebench_sustained_ops_per_s"
    sysctl = run.guest_sysctl(cell.workload.sysctl)
    old = {"dilation": 50.0, "wbt": "off", "sysctl": sysctl, "figures": ["workload_filebench_ops_per_s"]}
    assert "before its figure (filebench_sustained_ops_per_s)" in (run._stale(cell, old) or "")
    assert "before its flow's passes (filebench_passes)" in (run._stale(cell, old, figure=False) or "")
    counted = {**old, "figures": ["workload_filebench_ops_per_s", "workload_filebench_passes"]}
    assert run._stale(cell, counted, figure=False) is None  # it need not have the sustained rate
    new = {**old, "figures": ["workload_filebench_ops_per_s", "workload_filebench_sustained_ops_per_s"]}
    assert run._stale(cell, new) is None
    assert run._stale(cell, {k: v for k, v in old.items() if k != "figures"}) is None  # a folder that does not say
    dbench = Cell("sata-steady", "ext4", core.DBENCH["dbench-8"])
    assert run._stale(dbench, {**old, "figures": ["workload_dbench_mb_s"]}, figure=False) is None  # no flow


def test_a_kept_calibration_without_passes_is_run_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Seed 001's varmail cells kept calibrations from before passes were counted (90 % busy
    at 50, 65 operations of 16 threads in a 30-s run): reused, they chose 53 and no pass cap,
    and the cell's runs would have measured the threads' first steps. --resume calibrates
    such a cell again, and its new run's passes cap the dilation."""
    cell = Cell("sata-steady", "ext4", core.FILEBENCH["varmail"])
    plan = SEEDS["seed001"].plan(False)
    folder = tmp_path / "cells" / "sata-steady" / "ext4-varmail"
    kept = folder.parent / "ext4-varmail.calibration"
    kept.mkdir(parents=True)
    meta = {"sysctl": run.guest_sysctl(cell.workload.sysctl), "wbt": "off"}
    (kept / "summary.json").write_text(json.dumps({
        "dilation": 50.0, "meta": meta,
        "schedulers": {"mq-deadline": {"device_busy_share": {"median": 0.5}, "workload_filebench_ops": {"median": 65}}},
    }))  # fmt: skip
    ran: list[float] = []
    monkeypatch.setattr(run, "_compare", _fake_calibrations(ran, {50.0: (0.95, 3.0)}, 50))
    spec, info = run.calibrate(cell, plan, folder, tmp_path / "job.sh")
    assert ran == [50.0], "calibrated again"
    assert info["passes"] == 3 and info["chosen_dilation"] == 15 and "dilation=15" in spec
