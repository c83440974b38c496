"""The one-launch draft step (``draft_step`` op: K1 -> K2 -> K3 in one kernel) is bit-identical to the
three separate ops, on every K1 catalog case chained into K2 and K3, and at the bench's draft-step points.

Each K1 catalog case (its inputs verbatim, edge cases included: NaN and infinite scores, ties, C = 64,
hot-token remaps, every hidden dtype and width) is wired as one draft layer: K2 reads K1's outputs, K3
reads K2's work buffer; K2's tree state and K3's verify count come from a seeded generator, cycling
through the states that take different paths (no prior nodes, nodes cut by N, an unsorted or NaN prior
list: the serial merge, per-request deltas given or not). Both sides start from the same bytes; every
tensor is compared bitwise afterwards (outputs and untouched buffers alike). The op must report the
single launch (it returns False when it fell back to the three ops). The separate ops are themselves
held to the reference by tests/parity/test_cuda_parity.py.

Needs ``--hw=cuda`` (deselected otherwise).
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

from eagle4.backends.cuda import CudaBackend
from eagle4.cases.catalog import cases_for

# (cumu_count, verify_num, max_verify_num, max_node_count, prior list) per variant; cycled over the cases
VARIANTS = ((21, 64, 64, 1024, "sorted"), (0, 16, 32, 128, "sorted"), (1010, 64, 64, 1024, "sorted"),
            (40, 1, 64, 256, "unsorted"), (70, 48, 64, 1024, "nan"), (9, 0, 16, 64, "sorted"))


@functools.cache
def _backend(kernel_src: str | None) -> CudaBackend:
    b = CudaBackend(kernel_src=kernel_src)
    b.require()
    return b


def _layer(case, i: int, dev):
    """(K1, K2, K3) tensors and params of one draft layer built on a K1 catalog case."""
    import torch

    from eagle4 import dtypes as dt
    from eagle4 import kernels

    rng = np.random.default_rng(1000 + i)
    t1 = {k: dt.to_torch(v, dev) for k, v in case.inputs.items() if k != "output_tokens"}
    p1 = dict(case.params)
    t1.update({k: v for k, v in kernels.module("draft_tree_score").allocate(t1, p1, dev).items()
               if k != "output_tokens"})
    B, K, W = p1["batch_size"], p1["node_top_k"], p1["tree_width"]
    C = W * K
    cc, vn, M, N, prior = VARIANTS[i % len(VARIANTS)]
    I = 16 if i % 2 else 64
    Ic = 1 + min(I, 2 * W + i % 5)

    def f32(*shape):
        return torch.tensor(rng.random(shape, dtype=np.float32), device=dev)

    def i64(hi, *shape):
        return torch.tensor(rng.integers(-1 if i % 3 == 0 else 0, hi, shape), dtype=torch.int64, device=dev)

    sort_scores = torch.sort(f32(B, M), 1, descending=True).values
    if prior == "unsorted":
        sort_scores = f32(B, M)
    elif prior == "nan":
        sort_scores[:, M // 3] = float("nan")
    tokens = t1.get("topk_tokens_sampling")
    if tokens is None or not p1["use_hot_token_id"] and i % 2:
        tokens = i64(128256, B, C)  # K2's tokens from elsewhere (K1 does not remap without the hot table)
    t2 = dict(topk_probas=t1["curr_layer_scores"], topk_tokens=tokens, sorted_scores=t1["sort_layer_scores"],
              sorted_indexs=t1["sort_layer_indices"], parent_indexs=t1["parent_indices_in_layer"],
              topk_indexs=torch.tensor(np.stack([rng.permutation(max(N, W))[:W] for _ in range(B)]), device=dev),
              input_tree_mask=torch.tensor(rng.random((B, W, Ic - 1)) < 0.5, device=dev),
              cumu_tokens=i64(99, B, N), cumu_scores=f32(B, N), cumu_deltas=i64(9, B, N), prev_indexs=i64(9, B, N),
              next_indexs=i64(9, B, N), side_indexs=i64(9, B, N), output_scores=f32(B, K),
              output_tokens=i64(9, B, K), work_scores=f32(B, M + K), sort_scores=sort_scores.contiguous(),
              output_tree_mask=torch.tensor(rng.random((B, K, I + 1)) < 0.5, device=dev))
    p2 = dict(batch_size=B, node_top_k=K, tree_width=W, input_count=Ic, cumu_count=cc, verify_num=vn, curr_depth=3,
              max_input_size=I, max_node_count=N, max_verify_num=M)
    n0 = min(min(max(vn, 1), M), cc)
    t3 = dict(work_scores=t2["work_scores"], work_deltas=f32(K + 1),
              per_req_deltas=f32(B, K + 1) if i % 4 != 3 else None)
    p3 = dict(batch_size=B, node_count=n0, node_top_k=K, verify_num=vn, row_stride=M + K)
    return {"k1": t1, "k2": t2, "k3": t3}, {"k1": p1, "k2": p2, "k3": p3}


def _clone(tensors: dict) -> dict:
    """A deep copy that keeps the wiring (a tensor shared by two kernels stays one tensor)."""
    seen: dict[int, object] = {}
    out = {}
    for n, t in tensors.items():
        out[n] = {}
        for k, v in t.items():
            if v is not None and id(v) not in seen:
                seen[id(v)] = v.clone()
            out[n][k] = None if v is None else seen[id(v)]
    return out


def _args(tensors: dict, params: dict) -> list:
    from eagle4.perf.inputs import abi_args
    from eagle4.perf.kernel_bench import STEP_KERNELS

    return [a for k, n in STEP_KERNELS for a in abi_args(k, tensors[n], params[n])]


def _check(backend, tensors, params, label: str, fused_expected: bool = True):
    import torch

    from eagle4 import dtypes as dt
    from eagle4.perf.inputs import abi_args
    from eagle4.perf.kernel_bench import STEP_KERNELS

    step = backend.draft_step_op()
    assert step is not None, "the kernel source defines no draft_step op"
    sep, one = _clone(tensors), _clone(tensors)
    try:
        for k, n in STEP_KERNELS:
            backend.op(k)(*abi_args(k, sep[n], params[n]))
    except ValueError as e:  # a violated precondition: the one-launch op must refuse it too
        with pytest.raises(ValueError):
            step(*_args(one, params))
        return f"{label}: both refuse ({str(e).splitlines()[0][:80]})"
    launched_once = step(*_args(one, params))
    torch.cuda.synchronize()
    assert launched_once == fused_expected, f"{label}: draft_step returned {launched_once}, expected {fused_expected}"
    bad = [f"{n}.{k}" for n in sep for k, v in sep[n].items()  # bytes: NaN payloads too; empty tensors equal
           if v is not None and dt.to_numpy(v).tobytes() != dt.to_numpy(one[n][k]).tobytes()]
    assert not bad, f"{label}: one launch differs from the three ops in {bad}"
    return label


def _k1_cases():
    return [pytest.param(c, i, id=c.case_id) for i, c in enumerate(cases_for("draft_tree_score", include_large=False))]


@pytest.mark.parity
@pytest.mark.cuda
@pytest.mark.parametrize("case,i", _k1_cases())
def test_draft_step_one_launch_matches_three_ops(case, i, pytestconfig):
    import torch

    backend = _backend(pytestconfig.getoption("--kernel-src"))
    tensors, params = _layer(case, i, torch.device("cuda", 0))
    _check(backend, tensors, params, case.case_id)


@pytest.mark.parity
@pytest.mark.cuda
@pytest.mark.parametrize("contract", ["contracts/default.toml", "contracts/deployment-8b.toml"])
def test_draft_step_bench_points(contract, pytestconfig):
    import torch

    from eagle4.perf.inputs import make_call
    from eagle4.perf.points import operating_points, shape_from_contract

    backend = _backend(pytestconfig.getoption("--kernel-src"))
    for p in operating_points(shape_from_contract(contract)):
        if p.kernel == "draft_step":
            tensors, params = make_call(p, torch.device("cuda", 0))
            _check(backend, tensors, params, p.pid)


@pytest.mark.parity
@pytest.mark.cuda
def test_draft_step_unwired_falls_back(pytestconfig):
    """K2's inputs not K1's outputs: the op runs the three kernels (and says so), same bytes."""
    import torch

    backend = _backend(pytestconfig.getoption("--kernel-src"))
    case = cases_for("draft_tree_score", include_large=False)[1]
    tensors, params = _layer(case, 1, torch.device("cuda", 0))
    tensors["k2"]["sorted_scores"] = tensors["k2"]["sorted_scores"].clone()
    _check(backend, tensors, params, "unwired", fused_expected=False)
