"""The HTML reports (vlab.report): readers, plots, bad input, large input, and each kind of
report loaded in headless Chromium (console, rendered plots, numbers equal to the JSON).

Lab-kind pages here are made from synthetic fio json+ output (the boot test checks the
page of a real `vlab compare`); the simulator's kinds come from real vsim runs.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import REPO

from vlab import stats
from vlab.app import load_results
from vlab.report import browser, build, data, load
from vlab.report.model import Latency, Report, Run
from vlab.report.style import colours
from vlab.workloads.fio import parse_file

SHOTS = REPO / "build" / "report-shots"


def _op(rng: np.random.Generator, center_us: float, n: int, runtime: float) -> dict[str, Any]:
    lat = rng.lognormal(np.log(center_us * 1000), 0.5, n).astype(np.int64)
    vals, counts = np.unique(lat // 1000 * 1000 + 500, return_counts=True)
    pct = {f"{p:.6f}": int(np.percentile(lat, p)) for p in (1, 5, 10, 20, 50, 90, 99, 99.9, 99.99)}
    return {
        "iops": n / runtime,
        "bw": n * 4 / runtime,
        "total_ios": n,
        "lat_ns": {"percentile": pct, "bins": {str(int(v)): int(c) for v, c in zip(vals, counts, strict=True)}},
    }


def fio_doc(rng: np.random.Generator, read_us: float, write_us: float, n: int = 3000) -> dict[str, Any]:
    return {
        "fio version": "fio-3.33",
        "jobs": [
            {
                "jobname": "j",
                "error": 0,
                "read": _op(rng, read_us, n, 4.0),
                "write": _op(rng, write_us, n // 3, 4.0),
            }
        ],
    }


SPEED = {"none": 1.0, "mq-deadline": 0.9, "kyber": 0.8, "bfq": 1.3, "veloces": 0.6}


def make_lab(folder: Path, scheds: list[str], reps: int, log_lines: int = 40, seed: int = 1) -> dict[str, Any]:
    """A `vlab compare` results folder as the lab writes it: fio json+, fio's logs, the
    sampler's series, summary.json."""
    rng = np.random.default_rng(seed)
    raw = folder / "raw"
    raw.mkdir(parents=True)
    for r in range(reps):
        for s in stats.rotation(scheds, r):
            k = SPEED.get(s.split(":")[0], 1.1) * (1 + 0.05 * rng.standard_normal())
            name = stats.raw_name(r, s)
            (raw / name).write_text(json.dumps(fio_doc(rng, 200 * k, 900 * k)))
            stem = raw / name.removesuffix(".json")
            t = np.arange(1, log_lines + 1) * 100
            for suffix, base in (("_iops.log", 700.0), ("_lat.log", 300e3 * k)):
                lines = [f"{x}, {int(base * (1 + 0.2 * np.sin(x / 700)))}, {d}, 4096, 0" for x in t for d in (0, 1)]
                Path(f"{stem}{suffix}").write_text("\n".join(lines) + "\n")
            rows = ["time_s,in_flight"] + [f"{x / 1000:.3f},{int(rng.integers(0, 9))}" for x in t]
            Path(f"{stem}.series.csv").write_text("\n".join(rows) + "\n")
    results, problems = load_results(raw, scheds, reps)
    assert not problems
    summary = stats.summarize(results, scheds[0], scheds)
    summary["kind"] = "vlab-compare"
    summary["meta"] = {
        "command": ["./vlab", "compare", "--schedulers", ",".join(scheds)],
        "versions": {"veloces": "test", "fio": "fio-3.33"},
        "kernel": "6.1.0-test",
        "device": "null_blk:size=64",
        "job": "synthetic.fio",
        "repeat": reps,
        "orders": [stats.rotation(scheds, r) for r in range(reps)],
        "complete": True,
    }
    stats.write_summary(folder / "summary.json", summary)
    return summary


# --- readers -------------------------------------------------------------------------


def test_colours_are_one_per_scheduler_in_lab_and_sim() -> None:
    lab = colours(["none", "mq-deadline", "kyber", "bfq", "veloces"])
    sim = colours(["noop", "deadline", "cfq", "veloces"])
    assert (lab["none"], lab["mq-deadline"], lab["bfq"], lab["veloces"]) == (
        sim["noop"],
        sim["deadline"],
        sim["cfq"],
        sim["veloces"],
    )
    assert len(set(lab.values())) == 5
    # Variants: shades of their scheduler, distinct from it and from each other, stable.
    v = colours(["kyber", "veloces", "veloces:read_expire=10", "veloces:read_expire=1000", "mine"])
    assert len(set(v.values())) == 5 and v["veloces"] == lab["veloces"]
    assert v == colours(["kyber", "veloces", "veloces:read_expire=10", "veloces:read_expire=1000", "mine"])


