"""Property tests of the K1/K2 references (KERNELS.md §1.5, §2.5) and an oracle check of their catalogs.

The oracle (``naive_draft``) is a scalar loop transcription of the spec text; the vectorized
reference must agree with it bit for bit on every catalog case and on random inputs.
"""

from __future__ import annotations

import math

import naive_draft
import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from eagle4 import dtypes as dt
from eagle4 import kernels
from eagle4.backends.ref import ReferenceBackend
from eagle4.cases import draft_tree_score as k1_cases
from eagle4.cases import update_draft_state as k2_cases
from eagle4.compare import compare_outputs
from eagle4.kernels import PreconditionError

REF = ReferenceBackend()
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# values that provoke every ordering rule: 2^-8 grid ties, +-0, NaN, +-inf
SPECIAL = st.sampled_from([0.0, -0.0, math.nan, math.inf, -math.inf, 0.5, 0.25, 1.0])
SCORE = st.one_of(st.integers(0, 8).map(lambda i: i / 256.0), SPECIAL,
                  st.floats(2.0 ** -20, 1.0, width=32))


def _check(kernel, case):
    out = REF.run(kernel, case.inputs, case.params)
    oracle = (naive_draft.k1 if kernel == "draft_tree_score" else naive_draft.k2)(case.inputs, case.params)
    res = compare_outputs(kernel, oracle, out, case.inputs, case.params, case.case_id)
    assert res.ok, res.report()
    return out


@pytest.mark.parametrize("case", k1_cases.cases(), ids=lambda c: c.case_id)
def test_k1_catalog_matches_oracle(case):
    _check("draft_tree_score", case)


@pytest.mark.parametrize("case", k2_cases.cases(), ids=lambda c: c.case_id)
def test_k2_catalog_matches_oracle(case):
    _check("update_draft_state", case)


def test_catalogs_are_deterministic_and_unique():
    for mod in (k1_cases, k2_cases):
        a, b = mod.cases(), mod.cases()
        assert [c.case_id for c in a] == [c.case_id for c in b]
        assert len({c.case_id for c in a}) == len(a)
        for x, y in zip(a, b, strict=True):
            assert x.params == y.params
            for k in x.inputs:
                assert np.array_equal(dt.bits(x.inputs[k]), dt.bits(y.inputs[k])), (x.case_id, k)


