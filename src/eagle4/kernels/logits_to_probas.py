"""K5 ``convert_logits_to_probas`` (KERNELS.md §5; decisions D9, D17).

Row ``r`` of ``logits [R, V]`` (``R = B*G``) belongs to request ``b = r div G``. f16/bf16 logits
are upcast exactly to f32 first.

* ``is_greedy[b] = temperatures[b] < f32(1e-6)``, compared in binary32 against ``0x358637BD``
  (negative and zero temperatures are greedy; NaN is not).
* ``argmax_ids[r]``: over the raw (undivided) logits; the first NaN wins if the row has one,
  otherwise the lowest index holding the maximum (``-0.0`` and ``+0.0`` are equal). This is
  ``torch.argmax``'s rule; it is written out explicitly here so that it does not depend on a
  library's tie behaviour.
* Only when ``write_probas``: greedy rows are one-hot at ``argmax_ids[r]``; sampling rows are
  ``x = logits / temp`` (IEEE division), ``m = max x``, ``e = exp(x - m)`` (the f32 subtraction, then
  exp correctly rounded to f32), ``s = sum e`` in the order below, ``probas = e / s`` (IEEE division). IEEE propagation is kept: a NaN, a ``+inf`` or
  an all-``-inf`` row gives a NaN row. When ``write_probas`` is false, ``probas`` is not touched.

Summation order of ``s`` (pinned here; the CUDA and HLS versions are TOL-compared to it):

1. 16 lanes. Lane ``l`` (``l = 0..15``) accumulates the ``e_v`` with ``v mod 16 == l`` in
   ascending ``v``, one f32 add at a time, starting from +0.0 (cyclic interleave, the natural
   order for a stream of one element per cycle into 16 accumulators).
2. The 16 lane sums are combined by a fixed balanced binary tree of f32 adds:
   ``t_i = s_{2i} + s_{2i+1}`` (8 sums), then ``u_i = t_{2i} + t_{2i+1}`` (4), then
   ``w_i = u_{2i} + u_{2i+1}`` (2), then ``s = w_0 + w_1``. In full:
   ``s = (((s0+s1)+(s2+s3))+((s4+s5)+(s6+s7))) + (((s8+s9)+(s10+s11))+((s12+s13)+(s14+s15)))``.

Lanes with no element (``V < 16``) stay +0.0, and adding +0.0 to a sum of ``exp`` values (>= 0 or
NaN) changes nothing, so the code may pad the row with zeros to a multiple of 16.
"""

from __future__ import annotations

import numpy as np
import torch

from eagle4.kernels import PreconditionError, poison

LANES = 16
GREEDY_BELOW = float(np.uint32(0x358637BD).view(np.float32))  # f32(1e-6), D17
_LOGIT_DTYPES = (torch.float32, torch.float16, torch.bfloat16)


def pinned_row_sum(e: torch.Tensor) -> torch.Tensor:
    """Row sums of ``e [R, V]`` (f32) in the pinned 16-lane order of the module docstring."""
    R, V = e.shape
    blocks = (V + LANES - 1) // LANES
    padded = torch.zeros((R, blocks * LANES), dtype=torch.float32, device=e.device)
    padded[:, :V] = e
    by_block = padded.view(R, blocks, LANES)  # [r, k, l] = e[r, 16k + l]
    if e.device.type == "cpu":
        # numpy's accumulate adds in f32, block after block: the loop below in one call (a 16k vocabulary
        # would take 1024 Python-level steps per call)
        lanes = torch.from_numpy(np.add.accumulate(by_block.numpy(), axis=1)[:, -1, :].copy())
    else:
        lanes = torch.zeros((R, LANES), dtype=torch.float32, device=e.device)
        for k in range(blocks):  # sequential in v within each lane
            lanes = lanes + by_block[:, k, :]
    while lanes.shape[1] > 1:  # balanced tree: neighbours first
        lanes = lanes[:, 0::2] + lanes[:, 1::2]
    return lanes[:, 0]


def first_argmax(x: torch.Tensor) -> torch.Tensor:
    """Per row: the first NaN if any, else the lowest index holding the maximum (int64)."""
    R, V = x.shape
    idx = torch.arange(V, device=x.device).expand(R, V)
    nan = torch.isnan(x)
    first_nan = torch.where(nan, idx, V).amin(dim=1)
    top = torch.where(nan, float("-inf"), x).amax(dim=1, keepdim=True)
    first_top = torch.where(x == top, idx, V).amin(dim=1)
    return torch.where(nan.any(dim=1), first_nan, first_top)


