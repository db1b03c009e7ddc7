"""The veloces module's behaviour suite, run as root inside a lab guest.

    ./vlab run --kernel 6.1 --memory 3G -- python -m vlab.modsuite [CHECK...]

Each check records {"ok", "detail", "figures"} in $VLAB_OUT/modsuite.json; the host's
lab/tests/test_veloces.py turns each record into one test. A check that raises is
recorded as failed with the exception, and the suite moves on.
"""

from __future__ import annotations

import ctypes
import errno
import json
import mmap
import os
import random
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from vlab import schedulers
from vlab.devices import NULLB_CONFIGFS, Device, create_all, parse_specs

MODULE = "veloces"


def round_trips(t: schedulers.Tunable) -> tuple[list[str], list[str]]:
    """(valid values to round-trip, out-of-range ones) of a declared tunable: its bounds, its
    default and a value between; one past each bound."""
    valid = sorted({t.min, t.default, (t.min + t.max) // 2, t.max})
    return [str(v) for v in valid], [str(t.min - 1), str(t.max + 1)]


# "\n" is what `echo "" >` writes; a zero-length write(2) never reaches the store method.
COMMON_INVALID = ["abc", "\n", " ", "99999999999999999999", "1.5", "0x10"]
SLOW = "null_blk:irqmode=2,completion_nsec=1000000,hw_queue_depth={depth},submit_queues=1,size=256"

SYNC_FILE_RANGE_WAIT_BEFORE = 1
SYNC_FILE_RANGE_WRITE = 2
SYNC_FILE_RANGE_WAIT_AFTER = 4

Result = dict[str, Any]


class CheckFailed(Exception):
    pass


def expect(cond: bool, message: str) -> None:
    if not cond:
        raise CheckFailed(message)


def sh(cmd: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, timeout=timeout, check=False)


def module_ko() -> Path:
    return schedulers.module_path(MODULE, os.uname().release)


def loaded() -> bool:
    return Path("/sys/module", MODULE).exists()


def ensure_loaded() -> None:
    if not loaded():
        schedulers.load(MODULE)


def make(spec: str) -> Device:
    (dev,) = create_all(parse_specs(spec))
    return dev


def attr(dev: Device, name: str) -> Path:
    return dev.queue / "iosched" / name


def write_errno(path: Path, value: str) -> int:
    """Write `value` with one write(2); return 0 or the errno."""
    try:
        fd = os.open(path, os.O_WRONLY)
    except OSError as e:
        return e.errno or -1
    try:
        os.write(fd, value.encode())
        return 0
    except OSError as e:
        return e.errno or -1
    finally:
        os.close(fd)


def set_attr(dev: Device, name: str, value: int | str) -> None:
    rc = write_errno(attr(dev, name), str(value))
    expect(rc == 0, f"writing {value} to {name} failed: {os.strerror(rc)}")


def stats(dev: Device) -> dict[str, int]:
    text = Path(f"/sys/kernel/debug/block/{dev.name}/sched/stats").read_text()
    out: dict[str, int] = {}
    for line in text.splitlines():
        words = line.split()
        if len(words) == 2:  # "starved 5"
            out[words[0]] = int(words[1])
            continue
        for k, v in zip(words[1::2], words[2::2], strict=False):
            out[f"{words[0]}_{k}"] = int(v)
    return out


def fio(dev: Device, args: str, timeout: float = 600, io_errors_expected: bool = False) -> dict[str, Any]:
    """Run fio on `dev` from /tmp (its state files need a writable directory); return its JSON.

    fio exits non-zero when I/O failed, even with continue_on_error: where errors are the
    point, `io_errors_expected` accepts that as long as its JSON came out.
    """
    p = sh(f"cd /tmp && fio --output-format=json --filename={dev.path} {args}", timeout)
    ok = p.returncode == 0 or (io_errors_expected and "{" in p.stdout)
    expect(ok, f"fio failed ({p.returncode}): {p.stderr.strip()[-800:]}")
    doc: dict[str, Any] = json.loads(p.stdout[p.stdout.find("{") :])
    return doc


def fio_no_errors(dev: Device, args: str, what: str, timeout: float = 600) -> dict[str, Any]:
    """Run fio (see fio()) and fail the check if any job reports an error."""
    doc = fio(dev, args, timeout=timeout)
    errors = sum(int(j.get("error", 0)) for j in doc["jobs"])
    expect(errors == 0, f"{what}: fio reported {errors} errors")
    return doc


def dmesg_problems(since: float) -> list[str]:
    bad = ("WARNING:", "BUG:", "Oops", "blocked for more than", "stall", "general protection")
    out = []
    for line in sh("dmesg").stdout.splitlines():
        m = re.match(r"\[\s*([0-9.]+)\]", line)
        if m and float(m.group(1)) >= since and any(b in line for b in bad):
            out.append(line)
    return out


def uptime() -> float:
    return float(Path("/proc/uptime").read_text().split()[0])


# ------------------------------------------------------------------ checks


def check_load(r: Result) -> None:
    """a. loads, is offered and selectable on 1-hwq, 2-hwq null_blk and scsi_debug; rmmod busy; unload."""
    expect(module_ko().exists(), f"{module_ko()} not built: run make -C kernel")
    if loaded():
        sh(f"rmmod {MODULE}")
    schedulers.load(MODULE)
    expect(loaded(), "insmod left no /sys/module/veloces")
    one = make("null_blk:submit_queues=1,size=64")
    two = make("null_blk:submit_queues=2,size=64")
    sd = make("scsi_debug:dev_size_mb=32")
    r["figures"]["hw_queues"] = [one.describe()["nr_hw_queues"], two.describe()["nr_hw_queues"]]
    expect(r["figures"]["hw_queues"] == [1, 2], f"hardware queues {r['figures']['hw_queues']}, wanted [1, 2]")
    for dev in (one, two, sd):
        expect(MODULE in schedulers.offered(dev.name), f"{dev.name} does not offer veloces")
        schedulers.select(dev.name, MODULE)
        p = sh(f"dd if={dev.path} of=/dev/null bs=64k count=64 iflag=direct status=none")
        expect(p.returncode == 0, f"read through veloces on {dev.name} failed: {p.stderr}")
    p = sh(f"rmmod {MODULE}")
    expect(p.returncode != 0 and "in use" in p.stderr, f"rmmod while in use: rc {p.returncode} {p.stderr!r}")
    p = sh(f"dd if=/dev/zero of={one.path} bs=64k count=64 oflag=direct status=none")
    expect(p.returncode == 0 and schedulers.current(one.name) == MODULE, "queue unusable after failed rmmod")
    for dev in (one, two, sd):
        schedulers.select(dev.name, "none")
    p = sh(f"rmmod {MODULE}")
    expect(p.returncode == 0 and not loaded(), f"rmmod after switching away failed: {p.stderr}")
    schedulers.load(MODULE)
    expect(loaded(), "reload failed")
    sh("rmmod scsi_debug")
    r["detail"] = "selectable on 1-hwq and 2-hwq null_blk and scsi_debug; rmmod EBUSY in use; unloads"


def check_tunables(r: Result) -> None:
    """b. defaults readable, valid values round-trip, invalid ones are -EINVAL and change nothing."""
    ensure_loaded()
    dev = make("null_blk:size=64,hw_queue_depth=64,submit_queues=1")  # 64 tags
    schedulers.select(dev.name, MODULE)
    # The module's own table (kernel/veloces-tunables.h), as the simulator was built from it.
    declared = schedulers.declared_tunables(MODULE)
    found = sorted(p.name for p in (dev.queue / "iosched").iterdir())
    expect(found == sorted(declared), f"tunables {found}, declared {sorted(declared)}")
    defaults = {}
    for name, t in declared.items():
        valid, invalid = round_trips(t)
        before = attr(dev, name).read_text().strip()
        defaults[name] = before
        expect(before.isdigit(), f"{name} default {before!r} is not a number")
        # write_depth follows the device's tags (64); null_blk reports no erase geometry, so
        # bundle_kb keeps the declared default.
        wanted = "64" if name == "write_depth" else str(t.default)
        expect(before == wanted, f"{name} default {before}, declared {wanted}")
        for v in valid:
            rc = write_errno(attr(dev, name), v)
            got = attr(dev, name).read_text().strip()
            expect(rc == 0 and got == v, f"{name}: wrote {v}, rc {rc}, read back {got!r}")
        set_attr(dev, name, before)
        for v in invalid + COMMON_INVALID:
            rc = write_errno(attr(dev, name), v)
            got = attr(dev, name).read_text().strip()
            expect(rc == errno.EINVAL, f"{name}: writing {v!r} gave {os.strerror(rc) if rc else 'success'}")
            expect(got == before, f"{name}: invalid {v!r} changed the value to {got!r}")
    r["figures"]["defaults"] = defaults
    schedulers.select(dev.name, "none")
    r["detail"] = f"{len(declared)} tunables, defaults as declared: {defaults}"


def check_verify(r: Result) -> None:
    """c. fio verify (crc32c) over 1 GiB, random and sequential, 4 jobs, memory-backed null_blk."""
    ensure_loaded()
    dev = make("null_blk:memory_backed=1,size=1024,irqmode=1,hw_queue_depth=32,discard=1")
    schedulers.select(dev.name, MODULE)
    args = (
        "--ioengine=libaio --direct=1 --iodepth=16 --numjobs=4 --size=256m --offset_increment=256m "
        "--bsrange=4k-128k --verify=crc32c --verify_fatal=1 --serialize_overlap=1 --do_verify=1 "
        "--group_reporting --name=seq --rw=write --name=rand --stonewall --rw=randwrite --verify_backlog=256"
    )
    doc = fio(dev, args, timeout=1500)
    errors = sum(int(j.get("error", 0)) for j in doc["jobs"])
    written = sum(int(j["write"]["io_kbytes"]) for j in doc["jobs"])
    verified = sum(int(j["read"]["io_kbytes"]) for j in doc["jobs"])
    r["figures"].update(written_mib=written // 1024, verified_mib=verified // 1024, errors=errors)
    expect(errors == 0, f"fio reported {errors} errors")
    expect(written >= 1024 * 1024, f"only {written // 1024} MiB written")
    expect(verified >= 1024 * 1024, f"only {verified // 1024} MiB verified")
    r["detail"] = f"{written // 1024} MiB written, {verified // 1024} MiB verified, 0 errors"
    # Give the 1 GiB back in 32 MiB discards: null_blk frees a removed device's pages in one
    # loop without rescheduling, which on the debug kernel (KASAN) under TCG ran 26 s and
    # tripped the soft-lockup detector when a later check reloaded null_blk.
    p = sh(f"blkdiscard --step 32M {dev.path}")
    expect(p.returncode == 0, f"blkdiscard failed: {p.stderr.strip()}")
    schedulers.select(dev.name, "none")


def check_switching(r: Result) -> None:
    """d. switch schedulers every 0.5 s during a 30 s verify run: no errors, no hang."""
    ensure_loaded()
    Path("/proc/sys/kernel/hung_task_timeout_secs").write_text("10")
    dev = make("null_blk:memory_backed=1,size=256,irqmode=2,completion_nsec=20000,hw_queue_depth=16")
    schedulers.require(dev.name, ["veloces", "mq-deadline", "kyber", "bfq"])
    stop = threading.Event()
    switches = []

    def switcher() -> None:
        others = ["mq-deadline", "kyber", "bfq", "none"]
        i = 0
        while not stop.is_set():
            name = MODULE if i % 2 == 0 else others[(i // 2) % len(others)]
            schedulers.select(dev.name, name)
            switches.append(name)
            i += 1
            time.sleep(0.5)

    t0 = uptime()
    th = threading.Thread(target=switcher, daemon=True)
    th.start()
    try:
        doc = fio(
            dev,
            "--name=sw --ioengine=libaio --direct=1 --iodepth=8 --numjobs=2 --size=64m --offset_increment=64m "
            "--rw=randrw --bsrange=4k-64k --verify=crc32c --verify_fatal=1 --serialize_overlap=1 "
            "--time_based --runtime=30 --group_reporting",
            timeout=240,
        )
    finally:
        stop.set()
        th.join(timeout=30)
    expect(not th.is_alive(), "the scheduler switcher hung")
    errors = sum(int(j.get("error", 0)) for j in doc["jobs"])
    problems = dmesg_problems(t0)
    r["figures"].update(switches=len(switches), errors=errors)
    expect(errors == 0, f"fio reported {errors} errors")
    expect(len(switches) >= 30, f"only {len(switches)} switches in 30 s")
    expect(not problems, "kernel log: " + " | ".join(problems[:3]))
    schedulers.select(dev.name, "none")
    r["detail"] = f"{len(switches)} switches during 30 s of verified I/O, 0 errors, no hung task"


def _fio_read_p99(dev: Device, sched: str) -> float:
    schedulers.select(dev.name, sched)
    doc = fio(
        dev,
        "--ioengine=libaio --direct=1 --time_based --runtime=8 --ramp_time=1 --lat_percentiles=1 "
        "--name=flood --rw=randwrite --bs=4k --iodepth=1 --numjobs=16 "
        "--name=reader --numjobs=1 --rw=randread --bs=4k --iodepth=1",
    )
    reader = next(j for j in doc["jobs"] if j["jobname"] == "reader")
    # Total latency: under none a read waits for a tag inside io_submit (slat).
    return float(reader["read"]["lat_ns"]["percentile"]["99.000000"]) / 1000.0


def check_read_preference(r: Result) -> None:
    """e1. under a write flood (16 writers) on a slow 8-tag device, read p99 is lower than under none."""
    ensure_loaded()
    # 8 tags: scheduler tags (2 x 8) come in words of 4, so 1/4 can be kept for reads.
    dev = make("null_blk:irqmode=2,completion_nsec=4000000,hw_queue_depth=8,submit_queues=1,size=256")
    p99: dict[str, list[float]] = {"none": [], MODULE: []}
    for rep in range(2):
        for sched in [MODULE, "none"] if rep % 2 else ["none", MODULE]:
            p99[sched].append(_fio_read_p99(dev, sched))
    med = {s: sorted(v)[len(v) // 2] for s, v in p99.items()}
    r["figures"].update(read_total_latency_p99_us=p99, ratio=med[MODULE] / med["none"])
    schedulers.select(dev.name, "none")
    r["detail"] = f"read total-latency p99 veloces/none = {med[MODULE] / med['none']:.2f}"
    if Path("/proc/lockdep").exists():
        # The debug kernel (KASAN, lockdep) under TCG is CPU-bound here: read p99 was
        # 103-131 ms under veloces and 98-116 ms under none in its two runs (ratio 0.93,
        # then 1.26), against 30-36 ms under veloces on Debian's 6.1: the instrumented
        # CPU cost sets the floor, not queueing. Recorded, not asserted.
        r["detail"] = f"skipped: CPU-bound on a lock-debugging kernel ({r['detail']}, recorded only)"
        r["figures"]["skipped"] = True
        return
    expect(max(p99[MODULE]) < min(p99["none"]), f"read p99 veloces {p99[MODULE]} us vs none {p99['none']} us")


class Trace:
    """block:block_rq_issue events of one device, from tracefs."""

    ROOT = Path("/sys/kernel/tracing")

    def __init__(self, dev: Device) -> None:
        major, minor = Path(f"/sys/block/{dev.name}/dev").read_text().strip().split(":")
        self.dev = f"{major},{minor}"
        ev = self.ROOT / "events/block/block_rq_issue"
        (self.ROOT / "tracing_on").write_text("0")
        (self.ROOT / "trace").write_text("")
        (ev / "filter").write_text(f"dev == {(int(major) << 20) | int(minor)}")
        (ev / "enable").write_text("1")
        (self.ROOT / "tracing_on").write_text("1")

    def stop(self) -> list[tuple[str, int, int]]:
        """(rwbs, sector, sectors) in issue order."""
        (self.ROOT / "tracing_on").write_text("0")
        (self.ROOT / "events/block/block_rq_issue/enable").write_text("0")
        out = []
        pat = re.compile(r"block_rq_issue: (\d+,\d+) (\S+) \d+ \(.*?\) (\d+) \+ (\d+)")
        for line in (self.ROOT / "trace").read_text().splitlines():
            m = pat.search(line)
            if m and m.group(1) == self.dev:
                out.append((m.group(2), int(m.group(3)), int(m.group(4))))
        return out


_libc = ctypes.CDLL(None, use_errno=True)


def sync_file_range(fd: int, offset: int, nbytes: int, flags: int) -> None:
    if _libc.sync_file_range(fd, ctypes.c_longlong(offset), ctypes.c_longlong(nbytes), flags) != 0:
        raise OSError(ctypes.get_errno(), "sync_file_range")


def _async_writes(dev: Device, pages: list[int]) -> float:
    """Buffered 4 KiB writes, each started at once as asynchronous writeback, then waited
    for; returns the seconds it took to issue them (before waiting)."""
    fd = os.open(dev.path, os.O_RDWR)
    t0 = time.monotonic()
    try:
        buf = os.urandom(4096)
        for page in pages:
            os.pwrite(fd, buf, page * 4096)
            sync_file_range(fd, page * 4096, 4096, SYNC_FILE_RANGE_WRITE)
            time.sleep(0.002)  # paced: without bundling, each write goes out before the next
        issued = time.monotonic() - t0
        sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER)
    finally:
        os.close(fd)
    return issued


def runs_per_block(events: list[tuple[str, int, int]], block_sectors: int) -> tuple[int, int]:
    """(number of runs of consecutive same-block writes, number of distinct blocks)."""
    blocks = [s // block_sectors for rwbs, s, _ in events if rwbs.startswith("W")]
    runs = sum(1 for i, b in enumerate(blocks) if i == 0 or blocks[i - 1] != b)
    return runs, len(set(blocks))


def check_bundling(r: Result) -> None:
    """e2. with bundling, each erase block's async writes are issued back to back; without, not."""
    ensure_loaded()
    dev = make(SLOW.format(depth=1))
    schedulers.select(dev.name, MODULE)
    # Held writes occupy scheduler requests: the default (2 x device depth = 2) holds one.
    (dev.queue / "nr_requests").write_text("128")
    set_attr(dev, "bundle_kb", 64)  # 16 pages per block
    # Long enough that every write is issued before the first bundle is due, even
    # under slow emulation (the issuing time is checked below).
    set_attr(dev, "bundle_expire_us", 4_000_000)
    set_attr(dev, "write_expire", 10_000)
    rng = random.Random(7)
    figures: dict[str, dict[str, Any]] = {}
    for bundling in (1, 0):
        set_attr(dev, "bundling", bundling)
        pages = [b * 16 + p for b in range(8) for p in rng.sample(range(16), 6)]
        rng.shuffle(pages)
        before = stats(dev)
        trace = Trace(dev)
        issued_s = _async_writes(dev, pages)
        events = trace.stop()
        after = stats(dev)
        writes = [e for e in events if e[0].startswith("W")]
        expect(all("S" not in e[0] for e in writes), f"writes were not asynchronous: {sorted({e[0] for e in writes})}")
        runs, blocks = runs_per_block(writes, 128)
        figures[f"bundling={bundling}"] = {
            "writes": len(writes),
            "runs": runs,
            "blocks": blocks,
            "bundles_opened": after["bundles_opened"] - before["bundles_opened"],
            "closed": {k: after[k] - before[k] for k in after if k.startswith("bundles_closed")},
            "order": [s // 128 for _, s, _ in writes],
            "issue_s": round(issued_s, 2),
        }
    on, off = figures["bundling=1"], figures["bundling=0"]
    r["figures"] = figures
    expect(on["issue_s"] < 3.5, f"issuing the writes took {on['issue_s']} s, past bundle_expire: inconclusive")
    expect(on["blocks"] == 8 and on["runs"] == 8, f"bundling on: {on['runs']} runs over {on['blocks']} blocks")
    expect(on["bundles_opened"] == 8, f"bundling on opened {on['bundles_opened']} bundles, wanted 8")
    expect(off["runs"] > off["blocks"], f"bundling off still grouped: {off['runs']} runs over {off['blocks']} blocks")
    expect(off["bundles_opened"] == 0, "bundling off opened bundles")
    set_attr(dev, "bundling", 1)
    set_attr(dev, "write_expire", 1000)
    schedulers.select(dev.name, "none")
    r["detail"] = f"runs/blocks with bundling {on['runs']}/{on['blocks']}, without {off['runs']}/{off['blocks']}"


def check_sync_not_delayed(r: Result) -> None:
    """e3. O_SYNC and O_DIRECT writes are not held for bundle_expire."""
    ensure_loaded()
    dev = make(SLOW.format(depth=4))
    schedulers.select(dev.name, MODULE)
    set_attr(dev, "bundle_expire_us", 1_000_000)
    worst = {}
    for name, opts in (("osync", "--direct=0 --sync=1"), ("odirect", "--direct=1")):
        before = stats(dev)
        doc = fio(dev, f"--name={name} {opts} --rw=randwrite --bs=4k --size=64m --time_based --runtime=3")
        job = doc["jobs"][0]
        worst[name] = float(job["write"]["lat_ns"]["max"]) / 1e6
        expect(job["write"]["total_ios"] > 10, f"{name}: too few writes")
        expect(stats(dev)["bundles_opened"] == before["bundles_opened"], f"{name}: writes were bundled")
    r["figures"]["max_write_ms"] = worst
    expect(max(worst.values()) < 500, f"a sync write waited {max(worst.values()):.0f} ms (bundle_expire 1000 ms)")
    set_attr(dev, "bundle_expire_us", 2000)
    schedulers.select(dev.name, "none")
    r["detail"] = f"worst sync write latency {max(worst.values()):.1f} ms with bundle_expire 1000 ms"


def writes_completed(dev: Device) -> int:
    """Writes the disk has completed (field 5 of /sys/block/<dev>/stat)."""
    return int(Path(f"/sys/block/{dev.name}/stat").read_text().split()[4])


def wait_writes(dev: Device, count: int, timeout: float) -> float:
    """Poll until the disk has completed `count` writes; return the seconds it took.

    Polling, not sync_file_range(WAIT) or fsync: a task waiting on writeback
    releases held bundles, which is what some checks measure and others must avoid.
    """
    t0 = time.monotonic()
    while writes_completed(dev) < count:
        expect(time.monotonic() - t0 < timeout, f"{count} writes not completed after {timeout} s")
        time.sleep(0.002)
    return time.monotonic() - t0


def wait_quiet(dev: Device, timeout: float = 60) -> None:
    """Wait until veloces holds nothing and the disk has nothing in flight."""
    t0 = time.monotonic()
    while True:
        st = stats(dev)
        inflight = Path(f"/sys/block/{dev.name}/inflight").read_text().split()
        if st["bundles_held"] == 0 and inflight == ["0", "0"]:
            return
        expect(time.monotonic() - t0 < timeout, f"{dev.name} not quiet after {timeout} s: {st} inflight {inflight}")
        time.sleep(0.005)


def check_liveness(r: Result) -> None:
    """f. one async write to an idle device completes within bundle_expire plus a margin."""
    ensure_loaded()
    dev = make("null_blk:size=64")
    schedulers.select(dev.name, MODULE)
    expire_ms = 200
    set_attr(dev, "bundle_expire_us", expire_ms * 1000)
    before = stats(dev)
    done = writes_completed(dev)
    fd = os.open(dev.path, os.O_RDWR)
    try:
        os.pwrite(fd, os.urandom(4096), 1 << 20)
        t0 = time.monotonic()
        sync_file_range(fd, 1 << 20, 4096, SYNC_FILE_RANGE_WRITE)
        wait_writes(dev, done + 1, timeout=10)
        elapsed_ms = (time.monotonic() - t0) * 1000
    finally:
        os.close(fd)
    after = stats(dev)
    r["figures"].update(elapsed_ms=round(elapsed_ms, 1), bundle_expire_ms=expire_ms)
    expect(after["bundles_opened"] == before["bundles_opened"] + 1, "the write was not bundled")
    expect(after["bundles_closed_time"] == before["bundles_closed_time"] + 1, "the bundle did not close by time")
    expect(elapsed_ms >= expire_ms * 0.9, f"completed after {elapsed_ms:.0f} ms: not held for bundle_expire")
    expect(elapsed_ms <= expire_ms + 150, f"completed after {elapsed_ms:.0f} ms, limit {expire_ms + 150} ms")
    set_attr(dev, "bundle_expire_us", 2000)
    schedulers.select(dev.name, "none")
    r["detail"] = f"held write completed after {elapsed_ms:.0f} ms with bundle_expire {expire_ms} ms"


def check_errors(r: Result) -> None:
    """g. scsi_debug medium errors and timeouts: fio sees errors, the queue keeps serving, no hang."""
    ensure_loaded()
    sh("rmmod scsi_debug")
    t0 = uptime()
    # opts=2: medium error at sector 0x1234 (+ medium_error_count); every_nth with opts=4: timeouts.
    dev = make("scsi_debug:dev_size_mb=64,opts=2,medium_error_start=4660,medium_error_count=64")
    Path(f"/sys/block/{dev.name}/device/timeout").write_text("3")
    schedulers.select(dev.name, MODULE)
    doc = fio(
        dev,
        "--name=err --ioengine=libaio --direct=1 --rw=randread --bs=4k --size=8m --iodepth=8 "
        "--continue_on_error=all --ignore_error=5,61,84 --time_based --runtime=5",  # EIO, ENODATA, EILSEQ
        timeout=300,
        io_errors_expected=True,
    )
    job = doc["jobs"][0]
    errs = int(job.get("total_err", 0)) or (1 if job.get("error") else 0)
    r["figures"]["medium_errors_seen_by_fio"] = errs
    expect(errs > 0, "fio saw no medium error")
    p = sh(f"dd if={dev.path} of=/dev/null bs=4k skip=2048 count=256 iflag=direct status=none")
    expect(p.returncode == 0, f"queue stopped serving after errors: {p.stderr}")
    schedulers.select(dev.name, "none")
    sh("rmmod scsi_debug")
    dev = make("scsi_debug:dev_size_mb=64,every_nth=200,opts=4")
    Path(f"/sys/block/{dev.name}/device/timeout").write_text("2")
    schedulers.select(dev.name, MODULE)
    p = sh(
        f"cd /tmp && timeout 240 fio --name=to --filename={dev.path} --ioengine=libaio --direct=1 --rw=randread "
        "--bs=4k --size=8m --iodepth=4 --continue_on_error=all --number_ios=1000 --output-format=json",
        timeout=300,
    )
    expect(p.returncode != 124, "fio hung on a device with timeouts")
    schedulers.select(dev.name, "none")
    problems = [x for x in dmesg_problems(t0) if "blocked for more than" in x or "BUG" in x]
    expect(not problems, "kernel log: " + " | ".join(problems[:3]))
    sh("rmmod scsi_debug")
    r["detail"] = f"{errs} medium errors reported; queue kept serving; timeouts recovered without a hang"


def check_hotplug(r: Result) -> None:
    """h. CPU hotplug during I/O."""
    ensure_loaded()
    cpu1 = Path("/sys/devices/system/cpu/cpu1/online")
    expect(cpu1.exists(), "guest has no hot-pluggable cpu1 (boot with --cpus 2)")
    dev = make("null_blk:memory_backed=1,size=128,submit_queues=2,irqmode=1")
    schedulers.select(dev.name, MODULE)
    stop = threading.Event()
    flips = []

    def flipper() -> None:
        while not stop.is_set():
            for state in ("0", "1"):
                cpu1.write_text(state)
                flips.append(state)
                time.sleep(0.5)

    th = threading.Thread(target=flipper, daemon=True)
    th.start()
    try:
        doc = fio(
            dev,
            "--name=hp --ioengine=libaio --direct=1 --iodepth=8 --rw=randrw --bs=4k --size=64m "
            "--verify=crc32c --verify_fatal=1 --time_based --runtime=10",
            timeout=180,
        )
    finally:
        stop.set()
        th.join(timeout=30)
        cpu1.write_text("1")
    errors = sum(int(j.get("error", 0)) for j in doc["jobs"])
    r["figures"].update(cpu_flips=len(flips), errors=errors)
    expect(errors == 0 and len(flips) >= 4, f"{errors} errors over {len(flips)} hotplug events")
    schedulers.select(dev.name, "none")
    r["detail"] = f"{len(flips)} cpu1 offline/online events during verified I/O, 0 errors"


def check_invariants(dev: Device, what: str) -> dict[str, int]:
    """The statistics' invariants at rest: every request given to veloces went to the
    device exactly once (merged ones aside), and every bundle opened was closed."""
    wait_quiet(dev)
    st = stats(dev)
    closed = sum(v for k, v in st.items() if k.startswith("bundles_closed_"))
    queued = st["read_queued"] + st["write_queued"]
    absorbed = st["read_absorbed"] + st["write_absorbed"]
    dispatched = st["read_dispatched"] + st["write_dispatched"]
    expect(
        st["bundles_opened"] == closed + st["bundles_open"],
        f"{what}: bundles opened {st['bundles_opened']} != closed {closed} + open {st['bundles_open']}",
    )
    expect(st["bundles_open"] == 0 and st["bundles_ready"] == 0, f"{what}: bundles left at rest: {st}")
    expect(
        dispatched == queued - absorbed + st["requeued"],
        f"{what}: dispatched {dispatched} != queued {queued} - absorbed {absorbed} + requeued {st['requeued']}",
    )
    return st


def _held_write(fd: int, offset: int, size: int = 4096) -> None:
    os.pwrite(fd, os.urandom(size), offset)
    sync_file_range(fd, offset, size, SYNC_FILE_RANGE_WRITE)


def check_waiters(r: Result) -> None:
    """i. fsync and sync_file_range(WAIT) on held writeback release it: fsync latency with bundling on
    is close to that with bundling off, not bundle_expire_us."""
    ensure_loaded()
    dev = make(SLOW.format(depth=4))
    schedulers.select(dev.name, MODULE)
    set_attr(dev, "bundle_expire_us", 2_000_000)
    lat: dict[str, list[float]] = {"bundling=1": [], "bundling=0": []}
    fd = os.open(dev.path, os.O_RDWR)
    try:
        for rep in range(3):
            for bundling in (1, 0) if rep % 2 == 0 else (0, 1):
                set_attr(dev, "bundling", bundling)
                before = stats(dev)
                base = (rep * 2 + bundling) * (1 << 20)
                for i in range(4):  # background writeback of 4 pages, then fsync waits on it
                    _held_write(fd, base + i * 8192)
                t0 = time.monotonic()
                os.fsync(fd)
                lat[f"bundling={bundling}"].append((time.monotonic() - t0) * 1000)
                after = stats(dev)
                if bundling:
                    expect(after["bundles_opened"] > before["bundles_opened"], "the writes were not held")
                    released = after["bundles_closed_waiter"] - before["bundles_closed_waiter"]
                    expect(released > 0, "no bundle released by the waiter")
        # sync_file_range(WAIT_BEFORE) waits on writeback just as fsync does.
        set_attr(dev, "bundling", 1)
        _held_write(fd, 32 << 20)
        t0 = time.monotonic()
        sync_file_range(fd, 32 << 20, 4096, SYNC_FILE_RANGE_WAIT_BEFORE)
        sfr_ms = (time.monotonic() - t0) * 1000
    finally:
        os.close(fd)
    med = {k: sorted(v)[1] for k, v in lat.items()}
    r["figures"].update(fsync_ms=lat, median_ms=med, sync_file_range_wait_ms=round(sfr_ms, 1), bundle_expire_ms=2000)
    expect(max(lat["bundling=1"]) < 500, f"fsync waited {max(lat['bundling=1']):.0f} ms for held writes (expire 2000)")
    expect(sfr_ms < 500, f"sync_file_range(WAIT) waited {sfr_ms:.0f} ms for a held write")
    check_invariants(dev, "waiters")
    set_attr(dev, "bundle_expire_us", 2000)
    schedulers.select(dev.name, "none")
    r["detail"] = (
        f"fsync median {med['bundling=1']:.1f} ms with bundling, {med['bundling=0']:.1f} ms without "
        f"(bundle_expire 2000 ms); sync_file_range(WAIT) {sfr_ms:.1f} ms"
    )


def check_no_spin(r: Result) -> None:
    """j. a ready bundle waiting for the device's only tag does not spin: dispatch runs a few
    times, not thousands (the timer is never armed in the past)."""
    ensure_loaded()
    dev = make("null_blk:irqmode=2,completion_nsec=400000000,hw_queue_depth=1,submit_queues=1,size=64")
    schedulers.select(dev.name, MODULE)
    (dev.queue / "nr_requests").write_text("32")
    set_attr(dev, "bundle_expire_us", 20_000)
    dfd = os.open(dev.path, os.O_RDONLY | os.O_DIRECT)
    fd = os.open(dev.path, os.O_RDWR)
    buf = mmap.mmap(-1, 4096)
    reader = threading.Thread(target=os.preadv, args=(dfd, [buf], 0), daemon=True)
    try:
        done = writes_completed(dev)
        reader.start()  # holds the only tag for 400 ms
        time.sleep(0.05)
        before = stats(dev)
        _held_write(fd, 1 << 20)  # ready after 20 ms, waits ~330 ms for the tag
        time.sleep(0.3)
        during = stats(dev)
        wait_writes(dev, done + 1, timeout=10)
        reader.join(timeout=10)
    finally:
        os.close(fd)
        os.close(dfd)
    runs = during["runs"] - before["runs"]
    deferred = during["deferred"] - before["deferred"]
    r["figures"].update(runs_in_300ms=runs, deferred=deferred)
    expect(runs <= 20, f"dispatch ran {runs} times in 300 ms while waiting for the tag")
    check_invariants(dev, "no_spin")
    schedulers.select(dev.name, "none")
    r["detail"] = f"{runs} dispatch runs, {deferred} waits for a token in 300 ms with a ready bundle and no tag"


def check_retune_spanning(r: Result) -> None:
    """k. changing bundle_kb releases open bundles; an async write across an erase-block boundary
    is not held."""
    ensure_loaded()
    dev = make(SLOW.format(depth=4))
    schedulers.select(dev.name, MODULE)
    set_attr(dev, "bundle_kb", 64)
    set_attr(dev, "bundle_expire_us", 5_000_000)
    fd = os.open(dev.path, os.O_RDWR)
    try:
        before = stats(dev)
        done = writes_completed(dev)
        _held_write(fd, 60 * 1024, 8192)  # 60 KiB..68 KiB: crosses the 64 KiB boundary
        wait_writes(dev, done + 1, timeout=2)
        mid = stats(dev)
        expect(mid["bundles_spanning"] == before["bundles_spanning"] + 1, "the spanning write was not counted")
        expect(mid["bundles_opened"] == before["bundles_opened"], "the spanning write was held")
        done = writes_completed(dev)
        for page in (0, 2, 17):  # two bundles of 64 KiB
            _held_write(fd, page * 4096)
        time.sleep(0.1)
        held = stats(dev)
        expect(held["bundles_open"] == 2, f"{held['bundles_open']} bundles open, wanted 2")
        t0 = time.monotonic()
        set_attr(dev, "bundle_kb", 128)
        released_s = wait_writes(dev, done + 3, timeout=3)
        after = stats(dev)
        expect(after["bundles_closed_retune"] - held["bundles_closed_retune"] == 2, "bundles not closed by the retune")
        # A write after the change is filed under the new size: one bundle for 0..128 KiB.
        for page in (1, 20):
            _held_write(fd, page * 4096)
        time.sleep(0.1)
        expect(stats(dev)["bundles_open"] == 1, "writes 4 KiB and 80 KiB should share a 128 KiB bundle")
        set_attr(dev, "bundling", 0)
        wait_writes(dev, done + 5, timeout=3)
    finally:
        os.close(fd)
    check_invariants(dev, "retune")
    set_attr(dev, "bundling", 1)
    r["figures"].update(release_after_retune_ms=round(released_s * 1000, 1), elapsed_s=round(time.monotonic() - t0, 2))
    schedulers.select(dev.name, "none")
    ready_s = _raised_expiry_keeps_ready()
    r["figures"]["ready_bundle_after_raise_ms"] = round(ready_s * 1000, 1)
    r["detail"] = (
        f"spanning write not held; bundle_kb change released 2 bundles in {released_s * 1000:.0f} ms; "
        f"a ready bundle went {ready_s * 1000:.0f} ms after bundle_expire_us was raised, closed as time"
    )


def _raised_expiry_keeps_ready() -> float:
    """A bundle marked ready by time while the one tag is busy stays ready when bundle_expire_us
    is raised before a tag frees (found by the stress check: its close was counted at index -1,
    which is bundles_opened). Returns the seconds from the raise to the write's completion."""
    dev = make("null_blk:irqmode=2,completion_nsec=400000000,hw_queue_depth=1,submit_queues=1,size=64")
    schedulers.select(dev.name, MODULE)
    (dev.queue / "nr_requests").write_text("32")
    set_attr(dev, "bundle_expire_us", 20_000)
    fd = os.open(dev.path, os.O_RDWR)
    try:
        # The page written below is in the page cache first: on 6.12 a write into a folio
        # that is not up to date reads it first, and that read would queue behind ours.
        os.pwrite(fd, os.urandom(4096), 1 << 20)
        os.fsync(fd)
        wait_quiet(dev)  # udev's probe reads and the priming write (400 ms each) are done
        before = stats(dev)
        done = writes_completed(dev)
        reader = subprocess.Popen(
            ["dd", f"if={dev.path}", "of=/dev/null", "bs=4k", "count=1", "skip=100", "iflag=direct", "status=none"]
        )
        try:
            t0 = time.monotonic()
            while Path(f"/sys/block/{dev.name}/inflight").read_text().split()[0] != "1":
                expect(time.monotonic() - t0 < 3, "the read did not reach the device")
                time.sleep(0.002)
            t_write = time.monotonic()
            _held_write(fd, 1 << 20)  # the read holds the only tag for 400 ms
            write_s = time.monotonic() - t_write
            expect(write_s < 0.2, f"the buffered write took {write_s * 1000:.0f} ms: it waited for the read")
            time.sleep(0.1)  # the bundle's timer ran dispatch: ready, but no tag
            mid = stats(dev)
            expect(mid["bundles_ready"] == 1, f"the held bundle is not marked ready while the tag is busy: {mid}")
            set_attr(dev, "bundle_expire_us", 10_000_000)
            went_s = wait_writes(dev, done + 1, timeout=3)
        finally:
            reader.wait(timeout=10)
    finally:
        os.close(fd)
    after = check_invariants(dev, "raised bundle_expire_us")
    expect(
        after["bundles_closed_time"] == before["bundles_closed_time"] + 1,
        f"the ready bundle was not closed as time: {before} -> {after}",
    )
    schedulers.select(dev.name, "none")
    return went_s


def check_zoned(r: Result) -> None:
    """l. zoned null_blk: veloces is not offered (6.1: the queue needs ZBD_SEQ_WRITE), or is offered
    with bundling off and refuses bundling=1; sequential zone writes verify."""
    ensure_loaded()
    dev = make("null_blk:zoned=1,zone_size=4,zone_nr_conv=0,size=64,memory_backed=1")
    if MODULE not in schedulers.offered(dev.name):
        r["detail"] = f"not offered for a zoned device: {schedulers.offered(dev.name)}"
        r["figures"]["offered"] = False
        return
    schedulers.select(dev.name, MODULE)
    expect(attr(dev, "bundling").read_text().strip() == "0", "bundling is on for a zoned device")
    rc = write_errno(attr(dev, "bundling"), "1")
    expect(rc == errno.EINVAL, f"bundling=1 on a zoned device gave {os.strerror(rc) if rc else 'success'}")
    fio_no_errors(
        dev,
        "--name=z --ioengine=libaio --direct=1 --zonemode=zbd --rw=write --bs=16k --iodepth=4 "
        "--size=32m --verify=crc32c --verify_fatal=1 --do_verify=1",
        "zoned writes",
        timeout=300,
    )
    r["figures"].update(offered=True, errors=0)
    schedulers.select(dev.name, "none")
    r["detail"] = "offered with bundling off (bundling=1 is EINVAL); 32 MiB zoned writes verified"


def reload_null_blk(params: list[str]) -> None:
    """Remove every null_blk device and load the driver again with `params`."""
    for item in sorted(NULLB_CONFIGFS.glob("*")) if NULLB_CONFIGFS.is_dir() else []:
        if item.is_dir():
            (item / "power").write_text("0")
            item.rmdir()
    sh("rmmod null_blk")
    p = sh(f"modprobe null_blk nr_devices=0 {' '.join(params)}")
    expect(p.returncode == 0, f"modprobe null_blk {params}: {p.stderr.strip()}")


def check_requeue(r: Result) -> None:
    """m. requeued requests (null_blk fault injection) are dispatched again, never held again, and
    counted once: data verifies and the statistics balance."""
    ensure_loaded()
    if "requeue" not in sh("modinfo -F parm null_blk").stdout:
        r["detail"] = "skipped: null_blk has no requeue injection (needs CONFIG_BLK_DEV_NULL_BLK_FAULT_INJECTION)"
        r["figures"]["skipped"] = True
        return
    reload_null_blk(["requeue=1,20,0,-1"])
    try:
        dev = make("null_blk:memory_backed=1,size=128,irqmode=2,completion_nsec=50000,hw_queue_depth=4")
        schedulers.select(dev.name, MODULE)
        set_attr(dev, "bundle_expire_us", 20_000)
        doc = fio(
            dev,
            "--name=rq --ioengine=libaio --direct=0 --rw=randwrite --bs=4k --size=16m --iodepth=8 "
            "--fsync=64 --verify=crc32c --verify_fatal=1 --do_verify=1 "
            "--name=rd --ioengine=libaio --direct=1 --rw=randread --bs=4k --size=16m --offset=64m "
            "--time_based --runtime=10",
            timeout=600,
        )
        errors = sum(int(j.get("error", 0)) for j in doc["jobs"])
        st = check_invariants(dev, "requeue")
        r["figures"].update(errors=errors, requeued=st["requeued"], bundled=st["bundles_bundled_writes"])
        expect(errors == 0, f"fio reported {errors} errors")
        expect(st["requeued"] > 0, "no request was requeued: the injection did not work")
        schedulers.select(dev.name, "none")
    finally:
        reload_null_blk([])
    r["detail"] = f"{st['requeued']} requeues, data verified, statistics balance"


def stress_seconds() -> float:
    return float(os.environ.get("VLAB_STRESS_S", "20"))


CHURN_SETTINGS = [
    ("bundle_expire_us", ["200", "2000", "200000"]),
    ("bundle_kb", ["64", "512", "128"]),
    ("bundling", ["0", "1"]),
    ("fifo_batch", ["1", "16"]),
    ("front_merges", ["0", "1"]),
]


def _churn(dev: Device, stop: threading.Event, rng: random.Random, actions: list[str]) -> None:
    """Every 0.3 s: switch to another scheduler and back, or change a tunable."""
    while not stop.wait(0.3):
        if rng.random() < 0.15:
            other = rng.choice(["mq-deadline", "kyber", "none"])
            schedulers.select(dev.name, other)
            time.sleep(0.2)
            schedulers.select(dev.name, MODULE)
            actions.append(other)
        else:
            name, values = rng.choice(CHURN_SETTINGS)
            if write_errno(attr(dev, name), rng.choice(values)) == 0:
                actions.append(name)


def check_stress(r: Result) -> None:
    """n. stress: buffered writers with fsync, O_DIRECT writers on adjacent ranges, background
    writeback, scheduler switches and tunable changes under load, on slow null_blk devices with
    1, 4 and 32 tags and 1 and 4 hardware queues; then a fio verify and the statistics' invariants.
    VLAB_STRESS_S sets the seconds per device (default 20)."""
    ensure_loaded()
    Path("/proc/sys/kernel/hung_task_timeout_secs").write_text("30")
    secs = stress_seconds()
    t_start = uptime()
    # Background writeback every 0.5 s for data dirty 1 s: the flusher's async writes too.
    vm = Path("/proc/sys/vm")
    saved = {k: (vm / k).read_text() for k in ("dirty_writeback_centisecs", "dirty_expire_centisecs")}
    (vm / "dirty_writeback_centisecs").write_text("50")
    (vm / "dirty_expire_centisecs").write_text("100")
    try:
        _stress_devices(r, secs)
    finally:
        for k, v in saved.items():
            (vm / k).write_text(v)
    problems = dmesg_problems(t_start)
    expect(not problems, "kernel log: " + " | ".join(problems[:3]))
    r["detail"] = f"{secs:g} s per device on 1/4/32 tags: no errors, verified, bundled, invariants hold"


def _stress_devices(r: Result, secs: float) -> None:
    figures: dict[str, Any] = {}
    for depth, queues in ((1, 1), (4, 1), (32, 4)):
        t_dev = time.monotonic()
        dev = make(
            f"null_blk:memory_backed=1,size=64,irqmode=2,completion_nsec=1000000,"
            f"hw_queue_depth={depth},submit_queues={queues}"
        )
        schedulers.select(dev.name, MODULE)
        stop = threading.Event()
        actions: list[str] = []
        rng = random.Random(depth)

        th = threading.Thread(target=_churn, args=(dev, stop, rng, actions), daemon=True)
        th.start()
        try:
            # One 8 MiB region: buffered writers with fsync and O_DIRECT writers interleave in it.
            # One 8 MiB region. Writeback starts with sync_file_range(WRITE) (async: held)
            # and from the flusher; fsync waits on it (a writeback waiter).
            doc = fio(
                dev,
                f"--time_based --runtime={secs:g} --size=8m --group_reporting "
                "--name=buffered --ioengine=psync --direct=0 --rw=randwrite --bsrange=4k-64k --numjobs=2 --fsync=8 "
                "--name=writeback --ioengine=psync --direct=0 --rw=randwrite --bsrange=4k-16k "
                "--sync_file_range=write:4 "
                "--name=direct --ioengine=libaio --direct=1 --rw=randwrite --bs=4k --iodepth=8 --numjobs=2 "
                "--name=reader --ioengine=libaio --direct=1 --rw=randread --bs=4k --iodepth=4",
                timeout=secs * 10 + 300,
            )
        finally:
            stop.set()
            th.join(timeout=30)
        expect(not th.is_alive(), "the churn thread hung")
        errors = sum(int(j.get("error", 0)) for j in doc["jobs"])
        expect(errors == 0, f"{depth} tags: fio reported {errors} errors")
        schedulers.select(dev.name, MODULE)
        set_attr(dev, "bundling", 1)
        set_attr(dev, "bundle_expire_us", 2000)
        # Held writes occupy scheduler requests: the default (2 x depth) would hold one.
        (dev.queue / "nr_requests").write_text("128")
        # Async writeback (held in bundles), then fsync, then every block read back.
        fio_no_errors(
            dev,
            "--name=v --ioengine=psync --direct=0 --rw=randwrite --bs=4k --size=32m --offset=16m "
            "--sync_file_range=write:8 --end_fsync=1 --verify=crc32c --verify_fatal=1 --do_verify=1",
            f"{depth} tags: verify",
            timeout=600,
        )
        st = check_invariants(dev, f"stress {depth} tags")
        expect(st["bundles_bundled_writes"] > 0, f"{depth} tags: the verify's async writeback was never bundled")
        figures[f"tags={depth},hwq={queues}"] = {
            "actions": len(actions),
            "switches": sum(1 for a in actions if a in ("mq-deadline", "kyber", "none")),
            "writes_dispatched": st["write_dispatched"],
            "runs": st["runs"],
            "deferred": st["deferred"],
            "bundles": st["bundles_opened"],
            "bundled_writes": st["bundles_bundled_writes"],
            "waiters": st["waiters"],
            "seconds": round(time.monotonic() - t_dev, 1),
        }
        schedulers.select(dev.name, "none")
        r["figures"] = figures


CHECKS: dict[str, Callable[[Result], None]] = {
    "load": check_load,
    "tunables": check_tunables,
    "verify": check_verify,
    "switching": check_switching,
    "read_preference": check_read_preference,
    "bundling": check_bundling,
    "sync_not_delayed": check_sync_not_delayed,
    "liveness": check_liveness,
    "errors": check_errors,
    "hotplug": check_hotplug,
    "waiters": check_waiters,
    "no_spin": check_no_spin,
    "retune_spanning": check_retune_spanning,
    "zoned": check_zoned,
    "requeue": check_requeue,
    "stress": check_stress,
}


# The checks whose verdicts are times (a latency, an interval, a count per interval): `make
# test` boots them on their own, never beside another guest; the rest share the machine.
TIMED = ("read_preference", "bundling", "sync_not_delayed", "liveness", "no_spin")


def main(names: list[str]) -> int:
    out = Path(os.environ.get("VLAB_OUT", "/tmp"))
    results: dict[str, Result] = {}
    unknown = [n for n in names if n not in CHECKS]
    if unknown:
        print(f"modsuite: unknown check(s) {', '.join(unknown)}; known: {', '.join(CHECKS)}")
        return 2
    t_start = uptime()
    for name in names or list(CHECKS):
        r: Result = {"ok": False, "detail": "", "figures": {}}
        t0 = time.monotonic()
        try:
            CHECKS[name](r)
            r["ok"] = True
        except Exception as e:  # a failed check is recorded, and the suite goes on
            r["detail"] = f"{type(e).__name__}: {e}"
        r["seconds"] = round(time.monotonic() - t0, 1)
        results[name] = r
        print(f"modsuite: {'ok  ' if r['ok'] else 'FAIL'} {name} ({r['seconds']} s): {r['detail']}", flush=True)
        (out / "modsuite.json").write_text(json.dumps(results, indent=2) + "\n")
    problems = dmesg_problems(t_start)
    results["kernel_log"] = {"ok": not problems, "detail": " | ".join(problems[:5]), "figures": {}}
    (out / "modsuite.json").write_text(json.dumps(results, indent=2) + "\n")
    print(f"modsuite: kernel log {'clean' if not problems else 'has problems: ' + results['kernel_log']['detail']}")
    return 0 if all(v["ok"] for v in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
