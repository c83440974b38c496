"""K6 ``draft_tree_reject_sample`` catalog: §6.8 edge cases and the §13 matrix.

Trees are built like sglang's verify trees: a parent list in ascending local index (parent < child),
``retrive_next_token`` = smallest local child, ``retrive_next_sibling`` = next larger local index with
the same parent. Draft tokens of siblings are the parent's target row ranked with Gumbel noise (a
draft model that mostly agrees with the target), so walks accept realistic path lengths.
Probabilities are softmax-of-normal or Dirichlet (numpy ``default_rng(seed)``); coins come from
``torch.rand(generator=torch.Generator('cpu').manual_seed(seed))`` in f32 (multiples of 2^-24).
Every output of K6 is fully written, so no sentinel buffers are carried.
"""

from __future__ import annotations

import numpy as np
import torch

from eagle4.cases import Case

KEY = "reject_sample"
COIN_MAX = np.float32(1.0 - 2.0**-24)  # the largest coin torch.rand can produce
MATRIX_SEEDS = (0, 1, 2)


# ---------------------------------------------------------------------------------------------
# Trees


def links_from_parents(parents) -> tuple[np.ndarray, np.ndarray]:
    """(retrive_next_token, retrive_next_sibling) of one request from its parent list (§8.2 step 1)."""
    Q = len(parents)
    nxt = np.full(Q, -1, np.int64)
    sib = np.full(Q, -1, np.int64)
    last_child = {}
    for t in range(1, Q):
        p = int(parents[t])
        assert 0 <= p < t, "verify trees list parents before children"
        if p in last_child:
            sib[last_child[p]] = t
        else:
            nxt[p] = t
        last_child[p] = t
    return nxt, sib


def eagle_parents(Q: int, rng: np.random.Generator, max_k: int = 4, max_w: int = 3) -> list[int]:
    """Layered tree like the draft loop makes: each layer expands up to ``max_w`` frontier nodes by 1..max_k children."""
    parents = [-1]
    frontier = [0]
    while len(parents) < Q:
        layer = []
        for p in frontier:
            for _ in range(int(rng.integers(1, max_k + 1))):
                if len(parents) >= Q:
                    break
                parents.append(p)
                layer.append(len(parents) - 1)
        if not layer:
            break
        w = int(rng.integers(1, max_w + 1))
        frontier = sorted(rng.choice(layer, size=min(w, len(layer)), replace=False).tolist())
    return parents


def random_parents(Q: int, rng: np.random.Generator, reach: int = 4) -> list[int]:
    """Parents drawn among the ``reach`` previous nodes: deep trees with interleaved sibling lists."""
    return [-1] + [int(rng.integers(max(0, t - reach), t)) for t in range(1, Q)]


def chain_parents(Q: int) -> list[int]:
    return [-1] + list(range(Q - 1))


def star_parents(Q: int) -> list[int]:
    return [-1] + [0] * (Q - 1)


TREES = {"eagle": eagle_parents, "random": random_parents,
         "chain": lambda Q, rng: chain_parents(Q), "star": lambda Q, rng: star_parents(Q)}


# ---------------------------------------------------------------------------------------------
# Distributions


def softmax_normal(rng: np.random.Generator, shape, scale: float = 3.0) -> np.ndarray:
    x = rng.standard_normal(shape) * scale
    x -= x.max(axis=-1, keepdims=True)
    e = np.exp(x)
    return (e / e.sum(axis=-1, keepdims=True)).astype(np.float32)  # f64 values <= 1 stay <= 1 in f32


def dirichlet(rng: np.random.Generator, shape, alpha: float | None = None) -> np.ndarray:
    """Dirichlet rows; the default concentration (alpha*V = 4) keeps the mass on a few tokens, like a target LM."""
    alpha = min(0.1, 4.0 / shape[-1]) if alpha is None else alpha
    g = rng.gamma(alpha, size=shape)
    g /= np.maximum(g.sum(axis=-1, keepdims=True), 1e-300)
    return g.astype(np.float32)


def quantized_rows(rng: np.random.Generator, shape, step: float = 2.0**-8) -> np.ndarray:
    """Tie-provoking rows: softmax rows rounded to multiples of ``step`` (sums need not be 1)."""
    p = softmax_normal(rng, shape, scale=1.5).astype(np.float64)
    return (np.round(p / step) * step).clip(0, 1).astype(np.float32)


