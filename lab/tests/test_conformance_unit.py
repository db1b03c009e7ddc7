"""Pure parts of the kernel conformance runner (no boot), and the judgement of its runs."""

import json
import tomllib
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from conftest import REPO

from vlab.checks import conformance
from vlab.checks.conformance import IOPRIO, ISSUE_RE, MODULE, map_ids, scaled_tunables
from vlab.schedulers import declared_tunables

REQS = [
    {"t": 0, "op": "W", "sector": 1280, "sectors": 8, "id": "W1"},
    {"t": 1, "op": "WS", "sector": 1288, "sectors": 8, "id": "WS2"},
    {"t": 2, "op": "R", "sector": 1280, "sectors": 8, "id": "R1"},
]


def test_map_ids_by_direction_and_range() -> None:
    assert map_ids(REQS, "W", 1280, 16) == ["W1", "WS2"]
    assert map_ids(REQS, "WS", 1288, 8) == ["WS2"]
    assert map_ids(REQS, "FWS", 1288, 8) == ["WS2"]
    assert map_ids(REQS, "R", 1280, 8) == ["R1"]
    assert map_ids(REQS, "R", 4096, 8) == ["?R:4096+8"]


def test_scaled_tunables_scale_only_times_and_set_every_tunable() -> None:
    t = scaled_tunables({"read_expire": 2, "bundle_expire_us": 3000, "fifo_batch": 4}, 20)
    declared = declared_tunables(MODULE)
    assert list(t) == list(declared) and "hz" not in t
    assert t["read_expire"] == 40 and t["bundle_expire_us"] == 60000 and t["fifo_batch"] == 4
    assert t["write_expire"] == 1000 * 20 and t["prio_aging_expire"] == 10000 * 20
    assert t["write_depth"] == 65536 and t["async_depth"] == 0
    with pytest.raises(ValueError, match="unknown tunable"):
        scaled_tunables({"bogus": 1}, 20)


def test_issue_line_parses_on_both_kernels_formats() -> None:
    line61 = "  python3-812  [001] ..... 21.186789: block_rq_issue: 251,9 W 4096 () 1280 + 8 [python3]"
    # 6.10 and later add the I/O priority after the sectors
    line612 = "  kworker/0:1H-53 [000] d..1. 30.000001: block_rq_issue: 251,9 WS 4096 () 1288 + 8 none,0,0 [kw]"
    for line, rwbs in ((line61, "W"), (line612, "WS")):
        m = ISSUE_RE.search(line)
        assert m is not None
        assert m.group(2) == "251,9" and m.group(3) == rwbs


def test_scaled_defaults_stay_within_the_modules_ranges_at_the_debug_kernels_scale() -> None:
    # The module's maxima (kernel/veloces-tunables.h); the debug kernel runs the scenarios
    # at scale 100.
    declared = declared_tunables(MODULE)
    assert {k for k, d in declared.items() if d.is_time} == {
        "read_expire", "write_expire", "bundle_expire_us", "write_backlog_us", "anticipate_us", "prio_aging_expire",
        "read_active_us",
    }  # fmt: skip
    for scale in (20, 60, 100):
        t = scaled_tunables({}, scale)
        for k, d in declared.items():
            assert d.min <= t[k] <= d.max, (scale, k, t[k])


def test_prio_values_are_ioprio_prio_value_of_class_and_level_4() -> None:
    assert IOPRIO == {"RT": (1 << 13) | 4, "BE": (2 << 13) | 4, "IDLE": (3 << 13) | 4}


def test_reads_come_from_one_task_and_writes_from_another_unless_the_scenario_says() -> None:
    assert [conformance.submitter_of(r) for r in REQS] == [2, 2, 1]
    assert conformance.submitter_of({**REQS[0], "submitter": 1}) == 1


def test_the_second_submitter_is_another_task_runs_in_order_and_hands_back_errors() -> None:
    import threading

    second = conformance.Submitter()
    try:
        seen: list[int] = []
        second.run(lambda: seen.append(threading.get_native_id()))
        second.run(lambda: seen.append(threading.get_native_id()))
        assert len(seen) == 2 and seen[0] == seen[1] != threading.get_native_id()

        def fail() -> None:
            raise OSError(5, "io_submit")

        with pytest.raises(OSError, match="io_submit"):
            second.run(fail)
        second.run(lambda: seen.append(0))  # still serving after an error
        assert seen[-1] == 0
    finally:
        second.close()
    assert not second.thread.is_alive()


