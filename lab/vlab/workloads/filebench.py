"""Filebench, the workload generator the seeds used, built from its source beside the project.

The source is not part of this repository: a snapshot lives beside it ($VELOCES_FILEBENCH,
default ../shared/third_party/filebench). `make deps` copies it to build/filebench-src,
builds it there with autotools and installs it under build/filebench (installed, not run
from the build tree: personalities with custom variables need its installed cvar
libraries). The guest runs the installed binary from the shared host filesystem.

Personalities are written here from parameters (`personality`), not copied from its
`workloads/` folder: the flowops are filebench's varmail, fileserver and webserver; the
numbers are the seeds' (seed 001, Table 1), scaled to the lab's devices by the caller.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from vlab.paths import build_dir, repo_root

ENV_VAR = "VELOCES_FILEBENCH"


class FilebenchError(Exception):
    pass


def source_dir() -> Path:
    """Where filebench's source is expected ($VELOCES_FILEBENCH or the shared snapshot)."""
    env = os.environ.get(ENV_VAR)
    return Path(env) if env else repo_root().parent / "shared" / "third_party" / "filebench"


def prefix() -> Path:
    return build_dir() / "filebench"


def binary() -> Path:
    return prefix() / "bin" / "filebench"


def installed() -> bool:
    return binary().is_file() and os.access(binary(), os.X_OK)


def require() -> Path:
    """The installed binary, or an error saying what to provide."""
    if installed():
        return binary()
    src = source_dir()
    hint = (
        f"run `make deps` (it builds {src})"
        if (src / "configure.ac").is_file()
        else f"no filebench source at {src}: set {ENV_VAR} to a filebench checkout, then run `make deps`"
    )
    raise FilebenchError(f"filebench is not installed at {binary()}: {hint}")


