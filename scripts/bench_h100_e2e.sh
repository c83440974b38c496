#!/usr/bin/env bash
# H100 end-to-end baseline of the default contract (self-contained: no pip, no network).
#
#   scripts/bench_h100_e2e.sh [--contract FILE] [OUT_DIR]     # default OUT_DIR = reports
#
# A contract with `[model] load = "dummy"` (contracts/deployment-8b.toml) runs on the GPU-resident,
# graph-captured engine in its serving mode (eagle4.workload.runner): first the self-check + WP2 profile
# (scripts/gpu_selfcheck_e2e.py: ref == cuda == graph replay on a tiny shape, then per batch the
# kernel-time share by kernel and region from a torch-profiler run separate from the timed ones), then
# the timed runs (one process each). Writes OUT_DIR/h100_e2e_{raw,runs,accept,points}.csv,
# h100_e2e_summary.md, h100_e2e_manifest.json, h100_e2e_selfcheck.json, h100_e2e_hotspots.{csv,md}.
#   E2E_DURATION  measured seconds per run, overriding the contract's runs.min_duration_s (the rows of
#                 a shorter run say INVALID; the rule is never relaxed; a local-engine contract only
#                 lengthens its runs with it)
#   E2E_RESUME=1  keep the rows already in OUT_DIR (same contract and commit) and run only the points
#                 they lack: a baseline longer than one device call is measured in parts (E2E_POINTS)
#   E2E_SELFCHECK=0  skip the self-check + WP2 profile (a part that follows one that ran it)
#   E2E_DEADLINE  Unix time: start no timed process expected to end after it (a call with a hard limit
#                 then stops between processes; continue with E2E_RESUME=1)
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
if [[ "${1:-}" == "--contract" ]]; then E2E_CONTRACT="$2"; shift 2; fi
OUT="$(mkdir -p "${1:-reports}" && cd "${1:-reports}" && pwd)"
cd "$HERE"
export PYTHONPATH="$HERE/src${PYTHONPATH:+:$PYTHONPATH}"
PY="${PYTHON:-python3}"
# reports/ holds the baseline card's rows alone (eagle4.perf.card): on another GPU, pass OUT_DIR
if [ "${E2E_DEVICE:-cuda}" = cuda ] && [ "$OUT" = "$(cd reports && pwd)" ]; then
  "$PY" -m eagle4.perf.card --require-baseline || exit 2
fi
BACKEND="${E2E_BACKEND:-cuda}"
DEVICE="${E2E_DEVICE:-cuda}"
CONTRACT="${E2E_CONTRACT:-contracts/default.toml}"
EXTRA=()
LOAD=$("$PY" - "$CONTRACT" <<'PY'
import sys
from eagle4.contract import load_contract
print(load_contract(sys.argv[1]).model.load)
PY
)
if [[ "$LOAD" == "dummy" ]]; then
    "$PY" -m eagle4.cli.workload contract --contract "$CONTRACT" --out "$OUT/benchmark_contract_$(basename "$CONTRACT" .toml).md"
    start=$(date +%s)
    if [[ "${E2E_SELFCHECK:-1}" != "0" ]]; then
        "$PY" scripts/gpu_selfcheck_e2e.py "$OUT" || { echo "bench_h100_e2e: self-check failed (see $OUT/h100_e2e_selfcheck.json)"; exit 2; }
    fi
    DEXTRA=()
    [[ -n "${E2E_POINTS:-}" ]] && DEXTRA+=(--points "$E2E_POINTS")
    [[ -n "${E2E_RUNS:-}" ]] && DEXTRA+=(--runs "$E2E_RUNS")
    [[ -n "${E2E_DURATION:-}" ]] && DEXTRA+=(--duration "$E2E_DURATION")
    [[ "${E2E_RESUME:-0}" == "1" ]] && DEXTRA+=(--resume)
    [[ -n "${E2E_DEADLINE:-}" ]] && DEXTRA+=(--deadline "$E2E_DEADLINE")
    rc=0
    "$PY" -m eagle4.workload.runner --contract "$CONTRACT" --out "$OUT" --prefix h100_e2e --backend "$BACKEND" \
        --device "$DEVICE" ${DEXTRA[@]+"${DEXTRA[@]}"} || rc=$?
    echo "bench_h100_e2e: done in $(( $(date +%s) - start )) s (exit $rc; 1 = a point is INVALID); summary: $OUT/h100_e2e_summary.md"
    exit $rc
fi
[[ -n "${E2E_POINTS:-}" ]] && EXTRA+=(--points "$E2E_POINTS")
[[ -n "${E2E_RUNS:-}" ]] && EXTRA+=(--runs "$E2E_RUNS")
# a local-engine run may measure longer than the contract's minimum, never shorter
[[ -n "${E2E_DURATION:-}" ]] && EXTRA+=(--min-duration "$E2E_DURATION")

"$PY" - "$BACKEND" "$DEVICE" <<'PY'
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
"$PY" -m eagle4.cli.workload contract --contract "$CONTRACT" --out "$OUT/benchmark_contract.md"
start=$(date +%s)
rc=0
"$PY" -m eagle4.cli.workload run --contract "$CONTRACT" --backend "$BACKEND" --device "$DEVICE" \
    --out "$OUT" --prefix h100_baseline ${EXTRA[@]+"${EXTRA[@]}"} || rc=$?
echo "bench_h100_e2e: done in $(( $(date +%s) - start )) s (exit $rc; 1 = a CoV over the contract's limit); summary: $OUT/h100_baseline_summary.md"
exit $rc
