from pathlib import Path

import pytest

from vlab.machine.vm import VmError, console_tail, crash_reason, tcg_threading

BOOT = "[    0.642948] NMI watchdog: Perf NMI watchdog permanently disabled\n"


def test_crash_reason_prefers_the_panic_line(tmp_path: Path) -> None:
    log = tmp_path / "console.log"
    log.write_text(
        BOOT
        + "[   19.3] BUG: kernel NULL pointer dereference, address: 0000000000000008\n"
        + "[   19.4] Kernel panic - not syncing: Fatal exception\n"
        + "[   19.5]  </TASK>\n"
    )
    assert crash_reason(log) == "[   19.4] Kernel panic - not syncing: Fatal exception"
    assert console_tail(log, 1) == "[   19.5]  </TASK>"


def test_no_crash_reason_in_a_clean_boot(tmp_path: Path) -> None:
    log = tmp_path / "console.log"
    log.write_text(BOOT + "[    1.0] reboot: Power down\n")
    assert crash_reason(log) is None
    assert crash_reason(tmp_path / "missing.log") is None


def test_tcg_is_single_threaded_unless_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("VLAB_TCG_THREAD", raising=False)
    assert tcg_threading() == "single"
    monkeypatch.setenv("VLAB_TCG_THREAD", "multi")
    assert tcg_threading() == "multi"
    monkeypatch.setenv("VLAB_TCG_THREAD", "fast")
    with pytest.raises(VmError, match="single or multi"):
        tcg_threading()


def test_a_guest_that_reported_but_does_not_power_off_is_stopped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A QEMU that keeps running after the guest wrote its exit status is killed after the
    grace period (its results are there), and the console says so; one still working is not."""
    import subprocess
    import time

    from vlab.machine import vm

    monkeypatch.setattr(vm, "POWEROFF_GRACE_S", 1)
    exit_file = tmp_path / "exit"
    proc = subprocess.Popen(["sleep", "600"], start_new_session=True)
    console = tmp_path / "console.log"
    with open(console, "w") as log:
        with pytest.raises(subprocess.TimeoutExpired):
            vm._wait(proc, exit_file, time.monotonic() + 2.5, log)  # no exit status: runs to the deadline
        assert proc.poll() is None
        exit_file.write_text("0\n")
        started = time.monotonic()
        vm._wait(proc, exit_file, time.monotonic() + 60, log)
    assert proc.poll() is not None and time.monotonic() - started < 10
    assert "did not power off" in console.read_text()
