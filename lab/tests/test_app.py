"""The lab's application layer (vlab.app) and the typed host-to-guest request
(vlab.machine.request), without booting: what a caller gets for a bad request, and what the guest
reads back."""

import json
from pathlib import Path

import pytest
from conftest import REPO

from vlab import app
from vlab.machine import request
from vlab.machine.kernels import KERNELS

JOB = REPO / "lab" / "jobs" / "mixed-randrw.fio"


def comparison(tmp_path: Path, **changes: object) -> app.Comparison:
    c = app.Comparison(kernel=KERNELS["6.1"], devices=["null_blk:size=64"], schedulers=["none", "veloces"],
                       job=JOB, out=tmp_path / "out")  # fmt: skip
    for k, v in changes.items():
        setattr(c, k, v)
    return c


def test_a_good_comparison_becomes_the_guests_request(tmp_path: Path) -> None:
    req = app.check(comparison(tmp_path, runtime=2.0, sysctl={"vm.dirty_bytes": "1"}))
    assert req == request.CompareRequest(
        devices=["null_blk:size=64"], schedulers=["none", "veloces"], job_text=JOB.read_text(), job_kind="fio",
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
        ({"job": Path("/nonexistent.fio")}, "not found"),
        ({"devices": []}, "needs a device"),
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


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (json.dumps({"action": "dance"}), "unknown action 'dance'"),
        (json.dumps({"action": "run"}), "bad run request"),
        (json.dumps({"action": "run", "command": ["true"], "colour": "red"}), "bad run request"),
        (json.dumps([1]), "a JSON object"),
    ],
)
def test_a_malformed_request_names_what_is_wrong(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        request.from_json(text)
