"""The module suite's check `requeue`: m. requeued requests (null_blk fault injection) are
dispatched again, never held again, and counted once: data verifies and the statistics balance.
"""

from __future__ import annotations

from vlab import schedulers
from vlab.checks.modsuite.common import (
    MODULE,
    Result,
    check_invariants,
    ensure_loaded,
    expect,
    fio,
    make,
    needs_param,
    set_attr,
    sh,
)
from vlab.devices.spec import NULLB_CONFIGFS


def reload_null_blk(params: list[str]) -> None:
    """Remove every null_blk device and load the driver again with `params`."""
    for item in sorted(NULLB_CONFIGFS.glob("*")) if NULLB_CONFIGFS.is_dir() else []:
        if item.is_dir():
            (item / "power").write_text("0")
            item.rmdir()
    sh("rmmod null_blk")
    p = sh(f"modprobe null_blk nr_devices=0 {' '.join(params)}")
    expect(p.returncode == 0, f"modprobe null_blk {params}: {p.stderr.strip()}")


def requires() -> str | None:
    """Why this kernel cannot run the check, or None."""
    return needs_param("null_blk", "requeue", "CONFIG_BLK_DEV_NULL_BLK_FAULT_INJECTION")


def check(r: Result) -> None:
    ensure_loaded()
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
