"""`make demo`'s verdicts (vlab.experiments.demo), from made-up figures: by the lab's one
verdict rule (vlab.verdict) — paired ratios with 95 % intervals, a goal held only where its
whole interval is on the goal's side, guest-bound cells and p99s from too few reads not judged."""

import json
from pathlib import Path

from vlab import verdict
from vlab.experiments import demo


def figs(p99: dict[str, list[float]], iops: float = 100.0, reads: float = 500) -> dict[str, dict[str, list[float]]]:
    """Three repetitions a scheduler: the given read p99s, IOPS and writes nearly steady."""
    return {s: {"iops": [iops, iops * 1.01, iops * 0.99], "read_p99_us": r, "write_iops": [50.0, 50.5, 49.5],
                "read_ios": [reads] * 3}
            for s, r in p99.items()}  # fmt: skip


def test_a_flood_win_holds_only_where_the_whole_interval_is_below_the_bound() -> None:
    won = figs({"none": [4000, 3900, 4100], "bfq": [1000, 900, 1100], "veloces": [400, 380, 430]})
    line = demo.verdict_line("flood", won)
    assert line.endswith(": holds"), line
    assert "read p99 0.40x [" in line and "bfq's" in line and "none's" in line
    # Each repetition's ratio 0.40-0.61: the interval straddles 0.5.
    straddles = figs({"none": [4000, 3900, 4100], "bfq": [1000, 900, 1100], "veloces": [400, 550, 430]})
    assert demo.verdict_line("flood", straddles).endswith(": inconclusive")
    tie = figs({"none": [4000, 3900, 4100], "bfq": [1000, 900, 1100], "veloces": [990, 900, 1080]})
    assert demo.verdict_line("flood", tie).endswith(": partly")  # writes hold, the p99 does not
    starved = figs({"none": [4000, 3900, 4100], "veloces": [400, 380, 430]})
    starved["veloces"]["write_iops"] = [40.0, 40.4, 39.6]  # 0.8x none's writes
    assert demo.verdict_line("flood", starved).endswith(": partly")


def test_the_mix_is_lost_only_where_the_whole_interval_is_beyond_the_bound() -> None:
    mix = figs({"none": [1000, 990, 1010], "kyber": [1000, 990, 1010], "veloces": [1000, 990, 1010]})
    assert demo.verdict_line("mix", mix).endswith(": holds")
    mix["veloces"]["iops"] = [90.0, 89.0, 91.0]  # 0.9x kyber's in every repetition
    assert demo.verdict_line("mix", mix).endswith(": partly")
    mix["veloces"]["iops"] = [90.0, 99.0, 100.0]
    assert demo.verdict_line("mix", mix).endswith(": inconclusive")
    assert demo.verdict_line("mix", {"veloces": mix["veloces"]}).endswith(
        "not judged (a scheduler's figures are missing)"
    )


def test_a_p99_from_too_few_reads_and_a_guest_bound_cell_are_not_judged() -> None:
    few = figs({"none": [4000, 3900, 4100], "bfq": [1000, 900, 1100], "veloces": [400, 380, 430]}, reads=40)
    line = demo.verdict_line("flood", few)
    assert f"veloces had fewer than {verdict.MIN_READS} reads in a run; fewest: none 40, bfq 40, veloces 40" in line, (
        line
    )
    assert line.endswith(": not judged"), line
    # A rival with too few reads is left out of the p99's comparison, and named.
    few["veloces"]["read_ios"] = few["bfq"]["read_ios"] = [500.0] * 3
    line = demo.verdict_line("flood", few)
    assert "0.40x [" in line and "bfq's (none: fewer than 100 reads a run, left out)" in line, line
    assert line.endswith(": holds")
    assert demo.verdict_line("flood", few, excluded="guest-bound: x").startswith("flood: not judged: guest-bound")


def test_the_simulators_one_run_is_judged_on_its_point() -> None:
    point = {s: {k: v[:1] for k, v in f.items()} for s, f in
             figs({"none": [4000], "bfq": [1000], "veloces": [400]}).items()}  # fmt: skip
    assert demo.verdict_line("flood", point, point=True).endswith(": holds")


def test_table_judges_a_finished_demo_again(tmp_path: Path) -> None:
    def entry(p99: float, iops: float, busy: float) -> dict[str, object]:
        def m(v: float) -> dict[str, object]:
            return {"median": v, "min": v, "max": v, "points": [v, v * 1.01, v * 0.99]}

        return {"iops": m(iops), "read_p99_us": m(p99), "write_iops": m(10.0), "read_ios": m(300),
                "device_busy_share": m(busy)}  # fmt: skip

    for job, busy in zip(demo.JOBS, (0.95, 0.6), strict=True):
        (tmp_path / job).mkdir()
        doc = {"schedulers": {"none": entry(5000, 100, busy), "bfq": entry(5000, 100, busy),
                              "veloces": entry(1000, 100, busy)}, "dilation": 40}  # fmt: skip
        (tmp_path / job / "summary.json").write_text(json.dumps(doc))
    assert demo.main(["--table", str(tmp_path)]) == 0
    text = (tmp_path / "verdicts.md").read_text()
    assert "- lab (dilation 40, busy 95 %), flood: veloces IOPS 1.00x" in text and "wins" in text, text
    assert "- lab (dilation 40, busy 60 %), mix: not judged: guest-bound" in text and "vsim" not in text
