"""Randomized parity of the C-sim K5-K7 (the verify side) against the reference (hypothesis), on shapes
and values the catalogs do not pin:

* K5: random R/G/V (V from 1 to ~3000, never a multiple of 16 above 1), temperatures around the
  f32(1e-6) threshold (0x358637BD samples, 0x358637BC greedy), negative, zero, NaN, +inf, 1.0,
  greedy and sampling requests mixed; logits with ties, +-inf, all -inf rows, NaN, +-1e4; f16/bf16
  logits; write_probas on and off with a sentinel-filled probas buffer.
* K6: random sglang-style trees (chains, stars, layered, random parents) of Q <= 128, S <= 10, small V,
  greedy and sampling requests mixed; coins 0, 1-2^-24 and 2^-8-quantized coins equal to partial sums
  of 2^-8-quantized rows; threshold_single < 1, threshold_acc 0/0.5/1; out-of-range and duplicate
  candidate tokens; rows with zero residual, entries of exactly 1.0, NaN entries.
* K7: random accept rows meeting the preconditions (a prefix of non -1 entries, accept_length+1
  distinct positions inside the request's own block), finish_pos -1/0/accept_length/random, U = 0 and
  U = B, f16/bf16/f32 hidden with NaN payloads, with and without verify_node_ids, sentinel outputs.

Each test also breaks one precondition in a fraction of the examples: then both sides must refuse.
Both refusing a case counts as agreement (the preconditions must match too)."""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from eagle4 import dtypes as dt
from eagle4.parity import check_against_reference

pytestmark = [pytest.mark.csim, pytest.mark.parity]
# --fuzz-examples (default 200) reaches here through the parity plugin
SETTINGS = settings(max_examples=int(os.environ.get("EAGLE4_FUZZ_EXAMPLES", "200")), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])

F32_1E6 = np.uint32(0x358637BD).view(np.float32)  # f32(1e-6): sampling (not < itself)
F32_BELOW_1E6 = np.uint32(0x358637BC).view(np.float32)  # the next float below: greedy
F32_ABOVE_1E6 = np.uint32(0x358637BE).view(np.float32)
COIN_MAX = np.float32(1.0 - 2.0**-24)
SENTINEL = -777


def _violation(*kinds: str, percent: int = 15):
    """None (a valid case) most of the time, else one precondition to break."""
    n_valid = max(1, round(len(kinds) * (100 - percent) / percent))
    return st.sampled_from((None,) * n_valid + kinds)


@pytest.fixture(scope="module")
def backend(csim_backend):
    return csim_backend


def _check(backend, kernel, inputs, params):
    return check_against_reference(backend, kernel, inputs, params, f"{kernel}/fuzz")


# ---------------------------------------------------------------------------------------------
# K5 logits_to_probas

TEMP_GREEDY = np.array([0.0, -0.0, -1.0, -1e-30, 1e-7, F32_BELOW_1E6, 1e-45], np.float32)
TEMP_SAMPLING = np.array([F32_1E6, F32_ABOVE_1E6, 1.0, 1.0, 0.5, 0.7, 2.5, 1e-3, 100.0, np.inf, np.nan], np.float32)


def _temperatures(rng, B: int, mode: str) -> np.ndarray:
    greedy = {"greedy": np.ones(B, bool), "sampling": np.zeros(B, bool)}.get(mode, rng.random(B) < 0.5)
    t = np.where(greedy, TEMP_GREEDY[rng.integers(0, TEMP_GREEDY.size, B)],
                 TEMP_SAMPLING[rng.integers(0, TEMP_SAMPLING.size, B)]).astype(np.float32)
    rand = rng.random(B) < 0.2  # a few arbitrary sampling temperatures
    t[rand & ~greedy] = rng.uniform(0.05, 3.0, int((rand & ~greedy).sum())).astype(np.float32)
    return t


