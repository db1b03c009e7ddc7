"""veloces's tunables are declared once (kernel/veloces-tunables.h): the module and the
simulator are built from it, and the lab reads it through the simulator. These tests hold
the copies that remain for people — docs/kernel.md's table — and the lab's reader to it."""

import re

from conftest import REPO

from vlab.checks.conformance import MODULE
from vlab.schedulers import MODEL_ONLY, declared_tunables


def header_rows() -> dict[str, tuple[int, int, int]]:
    """(default, min, max) per VEL_TUNABLE line of the header, read directly (no build)."""
    text = (REPO / "kernel" / "veloces-tunables.h").read_text()
    rows = re.findall(r"^VEL_TUNABLE\((\w+), (\d+), (\d+), (\d+), [01], ", text, re.M)
    return {n: (int(d), int(lo), int(hi)) for n, d, lo, hi in rows}


def test_the_simulator_declares_the_modules_table_in_its_order() -> None:
    declared = declared_tunables(MODULE)
    assert list(declared) == list(header_rows())
    assert {k: (t.default, t.min, t.max) for k, t in declared.items()} == header_rows()
    assert MODEL_ONLY[MODULE] == {"hz"}


def test_the_docs_table_has_every_tunable_with_its_range_and_default() -> None:
    text = (REPO / "docs" / "kernel.md").read_text()
    section = text[text.index("## Tunables (`/sys/block/<dev>/queue/iosched/`)") :]
    section = section[: section.index("\n\n", section.index("|---"))]
    rows = re.findall(r"^\| `(\w+)` \| ([^|]+) \| ([^|]+) \|", section, re.M)
    assert [r[0] for r in rows] == list(header_rows())
    for name, default, accepted in rows:
        d, lo, hi = header_rows()[name]
        if lo == 0 and hi == 1:
            assert accepted.strip() == "0, 1", name
        else:
            assert re.match(rf"{lo}\u2013{hi}\b", accepted.strip()), (name, accepted)
        if default.strip().isdigit() or re.match(r"\d+ \(", default.strip()):
            assert int(default.split()[0]) == d, (name, default)
