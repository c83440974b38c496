"""K6 ``draft_tree_reject_sample``: PyTorch reference (KERNELS.md §6).

Phase A (the tree walk) is a scalar loop per request because the spec pins its order: the f32
``prob_acc`` adds are sequential and each acceptance decides which children are read next.
Every float in the walk is a numpy float32 scalar, so each add and the one division round to
binary32 exactly like the CUDA and HLS versions (no float64 intermediate).

Phases B and C (residual, integer quantization, inverse CDF) are vectorized over the requests
in int64: ``q_v <= 2^32`` and ``V`` stays far below 2^18, so every prefix sum is below 2^50.
"""

from __future__ import annotations

import numpy as np
import torch

from eagle4.kernels import PreconditionError, poison, require_min, require_tensor

F32_ONE_E9 = np.float32(1e-9)
TWO_POW_32 = 4294967296.0  # exact in f32: scaling by it is exact, so floor() is the only rounding
TWO_POW_24 = 16777216.0
COIN_MAX = (1 << 24) - 1
LOW24 = (1 << 24) - 1




def effective_thr_acc(threshold_acc) -> np.float32:
    """``max(f32(threshold_acc), f32(1e-9))`` in binary32 (§6.3)."""
    return max(np.float32(threshold_acc), F32_ONE_E9)


def check_preconditions(*, candidates, retrive_index, retrive_next_token, retrive_next_sibling, target_probs,
                        target_predict, is_greedy, coins, final_coins, threshold_single, threshold_acc,
                        B, Q, S, V, predicts, accept_index, accept_length) -> None:
    B, Q, S, V = int(B), int(Q), int(S), int(V)
    require_min("B", B, 1)
    require_min("Q", Q, 1, " (the root is verify token 0)")
    require_min("S", S, 1, " (1 <= S = D_max + 1)")
    require_min("V", V, 1)
    if B * Q > 2**31 - 1:
        raise PreconditionError(f"B*Q must fit the int32 positions (<= 2^31-1), got {B * Q}")
    for name, t in (("candidates", candidates), ("retrive_index", retrive_index),
                    ("retrive_next_token", retrive_next_token), ("retrive_next_sibling", retrive_next_sibling),
                    ("target_predict", target_predict)):
        require_tensor(t, name, (B, Q), torch.int64)
    require_tensor(target_probs, "target_probs", (B, Q, V), torch.float32)
    require_tensor(is_greedy, "is_greedy", (B,), torch.uint8)
    require_tensor(coins, "coins", (B, Q), torch.float32)
    require_tensor(final_coins, "final_coins", (B,), torch.float32)
    require_tensor(predicts, "predicts", (B * Q,), torch.int32)
    require_tensor(accept_index, "accept_index", (B, S), torch.int32)
    require_tensor(accept_length, "accept_length", (B,), torch.int32)

    if np.isnan(np.float32(threshold_acc)):
        raise PreconditionError("threshold_acc must not be NaN (max(threshold_acc, 1e-9) is undefined for NaN)")

    local = torch.arange(Q, device=candidates.device, dtype=torch.int64)
    want = torch.arange(B, device=candidates.device, dtype=torch.int64)[:, None] * Q + local[None, :]
    bad = retrive_index != want
    if bool(bad.any()):
        b, i = (int(x) for x in bad.nonzero()[0])
        raise PreconditionError(f"retrive_index[{b},{i}] must equal b*Q+i = {b * Q + i}, "
                                f"got {int(retrive_index[b, i])}")
    # Links point forward (child and next sibling have a larger local index, §8.2/§8.3), so the walk ends.
    for name, links in (("retrive_next_token", retrive_next_token), ("retrive_next_sibling", retrive_next_sibling)):
        bad = (links != -1) & ((links <= local[None, :]) | (links >= Q))
        if bool(bad.any()):
            b, i = (int(x) for x in bad.nonzero()[0])
            raise PreconditionError(f"{name}[{b},{i}] must be -1 or in ({i}, Q={Q}) (links point to a larger "
                                    f"local index), got {int(links[b, i])}")
    bad_p = ~(((target_probs >= 0) & (target_probs <= 1)) | torch.isnan(target_probs))
    if bool(bad_p.any()):
        b, i, v = (int(x) for x in bad_p.nonzero()[0])
        raise PreconditionError(f"target_probs[{b},{i},{v}] must be in [0, 1] or NaN, got {float(target_probs[b, i, v])!r}")
    if bool(((is_greedy != 0) & (is_greedy != 1)).any()):
        raise PreconditionError(f"is_greedy entries must be 0 or 1, got {is_greedy.tolist()}")
    for name, t in (("coins", coins), ("final_coins", final_coins)):
        bad_c = ~((t >= 0) & (t < 1))
        if bool(bad_c.any()):
            idx = tuple(int(x) for x in bad_c.nonzero()[0])
            raise PreconditionError(f"{name}{list(idx)} must be in [0, 1), got {float(t[idx])!r}")
    greedy_rows = is_greedy.bool()[:, None].expand(B, Q)
    bad_t = greedy_rows & ((target_predict < 0) | (target_predict >= V))
    if bool(bad_t.any()):
        b, i = (int(x) for x in bad_t.nonzero()[0])
        raise PreconditionError(f"target_predict[{b},{i}] of a greedy request must be in [0, V={V}), "
                                f"got {int(target_predict[b, i])}")


