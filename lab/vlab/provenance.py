"""What a run was made from, and the rule that keeps results/ clean (issue 77, "clean commits
only"): the repository's commit, whether its tree is dirty, the manifest a run writes at its top
(`manifest.json`), and the checks the experiments make before any work:

- a run that writes under the repository's results/ refuses a dirty tree (`check_out`): exit
  status 2, nothing written; `--scratch`, or an --out outside results/ (the defaults are under
  build/), makes a scratch run, which may start from a dirty tree and never writes under results/;
- `--resume` refuses to keep cells recorded at another commit than HEAD (`check_resume`) unless
  `--mix-commits` is given.

A tree is dirty when `git status --porcelain` lists anything outside build/ and results/ (the
runs' outputs, which a run itself changes): a modified, staged, deleted or untracked file.
Standard library and git only; it imports nothing of vlab but `paths` (floor 1).
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import os
import platform
import subprocess
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from vlab.paths import repo_root, sim_target_dir

MANIFEST = "manifest.json"
RESULTS = "results"
# Paths (from the repository's root) whose changes leave the tree clean: the runs' outputs.
OUTPUTS = ("build/", "results/")
DIRTY = "-dirty"  # what a recorded commit ends with when its run began from a dirty tree
GIT_TIMEOUT_S = 30
TOOL_TIMEOUT_S = 10
RULE = "results/README.md"  # where the rule is stated


class Refused(Exception):
    """A run that must not start: the message says why and what to do instead."""


def _git(repo: Path, *args: str) -> str | None:
    """git's standard output in `repo`, or None where git is missing or says no (not a repository)."""
    try:
        p = subprocess.run(
            ["git", "-C", str(repo), *args], capture_output=True, text=True, timeout=GIT_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return p.stdout if p.returncode == 0 else None


def commit(repo: Path | None = None) -> str | None:
    """HEAD's full commit id, or None outside a git repository."""
    out = _git(repo or repo_root(), "rev-parse", "HEAD")
    return out.strip() if out else None


def changes(repo: Path | None = None) -> list[str] | None:
    """What makes the tree dirty: `git status --porcelain` entries (`XY path`) outside OUTPUTS;
    [] for a clean tree, None outside a git repository."""
    out = _git(repo or repo_root(), "status", "--porcelain=v1", "-z")
    if out is None:
        return None
    found = []
    entries = iter(out.split("\0"))
    for entry in entries:
        if not entry:
            continue
        status, path = entry[:2], entry[3:]
        if status[0] in "RC":
            next(entries, None)  # a rename's or copy's source follows it
        if not path.startswith(OUTPUTS):
            found.append(f"{status} {path}")
    return found


def dirty(repo: Path | None = None) -> bool | None:
    """Whether the tree has changes outside OUTPUTS; None outside a git repository."""
    found = changes(repo)
    return None if found is None else bool(found)


def describe(repo: Path | None = None) -> str | None:
    """HEAD's short commit id, with DIRTY appended when the tree is dirty: what a run records
    (summary.json's meta.versions.veloces); None outside a git repository."""
    short = _git(repo or repo_root(), "rev-parse", "--short", "HEAD")
    if not short:
        return None
    return short.strip() + (DIRTY if dirty(repo) else "")


def same_commit(recorded: str | None, head: str | None) -> bool:
    """Whether a recorded commit (short or full, as summary.json or manifest.json has it) is
    `head`: never for a dirty tree's record (its code is no commit) or an unknown one."""
    if not recorded or not head or recorded.endswith(DIRTY):
        return False
    a, b = recorded.strip().lower(), head.strip().lower()
    return len(min(a, b, key=len)) >= 7 and (a.startswith(b) or b.startswith(a))


def short(c: str | None) -> str:
    return "unknown" if not c else c if c.endswith(DIRTY) or len(c) <= 12 else c[:10]


def under_results(out: Path, repo: Path | None = None) -> bool:
    """Whether `out` is the repository's results/ or lies under it."""
    results = ((repo or repo_root()) / RESULTS).resolve()
    return out.resolve().is_relative_to(results)


def check_out(out: Path, scratch: bool = False, repo: Path | None = None) -> None:
    """Refused unless a run may write to `out`: under results/ only from a clean tree at a
    commit, never a scratch run. Call it before any work (nothing is written here)."""
    repo = repo or repo_root()
    if not under_results(out, repo):
        return
    if scratch:
        raise Refused(
            f"--scratch: a scratch run does not write under results/ ({out}): leave --out out (the default "
            "is under build/) or give one outside results/"
        )
    found = changes(repo)
    head = commit(repo)
    if found is None or head is None:
        raise Refused(
            f"cannot tell the commit of {repo} (no git?): results/ keeps only runs made at a clean commit "
            f"({RULE}); run with --scratch or an --out outside results/"
        )
    if found:
        listed = ", ".join(found[:5]) + (f", and {len(found) - 5} more" if len(found) > 5 else "")
        raise Refused(
            f"refusing to write under results/ ({out}) from a dirty tree: HEAD {head[:10]} has uncommitted "
            f"changes ({listed}). results/ keeps only runs made at a clean commit ({RULE}): commit or stash "
            "them, or make a scratch run with --scratch or an --out outside results/ (the default is under build/)"
        )


def may_write(prog: str, out: Path, scratch: bool = False) -> bool:
    """check_out for a command that returns its exit status: False (the reason printed as
    `prog: error: ...`; exit 2 is the caller's) where the run must not start."""
    try:
        check_out(out, scratch)
    except Refused as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return False
    return True


def check_resume(recorded: Mapping[str, str | None], mix: bool = False, repo: Path | None = None) -> None:
    """Refused when cells kept by --resume (cell id -> the commit its summary records) were
    recorded at another commit than HEAD, unless `mix` (--mix-commits); the message names each."""
    head = commit(repo or repo_root())
    other = {cell: c for cell, c in recorded.items() if not same_commit(c, head)}
    if not other or mix:
        return
    by_commit: dict[str, list[str]] = {}
    for cell, c in sorted(other.items()):
        by_commit.setdefault(short(c), []).append(cell)
    listed = "; ".join(f"{c}: {', '.join(cells)}" for c, cells in by_commit.items())
    raise Refused(
        f"--resume: {len(other)} kept cell(s) were recorded at another commit than HEAD {short(head)} ({listed}). "
        "One run's cells come from one commit: run them again (a new --out, or remove their folders), or give "
        "--mix-commits to keep them (the manifest then lists every commit)"
    )


def recorded_commit(summary: Mapping[str, Any]) -> str | None:
    """The commit a summary.json records (`meta.versions.veloces`), or None."""
    meta = summary.get("meta")
    versions = meta.get("versions") if isinstance(meta, dict) else None
    c = versions.get("veloces") if isinstance(versions, dict) else None
    return c if isinstance(c, str) and c else None


def add_arguments(ap: argparse.ArgumentParser, resume: bool = False) -> None:
    """--scratch (and, for a command with --resume, --mix-commits) with the same words everywhere."""
    ap.add_argument(
        "--scratch", action="store_true",
        help="a scratch run: may start from a dirty tree, never writes under results/ (default outputs are under "
        f"build/); without it a run refuses to write under results/ from a dirty tree ({RULE})",
    )  # fmt: skip
    if resume:
        ap.add_argument(
            "--mix-commits", action="store_true",
            help="with --resume: keep cells recorded at another commit than HEAD (refused without it)",
        )  # fmt: skip


def tool_version(argv: list[str]) -> str | None:
    """The first line a tool prints for its version, or None where it is missing or fails."""
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=TOOL_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    line = (p.stdout or p.stderr).strip().splitlines()
    return line[0].strip() if p.returncode == 0 and line else None


def versions() -> dict[str, str | None]:
    """The tools a run used, each None where missing: QEMU, fio, Python and the built simulator
    (its binary only: never a build)."""
    vsim = sim_target_dir() / "vsim"
    return {
        "qemu-system-x86_64": tool_version(["qemu-system-x86_64", "--version"]),
        "fio": tool_version(["fio", "--version"]),
        "python": platform.python_version(),
        "vsim": tool_version([str(vsim), "--version"]) if vsim.is_file() else None,
    }


def files(run_dir: Path) -> dict[str, str]:
    """The sha256 of every regular file under run_dir (its path from there -> hex digest), the
    top manifest.json left out; links are not followed."""
    found = {}
    for root, dirs, names in os.walk(run_dir):
        dirs.sort()
        for name in sorted(names):
            path = Path(root, name)
            rel = path.relative_to(run_dir).as_posix()
            if rel == MANIFEST or path.is_symlink() or not path.is_file():
                continue
            with path.open("rb") as f:
                found[rel] = hashlib.file_digest(f, "sha256").hexdigest()
    return found


def _summaries(run_dir: Path) -> Iterable[dict[str, Any]]:
    for path in sorted(run_dir.rglob("summary.json")):
        try:
            doc = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(doc, dict):
            yield doc


def manifest(
    run_dir: Path, *, kernels: Iterable[str] | None = None, scratch: bool = False,
    command: list[str] | None = None, repo: Path | None = None,
) -> dict[str, Any]:  # fmt: skip
    """What `run_dir` was made from: the commit, whether the tree was dirty (and what made it
    so), the date, the kernels' releases (given, else those its summaries record), every commit
    its summaries record (a resumed run's cells), the tools' versions and each file's sha256."""
    repo = repo or repo_root()
    found = changes(repo)
    docs = list(_summaries(run_dir))
    if kernels is None:
        kernels = {k for d in docs if isinstance(k := (d.get("meta") or {}).get("kernel"), str)}
    cells: dict[str, int] = {}
    for d in docs:
        if c := recorded_commit(d):
            cells[c] = cells.get(c, 0) + 1
    return {
        "kind": "vlab-manifest",
        "commit": commit(repo),
        "dirty": None if found is None else bool(found),
        "changes": found[:50] if found else [],
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "scratch": scratch,
        "command": command,
        "kernels": sorted(set(kernels)),
        "summaries_commits": dict(sorted(cells.items())),
        "versions": versions(),
        "files": files(run_dir),
    }


def write_manifest(run_dir: Path, **kw: Any) -> Path:
    """run_dir/manifest.json (manifest(run_dir, **kw)), written whole or not at all."""
    doc = manifest(run_dir, **kw)
    target = run_dir / MANIFEST
    tmp = run_dir / (MANIFEST + ".tmp")
    tmp.write_text(json.dumps(doc, indent=1) + "\n")
    tmp.replace(target)
    return target


def read_manifest(run_dir: Path) -> dict[str, Any] | None:
    try:
        doc = json.loads((run_dir / MANIFEST).read_text())
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None
