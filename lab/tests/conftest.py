from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

LAB = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(LAB))

from vlab.report import browser  # noqa: E402

REPO = LAB.parent
DATA = Path(__file__).resolve().parent / "data"


@pytest.fixture(scope="session")
def chromium() -> Iterator[browser.Browser | None]:
    """One headless Chromium for every page a session's tests load (per xdist worker), or
    None without Debian's chromium-driver (the report tests are then skipped)."""
    if not Path(browser.DRIVER).exists():
        yield None
        return
    with browser.Browser() as b:
        yield b


# --- make test and make test-full -----------------------------------------------------------
# `make test` runs the quick suite: every host test, each kernel's module suite and conformance
# scenarios, the served devices' suite (all of it over ublk on 6.12, its cheap checks over NBD
# on 6.1) and each of the lab's paths booted once, on one kernel. `make test-full` (VLAB_FULL=1)
# adds what repeats a path on the other kernel or measures rather than checks: tests and
# parameters marked `full` (docs/testing.md, "Quick and full"). Without VLAB_FULL they are
# reported as skipped, with that reason.
FULL = os.environ.get("VLAB_FULL") == "1"
FULL_REASON = "in make test-full only (VLAB_FULL=1): docs/testing.md, 'Quick and full'"


def kernels(quick: str) -> list[Any]:
    """The default kernels as test parameters, every one but `quick` marked `full`: a test of
    the lab's own path, which boots the same code on either kernel."""
    from vlab.machine.kernels import DEFAULT_KERNELS

    assert quick in DEFAULT_KERNELS, quick
    return [pytest.param(k, marks=() if k == quick else pytest.mark.full) for k in DEFAULT_KERNELS]


def suite_checks(checks: list[str], kernel: str, full_only: dict[str, set[str]]) -> list[str]:
    """The checks a kernel's suite boot runs in this session: all of them under VLAB_FULL,
    else those not in `full_only[kernel]` (whose tests are marked `full`)."""
    return [c for c in checks if FULL or c not in full_only.get(kernel, set())]


# --- which boots share the machine ------------------------------------------------------------
# `make test-lab` runs the boot tests in two phases: those marked `serial` here one at a time
# and alone, the rest TEST_WORKERS at a time (pytest-xdist). A test is serial when its checks
# are timed, so a second guest beside it would change what it measures; a test that only checks
# that figures exist (the seeds' quick reproductions: a verdict of any kind passes) shares.
# Keys: a test file, or file::function. test_veloces.py marks its timed boot itself.
SERIAL: dict[str, str] = {
    # It reads the scenarios' issue log of test_veloces.py's timed boot, which runs them.
    "test_conformance.py": "each scenario's requests are issued at scaled times and its timing is judged",
}

# Files whose tests read one suite boot per kernel (vlab.checks.modsuite, vlab.devices.servedsuite: each check
# is a test); under xdist a kernel's tests must share a worker, or each worker boots the suite.
SUITE_FILES = ("test_veloces.py", "test_served.py")


@pytest.hookimpl(tryfirst=True)  # before -m deselects by marker
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if not FULL and item.get_closest_marker("full") is not None:
            item.add_marker(pytest.mark.skip(reason=FULL_REASON))
        if item.get_closest_marker("boot") is None:
            continue
        if Path(str(item.fspath)).name in SERIAL or test_key(item) in SERIAL:
            item.add_marker(pytest.mark.serial)
    # The longest first, the quick tests last (xdist starts the largest units, the suite boots,
    # then keeps this order): the end of the run is filled with short tests, not one worker
    # finishing a long boot while the others wait.
    items.sort(key=lambda item: -expected_seconds(item))


# Seconds each boot test took in `make test` (2026-11-26, on 2 cores), used only to order
# the tests (longest first); a test not named here is taken as short. Wrong
# figures cost time, never a result.
EXPECTED_S: dict[str, float] = {
    "test_repro.py::test_quick_reproduction_boots_and_judges": 110,
    "test_boot.py::test_scheduler_variants_are_set_per_run": 60,
    "test_served.py::test_a_server_killed_mid_compare_names_the_step_and_keeps_results": 56,
    "test_etrace.py::test_vlab_trace_of_three_known_files": 50,
    "test_boot.py::test_compare_in_tree_schedulers": 40,
    "test_fidelity.py::test_fidelity_quick_runs_one_cell_in_the_lab_and_in_vsim": 64,
    "test_boot.py::test_run_creates_devices_and_propagates_exit_status": 28,
    "test_boot.py::test_unknown_scheduler_lists_offered_ones": 27,
    "test_boot.py::test_guest_crash_is_reported": 24,
    # ~300 s, but a guest asleep after its boot: placed after the busy boots, when the host's
    # checks beside the lab (make test) are done and its boot has a core to itself.
    "test_boot.py::test_guest_timeout_is_reported": 26,
}


def test_key(item: pytest.Item) -> str:
    """`file::function` (parameters left out): how SERIAL and EXPECTED_S name a test."""
    return f"{Path(str(item.fspath)).name}::{getattr(item, 'originalname', item.name)}"


def expected_seconds(item: pytest.Item) -> float:
    seconds = EXPECTED_S.get(test_key(item))
    if seconds is None:
        seconds = 20.0 if item.get_closest_marker("boot") is not None else 0.0
    return seconds


def suite_unit(nodeid: str) -> str | None:
    """`FILE[KERNEL]` for a test of a suite file whose parameters start with a kernel's name
    (`tests/test_veloces.py::test_module[6.12-stress]` -> `tests/test_veloces.py[6.12]`)."""
    from vlab.machine.kernels import KERNELS

    file, _, rest = nodeid.partition("::")
    if Path(file).name not in SUITE_FILES or not rest.endswith("]") or "[" not in rest:
        return None
    params = rest[rest.index("[") + 1 : -1]
    kernel = max((k for k in KERNELS if params == k or params.startswith(k + "-")), key=len, default=None)
    return f"{file}[{kernel}]" if kernel else None


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """`--dist loadgroup`, as the lab needs it: each kernel's suite tests are one unit of work
    (one worker, one boot), every other test a unit of its own; the largest units go first.
    xdist's own loadgroup marks node ids with their group, which pytest 9's node ids no longer
    take, so the units are found here from the node ids instead."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class SuiteScheduling(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            return suite_unit(nodeid) or nodeid

    return SuiteScheduling(config, log)


# --- time per test file -----------------------------------------------------------------------
_seconds: dict[str, float] = {}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    file = report.nodeid.split("::")[0]
    _seconds[file] = _seconds.get(file, 0.0) + report.duration


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    if not _seconds or hasattr(config, "workerinput"):
        return
    terminalreporter.section("seconds per test file (setup, call and teardown; summed over workers)")
    for file, s in sorted(_seconds.items(), key=lambda kv: -kv[1]):
        terminalreporter.write_line(f"{s:8.1f} s  {file}")
