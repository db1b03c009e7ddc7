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
straddles the bound; a claim of several parts is **partly** when some hold and one does not.
docs/notebooks/reproductions.md, "How a verdict is decided".
"""

from __future__ import annotations

import math
from dataclasses import dataclass

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
        return f"{verdict.criterion(self.rule())} (ours: the {LEVEL:.0%} t interval)"


def grade(r: Ratio | None, claim: Claim) -> str:
    """The verdict rule on a ratio: its interval, unbounded where there is none (too few
    repetitions: inconclusive)."""
    if r is None:
        return verdict.grade(claim.rule(), None)
    lo = r.low if r.low is not None else -math.inf
    hi = r.high if r.high is not None else math.inf
    return verdict.grade(claim.rule(), (r.value, lo, hi))


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
