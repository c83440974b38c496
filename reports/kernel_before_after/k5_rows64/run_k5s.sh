#!/bin/bash
# K5's register + shared-memory kernel (k5rs, sweep mode 3): parity, the sweep, before/after against HEAD's source
R=/tmp/k5s; mkdir -p $R
find ~/.cache/eagle4/cuda_ext -name lock -print -delete 2>/dev/null
date -u +%T
B='import sys; from eagle4.backends.cuda import CudaBackend as C; b=C(kernel_src=sys.argv[1]); print(sys.argv[1], b.available())'
timeout 400 python3 -c "$B" cuda/cost_draft_tree_kernel.cu > $R/build_new.txt 2>&1 &
timeout 400 python3 -c "$B" .gpu/k5s/base.cu > $R/build_base.txt 2>&1 &
wait; tail -1 $R/build_new.txt $R/build_base.txt; date -u +%T
timeout 150 python3 -m pytest tests/parity/test_cuda_parity.py tests/parity/test_h100_dump_replay.py tests/parity/test_cuda_goldens.py -k "cuda and logits_to_probas" --hw=cuda -p no:xdist -p no:cacheprovider -q > $R/parity.txt 2>&1; echo "parity exit $?"; tail -3 $R/parity.txt; date -u +%T
timeout 150 python3 -m eagle4.perf.kernel_bench sweep --kernel logits_to_probas --contract contracts/deployment-8b.toml > $R/sweep_k5.txt 2>&1; cut -c1-1200 $R/sweep_k5.txt | grep verify; date -u +%T
timeout 150 python3 -m eagle4.perf.kernel_bench compare-src --contract contracts/default.toml --contract contracts/deployment-8b.toml --src .gpu/k5s/base.cu --src cuda/cost_draft_tree_kernel.cu --kernels logits_to_probas --rounds 3 --out $R/compare.csv > $R/compare_log.txt 2>&1; tail -20 $R/compare_log.txt | cut -c1-200; date -u +%T
tar -czf $OUT/k5s.tgz -C /tmp k5s
