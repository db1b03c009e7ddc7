"""The lab's application layer (vlab.app) and the typed host-to-guest request
(vlab.machine.request), without booting: what a caller gets for a bad request, and what the guest
reads back."""

import json
from pathlib import Path

import pytest
from conftest import REPO

from vlab import app, stats
from vlab.machine import request
from vlab.machine.kernels import KERNELS

JOB = REPO / "lab" / "jobs" / "mixed-randrw.fio"
COMPARE = {"action": "compare", "devices": [], "schedulers": [], "repeat": 1}


def comparison(tmp_path: Path, **changes: object) -> app.Comparison:
    c = app.Comparison(kernel=KERNELS["6.1"], devices=["null_blk:size=64"], schedulers=["none", "veloces"],
                       jobs=[JOB], out=tmp_path / "out")  # fmt: skip
    for k, v in changes.items():
        setattr(c, k, v)
    return c


def test_a_good_comparison_becomes_the_guests_request(tmp_path: Path) -> None:
    req = app.check(comparison(tmp_path, runtime=2.0, sysctl={"vm.dirty_bytes": "1"}))
    assert req == request.CompareRequest(
        devices=["null_blk:size=64"], schedulers=["none", "veloces"], jobs=[request.Job(JOB.read_text(), "fio")],
        repeat=3, runtime=2.0, sysctl={"vm.dirty_bytes": "1"},
    )  # fmt: skip
    assert request.from_json(request.to_json(req)) == req
    assert app.baseline(comparison(tmp_path)) == "none"
    assert app.baseline(comparison(tmp_path, schedulers=["kyber", "veloces"])) == "kyber"


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"schedulers": ["none", "none"]}, "distinct"),
        ({"schedulers": ["none", "veloces:read_expire"]}, "want TUNABLE=VALUE"),
        ({"baseline": "bfq"}, "baseline 'bfq' is not among"),
        ({"repeat": 0}, "--repeat must be at least 1"),
        ({"runtime": -1.0}, "--runtime must be positive"),
        ({"sysctl": {"vm/../x": "1"}}, "--sysctl wants KEY=VALUE"),
        ({"jobs": [Path("/nonexistent.fio")]}, "not found"),
        ({"devices": []}, "needs a device"),
        ({"jobs": []}, "needs a job"),
        ({"jobs": [JOB, Path("/nonexistent.fio")]}, "nonexistent.fio not found"),
    ],
)
def test_a_bad_comparison_is_refused_before_anything_boots(
    tmp_path: Path, changes: dict[str, object], message: str
) -> None:
    with pytest.raises(app.RequestError, match=message):
        app.compare(comparison(tmp_path, **changes))
    assert not (tmp_path / "out").exists()


def test_the_equivalent_command_line_asks_for_the_same(tmp_path: Path) -> None:
    argv = comparison(tmp_path, runtime=4.0, sysctl={"kernel.randomize_va_space": "0"}).as_command()
    assert argv[:4] == ["./vlab", "compare", "--kernel", "6.1"]
    assert argv[argv.index("--schedulers") : argv.index("--schedulers") + 2] == ["--schedulers", "none,veloces"]
    assert "--sysctl" in argv and "kernel.randomize_va_space=0" in argv and argv[-1] == str(tmp_path / "out")


def test_the_default_timeout_gives_a_script_jobs_runs_their_set_up(tmp_path: Path) -> None:
    boot = app.default_timeout(comparison(tmp_path, jobs=[]))
    fio = app.default_timeout(comparison(tmp_path, runtime=10.0)) - boot
    assert fio == 3 * 2 * (2 * 10 + 15)  # 3 repetitions x 2 schedulers, each twice its runtime + 15 s
    script = app.default_timeout(comparison(tmp_path, jobs=[Path("x.sh")]), runtime_s=10) - boot
    assert script == 3 * 2 * (2 * 10 + 15 + app.SCRIPT_SETUP_ALLOWANCE_S)
    both = app.default_timeout(comparison(tmp_path, jobs=[JOB, Path("x.sh")], runtime=10.0)) - boot
    assert both == fio + script


def test_several_jobs_share_one_boot_each_in_its_own_folder(tmp_path: Path) -> None:
    script = tmp_path / "copy.sh"
    script.write_text("true\n")
    other = tmp_path / "x" / "mixed-randrw.fio"
    other.parent.mkdir()
    other.write_text(JOB.read_text())
    c = comparison(tmp_path, jobs=[JOB, script, other])
    req = app.check(c)
    assert [(j.kind, j.folder) for j in req.jobs] == [("fio", "mixed-randrw"), ("script", "copy"),
                                                      ("fio", "mixed-randrw-2")]  # fmt: skip
    assert request.from_json(request.to_json(req)) == req
    argv = c.as_command()
    assert [argv[i + 1] for i, a in enumerate(argv) if a == "--job"] == [str(JOB), str(script), str(other)]
    assert app.folders([JOB]) == [""]


def test_overview_puts_each_jobs_medians_and_ratios_side_by_side() -> None:
    def entry(iops: float, p99: float | None, r: float) -> dict[str, object]:
        return {"iops": {"median": iops, "min": iops - 1, "max": iops + 1},
                "read_p99_us": {"median": p99, "min": p99, "max": p99} if p99 else {"median": None},
                "ratio_to_baseline": {"iops": r, "read_p99_us": r if p99 else None, "write_iops": r}}  # fmt: skip

    text = stats.format_overview(
        {"flood": {"schedulers": {"none": entry(100, 4000, 1.0), "veloces": entry(90, 1000, 0.25)}},
         "mix": {"schedulers": {"none": entry(50, None, 1.0), "veloces": entry(50, None, 1.0)}}}, "none",
    )  # fmt: skip
    lines = text.splitlines()
    assert lines[0].startswith("| scheduler | flood: IOPS (range) | IOPS/none |") and "mix: IOPS (range)" in lines[0]
    veloces = "| veloces | 90 (89-91) | 0.25 | 1.00 (1.00-1.00) | 0.25 | 0.25 | 50 (49-51) | 1.00 | - | - | 1.00 |"
    assert lines[3] == veloces


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (json.dumps({"action": "dance"}), "unknown action 'dance'"),
        (json.dumps({**COMPARE, "jobs": []}), "non-empty list"),
        (json.dumps({**COMPARE, "jobs": [{"text": "", "kind": "fio", "folder": "../x"}]}), "distinct plain names"),
        (json.dumps({"action": "run"}), "bad run request"),
        (json.dumps({"action": "run", "command": ["true"], "colour": "red"}), "bad run request"),
        (json.dumps([1]), "a JSON object"),
    ],
)
def test_a_malformed_request_names_what_is_wrong(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        request.from_json(text)
