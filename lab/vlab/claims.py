"""The claims table (issue 77): every claim the README and docs/ make about veloces, the
simulator's fidelity and the seeds, one row each in claims/claims.toml, with where it is made,
the command that makes its evidence, where the evidence is kept, the commit it ran at, what the
evidence must show (machine-checkable) and whether the claim is verified.

    python -m vlab.claims judge     # make claims: every row judged again from the stored files
    python -m vlab.claims render    # docs/claims.md from the table (--check: is it up to date?)

`judge` exits 1 naming each verified row whose evidence is missing, was recorded at another
commit than the row's (or from a dirty tree: its summary.json or manifest.json says so), or
does not show what the row expects; unverified rows are listed with their reason, and where
their evidence is stored, whether it shows what they expect (not an error either way). It reads
files only, and runs nothing (floor 1).

A row's checks (`expect`, each a table): `key` (a path into the evidence's JSON: names and
list indices joined by dots, `*` for every element; "": the file's whole text) or `count` (a glob under the evidence
folder: the number of files it matches), optionally `over` (a second key: the value is key /
over), then `op` and `value`: `==`, `!=`, `<`, `<=`, `>`, `>=`, `approx` (value [target,
tolerance]), `in` (value a list), `contains` (a text that holds the value), `tally` (value a
table: how many times each value occurs, for a `*` key), or `exists` (the evidence exists; no
key).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tomllib
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vlab import provenance
from vlab.paths import repo_root

TABLE = Path("claims") / "claims.toml"
PAGE = Path("docs") / "claims.md"
STATUSES = ("verified", "unverified")
REQUIRED = ("id", "claim", "where", "command", "evidence", "commit", "status")
OPS = ("==", "!=", "<", "<=", ">", ">=", "approx", "in", "contains", "tally", "exists")
# Where a verified row's evidence may not be: the unverified archive, and build/ (not kept).
NOT_EVIDENCE = ("archive/", "build/")


class ClaimsError(Exception):
    """The table cannot be read (TOML syntax, or not a list of rows)."""


@dataclass
class Row:
    id: str
    claim: str
    where: str
    command: str
    evidence: str
    commit: str
    status: str
    reason: str = ""
    expect: list[dict[str, Any]] = field(default_factory=list)
    # A re-judge (`vlab fidelity --table`): the commit of the lab run whose stored cells it
    # judged again at `commit`; their files record it, and only they may.
    rejudges: str = ""


@dataclass
class Verdict:
    """One row judged: `state` ok (a verified row that holds), error, or unverified."""

    row: str
    state: str
    detail: str


def load(table: Path) -> tuple[list[Row], list[Verdict]]:
    """The table's rows, and an error for each row that is malformed (it is then left out)."""
    try:
        doc = tomllib.loads(table.read_text())
    except (OSError, tomllib.TOMLDecodeError) as e:
        raise ClaimsError(f"{table}: {e}") from e
    raw = doc.get("claim")
    if not isinstance(raw, list):
        raise ClaimsError(f"{table}: no [[claim]] rows")
    rows: list[Row] = []
    bad: list[Verdict] = []
    seen: set[str] = set()
    for i, r in enumerate(raw):
        name = str(r.get("id") or f"row {i + 1}")
        problem = _malformed(r, seen)
        if problem:
            bad.append(Verdict(name, "error", problem))
            continue
        seen.add(r["id"])
        rows.append(
            Row(
                **{k: r[k] for k in REQUIRED},
                reason=r.get("reason", ""),
                expect=list(r.get("expect", [])),
                rejudges=r.get("rejudges", ""),
            )
        )
    return rows, bad


