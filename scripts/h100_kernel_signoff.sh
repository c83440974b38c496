#!/usr/bin/env bash
# One device session for the H100 kernels (issue 14): build, parity, sanitizers, bench, in priority
# order, every step time-boxed so the whole script ends inside one device call.
#
#   scripts/h100_kernel_signoff.sh --out DIR [--old-src FILE|DIR] [--budget SECONDS] [--kernels LIST] [--no-ncu]
#       [--no-smoke] [--no-bench]
#
# --kernels LIST (comma-separated spec keys, draft_step included) narrows the session to what changed:
# parity of those kernels only (plus tests/parity/test_cuda_draft_step.py, after them, when draft_step is
# listed: on its failure the bench keeps our source and times the draft step as three launches),
# compare-src at their points, the sanitizers on their cases (memcheck and racecheck of the draft-step
# kernel on a few chained catalog cases); the bench still measures every point (every row of one
# report from one run). --no-ncu skips Nsight Compute (bytes stay those committed). The steps' time boxes
# scale with --budget (their shares of the default 540 s). The torch.compile anchors are compiled once
# beside the build (python -m eagle4.perf.kernel_bench warm-anchors), filling Inductor's on-disk cache.
# --no-bench skips step 3 and the anchors' warm-up (a development session: parity, before/after and
# sanitizers only; no report rows). On a fresh machine the build takes 95-125 s and the whole catalog's parity
# 120-160 s, so the whole catalog and the bench do not both fit one 540 s call: a call with --no-bench for the
# catalog, another with --kernels for the bench (nvidia-h200, 2026-12-02: reports/cards/h200/).
#
# 1. builds our kernel sources (cuda/*.cu) and, with --old-src, a baseline source (a file, e.g. a
#    user's cost_draft_tree_kernel.cu, or a folder like cuda/) beside them (two processes, in parallel);
# 2. parity on the cuda backend: the catalog (each case twice), the committed H100 dumps and the
#    public CUDA goldens (reports/h100_parity procedure) -> DIR/pytest_log.txt. If our source fails to
#    match, parity again with EAGLE4_CUDA_PDL=0 (plain launches); if it fails to build or still to
#    match, the bench measures --old-src instead (DIR/bench_source.txt says which); a graph-capture
#    smoke test of the programmatic launches before the bench (EAGLE4_CUDA_PDL=0 if it fails);
# 3. scripts/bench_h100_kernels.sh for contracts/default.toml and contracts/deployment-8b.toml
#    (5 processes, ncu at B = 1) -> DIR/reports/;
# 4. with --old-src: before/after of our ops from both sources in one process
#    (python -m eagle4.perf.kernel_bench compare-src) -> DIR/compare_src.csv, DIR/compare_src_log.txt,
#    and the same with the kernels' programmatic dependent launch off -> DIR/compare_src_nopdl*; at the
#    draft-step points each source's step is timed both as one launch and as three, beside the PyTorch
#    draft-layer anchor (--step-forms --anchors draft_step);
# 5. compute-sanitizer memcheck over the catalog (no large cases) and racecheck over the first 3
#    cases of each kernel -> DIR/memcheck_log.txt, DIR/racecheck_log.txt; both again with each op
#    launched once at the bench's B = 1 points (the cluster forms), racecheck on the default contract's
#    -> DIR/memcheck_points_log.txt, DIR/racecheck_points_log.txt.
# 6. every step's log read back (python -m eagle4.perf.records steps DIR): a step stopped by its time box
#    (exit 124) or a sanitizer that found something is named and the script exits 1.
# The bench's rows are then filed as the card's record, one folder per contract (eagle4.perf.records).
# Never changes the GPU's clocks or settings.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=""; OLD=""; BUDGET=540; KERNELS=""; BENCH_ARGS=(); SMOKE=1; BENCH=1
while [ $# -gt 0 ]; do
  case "$1" in
    --out) OUT=$2; shift 2;;
    --old-src) OLD=$2; shift 2;;
    --budget) BUDGET=$2; shift 2;;
    --kernels) KERNELS=$2; shift 2;;
    --no-ncu) BENCH_ARGS+=(--no-ncu); shift;;
    --no-smoke) SMOKE=0; shift;;
    --no-bench) BENCH=0; shift;;
    *) echo "unknown argument $1" >&2; exit 2;;
  esac
