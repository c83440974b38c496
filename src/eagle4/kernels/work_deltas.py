"""K3 ``calculate_work_deltas`` (KERNELS.md §3; decisions D7, D25).

Per request ``b`` the row ``work_scores[b]`` holds ``A = [0, n0)`` (old top scores, descending)
and ``Bn = [n0, n0+K)`` (the new layer's top-K, descending). With ``Vb' = max(Vb, 1)``:

* ``base_b = A[0] + ... + A[kA-1]`` with ``kA = min(n0, Vb')``, left to right in f32 from +0.0;
* for ``w = 1..K`` and ``x = Bn[w-1]``: a free slot (``kA + kB < Vb'``) gives ``delta = x``;
  otherwise ``x > A[kA-1]`` (strict) evicts that entry with ``delta = x - A[kA-1]``; otherwise
  ``delta = +0.0``;
* ``work_deltas[w] = sum over b`` in ascending ``b`` from +0.0 (``w = 0`` sums ``base_b``).

Every sum is a chain of single binary32 additions in the pinned order (parity class EXACT). The
requests are independent, so the code steps through the pinned order once for all requests at
a time (element-wise f32 tensor ops round exactly like scalar f32 ops); it never calls a
reduction (``sum``) whose association torch chooses.

``per_req_deltas`` is an optional debug output: it exists only when the caller passes the buffer
(``allocate`` never creates it), so backends that do not produce it are not asked for it.
"""

from __future__ import annotations

import torch

from eagle4.kernels import PreconditionError, poison, require_min


def _check(work_scores, batch_size, node_count, node_top_k, row_stride, work_deltas, per_req_deltas):
    B, n0, K, stride = int(batch_size), int(node_count), int(node_top_k), int(row_stride)
    require_min("batch_size", B, 0)
    require_min("node_count", n0, 0, " (n0)")
    require_min("node_top_k", K, 0, " (K)")
    if n0 + K > stride:
        raise PreconditionError(
            f"work_deltas: node_count + node_top_k (n0 + K = {n0} + {K} = {n0 + K}) must be <= row_stride = {stride}")
    if work_scores is None or work_scores.dtype != torch.float32:
        raise PreconditionError("work_deltas: work_scores must be a float32 tensor")
    if tuple(work_scores.shape) != (B, stride):
        raise PreconditionError(
            f"work_deltas: work_scores must have shape [batch_size, row_stride] = [{B}, {stride}], "
            f"got {list(work_scores.shape)}")
    if work_deltas is None or work_deltas.dtype != torch.float32 or tuple(work_deltas.shape) != (K + 1,):
        raise PreconditionError(f"work_deltas: work_deltas must be a float32 tensor of shape [K+1] = [{K + 1}]")
    if per_req_deltas is not None and (per_req_deltas.dtype != torch.float32
                                       or tuple(per_req_deltas.shape) != (B, K + 1)):
        raise PreconditionError(
            f"work_deltas: per_req_deltas must be a float32 tensor of shape [B, K+1] = [{B}, {K + 1}]")


def calculate_work_deltas(work_scores, batch_size, node_count, node_top_k, verify_num, row_stride,
                          work_deltas, per_req_deltas=None):
    """Write ``work_deltas[0:K+1]`` (and ``per_req_deltas[B, K+1]`` when given) per §3.4."""
    _check(work_scores, batch_size, node_count, node_top_k, row_stride, work_deltas, per_req_deltas)
    B, n0, K = int(batch_size), int(node_count), int(node_top_k)
    vb = max(int(verify_num), 1)  # D25: no empty budget; no upper clamp
    dev = work_scores.device
    ws = work_scores
    pos_zero = torch.zeros((), dtype=torch.float32, device=dev)

    # Step 2: base_b = A[0] + ... + A[kA-1], one f32 add per step, left to right from +0.0.
    kA0 = min(n0, vb)
    base = torch.zeros(B, dtype=torch.float32, device=dev)
    for j in range(kA0):
        base = base + ws[:, j]

    # Step 3: marginal deltas; kA/kB are per-request counters.
    deltas = torch.empty((B, K + 1), dtype=torch.float32, device=dev)
    deltas[:, 0] = base
    kA = torch.full((B,), kA0, dtype=torch.int64, device=dev)
    kB = torch.zeros(B, dtype=torch.int64, device=dev)
    rows = torch.arange(B, device=dev)
    for w in range(1, K + 1):
        x = ws[:, n0 + w - 1]
        free = (kA + kB) < vb
        # A[kA-1]; the clamp only keeps the gather in range where kA == 0 (then `evict` is false).
        a_last = ws[rows, (kA - 1).clamp(min=0)]
        evict = ~free & (kA > 0) & (x > a_last)  # strict: equal values never evict; NaN never evicts
        delta = torch.where(free, x, torch.where(evict, x - a_last, pos_zero))
        deltas[:, w] = delta
        kA = kA - evict.to(torch.int64)
        kB = kB + (free | evict).to(torch.int64)

    # Step 4: batch reduction in ascending b from +0.0, all K+1 columns side by side.
    total = torch.zeros(K + 1, dtype=torch.float32, device=dev)
    for b in range(B):
        total = total + deltas[b]
    work_deltas.copy_(total)
    if per_req_deltas is not None:
        per_req_deltas.copy_(deltas)


def allocate(tensors, params, device):
    """``work_deltas`` at [K+1]; ``per_req_deltas`` only if the caller passed it (optional debug output)."""
    out = {}
    if tensors.get("work_deltas") is None:
        K = int(params["node_top_k"])
        require_min("node_top_k", K, 0, " (K)")
        out["work_deltas"] = poison((K + 1,), torch.float32, device)
    return out
