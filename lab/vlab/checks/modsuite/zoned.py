"""The module suite's check `zoned`: l. zoned null_blk: veloces is not offered (6.1: the queue
needs ZBD_SEQ_WRITE), or is offered with bundling off and refuses bundling=1; sequential zone
writes verify.
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
    fio_no_errors,
    make,
    needs_param,
    write_errno,
)


def requires() -> str | None:
    """Why this kernel cannot run the check, or None."""
    return needs_param("null_blk", "zoned", "CONFIG_BLK_DEV_ZONED")


def check(r: Result) -> None:
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
