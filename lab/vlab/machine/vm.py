"""Booting a kernel under QEMU with virtme-ng and running the guest side of vlab in it.

The host's root file system is the guest's (read-only, with tmpfs overlays), so the
repository, fio and the kernel's modules are all there. The run's output directory is
shared read-write at the same path. The guest reports back through files in
`OUT/.vlab/`: `request.json` (what to do), `exit` (the exit status) and `error.json`
(the step that failed). No `exit` file after QEMU stops means the guest died.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, TextIO

from vlab.machine import request as guest_request
from vlab.machine.kernels import KERNELS, Kernel
from vlab.paths import build_dir, repo_root

EXIT_TIMEOUT = 124
EXIT_CRASH = 125
EXIT_KERNEL_REPORT = 126
# Seconds a boot takes under TCG, with room: added to a command's own time for its timeout.
BOOT_ALLOWANCE_S = 180
KVM_PROBE_TIMEOUT_S = 40


class VmError(Exception):
    """virtme-ng or QEMU could not be started."""


@dataclass(frozen=True)
class BootResult:
    exit_status: int | None  # the guest command's status; None if it never reported one
    timed_out: bool
    wall_s: float
    console_log: Path

    @property
    def crashed(self) -> bool:
        return self.exit_status is None and not self.timed_out


def control_dir(out: Path) -> Path:
    return out / ".vlab"


def _vng() -> str:
    exe = Path(sys.executable).parent / "vng"
    found = str(exe) if exe.exists() else shutil.which("vng")
    if not found:
        raise VmError("virtme-ng (vng) not found: run `make deps`")
    return found


def _env() -> dict[str, str]:
    env = dict(os.environ)
    # vng calls virtme-run and friends by name: they live beside the interpreter.
    env["PATH"] = f"{Path(sys.executable).parent}:{env.get('PATH', '/usr/bin:/bin')}"
    return env


def kvm_usable() -> bool:
    """Whether to boot with KVM: only where a probe boot has shown it works.

    VLAB_KVM=0/1 overrides. The probe's verdict is cached per host kernel, since
    KVM guests can hang (they do on the machines this lab was built on).
    """
    forced = os.environ.get("VLAB_KVM")
    if forced in ("0", "1"):
        return forced == "1"
    if not os.access("/dev/kvm", os.R_OK | os.W_OK):
        return False
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "veloces"
    stamp = cache / f"kvm-probe-{os.uname().release}"
    if stamp.exists():
        return stamp.read_text().strip() == "ok"
    kernel = next((k for k in KERNELS.values() if k.installed()), None)
    if kernel is None:
        return False
    print(f"vlab: probing KVM (once per host kernel, up to {KVM_PROBE_TIMEOUT_S} s)...", file=sys.stderr)
    proc = subprocess.Popen(
        [_vng(), "--run", str(kernel.vmlinuz), "--memory", "512M", "--", "true"],
        env=_env(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        ok = proc.wait(timeout=KVM_PROBE_TIMEOUT_S) == 0
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        ok = False
    cache.mkdir(parents=True, exist_ok=True)
    stamp.write_text("ok\n" if ok else "hangs or fails: using TCG\n")
    print(f"vlab: KVM {'works' if ok else 'does not work here: booting under TCG'}", file=sys.stderr)
    return ok


def tcg_threading() -> str:
    """TCG's vCPU threading: "single" (one host thread runs every vCPU) unless VLAB_TCG_THREAD says.

    Multi-threaded TCG (QEMU 7.2, Debian 12) hangs guests that patch kernel text while
    both vCPUs run: one vCPU loops in exc_int3 at a patch site and never answers
    text_poke_bp's sync IPI (docs/lab.md, "TCG and text patching").
    """
    mode = os.environ.get("VLAB_TCG_THREAD", "single")
    if mode not in ("single", "multi"):
        raise VmError(f"VLAB_TCG_THREAD must be single or multi, not {mode!r}")
    return mode


def python_for_guest() -> str:
    return sys.executable


# The host's environment does not reach the guest (virtme-ng starts it afresh); these do:
# which build of the simulator a served device runs (vlab.paths.sim_profile).
PASSED_ENV = ("VSIM_PROFILE",)


def command_line(
    kernel: Kernel,
    out: Path,
    *,
    memory: str,
    cpus: int,
    append: list[str] | None,
    accel: list[str],
    possible_cpus: int | None = None,
) -> list[str]:
    """The virtme-ng command line that boots `kernel` and runs `python -m vlab.machine.guest OUT`
    (`accel`: the accelerator's options, none for KVM; `possible_cpus`: CPUs the guest may
    hot-add, its nr_cpu_ids, beyond the `cpus` it boots with)."""
    root = repo_root()
    passed = "".join(f"{k}={shlex.quote(os.environ[k])} " for k in PASSED_ENV if os.environ.get(k))
    script = (
        f"cd {shlex.quote(str(root))} && "
        f"{passed}PYTHONPATH={shlex.quote(str(root / 'lab'))} "
        f"exec {shlex.quote(python_for_guest())} -m vlab.machine.guest {shlex.quote(str(out))} 2>&1"
    )
    argv = [
        _vng(),
        "--run",
        str(kernel.boot_target),
        "--verbose",  # the kernel console goes to stderr, which becomes console.log
        "--memory",
        memory,
        "--cpus",
        # QEMU's -smp: maxcpus makes CPUs possible (counted by nr_cpu_ids) but not present.
        f"{cpus},maxcpus={possible_cpus}" if possible_cpus else str(cpus),
        "--rwdir",
        str(out),
        "--cwd",
        str(root),
    ]
    argv += accel
    for arg in [*kernel.boot_args, *(append or [])]:
        argv += ["--append", arg]
    argv += ["--", script]
    return argv


def boot(
    kernel: Kernel,
    out: Path,
    request: guest_request.GuestRequest,
    *,
    timeout_s: float,
    memory: str = "2G",
    cpus: int = 2,
    append: list[str] | None = None,
    possible_cpus: int | None = None,
) -> BootResult:
    """Boot `kernel`, run `python -m vlab.machine.guest OUT` in it, stream its output, and wait."""
    out = out.resolve()
    ctl = control_dir(out)
    ctl.mkdir(parents=True, exist_ok=True)
    for stale in ("exit", "error.json"):
        (ctl / stale).unlink(missing_ok=True)
    (ctl / "request.json").write_text(guest_request.to_json(request))
    console = out / "console.log"
    accel = [] if kvm_usable() else ["--disable-kvm", f"--qemu-opts=-accel tcg,thread={tcg_threading()}"]
    argv = command_line(kernel, out, memory=memory, cpus=cpus, append=append, accel=accel, possible_cpus=possible_cpus)

    start = time.monotonic()
    timed_out = False
    with open(console, "w") as log, open(out / "guest.log", "wb") as guest_log:
        try:
            # stdout goes through a pipe: QEMU opens /proc/self/fd/1 with O_TRUNC, which
            # would clobber a log file that our caller redirected stdout to.
            proc = subprocess.Popen(
                argv,
                env=_env(),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=log,
                start_new_session=True,
            )
        except OSError as e:
            raise VmError(f"cannot start {argv[0]}: {e}") from e
        assert proc.stdout is not None
        relay = threading.Thread(target=_relay, args=(proc.stdout.fileno(), guest_log), daemon=True)
        relay.start()
        try:
            _wait(proc, ctl / "exit", start + timeout_s, log)
        except subprocess.TimeoutExpired:
            timed_out = True
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        except KeyboardInterrupt:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            raise
        finally:
            relay.join(timeout=5)
            proc.stdout.close()
    wall = time.monotonic() - start

    exit_file = ctl / "exit"
    status: int | None = None
    if exit_file.exists():
        try:
            status = int(exit_file.read_text().strip())
        except ValueError:
            status = None
    return BootResult(status, timed_out, wall, console)


# The guest powers off once its command has written `exit`; one that has not within this
# long after is stopped (its results are written). Seen on 6.12 after compares on served
# devices: the guest's script ended, QEMU kept running a vCPU at full speed for minutes.
POWEROFF_GRACE_S = 60


def _wait(proc: subprocess.Popen[bytes], exit_file: Path, deadline: float, log: TextIO) -> None:
    """Until QEMU exits; raises TimeoutExpired at `deadline`. A guest that does not power off
    within POWEROFF_GRACE_S of writing its exit status is killed, and the console says so."""
    reported: float | None = None
    while True:
        try:
            proc.wait(timeout=1)
            return
        except subprocess.TimeoutExpired:
            pass
        now = time.monotonic()
        if now > deadline:
            raise subprocess.TimeoutExpired(proc.args, 0)
        if reported is None and exit_file.exists():
            reported = now
        if reported is not None and now - reported > POWEROFF_GRACE_S:
            log.write(f"vlab: the guest wrote its exit status but did not power off within {POWEROFF_GRACE_S} s: "
                      "stopped\n")  # fmt: skip
            log.flush()
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            return


def _relay(fd: int, copy: BinaryIO) -> None:
    """Copy the guest's output to our stdout as it comes, and to OUT/guest.log. A process
    left from a killed guest may hold the pipe past the 5 s the runner waits before closing
    both: what it writes after that is dropped, not raised in this thread."""
    try:
        while chunk := os.read(fd, 65536):
            sys.stdout.buffer.write(chunk)
            sys.stdout.buffer.flush()
            copy.write(chunk)
        copy.flush()
    except (ValueError, OSError):
        return


# Most telling first: a panic line names the cause; the others explain a later panic.
CRASH_MARKERS = ("Kernel panic", "BUG: ", "Oops: ", "general protection fault", "blocked for more than")

# What the debug kernel's checkers print (KASAN, lockdep, list and object debugging, the
# hung-task and lockup detectors), and the generic warnings and bugs.
REPORT_MARKERS = (
    "BUG: ",
    "WARNING: ",
    "Oops",
    "general protection fault",
    "kernel BUG at",
    "list_add corruption",
    "list_del corruption",
    "ODEBUG: ",
    "possible circular locking",
    "inconsistent lock state",
    "possible recursive locking",
    "blocked for more than",
    "soft lockup",
    "hard LOCKUP",
    "UBSAN: ",
)


def kernel_reports(path: Path) -> list[str]:
    """Console lines where the kernel reported a bug, a warning or a checker's finding."""
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return []
    return [line.strip() for line in lines if any(m in line for m in REPORT_MARKERS)]


