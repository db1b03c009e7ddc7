#!/bin/bash
# vsim beside MQSim (CMU-SAFARI/MQSim; docs/sim.md, "The simulator beside the lab and
# beside MQSim"). Not part of `make test`: it needs an MQSim checkout, which is not
# downloaded here (commit 7ec40e3 was used) and never committed.
#
#   sim/peers/mqsim/run.sh /path/to/MQSim [OUTDIR]      (or MQSIM_SRC=/path/to/MQSim)
#
# Copies the source to OUTDIR/src and builds it there with its own Makefile (g++ -O3),
# builds vsim (--release), then runs both on each geometry x workload with
# /usr/bin/time -v and prints one table (wall, requests/s, peak RSS). Geometries:
#   mqsim    MQSim's default ssdconfig.xml as shipped (8 channels x 4 chips x 2 dies x
#            2 planes x 2048 blocks x 256 pages of 8 KiB = 512 GiB); vsim `preset=mqsim`
#   mlc_16g  the same file cut to vsim's `mlc_16g` geometry (1 die a chip, 256 blocks,
#            4 KiB pages = 16 GiB); vsim `preset=mqsim` with that geometry
# Workloads (one request = one page, aligned, one flow, MQSim's QUEUE_DEPTH generator at
# QD 32, working set 100 %, no initial occupancy; vsim: one job, direct=1, noop):
#   mix70   random 70 % reads;  randread  random reads;  seqwrite  sequential writes
# Both devices start fresh (MQSim's preconditioning is off: with it on, 7ec40e3 stops
# with "Inconsistency in the global mapping table when locking an LPA", its issue #75).
# Environment: REQUESTS (2000000), GEOMETRIES ("mqsim mlc_16g"), WORKLOADS
# ("mix70 randread seqwrite"), REPEAT (1: each run's wall is the median of REPEAT runs),
# VSIM (a vsim binary to use instead of building target/release/vsim).
set -euo pipefail
SRC=$(cd "${1:-${MQSIM_SRC:?usage: run.sh MQSIM_DIR [OUTDIR] (or MQSIM_SRC=MQSIM_DIR)}}" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
OUT=$(mkdir -p "${2:-$ROOT/build/peers/mqsim}" && cd "${2:-$ROOT/build/peers/mqsim}" && pwd)
N=${REQUESTS:-2000000}
GEOMETRIES=${GEOMETRIES:-mqsim mlc_16g}
WORKLOADS=${WORKLOADS:-mix70 randread seqwrite}
REPEAT=${REPEAT:-1}

# MQSim, built out of the source tree (its Makefile writes build/ beside src/).
if [ ! -x "$OUT/src/MQSim" ]; then
  rm -rf "$OUT/src" && mkdir -p "$OUT/src"
  (cd "$SRC" && tar -c --exclude=./build --exclude=./MQSim .) | tar -x -C "$OUT/src"
  make -C "$OUT/src" -j2 >"$OUT/mqsim-build.log" 2>&1 || { tail "$OUT/mqsim-build.log"; exit 1; }
fi
if [ -z "${VSIM:-}" ]; then
  (cd "$ROOT/sim" && cargo build --release --locked -q -p vsim-cli)
  VSIM="$ROOT/sim/target/release/vsim"
fi

# MQSim's ssdconfig.xml for a geometry (the shipped file, edited in place of values).
ssdconfig() {
  local f="$SRC/ssdconfig.xml"
  case $1 in
    mqsim) sed -e 's|<Enabled_Preconditioning>[^<]*<|<Enabled_Preconditioning>false<|' "$f" ;;
    mlc_16g) sed -e 's|<Enabled_Preconditioning>[^<]*<|<Enabled_Preconditioning>false<|' \
                 -e 's|<Die_No_Per_Chip>[^<]*<|<Die_No_Per_Chip>1<|' \
                 -e 's|<Block_No_Per_Plane>[^<]*<|<Block_No_Per_Plane>256<|' \
                 -e 's|<Page_Capacity>[^<]*<|<Page_Capacity>4096<|' "$f" ;;
    *) echo "unknown geometry $1" >&2; exit 2 ;;
  esac
}
# vsim's device for a geometry: MQSim's settings (preset=mqsim), fresh.
vsimdev() {
  case $1 in
    mqsim) echo "ssd:preset=mqsim,precondition=none" ;;
    mlc_16g) echo "ssd:preset=mqsim,precondition=none,dies_per_channel=4,blocks_per_plane=256,page_size=4k,nand_page=4k" ;;
  esac
}
page_sectors() { case $1 in mqsim) echo 16 ;; mlc_16g) echo 8 ;; esac; }
dies() { case $1 in mqsim) echo 0,1 ;; mlc_16g) echo 0 ;; esac; }

