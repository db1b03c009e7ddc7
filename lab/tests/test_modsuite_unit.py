"""The module suite's harness, on the host (no boot): every check is a file with `requires()`
and `check()`, a requirement's reason reaches the record as a skip, and the requirement
helpers read modinfo's output as modinfo writes it."""

import json
import subprocess
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from vlab.checks import modsuite
from vlab.checks.modsuite import common


def test_every_check_declares_its_requirements_and_its_run() -> None:
    assert len(modsuite.CHECKS) >= 16
    for name, mod in modsuite.CHECKS.items():
        assert callable(mod.requires) and callable(mod.check), name
        assert Path(mod.__file__ or "").stem == name, f"{name} is registered from another file"
    assert set(modsuite.TIMED) <= set(modsuite.CHECKS)


def _modinfo(out: dict[str, str]) -> object:
    def sh(cmd: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
        for key, text in out.items():
            if cmd == key:
                return subprocess.CompletedProcess(cmd, 0, text, "")
        return subprocess.CompletedProcess(cmd, 1, "", "modinfo: ERROR: Module not found.\n")

    return sh


def test_needs_param_reads_modinfo_parameter_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    parm = (
        "submit_queues:Number of submission queues (int)\n"
        "requeue:Inject requeue to the request queue. <interval,probability,space,times> (charp)\n"
    )
    monkeypatch.setattr(common, "sh", _modinfo({"modinfo null_blk": "x", "modinfo -F parm null_blk": parm}))
    monkeypatch.setattr(common, "Path", lambda *a: Path("/nonexistent", *a))
    assert common.needs_param("null_blk", "requeue", "CONFIG_X") is None
    missing = common.needs_param("null_blk", "zoned", "CONFIG_BLK_DEV_ZONED")
    assert missing == "null_blk has no zoned= (needs CONFIG_BLK_DEV_ZONED)"
    # a prefix of a parameter's name is not the parameter
    assert common.needs_param("null_blk", "submit", "CONFIG_X") is not None
    assert common.needs_module("scsi_debug") == "this kernel has no scsi_debug module"


def _suite(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, fake: dict[str, object]) -> dict[str, Any]:
    """The suite's runner over these checks, on the host: its records (one check fails)."""
    monkeypatch.setattr(modsuite, "CHECKS", fake)
    monkeypatch.setattr(modsuite, "uptime", lambda: 0.0)
    monkeypatch.setattr(modsuite, "dmesg_problems", lambda since: [])
    monkeypatch.setenv("VLAB_OUT", str(tmp_path))
    assert modsuite.main([]) == 1
    got: dict[str, Any] = json.loads((tmp_path / "modsuite.json").read_text())
    return got


def test_a_requirement_missing_is_recorded_as_a_skip_with_its_reason(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    ran: list[str] = []
    fake = {
        "needs": SimpleNamespace(requires=lambda: "null_blk has no zoned=", check=lambda r: ran.append("needs")),
        "runs": SimpleNamespace(requires=lambda: None, check=lambda r: ran.append("runs")),
        "fails": SimpleNamespace(requires=lambda: None, check=lambda r: common.expect(False, "it broke")),
    }
    got = _suite(monkeypatch, tmp_path, fake)
    assert ran == ["runs"]
    assert got["needs"]["ok"] and got["needs"]["figures"] == {"skipped": True}
    assert got["needs"]["detail"] == "skipped: null_blk has no zoned="
    assert got["runs"]["ok"] and not got["runs"]["figures"]
    assert not got["fails"]["ok"] and got["fails"]["detail"] == "CheckFailed: it broke"
    assert got["kernel_log"]["ok"]


def test_trace_lines_parse_and_requeue_order_is_judged_among_the_schedulers_requeues() -> None:
    from vlab.checks.modsuite import requeue

    lines = [
        "fio-301 [001] ..... 12.1: block_rq_issue: 251,0 W 4096 () 100 + 8 [fio]",
        "fio-301 [001] ..... 12.2: block_rq_issue: 251,0 W 4096 () 200 + 8 [fio]",
        "fio-301 [001] ..... 12.3: block_rq_issue: 251,0 W 4096 () 300 + 8 [fio]",
        "fio-301 [001] ..... 12.4: block_rq_requeue: 251,0 W () 100 + 8 [0]",
        "fio-301 [001] ..... 12.5: block_rq_requeue: 251,0 W () 300 + 8 [0]",  # BLK_STS_RESOURCE
        "fio-301 [001] ..... 12.6: block_rq_requeue: 251,0 W () 200 + 8 [0]",
        # 6.1 hands a burst back newest first: the insert order is not the requeue order
        "kworker [000] ..... 12.7: block_rq_insert: 251,0 W 4096 () 200 + 8 [kworker]",
        "kworker [000] ..... 12.8: block_rq_insert: 251,0 W 4096 () 100 + 8 [kworker]",
        "kworker [000] ..... 12.9: block_rq_issue: 251,0 W 4096 () 300 + 8 [kworker]",
        "kworker [000] ..... 13.0: block_rq_issue: 251,0 W 4096 () 200 + 8 [kworker]",  # 200 before 100
        "kworker [000] ..... 13.1: block_rq_issue: 251,0 W 4096 () 100 + 8 [kworker]",
        "kworker [000] ..... 13.2: block_rq_issue: 8,0 W 4096 () 100 + 8 [kworker]",  # another disk
    ]
    events = []
    for line in lines:
        m = common.Trace.PATTERN.search(line)
        assert m, line
        if m.group(2) == "251,0":
            events.append(common.TraceEvent(m.group(1), m.group(3), int(m.group(4)), int(m.group(5))))
    assert events[3] == common.TraceEvent("block_rq_requeue", "W", 100, 8)
    assert requeue.requeue_order(events) == (2, 1, 1)  # 200 went before 100, requeued first
    swapped = [*events[:9], events[10], events[9]]
    assert requeue.requeue_order(swapped) == (2, 1, 0)  # in requeue order


def test_a_check_the_host_was_too_loaded_to_judge_is_recorded_as_a_skip_with_its_figures(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    def late(r: common.Result) -> None:
        r["figures"]["elapsed_ms"] = 400.0
        common.expect_in_time(400, 350, 60, "completed after")

    def slow(r: common.Result) -> None:
        common.expect_in_time(400, 350, 40, "completed after")

    fake = {
        "late": SimpleNamespace(requires=lambda: None, check=late),
        "slow": SimpleNamespace(requires=lambda: None, check=slow),
    }
    got = _suite(monkeypatch, tmp_path, fake)
    assert got["late"]["ok"] and got["late"]["figures"] == {"elapsed_ms": 400.0, "skipped": True}
    assert got["late"]["detail"].startswith("not judged: host loaded: completed after 400 ms, limit 350 ms")
    assert not got["slow"]["ok"] and got["slow"]["detail"].startswith("CheckFailed: completed after 400 ms")


def test_a_time_bound_missed_within_the_time_lost_is_not_judged() -> None:
    common.expect_in_time(350, 350, 0, "completed after")  # met
    with pytest.raises(common.NotJudged, match="completed after 400 ms, limit 350 ms; the guest lost 60 ms"):
        common.expect_in_time(400, 350, 60, "completed after")
    with pytest.raises(common.CheckFailed, match="completed after 400 ms, limit 350 ms; the guest lost 40 ms"):
        common.expect_in_time(400, 350, 40, "completed after")
