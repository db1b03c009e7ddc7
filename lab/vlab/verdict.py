"""The one verdict rule of the lab's comparisons: `make demo`, `vlab compare`, the fidelity
matrix and the reproductions judge schedulers by it (docs/lab.md, "Verdicts").

1. **Device-bound cells only.** A cell on a served device is judged only where the device
   was busy at least BUSY_MIN of the model time under every scheduler (the median of its
   runs, each measured over fio's measured window); below it the emulated guest, not the
   device, set the pace, and the cell is excluded and said to be (`bound`). A cell whose
   device reports no busy time (null_blk, a real disk) is judged on the caller's own
   measure, or not excluded where there is none.
2. **A p99 needs MIN_READS reads a run.** With fewer, a run's 99th percentile is its slowest
   read or next to it; a read-p99 figure from such a run is not judged (`enough_reads`).
3. **Ratios inside one boot, with intervals.** Two schedulers are compared as the geometric
   mean of their per-repetition ratios (the runs of a repetition are in one boot, in rotated
   order) with its Student t 95 % interval (`paired_ratio`, `_interval`; fewer than three
   repetitions give no interval). `order` says "lower", "higher" or **"tie" where the
   interval contains 1** (or there is none).
4. **A goal is graded by the reproductions' rule** (vsim.verdict, sim/src/verdict.rs):
   a ratio above (or below) a bound **holds** when the whole interval is on that side, **does
   not hold** when the whole interval is on the other, and is **inconclusive** when it
   straddles the bound; a goal of several parts is combined by the same rule (`combine`).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

# The share of model time a served device must be busy for a cell to be judged.
BUSY_MIN = 0.85
# The reads a run needs for its read p99 to be judged: with 100, the p99 is the 99th-100th
# slowest read (fio's percentile of the latency histogram), not the slowest alone.
MIN_READS = 100

LEVEL = 0.95
POWER = 0.8  # the minimum detectable effect's power
MIN_POINTS = 3


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
    # The logarithms the interval was made from: the pairs' log ratios (paired), or the two
    # samples' logs (independent); vlab.repro.stats resamples them for its bootstrap intervals.
    logs: tuple[tuple[float, ...], ...] = ()

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


def _interval(samples: tuple[list[float], ...]) -> tuple[float, float]:
    """The Student t 95 % interval of the mean log ratio (one sample: paired) or of the
    difference of two samples' mean logs (Welch's, with Welch-Satterthwaite degrees of
    freedom). Not a bootstrap: over the lab's 3-10 repetitions a bootstrap interval is too
    narrow (scipy's BCa separated 29 % of pairs at 3 repetitions, 15 % at 5 and 10 % at 10
    where nothing differed, against 5 % nominal; tests/test_verdict.py's coverage test)."""
    from scipy import stats as sps

    if len(samples) == 1:
        (x,) = samples
        m, se, df = statistics.fmean(x), statistics.stdev(x) / math.sqrt(len(x)), len(x) - 1.0
    else:
        x, y = samples
        va, vb = statistics.variance(x) / len(x), statistics.variance(y) / len(y)
        m, se = statistics.fmean(x) - statistics.fmean(y), math.sqrt(va + vb)
        df = (va + vb) ** 2 / (va**2 / (len(x) - 1) + vb**2 / (len(y) - 1)) if va + vb > 0 else 1.0
    if se == 0:  # no spread at all: the interval is the point
        return m, m
    h = float(sps.t.ppf(1 - (1 - LEVEL) / 2, df)) * se
    return m - h, m + h


def _mde(sd: float, n: int) -> float | None:
    """Two-sided 5 %, power 80 %, t distribution: the smallest |log ratio| the repetitions
    would detect, as a ratio's distance from 1."""
    if n < 2 or not math.isfinite(sd):
        return None
    from scipy import stats as sps

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
    logs = [math.log(x / y) for x, y in pairs]
    value = math.exp(statistics.fmean(logs))
    n = len(logs)
    if n < MIN_POINTS:
        return Ratio(value, None, None, n, True, None)
    ci = _interval((logs,))
    sd = statistics.stdev(logs)
    return Ratio(value, math.exp(ci[0]), math.exp(ci[1]), n, True, _mde(sd / math.sqrt(n), n), sd, (tuple(logs),))


def independent_ratio(a: Sequence[float | None], b: Sequence[float | None]) -> Ratio | None:
    """The ratio of geometric means of two independent samples (two boots)."""
    la, lb = _logs(a), _logs(b)
    if not la or not lb:
        return None
    value = math.exp(statistics.fmean(la) - statistics.fmean(lb))
    n = min(len(la), len(lb))
    if n < MIN_POINTS:
        return Ratio(value, None, None, n, False, None)
    ci = _interval((la, lb))
    se = math.sqrt(statistics.variance(la) / len(la) + statistics.variance(lb) / len(lb))
    return Ratio(
        value, math.exp(ci[0]), math.exp(ci[1]), n, False, _mde(se, n), se * math.sqrt(n), (tuple(la), tuple(lb))
    )


HOLDS, DOES_NOT_HOLD, INCONCLUSIVE, NOT_JUDGED = "holds", "does not hold", "inconclusive", "not judged"
LOWER, HIGHER, TIE = "lower", "higher", "tie"


@dataclass(frozen=True)
class Bound:
    """Whether a cell is judged: `judged` False with `why` where it is excluded."""

    judged: bool
    why: str = ""
    lowest: float | None = None  # the lowest busy share among the schedulers, if known


def bound(shares: Mapping[str, float | None]) -> Bound:
    """Rule 1 on a cell's busy shares (scheduler -> median share, None where the device
    reports none)."""
    known = {s: v for s, v in shares.items() if isinstance(v, int | float) and math.isfinite(v)}
    if not known:
        return Bound(True, "no busy share reported: not checked")
    low = [f"{s} {100 * v:.0f} %" for s, v in known.items() if v < BUSY_MIN]
    lowest = min(known.values())
    if low:
        return Bound(False, f"guest-bound: the device was busy {', '.join(low)} of model time "
                            f"(< {100 * BUSY_MIN:.0f} %)", lowest)  # fmt: skip
    return Bound(True, "", lowest)


def busy_shares(summary: Mapping[str, Any]) -> dict[str, float | None]:
    """A `vlab compare` summary's busy share per scheduler (the median over its runs)."""
    out: dict[str, float | None] = {}
    for s, e in (summary.get("schedulers") or {}).items():
        share = (e.get("device_busy_share") or {}).get("median") if isinstance(e, dict) else None
        out[s] = float(share) if isinstance(share, int | float) else None
    return out


def enough_reads(reads: Mapping[str, Sequence[float]]) -> tuple[bool, str]:
    """Rule 2: every run of every scheduler (scheduler -> reads per run) had MIN_READS."""
    missing = [s for s, v in reads.items() if not v]
    if missing:
        return False, f"no read counts for {', '.join(missing)}"
    few = few_reads({s: {"read_ios": v} for s, v in reads.items()})
    if few:
        return False, f"fewer than {MIN_READS} reads in a run ({', '.join(f'{s} {n}' for s, n in few.items())}): no p99"
    return True, ""


def few_reads(figs: Mapping[str, Mapping[str, Sequence[float | None]]]) -> dict[str, int]:
    """Rule 2 per scheduler: those (scheduler -> figure -> per-run values) whose fewest
    reads in a run (`read_ios`) are below MIN_READS, with that fewest (0 without counts)."""
    fewest = {s: min(_nums(f.get("read_ios") or []), default=0.0) for s, f in figs.items()}
    return {s: int(n) for s, n in fewest.items() if n < MIN_READS}


def ratio(a: Sequence[float | None], b: Sequence[float | None]) -> Ratio | None:
    """Rule 3: a / b, paired by repetition (the i-th run of each; runs of one repetition
    share a boot), with its 95 % interval."""
    return paired_ratio(dict(enumerate(a)), dict(enumerate(b)))


def interval(r: Ratio | None) -> tuple[float, float, float] | None:
    """(value, low, high) of a ratio; without an interval (fewer than MIN_POINTS
    repetitions) unbounded, (-inf, inf): it decides nothing (`order` is a tie, a goal
    inconclusive)."""
    if r is None:
        return None
    if r.low is None or r.high is None:
        return (r.value, -math.inf, math.inf)
    return (r.value, r.low, r.high)


def order(r: Ratio | None) -> str | None:
    """Rule 3: "lower" / "higher" where the whole interval is below / above 1, else "tie";
    None without a ratio."""
    iv = interval(r)
    if iv is None:
        return None
    _, low, high = iv
    return LOWER if high < 1 else HIGHER if low > 1 else TIE


def goal(r: Ratio | None, bound_: float, above: bool) -> str:
    """Rule 4: the claim "ratio above (or below) `bound_`" graded on `r`'s interval."""
    from vsim import verdict as rule

    claim = rule.above(bound_) if above else rule.below(bound_)
    return rule.grade(claim, interval(r))


def combine(grades: Sequence[str]) -> str:
    """Rule 4 for a goal of several parts (every one must hold)."""
    from vsim import verdict as rule

    return rule.combine(list(grades))


def points(summary: Mapping[str, Any], scheduler: str, figure: str) -> list[float | None]:
    """A `vlab compare` summary's per-repetition values of `figure` under `scheduler`, in
    repetition order (empty where the summary predates them)."""
    entry = (summary.get("schedulers") or {}).get(scheduler) or {}
    pts = (entry.get(figure) or {}).get("points") if isinstance(entry, dict) else None
    return list(pts) if isinstance(pts, list) else []


def against(summary: Mapping[str, Any], baseline: str, figures: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Every scheduler of a `vlab compare` summary against `baseline` on each figure: the
    paired ratio, its interval and its order (rules 2 and 3: a read p99 with too few reads
    is not judged). scheduler -> figure -> {ratio, low, high, n, order | why}."""
    out: dict[str, dict[str, Any]] = {}
    base_reads = points(summary, baseline, "read_ios")
    for s in summary.get("schedulers") or {}:
        if s == baseline:
            continue
        row: dict[str, Any] = {}
        for fig in figures:
            if fig.startswith("read_p") and base_reads:
                ok, why = enough_reads({baseline: _nums(base_reads), s: _nums(points(summary, s, "read_ios"))})
                if not ok:
                    row[fig] = {"why": why}
                    continue
            r = ratio(points(summary, s, fig), points(summary, baseline, fig))
            if r is None:
                row[fig] = {"why": "no paired figures"}
                continue
            row[fig] = {"ratio": r.value, "low": r.low, "high": r.high, "n": r.n, "order": order(r)}
        out[s] = row
    return out


def _nums(values: Sequence[float | None]) -> list[float]:
    return [float(v) for v in values if isinstance(v, int | float)]


Points = Mapping[str, Mapping[str, Sequence[float | None]]]  # scheduler -> figure -> per-repetition values


def _median(values: Sequence[float | None]) -> float | None:
    nums = _nums(values)
    return statistics.median(nums) if nums else None


def best(figs: Points, rivals: Sequence[str], figure: str, higher: bool) -> str | None:
    """The rival with the best median of `figure` (the highest, or the lowest)."""
    medians = {s: m for s in rivals if s in figs and (m := _median(figs[s].get(figure) or [])) is not None}
    if not medians:
        return None
    return (max if higher else min)(medians, key=lambda s: medians[s])


def ratio_of(figs: Points, a: str, b: str, figure: str, point: bool = False) -> Ratio | None:
    """`a`'s `figure` over `b`'s: paired by repetition (rule 3), or, for a deterministic run
    (`point`: the simulator's one run), the ratio of the values, its interval the point."""
    fa, fb = (figs.get(a) or {}).get(figure) or [], (figs.get(b) or {}).get(figure) or []
    if not point:
        return ratio(fa, fb)
    va, vb = _median(fa), _median(fb)
    if va is None or not vb:
        return None
    v = va / vb
    return Ratio(v, v, v, 1, True, None)


def against_text(summary: Mapping[str, Any]) -> str:
    """`vlab compare`'s verdict lines: each scheduler against the baseline (`against`), or why
    the comparison is not judged."""
    b = summary.get("device_bound") or {}
    if b and not b.get("judged", True):
        return f"verdict: not judged: {b.get('why')}\n"
    lines = []
    for s, row in (summary.get("against_baseline") or {}).items():
        parts = []
        for fig, r in row.items():
            if "ratio" not in r:
                parts.append(f"{fig} not judged ({r.get('why')})")
            elif r.get("low") is None:
                parts.append(f"{fig} {r['ratio']:.2f}x (no interval: fewer than {MIN_POINTS} repetitions)")
            else:
                parts.append(f"{fig} {r['ratio']:.2f}x [{r['low']:.2f}-{r['high']:.2f}] {r['order']}")
        lines.append(f"verdict: {s} / {summary.get('baseline')}: {'; '.join(parts)}")
    return "\n".join(lines) + ("\n" if lines else "")
