"""Conformance scenarios (conformance/*.toml) on the real module, checked by the same
checker as the simulator's model (`vsim conformance --kernel-log`). One boot per kernel.
Needs `make -C kernel` and the simulator (make test builds both)."""

import os
import subprocess
import sys

import pytest
from conftest import REPO

from vlab.kernels import DEFAULT_KERNELS, lookup
from vlab.schedulers import module_path
from vlab.vm import default_out

pytestmark = pytest.mark.boot

# `make test-rt` sets VLAB_RT=1: the same scenarios on the PREEMPT_RT builds.
RT = os.environ.get("VLAB_RT") == "1"


# `make test-debug` sets VLAB_KERNELS=debug-6.1 (any comma list of vlab kernel names).
KERNEL_NAMES = [k for k in os.environ.get("VLAB_KERNELS", "").split(",") if k] or list(DEFAULT_KERNELS)


@pytest.mark.parametrize("kernel", KERNEL_NAMES)
def test_conformance(kernel: str) -> None:
    ko = module_path("veloces", lookup(kernel, RT).release)
    assert ko.exists(), f"{ko} missing: run make -C kernel"
    rt = ["--rt"] if RT else []
    out = default_out(f"conformance-{kernel}")  # kept: pytest recycles its temporary directories
    p = subprocess.run(
        [str(REPO / "vlab"), "conformance", "--kernel", kernel, *rt, "--out", str(out), str(REPO / "conformance")],
        capture_output=True, text=True, cwd=REPO, check=False, timeout=1200,
    )  # fmt: skip
    print(p.stdout[-6000:], p.stderr[-2000:], file=sys.stderr)
    assert p.returncode == 0, f"conformance on {kernel} failed (logs in {out}):\n{p.stdout[-4000:]}\n{p.stderr[-1500:]}"
    assert "0 failed" in p.stdout.splitlines()[-1]
