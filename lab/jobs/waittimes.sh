#!/bin/bash
# A vlab compare script job (docs/lab.md, "Script jobs") that runs another script job and,
# while its `run` phase lasts, times with bpftrace how long the workload's threads wait and
# how long the block layer holds requests before the driver gets them: the durations that
# waits.sh's samples cannot give (a sample says a thread waits, not for how long).
#
#   vlab compare --device vsim:ssd:...,dilation=50 --job lab/jobs/waittimes.sh ...
#
# The job it wraps: `inner` below, a path from the repository's root (the guest's working
# directory; compare runs a copy of this file from its output folder and passes no
# environment into the guest: copy this file and edit `inner` to wrap another job).
#
# Timed, in the guest's wall time (a dilated device's model time is that over the dilation):
#   lock   btrfs_inode_lock, entry to return, in threads named `comm` (all of webserver's
#          100 threads append to one log file under its inode lock);
#   wb     folio_wait_writeback, entry to return, in those threads (btrfs keeps pages
#          stable while under writeback: an append to such a page waits);
#   held   per request of the device, from its allocation (rq->start_time_ns, set where the
#          queue keeps I/O statistics) to blk_mq_start_request: what the scheduler (or the
#          plug) held it, reads and writes apart;
#   dev    from blk_mq_start_request to its completion (the first blk_update_request; the
#          kernel's __blk_mq_end_request is not traceable on 6.12): the device.
# It prints count, total and (but the device's) largest of each in whole ms of guest wall
# time as `vlab-metric` lines (waittimes_*), beside the inner job's (compare's report turns
# the `_ms` ones into model time on a served device, as for every script metric), and keeps
# them with bpftrace's histograms (ms of wall time) in
# OUT/<job folder>/waittimes/<scheduler>-<time>.txt.
set -euo pipefail
phase=$1 dev=$2
# seed 001's btrfs webserver cell's job, as `./vlab repro seed001` writes it (until 2026-12-06 the
# run was in results/repro/seed001-full/, now archive/unverified-results/seed001-full/)
inner=build/repro/seed001/jobs/btrfs-webserver.sh
comm=filebench   # the workload's process name

case $phase in
setup | teardown)
    exec bash "$inner" "$phase" "$dev" ;;
