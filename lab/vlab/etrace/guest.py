"""Guest (or host, as root) side of `vlab trace`: put a file system on the device, start the
probe on it, run the command in its mount point, stop the probe; the trace lands in
$VLAB_OUT/trace.txt and what happened in $VLAB_OUT/trace-run.json."""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from vlab.etrace import PROBE

MOUNT = Path("/tmp/vlab-trace")
ATTACH_TIMEOUT_S = 180


def kernel_dev(path: str) -> int:
    """The device's dev_t as the kernel encodes it in bio and inode fields (major << 20 | minor)."""
    st = os.stat(path)
    return (os.major(st.st_rdev) << 20) | os.minor(st.st_rdev)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--device", help="block device (default: the first of $VLAB_DEVICES)")
    ap.add_argument("--fs", default="ext4", help="mkfs.FS on the device first; 'none' to use it as it is")
    ap.add_argument("command", nargs=argparse.REMAINDER)
    a = ap.parse_args(argv)
    command = a.command[1:] if a.command[:1] == ["--"] else a.command
    out = Path(os.environ.get("VLAB_OUT", "."))
    dev = a.device or (os.environ.get("VLAB_DEVICES", "").split() or [""])[0]
    if not dev or not command:
        print("vlab trace: need a device and a command", file=sys.stderr)
        return 2
    run: dict[str, object] = {"device": dev, "fs": a.fs, "command": command, "step": "mkfs"}
    cwd = Path.cwd()
    if a.fs != "none":
        subprocess.run([f"mkfs.{a.fs}", "-q", dev] if a.fs != "xfs" else ["mkfs.xfs", "-f", "-q", dev], check=True)
        run["step"] = "mount"
        MOUNT.mkdir(parents=True, exist_ok=True)
        subprocess.run(["mount", dev, str(MOUNT)], check=True)
        cwd = MOUNT
    trace = out / "trace.txt"
    run["step"] = "probe"
    with trace.open("w") as f:
        bt = subprocess.Popen(["bpftrace", "-B", "line", str(PROBE), str(kernel_dev(dev))], stdout=f,
                              stderr=subprocess.STDOUT)  # fmt: skip
    t0 = time.monotonic()
    while "H vlab-trace" not in trace.read_text(errors="replace"):
        if bt.poll() is not None or time.monotonic() - t0 > ATTACH_TIMEOUT_S:
            bt.kill()
            run["error"] = f"bpftrace did not start: {trace.read_text(errors='replace')[-2000:]}"
            (out / "trace-run.json").write_text(json.dumps(run, indent=1) + "\n")
            print(f"vlab trace: {run['error']}", file=sys.stderr)
            return 1
        time.sleep(0.2)
    run["attach_s"] = round(time.monotonic() - t0, 1)
    run["step"] = "command"
    t1 = time.monotonic()
    p = subprocess.run(command, cwd=cwd, check=False)
    run["command_s"] = round(time.monotonic() - t1, 3)
    run["exit_status"] = p.returncode
    os.sync()
    time.sleep(1)
    bt.send_signal(signal.SIGINT)
    try:
        bt.wait(timeout=60)
    except subprocess.TimeoutExpired:
        bt.kill()
        run["probe_killed"] = True
    run["step"] = "done"
    if a.fs != "none":
        subprocess.run(["umount", str(MOUNT)], check=False)
    (out / "trace-run.json").write_text(json.dumps(run, indent=1) + "\n")
    return p.returncode


if __name__ == "__main__":
    sys.exit(main())
