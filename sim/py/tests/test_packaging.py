"""The wheel as a user gets it (issue 43): its distribution name and declared dependencies,
a stripped extension, and `pip install` of it into a fresh environment, where it runs and,
without Ray, says how to get it."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]


def wheel() -> Path:
    built = sorted((REPO / "build" / "wheels").glob("veloces_vsim-*.whl"))
    if len(built) != 1:
        pytest.fail(f"expected one built wheel in build/wheels, found {[p.name for p in built]}: run make deps")
    return built[0]


def test_the_wheel_declares_its_name_dependencies_and_extra() -> None:
    with zipfile.ZipFile(wheel()) as z:
        meta = z.read(next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))).decode()
        ext = next(i for i in z.infolist() if i.filename.startswith("vsim/_vsim"))
    lines = meta.splitlines()
    assert "Name: veloces-vsim" in lines  # `vsim` on the public index is another project
    assert "Requires-Dist: tqdm==4.70.1" in lines
    assert "Requires-Dist: ray[tune]==2.60.0 ; extra == 'ray'" in lines and "Provides-Extra: ray" in lines
    assert "Requires-Dist: optuna==5.0.0 ; extra == 'ray'" in lines  # the TPE search
    # Stripped: 27 MB with debug info, ~4 MB without.
    assert ext.file_size < 10 * 2**20, ext.file_size


def test_pip_install_in_a_fresh_environment_runs_and_hints_at_ray(tmp_path: Path) -> None:
    env = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(env)], check=True)
    py = str(env / "bin" / "python")
    pip = subprocess.run([py, "-m", "pip", "install", "-q", "--disable-pip-version-check", str(wheel())],
                         capture_output=True, text=True, check=False)  # fmt: skip
    assert pip.returncode == 0, pip.stderr
    script = """
import vsim
from vsim import sweep
r = vsim.run({"device": {"model": "fixed"}, "job": [{"rw": "randread", "number_ios": 100}]})
assert r["jobs"][0]["read"]["total_ios"] == 100, r["jobs"][0]["read"]
try:
    sweep.import_ray()
except vsim.ConfigError as e:
    print("HINT", e)
"""
    p = subprocess.run([py, "-c", script], capture_output=True, text=True, check=False, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert "HINT Ray is not installed" in p.stdout and "veloces-vsim[ray]" in p.stdout
