#!/bin/bash
# Who takes a freed request: a QD1 reader beside a QD32 writer (the fidelity matrix's a-r1),
# traced with blktrace under each scheduler named (docs/notebooks/fidelity.md, "The tag race").
#   ./vlab run --scratch --kernel 6.1 --cpus 1 \
#     --device null_blk:irqmode=2,completion_nsec=1000000,hw_queue_depth=1,submit_queues=1,size=1024 \
#     -- bash lab/scripts/tag-race.sh none mq-deadline
# (the writer at another depth: -- bash -c 'WRITER_DEPTH=16 bash lab/scripts/tag-race.sh none')
# For each scheduler: the reader's and the writer's IOPS and the reader's completion latency
# (fio, 4 s after a 1-s ramp, blktrace running: it costs the guest CPU, so the figures are the
# traced run's, not the matrix's), then, at each completion of a read while a write waits for
# a request (queued, Q, without one, G): which task got the next request, the writer (the
# waiter woken for it) or the reader with its next read; and how many reads waited 1 ms or
# more between Q and G (a request's worth of the device: behind writes holding every
# scheduler tag); under an elevator, each read's time in it (I to D) and the requests
# dispatched ahead of it; the gaps between completions; and, for each clump of completions
# holding a read, whether the reader's next read or the next dispatch came first, by the read's
# place in the clump. Traces stay in $VLAB_OUT.
set -euo pipefail
dev=$(echo "$VLAB_DEVICES" | cut -d' ' -f1)
name=$(basename "$dev")
case ${WRITER_DEPTH:-32} in ""|*[!0-9]*) echo "tag-race: WRITER_DEPTH must be a number" >&2; exit 2;; esac
work=$(mktemp -d)  # blktrace mmaps its buffers: not on the shared output folder
[ $# -gt 0 ] || set -- none mq-deadline
for s in "$@"; do
  modprobe -q "$s" 2>/dev/null || true
  echo "$s" > "/sys/block/$name/queue/scheduler"
  blktrace -d "$dev" -D "$work" -o "bt-$s" -w 6 > /dev/null &
  sleep 0.5
  DEV=$dev WRITER_DEPTH=${WRITER_DEPTH:-32} fio --output-format=json --output="$VLAB_OUT/fio-$s.json" \
    "$(dirname "$0")/tag-race.fio"
  wait
  blkparse -D "$work" -i "bt-$s" -f "%a %T.%9t %p %C %S %d %n\n" -o "$VLAB_OUT/blkparse-$s.txt" > /dev/null
  python3 - "$s" "$VLAB_OUT/fio-$s.json" "$VLAB_OUT/blkparse-$s.txt" <<'EOF'
import json, sys
from collections import Counter

sched, fio, trace = sys.argv[1:]
jobs = {j["jobname"]: j for j in json.load(open(fio))["jobs"]}
r, w = jobs["reader"]["read"], jobs["writer"]["write"]
pct = r["clat_ns"]["percentile"]
lat = " / ".join(f"{pct[k] / 1e6:.2f}" for k in ("50.000000", "90.000000", "99.000000"))
print(f"{sched}: reader {r['iops']:.0f} IOPS (completion p50/p90/p99 {lat} ms), writer {w['iops']:.0f} IOPS")
waiting: set[str] = set()
won: Counter[str] = Counter()
pending = False
read_q: dict[str, float] = {}
read_waits: list[float] = []
# Each read's time in the scheduler (I to D) and the requests dispatched between its I and D;
# the gaps between completions (4 tags: clumps of completions, then a gap).
read_i: dict[str, tuple[float, int]] = {}
read_sched: list[float] = []
ahead: Counter[int] = Counter()
dispatched = 0
c_gaps: list[float] = []
last_c = None
events: list[tuple[float, str, bool]] = []  # (time, I/D/C, a read), for the clumps below
for line in open(trace):
    f = line.split()
    if len(f) < 7 or f[0] not in ("Q", "G", "I", "D", "C") or float(f[1]) < 1.5:  # after fio's ramp
        continue
    write = f[5].startswith("W")
    if f[0] in ("I", "D", "C"):
        events.append((float(f[1]), f[0], f[5].startswith("R")))
    if f[0] == "C":
        if last_c is not None:
            c_gaps.append(float(f[1]) - last_c)
        last_c = float(f[1])
    if f[0] == "I" and not write:
        read_i[f[4]] = (float(f[1]), dispatched)
    elif f[0] == "D":
        if not write and f[4] in read_i:
            t, before = read_i.pop(f[4])
            read_sched.append(float(f[1]) - t)
            ahead[dispatched - before] += 1
        dispatched += 1
    elif f[0] == "Q" and write:
        waiting.add(f[4])
    elif f[0] == "Q":
        read_q[f[4]] = float(f[1])
    elif f[0] == "G":
        if pending:
            won["writer" if write else "reader"] += 1
            pending = False
        waiting.discard(f[4])
        if not write and f[4] in read_q:
            read_waits.append(float(f[1]) - read_q.pop(f[4]))
    elif f[0] == "C" and not write and waiting:
        pending = True
n = sum(won.values())
share = f"{won['writer'] / n:.1%}" if n else "-"
print(f"{sched}: after a read's completion with a write waiting, the next request went to the reader "
      f"{won['reader']} times, to the writer {won['writer']} (the writer's share {share})")
slow = sum(t >= 0.001 for t in read_waits)
print(f"{sched}: reads that waited 1 ms or more for a request (Q to G): {slow} of {len(read_waits)}"
      f" ({slow / max(1, len(read_waits)):.1%})")


def pcts(xs: list[float]) -> str:
    xs = sorted(xs)
    return " / ".join(f"{xs[int(p * len(xs))] * 1e3:.3f}" for p in (0.1, 0.5, 0.9, 0.99)) if xs else "-"


if read_sched:
    print(f"{sched}: reads' time in the scheduler (I to D) p10/p50/p90/p99 {pcts(read_sched)} ms; requests"
          f" dispatched ahead of a read after its insertion: {dict(sorted(ahead.items()))}")
print(f"{sched}: gaps between completions p10/p50/p90/p99 {pcts(c_gaps)} ms")

# Completions within 0.2 ms of a clump's first are one clump. For each clump holding a read: was
# the read its first completion, and did the reader's next read reach the elevator (I) before
# the next dispatch (D: kblockd's worker running the queue)?
order: Counter[tuple[str, str]] = Counter()
i = 0
while i < len(events):
    t0, act, _ = events[i]
    if act != "C":
        i += 1
        continue
    j = i
    while j < len(events) and events[j][1] == "C" and events[j][0] - t0 < 0.0002:
        j += 1
    reads = [k for k in range(i, j) if events[k][2]]
    after = range(j, len(events))
    next_d = next((events[k][0] for k in after if events[k][1] == "D"), None)
    next_ri = next((events[k][0] for k in after if events[k][1] == "I" and events[k][2]), None)
    if reads and next_d is not None and next_ri is not None:
        where = "first" if reads[0] == i else "not first"
        order[(where, "the reader" if next_ri < next_d else "the dispatch")] += 1
    i = j
for (where, who), n in sorted(order.items()):
    print(f"{sched}: clumps whose read completed {where}: {who} went next, {n} times")
EOF
done
