"""The module suite's check `requeue`: m. requeued requests (null_blk fault injection) are
dispatched again, never held again, and counted once: data verifies and the statistics balance;
requeues that come back through the scheduler together go out again in the order they were
requeued (issue 36, finding 8: each went to the front of one list, so a burst came out reversed
on 6.12, and on 6.1 whenever its requeues came back in different runs of the requeue work).
The judgment is from the trace: a request the scheduler handed out just before an earlier
requeue came back, but issued just after, would count against it (not seen so far).
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
    waited, those issued before one requeued earlier) in a trace of block_rq_requeue,
    block_rq_insert and block_rq_issue of a device with one hardware queue.

    A requeue that null_blk answers with BLK_STS_RESOURCE waits in blk-mq's own dispatch list
    and is issued again without an insert; one it requeues with blk_mq_requeue_request comes
    back through the scheduler, traced as an insert. Only the latter are the scheduler's to
    order, by when they were requeued: blk-mq's re-inserts come newest first on 6.1 and oldest
    first on 6.12, so their order says nothing.
    """
    requeued: dict[tuple[int, int], list[int]] = {}  # requeued, not yet back: their ranks
    waiting: list[tuple[int, tuple[int, int]]] = []  # re-inserted, not yet issued
    rank = reinserted = together = out_of_order = 0
    for e in events:
        key = (e.sector, e.sectors)
        if e.event == "block_rq_requeue":
            requeued.setdefault(key, []).append(rank)
            rank += 1
        elif e.event == "block_rq_insert" and requeued.get(key):
            waiting.append((requeued[key].pop(0), key))
            reinserted += 1
        elif e.event == "block_rq_issue":
            mine = [w for w in waiting if w[1] == key]
            if mine:
                together += len(waiting) > 1
                out_of_order += mine[0][0] != min(r for r, _ in waiting)
                waiting.remove(mine[0])
            elif requeued.get(key):
                requeued[key].pop(0)
    return reinserted, together, out_of_order


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
        # The order: direct writes from two submitters, so that requeues meet in the
        # scheduler (one hardware queue: with several, blk-mq sorts what the scheduler hands
        # out by queue, and the trace could not tell that order from the scheduler's).
        trace = Trace(dev, ("block_rq_requeue", "block_rq_insert", "block_rq_issue"))
        fio(
            dev,
            "--name=o --ioengine=libaio --direct=1 --rw=randwrite --bs=4k --size=16m --iodepth=16 "
            "--numjobs=2 --time_based --runtime=8",
            timeout=600,
        )
        reinserted, together, out_of_order = requeue_order(trace.stop())
        r["figures"].update(reinserted=reinserted, together=together, out_of_order=out_of_order)
        expect(together > 0, f"no two of {reinserted} re-inserted requeues waited at once: order untested")
        expect(out_of_order == 0, f"{out_of_order} of {together} requeues issued before one requeued earlier")
        schedulers.select(dev.name, "none")
    finally:
        reload_null_blk([])
    r["detail"] = (
        f"{st['requeued']} requeues, data verified, statistics balance; {together} requeues issued "
        f"while others waited, all in order"
    )
