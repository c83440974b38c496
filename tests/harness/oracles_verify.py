"""Scalar transcriptions of KERNELS.md §6 (K6) and §7 (K7) in plain Python: Python ints for the
integer inverse CDF, numpy float32 scalars for the walk. Shared by the reference tests
(test_ref_properties_k6_k7.py) and the C-sim tests (test_hls_verify_side.py): one oracle per kernel."""

from __future__ import annotations

import math

import numpy as np

from eagle4 import dtypes as dt


def k6_oracle(inp: dict, params: dict) -> dict:
    B, Q, S, V = (int(params[k]) for k in ("B", "Q", "S", "V"))
    thr_single = np.float32(params["threshold_single"])
    thr_acc = max(np.float32(params["threshold_acc"]), np.float32(1e-9))
    predicts = [-1] * (B * Q)
    accept_index = [[-1] * S for _ in range(B)]
    accept_length = [0] * B
    for b in range(B):
        greedy = bool(inp["is_greedy"][b])
        cand, nxt, sib = inp["candidates"][b], inp["retrive_next_token"][b], inp["retrive_next_sibling"][b]
        row, cur, n = 0, 0, 0
        last = int(inp["retrive_index"][b, 0])
        accept_index[b][0] = last
        prob_acc = np.float32(0.0)
        rej: set[int] = set()
        coin = inp["coins"][b, 0]
        for _ in range(1, S):
            cur = int(nxt[cur])
            while cur != -1:
                tok = int(cand[cur])
                if not 0 <= tok < V:
                    cur = int(sib[cur])
                    continue
                if greedy:
                    accepted = tok == int(inp["target_predict"][b, row])
                else:
                    p = inp["target_probs"][b, row, tok]
                    prob_acc = np.float32(prob_acc + p)
                    accepted = bool(coin <= np.float32(prob_acc / thr_acc)) or bool(p >= thr_single)
                if accepted:
                    predicts[last] = tok
                    n += 1
                    last = int(inp["retrive_index"][b, cur])
                    accept_index[b][n] = last
                    row, coin, prob_acc, rej = cur, inp["coins"][b, cur], np.float32(0.0), set()
                    break
                rej.add(tok)
                cur = int(sib[cur])
            if cur == -1:
                break
        accept_length[b] = n
        if greedy:
            predicts[last] = int(inp["target_predict"][b, row])
            continue
        t = inp["target_probs"][b, row]
        q = [int(math.floor(float(x) * 2.0**32)) if (x > 0 and v not in rej) else 0 for v, x in enumerate(t)]
        R = sum(q)
        c = min(int(math.floor(float(inp["final_coins"][b]) * 2.0**24)), 2**24 - 1)
        u = c * (R >> 24) + ((c * (R & (2**24 - 1))) >> 24)
        assert u == (c * R) >> 24  # the 128-bit-free split is exact
        if R > 0:
            acc = 0
            for v, qv in enumerate(q):
                acc += qv
                if acc > u:
                    predicts[last] = v
                    break
        else:
            nans = [v for v, x in enumerate(t) if math.isnan(x)]
            predicts[last] = nans[0] if nans else int(np.argmax(t))  # np.argmax: first of equal maxima
    return {"predicts": np.array(predicts, np.int32), "accept_index": np.array(accept_index, np.int32).reshape(B, S),
            "accept_length": np.array(accept_length, np.int32)}


def k7_oracle(inp: dict, params: dict) -> dict:
    B, Q, S, H = (int(params[k]) for k in ("B", "Q", "S", "H"))
    ai, al, fp = inp["accept_index"], inp["accept_length"], inp["finish_pos"]
    pred, L, pool, ocl = inp["predicts"], inp["seq_lens"], inp["req_pool_indices"], inp["out_cache_loc"]
    out = {k: v.copy() for k, v in inp.items() if k in ("req_to_token", "next_hidden")}
    rows, a = [], []
    for b in range(B):
        ab = int(fp[b]) if fp[b] >= 0 else int(al[b])
        a.append(ab)
        rows.append([int(ai[b, j]) for j in range(ab + 1)])
    flat = [p for r in rows for p in r]
    unf = [b for b in range(B) if fp[b] == -1]

    def pad(vals, cap, dtype):
        return np.array(list(vals) + [-1] * (cap - len(vals)), dtype)

    out["accept_index_out"] = np.array([r + [-1] * (S - len(r)) for r in rows], np.int32).reshape(B, S)
    out["accept_length_out"] = np.array(a, np.int32)
    out["accept_indptr"] = np.array([sum(x + 1 for x in a[:b]) for b in range(B + 1)], np.int32)
    out["accepted_flat"] = pad(flat, B * S, np.int32)
    out["verified_id"] = pad([pred[p] for p in flat], B * S, np.int32)
    out["evict_mask"] = np.array([p not in set(flat) for p in range(B * Q)], bool)
    out["free_slots"] = pad([ocl[p] for p in range(B * Q) if p not in set(flat)], B * Q, np.int64)
    for b in range(B):
        for j, p in enumerate(rows[b]):
            out["req_to_token"][pool[b], L[b] + j] = np.int32(ocl[p])
    out["seq_lens_out"] = np.array([L[b] + a[b] + 1 for b in range(B)], np.int64)
    if "verify_node_ids" in inp:
        ids = inp["verify_node_ids"].reshape(-1)
        out["accepted_node_ids"] = pad([ids[p] for p in flat], B * S, np.int64)
    out["unfinished_count"] = np.array([len(unf)], np.int32)
    out["unfinished_index"] = pad(unf, B, np.int64)
    out["next_accept_length"] = pad([a[b] for b in unf], B, np.int32)
    out["next_indptr"] = pad([sum(a[b] + 1 for b in unf[:u]) for u in range(len(unf) + 1)], B + 1, np.int32)
    unf_pos = [(b, j, p) for b in unf for j, p in enumerate(rows[b])]
    out["next_verified_id"] = pad([pred[p] for _, _, p in unf_pos], B * S, np.int32)
    nh = dt.bits(out["next_hidden"])
    hb = dt.bits(inp["hidden_states"])
    for k, (_, _, p) in enumerate(unf_pos):
        nh[k] = hb[p]
    out["next_positions"] = pad([L[b] + j for b, j, _ in unf_pos], B * S, np.int64)
    out["next_seq_lens"] = pad([L[b] + a[b] + 1 for b in unf], B, np.int64)
    out["next_req_pool_indices"] = pad([pool[b] for b in unf], B, np.int64)
    out["next_root_token"] = pad([pred[rows[b][-1]] for b in unf], B, np.int32)
    out["next_last_flat"] = pad([rows[b][-1] for b in unf], B, np.int32)
    return out
