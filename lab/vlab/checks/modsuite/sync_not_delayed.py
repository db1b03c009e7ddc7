"""The module suite's check `sync_not_delayed`: e3. O_SYNC and O_DIRECT writes are not held for
bundle_expire.
"""

from __future__ import annotations

import time

from vlab import schedulers
from vlab.checks.modsuite.common import (
    MODULE,
    SLOW,
    Result,
    ensure_loaded,
    expect,
    expect_in_time,
    fio,
    make,
    needs_nothing,
    set_attr,
    stats,
)
from vlab.checks.stall import StallProbe, most_lost_s

requires = needs_nothing  # nothing beyond the lab's guest

# A write held for bundle_expire (1000 ms) waits twice this; an unheld one a few ms. Past it by
# no more than the guest lost to stalls in a window of the write's length: not judged.
LIMIT_MS = 500


def check(r: Result) -> None:
    ensure_loaded()
    dev = make(SLOW.format(depth=4))
    schedulers.select(dev.name, MODULE)
    set_attr(dev, "bundle_expire_us", 1_000_000)
    worst: dict[str, float] = {}
    lost: dict[str, float] = {}
    with StallProbe() as probe:
        for name, opts in (("osync", "--direct=0 --sync=1"), ("odirect", "--direct=1")):
            before = stats(dev)
            t0 = time.monotonic()
            doc = fio(dev, f"--name={name} {opts} --rw=randwrite --bs=4k --size=64m --time_based --runtime=3")
            t1 = time.monotonic()
            job = doc["jobs"][0]
            worst[name] = float(job["write"]["lat_ns"]["max"]) / 1e6
            # The worst write's time is not known: the most any window of its length lost.
            lost[name] = round(most_lost_s(probe.samples(t0, t1), worst[name] / 1000) * 1000, 1)
            expect(job["write"]["total_ios"] > 10, f"{name}: too few writes")
            expect(stats(dev)["bundles_opened"] == before["bundles_opened"], f"{name}: writes were bundled")
    r["figures"].update(max_write_ms=worst, most_lost_ms=lost)
    for name in worst:
        expect_in_time(worst[name], LIMIT_MS, lost[name], f"a sync write ({name}, bundle_expire 1000 ms) waited")
    set_attr(dev, "bundle_expire_us", 2000)
    schedulers.select(dev.name, "none")
    r["detail"] = f"worst sync write latency {max(worst.values()):.1f} ms with bundle_expire 1000 ms"
