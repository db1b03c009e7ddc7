"""The report page: one self-contained HTML file (inline SVG plots and one inline style
sheet; no scripts, no network fetches), laid out the same for every kind of results."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import jinja2
import matplotlib

from vlab.report import plots
from vlab.report.model import Report
from vlab.report.style import colours


@dataclass
class Plot:
    id: str  # the figure's data-plot attribute
    svg: str | None  # None: no data, `reason` says why
    reason: str = ""


@dataclass
class Section:
    id: str
    title: str
    plots: list[Plot]
    intro: str = ""


def _plot(pid: str, fn: Callable[[Report], str], report: Report) -> Plot:
    try:
        return Plot(pid, fn(report))
    except plots.NoData as e:
        return Plot(pid, None, str(e))


def sections(report: Report) -> list[Section]:
    out = []
    if report.cases and (
        any(c.numeric for c in report.cases) or not report.rankings
    ):  # a ranking without the paper's numbers
        out.append(Section("reproduction", "Ours beside the expected figures", [_plot("cases", plots.cases, report)]))
    if report.breakdowns:
        out.append(
            Section(
                "breakdown",
                "Breakdowns",
                [
                    _plot(f"breakdown-{i}", partial(plots.breakdown, index=i), report)
                    for i in range(len(report.breakdowns))
                ],
                "Each figure's constituents, stacked, with the paper's reference lines (numbers: the tables above).",
            )
        )
    if report.rankings:
        out.append(
            Section(
                "ranking",
                "Rankings",
                [_plot(f"ranking-{i}", partial(plots.ranking, index=i), report) for i in range(len(report.rankings))],
                "Every pair of one device and workload, best first, from the tables above.",
            )
        )
    if (report.labels or not report.cases) and report.comparison:
        base = report.baseline or "-"
        out.append(
            Section(
                "ratios",
                f"Ratios to the baseline: {base}",
                [_plot("ratios", plots.ratios, report)],
                f"Each scheduler's median divided by {base}'s median, from the table above.",
            )
        )
        out.append(
            Section(
                "latency",
                "Latency distributions",
                [
                    _plot(f"{kind}-{op}", partial(fn, op=op), report)
                    for kind, fn in (("cdf", plots.cdf), ("percentiles", plots.percentiles))
                    for op in ("read", "write")
                ],
                "Latency from fio's json+ histograms (total latency where the job asked for lat_percentiles, "
                "as in the tables), all repetitions of a scheduler merged.",
            )
        )
        out.append(
            Section(
                "throughput",
                "Throughput",
                [_plot(f"bars-{m}", partial(plots.bars, metric=m), report) for m in ("iops", "bw_mib")],
            )
        )
    available = plots.series_available(report)
    if (report.labels or not report.cases) and (report.comparison or available):
        if available:
            ts = [
                _plot(f"series-{m}{'-' + op if op else ''}", partial(plots.series, metric=m, op=op), report)
                for m, op in available
            ]
        else:
            ts = [Plot("series", None, "no time series in these results" + _series_hint(report))]
        what = (
            "Per run: IOPS and mean latency per interval, and the device's counters where it reports them."
            if report.comparison
            else "The file's offsets over time: each VFS operation, and each bio of it at the device."
        )
        out.append(Section("series", "Time series", ts, what))
    return out


def _series_hint(report: Report) -> str:
    hints = [p for p in report.problems if "series" in p or ".log" in p or ".csv" in p]
    return f" ({'; '.join(hints)})" if hints else ""


TEMPLATE = jinja2.Template(
    """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{ r.title }}</title>
<style>
body { font-family: "DejaVu Sans", Arial, sans-serif; margin: 1.5em auto; max-width: 1500px; color: #222;
       padding: 0 1em; font-size: 14px; }
