"""One launch of K5 at deployment-8b's draft B32 and verify B1 under each of a few choices (for ncu)."""
import torch

from eagle4.backends.cuda import CudaBackend
from eagle4.perf import kernel_bench as kb
from eagle4.perf.inputs import make_call
from eagle4.perf.points import operating_points, shape_from_contract

backend = CudaBackend()
mod = backend._load()
dev = torch.device("cuda", 0)
sh = shape_from_contract("contracts/deployment-8b.toml")
for p in kb.select(operating_points(sh, "all"), "logits_to_probas"):
    if p.pid.split("/")[1:3] not in (["draft", "B32"], ["verify", "B1"]):
        continue
    tensors, params = make_call(p, dev)
    fn = kb._ours(p, backend, tensors, params)
    for c in ((0, 0, 0, 0, 0, 0, 0, 0), (0, 0, 0, 0, 0, 0, 0, -1), (0, 0, 0, 0, 0, 0, -1, -1), (0, 0, 0, 0, 0, 0, 0, 256)):
        kb._k5_set(mod, *c)
        fn()
        torch.cuda.synchronize()
        print(p.pid, c, flush=True)
    del tensors, fn
