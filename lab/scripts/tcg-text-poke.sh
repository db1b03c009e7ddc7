#!/bin/bash
# The reproducer for the multi-threaded TCG hang in docs/lab.md ("TCG and text patching"):
#   ./vlab run --kernel 6.1 --timeout 300 -- bash lab/scripts/tcg-text-poke.sh 150
# with VLAB_TCG_THREAD=multi it hangs within seconds (QEMU 7.2); single-threaded it finishes.
# Text-patching stress: toggle tracepoints (static keys + static calls) while both vCPUs
# schedule heavily. Prints iterations; a hang shows as a guest timeout.
T=/sys/kernel/tracing
mountpoint -q $T || mount -t tracefs nodev $T
dur=${1:-120}
( while :; do sleep 0.001; done ) & p1=$!
( while :; do sleep 0.001; done ) & p2=$!
( while :; do dd if=/dev/zero of=/dev/null bs=4k count=2000 status=none; done ) & p3=$!
end=$((SECONDS+dur)); n=0
while [ $SECONDS -lt $end ]; do
  for e in block/block_rq_issue block/block_rq_insert block/block_rq_complete sched/sched_switch sched/sched_wakeup; do
    echo 1 > $T/events/$e/enable; echo 0 > $T/events/$e/enable
  done
  n=$((n+1)); [ $((n % 50)) = 0 ] && echo "iter $n at $SECONDS s"
done
kill $p1 $p2 $p3; echo "done $n iterations"
