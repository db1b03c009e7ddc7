"""The report's plots, drawn with matplotlib as inline SVG (no scripts, no fetches).

Each function takes a `Report` and returns the SVG text, or raises `NoData` with the
reason, which the page shows in the plot's place: a plot is never silently empty.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter

from vlab.report.data import downsample
from vlab.report.model import Floats, Latency, Report, Run, Series
from vlab.report.style import colours, dashed

# Points drawn per figure (all lines together) and per line, before thinning.
FIGURE_POINTS = 8_000
LINE_POINTS = (50, 2_000)

plt.rcParams.update(
    {
        "svg.fonttype": "none",  # text stays text: smaller, and searchable in the page
        "svg.hashsalt": "veloces",  # the same data gives the same SVG
        "path.simplify_threshold": 0.5,  # segments within half a pixel of a line are merged
        "font.family": "DejaVu Sans",
        "font.size": 9,
        "axes.grid": True,
        "grid.alpha": 0.3,
        "axes.spines.top": False,
        "axes.spines.right": False,
        "legend.fontsize": 8,
        "legend.frameon": False,
    }
)


class NoData(Exception):
    """Nothing to plot, and why."""


# Time-series metrics: title, unit, and whether the metric has read and write lines.
@dataclass(frozen=True)
class SeriesKind:
    title: str
    unit: str
    per_op: bool
    log: bool = False


SERIES = {
    "iops": SeriesKind("IOPS", "IOPS", True),
    "lat_us": SeriesKind("mean latency", "µs", True, log=True),
    "in_flight": SeriesKind("requests in flight at the device", "requests", False),
    "queued": SeriesKind("requests waiting in the scheduler", "requests", False),
    "write_amplification": SeriesKind("write amplification (cumulative)", "ratio", False),
    "gc_page_copies": SeriesKind("GC page copies", "pages/s", False),
    "merge_page_copies": SeriesKind("merge page copies (log-block GC)", "pages/s", False),
    "erases": SeriesKind("erases", "erases/s", False),
    "file_offset": SeriesKind("file offset of each VFS operation (vlab trace)", "MiB", True),
    "device_offset": SeriesKind("device offset of each bio of the file (vlab trace)", "MiB", True),
}


def _svg(fig: Figure) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None, "Creator": None})
    plt.close(fig)
    text = buf.getvalue()
    text = text[text.find("<svg") :]
    # The SVG's RDF metadata block says nothing a reader needs.
    start, end = text.find("<metadata>"), text.find("</metadata>")
    return text[:start] + text[end + len("</metadata>") :] if 0 <= start < end else text


def _figure(width: float = 7.0, height: float = 3.4) -> tuple[Figure, Axes]:
    fig, ax = plt.subplots(figsize=(width, height))
    return fig, ax


def _us(x: float, _pos: float | None = None) -> str:
    if x >= 1e6:
        return f"{x / 1e6:g} s"
    if x >= 1e3:
        return f"{x / 1e3:g} ms"
    return f"{x:g} µs"


def _log_latency(ax: Axes, which: str) -> None:
    """A log axis of latencies in µs, labelled in µs/ms/s. Minor ticks are labelled too
    where the axis spans few decades (all of them under a factor of 3; 2 and 5 under
    three decades), so a short axis shows more than one label."""
    lo, hi = ax.get_xlim() if which == "x" else ax.get_ylim()  # autoscaled now
    axis = ax.xaxis if which == "x" else ax.yaxis
    axis.set_major_formatter(FuncFormatter(_us))
    span = hi / lo if lo > 0 else np.inf

    def minor(x: float, pos: float | None = None) -> str:
        lead = round(x / 10 ** np.floor(np.log10(x)), 6)
        return _us(x) if span < 3 or (span < 1000 and lead in (2.0, 5.0)) else ""

    axis.set_minor_formatter(FuncFormatter(minor))


def _style(label: str, colour: dict[str, str]) -> dict[str, Any]:
    return {"color": colour[label], "linestyle": "--" if dashed(label) else "-"}


def merged_latency(report: Report, op: str) -> dict[str, tuple[Latency, int]]:
    """Per label, its runs' latency distributions of `op` merged, and how many runs."""
    out: dict[str, tuple[Latency, int]] = {}
    for label in report.labels:
        parts = [r.latency[op] for r in report.runs if r.label == label and op in r.latency]
        merged = Latency.merge(parts)
        if merged is not None:
            out[label] = (merged, len(parts))
    return out


