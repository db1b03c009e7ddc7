"""The claims table (issue 77): `python -m vlab.claims judge` passes on the repository, and fails
— naming the row — when a verified row's evidence is removed, was recorded at another commit
than the row's or from a dirty tree, or no longer shows what the row expects; unverified rows
are listed, not errors; docs/claims.md is the table rendered. Reads files only: no boot."""

import json
import shutil
import tomllib
from pathlib import Path

import pytest
from conftest import REPO

from vlab import claims

TABLE = REPO / claims.TABLE


def errors(verdicts: list[claims.Verdict]) -> dict[str, str]:
    return {v.row: v.detail for v in verdicts if v.state == "error"}


def test_judge_passes_on_the_repository(capsys: pytest.CaptureFixture[str]) -> None:
    verdicts = claims.judge(TABLE)
    assert not errors(verdicts), errors(verdicts)
    states = [v.state for v in verdicts]
    assert len(verdicts) >= 12 and "ok" in states and "unverified" in states
    assert claims.main(["judge", "--table", str(TABLE)]) == 0
    out = capsys.readouterr().out
    assert f"claims: {len(verdicts)} rows: {states.count('ok')} verified and holding" in out


def test_every_row_names_where_the_claim_is_made_and_an_unverified_one_why() -> None:
    rows, bad = claims.load(TABLE)
    assert not bad, bad
    for r in rows:
        assert r.where.split(",")[0].split(" ")[0].endswith(".md"), r.id
        assert (REPO / r.where.split(",")[0].split(" ")[0]).is_file(), r.id
        assert r.status == "verified" or r.reason, r.id
        assert r.status == "unverified" or not r.evidence.startswith(claims.NOT_EVIDENCE), r.id
    seeds = {r.id.split("-")[0] for r in rows if r.id.startswith("seed")}
    assert seeds == {"seed000", "seed001", "seed002", "seed003", "seed004"}


def test_judge_fails_when_a_cited_file_is_removed(tmp_path: Path) -> None:
    """The table and every verified row's evidence copied into a tree of their own: it judges
    as the repository does, then not once a cited file is gone."""
    rows, _ = claims.load(TABLE)
    (tmp_path / "claims").mkdir()
    shutil.copy(TABLE, tmp_path / claims.TABLE)
    verified = [r for r in rows if r.status == "verified"]
    for r in verified:
        src, dst = REPO / r.evidence, tmp_path / r.evidence
        dst.parent.mkdir(parents=True, exist_ok=True)
        (shutil.copytree if src.is_dir() else shutil.copy)(src, dst)
    assert not errors(claims.judge(tmp_path / claims.TABLE))
    gone = verified[0]
    cited = tmp_path / gone.evidence
    shutil.rmtree(cited) if cited.is_dir() else cited.unlink()
    found = errors(claims.judge(tmp_path / claims.TABLE))
    assert found == {gone.id: f"its evidence {gone.evidence} is missing"}, found
    assert claims.main(["judge", "--table", str(tmp_path / claims.TABLE)]) == 1


ROW = """
[[claim]]
id = "{id}"
claim = "veloces holds."
where = "docs/x.md, \\"Heading\\""
command = "./vlab repro seed000 --out results/repro/run"
evidence = "{evidence}"
commit = "{commit}"
status = "{status}"
{extra}
expect = [
  {{ key = "verdicts.0.verdict", op = "==", value = "holds" }},
  {{ key = "verdicts.*.verdict", op = "tally", value = {{ holds = 1 }} }},
]
"""


def a_run(root: Path, commit: str, cell_commit: str, verdict: str = "holds") -> str:
    """results/repro/run with a summary, a cell and a manifest that record these commits."""
    run = root / "results" / "repro" / "run"
    (run / "cells" / "a").mkdir(parents=True)
    summary = {"meta": {"versions": {"veloces": commit[:7]}}, "verdicts": [{"verdict": verdict}]}
    (run / "summary.json").write_text(json.dumps(summary))
    (run / "cells" / "a" / "summary.json").write_text(json.dumps({"meta": {"versions": {"veloces": cell_commit}}}))
    (run / "manifest.json").write_text(json.dumps({"commit": commit, "dirty": False}))
    return "results/repro/run/summary.json"


def table(root: Path, *rows: str) -> Path:
    (root / "claims").mkdir(exist_ok=True)
    path = root / claims.TABLE
    path.write_text("".join(rows))
    return path


HEAD = "0123456789abcdef0123456789abcdef01234567"


def test_judge_fails_when_a_row_names_another_commit_than_its_evidence(tmp_path: Path) -> None:
    evidence = a_run(tmp_path, HEAD, HEAD[:7])
    ok = ROW.format(id="r", evidence=evidence, commit=HEAD[:7], status="verified", extra="")
    assert [v.state for v in claims.judge(table(tmp_path, ok))] == ["ok"]
    other = ROW.format(id="r", evidence=evidence, commit="fedcba9", status="verified", extra="")
    found = errors(claims.judge(table(tmp_path, other)))
    assert (
        set(found) == {"r"}
        and f"recorded at {HEAD} (results/repro/run/manifest.json), the row says fedcba9" in found["r"]
    )
    assert "recorded at 0123456 (results/repro/run/cells/a/summary.json and 1 more)" in found["r"]
    none = ROW.format(id="r", evidence=evidence, commit="", status="verified", extra="")
    assert "the row names no commit" in errors(claims.judge(table(tmp_path, none)))["r"]


