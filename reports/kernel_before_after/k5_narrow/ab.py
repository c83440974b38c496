"""K5's register kernel with its entries in groups (k5r_body's GR: each group a part of its own, so that its passes
run while later groups' loads are in flight) and its narrow build (64-thread blocks, 32 vectors a thread, 6 blocks an
SM), against the automatic choice: one build, one process, the bench's graph timer in alternating rounds, every output compared with the automatic
choice's by K5's parity rule. Usage: python ab.py [rounds] [contract...]"""
import sys

import torch

from eagle4 import stats
from eagle4.backends.cuda import CudaBackend
from eagle4.perf import timing
from eagle4.perf.anchors import copy_same_bytes
from eagle4.perf.inputs import make_call
from eagle4.perf.kernel_bench import _ours, _same_by_spec, _spec_outputs, select, shape_name
from eagle4.perf.points import operating_points, shape_from_contract

rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
contracts = sys.argv[2:] or ["contracts/deployment-8b.toml", "contracts/default.toml"]
backend = CudaBackend()
mod = backend._load()
dev = torch.device("cuda", 0)
print("held clusters (k5r14_kernel<8> / narrow):",
      {cs: (mod._k5_narrow_held(0, cs), mod._k5_narrow_held(1, cs)) for cs in (2, 4, 8, 16)}, flush=True)
# label -> (narrow, groups)
CHOICES = {"auto": (-1, 0), "g2": (-1, 2), "g4": (-1, 4), "g8": (-1, 8), "narrow": (1, 0), "narrow_g8": (1, 8)}


def timed(fn):
    g, n = timing.sizes_for(timing.probe_us(fn))
    return stats.median(timing.graph_times(fn, g, n))


for c in contracts:
    shape = shape_from_contract(c)
    for p in select(operating_points(shape, "all"), "logits_to_probas"):
        tensors, params = make_call(p, dev)
        fn = _ours(p, backend, tensors, params)
        ref = None
        res = {k: [] for k in CHOICES}
        same = {}
        for _ in range(rounds):
            for lab, (nw, gr) in CHOICES.items():
                mod._k5_narrow(nw)
                mod._k5_groups(gr)
                outs = _spec_outputs("logits_to_probas", tensors)
                for _a, t in outs:
                    t.fill_(-7.0 if t.is_floating_point() else 7)
                fn()
                torch.cuda.synchronize()
                got = [(a, t.clone()) for a, t in outs]
                if ref is None:
                    ref = got
                else:
                    same[lab] = same.get(lab, "same") if _same_by_spec(ref, got) else "DIFFERS"
                res[lab].append(timed(fn))
        mod._k5_narrow(0)
        mod._k5_groups(0)
        cp = timed(copy_same_bytes(tensors, params))
        line = "  ".join(f"{k} {stats.median(v):8.2f} [{min(v):.2f}-{max(v):.2f}] {same.get(k, 'ref')}"
                         for k, v in res.items())
        print(f"ab {shape_name(shape):14s} {p.pid:38s} {line}  copy {cp:8.2f}", flush=True)
        del tensors, fn, ref
        torch.cuda.empty_cache()