# --- a scenario's runs judged (docs/testing.md, "Timed checks on a loaded host") ---------------

SC33 = tomllib.loads((REPO / "conformance" / "33-anticipation-next-read-first.toml").read_text())
SC34 = tomllib.loads((REPO / "conformance" / "34-anticipation-turn-ends.toml").read_text())
# 33 on 6.1 beside other CPU work: R3 issued 517 us past the 500-us slack, the order right.
LATE33 = [
    {"t_us": 40.0, "ids": ["R1"]}, {"t_us": 1150.0, "ids": ["R2"]}, {"t_us": 2180.0, "ids": ["W1"]},
    {"t_us": 4017.0, "ids": ["R3"]}, {"t_us": 5050.0, "ids": ["W2"]},
]  # fmt: skip
GOOD33 = [{**e, "t_us": t} for e, t in zip(LATE33, (40.0, 1150.0, 2180.0, 3600.0, 4620.0), strict=True)]
# 34 with W2 issued before R3: the policy's order, whatever the timing.
WRONG34 = [
    {"t_us": 0.0, "ids": ["R1"]}, {"t_us": 1100.0, "ids": ["R2"]}, {"t_us": 2100.0, "ids": ["W1"]},
    {"t_us": 3100.0, "ids": ["W2"]}, {"t_us": 4100.0, "ids": ["R3"]}, {"t_us": 5100.0, "ids": ["R4"]},
    {"t_us": 6100.0, "ids": ["W3"]},
]  # fmt: skip
GOOD34 = [
    {"t_us": float(t), "ids": [i]}
    for t, i in zip((0, 1100, 2100, 3600, 4600, 5600, 6600), ("R1", "R2", "W1", "R3", "W2", "R4", "W3"), strict=True)
]
R3_LATE = [(2, "R3 issued at 4017 us, expected by 3500 us")]
ORDER34 = [(1, "order: expected [...], got [...]")]


def _run(
    sc: dict[str, Any], log: list[dict[str, Any]], failed: list[tuple[int | None, str]], lost_us: float, lag: float = 5
) -> dict[str, Any]:
    return {
        "log": log,
        "submit_lag_us_max": lag,
        "stall": {"lost_us": lost_us, "lost_ms": lost_us * 60 / 1000, "stalls": 3, "worst_ms": 12.0},
        "failures": conformance.classify(sc, log, failed, 500.0),
    }


def _stalled(log: list[dict[str, Any]], failed: list[tuple[int | None, str]], stalls_us: list[list[float]]) -> Any:
    run = _run(SC33, log, failed, lost_us=sum(b - a for a, b in stalls_us))
    run["stall"]["stalls_us"] = stalls_us
    return run


def test_failures_are_timing_with_how_far_past_the_slack_or_else_order() -> None:
    (late,) = conformance.classify(SC33, LATE33, R3_LATE, 500.0)
    assert late["kind"] == "timing" and late["over_us"] == 17.0
    assert conformance.classify(SC33, LATE33, [(1, "order: ...")], 500.0)[0]["kind"] == "order"
    # a request never issued is not late, and a failure with no expectation is not timing either
    assert conformance.classify(SC33, LATE33[:3], [(2, "R3 was never issued")], 500.0)[0]["kind"] == "order"
    assert conformance.classify(SC33, [], [(None, "no kernel log for x")], 500.0)[0]["kind"] == "order"
    # not_before: how far before t - slack it went
    sc = {"expect": [{"not_before": {"id": "W1", "t": 2000}}]}
    (early,) = conformance.classify(sc, [{"t_us": 1200.0, "ids": ["W1"]}], [(1, "...")], 500.0)
    assert early == {"expect": 1, "kind": "timing", "detail": "...", "over_us": 300.0, "at_us": 1200.0}


