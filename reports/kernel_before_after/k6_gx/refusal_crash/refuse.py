# Does an op refusal (TORCH_CHECK) crash the process? faulthandler prints the Python stack on a segfault.
import sys, faulthandler, torch
faulthandler.enable()
from eagle4.backends.cuda import CudaBackend
from eagle4.perf.points import operating_points, shape_from_contract
from eagle4.perf.inputs import make_call
from eagle4.perf.kernel_bench import _ours, select
b = CudaBackend(); mod = b._load(); dev = torch.device("cuda", 0)
pts = {p.pid: p for p in select(operating_points(shape_from_contract("contracts/deployment-8b.toml")), "reject_sample")}
for pid, form in [("reject_sample/B8/Q64/V128256", (3, 1)), ("reject_sample/B1/Q64/V128256", (1, 1)),
                  ("reject_sample/B8/Q64/V128256", (1, 1))]:
    p = pts[pid]; t, prm = make_call(p, dev); fn = _ours(p, b, t, prm)
    mod._k6_form(*form)
    print("calling", pid, form, flush=True)
    try:
        fn(); torch.cuda.synchronize(); print("  ran", flush=True)
    except Exception as e:
        print("  raised", type(e).__name__, str(e).splitlines()[0][:120], flush=True)
    mod._k6_form(0, 0)
print("done", flush=True)
