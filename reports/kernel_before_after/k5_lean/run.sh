#!/bin/bash
# Reproduces this folder's probe call (nvidia-h100-x1) in a scratch folder; outputs go to $OUT (default: the scratch
# folder). k5_base.cuh is K5's device code as 77f9273 committed it (cut from cuda/cost_draft_tree_kernel.cu by
# ../k5_l2_two_pass/extract.py); k5_lean.patch turns it into the lean form; probe8.cu times and compares both in one
# process (probe8.cu: generated from ../k5_l2_two_pass's probe 7 and probe8.patch). With `current` the lean side is cut from today's cuda/cost_draft_tree_kernel.cu instead of the patch.
set -eo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
W=$(mktemp -d)
tag=${1:-run1}
OUT=${OUT:-$W}
cp "$here"/*.cuh "$here"/*.patch "$W"/
two="$here/../k5_l2_two_pass"
cp "$two/extract.py" "$two/probe_common.cuh" "$two/probe3.cu" "$two/probe4.patch" "$two/probe7.patch" "$W"/
cd "$W"
# probe8.cu is probe 7 of ../k5_l2_two_pass (probe3.cu with probe4.patch and probe7.patch) with probe8.patch
patch -s -o probe4.cu probe3.cu probe4.patch && patch -s -o probe7.cu probe4.cu probe7.patch
patch -s -o probe8.cu probe7.cu probe8.patch
nvidia-smi --query-gpu=name,driver_version --format=csv || true
cp k5_base.cuh k5_committed.cuh  # probe8.cu's base side
if [ "${1:-}" = current ]; then
  python3 extract.py "$repo/cuda/cost_draft_tree_kernel.cu" k5_lean.cuh
else
  patch -s -o k5_lean.cuh k5_committed.cuh k5_lean.patch
fi
nvcc -O3 -std=c++17 -gencode=arch=compute_90,code=sm_90 -Xptxas -v -fmad=false probe8.cu -o probe > "$OUT/build_probe8_$tag.txt" 2>&1
if command -v cuobjdump > /dev/null; then
  cuobjdump -sass probe > probe.sass && python3 "$here/../k5_l2_two_pass/sasscount.py" probe.sass | tee "$OUT/sass_probe8_$tag.txt"
fi
./probe 2>&1 | tee "$OUT/probe8_$tag.txt"
