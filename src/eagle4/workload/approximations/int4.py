"""int4 transport of the draft LM head: symmetric per-output-row int4 with an f32 scale, two weights per
byte, applied as fake quantisation (quantise, dequantise, run the model's ordinary f32 arithmetic).

``scale = max|w_row| / 7``, ``q = clamp(round_half_even(w / scale), -7, 7)`` (the code -8 is never used, so
the grid is symmetric like the int8 one). Packing (:func:`eagle4.dtypes.pack_int4_rows`): weight ``h`` of a
row is the low nibble of byte ``h // 2`` when ``h`` is even, the high nibble when odd, two's complement; the
fused HLS draft pipeline reads exactly this layout (``hls/fused/draft_pipeline``, ``w_code`` 3) and its C-sim is
compared with :func:`dequantize_int4_rows` (tests/harness/test_fused_designs.py).
"""

from __future__ import annotations

import torch
from torch import nn

from eagle4.dtypes import pack_int4_rows, unpack_int4_rows  # the packed layout (re-exported)
from eagle4.workload.approximations.rowquant import dequantize_rows, fake_quant_, quantize_rows

QMAX = 7
__all__ = ["QMAX", "dequantize_int4_rows", "pack_int4_rows", "quantize_int4_rows", "quantize_lm_head_int4_",
           "unpack_int4_rows"]


def quantize_int4_rows(w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Symmetric per-output-row int4: ``(q [R, C] int8 holding -7..7, scale [R] f32)`` with ``w ~= q * scale``.
    An all-zero row gets scale 1 and q = 0."""
    return quantize_rows(w, QMAX)


dequantize_int4_rows = dequantize_rows


def quantize_lm_head_int4_(draft: nn.Module) -> list[float]:
    """Fake-quantise ``draft.lm_head`` to int4 rows in place; returns ``[max |deq - w| / scale]``."""
    return [fake_quant_(draft.lm_head, QMAX)]
