"""vsim's device models served to real kernels over NBD: one boot per kernel runs
vlab.servedsuite, and each of its checks is one test here."""

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO

from vlab.kernels import DEFAULT_KERNELS, lookup
from vlab.schedulers import module_path
from vlab.servedsuite import CHECKS
from vlab.vm import default_out

pytestmark = pytest.mark.boot

SUITE_TIMEOUT_S = 1500
_results: dict[str, dict[str, Any]] = {}


def suite(kernel: str) -> dict[str, Any]:
    if kernel not in _results:
        ko = module_path("veloces", lookup(kernel).release)
        assert ko.exists(), f"{ko} missing: run make -C kernel"
        # Kept under build/runs/: every failing run's console, guest and server logs stay.
        out: Path = default_out(f"servedsuite-{kernel}")
        p = subprocess.run(
            [str(REPO / "vlab"), "run", "--kernel", kernel, "--memory", "3G", "--timeout", str(SUITE_TIMEOUT_S),
             "--out", str(out), "--", f"{sys.executable} -m vlab.servedsuite"],
            capture_output=True, text=True, cwd=REPO, check=False,
        )  # fmt: skip
        print(p.stdout[-4000:], p.stderr[-2000:])
        report = out / "servedsuite.json"
        _results[kernel] = json.loads(report.read_text()) if report.exists() else {}
        _results[kernel]["_run"] = {"rc": p.returncode, "out": str(out), "tail": (p.stdout + p.stderr)[-1500:]}
    return _results[kernel]


@pytest.mark.parametrize("check", CHECKS)
@pytest.mark.parametrize("kernel", DEFAULT_KERNELS)
def test_served(kernel: str, check: str) -> None:
    results = suite(kernel)
    assert check in results, f"check {check} did not run: {results['_run']}"
    r = results[check]
    assert r["ok"], f"{check} on {kernel}: {r['detail']} {r['figures']} (logs in {results['_run']['out']})"
