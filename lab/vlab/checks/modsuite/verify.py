"""The module suite's check `verify`: c. fio verify (crc32c) over 1 GiB, random and sequential, 4
jobs, memory-backed null_blk.
"""

from __future__ import annotations

from vlab import schedulers
from vlab.checks.modsuite.common import MODULE, Result, ensure_loaded, expect, fio, make, needs_nothing, sh

requires = needs_nothing  # nothing beyond the lab's guest


def check(r: Result) -> None:
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
