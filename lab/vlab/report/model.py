"""What a report shows, whoever produced the data: the lab, the simulator or a reproduction.

A source (one file per kind, registered in vlab.report.kinds) reads a results folder into a
`Report`; the plots and the page are made from a `Report` only, so every kind gets the same
plot kinds, colours and layout.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

Floats = npt.NDArray[np.float64]

OPS = ("read", "write")


@dataclass
class Latency:
    """One direction's latency distribution: a histogram (fio's json+ `bins`: exact to
    fio's bin width) or, where only percentiles were reported, those points."""

    values_ns: Floats  # increasing
    weights: Floats  # counts (histogram) or probability mass between percentile points
    source: str  # "histogram" or "percentiles"
    ios: int

    def cdf(self) -> tuple[Floats, Floats]:
        """(latency ns, fraction of I/Os at or below it)."""
        total = float(self.weights.sum())
        return self.values_ns, np.cumsum(self.weights) / (total if total > 0 else 1.0)

    @staticmethod
    def merge(parts: list[Latency]) -> Latency | None:
        """Several runs' histograms as one (percentile points cannot be merged: the first
        run's are kept, and the caller says so)."""
        parts = [p for p in parts if p.ios > 0 and len(p.values_ns)]
        if not parts:
            return None
        if any(p.source != "histogram" for p in parts):
            return parts[0]
        values = np.concatenate([p.values_ns for p in parts])
        weights = np.concatenate([p.weights for p in parts])
        uniq, inverse = np.unique(values, return_inverse=True)
        summed = np.zeros(len(uniq))
        np.add.at(summed, inverse, weights)
        return Latency(uniq, summed, "histogram", sum(p.ios for p in parts))


@dataclass
class Series:
    """One line of a time series: `metric` (a key of vlab.report.plots.SERIES) of one run,
    for one direction where the metric has directions (`op` "" otherwise)."""

    metric: str
    op: str
    t_s: Floats
    values: Floats


@dataclass
class Run:
    """One run: one scheduler (label), one repetition."""

    label: str
    rep: int  # 1-based
    latency: dict[str, Latency] = field(default_factory=dict)  # by op
    series: list[Series] = field(default_factory=list)


@dataclass
class Spread:
    """A figure over the repetitions: median, min, max and each repetition's value."""

    median: float | None
    low: float | None
    high: float | None
    points: list[float] = field(default_factory=list)


@dataclass
class Cell:
    """A table cell: its text, and where a number came from so the page can be checked
    against the JSON: `key` (a JSON Pointer, RFC 6901, into the source's JSON file `doc`),
    or `ratio` (two such pointers, numerator and denominator)."""

    text: str
    value: float | None = None
    key: str | None = None
    ratio: tuple[str, str] | None = None
    doc: str | None = None
    css: str = ""
    scale: float = 1.0  # the text shows value / scale (e.g. KiB/s as MiB/s)


@dataclass
class Table:
    title: str
    header: list[str]
    rows: list[list[Cell]]
    note: str = ""
    after_plots: bool = False  # long detail (every case, every counter) goes after the plots


@dataclass
class Case:
    """One figure of a reproduction: the paper's (or closed form's) value beside ours."""

    group: str
    name: str
    expected: str
    got: str
    tolerance: str
    passed: bool
    expected_value: float | None = None
    got_value: float | None = None

    @property
    def numeric(self) -> bool:
        """Both figures are numbers (an order or a bound is not), so the plot can place it."""
        return bool(self.expected_value) and self.got_value is not None


@dataclass
class Ranking:
    """One figure over many pairs (a reproduction's filesystem x scheduler, say), ranked in
    the report's plot; `groups` colour the bars (the scheduler)."""

    title: str
    unit: str
    labels: list[str]
    groups: list[str]
    spreads: list[Spread]


@dataclass
class Breakdown:
    """A figure made of constituents (a reproduction's time per request by part), drawn as
    stacked bars in the given order, with the paper's reference lines."""

    title: str
    unit: str
    parts: list[str]
    labels: list[str]
    values: list[list[float]]  # per label, one value per part
    lines: list[tuple[str, float]] = field(default_factory=list)


@dataclass
class Report:
    kind: str  # e.g. "vlab compare"
    title: str
    folder: str
    facts: list[tuple[str, str]] = field(default_factory=list)  # command, versions, kernel, device...
    labels: list[str] = field(default_factory=list)  # schedulers, in the source's order
    baseline: str | None = None
    runs: list[Run] = field(default_factory=list)
    bars: dict[str, dict[str, Spread]] = field(default_factory=dict)  # metric -> label -> spread
    ratios: dict[str, dict[str, float | None]] = field(default_factory=dict)  # metric -> label -> ratio
    tables: list[Table] = field(default_factory=list)
    cases: list[Case] = field(default_factory=list)
    rankings: list[Ranking] = field(default_factory=list)
    breakdowns: list[Breakdown] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # missing or unreadable inputs
    notes: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)  # the inputs read, relative to the folder
    # Runs of schedulers to compare (ratios, latency, throughput); False: the runs only carry
    # time series (a trace's file timeline).
    comparison: bool = True

    def problem(self, message: str) -> None:
        if message not in self.problems:
            self.problems.append(message)


def pointer(*parts: str | int) -> str:
    """A JSON Pointer (RFC 6901) to a value: `pointer("schedulers", "none", "iops")`."""
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)
