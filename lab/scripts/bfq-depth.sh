#!/bin/bash
# bfq's depth for a sync writer beside a weight-raised reader: during the fidelity matrix's
# a-r1 job (tag-race.fio: a QD1 reader beside a QD32 writer, 4 s after a 1-s ramp) under bfq and mq-deadline,
# sample the scheduler requests allocated and the driver tags busy (debugfs `busy=` of
# hctx0/sched_tags and hctx0/tags) every ~3 ms (docs/notebooks/fidelity.md, "bfq's raised
# depths"). The sampler takes the guest's CPU: its counts show which values occur, not how often.
#   ./vlab run --scratch --kernel 6.12 --cpus 1 \
#     --device null_blk:irqmode=2,completion_nsec=4000000,hw_queue_depth=4,submit_queues=1,size=1024 \
#     -- bash lab/scripts/bfq-depth.sh
set -euo pipefail
dev=$(echo "$VLAB_DEVICES" | cut -d' ' -f1); name=$(basename "$dev")
for s in bfq mq-deadline; do
  modprobe -q "$s" 2>/dev/null || true
  echo "$s" > "/sys/block/$name/queue/scheduler"
  python3 - "$name" "$s" <<'PY' &
import collections, os, sys, time
name, s = sys.argv[1:]
h = collections.Counter(); hr = collections.Counter()
end = time.monotonic() + 5.5
time.sleep(1.2)
base = f"/sys/kernel/debug/block/{name}/hctx0"
if not os.path.isdir(base):
    os.system("mount -t debugfs none /sys/kernel/debug 2>/dev/null")
def busy(path):
    with open(path) as f:
        for ln in f:
            ln = ln.strip()
            if ln.startswith("busy="):
                return int(ln.split("=")[1])
    return -1
while time.monotonic() < end:
    h[busy(f"{base}/sched_tags")] += 1
    hr[busy(f"{base}/tags")] += 1
    time.sleep(0.003)
n = sum(h.values())
print(f"{s}: samples {n}; scheduler requests allocated: " + ", ".join(f"{k}: {100*v/n:.1f} %" for k, v in sorted(h.items())))
print(f"{s}: driver tags busy: " + ", ".join(f"{k}: {100*v/n:.1f} %" for k, v in sorted(hr.items())))
PY
  DEV=$dev WRITER_DEPTH=32 fio --output-format=json --output=/tmp/f-$s.json \
    "$(dirname "$0")/tag-race.fio" > /dev/null
  wait
  python3 -c "
import json; d=json.load(open('/tmp/f-$s.json'))
j={x['jobname']:x for x in d['jobs']}
print('$s: reads', j['reader']['read']['total_ios'], 'writes', j['writer']['write']['total_ios'])"
  cp /tmp/f-$s.json "$VLAB_OUT/" 2>/dev/null || true
done
