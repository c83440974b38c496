"""Case catalog of K4 ``fused_tree_mask_operator`` (KERNELS.md §4.6 edge cases and the §13 matrix).

Buffers and sentinels:
* ``kv_indices`` (sentinel -777), ``packed_mask`` (sentinel 0x3C) and, where present,
  ``mask_bool`` (sentinel ``i mod 3 == 0``) are passed at the D21 caps plus a few elements of
  slack, so every case has a tail that must keep its sentinel;
* ``mask_bool`` is passed whenever ``write_bool_mask`` is true, and by the ``bool_mask_off_*``
  cases with ``write_bool_mask`` false (then it must stay untouched);
* ``req_to_token`` slots past each request's ``L_b`` hold -777, so a read past the prefix shows up
  in ``kv_indices``.

Two tree shapes follow §4.3: ``verify`` (``T = Q``, token 0 is the root with parent -1, every
other parent a smaller local index) and ``draft`` (tokens fed layer by layer, layer 2 with parent
-1, later layers' parents in the previous layer, queries = the last layer's ``W`` tokens).
"""

from __future__ import annotations

import numpy as np

from eagle4.cases import Case

KERNEL = "tree_mask"
SEEDS = (0, 1, 2)
BATCHES = (1, 7, 128)
KW_PAIRS = ((8, 1), (8, 3), (8, 8), (10, 6), (1, 1), (4, 4))  # §13 (K, W)
KV_SENTINEL = np.int32(-777)
PACKED_SENTINEL = np.uint8(0x3C)
UNREAD_SLOT = np.int32(-777)
SLACK = (5, 3, 11)  # extra elements past the caps of kv_indices, packed_mask, mask_bool


def verify_parents(rng: np.random.Generator, T: int) -> np.ndarray:
    """Root 0 (parent -1); token t > 0 hangs under a random earlier token, biased to recent ones."""
    par = np.full(T, -1, np.int64)
    for t in range(1, T):
        lo = max(0, t - int(rng.integers(1, 9)))
        par[t] = rng.integers(lo, t)
    return par


def draft_parents(rng: np.random.Generator, widths: list[int]) -> np.ndarray:
    """§8.1 step 3: layer-2 tokens have parent -1; a later layer's token has off_{d-1} + slot."""
    par = []
    off_prev, w_prev = None, None
    for w in widths:
        if off_prev is None:
            par += [-1] * w
        else:
            par += [off_prev + int(rng.integers(0, w_prev)) for _ in range(w)]
        off_prev, w_prev = len(par) - w, w
    return np.array(par, np.int64)


