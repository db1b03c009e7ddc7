"""The statistics the reproductions' verdicts rest on: a ratio to a baseline with its Student t
95 % confidence interval, the smallest effect the repetitions could detect, and the three
grades a claim gets from them.

A ratio is the geometric mean of per-repetition ratios where both sides ran in the same
boot (a cell's schedulers are rotated within each repetition, so repetition i of one is
paired with repetition i of the other), and the ratio of geometric means of two
independent samples where they did not (two filesystems are two cells, two boots). The
interval is Student's t interval of that statistic on the logarithms (paired: of the mean
log ratio; independent: Welch's), vlab.verdict's one interval: a bootstrap over 3-10
repetitions is too narrow (tests/test_verdict.py). With fewer than three values a
side there is no interval, and the claim is inconclusive.

Grades come from the one verdict rule every reproduction follows, the simulator's
(`vsim.verdict`, sim/src/verdict.rs): for a claim that a ratio lies on one side of a bound
(`Claim`) it **holds** when the whole interval is on the claimed side, **does not hold** when
the whole interval is on the other side (or at the bound), and is **inconclusive** when it
straddles the bound; a claim of parts is combined by the same rule (`core.combine`).

**A verdict must not rest on the interval method** (issue 80). Beside the t interval each
ratio gets scipy's 95 % BCa and percentile bootstrap intervals of the same statistic (the
mean log ratio, paired; the difference of mean logs, independent; RESAMPLES resamples, a
fixed SEED), and the claim is graded under all three (`by_method`); where the grades differ
the ratio's grade is **inconclusive** (`grade`) and its evidence says which method decided
what (`split`). The bootstrap intervals are narrower than t's over 3-10 repetitions
(vlab.verdict, `_interval`), so they mostly turn a "holds" or "does not hold" that a skewed
sample gives one method alone into "inconclusive"; they never decide a claim the t interval
leaves open. docs/notebooks/reproductions.md, "How a verdict is decided".
"""

from __future__ import annotations

import functools
import math
import warnings
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from scipy import stats as sps
from vsim import verdict

# The ratio and its interval are the lab's one verdict rule's (vlab.verdict, rule 3).
from vlab.verdict import LEVEL, MIN_POINTS, Ratio, independent_ratio, paired_ratio

__all__ = ["LEVEL", "MIN_POINTS", "Ratio", "independent_ratio", "paired_ratio"]

HOLDS, PARTLY, FAILS = verdict.HOLDS, verdict.PARTLY, verdict.FAILS
INCONCLUSIVE, NOT_REPRODUCIBLE, NOT_JUDGED = verdict.INCONCLUSIVE, verdict.NOT_REPRODUCIBLE, verdict.NOT_JUDGED


@dataclass(frozen=True)
class Claim:
    """A claim about a ratio: above `bound` (`above=True`) or below it. `paper` is the
    ratio the paper reports where it gives one (its effect: |paper - bound|)."""

    bound: float = 1.0
    above: bool = True
    paper: float | None = None

    def rule(self) -> verdict.Claim:
        """The claim as the verdict rule takes it."""
        return verdict.above(self.bound) if self.above else verdict.below(self.bound)

    def criterion(self) -> str:
        return (
            f"{verdict.criterion(self.rule())} (ours: the {LEVEL:.0%} t interval, graded again on the BCa "
            "and percentile bootstrap intervals: inconclusive where the three grades differ)"
        )


# The interval methods a grade is checked under: Student's t (the lab's interval,
# vlab.verdict) and scipy's two bootstraps of the same statistic.
T, BCA, PERCENTILE = "t", "BCa", "percentile"
METHODS = (T, BCA, PERCENTILE)
RESAMPLES = 9_999
SEED = 80  # the bootstraps' fixed seed: a folder judged again gets the same intervals


def _t(r: Ratio) -> tuple[float, float] | None:
    return None if r.low is None or r.high is None else (r.low, r.high)


def interval(r: Ratio, method: str) -> tuple[float, float] | None:
    """The ratio's 95 % interval by `method` (T, BCA or PERCENTILE); None where there is
    none (fewer than MIN_POINTS values a side, as for t; or a bootstrap that could not
    give one, e.g. BCa on a sample whose resamples are all alike)."""
    if method == T:
        return _t(r)
    if _t(r) is None or not r.logs:
        return None
    got = _bootstrap(r.logs, "BCa" if method == BCA else "percentile")
    return None if got is None else (math.exp(got[0]), math.exp(got[1]))


def _mean(x: Any, axis: int = -1) -> Any:
    return np.mean(x, axis=axis)


def _difference(x: Any, y: Any, axis: int = -1) -> Any:
    return np.mean(x, axis=axis) - np.mean(y, axis=axis)


