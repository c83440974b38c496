D=.gpu/k6y; R=/tmp/r2; mkdir -p $R
find ~/.cache/eagle4/cuda_ext -name lock -print -delete 2>/dev/null
date -u +%T
for v in SR tr_SR; do
  (timeout 300 python3 -c "from eagle4.backends.cuda import CudaBackend as C; print('$v', C(kernel_src='$D/$v.cu').available())" > $R/build_$v.txt 2>&1) &
done
timeout 100 python3 $D/trace.py $D/tr_cur.cu $D/tr_RW.cu > $R/trace.txt 2>&1; cat $R/trace.txt | cut -c1-250
wait; tail -qn1 $R/build_*.txt; date -u +%T
timeout 200 python3 -m eagle4.perf.kernel_bench compare-src --contract contracts/default.toml --contract contracts/deployment-8b.toml --src $D/cur.cu --src $D/nodiv.cu --src $D/S.cu --src $D/R.cu --src $D/SR.cu --kernels reject_sample --rounds 7 --out $R/compare2.csv > $R/compare2_log.txt 2>&1
cat $R/compare2_log.txt | cut -c1-250; date -u +%T
EAGLE4_KERNEL_SRC=$D/SR.cu timeout 150 python3 -m pytest tests/parity/test_backend_parity.py tests/parity/test_cuda_parity.py tests/parity/test_h100_dump_replay.py tests/parity/test_cuda_goldens.py -k "cuda and reject_sample" --hw=cuda -p no:xdist -q > $R/parity_SR.txt 2>&1; echo "parity SR rc $?"; tail -n2 $R/parity_SR.txt; date -u +%T
timeout 60 python3 $D/trace.py $D/tr_SR.cu > $R/trace_SR.txt 2>&1; cat $R/trace_SR.txt | cut -c1-250; date -u +%T
tar -czf $OUT/r2.tgz -C /tmp r2
