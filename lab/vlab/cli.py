"""`vlab`: boot real Debian kernels under QEMU and run block I/O experiments in them."""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

from vlab import app, etrace, provenance, schedulers
from vlab.checks import conformance
from vlab.devices.spec import DeviceError, load_spec_args
from vlab.etrace import TraceError, query
from vlab.machine import vm
from vlab.machine.kernels import DEFAULT_KERNELS, KERNELS, Kernel, KernelError, lookup
from vlab.machine.request import GuestRequest, RunRequest, to_json
from vlab.paths import build_dir, repo_root
from vlab.schedulers import IN_TREE

EXIT_USAGE = 2

EPILOG = """\
exit status: the guest command's own status for `run`; 0 for a finished `compare`;
2 bad arguments (unknown kernel, bad device spec, invalid fio job); 3 a step in the
guest failed (it is named); 124 the guest timed out; 125 the guest crashed; 126 the
kernel reported a bug, warning or checker finding (KASAN, lockdep, list or object
debugging, hung task) on the console: always on a debug kernel, elsewhere with
VLAB_STRICT_KERNEL_LOG=1.
Outputs stay in --out (default build/runs/<time>-<what>/) whatever happens; an --out under
results/ is refused from a dirty tree (exit 2; --scratch: results/README.md).
"""


class UsageError(Exception):
    pass


