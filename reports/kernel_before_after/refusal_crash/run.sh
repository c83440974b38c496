which gdb cuda-gdb addr2line
for v in A B C; do timeout 240 python3 -c "from eagle4.backends.cuda import CudaBackend as C; b=C(kernel_src='.gpu/segv/$v.cu'); print('$v', b.available())" > /tmp/b_$v.txt 2>&1 & done; wait
tail -2 /tmp/b_*.txt
for v in A B C; do echo "== $v"; LD_PRELOAD=$PWD/.gpu/segv/segv.so timeout 60 python3 .gpu/refusals.py .gpu/segv/$v.cu > /tmp/r_$v.txt 2>&1; echo "exit $?"; python3 .gpu/segv/sym.py < /tmp/r_$v.txt | tail -45; done
if which gdb >/dev/null; then echo "== gdb A"; timeout 120 gdb -batch -ex run -ex bt --args python3 .gpu/refusals.py .gpu/segv/A.cu 2>&1 | grep -v "^\[New Thread\|^\[Thread" | tail -40; fi
