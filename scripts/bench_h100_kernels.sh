#!/usr/bin/env bash
# H100 kernel latency of our CUDA ops (K1..K7) at the operating points, >= 5 independent runs.
#
#   scripts/bench_h100_kernels.sh [--runs N] [--points all|B1|smoke] [--out DIR] [--no-ncu]
#
# Each run is a separate process (python -m eagle4.perf.kernel_bench run) measuring every point
# once (eager: events per launch; graph: replays of a captured graph; plus the eager PyTorch
# reference at B = 1). Then: summary CSVs + hotspots into reports/ (or --out), ncu DRAM bytes
# of one launch per kernel at B = 1, and reports/h100_env_manifest.txt.
# Never change the GPU's clocks or settings here: the card is measured as found.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=5; POINTS=all; OUT=reports; NCU=1
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) RUNS=$2; shift 2;;
    --points) POINTS=$2; shift 2;;
    --out) OUT=$2; shift 2;;
    --no-ncu) NCU=0; shift;;
    *) echo "unknown argument $1" >&2; exit 2;;
  esac
done
[ "$RUNS" -ge 5 ] || { echo "--runs must be >= 5 (CoV needs independent runs)" >&2; exit 2; }
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONUNBUFFERED=1
export EAGLE4_GIT_COMMIT="${EAGLE4_GIT_COMMIT:-$(git rev-parse HEAD 2>/dev/null || echo unknown)}"
mkdir -p "$OUT"
RAW="$OUT/.raw"; mkdir -p "$RAW"
python3 -c "from eagle4.backends.cuda import CudaBackend; b=CudaBackend(); ok,why=b.available(); print('cuda backend:', ok, why); raise SystemExit(0 if ok else 1)"
# Eager timings include the host's launch overhead: pin every run process to the same core so
# runs differ by the GPU and the launch path, not by core migration.
PIN=()
command -v taskset >/dev/null && [ "$(nproc)" -ge 4 ] && PIN=(taskset -c 2)
for i in $(seq 0 $((RUNS-1))); do
  "${PIN[@]}" python3 -m eagle4.perf.kernel_bench run --run-index "$i" --points "$POINTS" --out "$RAW/raw_$i.csv"
done
NCU_ARGS=()
if [ "$NCU" = 1 ] && command -v ncu >/dev/null; then
  if ncu --csv --print-units base --clock-control none --metrics dram__bytes_read.sum,dram__bytes_write.sum \
       -k 'regex:k[1-7]_kernel' python3 -m eagle4.perf.kernel_bench ncu-probe --points B1 > "$RAW/ncu.csv" 2> "$RAW/ncu.err"; then
    NCU_ARGS=(--ncu-csv "$RAW/ncu.csv")
  else
    echo "ncu failed (see $RAW/ncu.err); bytes stay model-only" >&2
  fi
fi
python3 -m eagle4.perf.kernel_bench summarize "$RAW"/raw_*.csv --reports "$OUT" "${NCU_ARGS[@]}"
{
  echo "# H100 environment manifest (written by scripts/bench_h100_kernels.sh)"
  echo "created_utc: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "git_commit: $EAGLE4_GIT_COMMIT"
  echo "contract_sha256: $(python3 -c 'from eagle4.perf.kernel_bench import contract_hash; print(contract_hash())')"
  echo "host: $(uname -a)"
  echo "--- nvidia-smi"
  nvidia-smi || true
  echo "--- nvidia-smi -q (clocks, power, ECC)"
  nvidia-smi -q -d CLOCK,POWER,PERFORMANCE,ECC 2>/dev/null | sed -n '1,120p' || true
  echo "--- torch"
  python3 -c 'import torch,sys; print("python", sys.version.split()[0]); print("torch", torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version()); p=torch.cuda.get_device_properties(0); print("device", p.name, "sm", p.multi_processor_count, "mem_GiB", round(p.total_memory/2**30,1), "cc", f"{p.major}.{p.minor}")'
  echo "--- nvcc"
  nvcc --version || true
  echo "--- build flags"
  python3 -c 'from eagle4.backends.cuda import NVCC_FLAGS, DEFAULT_SRC; import hashlib; print(" ".join(NVCC_FLAGS)); print("kernel_src", DEFAULT_SRC.name, hashlib.sha256(DEFAULT_SRC.read_bytes()).hexdigest())'
  echo "--- ncu / compute-sanitizer"
  (ncu --version | tail -1) 2>/dev/null || echo "ncu absent"
  (compute-sanitizer --version | tail -1) 2>/dev/null || echo "compute-sanitizer absent"
} > "$OUT/.h100_env_manifest.txt.tmp" 2>&1
mv -f "$OUT/.h100_env_manifest.txt.tmp" "$OUT/h100_env_manifest.txt"  # temp + rename: never a half-written manifest
echo "wrote $OUT/cuda_kernel_times.csv, cuda_kernel_times_raw.csv, cuda_bytes_per_token.csv, hotspots_ranked.md, h100_env_manifest.txt"