def _make(name, seq_lens, parents, Q, *, rng, write_bool=True, bool_buffer=None, S_max=None,
          pool=None, r2t_values=None, locs=None, seed=None, tags=(), note="") -> Case:
    """Build one case; ``parents`` is [B, T] (or [T], shared by every request)."""
    seq_lens = np.asarray(seq_lens, np.int64)
    B = len(seq_lens)
    parents = np.asarray(parents, np.int64)
    if parents.ndim == 1:
        parents = np.tile(parents, (B, 1))
    T = parents.shape[1]
    max_l = int(seq_lens.max())
    S_max = max_l + 8 if S_max is None else S_max
    if pool is None:
        P = B + 3
        pool = rng.permutation(P)[:B]
    else:
        P = int(np.max(pool)) + 1
    pool = np.asarray(pool, np.int64)
    r2t = np.full((P, S_max), UNREAD_SLOT, np.int32)
    for b in range(B):
        L = int(seq_lens[b])
        if r2t_values is None:
            r2t[pool[b], :L] = rng.integers(0, 1 << 20, L)
        else:
            r2t[pool[b], :L] = r2t_values(b, L)
    if locs is None:
        locs = rng.integers(0, 1 << 20, (B, T))
    kv_cap = B * (max_l + T)
    bytes_cap = B * ((Q * (max_l + T) + 7) // 8)
    bits_cap = B * Q * (max_l + T)
    inputs = {
        "seq_lens": seq_lens,
        "req_pool_indices": pool,
        "req_to_token": r2t,
        "tree_cache_locs": np.asarray(locs, np.int64),
        "tree_parent": parents,
        "kv_indices": np.full(kv_cap + SLACK[0], KV_SENTINEL, np.int32),
        "packed_mask": np.full(bytes_cap + SLACK[1], PACKED_SENTINEL, np.uint8),
    }
    if write_bool or bool_buffer:
        inputs["mask_bool"] = (np.arange(bits_cap + SLACK[2]) % 3) == 0
    params = {"S_max": int(S_max), "B": B, "T": T, "Q": int(Q), "write_bool_mask": bool(write_bool)}
    return Case(KERNEL, f"{KERNEL}/{name}", params, inputs, seed=seed, tags=tuple(tags), note=note)


def _edge_cases() -> list[Case]:
    out: list[Case] = []
    rng = np.random.default_rng(2000)
    s = 2000
    out.append(_make("edge/L0_all", [0] * 7, verify_parents(rng, 8), 8, rng=rng, seed=s, note="L_b = 0"))
    out.append(_make("edge/T1_Q1", rng.integers(0, 20, 7), [-1], 1, rng=rng, seed=s))
    out.append(_make("edge/T1_Q1_L0_B1", [0], [-1], 1, rng=rng, seed=s, note="one bit per request"))
    chain = np.arange(-1, 31, dtype=np.int64)
    out.append(_make("edge/chain_verify", rng.integers(0, 40, 7), chain, 32, rng=rng, seed=s,
                     note="chain: depth T-1"))
    out.append(_make("edge/chain_last_query", rng.integers(0, 40, 7), np.arange(-1, 11, dtype=np.int64), 1,
                     rng=rng, seed=s, note="chain of 12, only the deepest token queried"))
    out.append(_make("edge/star_draft", rng.integers(1, 40, 7), [-1] * 8, 8, rng=rng, seed=s,
                     note="all parents -1 (draft layer 2)"))
    out.append(_make("edge/star_verify", rng.integers(0, 40, 7), [-1] + [0] * 15, 16, rng=rng, seed=s,
                     note="root with 15 children"))
    out.append(_make("edge/q_lt_t", rng.integers(1, 40, 7), draft_parents(rng, [8, 8, 3]), 3, rng=rng, seed=s,
                     note="Q < T: earlier layers are columns only"))
    # Q*(L+T) multiple of 8 everywhere, and never a multiple of 8.
    out.append(_make("edge/seg_bits_mult8", rng.integers(0, 30, 7), verify_parents(rng, 8), 8, rng=rng, seed=s))
    L_odd = 2 * rng.integers(0, 15, 7)  # L even, T = 3 odd, Q = 3: Q*(L+T) odd
    out.append(_make("edge/seg_bits_not_mult8", L_odd, draft_parents(rng, [2, 3]), 3, rng=rng, seed=s))
    # Mixed L across 128 requests (segment alignment), verify and draft shapes.
    out.append(_make("edge/mixed_L_B128_verify", rng.integers(0, 300, 128), verify_parents(rng, 16), 16,
                     rng=rng, seed=s, note="L_b in [0, 300): byte segments start fresh per request"))
    par = np.stack([draft_parents(rng, [8, 8, 5]) for _ in range(128)])
    out.append(_make("edge/mixed_L_B128_draft", rng.integers(0, 300, 128), par, 5, rng=rng, seed=s))
    # Invalid parents (D22): forward, self, < -1; and an invalid link in the middle of a chain.
    par = np.stack([
        [-1, 0, 5, 1, 3, 4, 6, 2],      # token 2 -> 5 (>= t): walk from 2 stops at once
        [-1, 0, 1, 3, 3, 4, 5, 6],      # token 3 -> 3 (self): chains through 3 stop there
        [-1, -2, 1, 2, 3, -100, 5, 6],  # parents < -1
        [-1, 0, 1, 2, 9, 4, 5, 6],      # mid-chain: 7->6->5->4 then 4 -> 9 invalid
        [-1, 0, 1, 2, 3, 4, 5, 6],      # a valid chain for contrast
        [7, 7, 7, 7, 7, 7, 7, 7],       # everything invalid: depth 0 everywhere
        [-1, -1, 0, 1, 2, 3, -7, 6],
    ]).astype(np.int64)
    out.append(_make("edge/invalid_parents", rng.integers(0, 20, 7), par, 8, rng=rng, seed=s,
                     note="D22: an invalid parent stops the walk and is not added"))
    out.append(_make("edge/invalid_parents_q_lt_t", rng.integers(0, 20, 7), par, 3, rng=rng, seed=s))
    # Slot values near 2^31 - 1 (i32 range of kv_indices).
    top = 2**31 - 1
    out.append(_make("edge/slots_near_i32_max", rng.integers(1, 20, 7), verify_parents(rng, 8), 8, rng=rng, seed=s,
                     r2t_values=lambda b, L: top - np.arange(L, dtype=np.int64),
                     locs=top - rng.integers(0, 64, (7, 8)), note="req_to_token and tree_cache_locs near 2^31-1"))
    # L_b == S_max (the whole row is prefix).
    out.append(_make("edge/L_eq_S_max", [24] * 7, verify_parents(rng, 8), 8, S_max=24, rng=rng, seed=s))
    # bool mask off: with a sentinel mask_bool buffer that must stay untouched, and without one.
    out.append(_make("edge/bool_mask_off_with_buffer", rng.integers(0, 30, 7), verify_parents(rng, 8), 8,
                     rng=rng, write_bool=False, bool_buffer=True, seed=s, note="mask_bool must keep its sentinel"))
    out.append(_make("edge/bool_mask_off", rng.integers(0, 30, 7), verify_parents(rng, 8), 8,
                     rng=rng, write_bool=False, seed=s))
    # Requests sharing one pool row; Q = T = 128 (the largest verify tree).
    out.append(_make("edge/shared_pool_row", rng.integers(0, 30, 4), verify_parents(rng, 8), 8,
                     pool=[2, 2, 0, 2], rng=rng, seed=s))
    out.append(_make("edge/Q128_B1", [200], verify_parents(rng, 128), 128, rng=rng, seed=s))
    return out


def _matrix_cases() -> list[Case]:
    out: list[Case] = []
    for seed in SEEDS:
        for B in BATCHES:
            # draft use: Q = W frontier tokens after 0..2 earlier layers of width <= K
            for K, W in KW_PAIRS:
                rng = np.random.default_rng([seed, B, K, W])
                n_prev = seed % 3
                widths = [int(x) for x in rng.integers(1, K + 1, n_prev)] + [W]  # T is one scalar per call
                par = np.stack([draft_parents(rng, widths) for _ in range(B)])
                out.append(_make(f"matrix/draft_B{B}_K{K}_W{W}_s{seed}", rng.integers(0, 65, B), par, W,
                                 rng=rng, write_bool=(seed != 1), seed=seed, tags=("matrix", "draft")))
            # verify use: T = Q
            for Q in (1, 16, 64):
                rng = np.random.default_rng([seed, B, Q, 99])
                par = np.stack([verify_parents(rng, Q) for _ in range(B)])
                out.append(_make(f"matrix/verify_B{B}_Q{Q}_s{seed}", rng.integers(0, 65, B), par, Q,
                                 rng=rng, write_bool=(seed != 1), seed=seed, tags=("matrix", "verify")))
    return out


def cases() -> list[Case]:
    return _edge_cases() + _matrix_cases()
