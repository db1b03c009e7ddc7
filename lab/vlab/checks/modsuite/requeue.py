"""The module suite's check `requeue`: m. requeued requests (null_blk fault injection) are
dispatched again, never held again, and counted once: data verifies and the statistics balance;
requeues that come back through the scheduler together go out again in the order they were
requeued (issue 36, finding 8: each went to the front, and a burst came out reversed).
"""

from __future__ import annotations

from vlab import schedulers
from vlab.checks.modsuite.common import (
    MODULE,
    Result,
    Trace,
    TraceEvent,
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


def requeue_order(events: list[TraceEvent]) -> tuple[int, int, int]:
    """(requeues re-inserted through the scheduler, those issued while another such one
    waited, those issued out of their re-insertion order) in a trace of block_rq_requeue,
    block_rq_insert and block_rq_issue.

    A requeue that null_blk answers with BLK_STS_RESOURCE waits in blk-mq's own dispatch list
    and is issued again without an insert; one it requeues with blk_mq_requeue_request comes
    back through the scheduler, traced as an insert. Only the latter are the scheduler's to
    order; among those waiting at once, the earliest re-inserted must go first.
    """
    requeued: list[tuple[int, int]] = []  # requeued, not yet re-inserted or issued
    waiting: list[tuple[int, int]] = []  # re-inserted by the scheduler, not yet issued
    reinserted = together = out_of_order = 0
    for e in events:
        key = (e.sector, e.sectors)
        if e.event == "block_rq_requeue":
            requeued.append(key)
        elif e.event == "block_rq_insert" and key in requeued:
            requeued.remove(key)
            waiting.append(key)
            reinserted += 1
        elif e.event == "block_rq_issue":
            if key in waiting:
                together += len(waiting) > 1
                out_of_order += waiting.index(key) != 0
                waiting.remove(key)
            elif key in requeued:
                requeued.remove(key)
    return reinserted, together, out_of_order


def requires() -> str | None:
    """Why this kernel cannot run the check, or None."""
    return needs_param("null_blk", "requeue", "CONFIG_BLK_DEV_NULL_BLK_FAULT_INJECTION")


def check(r: Result) -> None:
    ensure_loaded()
    reload_null_blk(["requeue=1,20,0,-1"])
    try:
        dev = make("null_blk:memory_backed=1,size=128,irqmode=2,completion_nsec=50000,hw_queue_depth=4,submit_queues=2")
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
        # The order: direct writes from two submitters on two queues, so that requeues from
        # both meet in the scheduler before blk-mq's requeue work hands them back.
        trace = Trace(dev, ("block_rq_requeue", "block_rq_insert", "block_rq_issue"))
        fio(
            dev,
            "--name=o --ioengine=libaio --direct=1 --rw=randwrite --bs=4k --size=16m --iodepth=16 "
            "--numjobs=2 --time_based --runtime=4",
            timeout=600,
        )
        reinserted, together, out_of_order = requeue_order(trace.stop())
        r["figures"].update(reinserted=reinserted, together=together, out_of_order=out_of_order)
        expect(together > 0, f"no two of {reinserted} re-inserted requeues waited at once: order untested")
        expect(out_of_order == 0, f"{out_of_order} of {together} requeues issued out of their requeue order")
        schedulers.select(dev.name, "none")
    finally:
        reload_null_blk([])
    r["detail"] = (
        f"{st['requeued']} requeues, data verified, statistics balance; {together} requeues issued "
        f"while others waited, all in order"
    )