def _malformed(r: dict[str, Any], seen: set[str]) -> str:
    missing = [k for k in REQUIRED if not isinstance(r.get(k), str)]
    if missing:
        return f"missing or not text: {', '.join(missing)}"
    unknown = sorted(set(r) - {*REQUIRED, "reason", "expect", "rejudges"})
    if unknown:
        return f"unknown fields: {', '.join(unknown)}"
    if not isinstance(r.get("rejudges", ""), str):
        return "rejudges: the commit of the lab run judged again, as text"
    if r["id"] in seen:
        return "a second row with this id"
    if r["status"] not in STATUSES:
        return f"status {r['status']!r}: must be one of {', '.join(STATUSES)}"
    if r["status"] == "unverified" and not r.get("reason"):
        return "an unverified row says why (reason)"
    path = Path(r["evidence"])
    if not r["evidence"] or path.is_absolute() or ".." in path.parts:
        return f"evidence {r['evidence']!r}: a path from the repository's root"
    expect = r.get("expect", [])
    if not isinstance(expect, list) or not expect:
        return "expect: a list of checks (at least one)"
    for check in expect:
        if not isinstance(check, dict) or check.get("op") not in OPS:
            return f"expect: {check!r}: op must be one of {' '.join(OPS)}"
        if check["op"] != "exists" and ("key" in check) == ("count" in check):
            return f"expect: {check!r}: a key or a count, one of them"
        if check["op"] != "exists" and "value" not in check:
            return f"expect: {check!r}: no value"
    return ""


# --- the checks ----------------------------------------------------------------------------


def resolve(doc: Any, key: str) -> Any:
    """The value at `key` (names and list indices joined by dots; `*` is every element, and
    what follows applies to each); KeyError naming the part not found."""
    return _resolve(doc, key.split("."), [])


def _resolve(doc: Any, parts: list[str], done: list[str]) -> Any:
    if not parts:
        return doc
    part, rest = parts[0], parts[1:]
    if part == "*" and isinstance(doc, list | dict):
        items = doc if isinstance(doc, list) else list(doc.values())
        return [_resolve(x, rest, [*done, part]) for x in items]
    if isinstance(doc, dict) and part in doc:
        return _resolve(doc[part], rest, [*done, part])
    if isinstance(doc, list) and part.lstrip("-").isdigit() and -len(doc) <= int(part) < len(doc):
        return _resolve(doc[int(part)], rest, [*done, part])
    raise KeyError(".".join([*done, part]))


def describe(check: dict[str, Any]) -> str:
    """A check in words, as docs/claims.md shows it."""
    if check["op"] == "exists":
        return "exists"
    what = f"count({check['count']})" if "count" in check else check["key"] or "its text"
    if "over" in check:
        what += f" / {check['over']}"
    value = check["value"]
    if check["op"] == "approx":
        return f"{what} = {value[0]} ± {value[1]}"
    if check["op"] == "tally":
        return f"{what} counts: " + ", ".join(f"{k} {n}" for k, n in value.items())
    return f"{what} {check['op']} {json.dumps(value)}"


def holds(check: dict[str, Any], evidence: Path) -> str:
    """ "" when the check holds on the evidence, else what was found instead."""
    op = check["op"]
    if op == "exists":
        return ""
    try:
        got = _observed(check, evidence)
    except (OSError, ValueError, KeyError, TypeError, ZeroDivisionError) as e:
        return f"{describe(check)}: cannot read it ({type(e).__name__}: {e})"
    want = check["value"]
    try:
        ok = _compare(op, got, want)
    except TypeError:
        ok = False
    return "" if ok else f"{describe(check)}: found {json.dumps(got)}"


def _observed(check: dict[str, Any], evidence: Path) -> Any:
    if "count" in check:
        base = evidence if evidence.is_dir() else evidence.parent
        return sum(1 for p in base.glob(check["count"]) if p.is_file())
    if check["key"] == "":  # the evidence's whole text (a table, a verdicts page)
        return evidence.read_text()
    doc = json.loads(evidence.read_text())
    got = resolve(doc, check["key"])
    if "over" in check:
        return got / resolve(doc, check["over"])
    return got


def _compare(op: str, got: Any, want: Any) -> bool:
    if op == "approx":
        return isinstance(got, int | float) and math.isclose(got, want[0], rel_tol=0, abs_tol=want[1])
    if op == "in":
        return got in want
    if op == "contains":
        return isinstance(got, str) and str(want) in got
    if op == "tally":
        return isinstance(got, list) and Counter(map(str, got)) == Counter({k: int(n) for k, n in want.items()})
    compare = {
        "==": lambda a, b: a == b,
        "!=": lambda a, b: a != b,
        "<": lambda a, b: a < b,
        "<=": lambda a, b: a <= b,
        ">": lambda a, b: a > b,
        ">=": lambda a, b: a >= b,
    }
    return bool(compare[op](got, want))


# --- the commits the evidence records ------------------------------------------------------


