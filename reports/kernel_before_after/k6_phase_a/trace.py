# phase trace (E4_T stamps) of K6 from kernel sources built with E4_TRACE, automatic launch choice, B = 1 points
import sys
from pathlib import Path
from eagle4.perf import kernel_bench as kb
from eagle4.backends.cuda import CudaBackend

settings, apply, label = kb.SWEEPS["reject_sample"]
kb.SWEEPS["reject_sample"] = (settings[:1], apply, label)
for src in sys.argv[1:]:
    be = CudaBackend(kernel_src=src)
    for c in ("contracts/default.toml", "contracts/deployment-8b.toml"):
        kb._trace_points(be, be._load(), kb.shape_from_contract(c), "reject_sample",
                         lambda m: print(Path(src).name, m, flush=True), "B1", 20)
