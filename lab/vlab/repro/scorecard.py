"""Each seed's scorecard from its stored data, in one command: how many of its verdicts hold,
are partly met, do not hold, are inconclusive, are not judged and are not reproducible from the
description, under the one verdict rule (sim/src/verdict.rs; docs/notebooks/reproductions.md,
"How a verdict is decided").

    python -m vlab.repro.scorecard              # from lab/: the table, and each verdict under it
    python -m vlab.repro.scorecard --counts     # the table only
    make scorecards                             # the same, from the repository's root

Nothing is run. A lab seed's verdicts are made again by this checkout's code from the cells'
stored figures: its stored folder is copied to a scratch folder and judged there (what `vlab
repro SEED --table` does; the stored folder is not touched). A simulated seed's verdicts are
read from its stored summary, which `vsim repro` wrote at the commit its manifest names: they are
only current where that run graded them over the estimates (`graded_over_estimates`; a full
run does), and the card says so where it did not. Each card names its data, the commit the data
ran at and whether that commit was clean: cells measured from a dirty tree are evidence of
nothing (results/README.md), and the card marks them "unverified".
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import io
import json
import shutil
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from vsim import verdict

from vlab import paths

GRADES: tuple[str, ...] = tuple(verdict.GRADES)


@dataclasses.dataclass(frozen=True)
class Source:
    """Where a seed's stored data is: `paths` are tried in order (the first that exists), from
    the repository's root; `lab` names the `vlab repro` seed whose code judges its cells (None:
    a `vsim repro` summary, read as it is)."""

    seed: str
    what: str
    paths: tuple[str, ...]
    lab: str | None = None


# One line per seed's reproduction (a new one: one line).
SOURCES: tuple[Source, ...] = (
    Source(
        "seed 000",
        "veloces against noop, deadline and CFQ (lab)",
        ("results/repro/seed000-full", "archive/unverified-results/seed000-full"),
        "seed000",
    ),
    Source(
        "seed 001",
        "filesystem x scheduler pairs by AI (lab)",
        ("results/repro/seed001-full", "archive/unverified-results/seed001-full"),
        "seed001",
    ),
    Source("seed 002 §2", "a mapping-cache SSD and host hints (vsim)", ("results/repro/seed002-sim",)),
    Source("seed 003", "RBFQ and the hybrid store (vsim)", ("results/repro/seed003-sim",)),
    Source("seed 004", "BID-HDD and BID-Hybrid (vsim)", ("results/repro/seed004-sim",)),
)


@dataclasses.dataclass
class Card:
    """One seed's scorecard."""

    source: Source
    folder: Path | None
    verdicts: list[dict[str, Any]]
    commit: str
    clean: bool
    notes: list[str]

    def counts(self) -> dict[str, int]:
        c = Counter(str(v.get("verdict")) for v in self.verdicts)
        return {g: c.get(g, 0) for g in GRADES}


def _manifest(folder: Path) -> dict[str, Any]:
    try:
        m = json.loads((folder / "manifest.json").read_text())
    except (OSError, ValueError):
        return {}
    return m if isinstance(m, dict) else {}


def _run_commit(summary: dict[str, Any]) -> str:
    """The commit a run recorded in its own summary (meta.versions.veloces), where a manifest
    does not name one."""
    return str(((summary.get("meta") or {}).get("versions") or {}).get("veloces") or "")


def _dirty_cells(folder: Path, manifest: dict[str, Any]) -> int:
    """How many of a lab run's summaries record a -dirty commit: the manifest's list, else
    each stored summary's own (meta.versions.veloces)."""
    commits = manifest.get("summaries_commits") or {}
    if not commits:
        for f in sorted(folder.glob("cells/**/summary.json")):
            try:
                commits[str(f)] = _run_commit(json.loads(f.read_text()))
            except (OSError, ValueError):
                continue
    return sum(1 for c in commits.values() if str(c).endswith("-dirty"))


