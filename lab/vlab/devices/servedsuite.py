"""The served devices' suite, guest side: vsim models served to a real kernel, over the
transport that kernel gets by default (ublk on 6.12, NBD on 6.1: vlab.devices.vsimdev).

Run in the guest as `python -m vlab.devices.servedsuite [CHECK ...]` (lab/tests/test_served.py
boots each kernel once for it; no CHECK: all of them). Each check writes {ok, detail, figures}
into OUT/servedsuite.json:

- verify_ssd, verify_cheapflash: fio writes 128 MiB (random offsets, 4-64 KiB) with
  crc32c verification and reads it all back through the served device, and the device has
  copied pages of its own meanwhile (garbage collection, merges);
- limits: what the kernel sees of each model. Over ublk: the model's tags per hardware queue
  (`mq/*/nr_tags`: 1 on the SD card), optimal I/O size and discard granularity (the erase
  block), rotational (the disk), write cache and FUA (the SSD's and the disk's caches). Over
  NBD: its 128 tags on one queue whatever the model, and the rotational flag the lab sets;
- ext4: mkfs, mount, write files, unmount, mount again and read them back (checksums);
- schedulers: none, mq-deadline, kyber, bfq and veloces each selected on the served
  device and driven by fio without an error; veloces's bundle_kb is the model's erase block
  (over ublk read from the queue limits by veloces itself; over NBD set by the lab);
- discard: blkdiscard reaches the FTL (trimmed pages in the counters) and reads return zeros;
- fault: the server killed mid-I/O: fio ends with I/O errors (NBD: within its timeout; ublk:
  the driver fails the dead server's requests), and stopping it removes the device;
- auto_dilation: `dilation=auto` measures the guest's cost per I/O through NBD and picks a
  dilation that keeps it under a tenth of the model's service time; the device then serves;
- stop: every server stops cleanly on request, leaves its final counters, and its device
  is gone (NBD: disconnected; ublk: deleted).
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from vlab import schedulers
from vlab.devices import vsimdev
from vlab.devices.spec import Device
from vlab.machine import guest, proc

# What the verify checks write, then read back: enough for the FTL's own copies (garbage
# collection, merges) to move verified data (128 MiB: ~5,400 writes of 4-64 KiB). 256 MiB
# took 464 s for the SSD alone on a loaded CI machine (48 s here).
SIZE = "128m"
SIZE_BYTES = 128 * 2**20
# The checks are of data and behaviour, not of timing: the models run at wall-clock pace or
# faster. The SD card's 256 MiB of random writes took 125 s of model time (garbage
# collection, WA ~2.5): at dilation 0.25 the verify takes a quarter of that.
SSD = {"model": "ssd", "blocks_per_plane": "64", "dilation": "1"}
CHEAP = {"model": "cheapflash", "size": "768m", "dilation": "0.25"}
FAULT = {"model": "fixed", "service_us": "500", "size": "256m", "queue_depth": "8", "dilation": "1", "timeout": "5"}
AUTO = {"model": "fixed", "service_us": "200", "read_us": "200", "write_us": "200", "size": "64m", "dilation": "auto"}
HDD = {"model": "hdd", "preset": "sata_250g", "dilation": "1"}
SCHEDULERS = ["none", "mq-deadline", "kyber", "bfq", "veloces"]
NBD_TAGS = 128


class CheckFailed(Exception):
    pass


def sh(argv: list[str], timeout: float = 900) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)


def must(argv: list[str], timeout: float = 900) -> str:
    p = sh(argv, timeout)
    if p.returncode != 0:
        raise CheckFailed(f"{' '.join(argv)}: exit {p.returncode}: {(p.stderr or p.stdout).strip()[-800:]}")
    return p.stdout


class Suite:
    def __init__(self, out: Path) -> None:
        self.out = out
        self.servers: dict[str, tuple[Device, vsimdev.Server]] = {}

    def served(self, name: str, options: dict[str, str]) -> tuple[Device, vsimdev.Server]:
        if name not in self.servers:
            disk, server, info = vsimdev.start(options, self.out / "served" / name)
            dev = Device(disk, f"vsim:{options['model']}", {**info, "counters": str(server.counters)})
            self.servers[name] = (dev, server)
        return self.servers[name]

    def counters(self, server: vsimdev.Server) -> dict[str, Any]:
        time.sleep(vsimdev.COUNTERS_MS / 1000 * 1.5)
        c = vsimdev.read_counters(server)
        if c is None:
            raise CheckFailed(f"no counters in {server.counters}")
        return c

    def fio_json(self, name: str, args: list[str], timeout: float = 900) -> dict[str, Any]:
        path = self.out / f"fio-{name}.json"
        p = sh(["fio", "--output-format=json", f"--output={path}", *args], timeout)
        try:
            data: dict[str, Any] = json.loads(path.read_text())
        except (OSError, ValueError):
            data = {}
        data["_rc"] = p.returncode
        data["_stderr"] = p.stderr[-800:]
        return data

    # ------------------------------------------------------------ checks

    def _verify(self, name: str, options: dict[str, str]) -> dict[str, Any]:
        dev, server = self.served(name, options)
        before = self.counters(server)
        r = self.fio_json(
            f"verify-{name}",
            ["--name=verify", f"--filename={dev.path}", "--rw=randwrite", "--bsrange=4k-64k", f"--size={SIZE}",
             "--direct=1", "--ioengine=libaio", "--iodepth=16", "--verify=crc32c", "--verify_fatal=1",
             "--do_verify=1", "--randrepeat=0"],
        )  # fmt: skip
        if r["_rc"] != 0 or not r.get("jobs"):
            raise CheckFailed(f"fio verify exit {r['_rc']}: {r['_stderr']}")
        job = r["jobs"][0]
        written, read = job["write"]["io_bytes"], job["read"]["io_bytes"]
        after = self.counters(server)
        figures = {
            "written_mib": written / 2**20,
            "verified_mib": read / 2**20,
            "fio_errors": job.get("error", 0),
            "device": vsimdev.delta(before, after),
            "server_write_mib": (after["requests"]["write"]["bytes"] - before["requests"]["write"]["bytes"]) / 2**20,
        }
        if job.get("error", 0) != 0 or written < SIZE_BYTES or read < written:
            raise CheckFailed(f"fio verify incomplete: {figures}")
        if figures["server_write_mib"] < SIZE_BYTES / 2**20:
            raise CheckFailed(f"the server saw less than fio wrote: {figures}")
        if not figures["device"].get("copied_pages"):
            raise CheckFailed(f"the device copied no pages of its own: the data was verified without GC: {figures}")
        return figures

    def verify_ssd(self) -> dict[str, Any]:
        return self._verify("ssd", SSD)

    def verify_cheapflash(self) -> dict[str, Any]:
        return self._verify("cheapflash", CHEAP)

    def limits(self) -> dict[str, Any]:
        figures: dict[str, Any] = {}
        bad: list[str] = []
        for name, options in (("cheapflash", CHEAP), ("ssd", SSD), ("hdd", HDD)):
            dev, _ = self.served(name, options)
            info = dev.served
            q = dev.queue
            files = ("optimal_io_size", "discard_granularity", "rotational", "write_cache", "fua", "nr_requests")
            seen = {f: (q / f).read_text().strip() for f in files}
            tags = [int((h / "nr_tags").read_text()) for h in sorted(Path("/sys/block", dev.name, "mq").iterdir())]
            figures[name] = {"transport": info["transport"], "hw_queues": len(tags), "nr_tags": tags, **seen,
                             "model_depth": info["queue_depth"], "erase_block": info["erase_block_bytes"]}  # fmt: skip

            def want(what: str, got: object, expected: object) -> None:
                if got != expected:
                    bad.append(f"{name} {what}: {got}, expected {expected}")  # noqa: B023

            want("rotational", seen["rotational"], "1" if info["rotational"] else "0")
            if info["transport"] == "nbd":
                want("nr_tags (NBD's, whatever the model)", tags, [NBD_TAGS])
                continue
            lim = info["limits"]
            want("nr_tags", tags, [lim["depth"]] * lim["queues"])
            # The model's tags, all of them and no more than a queue's share beyond them.
            if not (sum(tags) >= info["queue_depth"] > sum(tags) - len(tags)):
                bad.append(f"{name}: {tags} tags for a model of {info['queue_depth']}")
            erase = info["erase_block_bytes"]
            if erase and erase & (erase - 1) == 0:
                want("optimal_io_size", int(seen["optimal_io_size"]), erase)
            want("discard_granularity", int(seen["discard_granularity"]), (erase or 4096) if info["discard"] else 0)
            want("write_cache", seen["write_cache"], "write back" if info["volatile_cache"] else "write through")
            want("fua", seen["fua"], "1" if info["volatile_cache"] else "0")
            # A card's real host (mmc: 64 tags) gives an elevator 128 requests where ublk at
            # the card's depth gives 2; the lab sets it after every switch (the kernel takes
            # scheduler tags beyond the driver's).
            if (n := dev.host_nr_requests()) is not None:
                schedulers.select(dev.name, "mq-deadline", nr_requests=n)
                figures[name]["nr_requests_as_host"] = got = (q / "nr_requests").read_text().strip()
                want("nr_requests under mq-deadline, as the model's host", got, str(info["elevator_nr_requests"]))
                async_depth = (q / "iosched" / "async_depth").read_text().strip()
                want("mq-deadline's async_depth (nr_requests, as at its init)", async_depth, str(n))
            elif name == "cheapflash":
                bad.append(f"cheapflash: no host tags to set nr_requests from ({info.get('host_tags')})")
        if bad:
            raise CheckFailed("; ".join(bad) + f" {figures}")
        # The SD card's single tag and the SSD's cache and 768 KiB erase block, as the models have them.
        if figures["cheapflash"]["transport"] == "ublk" and (
            figures["cheapflash"]["nr_tags"] != [1] or figures["ssd"]["write_cache"] != "write back"
            or figures["ssd"]["discard_granularity"] != str(768 * 1024) or figures["hdd"]["rotational"] != "1"
        ):  # fmt: skip
            raise CheckFailed(f"the kernel does not see the models' depth and limits: {figures}")
        return figures

    def ext4(self) -> dict[str, Any]:
        dev, server = self.served("cheapflash", CHEAP)
        before = self.counters(server)
        mnt = Path("/tmp/vlab-served-ext4")
        mnt.mkdir(exist_ok=True)
        must(["mkfs.ext4", "-q", "-F", dev.path])
        sums: dict[str, str] = {}
        must(["mount", dev.path, str(mnt)])
        try:
            for i in range(24):
                data = os.urandom(64 * 1024 * (1 + i % 8))
                (mnt / f"f{i}").write_bytes(data)
                sums[f"f{i}"] = hashlib.sha256(data).hexdigest()
            (mnt / "dir").mkdir()
            (mnt / "dir" / "small").write_text("veloces\n")
        finally:
            must(["umount", str(mnt)])
        must(["sh", "-c", f"echo 3 > /proc/sys/vm/drop_caches; blockdev --flushbufs {dev.path}"])
        must(["mount", dev.path, str(mnt)])
        try:
            bad = [n for n, h in sums.items() if hashlib.sha256((mnt / n).read_bytes()).hexdigest() != h]
            small = (mnt / "dir" / "small").read_text()
        finally:
            must(["umount", str(mnt)])
        fsck = sh(["fsck.ext4", "-n", "-f", dev.path])
        after = self.counters(server)
        figures = {"files": len(sums), "bad": bad, "fsck_rc": fsck.returncode, "device": vsimdev.delta(before, after)}
        if bad or small != "veloces\n":
            raise CheckFailed(f"files read back differ after remount: {bad}")
        if fsck.returncode != 0:
            raise CheckFailed(f"fsck.ext4 -n found problems: {fsck.stdout[-500:]}")
        return figures

    def schedulers(self) -> dict[str, Any]:
        dev, _ = self.served("ssd", SSD)
        schedulers.require(dev.name, SCHEDULERS)
        figures: dict[str, Any] = {}
        for name in SCHEDULERS:
            schedulers.select(dev.name, name)
            if name == "veloces":
                if not dev.served.get("limits"):  # NBD: the lab tells veloces the erase block
                    guest._bundle_from_model(dev)
                kb = int((dev.queue / "iosched" / "bundle_kb").read_text())
                figures["veloces_bundle_kb"] = kb
                if kb * 1024 != dev.served["erase_block_bytes"]:
                    raise CheckFailed(f"bundle_kb {kb} is not the model's erase block {dev.served}")
            r = self.fio_json(
                f"sched-{name}",
                ["--name=s", f"--filename={dev.path}", "--rw=randrw", "--rwmixread=70", "--bs=4k", "--direct=1",
                 "--ioengine=libaio", "--iodepth=16", "--runtime=2", "--time_based", "--size=64m"],
            )  # fmt: skip
            if r["_rc"] != 0 or not r.get("jobs") or r["jobs"][0].get("error", 0):
                raise CheckFailed(f"fio under {name}: exit {r['_rc']} {r['_stderr']}")
            job = r["jobs"][0]
            figures[name] = {"read_iops": job["read"]["iops"], "write_iops": job["write"]["iops"]}
            if job["read"]["iops"] <= 0 or job["write"]["iops"] <= 0:
                raise CheckFailed(f"no I/O under {name}: {figures[name]}")
        return figures

    def discard(self) -> dict[str, Any]:
        dev, server = self.served("ssd", SSD)
        off, length = 64 * 2**20, 8 * 2**20
        must(["dd", "if=/dev/urandom", f"of={dev.path}", "bs=1M", f"seek={off // 2**20}", "count=8",
              "oflag=direct", "conv=fsync"])  # fmt: skip
        before = self.counters(server)
        must(["blkdiscard", "-o", str(off), "-l", str(length), dev.path])
        after = self.counters(server)
        trimmed = after["device"]["trimmed_pages"] - before["device"]["trimmed_pages"]
        back = must(["sh", "-c", f"dd if={dev.path} bs=1M skip={off // 2**20} count=8 iflag=direct 2>/dev/null"
                     " | tr -d '\\000' | wc -c"])  # fmt: skip
        figures = {
            "trimmed_pages": trimmed,
            "discard_requests": after["requests"]["discard"]["count"] - before["requests"]["discard"]["count"],
            "nonzero_bytes_after": int(back.strip() or -1),
        }
        if trimmed != length // 4096:
            raise CheckFailed(f"the FTL trimmed {trimmed} pages, not {length // 4096}: {figures}")
        if figures["nonzero_bytes_after"] != 0:
            raise CheckFailed(f"discarded range does not read back as zeros: {figures}")
        return figures

    def fault(self) -> dict[str, Any]:
        dev, server = self.served("fault", FAULT)
        path = self.out / "fio-fault.json"
        before = vsimdev.completed_requests(self.counters(server))
        # allow_file_create=0: once the device is gone, fio must fail, not create a regular
        # file of that name in /dev and run its 120 s there without an error (seen: the server
        # killed a fixed 4 s after fio's start, before a slow guest's fio had reached the
        # device; the driver then removed the disk and fio did 725,000 I/Os on /dev's tmpfs).
        fio = subprocess.Popen(
            ["fio", "--output-format=json", f"--output={path}", "--name=f", f"--filename={dev.path}",
             "--allow_file_create=0", "--rw=randrw", "--bs=4k", "--direct=1", "--ioengine=libaio", "--iodepth=8",
             "--runtime=120", "--time_based", "--size=64m"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        # The fault falls once fio's I/O reaches the device (FAULT_AFTER requests served),
        # however long a loaded guest takes to start fio.
        deadline = time.monotonic() + FIO_START_S
        while vsimdev.served_requests(server) < before + FAULT_AFTER:
            if fio.poll() is not None:
                raise CheckFailed(f"fio ended before the fault: {fio.returncode} {fio.communicate()[1][-300:]}")
            if time.monotonic() > deadline:
                fio.kill()
                raise CheckFailed(f"fio had not served {FAULT_AFTER} requests on {dev.path} within {FIO_START_S} s")
            time.sleep(0.1)
        killed = time.monotonic()
        server.proc.send_signal(signal.SIGKILL)
        server.proc.wait()
        # NBD fails a request its server has not answered within the timeout; ublk's driver
        # fails a dead server's requests at their timeout (queue/io_timeout, set from it), or
        # at once where the server's exit cancels a fetch command of that queue.
        limit = server.timeout_s + 30
        ended_by = "the driver"
        try:
            _, err = fio.communicate(timeout=limit)
        except subprocess.TimeoutExpired:
            if server.transport != "ublk":
                fio.kill()
                raise CheckFailed(f"fio still running {limit:.0f} s after the server died (nbd)") from None
            # Not seen since fio waits for the device and may not create a file (above):
            # the 4 of ~40 runs on 6.12 where fio outlived the timeout were fio running on
            # a regular file. Should it happen, what the guest was doing is recorded at
            # once; deleting the dead device (what the lab does with every dead server) must
            # then end fio.
            slow = self.out / "servedsuite-fault-late.txt"
            late = diagnose(slow, self)
            deleted = vsimdev.stop(server)
            try:
                _, err = fio.communicate(timeout=DELETE_WAIT_S)
            except subprocess.TimeoutExpired:
                fio.kill()
                inflight = Path("/sys/block", server.disk, "inflight")
                char = Path("/dev", f"ublkc{server.dev_id}")
                msg = (f"fio still running {limit:.0f} s after the server died, and {DELETE_WAIT_S} s after its "
                       f"device was deleted")  # fmt: skip
                raise CheckFailed(
                    f"{msg} (ublk; {deleted}; at {limit:.0f} s: {late}; "
                    f"/sys/block/{server.disk}/inflight "
                    f"{proc.read(inflight).split() if inflight.exists() else 'gone'}, "
                    f"{char} {'still there' if char.exists() else 'gone'}; in full: {slow})"
                ) from None
            ended_by = "deleting the dead device"
        ended = time.monotonic() - killed
        figures = {"fio_rc": fio.returncode, "ended_after_s": round(ended, 1), "transport": server.transport,
                   "timeout_s": server.timeout_s, "ended_by": ended_by, "stderr": err[-300:]}  # fmt: skip
        if ended_by != "the driver":
            figures["late"] = late
        if fio.returncode == 0 and "error" not in err.lower():
            raise CheckFailed(f"fio reported no I/O error after the server died: {figures}")
        if ended_by != "the driver":
            del self.servers["fault"]
            return figures
        # The guest is alive and the device still answers (with errors): a read ends.
        p = sh(["dd", f"if={dev.path}", "of=/dev/null", "bs=4k", "count=1", "iflag=direct"], timeout=limit)
        figures["read_after_rc"] = p.returncode
        if p.returncode == 0:
            raise CheckFailed(f"a read of the dead device succeeded: {figures}")
        problems = vsimdev.stop(server)  # a dead ublk device is deleted, an NBD one disconnected
        figures["stop_problems"] = problems
        if server.transport == "ublk" and (problems or Path("/sys/block", server.disk).exists()):
            raise CheckFailed(f"the dead server's device was not removed: {figures}")
        del self.servers["fault"]
        return figures

    def auto_dilation(self) -> dict[str, Any]:
        dev, _ = self.served("auto", AUTO)
        auto = dev.served.get("dilation_auto")
        if not auto:
            raise CheckFailed(f"dilation=auto left no record of its choice: {dev.served}")
        d, cost, service = auto["dilation"], auto["guest_io_ns"], auto["read_4k_ns"]
        figures: dict[str, Any] = {**auto}
        if not (cost > 0 and service == 200_000 and d == dev.served["dilation"]):
            raise CheckFailed(f"dilation=auto measured nonsense (the model's service is 200 us): {figures}")
        if d != vsimdev.dilation_for(cost, service) or (d > 1 and cost > vsimdev.AUTO_SHARE * service * d):
            raise CheckFailed(f"dilation {d} does not keep {cost} ns under a tenth of {service} ns x it")
        r = self.fio_json("auto", ["--name=a", f"--filename={dev.path}", "--rw=randread", "--bs=4k", "--direct=1",
                                   "--ioengine=psync", "--time_based", "--runtime=2"])  # fmt: skip
        if r["_rc"] != 0 or not r.get("jobs") or r["jobs"][0].get("error", 0):
            raise CheckFailed(f"fio on the auto-dilated device: exit {r['_rc']} {r['_stderr']}")
        # In model time a QD1 read takes the model's 200 us plus the guest's cost over d.
        figures["read_lat_model_us"] = round(r["jobs"][0]["read"]["lat_ns"]["mean"] / d / 1000, 1)
        return figures

    def stop(self) -> dict[str, Any]:
        figures: dict[str, Any] = {}
        for name, (_, server) in list(self.servers.items()):
            started = time.monotonic()
            problems = vsimdev.stop(server)
            c = vsimdev.read_counters(server)
            figures[name] = {"stop_s": round(time.monotonic() - started, 1), "rc": server.proc.returncode,
                             "final_in_flight": c.get("in_flight") if c else None, "problems": problems}  # fmt: skip
            if problems or c is None or c.get("in_flight") != 0:
                raise CheckFailed(f"{name} did not stop cleanly: {figures[name]}")
            if Path("/sys/block", server.disk, "pid" if server.transport == "nbd" else "").exists():
                raise CheckFailed(f"/dev/{server.disk} still there after stop ({server.transport})")
        self.servers.clear()
        return figures


CHECKS = [
    "verify_ssd", "verify_cheapflash", "limits", "ext4", "schedulers", "discard", "fault", "auto_dilation", "stop",
]  # fmt: skip


# A check is stuck when it has run CHECK_TIMEOUT_S and no served device has completed a
# request for STALL_S, or in any case after CHECK_LIMIT_S (locally the slowest,
# verify_cheapflash, takes 130-170 s; on a loaded CI machine verify_ssd ran 7.7x its time
# here, still serving: a slow check is not a stuck one). The suite then records where,
# and what the guest was doing, and ends: a process stuck in the kernel on a served
# device cannot be killed, and the remaining checks would use the same devices.
CHECK_TIMEOUT_S = 480
STALL_S = 120
CHECK_LIMIT_S = 1800
# fault: the server is killed once fio's I/O has reached it (this many requests served,
# within FIO_START_S); fio may then take DELETE_WAIT_S to end once the dead ublk server's
# device is deleted.
FAULT_AFTER = 200
FIO_START_S = 300
DELETE_WAIT_S = 120


def diagnose(path: Path, suite: Suite) -> str:
    """What the guest is doing: every task's state and where it waits, the kernel stacks of
    those in D state and of fio's, the kernel log, the servers' counters; written to `path`
    (kept with the run's logs). Returns the gist (the tasks in D state and fio's, and where,
    each server's requests in flight and served, the servers' last log lines), for the
    failure's message: a CI log shows only that. Nothing here reads another process's
    memory (`ps` reads each one's cmdline, under its mmap lock: it once hung here for 30 s
    while fio ran flat out), and nothing that can block goes unbounded."""
    gist: list[str] = []
    text = [f"== loadavg {proc.read(Path('/proc/loadavg')).strip()}"]
    # Every thread: state, comm and wchan from /proc (no mmap lock); the kernel stack of those
    # in D state (seen: the suite's own process in p9_client_rpc, a 9p request to the host's
    # share that never returned, its fio long finished) and of fio's in any state (a job that
    # never ends may sleep in io_getevents on requests no one completes, not wait in D).
    table = []
    for task in sorted(Path("/proc").glob("[0-9]*/task/[0-9]*")):
        pid, tid = task.parent.parent.name, task.name
        stat = proc.read(task / "stat")
        state = stat.split(") ")[-1][:1] if ") " in stat else "?"
        comm = proc.read(task / "comm").strip()
        wchan = proc.read(task / "wchan").strip()
        table.append(f"{pid:>6}/{tid:<6} {state} {comm:<16} {wchan}")
        if state != "D" and comm != "fio":
            continue
        stack = proc.read(task / "stack")
        text.append(f"== {state} state {pid}/{tid} {comm} in {wchan}\n{stack}")
        # "[<0>] p9_client_rpc+0x1c6/0x4a0 [9pnet]": the function's name.
        frames = [ln.split()[1].split("+")[0] for ln in stack.splitlines() if ln.startswith("[<") and " " in ln]
        top = " < ".join(frames[:4])
        gist.append(f"{state} {pid}/{tid} {comm} in {wchan}{': ' + top if top else ''}")
    text.append("== tasks (pid/tid state comm wchan)\n" + "\n".join(table))
    for name, (_, server) in list(suite.servers.items()):
        c = vsimdev.read_counters(server)
        text.append(f"== counters {name}\n{json.dumps(c, indent=1)}")
        served = vsimdev.completed_requests(c or {})
        alive = server.proc.poll() is None
        log = server.log_tail()
        gist.append(f"server {name} ({'running' if alive else 'exited'}): "
                    f"in flight {(c or {}).get('in_flight')}, served {served}; log: {log[-300:]!r}")  # fmt: skip
    try:
        p = sh(["dmesg"], timeout=30)
        text.append(f"== dmesg\n{p.stdout[-20000:]}{p.stderr[-2000:]}")
    except subprocess.TimeoutExpired:
        text.append("== dmesg: timed out after 30 s")
    try:
        path.write_text("\n".join(text) + "\n")
    except OSError as e:
        gist.append(f"cannot write {path}: {e}")
    return "; ".join(gist) or "no process in D state, no server"


class Watchdog:
    """Ends the suite when a check runs past CHECK_TIMEOUT_S: writes the diagnosis and
    the results so far (the stuck check and those not run marked failed), then exits the
    process. The checks run in the main thread (a server started from a thread that
    ends is shut down with it), the watchdog in its own."""

    def __init__(self, out: Path, suite: Suite, results: dict[str, Any]) -> None:
        self.out, self.suite, self.results = out, suite, results
        self.current = ""
        self.started = float("inf")
        self.lock = threading.Lock()
        threading.Thread(target=self._watch, name="watchdog", daemon=True).start()

    def arm(self, name: str) -> None:
        with self.lock:
            self.current, self.started = name, time.monotonic()

    def disarm(self) -> None:
        with self.lock:
            self.current, self.started = "", float("inf")

    def _served(self) -> int:
        """Requests every served device has completed so far."""
        servers = [server for _, server in list(self.suite.servers.values())]
        return sum(vsimdev.served_requests(s) for s in servers)

    def _watch(self) -> None:
        served, progress = -1, time.monotonic()
        while True:
            time.sleep(1)
            with self.lock:
                name, started = self.current, self.started
            now = time.monotonic()
            if (n := self._served()) != served:
                served, progress = n, now
            ran, still = now - started, now - max(progress, started)
            if not (ran > CHECK_LIMIT_S or (ran > CHECK_TIMEOUT_S and still > STALL_S)):
                continue
            hang = self.out / f"servedsuite-stuck-{name}.txt"
            gist = diagnose(hang, self.suite)
            detail = (f"stuck: still running after {ran:.0f} s, no request completed for {still:.0f} s ({gist}); "
                      f"processes, kernel stacks, kernel log and server counters in {hang}")  # fmt: skip
            self.results[name] = {"ok": False, "detail": detail, "figures": {}, "seconds": round(ran)}
            for rest in CHECKS[CHECKS.index(name) + 1 :]:
                self.results[rest] = {"ok": False, "detail": f"not run: check {name} was stuck", "figures": {},
                                      "seconds": 0}  # fmt: skip
            (self.out / "servedsuite.json").write_text(json.dumps(self.results, indent=2) + "\n")
            print(f"servedsuite: {name}: FAILED {detail}", flush=True)
            os._exit(3)


def main(out: Path, names: list[str]) -> int:
    """Run the named checks (all of CHECKS when none is named), in CHECKS's order."""
    unknown = sorted(set(names) - set(CHECKS))
    if unknown:
        print(f"servedsuite: no such check: {', '.join(unknown)} (checks: {', '.join(CHECKS)})", file=sys.stderr)
        return 2
    suite = Suite(out)
    results: dict[str, Any] = {}
    report = out / "servedsuite.json"
    watchdog = Watchdog(out, suite, results)
    for name in (c for c in CHECKS if not names or c in names):
        started = time.monotonic()
        check: Callable[[], dict[str, Any]] = getattr(suite, name)
        print(f"servedsuite: {name}: started", flush=True)
        watchdog.arm(name)
        try:
            r: dict[str, Any] = {"ok": True, "detail": "", "figures": check()}
        except (CheckFailed, OSError, subprocess.TimeoutExpired, vsimdev.VsimDeviceError,
                schedulers.SchedulerError) as e:  # fmt: skip
            r = {"ok": False, "detail": str(e), "figures": {}}
        watchdog.disarm()
        r["seconds"] = round(time.monotonic() - started, 1)
        results[name] = r
        print(f"servedsuite: {name}: {'ok' if r['ok'] else 'FAILED ' + r['detail']} ({r['seconds']} s)", flush=True)
        report.write_text(json.dumps(results, indent=2) + "\n")
    vsimdev.stop_all()
    return 0 if all(r["ok"] for r in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main(Path(os.environ["VLAB_OUT"]), sys.argv[1:]))
