#!/usr/bin/env bash
# H100 end-to-end baseline of the default contract (self-contained: no pip, no network).
#
#   scripts/bench_h100_e2e.sh [OUT_DIR]          # default OUT_DIR = reports
#
# env: E2E_BACKEND   kernel backend: cuda (default; our CUDA kernels), cuda+ref (kernels the cuda backend
#                    does not support run on the CPU reference; named in the results) or ref (PyTorch
#                    reference kernels on the GPU)
#      E2E_CONTRACT  contract file (default contracts/default.toml)
#      E2E_POINTS    comma-separated operating points (default: all of the contract's)
#      E2E_RUNS      measured runs per point (default: the contract's, >= 5)
#      E2E_DEVICE    cuda (default); cpu only to dry-run the plumbing on a machine without a GPU
# Writes OUT_DIR/h100_baseline_{raw,runs,profile}.csv, OUT_DIR/h100_baseline_summary.md and
# OUT_DIR/benchmark_contract.md. Each measured run is a separate process (warm-up inside it).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="$(mkdir -p "${1:-reports}" && cd "${1:-reports}" && pwd)"
cd "$HERE"
export PYTHONPATH="$HERE/src${PYTHONPATH:+:$PYTHONPATH}"
BACKEND="${E2E_BACKEND:-cuda}"
DEVICE="${E2E_DEVICE:-cuda}"
CONTRACT="${E2E_CONTRACT:-contracts/default.toml}"
EXTRA=()
[[ -n "${E2E_POINTS:-}" ]] && EXTRA+=(--points "$E2E_POINTS")
[[ -n "${E2E_RUNS:-}" ]] && EXTRA+=(--runs "$E2E_RUNS")

python - "$BACKEND" "$DEVICE" <<'PY'
import sys, torch
from eagle4.backends import get_backend
backend, device = sys.argv[1], sys.argv[2]
if device == "cuda" and not torch.cuda.is_available():
    sys.exit("bench_h100_e2e: no CUDA device (torch.cuda.is_available() is False)")
name = backend.removesuffix("+ref")  # "cuda+ref": kernels the cuda backend lacks run on ref
opts = {"device": device} if name == "ref" else {}
ok, why = get_backend(name, **opts).available()
if not ok:
    sys.exit(f"bench_h100_e2e: backend {backend!r} unavailable: {why} (E2E_BACKEND=ref uses the reference kernels on the GPU)")
dev = torch.cuda.get_device_name(0) if device == "cuda" else "cpu (dry run: not an H100 baseline)"
print(f"device: {dev}, torch {torch.__version__}, backend {backend}")
PY
python -m eagle4.cli.workload contract --contract "$CONTRACT" --out "$OUT/benchmark_contract.md"
start=$(date +%s)
rc=0
python -m eagle4.cli.workload run --contract "$CONTRACT" --backend "$BACKEND" --device "$DEVICE" \
    --out "$OUT" --prefix h100_baseline ${EXTRA[@]+"${EXTRA[@]}"} || rc=$?
echo "bench_h100_e2e: done in $(( $(date +%s) - start )) s (exit $rc; 1 = a CoV over the contract's limit); summary: $OUT/h100_baseline_summary.md"
exit $rc