def test_fio_latency_histogram_and_percentiles() -> None:
    doc = fio_doc(np.random.default_rng(3), 100, 400)
    lat = data.fio_latency(doc, "x.json")
    assert set(lat) == {"read", "write"} and lat["read"].source == "histogram"
    x, f = lat["read"].cdf()
    assert f[-1] == pytest.approx(1.0) and (np.diff(x) > 0).all() and (np.diff(f) >= 0).all()
    # The CDF's median is the JSON's p50 (to the 1 us bins of the fixture).
    p50 = doc["jobs"][0]["read"]["lat_ns"]["percentile"]["50.000000"]
    assert abs(x[np.searchsorted(f, 0.5)] - p50) <= 1000
    for o in ("read", "write"):
        del doc["jobs"][0][o]["lat_ns"]["bins"]
    pct = data.fio_latency(doc, "x.json")
    assert pct["read"].source == "percentiles" and pct["read"].cdf()[1][-1] == pytest.approx(1.0)
    with pytest.raises(data.DataError, match=r"x\.json: not fio JSON"):
        data.fio_latency({"jobs": [{"read": {"total_ios": "many"}}]}, "x.json")
    merged = Latency.merge([lat["read"], lat["read"]])
    assert merged is not None and merged.ios == 2 * lat["read"].ios


def test_fio_log_reads_fast_and_names_a_bad_line(tmp_path: Path) -> None:
    log = tmp_path / "rep1-x_lat.log"
    log.write_text("".join(f"{100 * (i + 1)}, {i * 1000}, {i % 2}, 4096, 0\n" for i in range(10)))
    s = {x.op: x for x in data.fio_log(log, "lat_us", 1e-3)}
    assert list(s["read"].t_s) == pytest.approx([0.1, 0.3, 0.5, 0.7, 0.9])
    assert list(s["write"].values) == pytest.approx([1, 3, 5, 7, 9])
    log.write_text("100, 5, 0, 4096, 0\n200, 5, 0, 4096, 0\n300, five, 0, 4096, 0\n")
    with pytest.raises(data.DataError, match=r"rep1-x_lat\.log:3: not a fio log line"):
        data.fio_log(log, "lat_us")


def test_csv_series_name_file_and_line(tmp_path: Path) -> None:
    p = tmp_path / "a.device.csv"
    p.write_text("time_s,in_flight,erases\n0.1,3,10\n0.2,4,30\n0.3,,50\n")
    s = {x.metric: x for x in data.device_series(p)}
    assert list(s["in_flight"].values) == [3, 4] and list(s["erases"].values) == pytest.approx([200, 200])
    p.write_text("time_s,in_flight\n0.1,3\n0.2,x\n")
    with pytest.raises(data.DataError, match=r"a\.device\.csv:3: field 2 \(in_flight\)"):
        data.device_series(p)
    p.write_text("time_s,in_flight\n0.1,3,4\n")
    with pytest.raises(data.DataError, match=r"a\.device\.csv:2: 3 fields"):
        data.device_series(p)


def test_idle_intervals_of_the_simulator_are_zero_not_smeared(tmp_path: Path) -> None:
    """vsim's device CSV leaves idle intervals out: the gap is drawn at zero, and the
    counter's change after it is the last interval's (100/s), not spread over it (25/s)."""
    p = tmp_path / "x.device.csv"
    p.write_text("time_s,in_flight,queued,erases\n0.0,2,1,10\n0.1,2,1,20\n0.5,3,0,30\n")
    s = {x.metric: x for x in data.device_series(p, idle_gaps=True)}
    assert list(s["erases"].t_s) == pytest.approx([0.1, 0.2, 0.4, 0.5])
    assert list(s["erases"].values) == pytest.approx([100, 0, 0, 100])
    assert list(s["in_flight"].t_s) == pytest.approx([0.0, 0.1, 0.2, 0.4, 0.5])
    assert list(s["in_flight"].values) == pytest.approx([2, 2, 0, 0, 3])
    # The lab's sampler keeps every row: its rates are over the time between them.
    lab = {x.metric: x for x in data.device_series(p)}
    assert list(lab["erases"].values) == pytest.approx([100, 25])


