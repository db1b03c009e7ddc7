"""The lab's import graph has no cycle (issue 35): every `vlab` module's imports of other
`vlab` modules, top-level and inside functions, read from the source."""

from conftest import LAB
from test_layers import imports, modules


def graph() -> dict[str, set[str]]:
    """Each vlab module -> the vlab modules it imports (test_layers.imports)."""
    files = modules(LAB)
    known = set(files)
    return {m: ({t for _, t in imports(m, p, known)} & known) - {m} for m, p in files.items()}


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
