#!/bin/bash
# vlab trace's known workload (lab/tests/test_etrace.py): three files of 16 KiB, 1 MiB and
# 8 MiB written and fsynced, the page cache dropped, the 1 MiB one read back.
set -e
dd if=/dev/urandom of=small bs=4k count=4 conv=fsync status=none
dd if=/dev/urandom of=medium bs=64k count=16 conv=fsync status=none
dd if=/dev/urandom of=large bs=1M count=8 conv=fsync status=none
sync; echo 3 > /proc/sys/vm/drop_caches
cat medium > /dev/null
