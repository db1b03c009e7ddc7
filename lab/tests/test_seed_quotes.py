"""Every quotation the docs attribute to a seed paper is in that seed's text.

The rule, so that a reader can tell from the page which quotations are checked:

* Pages: README.md and every docs/**/*.md. Fenced code blocks and code spans are skipped (code,
  commands, options and messages belong there).
* A quotation is text between straight double quotes "..." or curly ones within one *unit*: a
  paragraph, a list item with its continuation lines, a table row, a heading.
* It is attributed to a seed when
  - its unit lies in a seed's section: under a heading that names one seed ("## Seed 000:
    ..."), or anywhere on a page about one seed (PAGE_SEED); or
  - its unit names a seed outside its quotations: "seed 000" ... "seed 004" ("seeds 003 and
    004"), "the seed", "the paper", "the/its authors", or a numbered part of a paper ("Table
    2", "Fig. 8", "Algorithm 1", "Eq. 3"); a table row also by its column's header ("the
    paper").
* Which seed: the nearest one named before the quotation in its unit, else the first after it,
  else its column header's, else its section's. A quotation attributed to a seed with no seed
  to tell fails: the page must name it.
* Not the seed's words, though beside it: a quotation of one of our own titles (a heading, a
  bold paragraph lead or a table's column head, in any Markdown file of the repository: a
  cross-reference such as "Measured"), a value a check compares (== "holds", in
  docs/claims.md), and the words in OURS, each with its reason.

A checked quotation must occur in its seed's text once both are normalised: case, whitespace,
quotation marks and apostrophes (straight or curly), dashes, Markdown emphasis, the dollars of
inline math ($k$) and hyphens (a word hyphenated at a line break matches it whole). An ellipsis
("a ... b", "a … b") matches its pieces in that order. On failure each quotation is printed with
its page and line and the seed's file that was searched."""

from __future__ import annotations

import itertools
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import REPO

SEEDS = REPO.parent / "shared" / "seeds"
SEED_FILES = {
    "000": "veloces-ssd-io-scheduler.txt",
    "001": "fs-and-scheduler-combination-for-ssd.txt",
    "002": "kernel-mechanisms-hints-and-tracing.txt",
    "003": "qos-flash-hybrid-store.txt",
    "004": "bid-bulk-io-dispatch.txt",
}
# Pages about one seed, whose headings need not name it (each page's first paragraph does).
PAGE_SEED = {
    "docs/sim-bid.md": "004",
    "docs/sim-qos.md": "003",
    "docs/sim-hints.md": "002",
    "docs/sim-table1.md": "004",
    "docs/notebooks/sim-bid-measurements.md": "004",
}
# Quotations beside a seed that are our words, and why. The verdicts of the one verdict rule
# (docs/notebooks/reproductions.md, "How a verdict is decided") are quoted as the reports print
# them, beside the seed's claim they grade.
VERDICT = "a verdict the reports print"
OURS = {
    "holds": VERDICT,
    "does not hold": VERDICT,
    "did not hold": VERDICT,
    "partly": VERDICT,
    "inconclusive": VERDICT,
    "not judged": VERDICT,
    "provisional": VERDICT,
    "holds, provisional": VERDICT,
}

FENCE = re.compile(r"^[ \t]*(```|~~~).*?^[ \t]*\1[ \t]*$", re.M | re.S)
CODE_SPAN = re.compile(r"`[^`\n]*(?:\n(?![ \t]*\n)[^`\n]*)*`")  # may cross a line, not a paragraph
QUOTE = re.compile(r'"([^"]*)"|“([^”]*)”')
ELLIPSIS = re.compile(r"\[?(?:\.\.\.|…)\]?")
HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t]*#*[ \t]*$")
BOLD_LEAD = re.compile(r"^[ \t]*(?:[-*+][ \t]+|\d+\.[ \t]+)?\*\*(.+?)\*\*", re.S)
COMPARED = re.compile(r"(?:==|!=|\bcontains)[ \t]*$")  # a value a check compares (docs/claims.md)
ITEM = re.compile(r"^[ \t]*(?:[-*+]|\d+\.)[ \t]+\S")
ROW = re.compile(r"^[ \t]*\|")
RULE = re.compile(r"^[ \t]*\|[ \t:|-]+$")  # a table's header rule
SEED_NAMED = re.compile(r"\bseeds?\s+(00[0-4](?:(?:,\s*|\s+and\s+|\s*/\s*)00[0-4])*)", re.I)
SEED_NUMBER = re.compile(r"00[0-4]")
SEED_IMPLIED = re.compile(
    r"\b(?:the|its)\s+(?:seed|paper)\b(?!s)|\b(?:the|its)\s+authors\b"
    r"|\b(?:Table|Tables|Fig\.|Figs\.|Figure|Figures|Algorithm|Eq\.)\s*\d",
    re.I,
)


