"""The lab's debug kernel: Debian's kernel source built with KASAN, lockdep, list and
object debugging and fault injection, which Debian's own kernels lack.

    python -m vlab.machine.debugkernel build [--series 6.1]   # build if missing, print the tree
    python -m vlab.machine.debugkernel path  [--series 6.1]   # print the tree, or fail if not built

The tree is cached outside the work tree, in $VELOCES_CACHE (default
~/.cache/veloces)/debug-kernel/<series>-<key>/, where the key is a digest of everything
the build depends on: the configuration fragment (lab/debug/<series>.config), the source
tarball, the compiler and virtme-ng. A machine therefore builds each configuration once;
changing the fragment builds a new tree beside the old one.

The configuration is virtme-ng's minimal one (`virtme-configkernel --defconfig`) with the
fragment merged over it (scripts/kconfig/merge_config.sh); every line of the fragment is
checked in the final .config, so an option that Kconfig silently dropped (a missing
dependency) stops the build with its name.
Standard library only (apart from virtme-configkernel, which `make deps` installs).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path

from vlab.paths import repo_root

BUILDER_VERSION = "1"  # bump when the build steps change what comes out
SERIES = ("6.1", "6.12")


class DebugKernelError(Exception):
    """A step of the build failed; the message names it."""


def say(msg: str) -> None:
    print(f"debugkernel: {msg}", flush=True)


def cache_root() -> Path:
    env = os.environ.get("VELOCES_CACHE")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "veloces"


def fragment(series: str) -> Path:
    return repo_root() / "lab" / "debug" / f"{series}.config"


def source_tarball(series: str) -> Path:
    return Path("/usr/src") / f"linux-source-{series}.tar.xz"


def _first_line(cmd: list[str]) -> str:
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, check=False).stdout
    except OSError:
        return "missing"
    return out.splitlines()[0] if out else "missing"


def _configkernel() -> str:
    exe = Path(sys.executable).parent / "virtme-configkernel"
    return str(exe) if exe.exists() else (shutil.which("virtme-configkernel") or "virtme-configkernel")


def cache_key(series: str) -> str:
    tar = source_tarball(series)
    if not tar.is_file():
        raise DebugKernelError(f"{tar} missing: install linux-source-{series} (make deps)")
    st = tar.stat()
    parts = [
        BUILDER_VERSION,
        fragment(series).read_text(),
        f"{tar.name} {st.st_size} {int(st.st_mtime)}",
        _first_line(["gcc", "--version"]),
        _first_line([_configkernel(), "--version"]),
    ]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:12]


def tree_dir(series: str) -> Path:
    return cache_root() / "debug-kernel" / f"{series}-{cache_key(series)}"


def kernel_dir(series: str) -> Path:
    """The kernel tree (source and build) inside the cache entry."""
    return tree_dir(series) / "linux"


def built(series: str) -> bool:
    return (tree_dir(series) / ".built").is_file()


def release(kdir: Path) -> str:
    return (kdir / "include" / "config" / "kernel.release").read_text().strip()


def wanted_options(series: str) -> dict[str, str]:
    """CONFIG_X -> value, as the fragment gives them ('n' for off)."""
    out: dict[str, str] = {}
    for n, line in enumerate(fragment(series).read_text().splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        m = re.fullmatch(r"(CONFIG_[A-Z0-9_]+)=(.*)", line)
        if not m:
            raise DebugKernelError(f"{fragment(series)}:{n}: not CONFIG_X=value: {line!r}")
        out[m.group(1)] = m.group(2)
    return out


def config_mismatches(config_text: str, wanted: dict[str, str]) -> list[str]:
    """Options of the fragment that the final .config does not have as asked."""
    have: dict[str, str] = {}
    for line in config_text.splitlines():
        m = re.fullmatch(r"(CONFIG_[A-Z0-9_]+)=(.*)", line)
        if m:
            have[m.group(1)] = m.group(2)
        m = re.fullmatch(r"# (CONFIG_[A-Z0-9_]+) is not set", line)
        if m:
            have[m.group(1)] = "n"
    bad = []
    for key, value in wanted.items():
        got = have.get(key, "n")
        if got != value:
            bad.append(f"{key}={value} (got {got})")
    return bad


def _run(step: str, cmd: list[str], cwd: Path, log: Path) -> None:
    say(f"{step}: {' '.join(cmd)}")
    with open(log, "a") as f:
        f.write(f"\n== {step}: {' '.join(cmd)}\n")
        f.flush()
        r = subprocess.run(cmd, cwd=cwd, stdout=f, stderr=subprocess.STDOUT, check=False)
    if r.returncode != 0:
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-30:])
        raise DebugKernelError(f"{step} failed (exit {r.returncode}); log {log}:\n{tail}")


def build(series: str, jobs: int | None = None) -> Path:
    """Build the debug kernel for `series` unless the cache has it; return its tree."""
    if series not in SERIES:
        raise DebugKernelError(f"unknown series {series!r}: {', '.join(SERIES)}")
    if not fragment(series).is_file():
        raise DebugKernelError(f"no configuration fragment {fragment(series)}")
    top = tree_dir(series)
    kdir = kernel_dir(series)
    if built(series):
        return kdir
    for tool in ("flex", "bison", "bc", "gcc", "make"):
        if shutil.which(tool) is None:
            raise DebugKernelError(f"{tool} not found: `make deps-debug` installs the kernel build tools")
    if top.exists():
        say(f"removing the unfinished build in {top}")
        shutil.rmtree(top)
    top.mkdir(parents=True)
    log = top / "build.log"
    t0 = time.monotonic()
    say(f"extracting {source_tarball(series)} into {top}")
    with tarfile.open(source_tarball(series), "r:xz") as tar:
        tar.extractall(top, filter="data")
    (src,) = [p for p in top.iterdir() if p.is_dir() and p.name.startswith("linux-source")]
    src.rename(kdir)
    jobs = jobs or os.cpu_count() or 1
    _run("configure", [_configkernel(), "--defconfig"], kdir, log)
    # The fragment goes last, so it wins over virtme-ng's choices (debug info, say).
    _run("merge fragment", ["scripts/kconfig/merge_config.sh", "-m", ".config", str(fragment(series))], kdir, log)
    _run("olddefconfig", ["make", "olddefconfig"], kdir, log)
    bad = config_mismatches((kdir / ".config").read_text(), wanted_options(series))
    if bad:
        raise DebugKernelError(
            f"the final .config lacks options of {fragment(series).name} (a dependency is missing?): " + ", ".join(bad)
        )
    _run("build", ["make", f"-j{jobs}", "bzImage", "modules"], kdir, log)
    _run("modules_prepare", ["make", "modules_prepare"], kdir, log)
    minutes = (time.monotonic() - t0) / 60
    (top / ".built").write_text(f"{release(kdir)}\nbuilt in {minutes:.1f} min with -j{jobs}\n")
    say(f"built {release(kdir)} in {minutes:.1f} min: {kdir}")
    return kdir


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m vlab.machine.debugkernel", description=__doc__.split("\n\n")[0])
    ap.add_argument("action", choices=["build", "path", "release", "key"])
    ap.add_argument("--series", default="6.1", choices=SERIES)
    ap.add_argument("--jobs", type=int, default=None)
    args = ap.parse_args(argv)
    try:
        if args.action == "key":
            print(cache_key(args.series))
        elif args.action == "build":
            print(build(args.series, args.jobs))
        elif not built(args.series):
            raise DebugKernelError(f"the {args.series} debug kernel is not built: make debug-kernel")
        elif args.action == "path":
            print(kernel_dir(args.series))
        else:
            print(release(kernel_dir(args.series)))
    except DebugKernelError as e:
        print(f"debugkernel: error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