def tree_walk(cand, nxt, sib, probs, pred, greedy: bool, coins_b, S: int, V: int,
              thr_single: np.float32, thr_acc: np.float32):
    """Phase A for one request on host arrays; returns (accepted local indices incl. root, tokens, row, Rej).

    ``accepted[0]`` is the root (local 0). ``tokens[k]`` is the token accepted after ``accepted[k]``.
    """
    row = 0
    cur = 0
    accepted = [0]
    tokens: list[int] = []
    rej: set[int] = set()
    prob_acc = np.float32(0.0)
    coin = coins_b[0]
    for _ in range(1, S):
        cur = int(nxt[cur])
        while cur != -1:
            tok = int(cand[cur])
            if tok < 0 or tok >= V:  # D26: never accepted, never in Rej, no probability read
                cur = int(sib[cur])
                continue
            if greedy:
                ok = tok == int(pred[row])
            else:
                p = probs[row, tok]
                prob_acc = np.float32(prob_acc + p)
                ok = bool(coin <= np.float32(prob_acc / thr_acc)) or bool(p >= thr_single)
            if ok:
                tokens.append(tok)
                accepted.append(cur)
                row = cur
                coin = coins_b[cur]
                prob_acc = np.float32(0.0)
                rej = set()
                break
            rej.add(tok)
            cur = int(sib[cur])
        if cur == -1:
            break
    return accepted, tokens, row, rej


def fallback_argmax(t: torch.Tensor) -> torch.Tensor:
    """Per row of [R, V]: NaN is largest and the first NaN wins, else the lowest index of the maximum (D19)."""
    V = t.shape[-1]
    idx = torch.arange(V, device=t.device, dtype=torch.int64).expand_as(t)
    big = torch.full_like(idx, V)
    nan = torch.isnan(t)
    first_nan = torch.where(nan, idx, big).min(dim=-1).values
    finite = torch.where(nan, torch.full_like(t, float("-inf")), t)
    m = finite.max(dim=-1, keepdim=True).values
    first_max = torch.where(finite == m, idx, big).min(dim=-1).values
    return torch.where(nan.any(dim=-1), first_nan, first_max)


