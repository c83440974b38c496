"""Randomized parity of the C-sim K1-K4 against the reference (hypothesis), on shapes and values the
catalog does not pin: every C <= 64, ties, NaN/±0/±inf scores, hot tables with out-of-range ids,
capacity overflow and duplicate parents in K2, unsorted and NaN work rows in K3, malformed trees in K4.
Both refusing a case counts as agreement (the preconditions must match too)."""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from eagle4 import dtypes as dt
from eagle4.parity import check_against_reference

pytestmark = [pytest.mark.csim, pytest.mark.parity]
# --fuzz-examples (default 200) reaches here through the parity plugin
SETTINGS = settings(max_examples=int(os.environ.get("EAGLE4_FUZZ_EXAMPLES", "200")), deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                            HealthCheck.function_scoped_fixture])
SPECIAL = np.array([np.nan, -0.0, 0.0, np.inf, -np.inf, 1e-30, 0.5, 0.5], np.float32)


@pytest.fixture(scope="module")
def backend(csim_backend):
    return csim_backend


def _check(backend, kernel, inputs, params):
    return check_against_reference(backend, kernel, inputs, params, f"{kernel}/fuzz")


def _scores(rng, shape, special: bool, quant: bool):
    x = rng.random(shape).astype(np.float32)
    if quant:
        x = (np.floor(x * 8) / 8).astype(np.float32)
    if special and x.size:
        flat = x.reshape(-1)
        idx = rng.integers(0, flat.size, size=max(1, flat.size // 5))
        flat[idx] = SPECIAL[rng.integers(0, SPECIAL.size, size=idx.size)]
    return x


@SETTINGS
@given(seed=st.integers(0, 2**32 - 1), B=st.integers(0, 5), K=st.integers(1, 10), W=st.integers(1, 12),
       H=st.sampled_from([1, 3, 16]), hidden=st.sampled_from(["float16", "bfloat16", "float32"]),
       hot=st.booleans(), tokens=st.booleans(), special=st.booleans(), quant=st.booleans())
def test_k1_fuzz(backend, seed, B, K, W, H, hidden, hot, tokens, special, quant):
    rng = np.random.default_rng(seed)
    C = W * K
    Vh = int(rng.integers(0, 40))
    inputs = {"topk_probas_sampling": _scores(rng, (B, C), special, quant),
              "last_layer_scores": _scores(rng, (B, W), special, quant),
              "input_hidden_states": rng.standard_normal((B * W, H)).astype(dt.numpy_dtype(hidden))}
    if tokens or hot:
        inputs["topk_tokens_sampling"] = rng.integers(-2, Vh + 3, (B, C)).astype(np.int64)
    if hot:
        inputs["hot_token_id"] = rng.integers(0, 10**6, Vh).astype(np.int64)
    params = {"batch_size": B, "node_top_k": K, "tree_width": W, "cumu_count": int(rng.integers(0, 2000)),
              "use_hot_token_id": hot}
    _check(backend, "draft_tree_score", inputs, params)


@SETTINGS
@given(seed=st.integers(0, 2**32 - 1), B=st.integers(0, 4), K=st.integers(1, 10), W=st.integers(1, 8),
       N=st.sampled_from([1, 16, 64, 200]), M=st.integers(1, 40), Ic=st.integers(1, 12),
       cc=st.integers(0, 220), Vn=st.integers(-3, 300), special=st.booleans())
def test_k2_fuzz(backend, seed, B, K, W, N, M, Ic, cc, Vn, special):
    rng = np.random.default_rng(seed)
    C = W * K
    I = max(Ic - 1, int(rng.integers(0, 12)))
    sorted_scores = np.sort(_scores(rng, (B, C), special, True), axis=1)[:, ::-1].copy()
    inputs = {
        "topk_probas": _scores(rng, (B, C), special, False),
        "topk_tokens": rng.integers(0, 5000, (B, C)).astype(np.int64),
        "sorted_scores": sorted_scores,
        "sorted_indexs": rng.integers(-2, C + 3, (B, C)).astype(np.int64),
        "parent_indexs": rng.integers(-2, W + 2, (B, K)).astype(np.int64),
        "topk_indexs": rng.integers(-2, N + 3, (B, W)).astype(np.int64),
        "input_tree_mask": rng.random((B, W, Ic - 1)) < 0.5,
        "cumu_tokens": np.full((B, N), -777, np.int64), "cumu_scores": np.full((B, N), -3.0, np.float32),
        "cumu_deltas": np.full((B, N), -777, np.int64), "prev_indexs": np.full((B, N), -777, np.int64),
        "next_indexs": np.full((B, N), -777, np.int64), "side_indexs": np.full((B, N), -777, np.int64),
        "output_scores": np.full((B, K), -3.0, np.float32), "output_tokens": np.full((B, K), -2, np.int64),
        "work_scores": np.full((B, M + K), -3.0, np.float32),
        "sort_scores": np.sort(_scores(rng, (B, M), special, True), axis=1)[:, ::-1].copy(),
        "output_tree_mask": (np.arange(B * K * (I + 1)).reshape(B, K, I + 1) % 3) == 0,
    }
    params = {"batch_size": B, "node_top_k": K, "tree_width": W, "input_count": Ic, "cumu_count": cc,
              "verify_num": Vn, "curr_depth": int(rng.integers(1, 9)), "max_input_size": I, "max_node_count": N,
              "max_verify_num": M}
    _check(backend, "update_draft_state", inputs, params)


@SETTINGS
@given(seed=st.integers(0, 2**32 - 1), B=st.integers(0, 9), K=st.integers(0, 10), n0=st.integers(0, 128),
       extra=st.integers(0, 5), Vb=st.integers(-3, 200), special=st.booleans(), sort=st.booleans(),
       per_req=st.booleans())
def test_k3_fuzz(backend, seed, B, K, n0, extra, Vb, special, sort, per_req):
    rng = np.random.default_rng(seed)
    stride = n0 + K + extra
    ws = _scores(rng, (B, stride), special, True)
    if sort:
        ws[:, :n0] = np.sort(ws[:, :n0], axis=1)[:, ::-1]
        ws[:, n0:n0 + K] = np.sort(ws[:, n0:n0 + K], axis=1)[:, ::-1]
    inputs = {"work_scores": np.ascontiguousarray(ws)}
    if per_req:
        inputs["per_req_deltas"] = np.full((B, K + 1), -3.0, np.float32)
    params = {"batch_size": B, "node_count": n0, "node_top_k": K, "verify_num": Vb, "row_stride": stride}
    _check(backend, "work_deltas", inputs, params)


@SETTINGS
@given(seed=st.integers(0, 2**32 - 1), B=st.integers(0, 6), T=st.integers(1, 40), qfrac=st.floats(0, 1),
       S_max=st.integers(0, 50), P=st.integers(1, 4), shape=st.sampled_from(["random", "chain", "star", "bad"]),
       wbm=st.booleans())
def test_k4_fuzz(backend, seed, B, T, qfrac, S_max, P, shape, wbm):
    rng = np.random.default_rng(seed)
    Q = max(1, min(T, int(round(qfrac * T))))
    if shape == "chain":
        parent = np.tile(np.arange(-1, T - 1), (B, 1))
    elif shape == "star":
        parent = np.full((B, T), -1)
    elif shape == "bad":
        parent = rng.integers(-3, T + 2, (B, T))
    else:
        parent = np.array([[int(rng.integers(-1, t)) if t else -1 for t in range(T)] for _ in range(B)]).reshape(B, T)
    inputs = {"seq_lens": rng.integers(0, S_max + 1, B).astype(np.int64),
              "req_pool_indices": rng.integers(0, P, B).astype(np.int64),
              "req_to_token": rng.integers(0, 2**31 - 1, (P, S_max)).astype(np.int32),
              "tree_cache_locs": rng.integers(0, 2**31 - 1, (B, T)).astype(np.int64),
              "tree_parent": parent.astype(np.int64)}
    L = inputs["seq_lens"]
    max_len = (int(L.max()) if B else 0) + T
    inputs["kv_indices"] = np.full(B * max_len, -7, np.int32)  # sentinel tails must survive (D21)
    inputs["packed_mask"] = np.full(B * ((Q * max_len + 7) // 8), 0x5A, np.uint8)
    if wbm:
        inputs["mask_bool"] = np.ones(B * Q * max_len, bool)
    params = {"S_max": S_max, "B": B, "T": T, "Q": Q, "write_bool_mask": wbm}
    _check(backend, "tree_mask", inputs, params)