@functools.lru_cache(maxsize=8192)
def _bootstrap(
    samples: tuple[tuple[float, ...], ...], method: Literal["BCa", "percentile"]
) -> tuple[float, float] | None:
    """The bootstrap interval of the mean log ratio (one sample) or of the difference of two
    samples' mean logs, on the log scale. Samples without any spread give the point (as the t
    interval does). Cached: the sensitivity table grades the same ratios once per power split."""
    if all(max(s) == min(s) for s in samples):
        m = float(np.mean(samples[0]) - (np.mean(samples[1]) if len(samples) > 1 else 0.0))
        return m, m
    stat = _mean if len(samples) == 1 else _difference
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # BCa's degenerate-sample warnings: a NaN bound, handled below
        res = sps.bootstrap(
            [np.asarray(s, dtype=np.float64) for s in samples],
            stat,
            n_resamples=RESAMPLES,
            confidence_level=LEVEL,
            method=method,
            vectorized=True,
            paired=False,
            rng=np.random.default_rng(SEED),
        )
    lo, hi = float(res.confidence_interval.low), float(res.confidence_interval.high)
    return (lo, hi) if math.isfinite(lo) and math.isfinite(hi) else None


def _grade_on(r: Ratio, iv: tuple[float, float] | None, claim: Claim) -> str:
    lo, hi = iv if iv is not None else (-math.inf, math.inf)
    return verdict.grade(claim.rule(), (r.value, lo, hi))


def by_method(r: Ratio | None, claim: Claim) -> dict[str, str]:
    """The claim's grade on each interval method's interval (unbounded where a method gives
    none: inconclusive). A ratio without the logs it came from (made by hand) has its t
    grade alone."""
    if r is None:
        return {T: verdict.grade(claim.rule(), None)}
    methods = METHODS if r.logs else (T,)
    return {m: _grade_on(r, interval(r, m), claim) for m in methods}


def grade(r: Ratio | None, claim: Claim) -> str:
    """The verdict rule on a ratio: the grade its intervals agree on, inconclusive where the
    interval methods grade it differently (a verdict must not rest on the method)."""
    grades = set(by_method(r, claim).values())
    return grades.pop() if len(grades) == 1 else INCONCLUSIVE


def split(r: Ratio | None, claim: Claim) -> str:
    """Where the interval methods grade the claim differently, in words for the evidence
    ("the interval method decides it: t holds, BCa holds, percentile inconclusive"); else ""."""
    grades = by_method(r, claim)
    if len(set(grades.values())) < 2:
        return ""
    return "the interval method decides it: " + ", ".join(f"{m} {g}" for m, g in grades.items())


def methods_json(r: Ratio | None, claim: Claim) -> dict[str, dict[str, Any]]:
    """Each interval method's interval and grade, for a verdict's interval JSON."""
    if r is None:
        return {}
    grades = by_method(r, claim)
    out: dict[str, dict[str, Any]] = {}
    for m, g in grades.items():
        iv = interval(r, m)
        out[m] = {"ci_low": iv[0] if iv else None, "ci_high": iv[1] if iv else None, "grade": g}
    return out


def decisive(r: Ratio | None, claim: Claim) -> bool | None:
    """Whether the interval is narrower than the paper's effect (its half-width below
    |paper - bound|): the goal of issue 41. None where the paper gives no figure."""
    if claim.paper is None or r is None:
        return None
    if r.low is None or r.high is None:
        return False
    return (r.high - r.low) / 2 < abs(claim.paper - claim.bound)


MAX_REPS = 10_000


def reps_to_decide(r: Ratio | None, claim: Claim) -> int | None:
    """The repetitions (pairs; independent: a side) at which an interval of this spread would
    be narrower than the paper's effect: the smallest n with t(0.975, n - 1) x sd / sqrt(n)
    below |log(paper / bound)|, the spread taken as measured (a projection, not a promise).
    None where the paper gives no figure, the spread is unknown, or it needs over MAX_REPS."""
    if r is None or r.sd is None or claim.paper is None or claim.paper <= 0 or claim.bound <= 0:
        return None
    effect = abs(math.log(claim.paper / claim.bound))
    if effect == 0:
        return None
    sd = r.sd
    if sd == 0:
        return MIN_POINTS

    # t(n-1) x sd / sqrt(n) falls with n: bisect for the first n below the effect.
    def wide(n: int) -> bool:
        return bool(sps.t.ppf(1 - (1 - LEVEL) / 2, n - 1) * sd / math.sqrt(n) >= effect)

    lo, hi = MIN_POINTS, MAX_REPS
    if wide(hi):
        return None
    while lo < hi:
        mid = (lo + hi) // 2
        lo, hi = (mid + 1, hi) if wide(mid) else (lo, mid)
    return lo