def first_argmax(rows: np.ndarray) -> np.ndarray:
    """K5's argmax rule on the last axis: NaN is largest and the first NaN wins; lowest index on ties."""
    nan = np.isnan(rows)
    finite = np.where(nan, -np.inf, rows)
    return np.where(nan.any(axis=-1), nan.argmax(axis=-1), finite.argmax(axis=-1)).astype(np.int64)


# ---------------------------------------------------------------------------------------------
# Batches


def _coins(seed: int, B: int, Q: int) -> tuple[np.ndarray, np.ndarray]:
    gen = torch.Generator("cpu").manual_seed(seed)
    coins = torch.rand((B, Q), generator=gen, dtype=torch.float32).numpy()
    final = torch.rand((B,), generator=gen, dtype=torch.float32).numpy()
    return coins, final


def draft_tokens(rng: np.random.Generator, probs: np.ndarray, parents_b: list[list[int]], V: int,
                 noise: float = 1.0, spare: int = 4) -> np.ndarray:
    """Candidates: the children of node p take tokens of the parent row in noisy-rank order (distinct siblings).

    The draft ranking is the target's top ``kk + spare`` tokens re-ranked with Gumbel noise on log p: a
    drafter that mostly agrees with the target. Only the pool is noised, so large V stays cheap.
    """
    B, Q = len(parents_b), len(parents_b[0])
    cand = np.empty((B, Q), np.int64)
    cand[:, 0] = rng.integers(0, V, size=B)  # the root's token is never tested
    kids = max(1, max(int(np.bincount(par[1:], minlength=1).max()) if Q > 1 else 1 for par in parents_b))
    m = min(kids + spare, V)
    p = np.nan_to_num(probs.astype(np.float64), nan=0.0)
    pool = np.argpartition(-p, m - 1, axis=-1)[..., :m] if m < V else np.broadcast_to(np.arange(V), (B, Q, V))
    # log(p + 1e-30): zero entries stay rankable (no -inf ties) and sit below every real token
    score = np.log(np.take_along_axis(p, pool, -1) + 1e-30) + rng.gumbel(size=pool.shape) * noise
    order = np.take_along_axis(pool, np.argsort(-score, axis=-1, kind="stable"), -1)
    for b, par in enumerate(parents_b):
        rank: dict[int, int] = {}
        for t in range(1, Q):
            r = rank.get(par[t], 0)
            rank[par[t]] = r + 1
            cand[b, t] = order[b, par[t], r % m]
    return cand


def batch(seed: int, B: int, Q: int, S: int, V: int, *, tree: str = "eagle", greedy=0.0, probs: str = "softmax",
          scale: float = 6.0) -> tuple[dict[str, np.ndarray], dict]:
    """A realistic batch; ``greedy`` is a fraction of greedy requests or an explicit per-request mask."""
    rng = np.random.default_rng(seed)
    parents_b = [TREES[tree](Q, rng) for _ in range(B)]
    nxt = np.empty((B, Q), np.int64)
    sib = np.empty((B, Q), np.int64)
    for b, par in enumerate(parents_b):
        nxt[b], sib[b] = links_from_parents(par)
    if probs == "softmax":
        tp = softmax_normal(rng, (B, Q, V), scale)
    elif probs == "dirichlet":
        tp = dirichlet(rng, (B, Q, V))
    elif probs == "quantized":
        tp = quantized_rows(rng, (B, Q, V))
    else:
        raise ValueError(probs)
    if isinstance(greedy, float):
        is_greedy = (rng.random(B) < greedy).astype(np.uint8)
    else:
        is_greedy = np.asarray(greedy, np.uint8)
    target_predict = first_argmax(tp)
    for b in np.nonzero(is_greedy)[0]:  # K5 writes one-hot rows for greedy requests
        tp[b] = 0.0
        tp[b, np.arange(Q), target_predict[b]] = 1.0
    cand = draft_tokens(rng, tp, parents_b, V)
    coins, final = _coins(seed, B, Q)
    arrays = {
        "candidates": cand,
        "retrive_index": (np.arange(B, dtype=np.int64)[:, None] * Q + np.arange(Q, dtype=np.int64)[None, :]),
        "retrive_next_token": nxt,
        "retrive_next_sibling": sib,
        "target_probs": tp,
        "target_predict": target_predict,
        "is_greedy": is_greedy,
        "coins": coins,
        "final_coins": final,
    }
    params = {"threshold_single": 1.0, "threshold_acc": 1.0, "B": B, "Q": Q, "S": S, "V": V}
    return arrays, params


