"""K7 ``update_verify_result`` catalog: §7.5 edge cases and the §13 matrix.

Each request gets a verify tree built like sglang's (``eagle4.cases.reject_sample``) and an
accepted root path through it, exactly what K6 emits: ``accept_index`` rows ``b*Q + local`` then
-1, ``predicts`` -1 except at the accepted positions. ``req_to_token`` holds a committed prefix
per pool row and the sentinel -777 elsewhere; every padded output buffer (§7.3 caps) carries
sentinel contents (-777, hidden rows of -3.0) so the comparator sees the -1 padding being written
and the ``next_hidden`` tail left alone.
"""

from __future__ import annotations

import numpy as np

from eagle4 import dtypes as dt
from eagle4.cases import Case
from eagle4.cases.reject_sample import TREES, chain_parents, links_from_parents

KEY = "update_verify"
SENTINEL = -777
HIDDEN_SENTINEL = -3.0
MATRIX_SEEDS = (0, 1, 2)
VOCAB = 32000

# NaN payloads that a float conversion could canonicalize; the bit copy must keep them.
NAN_BITS = {
    "float16": (np.uint16, [0x7E01, 0xFC17, 0x7C01]),
    "bfloat16": (np.uint16, [0x7FC1, 0xFF81, 0x7F81]),
    "float32": (np.uint32, [0x7FC00001, 0xFFA00000, 0x7F800001]),
}
_PADDED_INT = {
    "accepted_flat": np.int32, "verified_id": np.int32, "free_slots": np.int64, "accepted_node_ids": np.int64,
    "unfinished_index": np.int64, "next_accept_length": np.int32, "next_indptr": np.int32,
    "next_verified_id": np.int32, "next_positions": np.int64, "next_seq_lens": np.int64,
    "next_req_pool_indices": np.int64, "next_root_token": np.int32, "next_last_flat": np.int32,
}


def _cap(name: str, B: int, Q: int, S: int) -> int:
    if name == "free_slots":
        return B * Q
    if name == "next_indptr":
        return B + 1
    if name in ("accepted_flat", "verified_id", "accepted_node_ids", "next_verified_id", "next_positions"):
        return B * S
    return B


def root_path(parents: list[int], length: int, rng: np.random.Generator) -> list[int]:
    """Local indices of a root path with up to ``length`` accepted nodes (stops early at a leaf)."""
    nxt, sib = links_from_parents(parents)
    path = [0]
    while len(path) <= length:
        kids = []
        cur = int(nxt[path[-1]])
        while cur != -1:
            kids.append(cur)
            cur = int(sib[cur])
        if not kids:
            break
        path.append(int(rng.choice(kids)))
    return path