def run_folder(evidence: Path, root: Path) -> Path:
    """The run the evidence belongs to: the nearest folder at or above it (not above `root`)
    with a manifest.json, else the evidence's own folder."""
    here = evidence if evidence.is_dir() else evidence.parent
    for folder in [here, *here.parents]:
        if not folder.is_relative_to(root):
            break
        if (folder / provenance.MANIFEST).is_file():
            return folder
    return here


def recorded_commits(evidence: Path, root: Path) -> dict[str, list[str]]:
    """Each commit the evidence's run records -> the files that record it (paths from `root`):
    its manifest.json's commit (with -dirty where it says the tree was) and every summary.json's
    meta.versions.veloces under the run's folder."""
    folder = run_folder(evidence, root)
    found: dict[str, list[str]] = {}
    manifest = provenance.read_manifest(folder)
    if manifest and isinstance(manifest.get("commit"), str):
        c = manifest["commit"] + (provenance.DIRTY if manifest.get("dirty") else "")
        found.setdefault(c, []).append(str((folder / provenance.MANIFEST).relative_to(root)))
    for path in sorted(folder.rglob("summary.json")):
        try:
            c = provenance.recorded_commit(json.loads(path.read_text()))
        except (OSError, ValueError, AttributeError):
            continue
        if c:
            found.setdefault(c, []).append(str(path.relative_to(root)))
    return found


def _commit_problems(row: Row, commits: dict[str, list[str]]) -> list[str]:
    out = []
    for c, where in sorted(commits.items()):
        place = where[0] + (f" and {len(where) - 1} more" if len(where) > 1 else "")
        if c.endswith(provenance.DIRTY):
            out.append(f"recorded from a dirty tree: {c} ({place})")
        elif not row.commit:
            out.append(f"the row names no commit; the evidence records {c} ({place})")
        elif row.rejudges and provenance.same_commit(c, row.rejudges):
            # A re-judge's reused lab cells: their own files, never the re-judge's manifest.
            if any(Path(w).name == provenance.MANIFEST and Path(w).parent == Path(row.evidence).parent for w in where):
                out.append(f"the re-judge's own manifest records {c}, the lab run it re-judges")
        elif not provenance.same_commit(c, row.commit):
            out.append(f"recorded at {c} ({place}), the row says {row.commit}")
    return out


# --- judging -------------------------------------------------------------------------------


def judge_row(row: Row, root: Path) -> Verdict:
    evidence = root / row.evidence
    if row.status == "unverified":
        return Verdict(row.id, "unverified", row.reason + _stored(row, evidence, root))
    if row.evidence.startswith(NOT_EVIDENCE):
        return Verdict(row.id, "error", f"a verified row's evidence is not in {' or '.join(NOT_EVIDENCE)}: "
                                        f"{row.evidence}")  # fmt: skip
    if not evidence.exists():
        return Verdict(row.id, "error", f"its evidence {row.evidence} is missing")
    problems = _commit_problems(row, recorded_commits(evidence, root))
    problems += [p for c in row.expect if (p := holds(c, evidence))]
    if problems:
        return Verdict(row.id, "error", "; ".join(problems))
    return Verdict(row.id, "ok", f"{row.evidence} at {row.commit or 'the tree judged'}")


def _stored(row: Row, evidence: Path, root: Path) -> str:
    """What the stored evidence of an unverified row shows, in words ("" where none is stored)."""
    if not evidence.exists():
        return ""
    failed = [p for c in row.expect if (p := holds(c, evidence))]
    # One commit recorded short and full counts once.
    commits = {
        c[:7] + (provenance.DIRTY if c.endswith(provenance.DIRTY) else "") for c in recorded_commits(evidence, root)
    }
    dirty = sum(1 for c in commits if c.endswith(provenance.DIRTY))
    said = "shows what the row expects" if not failed else "does not show it: " + "; ".join(failed)
    return f" [stored evidence {said}; it records {len(commits)} commit(s), {dirty} of them dirty]"


def judge(table: Path, root: Path | None = None) -> list[Verdict]:
    """Every row of the table judged from the files under `root` (default: the table's
    repository, the folder above claims/)."""
    root = (root or table.resolve().parent.parent).resolve()
    rows, bad = load(table)
    return bad + [judge_row(r, root) for r in rows]


