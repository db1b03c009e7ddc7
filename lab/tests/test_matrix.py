"""The veloces matrix (simulator side, issue 40): each cell judged against the goals, and a
small matrix run end to end through `vsim compare`."""

import json
from pathlib import Path
from typing import Any

from vlab.experiments import matrix


def _summary(rows: dict[str, tuple[float, float, float | None, float | None, float | None]]) -> dict[str, Any]:
    """A vsim compare summary: model -> (IOPS, write IOPS, read p99 us, WA, energy J) over 4 s."""
    return {
        "schedulers": [
            {"scheduler": s, "iops": iops, "simulated_ns": 4_000_000_000, "write_amplification": wa, "energy_j": e,
             "read": {"iops": 1.0, "p99_ns": None if p99 is None else p99 * 1000} if p99 is not None else {},
             "write": {"iops": w}}
            for s, (iops, w, p99, wa, e) in rows.items()
        ]
    }  # fmt: skip


def test_veloces_is_judged_against_the_best_in_tree_scheduler() -> None:
    rows = {
        "noop": (1000, 500, 8000, 2.0, 4.0),
        "mq-deadline": (990, 480, 9000, 2.0, 4.0),
        "kyber": (980, 470, 4000, 2.0, 4.0),
        "bfq": (900, 450, 3000, 2.0, 4.0),
        "veloces": (960, 460, 1400, 1.3, 3.0),
    }
    c = matrix.judge("t4-1ms", "a-r1", 4, _summary(rows), "veloces")
    v = c["veloces"]
    assert abs(v["iops_to_best"] - 0.96) < 1e-9 and abs(v["read_p99_to_best"] - 1400 / 3000) < 1e-9
    assert abs(v["writes_to_none"] - 0.92) < 1e-9
    # IOPS 0.96x >= 0.95x, p99 0.47x: never loses and wins (writes 0.92x none's).
    assert c["goals"] == {"never_loses": True, "wins": True, "locality": None}
    # The same figures on a deep device: the win does not apply; a read tail 1.2x the best loses.
    rows["veloces"] = (960, 460, 3600, 1.3, 3.0)
    deep = matrix.judge("t32-1ms", "a-r1", 32, _summary(rows), "veloces")
    assert deep["goals"] == {"never_loses": False, "wins": None, "locality": None}
    # Writes under 0.9x none's: no win even with the tail.
    rows["veloces"] = (960, 440, 1400, 1.3, 3.0)
    assert matrix.judge("t4-1ms", "a-r1", 4, _summary(rows), "veloces")["goals"]["wins"] is False


def test_locality_on_the_log_block_card_needs_wa_and_energy() -> None:
    base = {s: (100, 100, 50_000, 3.0, 10.0) for s in ("noop", "mq-deadline", "kyber", "bfq")}
    good = matrix.judge("sd2008", "e-r1", 1, _summary({**base, "veloces": (100, 100, 20_000, 2.0, 7.0)}), "veloces")
    assert good["goals"]["locality"] is True
    # WA 0.67x but energy per operation 0.9x: not met.
    bad = matrix.judge("sd2008", "e-r1", 1, _summary({**base, "veloces": (100, 100, 20_000, 2.0, 9.0)}), "veloces")
    assert bad["goals"]["locality"] is False


def test_a_cell_that_lost_io_is_not_judged() -> None:
    rows = {s: (100, 50, 1000, None, 1.0) for s in ("noop", "mq-deadline", "kyber", "bfq", "veloces")}
    doc = _summary(rows)
    doc["schedulers"][4]["lost_io"] = True
    c = matrix.judge("t4-1ms", "a-r1", 4, doc, "veloces")
    assert "missing" in c and c["goals"] == {"never_loses": None, "wins": None, "locality": None}


def test_a_small_matrix_runs_in_vsim_and_is_tabulated(tmp_path: Path) -> None:
    args = ["--devices", "t4-1ms", "--workloads", "a-r1,d", "--runtime", "0.5", "--out", str(tmp_path)]
    assert matrix.main(args) == 0
    doc = json.loads((tmp_path / "summary.json").read_text())
    assert [(c["device"], c["workload"]) for c in doc["cells"]] == [("t4-1ms", "a-r1"), ("t4-1ms", "d")]
    a = doc["cells"][0]
    assert a["depth"] == 4 and set(a["figures"]) == {"none", "mq-deadline", "kyber", "bfq", "veloces"}
    assert a["goals"]["wins"] is not None and doc["cells"][1]["goals"]["wins"] is None
    assert doc["shares"]["never_loses"][1] == 2
    assert "| t4-1ms | 4 | a-r1 |" in (tmp_path / "matrix.md").read_text()
    # Its HTML report: one row per cell, the figures from summary.json.
    from vlab import report

    rep = report.load(tmp_path)
    assert rep.kind == "vsim matrix" and not rep.problems
    (tab,) = rep.tables
    assert [r[2].text for r in tab.rows] == ["a-r1", "d (trusted)"]
    assert dict(rep.facts)["never loses"] == f"{doc['shares']['never_loses'][0]} of 2 cells"
    assert (tmp_path / "report.html").exists()
    # Re-judging the finished cells gives the same verdicts.
    assert matrix.main(["--table", str(tmp_path)]) == 0
    assert json.loads((tmp_path / "summary.json").read_text())["shares"] == doc["shares"]
    # A lab cell beside it: the page gets a second table, its numbers from lab/summary.json.
    tree = {s: _lab_entry(100, 40_000, 50) for s in ("none", "mq-deadline", "kyber", "bfq")}
    (tmp_path / "lab" / "t4-1ms" / "a-r1").mkdir(parents=True)
    lab_cell = {"schedulers": {**tree, "veloces": _lab_entry(100, 4_000, 50)}}
    (tmp_path / "lab" / "t4-1ms" / "a-r1" / "summary.json").write_text(json.dumps(lab_cell))
    assert matrix.main(["--table", str(tmp_path)]) == 0
    rep = report.load(tmp_path)
    assert not rep.problems and len(rep.tables) == 2
    row = rep.tables[1].rows[0]
    assert [c.text for c in row[:5]] == ["t4-1ms", "a-r1", "0.10", "none", "0.10"] and row[9].text == "met"
    assert row[2].doc == "lab/summary.json" and row[2].key == "/cells/0/veloces/read_p99_to_best"