@dataclass(frozen=True)
class Quote:
    page: str  # relative to the repository
    line: int
    text: str
    seed: str | None  # None: attributed to a seed, but the page does not say which


def normalise(text: str) -> str:
    """Lower case; no quotation marks or apostrophes, straight or curly (a quotation inside a
    quotation); dashes made hyphens; no Markdown emphasis or inline-math dollars; a word broken
    at a line break by a hyphen joined, and every hyphen dropped; whitespace collapsed."""
    t = re.sub(r"[\"'\u2018\u2019\u201c\u201d*$]", "", text.lower())
    t = re.sub(r"[\u2010-\u2015\u2212]", "-", t)
    t = re.sub(r"-[ \t]*\n\s*", "", t).replace("-", "")
    return re.sub(r"\s+", " ", t).strip()


def occurs(quotation: str, seed_text: str) -> bool:
    """The quotation is in the (normalised) seed text; an ellipsis's pieces in order."""
    at = 0
    for piece in ELLIPSIS.split(quotation):
        p = normalise(piece)
        if not p:
            continue
        found = seed_text.find(p, at)
        if found < 0:
            return False
        at = found + len(p)
    return True


def blank(text: str) -> str:
    """The text with code blocks and spans made spaces, newlines kept: lines keep their numbers."""

    def spaces(m: re.Match[str]) -> str:
        return re.sub(r"[^\n]", " ", m.group(0))

    return CODE_SPAN.sub(spaces, FENCE.sub(spaces, text))


def units(lines: list[str]) -> list[tuple[int, int]]:
    """Each paragraph, list item (with its continuation lines), table row and heading of a page,
    as (first line, end line) indices."""
    out: list[tuple[int, int]] = []
    start: int | None = None
    for i, line in enumerate(lines):
        new = not line.strip() or ITEM.match(line) or ROW.match(line) or HEADING.match(line)
        if new and start is not None:
            out.append((start, i))
            start = None
        if line.strip():
            if start is None:
                start = i
            if ROW.match(line) or HEADING.match(line):
                out.append((start, i + 1))
                start = None
    if start is not None:
        out.append((start, len(lines)))
    return out


def own_titles() -> set[str]:
    """Our headings, bold paragraph leads and tables' column heads, in any Markdown file of the
    repository (a quotation of one is a cross-reference)."""
    titles: set[str] = set()
    for page in REPO.rglob("*.md"):
        rel = page.relative_to(REPO).parts
        if rel[0] in {"build", "results", "archive"} or any(p.startswith(".") for p in rel):
            continue
        text = blank(page.read_text(errors="replace"))
        lines = text.splitlines()
        for i, line in enumerate(lines):
            m = HEADING.match(line)
            if m:
                titles.add(collapse(m.group(2)))
            if ROW.match(line) and i + 1 < len(lines) and RULE.match(lines[i + 1]):
                titles.update(collapse(line[a + 1 : b]) for a, b in cells(line))
        for para in re.split(r"\n[ \t]*\n", text):
            m = BOLD_LEAD.match(para)
            if m:
                titles.add(collapse(m.group(1)))
    return titles


