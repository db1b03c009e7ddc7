"""The lab's one verdict rule (vlab.verdict): device-bound cells only, a p99's minimum reads,
paired ratios with intervals, ties where an interval holds 1, goals by the reproductions' rule."""

import math

from vlab import verdict


def test_a_cell_is_judged_only_where_every_scheduler_kept_the_device_busy() -> None:
    assert verdict.bound({"none": 0.9, "veloces": 0.86}).judged
    b = verdict.bound({"none": 0.9, "veloces": 0.84})
    assert not b.judged and "veloces 84 %" in b.why and "none" not in b.why and b.lowest == 0.84
    assert verdict.bound({"none": None}).judged  # a device that reports no busy time: not checked
    assert verdict.busy_shares({"schedulers": {"none": {"device_busy_share": {"median": 0.5}}}}) == {"none": 0.5}


def test_a_p99_needs_min_reads_in_every_run() -> None:
    assert verdict.enough_reads({"none": [100, 200], "bfq": [150]}) == (True, "")
    ok, why = verdict.enough_reads({"none": [100, 99], "bfq": [150]})
    assert not ok and "none 99" in why and "bfq" not in why
    assert not verdict.enough_reads({"none": []})[0]


def test_ratios_are_paired_by_repetition_and_a_tie_is_an_interval_holding_one() -> None:
    # The same 10 % drift in every repetition: paired, a narrow interval below 1.
    a, b = [90.0, 180.0, 45.0], [100.0, 200.0, 50.0]
    r = verdict.ratio(a, b)
    assert r is not None and math.isclose(r.value, 0.9) and verdict.order(r) == verdict.LOWER
    assert verdict.order(verdict.ratio(b, a)) == verdict.HIGHER
    assert verdict.order(verdict.ratio([95.0, 210.0, 50.0], b)) == verdict.TIE
    # Two repetitions give no interval: a tie, and a goal inconclusive.
    two = verdict.ratio([50.0, 50.0], [100.0, 100.0])
    assert two is not None and two.low is None and verdict.order(two) == verdict.TIE
    assert verdict.goal(two, 0.9, above=False) == verdict.INCONCLUSIVE


def test_goals_are_graded_on_the_whole_interval() -> None:
    r = verdict.ratio([45.0, 50.0, 55.0], [100.0, 100.0, 100.0])
    # Student t over 3 pairs (2 degrees of freedom, t = 4.303): 0.498 [0.388, 0.639].
    assert r is not None and r.text() == "0.498 [0.388, 0.639]"
    assert verdict.goal(r, 0.65, above=False) == verdict.HOLDS
    assert verdict.goal(r, 0.38, above=False) == verdict.DOES_NOT_HOLD
    assert verdict.goal(r, 0.5, above=False) == verdict.INCONCLUSIVE
    assert verdict.combine([verdict.HOLDS, verdict.DOES_NOT_HOLD]) == "partly"
    assert verdict.combine([verdict.HOLDS, verdict.NOT_JUDGED]) == verdict.NOT_JUDGED


def test_against_baseline_refuses_a_p99_from_too_few_reads() -> None:
    def e(v: float, reads: float) -> dict[str, object]:
        return {"iops": {"points": [v, v, v * 1.01]}, "read_p99_us": {"points": [v, v * 1.02, v]},
                "read_ios": {"points": [reads] * 3}}  # fmt: skip

    s = {"schedulers": {"none": e(100, 500), "veloces": e(50, 500)}}
    got = verdict.against(s, "none", ["iops", "read_p99_us"])
    assert got["veloces"]["iops"]["order"] == verdict.LOWER and got["veloces"]["read_p99_us"]["order"] == "lower"
    s["schedulers"]["veloces"] = e(50, 20)
    assert "fewer than" in verdict.against(s, "none", ["read_p99_us"])["veloces"]["read_p99_us"]["why"]


def test_ties_are_called_where_nothing_differs_at_the_nominal_rate() -> None:
    """Rule 3's interval keeps its 95 %: over repetitions drawn alike for both schedulers,
    at most about 5 % of comparisons may be called "lower" or "higher". A bootstrap interval
    over the lab's 3-10 repetitions did not (scipy's BCa: 29 % at 3, 15 % at 5, 10 % at 10)."""
    import random

    rng = random.Random(7)
    for n in (3, 5, 10):
        called = 0
        trials = 400
        for _ in range(trials):
            a = [100 * math.exp(rng.gauss(0, 0.05)) for _ in range(n)]
            b = [100 * math.exp(rng.gauss(0, 0.05)) for _ in range(n)]
            called += verdict.order(verdict.ratio(a, b)) != verdict.TIE
        # 5 % of 400 is 20; the binomial's 99.9 % upper bound is about 36.
        assert called <= 36, (n, called)
