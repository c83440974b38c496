"""PyTorch reference of the seven P0 kernels: the executable spec (KERNELS.md §1-§7).

Each kernel lives in its own module and exposes a function named by its CUDA op that takes the
ABI's arguments by name, mutates its output tensors in place (like the CUDA op) and raises
``PreconditionError`` naming the argument and the bound when a precondition is violated.
Each module also exposes ``allocate(tensors, params, device) -> dict`` for the outputs the caller
did not pass (data-dependent caps and optional outputs are the module's business).
"""

from __future__ import annotations

import importlib
from types import ModuleType

import torch

from eagle4.spec import KERNELS, kernel_spec

MODULES = {key: f"eagle4.kernels.{key}" for key in KERNELS}


class PreconditionError(ValueError):
    """A kernel precondition from KERNELS.md is violated; the message names the argument and the bound."""


def require_min(name: str, value: int, low: int, why: str = "") -> None:
    """Precondition on one integer argument: ``value >= low``; ``why`` (e.g. ``" (1 <= K)"``) says which bound."""
    if value < low:
        raise PreconditionError(f"{name} must be >= {low}{why}, got {value}")


def draft_layer_geometry(batch_size, node_top_k, tree_width) -> tuple[int, int, int, int]:
    """K1/K2 layer geometry (§1.3, §2.3): ``B >= 0``, ``K >= 1``, ``W >= 1``, ``C = W*K <= 64``.

    K, W >= 1 because the kernels divide by K and a layer has at least one frontier slot; C <= 64
    is the width of one candidate row. Returns ``(B, K, W, C)``.
    """
    B, K, W = int(batch_size), int(node_top_k), int(tree_width)
    require_min("batch_size", B, 0)
    require_min("node_top_k", K, 1, " (1 <= K)")
    require_min("tree_width", W, 1, " (1 <= W)")
    C = W * K
    if C > 64:
        raise PreconditionError(f"node_top_k*tree_width = C must be <= 64, got C = {K}*{W} = {C}")
    return B, K, W, C


def require_tensor(t, name: str, shape: tuple, dtype) -> None:
    """Precondition on one tensor argument: present, of ``shape``, of ``dtype`` (or one of a tuple)."""
    if t is None:
        raise PreconditionError(f"{name} is required (shape {tuple(shape)}, {dtype})")
    if tuple(t.shape) != tuple(shape):
        raise PreconditionError(f"{name} must have shape {tuple(shape)}, got {tuple(t.shape)}")
    if isinstance(dtype, tuple):
        if t.dtype not in dtype:
            raise PreconditionError(f"{name} must have dtype in {dtype}, got {t.dtype}")
    elif t.dtype != dtype:
        raise PreconditionError(f"{name} must have dtype {dtype}, got {t.dtype}")


def module(kernel: str) -> ModuleType:
    return importlib.import_module(MODULES[kernel_spec(kernel).key])


def op(kernel: str):
    spec = kernel_spec(kernel)
    return getattr(module(spec.key), spec.op)


def call(kernel: str, tensors: dict[str, torch.Tensor], params: dict) -> dict[str, torch.Tensor]:
    """Run the reference on torch tensors; outputs not in ``tensors`` are allocated by the module.

    Returns every output tensor (in/out buffers included) after the call.
    """
    spec = kernel_spec(kernel)
    mod = module(spec.key)
    device = next(iter(tensors.values())).device if tensors else torch.device("cpu")
    all_t = dict(tensors)
    all_t.update(mod.allocate(all_t, params, device))
    kwargs = {a.name: (params[a.name] if a.role == "scalar" else all_t.get(a.name)) for a in spec.args}
    getattr(mod, spec.op)(**kwargs)
    return {a.name: all_t[a.name] for a in spec.outputs if all_t.get(a.name) is not None}


def poison(shape, dtype: torch.dtype, device) -> torch.Tensor:
    """A freshly allocated output: filled with a value no kernel writes by accident."""
    if dtype.is_floating_point:
        return torch.full(shape, float("nan"), dtype=dtype, device=device)
    if dtype == torch.bool:
        return torch.zeros(shape, dtype=dtype, device=device)
    return torch.full(shape, -9, dtype=dtype, device=device) if dtype != torch.uint8 else torch.full(
        shape, 0xA5, dtype=dtype, device=device)
