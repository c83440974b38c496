#!/bin/bash
# 5 processes of timing_probe, pinned like the bench (run from .gpu/tp/ on the device; kept here as the record)
export PYTHONPATH=/tmp/site:$PWD/src
python3 -c "from eagle4.backends.cuda import CudaBackend as C; print(C().available())" || exit 1
PIN=(); command -v taskset >/dev/null && [ "$(nproc)" -ge 4 ] && PIN=(taskset -c 2)
for i in 0 1 2 3 4; do timeout 200 "${PIN[@]}" python3 .gpu/tp/timing_probe.py $i > $OUT/tp_$i.txt 2>&1; echo "run $i rc $?"; done
cat $OUT/tp_*.txt | grep ^ROW > $OUT/rows.csv
python3 .gpu/tp/summ.py $OUT/rows.csv
