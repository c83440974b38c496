"""Scalar, loop-by-loop transcriptions of KERNELS.md §1.5 and §2.5 (numpy, no torch).

An independent oracle for the vectorized references: written from the spec text, one element
at a time, in the spec's step order.
"""

from __future__ import annotations

import functools
import math

import numpy as np

DECAY = np.array(0x3F7FF972, dtype=np.uint32).view(np.float32)[()]


def _key(x: float) -> float:
    return -math.inf if math.isnan(x) else x  # -0.0 == 0.0 in Python comparisons too


def k1(inputs: dict, params: dict) -> dict:
    B, K, W, cc = (int(params[k]) for k in ("batch_size", "node_top_k", "tree_width", "cumu_count"))
    C = W * K
    p, ls = inputs["topk_probas_sampling"], inputs["last_layer_scores"]
    hin = inputs["input_hidden_states"]
    tok = inputs.get("topk_tokens_sampling")
    tok = None if tok is None else tok.copy()
    hot = inputs.get("hot_token_id")
    H = hin.shape[1]
    out = {"curr_layer_scores": np.empty((B, C), np.float32), "sort_layer_scores": np.empty((B, C), np.float32),
           "sort_layer_indices": np.empty((B, C), np.int64), "cache_topk_indices": np.empty((B, K), np.int64),
           "parent_indices_in_layer": np.empty((B, K), np.int64),
           "output_hidden_states": np.empty((B, K, H), hin.dtype)}
    if tok is not None:
        out["output_tokens"] = np.empty((B, K), np.int64)
    for b in range(B):
        with np.errstate(invalid="ignore"):  # inf * 0 -> NaN is part of the spec
            s = [np.float32(p[b, c]) * np.float32(ls[b, c // K]) for c in range(C)]
        for c in range(C):
            out["curr_layer_scores"][b, c] = s[c]
        if params.get("use_hot_token_id"):
            for c in range(C):
                t = int(tok[b, c])
                if 0 <= t < hot.shape[0]:
                    tok[b, c] = hot[t]

        def cmp(i, j, s=s):  # -1 if i goes first: key desc, index asc
            ki, kj = _key(float(s[i])), _key(float(s[j]))
            if ki > kj:
                return -1
            if ki < kj:
                return 1
            return -1 if i < j else (1 if i > j else 0)
        pi = sorted(range(C), key=functools.cmp_to_key(cmp))
        for r in range(C):
            out["sort_layer_scores"][b, r] = s[pi[r]]
            out["sort_layer_indices"][b, r] = pi[r]
        for r in range(K):
            out["cache_topk_indices"][b, r] = cc + pi[r]
            out["parent_indices_in_layer"][b, r] = pi[r] // K
            if tok is not None:
                out["output_tokens"][b, r] = tok[b, pi[r]]
            out["output_hidden_states"][b, r] = hin[b * W + pi[r] // K]
    if tok is not None:
        out["topk_tokens_sampling"] = tok
    return out


def k2(inputs: dict, params: dict) -> dict:
    B, K, W, Ic, cc, Vn, d, I, N, M = (int(params[k]) for k in (
        "batch_size", "node_top_k", "tree_width", "input_count", "cumu_count", "verify_num", "curr_depth",
        "max_input_size", "max_node_count", "max_verify_num"))
    C = W * K
    st = {k: inputs[k].copy() for k in ("cumu_tokens", "cumu_scores", "cumu_deltas", "prev_indexs", "next_indexs",
                                        "side_indexs", "work_scores", "sort_scores", "output_tree_mask")}
    st["output_scores"] = inputs["output_scores"].copy() if "output_scores" in inputs else np.empty((B, K), np.float32)
    st["output_tokens"] = inputs["output_tokens"].copy() if "output_tokens" in inputs else np.empty((B, K), np.int64)
    ins, tt = inputs["topk_probas"], inputs["topk_tokens"]
    ss, si, pa, ti, mask = (inputs[k] for k in ("sorted_scores", "sorted_indexs", "parent_indexs", "topk_indexs",
                                                "input_tree_mask"))
    vn = min(max(Vn, 1), M)
    n0, n1 = min(vn, cc), min(vn, cc + C)
    for b in range(B):
        pps = []
        for r in range(K):
            st["output_scores"][b, r] = ss[b, r]
            pp = int(pa[b, r])
            if not 0 <= pp < W:
                pp = 0
            oi = int(si[b, r])
            if oi < 0:
                oi = 0
            st["output_tokens"][b, r] = tt[b, pp * K + oi % K]
            pps.append(pp)
        for r in range(K):
            for j in range(Ic - 1):
                st["output_tree_mask"][b, r, j] = mask[b, pps[r], j]
        for i in range(C):
            g = cc + i
            if g < N:
                st["cumu_tokens"][b, g] = tt[b, i]
                st["cumu_scores"][b, g] = np.float32(ins[b, i]) * DECAY
                st["cumu_deltas"][b, g] = d
                st["prev_indexs"][b, g] = ti[b, i // K]
                st["next_indexs"][b, g] = -1
                st["side_indexs"][b, g] = -1 if i % K == K - 1 else g + 1
        for w in range(W):
            P = int(ti[b, w])
            if 0 <= P < N:
                st["next_indexs"][b, P] = cc + w * K
        A = st["sort_scores"][b, :n0].copy()
        for t in range(n0):
            st["work_scores"][b, t] = A[t]
        for r in range(K):
            st["work_scores"][b, n0 + r] = st["output_scores"][b, r]
        ia = ib = 0
        for t in range(n1):
            if ia < n0 and (ib >= C or float(A[ia]) >= float(ss[b, ib])):
                st["sort_scores"][b, t] = A[ia]
                ia += 1
            else:
                st["sort_scores"][b, t] = ss[b, ib]
                ib += 1
    return st
