import shutil
from pathlib import Path

import pytest
from conftest import DATA

from vlab.app import load_results
from vlab.stats import Metric, format_report, format_table, raw_name, rotation, summarize
from vlab.workloads.fio import OpStats, RunResult

SCHEDS = ["none", "mq-deadline", "kyber", "bfq"]


def test_rotation_puts_each_scheduler_in_each_position() -> None:
    orders = [rotation(SCHEDS, r) for r in range(len(SCHEDS))]
    assert orders[0] == SCHEDS
    assert orders[1] == ["mq-deadline", "kyber", "bfq", "none"]
    for pos in range(len(SCHEDS)):
        assert sorted(o[pos] for o in orders) == sorted(SCHEDS)
    assert rotation(SCHEDS, 4) == SCHEDS
    assert rotation([], 3) == []


def test_metric_is_median_with_range() -> None:
    m = Metric.of([3.0, None, 1.0, 10.0])
    assert (m.median, m.low, m.high) == (3.0, 1.0, 10.0)
    assert Metric.of([2.0, 4.0]).median == 3.0
    assert Metric.of([None]).median is None


def _run(iops: float, p99: float) -> RunResult:
    read = OpStats(iops, iops * 4, int(iops), p99 / 2, p99, p99 * 2)
    return RunResult(read, OpStats(0, 0, 0, None, None, None), 0)


def test_summary_medians_and_ratios() -> None:
    results = {
        "none": [_run(100, 10), _run(300, 30), _run(200, 20)],
        "kyber": [_run(50, 40), _run(60, 50), _run(40, 60)],
    }
    s = summarize(results, "none", ["none", "kyber"])
    assert s["schedulers"]["none"]["iops"] == {"median": 200, "min": 100, "max": 300, "points": [100, 300, 200]}
    assert s["schedulers"]["kyber"]["ratio_to_baseline"]["iops"] == pytest.approx(0.25)
    assert s["schedulers"]["kyber"]["ratio_to_baseline"]["read_p99_us"] == pytest.approx(2.5)
    assert s["schedulers"]["kyber"]["ratio_to_baseline"]["write_p99_us"] is None
    table = format_table(s)
    lines = table.splitlines()
    assert lines[0].split()[:2] == ["scheduler", "IOPS"]
    assert lines[2].split()[:3] == ["none", "200", "±50%"]
    assert lines[3].startswith("kyber") and "0.25" in lines[3] and "2.50" in lines[3]
    report = format_report(s)
    assert "| kyber | 50 |" in report


def test_load_results_reports_missing_runs(tmp_path: Path) -> None:
    shutil.copy(DATA / "fio-3.33-randrw.json", tmp_path / raw_name(0, "none"))
    (tmp_path / raw_name(0, "bfq")).write_text("garbage")
    results, problems = load_results(tmp_path, ["none", "bfq", "kyber"], 1)
    assert len(results["none"]) == 1 and results["bfq"] == [] and results["kyber"] == []
    assert any("rep1-kyber.json" in p for p in problems)
    assert any("rep1-bfq.json" in p for p in problems)
