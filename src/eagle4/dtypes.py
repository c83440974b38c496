"""Logical dtypes at the harness boundary: numpy arrays, with bfloat16 from ml_dtypes.

numpy has no bfloat16; ml_dtypes provides one that numpy arrays can carry. Dumps store bf16
as its uint16 bit pattern plus the logical dtype name, so files stay plain .npz.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import torch

BF16 = np.dtype(ml_dtypes.bfloat16)

_TORCH = {
    "float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16,
    "int64": torch.int64, "int32": torch.int32, "uint8": torch.uint8, "bool": torch.bool,
}
_NUMPY = {"bfloat16": BF16}


def logical_dtype(arr) -> str:
    """The spec's dtype name of a numpy array or torch tensor."""
    if isinstance(arr, torch.Tensor):
        return str(arr.dtype).removeprefix("torch.")
    return "bfloat16" if arr.dtype == BF16 else arr.dtype.name


def numpy_dtype(name: str) -> np.dtype:
    return _NUMPY.get(name) or np.dtype(name)


def torch_dtype(name: str) -> torch.dtype:
    return _TORCH[name]


def to_torch(arr: np.ndarray, device: str | torch.device = "cpu") -> torch.Tensor:
    """Copy a numpy array to a torch tensor bit-exactly (bf16 via its bit pattern)."""
    if arr.dtype == BF16:
        t = torch.from_numpy(np.ascontiguousarray(arr).view(np.int16).copy()).view(torch.bfloat16)
    else:
        t = torch.from_numpy(np.ascontiguousarray(arr).copy())
    return t.to(device)


def to_numpy(t: torch.Tensor) -> np.ndarray:
    t = t.detach().cpu().contiguous()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view(BF16).copy()
    return t.numpy().copy()


def storage_view(arr: np.ndarray) -> np.ndarray:
    """The array as stored in a dump (bf16 -> uint16 bits); everything else unchanged."""
    return arr.view(np.uint16) if arr.dtype == BF16 else arr


def from_storage(arr: np.ndarray, name: str) -> np.ndarray:
    if name == "bfloat16":
        if arr.dtype != np.uint16:
            raise ValueError(f"bfloat16 array must be stored as uint16 bits, found {arr.dtype}")
        return arr.view(BF16)
    if arr.dtype.name != name:
        raise ValueError(f"stored dtype {arr.dtype.name} does not match the declared {name}")
    return arr


def bits(arr: np.ndarray) -> np.ndarray:
    """Unsigned-integer view of the array's element bits (for EXACT float compares)."""
    size = arr.dtype.itemsize
    if arr.dtype == np.bool_:
        return arr.view(np.uint8)
    return arr.view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[size])


def pack_int4_rows(q) -> np.ndarray:
    """``[R, C]`` int4 values (-8..7) -> ``[R, ceil(C / 2)]`` uint8, weight h in byte h // 2 (even h: low
    nibble, odd h: high nibble, two's complement; an odd C's last high nibble is 0). The layout of the fused
    draft LM head's int4 weights (hls/fused/common/e4f_stages.hpp ``i4x2``)."""
    q = np.asarray(q, np.int8)
    if q.size and (q.min() < -8 or q.max() > 7):
        raise ValueError("int4 values must lie in [-8, 7]")
    R, C = q.shape
    nib = (q.astype(np.int16) & 0xF).astype(np.uint8)
    if C % 2:
        nib = np.concatenate([nib, np.zeros((R, 1), np.uint8)], axis=1)
    return np.ascontiguousarray(nib[:, 0::2] | (nib[:, 1::2] << 4))


def unpack_int4_rows(packed, C: int) -> np.ndarray:
    """Inverse of :func:`pack_int4_rows`: ``[R, C]`` int8."""
    p = np.asarray(packed, np.uint8)
    out = np.empty((p.shape[0], 2 * p.shape[1]), np.int8)
    out[:, 0::2], out[:, 1::2] = (p & 0xF).astype(np.int8), (p >> 4).astype(np.int8)
    return np.where(out >= 8, out - 16, out).astype(np.int8)[:, :C]
