"""The documentation's shape, which a stranger relies on: docs/index.md lists every file under
docs/, the README stays short with the demo's table on its first screen, and no relative link in
the README or the docs points to a file or a heading that does not exist. Pure Python: no boot."""

import re
from pathlib import Path

from conftest import REPO

from vlab.experiments.demo import JOBS
from vlab.stats import format_overview

README = REPO / "README.md"
DOCS = REPO / "docs"
INDEX = DOCS / "index.md"
README_MAX_LINES = 150
DEMO_TABLE_WITHIN = 100

FENCE = re.compile(r"^(```|~~~).*?^\1[ \t]*$", re.M | re.S)
CODE_SPAN = re.compile(r"`[^`\n]*`")
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t]*#*[ \t]*$", re.M)


def prose(text: str) -> str:
    """The text without fenced code blocks and code spans, where brackets are not links."""
    return CODE_SPAN.sub("", FENCE.sub("", text))


def links(page: Path) -> list[str]:
    """The targets of the page's Markdown links and images, as written."""
    return LINK.findall(prose(page.read_text()))


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """Every anchor the page's headings give (a repeated heading's second gets `-1`, ...)."""
    seen: dict[str, int] = {}
    out = set()
    for heading in HEADING.findall(FENCE.sub("", page.read_text())):
        s = slug(heading)
        n = seen.get(s, 0)
        seen[s] = n + 1
        out.add(s if n == 0 else f"{s}-{n}")
    return out


def broken_links(page: Path) -> list[str]:
    """The page's relative links whose file, or whose heading in a Markdown file, is missing."""
    bad = []
    for target in links(page):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            bad.append(f"{target} (no such file)")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            bad.append(f"{target} (no such heading)")
    return bad


def docs_pages() -> list[Path]:
    return sorted(p for p in DOCS.rglob("*.md") if p.is_file())


def test_the_index_links_every_file_under_docs() -> None:
    linked = {(INDEX.parent / t.partition("#")[0]).resolve() for t in links(INDEX) if t.partition("#")[0]}
    files = [p for p in DOCS.rglob("*") if p.is_file() and p != INDEX and not p.name.startswith(".")]
    missing = sorted(str(p.relative_to(REPO)) for p in files if p.resolve() not in linked)
    assert not missing, f"docs/index.md does not link {missing}: add each with a one-line description"
    assert any(p.suffix == ".md" for p in files)


def test_the_readme_is_short() -> None:
    n = len(README.read_text().splitlines())
    assert n <= README_MAX_LINES, (
        f"README.md has {n} lines, more than {README_MAX_LINES}: results and their history belong in a dated "
        "notebook under docs/notebooks/ (docs/index.md)"
    )


def test_the_readme_shows_the_demos_table_on_its_first_screen() -> None:
    # The table `make demo` prints (build/demo/overview.md) opens with this header row.
    header, rule = format_overview({name: {} for name in JOBS}, "none").splitlines()[:2]
    lines = README.read_text().splitlines()
    assert header in lines, f"README.md has no table of the demo's (header {header!r})"
    at = lines.index(header)
    assert lines[at + 1] == rule
    assert at + 1 <= DEMO_TABLE_WITHIN, f"the demo's table starts at line {at + 1} of README.md, after line 100"
    rows = [line for line in lines[at + 2 :] if line.startswith("| ")]
    assert rows and rows[0].startswith("| none |")


def test_the_readme_and_the_index_link_only_what_exists() -> None:
    bad = {str(p.relative_to(REPO)): broken_links(p) for p in (README, INDEX)}
    assert not any(bad.values()), bad


def test_no_page_under_docs_links_what_does_not_exist() -> None:
    pages = [*docs_pages(), REPO / "conformance" / "README.md", REPO / "sim" / "README.md"]
    bad = {str(p.relative_to(REPO)): broken_links(p) for p in pages}
    assert not any(bad.values()), {k: v for k, v in bad.items() if v}


def test_the_checks_see_a_broken_link_and_a_missing_heading(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    (tmp_path / "other.md").write_text("# Other\n\n## A heading, with `code`\n")
    page.write_text(
        "# Page\n\n[ok](other.md#a-heading-with-code) [gone](missing.md) [no](other.md#nothing) "
        "[self](#page) `[not a link](nowhere.md)`\n\n```\n[nor this](nowhere.md)\n```\n"
    )
    assert broken_links(page) == ["missing.md (no such file)", "other.md#nothing (no such heading)"]
