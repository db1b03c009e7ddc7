"""Guest (or host, as root) side of `vlab trace`: put a file system on the device (or use
the one mounted at --dir), start the probe on it, run the command there, stop the probe;
the trace lands in $VLAB_OUT/trace.txt and what happened in $VLAB_OUT/trace-run.json.

With --blktrace, blktrace records the same device alongside and blkparse's text lands in
$VLAB_OUT/blkparse.txt (the agreement check of vsim's two readers). With --overhead N the
command runs 2N times, alternately without and with the probe (the order rotated), each
run's output kept, and its figure compared: fio's IOPS (when it prints fio's JSON) or
dbench's MB/s."""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from vlab.etrace import PROBE, idle_probe, silent_probe
from vlab.machine import proc

MOUNT = Path("/tmp/vlab-trace")
# bpftrace compiles and attaches its probes in 12-95 s in a guest alone or beside one other;
# a clean-clone make test beside a running cell (three guests on two cores) took over 180.
ATTACH_TIMEOUT_S = 300
TRACEFS = "/sys/kernel/tracing"
DRAIN_QUIET_S, DRAIN_TIMEOUT_S = 1.0, 300.0
PROBE_EXIT_TIMEOUT_S = 300.0
RESIGNAL_S = 15.0
# epoll_wait, epoll_pwait, epoll_pwait2 (glibc's epoll_wait uses the first where it exists).
EPOLL_WAIT_SYSCALLS = {"x86_64": {"232", "281", "441"}, "aarch64": {"22", "441"}}
# bpftrace's perf ring buffer per CPU, in pages (its default, 64, overflowed under dbench
# in the lab: 66,348 of 70,363 events lost in 13 s); VLAB_TRACE_RB_PAGES overrides it.
PERF_RB_PAGES = 4096


def kernel_dev(st_dev: int) -> int:
    """A dev_t as the kernel encodes it in bio and inode fields (major << 20 | minor)."""
    return (os.major(st_dev) << 20) | os.minor(st_dev)


def disk_of(st_dev: int) -> int:
    """The whole disk holding the block device st_dev (itself when it is not a partition)."""
    sys_dir = Path(f"/sys/dev/block/{os.major(st_dev)}:{os.minor(st_dev)}")
    if (sys_dir / "partition").exists():
        major, minor = (sys_dir.resolve().parent / "dev").read_text().split(":")
        return os.makedev(int(major), int(minor))
    return st_dev