workload_xml() { # geometry workload
  local rp dist s
  s=$(page_sectors "$1")
  case $2 in
    mix70) rp=70 dist=RANDOM_UNIFORM ;;
    randread) rp=100 dist=RANDOM_UNIFORM ;;
    seqwrite) rp=0 dist=STREAMING ;;
    *) echo "unknown workload $2" >&2; exit 2 ;;
  esac
  cat <<EOF
<?xml version="1.0" encoding="us-ascii"?>
<MQSim_IO_Scenarios><IO_Scenario><IO_Flow_Parameter_Set_Synthetic>
<Priority_Class>HIGH</Priority_Class>
<Device_Level_Data_Caching_Mode>WRITE_CACHE</Device_Level_Data_Caching_Mode>
<Channel_IDs>0,1,2,3,4,5,6,7</Channel_IDs><Chip_IDs>0,1,2,3</Chip_IDs>
<Die_IDs>$(dies "$1")</Die_IDs><Plane_IDs>0,1</Plane_IDs>
<Initial_Occupancy_Percentage>0</Initial_Occupancy_Percentage>
<Working_Set_Percentage>100</Working_Set_Percentage>
<Synthetic_Generator_Type>QUEUE_DEPTH</Synthetic_Generator_Type>
<Read_Percentage>$rp</Read_Percentage>
<Address_Distribution>$dist</Address_Distribution>
<Percentage_of_Hot_Region>0</Percentage_of_Hot_Region>
<Generated_Aligned_Addresses>true</Generated_Aligned_Addresses>
<Address_Alignment_Unit>$s</Address_Alignment_Unit>
<Request_Size_Distribution>FIXED</Request_Size_Distribution>
<Average_Request_Size>$s</Average_Request_Size><Variance_Request_Size>0</Variance_Request_Size>
<Seed>798</Seed>
<Average_No_of_Reqs_in_Queue>32</Average_No_of_Reqs_in_Queue>
<Intensity>32768</Intensity>
<Stop_Time>0</Stop_Time>
<Total_Requests_To_Generate>$N</Total_Requests_To_Generate>
</IO_Flow_Parameter_Set_Synthetic></IO_Scenario></MQSim_IO_Scenarios>
EOF
}

vsim_toml() { # geometry workload
  local rw=randrw mix=70 bs
  bs=$(($(page_sectors "$1") * 512))
  case $2 in randread) rw=randread ;; seqwrite) rw=write ;; esac
  cat <<EOF
[[job]]
name = "$2"
rw = "$rw"
rwmixread = $mix
bs = "$bs"
iodepth = 32
direct = 1
number_ios = $N
EOF
}

# `/usr/bin/time -v` of a command, REPEAT times: "wall_s rss_kb" (median wall, max RSS).
timed() {
  local log=$1; shift
  local walls=() rss=0 i w r
  for ((i = 0; i < REPEAT; i++)); do
    /usr/bin/time -v "$@" >"$log" 2>"$log.time" || { tail -5 "$log" "$log.time" >&2; return 1; }
    w=$(awk -F': ' '/Elapsed \(wall clock\)/ {n = split($2, a, ":"); s = 0; for (k = 1; k <= n; k++) s = s * 60 + a[k]; print s}' "$log.time")
    r=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$log.time")
    walls+=("$w"); ((r > rss)) && rss=$r
  done
  printf '%s\n' "${walls[@]}" | sort -g | awk -v rss="$rss" '{a[NR] = $1} END {print a[int((NR + 1) / 2)], rss}'
}

printf '| geometry | workload | requests | MQSim wall | MQSim req/s | MQSim peak RSS | vsim wall | vsim req/s | vsim peak RSS | speed ratio | memory ratio |\n'
printf '|---|---|---|---|---|---|---|---|---|---|---|\n'
for g in $GEOMETRIES; do
  for w in $WORKLOADS; do
    d="$OUT/$g-$w"
    mkdir -p "$d"
    ssdconfig "$g" >"$d/ssdconfig.xml"
    workload_xml "$g" "$w" >"$d/workload.xml"
    vsim_toml "$g" "$w" >"$d/vsim.toml"
    read -r mw mr < <(cd "$d" && timed "$d/mqsim.out" "$OUT/src/MQSim" -i "$d/ssdconfig.xml" -w "$d/workload.xml")
    read -r vw vr < <(timed "$d/vsim.out" "$VSIM" run -q --device "$(vsimdev "$g")" --scheduler noop "$d/vsim.toml" --json "$d/vsim.json")
    awk -v g="$g" -v w="$w" -v n="$N" -v mw="$mw" -v mr="$mr" -v vw="$vw" -v vr="$vr" 'BEGIN {
      printf "| %s | %s | %d | %.2f s | %.0f K | %.0f MB | %.2f s | %.0f K | %.1f MB | %.1f x | %.1f x |\n",
        g, w, n, mw, n / mw / 1e3, mr / 1024, vw, n / vw / 1e3, vr / 1024, mw / vw, mr / vr }'
  done
done