def test_a_timing_miss_the_runs_stalls_explain_is_not_judged() -> None:
    loaded = _run(SC33, LATE33, R3_LATE, lost_us=600.0)
    assert conformance.run_state(loaded, 500.0) == "timing-loaded"
    assert conformance.assess([loaded], 500.0, 3)[0] == "again"
    verdict, why = conformance.assess([loaded, loaded, loaded], 500.0, 3)
    assert verdict == "not judged"
    assert "host loaded" in why and "17 us past the slack" in why and "lost 600 us" in why
    # only stalls before the late issue can have delayed it
    assert conformance.run_state(_stalled(LATE33, R3_LATE, [[1000.0, 1010.0], [4100.0, 4700.0]]), 500.0) == (
        "timing-quiet"
    )
    assert conformance.run_state(_stalled(LATE33, R3_LATE, [[1000.0, 1010.0], [3990.0, 4100.0]]), 500.0) == (
        "timing-loaded"
    )
    # submissions' lag counts as time lost too
    assert conformance.run_state(_run(SC33, LATE33, R3_LATE, lost_us=0.0, lag=16.0), 500.0) == "timing-quiet"
    assert conformance.run_state(_run(SC33, LATE33, R3_LATE, lost_us=0.0, lag=17.0), 500.0) == "timing-loaded"


def test_a_timing_miss_on_a_quiet_host_fails_when_it_is_missed_again() -> None:
    quiet = _run(SC33, LATE33, R3_LATE, lost_us=0.0)
    assert conformance.run_state(quiet, 500.0) == "timing-quiet"
    assert conformance.assess([quiet], 500.0, 3)[0] == "again"
    verdict, why = conformance.assess([quiet, quiet], 500.0, 3)
    assert verdict == "fail" and "2 runs" in why and "R3 issued at 4017 us" in why
    # once quiet, once loaded: a third run; a quiet miss and loaded ones only: not judged
    loaded = _run(SC33, LATE33, R3_LATE, lost_us=600.0)
    assert conformance.assess([quiet, loaded], 500.0, 3)[0] == "again"
    assert conformance.assess([quiet, loaded, loaded], 500.0, 3)[0] == "not judged"
    assert conformance.assess([quiet, loaded, quiet], 500.0, 3)[0] == "fail"
    # a run that could not be run again (one attempt) is judged alone
    assert conformance.assess([quiet], 500.0, 1)[0] == "fail"


def test_an_order_miss_fails_however_loaded_the_host() -> None:
    quiet = _run(SC34, WRONG34, ORDER34, lost_us=0.0)
    assert conformance.run_state(quiet, 500.0) == "order"
    verdict, why = conformance.assess([quiet], 500.0, 3)
    assert verdict == "fail" and "undisturbed" in why
    # a run that lost more than the slack is run again (it observed the harness), but an order
    # missed in every run fails: order is never excused
    loaded = _run(SC34, WRONG34, ORDER34, lost_us=2000.0)
    assert conformance.run_state(loaded, 500.0) == "order-disturbed"
    assert conformance.assess([loaded], 500.0, 3)[0] == "again"
    assert conformance.assess([loaded, loaded, loaded], 500.0, 3)[0] == "fail"
    assert conformance.assess([loaded, quiet], 500.0, 3)[0] == "fail"
    # an order and a timing miss in one loaded run: order decides
    both = _run(SC33, LATE33, [(1, "order: ..."), *R3_LATE], lost_us=2000.0)
    assert conformance.assess([both] * 3, 500.0, 3)[0] == "fail"


def test_a_pass_is_a_pass_and_a_miss_that_is_not_repeated_passes() -> None:
    ok = _run(SC33, GOOD33, [], lost_us=0.0)
    assert conformance.assess([ok], 500.0, 3) == ("pass", "passed")
    assert conformance.assess([ok], 500.0, 3) == conformance.assess([_run(SC33, GOOD33, [], 900.0)], 500.0, 3)
    quiet = _run(SC33, LATE33, R3_LATE, lost_us=0.0)
    disturbed = _run(SC34, WRONG34, ORDER34, lost_us=2000.0)
    assert conformance.assess([quiet, ok], 500.0, 3)[0] == "pass"
    assert conformance.assess([disturbed, ok], 500.0, 3)[0] == "pass"
    assert conformance.assess([{"log": [], "error": "OSError: x"}], 500.0, 3) == ("fail", "OSError: x")
    assert conformance.assess([{"log": GOOD33}], 500.0, 3)[0] == "fail"  # no verdict at all


VSIM_OUT = """model PASS 6.1.0-56-amd64 FAIL  33-anticipation-next-read-first.toml         anticipation
    6.1.0-56-amd64: expect #2: R3 issued at 4017 us, expected by 3500 us
    #   expected   | model (t us, ids)          | 6.1.0-56-amd64 (t us, ids)
    1   R1         |        0 R1                |       40 R1
model PASS 6.1.0-56-amd64 PASS  01-read-preference.toml                      read preference
model FAIL 6.1.0-56-amd64 FAIL  02-fifo-batch-sector-order.toml              fifo_batch
    model: expect #1: order: expected ["R0"], got ["R1"]
    6.1.0-56-amd64: no kernel log for 02-fifo-batch-sector-order.toml
3 scenarios: model (hz=0) 2 passed, 1 failed; 6.1.0-56-amd64 1 passed, 2 failed (slack 500 us)
"""


