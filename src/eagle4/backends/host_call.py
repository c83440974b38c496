"""The device-tensor interface (``Backend.call``) for backends that only have ``run`` on numpy arrays
(csim, xrt, dump, wrappers such as the hot-vocabulary one): the engine calls every backend the same
way; these copy the kernel's inputs to the host, run, and write the outputs back into the caller's
buffers. Not graph-safe (host copies every call).

``FallbackBackend``: ``primary`` for the kernels it supports, ``fallback`` (normally ref) for the
rest; ``used`` records which backend ran each kernel so results can say so."""

from __future__ import annotations

import torch

from eagle4 import dtypes as dt
from eagle4.backends.base import Backend
from eagle4.spec import kernel_spec


def has_device_interface(backend: Backend) -> bool:
    return type(backend).call is not Backend.call


class HostCall:
    """``call`` through ``inner.run``: pure inputs and in/out buffers go to the host; every output is
    copied into the buffer the caller passed (its leading elements where the caller's buffer is a
    larger cap, as K4's data-dependent outputs are), or returned as a new tensor on ``device``."""

    graph_safe = False

    def __init__(self, inner: Backend, device):
        self.inner, self.device = inner, torch.device(device)

    def call(self, kernel: str, tensors: dict, params: dict) -> dict:
        spec = kernel_spec(kernel)
        names = {a.name for a in spec.inputs}
        out = self.inner.run(kernel, {k: dt.to_numpy(v) for k, v in tensors.items() if k in names and v is not None},
                             params)
        res = {}
        for k, a in out.items():
            t = dt.to_torch(a, self.device)
            buf = tensors.get(k)
            if buf is None:
                res[k] = t
            elif buf.shape == t.shape:
                res[k] = buf.copy_(t)
            else:
                buf.view(-1)[: t.numel()].copy_(t.reshape(-1))
                res[k] = buf
        return res


class FallbackBackend(Backend):
    def __init__(self, primary: Backend, fallback: Backend):
        self.primary, self.fallback = primary, fallback
        self.name = f"{primary.name}+{fallback.name}"
        self.provenance = primary.provenance
        self.used: dict[str, str] = {}

    def available(self):
        return self.primary.available()

    def run(self, kernel, inputs, params, want=()):
        b = self.primary if self.primary.supports(kernel) else self.fallback
        self.used[kernel] = b.name
        return b.run(kernel, inputs, params)

    def device_info(self):
        return self.primary.device_info()


__all__ = ["FallbackBackend", "HostCall", "has_device_interface"]