def inverse_cdf_sample(rows: torch.Tensor, rej_mask: torch.Tensor, final_coins: torch.Tensor) -> torch.Tensor:
    """Phases B and C for [R, V] f32 rows: integer inverse CDF, argmax fallback when R_q = 0 (§6.6)."""
    keep = (rows > 0) & ~rej_mask  # NaN > 0 is false: NaN gives 0
    r = torch.where(keep, rows, torch.zeros_like(rows))
    q = torch.floor(r * TWO_POW_32).to(torch.int64)  # f32 product is exact; values <= 2^32
    cs = torch.cumsum(q, dim=-1)
    R_q = cs[:, -1]
    c = torch.clamp(torch.floor(final_coins * TWO_POW_24).to(torch.int64), max=COIN_MAX)
    u = c * (R_q >> 24) + ((c * (R_q & LOW24)) >> 24)
    sample = torch.searchsorted(cs, u[:, None].contiguous(), right=True)[:, 0]  # first v with prefix > u
    return torch.where(R_q > 0, sample, fallback_argmax(rows))


def draft_tree_reject_sample(*, candidates, retrive_index, retrive_next_token, retrive_next_sibling, target_probs,
                             target_predict, is_greedy, coins, final_coins, threshold_single, threshold_acc,
                             B, Q, S, V, predicts, accept_index, accept_length) -> None:
    check_preconditions(candidates=candidates, retrive_index=retrive_index, retrive_next_token=retrive_next_token,
                        retrive_next_sibling=retrive_next_sibling, target_probs=target_probs,
                        target_predict=target_predict, is_greedy=is_greedy, coins=coins, final_coins=final_coins,
                        threshold_single=threshold_single, threshold_acc=threshold_acc, B=B, Q=Q, S=S, V=V,
                        predicts=predicts, accept_index=accept_index, accept_length=accept_length)
    B, Q, S, V = int(B), int(Q), int(S), int(V)
    device = target_probs.device
    thr_single = np.float32(threshold_single)
    thr_acc = effective_thr_acc(threshold_acc)

    # The walk reads single elements in a data-dependent order: do it on host copies.
    cand_h = candidates.cpu().numpy()
    nxt_h = retrive_next_token.cpu().numpy()
    sib_h = retrive_next_sibling.cpu().numpy()
    pred_h = target_predict.cpu().numpy()
    greedy_h = is_greedy.cpu().numpy().astype(bool)
    coins_h = coins.cpu().numpy()
    probs_h = target_probs.cpu().numpy()

    predicts_h = np.full(B * Q, -1, dtype=np.int32)
    accept_h = np.full((B, S), -1, dtype=np.int32)
    length_h = np.zeros(B, dtype=np.int32)
    rows = np.zeros(B, dtype=np.int64)
    last = np.zeros(B, dtype=np.int64)
    rej_mask = torch.zeros((B, V), dtype=torch.bool)
    for b in range(B):
        accepted, tokens, row, rej = tree_walk(cand_h[b], nxt_h[b], sib_h[b], probs_h[b], pred_h[b], bool(greedy_h[b]),
                                               coins_h[b], S, V, thr_single, thr_acc)
        pos = [b * Q + i for i in accepted]  # = retrive_index[b, i] (checked)
        accept_h[b, :len(pos)] = pos
        predicts_h[pos[:-1]] = tokens
        length_h[b] = len(tokens)
        rows[b] = row
        last[b] = pos[-1]
        if rej and not greedy_h[b]:
            rej_mask[b, list(rej)] = True

    rows_t = torch.from_numpy(rows).to(device)
    b_idx = torch.arange(B, device=device)
    final_rows = target_probs[b_idx, rows_t]  # [B, V]
    sampled = inverse_cdf_sample(final_rows, rej_mask.to(device), final_coins).cpu().numpy()
    greedy_tok = pred_h[np.arange(B), rows]
    predicts_h[last] = np.where(greedy_h, greedy_tok, sampled).astype(np.int32)

    predicts.copy_(torch.from_numpy(predicts_h))
    accept_index.copy_(torch.from_numpy(accept_h))
    accept_length.copy_(torch.from_numpy(length_h))


def allocate(tensors: dict, params: dict, device) -> dict:
    B, Q, S = int(params["B"]), int(params["Q"]), int(params["S"])
    want = {"predicts": (B * Q,), "accept_index": (B, S), "accept_length": (B,)}
    return {name: poison(shape, torch.int32, device) for name, shape in want.items() if tensors.get(name) is None}
