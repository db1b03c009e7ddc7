#!/usr/bin/env python3
"""`make deps`: install and check everything the lab needs. Idempotent; seconds when done.

1. Debian packages (QEMU, the pinned 6.1 and 6.12 kernels with headers and sources,
   fio, blktrace, module build tools), installed with apt-get only when missing.
2. A Python virtual environment in build/venv with the pinned lab/requirements.txt.
3. The private block/*.h headers of each kernel source, extracted to build/ksrc/<version>/
   (the source's exact upstream version, e.g. 6.1.192; kernel/Makefile checks it).
4. A check of the Rust toolchain, and the simulator built (Cargo profile $VSIM_PROFILE,
   release by default; make test's is fast) while 2 and 3 run.
5. The Python package `vsim` (sim/py) and filebench.

Standard library only: it runs before the virtual environment exists.
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

sys.path.insert(0, str(Path(__file__).resolve().parent))
from vlab.machine.kernels import DEFAULT_KERNELS, KERNELS, Kernel, private_headers_dir
from vlab.paths import build_dir, repo_root, sim_profile

TOOLS = [
    "qemu-system-x86",
    "busybox-static",  # virtme-ng's initramfs
    "kmod",
    "fio",  # also fio_jsonplus_clat2csv, which sim/cli/tests/fio_json.rs runs on vsim's JSON
    "python3-pandas",  # sim/cli/tests/fio_json.rs: a pandas script on vsim's JSON (/usr/bin/python3)
    "python3-six",  # fio_jsonplus_clat2csv imports six; Debian's fio does not depend on it
    "blktrace",
    "python3-venv",
    "gcc",
    "make",
    "libelf-dev",
    "sparse",
    "xz-utils",
    "nbdkit",  # serves vsim's device models to the guest (vlab.devices.vsimdev, sim/nbdkit)
    "nbd-client",
    "libclang1-14",  # bindgen (libublk-rs-sys) in building sim/ublk, the ublk server (bpftrace also pulls it)
    "libnbd-bin",  # nbdcopy: the plugin's host-side test
    "e2fsprogs",  # mkfs.ext4 on served devices
    "dbench",  # lab/jobs/dbench-ext4.sh
    "bpftrace",  # vlab trace (lab/vlab/etrace)
    "bc",  # lab/jobs/ext4-copy-tree.sh
    "chromium",  # the HTML reports' test loads each kind in headless Chromium (lab/tests/test_report.py)
    "chromium-driver",  # ... driven by selenium through Debian's chromedriver
    "fonts-dejavu-core",  # the reports' font, in the plots and the page
    # The reproductions of seeds 000 and 001 (vlab.repro): the filesystems' tools ...
    "xfsprogs",
    "btrfs-progs",
    "f2fs-tools",
    "nilfs-tools",
    # ... and what building filebench from its source needs (build_filebench).
    "autoconf",
    "automake",
    "libtool",
    "bison",
    "flex",
]
# `make deps-debug`: what building the debug kernel from linux-source needs.
DEBUG_TOOLS = ["flex", "bison", "bc", "libssl-dev", "libelf-dev"]


class DepsError(Exception):
    pass


def say(msg: str) -> None:
    print(f"deps: {msg}", flush=True)


def missing_packages(names: list[str]) -> list[str]:
    proc = subprocess.run(
        ["dpkg-query", "-W", "-f=${Package} ${db:Status-Abbrev}\n", *names],
        capture_output=True,
        text=True,
        check=False,
    )
    ok = {line.split()[0] for line in proc.stdout.splitlines() if line.split()[1:2] == ["ii"]}
    return [n for n in names if n not in ok]


def apt_install(pkgs: list[str], downgrade: bool = False) -> None:
    if shutil.which("apt-get") is None:
        raise DepsError(f"apt-get not found: install these Debian packages by hand: {' '.join(pkgs)}")
    prefix = [] if os.geteuid() == 0 else ["sudo", "-n"]
    if prefix and shutil.which("sudo") is None:
        raise DepsError(f"not root and no sudo: as root, run apt-get install {' '.join(pkgs)}")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive", INITRD="No")  # virtme-ng needs no initrd
    lists = Path("/var/lib/apt/lists")
    fresh = any(p.stat().st_mtime > time.time() - 86400 for p in lists.glob("*_Packages*"))
    if not fresh:
        say("apt-get update")
        subprocess.run([*prefix, "apt-get", "update", "-q"], env=env, check=False)
    say(f"apt-get install {' '.join(pkgs)}")
    cmd = [*prefix, "apt-get", "install", "-y", "-q", "--no-install-recommends"]
    if downgrade:
        cmd.append("--allow-downgrades")
    if subprocess.run([*cmd, *pkgs], env=env, check=False).returncode == 0:
        return
    # Name the package that will not install.
    for pkg in pkgs:
        if (downgrade or missing_packages([pkg])) and subprocess.run([*cmd, pkg], env=env, check=False).returncode != 0:
            raise DepsError(f"the Debian package {pkg} will not install (see apt-get's message above)")


def match_sources(kernels: list[Kernel]) -> None:
    """Each kernel's linux-source at its headers' Debian version. The archive moves the
    source package on (bookworm-security served linux-source-6.1 6.1.192-3 beside the pinned
    ABI 6.1.0-56's headers at 6.1.192-2, 2026-11-28), and kernel/Makefile rightly refuses
    private block headers from another Debian revision than the headers it builds against;
    the archive keeps the older source versions, so install the matching one."""
    for kernel in kernels:
        if kernel.rt:
            continue  # shares its series' source with the non-RT kernel
        want = package_version(kernel.headers_pkg)
        if want and package_version(kernel.source_pkg) != want:
            apt_install([f"{kernel.source_pkg}={want}"], downgrade=True)
            have = package_version(kernel.source_pkg)
            if have != want:
                raise DepsError(f"{kernel.source_pkg} is {have or 'not installed'}, its headers' {want} is needed")


def ensure_venv() -> Path:
    venv = build_dir() / "venv"
    req = repo_root() / "lab" / "requirements.txt"
    digest = hashlib.sha256(req.read_bytes()).hexdigest()
    stamp = venv / ".requirements.sha256"
    if stamp.exists() and stamp.read_text().strip() == digest:
        return venv
    say(f"creating {venv} with {req.name}")
    if subprocess.run([sys.executable, "-m", "venv", str(venv)], check=False).returncode != 0:
        raise DepsError(f"{sys.executable} -m venv failed: install python3-venv")
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    if subprocess.run([*pip, "-r", str(req)], check=False).returncode != 0:
        raise DepsError(f"pip could not install {req}")
    stamp.write_text(digest + "\n")
    return venv


def _makefile_version(text: str) -> str:
    """VERSION.PATCHLEVEL.SUBLEVEL from a kernel's top-level Makefile."""
    fields = dict(re.findall(r"^(VERSION|PATCHLEVEL|SUBLEVEL) = (\d+)$", text, re.M))
    if len(fields) != 3:
        raise DepsError("cannot read VERSION/PATCHLEVEL/SUBLEVEL from the kernel source's Makefile")
    return f"{fields['VERSION']}.{fields['PATCHLEVEL']}.{fields['SUBLEVEL']}"


def package_version(pkg: str) -> str:
    proc = subprocess.run(["dpkg-query", "-W", "-f=${Version}", pkg], capture_output=True, text=True, check=False)
    return proc.stdout.strip() if proc.returncode == 0 else ""


def extract_private_headers(kernel: Kernel) -> Path:
    """block/*.h of the kernel source: out-of-tree elevators include elevator.h, blk-mq.h and friends.

    They go to build/ksrc/<upstream version>/ with a `.veloces-version` file holding the upstream
    version and the Debian package version, which kernel/Makefile checks against the
    headers of the kernel it builds for.
    """
    tarball = kernel.source_tarball
    stamp_text = f"{tarball} {tarball.stat().st_mtime} {package_version(kernel.source_pkg)}"
    for done in build_dir().glob("ksrc/*/.extracted"):
        if done.read_text().strip() == stamp_text:
            return done.parent
    say(f"extracting block/*.h and scripts/checkpatch.pl from {tarball}")
    tmp = build_dir() / "ksrc" / f".partial-{kernel.name}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    wanted = ("block/", "scripts/checkpatch.pl", "scripts/spelling.txt", "scripts/const_structs.checkpatch")
    version = ""
    with tarfile.open(tarball, "r:xz") as tar:
        for member in tar:
            rel = member.name.split("/", 1)[1] if "/" in member.name else ""
            if not member.isfile():
                continue
            if rel == "Makefile":
                f = tar.extractfile(member)
                version = _makefile_version(f.read().decode(errors="replace")) if f else ""
            if (rel.startswith("block/") and rel.endswith(".h") and rel.count("/") == 1) or rel in wanted:
                member.name = rel
                tar.extract(member, tmp, filter="data")
    if not version:
        raise DepsError(f"{tarball} has no top-level Makefile: not a kernel source tarball")
    (tmp / ".veloces-version").write_text(f"{version} {package_version(kernel.source_pkg)}\n")
    (tmp / ".extracted").write_text(stamp_text + "\n")
    dest = private_headers_dir(version)
    shutil.rmtree(dest, ignore_errors=True)
    tmp.rename(dest)
    say(f"private headers of {version} in {dest}")
    return dest


def check_rust() -> None:
    cargo = shutil.which("cargo") or str(Path.home() / ".cargo" / "bin" / "cargo")
    try:
        out = subprocess.run([cargo, "--version"], capture_output=True, text=True, check=True).stdout.strip()
        say(f"Rust toolchain: {out}")
    except (OSError, subprocess.CalledProcessError):
        raise DepsError(
            "no Rust toolchain (cargo) found; the simulator (sim/) needs one: install it with rustup (https://rustup.rs)"
        ) from None


def start_sim_build() -> subprocess.Popen[bytes]:
    """Start building the simulator (release) in the background: it is CPU-bound and the
    virtual environment's install and the headers' extraction that run beside it are not.
    cargo fetches the pinned crates from Cargo.lock. finish_sim_build() waits for it."""
    cargo = shutil.which("cargo") or str(Path.home() / ".cargo" / "bin" / "cargo")
    manifest = repo_root() / "sim" / "Cargo.toml"
    profile = sim_profile()
    say(
        f"building the simulator, its nbdkit plugin and ublk server (sim/, cargo build --profile {profile} --locked "
        "--workspace)"
    )
    return subprocess.Popen(
        [cargo, "build", "--profile", profile, "--quiet", "--locked", "--workspace", "--exclude", PY_CRATE,
         "--manifest-path", str(manifest)]
    )  # fmt: skip


def finish_sim_build(proc: subprocess.Popen[bytes]) -> None:
    rc = proc.wait()
    if rc != 0:
        raise DepsError(f"building the simulator failed (cargo exit {rc}); see the messages above")


PY_CRATE = "vsim-py"


def build_python_api(venv: Path) -> None:
    """Build the Python package `vsim` (sim/py: PyO3, maturin) into build/wheels and install
    it into the venv, unless what is installed is newer than every file it is built from
    (the stamp's time; `./vsim sweep` makes the same check) and was built in the same Cargo
    profile (the stamp's second word)."""
    stamp = venv / ".vsim-wheel.sha256"
    profile = sim_profile()
    sim = repo_root() / "sim"
    # The core is built from sim/src and, by sim/build.rs, from veloces's tunables table.
    sources = [sim / "Cargo.toml", sim / "Cargo.lock", sim / "py" / "Cargo.toml", sim / "py" / "pyproject.toml",
               sim / "build.rs", repo_root() / "kernel" / "veloces-tunables.h",
               *(f for d in ("src", "py/src", "py/python") for f in (sim / d).rglob("*") if f.is_file())]  # fmt: skip
    stamped = stamp.read_text().split() if stamp.exists() else []
    if stamped[1:] == [profile] and max(f.stat().st_mtime for f in sources) <= stamp.stat().st_mtime:
        return
    cargo = shutil.which("cargo") or str(Path.home() / ".cargo" / "bin" / "cargo")
    wheels = build_dir() / "wheels"
    for old in wheels.glob("*vsim-*.whl"):
        old.unlink()
    say(f"building the Python API (sim/py, maturin build --profile {profile})")
    env = {**os.environ, "PATH": f"{Path(cargo).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    r = subprocess.run(
        [str(venv / "bin" / "maturin"), "build", "--profile", profile, "--quiet", "--locked", "-m",
         str(repo_root() / "sim" / "py" / "Cargo.toml"), "-i", str(venv / "bin" / "python"), "--out", str(wheels)],
        env=env, check=False,
    )  # fmt: skip
    built = sorted(wheels.glob("veloces_vsim-*.whl"))
    if r.returncode != 0 or len(built) != 1:
        raise DepsError(f"building the Python API failed (maturin exit {r.returncode}); see the messages above")
    digest = hashlib.sha256(built[0].read_bytes()).hexdigest()
    if stamped == [digest, profile]:
        stamp.touch()  # the installed package is current as of now
        return
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    # The package was distributed as `vsim` until 2026-11-28 (a name another project has on
    # the public index): an old install of it goes first, or removing it later would take
    # the files `veloces-vsim` shares with it.
    subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "uninstall", "-q", "-y", "vsim"],
                   check=False, capture_output=True)  # fmt: skip
    if subprocess.run([*pip, "--force-reinstall", "--no-deps", str(built[0])], check=False).returncode != 0:
        raise DepsError(f"pip could not install {built[0]}")
    stamp.write_text(f"{digest} {profile}\n")