def test_downsample_keeps_every_spike_and_bounds_points() -> None:
    t = np.arange(1_000_000, dtype=np.float64)
    v = np.sin(t / 5000)
    v[123_457] = 50.0
    v[876_543] = -50.0
    ts, vs = data.downsample(t, v, 2000)
    assert len(ts) <= 2000 and (np.diff(ts) > 0).all()
    assert 50.0 in vs and -50.0 in vs
    assert data.downsample(t[:100], v[:100], 2000)[0] is not None


# --- bad input ------------------------------------------------------------------------


def test_missing_and_corrupt_files_are_named_and_the_rest_is_shown(tmp_path: Path) -> None:
    folder = tmp_path / "cmp"
    make_lab(folder, ["none", "kyber", "veloces"], 2)
    (folder / "raw" / "rep2-kyber.json").unlink()
    (folder / "raw" / "rep1-veloces.json").write_text('{"jobs": [ {"read": ')
    (folder / "raw" / "rep1-none_lat.log").write_text("100, 5, 0, 4096, 0\nbad line\n")
    target, rep = build(folder)
    text = target.read_text()
    for missing in (
        "raw/rep2-kyber.json: missing (repetition 2 of kyber)",
        "raw/rep1-veloces.json: corrupt JSON",
        "raw/rep1-none_lat.log:2: not a fio log line",
    ):
        assert any(p.startswith(missing) for p in rep.problems), rep.problems
        assert missing in text
    # What exists is still plotted: each scheduler still has a run with latencies.
    assert {r.label for r in rep.runs if r.latency} == {"none", "kyber", "veloces"}
    assert 'data-plot="cdf-read"><svg' in text.replace("\n", "")

    # Without summary.json the table is made from the raw files, and the page says so.
    (folder / "summary.json").write_text("{ not json")
    rep2 = load(folder)
    assert any(p.startswith("summary.json: corrupt JSON") for p in rep2.problems)
    assert rep2.tables and any("computed from the raw fio files" in n for n in rep2.notes)


