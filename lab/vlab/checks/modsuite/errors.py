"""The module suite's check `errors`: g. scsi_debug medium errors and timeouts: fio sees errors,
the queue keeps serving, no hang.
"""

from __future__ import annotations

from pathlib import Path

from vlab import schedulers
from vlab.checks.modsuite.common import (
    MODULE,
    Result,
    dmesg_problems,
    ensure_loaded,
    expect,
    fio,
    make,
    needs_module,
    sh,
    uptime,
)


def requires() -> str | None:
    """Why this kernel cannot run the check, or None."""
    return needs_module("scsi_debug")


def check(r: Result) -> None:
    ensure_loaded()
    sh("rmmod scsi_debug")
    t0 = uptime()
    # opts=2: medium error at sector 0x1234 (+ medium_error_count); every_nth with opts=4: timeouts.
    dev = make("scsi_debug:dev_size_mb=64,opts=2,medium_error_start=4660,medium_error_count=64")
    Path(f"/sys/block/{dev.name}/device/timeout").write_text("3")
    schedulers.select(dev.name, MODULE)
    doc = fio(
        dev,
        "--name=err --ioengine=libaio --direct=1 --rw=randread --bs=4k --size=8m --iodepth=8 "
        "--continue_on_error=all --ignore_error=5,61,84 --time_based --runtime=5",  # EIO, ENODATA, EILSEQ
        timeout=300,
        io_errors_expected=True,
    )
    job = doc["jobs"][0]
    errs = int(job.get("total_err", 0)) or (1 if job.get("error") else 0)
    r["figures"]["medium_errors_seen_by_fio"] = errs
    expect(errs > 0, "fio saw no medium error")
    p = sh(f"dd if={dev.path} of=/dev/null bs=4k skip=2048 count=256 iflag=direct status=none")
    expect(p.returncode == 0, f"queue stopped serving after errors: {p.stderr}")
    schedulers.select(dev.name, "none")
    sh("rmmod scsi_debug")
    dev = make("scsi_debug:dev_size_mb=64,every_nth=200,opts=4")
    Path(f"/sys/block/{dev.name}/device/timeout").write_text("2")
    schedulers.select(dev.name, MODULE)
    p = sh(
        f"cd /tmp && timeout 240 fio --name=to --filename={dev.path} --ioengine=libaio --direct=1 --rw=randread "
        "--bs=4k --size=8m --iodepth=4 --continue_on_error=all --number_ios=1000 --output-format=json",
        timeout=300,
    )
    expect(p.returncode != 124, "fio hung on a device with timeouts")
    schedulers.select(dev.name, "none")
    problems = [x for x in dmesg_problems(t0) if "blocked for more than" in x or "BUG" in x]
    expect(not problems, "kernel log: " + " | ".join(problems[:3]))
    sh("rmmod scsi_debug")
    r["detail"] = f"{errs} medium errors reported; queue kept serving; timeouts recovered without a hang"