def _latency_note(lat: dict[str, tuple[Latency, int]]) -> str:
    runs = {n for _, n in lat.values()}
    if any(lt.source == "percentiles" for lt, _ in lat.values()):
        return "from fio's percentiles only (no json+ histogram)"
    if runs == {1}:
        return "one run per scheduler"
    return f"{'/'.join(str(n) for n in sorted(runs))} runs per scheduler merged"


def _latency_figure(
    report: Report, op: str, what: str
) -> tuple[dict[str, tuple[Latency, int]], dict[str, str], Figure, Axes]:
    """The merged distributions of `op` per label, the colours and a figure, or NoData."""
    lat = merged_latency(report, op)
    if not lat:
        raise NoData(f"no {op} latency {what}: no {op} I/O, or the runs reported no latencies")
    return (lat, colours(report.labels), *_figure())


def cdf(report: Report, op: str) -> str:
    lat, colour, fig, ax = _latency_figure(report, op, "distribution")
    for label, (lt, _) in lat.items():
        x, y = lt.cdf()
        ax.step(x / 1e3, y, where="post", label=label, linewidth=1.4, **_style(label, colour))
    ax.set_xscale("log")
    _log_latency(ax, "x")
    ax.set_ylim(0, 1.01)
    ax.set_xlabel(f"{op} latency (log scale)")
    ax.set_ylabel("fraction of I/Os at or below")
    ax.set_title(f"{op} latency CDF ({_latency_note(lat)})", fontsize=10)
    ax.legend(loc="lower right")
    return _svg(fig)


NINES = (0.0, 0.5, 0.9, 0.99, 0.999, 0.9999, 0.99999)


def _nines(p: Floats) -> Floats:
    return np.asarray(-np.log10(np.clip(1.0 - p, 1e-9, 1.0)), dtype=np.float64)


def percentiles(report: Report, op: str) -> str:
    lat, colour, fig, ax = _latency_figure(report, op, "percentiles")
    top = 0.0
    for label, (lt, _) in lat.items():
        x, f = lt.cdf()
        # Latency at percentiles evenly spaced in nines, up to the highest a distribution
        # of n I/Os resolves (1 - 1/n): a curve across the whole axis for every scheduler.
        last = float(_nines(np.array([1.0 - 1.0 / max(lt.ios, 2)]))[0])
        grid = np.linspace(0.0, last, 400)
        at = np.minimum(np.searchsorted(f, 1.0 - 10.0**-grid - 1e-12, side="left"), len(x) - 1)
        top = max(top, last)
        ax.plot(grid, x[at] / 1e3, label=label, linewidth=1.4, drawstyle="steps-post", **_style(label, colour))
    ticks = [p for p in NINES if _nines(np.array([p]))[0] <= top + 0.05] or [0.5]
    ax.set_xticks([float(_nines(np.array([p]))[0]) for p in ticks])
    ax.set_xticklabels([f"p{p * 100:g}" for p in ticks])
    ax.set_yscale("log")
    _log_latency(ax, "y")
    ax.set_xlabel("percentile")
    ax.set_ylabel(f"{op} latency (log scale)")
    ax.set_title(f"{op} latency by percentile ({_latency_note(lat)})", fontsize=10)
    ax.legend(loc="upper left")
    return _svg(fig)


BAR_TITLES = {"iops": ("IOPS", "IOPS"), "bw_mib": ("bandwidth", "MiB/s")}


def bars(report: Report, metric: str) -> str:
    spreads = report.bars.get(metric, {})
    labels = [lb for lb in report.labels if spreads.get(lb) and spreads[lb].median is not None]
    if not labels:
        raise NoData(f"no {BAR_TITLES[metric][0]} figures in these results")
    colour = colours(report.labels)
    fig, ax = _figure(max(4.0, 1.0 + 0.9 * len(labels)), 3.2)
    xs = np.arange(len(labels))
    reps = max(len(spreads[lb].points) for lb in labels)
    for i, lb in enumerate(labels):
        s = spreads[lb]
        med = s.median or 0.0
        ax.bar(i, med, color=colour[lb], alpha=0.85, width=0.6, hatch="//" if dashed(lb) else None)
        if s.low is not None and s.high is not None and s.high > s.low:
            ax.errorbar(i, med, yerr=[[med - s.low], [s.high - med]], color="black", capsize=4, linewidth=1)
        if len(s.points) > 1:
            ax.scatter(
                np.full(len(s.points), i) + np.linspace(-0.15, 0.15, len(s.points)),
                s.points,
                s=9,
                color="black",
                zorder=3,
            )
    ax.set_xticks(xs)
    ax.set_xticklabels(labels, rotation=20 if len(labels) > 5 else 0, ha="right" if len(labels) > 5 else "center")
    name, unit = BAR_TITLES[metric]
    ax.set_ylabel(unit)
    spread = "median, min-max bar, each repetition a dot" if reps > 1 else "one run per scheduler: no spread"
    ax.set_title(f"{name} ({spread})", fontsize=10)
    ax.grid(axis="x", visible=False)
    return _svg(fig)


