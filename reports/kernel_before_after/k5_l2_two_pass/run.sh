#!/bin/bash
# Reproduces one of the four device calls (nvidia-h100-x1) in a scratch folder; outputs go to $OUT (default: the
# scratch folder). As run, except that the calls built inside the folder they were carried in.
#   1: probe.cu, the L2 two-pass form against copy / read-only / write-only (run 1 had no row loop: its grid was
#      one cluster a row, which is the loop with D = R)
#   2: probe.cu with the row loop (D), the persisting L2 set-aside, ncu of six configurations
#   3: probe3.cu: the committed register kernel with __fdiv_rn against a per-call Markstein division; the L2 form
#   4: probe4.cu (probe3.cu + probe4.patch): the same with the reciprocal computed once a row (k5_hoist.patch)
#   5: probe5.cu: the committed register kernel against k5h.cuh (part of each slice in registers, the rest from L2)
#   6: probe6.cu: the committed register kernel's time against its number of rows (where the waves end)
#   7: probe6.cu built with -lineinfo under ncu: one wave (28 rows of 128256) and 64 rows
#   8: probe7.cu (probe4.cu + probe7.patch): the committed register kernel against k5_argmax.patch (argmax by
#      max.NaN and one backward scan instead of a branchy step an entry), argmax edge entries added
# The kernel the runs measured is K5's device code as 77f9273 committed it: ../k5_lean/k5_base.cuh, which extract.py
# cut from that source (the patches here apply to it). The source has changed since (08010d1), so it is not cut again.
set -eo pipefail
step=${1:?step 1-8}
here=$(cd "$(dirname "$0")" && pwd)
W=$(mktemp -d)
OUT=${OUT:-$W}
cp "$here"/*.cu "$here"/*.cuh "$here"/*.patch "$here"/*.py "$W"/
cd "$W"
NVCC="nvcc -O3 -std=c++17 -gencode=arch=compute_90,code=sm_90 -Xptxas -v"
nvidia-smi --query-gpu=name,driver_version --format=csv
case $step in
  1|2)
    $NVCC probe.cu -o probe > "$OUT/build_run$step.txt" 2>&1
    ./probe 15 > "$OUT/probe_run$step.txt" 2>&1
    if [ "$step" = 2 ]; then
      PROBE_PERSIST_MB=31 ./probe 15 > "$OUT/probe_run2_persist.txt" 2>&1
      for cfg in "verify_B1_Q64_V128256 nt256_u4_b4 8 64 1 3 1" "verify_B1_Q64_V128256 nt256_u4_b4 16 32 1 3 1" \
                 "verify_B1_Q64_V128256 nt256_u4_b4 8 32 1 3 1" "verify_B1_Q64_V128256 nt256_u4_b4 16 16 1 3 1" \
                 "draft_B32_Q8_V32768 nt512_u2_b4 1 256 1 3 0" "draft_B32_Q8_V32768 nt512_u2_b4 1 128 1 3 0"; do
        echo "### $cfg" >> "$OUT/ncu_run2.txt"
        PROBE_ONLY="$cfg" timeout 120 ncu -k regex:k5l2 -c 2 --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct,lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum,lts__t_sectors_srcunit_tex_op_read_lookup_miss.sum ./probe 1 >> "$OUT/ncu_run2.txt" 2>&1
      done
    fi
    grep -E "^==|^copy|best|^   " "$OUT/probe_run$step.txt" ;;
  3|4)
    cp "$here/../k5_lean/k5_base.cuh" k5_committed.cuh
    patch -s -o k5_hoist.cuh k5_committed.cuh k5_hoist.patch
    src=probe3.cu
    if [ "$step" = 4 ]; then patch -s -o probe4.cu probe3.cu probe4.patch; src=probe4.cu; fi
    $NVCC -fmad=false $src -o probe > "$OUT/build_run$step.txt" 2>&1
    cuobjdump -sass probe > probe.sass && python3 sasscount.py probe.sass | tee "$OUT/sass_run$step.txt"
    ./probe 2>&1 | tee "$OUT/probe${step}_run$step.txt" ;;
  5)
    cp "$here/../k5_lean/k5_base.cuh" k5_committed.cuh
    $NVCC -fmad=false probe5.cu -o probe > "$OUT/build_run5.txt" 2>&1
    ./probe 2>&1 | tee "$OUT/probe5_run5.txt" ;;
  6)
    cp "$here/../k5_lean/k5_base.cuh" k5_committed.cuh
    $NVCC -fmad=false probe6.cu -o probe > "$OUT/build_run6.txt" 2>&1
    ./probe 2>&1 | tee "$OUT/probe6_run6.txt" ;;
  7)
    cp "$here/../k5_lean/k5_base.cuh" k5_committed.cuh
    $NVCC -fmad=false -lineinfo probe6.cu -o probe > "$OUT/build_run7.txt" 2>&1
    for R in 28 64; do
      PROBE6_ONLY="128256 $R" timeout 200 ncu -k regex:k5r14 -c 1 --section SpeedOfLight --section WarpStateStats \
        --section SchedulerStats --section MemoryWorkloadAnalysis --section Occupancy --section LaunchStats \
        --section SourceCounters ./probe > "$OUT/ncu_run7_R$R.txt" 2>&1
    done
    grep -E "Duration|DRAM Throughput|Warp Cycles Per Issued|No Eligible|Issued Warp|Achieved Occupancy|Stall|stall" \
      "$OUT"/ncu_run7_R*.txt | head -60 ;;
  8)
    cp "$here/../k5_lean/k5_base.cuh" k5_committed.cuh
    patch -s -o k5_hoist.cuh k5_committed.cuh k5_hoist.patch
    patch -s -o k5_argmax.cuh k5_committed.cuh k5_argmax.patch
    patch -s -o probe4.cu probe3.cu probe4.patch
    patch -s -o probe7.cu probe4.cu probe7.patch
    $NVCC -fmad=false probe7.cu -o probe > "$OUT/build_run8.txt" 2>&1
    cuobjdump -sass probe > probe.sass && python3 sasscount.py probe.sass | tee "$OUT/sass_run8.txt"
    ./probe 2>&1 | tee "$OUT/probe7_run8.txt" ;;
esac