def collapse(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().strip(".:").lower()


def cross_reference(quotation: str, titles: set[str]) -> bool:
    """The quotation names one of our titles: whole, or its start up to a word's end (the rest
    left out or marked by an ellipsis)."""
    q = collapse(ELLIPSIS.sub("", quotation))
    return bool(q) and any(t == q or (t.startswith(q) and not t[len(q)].isalnum()) for t in titles)


def outside_quotes(text: str) -> str:
    """The text with each quotation made spaces (a seed named inside one attributes nothing)."""
    return QUOTE.sub(lambda m: " " * len(m.group(0)), text)


def seeds_named(text: str) -> list[tuple[int, str]]:
    """(offset, seed) for each seed the text names outside its quotations."""
    return [(m.start(), n) for m in SEED_NAMED.finditer(outside_quotes(text)) for n in SEED_NUMBER.findall(m.group(1))]


def cells(row: str) -> list[tuple[int, int]]:
    """The (start, end) offsets of a table row's cells."""
    bars = [i for i, c in enumerate(row) if c == "|" and (i == 0 or row[i - 1] != "\\")]
    return list(itertools.pairwise(bars))


def column(row: str, at: int) -> int:
    """The index of the cell of a table row that holds offset `at`."""
    return next((i for i, (a, b) in enumerate(cells(row)) if a <= at < b), -1)


def quotations(rel: str, text: str, titles: set[str]) -> list[Quote]:
    """The quotations of a page (its path relative to the repository, its text) attributed to
    a seed, by the rule in this module's docstring."""
    lines = blank(text).split("\n")
    out: list[Quote] = []
    sections: list[tuple[int, str | None]] = []  # the heading stack: (level, seed)
    header = ""  # the current table's header row
    for first, end in units(lines):
        unit = "\n".join(lines[first:end])
        heading = HEADING.match(lines[first])
        if heading:
            level = len(heading.group(1))
            while sections and sections[-1][0] >= level:
                sections.pop()
            named = seeds_named(heading.group(2))
            sections.append((level, named[0][1] if len(named) == 1 else None))
            continue
        row = bool(ROW.match(lines[first]))
        if row and (first == 0 or not ROW.match(lines[first - 1])):
            header = unit
        section = next((s for _, s in reversed(sections) if s), PAGE_SEED.get(rel))
        implied = [(m.start(), section) for m in SEED_IMPLIED.finditer(outside_quotes(unit))]
        markers = sorted(seeds_named(unit) + implied, key=lambda marker: marker[0])
        for m in QUOTE.finditer(unit):
            q = m.group(1) if m.group(1) is not None else m.group(2)
            head = ""
            if row:  # the header of the quotation's column
                spans = cells(header)
                i = column(unit, m.start())
                head = outside_quotes(header[spans[i][0] : spans[i][1]]) if 0 <= i < len(spans) else ""
            by_head = [s for _, s in seeds_named(head)] + ([section] if SEED_IMPLIED.search(head) else [])
            if not (section or markers or by_head):
                continue
            if collapse(q) in OURS or cross_reference(q, titles) or COMPARED.search(unit[: m.start()]):
                continue
            before = [s for at, s in markers if at < m.start()]
            after = [s for at, s in markers if at > m.start()]
            seed = (before[-1:] or after[:1] or by_head[:1] or [section])[0]
            line = first + 1 + unit.count("\n", 0, m.start())
            out.append(Quote(rel, line, q, seed))
    return out


def pages() -> list[Path]:
    return [REPO / "README.md", *sorted(p for p in (REPO / "docs").rglob("*.md") if p.is_file())]


def seed_texts() -> dict[str, str]:
    return {s: normalise((SEEDS / f).read_text()) for s, f in SEED_FILES.items()}


needs_seeds = pytest.mark.skipif(not SEEDS.is_dir(), reason=f"the seeds' text is not at {SEEDS}")


@needs_seeds
def test_every_quotation_attributed_to_a_seed_is_in_its_text() -> None:
    texts = seed_texts()
    titles = own_titles()
    quotes = [q for page in pages() for q in quotations(str(page.relative_to(REPO)), page.read_text(), titles)]
    bad = []
    for q in quotes:
        flat = re.sub(r"\s+", " ", q.text)
        if q.seed is None:
            bad.append(f'{q.page}:{q.line}: "{flat}": attributed to a seed, but which one? (name it)')
        elif not occurs(q.text, texts[q.seed]):
            bad.append(f'{q.page}:{q.line}: "{flat}" is not in seed {q.seed} ({SEEDS / SEED_FILES[q.seed]})')
    per_seed = Counter(q.seed for q in quotes)
    print(f"{len(quotes)} quotations checked: " + ", ".join(f"seed {s} {per_seed[s]}" for s in sorted(SEED_FILES)))
    assert not bad, "quotations attributed to a seed that are not its words:\n" + "\n".join(bad)
    assert len(quotes) >= 20, "the rule finds almost nothing: is it still reading the pages?"


@needs_seeds
def test_the_matcher_finds_a_seed_quotation_and_refuses_an_altered_one() -> None:
    texts = seed_texts()
    # seed 001's first conclusion, broken across two of our lines
    good = "SSD performance and energy consumption largely depend on the combination of a file\n  system"
    assert occurs(good, texts["001"])
    assert not occurs(good.replace("largely", "wholly"), texts["001"])
    assert not occurs(good, texts["000"])  # in the seed it names, not in another
    # an ellipsis matches its pieces in order, and only in order
    assert occurs("SSDs based on NILFS2 ... offer high AI under fileserver", texts["001"])
    assert occurs("SSDs based on NILFS2 … offer high AI under fileserver", texts["001"])
    assert not occurs("offer high AI under fileserver ... SSDs based on NILFS2", texts["001"])
    # case and quotation marks: seed 004 writes “hot data” in curly quotes
    assert occurs('MIGRATING "HOT DATA" FROM SLOWER HDD', texts["004"])
    assert not occurs('migrating "cold data" from slower HDD', texts["004"])
    # an en dash and inline math in seed 004: "28\u201352% lesser time", "$k$ most recent"
    assert occurs("28-52% lesser time", texts["004"])
    assert occurs("k most recent time difference values", texts["004"])
    assert not occurs("the k most recent time differences", texts["004"])
    # a word hyphenated at a line break is the word
    assert normalise("compu-\n  tation") == normalise("computation")
    # the whole chain: a misquotation on a seed's page is found, attributed and refused
    misquoted = quotations("docs/sim-qos.md", 'RBFQ has "a local phase which ensures fairness".', set())
    assert [(q.seed, occurs(q.text, texts["003"])) for q in misquoted] == [("003", False)]


def test_the_rule_attributes_by_section_name_and_column() -> None:
    page = "\n".join(
        [
            "# Notes",  # 1
            "",
            'Our "busy share" names nothing of a seed.',
            "",
            "| seed 004's words | ours |",  # 5
            "|---|---|",
            '| "sorted according to their LBA values" | "a FIFO" |',
            "",
            'The paper: "no seed named".',
            "",  # 10
            "## Seed 003: fair queueing",
            "",
            'The paper says "a local phase"; seed 001 says "largely depend".',
            "",
            '- "Measured" names a heading of ours, not the seed\'s words.',  # 15
            '- seed 002 writes "four days", and "partly" is a verdict.',
            "",
            "### Measured",
            "",
            'Our "own words", `"in code"`, `"in a span',  # 20
            'over two lines"`.',
            "",
            "```",
            'the paper: "in a block"',
            "```",
        ]
    )
    got = [(q.line, q.text, q.seed) for q in quotations("docs/x.md", page, {"measured"})]
    assert got == [
        (7, "sorted according to their LBA values", "004"),
        (9, "no seed named", None),
        (13, "a local phase", "003"),
        (13, "largely depend", "001"),
        (16, "four days", "002"),
        (20, "own words", "003"),
    ], got
    assert [q.seed for q in quotations("docs/sim-bid.md", 'Its authors: "x".', set())] == ["004"]
    assert quotations("docs/lab.md", 'A check: verdict == "holds", seed 001.', set()) == []
