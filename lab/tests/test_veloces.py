"""The veloces module's behaviour in real kernels: vlab.checks.modsuite runs in two boots per kernel
(its timed checks alone, the rest beside another guest), and each of its checks is one test
here. The timed boot also runs the conformance scenarios (test_conformance.py checks them).
Needs `make -C kernel` (make test does it)."""

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO, suite_checks

from vlab.checks import conformance
from vlab.checks.modsuite import CHECKS, POSSIBLE_CPUS, TIMED
from vlab.machine.kernels import DEFAULT_KERNELS, lookup
from vlab.machine.vm import default_out
from vlab.schedulers import module_path

pytestmark = pytest.mark.boot

# `make test-rt` sets VLAB_RT=1: the same suite on the PREEMPT_RT builds; `make test-debug`
# sets VLAB_KERNELS=debug-6.1 (any comma list of vlab kernel names).
if os.environ.get("VLAB_KERNELS"):
    UNDER_TEST = [k for k in os.environ["VLAB_KERNELS"].split(",") if k]
elif os.environ.get("VLAB_RT") == "1":
    UNDER_TEST = [f"{k}-rt" for k in DEFAULT_KERNELS]
else:
    UNDER_TEST = list(DEFAULT_KERNELS)

# Seconds per device of the stress check, passed into the guest (make test-debug: 120).
STRESS_S = float(os.environ.get("VLAB_STRESS_S", "20"))
# MiB that the verify check writes and reads back (make test: 256, 40 s under TCG; make
# test-debug: 1024, 160 s on Debian's kernels).
VERIFY_MIB = int(os.environ.get("VLAB_VERIFY_MIB", "256"))
# The suite takes ~15 min on Debian's kernels and ~25 min (before stress) on the debug kernel
# under single-threaded TCG; stress runs 3 devices for STRESS_S each plus set-up and a verify.
SUITE_TIMEOUT_S = int(1500 + 8 * STRESS_S)

# Two boots per kernel: the timed checks (modsuite.TIMED) alone, in make test's serial
# phase, and the others beside another guest; each boot's kernel log is checked. After the
# timed checks, the same boot runs the conformance scenarios (timed too: vlab.checks.conformance).
PARTS = {"timed": [c for c in CHECKS if c in TIMED], "shared": [c for c in CHECKS if c not in TIMED]}
# make test runs the stress check on 6.12 only (~290 s of a shared boot under load): the
# module's locking and liveness are the same code on both kernels, and make test-full,
# make test-rt and make test-debug (on debug-6.1, 120 s a device) run it on 6.1 too.
FULL_ONLY: dict[str, set[str]] = {"6.1": {"stress"}}
SCENARIOS = REPO / "conformance"

_results: dict[tuple[str, str], dict[str, Any]] = {}


def suite(kernel: str, part: str) -> dict[str, Any]:
    if (kernel, part) not in _results:
        ko = module_path("veloces", lookup(kernel).release)
        assert ko.exists(), f"{ko} missing: run make -C kernel"
        # Kept under build/runs/ (pytest recycles its temporary directories): every
        # failing run's console and guest logs stay readable.
        out: Path = default_out(f"modsuite-{part}-{kernel}")
        env = f"VLAB_STRESS_S={STRESS_S} VLAB_VERIFY_MIB={VERIFY_MIB}"
        checks = " ".join(suite_checks(PARTS[part], kernel, FULL_ONLY))
        script = f"{env} {sys.executable} -m vlab.checks.modsuite {checks}"
        timeout = SUITE_TIMEOUT_S
        extra = [] if part == "timed" else ["--possible-cpus", str(POSSIBLE_CPUS)]
        if part == "timed":
            files = conformance.scenario_files(SCENARIOS)
            script += "; " + shlex.join(conformance.guest_command(files, lookup(kernel).conformance_scale))
            timeout += 30 * len(files)
        p = subprocess.run(
            [str(REPO / "vlab"), "run", "--kernel", kernel, "--memory", "4G", "--cpus", "2", *extra,
             "--timeout", str(timeout), "--out", str(out), "--", script],
            capture_output=True, text=True, cwd=REPO, check=False,
        )  # fmt: skip
        print(p.stdout[-4000:], p.stderr[-2000:])
        report = out / "modsuite.json"
        _results[kernel, part] = json.loads(report.read_text()) if report.exists() else {}
        _results[kernel, part]["_run"] = {"rc": p.returncode, "out": str(out), "tail": (p.stdout + p.stderr)[-1500:]}
    return _results[kernel, part]


def _cases() -> list[Any]:
    return [
        pytest.param(
            kernel,
            part,
            check,
            id=f"{kernel}-{check}" if check != "kernel_log" else f"{kernel}-{part}-kernel_log",
            marks=([pytest.mark.serial] if part == "timed" else [])
            + ([pytest.mark.full] if check in FULL_ONLY.get(kernel, set()) else []),
        )
        for kernel in UNDER_TEST
        for part, checks in PARTS.items()
        for check in [*checks, "kernel_log"]
    ]


@pytest.mark.parametrize(("kernel", "part", "check"), _cases())
def test_module(kernel: str, part: str, check: str) -> None:
    results = suite(kernel, part)
    assert check in results, f"check {check} did not run: {results['_run']}"
    r = results[check]
    if r["ok"] and r["figures"].get("skipped"):
        pytest.skip(f"{check} on {kernel}: {r['detail']} {r['figures']}")
    assert r["ok"], f"{check} on {kernel}: {r['detail']} {r['figures']}"
