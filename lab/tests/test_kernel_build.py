"""The module's build refuses private block headers of another kernel (kernel/Makefile).

A mismatch would build and then corrupt memory at run time (struct layouts in block/*.h
change between releases), so the check is tested, not assumed. Also the udev rule's scope.
"""

import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import REPO

from vlab.machine.kernels import DEFAULT_KERNELS, KERNELS

KERNEL = KERNELS[DEFAULT_KERNELS[0]]


def _headers() -> Path:
    """The private headers `make deps` extracted for KERNEL, or skip."""
    if not KERNEL.headers_dir.is_dir():
        pytest.skip(f"linux-headers-{KERNEL.release} not installed (make deps)")
    version = subprocess.run(
        ["make", "-s", "--no-print-directory", "-C", str(KERNEL.headers_dir), "kernelversion"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    found = REPO / "build" / "ksrc" / version
    if not (found / "block" / "elevator.h").is_file():
        pytest.skip(f"{found} missing (make deps)")
    return found


def _build(ksrc: Path | None) -> subprocess.CompletedProcess[str]:
    args = ["make", "-C", str(REPO / "kernel"), "modules", f"KVER={KERNEL.release}"]
    if ksrc is not None:
        args.append(f"KSRC={ksrc}")
    return subprocess.run(args, capture_output=True, text=True, check=False, timeout=600)


def test_headers_of_another_upstream_version_are_refused(tmp_path: Path) -> None:
    fake = tmp_path / "ksrc"
    shutil.copytree(_headers(), fake)
    (fake / ".veloces-version").write_text("6.0.1 6.0.1-1\n")
    p = _build(fake)
    assert p.returncode != 0
    assert "refusing to build" in p.stdout and "6.0.1" in p.stdout, p.stdout + p.stderr


def test_headers_of_another_debian_revision_are_refused(tmp_path: Path) -> None:
    real = _headers()
    fake = tmp_path / "ksrc"
    shutil.copytree(real, fake)
    upstream = (real / ".veloces-version").read_text().split()[0]
    (fake / ".veloces-version").write_text(f"{upstream} {upstream}-999\n")
    p = _build(fake)
    assert p.returncode != 0
    assert "Debian source package" in p.stdout and "-999" in p.stdout, p.stdout + p.stderr


def test_missing_headers_name_the_version(tmp_path: Path) -> None:
    _headers()
    p = _build(tmp_path / "nothing-here")
    assert p.returncode != 0
    assert "no private block headers for kernel" in p.stdout, p.stdout + p.stderr


def test_udev_rule_scope() -> None:
    rule = (REPO / "kernel" / "udev" / "60-veloces.rules").read_text()
    active = " ".join(line for line in rule.splitlines() if not line.startswith("#")).replace("\\", " ")
    assert 'KERNEL=="sd*|mmcblk[0-9]|mmcblk[0-9][0-9]"' in active
    assert 'ATTR{queue/rotational}=="0"' in active
    assert 'ATTR{queue/zoned}=="none"' in active
    assert 'ENV{VELOCES_SKIP}!="1"' in active
    assert "nvme" not in active