def hidden(rng: np.random.Generator, rows: int, H: int, dtype: str, nan_payloads: bool) -> np.ndarray:
    x = rng.standard_normal((rows, H)).astype(np.float32)
    arr = x.astype(dt.numpy_dtype(dtype))
    if nan_payloads:
        ut, pats = NAN_BITS[dtype]
        bits = arr.view(ut)
        flat = bits.reshape(-1)
        where = rng.choice(flat.size, size=min(flat.size, 3 * max(1, rows // 2)), replace=False)
        flat[where] = np.array(pats, dtype=ut)[np.arange(where.size) % len(pats)]
    return arr


def batch(seed: int, B: int, Q: int, S: int, H: int, *, hidden_dtype: str = "float16", lengths: str = "random",
          finish: str = "mixed", node_ids: bool = True, tight: bool = False, nan_payloads: bool = False,
          tree: str = "eagle") -> tuple[dict[str, np.ndarray], dict]:
    """One K7 batch.

    lengths: "random" (up to S-1, bounded by the tree), "zero" (a_b = 0), "full" (a_b = S-1, chain trees),
    "variable" (alternating 0, S-1 and random). finish: "none" (U = B), "all" (U = 0), "mixed", "zero"
    (finished requests keep only j = 0), "full" (finished at a_b, nothing truncated).
    tight: L_b + a_b + 1 = S_max for every request (the last legal slot).
    """
    rng = np.random.default_rng(seed)
    accept_index = np.full((B, S), -1, np.int32)
    accept_length = np.zeros(B, np.int32)
    predicts = np.full(B * Q, -1, np.int32)
    for b in range(B):
        want = {"random": int(rng.integers(0, S)), "zero": 0, "full": S - 1,
                "variable": (0, S - 1, int(rng.integers(0, S)))[b % 3]}[lengths]
        parents = chain_parents(Q) if want == S - 1 and lengths != "random" else TREES[tree](Q, rng)
        path = root_path(parents, min(want, Q - 1), rng)
        pos = [b * Q + i for i in path]
        accept_index[b, :len(pos)] = pos
        accept_length[b] = len(pos) - 1
        predicts[pos] = rng.integers(0, VOCAB, size=len(pos))
    al = accept_length.astype(np.int64)
    finished = {"none": np.zeros(B, bool), "all": np.ones(B, bool)}.get(finish, rng.random(B) < 0.4)
    if finish in ("zero", "full") and B > 1:
        finished[0] = True  # at least one truncation point of the kind under test
        finished[-1] = False
    fpos = {"zero": np.zeros(B, np.int64), "full": al}.get(finish, np.array([rng.integers(0, a + 1) for a in al]))
    finish_pos = np.where(finished, fpos, -1).astype(np.int32)
    a_trunc = np.where(finish_pos >= 0, finish_pos, accept_length).astype(np.int64)

    seq_lens = rng.integers(1, 300, size=B).astype(np.int64)
    if tight:
        S_max = int((seq_lens + S).max())
        seq_lens = S_max - a_trunc - 1
    else:
        S_max = int((seq_lens + S).max()) + int(rng.integers(0, 16))
    P = B + int(rng.integers(1, 9))
    req_pool_indices = rng.permutation(P)[:B].astype(np.int64)
    req_to_token = np.full((P, S_max), SENTINEL, np.int32)
    slot_space = 1 << 20
    committed = rng.choice(slot_space, size=int(seq_lens.sum()) + B * Q, replace=False).astype(np.int64)
    out_cache_loc = committed[:B * Q] + 7  # distinct KV slots, not ordered like the positions
    off = B * Q
    for b in range(B):
        L = int(seq_lens[b])
        req_to_token[req_pool_indices[b], :L] = committed[off:off + L]
        off += L

    arrays = {
        "accept_index": accept_index,
        "accept_length": accept_length,
        "predicts": predicts,
        "finish_pos": finish_pos,
        "seq_lens": seq_lens,
        "req_pool_indices": req_pool_indices,
        "req_to_token": req_to_token,
        "out_cache_loc": out_cache_loc,
        "hidden_states": hidden(rng, B * Q, H, hidden_dtype, nan_payloads),
    }
    if node_ids:
        ids = np.empty((B, Q), np.int64)
        for b in range(B):  # ascending node ids, root = node 0 (§8.2 step 1)
            ids[b] = np.concatenate([[0], np.sort(rng.choice(np.arange(1, 4 * Q + 1), Q - 1, replace=False))])
        arrays["verify_node_ids"] = ids
    for name, dtype in _PADDED_INT.items():
        if name == "accepted_node_ids" and not node_ids:
            continue
        arrays[name] = np.full(_cap(name, B, Q, S), SENTINEL, dtype)
    arrays["next_hidden"] = np.full((B * S, H), HIDDEN_SENTINEL, np.float32).astype(dt.numpy_dtype(hidden_dtype))
    params = {"B": B, "Q": Q, "S": S, "H": H, "S_max": S_max}
    return arrays, params


def _case(name: str, seed: int, arrays: dict, params: dict, tags=(), note: str = "") -> Case:
    return Case(kernel=KEY, case_id=f"{KEY}/{name}", params=dict(params), inputs=arrays, seed=seed,
                tags=tuple(tags), note=note)


def matrix_cases() -> list[Case]:
    out = []
    shapes = {1: (64, 9, 64), 7: (32, 8, 16), 128: (16, 6, 16)}
    dtypes = ("float16", "bfloat16", "float32")
    for B, (Q, S, H) in shapes.items():
        for seed in MATRIX_SEEDS:
            a, p = batch(2000 * B + seed, B, Q, S, H, hidden_dtype=dtypes[seed], tree=("eagle", "random", "eagle")[seed],
                         node_ids=seed != 1)
            out.append(_case(f"matrix_B{B}_Q{Q}_S{S}_H{H}_{dtypes[seed]}_s{seed}", seed, a, p, ("matrix",)))
    a, p = batch(2128, 128, 128, 9, 16, hidden_dtype="bfloat16", lengths="variable")
    out.append(_case("matrix_B128_Q128_S9_H16_bfloat16", 0, a, p, ("matrix",), "Q = 128"))
    return out


def _edge(name: str, seed: int, note: str, *, B: int = 7, Q: int = 16, S: int = 6, H: int = 16,
          tags: tuple[str, ...] = ("edge",), **options) -> Case:
    """One edge case: a ``batch`` drawn from ``seed`` (B=7, Q=16, S=6, H=16 unless the case is about a size)."""
    a, p = batch(seed, B, Q, S, H, **options)
    return _case(name, seed, a, p, tags, note)


def edge_cases() -> list[Case]:
    return [
        _edge("u0_all_finished", 50, "U = 0: next_* hold only -1 padding, next_indptr = [0]", finish="all"),
        _edge("u0_b1", 51, "B = 1, U = 0", B=1, finish="all", lengths="full"),
        _edge("u_eq_b", 52, "no request finished", finish="none"),
        _edge("finish_pos_zero", 53, "finished requests keep only the root position", finish="zero", lengths="full"),
        _edge("finish_pos_full", 54, "finish_pos = a_b: finished, nothing truncated", finish="full"),
        _edge("all_a_zero", 55, "a_b = 0 everywhere: N_acc = B", lengths="zero"),
        _edge("all_a_full", 56, "a_b = S-1 everywhere", lengths="full", finish="none"),
        _edge("variable_lengths_b128", 57, "accept lengths 0, S-1, random: prefix sums", B=128, lengths="variable"),
        _edge("last_legal_slot", 58, "L_b + a_b + 1 = S_max for every request", tight=True, lengths="variable"),
        *(_edge(f"nan_payload_{dtype}", 60 + i, "hidden NaN payloads: bit copy", tags=("edge", "nan"),
                hidden_dtype=dtype, nan_payloads=True)
          for i, dtype in enumerate(("float16", "bfloat16", "float32"))),
        _edge("no_verify_node_ids", 63, "accepted_node_ids absent", node_ids=False),
        _edge("h1", 64, "H = 1", Q=8, S=4, H=1, hidden_dtype="float32"),
        _edge("q1_s1", 65, "Q = 1, S = 1: only the root", B=1, Q=1, S=1),
        _edge("h4096_example", 66, "§7.6 example shape (B=1, Q=64, S=9, H=4096, fp16)", B=1, Q=64, S=9, H=4096,
              hidden_dtype="float16", lengths="full", finish="none"),
    ]


def cases() -> list[Case]:
    return matrix_cases() + edge_cases()
