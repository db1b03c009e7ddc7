"""Conformance scenarios (conformance/*.toml) on the real module, checked by the same
checker as the simulator's model (`vsim conformance --kernel-log`). One boot per kernel.
Needs `make -C kernel` and the simulator (make test builds both)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO

from vlab.kernels import DEFAULT_KERNELS, KERNELS
from vlab.schedulers import module_path

pytestmark = pytest.mark.boot

# `make test-rt` sets VLAB_RT=1: the same scenarios on the PREEMPT_RT builds.
RT = os.environ.get("VLAB_RT") == "1"


@pytest.mark.parametrize("kernel", list(DEFAULT_KERNELS))
def test_conformance(kernel: str, tmp_path: Path) -> None:
    ko = module_path("veloces", KERNELS[f"{kernel}-rt" if RT else kernel].release)
    assert ko.exists(), f"{ko} missing: run make -C kernel"
    rt = ["--rt"] if RT else []
    p = subprocess.run(
        [str(REPO / "vlab"), "conformance", "--kernel", kernel, *rt, "--out", str(tmp_path), str(REPO / "conformance")],
        capture_output=True, text=True, cwd=REPO, check=False, timeout=1200,
    )  # fmt: skip
    print(p.stdout[-6000:], p.stderr[-2000:], file=sys.stderr)
    assert p.returncode == 0, f"conformance on {kernel} failed:\n{p.stdout[-4000:]}\n{p.stderr[-1500:]}"
    assert "0 failed" in p.stdout.splitlines()[-1]
