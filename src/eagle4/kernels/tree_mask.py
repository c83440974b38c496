"""K4 ``fused_tree_mask_operator`` (KERNELS.md §4; decisions D8, D21, D22).

For each request ``b`` with prefix length ``L_b`` and ``T`` tree tokens of which the last ``Q``
are queries, the kernel writes flashinfer-style attention metadata:

* ``qo_indptr[b] = b*Q``; ``kv_indptr``, ``mask_indptr_bits``, ``mask_indptr_bytes`` are the
  exclusive prefix sums of ``L_b+T``, ``Q*(L_b+T)`` and ``ceil(Q*(L_b+T)/8)`` (all int32);
* ``kv_indices``: the prefix slots ``req_to_token[pool_b, 0:L_b]`` then ``(i32) tree_cache_locs[b]``;
* the bool mask ``Mb[q, c]`` (``Q`` rows x ``L_b+T`` columns, row-major in its own segment):
  prefix columns 1, tree column ``t`` 1 iff ``t`` is the query token ``t_q = T-Q+q`` or one of its
  ancestors; ``positions[b, q] = L_b + depth(t_q)``;
* ``packed_mask``: each request's flat mask packed little bit order (bit ``i`` of byte ``k`` is
  element ``8k+i``), the segment starting on a fresh byte, its last byte zero-padded;
* ``mask_bool``: the unpacked mask, only when ``write_bool_mask``.

The ancestor walk follows D22: a parent ``p`` of token ``t`` is invalid when ``p >= t`` or
``p < -1``; an invalid parent or ``-1`` ends the walk and is not added; at most ``T`` steps.
``depth`` counts the ancestors added before the walk stops.

Nothing is written past ``kv_indptr[B]``, ``mask_indptr_bytes[B]`` and ``mask_indptr_bits[B]``
in the data-dependent buffers (D21), so sentinel tails survive. ``allocate`` sizes them by the
caps ``B*(max L + T)``, ``B*ceil(Q*(max L + T)/8)`` and ``B*Q*(max L + T)``.
"""

from __future__ import annotations

import torch

from eagle4.kernels import PreconditionError, poison

_I32_LIMIT = 2**31


def _err(msg: str) -> PreconditionError:
    return PreconditionError(f"tree_mask: {msg}")


def _validate(seq_lens, req_pool_indices, req_to_token, S_max, tree_cache_locs, tree_parent, B, T, Q):
    """Check every precondition that does not depend on output buffers; return the lengths L (int64)."""
    B, T, Q, S_max = int(B), int(T), int(Q), int(S_max)
    if B < 0:
        raise _err(f"B = {B} must be >= 0")
    if T < 1:
        raise _err(f"T = {T} must be >= 1")
    if not 1 <= Q <= T:
        raise _err(f"Q = {Q} must satisfy 1 <= Q <= T = {T}")
    for name, t, shape, dtype in (
        ("seq_lens", seq_lens, (B,), torch.int64),
        ("req_pool_indices", req_pool_indices, (B,), torch.int64),
        ("tree_cache_locs", tree_cache_locs, (B, T), torch.int64),
        ("tree_parent", tree_parent, (B, T), torch.int64),
    ):
        if t is None or t.dtype != dtype or tuple(t.shape) != shape:
            raise _err(f"{name} must be a {str(dtype).removeprefix('torch.')} tensor of shape {list(shape)}, got "
                       + ("None" if t is None else f"{str(t.dtype).removeprefix('torch.')} {list(t.shape)}"))
    if req_to_token is None or req_to_token.dtype != torch.int32 or req_to_token.dim() != 2:
        raise _err("req_to_token must be an int32 tensor of shape [P, S_max]")
    P = int(req_to_token.shape[0])
    if int(req_to_token.shape[1]) != S_max:
        raise _err(f"req_to_token must have S_max = {S_max} columns (the row stride), got {int(req_to_token.shape[1])}")
    if B == 0:
        return seq_lens
    if bool((seq_lens < 0).any()) or bool((seq_lens > S_max).any()):
        bad = int(seq_lens[(seq_lens < 0) | (seq_lens > S_max)][0])
        raise _err(f"seq_lens must satisfy 0 <= L_b <= S_max = {S_max}, got {bad}")
    if bool((req_pool_indices < 0).any()) or bool((req_pool_indices >= P).any()):
        bad = int(req_pool_indices[(req_pool_indices < 0) | (req_pool_indices >= P)][0])
        raise _err(f"req_pool_indices must lie in [0, P) = [0, {P}), got {bad}")
    if bool((tree_cache_locs < 0).any()) or bool((tree_cache_locs >= _I32_LIMIT).any()):
        bad = int(tree_cache_locs[(tree_cache_locs < 0) | (tree_cache_locs >= _I32_LIMIT)][0])
        raise _err(f"tree_cache_locs must lie in [0, 2^31), got {bad}")
    # Python ints: the sum itself must not overflow while it is checked.
    total_bits = Q * (int(seq_lens.sum()) + B * T)
    if total_bits >= _I32_LIMIT:
        raise _err(f"sum over b of Q*(L_b+T) = {total_bits} must be < 2^31 (indptrs are int32)")
    return seq_lens


