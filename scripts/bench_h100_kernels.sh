#!/usr/bin/env bash
# H100 kernel bench: our CUDA ops (K1..K7 and the K1->K2->K3 draft step) against their strongest
# PyTorch anchors, at the points of one or more contracts, >= 5 independent processes.
#
#   scripts/bench_h100_kernels.sh [--contract FILE]... [--runs N] [--points all|B1] [--out DIR] [--no-ncu]
#       [--ncu-points all|B1] [--eager]
#
# Before its first run it checks that the ncu step's kernel filter admits every kernel of the source it benches
# (eagle4.perf.ncu.check_source; skipped with --no-ncu).
# Default contracts: contracts/default.toml and contracts/deployment-8b.toml. Each run is a separate
# process (python -m eagle4.perf.kernel_bench run) timing every point once: ours and each anchor in
# CUDA graphs (events around replays; --eager: ours also launched eagerly). Then Nsight Compute's DRAM bytes of one
# launch per point (--ncu-points, default B1), the summaries (ours, anchor, roofline, both ratios; run rule of each contract)
# into reports/ (or --out), and reports/h100_env_manifest.txt.
# The roofline is the HBM peak of the card that ran (eagle4.perf.card); into reports/ (the default --out) only the
# baseline card's rows go, so on any other card pass --out DIR.
# Never change the GPU's clocks or settings here: the card is measured as found.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=""; POINTS=all; NCU_POINTS=B1; OUT=reports; NCU=1; CONTRACTS=(); EAGER=()
while [ $# -gt 0 ]; do
  case "$1" in
    --contract) CONTRACTS+=("$2"); shift 2;;
    --runs) RUNS=$2; shift 2;;
    --points) POINTS=$2; shift 2;;
    --out) OUT=$2; shift 2;;
    --no-ncu) NCU=0; shift;;
    --ncu-points) NCU_POINTS=$2; shift 2;;
    --eager) EAGER=(--eager); shift;;
    *) echo "unknown argument $1" >&2; exit 2;;
  esac
