#!/bin/bash
# A vlab compare script job (docs/lab.md, "Script jobs") that runs another script job and,
# while its `run` phase lasts, samples where the workload's threads wait and where the
# block layer holds its requests: what a scheduler's figure cannot say by itself.
#
#   vlab compare --device vsim:ssd:...,dilation=50 --job lab/jobs/waits.sh ...
#
# The job it wraps: `inner` below, a path from the repository's root (the guest's working
# directory; compare runs a copy of this file from its output folder, and passes no
# environment into the guest: copy this file and edit `inner` to wrap another job).
#
# Every `every` seconds it reads, in the guest:
#   - each thread of the processes named `comm`: its kernel stack
#     (/proc/PID/task/TID/stack), classed by the first of these its stack contains anywhere:
#     dirty   balance_dirty_pages (a writer throttled while writeback catches up),
#     wb      a wait for writeback to finish (a page under writeback, an ordered extent),
#     tag     blk_mq_get_tag (no request free: the scheduler's or the driver's tags all taken),
#     lock    down_read/down_write, mutexes (an inode's lock: webserver's 100 threads share one log),
#     page    folio/page waits, filemap reads, io_schedule (waiting for a read from the device),
#     other   any other sleep (its first frame past the scheduler's, counted per sample in
#             the samples' file + .other); run: a thread whose state is R;
#   - the device: requests the driver holds (/sys/block/DEV/inflight) and requests allocated
#     from the scheduler's tags (debugfs hctx*/sched_tags, "busy="; none has none, so 0):
#     their difference is what the scheduler holds;
#   - /proc/vmstat nr_dirty and nr_writeback (pages).
# It prints the means as `vlab-metric` lines beside the inner job's (waits_*), and keeps
# every sample in OUT/<job folder>/waits/<scheduler>-<time>.txt for a closer look.
set -euo pipefail
phase=$1 dev=$2
# seed 001's btrfs webserver cell's job, as `./vlab repro seed001` writes it (until 2026-12-06 the
# run was in results/repro/seed001-full/, now archive/unverified-results/seed001-full/)
inner=build/repro/seed001/jobs/btrfs-webserver.sh
every=2          # seconds between samples
comm=filebench   # the workload's process name
d=$(basename "$(readlink -f "$dev")")

sample() {
    local dbg=/sys/kernel/debug/block/$d
    while :; do
        local pids
        pids=$(pgrep -x "$comm" | tr '\n' ' ' || true)
        local files=()
        for p in $pids; do files+=(/proc/"$p"/task/*/stat /proc/"$p"/task/*/stack); done
        local classes=""
        if [ ${#files[@]} -gt 0 ]; then
            # One awk over every thread's stat and stack (no process per thread: the guest's
            # CPU is emulated): state R counts as run, else the first class its stack names.
            # A thread that ends between the listing and the read loses the sample (mawk
            # stops at a file it cannot open); it is left out of the means.
            classes=$(awk -v now="$(date +%s)" -v others="$log.other" '
                { dir = FILENAME; sub(/\/[a-z]+$/, "", dir) }
                FILENAME ~ /\/stat$/ { state[dir] = $3; next }
                /balance_dirty_pages/ { f[dir, "dirty"] = 1 }
                /folio_wait_writeback|wait_on_page_writeback|filemap_fdatawait|wait_ordered/ { f[dir, "wb"] = 1 }
                /blk_mq_get_tag/ { f[dir, "tag"] = 1 }
                /rwsem_down|down_write|down_read|mutex_lock|inode_lock/ { f[dir, "lock"] = 1 }
                /folio_wait|wait_on_page|filemap_read|filemap_get_pages|io_schedule|read_pages/ { f[dir, "page"] = 1 }
                top[dir] == "" && $2 !~ /^(__)?schedule|^io_schedule|^do_nanosleep|^hrtimer_nanosleep/ { fn = $2; sub(/\+.*/, "", fn); top[dir] = fn }
                END {
                    n = split("dirty wb tag lock page", order, " ")
                    for (t in state) {
                        k = "other"
                        if (state[t] == "R") k = "run"
                        else for (i = 1; i <= n; i++) if ((t, order[i]) in f) { k = order[i]; break }
                        c[k]++
                        if (k == "other" && top[t] != "") o[top[t]]++
                    }
                    for (fn in o) printf "%s %s %d\n", now, fn, o[fn] >> others
                    printf "%d %d %d %d %d %d %d\n", c["dirty"], c["wb"], c["tag"], c["lock"], c["page"], c["other"], c["run"]
                }' "${files[@]}" 2>/dev/null || true)
        fi
        [ -n "$classes" ] || classes="- - - - - - -"
        local inflight busy
        inflight=$(awk '{ print $1 + $2 }' "/sys/block/$d/inflight")
        busy=$(awk -F= '$1 == "busy" { s += $2 } END { print s + 0 }' "$dbg"/hctx*/sched_tags 2>/dev/null || echo 0)
        local vm
        vm=$(awk '$1 == "nr_dirty" { d = $2 } $1 == "nr_writeback" { w = $2 } END { print d + 0, w + 0 }' /proc/vmstat)
        echo "$(date +%s.%N) $classes $inflight $busy $vm"
        sleep "$every"
    done
}

case $phase in
setup | teardown)
    exec bash "$inner" "$phase" "$dev" ;;
run)
    mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug
    sched=$(sed -n 's/.*\[\(.*\)\].*/\1/p' "/sys/block/$d/queue/scheduler")
    keep=$(dirname "$0")/waits
    mkdir -p "$keep"
    log=$keep/$sched-$(date +%s).txt
    echo "# t dirty wb tag lock page other run dev_inflight allocated nr_dirty nr_writeback" > "$log"
    : > "$log.other"
    sample >> "$log" &
    sampler=$!
    status=0
    bash "$inner" run "$dev" || status=$?
    kill "$sampler" 2>/dev/null || true
    wait "$sampler" 2>/dev/null || true
    # Means over the samples; thread classes as shares of the sampled threads (per cent).
    awk '!/^#/ && NF == 12 {
            n++; tot = 0
            if ($2 != "-") for (i = 2; i <= 8; i++) tot += $i
            if (tot > 0) { m++; for (i = 2; i <= 8; i++) share[i] += 100 * $i / tot }
            inf += $9; held += ($10 > $9 ? $10 - $9 : 0); dirty += $11; wb += $12
        }
        END {
            if (n == 0) exit
            split("dirty wb tag lock page other run", name, " ")
            for (i = 2; i <= 8; i++) printf "vlab-metric waits_%s_pct %.1f\n", name[i - 1], (m ? share[i] / m : 0)
            printf "vlab-metric waits_dev_inflight %.2f\n", inf / n
            printf "vlab-metric waits_sched_held %.2f\n", held / n
            printf "vlab-metric waits_nr_dirty %.0f\n", dirty / n
            printf "vlab-metric waits_nr_writeback %.0f\n", wb / n
            printf "vlab-metric waits_samples %d\n", n
        }' "$log"
    exit $status ;;
*)
    echo "usage: $0 setup|run|teardown DEVICE" >&2; exit 2 ;;
esac
