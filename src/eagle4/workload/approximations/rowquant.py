"""Symmetric per-output-row quantisation with an f32 scale, applied as fake quantisation (quantise,
dequantise, run the model's ordinary f32 arithmetic): the one rule behind the int8 transport (``qmax``
127, :mod:`.int8`) and the int4 LM head (``qmax`` 7, :mod:`.int4`).

``scale = max|w_row| / qmax`` (an all-zero row: 1), ``q = clamp(round_half_even(w / scale), -qmax, qmax)``.
"""

from __future__ import annotations

import torch
from torch import nn


def quantize_rows(w: torch.Tensor, qmax: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``(q [R, C] int8 holding -qmax..qmax, scale [R] f32)`` with ``w ~= q * scale``."""
    w32 = w.detach().to(torch.float32)
    amax = w32.abs().amax(dim=1)
    scale = torch.where(amax > 0, amax / float(qmax), torch.ones_like(amax)).to(torch.float32)
    q = torch.clamp(torch.round(w32 / scale[:, None]), -qmax, qmax).to(torch.int8)
    return q, scale


def dequantize_rows(q: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    return q.to(torch.float32) * scale.to(torch.float32)[:, None]


def fake_quant_(lin: nn.Linear, qmax: int) -> float:
    """Replace ``lin.weight`` by its dequantised form, in place; returns ``max |deq - w| / scale``."""
    with torch.no_grad():
        w = lin.weight
        q, s = quantize_rows(w, qmax)
        deq = dequantize_rows(q, s)
        err = float(((deq - w.to(torch.float32)).abs() / s[:, None]).max())
        w.copy_(deq.to(w.dtype))
    return err
