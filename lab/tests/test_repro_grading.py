"""How the reproductions grade (issue 80, "the seeds graded as the rule says"), on made-up cells:
a grade that must not rest on the interval method (t, BCa, percentile), seed 001's ratios
between filesystems only at one dilation (power and AI resting on it), and runs long enough in
the device's time to be judged (core.MIN_DEVICE_S, core.MIN_PASSES, core.window_s)."""

import math
from typing import Any

from vlab.repro import SEEDS, core, stats
from vlab.repro.core import HOLDS, INCONCLUSIVE, Plan

JITTER = (0.0, 0.01, -0.01, 0.005, -0.005)  # five repetitions, +-1 %, rotated per scheduler
# veloces / none per repetition: a mean log ratio of +3 % whose t interval holds 1 while the
# bootstraps (narrower over five repetitions) lie above it.
SKEWED = (1.05, 1.01, 1.06, 0.995, 1.04)


def _fig(reps: list[float], busy: float | None = None) -> dict[str, Any]:
    """One scheduler's figures as core.cell_figures writes them (perf, and busy if given)."""
    per: dict[str, list[float]] = {"perf": reps}
    if busy is not None:
        per["busy"] = [busy] * len(reps)
    out: dict[str, Any] = {
        k: {"median": sorted(v)[len(v) // 2], "min": min(v), "max": max(v), "points": v} for k, v in per.items()
    }
    out["by_rep"] = {k: {str(i + 1): x for i, x in enumerate(v)} for k, v in per.items()}
    return out


# --- 1. the interval method -----------------------------------------------------------------


def test_a_grade_that_rests_on_the_interval_method_is_inconclusive_and_says_so() -> None:
    above = stats.Claim(1.0, True)
    r = stats.paired_ratio(dict(enumerate(SKEWED, 1)), dict.fromkeys(range(1, 6), 1.0))
    assert r is not None and r.low is not None and r.low < 1 < r.value
    assert stats.by_method(r, above) == {"t": INCONCLUSIVE, "BCa": HOLDS, "percentile": HOLDS}
    assert stats.grade(r, above) == INCONCLUSIVE
    assert stats.split(r, above) == "the interval method decides it: t inconclusive, BCa holds, percentile holds"
    ms = stats.methods_json(r, above)
    assert set(ms) == {"t", "BCa", "percentile"} and ms["t"]["ci_low"] == r.low
    assert all(1 < ms[m]["ci_low"] < r.value < ms[m]["ci_high"] < r.high for m in ("BCa", "percentile"))
    # A fixed seed: judged again, the same intervals.
    stats._bootstrap.cache_clear()
    assert stats.methods_json(r, above) == ms
    # Where every method agrees, the grade is theirs and the evidence says nothing more.
    clear = stats.paired_ratio({i + 1: 1.2 * (1 + j) for i, j in enumerate(JITTER)}, dict.fromkeys(range(1, 6), 1.0))
    assert stats.by_method(clear, above) == dict.fromkeys(stats.METHODS, HOLDS)
    assert stats.grade(clear, above) == HOLDS and stats.split(clear, above) == ""
    # The other way round: a t interval that would hold over logs whose bootstraps straddle.
    hand = stats.Ratio(r.value, 1.001, 1.2, 5, True, None, r.sd, ((-0.2, 0.3, -0.1, 0.25, -0.15),))
    assert stats.by_method(hand, above)["t"] == HOLDS and stats.grade(hand, above) == INCONCLUSIVE
    # Two independent samples (two cells): the difference of their mean logs is resampled.
    ind = stats.independent_ratio([100 * x for x in SKEWED], [100.0, 99.0, 101.0, 100.5, 99.5])
    assert ind is not None and len(ind.logs) == 2
    lo, hi = stats.interval(ind, stats.BCA) or (math.nan, math.nan)
    assert lo < ind.value < hi
    # Fewer than three repetitions: no interval by any method, inconclusive, no split.
    two = stats.paired_ratio({1: 1.3, 2: 1.2}, {1: 1.0, 2: 1.0})
    assert stats.grade(two, above) == INCONCLUSIVE and stats.split(two, above) == ""
    assert stats.interval(two, stats.BCA) is None if two else False


def test_seed000_records_the_three_intervals_and_says_which_method_decided() -> None:
    scheds = ["none", "mq-deadline", "bfq", "veloces"]
    plan = Plan("seed000", ["nullblk"], ["ext4"], [core.FILEBENCH["varmail"]], scheds, 5, 10)
    figs = {
        "none": _fig([100.0] * 5),
        "mq-deadline": _fig([90.0 * (1 + j) for j in JITTER]),
        "bfq": _fig([80.0 * (1 + j) for j in JITTER[::-1]]),
        "veloces": _fig([100.0 * x for x in SKEWED]),
    }
    cell = {"id": "nullblk/ext4-varmail", "device": "nullblk", "fs": "ext4", "workload": "varmail", "figures": figs}
    (v,) = SEEDS["seed000"].analyse(plan, [cell]).verdicts
    assert v.verdict == INCONCLUSIVE  # above mq-deadline and bfq; above none by the bootstraps alone
    assert "/ none 1.031 [0.997, 1.066]" in v.evidence
    assert "the interval method decides it: t inconclusive, BCa holds, percentile holds" in v.evidence
    assert v.intervals["none"]["grade"] == INCONCLUSIVE
    assert v.intervals["none"]["methods"]["BCa"]["grade"] == HOLDS
    assert {m["grade"] for m in v.intervals["bfq"]["methods"].values()} == {HOLDS}
    assert "BCa and percentile bootstrap" in v.criterion