RATIO_TITLES = {
    "iops": "IOPS",
    "read_p99": "read p99",
    "write_p99": "write p99",
    "write_amplification": "WA",
}


def ratios(report: Report) -> str:
    if not report.baseline:
        raise NoData("no baseline: ratios need one")
    metrics = [m for m in RATIO_TITLES if any(v is not None for v in report.ratios.get(m, {}).values())]
    labels = [lb for lb in report.labels if lb != report.baseline]
    if not metrics or not labels:
        raise NoData(f"no ratios to {report.baseline}: only the baseline has figures")
    colour = colours(report.labels)
    fig, ax = _figure(max(5.0, 1.5 + 0.5 * len(labels) * len(metrics)), 3.4)
    width = 0.8 / len(labels)
    for j, lb in enumerate(labels):
        vals = [report.ratios[m].get(lb) for m in metrics]
        xs = np.arange(len(metrics)) + (j - (len(labels) - 1) / 2) * width
        # Bars grow from 1 on a log axis: half and double are the same length.
        ys = [v - 1.0 if v is not None and v > 0 else np.nan for v in vals]
        ax.bar(xs, ys, bottom=1.0, width=width * 0.95, color=colour[lb], label=lb, hatch="//" if dashed(lb) else None)
        for x, v in zip(xs, vals, strict=True):
            if v is not None:
                ax.annotate(
                    f"{v:.2f}",
                    (x, v),
                    ha="center",
                    va="bottom" if v >= 1 else "top",
                    fontsize=7,
                    xytext=(0, 1 if v >= 1 else -1),
                    textcoords="offset points",
                )
    ax.axhline(1.0, color="black", linewidth=1)
    present = [v for m in metrics for v in report.ratios[m].values() if v is not None and v > 0]
    if present:
        ax.set_yscale("log")
        lo, hi = min(min(present), 1.0), max(max(present), 1.0)
        ax.set_ylim(lo / 1.15, hi * 1.15)
        ax.yaxis.set_major_formatter(FuncFormatter(lambda y, _p: f"{y:g}"))
        ax.yaxis.set_minor_formatter(FuncFormatter(lambda y, _p: f"{y:g}" if hi / lo < 4 else ""))
    ax.set_xticks(np.arange(len(metrics)))
    ax.set_xticklabels([RATIO_TITLES[m] for m in metrics])
    ax.set_ylabel(f"ratio to {report.baseline} (log scale)")
    ax.set_title(
        f"median ratios to the baseline, {report.baseline} (= 1; IOPS: higher is better; p99, WA: lower)",
        fontsize=10,
    )
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))
    ax.grid(axis="x", visible=False)
    return _svg(fig)


def _lines(report: Report, metric: str, op: str) -> list[tuple[Run, Series]]:
    return [(r, s) for r in report.runs for s in r.series if s.metric == metric and s.op == op and len(s.t_s)]


def series_available(report: Report) -> list[tuple[str, str]]:
    """(metric, op) pairs with data, in the order of SERIES."""
    have = {(s.metric, s.op) for r in report.runs for s in r.series if len(s.t_s)}
    out = []
    for metric, kind in SERIES.items():
        for op in ("read", "write") if kind.per_op else ("",):
            if (metric, op) in have:
                out.append((metric, op))
    return out


