"""blktests' `block` group in a lab guest, with the veloces scheduler loaded.

blktests (github.com/osandov/blktests) is the block layer's own regression suite. It is
not part of this repository: a snapshot lives beside it (VELOCES_BLKTESTS, default
../shared/third_party/blktests) and is built and run, never copied into the project.

Host, once per snapshot (a stamp file records which):

    python -m vlab.checks.blktests --prepare      # copy to build/blktests/src and build its helpers

Guest, as root (`./vlab run --kernel 6.1 --memory 4G --cpus 2 --timeout N -- ...`):

    python -m vlab.checks.blktests [--tests block/001 ...] [--timeout S]

The guest copies the built tree to /tmp (blktests writes results/ beside itself), mounts
configfs, loads veloces and the kernel's schedulers, and gives blktests one test device, a
loop device on a tmpfs file with veloces selected: tests that reload null_blk or
scsi_debug cannot remove it. Each test runs in its own `./check` so that a hung one can be
killed and the rest still run. Kprobes on blk_mq_init_sched and on the module's
init_sched count each test's scheduler attaches, which shows that the tests that cycle
through the schedulers a queue offers got to veloces. --everywhere also selects veloces
on every disk the tests create; --baseline runs without veloces, to compare a failure.

It writes $VLAB_OUT/blktests.json ({test: {status, reason, seconds, ...}}, status one of
passed, failed, not run, excluded), $VLAB_OUT/blktests-run.json (environment and
checks), the raw output in $VLAB_OUT/blktests.log and blktests' results/ directory.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vlab import schedulers
from vlab.paths import build_dir, repo_root

MODULE = "veloces"
ENV_VAR = "VELOCES_BLKTESTS"
GROUP = "block"

# blktests' TIMEOUT: the run time, in seconds, of each TIMED test's fio jobs (split among
# a test's sub-runs). Without it, 010 reads 8 GiB from each of 32 null_blk devices.
DEFAULT_TIMEOUT_S = 30
# A test still running after this long is killed and recorded as failed (hung).
DEFAULT_TEST_LIMIT_S = 600
# Wall time for the whole group in the guest; tests not started by then are reported
# as not run. The host's vlab timeout adds BOOT_ALLOWANCE_S.
DEFAULT_BUDGET_S = 2400
BOOT_ALLOWANCE_S = 300


# Tests left out, with the reason; reported as "excluded". Every test of the group not
# listed here is run.
@dataclass(frozen=True)
class Exclusion:
    reason: str
    below_cpus: int = 0  # excluded only in guests with fewer CPUs than this (0: always)


EXCLUDED: dict[str, Exclusion] = {
    "block/038": Exclusion(
        "needs 4 CPUs: it writes submit_queues=4 to a null_blk device, which null_blk refuses "
        "(EINVAL) with fewer CPUs (drivers/block/null_blk/main.c, submit_queues > nr_cpu_ids)",
        below_cpus=4,
    ),
}


# blktests' TIMEOUT for single tests, and why.
TEST_TIMEOUTS: dict[str, tuple[int, str]] = {
    "block/001": (
        10,
        "its SCSI hotplug storm lasts TIMEOUT/2 s per phase, then udevadm settle must drain the udev "
        "events within 120 s: under TCG, at TIMEOUT=30 it timed out on 6.1 and 6.12 (and passed once "
        "without veloces in 257 s, near the limit); at TIMEOUT=10 it passed in 104 s",
    ),
}

# Tests that fail under emulation without veloces too (checked with --baseline): still
# run and reported as failed, with this note; the host's pytest marks them xfail.
KNOWN_FAILURES: dict[str, str] = {
    "block/024": "fails without veloces too (--baseline): it expects iostats' I/O time to round to whole "
    "seconds of 0.5 ms null_blk I/Os, and emulation adds a second (write 4 s for 3, 2 s for 1)",
}

# The same, for --everywhere only.
KNOWN_FAILURES_EVERYWHERE: dict[str, str] = {
    "block/017": "a race of --everywhere, not of veloces: udev selects the scheduler on the new nullb1 "
    "while the test's first read (about 1 s) is in flight; the switch freezes the queue until that read "
    "completes, so the write is not in flight 0.1 s later. Reproduced by hand with a switch to kyber",
}


def excluded(test: str) -> str | None:
    """Why `test` is left out in this guest, or None."""
    e = EXCLUDED.get(test)
    if e is None or (e.below_cpus and (os.cpu_count() or 1) >= e.below_cpus):
        return None
    return e.reason


# Tests that set each scheduler the queue offers in turn: each must attach veloces.
CYCLING_ALL = ("block/014", "block/015", "block/020", "block/021")
# Tests that switch to schedulers picked at random from those offered (005 every 0.2 s
# during its fio run, 027 per device): veloces must be offered and attached at least once
# over the run; one attach each is not guaranteed, so a test's own count is reported only.
CYCLING_RANDOM = ("block/005", "block/027")
RAN = ("passed", "failed")

GUEST_ROOT = Path("/tmp/blktests")
DEV_DIR = Path("/tmp/blktests-dev")
DEV_SIZE_MB = 1280  # tests write up to 1 GiB (005, 007 --size=1g); tmpfs holds what is written
BASELINE_SCHEDULER = "mq-deadline"
UDEV_RULE = Path("/run/udev/rules.d/99-vlab-blktests.rules")
KPROBE_GROUP = "vlab_blktests"
PROBES = {"veloces": f"{MODULE}:vel_init_sched", "any": "blk_mq_init_sched"}  # event: symbol
TRACING = Path("/sys/kernel/tracing")
CONFIGFS = Path("/sys/kernel/config")


class BlktestsError(Exception):
    """The suite is missing, does not build, or the guest cannot set it up."""


# ------------------------------------------------------------------ host side


def suite_path() -> Path:
    """Where the blktests snapshot is expected ($VELOCES_BLKTESTS or the shared copy)."""
    env = os.environ.get(ENV_VAR)
    return Path(env) if env else repo_root().parent / "shared" / "third_party" / "blktests"


def suite_missing() -> str | None:
    """Why the suite cannot be used, or None when it is there."""
    path = suite_path()
    if (path / "check").is_file() and (path / "tests" / GROUP).is_dir():
        return None
    how = f"${ENV_VAR} is {os.environ[ENV_VAR]!r}" if os.environ.get(ENV_VAR) else f"${ENV_VAR} is not set"
    return f"blktests not found at {path} ({how}): set {ENV_VAR} to a blktests checkout"


def prepared_dir() -> Path:
    return build_dir() / "blktests" / "src"


def group_tests(root: Path, group: str = GROUP) -> list[str]:
    """The tests of `group` in a blktests tree, e.g. ["block/001", ...]."""
    return sorted(f"{group}/{p.name}" for p in (root / "tests" / group).iterdir() if re.fullmatch(r"\d{3}", p.name))


def _fingerprint(src: Path) -> str:
    h = hashlib.sha256(str(src.resolve()).encode())
    for p in sorted(src.rglob("*")):
        rel = p.relative_to(src)
        if rel.parts[0] in (".git", "results") or not p.is_file():
            continue
        st = p.stat()
        h.update(f"{rel}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()


def prepare(src: Path | None = None, dest: Path | None = None) -> Path:
    """Copy the snapshot to build/blktests/src and build its helpers, once per snapshot."""
    src = src or suite_path()
    dest = dest or prepared_dir()
    missing = suite_missing() if src == suite_path() else None
    if missing:
        raise BlktestsError(missing)
    stamp = dest.parent / "stamp"
    fp = _fingerprint(src)
    if dest.is_dir() and stamp.is_file() and stamp.read_text().strip() == fp:
        return dest
    if dest.exists():
        shutil.rmtree(dest)
    stamp.unlink(missing_ok=True)
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(src, dest, symlinks=True, ignore=shutil.ignore_patterns(".git", "results"))
    log = dest.parent / "build.log"
    with open(log, "w") as f:
        p = subprocess.run(["nice", "make", "-C", str(dest)], stdout=f, stderr=subprocess.STDOUT, check=False)
    if p.returncode != 0:
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-15:])
        raise BlktestsError(f"building blktests' helpers failed (make exit {p.returncode}); {log}:\n{tail}")
    stamp.write_text(fp + "\n")
    return dest


def guest_command(
    python: str, tests: list[str], timeout_s: int, budget_s: int, src: Path | None = None, everywhere: bool = False
) -> str:
    """The command line for `vlab run` that runs the guest side."""
    args = [python, "-m", "vlab.checks.blktests", "--src", str(src or prepared_dir())]
    args += ["--timeout", str(timeout_s), "--budget", str(budget_s)]
    if everywhere:
        args.append("--everywhere")
    if tests:
        args += ["--tests", *tests]
    return " ".join(args)


# ------------------------------------------------------------------ output parsing

STATUS_RE = re.compile(
    r"^(?P<test>[\w-]+/(?:\d{3}|\*\*\*))(?: => (?P<dev>\S+))?\s.*\[(?P<status>passed|failed|not run)\]\s*$"
)
# "    runtime  12.1s  ...  11.8s": a figure of the last run (none here) and of this one.
FIGURE_RE = re.compile(r"^ {4}(?P<key>\S.*?)\s{2,}(?:\S.*?\s{2,})?\.\.\.\s+(?P<value>\S.*?)\s*$")


@dataclass
class Outcome:
    """One status line of `./check` and the indented lines under it."""

    test: str
    device: str | None
    status: str  # passed, failed, not run
    runtime_s: float | None = None
    figures: dict[str, str] = field(default_factory=dict)
    details: list[str] = field(default_factory=list)


def parse_check_output(text: str) -> list[Outcome]:
    """Status lines ("block/005 => loop0 (...)  [passed]") and what blktests printed under
    each: the runtime, the reasons a test did not run, or why it failed."""
    outcomes: list[Outcome] = []
    current: Outcome | None = None
    for line in text.splitlines():
        m = STATUS_RE.match(line)
        if m:
            current = Outcome(m.group("test"), m.group("dev"), m.group("status"))
            outcomes.append(current)
            continue
        if current is None or not line.startswith("    "):
            if line.strip():
                current = None  # the next test's first line, or a warning
            continue
        f = FIGURE_RE.match(line)
        if f and f.group("key") == "runtime" and re.fullmatch(r"[0-9.]+s", f.group("value")):
            current.runtime_s = float(f.group("value")[:-1])
        elif f:
            current.figures[f.group("key")] = f.group("value")
        elif line.strip():
            current.details.append(line.strip())
    return outcomes


def failure_reason(details: list[str]) -> str:
    """What blktests printed under a failed test, in one line: the changed lines of an
    output diff, "exited with status N", or the kernel log lines it found."""
    if details and details[0].startswith("--- "):
        changed = [d for d in details if d[:1] in "+-" and not d.startswith(("+++ ", "--- "))]
        more = " (diff cut by blktests)" if any(d == "..." for d in details) else ""
        return "output differs: " + " | ".join(changed)[:1500] + more
    return " | ".join(details)[:1500]


def summarize(test: str, outcomes: list[Outcome], rc: int, wall_s: float, tail: str) -> dict[str, Any]:
    """One record for `test` from its `./check` run."""
    mine = [o for o in outcomes if o.test in (test, f"{test.split('/')[0]}/***")]
    rec: dict[str, Any] = {"status": "", "reason": "", "seconds": round(wall_s, 1)}
    if not mine:
        rec["status"] = "failed" if rc != 0 else "not run"
        rec["reason"] = f"blktests printed no result for it (./check exit {rc}): {tail[-600:]}"
        return rec
    worst = next((o for o in mine if o.status == "failed"), None) or next(
        (o for o in mine if o.status == "passed"), mine[0]
    )
    rec["status"] = worst.status
    rec["reason"] = failure_reason(worst.details) if worst.status == "failed" else "; ".join(worst.details)[:2000]
    if worst.status == "failed":
        rec["details"] = worst.details
    if worst.runtime_s is not None:
        rec["runtime"] = worst.runtime_s
    if worst.figures:
        rec["figures"] = worst.figures
    if worst.device:
        rec["device"] = worst.device
    if len(mine) > 1:
        rec["runs"] = [{"device": o.device, "status": o.status, "details": o.details[:20]} for o in mine]
    return rec


# ------------------------------------------------------------------ guest side


def sh(cmd: list[str], timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)


def read_or_none(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def mount_configfs() -> None:
    if os.path.ismount(CONFIGFS):
        return
    sh(["modprobe", "configfs"])
    p = sh(["mount", "-t", "configfs", "configfs", str(CONFIGFS)])
    if p.returncode != 0:
        raise BlktestsError(f"cannot mount configfs on {CONFIGFS}: {p.stderr.strip()}")


def load_schedulers(with_module: bool = True) -> None:
    """veloces, and the kernel's own schedulers, so that tests cycling through what a
    queue offers switch between veloces and every other one."""
    for name in schedulers.MODULES:
        schedulers.load(name)
    if not with_module:
        return
    ko = schedulers.module_path(MODULE, os.uname().release)
    if not ko.exists():
        raise BlktestsError(f"{ko} not built: run make -C kernel modules")
    try:
        schedulers.load(MODULE)
    except schedulers.SchedulerError as e:
        raise BlktestsError(str(e)) from e
    if not Path("/sys/module", MODULE).exists():
        raise BlktestsError(f"insmod {ko} left no /sys/module/{MODULE}")


def make_test_dev(sched: str = MODULE) -> str:
    """A loop device on a tmpfs file, `sched` selected; returns its name (loop0)."""
    DEV_DIR.mkdir(parents=True, exist_ok=True)
    if not os.path.ismount(DEV_DIR):
        p = sh(["mount", "-t", "tmpfs", "-o", f"size={DEV_SIZE_MB + 64}M", "blktests-dev", str(DEV_DIR)])
        if p.returncode != 0:
            raise BlktestsError(f"cannot mount a tmpfs on {DEV_DIR}: {p.stderr.strip()}")
    image = DEV_DIR / "disk.img"
    with open(image, "wb") as f:
        f.truncate(DEV_SIZE_MB << 20)
    sh(["modprobe", "loop"])
    p = sh(["losetup", "--find", "--show", str(image)])
    if p.returncode != 0:
        raise BlktestsError(f"losetup failed: {p.stderr.strip()}")
    name = Path(p.stdout.strip()).name
    sh(["udevadm", "settle"])
    if sched not in schedulers.offered(name):
        raise BlktestsError(f"{name} does not offer {sched}: {schedulers.offered(name)}")
    schedulers.select(name, sched)
    return name


class AttachCounter:
    """Counts scheduler attaches with kprobe events (kprobe_profile has the hit counts):
    blk_mq_init_sched for any scheduler, the module's init_sched for veloces."""

    def __init__(self) -> None:
        self.errors: list[str] = []
        for event, symbol in PROBES.items():
            try:
                # Not open(..., "a"): Python then seeks to the end, which tracefs refuses.
                fd = os.open(TRACING / "kprobe_events", os.O_WRONLY | os.O_APPEND)
                try:
                    os.write(fd, f"p:{KPROBE_GROUP}/{event} {symbol}\n".encode())
                finally:
                    os.close(fd)
                (TRACING / "events" / KPROBE_GROUP / event / "enable").write_text("1")
            except OSError as e:
                self.errors.append(f"kprobe on {symbol} failed: {e.strerror or e}")

    def hits(self) -> dict[str, int | None]:
        found: dict[str, int | None] = dict.fromkeys(PROBES)
        with contextlib.suppress(OSError):
            for line in (TRACING / "kprobe_profile").read_text().splitlines():
                words = line.split()
                name = words[0].split("/")[-1] if words else ""
                if len(words) >= 2 and name in found:
                    found[name] = int(words[1])
        return found


