set -x
S=$SECONDS
mkdir -p $OUT/p
python3 -c "from eagle4.backends.cuda import CudaBackend; CudaBackend()._load()" > $OUT/p/build.txt 2>&1; echo "build exit $? at $((SECONDS-S)) s" >> $OUT/p/build.txt
timeout 100 python3 .gpu/k5b/pipe_sweep.py contracts/deployment-8b.toml > $OUT/p/sweep_dep.txt 2>&1; echo "exit $? at $((SECONDS-S)) s" >> $OUT/p/sweep_dep.txt
timeout 100 python3 -m pytest tests/parity/test_backend_parity.py tests/parity/test_cuda_parity.py -k "cuda and logits_to_probas" --hw=cuda -p no:xdist -p no:cacheprovider -q > $OUT/p/parity.txt 2>&1; echo "exit $? at $((SECONDS-S)) s" >> $OUT/p/parity.txt
M=gpu__time_duration.sum,launch__grid_size,launch__shared_mem_config_size,sm__warps_active.avg.pct_of_peak_sustained_active,dram__throughput.avg.pct_of_peak_sustained_elapsed,l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum
timeout 100 ncu --metrics $M -k regex:k5r --csv python3 .gpu/k5b/probe.py > $OUT/p/ncu.csv 2> $OUT/p/ncu_err.txt; echo "exit $? at $((SECONDS-S)) s" >> $OUT/p/ncu_err.txt
timeout 100 python3 .gpu/k5b/pipe_sweep.py contracts/deployment-8b.toml rev > $OUT/p/sweep_dep_rev.txt 2>&1; echo "exit $? at $((SECONDS-S)) s" >> $OUT/p/sweep_dep_rev.txt