def series(report: Report, metric: str, op: str) -> str:
    kind = SERIES[metric]
    lines = _lines(report, metric, op)
    what = f"{op} {kind.title}" if op else kind.title
    if not lines:
        raise NoData(f"no time series of {what}")
    colour = colours(report.labels)
    per_line = int(min(LINE_POINTS[1], max(LINE_POINTS[0], FIGURE_POINTS // len(lines))))
    fig, ax = _figure(5.2, 2.9)
    thinned = 0
    total = 0
    seen: set[str] = set()
    many = len(lines) > len(report.labels)
    for run, s in lines:
        t, v = downsample(s.t_s, s.values, per_line)
        total += len(s.t_s)
        thinned += len(t)
        ax.plot(
            t,
            v,
            linewidth=0.9 if many else 1.6,
            alpha=0.75 if many else 1.0,
            label=None if run.label in seen else run.label,
            **_style(run.label, colour),
        )
        seen.add(run.label)
    if kind.log and all((s.values > 0).all() for _, s in lines):
        ax.set_yscale("log")
        if kind.unit == "µs":
            _log_latency(ax, "y")
    else:
        # Rates, levels and counts from 0, without an offset: a 2 % wobble looks like one.
        high = max(float(np.nanmax(s.values)) for _, s in lines)
        ax.set_ylim(0, high * 1.08 if high > 0 else 1.0)
        ax.ticklabel_format(axis="y", useOffset=False, style="plain")
    ax.set_xlabel("time (s)")
    ax.set_ylabel(kind.unit)
    title = f"{what} over time ({len(lines)} runs"
    if thinned < total:
        title += f"; downsampled for plotting: {total:,} points drawn as {thinned:,}, each bucket's min and max kept"
    ax.set_title(title + ")", fontsize=9)
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return _svg(fig)


def cases(report: Report) -> str:
    numeric = [c for c in report.cases if c.numeric]
    if not numeric:
        raise NoData("no numeric figures to compare (the cases are orders or bounds; see the table)")
    groups = list(dict.fromkeys(c.group for c in numeric))
    palette = colours(groups)
    fig, ax = _figure(7.0, max(2.5, 0.16 * len(numeric) + 1.0))
    ys = np.arange(len(numeric))
    for i, c in enumerate(numeric):
        ratio = (c.got_value or 0.0) / (c.expected_value or 1.0)
        ax.scatter([ratio], [i], color=palette[c.group], marker="o" if c.passed else "x", s=22, zorder=3)
    for g in groups:
        ax.scatter([], [], color=palette[g], label=g)
    ax.axvline(1.0, color="black", linewidth=1)
    ax.set_yticks(ys)
    ax.set_yticklabels([c.name[:70] for c in numeric], fontsize=6)
    ax.invert_yaxis()
    ax.set_xlabel("ours / expected (1 = equal; x = outside its tolerance)")
    ax.set_title(f"{len(numeric)} numeric figures: ours against the paper's or the closed form's", fontsize=10)
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return _svg(fig)


def ranking(report: Report, index: int) -> str:
    """Pairs ranked by one figure, highest first: median bars with the repetitions' min-max
    and each repetition a dot, coloured by group (the scheduler)."""
    if index >= len(report.rankings):
        raise NoData("no ranking in these results")
    r = report.rankings[index]
    order = sorted(range(len(r.labels)), key=lambda i: r.spreads[i].median or 0.0, reverse=True)
    groups = list(dict.fromkeys(r.groups))
    palette = colours(groups)
    fig, ax = _figure(7.0, max(2.5, 0.2 * len(order) + 1.0))
    for y, i in enumerate(order):
        s, g = r.spreads[i], r.groups[i]
        med = s.median or 0.0
        ax.barh(y, med, color=palette[g], alpha=0.85, height=0.7, hatch="//" if dashed(g) else None)
        if s.low is not None and s.high is not None and s.high > s.low:
            ax.errorbar(med, y, xerr=[[med - s.low], [s.high - med]], color="black", capsize=2, linewidth=0.8)
        if len(s.points) > 1:
            ax.scatter(s.points, np.full(len(s.points), y), s=6, color="black", zorder=3)
    for g in groups:
        ax.barh([], [], color=palette[g], label=g)
    ax.set_yticks(np.arange(len(order)))
    ax.set_yticklabels([r.labels[i] for i in order], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel(r.unit)
    ax.set_title(f"{r.title} (median, min-max, each repetition a dot)", fontsize=10)
    ax.legend(loc="lower right")
    ax.grid(axis="y", visible=False)
    return _svg(fig)


def breakdown(report: Report, index: int) -> str:
    """One figure's constituents as stacked horizontal bars, in the summary's order, with the
    paper's reference lines (vertical)."""
    if index >= len(report.breakdowns):
        raise NoData("no breakdown in these results")
    b = report.breakdowns[index]
    palette = colours(b.parts)
    fig, ax = _figure(7.0, max(2.5, 0.2 * len(b.labels) + 1.2))
    ys = np.arange(len(b.labels))
    left = np.zeros(len(b.labels))
    for k, part in enumerate(b.parts):
        widths = np.array([v[k] for v in b.values])
        ax.barh(ys, widths, left=left, color=palette[part], height=0.7, label=part)
        left += widths
    for (name, x), style in zip(b.lines, ("--", ":", "-.", "-"), strict=False):
        ax.axvline(x, color="black", linestyle=style, linewidth=1, label=name)
    ax.set_yticks(ys)
    ax.set_yticklabels(b.labels, fontsize=6)
    ax.invert_yaxis()
    ax.set_xlabel(b.unit)
    ax.set_title(b.title, fontsize=10)
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=7)
    ax.grid(axis="y", visible=False)
    return _svg(fig)


PlotFn = Callable[[Report], str]