def timeout_for(test: str, default_s: int) -> int:
    return TEST_TIMEOUTS[test][0] if test in TEST_TIMEOUTS else default_s


def write_config(root: Path, dev: str, timeout_s: int) -> Path:
    config = root / "config"
    config.write_text(f"TEST_DEVS=(/dev/{dev})\nTIMEOUT={timeout_s}\n")
    return config


def run_one(root: Path, test: str, limit_s: float, log: Any) -> tuple[int, str, float, bool]:
    """Run `./check TEST` in its own process group; (exit, output, wall s, killed)."""
    t0 = time.monotonic()
    log.write(f"\n===== {test} =====\n")
    log.flush()
    proc = subprocess.Popen(
        ["./check", "-c", str(root / "config"), "-o", str(root / "results"), test],
        cwd=root,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    killed = False
    try:
        out, _ = proc.communicate(timeout=limit_s)
    except subprocess.TimeoutExpired:
        killed = True
        os.killpg(proc.pid, signal.SIGKILL)
        try:
            out, _ = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            out = "(output lost: the killed test's processes did not exit)"
    log.write(out)
    log.flush()
    return proc.returncode if proc.returncode is not None else -9, out, time.monotonic() - t0, killed


def dev_healthy(dev: str, sched: str) -> str | None:
    """Put the test device back as the suite expects it; say what was wrong, if anything."""
    if not Path("/sys/block", dev).exists():
        return f"/dev/{dev} is gone"
    if sched == MODULE and not Path("/sys/module", MODULE).exists():
        return f"the {MODULE} module was unloaded"
    if schedulers.current(dev) != sched:
        was = schedulers.current(dev)
        schedulers.select(dev, sched)
        return f"{dev}'s scheduler was {was}; {sched} selected again"
    return None


def select_on_new_disks(sched: str) -> None:
    """A udev rule that selects `sched` on every disk added from now on (the null_blk and
    scsi_debug disks that tests create), instead of the kernel's default."""
    rule = (
        'ACTION=="add", SUBSYSTEM=="block", ENV{DEVTYPE}=="disk", TEST=="queue/scheduler", '
        f'ATTR{{queue/scheduler}}="{sched}"\n'
    )
    UDEV_RULE.parent.mkdir(parents=True, exist_ok=True)
    UDEV_RULE.write_text(rule)
    p = sh(["udevadm", "control", "--reload"])
    if p.returncode != 0:
        raise BlktestsError(f"udevadm control --reload failed: {p.stderr.strip()}")


def expand(root: Path, names: list[str]) -> list[str]:
    out: list[str] = []
    for name in names:
        if "/" in name:
            if not (root / "tests" / name).is_file():
                raise BlktestsError(f"no test {name} in {root / 'tests'}")
            out.append(name)
        elif (root / "tests" / name).is_dir():
            out.extend(group_tests(root, name))
        else:
            raise BlktestsError(f"{name!r} is neither a test (block/001) nor a group (block)")
    return list(dict.fromkeys(out))


def run_guest(args: argparse.Namespace) -> int:
    out = Path(os.environ.get("VLAB_OUT", "/tmp"))
    src: Path = args.src
    if not (src / "check").is_file() or not (src / "src" / "openclose").is_file():
        raise BlktestsError(
            f"{src} is not a built blktests tree: run `python -m vlab.checks.blktests --prepare` on the host"
        )
    started = time.monotonic()
    mount_configfs()
    sched = BASELINE_SCHEDULER if args.baseline else MODULE
    load_schedulers(with_module=not args.baseline)
    if GUEST_ROOT.exists():
        shutil.rmtree(GUEST_ROOT)
    shutil.copytree(src, GUEST_ROOT, symlinks=True)
    tests = expand(GUEST_ROOT, args.tests or [GROUP])
    named = {t for t in args.tests if "/" in t}  # as in blktests, a test named explicitly is not excluded

    def excluded_here(test: str) -> str | None:
        return None if test in named else excluded(test)

    dev = make_test_dev(sched)
    write_config(GUEST_ROOT, dev, args.timeout)
    if args.everywhere:
        select_on_new_disks(sched)
    counter = AttachCounter()
    meta: dict[str, Any] = {
        "kernel": os.uname().release,
        "baseline": args.baseline,
        "module_srcversion": read_or_none(Path("/sys/module", MODULE, "srcversion")),
        "test_devs": [f"/dev/{dev}"],
        "test_dev_scheduler": schedulers.current(dev),
        "offered": schedulers.offered(dev),
        "timeout_s": args.timeout,
        "test_limit_s": args.test_limit,
        "budget_s": args.budget,
        "attach_counting": counter.errors or "ok",
        "excluded": {t: why for t in tests if (why := excluded_here(t))},
        "everywhere": args.everywhere,
        "device_notes": {},
        "cycling": {},
    }
    results: dict[str, dict[str, Any]] = {}

    def save() -> None:
        (out / "blktests.json").write_text(json.dumps(results, indent=2) + "\n")
        (out / "blktests-run.json").write_text(json.dumps(meta, indent=2) + "\n")

    print(f"blktests: {len(tests)} tests, TEST_DEVS=/dev/{dev} ({schedulers.current(dev)}), TIMEOUT={args.timeout}")
    print(f"blktests: {dev} offers {' '.join(schedulers.offered(dev))}", flush=True)
    with open(out / "blktests.log", "w") as log:
        for test in tests:
            if excluded_here(test):
                results[test] = {"status": "excluded", "reason": f"excluded: {excluded_here(test)}", "seconds": 0.0}
            elif time.monotonic() - started > args.budget:
                reason = f"the guest's time budget ({args.budget} s) ran out before it started"
                results[test] = {"status": "not run", "reason": reason, "seconds": 0.0}
            else:
                write_config(GUEST_ROOT, dev, timeout_for(test, args.timeout))
                before = counter.hits()
                rc, text, wall, killed = run_one(GUEST_ROOT, test, args.test_limit, log)
                after = counter.hits()
                rec = summarize(test, parse_check_output(text), rc, wall, text)
                for event, key in (("any", "schedulers_attached"), ("veloces", "veloces_attached")):
                    n0, n1 = before[event], after[event]
                    if n0 is not None and n1 is not None:
                        rec[key] = n1 - n0
                if test in TEST_TIMEOUTS:
                    rec["timeout"] = f"TIMEOUT={TEST_TIMEOUTS[test][0]}: {TEST_TIMEOUTS[test][1]}"
                known = KNOWN_FAILURES | (KNOWN_FAILURES_EVERYWHERE if args.everywhere else {})
                if rec["status"] == "failed" and test in known:
                    rec["known"] = known[test]
                if killed:
                    rec["killed"] = True
                    rec["status"] = "failed"
                    rec["reason"] = f"killed after {args.test_limit} s (hung or too slow); " + rec["reason"]
                note = dev_healthy(dev, sched)
                if note:
                    meta["device_notes"][test] = note
                    print(f"blktests: after {test}: {note}", flush=True)
                    if not Path("/sys/block", dev).exists():
                        dev = make_test_dev(sched)
                results[test] = rec
            r = results[test]
            attached = f", veloces attached {r['veloces_attached']}x" if "veloces_attached" in r else ""
            why = f": {r['reason'][:300]}" if r["reason"] and r["status"] != "passed" else ""
            print(f"blktests: {test:<10} {r['status']:<8} ({r['seconds']} s{attached}){why}", flush=True)
            save()
    if not args.baseline:
        meta["cycling"] = check_cycling(results, meta["offered"])
    meta["wall_s"] = round(time.monotonic() - started, 1)
    with contextlib.suppress(OSError):
        shutil.copytree(GUEST_ROOT / "results", out / "results", dirs_exist_ok=True)
    save()
    counts = {s: sum(r["status"] == s for r in results.values()) for s in ("passed", "failed", "not run", "excluded")}
    print(f"blktests: {counts} in {meta['wall_s']} s; scheduler cycling: {meta['cycling']}")
    new_failures = [t for t, r in results.items() if r["status"] == "failed" and "known" not in r]
    return 1 if new_failures or meta["cycling"].get("problems") else 0


def check_cycling(results: dict[str, dict[str, Any]], offered: list[str]) -> dict[str, Any]:
    """Did the scheduler-cycling tests that ran get to veloces?"""
    # A test killed at its time limit may not have reached veloces' turn: it fails on its own.
    ran = {
        t: results[t]
        for t in (*CYCLING_ALL, *CYCLING_RANDOM)
        if results.get(t, {}).get("status") in RAN and not results[t].get("killed")
    }
    keys = ("veloces_attached", "schedulers_attached")
    out: dict[str, Any] = {t: {k: r.get(k) for k in keys} for t, r in ran.items()}
    problems = [] if MODULE in offered else [f"{MODULE} is not offered"]
    problems += [f"{t} never attached {MODULE}" for t in CYCLING_ALL if ran.get(t, {}).get("veloces_attached") == 0]
    randoms = [ran[t].get("veloces_attached") for t in CYCLING_RANDOM if t in ran]
    if randoms and None not in randoms and sum(n or 0 for n in randoms) == 0:
        problems.append(f"{' and '.join(t for t in CYCLING_RANDOM if t in ran)} never attached {MODULE}")
    out["problems"] = problems
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m vlab.checks.blktests", description=__doc__.split("\n\n")[0])
    parser.add_argument("--prepare", action="store_true", help="host: copy and build the snapshot, print its path")
    parser.add_argument("--src", type=Path, default=prepared_dir(), help="the built blktests tree (read-only is fine)")
    parser.add_argument("--tests", nargs="+", default=[], metavar="TEST", help=f"tests or groups (default {GROUP})")
    parser.add_argument("--timeout", type=int, default=DEFAULT_TIMEOUT_S, help="blktests' TIMEOUT in seconds")
    parser.add_argument("--test-limit", type=float, default=DEFAULT_TEST_LIMIT_S, help="kill a test after S seconds")
    parser.add_argument(
        "--baseline",
        action="store_true",
        help=f"without {MODULE} (not loaded; {BASELINE_SCHEDULER} on the test device), to compare failures",
    )
    parser.add_argument(
        "--everywhere",
        action="store_true",
        help="also select the scheduler on every disk the tests create (a udev rule), not only on TEST_DEVS",
    )
    parser.add_argument("--budget", type=float, default=DEFAULT_BUDGET_S, help="start no test after S seconds")
    args = parser.parse_args(argv)
    try:
        if args.prepare:
            print(prepare())
            return 0
        if os.geteuid() != 0:
            raise BlktestsError("the guest side runs as root inside a lab guest (./vlab run ... -- python -m ...)")
        return run_guest(args)
    except BlktestsError as e:
        print(f"blktests: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
