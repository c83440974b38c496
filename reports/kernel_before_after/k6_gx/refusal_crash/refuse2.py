# which kind of refusal at K6's forced-form check crashes: run as refuse2.py SRC
import sys, faulthandler, torch
faulthandler.enable()
from eagle4.backends.cuda import CudaBackend
from eagle4.perf.points import operating_points, shape_from_contract
from eagle4.perf.inputs import make_call
from eagle4.perf.kernel_bench import _ours, select
b = CudaBackend(kernel_src=sys.argv[1]); mod = b._load(); dev = torch.device("cuda", 0)
pts = {p.pid: p for p in select(operating_points(shape_from_contract("contracts/deployment-8b.toml")), "reject_sample")}
p = pts["reject_sample/B8/Q64/V128256"]; t, prm = make_call(p, dev); fn = _ours(p, b, t, prm)
# a precondition refusal (E4_PRE, TORCH_CHECK_VALUE) of the same op first
op = b.op("reject_sample")
from eagle4.perf.inputs import abi_args
args = list(abi_args("reject_sample", t, prm))
print("args", len(args), flush=True)
mod._k6_form(3, 1)
print("calling forced g1 at B8 with", sys.argv[1], flush=True)
try:
    fn(); torch.cuda.synchronize(); print("  ran", flush=True)
except Exception as e:
    print("  raised", type(e).__name__, str(e).splitlines()[0][:120], flush=True)
print("done", flush=True)
