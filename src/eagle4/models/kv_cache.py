"""The static-shape KV cache the engine drives, whatever the model pair (``eagle4.models.dummy``,
``eagle4.models.static_pair``): every layer's K and V of every request row in one tensor
``[layers, 2, B, kv_heads, S_max, head_dim]``; ``cache[i][0]``/``cache[i][1]`` are layer i's K/V."""

from __future__ import annotations

import contextlib

import torch


def new_stacked_cache(layers: int, B: int, kv_heads: int, S_max: int, head_dim: int, device, dtype):
    """Every layer's K and V in one tensor ``[layers, 2, B, kv_heads, S_max, head_dim]``
    (``cache[i][0]``/``cache[i][1]`` are layer i's K/V): a KV compaction is one indexed copy for all
    layers."""
    return torch.zeros(layers, 2, B, kv_heads, S_max, head_dim, device=device, dtype=dtype)


def compact_kv(cache: torch.Tensor, rows: torch.Tensor, dst: torch.Tensor, src: torch.Tensor) -> None:
    """Move positions ``src -> dst`` (``[B, n]``) of request rows ``rows`` (``[B, n]``) in every layer
    of a stacked cache, in place (one gather and one scatter)."""
    c = cache.flatten(0, 1)  # [layers*2, B, nkv, S, hd]
    c[:, rows, :, dst] = c[:, rows, :, src]


@contextlib.contextmanager
def row_block(cache: torch.Tensor, b0: int, b1: int):
    """Request rows ``b0:b1`` of a stacked cache as a contiguous cache (a forward writes K/V through a
    flat view of each layer): the slice itself when it is contiguous, else a copy written back on exit."""
    rows = cache[:, :, b0:b1]
    if rows.is_contiguous():
        yield rows
        return
    block = rows.contiguous()
    yield block
    rows.copy_(block)


__all__ = ["compact_kv", "new_stacked_cache", "row_block"]
