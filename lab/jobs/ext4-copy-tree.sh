#!/bin/bash
# A vlab compare script job (docs/lab.md, "Script jobs"): copy a directory tree of
# ~800 files (6.8 MiB: the host's /usr/include/linux and /usr/include/asm-generic) onto a fresh
# ext4 and sync. `run` is measured; it prints the copy's time (seconds, lower is better).
#   vlab compare --device vsim:cheapflash:size=768m --job lab/jobs/ext4-copy-tree.sh ...
set -euo pipefail
phase=$1 dev=$2
mnt=/tmp/vlab-copy-tree
case $phase in
setup)
    mkdir -p $mnt
    # Every inode table written now (no lazy init in the background during `run`).
    mkfs.ext4 -q -F -E nodiscard,lazy_itable_init=0,lazy_journal_init=0 "$dev"
    mount "$dev" $mnt
    sync
    echo 3 > /proc/sys/vm/drop_caches ;;
run)
    start=$(date +%s.%N)
    tar -C /usr/include -cf - linux asm-generic | tar -C $mnt -xf -
    sync
    end=$(date +%s.%N)
    echo "vlab-metric copy_s $(echo "$end - $start" | bc -l)"
    echo "vlab-metric files $(find $mnt -type f | wc -l)" ;;
teardown)
    umount $mnt ;;
*)
    echo "usage: $0 setup|run|teardown DEVICE" >&2; exit 2 ;;
esac
