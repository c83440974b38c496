set -x
S=$SECONDS
mkdir -p $OUT/p
python3 -c "from eagle4.backends.cuda import CudaBackend; CudaBackend()._load()" > $OUT/p/build.txt 2>&1; echo "build exit $? at $((SECONDS-S)) s" >> $OUT/p/build.txt
M=gpu__time_duration.sum,launch__occupancy_limit_shared_mem,launch__occupancy_limit_registers,launch__occupancy_limit_blocks,launch__shared_mem_config_size,launch__grid_size,launch__cluster_max_active_clusters,sm__warps_active.avg.pct_of_peak_sustained_active,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_bytes.sum,l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum,l1tex__t_bytes_pipe_lsu_mem_local_op_st.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__cycles_active.avg,smsp__pcsamp_warps_issue_stalled_barrier,launch__registers_per_thread
timeout 200 ncu --metrics $M -k regex:k5r --csv python3 .gpu/k5b/probe.py > $OUT/p/ncu.csv 2> $OUT/p/ncu_err.txt; echo "exit $? at $((SECONDS-S)) s" >> $OUT/p/ncu_err.txt
timeout 150 ncu --set full -k regex:k5rp --launch-count 1 -o $OUT/p/full python3 .gpu/k5b/probe.py > $OUT/p/ncu_full.txt 2>&1; echo "exit $? at $((SECONDS-S)) s" >> $OUT/p/ncu_full.txt
ncu --import $OUT/p/full.ncu-rep --page details > $OUT/p/full_details.txt 2>&1
timeout 100 python3 .gpu/k5b/pipe_sweep.py contracts/deployment-8b.toml > $OUT/p/sweep_dep.txt 2>&1; echo "exit $? at $((SECONDS-S)) s" >> $OUT/p/sweep_dep.txt