class Probe:
    """bpftrace running probe.bt (and blktrace beside it when asked), writing into `out`."""

    def __init__(self, out: Path, fs_dev: int, disk: str, blktrace: bool, variant: str = "full") -> None:
        # The lines go to memory first (a write per line to the shared output folder is too
        # slow under emulation: bpftrace fell behind and its buffers overflowed) and are
        # copied into `out` when the probe stops. Not on the traced file system: writing the
        # trace would be traced.
        scratch = Path(os.environ.get("VLAB_TRACE_TMP") or ("/dev/shm" if Path("/dev/shm").is_dir() else "/tmp"))
        if os.stat(scratch).st_dev == fs_dev:
            raise RuntimeError(f"{scratch} is on the traced file system: set VLAB_TRACE_TMP to another")
        self.tmp = Path(tempfile.mkdtemp(prefix="vlab-trace-", dir=scratch))
        self.trace, self.dest = self.tmp / "trace.txt", out / "trace.txt"
        disk_dev = disk_of(fs_dev)
        self.f = self.trace.open("w")
        env = dict(os.environ, BPFTRACE_PERF_RB_PAGES=os.environ.get("VLAB_TRACE_RB_PAGES", str(PERF_RB_PAGES)))
        probe = PROBE
        if variant != "full":  # silent: attached, counting, not printing; idle: one unrelated probe
            probe = self.tmp / f"{variant}.bt"
            probe.write_text({"silent": silent_probe, "idle": idle_probe}[variant]())
        self.bt = subprocess.Popen(
            ["bpftrace", "-B", "line", str(probe), str(kernel_dev(fs_dev)), str(kernel_dev(disk_dev))],
            stdout=self.f,
            stderr=subprocess.STDOUT,
            env=env,
        )
        self.blk: subprocess.Popen[bytes] | None = None
        self.parse: subprocess.Popen[bytes] | None = None
        t0 = time.monotonic()
        while "H vlab-trace" not in self.trace.read_text(errors="replace"):
            if self.bt.poll() is not None or time.monotonic() - t0 > ATTACH_TIMEOUT_S:
                self.bt.kill()
                self.bt.wait()
                self.f.close()
                shutil.move(self.trace, self.dest)
                raise RuntimeError(f"bpftrace did not start: {self.dest.read_text(errors='replace')[-2000:]}")
            time.sleep(0.2)
        self.attach_s = round(time.monotonic() - t0, 1)
        if blktrace:
            # Piped: blktrace's files are mmapped, which the shared output folder refuses.
            try:
                self.blk = subprocess.Popen(["blktrace", "-d", disk, "-o", "-"], stdout=subprocess.PIPE)
                self.parse = subprocess.Popen(
                    ["blkparse", "-i", "-", "-o", str(out / "blkparse.txt")], stdin=self.blk.stdout
                )
            except OSError as e:
                self.stop()
                raise RuntimeError(f"blktrace: {e}") from None
            time.sleep(2)  # blktrace sets up its relay channels before it records

    def stop(self) -> dict[str, Any]:
        done: dict[str, Any] = {}
        # bpftrace prints what its ring buffers hold when it reads them; stopped at once it
        # exits with a backlog unread (counted as lost: 2,276 of 20,059 of each kind after a
        # fio run in the lab). Wait until the file stops growing first.
        t0 = time.monotonic()
        size, still = -1, 0.0
        while still < DRAIN_QUIET_S and time.monotonic() - t0 < DRAIN_TIMEOUT_S:
            now = self.trace.stat().st_size
            still = still + 0.2 if now == size else 0.0
            size = now
            time.sleep(0.2)
        done["drain_s"] = round(time.monotonic() - t0, 1)
        if self.blk is not None and _end(self.blk, 60, stop=True) is None:
            done["blktrace_killed"] = True
        # After SIGINT bpftrace detaches each probe, runs END and prints its maps (the silent
        # probe's only output); under a loaded emulator that has taken over a minute.
        t1 = time.monotonic()
        status, signals, state = stop_bpftrace(self.bt, self.trace, PROBE_EXIT_TIMEOUT_S)
        if status is None:
            done["probe_killed"] = True
            done["probe_state"] = state
        else:
            done["probe_status"] = status
        if signals > 1:
            done["probe_signals"] = signals
        done["exit_s"] = round(time.monotonic() - t1, 1)
        self.f.close()
        shutil.move(self.trace, self.dest)
        shutil.rmtree(self.tmp, ignore_errors=True)
        if self.parse is not None:
            status = _end(self.parse, 120)
            done["blkparse_status"] = "killed after 120 s" if status is None else status
        return done


def _end(proc: subprocess.Popen[bytes], timeout_s: float, stop: bool = False) -> int | None:
    """Wait for proc (SIGINT first when `stop`) and return its status; kill it and return
    None when it has not ended within timeout_s."""
    if stop:
        proc.send_signal(signal.SIGINT)
    try:
        return proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        return None


def stop_bpftrace(
    bt: subprocess.Popen[bytes], trace: Path, timeout_s: float, resignal_s: float = RESIGNAL_S
) -> tuple[int | None, int, str]:
    """SIGINT bpftrace and wait for it: its status (None when it had to be killed after
    timeout_s), the SIGINTs sent, and where it was when killed.

    bpftrace up to 0.18 can lose a SIGINT: its handler only sets a flag, which its loop over
    the ring buffers reads when epoll_wait returns EINTR or an event arrives; a signal landing
    between two 100-ms epoll_waits (or during their return to user space) is seen by neither,
    and a probe that prints nothing (silent, idle) then polls forever (CI: the silent probe,
    300 s after SIGINT, no END line). So while it still sleeps in that loop (its main thread
    in epoll_wait, no END line printed) resignal_s after a signal, it is signalled again; not
    after it has left the loop, where a second SIGINT would cut short its END or kill it
    mid-print (0.17 restores SIGINT's default once its loop is over)."""
    bt.send_signal(signal.SIGINT)
    signals, since, looping = 1, time.monotonic(), 0
    t0 = since
    while True:
        try:
            return bt.wait(timeout=1.0), signals, ""
        except subprocess.TimeoutExpired:
            pass
        now = time.monotonic()
        if now - t0 > timeout_s:
            state = _task_state(bt.pid)
            bt.kill()
            bt.wait()
            return None, signals, state
        looping = looping + 1 if _in_epoll_wait(bt.pid) and not _ended(trace) else 0
        if now - since >= resignal_s and looping >= 3:
            bt.send_signal(signal.SIGINT)
            signals, since, looping = signals + 1, now, 0


