"""Backend registry: ref, csim, cuda, xrt, dump (imported lazily: each may need tools others lack)."""

from __future__ import annotations

import importlib

from eagle4.backends.base import Backend, BackendUnavailable, DeviceInfo

_REGISTRY = {
    "ref": "eagle4.backends.ref:ReferenceBackend",
    "csim": "eagle4.backends.csim:CsimBackend",
    "cuda": "eagle4.backends.cuda:CudaBackend",
    "xrt": "eagle4.backends.xrt:XrtBackend",
    "dump": "eagle4.backends.dump:DumpBackend",
}

BACKEND_NAMES = tuple(_REGISTRY)

# which --hw each backend needs
BACKEND_HW = {"ref": "cpu", "csim": "cpu", "dump": "cpu", "cuda": "cuda", "xrt": "fpga"}


def get_backend(name: str, **options) -> Backend:
    if name not in _REGISTRY:
        raise KeyError(f"unknown backend {name!r}; known: {', '.join(_REGISTRY)}")
    mod, cls = _REGISTRY[name].split(":")
    try:
        module = importlib.import_module(mod)
    except ImportError as e:  # a backend module that needs a missing package
        raise BackendUnavailable(f"backend {name!r} could not be imported: {e}") from e
    return getattr(module, cls)(**options)


__all__ = ["Backend", "BackendUnavailable", "DeviceInfo", "get_backend", "BACKEND_NAMES", "BACKEND_HW"]
