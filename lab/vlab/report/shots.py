"""`make report-screenshots`: build the report of each results folder, check it in headless
Chromium as the tests do (console, rendered plots, numbers equal to the JSON) and keep a
screenshot of its first screen: `python -m vlab.report.shots --out DIR NAME=FOLDER...`."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from vlab.report import browser, build


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m vlab.report.shots", description=__doc__)
    ap.add_argument("--out", type=Path, required=True, help="directory for report-NAME.png")
    ap.add_argument("folders", nargs="+", metavar="NAME=FOLDER")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    failed = 0
    for item in args.folders:
        name, _, folder = item.partition("=")
        target, rep = build(Path(folder))
        t0 = time.monotonic()
        shot = args.out / f"report-{name}.png"
        page = browser.load(target, height=1900, first_screen=shot)
        took = time.monotonic() - t0
        bad = browser.console_errors(page) + browser.blank_plots(page) + browser.numbers_mismatched(page, Path(folder))
        drawn = sum(not p.nodata for p in page.plots)
        print(
            f"{name}: {target} {target.stat().st_size / 1e6:.2f} MB, {drawn} plots drawn, "
            f"{len(page.cells)} numbers checked, {took:.1f} s in Chromium -> {shot}"
            + (f"; PROBLEMS: {bad}" if bad else "")
            + (f"; incomplete inputs: {rep.problems}" if rep.problems else "")
        )
        failed += bool(bad)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