done
[ -n "$OUT" ] || { echo "--out DIR is required" >&2; exit 2; }
mkdir -p "$OUT"
export PYTHONPATH="$PWD/src:$PWD${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONUNBUFFERED=1
NEW=cuda
left() { echo $((BUDGET - SECONDS)); }
# box WANT RESERVE: at most WANT seconds, leaving RESERVE for the later steps (both as shares of 540 s)
box() { local want=$(( $1 * BUDGET / 540 )) l; l=$(( $(left) - ${2:-0} * BUDGET / 540 )); [ "$l" -lt "$want" ] && want=$l; [ "$want" -lt 1 ] && want=1; echo "$want"; }
PARITY_K=cuda; CMP_K=(); SAN_K=()
if [ -n "$KERNELS" ]; then
  PARITY_K="cuda and ($(echo "$KERNELS" | sed 's/,/ or /g'))"
  CMP_K=(--kernels "$KERNELS")
  SAN_K=(--kernel "$(echo "$KERNELS" | tr ',' '\n' | grep -v '^draft_step$' | paste -sd,)")
fi
STEP_TESTS=()
case ",$KERNELS," in ,,|*,draft_step,*) STEP_TESTS=(tests/parity/test_cuda_draft_step.py);; esac
stamp() { echo "[$(date -u +%H:%M:%S) t=${SECONDS}s] $*"; }

# the harness's own imports before the build: a Python package missing on the GPU machine (pydantic was, on
# nvidia-h200) stops the call here, by name, instead of as a parity failure after the build
python3 -c "import eagle4.contract, eagle4.perf.kernel_bench, plugins.perf" 2> "$OUT/preflight.txt" || {
  stamp "preflight: $(tail -1 "$OUT/preflight.txt") (carry the missing package as wheels)"; exit 2; }
stamp "build"
PW=""  # the torch.compile anchors are only timed by the bench
[ "$BENCH" = 1 ] && { timeout "$(box 200 300)" python3 -m eagle4.perf.kernel_bench warm-anchors --contract contracts/default.toml \
  --contract contracts/deployment-8b.toml > "$OUT/warm_anchors_log.txt" 2>&1 & PW=$!; }
build() { python3 -c "import sys; from eagle4.backends.cuda import CudaBackend as C; b=C(kernel_src=sys.argv[1]); ok,why=b.available(); print(sys.argv[1], 'built:', ok, why); raise SystemExit(0 if ok else 1)" "$1"; }
build "$NEW" > "$OUT/build_new.txt" 2>&1 & PN=$!
PO=""; [ -n "$OLD" ] && { build "$OLD" > "$OUT/build_old.txt" 2>&1 & PO=$!; }
wait $PN; NEW_OK=$?
[ -n "$PO" ] && wait $PO
[ -n "$PW" ] && { wait $PW; echo "exit $?" >> "$OUT/warm_anchors_log.txt"; }
stamp "build new rc=$NEW_OK"

# pytest over the given test files with -k PARITY_K; $1: log file (the box comes from $PARITY_WANT)
run_tests() {
  local log=$1; shift
  { echo "$ EAGLE4_CUDA_PDL=${EAGLE4_CUDA_PDL:-1} python3 -m pytest $* -k '$PARITY_K' --hw=cuda -p no:xdist -p no:cacheprovider -q"
    timeout "$(box "$PARITY_WANT" 250)" python3 -m pytest "$@" -k "$PARITY_K" --hw=cuda -p no:xdist -p no:cacheprovider -q 2>&1
    echo "exit $?"; } > "$log"
  tail -3 "$log"
  grep -q "^exit 0$" "$log"
}
# the parity step's share of 540 s: the whole catalog (about 1150 tests) took 121 s, then ran past a 147 s box, then
# took 129 s on nvidia-h100-x1
PARITY_WANT=150
[ -z "$KERNELS" ] && PARITY_WANT=210
# what a failed test step's log says: a time box that ran out is no verdict on the kernels, never reported as a mismatch
failed_why() { if grep -q "^exit 124$" "$1"; then echo "did not finish inside its time box (exit 124): not verified"; else echo "failed (a mismatch or an error: see $(basename "$1"))"; fi; }
parity() {  # $1: log file
  run_tests "$1" tests/parity/test_backend_parity.py tests/parity/test_cuda_parity.py \
    tests/parity/test_h100_dump_replay.py tests/parity/test_cuda_goldens.py
}
BENCH_SRC=$NEW
if [ "$NEW_OK" = 0 ]; then
  stamp "parity"
  if ! parity "$OUT/pytest_log.txt"; then
    # the kernels' programmatic dependent launch off (EAGLE4_CUDA_PDL=0), then the baseline source
    export EAGLE4_CUDA_PDL=0
    stamp "parity $(failed_why "$OUT/pytest_log.txt"); again with EAGLE4_CUDA_PDL=0"
    parity "$OUT/pytest_log_nopdl.txt" || BENCH_SRC=""
  fi
