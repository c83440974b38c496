R=/tmp/diag; mkdir -p $R
find ~/.cache/eagle4/cuda_ext -name lock -print -delete 2>/dev/null
date -u +%T
timeout 200 python3 -m eagle4.perf.kernel_bench sweep --kernel reject_sample --contract contracts/deployment-8b.toml --contract contracts/default.toml --points B1 > $R/sweep_k6_b1.txt 2>&1; cut -c1-220 $R/sweep_k6_b1.txt | tail -30; date -u +%T
timeout 300 ncu --set full --import-source yes --cache-control none --clock-control none -k regex:k6r_kernel -o $R/k6 python3 -m eagle4.perf.kernel_bench ncu-probe --contract contracts/deployment-8b.toml --contract contracts/default.toml --points B1 --kernels reject_sample > $R/ncu_log.txt 2>&1; echo "ncu rc $?"; tail -3 $R/ncu_log.txt
timeout 60 ncu --import $R/k6.ncu-rep --page source --csv --print-source cuda,sass > $R/k6_source.csv 2>&1; echo "src rc $?"; wc -c $R/k6_source.csv; head -c 600 $R/k6_source.csv
timeout 60 ncu --import $R/k6.ncu-rep --page details --csv > $R/k6_details.csv 2>&1; wc -c $R/k6_details.csv
rm -f $R/k6.ncu-rep.keep; date -u +%T
tar -czf $OUT/diag.tgz -C /tmp diag