h1 { font-size: 1.5em; margin-bottom: 0.2em; } h2 { font-size: 1.2em; border-bottom: 1px solid #ccc; }
.kind { color: #666; margin-top: 0; }
table { border-collapse: collapse; margin: 0.5em 0 1em; font-size: 13px; }
th, td { border: 1px solid #ddd; padding: 3px 8px; } th { background: #f3f3f3; text-align: left; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
td.fail { color: #b00; font-weight: bold; } td.pass { color: #070; } td.warn { color: #a60; }
table.facts td:first-child { color: #555; white-space: nowrap; } code { font-size: 12px; }
.problems { background: #fff0f0; border: 1px solid #d88; padding: 0.5em 1em; }
.notes { background: #f6f8ff; border: 1px solid #ccd; padding: 0.5em 1em; }
.plots { display: flex; flex-wrap: wrap; gap: 1em; }
figure.plot { margin: 0; border: 1px solid #eee; padding: 4px; max-width: 100%; }
figure.plot svg { max-width: 100%; height: auto; }
figure.nodata { background: #fafafa; padding: 2em; min-width: 300px; color: #a60; }
.swatch { display: inline-block; width: 0.9em; height: 0.9em; vertical-align: middle; margin-right: 4px; }
footer { color: #777; font-size: 12px; margin-top: 2em; }
</style></head>
<body>
<h1>{{ r.title }}</h1>
<p class="kind">{{ r.kind }} report of <code>{{ r.folder }}</code></p>
<table class="facts">
{% for k, v in r.facts %}<tr><td>{{ k }}</td><td><code>{{ v }}</code></td></tr>
{% endfor %}</table>
{% if r.problems %}<div class="problems" id="problems"><b>Incomplete: {{ r.problems|length }} input(s) missing
or unreadable.</b> This report shows what exists; these are not in it:
<ul>{% for p in r.problems %}<li>{{ p }}</li>{% endfor %}</ul></div>{% endif %}
{% if r.notes %}<div class="notes"><ul>{% for n in r.notes %}<li>{{ n }}</li>{% endfor %}</ul></div>{% endif %}
{% if r.labels %}<p>{% for lb in r.labels %}<span class="swatch" style="background: {{ colour[lb] }}"></span>{{ lb }}
{% if lb == r.baseline %}(baseline){% endif %}&nbsp;&nbsp; {% endfor %}</p>{% endif %}
{% macro table(t) %}<h2>{{ t.title }}</h2>
<table class="data"><tr>{% for h in t.header %}<th>{{ h }}</th>{% endfor %}</tr>
{% for row in t.rows %}<tr>{% for c in row %}<td class="{{ c.css }}{% if c.value is not none %} num{% endif %}"
{%- if c.value is not none %} data-value="{{ c.value|tojson }}"{% endif %}
{%- if c.key %} data-key="{{ c.key }}"{% endif %}
{%- if c.ratio %} data-ratio-num="{{ c.ratio[0] }}" data-ratio-den="{{ c.ratio[1] }}"{% endif %}
{%- if c.doc %} data-doc="{{ c.doc }}"{% endif %}
{%- if c.scale != 1 %} data-scale="{{ c.scale }}"{% endif %}>{{ c.text }}</td>{% endfor %}</tr>
{% endfor %}</table>{% if t.note %}<p>{{ t.note }}</p>{% endif %}
{% endmacro %}
{% for t in r.tables if not t.after_plots %}{{ table(t) }}{% endfor %}
{% for s in sections %}<section id="{{ s.id }}"><h2>{{ s.title }}</h2>{% if s.intro %}<p>{{ s.intro }}</p>{% endif %}
<div class="plots">{% for p in s.plots %}{% if p.svg %}
<figure class="plot" data-plot="{{ p.id }}">{{ p.svg|safe }}</figure>
{% else %}<figure class="plot nodata" data-plot="{{ p.id }}"><p>{{ p.reason }}</p></figure>
{% endif %}{% endfor %}</div></section>
{% endfor %}
{% for t in r.tables if t.after_plots %}{{ table(t) }}{% endfor %}
<h2>Inputs</h2><p>Read from <code>{{ r.folder }}</code>:</p>
<ul>{% for f in r.files %}<li><code>{{ f }}</code></li>{% endfor %}</ul>
<footer>Made by <code>vlab report</code> (Veloces) with matplotlib {{ mpl }} on {{ made }}. Rebuild it with
<code>./vlab report {{ r.folder }}</code>.</footer>
</body></html>
""",
    autoescape=True,
    trim_blocks=False,
)


def render(report: Report) -> str:
    return str(
        TEMPLATE.render(
            r=report,
            sections=sections(report),
            colour=colours(report.labels),
            mpl=matplotlib.__version__,
            made=time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        )
    )