def _caps(seq_lens, B: int, T: int, Q: int) -> tuple[int, int, int]:
    """(kv_indices, packed_mask, mask_bool) caps of §4.4 / D21."""
    max_len = int(seq_lens.max()) + T if B > 0 else T
    return B * max_len, B * ((Q * max_len + 7) // 8), B * Q * max_len


def _ancestors(tree_parent: torch.Tensor, T: int, Q: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(anc [B, Q, T] bool: tree column t visible to query q; depth [B, Q] int64) by the D22 walk."""
    B = tree_parent.shape[0]
    dev = tree_parent.device
    queries = torch.arange(T - Q, T, device=dev).expand(B, Q)
    anc = torch.zeros((B, Q, T), dtype=torch.bool, device=dev)
    anc.scatter_(2, queries.unsqueeze(2), True)  # self
    depth = torch.zeros((B, Q), dtype=torch.int64, device=dev)
    cur = queries.clone()
    active = torch.ones((B, Q), dtype=torch.bool, device=dev)
    for _ in range(T):  # the T-step bound of D22 (valid chains are shorter anyway)
        p = torch.gather(tree_parent, 1, cur)
        step = active & (p >= 0) & (p < cur)  # -1 ends the walk; p >= cur or p < -1 is invalid and ends it too
        if not bool(step.any()):
            break
        # Where the walk stopped, the index is `cur`, which is already marked, so writing True is a no-op.
        anc.scatter_(2, torch.where(step, p, cur).unsqueeze(2), True)
        depth += step.to(torch.int64)
        cur = torch.where(step, p, cur)
        active = step
    return anc, depth


def fused_tree_mask_operator(seq_lens, req_pool_indices, req_to_token, S_max, tree_cache_locs, tree_parent,
                             B, T, Q, write_bool_mask, qo_indptr, kv_indptr, kv_indices, positions,
                             mask_indptr_bits, mask_indptr_bytes, packed_mask, mask_bool=None):
    """Write the §4.4 outputs in place; see the module docstring."""
    B, T, Q, S_max = int(B), int(T), int(Q), int(S_max)
    _validate(seq_lens, req_pool_indices, req_to_token, S_max, tree_cache_locs, tree_parent, B, T, Q)
    dev = seq_lens.device
    for name, t, n, dtype in (("qo_indptr", qo_indptr, B + 1, torch.int32), ("kv_indptr", kv_indptr, B + 1, torch.int32),
                              ("mask_indptr_bits", mask_indptr_bits, B + 1, torch.int32),
                              ("mask_indptr_bytes", mask_indptr_bytes, B + 1, torch.int32)):
        if t is None or t.dtype != dtype or tuple(t.shape) != (n,):
            raise _err(f"{name} must be an int32 tensor of shape [B+1] = [{n}]")
    if positions is None or positions.dtype != torch.int64 or tuple(positions.shape) != (B, Q):
        raise _err(f"positions must be an int64 tensor of shape [B, Q] = [{B}, {Q}]")

    lens = seq_lens + T  # kv length per request
    seg_bits = lens * Q
    seg_bytes = (seg_bits + 7) // 8
    zero = torch.zeros(1, dtype=torch.int64, device=dev)
    kv_ptr = torch.cat([zero, torch.cumsum(lens, 0)])
    bits_ptr = torch.cat([zero, torch.cumsum(seg_bits, 0)])
    bytes_ptr = torch.cat([zero, torch.cumsum(seg_bytes, 0)])
    n_kv, n_bits, n_bytes = int(kv_ptr[-1]), int(bits_ptr[-1]), int(bytes_ptr[-1])

    for name, buf, need, dtype in (("kv_indices", kv_indices, n_kv, torch.int32),
                                   ("packed_mask", packed_mask, n_bytes, torch.uint8)):
        if buf is None or buf.dtype != dtype or buf.dim() != 1 or buf.numel() < need:
            raise _err(f"{name} must be a 1-D {str(dtype).removeprefix('torch.')} buffer of at least {need} "
                       f"elements, got " + ("None" if buf is None else f"{buf.numel()}"))
    if write_bool_mask and (mask_bool is None or mask_bool.dtype != torch.bool or mask_bool.dim() != 1
                            or mask_bool.numel() < n_bits):
        raise _err(f"mask_bool must be a 1-D bool buffer of at least mask_indptr_bits[B] = {n_bits} elements "
                   "when write_bool_mask, got " + ("None" if mask_bool is None else f"{mask_bool.numel()}"))

    qo_indptr.copy_(torch.arange(B + 1, device=dev, dtype=torch.int64).mul_(Q).to(torch.int32))
    kv_indptr.copy_(kv_ptr.to(torch.int32))
    mask_indptr_bits.copy_(bits_ptr.to(torch.int32))
    mask_indptr_bytes.copy_(bytes_ptr.to(torch.int32))

    # kv_indices: flat slot f belongs to request b_of[f] at column j = f - kv_ptr[b].
    req = torch.arange(B, device=dev)
    b_of = torch.repeat_interleave(req, lens)
    j = torch.arange(n_kv, device=dev) - kv_ptr[b_of]
    in_prefix = j < seq_lens[b_of]
    kv_vals = torch.empty(n_kv, dtype=torch.int32, device=dev)
    kv_vals[in_prefix] = req_to_token[req_pool_indices[b_of[in_prefix]], j[in_prefix]]
    tb = ~in_prefix
    kv_vals[tb] = tree_cache_locs[b_of[tb], j[tb] - seq_lens[b_of[tb]]].to(torch.int32)
    kv_indices[:n_kv] = kv_vals

    anc, depth = _ancestors(tree_parent, T, Q)
    positions.copy_(seq_lens.unsqueeze(1) + depth)

    # Unpacked masks of all requests, each segment padded to whole bytes (pad bits 0), so that
    # request b's segment starts at bit 8*bytes_ptr[b] and packing never straddles requests.
    padded = torch.zeros(8 * n_bytes, dtype=torch.bool, device=dev)
    fb = torch.repeat_interleave(req, seg_bits)  # request of each valid mask bit
    i = torch.arange(n_bits, device=dev) - bits_ptr[fb]  # index within the request's flat mask
    padded[8 * bytes_ptr[fb] + i] = True  # prefix columns are 1; tree columns are overwritten below
    q_idx = torch.arange(Q, device=dev).view(1, Q, 1)
    t_idx = torch.arange(T, device=dev).view(1, 1, T)
    L3 = seq_lens.view(B, 1, 1)
    tree_pos = 8 * bytes_ptr[:-1].view(B, 1, 1) + q_idx * (L3 + T) + L3 + t_idx  # [B, Q, T]
    padded[tree_pos.reshape(-1)] = anc.reshape(-1)

    weights = (2 ** torch.arange(8, device=dev, dtype=torch.int32)).view(1, 8)
    packed = (padded.view(n_bytes, 8).to(torch.int32) * weights).sum(1).to(torch.uint8)  # little bit order
    packed_mask[:n_bytes] = packed
    if write_bool_mask:
        mask_bool[:n_bits] = padded[8 * bytes_ptr[fb] + i]


def allocate(tensors, params, device):
    """Outputs at the §4.4 caps (D21); ``mask_bool`` only when ``write_bool_mask``."""
    B, T, Q = int(params["B"]), int(params["T"]), int(params["Q"])
    _validate(tensors.get("seq_lens"), tensors.get("req_pool_indices"), tensors.get("req_to_token"),
              params["S_max"], tensors.get("tree_cache_locs"), tensors.get("tree_parent"), B, T, Q)
    kv_cap, bytes_cap, bits_cap = _caps(tensors["seq_lens"], B, T, Q)
    want = {
        "qo_indptr": ((B + 1,), torch.int32),
        "kv_indptr": ((B + 1,), torch.int32),
        "kv_indices": ((kv_cap,), torch.int32),
        "positions": ((B, Q), torch.int64),
        "mask_indptr_bits": ((B + 1,), torch.int32),
        "mask_indptr_bytes": ((B + 1,), torch.int32),
        "packed_mask": ((bytes_cap,), torch.uint8),
    }
    if params.get("write_bool_mask"):
        want["mask_bool"] = ((bits_cap,), torch.bool)
    return {name: poison(shape, dtype, device) for name, (shape, dtype) in want.items() if tensors.get(name) is None}
