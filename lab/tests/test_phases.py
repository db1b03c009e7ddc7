"""make test's phase timer (lab/phases.py): the counts it reads, what it records, the summary;
and the lab scheduler's units (tests/conftest.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import LAB

import phases


@pytest.fixture
def record(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(phases, "DIR", tmp_path)
    monkeypatch.setattr(phases, "RECORD", tmp_path / "phases.jsonl")
    monkeypatch.setattr(phases, "ROOT", tmp_path)
    monkeypatch.setenv("VELOCES_PHASES", "1")
    monkeypatch.delenv("VELOCES_PHASES_PREFIX", raising=False)
    assert phases.cmd_start() == 0
    return tmp_path


def test_counts_of_each_runner() -> None:
    cargo = (
        "test result: ok. 160 passed; 0 failed; 4 ignored; 0 measured; 0 filtered out\n"
        "test result: FAILED. 3 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out\n"
    )
    assert phases.counts(cargo) == {"passed": 163, "failed": 1, "ignored": 4}
    # pytest: the summary line only (not a test's own output), deselected is not an outcome.
    text = "x 9 passed in the log\n== 2 failed, 14 passed, 3 skipped, 283 deselected, 1 error in 264.63s (0:04:24) ==\n"
    assert phases.counts(text) == {"failed": 2, "passed": 14, "skipped": 3, "errors": 1}
    assert phases.counts("166 cases, 165 passed, 1 failed\n") == {"cases passed": 165, "cases failed": 1}
    assert phases.counts("nothing here\n") == {}


def test_run_records_a_phase_and_keeps_its_output(record: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc = phases.cmd_run("ok", ["bash", "-c", "echo '3 passed in 0.1s'; pwd"], str(record))
    assert rc == 0
    assert phases.cmd_run("bad", ["bash", "-c", "exit 4"], None) == 4
    entries = [json.loads(line) for line in (record / "phases.jsonl").read_text().splitlines()]
    assert [(e["phase"], e["rc"], e["counts"]) for e in entries] == [("ok", 0, {"passed": 3}), ("bad", 4, {})]
    assert (record / "ok.log").read_text() == f"3 passed in 0.1s\n{record}\n"
    out = capsys.readouterr().out
    assert "phases: ok: ok in" in out and "phases: bad: FAILED (exit 4)" in out


def test_summary_merges_repeated_phases(record: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for _ in range(2):
        phases.cmd_run("deps", ["true"], None)
    phases.cmd_run("tests", ["bash", "-c", "sleep 0.3; echo '2 passed, 1 skipped in 0.3s'"], None)
    assert phases.cmd_summary() == 0
    out = capsys.readouterr().out
    assert "deps (x2)" in out and "2 passed, 1 skipped" in out.splitlines()[-1]
    assert (record / "summary.txt").exists()


def test_a_phase_records_its_process_trees_cpu_time(record: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """CPU time, the cost on a machine with fewer cores: a grandchild's busy loop counts, a
    sleep does not; the summary adds the machine's busy time since `start`."""
    burn = "python3 -c 'import time; t = time.process_time()\nwhile time.process_time() - t < 0.6: pass'"
    assert phases.cmd_run("busy", ["bash", "-c", burn], None) == 0
    assert phases.cmd_run("idle", ["sleep", "0.6"], None) == 0
    cpu = {e["phase"]: e["cpu_s"] for e in map(json.loads, (record / "phases.jsonl").read_text().splitlines())}
    assert cpu["busy"] >= 0.5 and cpu["idle"] < 0.2, cpu
    assert phases.cmd_summary() == 0
    out = capsys.readouterr().out
    assert "machine busy" in out and "of CPU time over the run" in out
    total = next(line for line in out.splitlines() if line.startswith("total (wall)"))
    assert len(total.split("s")) >= 3, total  # the wall time, then the phases' CPU time


def test_without_the_variable_the_command_just_runs() -> None:
    import subprocess
    import sys

    p = subprocess.run(
        [sys.executable, str(LAB / "phases.py"), "run", "x", "--", "bash", "-c", "echo hi; exit 5"],
        capture_output=True, text=True, env={"PATH": "/usr/bin:/bin"}, check=False,
    )  # fmt: skip
    assert (p.returncode, p.stdout) == (5, "hi\n")


def test_each_kernels_suite_boot_is_one_unit_of_work() -> None:
    """Under xdist, a suite boot's tests stay together (one worker, one boot) per kernel."""
    from conftest import suite_unit

    assert suite_unit("tests/test_veloces.py::test_module[6.12-stress]") == "tests/test_veloces.py[6.12]"
    assert suite_unit("tests/test_veloces.py::test_module[6.1-shared-kernel_log]") == "tests/test_veloces.py[6.1]"
    assert suite_unit("tests/test_served.py::test_served[6.1-verify_ssd]") == "tests/test_served.py[6.1]"
    assert suite_unit("tests/test_veloces.py::test_module[6.1-rt-load]") == "tests/test_veloces.py[6.1-rt]"
    assert suite_unit("tests/test_served.py::test_a_server_killed_mid_compare_names_the_step_and_keeps_results") is None
    assert suite_unit("tests/test_boot.py::test_compare_in_tree_schedulers[6.1]") is None
