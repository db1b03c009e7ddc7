"""The statistics the reproductions' verdicts rest on: a ratio to a baseline with its bootstrap
95 % confidence interval, the smallest effect the repetitions could detect, and the three
grades a claim gets from them.

A ratio is the geometric mean of per-repetition ratios where both sides ran in the same
boot (a cell's schedulers are rotated within each repetition, so repetition i of one is
paired with repetition i of the other), and the ratio of geometric means of two
independent samples where they did not (two filesystems are two cells, two boots). The
interval is scipy's bootstrap (BCa, 9,999 resamples, a fixed seed: the same figures give
the same interval) of that statistic on the logarithms. With fewer than three values a
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
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats as sps
from vsim import verdict

LEVEL = 0.95
RESAMPLES = 9999
SEED = 20141
POWER = 0.8  # the minimum detectable effect's power
MIN_POINTS = 3

HOLDS, PARTLY, FAILS = verdict.HOLDS, verdict.PARTLY, verdict.FAILS
INCONCLUSIVE, NOT_REPRODUCIBLE, NOT_JUDGED = verdict.INCONCLUSIVE, verdict.NOT_REPRODUCIBLE, verdict.NOT_JUDGED


@dataclass(frozen=True)
class Ratio:
    """A ratio to a baseline: its point estimate, its 95 % interval (None when the
    repetitions cannot give one), the number of values behind it (pairs, or the smaller
    side), whether they were paired, and the smallest effect they could detect (a ratio's
    distance from 1, two-sided 5 %, power 80 %; None without an interval)."""

    value: float
    low: float | None
    high: float | None
    n: int
    paired: bool
    mde: float | None
    sd: float | None = None  # the spread of one pair's log ratio (independent: of the difference)

    def as_json(self) -> dict[str, Any]:
        return {
            "value": self.value,
            "ci_low": self.low,
            "ci_high": self.high,
            "level": LEVEL,
            "n": self.n,
            "paired": self.paired,
            "mde": self.mde,
            "sd_log": self.sd,
        }

    def text(self) -> str:
        if self.low is None or self.high is None:
            return f"{self.value:.3f} (n={self.n}, no interval)"
        return f"{self.value:.3f} [{self.low:.3f}, {self.high:.3f}]"


def _logs(values: Sequence[float | None]) -> list[float]:
    return [math.log(v) for v in values if isinstance(v, int | float) and v > 0]


def _interval(samples: tuple[np.ndarray, ...]) -> tuple[float, float]:
    """The bootstrap interval of the mean log ratio (one sample: paired) or of the
    difference of two samples' mean logs."""

    def diff(*xs: np.ndarray, axis: int = -1) -> np.ndarray:
        m = np.mean(xs[0], axis=axis)
        return np.asarray(m if len(xs) == 1 else m - np.mean(xs[1], axis=axis))

    if all(np.ptp(s) == 0 for s in samples):  # no spread at all: the interval is the point
        v = float(diff(*samples))
        return v, v
    res = sps.bootstrap(samples, diff, confidence_level=LEVEL, n_resamples=RESAMPLES, method="BCa",
                        rng=np.random.default_rng(SEED), vectorized=True)  # fmt: skip
    lo, hi = float(res.confidence_interval.low), float(res.confidence_interval.high)
    if not (math.isfinite(lo) and math.isfinite(hi)):  # BCa degenerate on very few points
        res = sps.bootstrap(samples, diff, confidence_level=LEVEL, n_resamples=RESAMPLES, method="percentile",
                            rng=np.random.default_rng(SEED), vectorized=True)  # fmt: skip
        lo, hi = float(res.confidence_interval.low), float(res.confidence_interval.high)
    return lo, hi


def _mde(sd: float, n: int) -> float | None:
    """Two-sided 5 %, power 80 %, t distribution: the smallest |log ratio| the repetitions
    would detect, as a ratio's distance from 1."""
    if n < 2 or not math.isfinite(sd):
        return None
    t = sps.t.ppf(1 - (1 - LEVEL) / 2, n - 1) + sps.t.ppf(POWER, n - 1)
    return math.exp(float(t) * sd) - 1


def paired_ratio(a: dict[int, float | None], b: dict[int, float | None]) -> Ratio | None:
    """a / b over the repetitions both have (keys: repetition numbers)."""
    pairs = [
        (float(x), float(y))
        for k, x in a.items()
        if isinstance(x, int | float) and x > 0 and isinstance(y := b.get(k), int | float) and y > 0
    ]
    if not pairs:
        return None
    logs = np.array([math.log(x / y) for x, y in pairs])
    value = math.exp(float(np.mean(logs)))
    n = len(logs)
    if n < MIN_POINTS:
        return Ratio(value, None, None, n, True, None)
    ci = _interval((logs,))
    sd = statistics.stdev(logs.tolist())
    return Ratio(value, math.exp(ci[0]), math.exp(ci[1]), n, True, _mde(sd / math.sqrt(n), n), sd)


def independent_ratio(a: Sequence[float | None], b: Sequence[float | None]) -> Ratio | None:
    """The ratio of geometric means of two independent samples (two boots)."""
    la, lb = _logs(a), _logs(b)
    if not la or not lb:
        return None
    value = math.exp(statistics.fmean(la) - statistics.fmean(lb))
    n = min(len(la), len(lb))
    if n < MIN_POINTS:
        return Ratio(value, None, None, n, False, None)
    ci = _interval((np.array(la), np.array(lb)))
    se = math.sqrt(statistics.variance(la) / len(la) + statistics.variance(lb) / len(lb))
    return Ratio(value, math.exp(ci[0]), math.exp(ci[1]), n, False, _mde(se, n), se * math.sqrt(n))


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
        return f"{verdict.criterion(self.rule())} (ours: the {LEVEL:.0%} bootstrap interval)"


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
