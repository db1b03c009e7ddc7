"""The kernels the lab boots: one table, used by `make deps`, `vlab` and the module build.

Standard library only: `lab/deps.py` imports this before the virtual environment exists.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from vlab.machine import debugkernel
from vlab.paths import build_dir


@dataclass(frozen=True)
class Kernel:
    """One Debian kernel build the lab knows how to install and boot."""

    name: str  # what users type: --kernel 6.1
    release: str  # `uname -r` inside the guest
    image_pkg: str
    headers_pkg: str
    source_pkg: str
    rt: bool = False
    kdir: Path | None = None  # a kernel build tree (the debug kernel) instead of Debian's packages

    @property
    def vmlinuz(self) -> Path:
        if self.kdir is not None:
            return self.kdir / "arch" / "x86" / "boot" / "bzImage"
        return Path("/boot") / f"vmlinuz-{self.release}"

    @property
    def boot_target(self) -> Path:
        """What `vng --run` boots: a build tree brings its own modules, a packaged kernel uses /lib/modules."""
        return self.kdir if self.kdir is not None else self.vmlinuz

    @property
    def boot_args(self) -> tuple[str, ...]:
        """Kernel command-line arguments this kernel always boots with.

        The debug kernel boots with no5lvl: with 5-level paging (QEMU's CPU offers LA57),
        an interrupt that lands while identify_cpu() has cleared the boot CPU's feature
        bits makes KASAN see a 4-level layout for a 5-level address and report a
        wild-memory-access in handle_edge_irq during early boot (seen on 6.1.192 under
        TCG, before any module loads); the report taints the kernel, which turns lockdep
        off for the rest of the run.
        """
        return ("no5lvl",) if self.kdir is not None else ()

    @property
    def conformance_scale(self) -> int:
        """The time scale `vlab conformance` runs scenarios at on this kernel.

        Under TCG each step of a scenario (a submission reaching the device, a completion
        starting the next request) costs 2-5 ms of real time whatever the scale: issues were
        a median 4.5 ms (p90 9 ms) behind the model at scale 20 and 5.0 ms (9.2 ms) at
        scale 60 on 6.1. Divided by the scale, that is what the 500 us slack must cover;
        the debug kernel (KASAN, lockdep) is several times slower per step: at 20 its
        scenario 08 was 250 us over, and at 60, with the host busy compiling, scenario 14
        was 27 us over (a sync write 31 ms of real time behind its submission), so it
        runs at 100. The others run at 60 since CI on 2026-11-25 issued scenario 08's
        timer-released write 11.6 ms of real time late on 6.1: 578 us at 20.
        """
        return 100 if self.kdir is not None else 60

    @property
    def modules_dir(self) -> Path:
        if self.kdir is not None:
            return self.kdir
        return Path("/lib/modules") / self.release

    @property
    def headers_dir(self) -> Path:
        return Path("/usr/src") / f"linux-headers-{self.release}"

    @property
    def source_tarball(self) -> Path:
        series = self.source_pkg.removeprefix("linux-source-")
        return Path("/usr/src") / f"linux-source-{series}.tar.xz"

    def installed(self) -> bool:
        return self.vmlinuz.is_file() and self.modules_dir.is_dir()

    def packages(self) -> list[str]:
        return [self.image_pkg, self.headers_pkg, self.source_pkg]


# Pinned to what bookworm and bookworm-security serve (see docs/lab.md to move them).
_V61 = "6.1.0-56"
_V612 = "6.12.117+deb12"

KERNELS: dict[str, Kernel] = {
    "6.1": Kernel(
        "6.1",
        f"{_V61}-amd64",
        f"linux-image-{_V61}-amd64",
        f"linux-headers-{_V61}-amd64",
        "linux-source-6.1",
    ),
    "6.1-rt": Kernel(
        "6.1-rt",
        f"{_V61}-rt-amd64",
        f"linux-image-{_V61}-rt-amd64",
        f"linux-headers-{_V61}-rt-amd64",
        "linux-source-6.1",
        rt=True,
    ),
    "6.12": Kernel(
        "6.12",
        f"{_V612}-amd64",
        f"linux-image-{_V612}-amd64-unsigned",
        f"linux-headers-{_V612}-amd64",
        "linux-source-6.12",
    ),
    "6.12-rt": Kernel(
        "6.12-rt",
        f"{_V612}-rt-amd64",
        f"linux-image-{_V612}-rt-amd64-unsigned",
        f"linux-headers-{_V612}-rt-amd64",
        "linux-source-6.12",
        rt=True,
    ),
}

DEFAULT_KERNELS = ("6.1", "6.12")


class KernelError(Exception):
    """A kernel that is unknown or not installed; the message says what to do."""


DEBUG_PREFIX = "debug-"


def debug_kernel(series: str) -> Kernel:
    """The lab's debug kernel of `series` (built by `make debug-kernel`), or KernelError."""
    name = f"{DEBUG_PREFIX}{series}"
    try:
        if not debugkernel.built(series):
            raise KernelError(f"the {name} kernel is not built: run `make debug-kernel` (about an hour on 2 cores)")
        kdir = debugkernel.kernel_dir(series)
    except debugkernel.DebugKernelError as e:
        raise KernelError(str(e)) from e
    return Kernel(name, debugkernel.release(kdir), "", "", f"linux-source-{series}", kdir=kdir)


def lookup(series: str, rt: bool = False) -> Kernel:
    """Return the installed kernel for `series` (e.g. "6.1", or "debug-6.1"), or raise KernelError."""
    if series.startswith(DEBUG_PREFIX):
        if rt:
            raise KernelError("the debug kernel has no PREEMPT_RT build")
        return debug_kernel(series.removeprefix(DEBUG_PREFIX))
    key = f"{series}-rt" if rt and not series.endswith("-rt") else series
    kernel = KERNELS.get(key)
    if kernel is None:
        known = ", ".join(k for k in KERNELS if not k.endswith("-rt"))
        raise KernelError(f"unknown kernel {series!r}: the lab knows {known} (add --rt for PREEMPT_RT)")
    if not kernel.installed() and not os.environ.get("VLAB_SKIP_INSTALL_CHECK"):
        raise KernelError(
            f"kernel {kernel.release} is not installed ({kernel.vmlinuz} or {kernel.modules_dir} missing): "
            f"install the Debian package {kernel.image_pkg} "
            f"(`make deps`{' RT=1' if kernel.rt else ''} does it)"
        )
    return kernel


def private_headers_dir(version: str) -> Path:
    """Where `make deps` caches a kernel source's private block/*.h for out-of-tree builds.

    Keyed by the exact upstream version of the source (`make kernelversion`, e.g. 6.1.192):
    the module's Makefile looks up the directory of the version its kernel headers report,
    so headers from another kernel can never be used by mistake.
    """
    return build_dir() / "ksrc" / version