# --- docs/claims.md ------------------------------------------------------------------------


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _code(text: str) -> str:
    return "`" + " ".join(text.split()).replace("|", "\\|") + "`" if text else "—"


def render(table: Path) -> str:
    """docs/claims.md: the table as a reader sees it, verified rows first."""
    rows, bad = load(table)
    if bad:
        raise ClaimsError("; ".join(f"{v.row}: {v.detail}" for v in bad))
    verified = [r for r in rows if r.status == "verified"]
    unverified = [r for r in rows if r.status == "unverified"]
    lines = [
        "# Claims and their evidence",
        "",
        "<!-- Generated by `python -m vlab.claims render` from claims/claims.toml: edit the table, not this page. -->",
        "",
        "Every claim the README and these pages make about veloces, the simulator's fidelity and the",
        "seeds' reproductions, with the command that makes its evidence, where the evidence is kept,",
        "the commit it ran at and what it must show. A claim is **verified** when its evidence is stored",
        "in the repository (under `results/`, or the repository's own files), was made at a clean commit,",
        "and shows what the row expects; `make claims` judges every row again from the stored files and",
        "fails on a verified row that no longer holds. Every other claim is **unverified**, with the",
        "reason; evidence kept from a dirty tree is in `archive/unverified-results/`",
        "([README](../archive/unverified-results/README.md)). The rule: [results/README.md](../results/README.md).",
        "",
        f"{len(rows)} claims: {len(verified)} verified, {len(unverified)} unverified.",
        "",
        "## Verified",
        "",
        "| id | claim | where | evidence (commit) | expected | command |",
        "|---|---|---|---|---|---|",
    ]
    for r in verified:
        lines.append(
            f"| {r.id} | {_cell(r.claim)} | {_cell(r.where)} | {_code(r.evidence)} ({_code(r.commit)}"
            + (f"; re-judges the lab run at {_code(r.rejudges)}" if r.rejudges else "")
            + ") "
            f"| {_cell('; '.join(describe(c) for c in r.expect))} | {_code(r.command)} |"
        )
    lines += [
        "",
        "## Unverified",
        "",
        "| id | claim | where | why unverified | evidence (commit) | expected | command |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in unverified:
        lines.append(
            f"| {r.id} | {_cell(r.claim)} | {_cell(r.where)} | {_cell(r.reason)} | {_code(r.evidence)} "
            f"({_code(r.commit)}) | {_cell('; '.join(describe(c) for c in r.expect))} | {_code(r.command)} |"
        )
    return "\n".join(lines) + "\n"


# --- the command ---------------------------------------------------------------------------


def _report(verdicts: list[Verdict]) -> Iterator[str]:
    for state in ("error", "unverified", "ok"):
        for v in verdicts:
            if v.state == state:
                yield f"{state.upper() if state == 'error' else state:<10} {v.row}: {v.detail}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m vlab.claims", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    ap.add_argument("action", choices=["judge", "render"])
    ap.add_argument("--table", type=Path, default=repo_root() / TABLE, help=f"the table (default {TABLE})")
    ap.add_argument("--root", type=Path, help="the repository the evidence paths start from (default: the table's)")
    ap.add_argument("--out", type=Path, help=f"render: write here (default {PAGE} beside the table's claims/)")
    ap.add_argument("--check", action="store_true", help="render: exit 1 if the page differs, write nothing")
    args = ap.parse_args(argv)
    try:
        if args.action == "render":
            page = args.out or args.table.resolve().parent.parent / PAGE
            text = render(args.table)
            if args.check:
                if not page.is_file() or page.read_text() != text:
                    print(f"claims: {page} is not up to date: run `python -m vlab.claims render`", file=sys.stderr)
                    return 1
                return 0
            page.write_text(text)
            print(f"claims: {page}")
            return 0
        verdicts = judge(args.table, args.root)
    except ClaimsError as e:
        print(f"claims: error: {e}", file=sys.stderr)
        return 2
    for line in _report(verdicts):
        print(line)
    count = Counter(v.state for v in verdicts)
    print(f"claims: {len(verdicts)} rows: {count['ok']} verified and holding, {count['unverified']} unverified, "
          f"{count['error']} errors")  # fmt: skip
    return 1 if count["error"] else 0


if __name__ == "__main__":
    sys.exit(main())
