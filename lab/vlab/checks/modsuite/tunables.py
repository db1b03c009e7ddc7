"""The module suite's check `tunables`: b. defaults readable, valid values round-trip, invalid ones
are -EINVAL and change nothing.
"""

from __future__ import annotations

import errno
import os

from vlab import schedulers
from vlab.checks.modsuite.common import (
    MODULE,
    Result,
    attr,
    ensure_loaded,
    expect,
    make,
    needs_nothing,
    set_attr,
    write_errno,
)


def round_trips(t: schedulers.Tunable) -> tuple[list[str], list[str]]:
    """(valid values to round-trip, out-of-range ones) of a declared tunable: its bounds, its
    default and a value between; one past each bound."""
    valid = sorted({t.min, t.default, (t.min + t.max) // 2, t.max})
    return [str(v) for v in valid], [str(t.min - 1), str(t.max + 1)]


# "\n" is what `echo "" >` writes; a zero-length write(2) never reaches the store method.
COMMON_INVALID = ["abc", "\n", " ", "99999999999999999999", "1.5", "0x10"]


requires = needs_nothing  # nothing beyond the lab's guest


def check(r: Result) -> None:
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