else
  BENCH_SRC=""
fi
if [ -n "$BENCH_SRC" ] && [ ${#STEP_TESTS[@]} -gt 0 ]; then
  # the one-launch draft step against the three ops: on a mismatch the bench keeps our source and times
  # the draft step as the three launches (EAGLE4_DRAFT_STEP_FUSED=0); the per-kernel verdicts stand
  stamp "draft-step parity"
  PARITY_WANT=40
  if ! run_tests "$OUT/pytest_step_log.txt" "${STEP_TESTS[@]}"; then
    export EAGLE4_DRAFT_STEP_FUSED=0
    echo "the one-launch draft step against the three ops: $(failed_why "$OUT/pytest_step_log.txt"); the bench times" \
      "the three launches (EAGLE4_DRAFT_STEP_FUSED=0) from here" | tee -a "$OUT/pytest_step_log.txt"
  fi
fi
if [ -z "$BENCH_SRC" ]; then
  [ -n "$OLD" ] || { stamp "our source failed to build, or its parity did not pass (pytest_log*.txt), no --old-src: stop"; exit 1; }
  [ "$BENCH" = 1 ] || { stamp "our source failed to build, or its parity did not pass (pytest_log*.txt), --no-bench: nothing to measure, stop"; exit 1; }
  BENCH_SRC=$OLD   # the bench and the sanitizers measure the baseline source (built in step 1)
  export EAGLE4_KERNEL_SRC="$PWD/$OLD"
fi
if [ "$SMOKE" = 1 ] && [ "$BENCH_SRC" = "$NEW" ] && [ "${EAGLE4_CUDA_PDL:-1}" != 0 ]; then
  # graph capture of the programmatic launches (the bench captures every op in CUDA graphs)
  stamp "graph smoke test"
  if ! timeout "$(box 60 200)" python3 -m eagle4.perf.kernel_bench compare-src --contract contracts/default.toml \
       --src "$NEW" --points B1 --rounds 1 --out "$OUT/smoke.csv" > "$OUT/smoke_log.txt" 2>&1; then
    export EAGLE4_CUDA_PDL=0
    echo "graph capture with programmatic launches failed: EAGLE4_CUDA_PDL=0 from here" | tee -a "$OUT/smoke_log.txt"
  fi
fi
echo "$BENCH_SRC sha256 $(python3 -c 'import sys; from eagle4.backends.cuda import source_digest; print(source_digest(sys.argv[1]))' "$BENCH_SRC") EAGLE4_CUDA_PDL=${EAGLE4_CUDA_PDL:-1} EAGLE4_DRAFT_STEP_FUSED=${EAGLE4_DRAFT_STEP_FUSED:-1}" > "$OUT/bench_source.txt"
if [ "$BENCH" = 1 ]; then
  stamp "bench ($BENCH_SRC)"
  timeout "$(box 330 120)" scripts/bench_h100_kernels.sh --out "$OUT/reports" "${BENCH_ARGS[@]}" > "$OUT/bench_log.txt" 2>&1
  echo "exit $?" >> "$OUT/bench_log.txt"
  # a bench stopped by its box after some runs keeps their raw rows: say where, and how to summarize them anywhere
  if ! grep -q "^exit 0$" "$OUT/bench_log.txt" && compgen -G "$OUT/reports/.raw/raw_*.csv" > /dev/null; then
    echo "bench stopped early; its finished runs' raw rows: $OUT/reports/.raw/raw_*.csv (python3 -m eagle4.perf.kernel_bench" \
      "summarize those files --contract ... --reports DIR makes the reports from them on any machine)" >> "$OUT/bench_log.txt"
  fi
  tail -3 "$OUT/bench_log.txt"
fi
CMP_STEP=()  # the draft step in both forms beside its anchor, where the session covers it
[ ${#STEP_TESTS[@]} -gt 0 ] && CMP_STEP=(--step-forms --anchors draft_step)

if [ -n "$OLD" ] && [ "$BENCH_SRC" = "$NEW" ]; then
  stamp "compare old vs new"
  timeout "$(box 60 110)" python3 -m eagle4.perf.kernel_bench compare-src --contract contracts/default.toml \
    --contract contracts/deployment-8b.toml --src "$OLD" --src "$NEW" --rounds 3 "${CMP_K[@]}" "${CMP_STEP[@]}" --out "$OUT/compare_src.csv" \
    > "$OUT/compare_src_log.txt" 2>&1
  echo "exit $? (EAGLE4_CUDA_PDL=${EAGLE4_CUDA_PDL:-1})" >> "$OUT/compare_src_log.txt"
  if [ "${EAGLE4_CUDA_PDL:-1}" != 0 ]; then  # the same without programmatic launches: what the kernels' code gives alone
    stamp "compare old vs new, EAGLE4_CUDA_PDL=0"
    EAGLE4_CUDA_PDL=0 timeout "$(box 60 90)" python3 -m eagle4.perf.kernel_bench compare-src \
      --contract contracts/default.toml --contract contracts/deployment-8b.toml --src "$OLD" --src "$NEW" --rounds 3 "${CMP_K[@]}" "${CMP_STEP[@]}" \
      --out "$OUT/compare_src_nopdl.csv" > "$OUT/compare_src_nopdl_log.txt" 2>&1
    echo "exit $? (EAGLE4_CUDA_PDL=0)" >> "$OUT/compare_src_nopdl_log.txt"
  fi
fi

# sanitize LOG WANT RESERVE LINES ARGS...: compute-sanitizer ARGS, time-boxed (box WANT RESERVE), into $OUT/LOG: its
# command line, the last LINES lines of its report without the per-frame lines, its exit code
sanitize() {
  local log=$1 want=$2 reserve=$3 lines=$4; shift 4
  { echo "$ compute-sanitizer $*"
    timeout "$(box "$want" "$reserve")" compute-sanitizer "$@" 2>&1 | grep -v "^=========     " | tail -"$lines"
    echo "exit ${PIPESTATUS[0]}"; } > "$OUT/$log"
}
STEP_IN_USE=0  # a one-launch draft-step op in use
[ ${#STEP_TESTS[@]} -gt 0 ] && [ "$BENCH_SRC" = "$NEW" ] && [ "${EAGLE4_DRAFT_STEP_FUSED:-1}" != 0 ] && STEP_IN_USE=1
SAN_STEP=(python3 -m pytest tests/parity/test_cuda_draft_step.py --hw=cuda -p no:xdist -p no:cacheprovider -q
          -k "bench_points or full_c64 or hot_perm_full or b128_h64 or nan_and_minus_inf or k10_w6 or no_tokens or bfloat16 or float16_h1")
stamp "memcheck"
sanitize memcheck_log.txt 60 40 40 --tool memcheck --target-processes all python3 scripts/dump_h100_goldens.py \
  --no-dump --skip-large "${SAN_K[@]}"
if [ "$STEP_IN_USE" = 1 ]; then
  stamp "memcheck of the draft-step kernel"
  sanitize memcheck_step_log.txt 40 30 30 --tool memcheck --target-processes all "${SAN_STEP[@]}"
fi
stamp "racecheck"
sanitize racecheck_log.txt 90 25 40 --tool racecheck --racecheck-report all --target-processes all python3 \
  scripts/dump_h100_goldens.py --no-dump --skip-large --max-per-kernel 3 "${SAN_K[@]}"
# the catalog's cases are small (one block a row, no cluster): the bench's B = 1 points launch the
# cluster forms and their exchanges, each op once (ncu-probe); racecheck on the default contract's only
# (the deployment verify point's 65 MB under racecheck outlasts the box)
PROBE_K=(); [ -n "$KERNELS" ] && PROBE_K=(--kernels "$KERNELS")
stamp "memcheck and racecheck at the bench's B = 1 points"
sanitize memcheck_points_log.txt 60 90 30 --tool memcheck python3 -m eagle4.perf.kernel_bench ncu-probe \
  --contract contracts/default.toml --contract contracts/deployment-8b.toml --points B1 "${PROBE_K[@]}"
sanitize racecheck_points_log.txt 90 10 30 --tool racecheck --racecheck-report all python3 -m eagle4.perf.kernel_bench \
  ncu-probe --contract contracts/default.toml --points B1 "${PROBE_K[@]}"
if [ "$STEP_IN_USE" = 1 ]; then
  stamp "racecheck of the draft-step kernel"
  sanitize racecheck_step_log.txt 70 3 30 --tool racecheck --racecheck-report all --target-processes all "${SAN_STEP[@]}"
fi
stamp "done"
# every step's log read back: a step its time box stopped, or a sanitizer that found something, fails the call by name
python3 -m eagle4.perf.records steps "$OUT" || { stamp "steps not clean (above): redo each in a second call"; exit 1; }
