"""A report as a reader's browser shows it: headless Chromium (Debian's `chromium` and
`chromium-driver`, driven by selenium) loads the page, and this returns its console
messages, a screenshot, every plot's pixels and every table cell that names its JSON.

Used by the report tests (lab/tests/test_report.py) and `make report-screenshots`.
"""

from __future__ import annotations

import io
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

CHROMIUM = ("/usr/bin/chromium", "/usr/bin/chromium-browser")
DRIVER = "/usr/bin/chromedriver"


class BrowserMissing(Exception):
    pass


@dataclass
class PlotPixels:
    id: str
    width: int
    height: int
    std: float  # standard deviation of the grey levels
    ink: float  # fraction of pixels not (near) white
    colour: int  # saturated (coloured) pixels: the data, not the axes
    nodata: bool


@dataclass
class Page:
    console: list[dict[str, Any]]
    screenshot: bytes  # PNG of the first screen
    plots: list[PlotPixels] = field(default_factory=list)
    cells: list[dict[str, str]] = field(default_factory=list)
    text: str = ""
    height: int = 0


def find() -> tuple[str, str]:
    browser = next((b for b in CHROMIUM if Path(b).exists()), None) or shutil.which("chromium")
    if not browser or not Path(DRIVER).exists():
        raise BrowserMissing(
            "headless Chromium needs Debian's chromium and chromium-driver (`make deps` installs them)"
        )
    return browser, DRIVER


def pixels(png: bytes, pid: str = "", nodata: bool = False) -> PlotPixels:
    img = np.asarray(Image.open(io.BytesIO(png)).convert("RGB"), dtype=np.float64)
    grey = img.mean(axis=2)
    sat = img.max(axis=2) - img.min(axis=2)
    return PlotPixels(
        pid,
        img.shape[1],
        img.shape[0],
        float(grey.std()),
        float((grey < 245).mean()),
        int((sat > 60).sum()),
        nodata,
    )


class Browser:
    """One headless Chromium, started once and used for any number of pages (the report
    tests share one through a session fixture; starting Chromium costs more than loading a
    page). `with Browser() as b: page = b.load(html)`; close() ends it."""

    def __init__(self) -> None:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service

        binary, driver_path = find()
        os.environ.setdefault("SE_OFFLINE", "true")  # never let selenium fetch a driver
        opts = webdriver.ChromeOptions()
        opts.binary_location = binary
        for a in (
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--hide-scrollbars",
            "--force-device-scale-factor=1",
        ):
            opts.add_argument(a)
        opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        self._drv: Any = webdriver.Chrome(service=Service(driver_path), options=opts)

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        if self._drv is not None:
            self._drv.quit()
            self._drv = None

    def load(self, html: Path, width: int = 1500, height: int = 1100, first_screen: Path | None = None) -> Page:
        from selenium.webdriver.common.by import By

        drv = self._drv
        if drv is None:
            raise BrowserMissing("this Browser was closed")
        drv.set_window_size(width, height)
        drv.get_log("browser")  # drop the previous page's messages: each Page has its own
        drv.get(html.resolve().as_uri())
        shot = drv.get_screenshot_as_png()
        if first_screen:
            first_screen.write_bytes(shot)
        page = Page(drv.get_log("browser"), shot)
        page.height = int(drv.execute_script("return document.body.scrollHeight"))
        for fig in drv.find_elements(By.CSS_SELECTOR, "figure.plot"):
            pid = fig.get_attribute("data-plot") or ""
            nodata = "nodata" in (fig.get_attribute("class") or "")
            drv.execute_script("arguments[0].scrollIntoView({block: 'center'})", fig)
            page.plots.append(pixels(fig.screenshot_as_png, pid, nodata))
        page.cells = drv.execute_script(
            "return Array.from(document.querySelectorAll('td[data-key], td[data-ratio-num]')).map(td => ({"
            "text: td.textContent.trim(), key: td.dataset.key || '', value: td.dataset.value || '',"
            "num: td.dataset.ratioNum || '', den: td.dataset.ratioDen || '', doc: td.dataset.doc || '',"
            "scale: td.dataset.scale || '1'}))"
        )
        page.text = drv.find_element(By.TAG_NAME, "body").text
        return page


def load(html: Path, width: int = 1500, height: int = 1100, first_screen: Path | None = None) -> Page:
    """One page in a Chromium of its own (started and ended here)."""
    with Browser() as b:
        return b.load(html, width, height, first_screen)


# A plot has rendered when its pixels vary and some are in colour (the data: axes, ticks
# and text are grey). An empty axes frame passes the first test and fails the second; one
# thin line across the plot (a step CDF of one scheduler) has hundreds of coloured pixels.
MIN_STD = 5.0
MIN_COLOUR = 100


def blank_plots(page: Page) -> list[str]:
    """Plots (not the 'no data' notes) that rendered blank or without data in colour."""
    return [
        f"{p.id}: std {p.std:.1f}, {p.colour} coloured pixels of {p.width}x{p.height}"
        for p in page.plots
        if not p.nodata and (p.std < MIN_STD or p.colour < MIN_COLOUR)
    ]


def console_errors(page: Page) -> list[str]:
    return [str(m.get("message")) for m in page.console if m.get("level") in ("SEVERE", "ERROR", "WARNING")]


def _resolve(doc: Any, pointer: str) -> Any:
    for part in pointer.split("/")[1:]:
        part = part.replace("~1", "/").replace("~0", "~")
        doc = doc[int(part)] if isinstance(doc, list) else doc[part]
    return doc


def _shown(text: str) -> tuple[float, float] | None:
    """The number a cell shows and half its last digit (the rounding it may carry)."""
    t = text.replace(",", "").strip()
    try:
        value = float(t)
    except ValueError:
        return None
    decimals = len(t.split(".")[1]) if "." in t else 0
    return value, 0.5 * 10.0**-decimals + 1e-12


def numbers_mismatched(page: Page, folder: Path) -> list[str]:
    """Cells whose number differs from the JSON they name (value, or text at its rounding)."""
    import json
    import math

    docs: dict[str, Any] = {}
    bad = []
    for c in page.cells:
        name = c["doc"]
        if name not in docs:
            docs[name] = json.loads((folder / name).read_text())
        doc = docs[name]
        scale = float(c["scale"] or 1)
        if c["key"]:
            want = _resolve(doc, c["key"])
        else:
            num, den = _resolve(doc, c["num"]), _resolve(doc, c["den"])
            want = float(num) / float(den)
        if not c["value"]:
            if str(want) != c["text"]:
                bad.append(f"{name}{c['key']}: shows {c['text']!r}, the JSON has {want!r}")
            continue
        got = float(c["value"])
        if not math.isclose(got, float(want), rel_tol=1e-9, abs_tol=1e-12):
            bad.append(f"{name}{c['key'] or c['num']}: data-value {got}, the JSON has {want}")
        shown = _shown(c["text"])
        if shown is None or abs(shown[0] - float(want) / scale) > shown[1]:
            bad.append(f"{name}{c['key'] or c['num']}: shows {c['text']!r}, the JSON has {want} (scale {scale:g})")
    return bad