def _in_epoll_wait(pid: int) -> bool:
    """Whether the process's main thread sleeps in epoll_wait (/proc/PID/syscall)."""
    try:
        nr = Path(f"/proc/{pid}/syscall").read_text().split()[0]
    except (OSError, IndexError):
        return False
    return nr in EPOLL_WAIT_SYSCALLS.get(platform.machine(), ())


def _ended(trace: Path) -> bool:
    """Whether the trace holds the probe's END line (near its end: only the maps follow)."""
    try:
        with trace.open("rb") as f:
            f.seek(max(0, trace.stat().st_size - 65536))
            tail = f.read()
    except OSError:
        return False
    return tail.startswith(b"E ") or b"\nE " in tail


def _task_state(pid: int) -> str:
    """A process's state, system call and kernel stack, for the record of a kill."""
    return "\n".join(f"{name}: {proc.read(Path(f'/proc/{pid}/{name}')).strip()}"
                     for name in ("stat", "syscall", "wchan", "stack"))  # fmt: skip


def tracefs() -> None:
    """bpftrace's kfunc probes read tracefs: mount it where a host has not (as root)."""
    if Path(TRACEFS, "available_filter_functions").exists():
        return
    p = subprocess.run(["mount", "-t", "tracefs", "nodev", TRACEFS], capture_output=True, text=True, check=False)
    if p.returncode != 0:
        raise RuntimeError(f"tracefs is not mounted at {TRACEFS} and mounting it failed: {p.stderr.strip()}")


def throughput(text: str) -> float | None:
    """The command's figure: read + write IOPS of fio's JSON output, or dbench's MB/s."""
    for line in reversed(text.splitlines()):
        if line.startswith("Throughput ") and "MB/sec" in line:
            try:
                return float(line.split()[1])
            except (IndexError, ValueError):
                return None
    start = text.find("{")
    if start < 0:
        return None
    try:
        doc, _ = json.JSONDecoder().raw_decode(text[start:])
        return float(sum(j[d]["iops"] for j in doc["jobs"] for d in ("read", "write")))
    except (ValueError, KeyError, TypeError):
        return None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--device", help="block device (default: the first of $VLAB_DEVICES)")
    ap.add_argument("--fs", default="ext4", help="mkfs.FS on the device first; 'none' to mount it as it is")
    ap.add_argument("--dir", type=Path, help="trace the file system mounted here (no mkfs, no mount)")
    ap.add_argument("--blktrace", action="store_true", help="blktrace the device alongside (blkparse.txt)")
    ap.add_argument("--overhead", type=int, default=0, metavar="N", help="N runs without and N with the probe")
    ap.add_argument(
        "--silent", action="store_true", help="with --overhead: N more runs with the probe attached, not printing"
    )
    ap.add_argument(
        "--idle", action="store_true", help="with --overhead: N more runs with bpftrace on one unrelated function"
    )
    ap.add_argument("command", nargs=argparse.REMAINDER)
    a = ap.parse_args(argv)
    command = a.command[1:] if a.command[:1] == ["--"] else a.command
    out = Path(os.environ.get("VLAB_OUT", ".")).resolve()
    out.mkdir(parents=True, exist_ok=True)
    if not command:
        print("vlab trace: need a command", file=sys.stderr)
        return 2
    run: dict[str, Any] = {"command": command, "step": "device"}

    def finish(status: int) -> int:
        (out / "trace-run.json").write_text(json.dumps(run, indent=1) + "\n")
        return status

    mounted = False
    if a.dir is not None:
        cwd = a.dir.resolve()
        fs_dev = os.stat(cwd).st_dev
        disk_dev = disk_of(fs_dev)
        disk = f"/dev/block/{os.major(disk_dev)}:{os.minor(disk_dev)}"
        run.update(dir=str(cwd), fs="as mounted")
    else:
        dev = a.device or (os.environ.get("VLAB_DEVICES", "").split() or [""])[0]
        if not dev:
            print("vlab trace: need a device (--device) or a mounted file system (--dir)", file=sys.stderr)
            return 2
        run.update(device=dev, fs=a.fs, step="mkfs")
        if a.fs != "none":
            mkfs = ["mkfs.xfs", "-f", "-q", dev] if a.fs == "xfs" else [f"mkfs.{a.fs}", "-q", dev]
            subprocess.run(mkfs, check=True)
        run["step"] = "mount"
        MOUNT.mkdir(parents=True, exist_ok=True)
        subprocess.run(["mount", dev, str(MOUNT)], check=True)
        mounted, cwd = True, MOUNT
        fs_dev = os.stat(cwd).st_dev
        disk = dev
    run["fs_dev"] = f"{os.major(fs_dev)}:{os.minor(fs_dev)}"
    status = 0
    try:
        tracefs()
        if a.overhead:
            status = overhead(a.overhead, command, cwd, out, fs_dev, disk, run, a.silent, a.idle)
        else:
            run["step"] = "probe"
            probe = Probe(out, fs_dev, disk, a.blktrace)
            run["attach_s"] = probe.attach_s
            run["step"] = "command"
            t1 = time.monotonic()
            p = subprocess.run(command, cwd=cwd, check=False)
            run["command_s"] = round(time.monotonic() - t1, 3)
            run["exit_status"] = status = p.returncode
            os.sync()
            run["step"] = "stop"
            run.update(probe.stop())
        run["step"] = "done"
    except RuntimeError as e:
        run["error"] = str(e)
        print(f"vlab trace: {run['step']}: {e}", file=sys.stderr)
        status = 1
    finally:
        if mounted:
            subprocess.run(["umount", str(MOUNT)], check=False)
        finish(status)
    return status


