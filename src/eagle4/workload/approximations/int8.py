"""int8 transport of the draft weights: symmetric per-output-row int8 with an f32 scale (``qmax`` 127 of
:mod:`.rowquant`), applied as fake quantisation."""

from __future__ import annotations

import torch
from torch import nn

from eagle4.workload.approximations.rowquant import dequantize_rows, fake_quant_, quantize_rows

QMAX = 127


def quantize_int8_rows(w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Symmetric per-output-row int8: ``(q [R, C] int8, scale [R] f32)`` with ``w ~= q * scale``.
    An all-zero row gets scale 1 and q = 0."""
    return quantize_rows(w, QMAX)


dequantize_int8_rows = dequantize_rows


def fake_quant_int8_rows(w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(dequantized weight in f32, per-row scale)."""
    q, s = quantize_int8_rows(w)
    return dequantize_int8_rows(q, s), s


def drafter_linears(draft: nn.Module) -> list[tuple[str, nn.Linear]]:
    """The drafter weights of the int8 transport: ``fc`` and every linear of the decoder layers."""
    out = [("fc", draft.fc)]
    out += [(f"layers.{n}", m) for n, m in draft.layers.named_modules() if isinstance(m, nn.Linear)]
    return out


def quantize_lm_head_(draft: nn.Module) -> list[float]:
    return [fake_quant_(draft.lm_head, QMAX)]


def quantize_drafter_(draft: nn.Module) -> list[float]:
    return [fake_quant_(lin, QMAX) for _, lin in drafter_linears(draft)]
