"""The lab's floors (issue 77): every `vlab` module sits on the floor the package's docstring
(lab/vlab/__init__.py) gives its top-level module or package, and imports nothing from a floor
above its own, top-level or inside a function, read from the source with `ast`."""

import ast
import re
from pathlib import Path

from conftest import LAB

FLOOR_LINE = re.compile(r"^(\d+)\. ([\w, ]+):", re.M)


def floors(root: Path) -> dict[str, int]:
    """Top-level module or package name (`paths`, `report`) -> its floor, from the list in
    root/vlab/__init__.py's docstring."""
    doc = ast.get_docstring(ast.parse((root / "vlab" / "__init__.py").read_text())) or ""
    return {name.strip(): int(n) for n, names in FLOOR_LINE.findall(doc) for name in names.split(",")}


def module_name(root: Path, path: Path) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules(root: Path) -> dict[str, Path]:
    return {module_name(root, p): p for p in sorted((root / "vlab").rglob("*.py"))}


def imports(name: str, path: Path, known: set[str]) -> list[tuple[int, str]]:
    """(line, vlab module) for each import of vlab in `path` (module `name`), at any depth:
    `import vlab.x`, `from vlab.x import y` (y when it is a module), `from vlab import x`
    and relative imports."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name.split(".")[0] == "vlab"]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*up, base] if base else up)
            if base.split(".")[0] != "vlab":
                continue
            for a in node.names:
                sub = f"{base}.{a.name}"
                found.append((node.lineno, sub if sub in known else base))
    return found


def floor_of(name: str, table: dict[str, int]) -> int | None:
    """`vlab` itself is on the lowest floor; any other module on its top-level name's."""
    parts = name.split(".")
    return min(table.values(), default=None) if len(parts) == 1 else table.get(parts[1])


def problems(root: Path) -> list[str]:
    """Each module without a floor, and each import of a higher floor, as `file:line: ...`."""
    table = floors(root)
    mods = modules(root)
    out = []
    for name, path in mods.items():
        where = path.relative_to(root)
        mine = floor_of(name, table)
        if mine is None:
            out.append(
                f"{where}: {name} has no floor: add `{name.split('.')[1]}` to a floor in vlab/__init__.py's docstring"
            )
            continue
        for line, target in imports(name, path, set(mods)):
            theirs = floor_of(target, table)
            if theirs is None or theirs > mine:
                out.append(f"{where}:{line}: {name} (floor {mine}) imports {target} (floor {theirs}), above it")
    return out


def test_every_module_has_a_floor_and_imports_none_above_it() -> None:
    table = floors(LAB)
    assert len(set(table.values())) >= 5 and table["paths"] == table["stats"] == 1, table
    found = problems(LAB)
    assert not found, "\n".join(found)


def test_the_checker_names_an_upward_import_and_a_module_without_a_floor(tmp_path: Path) -> None:
    files = {
        "__init__.py": '"""Floors:\n\n1. paths: pure.\n2. machine: boots.\n3. report: reads.\n"""\n',
        "paths.py": "import os\n\n\ndef f():\n    from vlab import report\n",
        "machine/__init__.py": "from vlab import paths\n",
        "machine/vm.py": "from ..report import page\nimport vlab.paths\n",
        "report/__init__.py": "from vlab.machine import vm\n",
        "report/page.py": "from . import __name__\n",
        "extra.py": "",
    }
    for rel, text in files.items():
        (tmp_path / "vlab" / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "vlab" / rel).write_text(text)
    found = problems(tmp_path)
    assert found == [
        "vlab/extra.py: vlab.extra has no floor: add `extra` to a floor in vlab/__init__.py's docstring",
        "vlab/machine/vm.py:1: vlab.machine.vm (floor 2) imports vlab.report.page (floor 3), above it",
        "vlab/paths.py:5: vlab.paths (floor 1) imports vlab.report (floor 3), above it",
    ], found
    print("\n".join(found))