def _logits(rng, R: int, V: int, kind: str, special: bool) -> np.ndarray:
    if kind == "normal":
        x = rng.standard_normal((R, V)) * 2.0
    elif kind == "ties":  # few distinct values: argmax ties and equal e_v
        x = rng.integers(-3, 2, (R, V)).astype(np.float64)
    elif kind == "peaked":  # tiny spread: with temp = f32(1e-6) the rows stay finite but very peaked
        x = rng.standard_normal((R, V)) * 1e-5
    elif kind == "big":  # +-1e4 magnitudes
        x = rng.choice(np.array([-1e4, 1e4, 9999.0, -9999.0, 0.0]), (R, V))
    else:  # "constant": every entry equal
        x = np.full((R, V), float(rng.standard_normal()))
    x = x.astype(np.float32)
    if special and x.size:
        flat = x.reshape(-1)
        idx = rng.integers(0, flat.size, size=max(1, flat.size // 50))
        pool = np.array([np.inf, -np.inf, -np.inf, np.nan, 1e4, -1e4, -0.0], np.float32)
        flat[idx] = pool[rng.integers(0, pool.size, idx.size)]
        for r in range(R):  # some rows all -inf, some with a single finite entry, some with one NaN
            u = rng.random()
            if u < 0.08:
                x[r] = -np.inf
            elif u < 0.14:
                x[r] = -np.inf
                x[r, rng.integers(0, V)] = rng.standard_normal()
            elif u < 0.18:
                x[r, rng.integers(0, V)] = np.nan
    return x


@SETTINGS
@given(seed=st.integers(0, 2**32 - 1), B=st.one_of(st.integers(1, 6), st.just(128)),
       G=st.sampled_from([1, 1, 2, 3, 4, 5, 8, 13]),
       V=st.one_of(st.integers(1, 40), st.integers(41, 3000)),
       dtype=st.sampled_from(["float32", "float32", "float16", "bfloat16"]),
       kind=st.sampled_from(["normal", "ties", "peaked", "big", "constant"]), special=st.booleans(),
       tmode=st.sampled_from(["greedy", "sampling", "mixed", "mixed"]), write_probas=st.booleans(),
       sentinel=st.booleans(), bad=_violation("rows", "G0", percent=10))
def test_k5_fuzz(backend, seed, B, G, V, dtype, kind, special, tmode, write_probas, sentinel, bad):
    rng = np.random.default_rng(seed)
    if V > 1 and V % 16 == 0:
        V += 1 + int(rng.integers(0, 15))  # never a multiple of 16 (the lane tail is always partial)
    V = min(V, 3000 if B * G <= 8 else max(1, 24000 // (B * G)))  # keep R*V modest
    if V > 1 and V % 16 == 0:
        V -= 1
    R = B * G
    temps = _temperatures(rng, B, tmode)
    if kind == "peaked":  # put the threshold temperatures on these rows
        temps[rng.random(B) < 0.6] = F32_1E6
    logits = _logits(rng, R, V, kind, special).astype(dt.numpy_dtype(dtype))
    params = {"rows_per_req": G, "write_probas": write_probas}
    if bad == "rows":  # R != B*G
        logits = np.concatenate([logits, logits[:1]], axis=0)
    elif bad == "G0":
        params["rows_per_req"] = 0
    inputs = {"logits": logits, "temperatures": temps}
    if sentinel or not write_probas:  # when write_probas is off the buffer must keep the sentinel
        inputs["probas"] = np.full(logits.shape, -3.0, np.float32)
    ref = _check(backend, "logits_to_probas", inputs, params)
    assert (ref.error is not None) == (bad is not None), ref.error
    if ref.error:
        event("K5: both refused")
    else:
        g = ref.outputs["is_greedy"].astype(bool)
        event(f"K5: requests {'all greedy' if g.all() else 'all sampling' if not g.any() else 'mixed'}")
        if write_probas and (~g).any():
            rows = ref.outputs["probas"][np.repeat(~g, G)]
            event(f"K5: finite sampling rows: {'some' if np.isfinite(rows).all(axis=1).any() else 'none'}")


# ---------------------------------------------------------------------------------------------
# K6 reject_sample


def _parents(rng, Q: int, shape: str) -> list[int]:
    if shape == "chain":
        return [-1] + list(range(Q - 1))
    if shape == "star":
        return [-1] + [0] * (Q - 1)
    if shape == "random":
        return [-1] + [int(rng.integers(0, t)) for t in range(1, Q)]
    if shape == "near":  # parents among the 3 previous nodes: deep trees with interleaved sibling lists
        return [-1] + [int(rng.integers(max(0, t - 3), t)) for t in range(1, Q)]
    parents, frontier = [-1], [0]  # "layered": like the draft loop (frontier of up to 3, up to 4 kids)
    while len(parents) < Q:
        layer = []
        for p in frontier:
            for _ in range(int(rng.integers(1, 5))):
                if len(parents) < Q:
                    parents.append(p)
                    layer.append(len(parents) - 1)
        frontier = sorted(rng.choice(layer, size=min(int(rng.integers(1, 4)), len(layer)), replace=False).tolist())
    return parents


def _links(parents: list[int]) -> tuple[np.ndarray, np.ndarray]:
    Q = len(parents)
    nxt = np.full(Q, -1, np.int64)
    sib = np.full(Q, -1, np.int64)
    last: dict[int, int] = {}
    for t in range(1, Q):
        p = parents[t]
        if p in last:
            sib[last[p]] = t
        else:
            nxt[p] = t
        last[p] = t
    return nxt, sib


def _rows(rng, shape, kind: str) -> np.ndarray:
    V = shape[-1]
    if kind == "softmax":
        x = rng.standard_normal(shape) * 3.0
        e = np.exp(x - x.max(axis=-1, keepdims=True))
        return (e / e.sum(axis=-1, keepdims=True)).astype(np.float32)
    if kind == "dirichlet":
        g = rng.gamma(min(0.3, 4.0 / V), size=shape)
        return (g / np.maximum(g.sum(axis=-1, keepdims=True), 1e-300)).astype(np.float32)
    if kind == "quantized":  # multiples of 2^-8, rows need not sum to 1: ties and exact partial sums
        return (rng.integers(0, 48, shape) * 2.0**-8 * (rng.random(shape) < 0.6)).astype(np.float32)
    if kind == "sparse":  # mostly zero: zero residuals after a few rejections
        return ((rng.random(shape) < 2.0 / V) * rng.choice([0.25, 0.5, 1.0], shape)).astype(np.float32)
    return np.zeros(shape, np.float32)  # "zero": R_q = 0 everywhere, argmax fallback


def _first_argmax(rows: np.ndarray) -> np.ndarray:
    nan = np.isnan(rows)
    finite = np.where(nan, -np.inf, rows)
    return np.where(nan.any(axis=-1), nan.argmax(axis=-1), finite.argmax(axis=-1)).astype(np.int64)


def _children(nxt, sib, row):
    out, cur = [], int(nxt[row])
    while cur != -1:
        out.append(cur)
        cur = int(sib[cur])
    return out


@SETTINGS
@given(seed=st.integers(0, 2**32 - 1), B=st.one_of(st.integers(1, 4), st.just(128)),
       Q=st.one_of(st.integers(1, 12), st.integers(13, 128)),
       S=st.integers(1, 10), V=st.one_of(st.integers(1, 8), st.integers(9, 40)),
       shape=st.sampled_from(["chain", "star", "random", "near", "layered"]),
       probs=st.sampled_from(["softmax", "softmax", "dirichlet", "quantized", "quantized", "sparse", "zero"]),
       greedy=st.sampled_from(["none", "all", "mixed"]),
       coins=st.sampled_from(["random", "zero", "max", "quantized", "partial", "mixed"]),
       thr_single=st.sampled_from([1.0, 1.0, 0.5, 0.25, 0.0, -1.0]),
       thr_acc=st.sampled_from([1.0, 1.0, 0.5, 0.0, 1e-12, 0.3]),
       tokens=st.sampled_from(["draft", "draft", "random", "dup"]), nan=st.booleans(), ones=st.booleans(),
       bad=_violation("ridx", "link", "prob", "coin", "greedy", "predict", "thr_nan"))
def test_k6_fuzz(backend, seed, B, Q, S, V, shape, probs, greedy, coins, thr_single, thr_acc, tokens, nan, ones, bad):
    rng = np.random.default_rng(seed)
    if B > 8:  # B = 128 with small trees and rows (keeps the example fast)
        Q, V = min(Q, 9), min(V, 12)
    nxt = np.empty((B, Q), np.int64)
    sib = np.empty((B, Q), np.int64)
    for b in range(B):
        nxt[b], sib[b] = _links(_parents(rng, Q, shape))
    tp = _rows(rng, (B, Q, V), probs)
    if ones:  # entries of exactly 1.0 (q_v = 2^32; p >= threshold_single accepts)
        tp[rng.random(tp.shape) < 0.05] = np.float32(1.0)
    if nan:
        tp[rng.random(tp.shape) < 0.05] = np.nan
    is_greedy = {"none": np.zeros(B), "all": np.ones(B)}.get(greedy, rng.random(B) < 0.5).astype(np.uint8)
    target_predict = _first_argmax(tp)
    for b in range(B):
        if is_greedy[b]:
            if rng.random() < 0.5:  # K5's one-hot rows
                tp[b] = 0.0
                tp[b, np.arange(Q), target_predict[b]] = 1.0
        elif rng.random() < 0.3:  # anything goes for a sampling request's target_predict
            target_predict[b] = rng.integers(-3, V + 3, Q)

    # candidates: children of a node take tokens its target row ranks high (walks accept often),
    # or random tokens including out-of-range ones, or runs of duplicate tokens among siblings
    cand = rng.integers(0, V, (B, Q)).astype(np.int64)
    for b in range(B):
        for row in range(Q):
            kids = _children(nxt[b], sib[b], row)
            if not kids:
                continue
            if tokens == "draft":
                src = target_predict[b, row] if is_greedy[b] else None
                order = np.argsort(-np.nan_to_num(tp[b, row], nan=-1.0), kind="stable")
                toks = [int(order[k % V]) for k in range(len(kids))]
                if src is not None and rng.random() < 0.7:
                    toks[int(rng.integers(0, len(toks)))] = int(src) if 0 <= src < V else toks[0]
            elif tokens == "random":
                toks = rng.integers(-2, V + 2, len(kids)).tolist()
            else:
                toks = np.repeat(rng.integers(-1, V + 1, max(1, len(kids) // 2 + 1)), 2)[:len(kids)].tolist()
            cand[b, kids] = toks
            if rng.random() < 0.15:  # an out-of-range token somewhere in the sibling list
                cand[b, kids[int(rng.integers(0, len(kids)))]] = rng.choice([-1, V, -7, V + 5, 2**40])

    gen = torch.Generator("cpu").manual_seed(seed)  # coins as §13 makes them: multiples of 2^-24 in [0, 1)
    coin = torch.rand((B, Q), generator=gen, dtype=torch.float32).numpy()
    final = torch.rand((B,), generator=gen, dtype=torch.float32).numpy()
    if coins == "zero":
        coin[:], final[:] = 0.0, 0.0
    elif coins == "max":
        coin[:], final[:] = COIN_MAX, COIN_MAX
    elif coins == "quantized":
        coin = (np.floor(coin * 256) / 256).astype(np.float32)
        final = (np.floor(final * 256) / 256).astype(np.float32)
    elif coins == "partial":  # coin of a node = a partial sum of its children's probabilities / thr_acc
        thr = max(np.float32(thr_acc), np.float32(1e-9))
        for b in range(B):
            for row in range(Q):
                kids = [k for k in _children(nxt[b], sib[b], row) if 0 <= cand[b, k] < V]
                if kids:
                    upto = int(rng.integers(1, len(kids) + 1))
                    acc = np.float32(0.0)
                    for k in kids[:upto]:
                        acc = np.float32(acc + tp[b, row, cand[b, k]])
                    c = np.float32(acc / thr)
                    if np.isfinite(c) and 0 <= c < 1:
                        coin[b, row] = c
        final = (np.floor(final * 256) / 256).astype(np.float32)
    elif coins == "mixed":
        pick = rng.integers(0, 4, coin.shape)
        coin = np.select([pick == 0, pick == 1, pick == 2], [np.float32(0), COIN_MAX, np.floor(coin * 256) / 256],
                         coin).astype(np.float32)
        final = rng.choice(np.array([0.0, COIN_MAX, 0.5, 0.25], np.float32), B)

    inputs = {
        "candidates": cand,
        "retrive_index": np.arange(B * Q, dtype=np.int64).reshape(B, Q),
        "retrive_next_token": nxt,
        "retrive_next_sibling": sib,
        "target_probs": tp,
        "target_predict": target_predict,
        "is_greedy": is_greedy,
        "coins": coin,
        "final_coins": final,
    }
    params = {"threshold_single": float(thr_single), "threshold_acc": float(thr_acc), "B": B, "Q": Q, "S": S, "V": V}
    b0, i0 = int(rng.integers(0, B)), int(rng.integers(0, Q))
    if bad == "ridx":
        inputs["retrive_index"][b0, i0] += 1
    elif bad == "link":
        inputs["retrive_next_sibling" if rng.random() < 0.5 else "retrive_next_token"][b0, i0] = \
            rng.choice([i0, i0 - 1, Q, -2]) if i0 > 0 else Q
    elif bad == "prob":
        tp[b0, i0, int(rng.integers(0, V))] = rng.choice([1.0000001, -1e-30, 2.0, np.inf, -np.inf])
    elif bad == "coin":
        bad_coin = np.float32(rng.choice([1.0, -1e-30, np.nan, 2.0]))
        if rng.random() < 0.5:
            coin[b0, i0] = bad_coin
        else:
            final[b0] = bad_coin
    elif bad == "greedy":
        is_greedy[b0] = 2
    elif bad == "predict":
        is_greedy[b0] = 1
        target_predict[b0, i0] = rng.choice([-1, V])
    elif bad == "thr_nan":
        params["threshold_acc"] = float("nan")
    ref = _check(backend, "reject_sample", inputs, params)
    assert (ref.error is not None) == (bad is not None), ref.error
    if ref.error:
        event("K6: both refused")
    else:
        n = ref.outputs["accept_length"]
        event(f"K6: max accept_length {'0' if n.max() == 0 else 'S-1' if n.max() == S - 1 else 'between'}")


# ---------------------------------------------------------------------------------------------
# K7 update_verify

NAN_BITS = {
    "float16": (np.uint16, [0x7E01, 0xFC17, 0x7C01, 0x7FFF]),
    "bfloat16": (np.uint16, [0x7FC1, 0xFF81, 0x7F81, 0xFFFF]),
    "float32": (np.uint32, [0x7FC00001, 0xFFA00000, 0x7F800001, 0xFFFFFFFF]),
}
_PADDED_INT = {
    "accepted_flat": np.int32, "verified_id": np.int32, "free_slots": np.int64, "accepted_node_ids": np.int64,
    "unfinished_index": np.int64, "next_accept_length": np.int32, "next_indptr": np.int32,
    "next_verified_id": np.int32, "next_positions": np.int64, "next_seq_lens": np.int64,
    "next_req_pool_indices": np.int64, "next_root_token": np.int32, "next_last_flat": np.int32,
}
_ALL_OUT_INT = {**_PADDED_INT, "accept_index_out": np.int32, "accept_length_out": np.int32,
                "accept_indptr": np.int32, "seq_lens_out": np.int64, "unfinished_count": np.int32}


def _out_shape(name: str, B: int, Q: int, S: int):
    if name == "accept_index_out":
        return (B, S)
    if name in ("free_slots", "evict_mask"):
        return (B * Q,)
    if name in ("next_indptr", "accept_indptr"):
        return (B + 1,)
    if name in ("accepted_flat", "verified_id", "accepted_node_ids", "next_verified_id", "next_positions"):
        return (B * S,)
    if name == "unfinished_count":
        return (1,)
    return (B,)


@SETTINGS
@given(seed=st.integers(0, 2**32 - 1), B=st.one_of(st.integers(1, 8), st.just(128)),
       Q=st.one_of(st.integers(1, 6), st.integers(7, 40)),
       S=st.integers(1, 10), H=st.sampled_from([1, 2, 3, 8, 17, 64]),
       hidden=st.sampled_from(["float16", "bfloat16", "float32"]), node_ids=st.booleans(),
       lengths=st.sampled_from(["random", "zero", "full", "variable"]),
       finish=st.sampled_from(["none", "all", "mixed", "zero", "full", "random"]),
       order=st.sampled_from(["path", "random"]), tight=st.booleans(), sentinel=st.sampled_from(["all", "some", "none"]),
       bad=_violation("len", "prefix", "block", "dup", "finish", "seq", "smax", "pool", "pool_dup", "loc",
                      "node_ids_out", percent=20))
def test_k7_fuzz(backend, seed, B, Q, S, H, hidden, node_ids, lengths, finish, order, tight, sentinel, bad):
    rng = np.random.default_rng(seed)
    amax = min(S - 1, Q - 1)  # accept_length + 1 distinct positions inside a block of Q
    accept_index = np.full((B, S), -1, np.int32)
    accept_length = np.zeros(B, np.int32)
    predicts = rng.integers(-1, 32000, B * Q).astype(np.int32)
    for b in range(B):
        n = {"random": int(rng.integers(0, amax + 1)), "zero": 0, "full": amax,
             "variable": (0, amax, int(rng.integers(0, amax + 1)))[b % 3]}[lengths]
        if order == "path":  # a root path through a random tree, as K6 emits
            parents = [-1] + [int(rng.integers(0, t)) for t in range(1, Q)]
            path = [0]
            while len(path) <= n:
                kids = [t for t in range(1, Q) if parents[t] == path[-1]]
                if not kids:
                    break
                path.append(int(rng.choice(kids)))
        else:  # any distinct positions of the block, any order
            path = rng.choice(Q, size=n + 1, replace=False).tolist()
        accept_index[b, :len(path)] = [b * Q + i for i in path]
        accept_length[b] = len(path) - 1
    al = accept_length.astype(np.int64)
    finished = {"none": np.zeros(B, bool), "all": np.ones(B, bool)}.get(finish, rng.random(B) < 0.5)
    fpos = {"zero": np.zeros(B, np.int64), "full": al}.get(
        finish, np.array([int(rng.choice([0, a, int(rng.integers(0, a + 1))])) for a in al]))
    finish_pos = np.where(finished, fpos, -1).astype(np.int32)
    a_trunc = np.where(finish_pos >= 0, finish_pos, accept_length).astype(np.int64)

    seq_lens = rng.integers(0, 40, B).astype(np.int64)
    S_max = int((seq_lens + a_trunc + 1).max()) + (0 if tight else int(rng.integers(0, 8)))
    if tight:  # L_b + a_b + 1 = S_max: the last legal slot
        seq_lens = S_max - a_trunc - 1
    P = B + int(rng.integers(0, 5))
    req_pool_indices = rng.permutation(P)[:B].astype(np.int64)
    req_to_token = np.full((P, S_max), SENTINEL, np.int32)
    req_to_token[rng.random((P, S_max)) < 0.5] = 12345
    out_cache_loc = rng.choice(2**31, size=B * Q, replace=False).astype(np.int64)
    if rng.random() < 0.2:
        out_cache_loc[rng.integers(0, B * Q)] = rng.choice([0, 2**31 - 1])
    x = rng.standard_normal((B * Q, H)).astype(np.float32).astype(dt.numpy_dtype(hidden))
    ut, pats = NAN_BITS[hidden]
    flat = x.view(ut).reshape(-1)
    where = rng.random(flat.size) < 0.2
    flat[where] = np.array(pats, ut)[rng.integers(0, len(pats), int(where.sum()))]
    inputs = {"accept_index": accept_index, "accept_length": accept_length, "predicts": predicts,
              "finish_pos": finish_pos, "seq_lens": seq_lens, "req_pool_indices": req_pool_indices,
              "req_to_token": req_to_token, "out_cache_loc": out_cache_loc, "hidden_states": x}
    if node_ids:
        inputs["verify_node_ids"] = rng.integers(-5, 10**6, (B, Q)).astype(np.int64)
    for name, npd in _ALL_OUT_INT.items():  # sentinel-filled outputs (the -1 padding must be written)
        if name == "accepted_node_ids" and not node_ids:
            continue
        if sentinel == "all" or (sentinel == "some" and rng.random() < 0.5):
            inputs[name] = np.full(_out_shape(name, B, Q, S), SENTINEL, npd)
    if sentinel != "none":
        inputs["evict_mask"] = (np.arange(B * Q) % 3) == 0
        inputs["next_hidden"] = np.full((B * S, H), -3.0, np.float32).astype(dt.numpy_dtype(hidden))
    params = {"B": B, "Q": Q, "S": S, "H": H, "S_max": S_max}

    b0 = int(rng.integers(0, B))
    if bad == "len":
        accept_length[b0] = rng.choice([-1, S, S + 3])
    elif bad == "prefix":  # a non -1 entry past accept_length
        if S > int(accept_length[b0]) + 1:
            accept_index[b0, S - 1] = b0 * Q
        else:
            accept_index[b0, 0] = -1
    elif bad == "block":
        accept_index[b0, int(rng.integers(0, al[b0] + 1))] = rng.choice([-5, B * Q, ((b0 + 1) % B) * Q + Q * (B == 1)])
    elif bad == "dup":
        if al[b0] >= 1:
            accept_index[b0, 1] = accept_index[b0, 0]
        else:
            finish_pos[b0] = 1  # > accept_length = 0
    elif bad == "finish":
        finish_pos[b0] = rng.choice([-2, int(al[b0]) + 1])
    elif bad == "seq":
        seq_lens[b0] = -1
    elif bad == "smax":
        seq_lens[b0] = S_max - a_trunc[b0]  # one past the last legal slot
    elif bad == "pool":
        req_pool_indices[b0] = rng.choice([-1, P])
    elif bad == "pool_dup":
        if B > 1:
            req_pool_indices[b0] = req_pool_indices[(b0 + 1) % B]
        else:
            req_pool_indices[b0] = P
    elif bad == "loc":
        out_cache_loc[int(rng.integers(0, B * Q))] = rng.choice([-1, 2**31])
    elif bad == "node_ids_out":  # accepted_node_ids without verify_node_ids
        inputs.pop("verify_node_ids", None)
        inputs["accepted_node_ids"] = np.full(B * S, SENTINEL, np.int64)
    ref = _check(backend, "update_verify", inputs, params)
    assert (ref.error is not None) == (bad is not None), ref.error
    if ref.error:
        event("K7: both refused")
    else:
        U = int(ref.outputs["unfinished_count"][0])
        event(f"K7: {'U = 0' if U == 0 else 'U = B' if U == B else '0 < U < B'}")
