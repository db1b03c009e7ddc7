"""blktests' `block` group on real kernels with the veloces module loaded: one boot per
kernel runs vlab.checks.blktests, and each blktests test is one test here. A test blktests did
not run (or that vlab.checks.blktests excludes) is skipped with blktests' reason, so `-ra` lists
them; a failure that vlab.checks.blktests.KNOWN_FAILURES explains (it fails without veloces too)
is an xfail. Needs the blktests snapshot ($VELOCES_BLKTESTS, default ../shared/third_party/blktests)
and `make -C kernel`; skipped when the snapshot is absent.

The group takes about 25 minutes per kernel under TCG, too long for `make test`: the
boots run only with VLAB_BLKTESTS=1 (`make test-blktests`) and are skipped otherwise.
VLAB_BLKTESTS_KERNELS="6.1 6.12" (the default; else VLAB_KERNELS, as for test_veloces.py)
chooses the kernels, comma- or space-separated; each name goes to `vlab run --kernel` as
it is (debug-6.1 too). VLAB_BLKTESTS_TESTS="block/005 block/020" runs only those.
The parser tests at the end boot nothing.
"""

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO

from vlab.checks import blktests
from vlab.machine.kernels import DEFAULT_KERNELS, KERNELS
from vlab.machine.vm import default_out
from vlab.schedulers import module_path

_KERNELS_ENV = os.environ.get("VLAB_BLKTESTS_KERNELS") or os.environ.get("VLAB_KERNELS") or " ".join(DEFAULT_KERNELS)
UNDER_TEST = _KERNELS_ENV.replace(",", " ").split()
MISSING = blktests.suite_missing()
CHOSEN = os.environ.get("VLAB_BLKTESTS_TESTS", "").replace(",", " ").split()
TESTS = CHOSEN or (blktests.group_tests(blktests.suite_path()) if MISSING is None else [blktests.GROUP])

_results: dict[str, dict[str, Any]] = {}


