"""int8 transport of the draft weights: symmetric per-output-row int8 with an f32 scale, applied as
fake quantisation (quantise, dequantise, run the model's ordinary f32 arithmetic)."""

from __future__ import annotations

import torch
from torch import nn


def quantize_int8_rows(w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Symmetric per-output-row int8: ``(q [R, C] int8, scale [R] f32)`` with ``w ~= q * scale``.
    An all-zero row gets scale 1 and q = 0."""
    w32 = w.detach().to(torch.float32)
    amax = w32.abs().amax(dim=1)
    scale = torch.where(amax > 0, amax / 127.0, torch.ones_like(amax)).to(torch.float32)
    q = torch.clamp(torch.round(w32 / scale[:, None]), -127, 127).to(torch.int8)
    return q, scale


def dequantize_int8_rows(q: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    return q.to(torch.float32) * scale.to(torch.float32)[:, None]


def fake_quant_int8_rows(w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(dequantized weight in f32, per-row scale)."""
    q, s = quantize_int8_rows(w)
    return dequantize_int8_rows(q, s), s


def _fake_quant_(lin: nn.Linear, stats: list) -> None:
    with torch.no_grad():
        w = lin.weight
        deq, s = fake_quant_int8_rows(w)
        err = float(((deq - w.to(torch.float32)).abs() / s[:, None]).max())
        w.copy_(deq.to(w.dtype))
    stats.append(err)


def drafter_linears(draft: nn.Module) -> list[tuple[str, nn.Linear]]:
    """The drafter weights of the int8 transport: ``fc`` and every linear of the decoder layers."""
    out = [("fc", draft.fc)]
    out += [(f"layers.{n}", m) for n, m in draft.layers.named_modules() if isinstance(m, nn.Linear)]
    return out


def quantize_lm_head_(draft: nn.Module) -> list[float]:
    stats: list[float] = []
    _fake_quant_(draft.lm_head, stats)
    return stats


def quantize_drafter_(draft: nn.Module) -> list[float]:
    stats: list[float] = []
    for _, lin in drafter_linears(draft):
        _fake_quant_(lin, stats)
    return stats
