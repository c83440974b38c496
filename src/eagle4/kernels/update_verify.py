"""K7 ``update_verify_result``: PyTorch reference (KERNELS.md §7).

Truncates finished requests at ``finish_pos``, compacts the accepted positions with prefix sums,
gathers tokens / node ids / hidden rows, builds the evict mask and the ascending free-slot list,
commits the accepted KV slots to ``req_to_token`` for every request, and emits the compacted
next-step inputs of the unfinished requests. Every data-dependent int buffer is padded with -1
up to its §7.3 cap; ``next_hidden`` rows past ``N_unf`` are left as they were.
"""

from __future__ import annotations

import torch

from eagle4.kernels import PreconditionError, poison, require_min, require_tensor

_BITS = {torch.float16: torch.int16, torch.bfloat16: torch.int16, torch.float32: torch.int32}
HIDDEN_TORCH = tuple(_BITS)
INT32_MAX = 2**31 - 1


def _bits(t: torch.Tensor) -> torch.Tensor:
    """Integer view of a hidden tensor: gathering it copies bits (NaN payloads kept), never converts."""
    return t.view(_BITS[t.dtype])




def _first(mask: torch.Tensor) -> tuple[int, ...]:
    return tuple(int(x) for x in mask.nonzero()[0])


# name -> (shape as a function of (B, Q, S, H), dtype or None for the hidden dtype)
OUTPUT_SHAPES = {
    "accept_index_out": (lambda B, Q, S, H: (B, S), torch.int32),
    "accept_length_out": (lambda B, Q, S, H: (B,), torch.int32),
    "accept_indptr": (lambda B, Q, S, H: (B + 1,), torch.int32),
    "accepted_flat": (lambda B, Q, S, H: (B * S,), torch.int32),
    "verified_id": (lambda B, Q, S, H: (B * S,), torch.int32),
    "evict_mask": (lambda B, Q, S, H: (B * Q,), torch.bool),
    "free_slots": (lambda B, Q, S, H: (B * Q,), torch.int64),
    "seq_lens_out": (lambda B, Q, S, H: (B,), torch.int64),
    "accepted_node_ids": (lambda B, Q, S, H: (B * S,), torch.int64),
    "unfinished_count": (lambda B, Q, S, H: (1,), torch.int32),
    "unfinished_index": (lambda B, Q, S, H: (B,), torch.int64),
    "next_accept_length": (lambda B, Q, S, H: (B,), torch.int32),
    "next_indptr": (lambda B, Q, S, H: (B + 1,), torch.int32),
    "next_verified_id": (lambda B, Q, S, H: (B * S,), torch.int32),
    "next_hidden": (lambda B, Q, S, H: (B * S, H), None),
    "next_positions": (lambda B, Q, S, H: (B * S,), torch.int64),
    "next_seq_lens": (lambda B, Q, S, H: (B,), torch.int64),
    "next_req_pool_indices": (lambda B, Q, S, H: (B,), torch.int64),
    "next_root_token": (lambda B, Q, S, H: (B,), torch.int32),
    "next_last_flat": (lambda B, Q, S, H: (B,), torch.int32),
}


def truncated_lengths(accept_length: torch.Tensor, finish_pos: torch.Tensor) -> torch.Tensor:
    """``a_b``: ``finish_pos[b]`` when the request finished, else ``accept_length[b]`` (int64)."""
    fp = finish_pos.to(torch.int64)
    return torch.where(fp >= 0, fp, accept_length.to(torch.int64))