def meminfo() -> dict[str, int]:
    """The guest's free, available and cached memory and dirty pages, KiB (/proc/meminfo)."""
    keep = ("MemFree", "MemAvailable", "Cached", "Dirty", "Shmem")
    try:
        lines = Path("/proc/meminfo").read_text().splitlines()
    except OSError:
        return {}
    fields = {ln.split(":")[0]: ln.split()[1] for ln in lines if ":" in ln and len(ln.split()) >= 2}
    return {k: int(fields[k]) for k in keep if k in fields and fields[k].isdigit()}


def overhead(n: int, command: list[str], cwd: Path, out: Path, fs_dev: int, disk: str, run: dict[str, Any],
             silent: bool = False, idle: bool = False) -> int:  # fmt: skip
    """Runs of the command without the probe ("off"), with it ("on"), with `silent` with it
    attached but not printing ("silent": seed 002's third condition) and with `idle` with
    bpftrace attached to one function the command does not call ("idle", etrace.idle_probe:
    what bpftrace's presence costs apart from the probes firing), n of each, the order
    rotated every round (off-on-silent-idle, on-silent-idle-off, ...); each run's output in
    overhead-K-CONDITION.out; per condition the median figure and wall time and their ratio
    to "off" in run (figure_on, figure_ratio; figure_silent, figure_silent_ratio; figure_idle,
    figure_idle_ratio). Each run records the guest's free and cached memory before it
    (`meminfo_kib`), to tell a memory effect from a probe's."""
    runs: list[dict[str, Any]] = []
    run["overhead_runs"] = runs
    conditions = ["off", "on", *(["silent"] if silent else []), *(["idle"] if idle else [])]
    status = 0
    for k in range(n):
        turn = k % len(conditions)
        for cond in conditions[turn:] + conditions[:turn]:
            run["step"] = f"overhead run {len(runs) + 1} ({cond})"
            rec: dict[str, Any] = {"traced": cond != "off", "condition": cond, "meminfo_kib": meminfo()}
            variant = {"on": "full"}.get(cond, cond)
            probe = Probe(out, fs_dev, disk, False, variant) if cond != "off" else None
            if probe is not None:
                rec["attach_s"] = probe.attach_s
            t1 = time.monotonic()
            p = subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=False)
            rec["wall_s"] = round(time.monotonic() - t1, 3)
            rec["exit_status"] = p.returncode
            name = out / f"overhead-{len(runs) + 1}-{cond}.out"
            name.write_text(p.stdout + p.stderr)
            rec["figure"] = throughput(p.stdout)
            if probe is not None:
                rec.update(probe.stop())
                (out / "trace.txt").rename(out / f"overhead-{len(runs) + 1}-trace.txt")
            status = status or p.returncode
            runs.append(rec)
    for what in ("figure", "wall_s"):
        off = [r[what] for r in runs if r["condition"] == "off" and r[what] is not None]
        for cond, key in (("on", ""), ("silent", "_silent"), ("idle", "_idle")):
            on = [r[what] for r in runs if r["condition"] == cond and r[what] is not None]
            if off and on:
                run[f"{what}_off"] = statistics.median(off)
                run[f"{what}_{cond}"] = statistics.median(on)
                run[f"{what}{key}_ratio"] = round(statistics.median(on) / statistics.median(off), 4)
    return status


if __name__ == "__main__":
    sys.exit(main())
