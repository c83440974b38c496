D=.gpu/k6y; R=/tmp/r; mkdir -p $R
find ~/.cache/eagle4/cuda_ext -name lock -print -delete 2>/dev/null
date -u +%T
for v in cur nodiv A S R W RW tr_cur tr_RW; do
  (timeout 400 python3 -c "from eagle4.backends.cuda import CudaBackend as C; print('$v', C(kernel_src='$D/$v.cu').available())" > $R/build_$v.txt 2>&1) &
done; wait; tail -qn1 $R/build_*.txt; date -u +%T
timeout 330 python3 -m eagle4.perf.kernel_bench compare-src --contract contracts/default.toml --contract contracts/deployment-8b.toml --src $D/cur.cu --src $D/nodiv.cu --src $D/A.cu --src $D/S.cu --src $D/R.cu --src $D/W.cu --src $D/RW.cu --kernels reject_sample --rounds 5 --out $R/compare.csv > $R/compare_log.txt 2>&1
cat $R/compare_log.txt | cut -c1-250; date -u +%T
tar -czf $OUT/r1.tgz -C /tmp r