def _check(logits, temperatures, rows_per_req, write_probas, probas, argmax_ids, is_greedy):
    G = int(rows_per_req)
    if G < 1:
        raise PreconditionError(f"logits_to_probas: rows_per_req (G) = {G} must be >= 1")
    if temperatures is None or temperatures.dtype != torch.float32 or temperatures.dim() != 1:
        raise PreconditionError("logits_to_probas: temperatures must be a 1-D float32 tensor [B]")
    B = int(temperatures.shape[0])
    if logits is None or logits.dtype not in _LOGIT_DTYPES or logits.dim() != 2:
        raise PreconditionError("logits_to_probas: logits must be a 2-D float32/float16/bfloat16 tensor [R, V]")
    R, V = (int(s) for s in logits.shape)
    if R != B * G:
        raise PreconditionError(f"logits_to_probas: logits must have R = B*G = {B}*{G} = {B * G} rows, got {R}")
    if V < 1:
        raise PreconditionError(f"logits_to_probas: logits must have V >= 1 columns, got {V}")
    if argmax_ids is None or argmax_ids.dtype != torch.int64 or tuple(argmax_ids.shape) != (R,):
        raise PreconditionError(f"logits_to_probas: argmax_ids must be an int64 tensor of shape [R] = [{R}]")
    if is_greedy is None or is_greedy.dtype != torch.uint8 or tuple(is_greedy.shape) != (B,):
        raise PreconditionError(f"logits_to_probas: is_greedy must be a uint8 tensor of shape [B] = [{B}]")
    if write_probas and (probas is None or probas.dtype != torch.float32 or tuple(probas.shape) != (R, V)):
        raise PreconditionError(f"logits_to_probas: probas must be a float32 tensor of shape [R, V] = [{R}, {V}]")


def convert_logits_to_probas(logits, temperatures, rows_per_req, write_probas, probas, argmax_ids, is_greedy):
    """Write ``argmax_ids``, ``is_greedy`` and (when ``write_probas``) ``probas`` per §5.4."""
    _check(logits, temperatures, rows_per_req, write_probas, probas, argmax_ids, is_greedy)
    G = int(rows_per_req)
    x_raw = logits.to(torch.float32)  # exact for f16/bf16
    greedy = temperatures < torch.tensor(GREEDY_BELOW, dtype=torch.float32, device=temperatures.device)
    is_greedy.copy_(greedy.to(torch.uint8))
    ids = first_argmax(x_raw)
    argmax_ids.copy_(ids)
    if not write_probas:
        return

    row_greedy = greedy.repeat_interleave(G)
    out = torch.zeros_like(x_raw)
    out.scatter_(1, ids.unsqueeze(1), 1.0)  # one-hot rows; sampling rows are overwritten below
    sampling = (~row_greedy).nonzero().squeeze(1)
    if sampling.numel():
        temp_rows = temperatures.repeat_interleave(G)[sampling].unsqueeze(1)
        xs = x_raw[sampling] / temp_rows
        m = xs.amax(dim=1, keepdim=True)  # NaN propagates, as the spec's IEEE rule requires
        # exp correctly rounded to f32 (evaluated in f64, rounded once): torch's f32 exp is within an ulp but not
        # correctly rounded, and its bits differ by CPU (an AMD EPYC and the Intel machine of earlier runs disagreed
        # on ~1% of entries), which moved every chained case fed by these probas; the f64 route is the same everywhere
        e = torch.exp((xs - m).to(torch.float64)).to(torch.float32)
        s = pinned_row_sum(e).unsqueeze(1)
        out[sampling] = e / s
    probas.copy_(out)


def allocate(tensors, params, device):
    """``probas [R, V]``, ``argmax_ids [R]``, ``is_greedy [B]`` from the logits' and temperatures' shapes."""
    logits, temps = tensors.get("logits"), tensors.get("temperatures")
    if logits is None or logits.dim() != 2 or temps is None or temps.dim() != 1:
        raise PreconditionError("logits_to_probas: logits [R, V] and temperatures [B] are required")
    R, V = (int(s) for s in logits.shape)
    want = {"probas": ((R, V), torch.float32), "argmax_ids": ((R,), torch.int64),
            "is_greedy": ((int(temps.shape[0]),), torch.uint8)}
    return {name: poison(shape, dtype, device) for name, (shape, dtype) in want.items() if tensors.get(name) is None}