def suite(kernel: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Boot `kernel` once and run the group; {"tests": ..., "run": ..., "vlab": ...}."""
    if MISSING:
        pytest.skip(MISSING)
    if os.environ.get("VLAB_BLKTESTS") != "1":
        pytest.skip("blktests' block group boots each kernel for ~25 min: run it with VLAB_BLKTESTS=1")
    if kernel not in _results:
        src = blktests.prepare()
        known = KERNELS.get(kernel)
        if known is not None:
            ko = module_path("veloces", known.release)
            assert ko.exists(), f"{ko} missing: run make -C kernel modules"
        out: Path = default_out(f"blktests-{kernel}")  # kept: pytest recycles its temporary directories
        budget, limit = blktests.DEFAULT_BUDGET_S, blktests.DEFAULT_TEST_LIMIT_S
        timeout = budget + limit + blktests.BOOT_ALLOWANCE_S  # the last test may start just before the budget ends
        command = blktests.guest_command(sys.executable, CHOSEN, blktests.DEFAULT_TIMEOUT_S, budget, src)
        p = subprocess.run(
            [str(REPO / "vlab"), "run", "--kernel", kernel, "--memory", "4G", "--cpus", "2",
             "--timeout", str(timeout), "--out", str(out), "--", command],
            capture_output=True, text=True, cwd=REPO, check=False, timeout=timeout + 300,
        )  # fmt: skip
        print(p.stdout[-4000:], p.stderr[-2000:])
        report, run = out / "blktests.json", out / "blktests-run.json"
        _results[kernel] = {
            "tests": json.loads(report.read_text()) if report.exists() else {},
            "run": json.loads(run.read_text()) if run.exists() else {},
            "vlab": {"rc": p.returncode, "out": str(out), "tail": (p.stdout + p.stderr)[-1500:]},
        }
    return _results[kernel]


@pytest.mark.boot
@pytest.mark.parametrize("test", TESTS)
@pytest.mark.parametrize("kernel", UNDER_TEST)
def test_block(kernel: str, test: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    results = suite(kernel, tmp_path_factory)
    vlab = results["vlab"]
    assert test in results["tests"], f"{test} on {kernel} has no result (vlab exit {vlab['rc']}): {vlab['tail']}"
    r = results["tests"][test]
    if r["status"] in ("not run", "excluded"):
        label = "not run" if r["status"] == "not run" else "excluded"
        pytest.skip(f"{test} on {kernel}: {label}: {r['reason']}")
    if r["status"] == "failed" and "known" in r:
        pytest.xfail(f"{test} on {kernel}: {r['reason']} [known: {r['known']}]")
    assert r["status"] == "passed", f"{test} on {kernel} {r['status']}: {r['reason']} (see {vlab['out']})"


@pytest.mark.boot
@pytest.mark.parametrize("kernel", UNDER_TEST)
def test_cycling_reaches_veloces(kernel: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    """The tests that cycle through the offered schedulers were offered, and attached, veloces."""
    results = suite(kernel, tmp_path_factory)
    run = results["run"]
    assert "cycling" in run, f"the run on {kernel} did not finish (vlab exit {results['vlab']['rc']})"
    assert "veloces" in run["offered"], f"the test device offers {run['offered']}"
    assert not run["cycling"]["problems"], f"{kernel}: {run['cycling']}"


@pytest.mark.boot
@pytest.mark.parametrize("kernel", UNDER_TEST)
def test_run_finished(kernel: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    """The guest finished (no crash, no timeout); prints what blktests did not run, and why."""
    results = suite(kernel, tmp_path_factory)
    vlab = results["vlab"]
    skipped = {t: r for t, r in results["tests"].items() if r["status"] in ("not run", "excluded")}
    print(f"{kernel}: {len(skipped)} of {len(results['tests'])} tests not run:")
    for t, r in skipped.items():
        print(f"  {t}  {r['status']}: {r['reason']}")
    assert vlab["rc"] in (0, 1), f"vlab exit {vlab['rc']} on {kernel} (124 timeout, 125 crash): {vlab['tail']}"
    assert "wall_s" in results["run"], f"the guest stopped before the end of the group: {vlab['tail']}"


# ------------------------------------------------------------------ parsing (no boot)

SAMPLE = """\
./check: gawk is not available. Install GNU awk.
block/005 => loop0 (switch schedulers while doing IO)
block/005 => loop0 (switch schedulers while doing IO)        [passed]
    read iops    ...  5863
    runtime      ...  32.689s

block/009 (check page-cache coherency after BLKDISCARD)
block/009 (check page-cache coherency after BLKDISCARD)      [not run]
    command xfs_io is not available
block/024 (do I/O faster than a jiffy and check iostats times)
block/024 (do I/O faster than a jiffy and check iostats times) [failed]
    runtime    ...  6.366s
    --- tests/block/024.out\t2026-11-23 15:11:18.413937129 +0000
    +++ /tmp/blktests/results/nodev/block/024.out.bad\t2026-11-23 15:55:11.299974447 +0000
    @@ -6,5 +6,5 @@
     read 2 s
    -write 3 s
    +write 4 s
     Test complete
block/016 (send a signal to a process waiting on a frozen queue)
block/016 (send a signal to a process waiting on a frozen queue) [failed]
    runtime  12.0s  ...  11.4s
    exited with status 1
"""


def test_parse_check_output() -> None:
    got = {o.test: o for o in blktests.parse_check_output(SAMPLE)}
    assert list(got) == ["block/005", "block/009", "block/024", "block/016"]
    assert (got["block/005"].status, got["block/005"].device, got["block/005"].runtime_s) == ("passed", "loop0", 32.689)
    assert got["block/005"].figures == {"read iops": "5863"} and got["block/005"].details == []
    assert got["block/009"].details == ["command xfs_io is not available"]
    assert got["block/016"].runtime_s == 11.4


def test_summarize() -> None:
    outcomes = blktests.parse_check_output(SAMPLE)
    r = blktests.summarize("block/009", outcomes, 0, 3.0, SAMPLE)
    assert (r["status"], r["reason"], r["seconds"]) == ("not run", "command xfs_io is not available", 3.0)
    r = blktests.summarize("block/024", outcomes, 1, 10.0, SAMPLE)
    assert r["status"] == "failed" and r["reason"] == "output differs: -write 3 s | +write 4 s"
    r = blktests.summarize("block/016", outcomes, 1, 12.0, SAMPLE)
    assert r["reason"] == "exited with status 1"
    r = blktests.summarize("block/001", outcomes, 1, 1.0, "boom")
    assert r["status"] == "failed" and "printed no result" in r["reason"]


def test_missing_suite_names_path_and_variable(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(blktests.ENV_VAR, str(tmp_path / "nowhere"))
    why = blktests.suite_missing()
    assert why is not None and str(tmp_path / "nowhere") in why and blktests.ENV_VAR in why


def test_cycling_counts_only_tests_that_ran_to_the_end() -> None:
    ok = {"status": "passed", "reason": "", "veloces_attached": 1, "schedulers_attached": 4}
    killed = {"status": "failed", "reason": "killed after 600 s", "killed": True, "veloces_attached": 0}
    results = {t: dict(ok) for t in (*blktests.CYCLING_ALL, *blktests.CYCLING_RANDOM)}
    results["block/015"] = killed
    assert blktests.check_cycling(results, ["none", "veloces"])["problems"] == []
    results["block/015"] = {**killed, "killed": False}
    assert blktests.check_cycling(results, ["none", "veloces"])["problems"] == ["block/015 never attached veloces"]