def _case(name: str, seed: int, arrays: dict, params: dict, tags=(), note: str = "") -> Case:
    return Case(kernel=KEY, case_id=f"{KEY}/{name}", params=dict(params), inputs=arrays, seed=seed,
                tags=tuple(tags), note=note)


def _least_passing(coin: np.float32, thr: np.float32) -> np.float32:
    """The least float32 x with coin <= f32(x / thr) (thr > 0 finite): the test is monotone in x."""
    x = np.float32(coin * thr)
    while np.float32(np.nextafter(x, np.float32(-np.inf)) / thr) >= coin:
        x = np.nextafter(x, np.float32(-np.inf))
    while np.float32(x / thr) < coin:
        x = np.nextafter(x, np.float32(np.inf))
    return x


def _set_probs_for_children(a: dict, b: int, row: int, values) -> list[int]:
    """Put ``values`` on the tokens of the children of ``row`` (in sibling order); returns those tokens."""
    toks = []
    cur = int(a["retrive_next_token"][b, row])
    k = 0
    while cur != -1:
        tok = int(a["candidates"][b, cur])
        if 0 <= tok < a["target_probs"].shape[2]:
            a["target_probs"][b, row, tok] = values[min(k, len(values) - 1)]
            toks.append(tok)
        k += 1
        cur = int(a["retrive_next_sibling"][b, cur])
    return toks


# ---------------------------------------------------------------------------------------------
# The catalog


def matrix_cases() -> list[Case]:
    out = []
    # (B, Q, S, V): V shrinks as B*Q grows to keep [B, Q, V] small; Q = 128 appears at B = 1 and B = 128.
    shapes = {1: [(64, 9, 4096), (128, 9, 512)], 7: [(32, 8, 1024)], 128: [(16, 6, 256), (128, 9, 32)]}
    for B, variants in shapes.items():
        for Q, S, V in variants:
            for seed in MATRIX_SEEDS:
                tree = ("eagle", "random", "eagle")[seed]
                kind = ("softmax", "dirichlet", "softmax")[seed]
                greedy = 0.0 if B == 1 and seed != 2 else (1.0 if B == 1 else 0.25)
                a, p = batch(1000 * B + 10 * Q + seed, B, Q, S, V, tree=tree, greedy=greedy, probs=kind)
                out.append(_case(f"matrix_B{B}_Q{Q}_S{S}_V{V}_s{seed}", seed, a, p, tags=("matrix",),
                                 note=f"{tree} trees, {kind} rows, greedy fraction {greedy}"))
    return out