def crash_reason(path: Path) -> str | None:
    """The first console line that says why the kernel died, if any."""
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return None
    for marker in CRASH_MARKERS:
        for line in lines:
            if marker in line:
                return line.strip()
    return None


def console_tail(path: Path, lines: int = 25) -> str:
    try:
        text = path.read_text(errors="replace").splitlines()
    except OSError:
        return ""
    return "\n".join(text[-lines:])


def default_out(kind: str) -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    return build_dir() / "runs" / f"{stamp}-{kind}-{os.getpid()}"


def report_boot(result: BootResult, out: Path, timeout: float, kernel: Kernel) -> int | None:
    """Say how the guest ended if it did not end normally; return the exit status to use."""
    err_file = control_dir(out) / "error.json"
    if result.timed_out:
        print(f"vlab: guest timed out after {timeout:g} s and was killed; partial results in {out}", file=sys.stderr)
        return EXIT_TIMEOUT
    if result.crashed:
        reason = crash_reason(result.console_log) or "no panic message on the console"
        print(
            f"vlab: guest crashed: it stopped without reporting an exit status ({reason}). "
            f"Last console lines ({result.console_log}):\n" + console_tail(result.console_log),
            file=sys.stderr,
        )
        return EXIT_CRASH
    if err_file.exists():
        err = json.loads(err_file.read_text())
        print(f"vlab: failed at step '{err['step']}': {err['message']}", file=sys.stderr)
        return result.exit_status
    if strict_kernel_log(kernel):
        reports = kernel_reports(result.console_log)
        if reports:
            print(
                f"vlab: the kernel reported {len(reports)} problem(s) ({result.console_log}):\n  "
                + "\n  ".join(reports[:20]),
                file=sys.stderr,
            )
            return EXIT_KERNEL_REPORT
    return None


def strict_kernel_log(kernel: Kernel) -> bool:
    """Any report on the console fails the run: always on the debug kernel, elsewhere with
    VLAB_STRICT_KERNEL_LOG=1."""
    return kernel.kdir is not None or os.environ.get("VLAB_STRICT_KERNEL_LOG") == "1"
