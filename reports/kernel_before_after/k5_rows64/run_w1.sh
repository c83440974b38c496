#!/bin/bash
# K6's register form in 1024-thread blocks (sweep form 3) against the automatic choice, and K5's B = 1 choices
R=/tmp/w1; mkdir -p $R
find ~/.cache/eagle4/cuda_ext -name lock -print -delete 2>/dev/null
date -u +%T
timeout 420 python3 -c "from eagle4.backends.cuda import CudaBackend as C; print(C().available())" > $R/build.txt 2>&1; tail -2 $R/build.txt; date -u +%T
timeout 200 python3 -m eagle4.perf.kernel_bench sweep --kernel reject_sample --contract contracts/default.toml --contract contracts/deployment-8b.toml > $R/sweep_k6.txt 2>&1; cut -c1-400 $R/sweep_k6.txt | tail -12; date -u +%T
timeout 120 python3 -m eagle4.perf.kernel_bench sweep --kernel logits_to_probas --contract contracts/default.toml --contract contracts/deployment-8b.toml --points B1 > $R/sweep_k5_b1.txt 2>&1; cut -c1-400 $R/sweep_k5_b1.txt | tail -6; date -u +%T
tar -czf $OUT/w1.tgz -C /tmp w1
