"""HTML reports of results: `vlab report DIR` (and every comparison, which writes one).

One self-contained page per results folder — the tables, latency CDFs and percentile
curves, throughput with its spread, time series, ratios to the baseline, and what made
it — the same layout and colours whether the lab, the simulator or a reproduction
produced the data. See docs/reports.md.
"""

from __future__ import annotations

import argparse
import sys
import traceback
from pathlib import Path

from vlab.report.kinds import KINDS
from vlab.report.model import Report

REPORT = "report.html"


def load(folder: Path) -> Report:
    """The report of `folder`: its kind's, or — for a folder of no kind the report knows,
    or one whose reader failed — a report naming what is there and what is missing."""
    if not folder.is_dir():
        rep = Report("unknown", "No results", str(folder))
        rep.problem(f"{folder}: not a directory")
        return rep
    for kind, detect, read in KINDS:
        if detect(folder):
            try:
                return read(folder)
            except Exception as e:  # a reader's bug must not cost the user the report
                rep = Report(kind, "Unreadable results", str(folder))
                rep.problem(f"the {kind} reader failed: {type(e).__name__}: {e}")
                rep.notes.append("".join(traceback.format_exception(e))[-1500:])
                return rep
    rep = Report("unknown", "No results recognised", str(folder))
    present = sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())[:50]
    rep.problem(
        "no results of a known kind: expected summary.json of `vlab compare`, `vsim compare --out`, "
        "`vsim run --report` or `vsim validate --report` (or their raw files)"
    )
    rep.files = present
    return rep


def build(folder: Path, out: Path | None = None) -> tuple[Path, Report]:
    """Write the report of `folder` (to `out`, default folder/report.html)."""
    from vlab.report.page import render  # matplotlib and jinja2: only where a page is written, not for load()

    rep = load(folder)
    target = out or folder / REPORT
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + ".tmp")
    tmp.write_text(render(rep))
    tmp.replace(target)
    return target, rep


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="vlab report",
        description="Write (or rebuild) the HTML report of a results folder: vlab compare, vsim compare "
        "--out, vsim run --report or vsim validate --report. Missing or corrupt files are named in the "
        "report; what exists is still shown.",
    )
    ap.add_argument("folder", type=Path, metavar="DIR")
    ap.add_argument("--out", type=Path, help=f"where to write it (default DIR/{REPORT})")
    args = ap.parse_args(argv)
    if not args.folder.is_dir():
        print(f"vlab report: {args.folder}: not a directory of results", file=sys.stderr)
        return 2
    target, rep = build(args.folder, args.out)
    size = target.stat().st_size
    print(f"vlab report: wrote {target} ({rep.kind}, {size / 1e6:.2f} MB)", file=sys.stderr)
    for p in rep.problems:
        print(f"vlab report: incomplete: {p}", file=sys.stderr)
    return 1 if rep.problems else 0


if __name__ == "__main__":
    sys.exit(main())