def check_preconditions(*, accept_index, accept_length, predicts, finish_pos, seq_lens, req_pool_indices,
                        req_to_token, out_cache_loc, hidden_states, verify_node_ids, B, Q, S, H, S_max,
                        outputs: dict) -> None:
    B, Q, S, H, S_max = int(B), int(Q), int(S), int(H), int(S_max)
    for name, val in (("B", B), ("Q", Q), ("S", S), ("H", H), ("S_max", S_max)):
        require_min(name, val, 1)
    if B * Q > INT32_MAX:
        raise PreconditionError(f"B*Q must fit the int32 positions (<= 2^31-1), got {B * Q}")
    require_tensor(accept_index, "accept_index", (B, S), torch.int32)
    require_tensor(accept_length, "accept_length", (B,), torch.int32)
    require_tensor(predicts, "predicts", (B * Q,), torch.int32)
    require_tensor(finish_pos, "finish_pos", (B,), torch.int32)
    require_tensor(seq_lens, "seq_lens", (B,), torch.int64)
    require_tensor(req_pool_indices, "req_pool_indices", (B,), torch.int64)
    if req_to_token is None or req_to_token.dim() != 2:
        raise PreconditionError("req_to_token must be a 2-D tensor [P, S_max]")
    P = req_to_token.shape[0]
    require_tensor(req_to_token, "req_to_token", (P, S_max), torch.int32)
    require_tensor(out_cache_loc, "out_cache_loc", (B * Q,), torch.int64)
    require_tensor(hidden_states, "hidden_states", (B * Q, H), HIDDEN_TORCH)
    if verify_node_ids is not None:
        require_tensor(verify_node_ids, "verify_node_ids", (B, Q), torch.int64)
    elif outputs.get("accepted_node_ids") is not None:
        raise PreconditionError("accepted_node_ids exists only when verify_node_ids is given")
    for name, (shape_fn, dtype) in OUTPUT_SHAPES.items():
        if name == "accepted_node_ids" and verify_node_ids is None:
            continue
        require_tensor(outputs.get(name), name, shape_fn(B, Q, S, H), dtype or hidden_states.dtype)

    al = accept_length.to(torch.int64)
    bad = (al < 0) | (al > S - 1)
    if bool(bad.any()):
        (b,) = _first(bad)
        raise PreconditionError(f"accept_length[{b}] must be in [0, S-1 = {S - 1}], got {int(al[b])}")
    j = torch.arange(S, device=accept_index.device, dtype=torch.int64)
    prefix = j[None, :] <= al[:, None]
    ai = accept_index.to(torch.int64)
    bad = ~prefix & (ai != -1)
    if bool(bad.any()):
        b, jj = _first(bad)
        raise PreconditionError(f"accept_index[{b},{jj}] must be -1 past the prefix of length accept_length+1 = "
                                f"{int(al[b]) + 1}, got {int(ai[b, jj])}")
    # K6 writes request b's positions inside its own block [b*Q, (b+1)*Q), distinct along the path.
    lo = torch.arange(B, device=ai.device, dtype=torch.int64)[:, None] * Q
    bad = prefix & ((ai < lo) | (ai >= lo + Q))
    if bool(bad.any()):
        b, jj = _first(bad)
        raise PreconditionError(f"accept_index[{b},{jj}] must be a position of request {b} in "
                                f"[{b * Q}, {(b + 1) * Q}) (entries 0..accept_length are not -1), got {int(ai[b, jj])}")
    marked = torch.where(prefix, ai, torch.full_like(ai, -1))
    srt = torch.sort(marked, dim=1).values
    dup = (srt[:, 1:] == srt[:, :-1]) & (srt[:, 1:] >= 0)
    if bool(dup.any()):
        b, _ = _first(dup)
        raise PreconditionError(f"accept_index[{b}] must hold distinct positions, got {accept_index[b].tolist()}")
    fp = finish_pos.to(torch.int64)
    bad = (fp < -1) | (fp > al)
    if bool(bad.any()):
        (b,) = _first(bad)
        raise PreconditionError(f"finish_pos[{b}] must be -1 or in [0, accept_length[{b}] = {int(al[b])}], "
                                f"got {int(fp[b])}")
    a = truncated_lengths(accept_length, finish_pos)
    bad = seq_lens < 0
    if bool(bad.any()):
        (b,) = _first(bad)
        raise PreconditionError(f"seq_lens[{b}] must be >= 0, got {int(seq_lens[b])}")
    bad = seq_lens + a + 1 > S_max
    if bool(bad.any()):
        (b,) = _first(bad)
        raise PreconditionError(f"seq_lens[{b}] + a_b + 1 must be <= S_max = {S_max}, got "
                                f"{int(seq_lens[b])} + {int(a[b])} + 1 = {int(seq_lens[b] + a[b] + 1)}")
    bad = (req_pool_indices < 0) | (req_pool_indices >= P)
    if bool(bad.any()):
        (b,) = _first(bad)
        raise PreconditionError(f"req_pool_indices[{b}] must be in [0, P = {P}), got {int(req_pool_indices[b])}")
    if torch.unique(req_pool_indices).numel() != B:
        raise PreconditionError(f"req_pool_indices must be distinct (one req_to_token row per request), "
                                f"got {req_pool_indices.tolist()}")
    bad = (out_cache_loc < 0) | (out_cache_loc > INT32_MAX)
    if bool(bad.any()):
        (p,) = _first(bad)
        raise PreconditionError(f"out_cache_loc[{p}] must be in [0, 2^31-1] (it is stored to the int32 "
                                f"req_to_token), got {int(out_cache_loc[p])}")


def _write_padded(buf: torch.Tensor, values: torch.Tensor) -> None:
    """Valid prefix, then -1 up to the cap (D15, D21)."""
    n = values.numel()
    buf[:n] = values.to(buf.dtype)
    buf[n:] = -1


