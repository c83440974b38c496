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


def kv_index(write_pos, nkv: int, S: int):
    """Row of every (token, K or V, KV head) of ``write_pos [B, T]`` in a layer cache
    ``[2, B, nkv, S, hd]`` viewed as ``[2*B*nkv*S, hd]``: ``[B, T, 2, nkv]``, the index of the one
    scatter that writes a forward's K and V (``eagle4.models.dummy._qkv_rope``, ``eagle4.models.static_pair``)."""
    B, T = write_pos.shape
    dev = write_pos.device
    b = torch.arange(B, device=dev).view(B, 1, 1, 1)
    c = torch.arange(2, device=dev).view(1, 1, 2, 1)
    h = torch.arange(nkv, device=dev).view(1, 1, 1, nkv)
    return ((c * B + b) * nkv + h) * S + write_pos.view(B, T, 1, 1)


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


__all__ = ["compact_kv", "kv_index", "new_stacked_cache", "row_block"]
