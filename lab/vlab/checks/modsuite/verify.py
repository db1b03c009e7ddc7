"""The module suite's check `verify`: c. fio verify (crc32c), random and sequential, 4 jobs on
adjacent quarters of a memory-backed null_blk, VLAB_VERIFY_MIB in all (default 1024; make test
passes 256, make test-debug the default).
"""

from __future__ import annotations

import os

from vlab import schedulers
from vlab.checks.modsuite.common import MODULE, Result, ensure_loaded, expect, fio, make, needs_nothing, sh

requires = needs_nothing  # nothing beyond the lab's guest


def verify_mib() -> int:
    """The MiB to write and verify (four jobs of a quarter each; at least 64)."""
    return max(64, int(os.environ.get("VLAB_VERIFY_MIB", "1024")) // 4 * 4)


def check(r: Result) -> None:
    ensure_loaded()
    total = verify_mib()
    dev = make(f"null_blk:memory_backed=1,size={total},irqmode=1,hw_queue_depth=32,discard=1")
    schedulers.select(dev.name, MODULE)
    args = (
        f"--ioengine=libaio --direct=1 --iodepth=16 --numjobs=4 --size={total // 4}m --offset_increment={total // 4}m "
        "--bsrange=4k-128k --verify=crc32c --verify_fatal=1 --serialize_overlap=1 --do_verify=1 "
        "--group_reporting --name=seq --rw=write --name=rand --stonewall --rw=randwrite --verify_backlog=256"
    )
    doc = fio(dev, args, timeout=1500)
    errors = sum(int(j.get("error", 0)) for j in doc["jobs"])
    written = sum(int(j["write"]["io_kbytes"]) for j in doc["jobs"])
    verified = sum(int(j["read"]["io_kbytes"]) for j in doc["jobs"])
    r["figures"].update(written_mib=written // 1024, verified_mib=verified // 1024, errors=errors)
    expect(errors == 0, f"fio reported {errors} errors")
    expect(written >= total * 1024, f"only {written // 1024} MiB of {total} written")
    expect(verified >= total * 1024, f"only {verified // 1024} MiB of {total} verified")
    r["detail"] = f"{written // 1024} MiB written, {verified // 1024} MiB verified, 0 errors"
    # Give the data back in 32 MiB discards: null_blk frees a removed device's pages in one
    # loop without rescheduling, which on the debug kernel (KASAN) under TCG ran 26 s and
    # tripped the soft-lockup detector when a later check reloaded null_blk.
    p = sh(f"blkdiscard --step 32M {dev.path}")
    expect(p.returncode == 0, f"blkdiscard failed: {p.stderr.strip()}")
    schedulers.select(dev.name, "none")