def test_a_folder_of_nothing_known_gives_a_report_saying_so(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("hello")
    target, rep = build(tmp_path)
    assert rep.kind == "unknown" and "no results of a known kind" in rep.problems[0]
    assert "notes.txt" in target.read_text()
    # Every plot says why it is empty; none is an empty frame.
    assert target.read_text().count('class="plot nodata"') >= 6
    p = subprocess.run([str(REPO / "vlab"), "report", str(tmp_path / "absent")], capture_output=True, text=True)
    assert p.returncode == 2 and "not a directory" in p.stderr and not (tmp_path / "absent").exists()


def test_a_reader_that_fails_still_gives_a_report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from vlab.report import kinds

    def broken(folder: Path) -> Report:
        raise ZeroDivisionError("a bug")

    monkeypatch.setattr(kinds, "KINDS", [("broken", lambda f: True, broken)])
    monkeypatch.setattr("vlab.report.KINDS", kinds.KINDS)
    target, _ = build(tmp_path)
    assert "the broken reader failed: ZeroDivisionError: a bug" in target.read_text()


# --- large input ------------------------------------------------------------------------


def test_a_hundred_runs_stay_small_and_say_they_were_thinned(tmp_path: Path) -> None:
    folder = tmp_path / "big"
    make_lab(folder, ["none", "mq-deadline", "kyber", "bfq", "veloces"], 20, log_lines=600)
    t0 = time.monotonic()
    target, rep = build(folder)
    took = time.monotonic() - t0
    size = target.stat().st_size
    print(f"100 runs: {size / 1e6:.2f} MB in {took:.1f} s")
    assert len(rep.runs) == 100 and not rep.problems
    assert size < 3e6
    text = target.read_text()
    assert "downsampled for plotting: 60,000 points drawn as 8,000" in text


@pytest.mark.full  # ~2 min of one core: a scale test, make test-full
def test_a_ten_million_request_series_is_read_and_thinned(tmp_path: Path) -> None:
    folder = tmp_path / "long"
    make_lab(folder, ["none", "veloces"], 1)
    # fio's unaveraged latency log of 10 M requests (one line per request, ~250 MB).
    n = 10_000_000
    t = np.arange(n) // 20
    v = 100_000 + (np.arange(n) % 977) * 100
    v[7_654_321] = 90_000_000  # one stall
    lines = np.char.add(np.char.add(t.astype("U9"), ", "), v.astype("U9"))
    body = "\n".join(np.char.add(lines, ", 0, 4096, 0").tolist()) + "\n"
    (folder / "raw" / "rep1-veloces_lat.log").write_text(body)
    del body, lines
    t0 = time.monotonic()
    target, rep = build(folder)
    took = time.monotonic() - t0
    size = target.stat().st_size
    print(f"10 M-request series: {size / 1e6:.2f} MB in {took:.1f} s")
    (series,) = [s for r in rep.runs for s in r.series if r.label == "veloces" and s.metric == "lat_us"]
    assert len(series.t_s) == n and series.values.max() == pytest.approx(90_000.0)
    assert size < 3e6 and not rep.problems
    assert "10,000,040 points drawn as" in target.read_text()  # its 10 M and the other run's 40


# --- in the browser -------------------------------------------------------------------------

needs_browser = pytest.mark.skipif(
    not Path(browser.DRIVER).exists(), reason="no chromium-driver: `make deps` installs Debian's chromium"
)


def check_in_browser(
    chromium: browser.Browser | None, folder: Path, kind: str, plots: set[str], shot: str
) -> browser.Page:
    target = folder / "report.html"
    assert target.exists()
    assert chromium is not None, "no Chromium (the test should have been skipped)"
    SHOTS.mkdir(parents=True, exist_ok=True)
    page = chromium.load(target, first_screen=SHOTS / f"{shot}.png")
    assert not browser.console_errors(page), page.console
    assert not browser.blank_plots(page), browser.blank_plots(page)
    drawn = {p.id for p in page.plots if not p.nodata}
    assert plots <= drawn, f"missing plots {plots - drawn}; drawn {drawn}"
    assert page.cells, "no table cell names its JSON"
    assert not browser.numbers_mismatched(page, folder)
    assert kind in page.text
    # Self-contained: no scripts and nothing fetched.
    html = target.read_text()
    assert "<script" not in html and "<link" not in html and "@import" not in html
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)|url\(\s*["']?(https?:|//)""", html)
    return page


@needs_browser
def test_blank_plots_are_caught(tmp_path: Path) -> None:
    """The check can fail: an empty axes frame and a white image both count as blank."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(4, 3))
    ax.set_xlabel("time (s)")
    fig.savefig(tmp_path / "frame.png")
    white = browser.pixels(_png(np.full((50, 50, 3), 255, np.uint8)))
    frame = browser.pixels((tmp_path / "frame.png").read_bytes())
    ax.plot([0, 1], [0, 1], color="#d62728")
    fig.savefig(tmp_path / "line.png")
    line = browser.pixels((tmp_path / "line.png").read_bytes())
    page = browser.Page([], b"", plots=[white, frame, line])
    assert len(browser.blank_plots(page)) == 2


def _png(a: Any) -> bytes:
    import io

    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(a).save(buf, format="PNG")
    return buf.getvalue()


@needs_browser
def test_lab_compare_report_in_chromium(tmp_path: Path, chromium: browser.Browser | None) -> None:
    folder = tmp_path / "cmp"
    make_lab(folder, ["none", "mq-deadline", "kyber", "bfq", "veloces", "veloces:bundle_expire_us=500"], 3)
    build(folder)
    t0 = time.monotonic()
    page = check_in_browser(
        chromium,
        folder,
        "vlab compare",
        {"ratios", "cdf-read", "cdf-write", "percentiles-read", "percentiles-write", "bars-iops", "bars-bw_mib",
         "series-iops-read", "series-lat_us-write", "series-in_flight"},
        "lab-compare-synthetic",
    )  # fmt: skip
    print(f"chromium: {time.monotonic() - t0:.1f} s, {len(page.plots)} plots, {len(page.cells)} cells checked")
    # The table's figures are the summary's (and raw parse agrees with it).
    r = parse_file(folder / "raw" / "rep1-none.json")
    assert r.iops > 0


def vsim(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(REPO / "vsim"), *args], capture_output=True, text=True, cwd=REPO, timeout=600)


@needs_browser
def test_vsim_compare_report_in_chromium(tmp_path: Path, chromium: browser.Browser | None) -> None:
    out = tmp_path / "sim"
    p = vsim("compare", "--device", "ssd:preset=mlc_16g,blocks_per_plane=64,precondition=full",
             "--workload", "sim/examples/mix70.toml", "--schedulers", "noop,deadline,cfq,veloces",
             "--runtime", "300ms", "--quiet", "--out", str(out))  # fmt: skip
    assert p.returncode == 0, p.stderr
    check_in_browser(
        chromium,
        out,
        "vsim compare",
        {"ratios", "cdf-read", "cdf-write", "percentiles-read", "bars-iops", "series-iops-read", "series-lat_us-read",
         "series-in_flight", "series-queued", "series-write_amplification"},
        "vsim-compare",
    )  # fmt: skip
    # Without its summary, the folder still gives the runs' plots, and names what is missing.
    (out / "summary.json").unlink()
    rep = load(out)
    assert rep.kind == "vsim compare" and rep.problems == ["summary.json: missing"]
    assert {r.label for r in rep.runs} == {"noop", "deadline", "cfq", "veloces"}
    assert all(r.latency and any(s.metric == "in_flight" for s in r.series) for r in rep.runs)


@needs_browser
def test_vsim_run_report_in_chromium(tmp_path: Path, chromium: browser.Browser | None) -> None:
    out = tmp_path / "run"
    p = vsim("run", "sim/examples/mix70.toml", "--device", "cheapflash:preset=sd_a1,size=256m", "--runtime", "300ms",
             "--quiet", "--report", str(out))  # fmt: skip
    assert p.returncode == 0, p.stderr
    check_in_browser(chromium, out, "vsim run", {"cdf-read", "series-iops-read", "series-in_flight"}, "vsim-run")


@needs_browser
def test_reproduction_report_in_chromium(tmp_path: Path, chromium: browser.Browser | None) -> None:
    out = tmp_path / "val"
    p = vsim("validate", "--quick", "--group", "queueing", "--report", str(out))
    assert p.returncode == 0, p.stderr
    check_in_browser(chromium, out, "reproduction", {"cases"}, "reproduction")


@needs_browser
def test_simulated_reproduction_report_in_chromium(tmp_path: Path, chromium: browser.Browser | None) -> None:
    """`vsim repro bid` writes a reproduction summary (kind vsim-repro) the same page reads."""
    out = tmp_path / "bid"
    p = vsim("repro", "bid", "--quick", "--workloads", "grep,terasort", "--out", str(out))
    assert p.returncode == 0, p.stderr
    assert "| TeraSort |" in p.stdout and (out / "report.md").exists()
    page = check_in_browser(chromium, out, "reproduction", {"ranking-0", "ranking-1"}, "vsim-repro")
    assert "BID-HDD needs 28-52" in page.text
    rep = load(out)
    facts = dict(rep.facts)
    # No lab notions on a simulated reproduction: no kernel, filesystems or cells.
    assert "kernel" not in facts and "cells" not in facts and facts["trace scale"] == "0.25"
    assert not rep.problems
    assert {t.title.split(" (")[0] for t in rep.tables} >= {"Verdicts: the paper's claims on our figures"}


@needs_browser
def test_breakdowns_of_the_hints_reproduction_in_chromium(tmp_path: Path, chromium: browser.Browser | None) -> None:
    """`vsim repro hints` draws each figure's constituents as stacked bars with the seed's lines."""
    out = tmp_path / "hints"
    p = vsim("repro", "hints", "--quick", "--out", str(out))
    assert p.returncode == 0, p.stderr
    check_in_browser(chromium, out, "reproduction", {f"breakdown-{i}" for i in range(4)}, "vsim-repro-hints")
    rep = load(out)
    assert not rep.problems
    b = rep.breakdowns[0]
    assert b.parts[0] == "chunk reads" and len(b.lines) == 2
    assert all(len(v) == len(b.parts) for v in b.values)


def test_vlab_report_rebuilds_from_a_copy(tmp_path: Path) -> None:
    """Old results re-plotted: the folder alone is enough."""
    folder = tmp_path / "a"
    make_lab(folder, ["none", "veloces"], 1)
    copy = tmp_path / "b"
    shutil.copytree(folder, copy)
    p = subprocess.run([str(REPO / "vlab"), "report", str(copy)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert (copy / "report.html").stat().st_size > 20_000
    assert f"vlab report: wrote {copy / 'report.html'} (vlab compare" in p.stderr


def test_runs_are_kept_in_order(tmp_path: Path) -> None:
    folder = tmp_path / "o"
    make_lab(folder, ["kyber", "none", "veloces"], 2)
    rep = load(folder)
    assert rep.labels == ["kyber", "none", "veloces"] and rep.baseline == "kyber"
    assert sorted((r.label, r.rep) for r in rep.runs) == sorted(
        (s, k) for s in ("kyber", "none", "veloces") for k in (1, 2)
    )
    assert isinstance(rep.runs[0], Run)


@needs_browser
def test_trace_report_in_chromium(tmp_path: Path, chromium: browser.Browser | None) -> None:
    """`vlab trace`'s answers: tables that match queries.json, the stacked bars by file, process and
    size, and the hottest file's offsets over time; no scheduler comparison sections."""
    from vlab import etrace
    from vlab.etrace import query

    out = tmp_path / "trace"
    out.mkdir()
    etrace.load(etrace.parse(Path(__file__).parent / "data" / "etrace-6.1-three-files.txt"), out / "trace.db")
    query.write_answers(out / "trace.db", out / query.ANSWERS)
    p = subprocess.run([str(REPO / "vlab"), "report", str(out)], capture_output=True, text=True, check=False)
    assert p.returncode == 0 and "(vlab trace," in p.stderr, p.stderr
    page = check_in_browser(
        chromium,
        out,
        "End-to-end trace",
        {"breakdown-0", "breakdown-1", "breakdown-2", "series-file_offset-write"},
        "vlab-trace",
    )
    assert not {p.id for p in page.plots} & {"ratios", "cdf-read", "bars-iops"}
    rep = load(out)
    assert not rep.problems and rep.labels == ["/large"]
    assert [t.title for t in rep.tables][:2] == [
        "Hot files by device bytes",
        "Fragmentation: each file's extents on the device",
    ]


@needs_browser
def test_sweep_report_in_chromium(tmp_path: Path, chromium: browser.Browser | None) -> None:
    """`vsim sweep` (here --serial: no Ray start): the failed points with their errors, the best
    points (numbers equal to summary.json) and per axis the objective's spread by value."""
    spec = tmp_path / "spec.toml"
    spec.write_text(
        'name = "t"\nobjective = "read.p99_ns"\n[base]\nruntime = "30ms"\n'
        '[base.device]\nmodel = "ssd"\npreset = "mlc_16g"\n'
        '[[base.job]]\nrw = "randrw"\nbs = "4k"\niodepth = 16\nnumjobs = 2\nsize = "1g"\n'
        '[set]\nscheduler = "veloces"\n[grid]\n"scheduler.read_expire" = [5, 500]\n'
        '"scheduler.fifo_batch" = [1, 16, 0]\n'
    )
    out = tmp_path / "sweep"
    p = vsim("sweep", str(spec), "--out", str(out), "--serial", "--quiet")
    # Two points (fifo_batch = 0) fail: the exit status says so, the rest are in the report.
    assert p.returncode == 3, p.stderr
    assert "6 points: 6 run (4 ok, 2 failed)" in p.stdout
    page = check_in_browser(chromium, out, "Sweep t", {"ranking-0", "ranking-1"}, "vsim-sweep")
    assert "fifo_batch" in page.text and "2 of 6 points failed" in page.text
    rep = load(out)
    assert [t.title for t in rep.tables] == ["Failed points", "The best 4 points by read.p99_ns"]
    assert [r.title for r in rep.rankings] == ["read.p99_ns by scheduler.read_expire",
                                               "read.p99_ns by scheduler.fifo_batch"]  # fmt: skip


def test_a_sweep_whose_every_point_failed_is_reported_complete(tmp_path: Path) -> None:
    """Every point failed: the report shows their errors and says so; it is not "incomplete"
    (which made `vsim sweep` say no report was written)."""
    rows = [{"key": f"k{i}", "values": {"scheduler.fifo_batch": 0, "seed": i}, "status": "failed",
             "error": "ConfigError: fifo_batch = 0 is out of range"} for i in (1, 2)]  # fmt: skip
    doc = {"kind": "vsim-sweep", "vsim": "0.1.0", "name": "allfail", "spec": "s.toml",
           "axes": {"scheduler.fifo_batch": [0], "seed": [1, 2]}, "objective": "read.p99_ns", "minimize": True,
           "run": {"mode": "serial", "ran": 2, "points": 2, "wall_s": 0.1}, "rows": rows, "settings": None}  # fmt: skip
    (tmp_path / "summary.json").write_text(json.dumps(doc))
    rep = load(tmp_path)
    assert not rep.problems, rep.problems
    assert any("every point failed" in n for n in rep.notes)
    assert rep.tables[0].title == "Failed points" and "out of range" in rep.tables[0].rows[0][-1].text