def update_verify_result(*, accept_index, accept_length, predicts, finish_pos, seq_lens, req_pool_indices,
                         req_to_token, out_cache_loc, hidden_states, verify_node_ids, B, Q, S, H, S_max,
                         accept_index_out, accept_length_out, accept_indptr, accepted_flat, verified_id, evict_mask,
                         free_slots, seq_lens_out, accepted_node_ids, unfinished_count, unfinished_index,
                         next_accept_length, next_indptr, next_verified_id, next_hidden, next_positions,
                         next_seq_lens, next_req_pool_indices, next_root_token, next_last_flat) -> None:
    outputs = dict(accept_index_out=accept_index_out, accept_length_out=accept_length_out,
                   accept_indptr=accept_indptr, accepted_flat=accepted_flat, verified_id=verified_id,
                   evict_mask=evict_mask, free_slots=free_slots, seq_lens_out=seq_lens_out,
                   accepted_node_ids=accepted_node_ids, unfinished_count=unfinished_count,
                   unfinished_index=unfinished_index, next_accept_length=next_accept_length, next_indptr=next_indptr,
                   next_verified_id=next_verified_id, next_hidden=next_hidden, next_positions=next_positions,
                   next_seq_lens=next_seq_lens, next_req_pool_indices=next_req_pool_indices,
                   next_root_token=next_root_token, next_last_flat=next_last_flat)
    check_preconditions(accept_index=accept_index, accept_length=accept_length, predicts=predicts,
                        finish_pos=finish_pos, seq_lens=seq_lens, req_pool_indices=req_pool_indices,
                        req_to_token=req_to_token, out_cache_loc=out_cache_loc, hidden_states=hidden_states,
                        verify_node_ids=verify_node_ids, B=B, Q=Q, S=S, H=H, S_max=S_max, outputs=outputs)
    B, Q, S = int(B), int(Q), int(S)
    dev = accept_index.device
    i64 = torch.int64

    a = truncated_lengths(accept_length, finish_pos)  # a_b
    j = torch.arange(S, device=dev, dtype=i64)
    keep = j[None, :] <= a[:, None]  # row_b's valid entries
    ai = accept_index.to(i64)

    accept_index_out.copy_(torch.where(keep, accept_index, torch.full_like(accept_index, -1)))
    accept_length_out.copy_(a.to(torch.int32))
    counts = a + 1
    indptr = torch.zeros(B + 1, dtype=i64, device=dev)
    indptr[1:] = torch.cumsum(counts, 0)
    accept_indptr.copy_(indptr.to(torch.int32))

    flat = ai[keep]  # row-major: request order, then j ascending
    _write_padded(accepted_flat, flat)
    _write_padded(verified_id, predicts.to(i64)[flat])
    evict = torch.ones(B * Q, dtype=torch.bool, device=dev)
    evict[flat] = False
    evict_mask.copy_(evict)
    _write_padded(free_slots, out_cache_loc[evict])  # boolean selection keeps ascending p

    pool_rows = req_pool_indices[:, None].expand(B, S)[keep]
    positions = (seq_lens[:, None] + j[None, :])  # L_b + j
    req_to_token[pool_rows, positions[keep]] = out_cache_loc[flat].to(torch.int32)
    seq_out = seq_lens + a + 1
    seq_lens_out.copy_(seq_out)
    if verify_node_ids is not None:
        _write_padded(accepted_node_ids, verify_node_ids.reshape(-1)[flat])

    unf = finish_pos == -1
    U = int(unf.sum())
    unfinished_count.fill_(U)
    _write_padded(unfinished_index, unf.nonzero()[:, 0])
    _write_padded(next_accept_length, a[unf])
    nptr = torch.zeros(U + 1, dtype=i64, device=dev)
    nptr[1:] = torch.cumsum(counts[unf], 0)
    _write_padded(next_indptr, nptr)
    keep_unf = keep & unf[:, None]
    pos_unf = ai[keep_unf]
    n_unf = pos_unf.numel()
    _write_padded(next_verified_id, predicts.to(i64)[pos_unf])
    _bits(next_hidden)[:n_unf] = _bits(hidden_states)[pos_unf]  # rows past N_unf stay untouched
    _write_padded(next_positions, positions[keep_unf])
    _write_padded(next_seq_lens, seq_out[unf])
    _write_padded(next_req_pool_indices, req_pool_indices[unf])
    last_flat = ai.gather(1, a[:, None])[:, 0]  # row_b[a_b]
    _write_padded(next_root_token, predicts.to(i64)[last_flat][unf])
    _write_padded(next_last_flat, last_flat[unf])


def allocate(tensors: dict, params: dict, device) -> dict:
    B, Q, S = int(params["B"]), int(params["Q"]), int(params["S"])
    hidden = tensors.get("hidden_states")
    H = int(params["H"])
    out = {}
    for name, (shape_fn, dtype) in OUTPUT_SHAPES.items():
        if tensors.get(name) is not None:
            continue
        if name == "accepted_node_ids" and tensors.get("verify_node_ids") is None:
            continue
        dt = dtype if dtype is not None else (hidden.dtype if hidden is not None else torch.float32)
        out[name] = poison(shape_fn(B, Q, S, H), dt, device)
    return out