@st.composite
def k1_inputs(draw):
    K = draw(st.integers(1, 10))
    W = draw(st.integers(1, 64 // K))
    B = draw(st.integers(1, 3))
    H = draw(st.sampled_from([1, 3]))
    C = W * K
    p = np.array(draw(st.lists(SCORE, min_size=B * C, max_size=B * C)), np.float32).reshape(B, C)
    ls = np.array(draw(st.lists(SCORE, min_size=B * W, max_size=B * W)), np.float32).reshape(B, W)
    cc = draw(st.integers(0, 2000))
    hd = draw(st.sampled_from(["float32", "float16", "bfloat16"]))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    hot = draw(st.booleans())
    inputs = {"topk_probas_sampling": p, "last_layer_scores": ls,
              "input_hidden_states": rng.standard_normal((B * W, H)).astype(np.float32).astype(dt.numpy_dtype(hd)),
              "topk_tokens_sampling": rng.integers(-2, 70, (B, C)).astype(np.int64)}
    if hot:
        inputs["hot_token_id"] = rng.integers(0, 1000, draw(st.integers(0, 80))).astype(np.int64)
    params = {"batch_size": B, "node_top_k": K, "tree_width": W, "cumu_count": cc, "use_hot_token_id": hot}
    return inputs, params


@SETTINGS
@given(k1_inputs())
def test_k1_sort_order_and_projection(args):
    inputs, params = args
    out = REF.run("draft_tree_score", inputs, params)
    B, K, W, cc = (params[k] for k in ("batch_size", "node_top_k", "tree_width", "cumu_count"))
    s, idx = out["curr_layer_scores"], out["sort_layer_indices"]
    for b in range(B):
        # a permutation of 0..C-1
        assert sorted(idx[b].tolist()) == list(range(W * K))
        # (key desc, index asc) order; NaN keys as -inf, +0 == -0
        keys = [-math.inf if math.isnan(x) else float(x) for x in s[b, idx[b]]]
        for r in range(W * K - 1):
            assert keys[r] > keys[r + 1] or (keys[r] == keys[r + 1] and idx[b, r] < idx[b, r + 1])
        # sorted scores are a bit copy of s[pi]
        assert np.array_equal(dt.bits(out["sort_layer_scores"][b]), dt.bits(s[b, idx[b]]))
    # cache/parent consistency and the gather
    assert np.array_equal(out["cache_topk_indices"], cc + idx[:, :K])
    assert np.array_equal(out["parent_indices_in_layer"], idx[:, :K] // K)
    rows = np.arange(B)[:, None] * W + out["parent_indices_in_layer"]
    assert np.array_equal(dt.bits(out["output_hidden_states"]), dt.bits(inputs["input_hidden_states"][rows]))
    np.testing.assert_array_equal(out["output_tokens"],
                                  np.take_along_axis(out["topk_tokens_sampling"], idx[:, :K], axis=1))
    # and the oracle agrees bit for bit
    res = compare_outputs("draft_tree_score", naive_draft.k1(inputs, params), out, inputs, params)
    assert res.ok, res.report()


@st.composite
def k2_inputs(draw):
    K = draw(st.integers(1, 10))
    W = draw(st.integers(1, 64 // K))
    B = draw(st.integers(1, 3))
    C = W * K
    M = draw(st.integers(1, 40))
    N = draw(st.integers(1, 120))
    cc = draw(st.integers(0, 130))
    I = draw(st.integers(0, 12))
    Ic = draw(st.integers(1, I + 1))
    Vn = draw(st.integers(-3, 50))
    sorted_new = draw(st.booleans())
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    s = np.array(draw(st.lists(SCORE, min_size=B * C, max_size=B * C)), np.float32).reshape(B, C)
    key = np.where(np.isnan(s), -np.inf, s)
    perm = np.argsort(-key, axis=1, kind="stable") if sorted_new else rng.integers(-2, C + 2, (B, C))
    old = np.array(draw(st.lists(SCORE, min_size=B * M, max_size=B * M)), np.float32).reshape(B, M)
    if draw(st.booleans()):
        old = -np.sort(-np.where(np.isnan(old), -np.inf, old), axis=1).astype(np.float32)
    inputs = {
        "topk_probas": s, "topk_tokens": rng.integers(0, 9000, (B, C)).astype(np.int64),
        "sorted_scores": np.take_along_axis(s, np.clip(perm, 0, C - 1), axis=1).astype(np.float32),
        "sorted_indexs": perm.astype(np.int64),
        "parent_indexs": rng.integers(-2, W + 2, (B, K)).astype(np.int64),
        "topk_indexs": rng.integers(-2, N + 3, (B, W)).astype(np.int64),
        "input_tree_mask": rng.random((B, W, Ic - 1)) < 0.5,
        "cumu_tokens": np.full((B, N), -777, np.int64), "cumu_scores": np.full((B, N), -3.0, np.float32),
        "cumu_deltas": np.full((B, N), -1, np.int64), "prev_indexs": np.full((B, N), -1, np.int64),
        "next_indexs": np.full((B, N), -2, np.int64), "side_indexs": np.full((B, N), -3, np.int64),
        "output_scores": np.full((B, K), -999.0, np.float32), "output_tokens": np.full((B, K), -999, np.int64),
        "work_scores": np.full((B, M + K), -123.0, np.float32), "sort_scores": old,
        "output_tree_mask": (np.arange(B * K * (I + 1)) % 3 == 0).reshape(B, K, I + 1),
    }
    params = {"batch_size": B, "node_top_k": K, "tree_width": W, "input_count": Ic, "cumu_count": cc,
              "verify_num": Vn, "curr_depth": draw(st.integers(1, 9)), "max_input_size": I, "max_node_count": N,
              "max_verify_num": M}
    return inputs, params


@SETTINGS
@given(k2_inputs())
def test_k2_untouched_regions_and_merge(args):
    inputs, params = args
    out = REF.run("update_draft_state", inputs, params)
    B, K, W, Ic, cc, N, M = (params[k] for k in ("batch_size", "node_top_k", "tree_width", "input_count",
                                                  "cumu_count", "max_node_count", "max_verify_num"))
    C = W * K
    vn = min(max(params["verify_num"], 1), M)
    n0, n1 = min(vn, cc), min(vn, cc + C)
    written = np.zeros((B, N), bool)
    written[:, cc:min(cc + C, N)] = True
    parents = np.zeros((B, N), bool)
    for b in range(B):
        for P in inputs["topk_indexs"][b]:
            if 0 <= P < N:
                parents[b, P] = True
    for name in ("cumu_tokens", "cumu_scores", "cumu_deltas", "prev_indexs", "side_indexs"):
        assert np.array_equal(dt.bits(out[name][~written]), dt.bits(inputs[name][~written])), name
    untouched_next = ~(written | parents)
    assert np.array_equal(out["next_indexs"][untouched_next], inputs["next_indexs"][untouched_next])
    assert np.array_equal(dt.bits(out["work_scores"][:, n0 + K:]), dt.bits(inputs["work_scores"][:, n0 + K:]))
    assert np.array_equal(dt.bits(out["sort_scores"][:, n1:]), dt.bits(inputs["sort_scores"][:, n1:]))
    assert np.array_equal(out["output_tree_mask"][:, :, max(Ic - 1, 0):],
                          inputs["output_tree_mask"][:, :, max(Ic - 1, 0):])
    # work buffer = old prefix, then this layer's top-K
    assert np.array_equal(dt.bits(out["work_scores"][:, :n0]), dt.bits(inputs["sort_scores"][:, :n0]))
    assert np.array_equal(dt.bits(out["work_scores"][:, n0:n0 + K]), dt.bits(inputs["sorted_scores"][:, :K]))
    # sort_scores prefix: for descending NaN-free inputs, the descending merge of both lists
    for b in range(B):
        A, S = inputs["sort_scores"][b, :n0], inputs["sorted_scores"][b]
        with np.errstate(invalid="ignore"):  # inf - inf in np.diff
            desc = (np.diff(A) <= 0).all() and (np.diff(S) <= 0).all()
        if not (np.isnan(A).any() or np.isnan(S).any()) and desc:
            want = np.sort(np.concatenate([A, S]).astype(np.float64))[::-1][:n1]
            assert np.array_equal(out["sort_scores"][b, :n1].astype(np.float64), want)
    res = compare_outputs("update_draft_state", naive_draft.k2(inputs, params), out, inputs, params)
    assert res.ok, res.report()


def test_k2_decay_is_f32_multiply():
    """cumu_scores = f32(p * 0.9999f): one binary32 multiply by 0x3F7FF972, not an f64 product."""
    c = k2_cases.make("decay", B=1, K=8, W=8, cc=0, N=64, seed=9)
    out = REF.run("update_draft_state", c.inputs, c.params)
    p = c.inputs["topk_probas"][0]
    want = p * np.array(0x3F7FF972, np.uint32).view(np.float32)
    assert np.array_equal(dt.bits(out["cumu_scores"][0, :64]), dt.bits(want.astype(np.float32)))


@pytest.mark.parametrize("params,match", [
    ({"node_top_k": 0}, "node_top_k"), ({"tree_width": 0}, "tree_width"),
    ({"node_top_k": 9, "tree_width": 8}, "C must be <= 64")])
def test_k1_preconditions(params, match):
    c = k1_cases.make("pre", B=1, K=8, W=8, seed=1)
    p = dict(c.params, **params)
    t = {k: dt.to_torch(v) for k, v in c.inputs.items()}
    with pytest.raises(PreconditionError, match=match):
        kernels.call("draft_tree_score", t, p)


def test_k1_hot_without_table():
    c = k1_cases.make("pre", B=1, K=4, W=2, seed=1)
    t = {k: dt.to_torch(v) for k, v in c.inputs.items()}
    with pytest.raises(PreconditionError, match="hot_token_id"):
        kernels.call("draft_tree_score", t, dict(c.params, use_hot_token_id=True))


@pytest.mark.parametrize("params,match", [
    ({"input_count": 0}, "input_count"), ({"input_count": 66}, "max_input_size"),
    ({"node_top_k": 9, "tree_width": 8}, "C must be <= 64")])
def test_k2_preconditions(params, match):
    c = k2_cases.make("pre", B=1, K=8, W=8, seed=1)
    t = {k: dt.to_torch(v) for k, v in c.inputs.items()}
    with pytest.raises(PreconditionError, match=match):
        kernels.call("update_draft_state", t, dict(c.params, **params))


def test_k1_device_agnostic_meta_free():
    """The reference takes the device of its inputs (CPU here; CUDA runs reuse the same code)."""
    c = k1_cases.make("dev", B=2, K=4, W=2, seed=3)
    t = {k: dt.to_torch(v) for k, v in c.inputs.items()}
    out = kernels.call("draft_tree_score", t, c.params)
    assert all(v.device == torch.device("cpu") for v in out.values())