done
[ ${#CONTRACTS[@]} -gt 0 ] || CONTRACTS=(contracts/default.toml contracts/deployment-8b.toml)
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONUNBUFFERED=1
export EAGLE4_GIT_COMMIT="${EAGLE4_GIT_COMMIT:-$(git rev-parse HEAD 2>/dev/null || echo unknown)}"
CARGS=(); for c in "${CONTRACTS[@]}"; do CARGS+=(--contract "$c"); done
# the run rule: the largest `runs` of the given contracts (each contract's own CoV limit is applied by summarize)
MIN_RUNS=$(python3 -c "import sys; from eagle4.perf.points import shape_from_contract as s; print(max(s(c).runs for c in sys.argv[1:]))" "${CONTRACTS[@]}")
RUNS=${RUNS:-$MIN_RUNS}
[ "$RUNS" -ge "$MIN_RUNS" ] || { echo "--runs must be >= $MIN_RUNS (the contracts' runs)" >&2; exit 2; }
mkdir -p "$OUT"
RAW="${EAGLE4_BENCH_RAW:-$OUT/.raw}"; rm -rf "$RAW"; mkdir -p "$RAW"
# before any run: every kernel of the source benched must pass the ncu step's filter (else its report step refuses
# the profile after all the runs)
[ "$NCU" = 1 ] && python3 -c 'import os; from eagle4.backends.cuda import DEFAULT_SRC; from eagle4.perf.ncu import check_source; check_source(os.environ.get("EAGLE4_KERNEL_SRC") or DEFAULT_SRC)'
python3 -c "from eagle4.backends.cuda import CudaBackend; b=CudaBackend(); ok,why=b.available(); print('cuda backend:', ok, why); raise SystemExit(0 if ok else 1)"
# the roofline is the card's (eagle4.perf.card): refuse a card without a declared HBM peak before any run, and any
# card but the baseline (H100 SXM) when writing into reports/, which holds the baseline's rows alone
CARD_ARGS=(); [ "$(cd "$OUT" && pwd -P)" = "$(cd reports && pwd -P)" ] && CARD_ARGS=(--require-baseline)
python3 -m eagle4.perf.card "${CARD_ARGS[@]}" || exit 2
# pin every run process to the same core so runs differ by the GPU, not by core migration
PIN=()
command -v taskset >/dev/null && [ "$(nproc)" -ge 4 ] && PIN=(taskset -c 2)
for i in $(seq 0 $((RUNS-1))); do
  timeout 900 "${PIN[@]}" python3 -m eagle4.perf.kernel_bench run "${CARGS[@]}" --run-index "$i" --points "$POINTS" \
    "${EAGER[@]}" --out "$RAW/raw_$i.csv"
done
NCU_ARGS=()
if [ "$NCU" = 1 ] && command -v ncu >/dev/null; then
  if timeout 900 ncu --csv --print-units base --clock-control none --cache-control all \
       --metrics dram__bytes_read.sum,dram__bytes_write.sum -k "regex:$(python3 -c 'from eagle4.perf.ncu import KERNEL_REGEX; print(KERNEL_REGEX)')" \
       python3 -m eagle4.perf.kernel_bench ncu-probe "${CARGS[@]}" --points "$NCU_POINTS" > "$RAW/ncu.csv" 2> "$RAW/ncu.err"; then
    NCU_ARGS=(--ncu-csv "$RAW/ncu.csv" --ncu-points "$NCU_POINTS")
    # ncu's own CSV, behind one line that says how it was obtained (the parser starts at its header)
    { echo "# provenance: measured -- Nsight Compute DRAM bytes, one launch per $NCU_POINTS point of ${CONTRACTS[*]}, $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1), commit $EAGLE4_GIT_COMMIT"
      cat "$RAW/ncu.csv"; } > "$OUT/cuda_kernel_ncu_raw.csv.tmp" && mv "$OUT/cuda_kernel_ncu_raw.csv.tmp" "$OUT/cuda_kernel_ncu_raw.csv"
  else
    echo "ncu failed (see $RAW/ncu.err); bytes stay model-only" >&2
  fi
fi
{
  echo "# H100 environment manifest (written by scripts/bench_h100_kernels.sh)"
  echo "created_utc: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "git_commit: $EAGLE4_GIT_COMMIT"
  for c in "${CONTRACTS[@]}"; do
    echo "contract: $c sha256 $(python3 -c 'import sys; from eagle4.perf.points import shape_from_contract as s; print(s(sys.argv[1]).contract_hash)' "$c")"
  done
  echo "host: $(uname -a)"
  echo "--- nvidia-smi"
  nvidia-smi || true
  echo "--- nvidia-smi -q (clocks, power, ECC)"
  nvidia-smi -q -d CLOCK,POWER,PERFORMANCE,ECC 2>/dev/null | sed -n '1,120p' || true
  echo "--- torch"
  python3 -c 'import torch,sys; print("python", sys.version.split()[0]); print("torch", torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version()); p=torch.cuda.get_device_properties(0); print("device", p.name, "sm", p.multi_processor_count, "mem_GiB", round(p.total_memory/2**30,1), "cc", f"{p.major}.{p.minor}")'
  echo "--- nvcc"
  nvcc --version || true
  echo "timer: $(python3 -c 'from eagle4.perf.timing import TIMER; print(TIMER)')"
  echo "--- build flags"
  python3 -c 'import os, pathlib; from eagle4.backends.cuda import NVCC_FLAGS, DEFAULT_SRC, source_digest; src = pathlib.Path(os.environ.get("EAGLE4_KERNEL_SRC") or DEFAULT_SRC); print(" ".join(NVCC_FLAGS)); print("kernel_src", src.name, source_digest(src))'
  echo "--- ncu / compute-sanitizer"
  (ncu --version | tail -1) 2>/dev/null || echo "ncu absent"
  (compute-sanitizer --version | tail -1) 2>/dev/null || echo "compute-sanitizer absent"
} > "$OUT/.h100_env_manifest.txt.tmp" 2>&1
mv -f "$OUT/.h100_env_manifest.txt.tmp" "$OUT/h100_env_manifest.txt"  # temp + rename: never a half-written manifest
python3 -m eagle4.perf.kernel_bench summarize "$RAW"/raw_*.csv "${CARGS[@]}" --reports "$OUT" "${NCU_ARGS[@]}"
echo "wrote $OUT/cuda_kernel_times.csv, cuda_kernel_times_raw.csv, kernel_anchors.md, cuda_bytes_per_token.csv, hotspots_ranked.md, h100_env_manifest.txt"