run)
    d=$(basename "$(readlink -f "$dev")")
    read -r maj min < <(stat -L -c '%t %T' "$dev")
    devt=$(( (16#$maj << 20) | 16#$min ))   # the kernel's dev_t: MKDEV(major, minor)
    sched=$(sed -n 's/.*\[\(.*\)\].*/\1/p' "/sys/block/$d/queue/scheduler")
    keep=$(dirname "$0")/waittimes
    mkdir -p "$keep"
    log=$keep/$sched-$(date +%s).txt
    cat > /tmp/vlab-waittimes.bt <<'BT'
kprobe:btrfs_inode_lock /comm == str($1)/ { @lt[tid] = nsecs; }
kretprobe:btrfs_inode_lock /@lt[tid]/
{
  $d = (nsecs - @lt[tid]) / 1000; delete(@lt[tid]);
  @lock_n = @lock_n + 1; @lock_us = @lock_us + $d; if ($d > @lock_max) { @lock_max = $d; }
  @lock_ms = hist($d / 1000);
}
kprobe:folio_wait_writeback /comm == str($1)/ { @wt[tid] = nsecs; }
kretprobe:folio_wait_writeback /@wt[tid]/
{
  $d = (nsecs - @wt[tid]) / 1000; delete(@wt[tid]);
  @wb_n = @wb_n + 1; @wb_us = @wb_us + $d; if ($d > @wb_max) { @wb_max = $d; }
  @wb_ms = hist($d / 1000);
}
kfunc:blk_mq_start_request
{
  $r = (struct request *)args->rq;
  $op = $r->cmd_flags & 0xff;   // REQ_OP_READ 0, REQ_OP_WRITE 1
  if ($r->q->disk->part0->bd_dev == $2 && $op <= 1) {
    @start[$r] = nsecs;
    if ($r->start_time_ns > 0 && nsecs > $r->start_time_ns) {
      $h = (nsecs - $r->start_time_ns) / 1000;
      @held_n[$op] = @held_n[$op] + 1; @held_us[$op] = @held_us[$op] + $h;
      if ($h > @held_max[$op]) { @held_max[$op] = $h; }
      @held_ms[$op] = hist($h / 1000);   // [0] reads, [1] writes
    }
  }
}
kfunc:blk_update_request /@start[args->req]/
{
  $r = (struct request *)args->req;
  $op = $r->cmd_flags & 0xff;
  $d = (nsecs - @start[$r]) / 1000; delete(@start[$r]);
  @dev_n[$op] = @dev_n[$op] + 1; @dev_us[$op] = @dev_us[$op] + $d;
  if ($d > @dev_max[$op]) { @dev_max[$op] = $d; }
}
END
{
  // bpftrace has no floating point: totals in whole milliseconds.
  printf("vlab-metric waittimes_lock_n %d\nvlab-metric waittimes_lock_ms %d\n", @lock_n, @lock_us / 1000);
  printf("vlab-metric waittimes_lock_max_ms %d\n", @lock_max / 1000);
  printf("vlab-metric waittimes_wb_n %d\nvlab-metric waittimes_wb_ms %d\n", @wb_n, @wb_us / 1000);
  printf("vlab-metric waittimes_wb_max_ms %d\n", @wb_max / 1000);
  printf("vlab-metric waittimes_held_read_n %d\nvlab-metric waittimes_held_read_ms %d\n", @held_n[0], @held_us[0] / 1000);
  printf("vlab-metric waittimes_held_read_max_ms %d\n", @held_max[0] / 1000);
  printf("vlab-metric waittimes_held_write_n %d\nvlab-metric waittimes_held_write_ms %d\n", @held_n[1], @held_us[1] / 1000);
  printf("vlab-metric waittimes_held_write_max_ms %d\n", @held_max[1] / 1000);
  printf("vlab-metric waittimes_dev_read_n %d\nvlab-metric waittimes_dev_read_ms %d\n", @dev_n[0], @dev_us[0] / 1000);
  printf("vlab-metric waittimes_dev_write_n %d\nvlab-metric waittimes_dev_write_ms %d\n", @dev_n[1], @dev_us[1] / 1000);
  clear(@lt); clear(@wt); clear(@start);
  clear(@lock_n); clear(@lock_us); clear(@lock_max); clear(@wb_n); clear(@wb_us); clear(@wb_max);
  clear(@held_n); clear(@held_us); clear(@held_max); clear(@dev_n); clear(@dev_us); clear(@dev_max);
}
BT
    bpftrace /tmp/vlab-waittimes.bt "$comm" "$devt" > "$log" 2>&1 &
    tracer=$!
    # Attached before the workload starts: bpftrace prints "Attaching N probes..." first.
    for _ in $(seq 600); do
        grep -q '^Attaching' "$log" && break
        kill -0 "$tracer" 2>/dev/null || { cat "$log" >&2; echo "waittimes: bpftrace did not start" >&2; exit 1; }
        sleep 0.5
    done
    grep -q '^Attaching' "$log" || { kill "$tracer"; echo "waittimes: bpftrace not attached in 300 s" >&2; exit 1; }
    status=0
    bash "$inner" run "$dev" || status=$?
    kill -INT "$tracer"
    wait "$tracer" || { cat "$log" >&2; echo "waittimes: bpftrace failed" >&2; exit 1; }
    grep '^vlab-metric waittimes_' "$log"
    exit $status ;;
*)
    echo "usage: $0 setup|run|teardown DEVICE" >&2; exit 2 ;;
esac
