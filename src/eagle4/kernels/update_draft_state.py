"""K2 ``update_cumu_draft_state``: PyTorch reference (KERNELS.md §2).

Steps 1-5 of §2.5 in order; only the regions listed in §2.4 are written, so sentinel-filled
buffers keep their sentinels everywhere else.
"""

from __future__ import annotations

import numpy as np
import torch

from eagle4.kernels import PreconditionError, draft_layer_geometry, poison, require_min, require_tensor

# 0.9999f as its binary32 bit pattern: the product must be one f32 multiply by exactly this value
DECAY_BITS = 0x3F7FF972
DECAY_F32 = float(np.array(DECAY_BITS, dtype=np.uint32).view(np.float32))


def buffer_shapes(B: int, K: int, N: int, M: int, I: int) -> dict[str, tuple[tuple[int, ...], torch.dtype]]:
    """Shape and dtype of every buffer K2 writes (§2.4), in ABI order: the draft state rows, the
    top-K outputs, the work/sort score rows and the output mask."""
    return {"cumu_tokens": ((B, N), torch.int64), "cumu_scores": ((B, N), torch.float32),
            "cumu_deltas": ((B, N), torch.int64), "prev_indexs": ((B, N), torch.int64),
            "next_indexs": ((B, N), torch.int64), "side_indexs": ((B, N), torch.int64),
            "output_scores": ((B, K), torch.float32), "output_tokens": ((B, K), torch.int64),
            "work_scores": ((B, M + K), torch.float32), "sort_scores": ((B, M), torch.float32),
            "output_tree_mask": ((B, K, I + 1), torch.bool)}


def check_preconditions(*, topk_probas, topk_tokens, sorted_scores, sorted_indexs, parent_indexs, topk_indexs,
                        input_tree_mask, batch_size, node_top_k, tree_width, input_count, cumu_count, verify_num,
                        curr_depth, max_input_size, max_node_count, max_verify_num, cumu_tokens, cumu_scores,
                        cumu_deltas, prev_indexs, next_indexs, side_indexs, output_scores, output_tokens,
                        work_scores, sort_scores, output_tree_mask) -> None:
    B, K, W, C = draft_layer_geometry(batch_size, node_top_k, tree_width)
    Ic, I, N, M = int(input_count), int(max_input_size), int(max_node_count), int(max_verify_num)
    require_min("input_count", Ic, 1, " (Ic >= 1)")
    if Ic - 1 > I:
        raise PreconditionError(f"input_count-1 must be <= max_input_size (Ic-1 <= I), got Ic={Ic}, I={I}")
    # bounds of §0.4 the indexing relies on
    require_min("cumu_count", int(cumu_count), 0)
    require_min("max_node_count", N, 0)
    require_min("max_verify_num", M, 1, " (clamp(Vn, 1, M) needs M >= 1)")
    for name, t, shape, dtype in (
            ("topk_probas", topk_probas, (B, C), torch.float32),
            ("topk_tokens", topk_tokens, (B, C), torch.int64),
            ("sorted_scores", sorted_scores, (B, C), torch.float32),
            ("sorted_indexs", sorted_indexs, (B, C), torch.int64),
            ("parent_indexs", parent_indexs, (B, K), torch.int64),
            ("topk_indexs", topk_indexs, (B, W), torch.int64),
            ("input_tree_mask", input_tree_mask, (B, W, Ic - 1), torch.bool)):
        require_tensor(t, name, shape, dtype)
    given = locals()
    for name, (shape, dtype) in buffer_shapes(B, K, N, M, I).items():
        require_tensor(given[name], name, shape, dtype)


def descending_merge(A: torch.Tensor, S: torch.Tensor, n1: int) -> torch.Tensor:
    """§2.5 step 5.2: the pinned two-cursor merge, vectorized over rows, one loop step per output slot.

    Take A[ia] iff ia < n0 and (ib >= C or A[ia] >= S[ib]) (NaN never wins a >=); values are
    moved as bit patterns so the sign of zero and NaN payloads survive.
    """
    Bn, n0 = A.shape
    C = S.shape[1]
    Ab, Sb = A.view(torch.int32), S.view(torch.int32)
    out = torch.empty((Bn, n1), dtype=torch.int32, device=A.device)
    ia = torch.zeros((Bn, 1), dtype=torch.int64, device=A.device)
    ib = torch.zeros((Bn, 1), dtype=torch.int64, device=A.device)
    for t in range(n1):
        ca, cb = ia.clamp(max=max(n0 - 1, 0)), ib.clamp(max=max(C - 1, 0))
        av = A.gather(1, ca) if n0 else torch.zeros((Bn, 1), dtype=A.dtype, device=A.device)
        sv = S.gather(1, cb) if C else torch.zeros((Bn, 1), dtype=S.dtype, device=S.device)
        take_a = (ia < n0) & ((ib >= C) | (av >= sv))
        abits = Ab.gather(1, ca) if n0 else torch.zeros((Bn, 1), dtype=torch.int32, device=A.device)
        sbits = Sb.gather(1, cb) if C else torch.zeros((Bn, 1), dtype=torch.int32, device=A.device)
        out[:, t:t + 1] = torch.where(take_a, abits, sbits)
        ia = ia + take_a.long()
        ib = ib + (~take_a).long()
    return out.view(torch.float32)