def _kernel_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--kernel",
        default="6.1",
        help=f"kernel series to boot: {', '.join(DEFAULT_KERNELS)}, or debug-6.1 (make debug-kernel) (default 6.1)",
    )
    p.add_argument("--rt", action="store_true", help="boot the PREEMPT_RT build of that series")
    p.add_argument(
        "--dry-run", action="store_true",
        help="check everything, then print what would boot and what the guest would be asked; boot nothing",
    )  # fmt: skip
    p.add_argument("--timeout", type=float, metavar="S", help="kill the guest after S seconds of wall time")
    p.add_argument("--memory", default="2G", help="guest memory (default 2G)")
    p.add_argument("--cpus", type=int, default=2, help="guest CPUs (default 2)")
    p.add_argument("--out", type=Path, metavar="DIR", help="host directory for outputs ($VLAB_OUT in the guest)")
    provenance.add_arguments(p)
    p.add_argument(
        "--append", action="append", default=[], metavar="ARG", help="extra kernel command-line argument (repeatable)"
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="vlab",
        description=__doc__,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="cmd", required=True, metavar="COMMAND")

    run = sub.add_parser(
        "run",
        help="boot a kernel and run a command in it as root",
        description="Boot KERNEL under QEMU and run CMD as root in the guest. The host's file system "
        "is visible (read-only), the working directory is the repository, and files written under "
        "$VLAB_OUT land in --out. Devices given with --device exist before CMD starts; their paths are "
        "in $VLAB_DEVICES. One CMD argument is run by bash -c; several are executed as they are.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _kernel_args(run)
    run.add_argument(
        "--possible-cpus", type=int, metavar="N",
        help="CPUs the guest may hot-add (its nr_cpu_ids), beyond --cpus: e.g. for drivers whose "
        "queue count follows the possible CPUs",
    )  # fmt: skip
    _device_command_args(run, "device spec or spec file")

    cmp = sub.add_parser(
        "compare",
        help="compare I/O schedulers with a fio job on an emulated device",
        description="In one boot, for each repetition (in rotated order), select each scheduler on the "
        "first --device and run the fio job on it; then print medians, spreads and ratios to the baseline "
        "and write raw fio JSON plus summary.json to --out.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _kernel_args(cmp)
    cmp.add_argument("--device", action="append", required=True, metavar="SPEC", help="device spec or spec file")
    cmp.add_argument(
        "--schedulers",
        default=",".join(IN_TREE),
        help=f"comma list (default {','.join(IN_TREE)}); a variant NAME:TUNABLE=VALUE[,...] is that scheduler "
        "with its tunables set, compared as one more scheduler (e.g. none,veloces:bundle_kb=256,read_expire=10)",
    )
    cmp.add_argument(
        "--job",
        type=Path,
        action="append",
        required=True,
        metavar="FILE",
        help="fio job file, or a script job (FILE.sh, run as `bash FILE.sh setup|run|teardown DEVICE`; "
        "the device's figures over `run` come from its diskstats, the script's own from `vlab-metric NAME VALUE` "
        "lines; see docs/lab.md); repeat it to run several jobs in one boot, one after the other, each with "
        "its own results in OUT/<its stem>/ and a table of them all in OUT/overview.md",
    )
    cmp.add_argument("--repeat", type=int, default=3, metavar="N", help="repetitions (default 3)")
    cmp.add_argument("--runtime", type=float, metavar="S", help="force each fio run to S seconds (time_based)")
    cmp.add_argument(
        "--min-reads", type=int, default=0, metavar="N",
        help="on a served device with dilation=auto, stretch each fio job's runs (up to 20 s) for N reads a run "
        "under the slowest scheduler (100: vlab.verdict.MIN_READS, a p99's minimum)",
    )  # fmt: skip
    cmp.add_argument("--max-runtime", type=float, metavar="S", help="with --min-reads: stretch runs to at most S s")
    cmp.add_argument("--baseline", default=None, help="scheduler the ratios refer to (default none, else first)")
    cmp.add_argument(
        "--sysctl",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="set a sysctl in the guest before the runs, e.g. vm.dirty_background_bytes=8388608 (repeatable)",
    )

    conf = sub.add_parser(
        "conformance",
        help="run the conformance scenarios on the real module and check them with vsim",
        description="Boot KERNEL, run every scenario in DIR on the veloces module (a null_blk of the "
        "scenario's depth, 1 by default, times scaled by --scale, issue order from block:block_rq_issue), "
        "then check the kernel's issue log and the simulator's model against the same expectations "
        "(./vsim conformance --kernel-log). A scenario whose timing (never its order) was missed by no more "
        "than the guest lost to stalls in every run is reported as not judged, and does not fail the run.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _kernel_args(conf)
    conf.add_argument("dir", type=Path, metavar="DIR", help="scenario directory (conformance/)")
    conf.add_argument(
        "--scale", type=int, help="time scale factor for the kernel run (default 60; 100 on a debug kernel)"
    )
    conf.add_argument(
        "--slack-us",
        type=float,
        default=conformance.SLACK_US,
        help=f"timing tolerance in unscaled us for the kernel (default {conformance.SLACK_US:g})",
    )

    fid = sub.add_parser(
        "fidelity",
        help="the kernel's schedulers beside vsim's models of them: a matrix of devices x workloads",
        description="Run each (device, workload) cell under none, mq-deadline, kyber, bfq and veloces in the lab "
        "and in vsim, and judge the models: ranking and ratios to none (docs/notebooks/fidelity.md). Options: "
        "vlab fidelity --help.",
        add_help=False,
    )
    fid.add_argument("args", nargs=argparse.REMAINDER, help="options of vlab.experiments.fidelity (--help)")

    rpt = sub.add_parser(
        "report",
        help="write (or rebuild) the HTML report of a results folder",
        description="Write DIR/report.html: one self-contained page (tables, latency CDFs and percentile "
        "curves, throughput with its spread, time series, ratios to the baseline) from the results of "
        "vlab compare, vsim compare --out, vsim run --report or vsim validate --report. Missing or corrupt "
        "files are named in the report (exit status 1); what exists is still shown. See docs/reports.md.",
    )
    rpt.add_argument("folder", type=Path, metavar="DIR", help="a results folder")
    rpt.add_argument("--out", type=Path, metavar="FILE", help="write the page here instead of DIR/report.html")

    rep = sub.add_parser(
        "repro",
        help="reproduce a seed paper's experiment: its figures beside ours, a verdict per claim",
        description="Reproduce a seed paper's experiment in the lab (docs/notebooks/reproductions.md): every cell "
        "of its matrix (device x filesystem x workload) is one `vlab compare` of the schedulers in one boot; a failed "
        "cell is marked and the matrix goes on. Writes summary.json, report.md and report.html; prints the "
        "paper's figures beside ours with a verdict per claim. The options below narrow or widen the default "
        "matrix (comma lists).",
        epilog="exit status: 0 every cell finished; 1 a cell failed (the rest ran, all kept) or the matrix was "
        "drained; 2 bad arguments or a missing tool (filebench: `make deps`). SIGUSR1 drains a running matrix: "
        "the running cells finish and are kept, no further one starts (`--resume` runs the rest).",
    )
    rep.add_argument("seed", metavar="SEED", help="seed000 or seed001")
    rep.add_argument("--quick", action="store_true", help="the short variant `make test` runs")
    rep.add_argument("--kernel", default=None, help="kernel series (default 6.12)")
    rep.add_argument("--devices", help="device names (vlab.repro.core.DEVICES)")
    rep.add_argument("--filesystems", help="ext4,ext2,ext3,xfs,btrfs,f2fs,nilfs2")
    rep.add_argument("--workloads", help="varmail,fileserver,webserver,dbench-8,dbench-16,dbench-32")
    rep.add_argument("--schedulers", help="scheduler names (default the seed's)")
    rep.add_argument("--repeat", type=int, help="repetitions per cell, rotated")
    rep.add_argument("--runtime", type=int, metavar="S", help="seconds per measured run (wall)")
    rep.add_argument("--dilation", type=float, metavar="D",
                     help="run every served cell at this one dilation instead of calibrating each (seed 001's "
                     "cross-filesystem ratios are judged only between cells at one dilation)")  # fmt: skip
    rep.add_argument("--out", type=Path, metavar="DIR", help="results folder (default build/repro/SEED[-quick])")
    rep.add_argument("--resume", action="store_true", help="keep the cells already complete in --out; "
                     "--devices/--filesystems/--workloads then choose the cells to run, and the summary "
                     "still covers the folder's other cells (two such invocations may share a folder "
                     "at once, each with its own cells)")  # fmt: skip
    rep.add_argument("--table", action="store_true", help="judge the results in --out again (figures re-read from "
                     "the cells' folders, tables and verdicts remade); runs nothing")  # fmt: skip
    provenance.add_arguments(rep, resume=True)
    rep.add_argument("--address", metavar="HOST:PORT", help="run the cells on this Ray cluster (default: $RAY_ADDRESS, "
                     "else an embedded local Ray)")  # fmt: skip
    rep.add_argument("--jobs", type=int, metavar="N", help="guests at a time on the embedded local Ray (default: "
                     "every core; 1: one cell after another in this process, no Ray)")  # fmt: skip

    sub.add_parser("kernels", help="list the kernels the lab knows and whether they are installed")

    tr = sub.add_parser(
        "trace",
        help="run a command on a traced file system: VFS and block events into SQLite",
        description="Boot KERNEL, put a file system on the device (--device, default a memory-backed "
        "null_blk of 1 GiB), trace its VFS operations and block requests with bpftrace while CMD runs in "
        "its mount point, load the events into DIR/trace.db (tables vfs_ops, vfs_files, block_ops, "
        "block_ops_by_file, bios) and answer the questions of `vlab query` into DIR/queries.json "
        "(docs/tracing.md).",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _kernel_args(tr)
    tr.add_argument(
        "--fs", help="file system to make on the device (lab default ext4; none: mount it as it is; --host: none)"
    )
    tr.add_argument("--blktrace", action="store_true", help="also record the device with blktrace (DIR/blkparse.txt)")
    tr.add_argument(
        "--overhead",
        type=int,
        default=0,
        metavar="N",
        help="measure the probe's cost: N runs without and N with it, alternated (fio: give --output-format=json)",
    )
    tr.add_argument(
        "--silent",
        action="store_true",
        help="with --overhead: N more runs with the probe attached but printing nothing (seed 002's third "
        "condition: the cost of the probes firing, apart from their output)",
    )
    tr.add_argument(
        "--idle",
        action="store_true",
        help="with --overhead: N more runs with bpftrace attached to one function the command does not call (the "
        "cost of bpftrace's presence, apart from its probes firing)",
    )
    tr.add_argument("--host", action="store_true", help="trace on this machine (root), not in a guest")
    tr.add_argument("--dir", type=Path, help="with --host: trace the file system mounted at DIR, CMD runs there")
    _device_command_args(tr, "device spec (the first is traced)")
    q = sub.add_parser(
        "query",
        help="ask a trace database (vlab trace's trace.db) seed 002's questions",
        description="Questions of an end-to-end trace: hot (files by device bytes, requests or device "
        "time), file FILE (its I/O over time and access pattern), frag [FILE] (its extents on the "
        "device), procs (reads and writes by process), sizes (request size histogram), match (requests and "
        "files of each level without a match in the other: the seed's Table 3.1), all (every answer, "
        "as JSON). FILE: a path from the file system's root, a name, INODE or INODE:GENERATION.",
    )
    q.add_argument("db", type=Path, help="trace.db")
    q.add_argument("question", choices=["hot", "file", "frag", "procs", "sizes", "match", "all"])
    q.add_argument("file", nargs="?", help="FILE (file, frag)")
    q.add_argument("--by", default="bytes", choices=["bytes", "ops", "latency"], help="hot: rank by (default bytes)")
    q.add_argument("--limit", type=int, default=10, help="rows (default 10)")
    q.add_argument("--json", action="store_true", help="print JSON")
    return parser


def _device_command_args(p: argparse.ArgumentParser, device_help: str) -> None:
    p.add_argument("--device", action="append", default=[], metavar="SPEC", help=device_help)
    p.add_argument("command", nargs=argparse.REMAINDER, metavar="-- CMD...", help="the command to run")


def _kernel(args: argparse.Namespace) -> Kernel:
    try:
        return lookup(args.kernel, args.rt)
    except KernelError as e:
        raise UsageError(str(e)) from e


def _clean(out: Path, scratch: bool) -> None:
    """UsageError (exit 2, nothing written) where `out` is under results/ and the tree is dirty,
    or a scratch run would write there (vlab.provenance.check_out)."""
    try:
        provenance.check_out(out, scratch)
    except provenance.Refused as e:
        raise UsageError(str(e)) from None


def _out(args: argparse.Namespace, kind: str) -> Path:
    out: Path = (args.out or vm.default_out(kind)).resolve()
    _clean(out, args.scratch)
    if not args.dry_run:
        out.mkdir(parents=True, exist_ok=True)
    return out


def _dry_run(args: argparse.Namespace, kernel: Kernel, out: Path, req: GuestRequest) -> int:
    """--dry-run: what would boot, and what the guest would be asked; nothing is booted or written."""
    print(f"vlab: dry run: would boot {kernel.release} ({kernel.boot_target}), output in {out}")
    print("guest request (OUT/.vlab/request.json):")
    print(to_json(req), end="")
    argv = vm.command_line(
        kernel, out, memory=args.memory, cpus=args.cpus, append=args.append, accel=[],
        possible_cpus=getattr(args, "possible_cpus", None),
    )  # fmt: skip
    print("boot command (with --disable-kvm and TCG's options where KVM does not work):")
    print(shlex.join(argv))
    return 0


def _devices(args: argparse.Namespace) -> list[str]:
    try:
        return [str(s) for s in load_spec_args(args.device)]
    except DeviceError as e:
        raise UsageError(str(e)) from e


def _command(args: argparse.Namespace, verb: str) -> list[str]:
    command: list[str] = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        raise UsageError(f"no command given: vlab {verb} [options] -- CMD...")
    return command


def _boot_command(args: argparse.Namespace, command: list[str], out: Path) -> int:
    """Boot the kernel with the devices, run the command in the guest; its exit status, or
    the status that says how the guest ended."""
    kernel = _kernel(args)
    devices = _devices(args)
    timeout = args.timeout or 3600
    request = RunRequest(command, devices)
    if args.dry_run:
        return _dry_run(args, kernel, out, request)
    result = vm.boot(
        kernel, out, request, timeout_s=timeout, memory=args.memory, cpus=args.cpus, append=args.append,
        possible_cpus=getattr(args, "possible_cpus", None),
    )  # fmt: skip
    status = vm.report_boot(result, out, timeout, kernel)
    print(f"vlab: {kernel.release} ran for {result.wall_s:.1f} s; output in {out}", file=sys.stderr)
    if status is not None:
        return status
    assert result.exit_status is not None
    return result.exit_status


def cmd_run(args: argparse.Namespace) -> int:
    command = _command(args, "run")
    return _boot_command(args, command, _out(args, "run"))


def cmd_compare(args: argparse.Namespace) -> int:
    sysctls = {}
    for item in args.sysctl:
        key, eq, value = item.partition("=")
        if not eq:
            raise UsageError(f"--sysctl wants KEY=VALUE (e.g. vm.dirty_bytes=33554432), not {item!r}")
        sysctls[key] = value
    try:
        scheds = schedulers.parse_list(args.schedulers)
    except schedulers.SchedulerError as e:
        raise UsageError(str(e)) from e
    comparison = app.Comparison(
        kernel=_kernel(args), devices=_devices(args), schedulers=scheds, jobs=args.job, out=_out(args, "compare"),
        baseline=args.baseline, repeat=args.repeat, runtime=args.runtime, sysctl=sysctls, timeout=args.timeout,
        min_reads=args.min_reads, max_runtime=args.max_runtime,
        memory=args.memory, cpus=args.cpus, append=args.append,
        command=["./vlab", *sys.argv[1:]] if argv_is_vlab() else sys.argv, scratch=args.scratch,
    )  # fmt: skip
    try:
        if args.dry_run:
            return _dry_run(args, comparison.kernel, comparison.out, app.check(comparison))
        return app.compare(comparison).status
    except app.RequestError as e:
        raise UsageError(str(e)) from e


def argv_is_vlab() -> bool:
    """Whether this process is `python -m vlab` (argv[0] is then the package's path)."""
    return sys.argv[0].endswith(("vlab/__main__.py", "vlab"))


def cmd_report(args: argparse.Namespace) -> int:
    from vlab import report  # numpy: loaded by the commands that need it, not by every `vlab` command

    return report.main([str(args.folder), *(["--out", str(args.out)] if args.out else [])])


def cmd_conformance(args: argparse.Namespace) -> int:
    try:
        files = conformance.scenario_files(args.dir)
    except ValueError as e:
        raise UsageError(str(e)) from None
    kernel = _kernel(args)
    if args.scale is None:
        args.scale = kernel.conformance_scale
    if args.scale < 1:
        raise UsageError("--scale must be at least 1")
    out = _out(args, "conformance")
    command = conformance.guest_command(files, args.scale, args.slack_us)
    timeout = args.timeout or vm.BOOT_ALLOWANCE_S + 30 * len(files)
    request = RunRequest(command)
    if args.dry_run:
        return _dry_run(args, kernel, out, request)
    print(f"vlab: {len(files)} scenarios on {kernel.release}, scale {args.scale}", file=sys.stderr)
    result = vm.boot(kernel, out, request, timeout_s=timeout, memory=args.memory, cpus=args.cpus, append=args.append)
    status = vm.report_boot(result, out, timeout, kernel)
    log = out / "kernel-log.json"
    if not log.exists():
        print(f"vlab: no kernel issue log was written; see {out}", file=sys.stderr)
        return status or 1
    j = conformance.judge(args.dir, out, kernel.release, args.slack_us)
    print(j.report.stdout, end="")
    print(j.report.stderr, end="", file=sys.stderr)
    for verdict in ("fail", "not judged"):
        for f, why in j.named(verdict).items():
            print(f"vlab: {f}: {'FAIL' if verdict == 'fail' else verdict}: {why}")
    print(f"vlab: {j.summary()}", file=sys.stderr)
    print(f"vlab: {result.wall_s:.0f} s; kernel log {log}, details {out / 'kernel-detail.json'}", file=sys.stderr)
    # The verdicts as data (a claim cites them: claims/claims.toml), and what they were made from.
    summary = {
        "kind": "vlab-conformance",
        "meta": {"kernel": kernel.release, "scale": args.scale, "slack_us": args.slack_us, "versions": app.versions()},
        "counts": j.counts(),
        "verdicts": {f: {"verdict": v, "why": why} for f, (v, why) in j.verdicts.items()},
    }  # fmt: skip
    (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    provenance.write_manifest(out, kernels=[kernel.release], scratch=args.scratch, command=["./vlab", *sys.argv[1:]])
    if status is not None:
        return status or 1
    return 1 if j.named("fail") else 0


def _names(arg: str | None, known: Any, what: str) -> list[str] | None:
    if arg is None:
        return None
    names = [n.strip() for n in arg.split(",") if n.strip()]
    bad = [n for n in names if n not in known]
    if not names or bad:
        raise UsageError(f"unknown {what} {', '.join(bad) or repr(arg)}; known: {', '.join(known)}")
    return names


def cmd_repro(args: argparse.Namespace) -> int:
    # scipy (the verdicts' statistics) takes about a second to load: only `vlab repro` pays it.
    from vlab import repro
    from vlab.repro import core
    from vlab.repro.run import rejudge, run

    seed = repro.SEEDS.get(args.seed)
    if seed is None:
        raise UsageError(f"unknown seed {args.seed!r}; known: {', '.join(repro.SEEDS)}")
    name = seed.name + ("-quick" if args.quick else "")
    _clean((args.out or build_dir() / "repro" / name).resolve(), args.scratch)
    plan = seed.plan(args.quick)
    workloads = {**core.FILEBENCH, **core.DBENCH}
    plan.devices = _names(args.devices, core.DEVICES, "device") or plan.devices
    plan.filesystems = _names(args.filesystems, core.FILESYSTEMS, "filesystem") or plan.filesystems
    picked = _names(args.workloads, workloads, "workload")
    plan.workloads = [workloads[w] for w in picked] if picked else plan.workloads
    if args.schedulers:
        try:
            plan.schedulers = schedulers.parse_list(args.schedulers)
        except schedulers.SchedulerError as e:
            raise UsageError(str(e)) from e
    if args.repeat is not None:
        if args.repeat < 1:
            raise UsageError("--repeat must be at least 1")
        plan.repeat = args.repeat
    if args.runtime is not None:
        if args.runtime < 1:
            raise UsageError("--runtime must be at least 1 s")
        plan.runtime_s = args.runtime
    if args.kernel:
        _kernel(argparse.Namespace(kernel=args.kernel, rt=False))
        plan.kernel = args.kernel
    if args.dilation is not None:
        if not (1 <= args.dilation <= 10_000):
            raise UsageError("--dilation must be between 1 and 10000")
        plan.dilation = args.dilation
    out = args.out or build_dir() / "repro" / name
    command = ["./vlab", *sys.argv[1:]] if argv_is_vlab() else sys.argv
    if args.table:
        if not args.out:
            raise UsageError("--table judges an existing results folder: give it with --out DIR")
        return rejudge(seed, plan, args.out.resolve(), command, args.scratch)
    if args.jobs is not None and args.jobs < 1:
        raise UsageError("--jobs must be at least 1")
    address = args.address or os.environ.get("RAY_ADDRESS") or None
    if address and args.jobs is not None:
        raise UsageError("--jobs is for the embedded local Ray; a cluster (--address, $RAY_ADDRESS) runs a guest a CPU")
    return run(seed, plan, out.resolve(), args.resume, command, app.versions(), address=address, jobs=args.jobs,
               mix_commits=args.mix_commits, scratch=args.scratch)  # fmt: skip


def cmd_trace(args: argparse.Namespace) -> int:
    command = _command(args, "trace")
    if args.overhead < 0:
        raise UsageError("--overhead takes a number of runs >= 1")
    out = _out(args, "trace")
    if (out / "trace.db").exists() or (out / "trace.txt").exists():
        raise UsageError(f"{out} already holds a trace: give a new --out (nothing was overwritten)")
    fs = args.fs or ("none" if args.host else "ext4")
    guest = ["--fs", fs, *(["--blktrace"] if args.blktrace else [])]
    if (args.silent or args.idle) and not args.overhead:
        raise UsageError("--silent and --idle are conditions of --overhead N")
    guest += ["--overhead", str(args.overhead)] if args.overhead else []
    guest += ["--silent"] if args.silent else []
    guest += ["--idle"] if args.idle else []
    if args.host:
        # On this machine, as root: the file system mounted at --dir, or the device given.
        if args.dry_run:
            raise UsageError("--dry-run is for the lab's guests; --host traces this machine")
        if os.geteuid() != 0:
            raise UsageError("vlab trace --host needs root (bpftrace loads BPF programs)")
        if args.dir is None and not args.device:
            raise UsageError("vlab trace --host needs --dir DIR (a mounted file system) or --device /dev/X")
        where = ["--dir", str(args.dir)] if args.dir is not None else ["--device", args.device[0]]
        env = dict(os.environ, VLAB_OUT=str(out), PYTHONPATH=str(repo_root() / "lab"))
        status = subprocess.run(
            [sys.executable, "-m", "vlab.etrace.guest", *guest, *where, "--", *command], env=env, check=False
        ).returncode
    else:
        if args.dir is not None:
            raise UsageError("--dir applies to --host (in the lab the device is made and mounted for you)")
        if not args.device:
            args.device = ["null_blk:size=1024,memory_backed=1"]
        status = _boot_command(args, [sys.executable, "-m", "vlab.etrace.guest", *guest, "--", *command], out)
        if args.dry_run:
            return status
    if args.overhead:
        return _overhead_summary(out, status)
    raw = out / "trace.txt"
    if not raw.exists():
        print(f"vlab trace: no trace was written; see {out}", file=sys.stderr)
        return status or 1
    try:
        t = etrace.parse(raw)
        etrace.load(t, out / "trace.db")
        query.write_answers(out / "trace.db", out / query.ANSWERS)
    except etrace.TraceError as e:
        print(f"vlab trace: {e}", file=sys.stderr)
        return 1
    print(
        f"vlab trace: {len(t.vfs)} VFS operations, {len(t.requests)} block requests from {t.bios} bios "
        f"({t.merges} merges), {t.lost_events} events lost; {out / 'trace.db'}",
        file=sys.stderr,
    )
    if t.lost_events:
        print(f"vlab trace: warning: bpftrace lost {t.lost_events} events: the tables are incomplete", file=sys.stderr)
        return status or 3
    return status


def _overhead_summary(out: Path, status: int) -> int:
    try:
        run = json.loads((out / "trace-run.json").read_text())
    except (OSError, ValueError) as e:
        print(f"vlab trace: no overhead record in {out}: {e}", file=sys.stderr)
        return status or 1
    names = {"off": "plain", "on": "traced", "silent": "silent", "idle": "idle"}
    for r in run.get("overhead_runs", []):
        kind = names[r.get("condition") or ("on" if r["traced"] else "off")]
        print(f"  {kind:<7} {r['wall_s']:8.2f} s  figure {r['figure']}", file=sys.stderr)
    if "figure_silent_ratio" in run:
        print(
            f"vlab trace: with the probe attached, not printing: {run['figure_silent']:g} "
            f"({run['figure_silent_ratio']:.3f} of the figure without it)",
            file=sys.stderr,
        )
    elif "wall_s_silent_ratio" in run:
        print(f"vlab trace: wall time, probe attached not printing / without: {run['wall_s_silent_ratio']:.3f}",
              file=sys.stderr)  # fmt: skip
    if "figure_idle_ratio" in run:
        print(
            f"vlab trace: with bpftrace on an unrelated function only: {run['figure_idle']:g} "
            f"({run['figure_idle_ratio']:.3f} of the figure without it)",
            file=sys.stderr,
        )
    elif "wall_s_idle_ratio" in run:
        print(f"vlab trace: wall time, bpftrace idle / without: {run['wall_s_idle_ratio']:.3f}", file=sys.stderr)
    if "figure_ratio" in run:
        print(
            f"vlab trace: median figure (fio IOPS or dbench MB/s) {run['figure_off']:g} without the probe, "
            f"{run['figure_on']:g} with it: {run['figure_ratio']:.3f} "
            f"({(1 - run['figure_ratio']) * 100:.1f} % overhead)",
            file=sys.stderr,
        )
    elif "wall_s_ratio" in run:
        print(f"vlab trace: wall time with the probe / without: {run['wall_s_ratio']:.3f}", file=sys.stderr)
    return status


def _table(rows: list[dict[str, Any]], columns: list[str]) -> str:
    cells = [[("" if r.get(c) is None else str(r.get(c))) for c in columns] for r in rows]
    width = [max([len(c)] + [len(row[i]) for row in cells]) for i, c in enumerate(columns)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(columns, width, strict=True))]
    for row in cells:
        pairs = zip(row, width, strict=True)
        lines.append("  ".join(v.rjust(w) if v.replace(".", "").isdigit() else v.ljust(w) for v, w in pairs))
    return "\n".join(lines)


def cmd_query(args: argparse.Namespace) -> int:
    try:
        if args.question == "all":
            print(json.dumps(query.answers(args.db), indent=1))
            return 0
        con = query.open_db(args.db)
        try:
            if args.question in ("file",) and not args.file:
                raise UsageError("vlab query DB file NAME|INO")
            answer: Any
            if args.question == "hot":
                answer = query.hot_files(con, args.by, args.limit)
                cols = ["file", "ino", "gen", "device_bytes", "read_bytes", "write_bytes", "requests", "device_ms",
                        "mean_latency_us"]  # fmt: skip
            elif args.question == "file":
                answer = query.timeline(con, args.file)
                cols = []
            elif args.question == "frag":
                answer = query.fragmentation(con, args.file, args.limit)
                cols = ["file", "ino", "gen", "extents", "bytes", "largest_extent_bytes"]
            elif args.question == "procs":
                answer = query.processes(con, args.limit)
                cols = ["pid", "comm", "vfs_reads", "vfs_read_bytes", "vfs_writes", "vfs_write_bytes",
                        "device_read_bytes", "device_write_bytes", "bios"]  # fmt: skip
            elif args.question == "match":
                answer = query.matches(con)
                cols = ["what", "without_match", "total", "ratio"]
            else:
                answer = query.sizes(con)
                cols = ["size", "read", "write", "other"]
        finally:
            con.close()
    except TraceError as e:
        print(f"vlab query: {e}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(answer, indent=1))
    elif args.question == "file":
        a = answer
        print(f"{a['file']} (inode {a['ino']}, generation {a['gen']}): {a['vfs_ops']} VFS reads/writes, "
              f"{a['vfs_pattern']} "
              f"(share continuing the previous: {a['vfs_sequential_share']}); {a['bios']} device bios, "
              f"{a['device_pattern']} on the device (share {a['device_sequential_share']})")  # fmt: skip
        print("VFS:")
        print(_table(a["vfs"][: args.limit * 5], ["t_s", "op", "offset", "bytes", "pid", "comm"]))
        print("device:")
        print(_table(a["device"][: args.limit * 5], ["t_s", "op", "sector", "sectors", "file_offset", "pid", "comm"]))
    else:
        print(_table(answer, cols))
    return 0


def cmd_kernels(_: argparse.Namespace) -> int:
    for k in KERNELS.values():
        state = "installed" if k.installed() else f"not installed (package {k.image_pkg})"
        print(f"{k.name:<8} {k.release:<26} {state}")
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["fidelity"]:  # its own options (vlab.experiments.fidelity)
        from vlab.experiments import fidelity  # its device table needs the built simulator at import

        return fidelity.main(argv[1:])
    args = build_parser().parse_args(argv)
    handlers = {
        "run": cmd_run,
        "compare": cmd_compare,
        "conformance": cmd_conformance,
        "report": cmd_report,
        "kernels": cmd_kernels,
        "repro": cmd_repro,
        "trace": cmd_trace,
        "query": cmd_query,
    }
    try:
        return handlers[args.cmd](args)
    except (UsageError, vm.VmError) as e:
        print(f"vlab: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("vlab: interrupted", file=sys.stderr)
        return 130
