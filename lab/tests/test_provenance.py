"""Clean commits only (issue 77): the commit and dirty state of a tree, the manifest a run writes,
the refusal to write under results/ from a dirty tree (before any work, exit status 2), --scratch,
and --resume's refusal to keep cells from another commit. Pure Python on a temporary git
repository: no boot. And results/ itself: no summary.json there names a dirty tree's commit."""

import hashlib
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO
from test_repro import fake_cells

from vlab import app, cli, provenance
from vlab.experiments import floods, matrix
from vlab.repro import SEEDS, run
from vlab.repro.core import Cell, Plan


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout.strip()


def commit_all(repo: Path, message: str) -> str:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git repository with one commit: a source file, a .gitignore as the project's (build/
    ignored) and an empty results/."""
    r = tmp_path / "repo"
    (r / "lab").mkdir(parents=True)
    (r / "results").mkdir()
    git(r, "init", "-q")
    git(r, "config", "user.email", "lab@example.org")
    git(r, "config", "user.name", "lab")
    (r / "lab" / "code.py").write_text("x = 1\n")
    (r / ".gitignore").write_text("/build\n")
    commit_all(r, "first")
    return r


@pytest.fixture
def at(repo: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """`repo` as the repository vlab.provenance asks about (its default)."""
    monkeypatch.setattr(provenance, "repo_root", lambda: repo)
    return repo


# --- commit and dirty state ----------------------------------------------------------------------


def test_a_clean_tree_its_commit_and_what_makes_it_dirty(repo: Path) -> None:
    head = git(repo, "rev-parse", "HEAD")
    assert provenance.commit(repo) == head and len(head) == 40
    assert provenance.dirty(repo) is False and provenance.changes(repo) == []
    assert provenance.describe(repo) == git(repo, "rev-parse", "--short", "HEAD")
    # The runs' outputs do not count: build/ (ignored) and results/, tracked or not.
    (repo / "build").mkdir()
    (repo / "build" / "x.json").write_text("{}")
    (repo / "results" / "run").mkdir()
    (repo / "results" / "run" / "summary.json").write_text("{}")
    assert provenance.dirty(repo) is False
    # A modified file, an untracked one elsewhere, a staged one, a rename: each is named.
    (repo / "lab" / "code.py").write_text("x = 2\n")
    assert provenance.changes(repo) == [" M lab/code.py"] and provenance.dirty(repo) is True
    assert provenance.describe(repo) == git(repo, "rev-parse", "--short", "HEAD") + "-dirty"
    (repo / "lab" / "new.sh").write_text("true\n")
    git(repo, "mv", ".gitignore", "lab/ignored")
    assert sorted(provenance.changes(repo) or []) == [" M lab/code.py", "?? lab/new.sh", "R  lab/ignored"]


def test_outside_a_repository_nothing_is_known(tmp_path: Path) -> None:
    assert provenance.commit(tmp_path) is None and provenance.dirty(tmp_path) is None
    assert provenance.describe(tmp_path) is None


def test_a_recorded_commit_is_heads_only_when_clean_and_the_same() -> None:
    head = "0123456789abcdef0123456789abcdef01234567"
    assert provenance.same_commit("0123456", head) and provenance.same_commit(head, head)
    assert not provenance.same_commit("0123456-dirty", head)
    assert not provenance.same_commit("0123457", head) and not provenance.same_commit(None, head)
    assert not provenance.same_commit("012", head)  # too short to name one


# --- results/ refuses a dirty tree --------------------------------------------------------------


def test_results_refuses_a_dirty_tree_and_scratch_runs_go_elsewhere(repo: Path) -> None:
    results = repo / "results" / "repro" / "seed000-full"
    provenance.check_out(results, repo=repo)  # clean: allowed
    (repo / "lab" / "code.py").write_text("x = 2\n")
    with pytest.raises(provenance.Refused) as e:
        provenance.check_out(results, repo=repo)
    said = str(e.value)
    assert said.startswith("refusing to write under results/") and " M lab/code.py" in said
    assert "--scratch" in said and "results/README.md" in said
    # Outside results/ (the defaults are under build/) a dirty tree may run: a scratch run.
    provenance.check_out(repo / "build" / "repro" / "seed000", repo=repo)
    provenance.check_out(repo / "results" / ".." / "build" / "x", repo=repo)
    provenance.check_out(repo / "build" / "x", scratch=True, repo=repo)
    # --scratch never writes under results/, clean tree or not.
    git(repo, "checkout", "-q", "--", "lab/code.py")
    with pytest.raises(provenance.Refused, match="a scratch run does not write under results/"):
        provenance.check_out(results, scratch=True, repo=repo)
    # Without git the commit cannot be told: refused too.
    with pytest.raises(provenance.Refused, match="cannot tell the commit"):
        provenance.check_out(repo.parent / "plain" / "results" / "x", repo=repo.parent / "plain")


def dirty_results(at: Path) -> Path:
    (at / "lab" / "code.py").write_text("x = 2\n")
    return at / "results" / "run"


def test_vlab_repro_refuses_before_any_work_with_exit_status_2(
    at: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    out = dirty_results(at)
    ran: list[Any] = []
    monkeypatch.setattr(run, "run", lambda *a, **k: ran.append(a) or 0)
    monkeypatch.setattr(run, "rejudge", lambda *a, **k: ran.append(a) or 0)
    for extra in ([], ["--resume"], ["--table"]):
        assert cli.main(["repro", "seed000", "--quick", "--out", str(out), *extra]) == 2
        err = capsys.readouterr().err
        assert "vlab: error: refusing to write under results/" in err and "lab/code.py" in err
    assert ran == [] and not out.exists()
    assert cli.main(["repro", "seed000", "--quick", "--out", str(out), "--scratch"]) == 2
    assert "a scratch run does not write under results/" in capsys.readouterr().err
    # Outside results/ the same dirty tree runs (a scratch run, with or without --scratch).
    assert cli.main(["repro", "seed000", "--quick", "--out", str(at / "build" / "r"), "--scratch"]) == 0
    assert len(ran) == 1 and ran[0][2] == (at / "build" / "r").resolve()


def test_vlab_compare_run_and_the_experiments_refuse_too(at: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = dirty_results(at)
    job = at / "j.fio"
    job.write_text("[j]\nrw=randread\nsize=1m\n")
    for argv in (
        ["compare", "--device", "null_blk:size=64", "--job", str(job), "--out", str(out)],
        ["run", "--out", str(out), "--", "true"],
        ["conformance", "--out", str(out), str(REPO / "conformance")],
    ):
        assert cli.main(argv) == 2, argv
        assert "refusing to write under results/" in capsys.readouterr().err
    assert matrix.main(["--out", str(out)]) == 2
    assert "matrix: error: refusing to write under results/" in capsys.readouterr().err
    assert floods.main(["--out", str(out)]) == 2
    assert "floods: error: refusing to write under results/" in capsys.readouterr().err
    assert not out.exists()


# --- --resume keeps cells of HEAD's commit only -----------------------------------------------------


def test_resume_names_the_cells_of_another_commit(repo: Path) -> None:
    head = git(repo, "rev-parse", "HEAD")
    provenance.check_resume({"a/ext4-varmail": head[:7], "b/ext4-varmail": head}, repo=repo)
    recorded = {"a/ext4-varmail": head[:7], "b/ext2-varmail": "abcdef1", "c/ext3": f"{head[:7]}-dirty", "d/x": None}
    with pytest.raises(provenance.Refused) as e:
        provenance.check_resume(recorded, repo=repo)
    said = str(e.value)
    assert said.startswith("--resume: 3 kept cell(s) were recorded at another commit than HEAD")
    assert "abcdef1: b/ext2-varmail" in said and f"{head[:7]}-dirty: c/ext3" in said and "unknown: d/x" in said
    assert "a/ext4-varmail" not in said and "--mix-commits" in said
    provenance.check_resume(recorded, mix=True, repo=repo)


def test_vlab_repro_resume_refuses_cells_from_another_commit_unless_mix_commits(
    at: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    calls: list[str] = []

    def cell_at_head(cell: Cell, p: Plan, out: Path, fb: Path | None) -> dict[str, Any]:
        """A finished cell that records the commit its run began at (as app.compare does)."""
        calls.append(cell.id)
        summary = run.cell_folder(out, cell) / "summary.json"
        summary.parent.mkdir(parents=True, exist_ok=True)
        meta = {"complete": True, "problems": [], "versions": {"veloces": provenance.describe()}, "kernel": "6.12.x"}
        summary.write_text(json.dumps({"dilation": 1.0, "meta": meta}))
        return {"status": "ok", "exit": 0, "wall_s": 1.0}

    fake_cells(monkeypatch, cell_at_head)
    seed = SEEDS["seed000"]
    plan = seed.plan(True)
    out = at / "build" / "r"
    assert run.run(seed, plan, out, False, ["vlab", "repro"], {}) == 0 and len(calls) == 2
    first = git(at, "rev-parse", "--short", "HEAD")
    # At the same commit --resume keeps them; a manifest is written at the run's top.
    calls.clear()
    assert run.run(seed, plan, out, True, ["vlab", "repro"], {}) == 0 and calls == []
    m = json.loads((out / provenance.MANIFEST).read_text())
    assert m["commit"] == git(at, "rev-parse", "HEAD") and m["summaries_commits"] == {first: 2}
    assert m["kernels"] == ["6.12.x"] and m["command"] == ["vlab", "repro"]
    # A new commit: refused, naming the cells and their commit; nothing run or changed.
    (at / "lab" / "code.py").write_text("x = 3\n")
    commit_all(at, "second")
    before = (out / "summary.json").read_text()
    assert run.run(seed, plan, out, True, ["vlab", "repro"], {}) == 2
    err = capsys.readouterr().err
    assert (
        f"--resume: 2 kept cell(s) were recorded at another commit than HEAD {git(at, 'rev-parse', 'HEAD')[:10]}" in err
    )
    assert f"{first}: nullblk/ext4-dbench-8, nullblk/ext4-varmail" in err and "(nothing was run)" in err
    assert calls == [] and (out / "summary.json").read_text() == before
    assert run.run(seed, plan, out, True, ["vlab", "repro"], {}, mix_commits=True) == 0 and calls == []


# --- the manifest ------------------------------------------------------------------------------------


def test_the_manifest_records_the_commit_tools_kernels_and_every_files_sha256(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(provenance, "sim_target_dir", lambda: repo / "no-vsim")  # not built: null, no build
    run_dir = repo / "results" / "run"
    (run_dir / "cells" / "a" / "raw").mkdir(parents=True)
    (run_dir / "cells" / "a" / "raw" / "rep1-none.json").write_text('{"iops": 1}\n')
    cell = {"meta": {"kernel": "6.12.117+deb12-amd64", "versions": {"veloces": "abc1234-dirty"}}}
    (run_dir / "cells" / "a" / "summary.json").write_text(json.dumps(cell))
    (run_dir / "summary.json").write_text(json.dumps({"meta": {"versions": {"veloces": "abc1234"}}}))
    path = provenance.write_manifest(run_dir, scratch=True, command=["x"], repo=repo)
    m = json.loads(path.read_text())
    assert m["commit"] == git(repo, "rev-parse", "HEAD") and m["dirty"] is False and m["changes"] == []
    assert m["date"].endswith("+00:00") and m["scratch"] is True and m["command"] == ["x"]
    assert m["kernels"] == ["6.12.117+deb12-amd64"]
    assert m["summaries_commits"] == {"abc1234": 1, "abc1234-dirty": 1}
    assert set(m["versions"]) == {"qemu-system-x86_64", "fio", "python", "vsim"}
    assert m["versions"]["vsim"] is None and m["versions"]["python"]
    want = {
        p.relative_to(run_dir).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in run_dir.rglob("*")
        if p.is_file() and p != path
    }
    assert m["files"] == want and provenance.MANIFEST not in m["files"] and len(want) == 3
    # Made again, it still leaves itself out; a dirty tree says what made it so.
    (repo / "lab" / "code.py").write_text("x = 2\n")
    m = provenance.manifest(run_dir, kernels=["6.1.0-56-amd64"], repo=repo)
    assert m["dirty"] is True and m["changes"] == [" M lab/code.py"] and m["kernels"] == ["6.1.0-56-amd64"]
    assert set(m["files"]) == set(want)


def test_a_missing_or_failing_tool_has_no_version(tmp_path: Path) -> None:
    assert provenance.tool_version([str(tmp_path / "qemu-system-x86_64"), "--version"]) is None
    assert provenance.tool_version(["false"]) is None
    assert (provenance.tool_version(["git", "--version"]) or "").startswith("git version")


def test_a_run_records_its_commit_dirty_as_the_tree_is(at: Path) -> None:
    assert app.versions()["veloces"] == git(at, "rev-parse", "--short", "HEAD")
    (at / "lab" / "code.py").write_text("x = 2\n")
    assert app.versions()["veloces"] == git(at, "rev-parse", "--short", "HEAD") + "-dirty"


# --- results/ as it is ---------------------------------------------------------------------------


def test_no_summary_under_results_names_a_dirty_commit() -> None:
    """results/ keeps only clean-commit runs (results/README.md): no summary.json under it records
    a commit ending in -dirty, and no manifest.json says its tree was dirty (such runs went to
    archive/unverified-results/)."""
    bad = []
    for path in sorted((REPO / "results").rglob("summary.json")):
        c = provenance.recorded_commit(json.loads(path.read_text()))
        if c and c.endswith(provenance.DIRTY):
            bad.append(f"{path.relative_to(REPO)}: {c}")
    for path in sorted((REPO / "results").rglob(provenance.MANIFEST)):
        m = json.loads(path.read_text())
        if m.get("dirty") or any(c.endswith(provenance.DIRTY) for c in m.get("summaries_commits") or {}):
            bad.append(f"{path.relative_to(REPO)}: a dirty tree")
    assert not bad, "from a dirty tree, under results/ (move the run to archive/unverified-results/): " + ", ".join(bad)
