"""K2 ``update_draft_state`` case catalog: the KERNELS.md §2.7 edge cases and the §13 matrix.

Inputs are consistent with a K1 call on the same scores (sorted by the §1.5 rule) unless a case
deliberately breaks them (invalid parents, negative sorted indices). State buffers are
sentinel-filled like the public dumps (-777, -3.0, -1, -2, -3, an ``i mod 3 == 0`` bool mask)
so untouched regions are checked. Deterministic: ``numpy.random.default_rng(seed)``.
"""

from __future__ import annotations

import numpy as np

from eagle4.cases import Case, draft_matrix

KEY = "update_draft_state"
V_TOKENS = 8192


def f32(x) -> np.ndarray:
    return np.asarray(x, dtype=np.float32)


def sort_desc(s: np.ndarray) -> np.ndarray:
    """§1.5 step 3 order (key desc with NaN = -inf and +0 == -0, index asc), per row."""
    key = np.where(np.isnan(s), -np.inf, s).astype(np.float64)
    key = np.where(key == 0, 0.0, key)
    return np.argsort(-key, axis=1, kind="stable")


def make(name: str, *, B: int, K: int, W: int, Ic: int = 17, cc: int = 21, Vn: int = 64, d: int = 3,
         I: int = 64, N: int = 256, M: int = 64, seed: int = 0, scores=None, sort_prefix=None,
         sort_len: int | None = None, topk_indexs=None, parent_indexs=None, sorted_indexs=None,
         quant: bool = False, tags: tuple = (), note: str = "") -> Case:
    """One K2 case. ``scores`` overrides the layer's in_scores; ``sort_prefix`` the old sort_scores head
    (default: ``sort_len`` descending random values, the rest a stale sentinel)."""
    rng = np.random.default_rng(seed)
    C = W * K
    if scores is None:
        s = f32(rng.integers(1, 64, (B, C)) / 256.0) if quant else f32(rng.uniform(1e-3, 1.0, (B, C)))
    else:
        s = f32(np.broadcast_to(scores, (B, C))).copy()
    perm = sort_desc(s)
    sorted_scores = np.take_along_axis(s, perm, axis=1).astype(np.float32)
    si = perm.astype(np.int64) if sorted_indexs is None else np.broadcast_to(sorted_indexs, (B, C)).astype(np.int64)
    pi = (perm[:, :K] // K).astype(np.int64) if parent_indexs is None else \
        np.broadcast_to(parent_indexs, (B, K)).astype(np.int64).copy()
    if topk_indexs is None:
        # frontier = W distinct existing nodes (the previous layer's top-K live in [0, cc))
        ti = np.stack([np.sort(rng.choice(max(cc, W), size=W, replace=False)) for _ in range(B)]).astype(np.int64)
    else:
        ti = np.broadcast_to(np.asarray(topk_indexs, np.int64), (B, W)).copy()
    # old top-Vn list: descending values above the new layer's scores (plus a stale tail)
    if sort_prefix is None:
        n = min(M, cc) if sort_len is None else sort_len
        head = np.sort(rng.integers(1, 640, (B, n)) / 256.0 if quant else rng.uniform(0.5, 2.5, (B, n)),
                       axis=1)[:, ::-1]
        sort_scores = np.full((B, M), -5.0, np.float32)
        sort_scores[:, :n] = head
    else:
        sp = f32(sort_prefix)
        sort_scores = np.full((B, M), -5.0, np.float32)
        sort_scores[:, :sp.shape[-1]] = sp
    inputs = {
        "topk_probas": s,
        "topk_tokens": rng.integers(0, V_TOKENS, (B, C)).astype(np.int64),
        "sorted_scores": sorted_scores,
        "sorted_indexs": si,
        "parent_indexs": pi,
        "topk_indexs": ti,
        "input_tree_mask": rng.random((B, W, Ic - 1)) < 0.5,
        "cumu_tokens": np.full((B, N), -777, np.int64),
        "cumu_scores": np.full((B, N), -3.0, np.float32),
        "cumu_deltas": np.full((B, N), -1, np.int64),
        "prev_indexs": np.full((B, N), -1, np.int64),
        "next_indexs": np.full((B, N), -2, np.int64),
        "side_indexs": np.full((B, N), -3, np.int64),
        "output_scores": np.full((B, K), -999.0, np.float32),
        "output_tokens": np.full((B, K), -999, np.int64),
        "work_scores": np.full((B, M + K), -123.0, np.float32),
        "sort_scores": sort_scores,
        "output_tree_mask": (np.arange(B * K * (I + 1)) % 3 == 0).reshape(B, K, I + 1),
    }
    params = {"batch_size": B, "node_top_k": K, "tree_width": W, "input_count": Ic, "cumu_count": cc,
              "verify_num": Vn, "curr_depth": d, "max_input_size": I, "max_node_count": N, "max_verify_num": M}
    return Case(KEY, f"{KEY}/{name}", params, inputs, seed=seed, tags=tags, note=note)


def _edge_cases() -> list[Case]:
    out: list[Case] = []
    add = out.append
    # capacity: normal, partial drop (last side link may equal N), everything dropped
    add(make("cap_normal", B=2, K=8, W=8, cc=21, N=1024, seed=101, tags=("capacity",)))
    add(make("cap_exact_fit", B=2, K=8, W=8, cc=64, N=128, seed=102, tags=("capacity",)))
    add(make("cap_partial_drop", B=2, K=8, W=8, cc=90, N=100, seed=103, tags=("capacity",)))
    add(make("cap_partial_drop_mid_group", B=2, K=8, W=3, cc=60, N=77, seed=104, tags=("capacity",)))
    add(make("cap_all_dropped_eq", B=2, K=8, W=4, cc=100, N=100, seed=105, tags=("capacity",),
             topk_indexs=[96, 97, 98, 99]))
    add(make("cap_all_dropped_gt", B=2, K=4, W=4, cc=130, N=100, Vn=200, M=128, seed=106, tags=("capacity",),
             topk_indexs=[3, 50, 99, 120]))
    # topk_indexs: -1, >= N, duplicates (larger w wins), parent >= cc (step 4 over step 3)
    add(make("topk_idx_invalid", B=2, K=4, W=6, cc=40, N=64, seed=201, tags=("links",),
             topk_indexs=[-1, 5, 64, 1000, -7, 7]))
    add(make("topk_idx_duplicates", B=2, K=4, W=6, cc=40, N=128, seed=202, tags=("links",),
             topk_indexs=[3, 9, 3, 9, 3, 11]))
    add(make("topk_idx_in_new_segment", B=2, K=4, W=4, cc=20, N=64, seed=203, tags=("links",),
             topk_indexs=[20, 23, 25, 35], note="parents inside [cc, cc+C): step 4 overwrites step 3's -1"))
    # verify budget clamps and n0/n1 edges
    add(make("vn_zero", B=2, K=8, W=4, cc=30, Vn=0, seed=301, tags=("budget",)))
    add(make("vn_negative", B=2, K=8, W=4, cc=30, Vn=-5, seed=302, tags=("budget",)))
    add(make("vn_above_m", B=2, K=8, W=4, cc=100, Vn=500, M=64, seed=303, tags=("budget",)))
    add(make("cc_zero", B=2, K=8, W=1, cc=0, Vn=64, seed=304, tags=("budget",), topk_indexs=[0]))
    add(make("vn_below_cc", B=2, K=8, W=8, cc=50, Vn=10, seed=305, tags=("budget",)))
    add(make("vn_above_cc_plus_c", B=2, K=4, W=2, cc=5, Vn=60, seed=306, tags=("budget",)))
    add(make("vn_one", B=3, K=8, W=8, cc=73, Vn=1, seed=307, tags=("budget",)))
    add(make("m_small", B=2, K=10, W=6, cc=9, Vn=8, M=8, seed=308, tags=("budget",)))
    add(make("stale_sort_prefix", B=2, K=8, W=3, cc=73, Vn=64, sort_len=20, seed=309, tags=("budget",),
             note="Vn grew: entries [20, 64) of sort_scores are stale (-5.0) and are read anyway"))
    # mask widths
    add(make("ic_one", B=2, K=8, W=1, Ic=1, cc=1, seed=401, tags=("mask",), topk_indexs=[0]))
    add(make("ic_max", B=2, K=8, W=8, Ic=65, I=64, cc=73, seed=402, tags=("mask",)))
    add(make("ic_max_small_i", B=2, K=4, W=4, Ic=9, I=8, cc=30, seed=403, tags=("mask",)))
    # invalid parents (clamped to 0) and negative sorted indices (clamped to 0)
    add(make("parent_invalid", B=2, K=4, W=4, cc=30, seed=501, tags=("clamp",),
             parent_indexs=[-1, 4, 100, 2]))
    rng = np.random.default_rng(502)
    si = rng.permutation(16)[None, :].repeat(2, 0)
    si[:, [0, 2]] = [-1, -9]
    si[1, 3] = 10**6
    add(make("sorted_idx_negative", B=2, K=4, W=4, cc=30, seed=502, tags=("clamp",), sorted_indexs=si))
    # root expansion
    add(make("root_w1", B=3, K=8, W=1, Ic=1, cc=1, d=1, seed=601, topk_indexs=[0], sort_prefix=[[1.0]],
             tags=("root",)))
    add(make("root_w1_k10", B=2, K=10, W=1, Ic=1, cc=1, d=1, seed=602, topk_indexs=[0], sort_prefix=[[1.0]],
             tags=("root",)))
    # merge: ties between A and new scores, +-0, NaN on either side
    add(make("merge_ties_quantized", B=4, K=8, W=8, cc=40, Vn=64, seed=701, quant=True, tags=("merge", "ties")))
    q = f32([[0.5, 0.5, 0.25, 0.25, 0.125, 0.0, -0.0, 0.0]])
    add(make("merge_ties_exact", B=2, K=4, W=2, cc=6, Vn=12, seed=702, scores=q,
             sort_prefix=[[0.5, 0.25, 0.25, -0.0, 0.0, -0.0]], tags=("merge", "ties")))
    s = f32(np.random.default_rng(703).random((2, 16)))
    s[0, [1, 6]] = np.nan
    s[1, 4] = np.inf
    add(make("merge_nan_new", B=2, K=4, W=4, cc=10, Vn=30, seed=703, scores=s, tags=("merge", "special")))
    add(make("merge_nan_old", B=2, K=4, W=4, cc=10, Vn=30, seed=704,
             sort_prefix=[[2.0, np.nan, 1.5, 1.0, np.nan, 0.5, 0.25, 0.1, 0.05, 0.01]], tags=("merge", "special")))
    add(make("merge_old_unsorted", B=2, K=4, W=4, cc=8, Vn=20, seed=705,
             sort_prefix=[[0.1, 0.9, 0.3, 0.8, 0.2, 0.7, 0.4, 0.6]], tags=("merge",),
             note="the cursor rule is pinned even on a non-descending A"))
    # sizes
    add(make("b1_k1", B=1, K=1, W=1, cc=5, seed=801, tags=("size",)))
    add(make("b128_k8", B=128, K=8, W=8, cc=73, N=256, M=128, Vn=128, Ic=10, seed=802, tags=("size",)))
    add(make("k10_w6", B=3, K=10, W=6, cc=11, seed=803, tags=("size",)))
    add(make("large_n4096_b128", B=128, K=8, W=8, cc=3000, N=4096, M=128, Vn=128, seed=804, tags=("large",)))
    return out


def _matrix() -> list[Case]:
    out = []
    for i, B, K, W, s in draft_matrix():
        cc = (1, 1 + K * W, 200)[s]  # fresh tree, second layer, near capacity
        Ic = min(1 + 8 * s, 65)
        out.append(make(f"matrix_b{B}_k{K}_w{W}_s{s}", B=B, K=K, W=W, cc=cc, Ic=Ic, N=224, M=64,
                        Vn=(64, 16, 100)[s], d=1 + s, seed=5000 + i, quant=(s == 1), tags=("matrix",)))
    return out


def cases() -> list[Case]:
    return _edge_cases() + _matrix()
