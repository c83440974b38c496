"""K5's form without clusters (GX) against the cluster form: one build, one process, the bench's graph timer in
alternating rounds, and a bitwise comparison of every output. Usage: python ab.py [rounds] [contract...]"""
import sys

import torch

from eagle4 import stats
from eagle4.backends.cuda import CudaBackend
from eagle4.perf import timing
from eagle4.perf.anchors import copy_same_bytes
from eagle4.perf.inputs import make_call
from eagle4.perf.kernel_bench import _ours, select, shape_name
from eagle4.perf.points import operating_points, shape_from_contract

rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
contracts = sys.argv[2:] or ["contracts/deployment-8b.toml"]
backend = CudaBackend()
mod = backend._load()
dev = torch.device("cuda", 0)
# label -> (gx, pf)
CHOICES = {"cluster": (-1, 0), "auto": (0, 0), "gx": (1, 0), "gx_pf50": (1, 50), "gx_nopf": (1, -1)}


def timed(fn):
    g, n = timing.sizes_for(timing.probe_us(fn))
    return stats.median(timing.graph_times(fn, g, n))


for c in contracts:
    shape = shape_from_contract(c)
    for p in select(operating_points(shape, "all"), "logits_to_probas"):
        tensors, params = make_call(p, dev)
        fn = _ours(p, backend, tensors, params)
        outs = [k for k in ("probas", "argmax_ids", "is_greedy") if tensors.get(k) is not None]
        ref = None
        res = {k: [] for k in CHOICES}
        same = {}
        for rd in range(rounds):
            for lab, (gx, pf) in CHOICES.items():
                mod._k5_gx(gx)
                mod._k5_prefetch(pf)
                for k in outs:
                    tensors[k].fill_(-7.0 if tensors[k].is_floating_point() else 7)
                try:
                    fn()
                    torch.cuda.synchronize()
                except RuntimeError as e:
                    res[lab].append(float("nan"))
                    same[lab] = f"n/a {str(e)[:80]}"
                    continue
                got = [tensors[k].clone() for k in outs]
                if ref is None:
                    ref = got
                else:
                    eq = all(torch.equal(a.view(torch.int32) if a.dtype == torch.float32 else a,
                                         b.view(torch.int32) if b.dtype == torch.float32 else b)
                             for a, b in zip(ref, got))
                    same[lab] = same.get(lab, "bitwise") if eq else "DIFFERS"
                res[lab].append(timed(fn))
        mod._k5_gx(0)
        mod._k5_prefetch(0)
        cp = timed(copy_same_bytes(tensors, params))
        line = "  ".join(f"{k} {stats.median(v):8.2f} [{min(v):.2f}-{max(v):.2f}] {same.get(k, 'ref')}" for k, v in res.items())
        print(f"ab {shape_name(shape):14s} {p.pid:38s} {line}  copy {cp:8.2f}", flush=True)
        del tensors, fn, ref
        torch.cuda.empty_cache()