def _judge_lab(seed_name: str, folder: Path) -> dict[str, Any]:
    """The seed's verdicts made again from a copy of `folder` (the summary `vlab repro SEED
    --table` writes, without its page or manifest), the cells it leaves out kept off the
    terminal; the stored folder is not touched."""
    from vlab.repro import SEEDS
    from vlab.repro.run import judge_again

    seed = SEEDS[seed_name]
    with tempfile.TemporaryDirectory(prefix=f"scorecard-{seed_name}-") as tmp:
        copy = Path(tmp) / folder.name
        shutil.copytree(folder, copy)
        with contextlib.redirect_stderr(io.StringIO()):
            return judge_again(seed, seed.plan(False), copy)


def card(source: Source, root: Path) -> Card:
    """One seed's scorecard from the first of its stored folders that exists."""
    folder = next((root / p for p in source.paths if (root / p / "summary.json").is_file()), None)
    if folder is None:
        return Card(source, None, [], "", False, [f"no stored data ({', '.join(source.paths)})"])
    manifest = _manifest(folder)
    notes: list[str] = []
    stored: dict[str, Any] = json.loads((folder / "summary.json").read_text())
    if source.lab is not None:
        summary = _judge_lab(source.lab, folder)
        dirty = _dirty_cells(folder, manifest)
        if dirty:
            notes.append(f"unverified: {dirty} of its cells' summaries record a dirty tree")
        notes.append("judged again by this checkout's code from the stored cells")
    else:
        summary = stored
        if summary.get("graded_over_estimates") is not True:
            notes.append("graded at the estimates' defaults only (a run before grading over the estimates)")
        variants = summary.get("variants") or []
        if variants:
            notes.append(f"{len(variants)} grades of a sensitivity variant shown apart, not counted")
    commit = str(manifest.get("commit") or _run_commit(stored))
    clean = manifest.get("dirty") is False and not any(n.startswith("unverified") for n in notes)
    if not clean and not any(n.startswith("unverified") for n in notes):
        notes.append("unverified: its manifest does not record a clean commit")
    return Card(source, folder, list(summary.get("verdicts") or []), commit, clean, notes)


def table(cards: list[Card], root: Path) -> str:
    """The scorecards as one Markdown table."""
    head = ["seed", "data (commit)", *GRADES, "verdicts", "notes"]
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for c in cards:
        where = "-" if c.folder is None else f"{c.folder.relative_to(root)} ({c.commit[:7] or '?'})"
        counts = c.counts()
        rows.append("| " + " | ".join([f"{c.source.seed}: {c.source.what}", where,
                                        *(str(counts[g]) for g in GRADES), str(len(c.verdicts)),
                                        "; ".join(c.notes) or "-"]) + " |")  # fmt: skip
    return "\n".join(rows) + "\n"


def listing(cards: list[Card]) -> str:
    """Each seed's verdicts, one line each."""
    out = []
    for c in cards:
        out.append(f"\n## {c.source.seed}: {c.source.what}\n")
        for v in c.verdicts:
            out.append(f"- **{v.get('verdict')}** ({v.get('where')}): {v.get('claim')}")
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m vlab.repro.scorecard", description=__doc__.split("\n\n")[0])
    ap.add_argument("--counts", action="store_true", help="the table only, not each verdict")
    ap.add_argument("--json", type=Path, metavar="FILE", help="also write the cards as JSON to FILE")
    args = ap.parse_args(argv)
    root = paths.repo_root()
    try:
        cards = [card(s, root) for s in SOURCES]
    except (RuntimeError, OSError, ValueError) as e:
        print(f"scorecard: {e}", file=sys.stderr)
        return 1
    print(table(cards, root), end="")
    if not args.counts:
        print(listing(cards), end="")
    if args.json:
        args.json.write_text(json.dumps([{"seed": c.source.seed, "data": str(c.folder), "commit": c.commit,
                                          "clean": c.clean, "counts": c.counts(), "notes": c.notes}
                                         for c in cards], indent=1) + "\n")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
