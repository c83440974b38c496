# experiment: K5's pipelined register kernel (k5rp_kernel): build, K5 parity, sanitizers on its case, sweep
set -x
S=$SECONDS
mkdir -p $OUT/p
python3 -c "from eagle4.backends.cuda import CudaBackend; CudaBackend()._load()" > $OUT/p/build.txt 2>&1; echo "build exit $? at $((SECONDS-S)) s" >> $OUT/p/build.txt
timeout 200 python3 -m pytest tests/parity/test_backend_parity.py tests/parity/test_cuda_parity.py tests/parity/test_h100_dump_replay.py tests/parity/test_cuda_goldens.py -k "cuda and logits_to_probas" --hw=cuda -p no:xdist -p no:cacheprovider -q > $OUT/p/parity.txt 2>&1; echo "exit $? at $((SECONDS-S)) s" >> $OUT/p/parity.txt
timeout 150 python3 .gpu/k5b/pipe_sweep.py contracts/deployment-8b.toml > $OUT/p/sweep_dep.txt 2>&1; echo "exit $? at $((SECONDS-S)) s" >> $OUT/p/sweep_dep.txt
timeout 60 compute-sanitizer --tool racecheck --racecheck-report all python3 scripts/dump_h100_goldens.py --no-dump --case logits_to_probas/edge/many_rows_V8192_pipelined 2>&1 | grep -v "^=========     " | tail -30 > $OUT/p/racecheck.txt; echo "exit ${PIPESTATUS[0]} at $((SECONDS-S)) s" >> $OUT/p/racecheck.txt
timeout 60 compute-sanitizer --tool memcheck python3 scripts/dump_h100_goldens.py --no-dump --case logits_to_probas/edge/many_rows_V8192_pipelined,logits_to_probas/large/V128256_rows40_ties_nan 2>&1 | grep -v "^=========     " | tail -30 > $OUT/p/memcheck.txt; echo "exit ${PIPESTATUS[0]} at $((SECONDS-S)) s" >> $OUT/p/memcheck.txt
left=$((575 - (SECONDS - S)))
[ $left -gt 40 ] && timeout $((left - 5)) python3 .gpu/k5b/pipe_sweep.py contracts/deployment-8b.toml rev > $OUT/p/sweep_dep_rev.txt 2>&1
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv > $OUT/p/gpu.txt
tail -3 $OUT/p/*.txt
