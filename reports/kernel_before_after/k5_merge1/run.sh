#!/bin/bash
# Reproduces this folder's probe call (nvidia-h100-x1) in a scratch folder; outputs go to $OUT (default: the scratch
# folder). The base side is K5's device code cut from cuda/cost_draft_tree_kernel.cu as 08010d1 committed it (pass the
# source with SRC=... when the kernel has changed since); k5_merge1.patch turns it into the variant; probe9.cu times and
# compares both in one process.
set -eo pipefail
here=$(cd "$(dirname "$0")" && pwd)
SRC=${SRC:-$(cd "$here/../../.." && pwd)/cuda/cost_draft_tree_kernel.cu}
W=$(mktemp -d)
OUT=${OUT:-$W}
cp "$here"/*.patch "$here/../k5_lean/probe8.patch" "$W"/
two="$here/../k5_l2_two_pass"
cp "$two/extract.py" "$two/probe_common.cuh" "$two/probe3.cu" "$two/probe4.patch" "$two/probe7.patch" "$W"/
cd "$W"
# probe9.cu: ../k5_l2_two_pass's probe 7 (probe3.cu with probe4.patch and probe7.patch), ../k5_lean's probe8.patch,
# then probe9.patch
patch -s -o probe4.cu probe3.cu probe4.patch && patch -s -o probe7.cu probe4.cu probe7.patch
patch -s -o probe8.cu probe7.cu probe8.patch && patch -s -o probe9.cu probe8.cu probe9.patch
nvidia-smi --query-gpu=name,driver_version --format=csv || true
python3 extract.py "$SRC" k5_committed.cuh
patch -s -o k5_merge1.cuh k5_committed.cuh k5_merge1.patch
nvcc -O3 -std=c++17 -gencode=arch=compute_90,code=sm_90 -Xptxas -v -fmad=false probe9.cu -o probe > "$OUT/build_probe9.txt" 2>&1
if command -v cuobjdump > /dev/null; then
  cuobjdump -sass probe > probe.sass && python3 "$here/../k5_l2_two_pass/sasscount.py" probe.sass | tee "$OUT/sass_probe9.txt"
fi
./probe 2>&1 | tee "$OUT/probe9_run1.txt"
