"""What an elevator switch costs, per scheduler (`make bench-switch`; runs in a guest).

On an idle null_blk each scheduler is selected from `none` and left for `none`, `--rounds`
times, in turn; then veloces again with a second disk keeping veloces (so its writeback probe
stays registered across the first disk's switches: the cost of unregistering it is the
difference). Prints the median, 90th percentile and maximum of each direction. Every switch
freezes the queue (an RCU grace period); leaving veloces adds its exit's grace period
(docs/kernel.md, "What leaving veloces costs"). Figures only: nothing is asserted.
"""

from __future__ import annotations

import argparse
import statistics
import time

from vlab import schedulers
from vlab.checks.modsuite.common import MODULE, ensure_loaded, make

DEVICE = "null_blk:memory_backed=1,size=64,hw_queue_depth=16"
OTHERS = ["mq-deadline", "kyber", "bfq"]


def _time(disk: str, name: str) -> float:
    began = time.monotonic()
    schedulers.select(disk, name)
    return time.monotonic() - began


def _row(label: str, seconds: list[float]) -> str:
    s = sorted(seconds)
    ms = [1000 * statistics.median(s), 1000 * s[int(0.9 * (len(s) - 1))], 1000 * s[-1]]
    return f"| {label} | {len(s)} | {ms[0]:.1f} | {ms[1]:.1f} | {ms[2]:.1f} |"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=25, help="switches each way per scheduler (default 25)")
    args = ap.parse_args()
    ensure_loaded()
    disk, other = make(DEVICE).name, make(DEVICE).name
    schedulers.require(disk, [MODULE, *OTHERS])
    print("| switch | n | median ms | p90 ms | max ms |\n|---|---|---|---|---|", flush=True)
    for second in (None, MODULE):
        if second:
            schedulers.select(other, second)
        for name in [MODULE, *OTHERS] if second is None else [MODULE]:
            into, out = [], []
            for _ in range(args.rounds):
                into.append(_time(disk, name))
                out.append(_time(disk, "none"))
            beside = f" (beside a disk on {second})" if second else ""
            print(_row(f"none → {name}{beside}", into), flush=True)
            print(_row(f"{name} → none{beside}", out), flush=True)
    schedulers.select(other, "none")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
