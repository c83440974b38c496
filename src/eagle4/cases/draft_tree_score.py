"""K1 ``draft_tree_score`` case catalog: the KERNELS.md §1.7 edge cases and the §13 matrix.

Every output buffer is passed pre-filled with a sentinel (-3.0 floats, -777 ints) so a backend
that leaves an element unwritten fails EXACT parity. Deterministic: each case draws from
``numpy.random.default_rng(seed)``.
"""

from __future__ import annotations

import numpy as np

from eagle4 import dtypes as dt
from eagle4.cases import Case, draft_matrix

KEY = "draft_tree_score"
V_TOKENS = 4096  # token-id range of the synthetic samples
HIDDEN = ("float32", "float16", "bfloat16")

# NaN payloads / infinities per hidden dtype (bit patterns): must be copied bit-exactly
SPECIAL_BITS = {
    "float32": (np.uint32, (0x7FC01234, 0xFFA00001, 0x7F800001, 0x7F800000, 0xFF800000, 0x80000000)),
    "float16": (np.uint16, (0x7E01, 0xFD55, 0x7C01, 0x7C00, 0xFC00, 0x8000)),
    "bfloat16": (np.uint16, (0x7FC1, 0xFFA5, 0x7F81, 0x7F80, 0xFF80, 0x8000)),
}


def f32(x) -> np.ndarray:
    return np.asarray(x, dtype=np.float32)


def quantized(rng, shape, lo=0, hi=256) -> np.ndarray:
    """Values on the 2^-8 grid: many exact ties (§13)."""
    return f32(rng.integers(lo, hi, size=shape) / 256.0)


def hidden(rng, rows: int, H: int, dtype: str, specials: bool = False) -> np.ndarray:
    x = rng.standard_normal((rows, H)).astype(np.float32)
    arr = x.astype(dt.numpy_dtype(dtype))
    if specials:
        utype, pats = SPECIAL_BITS[dtype]
        flat = arr.reshape(-1).view(utype)
        pos = rng.choice(flat.size, size=min(flat.size, 3 * len(pats)), replace=False)
        for j, p in enumerate(pos):
            flat[p] = pats[j % len(pats)]
    return arr


def make(name: str, *, B: int, K: int, W: int, H: int = 16, cc: int = 17, seed: int = 0,
         hidden_dtype: str = "float32", probas=None, last=None, tokens: bool | np.ndarray = True,
         hot: str | None = None, Vh: int = 512, specials: bool = False, tags: tuple = (), note: str = "") -> Case:
    """One K1 case; ``probas``/``last`` override the random draws; ``hot`` in {None, 'perm', 'identity'}."""
    rng = np.random.default_rng(seed)
    C = W * K
    p = f32(rng.random((B, C))) if probas is None else f32(np.broadcast_to(probas, (B, C))).copy()
    ls = f32(rng.uniform(0.01, 1.0, (B, W))) if last is None else f32(np.broadcast_to(last, (B, W))).copy()
    inputs: dict[str, np.ndarray] = {
        "topk_probas_sampling": p,
        "last_layer_scores": ls,
        "input_hidden_states": hidden(rng, B * W, H, hidden_dtype, specials),
    }
    if isinstance(tokens, np.ndarray):
        inputs["topk_tokens_sampling"] = np.broadcast_to(tokens.astype(np.int64), (B, C)).copy()
    elif tokens or hot:
        inputs["topk_tokens_sampling"] = rng.integers(0, V_TOKENS, (B, C)).astype(np.int64)
    if hot:
        inputs["hot_token_id"] = (np.arange(Vh, dtype=np.int64) if hot == "identity"
                                  else rng.permutation(V_TOKENS)[:Vh].astype(np.int64))
    # sentinel-filled outputs: every element is written, so none may survive
    hd = dt.numpy_dtype(hidden_dtype)
    inputs.update({
        "curr_layer_scores": np.full((B, C), -3.0, np.float32),
        "sort_layer_scores": np.full((B, C), -3.0, np.float32),
        "sort_layer_indices": np.full((B, C), -777, np.int64),
        "cache_topk_indices": np.full((B, K), -777, np.int64),
        "parent_indices_in_layer": np.full((B, K), -777, np.int64),
        "output_hidden_states": np.full((B, K, H), -3.0, np.float32).astype(hd),
    })
    if "topk_tokens_sampling" in inputs:
        inputs["output_tokens"] = np.full((B, K), -777, np.int64)
    params = {"batch_size": B, "node_top_k": K, "tree_width": W, "cumu_count": cc,
              "use_hot_token_id": bool(hot)}
    return Case(KEY, f"{KEY}/{name}", params, inputs, seed=seed, tags=tags, note=note)


