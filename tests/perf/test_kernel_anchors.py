"""The bench's PyTorch anchors compute what our kernels compute (CPU; always runs).

On the bench's own inputs (``perf.inputs.make_call``) at small sizes, every same-computation anchor
of ``perf.anchors`` is run next to the PyTorch reference and their outputs compared (integers
exactly, floats to the K5 tolerance of KERNELS.md §5.5, since the anchors may sum in another
order). A ratio "ours / anchor" is only meaningful when both sides compute the same outputs.
"""

from __future__ import annotations

import copy

import pytest
import torch

from eagle4 import kernels
from eagle4.perf.anchors import ANCHORS
from eagle4.perf.inputs import make_call
from eagle4.perf.points import BenchShape, operating_points
from eagle4.spec import kernel_spec

pytestmark = [pytest.mark.cpu]

SMALL = BenchShape(contract_path="test", contract_hash="0" * 64, batches=(1, 3), K=4, W=4, D=5, Vn=16, N=128, M=32,
                   I=32, V=260, V_hot=96, H=32, dtype="float16", L=40, cov_max=0.02, runs=5)
POINTS = operating_points(SMALL)


def _reference(kernel: str, tensors: dict, params: dict) -> dict:
    spec = kernel_spec(kernel)
    fn = getattr(kernels.module(kernel), spec.op)
    kw = {a.name: (params[a.name] if a.role == "scalar" else tensors.get(a.name)) for a in spec.args}
    fn(**kw)
    return {a.name: tensors[a.name] for a in spec.outputs if a.abi and tensors.get(a.name) is not None}


def _close(name, got, want):
    got = got.reshape(-1)[:want.numel()].reshape(want.shape) if got.numel() >= want.numel() else got
    assert got.shape == want.shape, f"{name}: shape {tuple(got.shape)} != {tuple(want.shape)}"
    if want.dtype.is_floating_point:
        torch.testing.assert_close(got.float(), want.float(), rtol=5e-5, atol=1e-7, msg=name)
    else:
        assert torch.equal(got.to(torch.int64), want.to(torch.int64)), f"{name}: {got} != {want}"


@pytest.mark.parametrize("point", POINTS, ids=[p.pid for p in POINTS])
def test_anchor_matches_reference(point):
    dev = torch.device("cpu")
    tensors, params = make_call(point, dev)
    for name, build, same in ANCHORS[point.kernel]:
        if not same:
            continue
        mine = copy.deepcopy(tensors)
        got = build(mine, params)()
        ref_t = copy.deepcopy(tensors)
        if point.kernel == "draft_step":
            want = dict(_reference("draft_tree_score", ref_t["k1"], params["k1"]))
            want.update(_reference("update_draft_state", ref_t["k2"], params["k2"]))
            want.update(_reference("work_deltas", ref_t["k3"], params["k3"]))
        else:
            want = _reference(point.kernel, ref_t, params)
            if point.kernel == "update_verify":
                want["req_to_token"] = ref_t["req_to_token"]
        missing = set(want) - set(got)
        assert not missing, f"{name} does not produce {sorted(missing)}"
        for k, v in want.items():
            if k == "next_hidden":  # rows past N_unf are not outputs (left untouched by the kernel)
                n = int((want["next_positions"] != -1).sum())
                v, got[k] = v[:n], got[k][:n]
            _close(f"{point.pid} {name} {k}", got[k], v)
