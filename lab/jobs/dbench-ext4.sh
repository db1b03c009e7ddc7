#!/bin/bash
# A vlab compare script job (docs/lab.md, "Script jobs"): dbench with 8 clients for
# DBENCH_S seconds (default 15) on a fresh ext4. Prints dbench's throughput (MB/s,
# higher is better) and its maximum operation latency (ms).
set -euo pipefail
phase=$1 dev=$2
mnt=/tmp/vlab-dbench
case $phase in
setup)
    mkdir -p $mnt
    mkfs.ext4 -q -F -E nodiscard,lazy_itable_init=0,lazy_journal_init=0 "$dev"
    mount "$dev" $mnt
    sync ;;
run)
    loadfile=$(ls /usr/share/dbench/client.txt* 2>/dev/null | head -1)
    out=$(dbench -D $mnt -t "${DBENCH_S:-15}" -c "$loadfile" 8 2>&1)
    tput=$(echo "$out" | sed -n 's/^Throughput \([0-9.]*\) MB\/sec.*max_latency=\([0-9.]*\) ms.*/\1/p')
    maxlat=$(echo "$out" | sed -n 's/^Throughput \([0-9.]*\) MB\/sec.*max_latency=\([0-9.]*\) ms.*/\2/p')
    if [ -z "$tput" ]; then echo "$out" | tail -20 >&2; exit 1; fi
    echo "vlab-metric dbench_mb_s $tput"
    echo "vlab-metric dbench_max_lat_ms $maxlat" ;;
teardown)
    umount $mnt ;;
*)
    echo "usage: $0 setup|run|teardown DEVICE" >&2; exit 2 ;;
esac