def test_a_rejudge_may_reuse_the_lab_cells_of_the_run_it_names(tmp_path: Path) -> None:
    """A re-judge (`vlab fidelity --table`) at HEAD of a lab run made at LAB: its cells record
    LAB, its own manifest HEAD. The row says so (`rejudges`); without it, or where the
    re-judge's own manifest records the lab run's commit, the row is an error."""
    lab = "fedcba9876543210fedcba9876543210fedcba98"
    evidence = a_run(tmp_path, HEAD, lab[:7])
    plain = ROW.format(id="r", evidence=evidence, commit=HEAD[:7], status="verified", extra="")
    assert (
        "recorded at fedcba9 (results/repro/run/cells/a/summary.json)"
        in errors(claims.judge(table(tmp_path, plain)))["r"]
    )
    named = ROW.format(id="r", evidence=evidence, commit=HEAD[:7], status="verified", extra=f'rejudges = "{lab}"')
    assert [v.state for v in claims.judge(table(tmp_path, named))] == ["ok"]
    other = ROW.format(id="r", evidence=evidence, commit=HEAD[:7], status="verified", extra='rejudges = "1111111"')
    assert "recorded at fedcba9" in errors(claims.judge(table(tmp_path, other)))["r"]
    (tmp_path / "results" / "repro" / "run" / "manifest.json").write_text(json.dumps({"commit": lab, "dirty": False}))
    found = errors(claims.judge(table(tmp_path, named)))["r"]
    assert f"the re-judge's own manifest records {lab}, the lab run it re-judges" in found
    rendered = claims.render(table(tmp_path, named))
    assert f"re-judges the lab run at `{lab}`" in rendered


def test_judge_fails_on_a_dirty_cell_and_on_a_result_that_does_not_hold(tmp_path: Path) -> None:
    evidence = a_run(tmp_path, HEAD, HEAD[:7] + "-dirty", verdict="inconclusive")
    row = ROW.format(id="r", evidence=evidence, commit=HEAD[:7], status="verified", extra="")
    found = errors(claims.judge(table(tmp_path, row)))["r"]
    assert "recorded from a dirty tree: 0123456-dirty (results/repro/run/cells/a/summary.json)" in found
    assert 'verdicts.0.verdict == "holds": found "inconclusive"' in found
    assert 'verdicts.*.verdict counts: holds 1: found ["inconclusive"]' in found


def test_unverified_rows_are_listed_not_errors_and_a_verified_one_may_not_cite_the_archive(tmp_path: Path) -> None:
    evidence = a_run(tmp_path / "archive" / "unverified-results", HEAD, HEAD[:7] + "-dirty")
    moved = "archive/unverified-results/" + evidence
    rows = [
        ROW.format(id="dirty", evidence=moved, commit=HEAD[:7], status="unverified", extra='reason = "dirty cells"'),
        ROW.format(
            id="gone",
            evidence="build/x/summary.json",
            commit="",
            status="unverified",
            extra='reason = "evidence not stored"',
        ),
        ROW.format(id="archived", evidence=moved, commit=HEAD[:7], status="verified", extra=""),
    ]
    verdicts = {v.row: v for v in claims.judge(table(tmp_path, *rows))}
    assert verdicts["dirty"].state == "unverified" and verdicts["dirty"].detail.startswith("dirty cells [stored")
    assert "2 commit(s), 1 of them dirty" in verdicts["dirty"].detail
    assert verdicts["gone"].state == "unverified" and verdicts["gone"].detail == "evidence not stored"
    assert verdicts["archived"].state == "error" and "not in archive/ or build/" in verdicts["archived"].detail


def test_a_malformed_row_is_an_error_naming_it(tmp_path: Path) -> None:
    rows = [
        ROW.format(id="x", evidence="results/a.json", commit="", status="maybe", extra=""),
        ROW.format(id="y", evidence="results/a.json", commit="", status="unverified", extra=""),
        ROW.format(id="z", evidence="../a.json", commit="", status="verified", extra=""),
    ]
    found = errors(claims.judge(table(tmp_path, *rows)))
    assert found["x"].startswith("status 'maybe'") and "reason" in found["y"] and "a path from" in found["z"]


def test_key_paths_and_checks() -> None:
    doc = {"a": [{"b": 1}, {"b": 2}], "s": {"k-1": 0.5}}
    assert claims.resolve(doc, "a.1.b") == 2 and claims.resolve(doc, "a.*.b") == [1, 2]
    assert claims.resolve(doc, "s.k-1") == 0.5 and claims.resolve(doc, "a.-1.b") == 2
    with pytest.raises(KeyError, match=r"a\.2"):
        claims.resolve(doc, "a.2.b")
    assert claims._compare("approx", 0.131, [0.13, 0.005]) and not claims._compare("approx", 0.14, [0.13, 0.005])
    assert claims._compare("tally", ["x", "y", "x"], {"x": 2, "y": 1}) and claims._compare("in", 3, [1, 3])
    assert claims._compare("contains", "24 of 84 intervals", "of 84") and claims._compare("<=", 0.7, 0.8)


def test_an_empty_key_checks_a_text_evidence_whole(tmp_path: Path) -> None:
    page = tmp_path / "verdicts.md"
    page.write_text("- lab, mix: veloces IOPS 0.78x bfq's; never loses: NOT met\n")
    assert claims.holds({"key": "", "op": "contains", "value": "0.78x bfq's"}, page) == ""
    found = claims.holds({"key": "", "op": "contains", "value": "0.95x bfq's"}, page)
    assert found.startswith("its text contains") and "NOT met" in found


def test_docs_claims_md_is_the_table_rendered() -> None:
    page = REPO / claims.PAGE
    assert page.read_text() == claims.render(TABLE), "docs/claims.md is stale: `python -m vlab.claims render`"
    rows = tomllib.loads(TABLE.read_text())["claim"]
    assert all(f"| {r['id']} |" in page.read_text() for r in rows)