def build_filebench() -> None:
    """Build and install filebench under build/filebench from its source (never copied into
    the repository): $VELOCES_FILEBENCH, or the snapshot beside the project. Without one, say
    what to provide; only the reproductions need it (vlab.workloads.filebench)."""
    from vlab.workloads import filebench

    src = filebench.source_dir()
    if filebench.installed():
        say(f"filebench: {filebench.binary()} (built from {src})")
        return
    if not (src / "configure.ac").is_file():
        say(f"filebench: no source at {src}; the reproductions need it: set {filebench.ENV_VAR}")
        return
    say(f"filebench: building from {src} into {filebench.prefix()} (~1 min)")
    try:
        filebench.build(src)
    except filebench.FilebenchError as e:
        raise DepsError(str(e)) from None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rt", action="store_true", help="also install the PREEMPT_RT kernels")
    parser.add_argument("--debug", action="store_true", help="also install the debug kernel's build tools")
    args = parser.parse_args()
    kernels = [KERNELS[k] for k in DEFAULT_KERNELS]
    if args.rt:
        kernels += [KERNELS[f"{k}-rt"] for k in DEFAULT_KERNELS]
    try:
        wanted = TOOLS + (DEBUG_TOOLS if args.debug else []) + [p for k in kernels for p in k.packages()]
        missing = missing_packages(wanted)
        if missing:
            apt_install(missing)
        still = missing_packages(wanted)
        if still:
            raise DepsError(f"still missing after apt-get: {' '.join(still)}")
        match_sources(kernels)
        check_rust()
        sim = start_sim_build()
        try:
            venv = ensure_venv()
            for kernel in kernels:
                if not kernel.rt:
                    extract_private_headers(kernel)
        except BaseException:
            sim.terminate()
            sim.wait()
            raise
        finish_sim_build(sim)
        build_python_api(venv)
        build_filebench()
    except (DepsError, ValueError) as e:  # ValueError: a bad VSIM_PROFILE
        print(f"deps: error: {e}", file=sys.stderr)
        return 1
    say("ok: " + ", ".join(k.release for k in kernels))
    return 0


if __name__ == "__main__":
    sys.exit(main())
