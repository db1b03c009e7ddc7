"""The lab's import graph has no cycle (issue 35): every `vlab` module's imports of other
`vlab` modules, top-level and inside functions, read from the source."""

import ast
from pathlib import Path

from conftest import REPO

LAB = REPO / "lab"


def module_name(path: Path) -> str:
    parts = path.relative_to(LAB).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path, known: set[str]) -> set[str]:
    """The vlab modules `path` imports (`from vlab.pkg import sub` names the submodule)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "vlab":
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                found.add(sub if sub in known else node.module)
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.split(".")[0] == "vlab"}
    return found & known


def graph() -> dict[str, set[str]]:
    files = {module_name(p): p for p in (LAB / "vlab").rglob("*.py")}
    known = set(files)
    return {m: imports(p, known) - {m} for m, p in files.items()}


def cycles(g: dict[str, set[str]]) -> list[list[str]]:
    found: list[list[str]] = []
    state: dict[str, int] = {}

    def visit(m: str, path: list[str]) -> None:
        state[m] = 1
        for d in sorted(g[m]):
            if state.get(d) == 1:
                found.append([*path[path.index(d) :], d])
            elif d not in state:
                visit(d, [*path, d])
        state[m] = 2

    for m in sorted(g):
        if m not in state:
            visit(m, [m])
    return found


def test_the_lab_has_no_import_cycle() -> None:
    g = graph()
    assert len(g) > 40 and "vlab.paths" in g
    assert cycles(g) == []
    assert g["vlab.paths"] == set(), "vlab.paths is the leaf every module may import"


def test_the_cycle_finder_finds_one() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == [["a", "b", "c", "a"]]
    assert cycles({"a": {"b"}, "b": set()}) == []