def _lab_entry(iops: float, p99: float, writes: float, wa: float = 2.0, energy: float = 1.0,
               spread: float = 0.05) -> dict[str, Any]:  # fmt: skip
    """One scheduler's entry in a vlab compare summary (medians with a min-max spread)."""

    def m(v: float) -> dict[str, float]:
        return {"median": v, "min": v * (1 - spread), "max": v * (1 + spread)}

    return {"iops": m(iops), "read_p99_us": m(p99), "write_iops": m(writes), "device_wa": m(wa),
            "device_energy_j": m(energy), "device_busy_share": m(0.8)}  # fmt: skip


def test_a_lab_cell_counts_a_difference_only_beyond_the_spread() -> None:
    tree = {"none": _lab_entry(100, 40_000, 50), "mq-deadline": _lab_entry(100, 30_000, 50),
            "kyber": _lab_entry(100, 30_000, 50), "bfq": _lab_entry(100, 10_000, 45)}  # fmt: skip
    won = matrix.lab_figures({"schedulers": {**tree, "veloces": _lab_entry(100, 4_000, 50)}})
    c = matrix.judge_ranges("sd_a1", "e-r1", 1, won)
    assert c["goals"] == {"never_loses": "met", "wins": "met", "locality": None}
    assert c["veloces"]["best_read_p99"] == "bfq" and abs(c["veloces"]["read_p99_to_best"] - 0.4) < 1e-9
    # The same medians with bfq's range reaching below veloces's worst run: not shown.
    wide = {**tree, "bfq": _lab_entry(100, 10_000, 45, spread=0.7), "veloces": _lab_entry(100, 4_000, 50)}
    c = matrix.judge_ranges("sd_a1", "e-r1", 1, matrix.lab_figures({"schedulers": wide}))
    assert c["goals"]["wins"] == "not shown"
    # IOPS 0.9x the best: lost where the ranges are apart, within the spread where they overlap.
    slow = matrix.lab_figures({"schedulers": {**tree, "veloces": _lab_entry(90, 10_000, 50, spread=0.02)}})
    assert matrix.judge_ranges("emmc51", "d", 32, slow)["goals"]["never_loses"] == "not met"
    near = matrix.lab_figures({"schedulers": {**tree, "veloces": _lab_entry(90, 10_000, 50, spread=0.1)}})
    assert matrix.judge_ranges("emmc51", "d", 32, near)["goals"] == {
        "never_loses": "met within the spread", "wins": None, "locality": None}  # fmt: skip
    # Locality on the log-block card: WA and energy per operation against none's.
    local = matrix.lab_figures({"schedulers": {**tree, "veloces": _lab_entry(100, 4_000, 50, wa=1.2, energy=0.7)}})
    assert matrix.judge_ranges("sd2008", "e-r1", 1, local)["goals"]["locality"] == "met"
    hot = matrix.lab_figures({"schedulers": {**tree, "veloces": _lab_entry(100, 4_000, 50, wa=1.2, energy=0.9)}})
    assert matrix.judge_ranges("sd2008", "e-r1", 1, hot)["goals"]["locality"] == "not met"
    assert "missing" in matrix.judge_ranges("sd_a1", "d", 1, matrix.lab_figures({"schedulers": tree}))


def test_lab_cells_are_tabulated_beside_the_models_verdicts(tmp_path: Path) -> None:
    tree = {s: _lab_entry(100, 40_000, 50) for s in ("none", "mq-deadline", "kyber", "bfq")}
    for wl, v in (("e-r1", _lab_entry(100, 4_000, 50)), ("d", _lab_entry(80, 40_000, 40, spread=0.01))):
        cell = tmp_path / "lab" / "sd_a1" / wl
        cell.mkdir(parents=True)
        (cell / "summary.json").write_text(json.dumps({"schedulers": {**tree, "veloces": v}}))
    sim = {"cells": [{"device": "sd_a1", "workload": "e-r1", "goals": {"never_loses": True, "wins": True,
                                                                        "locality": None}}]}  # fmt: skip
    (tmp_path / "summary.json").write_text(json.dumps(sim))
    doc = matrix.tabulate_lab(tmp_path)
    assert [(c["workload"], c["goals"]["never_loses"], c["goals"]["wins"]) for c in doc["cells"]] == [
        ("d", "not met", None), ("e-r1", "met", "met")]  # fmt: skip
    assert doc["shares"]["wins"] == {"met": 1} and doc["shares"]["never_loses"] == {"met": 1, "not met": 1}
    text = (tmp_path / "lab" / "matrix.md").read_text()
    assert "| sd_a1 | e-r1 | 0.10 (none) |" in text and "| yes / yes / - |" in text and "| - / - / - |" in text
