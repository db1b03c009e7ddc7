"""Conformance scenarios (conformance/*.toml) on the real module, checked by the same
checker as the simulator's model (`vsim conformance --kernel-log`). They run in the module
suite's timed boot of each kernel (test_veloces.py), after its timed checks and as
`vlab conformance` runs them (vlab.checks.conformance's guest command, its scale for the kernel).
A scenario whose timing (never its order) was missed by no more than the guest lost to stalls,
in every run, is not judged: the test is skipped with the figures (docs/testing.md, "Timed
checks on a loaded host"). Needs `make -C kernel` and the simulator (make test builds both)."""

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
    out = Path(run["out"])
    assert (out / "kernel-log.json").exists(), f"no kernel issue log on {kernel} (logs in {out}): {run['tail']}"
    j = conformance.judge(SCENARIOS, out, lookup(kernel).release)
    print(j.report.stdout[-6000:], j.report.stderr[-2000:], file=sys.stderr)
    failed = "\n".join(f"  {f}: {why}" for f, why in j.named("fail").items())
    assert not failed, f"conformance on {kernel}: {j.summary()} (logs in {out}):\n{failed}\n{j.report.stdout[-3000:]}"
    not_judged = "\n".join(f"  {f}: {why}" for f, why in j.named("not judged").items())
    if not_judged:
        pytest.skip(f"conformance on {kernel}: {j.summary()}; not judged: host loaded:\n{not_judged}")