def test_vsims_report_is_read_per_scenario() -> None:
    assert conformance.parse_report(VSIM_OUT, "6.1.0-56-amd64") == {
        "33-anticipation-next-read-first.toml": [(2, "R3 issued at 4017 us, expected by 3500 us")],
        "01-read-preference.toml": [],
        "02-fifo-batch-sector-order.toml": [(None, "no kernel log for 02-fifo-batch-sector-order.toml")],
    }
    assert conformance.model_failures(VSIM_OUT) == ["02-fifo-batch-sector-order.toml"]


def test_a_boot_is_judged_by_vsim_and_the_runs_in_its_detail(tmp_path: Path) -> None:
    """The host's judgement, with the real `vsim conformance` (make test builds it first)."""
    scenarios = tmp_path / "scenarios"
    scenarios.mkdir()
    for name in ("33-anticipation-next-read-first.toml", "34-anticipation-turn-ends.toml", "01-read-preference.toml"):
        (scenarios / name).write_text((REPO / "conformance" / name).read_text())
    good01 = [{"t_us": t, "ids": [i]} for t, i in ((0, "W1"), (1000, "R1"), (2000, "W2"), (4000, "W3"))]

    def boot(out: Path, lost33: float, lost34: float, log34: list[dict[str, Any]]) -> conformance.Judgement:
        out.mkdir()
        runs33 = [_run(SC33, LATE33, R3_LATE, lost33) for _ in range(3)]
        runs34 = [_run(SC34, log34, ORDER34 if log34 is WRONG34 else [], lost34) for _ in range(3)]
        for rs in (runs33, runs34):
            del rs[-1]["failures"]  # the last run is the host's to check
        detail = {"slack_us": 500.0, "max_lag_us": 500.0, "attempts": 3, "scenarios": {
            "33-anticipation-next-read-first.toml": {"runs": runs33},
            "34-anticipation-turn-ends.toml": {"runs": runs34},
            "01-read-preference.toml": {"runs": [{"log": good01, "submit_lag_us_max": 30.0}]},
        }}  # fmt: skip
        (out / "kernel-detail.json").write_text(json.dumps(detail))
        logs = {name: s["runs"][-1]["log"] for name, s in detail["scenarios"].items()}
        (out / "kernel-log.json").write_text(json.dumps(logs))
        return conformance.judge(scenarios, out, "6.1.0-56-amd64")

    loaded = boot(tmp_path / "loaded", 600.0, 2000.0, WRONG34)
    assert loaded.report.returncode != 0  # vsim fails both; the judgement tells them apart
    assert loaded.verdicts["01-read-preference.toml"] == ("pass", "passed")
    assert loaded.verdicts["33-anticipation-next-read-first.toml"][0] == "not judged"
    assert loaded.verdicts["34-anticipation-turn-ends.toml"][0] == "fail"
    assert loaded.summary() == "1 pass, 1 fail, 1 not judged of 3 scenarios"
    quiet = boot(tmp_path / "quiet", 0.0, 0.0, GOOD34)
    assert quiet.verdicts["33-anticipation-next-read-first.toml"][0] == "fail"
    assert quiet.named("pass").keys() == {"01-read-preference.toml", "34-anticipation-turn-ends.toml"}


def test_a_runs_stalls_are_kept_in_scenario_us() -> None:
    # at scale 60, 30 ms of real time from 10 ms into the run is 500 us of scenario time from 167 us
    probe = SimpleNamespace(samples=lambda t0, t1: [(10.040, 0.030), (10.050, 0.0005)])
    fig = conformance.stall_figures(probe, 10.0, 10.1, 60)  # type: ignore[arg-type]
    assert fig["lost_us"] == 500.0 and fig["stalls"] == 1 and fig["stalls_us"] == [[166.7, 666.7]]
    assert conformance.lost_us({"stall": fig}, 416.7) == pytest.approx(250.0)
    assert conformance.stall_figures(None, 10.0, 10.1, 60) == {}