def _edge_cases() -> list[Case]:
    out: list[Case] = []
    add = out.append
    # shapes: root expansion, full 64 lanes, K = 1, K = 10/W = 6
    add(make("root_w1", B=3, K=8, W=1, cc=1, seed=101, tags=("shape",)))
    add(make("full_c64", B=2, K=8, W=8, seed=102, tags=("shape",)))
    add(make("k1_w8", B=2, K=1, W=8, seed=103, tags=("shape",)))
    add(make("k1_w1", B=2, K=1, W=1, seed=104, tags=("shape",)))
    add(make("k10_w6", B=2, K=10, W=6, seed=105, tags=("shape",)))
    # non-power-of-two C: the output must be fully sorted (HLS guard bug, §12 P1)
    for K, W in ((8, 3), (8, 5), (8, 6), (8, 7), (10, 1), (5, 2), (10, 6), (1, 3), (3, 1), (5, 1), (4, 5), (6, 5)):
        add(make(f"npot_c{K * W}_k{K}_w{W}", B=4, K=K, W=W, seed=200 + K * W, tags=("npot",)))
        add(make(f"npot_ties_c{K * W}_k{K}_w{W}", B=4, K=K, W=W, seed=300 + K * W,
                 probas=quantized(np.random.default_rng(300 + K * W), (4, K * W), 0, 8),
                 last=f32(0.5), tags=("npot", "ties")))
    # ties: all equal (identity permutation), equal within each parent group, equal across slots
    add(make("ties_all_equal", B=3, K=8, W=8, seed=401, probas=f32(0.5), last=f32(0.5), tags=("ties",)))
    add(make("ties_all_equal_npot", B=3, K=8, W=3, seed=402, probas=f32(0.25), last=f32(1.0), tags=("ties",)))
    rng = np.random.default_rng(403)
    grp = np.repeat(quantized(rng, (2, 6), 1, 256), 4, axis=1)  # K = 4: equal within each group
    add(make("ties_within_parent_group", B=2, K=4, W=6, seed=403, probas=grp, tags=("ties",)))
    add(make("ties_equal_last_scores", B=2, K=8, W=4, seed=404, last=f32(0.75),
             probas=quantized(np.random.default_rng(404), (2, 32), 0, 16), tags=("ties",)))
    add(make("ties_quantized_both", B=7, K=8, W=8, seed=405,
             probas=quantized(np.random.default_rng(405), (7, 64), 0, 4),
             last=quantized(np.random.default_rng(406), (7, 8), 1, 3), tags=("ties",)))
    # special values: zeros, +inf, NaN (= -inf, by index), -inf, a +-0 tie
    rng = np.random.default_rng(501)
    p = quantized(rng, (2, 24), 0, 64)
    p[0, [1, 5, 9]] = 0.0
    p[1, [0, 7]] = 0.0
    add(make("zeros", B=2, K=8, W=3, seed=501, probas=p, tags=("special",)))
    p = f32(rng.random((2, 24)))
    p[0, [3, 17]] = np.inf
    p[1, 23] = np.inf
    add(make("plus_inf", B=2, K=8, W=3, seed=502, probas=p, tags=("special",)))
    p = f32(rng.random((2, 24)))
    p[0, [0, 4, 20]] = np.nan
    p[1, [2, 3]] = -np.inf
    p[1, [1, 22]] = np.nan
    add(make("nan_and_minus_inf", B=2, K=8, W=3, seed=503, probas=p, tags=("special",)))
    p = np.full((1, 8), np.nan, np.float32)
    p[0, [2, 5]] = -np.inf
    add(make("all_nan_minus_inf", B=1, K=4, W=2, seed=504, probas=p, tags=("special",)))
    p = f32(rng.random((2, 16)))
    last = f32([[np.inf, 0.5], [0.0, 0.25]])  # inf * 0 -> NaN; 0 * x -> zeros
    p[0, 3] = 0.0
    add(make("inf_times_zero", B=2, K=8, W=2, seed=505, probas=p, last=last, tags=("special",)))
    p = np.zeros((2, 16), np.float32)
    p[0, ::2] = -0.0
    p[1, [0, 3, 6]] = -0.0
    p[1, 9] = 0.5
    add(make("signed_zero_tie", B=2, K=4, W=4, seed=506, probas=p, tags=("special", "ties")))
    add(make("neg_zero_last", B=2, K=4, W=2, seed=507, last=f32([[-0.0, 0.5], [0.5, -0.0]]),
             tags=("special",)))
    # node ids: cc = 0 and cc near / beyond N (emitted unchanged)
    add(make("cc_zero", B=2, K=8, W=4, cc=0, seed=601, tags=("cc",)))
    add(make("cc_near_n", B=2, K=8, W=8, cc=1000, seed=602, note="cache_topk_indices >= N = 1024", tags=("cc",)))
    # hot-token remap: on/off, -1 / Vh-1 / Vh pass-through, identity table
    Vh = 512
    tok = np.array([[-1, Vh - 1, Vh, 0, 5, 2**40, -(2**40), Vh + 1] * 2], np.int64)
    add(make("hot_edges", B=2, K=4, W=4, seed=701, hot="perm", Vh=Vh, tokens=tok, tags=("hot",)))
    add(make("hot_identity", B=2, K=8, W=4, seed=702, hot="identity", Vh=V_TOKENS, tags=("hot",)))
    add(make("hot_perm_full", B=3, K=8, W=8, seed=703, hot="perm", Vh=V_TOKENS, tags=("hot",)))
    add(make("hot_small_table", B=2, K=10, W=6, seed=704, hot="perm", Vh=64, tags=("hot",)))
    add(make("hot_empty_table", B=1, K=4, W=2, seed=705, hot="perm", Vh=0, tags=("hot",)))
    add(make("no_tokens", B=2, K=8, W=8, seed=706, tokens=False, tags=("hot",),
             note="topk_tokens_sampling absent, as in the non-hot CUDA golden"))
    add(make("hot_off_tokens", B=2, K=8, W=4, seed=707, tags=("hot",)))
    # every top-K child from the same parent: duplicate gathered rows
    last = np.full((2, 8), 1e-3, np.float32)
    last[0, 5] = 1.0
    last[1, 0] = 1.0
    add(make("same_parent", B=2, K=8, W=8, seed=801, last=last, tags=("gather",)))
    add(make("same_parent_nan_hidden", B=2, K=4, W=4, seed=802, last=f32([[1e-3, 1.0, 1e-3, 1e-3]]),
             hidden_dtype="bfloat16", specials=True, tags=("gather",)))
    # batch and hidden sizes, every hidden dtype with NaN/Inf payloads
    add(make("b1_h1", B=1, K=8, W=8, H=1, seed=901, tags=("size",)))
    add(make("b128_h64", B=128, K=8, W=8, H=64, seed=902, tags=("size",)))
    for i, hd in enumerate(HIDDEN):
        for H in (1, 16, 64):
            add(make(f"hidden_{hd}_h{H}_payloads", B=3, K=4, W=4, H=H, seed=1000 + 10 * i + H,
                     hidden_dtype=hd, specials=True, tags=("hidden",)))
    add(make("large_h4096_f16", B=2, K=8, W=8, H=4096, seed=1101, hidden_dtype="float16", specials=True,
             hot="perm", tags=("large",)))
    add(make("large_h4096_f32_b1", B=1, K=8, W=1, H=4096, seed=1102, tags=("large",)))
    return out


def _matrix() -> list[Case]:
    out = []
    for i, B, K, W, s in draft_matrix():
        seed = 5000 + i
        hd = HIDDEN[(i + 1 + s) % 3]  # the hidden dtype rotates with the point and the variant
        rng = np.random.default_rng(seed + 77)
        probas = quantized(rng, (B, W * K), 0, 32) if s == 2 else None  # seed 2: tie-heavy
        out.append(make(f"matrix_b{B}_k{K}_w{W}_s{s}", B=B, K=K, W=W, H=16, cc=1 + 17 * s, seed=seed,
                        hidden_dtype=hd, probas=probas, hot="perm" if s == 1 else None, tags=("matrix",)))
    return out


def cases() -> list[Case]:
    return _edge_cases() + _matrix()
