"""The module suite's check `expiry_timer`: o. with write_expire below bundle_expire_us, every held
write goes at its write_expire, whatever the tick does between deciding a bundle must wait and
arming its timer (issue 36, finding 1): up to 3,000 lone held writes (20 s) on an idle device, while
another device's timer completions interrupt the writer's CPU, none waits a second.
"""

from __future__ import annotations

import os
import subprocess
import time

from vlab import schedulers
from vlab.checks.modsuite.common import (
    MODULE,
    NotJudged,
    Result,
    check_invariants,
    ensure_loaded,
    expect,
    held_write,
    make,
    needs_nothing,
    set_attr,
    stats,
    writes_completed,
)
from vlab.checks.stall import StallProbe, lost_s, summary

requires = needs_nothing  # nothing beyond the lab's guest

WRITES = 3000  # alone on the machine (make test boots it alone: modsuite.TIMED), 800-1,300 in the budget
BUDGET_S = 20.0
MIN_WRITES = 500
STUCK_S = 1.0  # write_expire is 1 ms: a write still held after a second has no timer


def check(r: Result) -> None:
    ensure_loaded()
    dev = make("null_blk:size=64")
    noise = make("null_blk:irqmode=2,completion_nsec=10000,size=64")
    schedulers.select(dev.name, MODULE)
    set_attr(dev, "write_expire", 1)
    set_attr(dev, "hold_idle", 1)  # held on an idle device: the holding rule itself
    set_attr(dev, "bundle_expire_us", 10_000_000)
    os.sched_setaffinity(0, {0})
    # Interrupts on the writer's CPU stretch the moments between two reads of the clock.
    hum = subprocess.Popen(
        ["taskset", "-c", "0", "fio", "--name=hum", f"--filename={noise.path}", "--ioengine=libaio",
         "--direct=1", "--rw=randread", "--bs=4k", "--iodepth=64", "--time_based", "--runtime=600"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    before = stats(dev)
    stuck: list[float] = []
    worst = 0.0
    writes = 0
    probe = StallProbe()
    probe.start()
    start = time.monotonic()
    fd = os.open(dev.path, os.O_RDWR)
    try:
        for i in range(WRITES):
            if time.monotonic() - start > BUDGET_S:
                break
            writes += 1
            done = writes_completed(dev)
            t0 = time.monotonic()
            held_write(fd, (i % 64) * (1 << 20))
            while writes_completed(dev) <= done:
                # STUCK_S of the guest's own time: a stall of the host's does not count.
                now = time.monotonic()
                if now - t0 > STUCK_S and now - t0 - lost_s(probe.samples(t0, now), t0, now) > STUCK_S:
                    stuck.append(i)
                    set_attr(dev, "bundling", 0)  # releases it: the next write finds nothing stuck
                    set_attr(dev, "bundling", 1)
                    break
                time.sleep(0.0005)
            worst = max(worst, time.monotonic() - t0)
    finally:
        end = time.monotonic()
        probe.stop()
        os.close(fd)
        hum.kill()
        hum.wait()
        os.sched_setaffinity(0, set(range(os.cpu_count() or 1)))
    after = stats(dev)
    expired = after["bundles_closed_expire"] - before["bundles_closed_expire"]
    stalls = summary(probe.samples(start, end), start, end)
    r["figures"].update(
        writes=writes, stuck=len(stuck), worst_ms=round(worst * 1000, 1), closed_by_expiry=expired, stalls=stalls
    )
    expect(not stuck, f"{len(stuck)} of {writes} held writes had no timer (released by hand after {STUCK_S} s)")
    if writes < MIN_WRITES:
        # At the rate of the time the guest ran, would it have made enough?
        ran_s = max(end - start - stalls["lost_ms"] / 1000, 1e-3)
        message = (
            f"only {writes} writes in {end - start:.0f} s, {MIN_WRITES} needed to mean anything; the guest lost "
            f"{stalls['lost_ms'] / 1000:.1f} s to stalls"
        )
        if writes * (end - start) / ran_s >= MIN_WRITES:
            raise NotJudged(message)
        expect(False, message)
    expect(expired > writes // 2, f"only {expired} bundles closed at write_expire")
    check_invariants(dev, "expiry_timer")
    set_attr(dev, "write_expire", 1000)
    set_attr(dev, "bundle_expire_us", 2000)
    set_attr(dev, "hold_idle", 0)
    schedulers.select(dev.name, "none")
    r["detail"] = f"{writes} lone held writes, each gone at write_expire (worst {worst * 1000:.0f} ms)"