def build(src: Path) -> Path:
    """Copy `src` to build/filebench-src, build and install it under build/filebench."""
    work = build_dir() / "filebench-src"
    if work.exists():
        shutil.rmtree(work)
    shutil.copytree(src, work, ignore=shutil.ignore_patterns(".git"))
    steps = [
        ["libtoolize", "--quiet"],
        ["aclocal"],
        ["autoheader"],
        ["automake", "--add-missing"],
        ["autoconf"],
        ["./configure", "--quiet", f"--prefix={prefix()}"],
        ["make", f"-j{os.cpu_count() or 1}"],
        ["make", "install"],
    ]
    for step in steps:
        proc = subprocess.run(step, cwd=work, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            tail = (proc.stderr or proc.stdout).strip()[-1500:]
            raise FilebenchError(f"building filebench: `{' '.join(step)}` failed in {work}:\n{tail}")
    if not installed():
        raise FilebenchError(f"building filebench: `make install` left no {binary()}")
    return binary()


@dataclass(frozen=True)
class Personality:
    """One filebench personality's parameters (seed 001's Table 1 columns)."""

    name: str  # varmail, fileserver, webserver
    nfiles: int
    mean_file_kb: int
    threads: int
    iosize: str = "1m"
    append_kb: int = 16


# The flowops of filebench's own personalities (workloads/varmail.f, fileserver.f,
# webserver.f), with every number a parameter.
_FLOWS = {
    "varmail": (
        "dirwidth=1000000,prealloc=80",
        """    flowop deletefile name=deletefile1,filesetname=bigfileset
    flowop createfile name=createfile2,filesetname=bigfileset,fd=1
    flowop appendfilerand name=appendfilerand2,iosize=$meanappendsize,fd=1
    flowop fsync name=fsyncfile2,fd=1
    flowop closefile name=closefile2,fd=1
    flowop openfile name=openfile3,filesetname=bigfileset,fd=1
    flowop readwholefile name=readfile3,fd=1,iosize=$iosize
    flowop appendfilerand name=appendfilerand3,iosize=$meanappendsize,fd=1
    flowop fsync name=fsyncfile3,fd=1
    flowop closefile name=closefile3,fd=1
    flowop openfile name=openfile4,filesetname=bigfileset,fd=1
    flowop readwholefile name=readfile4,fd=1,iosize=$iosize
    flowop closefile name=closefile4,fd=1
""",
    ),
    "fileserver": (
        "dirwidth=20,prealloc=80",
        """    flowop createfile name=createfile1,filesetname=bigfileset,fd=1
    flowop writewholefile name=wrtfile1,srcfd=1,fd=1,iosize=$iosize
    flowop closefile name=closefile1,fd=1
    flowop openfile name=openfile1,filesetname=bigfileset,fd=1
    flowop appendfilerand name=appendfilerand1,iosize=$meanappendsize,fd=1
    flowop closefile name=closefile2,fd=1
    flowop openfile name=openfile2,filesetname=bigfileset,fd=1
    flowop readwholefile name=readfile1,fd=1,iosize=$iosize
    flowop closefile name=closefile3,fd=1
    flowop deletefile name=deletefile1,filesetname=bigfileset
    flowop statfile name=statfile1,filesetname=bigfileset
""",
    ),
    "webserver": (
        "dirwidth=20,prealloc=100,readonly",
        "".join(
            f"""    flowop openfile name=openfile{i},filesetname=bigfileset,fd=1
    flowop readwholefile name=readfile{i},fd=1,iosize=$iosize
    flowop closefile name=closefile{i},fd=1
"""
            for i in range(1, 11)
        )
        + "    flowop appendfilerand name=appendlog,filesetname=logfiles,iosize=$meanappendsize,fd=2\n",
    ),
}


def personality(p: Personality, directory: str, runtime_s: int | None) -> str:
    """The .f text: with `runtime_s` None, only create the file sets (`create files`, the
    setup phase); else reuse them (as the setup left them) and run that long."""
    if p.name not in _FLOWS:
        raise FilebenchError(f"unknown personality {p.name!r} (have: {', '.join(_FLOWS)})")
    attrs, flows = _FLOWS[p.name]
    reuse = ",reuse" if runtime_s is not None else ""
    lines = [
        f"set $dir={directory}",
        f"set $nfiles={p.nfiles}",
        f"set $filesize=cvar(type=cvar-gamma,parameters=mean:{p.mean_file_kb * 1024};gamma:1.5)",
        f"set $nthreads={p.threads}",
        f"set $iosize={p.iosize}",
        f"set $meanappendsize={p.append_kb}k",
        f"define fileset name=bigfileset,path=$dir,size=$filesize,entries=$nfiles,{attrs}{reuse}",
    ]
    if p.name == "webserver":
        lines.append(f"define fileset name=logfiles,path=$dir,size=$filesize,entries=1,dirwidth=20,prealloc{reuse}")
    lines += [
        "define process name=filereader,instances=1",
        "{",
        "  thread name=filereaderthread,memsize=10m,instances=$nthreads",
        "  {",
        flows.rstrip("\n"),
        "  }",
        "}",
    ]
    lines += ["create files"] if runtime_s is None else [f"run {runtime_s}"]
    return "\n".join(lines) + "\n"


_SUMMARY = re.compile(r"IO Summary:\s+(\d+) ops ([\d.]+) ops/s ([\d.]+)/([\d.]+) rd/wr\s+([\d.]+)mb/s\s+([\d.]+)ms/op")
# A line of the "Per-Operation Breakdown" (stats.c): one flowop's name and count over the run.
_FLOWOP = re.compile(r"^(\S+)\s+(\d+)ops\s+[\d.]+ops/s\s", re.MULTILINE)
# The figure a run's passes are printed as (`vlab-metric`; Summary.passes): read by the
# calibration's stall and pass rules and the reproductions' stall rule (vlab.repro).
PASSES = "filebench_passes"


@dataclass(frozen=True)
class Summary:
    ops: int
    ops_per_s: float
    reads_per_s: float
    writes_per_s: float
    mb_s: float
    ms_per_op: float
    # The fewest times any flowop ran: how many passes of the flow the threads completed
    # between them (None where filebench printed no breakdown). 0 means no thread got through
    # its flow once: the count is the threads' steps before their first wait, not a rate.
    passes: int | None = None


def parse_summary(output: str) -> Summary:
    """Filebench's closing `IO Summary:` line (stats.c), or an error quoting the end of
    its output."""
    found = _SUMMARY.findall(output)
    if not found:
        tail = "\n".join(output.strip().splitlines()[-8:])
        raise FilebenchError(f"filebench printed no IO Summary line; its output ended:\n{tail}")
    ops, ops_s, rd, wr, mb, ms = found[-1]
    breakdown = output.rpartition("Per-Operation Breakdown")[2].partition("IO Summary:")[0]
    counts = [int(n) for _, n in _FLOWOP.findall(breakdown)]
    passes = min(counts) if counts else None
    return Summary(int(ops), float(ops_s), float(rd), float(wr), float(mb), float(ms), passes)


def main(argv: list[str] | None = None) -> int:
    """`python -m vlab.workloads.filebench [--window-s S --sync-s S] < OUTPUT`: filebench's
    figures as the lab's script-job lines (`vlab-metric NAME VALUE`), or its output's end on
    stderr and exit 1. With the run's window and the seconds a `sync` after it took, also the
    operations per second over both (`filebench_sustained_ops_per_s`): a run that left its
    writes in the page cache at the window's end is charged for writing them back."""
    ap = argparse.ArgumentParser(prog="python -m vlab.workloads.filebench")
    ap.add_argument("--window-s", type=float, help="the measured window (filebench's `run N`)")
    ap.add_argument("--sync-s", type=float, help="seconds a sync after the run took")
    args = ap.parse_args(argv)
    try:
        s = parse_summary(sys.stdin.read())
    except FilebenchError as e:
        print(e, file=sys.stderr)
        return 1
    sustained = None
    if args.window_s and args.window_s > 0 and args.sync_s is not None and args.sync_s >= 0:
        sustained = s.ops / (args.window_s + args.sync_s)
    for name, value in (
        ("filebench_ops", s.ops),
        ("filebench_ops_per_s", s.ops_per_s),
        ("filebench_reads_per_s", s.reads_per_s),
        ("filebench_writes_per_s", s.writes_per_s),
        ("filebench_mb_s", s.mb_s),
        ("filebench_lat_ms", s.ms_per_op),
        (PASSES, s.passes),
        ("filebench_sync_s", args.sync_s),
        ("filebench_sustained_ops_per_s", sustained),
    ):
        if value is not None:
            print(f"vlab-metric {name} {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
