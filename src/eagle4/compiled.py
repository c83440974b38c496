"""``torch.compile`` once per function: the engine's step code on CUDA (the models' layer parts and
the torch glue between the kernels) through Inductor, which fuses each function's elementwise,
indexing and reduction ops into a few kernels around the library GEMMs and attention, as production
engines do. The eager function is the same code and stays the numerics reference."""

from __future__ import annotations

from collections.abc import Callable

_COMPILED: dict[Callable, Callable] = {}


def compiled(fn: Callable, on: bool = True) -> Callable:
    """``fn`` through ``torch.compile`` (static shapes, one graph, no break) when ``on``, else ``fn``.
    One compiled function per ``fn``; Dynamo keeps one graph per distinct shape and int argument."""
    if not on:
        return fn
    if fn not in _COMPILED:
        import torch
        import torch._dynamo

        # the draft step's layers, the verify forward and the draft extend each have their own shapes
        torch._dynamo.config.cache_size_limit = max(torch._dynamo.config.cache_size_limit, 64)
        _COMPILED[fn] = torch.compile(fn, dynamic=False, fullgraph=True)
    return _COMPILED[fn]


__all__ = ["compiled"]