def update_cumu_draft_state(*, topk_probas, topk_tokens, sorted_scores, sorted_indexs, parent_indexs, topk_indexs,
                            input_tree_mask, batch_size, node_top_k, tree_width, input_count, cumu_count,
                            verify_num, curr_depth, max_input_size, max_node_count, max_verify_num, cumu_tokens,
                            cumu_scores, cumu_deltas, prev_indexs, next_indexs, side_indexs, output_scores,
                            output_tokens, work_scores, sort_scores, output_tree_mask) -> None:
    check_preconditions(**dict(locals()))
    B, K, W, Ic = int(batch_size), int(node_top_k), int(tree_width), int(input_count)
    N, M, cc, d = int(max_node_count), int(max_verify_num), int(cumu_count), int(curr_depth)
    C = W * K
    if B == 0:
        return
    dev = topk_probas.device
    vn = min(max(int(verify_num), 1), M)  # clamp(Vn, 1, M), kept per the HLS (DECIDED)
    n0, n1 = min(vn, cc), min(vn, cc + C)
    rows = torch.arange(B, device=dev)[:, None]

    # 1. top-K outputs; invalid parent slots and negative sorted indices are clamped to 0
    output_scores.view(torch.int32).copy_(sorted_scores.view(torch.int32)[:, :K])
    pp = parent_indexs
    pp = torch.where((pp >= 0) & (pp < W), pp, torch.zeros_like(pp))
    oi = sorted_indexs[:, :K]
    oi = torch.where(oi < 0, torch.zeros_like(oi), oi)
    output_tokens.copy_(topk_tokens.gather(1, pp * K + oi % K))

    # 2. mask prefix copy: columns [0, Ic-1) only; column Ic-1 and beyond stay untouched
    if Ic > 1:
        output_tree_mask[:, :, :Ic - 1] = input_tree_mask[rows, pp]

    # 3. append the C candidates at [cc, cc+C), dropping g >= N
    nk = max(0, min(C, N - cc))
    if nk:
        i = torch.arange(nk, device=dev)
        g = cc + i
        sl = slice(cc, cc + nk)
        cumu_tokens[:, sl] = topk_tokens[:, :nk]
        cumu_scores[:, sl] = topk_probas[:, :nk] * torch.tensor(DECAY_F32, dtype=torch.float32, device=dev)
        cumu_deltas[:, sl] = d
        prev_indexs[:, sl] = topk_indexs[:, i // K]
        next_indexs[:, sl] = -1
        side_indexs[:, sl] = torch.where(i % K == K - 1, torch.full_like(g, -1), g + 1)  # original order

    # 4. parent -> first child, after step 3; among duplicate parents the larger w wins (D6):
    # drop every (b, w) whose parent reappears at a larger w, then the scatter has no conflicts
    P = topk_indexs
    valid = (P >= 0) & (P < N)
    later = torch.triu(torch.ones((W, W), dtype=torch.bool, device=dev), diagonal=1)
    dup_later = ((P[:, :, None] == P[:, None, :]) & later).any(dim=2)
    keep = valid & ~dup_later
    bi, wi = keep.nonzero(as_tuple=True)
    if bi.numel():
        next_indexs[bi, P[bi, wi]] = cc + wi * K

    # 5.1 snapshot A before any write, then the work buffer
    A = sort_scores[:, :n0].clone()
    if n0:
        work_scores.view(torch.int32)[:, :n0] = A.view(torch.int32)
    work_scores.view(torch.int32)[:, n0:n0 + K] = output_scores.view(torch.int32)
    # 5.2 pinned merge into the first n1 slots; [n1, M) untouched
    if n1:
        sort_scores.view(torch.int32)[:, :n1] = descending_merge(A, sorted_scores, n1).view(torch.int32)


def allocate(tensors: dict, params: dict, device) -> dict:
    """Pure outputs, and any in/out state buffer the caller did not pass, poison-filled."""
    B = max(int(params["batch_size"]), 0)
    K = max(int(params["node_top_k"]), 0)
    N = max(int(params["max_node_count"]), 0)
    M = max(int(params["max_verify_num"]), 0)
    I = max(int(params["max_input_size"]), -1)
    return {name: poison(shape, dtype, device)
            for name, (shape, dtype) in buffer_shapes(B, K, N, M, I).items() if name not in tensors}
