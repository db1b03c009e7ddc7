#!/bin/bash
# The one-tag race seen from the guest's CPU scheduler (6.12, EEVDF): a QD1 reader beside a
# QD32 writer (the fidelity matrix's a-r1) on a depth-1 null_blk, with tag-race-eevdf.bt
# attached: at each completion of a read while the writer waits for a request, what ran then,
# the order the tasks ran in until the next request, and their EEVDF state as kblockd's worker
# leaves the CPU (docs/notebooks/fidelity.md, "6.12's race, traced").
#   ./vlab run --scratch --kernel 6.12 --cpus 1 --memory 2G \
#     --device null_blk:irqmode=2,completion_nsec=1000000,hw_queue_depth=1,submit_queues=1,size=1024 \
#     -- bash lab/scripts/tag-race-eevdf.sh mq-deadline
# The probes cost the guest CPU: the writer's share of the races is the traced run's (it rose
# from ~2 % to ~9 % as probes were added), not the matrix's; tag-race.sh counts it untraced.
set -euo pipefail
dev=$(echo "$VLAB_DEVICES" | cut -d' ' -f1); name=$(basename "$dev")
for s in "$@"; do
  modprobe -q "$s" 2>/dev/null || insmod "kernel/build/$(uname -r)/veloces.ko" 2>/dev/null || true
  echo "$s" > "/sys/block/$name/queue/scheduler"
  bpftrace "$(dirname "$0")/tag-race-eevdf.bt" > "$VLAB_OUT/bt-$s.txt" 2>&1 &
  bt=$!
  for _ in $(seq 60); do grep -q Attaching "$VLAB_OUT/bt-$s.txt" && break; sleep 1; done
  sleep 2
  DEV=$dev WRITER_DEPTH=32 fio --output-format=json --output="$VLAB_OUT/fio-$s.json" \
    "$(dirname "$0")/tag-race.fio"
  kill -INT "$bt" 2>/dev/null || true  # it may have stopped already
  wait "$bt" || true
  echo "== $s"; cat "$VLAB_OUT/bt-$s.txt"
done
