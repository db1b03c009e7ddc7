#!/bin/bash
# Cross-check of vsim's demand-loaded map against FlashSim's DFTL (docs/sim-hints.md,
# "Validated"). Not part of `make test`: it needs a FlashSim checkout, which cannot be
# downloaded at build time here (a snapshot of github.com/MatiasBjorling/flashsim,
# commit 53098b0, was used), and Debian's libboost-dev.
#
#   sim/peers/flashsim-dftl/run.sh /path/to/flashsim [OUTDIR]
#
# Builds FlashSim unmodified and this driver, then runs L = 273,000 logical pages,
# 600,000 uniform random single-page requests at QD1 after a sequential fill, seed 1,
# CACHE_DFTL_LIMIT 2 / 20 / 50 / 100 translation pages (1 / 10 / 25 / 50 % of L),
# 100 % writes and 50/50, PLANE_SIZE 6400 (5 x L physical pages: no GC). Each run's
# SECONDHALF line has transW/req, which `vsim validate --group dftl` compares with ours.
set -euo pipefail
FS=$(cd "${1:?usage: run.sh FLASHSIM_DIR [OUTDIR]}" && pwd)
OUT=$(mkdir -p "${2:-build/peers/flashsim-dftl}" && cd "${2:-build/peers/flashsim-dftl}" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
make -C "$FS" -j2 CXXFLAGS="-Wall -c -std=c++11 -O2 -g" >/dev/null
objs=$(make -s -C "$FS" files | grep -v run_ | grep -v ssd.h | sed 's/\.cpp/.o/' | sed "s|^|$FS/|")
# shellcheck disable=SC2086
g++ -std=c++11 -O2 -I"$FS" "$HERE/driver.cpp" $objs -o "$OUT/driver"
for k in 2 20 50 100; do
  for rp in 0 50; do
    d="$OUT/cmt$k-read$rp"
    mkdir -p "$d"
    sed -e "s/^PLANE_SIZE .*/PLANE_SIZE 6400/" -e 's/^PAGE_ENABLE_DATA .*/PAGE_ENABLE_DATA 0/' \
        -e "s/^CACHE_DFTL_LIMIT .*/CACHE_DFTL_LIMIT $k/" "$FS/ssd.conf" > "$d/ssd.conf"
    (cd "$d" && "$OUT/driver" 273000 600000 "$rp" 1 > out.txt)
    echo "CACHE_DFTL_LIMIT $k, reads $rp %: $(grep '^SECONDHALF' "$d/out.txt" | grep -o 'hitRatio=[0-9.]*\|transW/req=[0-9.]*' | tr '\n' ' ')"
  done
done
