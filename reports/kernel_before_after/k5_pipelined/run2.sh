set -x
S=$SECONDS
mkdir -p $OUT/p
python3 -c "from eagle4.backends.cuda import CudaBackend; CudaBackend()._load()" > $OUT/p/build.txt 2>&1; echo "build exit $? at $((SECONDS-S)) s" >> $OUT/p/build.txt
timeout 150 python3 .gpu/k5b/pipe_sweep.py contracts/deployment-8b.toml > $OUT/p/sweep_dep.txt 2>&1; echo "exit $? at $((SECONDS-S)) s" >> $OUT/p/sweep_dep.txt
timeout 150 python3 .gpu/k5b/pipe_sweep.py contracts/deployment-8b.toml rev > $OUT/p/sweep_dep_rev.txt 2>&1; echo "exit $? at $((SECONDS-S)) s" >> $OUT/p/sweep_dep_rev.txt
