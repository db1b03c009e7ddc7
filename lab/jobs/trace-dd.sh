#!/bin/bash
# The seed's tracing-overhead experiment (seed 002 §3, Figures 3.2-3.3, Table 3.2) for
# `vlab trace`: write TOTAL_KIB KiB with dd in blocks of BS bytes (fsync at the end), drop
# the page cache, read it back in blocks of BS bytes. Prints "Throughput X MB/sec" (the
# bytes written and read over the time of both dd runs), which `--overhead` compares.
# Usage: trace-dd.sh BS TOTAL_KIB
set -euo pipefail
bs=$1 total=$(($2 * 1024))
count=$((total / bs))
t0=$(date +%s.%N)
dd if=/dev/zero of=ddfile bs="$bs" count="$count" conv=fsync status=none
t1=$(date +%s.%N)
sync; echo 3 > /proc/sys/vm/drop_caches
t2=$(date +%s.%N)
dd if=ddfile of=/dev/null bs="$bs" status=none
t3=$(date +%s.%N)
rm -f ddfile
echo "$total $t0 $t1 $t2 $t3" | awk '{ s = ($3 - $2) + ($5 - $4); printf "Throughput %.3f MB/sec (write %.3f s, read %.3f s)\n", 2 * $1 / s / 1e6, $3 - $2, $5 - $4 }'