def edge_cases() -> list[Case]:
    out = []

    a, p = batch(11, 7, 1, 4, 64, greedy=[0, 1, 0, 0, 1, 0, 0])
    out.append(_case("q1_root_only", 11, a, p, ("edge",), "Q = 1: no children, the bonus comes from row 0"))

    a, p = batch(12, 7, 16, 1, 128, greedy=[0, 1, 0, 0, 1, 0, 0])
    out.append(_case("s1_bonus_only", 12, a, p, ("edge",), "S = 1: no walk, bonus only"))

    # n = 0: children carry tiny probabilities, the root coin is the largest coin.
    a, p = batch(13, 7, 16, 6, 256, tree="star", probs="softmax")
    a["coins"][:, 0] = COIN_MAX
    for b in range(7):
        toks = _set_probs_for_children(a, b, 0, [2.0**-10])
        assert toks
    out.append(_case("all_root_children_rejected", 13, a, p, ("edge",),
                     "coin 1-2^-24 at the root and small child probabilities: n = 0, Rej = all children"))

    # n = S-1 on a chain: coin 0 accepts the first in-range child; greedy chain tokens equal target_predict.
    a, p = batch(14, 7, 12, 9, 128, tree="chain", greedy=[0, 1, 0, 1, 0, 1, 0])
    a["coins"][:] = 0.0
    for b in np.nonzero(a["is_greedy"])[0]:
        a["candidates"][b, 1:] = a["target_predict"][b, :-1]
    out.append(_case("full_path_accepted", 14, a, p, ("edge",),
                     "chain deeper than S-1, coin 0 / greedy match: n = S-1, bonus from the full row"))

    a, p = batch(15, 7, 32, 8, 512)
    a["coins"][:] = 0.0
    out.append(_case("coins_zero", 15, a, p, ("edge",), "all coins 0: any in-range child with p not NaN is accepted"))

    a, p = batch(16, 7, 32, 8, 512)
    a["coins"][:] = COIN_MAX
    a["final_coins"][:] = COIN_MAX
    out.append(_case("coins_max", 16, a, p, ("edge",), "coins and final coins 1-2^-24: c = 2^24-1 samples at the top of the CDF"))

    a, p = batch(17, 7, 32, 8, 512, probs="dirichlet")
    a["final_coins"][:] = 0.0
    out.append(_case("final_coin_zero", 17, a, p, ("edge",), "final_coins = 0: the first positive q"))

    a, p = batch(18, 7, 32, 8, 512)
    p["threshold_single"] = 0.5
    out.append(_case("threshold_single_0_5", 18, a, p, ("edge",)))

    a, p = batch(19, 7, 32, 8, 512)
    p["threshold_acc"] = 0.5
    out.append(_case("threshold_acc_0_5", 19, a, p, ("edge",)))

    a, p = batch(20, 7, 32, 8, 512)
    p["threshold_acc"] = 0.0
    out.append(_case("threshold_acc_0", 20, a, p, ("edge",), "threshold_acc 0 is capped at f32(1e-9)"))

    a, p = batch(21, 7, 32, 8, 512)
    p["threshold_single"] = 0.0
    a["coins"][:] = COIN_MAX
    out.append(_case("threshold_single_0", 21, a, p, ("edge",), "p >= 0 accepts every in-range child with p not NaN"))

    # Children with zero probability: prob_acc stays 0, every coin > 0 rejects them.
    a, p = batch(22, 7, 24, 6, 256, tree="eagle")
    a["coins"][a["coins"] == 0] = 0.5
    for b in range(7):
        for row in range(24):
            _set_probs_for_children(a, b, row, [0.0])
    out.append(_case("all_zero_sibling_probs", 22, a, p, ("edge",), "every child has p = 0: n = 0 everywhere"))

    # R_q = 0 with the mass only on rejected tokens: the fallback returns a token in Rej (lowest tied index).
    a, p = batch(23, 7, 8, 4, 64, tree="star")
    a["coins"][:, 0] = COIN_MAX
    a["target_probs"][:, 0, :] = 0.0
    for b in range(7):
        _set_probs_for_children(a, b, 0, [0.25, 0.25, 0.0625])  # total 0.8125 < the coin
    out.append(_case("residual_zero_fallback_in_rej", 23, a, p, ("edge", "tie"),
                     "rejected children hold all the mass: R_q = 0, argmax fallback picks a rejected token"))

    # R_q = 0 on a row of zeros and NaNs: the first NaN wins; a NaN child poisons prob_acc for its later siblings.
    a, p = batch(24, 7, 8, 4, 64, tree="star")
    a["coins"][:, 0] = 0.25
    a["target_probs"][:, 0, :] = 0.0
    a["target_probs"][:, 0, [9, 40]] = np.nan
    for b in range(7):
        _set_probs_for_children(a, b, 0, [0.0, np.nan, 0.0])
    out.append(_case("residual_zero_first_nan", 24, a, p, ("edge", "nan"),
                     "zeros and NaNs only: no child accepted, fallback = first NaN of the row"))

    a, p = batch(25, 7, 32, 8, 256)
    a["target_probs"] *= np.float32(0.5)
    a["target_probs"][3] = np.minimum(a["target_probs"][3] * np.float32(64.0), np.float32(1.0))
    out.append(_case("unnormalised_rows", 25, a, p, ("edge",), "rows summing to 0.5 and to more than 1"))

    a, p = batch(26, 7, 16, 6, 128, tree="eagle")
    a["target_probs"][:, :, 5] = np.float32(1.0)
    a["target_probs"][:, :, 6] = np.float32(0.5)
    a["candidates"][:, 1] = 5  # the first root child has p = 1.0 >= threshold_single
    a["coins"][:] = COIN_MAX
    out.append(_case("entry_exactly_one", 26, a, p, ("edge",), "entries of exactly 1.0: q_v = 2^32; p >= 1 accepts"))

    a, p = batch(27, 7, 32, 8, 256, probs="dirichlet")
    rng = np.random.default_rng(27)
    a["target_probs"][rng.random(a["target_probs"].shape) < 0.05] = np.nan
    out.append(_case("nan_entries", 27, a, p, ("edge", "nan"), "5% NaN entries: NaN -> 0 in the residual"))

    a, p = batch(28, 7, 16, 6, 64, tree="star", greedy=[0, 1, 0, 1, 0, 1, 0])
    V = p["V"]
    a["candidates"][:, 1:6] = np.array([-1, V, -5, 2**40, V + 7])
    p["threshold_single"] = -1.0
    a["coins"][:] = 0.0
    for b in np.nonzero(a["is_greedy"])[0]:  # greedy requests accept the in-range child after the skipped ones
        a["candidates"][b, 7] = a["target_predict"][b, 0]
    out.append(_case("out_of_range_tokens", 28, a, p, ("edge",),
                     "tokens -1, V, ... never accepted (coin 0, threshold_single < 0) and never in Rej"))

    a, p = batch(29, 7, 16, 6, 64, tree="star")
    a["candidates"][:, 1:] = a["candidates"][:, 1:2]
    a["candidates"][:, 4:] = (a["candidates"][:, 4:5] + 1) % 64
    a["coins"][:] = COIN_MAX
    out.append(_case("duplicate_sibling_tokens", 29, a, p, ("edge",),
                     "repeated sibling tokens: prob_acc grows with each repeat; Rej is a set"))

    a, p = batch(30, 7, 32, 8, 512, greedy=[0, 1, 1, 0, 1, 0, 0])
    out.append(_case("greedy_sampling_mixed", 30, a, p, ("edge",)))

    a, p = batch(31, 7, 32, 12, 128, tree="chain", greedy=[0, 1, 0, 0, 0, 1, 0], scale=5.0)
    out.append(_case("deep_chain", 31, a, p, ("edge",)))
    a, p = batch(32, 4, 5, 9, 128, tree="chain")
    a["coins"][:] = 0.0
    out.append(_case("chain_shorter_than_s", 32, a, p, ("edge",),
                     "the walk reaches a leaf before S-1: Rej is empty, the bonus uses the leaf row"))

    a, p = batch(33, 7, 64, 4, 256, tree="star", greedy=[0, 1, 0, 0, 0, 1, 0], scale=1.0)
    out.append(_case("wide_star", 33, a, p, ("edge",), "63 root children"))

    # Ties quantized to 2^-8: coins equal to prob_acc / thr_acc exactly (the test is <=).
    for name, thr in (("coin_equals_prob_acc", 1.0), ("coin_equals_prob_acc_thr_0_5", 0.5)):
        a, p = batch(34, 7, 16, 6, 64, tree="star", probs="quantized")
        p["threshold_acc"] = thr
        for b in range(7):
            toks = _set_probs_for_children(a, b, 0, [2.0**-8 * (b + 1), 2.0**-8 * 3])
            acc = np.float32(a["target_probs"][b, 0, toks[0]]) + np.float32(a["target_probs"][b, 0, toks[1]])
            a["coins"][b, 0] = min(np.float32(acc / np.float32(thr)), COIN_MAX)
        out.append(_case(name, 34, a, p, ("edge", "tie"), "coin exactly prob_acc/thr_acc at the second root child"))

    # The accepted prefix sum exactly at the least float that passes coin <= RN(prob_acc / thr_acc) (even
    # requests) and one ulp under it (odd), at coins where that float is not RN(coin * thr_acc): a kernel
    # that tests prob_acc against a precomputed bound instead of dividing must find it to the ulp.
    a, p = batch(36, 7, 16, 6, 64, tree="star", probs="quantized")
    p["threshold_acc"] = 0.7
    thr, second = np.float32(0.7), np.float32(2.0**-8 * 3)
    rng = np.random.default_rng(36)
    for b in range(7):
        while True:
            coin = np.float32(rng.uniform(0.2, 0.9))
            bound = _least_passing(coin, thr)
            if bound != np.float32(coin * thr):
                break
        want = bound if b % 2 == 0 else np.nextafter(bound, np.float32(-np.inf))
        first = np.float32(want - second)
        while np.float32(first + second) < want:
            first = np.nextafter(first, np.float32(np.inf))
        while np.float32(first + second) > want:
            first = np.nextafter(first, np.float32(-np.inf))
        assert np.float32(first + second) == want
        _set_probs_for_children(a, b, 0, [first, second])
        a["coins"][b, 0] = coin
    out.append(_case("prob_acc_at_the_pass_bound", 36, a, p, ("edge", "tie"),
                     "prefix sum at the least float passing the coin test (even b) and one ulp under (odd b)"))

    a, p = batch(35, 7, 16, 6, 64, probs="quantized", greedy=[0, 1, 0, 0, 0, 0, 0])
    a["final_coins"][:] = np.float32(0.5)
    out.append(_case("quantized_ties", 35, a, p, ("edge", "tie"), "2^-8-quantized rows: argmax ties, equal prefix sums"))
    return out


