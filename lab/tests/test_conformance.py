"""Conformance scenarios (conformance/*.toml) on the real module, checked by the same
checker as the simulator's model (`vsim conformance --kernel-log`). They run in the module
suite's timed boot of each kernel (test_veloces.py), after its timed checks and as
`vlab conformance` runs them (vlab.checks.conformance's guest command, its scale for the kernel).
Needs `make -C kernel` and the simulator (make test builds both)."""

import sys
from pathlib import Path

import pytest
from test_veloces import SCENARIOS, UNDER_TEST, suite

from vlab.checks import conformance
from vlab.machine.kernels import lookup

pytestmark = pytest.mark.boot


@pytest.mark.parametrize("kernel", UNDER_TEST)
def test_conformance(kernel: str) -> None:
    run = suite(kernel, "timed")["_run"]
    log = Path(run["out"]) / "kernel-log.json"
    assert log.exists(), f"no kernel issue log on {kernel} (logs in {run['out']}): {run['tail']}"
    p = conformance.check(SCENARIOS, log, lookup(kernel).release, capture=True)
    print(p.stdout[-6000:], p.stderr[-2000:], file=sys.stderr)
    failed = f"conformance on {kernel} failed (logs in {run['out']}):\n{p.stdout[-4000:]}\n{p.stderr[-1500:]}"
    assert p.returncode == 0, failed
    assert "0 failed" in p.stdout.splitlines()[-1]
