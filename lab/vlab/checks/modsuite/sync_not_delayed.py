"""The module suite's check `sync_not_delayed`: e3. O_SYNC and O_DIRECT writes are not held for
bundle_expire.
"""

from __future__ import annotations

from vlab import schedulers
from vlab.checks.modsuite.common import (
    MODULE,
    SLOW,
    Result,
    ensure_loaded,
    expect,
    fio,
    make,
    needs_nothing,
    set_attr,
    stats,
)

requires = needs_nothing  # nothing beyond the lab's guest


def check(r: Result) -> None:
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