def multiblock_cases() -> list[Case]:
    """The edge cases again at V = 40960, where the CUDA kernel spreads the final row over 20 blocks of 2048 entries
    without a cluster (more than a cluster's 16: its form without clusters, k6g_exchange_totals) and combines their
    sums: the R_q = 0 fallback, an entry >= 1 (the exact q), and rejected tokens on both sides of a block boundary and
    in different blocks. Tagged ``multiblock``: larger rows than the other edge cases, on purpose."""
    out = []
    V = 40960

    def star(seed: int):
        """Three requests, a star of 15 root children whose tokens spread over the row's blocks and their edges."""
        a, p = batch(seed, 3, 16, 4, V, tree="star")
        a["candidates"][:, 1:] = [30000, 2048, 2047, 300, 4096, 40959, 4095, 6144, 10, 20000, 35000, 1024, 3000,
                                  8000, 2049]
        return a, p

    # R_q = 0: the rejected children hold all the mass; the two largest tie across blocks (lower index wins).
    a, p = star(42)
    a["coins"][:, 0] = COIN_MAX
    a["target_probs"][:, 0, :] = 0.0
    for b in range(3):
        _set_probs_for_children(a, b, 0, [0.25, 0.25, 0.0625, 0.0])
    out.append(_case("multiblock_residual_zero_fallback", 42, a, p, ("edge", "tie", "multiblock"),
                     "V = 40960: the mass on rejected tokens in several blocks, R_q = 0, argmax tie across blocks"))

    # R_q = 0 on zeros and NaNs: the row's first NaN (the NaN child's token) lies in block 1, later NaNs beyond.
    a, p = star(43)
    a["coins"][:, 0] = 0.25
    a["target_probs"][:, 0, :] = 0.0
    a["target_probs"][:, 0, [20500, 37001]] = np.nan
    for b in range(3):
        _set_probs_for_children(a, b, 0, [0.0, np.nan, 0.0])
    out.append(_case("multiblock_residual_zero_first_nan", 43, a, p, ("edge", "nan", "multiblock"),
                     "V = 40960: zeros and NaNs only, fallback = the row's first NaN, not in its first block"))

    # The exact q: entries of 1.0 in two blocks of the final row, rejected tokens around block boundaries.
    a, p = star(44)
    a["coins"][:] = COIN_MAX
    for b in range(3):
        _set_probs_for_children(a, b, 0, [2.0**-10])
    a["target_probs"][:, 0, 20481] = np.float32(1.0)
    a["target_probs"][:, 0, 30001] = np.float32(1.0)
    a["final_coins"][:] = np.array([0.0, 0.5, COIN_MAX], np.float32)
    out.append(_case("multiblock_exact_q", 44, a, p, ("edge", "multiblock"),
                     "V = 40960: q_v = 2^32 in two blocks of the final row, Rej across blocks, final coins 0, 0.5, max"))
    return out


def large_cases() -> list[Case]:
    out = []
    a, p = batch(40, 1, 64, 9, 128256, tree="eagle", scale=4.0)
    out.append(_case("large_B1_Q64_V128256", 40, a, p, ("large",), "§6.9 example size"))
    a, p = batch(41, 2, 8, 6, 152064, tree="eagle", probs="dirichlet", greedy=[0, 1])
    out.append(_case("large_B2_Q8_V152064", 41, a, p, ("large",), "Qwen vocabulary"))
    return out


def cases() -> list[Case]:
    return matrix_cases() + edge_cases() + multiblock_cases() + large_cases()
